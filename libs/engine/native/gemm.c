/*
 * The engine's matrix product (see gemm.h), GotoBLAS/BLIS style.
 *
 * Large products (the packed path): C is cut into tiles, one per work item of the thread pool. A tile
 * loops over k in blocks of `kc`; for each block it packs its kc×width slice of B into NR-wide column
 * panels (widening 16-bit weights to float32 on the way) that stay in the core's L2, then walks down
 * its rows MR at a time, packing an MR×kc sliver of A that stays in L1 while the microkernel sweeps it
 * across every panel. The microkernel keeps an MR×NR block of C in registers: per k step it loads NR
 * values of B as vectors, broadcasts MR values of A and issues MR·NR/lanes FMAs.
 *
 * Small m (decode, attention with a handful of query rows): packing B would cost as much as the
 * product, which is bound by reading B from memory once. These run straight from B (the unpacked
 * path): with transB a dot-product form (each output is a row of A times a contiguous row of B),
 * without it an axpy form (each k step adds a row of B, scaled, to the outputs). Both split n across
 * threads, and prefetch B in software when it is too big to be in cache.
 *
 * Microkernels: AVX-512, AVX2+FMA (both paths) and portable C (packed path only), chosen at run time;
 * the x86 ones carry target attributes so the file builds without -march and runs on any x86-64.
 */
#include "gemm.h"

#include <stdlib.h>
#include <string.h>

#include "thread-pool.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "hsum-avx512.h"
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))
#define T256 __attribute__((target("avx2,fma,f16c")))
#endif
#define INLINE static inline __attribute__((always_inline))

/* Products with fewer multiply-adds than this run on the calling thread: waking a sleeping worker
 * costs several microseconds, more than it saves below ~1 MFLOP. */
#define PARALLEL_MIN_MNK (1 << 19)
/* B bigger than this is taken to come from memory rather than L2: the unpacked path then prefetches it
 * in software, and the axpy form hands over to the packed path from a smaller m. */
#define STREAM_BYTES (1 << 20)
/* m up to which the unpacked path runs (when the kernel has one), measured on Sapphire Rapids against
 * the packed path: the dot form wins to m ≈ 24, the axpy form (B rows strided in memory) to m ≈ 8,
 * or 16 when B is in cache, or 64 when besides n is at most one 64-column tile (the packed path then
 * packs each sliver of A for just one or two microkernel calls). */
#define SMALL_M_DOT 24
#define SMALL_M_AXPY 8
#define SMALL_M_AXPY_CACHED 16
#define SMALL_M_AXPY_NARROW 64
/* Columns up to which a product of many rows runs transposed (see gemm_thin): a LoRA factor's rank. */
#define THIN_N 16
#define THIN_MIN_M 65
/* How far ahead (rows of B) the axpy form prefetches. */
#define AXPY_PF 32

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ---------------------------------------------------------------- B element widening (portable) */

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static float bf16_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

static float f16_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (e == 0x1f) return bits_f32(sign | 0x7f800000u | man << 13); /* inf, nan */
  if (e) return bits_f32(sign | (e + 112) << 23 | man << 13);      /* rebias 15 → 127 */
  float sub = (float)man * 0x1p-24f;                               /* zero and subnormals */
  return sign ? -sub : sub;
}

static float widen(const void *B, ot_dtype t, int64_t i) {
  switch (t) {
    case OT_BF16: return bf16_f32(((const uint16_t *)B)[i]);
    case OT_F16: return f16_f32(((const uint16_t *)B)[i]);
    default: return ((const float *)B)[i];
  }
}

/* ---------------------------------------------------------------- the job and the kernels */

typedef struct kernel kernel_t;

typedef struct {
  const kernel_t *kr;
  int transA, transB;
  ot_dtype bt;
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  const float *A;
  const void *B;
  float *C;
  /* packed path: C is a tm×tn grid of tiles over `slivers` MR-row slivers and `panels` NR-column panels */
  int64_t tm, tn, slivers, panels, kc;
  /* small path: n split into `items` ranges; `stream`: B is too big to be in cache, prefetch it */
  int64_t items;
  int stream;
} job_t;

struct kernel {
  const char *name;
  int mr, nr;       /* register block of C */
  int64_t kc, nc;   /* cache blocks: an MR×kc sliver of A for L1, a kc×nc block of B for L2 */
  void (*pack_a)(const job_t *J, int64_t i0, int mv, int64_t p0, int64_t kc, float *dst);
  void (*pack_b)(const job_t *J, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst);
  /* C[0:mv, 0:nv] = alpha·(a·b) + beta·C, a an MR×kc sliver, b a kc×NR panel */
  void (*ukr)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int mv, int nv, float alpha, float beta);
  /* small path, C[:, j0:j1]; NULL: the kernel has none */
  void (*small)(const job_t *J, int64_t j0, int64_t j1);
};

static float a_at(const job_t *J, int64_t i, int64_t p) { return J->A[J->transA ? p * J->lda + i : i * J->lda + p]; }
static float b_at(const job_t *J, int64_t p, int64_t j) { return widen(J->B, J->bt, J->transB ? j * J->ldb + p : p * J->ldb + j); }

/* Writes alpha·tile + beta·C for the valid mv×nv corner of a tile held in memory (edge tiles). */
static void store_tile(float *c, int64_t ldc, const float *tile, int ldt, int mv, int nv, float alpha, float beta) {
  for (int i = 0; i < mv; i++)
    for (int j = 0; j < nv; j++) {
      float *o = &c[i * ldc + j];
      *o = beta == 0.f ? alpha * tile[i * ldt + j] : alpha * tile[i * ldt + j] + beta * *o;
    }
}

