/*
 * Checks ot_gemm against a double-precision reference on the same widened B values, for every
 * microkernel this CPU runs × transA/transB × B dtype × 1, 2, 3 threads × many shapes, strides and
 * alpha/beta. Also: beta 0 never reads C (prefilled with NaN), cells of C outside the m×n window are
 * never written, and the degenerate sizes.
 *
 *   gcc -O3 -pthread libs/engine/native/test/gemm-test.c libs/engine/native/gemm.c \
 *       libs/engine/native/thread-pool.c -lm -o /tmp/gemm-test && /tmp/gemm-test
 *
 * Exit status 0 only if every case passes. `gemm-test quick` runs a smaller shape set.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gemm.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_u32(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}
static float uniform(void) { return (float)(next_u32() & 0xffffff) / 8388608.0f - 1.0f; } /* [-1, 1) */

/* Reference widening, written independently of the kernel's. */
static double ref_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static double ref_f16(uint16_t h) {
  int e = (h >> 10) & 31, man = h & 1023;
  double v = e ? ldexp(1024 + man, e - 25) : ldexp(man, -24);
  return h & 0x8000 ? -v : v;
}

/* A random 16-bit value of magnitude about 2^-4..2^3 (f16: sometimes a subnormal). */
static uint16_t random_f16(void) {
  uint32_t r = next_u32();
  uint32_t e = (r & 63) == 0 ? 0 : 11 + (r >> 6) % 8;
  return (uint16_t)((r >> 12 & 0x8000) | e << 10 | (r >> 16 & 1023));
}
static uint16_t random_bf16(void) {
  float f = uniform() * 4;
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

static const char *dtype_name[] = {"f32", "bf16", "f16"};
static long cases, failures;

typedef struct {
  int ta, tb;
  ot_dtype bt;
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
} shape_t;

/* Runs one shape on every kernel × thread count against one reference. */
static void check(shape_t s, const char **kernels, int nkernels) {
  const int64_t arows = s.ta ? s.k : s.m, brows = s.tb ? s.n : s.k, acols = s.ta ? s.m : s.k, bcols = s.tb ? s.k : s.n;
  const size_t esize = s.bt == OT_F32 ? 4 : 2;
  float *A = malloc(sizeof(float) * arows * s.lda);
  void *B = malloc(esize * brows * s.ldb);
  double *Bw = malloc(sizeof(double) * brows * s.ldb);
  /* C with a guard row past the end: nothing may be written there or in padding columns. */
  const size_t csize = (size_t)(s.m + 1) * s.ldc;
  float *C0 = malloc(sizeof(float) * csize), *C = malloc(sizeof(float) * csize);
  double *ref = malloc(sizeof(double) * s.m * s.n), *mag = malloc(sizeof(double) * s.m * s.n);
  for (int64_t i = 0; i < arows * s.lda; i++) A[i] = uniform();
  for (int64_t i = 0; i < brows * s.ldb; i++) {
    if (s.bt == OT_F32) {
      ((float *)B)[i] = uniform();
      Bw[i] = ((float *)B)[i];
    } else if (s.bt == OT_BF16) {
      ((uint16_t *)B)[i] = random_bf16();
      Bw[i] = ref_bf16(((uint16_t *)B)[i]);
    } else {
      ((uint16_t *)B)[i] = random_f16();
      Bw[i] = ref_f16(((uint16_t *)B)[i]);
    }
  }
  for (size_t i = 0; i < csize; i++) C0[i] = uniform();
  for (int64_t i = 0; i < s.m; i++)
    for (int64_t j = 0; j < s.n; j++) {
      double sum = 0, abs = 0;
      for (int64_t p = 0; p < s.k; p++) {
        double t = (double)A[s.ta ? p * s.lda + i : i * s.lda + p] * Bw[s.tb ? j * s.ldb + p : p * s.ldb + j];
        sum += t;
        abs += fabs(t);
      }
      double c0 = C0[i * s.ldc + j];
      ref[i * s.n + j] = s.alpha * sum + (s.beta == 0 ? 0 : s.beta * c0);
      mag[i * s.n + j] = fabs(s.alpha) * abs + fabs(s.beta * c0);
    }
  const double tol = 1e-5 * sqrt((double)s.k + 1);
  (void)acols;
  (void)bcols;
  for (int kn = 0; kn < nkernels; kn++)
    for (int threads = 1; threads <= 3; threads++) {
      ot_gemm_set_kernel(kernels[kn]);
      ot_set_threads(threads);
      memcpy(C, C0, sizeof(float) * csize);
      if (s.beta == 0)
        for (int64_t i = 0; i < s.m; i++)
          for (int64_t j = 0; j < s.n; j++) C[i * s.ldc + j] = NAN;
      ot_gemm(s.ta, s.tb, s.m, s.n, s.k, s.alpha, A, s.lda, B, s.bt, s.ldb, s.beta, C, s.ldc);
      cases++;
      int64_t bad = 0, bi = 0, bj = 0;
      for (int64_t i = 0; i <= s.m; i++)
        for (int64_t j = 0; j < s.ldc; j++) {
          size_t at = i * s.ldc + j;
          int ok = i < s.m && j < s.n ? fabs(C[at] - ref[i * s.n + j]) <= tol * mag[i * s.n + j] + 1e-30
                                      : memcmp(&C[at], &C0[at], sizeof(float)) == 0;
          if (!ok && !bad++) bi = i, bj = j;
        }
      if (bad) {
        failures++;
        if (failures <= 20) {
          int in = bi < s.m && bj < s.n;
          printf("FAIL %s threads=%d ta=%d tb=%d %s m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld alpha=%g beta=%g: %lld bad, first C[%lld,%lld]=%g %s %g\n",
                 kernels[kn], threads, s.ta, s.tb, dtype_name[s.bt], (long long)s.m, (long long)s.n, (long long)s.k, (long long)s.lda,
                 (long long)s.ldb, (long long)s.ldc, s.alpha, s.beta, (long long)bad, (long long)bi, (long long)bj, C[bi * s.ldc + bj],
                 in ? "want" : "(outside the window) was", in ? ref[bi * s.n + bj] : C0[bi * s.ldc + bj]);
        }
      }
    }
  free(A), free(B), free(Bw), free(C0), free(C), free(ref), free(mag);
}

static const float alphas[][2] = {{1, 0}, {1, 1}, {0.5f, 0}, {-1.5f, 0.25f}, {2, -1}};
static const int pads[] = {0, 3, 16, 1};

/* One shape in all four transposes × three dtypes; strides and alpha/beta cycle with a counter so the
 * whole set covers every combination many times. */
static void check_all(int64_t m, int64_t n, int64_t k, const char **kernels, int nkernels) {
  static unsigned variant;
  for (int t = 0; t < 4; t++)
    for (int bt = 0; bt < 3; bt++) {
      shape_t s = {.ta = t >> 1, .tb = t & 1, .bt = (ot_dtype)bt, .m = m, .n = n, .k = k};
      unsigned v = variant++;
      int pad = pads[v % 4];
      s.lda = (s.ta ? m : k) + pad;
      s.ldb = (s.tb ? k : n) + pads[(v / 4) % 4];
      s.ldc = n + pads[(v / 2) % 4];
      s.alpha = alphas[v % 5][0];
      s.beta = alphas[v % 5][1];
      check(s, kernels, nkernels);
    }
}

static void check_degenerate(void) {
  float C[12], A[4] = {NAN, NAN, NAN, NAN};
  float B[4] = {NAN, NAN, NAN, NAN};
  for (int i = 0; i < 12; i++) C[i] = 7;
  /* k == 0: C = beta·C; with beta 0, zeros even over NaN; window only (ldc 4 > n 3) */
  ot_gemm(0, 0, 3, 3, 0, 1, A, 1, B, OT_F32, 3, 0.5f, C, 4);
  int ok = C[0] == 3.5f && C[2] == 3.5f && C[3] == 7 && C[10] == 3.5f && C[11] == 7;
  C[0] = NAN;
  ot_gemm(1, 1, 3, 3, 0, 1, A, 3, B, OT_BF16, 0, 0, C, 4);
  ok = ok && C[0] == 0 && C[10] == 0 && C[3] == 7;
  /* alpha == 0: A and B (NaN here) are not read */
  for (int i = 0; i < 12; i++) C[i] = 2;
  ot_gemm(0, 1, 3, 3, 1, 0, A, 1, B, OT_F16, 1, 1, C, 4);
  ok = ok && C[0] == 2 && C[10] == 2;
  /* m == 0 or n == 0: nothing */
  ot_gemm(0, 0, 0, 3, 2, 1, A, 2, B, OT_F32, 3, 0, C, 4);
  ot_gemm(0, 0, 3, 0, 2, 1, A, 2, B, OT_F32, 3, 0, C, 4);
  ok = ok && C[0] == 2 && C[1] == 2;
  cases++;
  if (!ok) {
    failures++;
    printf("FAIL degenerate sizes (k == 0, alpha == 0, m or n == 0)\n");
  }
}

/* ot_gemm_batch against ot_gemm item by item: products shared out to threads (or not), broadcast
 * operands (stride 0), f32 and bf16 B, 1-3 threads. */
static void check_batch(void) {
  static const int64_t batches[] = {1, 2, 3, 4, 5, 6, 9};
  for (int bi = 0; bi < 7; bi++)
    for (int v = 0; v < 8; v++) {
      const int64_t batch = batches[bi], m = 1 + next_u32() % 140, n = 1 + next_u32() % 90, k = 1 + next_u32() % 100;
      const int ta = v & 1, tb = (v >> 1) & 1, bcastA = v == 4, bcastB = v == 5;
      const ot_dtype bt = v & 4 ? OT_BF16 : OT_F32;
      const int64_t sa = bcastA ? 0 : m * k, sb = bcastB ? 0 : k * n;
      const size_t esize = bt == OT_F32 ? 4 : 2;
      float *A = malloc(sizeof(float) * (size_t)(batch * m * k));
      void *B = malloc(esize * (size_t)(batch * k * n));
      float *C = malloc(sizeof(float) * (size_t)(batch * m * n)), *R = malloc(sizeof(float) * (size_t)(batch * m * n));
      for (int64_t i = 0; i < batch * m * k; i++) A[i] = uniform();
      for (int64_t i = 0; i < batch * k * n; i++)
        if (bt == OT_F32) ((float *)B)[i] = uniform();
        else ((uint16_t *)B)[i] = random_bf16();
      ot_set_threads(1);
      for (int64_t i = 0; i < batch; i++)
        ot_gemm(ta, tb, m, n, k, 1.f, A + i * sa, ta ? m : k, (const char *)B + (size_t)(i * sb) * esize, bt, tb ? k : n, 0.f, R + i * m * n, n);
      for (int threads = 1; threads <= 3; threads++) {
        ot_set_threads(threads);
        for (int64_t i = 0; i < batch * m * n; i++) C[i] = NAN;
        ot_gemm_batch(ta, tb, batch, m, n, k, A, sa, ta ? m : k, B, bt, sb, tb ? k : n, C, m * n, n);
        cases++;
        int64_t bad = 0;
        for (int64_t i = 0; i < batch * m * n; i++)
          if (!(fabs(C[i] - R[i]) <= 1e-5 * (1 + fabs(R[i])))) bad++;
        if (bad) {
          failures++;
          printf("FAIL batch=%lld threads=%d ta=%d tb=%d %s m=%lld n=%lld k=%lld sa=%lld sb=%lld: %lld bad\n", (long long)batch, threads, ta, tb,
                 dtype_name[bt], (long long)m, (long long)n, (long long)k, (long long)sa, (long long)sb, (long long)bad);
        }
      }
      free(A), free(B), free(C), free(R);
    }
}

int main(int argc, char **argv) {
  const int quick = argc > 1 && !strcmp(argv[1], "quick");
  const char *all[] = {"avx512", "avx2", "generic"}, *kernels[3];
  int nkernels = 0;
  for (int i = 0; i < 3; i++)
    if (ot_gemm_set_kernel(all[i]) == 0) kernels[nkernels++] = all[i];
  ot_gemm_set_kernel(NULL);
  printf("kernels:");
  for (int i = 0; i < nkernels; i++) printf(" %s", kernels[i]);
  printf(" (default %s)\n", ot_gemm_kernel());

  check_degenerate();
  check_batch();
  static const int64_t dims[] = {1, 2, 3, 7, 16, 17, 31, 64, 65, 127, 130, 257, 1000};
  const int nd = sizeof dims / sizeof dims[0];
  const double budget = quick ? 2e5 : 3e6; /* m·n·k cap for the all-combinations sweep */
  for (int a = 0; a < nd; a++)
    for (int b = 0; b < nd; b++)
      for (int c = 0; c < nd; c++)
        if ((double)dims[a] * dims[b] * dims[c] <= budget) check_all(dims[a], dims[b], dims[c], kernels, nkernels);
  for (int r = 0; r < (quick ? 20 : 150); r++) check_all(1 + next_u32() % 300, 1 + next_u32() % 300, 1 + next_u32() % 300, kernels, nkernels);
  /* Sizes of the engine's products: several k blocks, several tiles per thread, decode. */
  check_all(130, 1100, 900, kernels, nkernels);
  check_all(1, 4864, 896, kernels, nkernels);
  check_all(9, 700, 1000, kernels, nkernels);
  check_all(13, 2000, 64, kernels, nkernels);
  check_all(512, 96, 1030, kernels, nkernels);
  /* LoRA factors at rank 8 and 16: few columns, many rows (gemm_thin). */
  check_all(387, 8, 896, kernels, nkernels);
  check_all(300, 16, 1100, kernels, nkernels);
  check_all(66, 1, 70, kernels, nkernels);

  ot_set_threads(1);
  printf("%ld cases, %ld failed\n", cases, failures);
  return failures ? 1 : 0;
}
