/*
 * A decoding step in one call (see decode.h).
 *
 * Per layer the step is five parallel-for's on the pool: q/k/v (one job over the three weights' rows),
 * attention (one item per row and key/value head, which also appends that head's new key and value), o,
 * gate/up (one job), down; the norms, biases, rotary positions and residual adds between them run on the
 * calling thread or through layer-ops' threaded stages. The weight products use skinny.c's kernels, each
 * item a block of weight rows of about 96 KiB, so every thread streams weights until the job's last block
 * and a late or descheduled worker leaves its blocks to the others. The LoRA terms are two small products
 * each (ot_gemm) after their base product.
 *
 * The cache holds float32 keys transposed per head ([hd][capacity], so the scores of 16 cached positions
 * are one vector accumulation over hd, no horizontal sums) and values as rows ([capacity][hd]). Rows that
 * continue one prompt (a GRPO group's samples) can share its keys and values (ot_kv_share): the prompt's
 * positions are then held once per prompt and each row holds only what it generates, so attention reads
 * the prompt once for all its rows (from cache, the rows of a prompt being neighbouring work items)
 * instead of once per row from memory.
 */
#include "decode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm.h"
#include "layer-ops.h"
#include "skinny.h"
#include "thread-pool.h"
#include "vector-math.h"

/* Bytes of weights per work item of a product (a block of rows). */
#define ITEM_BYTES (96 * 1024)
/* Query heads of one key/value head handled together in the score loop (accumulators in registers). */
#define HEAD_CHUNK 8
/* Query heads whose probability × value sums share one pass over the values (4 × 4 vectors in registers). */
#define PV_HEADS 4

struct ot_decoder {
  ot_dec_dims dims;
  const ot_tensor **w; /* layers·OT_DEC_LINEARS, then embed, head */
  float *norms;        /* layers·2·d + d */
  float *biases;       /* layers·(heads + 2·kv_heads)·hd, or NULL */
};

struct ot_kv {
  const ot_decoder *owner; /* for identity checks only: the decoder may be freed first */
  ot_dec_dims dims;
  int64_t rows, cap, capp, len; /* capp: capacity rounded up to 16 (the keys' row stride) */
  float *k, *v;                 /* [layers][rows][kv_heads][hd][capp], [layers][rows][kv_heads][capp][hd] */
  /* Shared prompts (ot_kv_share): positions 0..plen-1 of row r are those of prompt src[r], held in pk, pv
   * ([layers][sources][kv_heads][hd][pcapp], [layers][sources][kv_heads][plen][hd]); the row's own
   * blocks above then hold position p at p - plen. plen 0: nothing shared. */
  int64_t plen, pcapp, sources;
  int32_t *src;
  float *pk, *pv;
  /* The rows a step computes (ot_kv_set_active), ascending: rows that finished are left out, their cache
   * kept as it is. A step's tokens, positions and logits are those rows', in this order. */
  int32_t *act;
  int64_t na;
  uint8_t *mask;                /* [rows][cap] */
  /* step buffers */
  float *x, *a, *q, *kn, *vn, *attn, *o, *g, *u, *lhs, *lora_u, *scores;
  size_t scores_floats, lora_floats;
  int64_t bytes;
  double seconds[OT_DEC_STAGES]; /* time spent per stage, all steps */
};

struct ot_dec_lora {
  int64_t rows, slots;
  struct term {
    int64_t r;
    float *A, *B, *mask;
  } *t; /* per slot; r = 0: none */
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) & ~(size_t)63); }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* ---------------------------------------------------------------- the decoder */

static int64_t linear_out(const ot_dec_dims *m, int which) {
  switch (which) {
    case OT_DEC_Q: return m->heads * m->hd;
    case OT_DEC_K:
    case OT_DEC_V: return m->kv_heads * m->hd;
    case OT_DEC_GATE:
    case OT_DEC_UP: return m->inter;
    default: return m->d; /* o, down */
  }
}

static int64_t linear_in(const ot_dec_dims *m, int which) {
  switch (which) {
    case OT_DEC_O: return m->heads * m->hd;
    case OT_DEC_DOWN: return m->inter;
    default: return m->d;
  }
}

