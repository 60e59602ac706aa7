/*
 * The engine's native addon: N-API bindings for its matrix product (gemm.c), the tensors it keeps outside
 * the WebAssembly heap (tensors.c) and the fused language-model head (token-scores.c). See
 * libs/engine/src/native/addon.ts for the JavaScript side.
 *
 * Operands arrive as Float32Array views of the wasm heap (no copies) or as tensor handles; every shape and
 * stride is checked here against the arrays' lengths, so a wrong call throws a RangeError and never
 * writes outside its output.
 */
#define NAPI_VERSION 8
#include <errno.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "decode.h"
#include "gemm.h"
#include "layer-ops.h"
#include "machine-limits.h"
#include "tensors.h"
#include "token-scores.h"

#define CODE "OT_ENGINE_NATIVE"

#define CHECK(call)                                                                                                \
  do {                                                                                                             \
    if ((call) != napi_ok) {                                                                                       \
      napi_throw_error(env, CODE, "N-API call failed: " #call);                                                    \
      return NULL;                                                                                                 \
    }                                                                                                              \
  } while (0)

#define FAIL(kind, message)                                                                                        \
  do {                                                                                                             \
    napi_throw_##kind(env, CODE, message);                                                                         \
    return NULL;                                                                                                   \
  } while (0)

/* Tags that tell tensor handles from mapping handles (a handle of the wrong kind is refused, not cast). */
static const napi_type_tag TENSOR_TAG = {0x6f74656e736f7231ULL, 0x8a1c2e4b5d6f7081ULL};
static const napi_type_tag MAPPING_TAG = {0x6f746d6170706e67ULL, 0x1f2e3d4c5b6a7988ULL};
static const napi_type_tag DECODER_TAG = {0x6f74646563646572ULL, 0x2b3c4d5e6f708192ULL};
static const napi_type_tag KV_TAG = {0x6f746b7663616368ULL, 0x3c4d5e6f708192a3ULL};
static const napi_type_tag LORA_TAG = {0x6f746c6f72617365ULL, 0x4d5e6f708192a3b4ULL};

static napi_value make_string(napi_env env, const char *s) {
  napi_value v;
  napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
  return v;
}

static napi_value make_number(napi_env env, double x) {
  napi_value v;
  napi_create_double(env, x, &v);
  return v;
}

static int get_args(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != want) {
    char msg[64];
    snprintf(msg, sizeof msg, "expected %zu arguments", want);
    napi_throw_type_error(env, CODE, msg);
    return 0;
  }
  return 1;
}

static int get_i64(napi_env env, napi_value v, int64_t *out) {
  if (napi_get_value_int64(env, v, out) != napi_ok) {
    napi_throw_type_error(env, CODE, "expected an integer");
    return 0;
  }
  return 1;
}

static int is_null(napi_env env, napi_value v) {
  napi_valuetype t;
  return napi_typeof(env, v, &t) == napi_ok && (t == napi_null || t == napi_undefined);
}

/* A typed array of the given type; its element count in *length. */
static int typed_view(napi_env env, napi_value v, napi_typedarray_type want, void **data, size_t *length) {
  napi_typedarray_type type;
  bool is;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) return 0;
  if (napi_get_typedarray_info(env, v, &type, length, data, NULL, NULL) != napi_ok || type != want) return 0;
  return 1;
}

static int float_view(napi_env env, napi_value v, float **data, size_t *length) {
  if (!typed_view(env, v, napi_float32_array, (void **)data, length)) {
    napi_throw_type_error(env, CODE, "expected a Float32Array");
    return 0;
  }
  return 1;
}

static ot_tensor *tensor_of(napi_env env, napi_value v) {
  bool tagged = false;
  void *p = NULL;
  if (napi_check_object_type_tag(env, v, &TENSOR_TAG, &tagged) != napi_ok || !tagged || napi_get_value_external(env, v, &p) != napi_ok) {
    return NULL;
  }
  return (ot_tensor *)p;
}

/* A product's B operand: a live tensor handle, or a Float32Array wrapped as a (host-only) tensor. */
typedef struct {
  ot_tensor wrapped;
  const ot_tensor *tensor;
  const void *data;
  ot_dtype dtype;
  uint64_t numel;
} operand;

static int get_operand(napi_env env, napi_value v, operand *out) {
  float *f;
  size_t len;
  if (typed_view(env, v, napi_float32_array, (void **)&f, &len)) {
    out->wrapped = (ot_tensor){.data = f, .dtype = OT_F32, .numel = (int64_t)len};
    out->tensor = &out->wrapped;
    out->data = f;
    out->dtype = OT_F32;
    out->numel = len;
    return 1;
  }
  ot_tensor *t = tensor_of(env, v);
  if (!t) {
    napi_throw_type_error(env, CODE, "expected a Float32Array or a native tensor");
    return 0;
  }
  if (t->released) {
    napi_throw_error(env, CODE, "the native tensor was freed");
    return 0;
  }
  out->tensor = t;
  out->data = t->data;
  out->dtype = t->dtype;
  out->numel = (uint64_t)t->numel;
  return 1;
}

static const int64_t DIM_LIMIT = (int64_t)1 << 40;

static int get_f32(napi_env env, napi_value v, float *out) {
  double d;
  if (napi_get_value_double(env, v, &d) != napi_ok) {
    napi_throw_type_error(env, CODE, "expected a number");
    return 0;
  }
  *out = (float)d;
  return 1;
}

/* A Float32Array of at least `need` elements (or null when `optional`). */
static int sized(napi_env env, napi_value v, uint64_t need, float **out, int optional, const char *what) {
  size_t len;
  if (optional && is_null(env, v)) {
    *out = NULL;
    return 1;
  }
  if (!float_view(env, v, out, &len)) return 0;
  if (need > len) {
    char msg[128];
    snprintf(msg, sizeof msg, "%s is too short", what);
    napi_throw_range_error(env, CODE, msg);
    return 0;
  }
  return 1;
}

static int dims_ok(napi_env env, int64_t a, int64_t b) {
  if (a < 1 || b < 1 || a >= DIM_LIMIT || b >= DIM_LIMIT || a * b >= DIM_LIMIT) {
    napi_throw_range_error(env, CODE, "sizes must be >= 1 and within limits");
    return 0;
  }
  return 1;
}


/* info() -> { kernel, threads } */
static napi_value info_fn(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result;
  CHECK(napi_create_object(env, &result));
  napi_set_named_property(env, result, "kernel", make_string(env, ot_gemm_kernel()));
  napi_set_named_property(env, result, "threads", make_number(env, ot_get_threads()));
  return result;
}

/* setThreads(n) */
static napi_value set_threads_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  int64_t n;
  if (!get_args(env, info, 1, argv) || !get_i64(env, argv[0], &n)) return NULL;
  if (n < 1 || n > 1024) FAIL(range_error, "threads must be in [1, 1024]");
  ot_set_threads((int)n);
  return NULL;
}