/* Sliver layout: for each p, the MR values A[i0..i0+MR, p]; rows past mv are zero. */
static void pack_a_generic(const job_t *J, int64_t i0, int mv, int64_t p0, int64_t kc, float *dst) {
  int mr = J->kr->mr;
  for (int64_t p = 0; p < kc; p++, dst += mr)
    for (int i = 0; i < mr; i++) dst[i] = i < mv ? a_at(J, i0 + i, p0 + p) : 0.f;
}

/* One panel: for each p, the NR values B[p, j0..j0+NR]; columns past nv are zero. */
static void pack_b_panel_generic(const job_t *J, int64_t p0, int64_t kc, int64_t j0, int nv, float *dst) {
  int nr = J->kr->nr;
  for (int64_t p = 0; p < kc; p++, dst += nr)
    for (int j = 0; j < nr; j++) dst[j] = j < nv ? b_at(J, p0 + p, j0 + j) : 0.f;
}

static void pack_b_generic(const job_t *J, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst) {
  int nr = J->kr->nr;
  for (int64_t j = 0; j < nc; j += nr, dst += kc * nr) pack_b_panel_generic(J, p0, kc, j0 + j, (int)min64(nr, nc - j), dst);
}

/* 4×16: sixteen 4-lane accumulators, which NEON's 32 registers hold and compilers vectorise. */
#define GEN_MR 4
#define GEN_NR 16
static void ukr_generic(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int mv, int nv, float alpha, float beta) {
  float acc[GEN_MR][GEN_NR] = {{0}};
  for (int64_t p = 0; p < kc; p++, a += GEN_MR, b += GEN_NR)
    for (int i = 0; i < GEN_MR; i++)
      for (int j = 0; j < GEN_NR; j++) acc[i][j] += a[i] * b[j];
  store_tile(c, ldc, &acc[0][0], GEN_NR, mv, nv, alpha, beta);
}

#if defined(__x86_64__)

/* ---------------------------------------------------------------- x86: AVX2 (+ packing shared with AVX-512) */

/* 8 consecutive B values as float32. `t` is a constant wherever this is inlined. */
T256 INLINE __m256 widen8(const void *B, ot_dtype t, int64_t i) {
  const __m128i *h = (const __m128i *)((const uint16_t *)B + i);
  switch (t) {
    case OT_BF16: return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(h)), 16));
    case OT_F16: return _mm256_cvtph_ps(_mm_loadu_si128(h));
    default: return _mm256_loadu_ps((const float *)B + i);
  }
}

