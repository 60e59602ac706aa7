/*
 * bf16 weights: widening to float32 + FMA (what skinny.c and gemm.c do) against AVX-512 BF16 dot products
 * (vdpbf16ps, activations rounded to bf16 as oneDNN does), in the two regimes that matter:
 *
 *   compute: one thread, a tile of 4 activation rows × 4 weight rows over k = 896, weights in L2 (a batch
 *            of 32 decoding rows or a prefill is this bound); GFLOP/s of fp32 weights + FMA, bf16 weights
 *            widened + FMA, bf16 dot products; and the register-only peaks (machine-limits.c).
 *   stream:  every thread, one activation row against 1 GiB of bf16 weights (batch-1 decoding); GB/s of a
 *            plain read of the same bytes, of the widening kernel (skinny.c, as decode.c runs it) and of
 *            a dot-product kernel.
 *
 * The variants alternate within each repetition (the load of a shared machine hits them alike); medians
 * (and the best, for the stream) are printed with the load average at start and end.
 *
 *   sh libs/engine/bench/bf16-dot.bench.sh [--reps 7] [--threads 2]
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../native/gemm.h"
#include "../native/machine-limits.h"
#include "../native/skinny.h"
#include "../native/thread-pool.h"

#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
#define TBF __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,avx512bf16")))

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void loadavg(double *one) {
  FILE *f = fopen("/proc/loadavg", "r");
  *one = -1;
  if (f) {
    if (fscanf(f, "%lf", one) != 1) *one = -1;
    fclose(f);
  }
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fff + (u >> 16 & 1)) >> 16);
}

/* ---------------------------------------------------------------- compute-bound tile */

#define TI 4
#define TJ 4
#define K 896
#define NB 256 /* weight rows: 256 × 896 bf16 = 448 KiB (L2) */

static float Af[TI * K], Ae[TI * K]; /* A rows in order; A rows split per 32 into even | odd (skinny.c's layout) */
static uint16_t Ab[TI * K];         /* A rows in bf16 */
static float Bf[NB * K];
static uint16_t Bh[NB * K];
static volatile float sink;

/* fp32 weights, 2 FMAs per 32 values per (row, weight row). */
T512 static void tile_f32(void) {
  __m512 acc[TI * TJ];
  for (int j0 = 0; j0 < NB; j0 += TJ) {
    for (int q = 0; q < TI * TJ; q++) acc[q] = _mm512_setzero_ps();
    for (int p = 0; p < K; p += 32) {
      __m512 lo[TJ], hi[TJ];
      for (int r = 0; r < TJ; r++) lo[r] = _mm512_loadu_ps(Bf + (j0 + r) * K + p), hi[r] = _mm512_loadu_ps(Bf + (j0 + r) * K + p + 16);
      for (int i = 0; i < TI; i++) {
        __m512 a0 = _mm512_loadu_ps(Af + i * K + p), a1 = _mm512_loadu_ps(Af + i * K + p + 16);
        for (int r = 0; r < TJ; r++) acc[i * TJ + r] = _mm512_fmadd_ps(a1, hi[r], _mm512_fmadd_ps(a0, lo[r], acc[i * TJ + r]));
      }
    }
    __m512 s = acc[0];
    for (int q = 1; q < TI * TJ; q++) s = _mm512_add_ps(s, acc[q]);
    sink = _mm512_reduce_add_ps(s);
  }
}

/* bf16 weights widened (a pair as one 32-bit lane: shift for the even element, mask for the odd), 2 FMAs. */
T512 static void tile_widen(void) {
  __m512 acc[TI * TJ];
  const __m512i hi_mask = _mm512_set1_epi32((int)0xffff0000u);
  for (int j0 = 0; j0 < NB; j0 += TJ) {
    for (int q = 0; q < TI * TJ; q++) acc[q] = _mm512_setzero_ps();
    for (int p = 0; p < K; p += 32) {
      __m512 lo[TJ], hi[TJ];
      for (int r = 0; r < TJ; r++) {
        const __m512i w = _mm512_loadu_si512(Bh + (j0 + r) * K + p);
        lo[r] = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
        hi[r] = _mm512_castsi512_ps(_mm512_and_si512(w, hi_mask));
      }
      for (int i = 0; i < TI; i++) {
        __m512 a0 = _mm512_loadu_ps(Ae + i * K + p), a1 = _mm512_loadu_ps(Ae + i * K + p + 16);
        for (int r = 0; r < TJ; r++) acc[i * TJ + r] = _mm512_fmadd_ps(a1, hi[r], _mm512_fmadd_ps(a0, lo[r], acc[i * TJ + r]));
      }
    }
    __m512 s = acc[0];
    for (int q = 1; q < TI * TJ; q++) s = _mm512_add_ps(s, acc[q]);
    sink = _mm512_reduce_add_ps(s);
  }
}

