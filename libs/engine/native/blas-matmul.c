/*
 * Batched single-precision matrix products through the host's OpenBLAS, for the engine's wasm backend.
 *
 * The wasm backend keeps tensors in the WebAssembly heap; JavaScript can view that heap as a
 * Float32Array, and N-API hands this addon the same memory without a copy. OpenBLAS is opened with
 * dlopen at run time rather than linked, so the addon builds with nothing but a C compiler and the
 * Node headers, and a host without OpenBLAS simply reports it unavailable (the engine then keeps its
 * XNNPACK path). See libs/engine/src/kernels/native-blas.ts for the JavaScript side.
 */
#include <dlfcn.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cblas enums, as in cblas.h (not included: the header need not be installed). */
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c, int ldc);
typedef void (*set_threads_fn)(int);
typedef int (*get_threads_fn)(void);
typedef char *(*get_config_fn)(void);

static sgemm_fn sgemm = NULL;
static set_threads_fn set_threads = NULL;
static get_threads_fn get_threads = NULL;
static get_config_fn get_config = NULL;
static char loaded_path[512] = "";

#define CHECK(call)                                                                                                \
  do {                                                                                                             \
    if ((call) != napi_ok) {                                                                                       \
      napi_throw_error(env, "OT_ENGINE_NATIVE", "N-API call failed: " #call);                                      \
      return NULL;                                                                                                 \
    }                                                                                                              \
  } while (0)

static napi_value make_string(napi_env env, const char *s) {
  napi_value v;
  napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
  return v;
}

/* open(paths: string[], threads: number) -> { ok, path?, threads?, config?, error? } */
static napi_value open_blas(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], result;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  CHECK(napi_create_object(env, &result));
  int32_t threads = 0;
  if (argc > 1) napi_get_value_int32(env, argv[1], &threads);
  char errors[2048] = "";
  if (!sgemm) {
    /* Before libgomp starts (it reads this once). Its default lets idle threads spin for a while after
     * every parallel region; with another busy process on the same cores a spinning thread takes the
     * core the others need, and a training step measured 3-4x slower (sampling 20x). Sleeping idle
     * threads cost little when the cores are free. An explicit setting from the user wins. */
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    uint32_t count = 0;
    if (argc > 0) napi_get_array_length(env, argv[0], &count);
    for (uint32_t i = 0; i < count && !sgemm; i++) {
      napi_value item;
      char path[512];
      size_t len = 0;
      if (napi_get_element(env, argv[0], i, &item) != napi_ok) continue;
      if (napi_get_value_string_utf8(env, item, path, sizeof path, &len) != napi_ok) continue;
      void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        const char *e = dlerror();
        size_t used = strlen(errors);
        snprintf(errors + used, sizeof errors - used, "%s%s", used ? "; " : "", e ? e : path);
        continue;
      }
      sgemm_fn f = (sgemm_fn)dlsym(h, "cblas_sgemm");
      if (!f) {
        size_t used = strlen(errors);
        snprintf(errors + used, sizeof errors - used, "%s%s: no cblas_sgemm", used ? "; " : "", path);
        dlclose(h);
        continue;
      }
      sgemm = f;
      set_threads = (set_threads_fn)dlsym(h, "openblas_set_num_threads");
      get_threads = (get_threads_fn)dlsym(h, "openblas_get_num_threads");
      get_config = (get_config_fn)dlsym(h, "openblas_get_config");
      snprintf(loaded_path, sizeof loaded_path, "%s", path);
    }
  }
  napi_value flag;
  napi_get_boolean(env, sgemm != NULL, &flag);
  napi_set_named_property(env, result, "ok", flag);
  if (!sgemm) {
    napi_set_named_property(env, result, "error", make_string(env, errors[0] ? errors : "no library path given"));
    return result;
  }
  if (threads > 0 && set_threads) set_threads(threads);
  napi_set_named_property(env, result, "path", make_string(env, loaded_path));
  if (get_threads) {
    napi_value n;
    napi_create_int32(env, get_threads(), &n);
    napi_set_named_property(env, result, "threads", n);
  }
  if (get_config) napi_set_named_property(env, result, "config", make_string(env, get_config()));
  return result;
}

static int float_view(napi_env env, napi_value v, float **data, size_t *length) {
  napi_typedarray_type type;
  void *ptr;
  if (napi_get_typedarray_info(env, v, &type, length, &ptr, NULL, NULL) != napi_ok || type != napi_float32_array) {
    return 0;
  }
  *data = (float *)ptr;
  return 1;
}

/*
 * gemm(transA, transB, batch, m, n, k, A, strideA, B, strideB, C): for each i < batch,
 * C[i] (m×n) = op(A[i]) (m×k) · op(B[i]) (k×n), all row-major; a stride of 0 broadcasts that operand.
 * Bounds are checked here, not trusted from the caller: a wrong shape must throw, never scribble on
 * the heap.
 */
static napi_value gemm(napi_env env, napi_callback_info info) {
  size_t argc = 11;
  napi_value argv[11];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc != 11) {
    napi_throw_type_error(env, "OT_ENGINE_NATIVE", "gemm takes 11 arguments");
    return NULL;
  }
  if (!sgemm) {
    napi_throw_error(env, "OT_ENGINE_NATIVE", "OpenBLAS is not open");
    return NULL;
  }
  bool ta, tb;
  int64_t batch, m, n, k, sa, sb;
  CHECK(napi_get_value_bool(env, argv[0], &ta));
  CHECK(napi_get_value_bool(env, argv[1], &tb));
  CHECK(napi_get_value_int64(env, argv[2], &batch));
  CHECK(napi_get_value_int64(env, argv[3], &m));
  CHECK(napi_get_value_int64(env, argv[4], &n));
  CHECK(napi_get_value_int64(env, argv[5], &k));
  CHECK(napi_get_value_int64(env, argv[7], &sa));
  CHECK(napi_get_value_int64(env, argv[9], &sb));
  float *a, *b, *c;
  size_t la, lb, lc;
  if (!float_view(env, argv[6], &a, &la) || !float_view(env, argv[8], &b, &lb) || !float_view(env, argv[10], &c, &lc)) {
    napi_throw_type_error(env, "OT_ENGINE_NATIVE", "A, B and C must be Float32Arrays");
    return NULL;
  }
  const int64_t limit = (int64_t)1 << 31;
  if (batch < 1 || m < 1 || n < 1 || k < 1 || sa < 0 || sb < 0 || m >= limit || n >= limit || k >= limit ||
      (uint64_t)((batch - 1) * sa + m * k) > la || (uint64_t)((batch - 1) * sb + k * n) > lb ||
      (uint64_t)(batch * m * n) > lc) {
    napi_throw_range_error(env, "OT_ENGINE_NATIVE", "gemm: shapes and strides exceed the arrays");
    return NULL;
  }
  const int lda = ta ? (int)m : (int)k;
  const int ldb = tb ? (int)k : (int)n;
  for (int64_t i = 0; i < batch; i++) {
    sgemm(ROW_MAJOR, ta ? TRANS : NO_TRANS, tb ? TRANS : NO_TRANS, (int)m, (int)n, (int)k, 1.0f, a + i * sa, lda,
          b + i * sb, ldb, 0.0f, c + i * m * n, (int)n);
  }
  return NULL;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"open", NULL, open_blas, NULL, NULL, NULL, napi_default, NULL},
      {"gemm", NULL, gemm, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