/*
 * gemm(transA, transB, batch, m, n, k, A, strideA, B, strideB, C): for each i < batch,
 * C[i] (m×n) = op(A[i]) · op(B[i]), row-major; a stride of 0 broadcasts that operand. B may be a tensor
 * handle (16-bit weights are widened in the kernel).
 */
static napi_value gemm_fn(napi_env env, napi_callback_info info) {
  napi_value argv[11];
  if (!get_args(env, info, 11, argv)) return NULL;
  bool ta, tb;
  int64_t batch, m, n, k, sa, sb;
  CHECK(napi_get_value_bool(env, argv[0], &ta));
  CHECK(napi_get_value_bool(env, argv[1], &tb));
  if (!get_i64(env, argv[2], &batch) || !get_i64(env, argv[3], &m) || !get_i64(env, argv[4], &n) || !get_i64(env, argv[5], &k) ||
      !get_i64(env, argv[7], &sa) || !get_i64(env, argv[9], &sb)) {
    return NULL;
  }
  float *a, *c;
  size_t la, lc;
  operand b;
  if (!float_view(env, argv[6], &a, &la) || !get_operand(env, argv[8], &b) || !float_view(env, argv[10], &c, &lc)) return NULL;
  if (batch < 1 || m < 1 || n < 1 || k < 1 || sa < 0 || sb < 0 || m >= DIM_LIMIT || n >= DIM_LIMIT || k >= DIM_LIMIT || batch >= DIM_LIMIT ||
      (uint64_t)((batch - 1) * sa + m * k) > la || (uint64_t)((batch - 1) * sb + k * n) > b.numel || (uint64_t)(batch * m * n) > lc) {
    FAIL(range_error, "gemm: shapes and strides exceed the arrays");
  }
  if (batch == 1 && !ta) {
    /* One product with B possibly on the GPU. */
    ot_tensor_gemm(tb, m, n, k, a, k, b.tensor, 0, tb ? k : n, 0.0f, c, n);
    return NULL;
  }
  ot_gemm_batch(ta, tb, batch, m, n, k, a, sa, ta ? m : k, b.data, b.dtype, sb, tb ? k : n, c, m * n, n);
  return NULL;
}

/* gemmAdd(m, n, k, A, B, C): C (m×n) += A (m×k) · B (k×n), float32 arrays, row-major (a LoRA term added
 * onto a frozen product's output). */
static napi_value gemm_add_fn(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  int64_t m, n, k;
  float *a, *b, *c;
  size_t la, lb, lc;
  if (!get_args(env, info, 6, argv) || !get_i64(env, argv[0], &m) || !get_i64(env, argv[1], &n) || !get_i64(env, argv[2], &k) ||
      !float_view(env, argv[3], &a, &la) || !float_view(env, argv[4], &b, &lb) || !float_view(env, argv[5], &c, &lc)) {
    return NULL;
  }
  if (m < 1 || n < 1 || k < 1 || m >= DIM_LIMIT || n >= DIM_LIMIT || k >= DIM_LIMIT || (uint64_t)(m * k) > la || (uint64_t)(k * n) > lb ||
      (uint64_t)(m * n) > lc) {
    FAIL(range_error, "gemmAdd: shapes exceed the arrays");
  }
  ot_gemm(0, 0, m, n, k, 1.0f, a, k, b, OT_F32, n, 1.0f, c, n);
  return NULL;
}

static void finalize_tensor(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  ot_tensor_free((ot_tensor *)data);
}

static void finalize_mapping(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  ot_mapping_release((ot_mapping *)data);
}

static napi_value wrap_tensor(napi_env env, ot_tensor *t) {
  napi_value ext;
  if (napi_create_external(env, t, finalize_tensor, NULL, &ext) != napi_ok || napi_type_tag_object(env, ext, &TENSOR_TAG) != napi_ok) {
    ot_tensor_free(t);
    FAIL(error, "could not wrap a native tensor");
  }
  return ext;
}

static int get_dtype(napi_env env, napi_value v, ot_dtype *out) {
  int64_t d;
  if (!get_i64(env, v, &d)) return 0;
  if (d != OT_F32 && d != OT_BF16 && d != OT_F16) {
    napi_throw_range_error(env, CODE, "dtype must be 0 (f32), 1 (bf16) or 2 (f16)");
    return 0;
  }
  *out = (ot_dtype)d;
  return 1;
}

/* tensorCopy(data: Float32Array | Uint16Array, dtype) -> tensor: a Float32Array is f32; a Uint16Array holds bf16 or f16 bits. */
static napi_value tensor_copy_fn(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  ot_dtype dtype;
  if (!get_args(env, info, 2, argv) || !get_dtype(env, argv[1], &dtype)) return NULL;
  void *data;
  size_t len;
  if (!typed_view(env, argv[0], dtype == OT_F32 ? napi_float32_array : napi_uint16_array, &data, &len)) {
    FAIL(type_error, dtype == OT_F32 ? "f32 data must be a Float32Array" : "16-bit data must be a Uint16Array of bits");
  }
  ot_tensor *t = ot_tensor_copy(data, dtype, (int64_t)len);
  if (!t) FAIL(error, "out of native memory while copying a tensor");
  return wrap_tensor(env, t);
}

/* mapFile(path) -> mapping */
static napi_value map_file_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (!get_args(env, info, 1, argv)) return NULL;
  char path[4096];
  size_t len;
  if (napi_get_value_string_utf8(env, argv[0], path, sizeof path, &len) != napi_ok || len >= sizeof path - 1) FAIL(type_error, "path must be a string");
  ot_mapping *m = ot_mapping_open(path);
  if (!m) {
    char msg[4200];
    snprintf(msg, sizeof msg, "cannot map %s: %s", path, strerror(errno));
    FAIL(error, msg);
  }
  napi_value ext;
  if (napi_create_external(env, m, finalize_mapping, NULL, &ext) != napi_ok || napi_type_tag_object(env, ext, &MAPPING_TAG) != napi_ok) {
    ot_mapping_release(m);
    FAIL(error, "could not wrap a mapping");
  }
  return ext;
}

/* tensorView(mapping, byteOffset, dtype, numel) -> tensor */
static napi_value tensor_view_fn(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  if (!get_args(env, info, 4, argv)) return NULL;
  bool tagged = false;
  void *p = NULL;
  if (napi_check_object_type_tag(env, argv[0], &MAPPING_TAG, &tagged) != napi_ok || !tagged || napi_get_value_external(env, argv[0], &p) != napi_ok) {
    FAIL(type_error, "expected a mapping from mapFile");
  }
  int64_t offset, numel;
  ot_dtype dtype;
  if (!get_i64(env, argv[1], &offset) || !get_dtype(env, argv[2], &dtype) || !get_i64(env, argv[3], &numel)) return NULL;
  if (offset < 0 || numel < 0) FAIL(range_error, "offset and numel must be >= 0");
  ot_tensor *t = ot_tensor_view((ot_mapping *)p, (size_t)offset, dtype, numel);
  if (!t) FAIL(range_error, "tensorView: the range lies outside the mapped file (or out of memory)");
  return wrap_tensor(env, t);
}

