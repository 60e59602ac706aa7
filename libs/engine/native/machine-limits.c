/*
 * What this machine allows, measured on the engine's own threads (see machine-limits.h): memory bandwidth
 * (a STREAM-style triad and a plain read over arrays far larger than the last-level cache) and peak
 * multiply-add throughput (fp32 FMA and, where the CPU has AVX-512 BF16, bf16 dot products), so the
 * benchmarks can state how far a decode pass is from the bandwidth limit and a training step from the
 * compute limit.
 */
#include "machine-limits.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "thread-pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int has_avx512(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
#else
  return 0;
#endif
}

typedef struct {
  float *a, *b, *c;
  int64_t n, parts;
  double sums[OT_POOL_MAX_THREADS * 8]; /* padded per thread */
} stream_job;

static void triad_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  stream_job *J = ctx;
  const int64_t i0 = J->n * item / J->parts, i1 = J->n * (item + 1) / J->parts;
  float *restrict a = J->a;
  const float *restrict b = J->b, *restrict c = J->c;
  for (int64_t i = i0; i < i1; i++) a[i] = b[i] + 3.0f * c[i];
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static double read_avx512(const float *b, int64_t i0, int64_t i1) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0; /* four chains: the adds never wait on each other */
  for (int64_t i = i0; i + 64 <= i1; i += 64) {
    s0 = _mm512_add_ps(s0, _mm512_load_ps(b + i));
    s1 = _mm512_add_ps(s1, _mm512_load_ps(b + i + 16));
    s2 = _mm512_add_ps(s2, _mm512_load_ps(b + i + 32));
    s3 = _mm512_add_ps(s3, _mm512_load_ps(b + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}
#endif

static void read_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  stream_job *J = ctx;
  const int64_t i0 = J->n * item / J->parts / 64 * 64, i1 = J->n * (item + 1) / J->parts / 64 * 64;
  double t = 0;
#if defined(__x86_64__)
  if (has_avx512()) {
    J->sums[item * 8] = read_avx512(J->b, i0, i1);
    return;
  }
#endif
  float s[64] = {0};
  for (int64_t i = i0; i + 64 <= i1; i += 64)
    for (int q = 0; q < 64; q++) s[q] += J->b[i + q];
  for (int q = 0; q < 64; q++) t += s[q];
  J->sums[item * 8] = t;
}

static void fill_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  stream_job *J = ctx;
  const int64_t i0 = J->n * item / J->parts, i1 = J->n * (item + 1) / J->parts;
  for (int64_t i = i0; i < i1; i++) {
    J->a[i] = 0.f;
    J->b[i] = 1.f;
    J->c[i] = 2.f;
  }
}

int ot_memory_bandwidth(int64_t bytes, int reps, double *triad, double *read) {
  stream_job J = {0};
  J.n = bytes / (int64_t)sizeof(float) / 64 * 64;
  J.parts = ot_pool_threads();
  J.a = aligned_alloc(64, (size_t)J.n * sizeof(float));
  J.b = aligned_alloc(64, (size_t)J.n * sizeof(float));
  J.c = aligned_alloc(64, (size_t)J.n * sizeof(float));
  if (!J.a || !J.b || !J.c) {
    free(J.a);
    free(J.b);
    free(J.c);
    return -1;
  }
  /* First touch on the threads that later read each part (the pages land where they are used). */
  ot_pool_run(fill_item, &J, J.parts);
  double best_triad = 1e30, best_read = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = seconds();
    ot_pool_run(triad_item, &J, J.parts);
    double t1 = seconds();
    ot_pool_run(read_item, &J, J.parts);
    double t2 = seconds();
    if (t1 - t0 < best_triad) best_triad = t1 - t0;
    if (t2 - t1 < best_read) best_read = t2 - t1;
  }
  /* STREAM's convention: a triad moves 3 arrays (two read, one written). */
  *triad = 3.0 * (double)J.n * sizeof(float) / best_triad;
  *read = (double)J.n * sizeof(float) / best_read;
  free(J.a);
  free(J.b);
  free(J.c);
  return 0;
}

/* ---------------------------------------------------------------- peak multiply-adds */

typedef struct {
  int64_t iters;
  int bf16;
  float sink[OT_POOL_MAX_THREADS * 16];
} peak_job;

#define ACC24(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)

#if defined(__x86_64__)
/* 24 independent accumulators: enough to cover any FMA latency × throughput on current x86 cores. */
__attribute__((target("avx512f"))) static float fma_loop(int64_t iters) {
  __m512 b = _mm512_set1_ps(1.0000001f), c = _mm512_set1_ps(1e-7f);
#define DECL(i) __m512 a##i = _mm512_set1_ps((float)(i));
  ACC24(DECL)
  for (int64_t n = 0; n < iters; n++) {
#define STEP(i) a##i = _mm512_fmadd_ps(a##i, b, c);
    ACC24(STEP)
  }
  __m512 s = _mm512_setzero_ps();
#define SUM(i) s = _mm512_add_ps(s, a##i);
  ACC24(SUM)
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512bf16"))) static float bf16_loop(int64_t iters) {
  __m512bh b = (__m512bh)_mm512_set1_epi32(0x3f803f80), c = (__m512bh)_mm512_set1_epi32(0x33d633d6);
  ACC24(DECL)
  for (int64_t n = 0; n < iters; n++) {
#define STEPB(i) a##i = _mm512_dpbf16_ps(a##i, b, c);
    ACC24(STEPB)
  }
  __m512 s = _mm512_setzero_ps();
  ACC24(SUM)
  return _mm512_reduce_add_ps(s);
}
#endif

static void peak_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  peak_job *J = ctx;
#if defined(__x86_64__)
  J->sink[item * 16] = J->bf16 ? bf16_loop(J->iters) : fma_loop(J->iters);
#else
  (void)item;
#endif
}

int ot_has_avx512_bf16(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
#else
  return 0;
#endif
}


double ot_peak_flops(int bf16, double seconds_wanted) {
  if (bf16 ? !ot_has_avx512_bf16() : !has_avx512()) return 0;
  peak_job J = {.iters = 1 << 16, .bf16 = bf16};
  const int64_t threads = ot_pool_threads();
  double t = 0;
  /* Grow the loop until one run takes the wanted time, then keep the best of three at that size. */
  for (;;) {
    double t0 = seconds();
    ot_pool_run(peak_item, &J, threads);
    t = seconds() - t0;
    if (t >= seconds_wanted / 4 || J.iters > ((int64_t)1 << 40)) break;
    J.iters *= 2;
  }
  for (int r = 0; r < 3; r++) {
    double t0 = seconds();
    ot_pool_run(peak_item, &J, threads);
    double dt = seconds() - t0;
    if (dt < t) t = dt;
  }
  /* One instruction: 16 lanes of one multiply-add (fp32) or of two (bf16 pairs); 2 FLOPs per multiply-add. */
  const double per_instr = bf16 ? 64.0 : 32.0;
  return (double)threads * (double)J.iters * 24.0 * per_instr / t;
}
