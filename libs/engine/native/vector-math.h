/*
 * Vector helpers written once with GCC vector types and instantiated per instruction set (16 lanes for
 * AVX-512, 8 for AVX2, 4 for any CPU), for kernels that pick their code at run time:
 * VECTOR_MATH(SUFFIX, LANES, TARGET) defines vf_SUFFIX / vi_SUFFIX, vsel_SUFFIX (a lane select) and
 * vexp_SUFFIX.
 *
 * exp: x = n·ln2 + r with n rounded to nearest and |r| ≤ ln2/2, e^r by a degree-6 polynomial, 2^n by
 * building the float's exponent; about 2 ulp. Inputs below -87.3 give exactly 0 (as expf underflows: a
 * masked attention score must not leave a tiny value whose products run as slow denormals), inputs
 * above 88.3 are clamped there.
 */
#ifndef OT_VECTOR_MATH_H
#define OT_VECTOR_MATH_H

#include <stdint.h>
#include <string.h>

#define VECTOR_MATH(SUFFIX, LANES, TARGET)                                                                        \
  typedef float vf_##SUFFIX __attribute__((vector_size(LANES * 4), aligned(4)));                                  \
  typedef int32_t vi_##SUFFIX __attribute__((vector_size(LANES * 4), aligned(4)));                                \
  /* Lanes of a where mask is set, else of b (C has no ?: on vectors). */                                       \
  TARGET static inline vf_##SUFFIX vsel_##SUFFIX(vi_##SUFFIX mask, vf_##SUFFIX a, vf_##SUFFIX b) {             \
    vi_##SUFFIX ai, bi, ri;                                                                                       \
    memcpy(&ai, &a, sizeof ai);                                                                                   \
    memcpy(&bi, &b, sizeof bi);                                                                                   \
    ri = (ai & mask) | (bi & ~mask);                                                                              \
    vf_##SUFFIX r;                                                                                                \
    memcpy(&r, &ri, sizeof r);                                                                                    \
    return r;                                                                                                     \
  }                                                                                                               \
  TARGET static inline vf_##SUFFIX vexp_##SUFFIX(vf_##SUFFIX x) {                                                \
    const vf_##SUFFIX zero = {0}, lo = zero - 87.3f, hi = zero + 88.3f;                                          \
    const vi_##SUFFIX under = x < lo;                                                                             \
    x = vsel_##SUFFIX(under, lo, x);                                                                              \
    x = vsel_##SUFFIX(x > hi, hi, x);                                                                             \
    vf_##SUFFIX n = x * 1.44269504088896341f + 12582912.0f;                                                      \
    n = n - 12582912.0f;                                                                                          \
    vf_##SUFFIX r = x - n * 0.693359375f;                                                                        \
    r = r - n * -2.12194440e-4f;                                                                                  \
    vf_##SUFFIX p = r * 1.9875691500e-4f + 1.3981999507e-3f;                                                     \
    p = p * r + 8.3334519073e-3f;                                                                                 \
    p = p * r + 4.1665795894e-2f;                                                                                 \
    p = p * r + 1.6666665459e-1f;                                                                                 \
    p = p * r + 5.0000001201e-1f;                                                                                 \
    p = p * r * r + r + 1.0f;                                                                                     \
    vi_##SUFFIX e = (__builtin_convertvector(n, vi_##SUFFIX) + 127) << 23;                                       \
    vf_##SUFFIX scale;                                                                                            \
    memcpy(&scale, &e, sizeof scale);                                                                             \
    return vsel_##SUFFIX(under, zero, p * scale);                                                                 \
  }

#endif
