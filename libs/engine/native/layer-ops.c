/*
 * A decoder layer's elementwise and row-wise stages on the pool's threads (see layer-ops.h).
 *
 * Each stage's per-row (or per-range) body is written once with GCC vector types (vector-math.h) and
 * compiled for AVX-512, AVX2 and any CPU; the best this CPU runs is picked at first use. Work is cut into
 * at most one item per thread, and stages below PARALLEL_MIN values run on the calling thread (waking a
 * sleeping worker costs more than it saves there).
 */
#include "layer-ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "thread-pool.h"
#include "vector-math.h"

#define PARALLEL_MIN 16384
/* Token draws: the vocabulary is summed in chunks (float lanes within one, double across them), and the
 * inverse-CDF search skips whole chunks by their sums. 1,024 × 256 covers vocabularies to 262,144. */
#define SAMPLE_CHUNK 1024
#define SAMPLE_MAX_CHUNKS 256

#define LOADV(SUFFIX, p) ({ vf_##SUFFIX _v; memcpy(&_v, (p), sizeof _v); _v; })
#define STOREV(p, v) memcpy((p), &(v), sizeof(v))

#define LAYER_KERNELS(SUFFIX, LANES, TARGET)                                                                     \
  VECTOR_MATH(SUFFIX, LANES, TARGET)                                                                             \
  TARGET static float hsum_##SUFFIX(vf_##SUFFIX v) {                                                             \
    float s = 0;                                                                                                 \
    for (int l = 0; l < LANES; l++) s += v[l];                                                                   \
    return s;                                                                                                    \
  }                                                                                                              \
  /* Σ a·b over n values. */                                                                                    \
  TARGET static float dot_##SUFFIX(const float *a, const float *b, int64_t n) {                                 \
    vf_##SUFFIX acc = {0};                                                                                       \
    int64_t i = 0;                                                                                               \
    for (; i + LANES <= n; i += LANES) acc += LOADV(SUFFIX, a + i) * LOADV(SUFFIX, b + i);                      \
    float s = hsum_##SUFFIX(acc);                                                                                \
    for (; i < n; i++) s += a[i] * b[i];                                                                         \
    return s;                                                                                                    \
  }                                                                                                              \
  TARGET static void rms_rows_##SUFFIX(const float *x, const float *w, int64_t r0, int64_t r1, int64_t d, float eps, float *y) { \
    for (int64_t r = r0; r < r1; r++) {                                                                          \
      const float *xr = x + r * d;                                                                               \
      float *yr = y + r * d;                                                                                     \
      const float s = 1.0f / sqrtf(dot_##SUFFIX(xr, xr, d) / (float)d + eps);                                    \
      for (int64_t i = 0; i < d; i++) yr[i] = xr[i] * s * w[i];                                                  \
    }                                                                                                            \
  }                                                                                                              \
  /* dx for rows r0..r1, and Σ dy·x·s over them into dw (when given). */                                        \
  TARGET static void rms_grad_rows_##SUFFIX(const float *x, const float *w, const float *dy, int64_t r0, int64_t r1, int64_t d, \
                                            float eps, float *dx, float *dw) {                                  \
    for (int64_t r = r0; r < r1; r++) {                                                                          \
      const float *xr = x + r * d, *gr = dy + r * d;                                                             \
      float *dr = dx + r * d;                                                                                    \
      const float s = 1.0f / sqrtf(dot_##SUFFIX(xr, xr, d) / (float)d + eps);                                    \
      vf_##SUFFIX acc = {0};                                                                                     \
      int64_t i = 0;                                                                                             \
      for (; i + LANES <= d; i += LANES) acc += LOADV(SUFFIX, gr + i) * LOADV(SUFFIX, w + i) * LOADV(SUFFIX, xr + i); \
      float gx = hsum_##SUFFIX(acc);                                                                             \
      for (; i < d; i++) gx += gr[i] * w[i] * xr[i];                                                             \
      const float c = s * s * s * gx / (float)d;                                                                 \
      for (i = 0; i < d; i++) dr[i] = s * gr[i] * w[i] - xr[i] * c;                                              \
      if (dw)                                                                                                    \
        for (i = 0; i < d; i++) dw[i] += gr[i] * xr[i] * s;                                                      \
    }                                                                                                            \
  }                                                                                                              \
  TARGET static void swiglu_range_##SUFFIX(const float *g, const float *u, int64_t i0, int64_t i1, float *y) {  \
    int64_t i = i0;                                                                                              \
    const vf_##SUFFIX one = {0};                                                                                 \
    for (; i + LANES <= i1; i += LANES) {                                                                        \
      vf_##SUFFIX gv = LOADV(SUFFIX, g + i);                                                                     \
      vf_##SUFFIX v = gv / (one + 1.0f + vexp_##SUFFIX(-gv)) * LOADV(SUFFIX, u + i);                             \
      STOREV(y + i, v);                                                                                          \
    }                                                                                                            \
    for (; i < i1; i++) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];                                               \
  }                                                                                                              \
  TARGET static void swiglu_grad_range_##SUFFIX(const float *g, const float *u, const float *dy, int64_t i0, int64_t i1, float *dg, \
                                                float *du) {                                                     \
    int64_t i = i0;                                                                                              \
    const vf_##SUFFIX one = {0};                                                                                 \
    for (; i + LANES <= i1; i += LANES) {                                                                        \
      vf_##SUFFIX gv = LOADV(SUFFIX, g + i), dyv = LOADV(SUFFIX, dy + i);                                        \
      vf_##SUFFIX sg = (one + 1.0f) / (one + 1.0f + vexp_##SUFFIX(-gv));                                        \
      vf_##SUFFIX a = dyv * LOADV(SUFFIX, u + i) * sg * (1.0f + gv * (1.0f - sg)), b = dyv * gv * sg;            \
      STOREV(dg + i, a);                                                                                         \
      STOREV(du + i, b);                                                                                         \
    }                                                                                                            \
    for (; i < i1; i++) {                                                                                        \
      const float sg = 1.0f / (1.0f + expf(-g[i]));                                                              \
      const float a = dy[i] * u[i] * sg * (1.0f + g[i] * (1.0f - sg)), b = dy[i] * g[i] * sg;                    \
      dg[i] = a;                                                                                                 \
      du[i] = b;                                                                                                 \
    }                                                                                                            \
  }                                                                                                              \
  TARGET static void rope_rows_##SUFFIX(const float *x, const float *cs, const float *sn, int64_t r0, int64_t r1, int64_t heads, \
                                        int64_t hd, int transpose, float *y) {                                   \
    const int64_t half = hd / 2;                                                                                 \
    for (int64_t r = r0; r < r1; r++) {                                                                          \
      const float *c = cs + r * hd, *s = sn + r * hd;                                                            \
      for (int64_t h = 0; h < heads; h++) {                                                                      \
        const float *xa = x + (r * heads + h) * hd, *xb = xa + half;                                             \
        float *ya = y + (r * heads + h) * hd, *yb = ya + half;                                                   \
        if (!transpose)                                                                                          \
          for (int64_t i = 0; i < half; i++) {                                                                   \
            const float a = xa[i], b = xb[i];                                                                    \
            ya[i] = a * c[i] + b * s[i];                                                                         \
            yb[i] = b * c[half + i] + a * s[half + i];                                                           \
          }                                                                                                      \
        else                                                                                                     \
          for (int64_t i = 0; i < half; i++) {                                                                   \
            const float a = xa[i], b = xb[i];                                                                    \
            ya[i] = a * c[i] + b * s[half + i];                                                                  \
            yb[i] = b * c[half + i] + a * s[i];                                                                  \
          }                                                                                                      \
      }                                                                                                          \
    }                                                                                                            \
  }                                                                                                              \
  TARGET static void softmax_rows_##SUFFIX(float *x, const float *bias, int64_t r0, int64_t r1, int64_t s, int64_t group, \
                                           int64_t period) {                                                    \
    for (int64_t r = r0; r < r1; r++) {                                                                          \
      float *xr = x + r * s;                                                                                     \
      const float *br = bias ? bias + ((r / group) * period + r % period) * s : NULL;                            \
      float m = -INFINITY;                                                                                       \
      for (int64_t j = 0; j < s; j++) {                                                                          \
        if (br) xr[j] += br[j];                                                                                  \
        m = xr[j] > m ? xr[j] : m;                                                                               \
      }                                                                                                          \
      vf_##SUFFIX acc = {0};                                                                                     \
      int64_t j = 0;                                                                                             \
      for (; j + LANES <= s; j += LANES) {                                                                       \
        vf_##SUFFIX e = vexp_##SUFFIX(LOADV(SUFFIX, xr + j) - m);                                                \
        acc += e;                                                                                                \
        STOREV(xr + j, e);                                                                                       \
      }                                                                                                          \
      float sum = hsum_##SUFFIX(acc);                                                                            \
      for (; j < s; j++) sum += (xr[j] = expf(xr[j] - m));                                                       \
      const float inv = 1.0f / sum;                                                                              \
      for (j = 0; j < s; j++) xr[j] *= inv;                                                                      \
    }                                                                                                            \
  }                                                                                                              \
  TARGET static void softmax_grad_rows_##SUFFIX(const float *y, const float *dy, int64_t r0, int64_t r1, int64_t s, float *dx) { \
    for (int64_t r = r0; r < r1; r++) {                                                                          \
      const float *yr = y + r * s, *gr = dy + r * s;                                                             \
      float *dr = dx + r * s;                                                                                    \
      const float dot = dot_##SUFFIX(yr, gr, s);                                                                 \
      for (int64_t j = 0; j < s; j++) dr[j] = yr[j] * (gr[j] - dot);                                             \
    }                                                                                                            \
  }                                                                                                              \
  /* max over n values */                                                                                        \
  TARGET static float vmax_##SUFFIX(const float *z, int64_t n) {                                                \
    float m = -INFINITY;                                                                                         \
    int64_t i = 0;                                                                                               \
    if (n >= LANES) {                                                                                            \
      vf_##SUFFIX acc = LOADV(SUFFIX, z);                                                                        \
      for (i = LANES; i + LANES <= n; i += LANES) {                                                              \
        vf_##SUFFIX x = LOADV(SUFFIX, z + i);                                                                    \
        acc = vsel_##SUFFIX(x > acc, x, acc);                                                                    \
      }                                                                                                          \
      for (int l = 0; l < LANES; l++) m = acc[l] > m ? acc[l] : m;                                               \
    }                                                                                                            \
    for (; i < n; i++) m = z[i] > m ? z[i] : m;                                                                  \
    return m;                                                                                                    \
  }                                                                                                              \
  /* Σ e^(z·scale − shift) over [i0, i1) (a multiple of LANES long, or the tail), float lanes, double result. */ \
  TARGET static double vsumexp_##SUFFIX(const float *z, int64_t i0, int64_t i1, float scale, float shift) {     \
    vf_##SUFFIX acc = {0};                                                                                       \
    int64_t i = i0;                                                                                              \
    for (; i + LANES <= i1; i += LANES) acc += vexp_##SUFFIX(LOADV(SUFFIX, z + i) * scale - shift);             \
    double s = 0;                                                                                                \
    for (int l = 0; l < LANES; l++) s += acc[l];                                                                 \
    for (; i < i1; i++) s += expf(z[i] * scale - shift);                                                         \
    return s;                                                                                                    \
  }                                                                                                              \
  TARGET static void sample_rows_##SUFFIX(const float *logits, int64_t r0, int64_t r1, int64_t all, int64_t v, float inv_t, const double *u, \
                                          int32_t *token, float *logp, float *slogp) {                          \
    for (int64_t r = r0; r < r1; r++) {                                                                          \
      const float *z = logits + r * all;                                                                         \
      const float m = vmax_##SUFFIX(z, all);                                                                     \
      double total = 0;                                                                                          \
      for (int64_t c = 0; c < all; c += SAMPLE_CHUNK) total += vsumexp_##SUFFIX(z, c, c + SAMPLE_CHUNK < all ? c + SAMPLE_CHUNK : all, 1.0f, m); \
      const double lse = m + log(total);                                                                         \
      int64_t t = 0;                                                                                             \
      if (inv_t == 0.0f) {                                                                                       \
        for (int64_t i = 1; i < v; i++) if (z[i] > z[t]) t = i;                                                  \
        slogp[r] = 0;                                                                                            \
      } else {                                                                                                   \
        const float shift = vmax_##SUFFIX(z, v) * inv_t;                                                         \
        double chunk[SAMPLE_MAX_CHUNKS], zsum = 0;                                                               \
        const int64_t chunks = (v + SAMPLE_CHUNK - 1) / SAMPLE_CHUNK;                                           \
        for (int64_t c = 0; c < chunks; c++) {                                                                   \
          const int64_t c0 = c * SAMPLE_CHUNK, c1 = c0 + SAMPLE_CHUNK < v ? c0 + SAMPLE_CHUNK : v;               \
          zsum += (chunk[c] = vsumexp_##SUFFIX(z, c0, c1, inv_t, shift));                                        \
        }                                                                                                        \
        /* Inverse CDF: the chunk where the running sum passes u·Z, then the value within it. */                \
        const double target = u[r] * zsum;                                                                       \
        double acc = 0;                                                                                          \
        int64_t c = 0;                                                                                           \
        while (c < chunks - 1 && acc + chunk[c] <= target) acc += chunk[c++];                                    \
        t = v - 1;                                                                                               \
        for (int64_t i = c * SAMPLE_CHUNK, end = c == chunks - 1 ? v : i + SAMPLE_CHUNK; i < end; i++) {         \
          acc += expf(z[i] * inv_t - shift);                                                                     \
          if (target < acc) {                                                                                    \
            t = i;                                                                                               \
            break;                                                                                               \
          }                                                                                                      \
        }                                                                                                        \
        slogp[r] = (float)(z[t] * inv_t - shift - log(zsum));                                                    \
      }                                                                                                          \
      token[r] = (int32_t)t;                                                                                     \
      logp[r] = (float)(z[t] - lse);                                                                             \
    }                                                                                                            \
  }                                                                                                              \
  TARGET static void adamw_range_##SUFFIX(float *p, float *m, float *v, const float *g, int64_t i0, int64_t i1, float gscale, float b1, \
                                          float b2, float eps, float decay, float step, float sqrt_bc2) {       \
    for (int64_t i = i0; i < i1; i++) {                                                                          \
      const float gi = g[i] * gscale;                                                                            \
      const float mi = b1 * m[i] + (1.0f - b1) * gi, vi = b2 * v[i] + (1.0f - b2) * gi * gi;                     \
      m[i] = mi;                                                                                                 \
      v[i] = vi;                                                                                                 \
      p[i] = p[i] * decay - step * mi / (sqrtf(vi) / sqrt_bc2 + eps);                                            \
    }                                                                                                            \
  }

