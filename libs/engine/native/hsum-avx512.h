/*
 * Horizontal sums of several AVX-512 accumulators at once, shared by the matrix product's dot form
 * (gemm.c) and the decoding step's few-row products (skinny.c). Include only on x86-64.
 */
#ifndef OT_HSUM_AVX512_H
#define OT_HSUM_AVX512_H

#include <immintrin.h>

/* The sums of v[0..n) (n ≤ 16, constant) in one vector, by a tree of shuffles and adds (45 operations
 * for 16 sums, against 8 each one by one): the sum of v[q] lands in lane 4·(q%4) + q/4. */
static inline __attribute__((always_inline, target("avx512f"))) __m512 hsum_many(const __m512 *v, const int n) {
  __m512 z = _mm512_setzero_ps(), w[8], x[4], y[2];
  for (int q = 0; q < 8; q++) {
    __m512 a = 2 * q < n ? v[2 * q] : z, b = 2 * q + 1 < n ? v[2 * q + 1] : z;
    w[q] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xee));
  }
  for (int q = 0; q < 4; q++) x[q] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * q], w[2 * q + 1], 0x88), _mm512_shuffle_f32x4(w[2 * q], w[2 * q + 1], 0xdd));
  for (int q = 0; q < 2; q++) y[q] = _mm512_add_ps(_mm512_shuffle_ps(x[2 * q], x[2 * q + 1], 0x44), _mm512_shuffle_ps(x[2 * q], x[2 * q + 1], 0xee));
  return _mm512_add_ps(_mm512_shuffle_ps(y[0], y[1], 0x88), _mm512_shuffle_ps(y[0], y[1], 0xdd));
}

#endif