/* r[0..7] rows in, columns out. */
T256 INLINE void transpose8(__m256 r[8]) {
  __m256 t[8], s[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; i++) {
    s[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    s[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
    s[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    s[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
  }
  for (int i = 0; i < 4; i++) {
    r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
  }
}

/* Full panels 8 columns at a time: straight row copies without transB, 8×8 transposes with it (B rows
 * are then k-contiguous). Only the last, partial panel and a k tail go element by element. */
T256 INLINE void pack_b_x86_body(const job_t *J, ot_dtype t, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst) {
  const int nr = J->kr->nr;
  const int64_t ldb = J->ldb, kc8 = kc & ~(int64_t)7;
  for (int64_t jp = 0; jp < nc; jp += nr, dst += kc * nr) {
    if (nc - jp < nr) {
      pack_b_panel_generic(J, p0, kc, j0 + jp, (int)(nc - jp), dst);
      continue;
    }
    if (!J->transB) {
      for (int64_t p = 0; p < kc; p++)
        for (int g = 0; g < nr; g += 8) _mm256_store_ps(dst + p * nr + g, widen8(J->B, t, (p0 + p) * ldb + j0 + jp + g));
      continue;
    }
    for (int g = 0; g < nr; g += 8) {
      int64_t row = (j0 + jp + g) * ldb + p0; /* B row of column j0+jp+g, at k = p0 */
      for (int64_t p = 0; p < kc8; p += 8) {
        __m256 r[8];
        for (int i = 0; i < 8; i++) r[i] = widen8(J->B, t, row + i * ldb + p);
        transpose8(r);
        for (int i = 0; i < 8; i++) _mm256_store_ps(dst + (p + i) * nr + g, r[i]);
      }
      for (int64_t p = kc8; p < kc; p++)
        for (int i = 0; i < 8; i++) dst[p * nr + g + i] = widen(J->B, t, row + i * ldb + p);
    }
  }
}

T256 static void pack_b_x86(const job_t *J, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst) {
  switch (J->bt) {
    case OT_BF16: pack_b_x86_body(J, OT_BF16, p0, kc, j0, nc, dst); break;
    case OT_F16: pack_b_x86_body(J, OT_F16, p0, kc, j0, nc, dst); break;
    default: pack_b_x86_body(J, OT_F32, p0, kc, j0, nc, dst); break;
  }
}

/* With transA the sliver's rows are contiguous; without, 4×4 transposes (and single elements for rows
 * beyond a multiple of 4 and for a k tail). Partial slivers (the bottom edge) go element by element. */
T256 INLINE void pack_a_x86_body(const job_t *J, const int mr, int64_t i0, int mv, int64_t p0, int64_t kc, float *dst) {
  const int64_t lda = J->lda;
  if (mv < mr) {
    pack_a_generic(J, i0, mv, p0, kc, dst);
  } else if (J->transA) {
    const float *s = J->A + p0 * lda + i0;
    for (int64_t p = 0; p < kc; p++) memcpy(dst + p * mr, s + p * lda, sizeof(float) * mr);
  } else {
    const float *s = J->A + i0 * lda + p0;
    const int mr4 = mr & ~3;
    const int64_t kc4 = kc & ~(int64_t)3;
    for (int64_t p = 0; p < kc4; p += 4) {
      for (int g = 0; g < mr4; g += 4) {
        __m128 r0 = _mm_loadu_ps(s + g * lda + p), r1 = _mm_loadu_ps(s + (g + 1) * lda + p);
        __m128 r2 = _mm_loadu_ps(s + (g + 2) * lda + p), r3 = _mm_loadu_ps(s + (g + 3) * lda + p);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(dst + p * mr + g, r0);
        _mm_storeu_ps(dst + (p + 1) * mr + g, r1);
        _mm_storeu_ps(dst + (p + 2) * mr + g, r2);
        _mm_storeu_ps(dst + (p + 3) * mr + g, r3);
      }
      for (int i = mr4; i < mr; i++)
        for (int q = 0; q < 4; q++) dst[(p + q) * mr + i] = s[i * lda + p + q];
    }
    for (int64_t p = kc4; p < kc; p++)
      for (int i = 0; i < mr; i++) dst[p * mr + i] = s[i * lda + p];
  }
}

/* 6×16: twelve 8-lane accumulators, two B vectors and a broadcast fill 15 of the 16 ymm registers. */
#define AVX2_MR 6
#define AVX2_NR 16

T256 static void pack_a_avx2(const job_t *J, int64_t i0, int mv, int64_t p0, int64_t kc, float *dst) { pack_a_x86_body(J, AVX2_MR, i0, mv, p0, kc, dst); }

T256 INLINE void store8(float *c, __m256 x, __m256 va, __m256 vb, int read) {
  x = _mm256_mul_ps(x, va);
  _mm256_storeu_ps(c, read ? _mm256_fmadd_ps(vb, _mm256_loadu_ps(c), x) : x);
}

T256 static void ukr_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int mv, int nv, float alpha, float beta) {
  /* Named accumulators: with an array, gcc keeps a memory copy updated every k step. */
  __m256 z = _mm256_setzero_ps(), c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z, c50 = z, c51 = z;
  for (int64_t p = 0; p < kc; p++, a += AVX2_MR, b += AVX2_NR) {
    __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8), ai;
#define AVX2_ROW(i)                       \
  ai = _mm256_broadcast_ss(a + i);        \
  c##i##0 = _mm256_fmadd_ps(ai, b0, c##i##0); \
  c##i##1 = _mm256_fmadd_ps(ai, b1, c##i##1);
    AVX2_ROW(0) AVX2_ROW(1) AVX2_ROW(2) AVX2_ROW(3) AVX2_ROW(4) AVX2_ROW(5)
#undef AVX2_ROW
  }
  const __m256 acc[AVX2_MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  if (mv == AVX2_MR && nv == AVX2_NR) {
    __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    for (int i = 0; i < AVX2_MR; i++) {
      store8(c + i * ldc, acc[i][0], va, vb, beta != 0.f);
      store8(c + i * ldc + 8, acc[i][1], va, vb, beta != 0.f);
    }
  } else {
    float tile[AVX2_MR][AVX2_NR];
    for (int i = 0; i < AVX2_MR; i++) {
      _mm256_storeu_ps(tile[i], acc[i][0]);
      _mm256_storeu_ps(tile[i] + 8, acc[i][1]);
    }
    store_tile(c, ldc, &tile[0][0], AVX2_NR, mv, nv, alpha, beta);
  }
}

T256 INLINE float hsum8(__m256 x) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

INLINE void store1(float *c, float s, float alpha, float beta) { *c = beta == 0.f ? alpha * s : alpha * s + beta * *c; }

/* Dot form, ti × tj (constants, ti·tj = 8 at most): rows i0.. of A against rows j.. of B (rows past nj
 * repeat the last one, unstored), so one row of A still has 8 independent FMA chains. */
T256 INLINE void dot_avx2_tile(const job_t *J, ot_dtype t, const int ti, const int tj, int64_t i0, int64_t j, int nj) {
  const int64_t k = J->k, k8 = k & ~(int64_t)7, lda = J->lda;
  const float *a = J->A + i0 * lda;
  int64_t row[8];
  for (int r = 0; r < tj; r++) row[r] = (j + (r < nj ? r : nj - 1)) * J->ldb;
  __m256 acc[8]; /* acc[i·tj + r] */
  for (int q = 0; q < ti * tj; q++) acc[q] = _mm256_setzero_ps();
  const int64_t esize = t == OT_F32 ? 4 : 2;
  for (int64_t p = 0; p < k8; p += 8)
    for (int r = 0; r < tj; r++) {
      __m256 x = widen8(J->B, t, row[r] + p);
      if (J->stream && i0 == 0) /* first pass over these rows of B, from memory: fetch the rows 8 ahead into L2 */
        _mm_prefetch((const char *)J->B + (row[r] + p + 8 * J->ldb) * esize, _MM_HINT_T1);
      for (int i = 0; i < ti; i++) acc[i * tj + r] = _mm256_fmadd_ps(_mm256_loadu_ps(a + i * lda + p), x, acc[i * tj + r]);
    }
  for (int i = 0; i < ti; i++)
    for (int r = 0; r < nj; r++) {
      float s = hsum8(acc[i * tj + r]);
      for (int64_t p = k8; p < k; p++) s += a[i * lda + p] * widen(J->B, t, row[r] + p);
      store1(&J->C[(i0 + i) * J->ldc + j + r], s, J->alpha, J->beta);
    }
}

/* Axpy form, ti (constant) rows × 16 columns; a partial column tile goes element by element. */
T256 INLINE void axpy_avx2_tile(const job_t *J, ot_dtype t, const int ti, int64_t i0, int64_t j, int nj) {
  const int64_t rs = J->transA ? 1 : J->lda, cs = J->transA ? J->lda : 1; /* A(i,p) = A[i·rs + p·cs] */
  const float *a = J->A + i0 * rs;
  if (nj < 16) {
    float tile[4][16] = {{0}};
    for (int64_t p = 0; p < J->k; p++)
      for (int i = 0; i < ti; i++)
        for (int c = 0; c < nj; c++) tile[i][c] += a[i * rs + p * cs] * widen(J->B, t, p * J->ldb + j + c);
    store_tile(J->C + i0 * J->ldc + j, J->ldc, &tile[0][0], 16, ti, nj, J->alpha, J->beta);
    return;
  }
  __m256 acc[4][2];
  for (int i = 0; i < ti; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int64_t p = 0; p < J->k; p++) {
    __m256 x0 = widen8(J->B, t, p * J->ldb + j), x1 = widen8(J->B, t, p * J->ldb + j + 8);
    for (int i = 0; i < ti; i++) {
      __m256 ai = _mm256_broadcast_ss(a + i * rs + p * cs);
      acc[i][0] = _mm256_fmadd_ps(ai, x0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, x1, acc[i][1]);
    }
  }
  __m256 va = _mm256_set1_ps(J->alpha), vb = _mm256_set1_ps(J->beta);
  for (int i = 0; i < ti; i++) {
    float *c = J->C + (i0 + i) * J->ldc + j;
    store8(c, acc[i][0], va, vb, J->beta != 0.f);
    store8(c + 8, acc[i][1], va, vb, J->beta != 0.f);
  }
}

/* Rows of A in groups of up to G (a constant ≤ 8): the tile of B read from memory serves G rows from
 * registers, and any further groups re-read it from L1/L2. TILE(args..., ti, i0) does one group of ti
 * (a constant, so each group size gets its own unrolled code). */
#define ROW_CASE(G, c, TILE, ...) \
  case c: TILE(__VA_ARGS__, (c) < (G) ? (c) : (G), i0); break;
#define ROW_GROUPS(G, m, TILE, ...)                                                                                  \
  for (int64_t i0 = 0; i0 < (m); i0 += (G)) {                                                                        \
    switch ((int)min64((G), (m) - i0)) {                                                                             \
      ROW_CASE(G, 1, TILE, __VA_ARGS__) ROW_CASE(G, 2, TILE, __VA_ARGS__) ROW_CASE(G, 3, TILE, __VA_ARGS__)           \
      ROW_CASE(G, 4, TILE, __VA_ARGS__) ROW_CASE(G, 5, TILE, __VA_ARGS__) ROW_CASE(G, 6, TILE, __VA_ARGS__)           \
      ROW_CASE(G, 7, TILE, __VA_ARGS__) default: TILE(__VA_ARGS__, (G), i0); break;                                  \
    }                                                                                                                \
  }

#define DOT_AVX2(J, t, tj, j, nj, ti, i0) dot_avx2_tile(J, t, ti, tj, i0, j, nj)
#define AXPY_AVX2(J, t, j, nj, ti, i0) axpy_avx2_tile(J, t, ti, i0, j, nj)

/* Tiles of G rows of A × TJ rows of B: 1×8, 2×4, else groups of 4×2. */
#define DOT_AVX2_ROWS(G, TJ)                         \
  for (int64_t j = j0; j < j1; j += (TJ)) {          \
    int nj = (int)min64((TJ), j1 - j);               \
    ROW_GROUPS(G, J->m, DOT_AVX2, J, t, TJ, j, nj)  \
  }

T256 INLINE void small_avx2_body(const job_t *J, ot_dtype t, int64_t j0, int64_t j1) {
  if (J->transB) {
    if (J->m == 1) DOT_AVX2_ROWS(1, 8)
    else if (J->m == 2) DOT_AVX2_ROWS(2, 4)
    else DOT_AVX2_ROWS(4, 2)
  } else {
    for (int64_t j = j0; j < j1; j += 16) {
      int nj = (int)min64(16, j1 - j);
      ROW_GROUPS(4, J->m, AXPY_AVX2, J, t, j, nj)
    }
  }
}

T256 static void small_avx2(const job_t *J, int64_t j0, int64_t j1) {
  switch (J->bt) {
    case OT_BF16: small_avx2_body(J, OT_BF16, j0, j1); break;
    case OT_F16: small_avx2_body(J, OT_F16, j0, j1); break;
    default: small_avx2_body(J, OT_F32, j0, j1); break;
  }
}

/* ---------------------------------------------------------------- x86: AVX-512 */

/* 12×32: 24 accumulators, 2 B vectors and a broadcast of A: 27 of the 32 zmm registers. Per k step: 2
 * vector loads and 12 broadcast loads for 24 FMAs, within the two loads per cycle the core sustains
 * beside its two FMAs, so the FMA ports stay busy. (16 rows would need 32 accumulators; 8 rows would
 * double the B traffic from L2 per FMA.) */
#define AVX512_MR 12
#define AVX512_NR 32

T512 static void pack_a_avx512(const job_t *J, int64_t i0, int mv, int64_t p0, int64_t kc, float *dst) { pack_a_x86_body(J, AVX512_MR, i0, mv, p0, kc, dst); }

T512 INLINE __m512 widen16(const void *B, ot_dtype t, int64_t i, __mmask16 mk) {
  const uint16_t *h = (const uint16_t *)B + i;
  switch (t) {
    case OT_BF16: return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, h)), 16));
    case OT_F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mk, h));
    default: return _mm512_maskz_loadu_ps(mk, (const float *)B + i);
  }
}

