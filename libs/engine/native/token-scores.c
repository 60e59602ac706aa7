/* The fused language-model head: see token-scores.h. */
#include "token-scores.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "thread-pool.h"
#include "vector-math.h"

/* One scratch buffer, grown on demand and kept: the head runs on every pass. */
static float *scratch = NULL;
static size_t scratch_floats = 0;

static float *scratch_for(size_t floats) {
  if (floats <= scratch_floats) return scratch;
  free(scratch);
  scratch = NULL;
  scratch_floats = 0;
  void *p = NULL;
  if (posix_memalign(&p, 64, floats * sizeof(float)) != 0) return NULL;
  scratch = p;
  scratch_floats = floats;
  return scratch;
}

/*
 * The per-row work (a max, sums of exponentials over 150k logits, and their gradient) is written once
 * with GCC vector types and compiled three times: 16 lanes for AVX-512, 8 for AVX2, 4 for any x86-64 or
 * ARM CPU. Sums are kept in float lanes over chunks of CHUNK logits and added up in double, so a row's
 * sum loses nothing a float64 reference would notice (relative error ~1e-7).
 */
#define CHUNK 1024

#define ROW_KERNELS(SUFFIX, LANES, TARGET)                                                                        \
  VECTOR_MATH(SUFFIX, LANES, TARGET)                                                                              \
  TARGET static float row_max_##SUFFIX(const float *z, int64_t n) {                                              \
    float m = z[0];                                                                                               \
    int64_t v = 0;                                                                                                \
    if (n >= LANES) {                                                                                             \
      vf_##SUFFIX acc;                                                                                            \
      memcpy(&acc, z, sizeof acc);                                                                                \
      for (v = LANES; v + LANES <= n; v += LANES) {                                                              \
        vf_##SUFFIX x;                                                                                            \
        memcpy(&x, z + v, sizeof x);                                                                              \
        acc = vsel_##SUFFIX(x > acc, x, acc);                                                                     \
      }                                                                                                           \
      for (int l = 0; l < LANES; l++) m = acc[l] > m ? acc[l] : m;                                                \
    }                                                                                                             \
    for (; v < n; v++) m = z[v] > m ? z[v] : m;                                                                   \
    return m;                                                                                                     \
  }                                                                                                               \
  /* Σ e^(z - shift) and Σ e^(z - shift)·z, in double. */                                                        \
  TARGET static void row_sums_##SUFFIX(const float *z, int64_t n, float shift, double *sum, double *dot) {       \
    double s = 0, d = 0;                                                                                          \
    int64_t v = 0;                                                                                                \
    for (; v + LANES <= n;) {                                                                                     \
      vf_##SUFFIX as = {0}, ad = {0};                                                                             \
      int64_t end = v + CHUNK < n ? v + CHUNK : n;                                                                \
      for (; v + LANES <= end; v += LANES) {                                                                      \
        vf_##SUFFIX x;                                                                                            \
        memcpy(&x, z + v, sizeof x);                                                                              \
        vf_##SUFFIX e = vexp_##SUFFIX(x - shift);                                                                 \
        as += e;                                                                                                  \
        ad += e * x;                                                                                              \
      }                                                                                                           \
      for (int l = 0; l < LANES; l++) {                                                                           \
        s += as[l];                                                                                               \
        d += ad[l];                                                                                               \
      }                                                                                                           \
    }                                                                                                             \
    for (; v < n; v++) {                                                                                          \
      double e = exp((double)z[v] - shift);                                                                       \
      s += e;                                                                                                     \
      d += e * z[v];                                                                                              \
    }                                                                                                             \
    *sum = s;                                                                                                     \
    *dot = d;                                                                                                     \
  }                                                                                                               \
  /* z ← e^(z − shift). */                                                                                        \
  TARGET static void row_exp_##SUFFIX(float *z, int64_t n, float shift) {                                         \
    int64_t v = 0;                                                                                                \
    for (; v + LANES <= n; v += LANES) {                                                                          \
      vf_##SUFFIX x;                                                                                              \
      memcpy(&x, z + v, sizeof x);                                                                                \
      x = vexp_##SUFFIX(x - shift);                                                                               \
      memcpy(z + v, &x, sizeof x);                                                                                \
    }                                                                                                             \
    for (; v < n; v++) z[v] = expf(z[v] - shift);                                                                 \
  }                                                                                                               \
  /* z ← a·(δ − p) − e·p·(z − lse + H) with p = e^(z − lse), except the δ (added by the caller). */             \
  TARGET static void row_grad_##SUFFIX(float *z, int64_t n, float lse, float a, float e, float h) {              \
    int64_t v = 0;                                                                                                \
    for (; v + LANES <= n; v += LANES) {                                                                          \
      vf_##SUFFIX x;                                                                                              \
      memcpy(&x, z + v, sizeof x);                                                                                \
      vf_##SUFFIX lp = x - lse, p = vexp_##SUFFIX(lp);                                                            \
      vf_##SUFFIX g = -a * p - e * p * (lp + h);                                                                  \
      memcpy(z + v, &g, sizeof g);                                                                                \
    }                                                                                                             \
    for (; v < n; v++) {                                                                                          \
      float lp = z[v] - lse, p = expf(lp);                                                                        \
      z[v] = -a * p - e * p * (lp + h);                                                                           \
    }                                                                                                             \
  }