ot_decoder *ot_decoder_create(const ot_dec_dims *dims, const ot_tensor *const *tensors, const float *norms, const float *biases, char *err, int errlen) {
  const ot_dec_dims *m = dims;
  if (m->layers < 1 || m->d < 1 || m->heads < 1 || m->kv_heads < 1 || m->heads % m->kv_heads || m->hd < 2 || m->hd % 2 || m->inter < 1 || m->vocab < 1 ||
      !(m->eps > 0)) {
    snprintf(err, (size_t)errlen, "decoder: invalid dimensions");
    return NULL;
  }
  const int64_t count = m->layers * OT_DEC_LINEARS + 2;
  for (int64_t i = 0; i < count; i++) {
    const ot_tensor *t = tensors[i];
    const int64_t want = i < m->layers * OT_DEC_LINEARS ? linear_out(m, (int)(i % OT_DEC_LINEARS)) * linear_in(m, (int)(i % OT_DEC_LINEARS)) : m->vocab * m->d;
    if (!t || t->released || t->numel != want) {
      snprintf(err, (size_t)errlen, "decoder: tensor %ld has %ld elements, expected %ld", (long)i, (long)(t ? t->numel : 0), (long)want);
      return NULL;
    }
  }
  ot_decoder *D = calloc(1, sizeof *D);
  const size_t nn = (size_t)(m->layers * 2 * m->d + m->d), nb = (size_t)(m->layers * (m->heads + 2 * m->kv_heads) * m->hd);
  if (D) {
    D->dims = *m;
    D->w = malloc(sizeof(ot_tensor *) * (size_t)count);
    D->norms = malloc(sizeof(float) * nn);
    D->biases = biases ? malloc(sizeof(float) * nb) : NULL;
  }
  if (!D || !D->w || !D->norms || (biases && !D->biases)) {
    ot_decoder_free(D);
    snprintf(err, (size_t)errlen, "decoder: out of memory");
    return NULL;
  }
  memcpy(D->w, tensors, sizeof(ot_tensor *) * (size_t)count);
  memcpy(D->norms, norms, sizeof(float) * nn);
  if (biases) memcpy(D->biases, biases, sizeof(float) * nb);
  return D;
}

void ot_decoder_free(ot_decoder *D) {
  if (!D) return;
  free(D->w);
  free(D->norms);
  free(D->biases);
  free(D);
}

const ot_dec_dims *ot_decoder_dims(const ot_decoder *D) { return &D->dims; }

/* ---------------------------------------------------------------- the cache */

ot_kv *ot_kv_create(const ot_decoder *D, int64_t rows, int64_t capacity) {
  const ot_dec_dims *m = &D->dims;
  ot_kv *C = calloc(1, sizeof *C);
  if (!C) return NULL;
  C->owner = D;
  C->dims = *m;
  C->rows = rows;
  C->cap = capacity;
  C->capp = (capacity + 15) & ~(int64_t)15;
  const size_t kv = (size_t)(m->layers * rows * m->kv_heads * m->hd * C->capp);
  const int64_t qd = m->heads * m->hd, kvd = m->kv_heads * m->hd, widest = max64(max64(m->d, qd), m->inter);
  struct {
    float **p;
    size_t floats;
  } bufs[] = {
      {&C->k, kv},
      {&C->v, kv},
      {&C->x, (size_t)(rows * m->d)},
      {&C->a, (size_t)(rows * m->d)},
      {&C->q, (size_t)(rows * qd)},
      {&C->kn, (size_t)(rows * kvd)},
      {&C->vn, (size_t)(rows * kvd)},
      {&C->attn, (size_t)(rows * qd)},
      {&C->o, (size_t)(rows * m->d)},
      {&C->g, (size_t)(rows * m->inter)},
      {&C->u, (size_t)(rows * m->inter)},
      {&C->lhs, ot_skinny_lhs_floats(rows, widest)},
  };
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
    *bufs[i].p = alloc64(bufs[i].floats * sizeof(float));
    if (!*bufs[i].p) {
      ot_kv_free(C);
      return NULL;
    }
    C->bytes += (int64_t)(bufs[i].floats * sizeof(float));
  }
  C->mask = calloc((size_t)(rows * capacity), 1);
  C->act = malloc(sizeof(int32_t) * (size_t)rows);
  if (!C->mask || !C->act) {
    ot_kv_free(C);
    return NULL;
  }
  for (int64_t r = 0; r < rows; r++) C->act[r] = (int32_t)r;
  C->na = rows;
  C->bytes += rows * capacity;
  return C;
}

void ot_kv_free(ot_kv *C) {
  if (!C) return;
  float *bufs[] = {C->k, C->v, C->pk, C->pv, C->x, C->a, C->q, C->kn, C->vn, C->attn, C->o, C->g, C->u, C->lhs, C->lora_u, C->scores};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
  free(C->mask);
  free(C->src);
  free(C->act);
  free(C);
}

int64_t ot_kv_rows(const ot_kv *C) { return C->rows; }
int64_t ot_kv_active_rows(const ot_kv *C) { return C->na; }