T512 INLINE void store16(float *c, __m512 x, __mmask16 mk, __m512 va, __m512 vb, int read) {
  x = _mm512_mul_ps(x, va);
  if (read) x = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mk, c), x);
  _mm512_mask_storeu_ps(c, mk, x);
}

static __mmask16 mask16(int64_t valid) { return valid >= 16 ? 0xffff : valid <= 0 ? 0 : (__mmask16)((1u << valid) - 1); }

T512 static void ukr_avx512(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int mv, int nv, float alpha, float beta) {
  __m512 acc[AVX512_MR][2];
  for (int i = 0; i < AVX512_MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int i = 0; i < mv; i++) { /* C comes from L3 or memory: start fetching it now, it is needed at the end */
    _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch((const char *)(c + i * ldc + AVX512_NR - 1), _MM_HINT_T0);
  }
  for (int64_t p = 0; p < kc; p++, a += AVX512_MR, b += AVX512_NR) {
    __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
    _mm_prefetch((const char *)(b + 32 * AVX512_NR), _MM_HINT_T0); /* the panel streams from L2: 32 k steps ahead */
    _mm_prefetch((const char *)(b + 32 * AVX512_NR + 16), _MM_HINT_T0);
    for (int i = 0; i < AVX512_MR; i++) {
      __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
  __mmask16 k0 = mask16(nv), k1 = mask16(nv - 16);
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int i = 0; i < AVX512_MR; i++)
    if (i < mv) {
      store16(c + i * ldc, acc[i][0], k0, va, vb, beta != 0.f);
      store16(c + i * ldc + 16, acc[i][1], k1, va, vb, beta != 0.f);
    }
}

/* Dot form, ti × tj (constants, ti·tj ≤ 16): rows i0.. of A against rows j.. of B (rows past nj repeat
 * the last one, unstored). However small m is, a k step issues 8–16 independent FMAs, so the stream of
 * B from memory overlaps a full set of them; the tree reduction keeps short k (attention's 64) from
 * being dominated by horizontal sums. */
T512 INLINE void dot_avx512_tile(const job_t *J, ot_dtype t, const int ti, const int tj, int64_t i0, int64_t j, int nj) {
  const int64_t k = J->k, lda = J->lda, esize = t == OT_F32 ? 4 : 2;
  const float *a = J->A + i0 * lda;
  int64_t row[8];
  for (int r = 0; r < tj; r++) row[r] = (j + (r < nj ? r : nj - 1)) * J->ldb;
  __m512 acc[16]; /* acc[i·tj + r]: row i of A · row r of B */
  for (int q = 0; q < ti * tj; q++) acc[q] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; p += 16) {
    const __mmask16 mk = mask16(k - p);
    __m512 x[8];
    for (int r = 0; r < tj; r++) x[r] = widen16(J->B, t, row[r] + p, mk);
    if (J->stream && i0 == 0) /* first pass over these rows of B, from memory: fetch the rows 8 ahead into L2 */
      for (int r = 0; r < tj; r++) _mm_prefetch((const char *)J->B + (row[r] + p + 8 * J->ldb) * esize, _MM_HINT_T1);
    for (int i = 0; i < ti; i++) {
      __m512 ai = _mm512_maskz_loadu_ps(mk, a + i * lda + p);
      for (int r = 0; r < tj; r++) acc[i * tj + r] = _mm512_fmadd_ps(ai, x[r], acc[i * tj + r]);
    }
  }
  /* Row i's sums, q = i·tj + l, go to lanes l (contiguous, like their place in C) by one permute each
   * (registers only: a masked reload from memory would wait for the store instead of forwarding). */
  const __m512 sums = hsum_many(acc, ti * tj);
  const __mmask16 mj = mask16(nj);
  const __m512 va = _mm512_set1_ps(J->alpha), vb = _mm512_set1_ps(J->beta);
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  float *c = J->C + i0 * J->ldc + j;
  const int64_t ldc = J->ldc;
  const int read = J->beta != 0.f;
  for (int i = 0; i < ti; i++) {
    __m512i q = _mm512_add_epi32(lane, _mm512_set1_epi32(i * tj));
    __m512i from = _mm512_add_epi32(_mm512_slli_epi32(_mm512_and_si512(q, _mm512_set1_epi32(3)), 2), _mm512_srli_epi32(q, 2));
    store16(c + i * ldc, _mm512_permutexvar_ps(from, sums), mj, va, vb, read);
  }
}