/* tensorFree(tensor): frees its memory now (the handle stays, freed). */
static napi_value tensor_free_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (!get_args(env, info, 1, argv)) return NULL;
  ot_tensor *t = tensor_of(env, argv[0]);
  if (!t) FAIL(type_error, "expected a native tensor");
  ot_tensor_release(t);
  return NULL;
}

/* tensorRead(tensor, start, out: Float32Array): out.length elements from start, widened. */
static napi_value tensor_read_fn(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  if (!get_args(env, info, 3, argv)) return NULL;
  ot_tensor *t = tensor_of(env, argv[0]);
  if (!t) FAIL(type_error, "expected a native tensor");
  if (t->released) FAIL(error, "the native tensor was freed");
  int64_t start;
  float *out;
  size_t len;
  if (!get_i64(env, argv[1], &start) || !float_view(env, argv[2], &out, &len)) return NULL;
  if (start < 0 || (uint64_t)start + len > (uint64_t)t->numel) FAIL(range_error, "tensorRead: range outside the tensor");
  ot_tensor_read(t, start, (int64_t)len, out);
  return NULL;
}

/* gatherRows(table: tensor, rowLen, ids: Int32Array, out: Float32Array): out[i] = table row ids[i]. */
static napi_value gather_rows_fn(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  if (!get_args(env, info, 4, argv)) return NULL;
  ot_tensor *t = tensor_of(env, argv[0]);
  if (!t) FAIL(type_error, "expected a native tensor");
  if (t->released) FAIL(error, "the native tensor was freed");
  int64_t row_len;
  int32_t *ids;
  float *out;
  size_t n, lo;
  if (!get_i64(env, argv[1], &row_len)) return NULL;
  if (!typed_view(env, argv[2], napi_int32_array, (void **)&ids, &n)) FAIL(type_error, "ids must be an Int32Array");
  if (!float_view(env, argv[3], &out, &lo)) return NULL;
  if (row_len < 1 || t->numel % row_len != 0 || (uint64_t)n * (uint64_t)row_len > lo) FAIL(range_error, "gatherRows: sizes do not fit");
  const int64_t rows = t->numel / row_len;
  for (size_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= rows) FAIL(range_error, "gatherRows: an id is outside the table");
  }
  ot_tensor_gather_rows(t, row_len, ids, (int64_t)n, out);
  return NULL;
}

/* The common arguments of the fused head: h, n, d, W, vocab, targets. */
typedef struct {
  float *h;
  int64_t n, d, vocab;
  operand w;
  int32_t *targets;
} head_args;

static int get_head(napi_env env, napi_value *argv, head_args *o) {
  size_t lh, lt;
  if (!float_view(env, argv[0], &o->h, &lh) || !get_i64(env, argv[1], &o->n) || !get_i64(env, argv[2], &o->d) || !get_operand(env, argv[3], &o->w) ||
      !get_i64(env, argv[4], &o->vocab)) {
    return 0;
  }
  if (!typed_view(env, argv[5], napi_int32_array, (void **)&o->targets, &lt)) {
    napi_throw_type_error(env, CODE, "targets must be an Int32Array");
    return 0;
  }
  if (o->n < 1 || o->d < 1 || o->vocab < 1 || o->n >= DIM_LIMIT || o->d >= DIM_LIMIT || o->vocab >= DIM_LIMIT || (uint64_t)(o->n * o->d) > lh ||
      (uint64_t)(o->vocab * o->d) > o->w.numel || (uint64_t)o->n > lt) {
    napi_throw_range_error(env, CODE, "token scores: shapes exceed the arrays");
    return 0;
  }
  for (int64_t i = 0; i < o->n; i++) {
    if (o->targets[i] < -1 || o->targets[i] >= o->vocab) {
      napi_throw_range_error(env, CODE, "token scores: a target is outside the vocabulary (-1: a row not scored)");
      return 0;
    }
  }
  return 1;
}

static int row_array(napi_env env, napi_value v, int64_t n, float **out, int optional) {
  size_t len;
  if (optional && is_null(env, v)) {
    *out = NULL;
    return 1;
  }
  if (!float_view(env, v, out, &len)) return 0;
  if ((uint64_t)n > len) {
    napi_throw_range_error(env, CODE, "token scores: a per-row array is too short");
    return 0;
  }
  return 1;
}

/* tokenScores(h, n, d, W, vocab, targets, logp, lse, entropy | null, ew | null) */
static napi_value token_scores_fn(napi_env env, napi_callback_info info) {
  napi_value argv[10];
  head_args o;
  float *logp, *lse, *entropy, *ew;
  if (!get_args(env, info, 10, argv) || !get_head(env, argv, &o) || !row_array(env, argv[6], o.n, &logp, 0) || !row_array(env, argv[7], o.n, &lse, 0) ||
      !row_array(env, argv[8], o.n, &entropy, 1) || !row_array(env, argv[9], o.n * o.d, &ew, 1)) {
    return NULL;
  }
  if (ot_token_scores(o.h, o.n, o.d, o.w.tensor, o.vocab, o.targets, logp, lse, entropy, ew) != 0) FAIL(error, "out of native memory in the token scores");
  return NULL;
}

/* tokenScoresGradEw(n, d, W, vocab, targets, dlogp, ew, dh): dh = dlogp·(W[target] − ew). */
static napi_value token_scores_grad_ew_fn(napi_env env, napi_callback_info info) {
  napi_value argv[8];
  int64_t n, d, vocab;
  operand w;
  int32_t *targets;
  size_t lt;
  float *dlogp, *ew, *dh;
  if (!get_args(env, info, 8, argv) || !get_i64(env, argv[0], &n) || !get_i64(env, argv[1], &d) || !get_operand(env, argv[2], &w) ||
      !get_i64(env, argv[3], &vocab) || !dims_ok(env, n, d) || !dims_ok(env, vocab, d)) {
    return NULL;
  }
  if (!typed_view(env, argv[4], napi_int32_array, (void **)&targets, &lt) || lt < (size_t)n) FAIL(type_error, "targets must be an Int32Array of n ids");
  if ((uint64_t)(vocab * d) > w.numel) FAIL(range_error, "token scores: the head is smaller than vocab × d");
  for (int64_t i = 0; i < n; i++)
    if (targets[i] < -1 || targets[i] >= vocab) FAIL(range_error, "token scores: a target is outside the vocabulary (-1: a row not scored)");
  if (!sized(env, argv[5], n, &dlogp, 0, "dlogp") || !sized(env, argv[6], n * d, &ew, 0, "ew") || !sized(env, argv[7], n * d, &dh, 0, "dh")) return NULL;
  ot_token_scores_grad_ew(n, d, w.tensor, targets, dlogp, ew, dh);
  return NULL;
}

