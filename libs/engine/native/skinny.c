/*
 * Few-row products against weights in Hugging Face layout, streamed once (see skinny.h).
 *
 * A tile is ti rows of A × tj rows of B, 2·ti·tj multiply-adds per 32 values of k into ti·tj vector
 * accumulators, reduced at the end by a tree of shuffles. One row of A (m = 1, the bandwidth-bound
 * case) takes 8 rows of B at a time, so eight streams are in flight and the next tile's rows are
 * prefetched one tile ahead; more rows of A take fewer rows of B (ti·tj ≤ 16) and walk the range once per
 * group of 8 rows, with B's range coming back from L2. With 8 rows and a long k, A is swept in k blocks
 * that keep the group's 8 rows in L1 (partial sums added into C between blocks).
 */
#include "skinny.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

#include "hsum-avx512.h"
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))
#endif
#define INLINE static inline __attribute__((always_inline))

/* k per pass of an 8-row group: 8 rows × 1,024 floats = 32 KiB of A stay in a 48 KiB L1. */
#define KBLOCK 1024
#define GROUP 8

static int64_t round32(int64_t k) { return (k + 31) & ~(int64_t)31; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The prepared layout and the AVX-512 tiles follow ot_gemm's kernel choice (tests force the others). */
static int use_avx512(void) { return !strcmp(ot_gemm_kernel(), "avx512"); }

size_t ot_skinny_lhs_floats(int64_t m, int64_t k) { return (size_t)(m * round32(k)) + 16; }

void ot_skinny_prepare(ot_skinny_lhs *L, const float *A, int64_t lda, int64_t m, int64_t k, ot_dtype bt, float *buf) {
  const int64_t kp = round32(k);
  *L = (ot_skinny_lhs){.m = m, .k = k, .kp = kp, .bt = bt, .a = A, .orig = A, .lda = lda};
  if (!use_avx512()) return;
  float *a = (float *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
  for (int64_t i = 0; i < m; i++) {
    const float *src = A + i * lda;
    float *dst = a + i * kp;
    if (bt == OT_BF16) {
      for (int64_t c = 0; c < kp; c += 32)
        for (int l = 0; l < 16; l++) {
          const int64_t e = c + 2 * l, o = e + 1;
          dst[c + l] = e < k ? src[e] : 0.f;
          dst[c + 16 + l] = o < k ? src[o] : 0.f;
        }
    } else {
      memcpy(dst, src, (size_t)k * sizeof(float));
      memset(dst + k, 0, (size_t)(kp - k) * sizeof(float));
    }
  }
  L->a = a;
}

#if defined(__x86_64__)

/* 32 values of a B row at element `at`: bf16 as its even and odd elements, f32/f16 in order. `rem` values
 * remain in the row; a full chunk (rem ≥ 32, the main loop: `full`) loads without a mask. */
T512 INLINE void load_b(const void *B, ot_dtype t, int64_t at, const int full, int64_t rem, __m512 *lo, __m512 *hi) {
  if (t == OT_BF16) {
    const __m512i w = full ? _mm512_loadu_si512((const uint16_t *)B + at)
                           : _mm512_maskz_loadu_epi16(rem <= 0 ? 0 : (__mmask32)((1u << rem) - 1), (const uint16_t *)B + at);
    *lo = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    *hi = _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32((int)0xffff0000u)));
    return;
  }
  const __mmask16 m0 = full || rem >= 16 ? 0xffff : rem <= 0 ? 0 : (__mmask16)((1u << rem) - 1);
  const __mmask16 m1 = full ? 0xffff : rem <= 16 ? 0 : (__mmask16)((1u << (rem - 16)) - 1);
  if (t == OT_F16) {
    *lo = _mm512_cvtph_ps(full ? _mm256_loadu_si256((const __m256i *)((const uint16_t *)B + at)) : _mm256_maskz_loadu_epi16(m0, (const uint16_t *)B + at));
    *hi = _mm512_cvtph_ps(full ? _mm256_loadu_si256((const __m256i *)((const uint16_t *)B + at + 16)) : _mm256_maskz_loadu_epi16(m1, (const uint16_t *)B + at + 16));
  } else {
    *lo = full ? _mm512_loadu_ps((const float *)B + at) : _mm512_maskz_loadu_ps(m0, (const float *)B + at);
    *hi = full ? _mm512_loadu_ps((const float *)B + at + 16) : _mm512_maskz_loadu_ps(m1, (const float *)B + at + 16);
  }
}

/* One 32-value chunk of k for a tile: acc[i·tj + r] += A row i · B row r over [p, p + 32). */
T512 INLINE void chunk(const void *B, const ot_dtype t, int64_t ldb, const int64_t esize, const float *a, int64_t kp, const int ti, const int tj,
                       const int64_t *row, int64_t p, const int full, int64_t rem, int prefetch, __m512 *acc) {
  __m512 lo[8], hi[8];
  for (int r = 0; r < tj; r++) load_b(B, t, row[r] + p, full, rem, &lo[r], &hi[r]);
  if (prefetch) /* the next tile's rows, one tile ahead (prefetches past the matrix's end never fault) */
    for (int r = 0; r < tj; r++) {
      const char *n = (const char *)B + (row[r] + tj * ldb + p) * esize;
      _mm_prefetch(n, _MM_HINT_T0);
      if (esize == 4) _mm_prefetch(n + 64, _MM_HINT_T0);
    }
  for (int i = 0; i < ti; i++) {
    __m512 ae = _mm512_load_ps(a + i * kp + p), ao = _mm512_load_ps(a + i * kp + p + 16);
    /* Keeps each row of A in a register: folded into the FMAs as memory operands, it would be loaded tj times. */
    __asm__("" : "+v"(ae), "+v"(ao));
    for (int r = 0; r < tj; r++) {
      acc[i * tj + r] = _mm512_fmadd_ps(ae, lo[r], acc[i * tj + r]);
      acc[i * tj + r] = _mm512_fmadd_ps(ao, hi[r], acc[i * tj + r]);
    }
  }
}