/* Axpy form, ti ≤ 4 (constant) rows × 64 columns (4 vectors, masked at the right edge): 16
 * accumulators (more rows per pass spill registers and measure slower). */
T512 INLINE void axpy_avx512_tile(const job_t *J, ot_dtype t, const int ti, int64_t i0, int64_t j, int nj) {
  const int64_t rs = J->transA ? 1 : J->lda, cs = J->transA ? J->lda : 1; /* A(i,p) = A[i·rs + p·cs] */
  const int64_t esize = t == OT_F32 ? 4 : 2;
  const float *a = J->A + i0 * rs;
  __mmask16 mk[4];
  for (int v = 0; v < 4; v++) mk[v] = mask16(nj - 16 * v);
  __m512 acc[4][4];
  for (int i = 0; i < ti; i++)
    for (int v = 0; v < 4; v++) acc[i][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < J->k; p++) {
    __m512 x[4];
    for (int v = 0; v < 4; v++) x[v] = widen16(J->B, t, p * J->ldb + j + 16 * v, mk[v]);
    if (J->stream && i0 == 0) /* B rows lie far apart, which the hardware prefetchers do not follow */
      for (int v = 0; v < 4; v += 4 / (int)esize) _mm_prefetch((const char *)J->B + ((p + AXPY_PF) * J->ldb + j + 16 * v) * esize, _MM_HINT_T0);
    for (int i = 0; i < ti; i++) {
      __m512 ai = _mm512_set1_ps(a[i * rs + p * cs]);
      for (int v = 0; v < 4; v++) acc[i][v] = _mm512_fmadd_ps(ai, x[v], acc[i][v]);
    }
  }
  __m512 va = _mm512_set1_ps(J->alpha), vb = _mm512_set1_ps(J->beta);
  for (int i = 0; i < ti; i++)
    for (int v = 0; v < 4; v++)
      if (mk[v]) store16(J->C + (i0 + i) * J->ldc + j + 16 * v, acc[i][v], mk[v], va, vb, J->beta != 0.f);
}