LAYER_KERNELS(generic, 4, )
#if defined(__x86_64__)
LAYER_KERNELS(avx2, 8, __attribute__((target("avx2,fma"))))
LAYER_KERNELS(avx512, 16, __attribute__((target("avx512f"))))
#endif

typedef struct {
  void (*rms)(const float *, const float *, int64_t, int64_t, int64_t, float, float *);
  void (*rms_grad)(const float *, const float *, const float *, int64_t, int64_t, int64_t, float, float *, float *);
  void (*swiglu)(const float *, const float *, int64_t, int64_t, float *);
  void (*swiglu_grad)(const float *, const float *, const float *, int64_t, int64_t, float *, float *);
  void (*rope)(const float *, const float *, const float *, int64_t, int64_t, int64_t, int64_t, int, float *);
  void (*softmax)(float *, const float *, int64_t, int64_t, int64_t, int64_t, int64_t);
  void (*softmax_grad)(const float *, const float *, int64_t, int64_t, int64_t, float *);
  void (*adamw)(float *, float *, float *, const float *, int64_t, int64_t, float, float, float, float, float, float, float);
  void (*sample)(const float *, int64_t, int64_t, int64_t, int64_t, float, const double *, int32_t *, float *, float *);
} layer_kernels;

#define TABLE(S) {rms_rows_##S, rms_grad_rows_##S, swiglu_range_##S, swiglu_grad_range_##S, rope_rows_##S, softmax_rows_##S, softmax_grad_rows_##S, adamw_range_##S, sample_rows_##S}