/* tokenScoresGrad(h, n, d, W, vocab, targets, lse, entropy | null, dlogp, dent | null, dh, dW | null) */
static napi_value token_scores_grad_fn(napi_env env, napi_callback_info info) {
  napi_value argv[12];
  head_args o;
  float *lse, *entropy, *dlogp, *dent, *dh, *dw = NULL;
  if (!get_args(env, info, 12, argv) || !get_head(env, argv, &o) || !row_array(env, argv[6], o.n, &lse, 0) || !row_array(env, argv[7], o.n, &entropy, 1) ||
      !row_array(env, argv[8], o.n, &dlogp, 0) || !row_array(env, argv[9], o.n, &dent, 1) || !row_array(env, argv[10], o.n * o.d, &dh, 0)) {
    return NULL;
  }
  if (dent && !entropy) FAIL(type_error, "token scores: an entropy coefficient needs the entropies");
  if (!is_null(env, argv[11])) {
    size_t len;
    if (!float_view(env, argv[11], &dw, &len)) return NULL;
    if ((uint64_t)(o.vocab * o.d) > len) FAIL(range_error, "token scores: dW is too short");
    if (o.w.dtype != OT_F32) FAIL(type_error, "token scores: a head with a gradient must be float32");
  }
  if (ot_token_scores_grad(o.h, o.n, o.d, o.w.tensor, o.vocab, o.targets, lse, entropy, dlogp, dent, dh, dw) != 0) {
    FAIL(error, "out of native memory in the token scores' gradient");
  }
  return NULL;
}

/* cudaOpen(device) -> { ok, name?, freeBytes?, totalBytes?, error? } */
static napi_value cuda_open_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1], result, flag;
  int64_t device;
  if (!get_args(env, info, 1, argv) || !get_i64(env, argv[0], &device)) return NULL;
  CHECK(napi_create_object(env, &result));
  char err[512] = "";
  int ok = ot_cuda_open((int)device, err, sizeof err) == 0;
  napi_get_boolean(env, ok, &flag);
  napi_set_named_property(env, result, "ok", flag);
  if (!ok) {
    napi_set_named_property(env, result, "error", make_string(env, err));
    return result;
  }
  char name[256];
  size_t free_bytes, total_bytes;
  ot_cuda_describe(name, sizeof name, &free_bytes, &total_bytes);
  napi_set_named_property(env, result, "name", make_string(env, name));
  napi_set_named_property(env, result, "freeBytes", make_number(env, (double)free_bytes));
  napi_set_named_property(env, result, "totalBytes", make_number(env, (double)total_bytes));
  return result;
}

/* tensorToDevice(tensor): a float32 copy on the GPU, used by every later product with it. */
static napi_value tensor_to_device_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (!get_args(env, info, 1, argv)) return NULL;
  ot_tensor *t = tensor_of(env, argv[0]);
  if (!t) FAIL(type_error, "expected a native tensor");
  if (t->released) FAIL(error, "the native tensor was freed");
  char err[512];
  if (ot_tensor_to_device(t, err, sizeof err) != 0) FAIL(error, err);
  return NULL;
}

/* cudaMinWork(n): the smallest product sent to the GPU (the GPU check sets 1). */
static napi_value cuda_min_work_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  int64_t n;
  if (!get_args(env, info, 1, argv) || !get_i64(env, argv[0], &n)) return NULL;
  if (n < 1) FAIL(range_error, "cudaMinWork must be >= 1");
  ot_tensor_set_gpu_min_work(n);
  return NULL;
}

/* memory() -> { allocatedBytes, mappedBytes, deviceBytes } */
static napi_value memory_fn(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result;
  CHECK(napi_create_object(env, &result));
  napi_set_named_property(env, result, "allocatedBytes", make_number(env, (double)ot_tensor_allocated_bytes()));
  napi_set_named_property(env, result, "mappedBytes", make_number(env, (double)ot_tensor_mapped_bytes()));
  napi_set_named_property(env, result, "deviceBytes", make_number(env, (double)ot_cuda_device_bytes()));
  return result;
}

/* machineLimits(bytes, seconds) -> { triadBytesPerS, readBytesPerS, fp32FlopsPerS, bf16FlopsPerS }: measured on the
 * pool's threads (machine-limits.h); bytes per array of the bandwidth test, seconds per peak loop. */
static napi_value machine_limits_fn(napi_env env, napi_callback_info info) {
  napi_value argv[2], result;
  int64_t bytes;
  double secs;
  if (!get_args(env, info, 2, argv) || !get_i64(env, argv[0], &bytes)) return NULL;
  CHECK(napi_get_value_double(env, argv[1], &secs));
  if (bytes < (1 << 20) || bytes > ((int64_t)1 << 34) || !(secs > 0 && secs <= 10)) FAIL(range_error, "machineLimits: bytes in [1 MiB, 16 GiB], seconds in (0, 10]");
  double triad = 0, read = 0;
  if (ot_memory_bandwidth(bytes, 5, &triad, &read) != 0) FAIL(error, "machineLimits: out of memory for the bandwidth arrays");
  CHECK(napi_create_object(env, &result));
  napi_set_named_property(env, result, "triadBytesPerS", make_number(env, triad));
  napi_set_named_property(env, result, "readBytesPerS", make_number(env, read));
  napi_set_named_property(env, result, "fp32FlopsPerS", make_number(env, ot_peak_flops(0, secs)));
  napi_set_named_property(env, result, "bf16FlopsPerS", make_number(env, ot_peak_flops(1, secs)));
  return result;
}

/* ---------------------------------------------------------------- layer stages (layer-ops.h) */

/* rmsNorm(x, w, n, d, eps, y) */
static napi_value rms_norm_fn(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  int64_t n, d;
  float eps, *x, *w, *y;
  if (!get_args(env, info, 6, argv) || !get_i64(env, argv[2], &n) || !get_i64(env, argv[3], &d) || !get_f32(env, argv[4], &eps) || !dims_ok(env, n, d) ||
      !sized(env, argv[0], n * d, &x, 0, "x") || !sized(env, argv[1], d, &w, 0, "w") || !sized(env, argv[5], n * d, &y, 0, "y")) {
    return NULL;
  }
  ot_rms_norm(x, w, n, d, eps, y);
  return NULL;
}

/* rmsNormGrad(x, w, dy, n, d, eps, dx, dw | null) */
static napi_value rms_norm_grad_fn(napi_env env, napi_callback_info info) {
  napi_value argv[8];
  int64_t n, d;
  float eps, *x, *w, *dy, *dx, *dw;
  if (!get_args(env, info, 8, argv) || !get_i64(env, argv[3], &n) || !get_i64(env, argv[4], &d) || !get_f32(env, argv[5], &eps) || !dims_ok(env, n, d) ||
      !sized(env, argv[0], n * d, &x, 0, "x") || !sized(env, argv[1], d, &w, 0, "w") || !sized(env, argv[2], n * d, &dy, 0, "dy") ||
      !sized(env, argv[6], n * d, &dx, 0, "dx") || !sized(env, argv[7], d, &dw, 1, "dw")) {
    return NULL;
  }
  if (ot_rms_norm_grad(x, w, dy, n, d, eps, dx, dw) != 0) FAIL(error, "out of native memory in the RMSNorm gradient");
  return NULL;
}