int ot_kv_set_active(ot_kv *C, const int32_t *rows, int64_t count) {
  if (count < 1 || count > C->rows) return -1;
  for (int64_t i = 0; i < count; i++)
    if (rows[i] < 0 || rows[i] >= C->rows || (i > 0 && rows[i] <= rows[i - 1])) return -1;
  memcpy(C->act, rows, sizeof(int32_t) * (size_t)count);
  C->na = count;
  return 0;
}
int64_t ot_kv_capacity(const ot_kv *C) { return C->cap; }
int64_t ot_kv_length(const ot_kv *C) { return C->len; }
int64_t ot_kv_bytes(const ot_kv *C) { return C->bytes; }

const double *ot_kv_stage_seconds(const ot_kv *C) { return C->seconds; }

void ot_kv_shape(const ot_kv *C, int64_t *layers, int64_t *kv_heads, int64_t *hd) {
  *layers = C->dims.layers;
  *kv_heads = C->dims.kv_heads;
  *hd = C->dims.hd;
}

/* Where (row, head)'s keys ([hd][capp]) and values ([capp][hd]) of a layer start. */
static size_t head_at(const ot_kv *C, int64_t layer, int64_t row, int64_t head) {
  const ot_dec_dims *m = &C->dims;
  return (size_t)(((layer * C->rows + row) * m->kv_heads + head) * m->hd * C->capp);
}

/* Where (prompt, head)'s shared keys ([hd][pcapp]) and values ([plen][hd]) of a layer start. */
static size_t shared_keys_at(const ot_kv *C, int64_t layer, int64_t source, int64_t head) {
  return (size_t)(((layer * C->sources + source) * C->dims.kv_heads + head) * C->dims.hd * C->pcapp);
}
static size_t shared_values_at(const ot_kv *C, int64_t layer, int64_t source, int64_t head) {
  return (size_t)(((layer * C->sources + source) * C->dims.kv_heads + head) * C->dims.hd * C->plen);
}

int ot_kv_share(ot_kv *C, const int32_t *row_source, int64_t sources, int64_t plen) {
  const ot_dec_dims *m = &C->dims;
  if (C->len != 0 || C->plen != 0 || sources < 1 || plen < 1 || plen > C->cap) return -1;
  for (int64_t r = 0; r < C->rows; r++)
    if (row_source[r] < 0 || row_source[r] >= sources) return -1;
  C->src = malloc(sizeof(int32_t) * (size_t)C->rows);
  C->pcapp = (plen + 15) & ~(int64_t)15;
  const size_t per = (size_t)(m->layers * sources * m->kv_heads * m->hd);
  C->pk = alloc64(per * (size_t)C->pcapp * sizeof(float));
  C->pv = alloc64(per * (size_t)plen * sizeof(float));
  if (!C->src || !C->pk || !C->pv) {
    free(C->src);
    free(C->pk);
    free(C->pv);
    C->src = NULL;
    C->pk = C->pv = NULL;
    return -2;
  }
  memcpy(C->src, row_source, sizeof(int32_t) * (size_t)C->rows);
  C->sources = sources;
  C->plen = plen;
  C->bytes += (int64_t)(per * (size_t)(C->pcapp + plen) * sizeof(float));
  return 0;
}

int64_t ot_kv_load_rows(const ot_kv *C) { return C->plen ? C->sources : C->rows; }
int64_t ot_kv_shared_length(const ot_kv *C) { return C->plen; }

void ot_kv_load(ot_kv *C, int64_t layer, const float *k, const float *v, int64_t len) {
  const ot_dec_dims *m = &C->dims;
  for (int64_t r = 0; r < ot_kv_load_rows(C); r++)
    for (int64_t h = 0; h < m->kv_heads; h++) {
      float *kt = C->plen ? C->pk + shared_keys_at(C, layer, r, h) : C->k + head_at(C, layer, r, h);
      float *vt = C->plen ? C->pv + shared_values_at(C, layer, r, h) : C->v + head_at(C, layer, r, h);
      const int64_t stride = C->plen ? C->pcapp : C->capp;
      const float *ks = k + ((r * m->kv_heads + h) * len) * m->hd, *vs = v + ((r * m->kv_heads + h) * len) * m->hd;
      for (int64_t s = 0; s < len; s++)
        for (int64_t d = 0; d < m->hd; d++) kt[d * stride + s] = ks[s * m->hd + d];
      memcpy(vt, vs, sizeof(float) * (size_t)(len * m->hd));
    }
}

void ot_kv_set_mask(ot_kv *C, const uint8_t *mask, int64_t len) {
  for (int64_t r = 0; r < C->rows; r++) {
    memcpy(C->mask + r * C->cap, mask + r * len, (size_t)len);
    memset(C->mask + r * C->cap + len, 0, (size_t)(C->cap - len));
  }
  C->len = len;
}