static const layer_kernels *K(void) {
  static layer_kernels k;
  static int ready = 0;
  if (!ready) {
    k = (layer_kernels)TABLE(generic);
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) k = (layer_kernels)TABLE(avx512);
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) k = (layer_kernels)TABLE(avx2);
#endif
    ready = 1;
  }
  return &k;
}

/* ---------------------------------------------------------------- parallel drivers */

/* Items for `units` units of `per_unit` values each: one per thread, or 1 for small work. */
static int64_t items_for(int64_t units, int64_t per_unit) {
  int64_t t = ot_pool_threads();
  if (units * per_unit < PARALLEL_MIN || t < 2) return 1;
  return units < t ? units : t;
}

static int64_t cut(int64_t total, int64_t parts, int64_t idx) { return total * idx / parts; }

typedef struct {
  const float *a, *b, *c, *d;
  float *o1, *o2, *o3;
  float *partial; /* per item, `d` floats (RMSNorm's dw) */
  int64_t n, d_, heads, hd, group, period, items;
  float eps;
  int flag;
  float f[7];
} job;

static void rms_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  const job *J = ctx;
  K()->rms(J->a, J->b, cut(J->n, J->items, item), cut(J->n, J->items, item + 1), J->d_, J->eps, J->o1);
}

void ot_rms_norm(const float *x, const float *w, int64_t n, int64_t d, float eps, float *y) {
  job J = {.a = x, .b = w, .o1 = y, .n = n, .d_ = d, .eps = eps, .items = items_for(n, d)};
  ot_pool_run(rms_item, &J, J.items);
}