#define DOT_AVX512(J, t, tj, j, nj, ti, i0) dot_avx512_tile(J, t, ti, tj, i0, j, nj)
#define AXPY_AVX512(J, t, j, nj, ti, i0) axpy_avx512_tile(J, t, ti, i0, j, nj)

/* One or two rows of A: 8 rows of B per tile (more would run out of general registers for the row
 * addresses); 3–4: 4; more: groups of 8 rows × 2 of B. */
#define DOT_AVX512_ROWS(G, TJ)                         \
  for (int64_t j = j0; j < j1; j += (TJ)) {            \
    int nj = (int)min64((TJ), j1 - j);                 \
    ROW_GROUPS(G, J->m, DOT_AVX512, J, t, TJ, j, nj)  \
  }

T512 INLINE void small_avx512_body(const job_t *J, ot_dtype t, int64_t j0, int64_t j1) {
  if (J->transB) {
    if (J->m == 1) DOT_AVX512_ROWS(1, 8)
    else if (J->m == 2) DOT_AVX512_ROWS(2, 8)
    else if (J->m <= 4) DOT_AVX512_ROWS(4, 4)
    else DOT_AVX512_ROWS(8, 2)
  } else {
    for (int64_t j = j0; j < j1; j += 64) {
      int nj = (int)min64(64, j1 - j);
      ROW_GROUPS(4, J->m, AXPY_AVX512, J, t, j, nj)
    }
  }
}

T512 static void small_avx512(const job_t *J, int64_t j0, int64_t j1) {
  switch (J->bt) {
    case OT_BF16: small_avx512_body(J, OT_BF16, j0, j1); break;
    case OT_F16: small_avx512_body(J, OT_F16, j0, j1); break;
    default: small_avx512_body(J, OT_F32, j0, j1); break;
  }
}

#endif /* __x86_64__ */

/* ---------------------------------------------------------------- kernel table and choice */

/* Block sizes. AVX-512: a 12×384 A sliver (18 KiB) leaves most of a 48 KiB L1 to the B stream, and a
 * 384×1024 B block (1.5 MiB) fits a 2 MiB L2 (Sapphire Rapids) with room for C. AVX2 targets smaller L2s
 * (512 KiB on Zen 2/3): 256×512 (512 KiB). The A sliver is reused across nc/NR microkernel calls, which
 * is what keeps its packing cost down to a few percent. */
static const kernel_t kernels[] = {
#if defined(__x86_64__)
    {"avx512", AVX512_MR, AVX512_NR, 384, 1024, pack_a_avx512, pack_b_x86, ukr_avx512, small_avx512},
    {"avx2", AVX2_MR, AVX2_NR, 256, 512, pack_a_avx2, pack_b_x86, ukr_avx2, small_avx2},
#endif
    {"generic", GEN_MR, GEN_NR, 256, 512, pack_a_generic, pack_b_generic, ukr_generic, NULL},
};
#define KERNELS (int)(sizeof kernels / sizeof kernels[0])

static int supported(const kernel_t *kr) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (!strcmp(kr->name, "avx512"))
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  if (!strcmp(kr->name, "avx2")) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#endif
  return !strcmp(kr->name, "generic");
}

static const kernel_t *current;

static const kernel_t *kernel(void) {
  for (int i = 0; !current; i++)
    if (supported(&kernels[i])) current = &kernels[i];
  return current;
}

const char *ot_gemm_kernel(void) { return kernel()->name; }

int ot_gemm_set_kernel(const char *name) {
  if (!name) {
    current = NULL;
    return 0;
  }
  for (int i = 0; i < KERNELS; i++)
    if (!strcmp(kernels[i].name, name) && supported(&kernels[i])) {
      current = &kernels[i];
      return 0;
    }
  return -1;
}