/* bf16 weights and bf16 activations, one vdpbf16ps per 32 values (two multiply-adds per lane). */
TBF static void tile_dot(void) {
  __m512 acc[TI * TJ];
  for (int j0 = 0; j0 < NB; j0 += TJ) {
    for (int q = 0; q < TI * TJ; q++) acc[q] = _mm512_setzero_ps();
    for (int p = 0; p < K; p += 32) {
      __m512bh w[TJ];
      for (int r = 0; r < TJ; r++) w[r] = (__m512bh)_mm512_loadu_si512(Bh + (j0 + r) * K + p);
      for (int i = 0; i < TI; i++) {
        const __m512bh a = (__m512bh)_mm512_loadu_si512(Ab + i * K + p);
        for (int r = 0; r < TJ; r++) acc[i * TJ + r] = _mm512_dpbf16_ps(acc[i * TJ + r], a, w[r]);
      }
    }
    __m512 s = acc[0];
    for (int q = 1; q < TI * TJ; q++) s = _mm512_add_ps(s, acc[q]);
    sink = _mm512_reduce_add_ps(s);
  }
}

/* ---------------------------------------------------------------- streaming (batch 1) */

#define SK 896
#define BLOCK 48 /* weight rows per pool item: ~84 KiB, as decode.c's ~96 KiB items */

typedef struct {
  const uint16_t *W;
  int64_t n;
  ot_skinny_lhs lhs;
  const uint16_t *xb; /* the activation row in bf16 */
  float *y;
  float part[OT_POOL_MAX_THREADS * 16];
} stream_job;

T512 static void read_item(void *ctx, int64_t item, int thread) {
  stream_job *J = ctx;
  const int64_t j0 = item * BLOCK, j1 = j0 + BLOCK < J->n ? j0 + BLOCK : J->n;
  const char *p = (const char *)(J->W + j0 * SK), *e = (const char *)(J->W + j1 * SK);
  __m512i s0 = _mm512_setzero_si512(), s1 = s0;
  for (; p + 128 <= e; p += 128) {
    s0 = _mm512_add_epi32(s0, _mm512_loadu_si512(p));
    s1 = _mm512_add_epi32(s1, _mm512_loadu_si512(p + 64));
  }
  J->part[thread * 16] += (float)_mm512_reduce_add_epi32(_mm512_add_epi32(s0, s1));
}

static void widen_item(void *ctx, int64_t item, int thread) {
  stream_job *J = ctx;
  const int64_t j0 = item * BLOCK, j1 = j0 + BLOCK < J->n ? j0 + BLOCK : J->n;
  ot_skinny_range(&J->lhs, J->W, SK, j0, j1, J->y, J->n, 0, thread);
}

/* 8 weight rows at a time against the bf16 row, one vdpbf16ps per 32 values each. */
TBF static void dot_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  stream_job *J = ctx;
  const int64_t j0 = item * BLOCK, j1 = j0 + BLOCK < J->n ? j0 + BLOCK : J->n;
  for (int64_t j = j0; j < j1; j += 8) {
    __m512 acc[8];
    for (int r = 0; r < 8; r++) acc[r] = _mm512_setzero_ps();
    for (int p = 0; p < SK; p += 32) {
      const __m512bh a = (__m512bh)_mm512_loadu_si512(J->xb + p);
      for (int r = 0; r < 8; r++) acc[r] = _mm512_dpbf16_ps(acc[r], a, (__m512bh)_mm512_loadu_si512(J->W + (j + r) * SK + p));
    }
    for (int r = 0; r < 8 && j + r < j1; r++) J->y[j + r] = _mm512_reduce_add_ps(acc[r]);
  }
}

int main(int argc, char **argv) {
  int reps = 7, threads = 2;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
  }
  if (reps < 1 || reps > 64) reps = 7;
  if (!ot_has_avx512_bf16() || strcmp(ot_gemm_kernel(), "avx512")) {
    printf("this CPU has no AVX-512 BF16: nothing to compare\n");
    return 0;
  }
  double load0, load1;
  loadavg(&load0);
  uint32_t s = 12345;