static void rms_grad_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  const job *J = ctx;
  float *dw = J->partial ? J->partial + item * J->d_ : NULL;
  if (dw) memset(dw, 0, sizeof(float) * (size_t)J->d_);
  K()->rms_grad(J->a, J->b, J->c, cut(J->n, J->items, item), cut(J->n, J->items, item + 1), J->d_, J->eps, J->o1, dw);
}

int ot_rms_norm_grad(const float *x, const float *w, const float *dy, int64_t n, int64_t d, float eps, float *dx, float *dw) {
  job J = {.a = x, .b = w, .c = dy, .o1 = dx, .n = n, .d_ = d, .eps = eps, .items = items_for(n, d)};
  if (dw) {
    J.partial = malloc(sizeof(float) * (size_t)(J.items * d));
    if (!J.partial) return -1;
  }
  ot_pool_run(rms_grad_item, &J, J.items);
  if (dw) {
    /* Items in a fixed order, so the sum does not depend on which thread ran what. */
    memcpy(dw, J.partial, sizeof(float) * (size_t)d);
    for (int64_t t = 1; t < J.items; t++)
      for (int64_t i = 0; i < d; i++) dw[i] += J.partial[t * d + i];
    free(J.partial);
  }
  return 0;
}

/* Elementwise ranges in multiples of 64 values (whole vectors, whole cache lines). */
static int64_t range_at(const job *J, int64_t item) {
  if (item == J->items) return J->n;
  return cut(J->n / 64, J->items, item) * 64;
}