/* swiglu(g, u, count, y) */
static napi_value swiglu_fn(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  int64_t n;
  float *g, *u, *y;
  if (!get_args(env, info, 4, argv) || !get_i64(env, argv[2], &n) || !dims_ok(env, n, 1) || !sized(env, argv[0], n, &g, 0, "g") ||
      !sized(env, argv[1], n, &u, 0, "u") || !sized(env, argv[3], n, &y, 0, "y")) {
    return NULL;
  }
  ot_swiglu(g, u, n, y);
  return NULL;
}

/* swigluGrad(g, u, dy, count, dg, du) */
static napi_value swiglu_grad_fn(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  int64_t n;
  float *g, *u, *dy, *dg, *du;
  if (!get_args(env, info, 6, argv) || !get_i64(env, argv[3], &n) || !dims_ok(env, n, 1) || !sized(env, argv[0], n, &g, 0, "g") ||
      !sized(env, argv[1], n, &u, 0, "u") || !sized(env, argv[2], n, &dy, 0, "dy") || !sized(env, argv[4], n, &dg, 0, "dg") ||
      !sized(env, argv[5], n, &du, 0, "du")) {
    return NULL;
  }
  ot_swiglu_grad(g, u, dy, n, dg, du);
  return NULL;
}

/* rope(x, cos, sin, rows, heads, hd, transpose, y) */
static napi_value rope_fn(napi_env env, napi_callback_info info) {
  napi_value argv[8];
  int64_t rows, heads, hd;
  bool transpose;
  float *x, *c, *sn, *y;
  if (!get_args(env, info, 8, argv) || !get_i64(env, argv[3], &rows) || !get_i64(env, argv[4], &heads) || !get_i64(env, argv[5], &hd)) return NULL;
  CHECK(napi_get_value_bool(env, argv[6], &transpose));
  if (!dims_ok(env, rows, heads) || !dims_ok(env, rows * heads, hd)) return NULL;
  if (hd % 2) FAIL(range_error, "rope: the head dimension must be even");
  if (!sized(env, argv[0], rows * heads * hd, &x, 0, "x") || !sized(env, argv[1], rows * hd, &c, 0, "cos") || !sized(env, argv[2], rows * hd, &sn, 0, "sin") ||
      !sized(env, argv[7], rows * heads * hd, &y, 0, "y")) {
    return NULL;
  }
  ot_rope(x, c, sn, rows, heads, hd, transpose, y);
  return NULL;
}

/* softmaxRows(x, bias | null, rows, s, group, period): in place, x = softmax(x + bias row (r / group)·period + r % period). */
static napi_value softmax_rows_fn(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  int64_t rows, s, group, period;
  float *x, *bias;
  if (!get_args(env, info, 6, argv) || !get_i64(env, argv[2], &rows) || !get_i64(env, argv[3], &s) || !get_i64(env, argv[4], &group) ||
      !get_i64(env, argv[5], &period) || !dims_ok(env, rows, s)) {
    return NULL;
  }
  if (group < 1 || period < 1 || group % period) FAIL(range_error, "softmaxRows: group must be a multiple of period");
  /* The last group's rows use bias rows G·period + j % period, j < its row count. */
  const int64_t last = (rows - 1) / group, in_last = rows - last * group;
  const int64_t bias_rows = last * period + (in_last < period ? in_last : period);
  if (!sized(env, argv[0], rows * s, &x, 0, "x") || !sized(env, argv[1], bias_rows * s, &bias, 1, "bias")) return NULL;
  ot_softmax_rows(x, bias, rows, s, group, period);
  return NULL;
}

/* softmaxGrad(y, dy, rows, s, dx) */
static napi_value softmax_grad_fn(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  int64_t rows, s;
  float *y, *dy, *dx;
  if (!get_args(env, info, 5, argv) || !get_i64(env, argv[2], &rows) || !get_i64(env, argv[3], &s) || !dims_ok(env, rows, s) ||
      !sized(env, argv[0], rows * s, &y, 0, "y") || !sized(env, argv[1], rows * s, &dy, 0, "dy") || !sized(env, argv[4], rows * s, &dx, 0, "dx")) {
    return NULL;
  }
  ot_softmax_grad(y, dy, rows, s, dx);
  return NULL;
}

/* sampleRows(logits, rows, all, v, invT, u: Float64Array, token: Int32Array, logp, slogp) */
static napi_value sample_rows_fn(napi_env env, napi_callback_info info) {
  napi_value argv[9];
  int64_t rows, all, v;
  float inv_t, *logits, *logp, *slogp;
  double *u;
  int32_t *token;
  size_t lu, lt;
  if (!get_args(env, info, 9, argv) || !get_i64(env, argv[1], &rows) || !get_i64(env, argv[2], &all) || !get_i64(env, argv[3], &v) ||
      !get_f32(env, argv[4], &inv_t) || !dims_ok(env, rows, all)) {
    return NULL;
  }
  if (v < 1 || v > all || !(inv_t >= 0)) FAIL(range_error, "sampleRows: need 1 <= v <= all and invT >= 0");
  if (!typed_view(env, argv[5], napi_float64_array, (void **)&u, &lu) || lu < (size_t)rows) FAIL(type_error, "sampleRows: u must be a Float64Array of rows values");
  if (!typed_view(env, argv[6], napi_int32_array, (void **)&token, &lt) || lt < (size_t)rows) FAIL(type_error, "sampleRows: token must be an Int32Array of rows values");
  if (!sized(env, argv[0], rows * all, &logits, 0, "logits") || !sized(env, argv[7], rows, &logp, 0, "logp") || !sized(env, argv[8], rows, &slogp, 0, "slogp")) {
    return NULL;
  }
  if (ot_sample_rows(logits, rows, all, v, inv_t, u, token, logp, slogp) != 0) FAIL(range_error, "sampleRows: the vocabulary is too large");
  return NULL;
}

/* adamw(p, m, v, g, gscale, b1, b2, eps, decay, step, sqrtBc2): in place on p, m, v (equal lengths). */
static napi_value adamw_fn(napi_env env, napi_callback_info info) {
  napi_value argv[11];
  float *p, *m, *v, *g, f[7];
  size_t n;
  if (!get_args(env, info, 11, argv) || !float_view(env, argv[0], &p, &n)) return NULL;
  for (int i = 0; i < 7; i++)
    if (!get_f32(env, argv[4 + i], &f[i])) return NULL;
  if (!sized(env, argv[1], n, &m, 0, "m") || !sized(env, argv[2], n, &v, 0, "v") || !sized(env, argv[3], n, &g, 0, "g")) return NULL;
  if (n > 0) ot_adamw(p, m, v, g, (int64_t)n, f[0], f[1], f[2], f[3], f[4], f[5], f[6]);
  return NULL;
}