/* ---------------------------------------------------------------- LoRA terms */

ot_dec_lora *ot_dec_lora_create(const ot_decoder *D, int64_t rows, const ot_dec_lora_term *terms, int64_t count) {
  const ot_dec_dims *m = &D->dims;
  ot_dec_lora *L = calloc(1, sizeof *L);
  if (!L) return NULL;
  L->rows = rows;
  L->slots = m->layers * OT_DEC_LINEARS + 1;
  L->t = calloc((size_t)L->slots, sizeof *L->t);
  if (!L->t) {
    ot_dec_lora_free(L);
    return NULL;
  }
  for (int64_t i = 0; i < count; i++) {
    const ot_dec_lora_term *s = &terms[i];
    const int which = (int)(s->slot % OT_DEC_LINEARS);
    const int head = s->slot == L->slots - 1;
    const int64_t in = head ? m->d : linear_in(m, which), out = head ? m->vocab : linear_out(m, which);
    struct term *t = &L->t[s->slot];
    t->r = s->r;
    t->A = malloc(sizeof(float) * (size_t)(in * s->r));
    t->B = malloc(sizeof(float) * (size_t)(s->r * out));
    t->mask = s->mask ? malloc(sizeof(float) * (size_t)(rows * s->r)) : NULL;
    if (!t->A || !t->B || (s->mask && !t->mask)) {
      ot_dec_lora_free(L);
      return NULL;
    }
    memcpy(t->A, s->A, sizeof(float) * (size_t)(in * s->r));
    memcpy(t->B, s->B, sizeof(float) * (size_t)(s->r * out));
    if (s->mask) memcpy(t->mask, s->mask, sizeof(float) * (size_t)(rows * s->r));
  }
  return L;
}

void ot_dec_lora_free(ot_dec_lora *L) {
  if (!L) return;
  for (int64_t i = 0; L->t && i < L->slots; i++) {
    free(L->t[i].A);
    free(L->t[i].B);
    free(L->t[i].mask);
  }
  free(L->t);
  free(L);
}

int64_t ot_dec_lora_rows(const ot_dec_lora *L) { return L->rows; }

/* ---------------------------------------------------------------- products */

/* Where products go to the packed GEMM instead of the skinny tiles (see linears): every product from
 * 128 rows (a step 7–14 % faster at 256 rows, slower at 64), the long-k down product from 64. */
#define PACKED_MIN_ROWS 64
#define PACKED_MIN_K 1024
#define PACKED_ALL_ROWS 128

/* Up to three weights that share the rows of A, as one parallel-for over blocks of their rows. */
typedef struct {
  ot_skinny_lhs lhs;
  int count;
  struct {
    const ot_tensor *w;
    float *c;
    int64_t n, block, items;
  } part[3];
} linear_job;

static void linear_item(void *ctx, int64_t item, int thread) {
  const linear_job *J = ctx;
  int p = 0;
  while (item >= J->part[p].items) item -= J->part[p++].items;
  const int64_t j0 = item * J->part[p].block, j1 = min64(J->part[p].n, j0 + J->part[p].block);
  ot_skinny_range(&J->lhs, J->part[p].w->data, J->lhs.k, j0, j1, J->part[p].c, J->part[p].n, 0, thread);
}

/* c_i [rows, n_i] = a [rows, k] · w_iᵀ for the given weights (all of one dtype, as a checkpoint stores them). */
static void linears(ot_kv *C, const float *a, int64_t rows, int64_t k, int count, const ot_tensor *const *w, float *const *c) {
  if (rows >= PACKED_ALL_ROWS || (count == 1 && rows >= PACKED_MIN_ROWS && k > PACKED_MIN_K)) {
    /* With a long k (MLP down) the skinny tiles sweep A once per group of 8 rows for every k block and
     * run at about half the packed GEMM's rate (126 against 238 GFLOP/s at 256 rows); from 128 rows the
     * packed GEMM's reuse of A beats streaming the weights once for every product. */
    for (int i = 0; i < count; i++) ot_gemm(0, 1, rows, w[i]->numel / k, k, 1.0f, a, k, w[i]->data, w[i]->dtype, k, 0.0f, c[i], w[i]->numel / k);
    return;
  }
  linear_job J = {.count = count};
  ot_skinny_prepare(&J.lhs, a, k, rows, k, w[0]->dtype, C->lhs);
  int64_t items = 0;
  for (int i = 0; i < count; i++) {
    const int64_t n = w[i]->numel / k, row_bytes = k * (int64_t)ot_dtype_bytes(w[i]->dtype);
    const int64_t block = max64(8, (ITEM_BYTES / row_bytes) & ~(int64_t)7);
    J.part[i].w = w[i];
    J.part[i].c = c[i];
    J.part[i].n = n;
    J.part[i].block = block;
    J.part[i].items = (n + block - 1) / block;
    items += J.part[i].items;
  }
  ot_pool_run(linear_item, &J, items);
}