static void swiglu_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  const job *J = ctx;
  K()->swiglu(J->a, J->b, range_at(J, item), range_at(J, item + 1), J->o1);
}

void ot_swiglu(const float *g, const float *u, int64_t count, float *y) {
  job J = {.a = g, .b = u, .o1 = y, .n = count, .items = items_for(count / 64, 64)};
  ot_pool_run(swiglu_item, &J, J.items);
}

static void swiglu_grad_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  const job *J = ctx;
  K()->swiglu_grad(J->a, J->b, J->c, range_at(J, item), range_at(J, item + 1), J->o1, J->o2);
}

void ot_swiglu_grad(const float *g, const float *u, const float *dy, int64_t count, float *dg, float *du) {
  job J = {.a = g, .b = u, .c = dy, .o1 = dg, .o2 = du, .n = count, .items = items_for(count / 64, 64)};
  ot_pool_run(swiglu_grad_item, &J, J.items);
}

static void rope_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  const job *J = ctx;
  K()->rope(J->a, J->b, J->c, cut(J->n, J->items, item), cut(J->n, J->items, item + 1), J->heads, J->hd, J->flag, J->o1);
}

void ot_rope(const float *x, const float *cos, const float *sin, int64_t rows, int64_t heads, int64_t hd, int transpose, float *y) {
  job J = {.a = x, .b = cos, .c = sin, .o1 = y, .n = rows, .heads = heads, .hd = hd, .flag = transpose, .items = items_for(rows, heads * hd)};
  ot_pool_run(rope_item, &J, J.items);
}

