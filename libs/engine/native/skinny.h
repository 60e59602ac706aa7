/*
 * Products of a few activation rows with a weight matrix in Hugging Face layout, for decoding:
 *
 *   C[m×n] = A[m×k] · Bᵀ   (+ C when accumulating),   B stored [n, k] (a linear's `[out, in]`)
 *
 * with B in float32, bfloat16 or float16, read straight from memory once (the weights of a decode step
 * are far bigger than the caches and each is used by only m rows, so the product is bound by how fast B
 * streams in). The caller cuts n into ranges and runs them on the pool's threads (several matrices that
 * share A — q/k/v, gate/up — in one parallel-for), so no call here touches the pool.
 *
 * A is first copied into a prepared layout (ot_skinny_prepare): rows zero-padded to a multiple of 32 and,
 * for bfloat16 B, each 32-value chunk split into its even and odd elements. A bfloat16 pair loaded as one
 * 32-bit lane then widens with a single shift (the even element) or mask (the odd one) instead of a
 * widening move plus a shift per 16 values, which is what leaves room for the multiply-adds at m ≥ 8.
 * The arithmetic is float32 throughout (a bf16 weight contributes exactly its float32 value); only the
 * order of the additions differs from ot_gemm.
 */
#ifndef OT_SKINNY_H
#define OT_SKINNY_H

#include <stddef.h>
#include <stdint.h>

#include "gemm.h"

typedef struct {
  int64_t m, k, kp; /* kp: k rounded up to a multiple of 32, the prepared rows' length */
  ot_dtype bt;      /* the B dtype the rows were prepared for */
  const float *a;   /* prepared rows [m, kp] (64-byte aligned), or the original A on CPUs without AVX-512 */
  const float *orig;
  int64_t lda;
} ot_skinny_lhs;

/* Floats a prepared A of m×k needs (plus 16 for alignment). */
size_t ot_skinny_lhs_floats(int64_t m, int64_t k);

/* Prepares A (m×k, leading dimension lda) for products with B of dtype bt into buf (ot_skinny_lhs_floats). */
void ot_skinny_prepare(ot_skinny_lhs *L, const float *A, int64_t lda, int64_t m, int64_t k, ot_dtype bt, float *buf);

/* C[:, j0:j1] (+)= A · B[j0:j1, :]ᵀ, B rows of leading dimension ldb; on the calling thread, which is
 * pool thread `thread` (CPUs without AVX-512 run ot_gemm_serial, which uses that thread's buffers). */
void ot_skinny_range(const ot_skinny_lhs *L, const void *B, int64_t ldb, int64_t j0, int64_t j1, float *C, int64_t ldc, int accumulate, int thread);

#endif