#define RND() ((float)((s = s * 1664525 + 1013904223) >> 8) / 16777216.f - 0.5f)
  for (int i = 0; i < TI * K; i++) Af[i] = RND(), Ab[i] = to_bf16(Af[i]);
  for (int i = 0; i < TI; i++)
    for (int c = 0; c < K; c += 32)
      for (int l = 0; l < 16; l++) Ae[i * K + c + l] = Af[i * K + c + 2 * l], Ae[i * K + c + 16 + l] = Af[i * K + c + 2 * l + 1];
  for (int i = 0; i < NB * K; i++) Bf[i] = RND(), Bh[i] = to_bf16(Bf[i]);

  /* compute-bound, one thread */
  void (*tiles[3])(void) = {tile_f32, tile_widen, tile_dot};
  const char *tile_names[3] = {"fp32 weights + FMA", "bf16 weights widened + FMA", "bf16 dot (vdpbf16ps)"};
  const int inner = 200;
  double tt[3][64];
  for (int v = 0; v < 3; v++) tiles[v]();
  for (int r = 0; r < reps; r++)
    for (int q = 0; q < 3; q++) {
      const int v = (q + r) % 3;
      double t0 = now();
      for (int i = 0; i < inner; i++) tiles[v]();
      tt[v][r] = now() - t0;
    }
  const double flops = 2.0 * TI * NB * K * inner;
  printf("compute-bound tile (1 thread, %d activation rows x %d weight rows, k %d, weights in L2), GFLOP/s, median of %d:\n", TI, NB, K, reps);
  double gf[3];
  for (int v = 0; v < 3; v++) {
    qsort(tt[v], reps, sizeof(double), cmp);
    gf[v] = flops / tt[v][reps / 2] * 1e-9;
    printf("  %-28s %7.1f\n", tile_names[v], gf[v]);
  }
  printf("  bf16 dot / widened: %.2fx; widened / fp32 weights: %.2fx\n", gf[2] / gf[1], gf[1] / gf[0]);
  ot_set_threads(1);
  const double pf = ot_peak_flops(0, 0.2), pb = ot_peak_flops(1, 0.2);
  printf("  register-only peaks, 1 thread: fp32 FMA %.1f, bf16 dot %.1f GFLOP/s (%.2fx)\n", pf * 1e-9, pb * 1e-9, pb / pf);

  /* bandwidth-bound, every thread */
  ot_set_threads(threads);
  const int64_t n = ((int64_t)1 << 30) / (SK * 2) / BLOCK * BLOCK;
  uint16_t *W = aligned_alloc(64, (size_t)(n * SK * 2));
  for (int64_t i = 0; i < n * SK; i++) W[i] = (uint16_t)(0x3c00 + (i & 0xff));
  float x[SK];
  uint16_t xb[SK];
  for (int i = 0; i < SK; i++) x[i] = RND(), xb[i] = to_bf16(x[i]);
  float *buf = aligned_alloc(64, ot_skinny_lhs_floats(1, SK) * 4), *y = aligned_alloc(64, (size_t)n * 4);
  stream_job J = {.W = W, .n = n, .xb = xb, .y = y};
  ot_skinny_prepare(&J.lhs, x, SK, 1, SK, OT_BF16, buf);
  ot_pool_fn fns[3] = {read_item, widen_item, dot_item};
  const char *names[3] = {"read (sum of the bytes)", "widened + FMA (skinny.c)", "bf16 dot (vdpbf16ps)"};
  double ts[3][64];
  for (int v = 0; v < 3; v++) ot_pool_run(fns[v], &J, n / BLOCK);
  for (int r = 0; r < reps; r++)
    for (int q = 0; q < 3; q++) {
      const int v = (q + r) % 3;
      double t0 = now();
      ot_pool_run(fns[v], &J, n / BLOCK);
      ts[v][r] = now() - t0;
    }
  const double bytes = (double)n * SK * 2;
  printf("batch-1 stream (%d threads, 1 activation row x %.2f GiB of bf16 weights), GB/s, median [best] of %d:\n", threads, bytes / (1 << 30), reps);
  double med[3];
  for (int v = 0; v < 3; v++) {
    qsort(ts[v], reps, sizeof(double), cmp);
    med[v] = bytes / ts[v][reps / 2] * 1e-9;
    printf("  %-28s %6.1f [%6.1f]  (%.2fx of read)\n", names[v], med[v], bytes / ts[v][0] * 1e-9, med[v] / med[0]);
  }
  loadavg(&load1);
  printf("load average %.2f -> %.2f\n", load0, load1);
  free(W), free(buf), free(y);
  return 0;
}