static void softmax_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  const job *J = ctx;
  K()->softmax(J->o1, J->a, cut(J->n, J->items, item), cut(J->n, J->items, item + 1), J->d_, J->group, J->period);
}

void ot_softmax_rows(float *x, const float *bias, int64_t rows, int64_t s, int64_t group, int64_t period) {
  job J = {.a = bias, .o1 = x, .n = rows, .d_ = s, .group = group, .period = period, .items = items_for(rows, s)};
  ot_pool_run(softmax_item, &J, J.items);
}

static void softmax_grad_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  const job *J = ctx;
  K()->softmax_grad(J->a, J->b, cut(J->n, J->items, item), cut(J->n, J->items, item + 1), J->d_, J->o1);
}

void ot_softmax_grad(const float *y, const float *dy, int64_t rows, int64_t s, float *dx) {
  job J = {.a = y, .b = dy, .o1 = dx, .n = rows, .d_ = s, .items = items_for(rows, s)};
  ot_pool_run(softmax_grad_item, &J, J.items);
}

static void adamw_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  const job *J = ctx;
  K()->adamw(J->o1, J->o2, J->o3, J->a, range_at(J, item), range_at(J, item + 1), J->f[0], J->f[1], J->f[2], J->f[3], J->f[4], J->f[5], J->f[6]);
}

void ot_adamw(float *p, float *m, float *v, const float *g, int64_t count, float gscale, float b1, float b2, float eps, float decay, float step,
              float sqrt_bc2) {
  job J = {.a = g, .o1 = p, .o2 = m, .o3 = v, .n = count, .items = items_for(count / 64, 64), .f = {gscale, b1, b2, eps, decay, step, sqrt_bc2}};
  ot_pool_run(adamw_item, &J, J.items);
}

typedef struct {
  const float *logits;
  const double *u;
  int32_t *token;
  float *logp, *slogp;
  int64_t rows, all, v, items;
  float inv_t;
} sample_job;

static void sample_item(void *ctx, int64_t item, int thread) {
  (void)thread;
  const sample_job *J = ctx;
  K()->sample(J->logits, cut(J->rows, J->items, item), cut(J->rows, J->items, item + 1), J->all, J->v, J->inv_t, J->u, J->token, J->logp, J->slogp);
}

int ot_sample_rows(const float *logits, int64_t rows, int64_t all, int64_t v, float inv_t, const double *u, int32_t *token, float *logp, float *slogp) {
  if (v < 1 || v > all || (v + SAMPLE_CHUNK - 1) / SAMPLE_CHUNK > SAMPLE_MAX_CHUNKS) return -1;
  sample_job J = {logits, u, token, logp, slogp, rows, all, v, items_for(rows, all), inv_t};
  ot_pool_run(sample_item, &J, J.items);
  return 0;
}