void ot_set_threads(int threads) { ot_pool_set_threads(threads); }
int ot_get_threads(void) { return ot_pool_threads(); }

/* ---------------------------------------------------------------- drivers */

/* Per-thread packing buffers, allocated on first use and kept (a thread only touches its own). */
static struct {
  float *p;
  size_t floats;
} scratch[OT_POOL_MAX_THREADS];

static float *scratch_for(int thread, size_t floats) {
  if (scratch[thread].floats < floats) {
    free(scratch[thread].p);
    scratch[thread].p = aligned_alloc(64, (floats * sizeof(float) + 63) & ~(size_t)63);
    scratch[thread].floats = scratch[thread].p ? floats : 0;
  }
  return scratch[thread].p;
}

/* Part idx of `total` units cut into `parts` near-equal runs. */
static int64_t cut(int64_t total, int64_t parts, int64_t idx) { return total * idx / parts; }

static void packed_item(void *ctx, int64_t item, int thread) {
  const job_t *J = ctx;
  const kernel_t *kr = J->kr;
  const int64_t mr = kr->mr, nr = kr->nr, tm_i = item / J->tn, tn_i = item % J->tn;
  const int64_t i0 = cut(J->slivers, J->tm, tm_i) * mr, i1 = min64(J->m, cut(J->slivers, J->tm, tm_i + 1) * mr);
  const int64_t j0 = cut(J->panels, J->tn, tn_i) * nr, j1 = min64(J->n, cut(J->panels, J->tn, tn_i + 1) * nr);
  float *bbuf = scratch_for(thread, (size_t)(kr->kc * kr->nc + mr * kr->kc));
  if (!bbuf) abort(); /* out of memory for a 2 MiB buffer: nothing sensible left to do */
  float *abuf = bbuf + kr->kc * kr->nc;
  for (int64_t p0 = 0; p0 < J->k; p0 += J->kc) {
    const int64_t kc = min64(J->kc, J->k - p0);
    kr->pack_b(J, p0, kc, j0, j1 - j0, bbuf);
    const float beta = p0 ? 1.f : J->beta; /* later k blocks add to what the first one wrote */
    for (int64_t i = i0; i < i1; i += mr) {
      const int mv = (int)min64(mr, i1 - i);
      kr->pack_a(J, i, mv, p0, kc, abuf);
      for (int64_t j = j0; j < j1; j += nr)
        kr->ukr(kc, abuf, bbuf + (j - j0) * kc, J->C + i * J->ldc + j, J->ldc, mv, (int)min64(nr, j1 - j), J->alpha, beta);
    }
  }
}

/* Tiles: at most nc wide; with several threads, a grid whose tile count is a multiple of the thread
 * count, choosing among the ways to get one the one that packs least (A is packed once per tile column,
 * B once per tile row). */
static void plan_packed(job_t *J, int threads) {
  const kernel_t *kr = J->kr;
  J->slivers = ceil_div(J->m, kr->mr);
  J->panels = ceil_div(J->n, kr->nr);
  const int64_t tn0 = ceil_div(J->panels, kr->nc / kr->nr);
  J->tm = 1;
  J->tn = tn0;
  int64_t best = -1;
  for (int tm = 1; tm <= threads && threads > 1; tm++) {
    int64_t tn = ceil_div(tn0, threads / tm) * (threads / tm);
    if (threads % tm || tm > J->slivers || tn > J->panels) continue;
    int64_t cost = J->m * tn + J->n * tm;
    if (best < 0 || cost < best) {
      best = cost;
      J->tm = tm;
      J->tn = tn;
    }
  }
  /* Even k blocks (a multiple of 8 for the transposing packs) rather than full ones and a stub. */
  int64_t kb = ceil_div(J->k, kr->kc);
  J->kc = min64(kr->kc, (ceil_div(J->k, kb) + 7) & ~(int64_t)7);
}

static void small_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  const job_t *J = ctx;
  /* 16-column units: whole vectors for the axpy form */
  const int64_t units = ceil_div(J->n, 16);
  J->kr->small(J, cut(units, J->items, item) * 16, min64(J->n, cut(units, J->items, item + 1) * 16));
}

/* Runs items on the pool (serial < 0), or one after the other on the calling thread, a pool item of
 * thread `serial` (whose packing buffers they use). */
static void run_items(int serial, ot_pool_fn fn, void *ctx, int64_t items) {
  if (serial < 0) {
    ot_pool_run(fn, ctx, items);
    return;
  }
  for (int64_t i = 0; i < items; i++) fn(ctx, i, serial);
}

static void gemm(int serial, int transA, int transB, int64_t m, int64_t n, int64_t k, float alpha, const float *A, int64_t lda, const void *B,
                 ot_dtype btype, int64_t ldb, float beta, float *C, int64_t ldc);

/*
 * A few columns (n ≤ THIN_N) and many rows, B float32: the products of a LoRA factor (x·A, the input
 * gradient through B, the factors' own gradients). The packed path would pad each microkernel call to NR
 * columns and pack all of A for a handful of outputs per row (30–45 GFLOP/s at rank 8). Transposed,
 * Cᵀ = op(B)ᵀ · op(A)ᵀ has n rows, which the unpacked small path computes streaming A once, its rows
 * split across threads. op(B)ᵀ is copied k-contiguous (n·k floats) and Cᵀ lands in a buffer of n·m
 * floats, added into C with beta at the end. Returns 0 (nothing done) when the buffer cannot be had.
 */