/* ---------------------------------------------------------------- decoding (decode.h) */

/* A decoder, cache or LoRA set behind a handle; `p` is NULL once freed (explicitly or by the collector). */
typedef struct {
  void *p;
  void (*free)(void *);
} boxed;

static void finalize_boxed(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  boxed *b = data;
  if (b->p) b->free(b->p);
  free(b);
}

static napi_value wrap_boxed(napi_env env, void *p, void (*fr)(void *), const napi_type_tag *tag) {
  boxed *b = malloc(sizeof *b);
  napi_value ext;
  if (!b) {
    fr(p);
    FAIL(error, "out of memory");
  }
  b->p = p;
  b->free = fr;
  if (napi_create_external(env, b, finalize_boxed, NULL, &ext) != napi_ok || napi_type_tag_object(env, ext, tag) != napi_ok) {
    fr(p);
    free(b);
    FAIL(error, "could not wrap a native object");
  }
  return ext;
}

/* The live object behind a handle of the given tag (NULL when `optional` and null); throws otherwise. */
static boxed *unbox(napi_env env, napi_value v, const napi_type_tag *tag, const char *what, int optional, int *ok) {
  bool tagged = false;
  void *p = NULL;
  *ok = 1;
  if (optional && is_null(env, v)) return NULL;
  if (napi_check_object_type_tag(env, v, tag, &tagged) != napi_ok || !tagged || napi_get_value_external(env, v, &p) != napi_ok) {
    char msg[96];
    snprintf(msg, sizeof msg, "expected a %s handle", what);
    napi_throw_type_error(env, CODE, msg);
    *ok = 0;
    return NULL;
  }
  if (!((boxed *)p)->p) {
    char msg[96];
    snprintf(msg, sizeof msg, "the %s was freed", what);
    napi_throw_error(env, CODE, msg);
    *ok = 0;
    return NULL;
  }
  return p;
}

static void free_decoder(void *p) { ot_decoder_free(p); }
static void free_kv(void *p) { ot_kv_free(p); }
static void free_lora(void *p) { ot_dec_lora_free(p); }

/* decoderCreate(dims: Float64Array [layers, d, heads, kvHeads, hd, inter, vocab, eps], tensors: handle[], norms, biases | null) */
static napi_value decoder_create_fn(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  if (!get_args(env, info, 4, argv)) return NULL;
  double *dv;
  size_t ndims;
  if (!typed_view(env, argv[0], napi_float64_array, (void **)&dv, &ndims) || ndims != 8) FAIL(type_error, "decoderCreate: dims must be a Float64Array of 8");
  for (int i = 0; i < 7; i++)
    if (!(dv[i] >= 1 && dv[i] < 1e9 && dv[i] == (double)(int64_t)dv[i])) FAIL(range_error, "decoderCreate: dims must be positive integers");
  ot_dec_dims dims = {(int64_t)dv[0], (int64_t)dv[1], (int64_t)dv[2], (int64_t)dv[3], (int64_t)dv[4], (int64_t)dv[5], (int64_t)dv[6], (float)dv[7]};
  bool is_array;
  uint32_t count;
  CHECK(napi_is_array(env, argv[1], &is_array));
  if (!is_array) FAIL(type_error, "decoderCreate: tensors must be an array");
  CHECK(napi_get_array_length(env, argv[1], &count));
  if ((int64_t)count != dims.layers * OT_DEC_LINEARS + 2) FAIL(range_error, "decoderCreate: expected 7 tensors per layer, the embedding and the head");
  const ot_tensor **tensors = malloc(sizeof(ot_tensor *) * count);
  if (!tensors) FAIL(error, "out of memory");
  for (uint32_t i = 0; i < count; i++) {
    napi_value e;
    if (napi_get_element(env, argv[1], i, &e) != napi_ok || !(tensors[i] = tensor_of(env, e))) {
      free(tensors);
      FAIL(type_error, "decoderCreate: every tensor must be a native tensor handle");
    }
  }
  float *norms, *biases;
  if (!sized(env, argv[2], (uint64_t)(dims.layers * 2 * dims.d + dims.d), &norms, 0, "norms") ||
      !sized(env, argv[3], (uint64_t)(dims.layers * (dims.heads + 2 * dims.kv_heads) * dims.hd), &biases, 1, "biases")) {
    free(tensors);
    return NULL;
  }
  char err[256];
  ot_decoder *D = ot_decoder_create(&dims, tensors, norms, biases, err, sizeof err);
  free(tensors);
  if (!D) FAIL(range_error, err);
  return wrap_boxed(env, D, free_decoder, &DECODER_TAG);
}

/* kvCreate(decoder, rows, capacity) */
static napi_value kv_create_fn(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  int ok;
  int64_t rows, cap;
  if (!get_args(env, info, 3, argv)) return NULL;
  boxed *d = unbox(env, argv[0], &DECODER_TAG, "decoder", 0, &ok);
  if (!ok || !get_i64(env, argv[1], &rows) || !get_i64(env, argv[2], &cap) || !dims_ok(env, rows, cap)) return NULL;
  ot_kv *C = ot_kv_create(d->p, rows, cap);
  if (!C) FAIL(error, "kvCreate: out of native memory for the key/value cache");
  return wrap_boxed(env, C, free_kv, &KV_TAG);
}

/* kvLoad(kv, layer, k, v, len): positions 0..len-1 of a layer, k and v [rows, kvHeads, len, hd]. */
static napi_value kv_load_fn(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  int ok;
  int64_t layer, len;
  float *k, *v;
  if (!get_args(env, info, 5, argv)) return NULL;
  boxed *b = unbox(env, argv[0], &KV_TAG, "key/value cache", 0, &ok);
  if (!ok || !get_i64(env, argv[1], &layer) || !get_i64(env, argv[4], &len)) return NULL;
  ot_kv *C = b->p;
  if (len < 1 || len > ot_kv_capacity(C)) FAIL(range_error, "kvLoad: length outside the cache's capacity");
  if (ot_kv_load_rows(C) != ot_kv_rows(C) && len != ot_kv_shared_length(C)) FAIL(range_error, "kvLoad: length is not the shared prompts'");
  int64_t layers, kvh, hd;
  ot_kv_shape(C, &layers, &kvh, &hd);
  if (layer < 0 || layer >= layers) FAIL(range_error, "kvLoad: no such layer");
  const uint64_t need = (uint64_t)(ot_kv_load_rows(C) * kvh * len * hd);
  if (!sized(env, argv[2], need, &k, 0, "k") || !sized(env, argv[3], need, &v, 0, "v")) return NULL;
  ot_kv_load(C, layer, k, v, len);
  return NULL;
}

/* kvShare(kv, rowSource: Int32Array [rows], sources, prefixLength): before any load, rows continue
 * `sources` prompts, whose keys and values are then loaded and held once each. */
