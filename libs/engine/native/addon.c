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
  const size_t eb = ot_dtype_bytes(b.dtype);
  for (int64_t i = 0; i < batch; i++) {
    ot_gemm(ta, tb, m, n, k, 1.0f, a + i * sa, ta ? m : k, (const char *)b.data + (size_t)(i * sb) * eb, b.dtype, tb ? k : n, 0.0f,
            c + i * m * n, n);
  }
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
    if (o->targets[i] < 0 || o->targets[i] >= o->vocab) {
      napi_throw_range_error(env, CODE, "token scores: a target is outside the vocabulary");
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
    if (targets[i] < 0 || targets[i] >= vocab) FAIL(range_error, "token scores: a target is outside the vocabulary");
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

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"info", NULL, info_fn, NULL, NULL, NULL, napi_default, NULL},
      {"setThreads", NULL, set_threads_fn, NULL, NULL, NULL, napi_default, NULL},
      {"gemm", NULL, gemm_fn, NULL, NULL, NULL, napi_default, NULL},
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
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
