/*
 * Checks ot_skinny_range (skinny.h) against a double-precision reference on the same widened B values:
 * f32, bf16 and f16 B, m from 1 to 21 (every row-group shape and remainder), k below, at and above 32
 * and the k-block size (tails masked), ranges that start and end mid-tile, leading dimensions larger than
 * k, and the accumulate flag. Cells of C outside the range are never written.
 *
 *   gcc -O3 -pthread libs/engine/native/test/skinny-test.c libs/engine/native/skinny.c libs/engine/native/gemm.c \
 *       libs/engine/native/thread-pool.c -lm -o /tmp/skinny-test && /tmp/skinny-test
 *
 * Exit status 0 only if every case passes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../skinny.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t next_u32(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}
static float uniform(void) { return (float)(next_u32() & 0xffffff) / 8388608.0f - 1.0f; }

static double widen(const void *B, ot_dtype t, int64_t i) {
  const uint16_t h = t == OT_F32 ? 0 : ((const uint16_t *)B)[i];
  if (t == OT_F32) return ((const float *)B)[i];
  if (t == OT_BF16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  int e = (h >> 10) & 31, man = h & 1023;
  double v = e ? ldexp(1024 + man, e - 25) : ldexp(man, -24);
  return h & 0x8000 ? -v : v;
}

static int failures = 0, cases = 0;

static void check(ot_dtype t, int64_t m, int64_t n, int64_t k, int64_t ldb, int64_t j0, int64_t j1, int accumulate) {
  const size_t es = t == OT_F32 ? 4 : 2;
  float *A = malloc(sizeof(float) * (size_t)(m * (k + 3) + 1));
  void *B = malloc(es * (size_t)(n * ldb));
  const int64_t ldc = n + 5;
  float *C = malloc(sizeof(float) * (size_t)(m * ldc)), *C0 = malloc(sizeof(float) * (size_t)(m * ldc));
  float *buf = malloc(sizeof(float) * ot_skinny_lhs_floats(m, k));
  const int64_t lda = k + 3;
  for (int64_t i = 0; i < m * lda; i++) A[i] = uniform();
  for (int64_t i = 0; i < n * ldb; i++) {
    if (t == OT_F32) ((float *)B)[i] = uniform();
    else if (t == OT_BF16) {
      float f = uniform();
      uint32_t u;
      memcpy(&u, &f, 4);
      ((uint16_t *)B)[i] = (uint16_t)(u >> 16);
    } else {
      uint32_t r = next_u32();
      ((uint16_t *)B)[i] = (uint16_t)((r & 0x8000) | (10 + r % 6) << 10 | (r >> 16 & 1023));
    }
  }
  for (int64_t i = 0; i < m * ldc; i++) C[i] = C0[i] = uniform();
  ot_skinny_lhs L;
  ot_skinny_prepare(&L, A, lda, m, k, t, buf);
  ot_skinny_range(&L, B, ldb, j0, j1, C, ldc, accumulate, 0);
  double worst = 0;
  int outside = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < ldc; j++) {
      const float got = C[i * ldc + j];
      if (j < j0 || j >= j1) {
        if (memcmp(&got, &C0[i * ldc + j], 4)) outside = 1;
        continue;
      }
      double ref = accumulate ? C0[i * ldc + j] : 0, mag = fabs(ref);
      for (int64_t p = 0; p < k; p++) {
        const double x = (double)A[i * lda + p] * widen(B, t, j * ldb + p);
        ref += x;
        mag += fabs(x);
      }
      const double err = fabs(got - ref) / (mag + 1e-30);
      if (err > worst) worst = err;
    }
  cases++;
  if (worst > 1e-6 || outside) {
    failures++;
    fprintf(stderr, "FAIL dtype %d m %ld n %ld k %ld ldb %ld range [%ld, %ld) acc %d: relative error %.3g%s\n", t, (long)m, (long)n, (long)k, (long)ldb,
            (long)j0, (long)j1, accumulate, worst, outside ? ", wrote outside the range" : "");
  }
  free(A);
  free(B);
  free(C);
  free(C0);
  free(buf);
}

int main(void) {
  const ot_dtype types[] = {OT_F32, OT_BF16, OT_F16};
  const int64_t ks[] = {1, 7, 31, 32, 33, 64, 100, 896, 1025, 2100};
  const char *kernels[] = {"avx512", "avx2", "generic"};
  for (int kr = 0; kr < 3; kr++) {
    if (ot_gemm_set_kernel(kernels[kr]) != 0) continue;
    printf("kernel %s\n", kernels[kr]);
    for (int ti = 0; ti < 3; ti++)
    for (int64_t m = 1; m <= 21; m += (m < 10 ? 1 : 5))
      for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        const int64_t k = ks[ki], n = 37;
        check(types[ti], m, n, k, k, 0, n, 0);
          check(types[ti], m, n, k, k + 9, 3, 30, 1);
        }
  }
  printf("%d cases, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