static napi_value kv_share_fn(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  int ok;
  int64_t sources, plen;
  int32_t *src;
  size_t ls;
  if (!get_args(env, info, 4, argv)) return NULL;
  boxed *b = unbox(env, argv[0], &KV_TAG, "key/value cache", 0, &ok);
  if (!ok || !get_i64(env, argv[2], &sources) || !get_i64(env, argv[3], &plen)) return NULL;
  ot_kv *C = b->p;
  if (!typed_view(env, argv[1], napi_int32_array, (void **)&src, &ls) || ls != (size_t)ot_kv_rows(C)) FAIL(type_error, "kvShare: rowSource must be an Int32Array of rows");
  const int r = ot_kv_share(C, src, sources, plen);
  if (r == -2) FAIL(error, "kvShare: out of native memory for the shared prompts");
  if (r != 0) FAIL(range_error, "kvShare: a source or the prefix length is out of range, or the cache is already loaded");
  return NULL;
}

/* kvSetMask(kv, mask: Uint8Array [rows·len], len) */
static napi_value kv_set_mask_fn(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  int ok;
  int64_t len;
  uint8_t *mask;
  size_t lm;
  if (!get_args(env, info, 3, argv)) return NULL;
  boxed *b = unbox(env, argv[0], &KV_TAG, "key/value cache", 0, &ok);
  if (!ok || !get_i64(env, argv[2], &len)) return NULL;
  ot_kv *C = b->p;
  if (len < 0 || len > ot_kv_capacity(C)) FAIL(range_error, "kvSetMask: length outside the cache's capacity");
  if (!typed_view(env, argv[1], napi_uint8_array, (void **)&mask, &lm) || lm < (size_t)(ot_kv_rows(C) * len)) FAIL(type_error, "kvSetMask: mask must be a Uint8Array of rows × len");
  ot_kv_set_mask(C, mask, len);
  return NULL;
}

/* kvInfo(kv) -> { rows, capacity, length, bytes, stageSeconds: { qkv, attention, o, gateUp, down, head, lora, elementwise } } */
static napi_value kv_info_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1], result;
  int ok;
  if (!get_args(env, info, 1, argv)) return NULL;
  boxed *b = unbox(env, argv[0], &KV_TAG, "key/value cache", 0, &ok);
  if (!ok) return NULL;
  CHECK(napi_create_object(env, &result));
  napi_set_named_property(env, result, "rows", make_number(env, (double)ot_kv_rows(b->p)));
  napi_set_named_property(env, result, "capacity", make_number(env, (double)ot_kv_capacity(b->p)));
  napi_set_named_property(env, result, "length", make_number(env, (double)ot_kv_length(b->p)));
  napi_set_named_property(env, result, "bytes", make_number(env, (double)ot_kv_bytes(b->p)));
  static const char *const stages[OT_DEC_STAGES] = {"qkv", "attention", "o", "gateUp", "down", "head", "lora", "elementwise"};
  napi_value profile;
  CHECK(napi_create_object(env, &profile));
  const double *secs = ot_kv_stage_seconds(b->p);
  for (int i = 0; i < OT_DEC_STAGES; i++) napi_set_named_property(env, profile, stages[i], make_number(env, secs[i]));
  napi_set_named_property(env, result, "stageSeconds", profile);
  return result;
}

/* loraCreate(decoder, rows, terms: [slot, r, A, B, mask | null][]) */
static napi_value lora_create_fn(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  int ok;
  int64_t rows;
  if (!get_args(env, info, 3, argv)) return NULL;
  boxed *d = unbox(env, argv[0], &DECODER_TAG, "decoder", 0, &ok);
  if (!ok || !get_i64(env, argv[1], &rows) || !dims_ok(env, rows, 1)) return NULL;
  const ot_dec_dims *m = ot_decoder_dims(d->p);
  const int64_t slots = m->layers * OT_DEC_LINEARS + 1;
  bool is_array;
  uint32_t count;
  CHECK(napi_is_array(env, argv[2], &is_array));
  if (!is_array) FAIL(type_error, "loraCreate: terms must be an array");
  CHECK(napi_get_array_length(env, argv[2], &count));
  ot_dec_lora_term *terms = calloc(count ? count : 1, sizeof *terms);
  uint8_t *seen = calloc((size_t)slots, 1);
  const char *bad = NULL;
  if (!terms || !seen) bad = "out of memory";
  for (uint32_t i = 0; i < count && !bad; i++) {
    napi_value e, f[5];
    bool arr = false;
    uint32_t len = 0;
    if (napi_get_element(env, argv[2], i, &e) != napi_ok || napi_is_array(env, e, &arr) != napi_ok || !arr || napi_get_array_length(env, e, &len) != napi_ok || len != 5) {
      bad = "loraCreate: each term is [slot, r, A, B, mask | null]";
      break;
    }
    for (uint32_t j = 0; j < 5; j++) napi_get_element(env, e, j, &f[j]);
    ot_dec_lora_term *t = &terms[i];
    if (napi_get_value_int64(env, f[0], &t->slot) != napi_ok || napi_get_value_int64(env, f[1], &t->r) != napi_ok || t->slot < 0 || t->slot >= slots ||
        t->r < 1 || t->r > 65536 || seen[t->slot]) {
      bad = "loraCreate: a term's slot is outside the model, repeated, or its rank is not in [1, 65536]";
      break;
    }
    seen[t->slot] = 1;
    const int head = t->slot == slots - 1, which = (int)(t->slot % OT_DEC_LINEARS);
    const int64_t in = head ? m->d : which == OT_DEC_O ? m->heads * m->hd : which == OT_DEC_DOWN ? m->inter : m->d;
    const int64_t out = head ? m->vocab : which == OT_DEC_Q ? m->heads * m->hd : which == OT_DEC_K || which == OT_DEC_V ? m->kv_heads * m->hd
                                      : which == OT_DEC_GATE || which == OT_DEC_UP ? m->inter : m->d;
    size_t la, lb, lm = 0;
    float *mask = NULL;
    if (!typed_view(env, f[2], napi_float32_array, (void **)&t->A, &la) || !typed_view(env, f[3], napi_float32_array, (void **)&t->B, &lb) ||
        (!is_null(env, f[4]) && !typed_view(env, f[4], napi_float32_array, (void **)&mask, &lm)) || la < (size_t)(in * t->r) ||
        lb < (size_t)(t->r * out) || (mask && lm < (size_t)(rows * t->r))) {
      bad = "loraCreate: a term's A, B or mask is not a Float32Array of its size";
      break;
    }
    t->mask = mask;
  }
  ot_dec_lora *L = bad ? NULL : ot_dec_lora_create(d->p, rows, terms, count);
  free(terms);
  free(seen);
  if (bad) FAIL(range_error, bad);
  if (!L) FAIL(error, "loraCreate: out of native memory");
  return wrap_boxed(env, L, free_lora, &LORA_TAG);
}

