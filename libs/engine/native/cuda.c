/* Products on an NVIDIA GPU through cuBLAS, opened at run time: see cuda.h. */
#include "cuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The few CUDA runtime and cuBLAS entry points used, declared here (the headers need not be installed). */
enum { HOST_TO_DEVICE = 1, DEVICE_TO_HOST = 2 };
enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
typedef void *cublas_handle;

static struct {
  int ready;
  int (*get_device_count)(int *);
  int (*set_device)(int);
  int (*malloc_)(void **, size_t);
  int (*free_)(void *);
  int (*memcpy_)(void *, const void *, size_t, int);
  int (*mem_get_info)(size_t *, size_t *);
  int (*get_properties)(void *, int);
  const char *(*error_string)(int);
  int (*create)(cublas_handle *);
  int (*sgemm)(cublas_handle, int, int, int, int, int, const float *, const float *, int, const float *, int, const float *, float *, int);
  cublas_handle handle;
  int device;
  /* Device scratch for the host operands of one product, grown on demand. */
  float *a, *c;
  size_t a_bytes, c_bytes;
  int64_t device_bytes;
} cu;

static void *open_first(const char *const *names, char *err, size_t errlen) {
  for (int i = 0; names[i]; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
  }
  snprintf(err, errlen, "%s not found (%s)", names[0], dlerror());
  return NULL;
}