static int gemm_thin(int serial, int transA, int transB, int64_t m, int64_t n, int64_t k, float alpha, const float *A, int64_t lda, const float *B,
                     int64_t ldb, float beta, float *C, int64_t ldc) {
  float *t = malloc(sizeof(float) * (size_t)(n * m + n * k));
  if (!t) return 0;
  float *left = t + n * m; /* op(B)ᵀ [n, k] */
  for (int64_t j = 0; j < n; j++)
    for (int64_t p = 0; p < k; p++) left[j * k + p] = transB ? B[j * ldb + p] : B[p * ldb + j];
  /* op(A)ᵀ is A read with the other transpose: [m, k] rows (dot form) or [k, m] (axpy form). Never thin
   * again: its n is this m (> THIN_MIN_M). */
  gemm(serial, 0, !transA, n, m, k, alpha, left, k, A, OT_F32, lda, 0.f, t, m);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) C[i * ldc + j] = t[j * m + i] + (beta == 0.f ? 0.f : beta * C[i * ldc + j]);
  free(t);
  return 1;
}

static void gemm(int serial, int transA, int transB, int64_t m, int64_t n, int64_t k, float alpha, const float *A, int64_t lda, const void *B,
                 ot_dtype btype, int64_t ldb, float beta, float *C, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.f) { /* no product: C = beta·C, and beta 0 clears (never reads) C */
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) C[i * ldc + j] = beta == 0.f ? 0.f : beta * C[i * ldc + j];
    return;
  }
  job_t J = {.kr = kernel(), .transA = !!transA, .transB = !!transB, .bt = btype, .m = m, .n = n, .k = k,
             .lda = lda, .ldb = ldb, .ldc = ldc, .alpha = alpha, .beta = beta, .A = A, .B = B, .C = C};
  const int threads = serial < 0 && m * n * k >= PARALLEL_MIN_MNK ? ot_pool_threads() : 1;
  J.stream = n * k * (btype == OT_F32 ? 4 : 2) > STREAM_BYTES;
  const int64_t small_m = J.transB ? (J.transA ? 0 : SMALL_M_DOT)
                          : J.stream ? SMALL_M_AXPY
                          : n <= 64  ? SMALL_M_AXPY_NARROW
                                     : SMALL_M_AXPY_CACHED;
  if (J.kr->small && n <= THIN_N && m >= THIN_MIN_M && m > small_m && btype == OT_F32 &&
      gemm_thin(serial, transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
    return;
  if (J.kr->small && m <= small_m) { /* (the dot form needs rows of A contiguous: not with transA) */
    J.items = min64(threads, ceil_div(n, 16));
    run_items(serial, small_item, &J, J.items);
  } else {
    plan_packed(&J, threads);
    run_items(serial, packed_item, &J, J.tm * J.tn);
  }
}

void ot_gemm(int transA, int transB, int64_t m, int64_t n, int64_t k, float alpha, const float *A, int64_t lda, const void *B,
             ot_dtype btype, int64_t ldb, float beta, float *C, int64_t ldc) {
  gemm(-1, transA, transB, m, n, k, alpha, A, lda, B, btype, ldb, beta, C, ldc);
}

void ot_gemm_serial(int thread, int transA, int transB, int64_t m, int64_t n, int64_t k, float alpha, const float *A, int64_t lda, const void *B,
                    ot_dtype btype, int64_t ldb, float beta, float *C, int64_t ldc) {
  gemm(thread, transA, transB, m, n, k, alpha, A, lda, B, btype, ldb, beta, C, ldc);
}

static size_t elem_bytes(ot_dtype t) { return t == OT_F32 ? 4 : 2; }

typedef struct {
  int transA, transB;
  int64_t m, n, k, sa, lda, sb, ldb, sc, ldc;
  const float *A;
  const void *B;
  ot_dtype btype;
  float *C;
} batch_job;

static void batch_item(void *ctx, int64_t i, int thread) {
  const batch_job *J = ctx;
  gemm(thread, J->transA, J->transB, J->m, J->n, J->k, 1.f, J->A + i * J->sa, J->lda, (const char *)J->B + (size_t)(i * J->sb) * elem_bytes(J->btype),
       J->btype, J->ldb, 0.f, J->C + i * J->sc, J->ldc);
}

/* Whole products to threads when they share out evenly (attention's, one per sequence and head: each
 * then packs its operands once, where splitting every product between threads packs A on each and pads
 * the narrow split to whole panels); otherwise each product on all threads, one after the other. */
void ot_gemm_batch(int transA, int transB, int64_t batch, int64_t m, int64_t n, int64_t k, const float *A, int64_t sa, int64_t lda, const void *B,
                   ot_dtype btype, int64_t sb, int64_t ldb, float *C, int64_t sc, int64_t ldc) {
  const int threads = ot_pool_threads();
  batch_job J = {transA, transB, m, n, k, sa, lda, sb, ldb, sc, ldc, A, B, btype, C};
  if (threads > 1 && batch >= threads && (batch % threads == 0 || batch >= 4 * threads)) {
    ot_pool_run(batch_item, &J, batch);
    return;
  }
  for (int64_t i = 0; i < batch; i++)
    gemm(-1, transA, transB, m, n, k, 1.f, A + i * sa, lda, (const char *)B + (size_t)(i * sb) * elem_bytes(btype), btype, ldb, 0.f, C + i * sc, ldc);
}