ROW_KERNELS(generic, 4, )
#if defined(__x86_64__)
ROW_KERNELS(avx2, 8, __attribute__((target("avx2,fma"))))
ROW_KERNELS(avx512, 16, __attribute__((target("avx512f"))))
#endif

typedef struct {
  float (*max)(const float *, int64_t);
  void (*sums)(const float *, int64_t, float, double *, double *);
  void (*grad)(float *, int64_t, float, float, float, float);
  void (*exp)(float *, int64_t, float);
} row_kernels;

static row_kernels pick_kernels(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return (row_kernels){row_max_avx512, row_sums_avx512, row_grad_avx512, row_exp_avx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return (row_kernels){row_max_avx2, row_sums_avx2, row_grad_avx2, row_exp_avx2};
#endif
  return (row_kernels){row_max_generic, row_sums_generic, row_grad_generic, row_exp_generic};
}

static row_kernels kernels;
static int kernels_ready = 0;

static const row_kernels *rows_kernels(void) {
  if (!kernels_ready) {
    kernels = pick_kernels();
    kernels_ready = 1;
  }
  return &kernels;
}

/*
 * Layout of the work: rows in chunks of up to CHUNK_ROWS, and within a chunk the vocabulary in tiles of
 * TILE columns, each tile's logits for all the chunk's rows computed by one product. Every pass then
 * reads the head's weights once per chunk (the tile stays in cache while its rows are processed), where
 * blocks of a few rows over the whole vocabulary would read all 150k × hidden weights again per block.
 * The softmax statistics run online across tiles (a running max rescales the sums).
 */
#define CHUNK_ROWS 1024
#define TILE 4096

typedef struct {
  double max, sum, dot;
  float target;
} row_state;

typedef struct {
  float *z; /* [rows, cols] logits of one tile */
  int64_t cols, v0;
  const int64_t *rows_of; /* row index (into targets etc.) of each tile row */
  const int32_t *targets;
  row_state *state;
  /* With E_p[W] asked for: [rows, d] running Σ e^(z − max)·W, rescaled here when a row's max grows; the
   * tile's z is then replaced by e^(z − max) for the caller's product. */
  float *acc;
  int64_t d;
} forward_tile;

static void forward_row(void *ctx, int64_t i, int thread) {
  (void)thread;
  const forward_tile *t = ctx;
  const float *zr = t->z + i * t->cols;
  const row_kernels *k = rows_kernels();
  row_state *st = &t->state[i];
  const double m = k->max(zr, t->cols);
  if (m > st->max) {
    /* Rescale what earlier tiles summed to the new max (the first tile starts from -inf: nothing to scale). */
    const double f = st->sum == 0 ? 0 : exp(st->max - m);
    st->sum *= f;
    st->dot *= f;
    st->max = m;
    if (t->acc)
      for (int64_t j = 0; j < t->d; j++) t->acc[i * t->d + j] *= (float)f;
  }
  double sum, dot;
  k->sums(zr, t->cols, (float)st->max, &sum, &dot);
  st->sum += sum;
  st->dot += dot;
  const int64_t target = t->targets[t->rows_of[i]] - t->v0;
  if (target >= 0 && target < t->cols) st->target = zr[target];
  if (t->acc) k->exp(t->z + i * t->cols, t->cols, (float)st->max);
}

typedef struct {
  float *z;
  int64_t cols, v0;
  const int64_t *rows_of;
  const int32_t *targets;
  const float *lse, *entropy, *dlogp, *dent;
} backward_tile;

static void backward_row(void *ctx, int64_t i, int thread) {
  (void)thread;
  const backward_tile *t = ctx;
  const int64_t r = t->rows_of[i];
  const float a = t->dlogp[r];
  float *zr = t->z + i * t->cols;
  /* dlogp_t/dz_v = δ_vt − p_v;  dH/dz_v = −p_v (log p_v + H). */
  rows_kernels()->grad(zr, t->cols, t->lse[r], a, t->dent ? t->dent[r] : 0.0f, t->entropy ? t->entropy[r] : 0.0f);
  const int64_t target = t->targets[r] - t->v0;
  if (target >= 0 && target < t->cols) zr[target] += a;
}

int ot_token_scores(const float *h, int64_t n, int64_t d, const ot_tensor *W, int64_t vocab, const int32_t *targets, float *logp, float *lse, float *entropy,
                    float *ew) {
  /* Scratch: a tile's logits for a chunk of rows, the chunk's hidden rows and, with ew, its running sums. */
  float *z = scratch_for((size_t)CHUNK_ROWS * (TILE + (size_t)d + (ew ? (size_t)d : 0)));
  float *hb = z + (size_t)CHUNK_ROWS * TILE;
  float *acc = ew ? hb + (size_t)CHUNK_ROWS * (size_t)d : NULL;
  row_state *state = malloc(sizeof(row_state) * CHUNK_ROWS);
  int64_t *rows_of = malloc(sizeof(int64_t) * CHUNK_ROWS);
  if (!z || !state || !rows_of) {
    free(state);
    free(rows_of);
    return -1;
  }
  for (int64_t i = 0; i < n; i++)
    if (targets[i] < 0) { /* not scored: zeros, nothing computed */
      logp[i] = lse[i] = 0.0f;
      if (entropy) entropy[i] = 0.0f;
      if (ew) memset(ew + i * d, 0, sizeof(float) * (size_t)d);
    }
  int64_t next = 0;
  while (next < n) {
    /* Gather the scored rows: in RL the prompt's rows are not scored and cost nothing. */
    int64_t rows = 0;
    for (; next < n && rows < CHUNK_ROWS; next++) {
      if (targets[next] < 0) continue;
      rows_of[rows] = next;
      state[rows] = (row_state){-INFINITY, 0, 0, 0};
      memcpy(hb + rows * d, h + next * d, (size_t)d * sizeof(float));
      rows++;
    }
    if (rows == 0) break;
    if (acc) memset(acc, 0, sizeof(float) * (size_t)(rows * d));
    for (int64_t v0 = 0; v0 < vocab; v0 += TILE) {
      const int64_t cols = vocab - v0 < TILE ? vocab - v0 : TILE;
      ot_tensor_gemm(1, rows, cols, d, hb, d, W, v0 * d, d, 0.0f, z, cols);
      forward_tile t = {z, cols, v0, rows_of, targets, state, acc, d};
      ot_pool_run(forward_row, &t, rows);
      /* acc += e^(z − max) · W_tile */
      if (acc) ot_tensor_gemm(0, rows, d, cols, z, cols, W, v0 * d, d, 1.0f, acc, d);
    }
    for (int64_t i = 0; i < rows; i++) {
      const int64_t r = rows_of[i];
      const double l = state[i].max + log(state[i].sum);
      lse[r] = (float)l;
      logp[r] = (float)(state[i].target - l);
      /* H = lse − E_p[z] */
      if (entropy) entropy[r] = (float)(l - state[i].dot / state[i].sum);
      if (ew)
        for (int64_t j = 0; j < d; j++) ew[r * d + j] = (float)(acc[i * d + j] / state[i].sum);
    }
  }
  free(state);
  free(rows_of);
  return 0;
}

int ot_token_scores_grad(const float *h, int64_t n, int64_t d, const ot_tensor *W, int64_t vocab, const int32_t *targets, const float *lse,
                         const float *entropy, const float *dlogp, const float *dent, float *dh, float *dW) {
  /* Scratch: a tile's logits for a chunk of rows, then the chunk's hidden rows and their gradient. */
  float *z = scratch_for((size_t)CHUNK_ROWS * (TILE + 2 * (size_t)d));
  int64_t *rows_of = malloc(sizeof(int64_t) * CHUNK_ROWS);
  if (!z || !rows_of) {
    free(rows_of);
    return -1;
  }
  float *hb = z + (size_t)CHUNK_ROWS * TILE;
  float *db = hb + (size_t)CHUNK_ROWS * (size_t)d;
  memset(dh, 0, (size_t)n * (size_t)d * sizeof(float));
  int64_t next = 0;
  while (next < n) {
    /* Gather the rows that carry a coefficient: in RL the prompt's rows carry none and cost nothing. */
    int64_t rows = 0;
    for (; next < n && rows < CHUNK_ROWS; next++) {
      if (targets[next] >= 0 && (dlogp[next] != 0.0f || (dent && dent[next] != 0.0f))) {
        rows_of[rows] = next;
        memcpy(hb + rows * d, h + next * d, (size_t)d * sizeof(float));
        rows++;
      }
    }
    if (rows == 0) break;
    for (int64_t v0 = 0; v0 < vocab; v0 += TILE) {
      const int64_t cols = vocab - v0 < TILE ? vocab - v0 : TILE;
      ot_tensor_gemm(1, rows, cols, d, hb, d, W, v0 * d, d, 0.0f, z, cols);
      backward_tile t = {z, cols, v0, rows_of, targets, lse, entropy, dlogp, dent};
      ot_pool_run(backward_row, &t, rows);
      /* The chunk's dh += dz · W_tile; dW_tile += dzᵀ · h. */
      ot_tensor_gemm(0, rows, d, cols, z, cols, W, v0 * d, d, v0 == 0 ? 0.0f : 1.0f, db, d);
      if (dW) ot_gemm(1, 0, cols, d, rows, 1.0f, z, cols, hb, OT_F32, d, 1.0f, dW + v0 * d, d);
    }
    for (int64_t i = 0; i < rows; i++) memcpy(dh + rows_of[i] * d, db + i * d, (size_t)d * sizeof(float));
  }
  free(rows_of);
  return 0;
}

void ot_token_scores_grad_ew(int64_t n, int64_t d, const ot_tensor *W, const int32_t *targets, const float *dlogp, const float *ew, float *dh) {
  for (int64_t i = 0; i < n; i++) {
    float *g = dh + i * d;
    if (targets[i] < 0 || dlogp[i] == 0.0f) { /* not scored, or outside the loss */
      memset(g, 0, sizeof(float) * (size_t)d);
      continue;
    }
    ot_tensor_read(W, (int64_t)targets[i] * d, d, g);
    for (int64_t j = 0; j < d; j++) g[j] = dlogp[i] * (g[j] - ew[i * d + j]);
  }
}