#define SYM(lib, field, name)                                                                                      \
  do {                                                                                                             \
    *(void **)&cu.field = dlsym(lib, name);                                                                        \
    if (!cu.field) {                                                                                               \
      snprintf(err, errlen, "%s has no %s", #lib, name);                                                           \
      return -1;                                                                                                   \
    }                                                                                                              \
  } while (0)

static const char *cuda_error(int code) {
  return cu.error_string ? cu.error_string(code) : "unknown CUDA error";
}

int ot_cuda_open(int device, char *err, size_t errlen) {
  if (cu.ready) return 0;
  static const char *const runtimes[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so", NULL};
  static const char *const blases[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so", NULL};
  void *rt = open_first(runtimes, err, errlen);
  if (!rt) return -1;
  void *blas = open_first(blases, err, errlen);
  if (!blas) return -1;
  SYM(rt, get_device_count, "cudaGetDeviceCount");
  SYM(rt, set_device, "cudaSetDevice");
  SYM(rt, malloc_, "cudaMalloc");
  SYM(rt, free_, "cudaFree");
  SYM(rt, memcpy_, "cudaMemcpy");
  SYM(rt, mem_get_info, "cudaMemGetInfo");
  SYM(rt, error_string, "cudaGetErrorString");
  *(void **)&cu.get_properties = dlsym(rt, "cudaGetDeviceProperties_v2");
  if (!cu.get_properties) *(void **)&cu.get_properties = dlsym(rt, "cudaGetDeviceProperties");
  SYM(blas, create, "cublasCreate_v2");
  SYM(blas, sgemm, "cublasSgemm_v2");
  int count = 0, rc = cu.get_device_count(&count);
  if (rc != 0 || count == 0) {
    snprintf(err, errlen, "no CUDA device (%s)", rc != 0 ? cuda_error(rc) : "device count 0");
    return -1;
  }
  if (device < 0 || device >= count) {
    snprintf(err, errlen, "CUDA device %d does not exist (%d visible)", device, count);
    return -1;
  }
  if ((rc = cu.set_device(device)) != 0 || (rc = cu.create(&cu.handle)) != 0) {
    snprintf(err, errlen, "cannot start CUDA / cuBLAS on device %d (error %d: %s)", device, rc, cuda_error(rc));
    return -1;
  }
  cu.device = device;
  cu.ready = 1;
  return 0;
}

int ot_cuda_ready(void) { return cu.ready; }

void ot_cuda_describe(char *name, size_t namelen, size_t *free_bytes, size_t *total_bytes) {
  *free_bytes = *total_bytes = 0;
  snprintf(name, namelen, "CUDA device %d", cu.device);
  if (!cu.ready) return;
  cu.mem_get_info(free_bytes, total_bytes);
  /* cudaDeviceProp begins with `char name[256]` in every CUDA version; the rest of its layout varies, so
   * it is read into a buffer larger than any version's struct. */
  if (cu.get_properties) {
    char *prop = calloc(1, 16384);
    if (prop && cu.get_properties(prop, cu.device) == 0) snprintf(name, namelen, "%.255s", prop);
    free(prop);
  }
}

int64_t ot_cuda_device_bytes(void) { return cu.device_bytes; }

static float widen(const uint16_t *src, ot_dtype dtype, int64_t i) {
  uint32_t bits;
  if (dtype == OT_BF16) {
    bits = (uint32_t)src[i] << 16;
  } else { /* IEEE half */
    uint32_t h = src[i], sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0 && man == 0) bits = sign;
    else if (exp == 0) {
      exp = 113;
      while (!(man & 0x400)) {
        man <<= 1;
        exp--;
      }
      bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
    } else if (exp == 31) bits = sign | 0x7f800000u | (man << 13);
    else bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

void *ot_cuda_upload(const void *host, ot_dtype dtype, int64_t numel, char *err, size_t errlen) {
  if (!cu.ready) {
    snprintf(err, errlen, "CUDA is not open");
    return NULL;
  }
  size_t bytes = (size_t)numel * 4;
  void *device = NULL;
  int rc = cu.malloc_(&device, bytes ? bytes : 4);
  if (rc != 0) {
    snprintf(err, errlen, "cudaMalloc of %zu bytes failed: %s", bytes, cuda_error(rc));
    return NULL;
  }
  /* 16-bit weights are widened on the host in slices, so the staging copy stays small. */
  const int64_t slice = 1 << 22;
  float *stage = dtype == OT_F32 ? NULL : malloc((size_t)slice * 4);
  if (dtype != OT_F32 && !stage) {
    cu.free_(device);
    snprintf(err, errlen, "out of host memory while uploading");
    return NULL;
  }
  for (int64_t at = 0; at < numel; at += slice) {
    int64_t count = numel - at < slice ? numel - at : slice;
    const void *src = (const float *)host + at;
    if (stage) {
      for (int64_t i = 0; i < count; i++) stage[i] = widen((const uint16_t *)host, dtype, at + i);
      src = stage;
    }
    if ((rc = cu.memcpy_((float *)device + at, src, (size_t)count * 4, HOST_TO_DEVICE)) != 0) {
      free(stage);
      cu.free_(device);
      snprintf(err, errlen, "cudaMemcpy to the device failed: %s", cuda_error(rc));
      return NULL;
    }
  }
  free(stage);
  cu.device_bytes += (int64_t)bytes;
  return device;
}

void ot_cuda_free(void *device) {
  if (!device || !cu.ready) return;
  cu.free_(device);
}

static int grow(float **buf, size_t *have, size_t need) {
  if (need <= *have) return 0;
  if (*buf) cu.free_(*buf);
  *buf = NULL;
  *have = 0;
  if (cu.malloc_((void **)buf, need) != 0) return -1;
  *have = need;
  return 0;
}

int ot_cuda_gemm(int transB, int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B_device, int64_t ldb, float beta,
                 float *C, int64_t ldc) {
  const int64_t limit = (int64_t)1 << 31;
  if (!cu.ready || m >= limit || n >= limit || k >= limit || lda != k || ldc != n) return -1;
  size_t a_bytes = (size_t)(m * k) * 4, c_bytes = (size_t)(m * n) * 4;
  if (grow(&cu.a, &cu.a_bytes, a_bytes) != 0 || grow(&cu.c, &cu.c_bytes, c_bytes) != 0) return -1;
  if (cu.memcpy_(cu.a, A, a_bytes, HOST_TO_DEVICE) != 0) return -1;
  if (beta != 0.0f && cu.memcpy_(cu.c, C, c_bytes, HOST_TO_DEVICE) != 0) return -1;
  /* Row-major C = A·op(B) is column-major Cᵀ = op(B)ᵀ·Aᵀ, and a row-major matrix read column-major is its
   * transpose: B stored n×k (transB) is then op N → needs T; stored k×n is already op(B)ᵀ. */
  const float alpha = 1.0f;
  if (cu.sgemm(cu.handle, transB ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, B_device, (int)ldb, cu.a, (int)k, &beta, cu.c,
               (int)n) != 0) {
    return -1;
  }
  /* A synchronous copy back: it waits for the product. */
  return cu.memcpy_(C, cu.c, c_bytes, DEVICE_TO_HOST) == 0 ? 0 : -1;
}
