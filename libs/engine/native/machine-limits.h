/*
 * The machine's physical limits, measured on the engine's thread pool, for the benchmarks' roofline
 * (how far a decode pass is from the memory-bandwidth limit, a training step from the compute limit).
 */
#ifndef OT_MACHINE_LIMITS_H
#define OT_MACHINE_LIMITS_H

#include <stdint.h>

/* STREAM-style triad (a = b + s·c, counted as 3 arrays moved) and a plain read (a sum), in bytes/s, over
 * three float arrays of `bytes` each (take several times the last-level cache), best of `reps`, on every
 * thread of the pool. -1 when the arrays cannot be allocated. */
int ot_memory_bandwidth(int64_t bytes, int reps, double *triad, double *read);

/* Peak FLOP/s (2 per multiply-add) of fp32 FMA (bf16 = 0) or AVX-512 BF16 dot products (bf16 = 1) on every
 * thread of the pool, from register-only loops of about `seconds` each; 0 when the CPU lacks them. */
double ot_peak_flops(int bf16, double seconds);

/* Whether the CPU has AVX-512 BF16 (vdpbf16ps, vcvtne2ps2bf16). */
int ot_has_avx512_bf16(void);

#endif