/* ti rows of A from i0 × tj rows of B from j (rows past nj repeat the last, unstored), k in [p0, p1). */
T512 INLINE void tile(const ot_skinny_lhs *L, const void *B, const ot_dtype t, int64_t ldb, const int ti, const int tj, int64_t i0, int64_t j, int nj,
                      int64_t p0, int64_t p1, float *C, int64_t ldc, int add, int prefetch) {
  const int64_t kp = L->kp, k = L->k, esize = t == OT_F32 ? 4 : 2;
  const float *a = L->a + i0 * kp;
  int64_t row[8];
  for (int r = 0; r < tj; r++) row[r] = (j + (r < nj ? r : nj - 1)) * ldb;
  __m512 acc[16];
  for (int q = 0; q < ti * tj; q++) acc[q] = _mm512_setzero_ps();
  /* Full 32-value chunks without masks, then the row's last, partial chunk (if this k block has it). */
  const int64_t pfull = min64(p1, k & ~(int64_t)31);
  int64_t p = p0;
  for (; p < pfull; p += 32) chunk(B, t, ldb, esize, a, kp, ti, tj, row, p, 1, 0, prefetch, acc);
  for (; p < p1; p += 32) chunk(B, t, ldb, esize, a, kp, ti, tj, row, p, 0, k - p, prefetch, acc);
  float s[16];
  _mm512_storeu_ps(s, hsum_many(acc, ti * tj));
  for (int i = 0; i < ti; i++)
    for (int r = 0; r < nj; r++) {
      const int q = i * tj + r;
      float *c = C + (i0 + i) * ldc + j + r;
      const float v = s[4 * (q % 4) + q / 4];
      *c = add ? *c + v : v;
    }
}

/* B rows per tile for a group of ti rows of A (ti·tj ≤ 16 accumulators). */
#define TILE_ROWS(ti) ((ti) == 1 ? 8 : (ti) == 2 ? 6 : (ti) <= 4 ? 4 : 2)

#define TILE_CASE(TI)                                                                          \
  case TI:                                                                                     \
    for (int64_t j = j0; j < j1; j += TILE_ROWS(TI))                                           \
      tile(L, B, t, ldb, TI, TILE_ROWS(TI), i0, j, (int)min64(TILE_ROWS(TI), j1 - j), p0, p1, C, ldc, add, pf); \
    break;

T512 INLINE void range_avx512_body(const ot_skinny_lhs *L, const void *B, const ot_dtype t, int64_t ldb, int64_t j0, int64_t j1, float *C, int64_t ldc,
                                   int accumulate) {
  const int64_t kp = L->kp;
  /* Even k blocks, multiples of 32, only where a full group of 8 rows would not stay in L1. */
  const int64_t blocks = L->m >= GROUP && kp > KBLOCK ? (kp + KBLOCK - 1) / KBLOCK : 1;
  const int64_t kb = round32((kp + blocks - 1) / blocks);
  for (int64_t p0 = 0; p0 < kp; p0 += kb) {
    const int64_t p1 = min64(kp, p0 + kb);
    const int add = accumulate || p0 > 0;
    for (int64_t i0 = 0; i0 < L->m; i0 += GROUP) {
      const int pf = i0 == 0 && p0 == 0; /* the first sweep brings B in from memory */
      switch ((int)min64(GROUP, L->m - i0)) {
        TILE_CASE(1)
        TILE_CASE(2)
        TILE_CASE(3)
        TILE_CASE(4)
        TILE_CASE(5)
        TILE_CASE(6)
        TILE_CASE(7)
        default: TILE_CASE(8)
      }
    }
  }
}

T512 static void range_avx512(const ot_skinny_lhs *L, const void *B, ot_dtype t, int64_t ldb, int64_t j0, int64_t j1, float *C, int64_t ldc,
                              int accumulate) {
  switch (t) {
    case OT_BF16: range_avx512_body(L, B, OT_BF16, ldb, j0, j1, C, ldc, accumulate); break;
    case OT_F16: range_avx512_body(L, B, OT_F16, ldb, j0, j1, C, ldc, accumulate); break;
    default: range_avx512_body(L, B, OT_F32, ldb, j0, j1, C, ldc, accumulate); break;
  }
}

#endif /* __x86_64__ */

void ot_skinny_range(const ot_skinny_lhs *L, const void *B, int64_t ldb, int64_t j0, int64_t j1, float *C, int64_t ldc, int accumulate, int thread) {
  if (j1 <= j0 || L->m <= 0) return;
#if defined(__x86_64__)
  if (L->a != L->orig) { /* prepared for the AVX-512 tiles */
    range_avx512(L, B, L->bt, ldb, j0, j1, C, ldc, accumulate);
    return;
  }
#endif
  const size_t esize = L->bt == OT_F32 ? 4 : 2;
  ot_gemm_serial(thread, 0, 1, L->m, j1 - j0, L->k, 1.0f, L->orig, L->lda, (const char *)B + (size_t)(j0 * ldb) * esize, L->bt, ldb, accumulate ? 1.0f : 0.0f,
                 C + j0, ldc);
}