/* c [rows, out] += ((a·A) ⊙ mask)·B for the slot's LoRA term, if any; -1 when out of memory. */
static int lora_add(ot_kv *C, const ot_dec_lora *L, int64_t slot, const float *a, int64_t rows, int64_t in, int64_t out, float *c) {
  if (!L || !L->t[slot].r) return 0;
  const struct term *t = &L->t[slot];
  const size_t need = (size_t)(rows * t->r);
  if (need > C->lora_floats) { /* grown to the widest term, kept for later steps */
    free(C->lora_u);
    C->lora_u = alloc64(need * sizeof(float));
    C->lora_floats = C->lora_u ? need : 0;
    if (!C->lora_u) return -1;
  }
  float *u = C->lora_u;
  ot_gemm(0, 0, rows, t->r, in, 1.0f, a, in, t->A, OT_F32, t->r, 0.0f, u, t->r);
  if (t->mask) /* per row of the cache: active row i is cache row act[i] */
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < t->r; j++) u[i * t->r + j] *= t->mask[C->act[i] * t->r + j];
  ot_gemm(0, 0, rows, out, t->r, 1.0f, u, t->r, t->B, OT_F32, out, 1.0f, c, out);
  return 0;
}

/* ---------------------------------------------------------------- attention */

#define LOADV(SUFFIX, p) ({ vf_##SUFFIX _v; memcpy(&_v, (p), sizeof _v); _v; })
#define STOREV(p, v) memcpy((p), &(v), sizeof(v))

/* Cached positions of one (row, key/value head) in one layer: keys kt [hd][capp], values vr [capp][hd], S
 * of them, mask[s]: whether position s is a real token. A row's positions are one segment, or two when
 * its prompt's are shared (the prompt's, then its own). */
typedef struct {
  const float *kt, *vr;
  const uint8_t *mask;
  int64_t S, capp;
} kv_segment;

/*
 * One row's query heads h0..h0+G of one key/value head against its cached positions (segments seg[0..ns),
 * in order): queries q [G, hd] already scaled, scores in sc (G rows, each the segments' S rounded up to
 * the lanes, one after the other), output out [G, hd].
 */