/* kvSetActive(kv, rows: Int32Array): the rows later steps compute (ascending). */
static napi_value kv_set_active_fn(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  int ok;
  int32_t *rows;
  size_t n;
  if (!get_args(env, info, 2, argv)) return NULL;
  boxed *b = unbox(env, argv[0], &KV_TAG, "key/value cache", 0, &ok);
  if (!ok) return NULL;
  if (!typed_view(env, argv[1], napi_int32_array, (void **)&rows, &n)) FAIL(type_error, "kvSetActive: rows must be an Int32Array");
  if (ot_kv_set_active(b->p, rows, (int64_t)n) != 0) FAIL(range_error, "kvSetActive: rows must be ascending rows of the cache, at least one");
  return NULL;
}

/* decodeStep(decoder, kv, lora | null, tokens: Int32Array [active rows], cos, sin [active rows·hd], logits [active rows·vocab]) */
static napi_value decode_step_fn(napi_env env, napi_callback_info info) {
  napi_value argv[7];
  int ok;
  if (!get_args(env, info, 7, argv)) return NULL;
  boxed *d = unbox(env, argv[0], &DECODER_TAG, "decoder", 0, &ok);
  if (!ok) return NULL;
  boxed *c = unbox(env, argv[1], &KV_TAG, "key/value cache", 0, &ok);
  if (!ok) return NULL;
  boxed *l = unbox(env, argv[2], &LORA_TAG, "LoRA set", 1, &ok);
  if (!ok) return NULL;
  const ot_dec_dims *m = ot_decoder_dims(d->p);
  const int64_t rows = ot_kv_active_rows(c->p);
  int32_t *tokens;
  size_t lt;
  float *cs, *sn, *logits;
  if (!typed_view(env, argv[3], napi_int32_array, (void **)&tokens, &lt) || lt < (size_t)rows) FAIL(type_error, "decodeStep: tokens must be an Int32Array of rows ids");
  if (!sized(env, argv[4], (uint64_t)(rows * m->hd), &cs, 0, "cos") || !sized(env, argv[5], (uint64_t)(rows * m->hd), &sn, 0, "sin") ||
      !sized(env, argv[6], (uint64_t)(rows * m->vocab), &logits, 0, "logits")) {
    return NULL;
  }
  char err[256];
  if (ot_decode_step(d->p, c->p, l ? l->p : NULL, tokens, cs, sn, logits, err, sizeof err) != 0) FAIL(error, err);
  return NULL;
}

/* release(handle): frees a decoder, cache or LoRA set now (later use throws). */
static napi_value release_fn(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (!get_args(env, info, 1, argv)) return NULL;
  const napi_type_tag *tags[] = {&DECODER_TAG, &KV_TAG, &LORA_TAG};
  for (int i = 0; i < 3; i++) {
    bool tagged = false;
    void *p = NULL;
    if (napi_check_object_type_tag(env, argv[0], tags[i], &tagged) == napi_ok && tagged && napi_get_value_external(env, argv[0], &p) == napi_ok) {
      boxed *b = p;
      if (b->p) b->free(b->p);
      b->p = NULL;
      return NULL;
    }
  }
  FAIL(type_error, "release: expected a decoder, cache or LoRA set handle");
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"info", NULL, info_fn, NULL, NULL, NULL, napi_default, NULL},
      {"setThreads", NULL, set_threads_fn, NULL, NULL, NULL, napi_default, NULL},
      {"gemm", NULL, gemm_fn, NULL, NULL, NULL, napi_default, NULL},
      {"gemmAdd", NULL, gemm_add_fn, NULL, NULL, NULL, napi_default, NULL},
      {"tensorCopy", NULL, tensor_copy_fn, NULL, NULL, NULL, napi_default, NULL},
      {"mapFile", NULL, map_file_fn, NULL, NULL, NULL, napi_default, NULL},
      {"tensorView", NULL, tensor_view_fn, NULL, NULL, NULL, napi_default, NULL},
      {"tensorFree", NULL, tensor_free_fn, NULL, NULL, NULL, napi_default, NULL},
      {"tensorRead", NULL, tensor_read_fn, NULL, NULL, NULL, napi_default, NULL},
      {"gatherRows", NULL, gather_rows_fn, NULL, NULL, NULL, napi_default, NULL},
      {"tokenScores", NULL, token_scores_fn, NULL, NULL, NULL, napi_default, NULL},
      {"tokenScoresGrad", NULL, token_scores_grad_fn, NULL, NULL, NULL, napi_default, NULL},
      {"tokenScoresGradEw", NULL, token_scores_grad_ew_fn, NULL, NULL, NULL, napi_default, NULL},
      {"rmsNorm", NULL, rms_norm_fn, NULL, NULL, NULL, napi_default, NULL},
      {"rmsNormGrad", NULL, rms_norm_grad_fn, NULL, NULL, NULL, napi_default, NULL},
      {"swiglu", NULL, swiglu_fn, NULL, NULL, NULL, napi_default, NULL},
      {"swigluGrad", NULL, swiglu_grad_fn, NULL, NULL, NULL, napi_default, NULL},
      {"rope", NULL, rope_fn, NULL, NULL, NULL, napi_default, NULL},
      {"softmaxRows", NULL, softmax_rows_fn, NULL, NULL, NULL, napi_default, NULL},
      {"softmaxGrad", NULL, softmax_grad_fn, NULL, NULL, NULL, napi_default, NULL},
      {"sampleRows", NULL, sample_rows_fn, NULL, NULL, NULL, napi_default, NULL},
      {"adamw", NULL, adamw_fn, NULL, NULL, NULL, napi_default, NULL},
      {"machineLimits", NULL, machine_limits_fn, NULL, NULL, NULL, napi_default, NULL},
      {"memory", NULL, memory_fn, NULL, NULL, NULL, napi_default, NULL},
      {"cudaOpen", NULL, cuda_open_fn, NULL, NULL, NULL, napi_default, NULL},
      {"tensorToDevice", NULL, tensor_to_device_fn, NULL, NULL, NULL, napi_default, NULL},
      {"cudaMinWork", NULL, cuda_min_work_fn, NULL, NULL, NULL, napi_default, NULL},
      {"decoderCreate", NULL, decoder_create_fn, NULL, NULL, NULL, napi_default, NULL},
      {"kvCreate", NULL, kv_create_fn, NULL, NULL, NULL, napi_default, NULL},
      {"kvLoad", NULL, kv_load_fn, NULL, NULL, NULL, napi_default, NULL},
      {"kvShare", NULL, kv_share_fn, NULL, NULL, NULL, napi_default, NULL},
      {"kvSetActive", NULL, kv_set_active_fn, NULL, NULL, NULL, napi_default, NULL},
      {"kvSetMask", NULL, kv_set_mask_fn, NULL, NULL, NULL, napi_default, NULL},
      {"kvInfo", NULL, kv_info_fn, NULL, NULL, NULL, napi_default, NULL},
      {"loraCreate", NULL, lora_create_fn, NULL, NULL, NULL, napi_default, NULL},
      {"decodeStep", NULL, decode_step_fn, NULL, NULL, NULL, napi_default, NULL},
      {"release", NULL, release_fn, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