#define ATTEND(SUFFIX, LANES, TARGET)                                                                                             \
  VECTOR_MATH(SUFFIX, LANES, TARGET)                                                                                              \
  TARGET static void attend_##SUFFIX(const float *q, const kv_segment *seg, int ns, int64_t hd, int64_t G, float *sc, float *out) { \
    int64_t off[2], width[2], Sr = 0; /* a segment's scores start at off and fill width (its S rounded up) */                     \
    for (int g = 0; g < ns; g++) {                                                                                                \
      off[g] = Sr;                                                                                                                \
      width[g] = (seg[g].S + LANES - 1) / LANES * LANES;                                                                          \
      Sr += width[g];                                                                                                             \
    }                                                                                                                             \
    for (int g = 0; g < ns; g++) {                                                                                                \
      const float *kt = seg[g].kt;                                                                                                \
      const int64_t capp = seg[g].capp;                                                                                           \
      for (int64_t h0 = 0; h0 < G; h0 += HEAD_CHUNK) {                                                                            \
        const int64_t hn = min64(HEAD_CHUNK, G - h0);                                                                             \
        for (int64_t s0 = 0; s0 < width[g]; s0 += LANES) {                                                                        \
          vf_##SUFFIX acc[HEAD_CHUNK] = {{0}};                                                                                    \
          for (int64_t d = 0; d < hd; d++) {                                                                                      \
            const vf_##SUFFIX kv = LOADV(SUFFIX, kt + d * capp + s0);                                                            \
            for (int64_t h = 0; h < hn; h++) acc[h] += q[(h0 + h) * hd + d] * kv;                                                \
          }                                                                                                                       \
          for (int64_t h = 0; h < hn; h++) STOREV(sc + (h0 + h) * Sr + off[g] + s0, acc[h]);                                     \
        }                                                                                                                         \
      }                                                                                                                           \
    }                                                                                                                             \
    for (int64_t h = 0; h < G; h++) {                                                                                             \
      float *row = sc + h * Sr, mx = -INFINITY;                                                                                   \
      for (int g = 0; g < ns; g++) {                                                                                              \
        float *part = row + off[g];                                                                                               \
        for (int64_t s = 0; s < width[g]; s++) {                                                                                  \
          if (s >= seg[g].S || !seg[g].mask[s]) part[s] = -1e30f; /* exp gives exactly 0 */                                      \
          else if (part[s] > mx) mx = part[s];                                                                                    \
        }                                                                                                                         \
      }                                                                                                                           \
      vf_##SUFFIX sum = {0};                                                                                                      \
      for (int64_t s = 0; s < Sr; s += LANES) {                                                                                   \
        vf_##SUFFIX e = vexp_##SUFFIX(LOADV(SUFFIX, row + s) - mx);                                                              \
        STOREV(row + s, e);                                                                                                       \
        sum += e;                                                                                                                 \
      }                                                                                                                           \
      float total = 0;                                                                                                            \
      for (int l = 0; l < LANES; l++) total += sum[l];                                                                            \
      const float inv = 1.0f / total;                                                                                             \
      for (int64_t s = 0; s < Sr; s++) row[s] *= inv;                                                                             \
    }                                                                                                                             \
    /* Probabilities × values: PV_HEADS heads × 4 vectors of hd accumulate in registers over the keys of   \
     * every segment (the output is written once), each value row read once for those heads; the rest of  \
     * hd after. */                                                                                                               \
    for (int64_t h0 = 0; h0 < G; h0 += PV_HEADS) {                                                                                \
      const int64_t hn = min64(PV_HEADS, G - h0);                                                                                 \
      int64_t d0 = 0;                                                                                                             \
      for (; d0 + 4 * LANES <= hd; d0 += 4 * LANES) {                                                                             \
        vf_##SUFFIX acc[PV_HEADS][4];                                                                                             \
        memset(acc, 0, sizeof acc);                                                                                               \
        for (int g = 0; g < ns; g++)                                                                                              \
          for (int64_t s = 0; s < seg[g].S; s++) {                                                                                \
            if (!seg[g].mask[s]) continue;                                                                                        \
            const float *vs = seg[g].vr + s * hd + d0;                                                                            \
            const vf_##SUFFIX v0 = LOADV(SUFFIX, vs), v1 = LOADV(SUFFIX, vs + LANES), v2 = LOADV(SUFFIX, vs + 2 * LANES),        \
                              v3 = LOADV(SUFFIX, vs + 3 * LANES);                                                                 \
            for (int h = 0; h < PV_HEADS; h++) {                                                                                  \
              const float p = sc[(h0 + (h < hn ? h : 0)) * Sr + off[g] + s];                                                      \
              acc[h][0] += p * v0;                                                                                                \
              acc[h][1] += p * v1;                                                                                                \
              acc[h][2] += p * v2;                                                                                                \
              acc[h][3] += p * v3;                                                                                                \
            }                                                                                                                     \
          }                                                                                                                       \
        for (int64_t h = 0; h < hn; h++)                                                                                          \
          for (int j = 0; j < 4; j++) STOREV(out + (h0 + h) * hd + d0 + j * LANES, acc[h][j]);                                    \
      }                                                                                                                           \
      for (int64_t h = h0; h < h0 + hn && d0 < hd; h++) {                                                                         \
        float *o = out + h * hd;                                                                                                  \
        memset(o + d0, 0, sizeof(float) * (size_t)(hd - d0));                                                                     \
        for (int g = 0; g < ns; g++) {                                                                                            \
          const float *row = sc + h * Sr + off[g];                                                                                \
          for (int64_t s = 0; s < seg[g].S; s++) {                                                                                \
            const float p = row[s];                                                                                               \
            if (p == 0.0f) continue;                                                                                              \
            const float *vs = seg[g].vr + s * hd;                                                                                 \
            for (int64_t d = d0; d < hd; d++) o[d] += p * vs[d];                                                                  \
          }                                                                                                                       \
        }                                                                                                                         \
      }                                                                                                                           \
    }                                                                                                                             \
  }

ATTEND(generic, 4, )
#if defined(__x86_64__)
ATTEND(avx2, 8, __attribute__((target("avx2,fma"))))
ATTEND(avx512, 16, __attribute__((target("avx512f"))))
#endif

typedef void (*attend_fn)(const float *, const kv_segment *, int, int64_t, int64_t, float *, float *);

static attend_fn attend(void) {
  static attend_fn f;
  if (!f) {
    f = attend_generic;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) f = attend_avx512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) f = attend_avx2;
#endif
  }
  return f;
}

typedef struct {
  ot_kv *C;
  int64_t layer, pos;
  float scale;
} attn_job;

/* Score columns a row's attention at position pos needs: each segment rounded up to 16 (the widest lanes). */
static int64_t scores_width(const ot_kv *C, int64_t pos) {
  const int64_t own = pos + 1 - C->plen;
  return ((C->plen + 15) & ~(int64_t)15) + ((own + 15) & ~(int64_t)15);
}

/* Row item / kv_heads, head item % kv_heads: appends the new key and value, then attends. */
static void attn_item(void *ctx, int64_t item, int thread) {
  const attn_job *J = ctx;
  ot_kv *C = J->C;
  const ot_dec_dims *m = &C->dims;
  /* r: the row's place among the step's rows (its q, new k/v, output); row: its place in the cache */
  const int64_t r = item / m->kv_heads, h = item % m->kv_heads, hd = m->hd, G = m->heads / m->kv_heads, own = J->pos - C->plen, row = C->act[r];
  float *kt = C->k + head_at(C, J->layer, row, h), *vr = C->v + head_at(C, J->layer, row, h);
  const float *kn = C->kn + (r * m->kv_heads + h) * hd, *vn = C->vn + (r * m->kv_heads + h) * hd;
  for (int64_t d = 0; d < hd; d++) kt[d * C->capp + own] = kn[d];
  memcpy(vr + own * hd, vn, sizeof(float) * (size_t)hd);
  const uint8_t *mask = C->mask + row * C->cap;
  kv_segment seg[2];
  int ns = 0;
  if (C->plen) {
    const int64_t s = C->src[row];
    seg[ns++] = (kv_segment){C->pk + shared_keys_at(C, J->layer, s, h), C->pv + shared_values_at(C, J->layer, s, h), mask, C->plen, C->pcapp};
  }
  seg[ns++] = (kv_segment){kt, vr, mask + C->plen, own + 1, C->capp};
  float *sc = C->scores + (size_t)thread * (size_t)(G * (scores_width(C, J->pos) + hd));
  float *qs = sc + G * scores_width(C, J->pos);
  const float *q = C->q + (r * m->heads + h * G) * hd;
  for (int64_t i = 0; i < G * hd; i++) qs[i] = q[i] * J->scale;
  attend()(qs, seg, ns, hd, G, sc, C->attn + (r * m->heads + h * G) * hd);
}

/* ---------------------------------------------------------------- the step */

static void add_rows(float *x, const float *y, int64_t count) {
  for (int64_t i = 0; i < count; i++) x[i] += y[i];
}

static void add_bias(float *x, const float *b, int64_t rows, int64_t width) {
  for (int64_t r = 0; r < rows; r++)
    for (int64_t i = 0; i < width; i++) x[r * width + i] += b[i];
}

int ot_decode_step(const ot_decoder *D, ot_kv *C, const ot_dec_lora *L, const int32_t *tokens, const float *cos, const float *sin, float *logits, char *err,
                   int errlen) {
  const ot_dec_dims *m = &D->dims;
  const int64_t n = C->na, d = m->d, hd = m->hd, qd = m->heads * hd, kvd = m->kv_heads * hd, I = m->inter, pos = C->len;
  const int64_t count = m->layers * OT_DEC_LINEARS + 2;
  if (C->owner != D || (L && L->rows != C->rows)) {
    snprintf(err, (size_t)errlen, "decode: the cache or the LoRA terms belong to another decoder or batch");
    return -1;
  }
  if (pos < C->plen) {
    snprintf(err, (size_t)errlen, "decode: the shared prompts' keys and values were not loaded");
    return -1;
  }
  if (pos >= C->cap) {
    snprintf(err, (size_t)errlen, "decode: the key/value cache is full (%ld positions)", (long)C->cap);
    return -1;
  }
  for (int64_t i = 0; i < count; i++)
    if (D->w[i]->released) {
      snprintf(err, (size_t)errlen, "decode: a weight of the model was freed");
      return -1;
    }
  for (int64_t r = 0; r < n; r++)
    if (tokens[r] < 0 || tokens[r] >= m->vocab) {
      snprintf(err, (size_t)errlen, "decode: token %ld is outside the vocabulary", (long)tokens[r]);
      return -1;
    }
  /* Per-thread attention scratch: G score rows and the G scaled queries. */
  const int64_t G = m->heads / m->kv_heads, Sr = scores_width(C, pos);
  const size_t scores = (size_t)ot_pool_threads() * (size_t)(G * (Sr + hd));
  if (scores > C->scores_floats) {
    free(C->scores);
    const size_t want = (size_t)ot_pool_threads() * (size_t)(G * (scores_width(C, C->cap - 1) + hd));
    C->scores = alloc64(want * sizeof(float));
    C->scores_floats = C->scores ? want : 0;
    if (!C->scores) {
      snprintf(err, (size_t)errlen, "decode: out of memory");
      return -1;
    }
  }
  for (int64_t r = 0; r < n; r++) C->mask[C->act[r] * C->cap + pos] = 1;

  double t = now();
  /* Adds the time since the last mark to stage `st`. */
#define MARK(st)                   \
  do {                             \
    const double t1 = now();       \
    C->seconds[st] += t1 - t;      \
    t = t1;                        \
  } while (0)
  ot_tensor_gather_rows(D->w[m->layers * OT_DEC_LINEARS], d, tokens, n, C->x);
  int failed = 0;
  for (int64_t l = 0; l < m->layers && !failed; l++) {
    const ot_tensor *const *w = D->w + l * OT_DEC_LINEARS;
    const float *in_norm = D->norms + l * 2 * d, *post_norm = in_norm + d;
    const int64_t s = l * OT_DEC_LINEARS;
    ot_rms_norm(C->x, in_norm, n, d, m->eps, C->a);
    MARK(OT_DEC_STAGE_ELEMENTWISE);
    float *qkv[3] = {C->q, C->kn, C->vn};
    linears(C, C->a, n, d, 3, w, qkv);
    MARK(OT_DEC_STAGE_QKV);
    failed |= lora_add(C, L, s + OT_DEC_Q, C->a, n, d, qd, C->q) | lora_add(C, L, s + OT_DEC_K, C->a, n, d, kvd, C->kn) |
              lora_add(C, L, s + OT_DEC_V, C->a, n, d, kvd, C->vn);
    MARK(OT_DEC_STAGE_LORA);
    if (D->biases) {
      const float *b = D->biases + l * (qd + 2 * kvd);
      add_bias(C->q, b, n, qd);
      add_bias(C->kn, b + qd, n, kvd);
      add_bias(C->vn, b + qd + kvd, n, kvd);
    }
    ot_rope(C->q, cos, sin, n, m->heads, hd, 0, C->q);
    ot_rope(C->kn, cos, sin, n, m->kv_heads, hd, 0, C->kn);
    MARK(OT_DEC_STAGE_ELEMENTWISE);
    attn_job A = {.C = C, .layer = l, .pos = pos, .scale = 1.0f / sqrtf((float)hd)};
    ot_pool_run(attn_item, &A, n * m->kv_heads);
    MARK(OT_DEC_STAGE_ATTENTION);
    linears(C, C->attn, n, qd, 1, w + OT_DEC_O, &C->o);
    MARK(OT_DEC_STAGE_O);
    failed |= lora_add(C, L, s + OT_DEC_O, C->attn, n, qd, d, C->o);
    MARK(OT_DEC_STAGE_LORA);
    add_rows(C->x, C->o, n * d);
    ot_rms_norm(C->x, post_norm, n, d, m->eps, C->a);
    MARK(OT_DEC_STAGE_ELEMENTWISE);
    float *gu[2] = {C->g, C->u};
    linears(C, C->a, n, d, 2, w + OT_DEC_GATE, gu);
    MARK(OT_DEC_STAGE_GATE_UP);
    failed |= lora_add(C, L, s + OT_DEC_GATE, C->a, n, d, I, C->g) | lora_add(C, L, s + OT_DEC_UP, C->a, n, d, I, C->u);
    MARK(OT_DEC_STAGE_LORA);
    ot_swiglu(C->g, C->u, n * I, C->g);
    MARK(OT_DEC_STAGE_ELEMENTWISE);
    linears(C, C->g, n, I, 1, w + OT_DEC_DOWN, &C->o);
    MARK(OT_DEC_STAGE_DOWN);
    failed |= lora_add(C, L, s + OT_DEC_DOWN, C->g, n, I, d, C->o);
    MARK(OT_DEC_STAGE_LORA);
    add_rows(C->x, C->o, n * d);
  }
  if (!failed) {
    ot_rms_norm(C->x, D->norms + m->layers * 2 * d, n, d, m->eps, C->a);
    MARK(OT_DEC_STAGE_ELEMENTWISE);
    linears(C, C->a, n, d, 1, D->w + m->layers * OT_DEC_LINEARS + 1, &logits);
    MARK(OT_DEC_STAGE_HEAD);
    failed |= lora_add(C, L, m->layers * OT_DEC_LINEARS, C->a, n, d, m->vocab, logits);
    MARK(OT_DEC_STAGE_LORA);
  }
#undef MARK
  if (failed) {
    snprintf(err, (size_t)errlen, "decode: out of memory for a LoRA term");
    return -1;
  }
  C->len = pos + 1;
  return 0;
}
