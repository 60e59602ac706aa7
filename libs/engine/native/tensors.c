/* Native tensors: see tensors.h. */
#include "tensors.h"

#include "cuda.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Counters for the engine's memory report; the engine calls from one thread. */
static int64_t allocated_bytes = 0;
static int64_t mapped_bytes = 0;

size_t ot_dtype_bytes(ot_dtype dtype) { return dtype == OT_F32 ? 4 : 2; }

int64_t ot_tensor_allocated_bytes(void) { return allocated_bytes; }
int64_t ot_tensor_mapped_bytes(void) { return mapped_bytes; }

ot_tensor *ot_tensor_copy(const void *src, ot_dtype dtype, int64_t numel) {
  size_t bytes = (size_t)numel * ot_dtype_bytes(dtype);
  ot_tensor *t = calloc(1, sizeof *t);
  /* 64-byte alignment: the kernels read weights with full-width vector loads. */
  void *data = NULL;
  if (!t || posix_memalign(&data, 64, bytes ? bytes : 64) != 0) {
    free(t);
    return NULL;
  }
  if (bytes) memcpy(data, src, bytes);
  t->data = data;
  t->dtype = dtype;
  t->numel = numel;
  allocated_bytes += (int64_t)bytes;
  return t;
}

ot_mapping *ot_mapping_open(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    int e = errno;
    close(fd);
    errno = e ? e : EINVAL;
    return NULL;
  }
  /* Private and read-only: pages come from the page cache on first touch and are shared with any other
   * process that maps the same file (two jobs on one base model hold it once). */
  void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd);
  if (base == MAP_FAILED) {
    errno = e;
    return NULL;
  }
  ot_mapping *m = calloc(1, sizeof *m);
  if (!m) {
    munmap(base, (size_t)st.st_size);
    errno = ENOMEM;
    return NULL;
  }
  m->refs = 1;
  m->base = base;
  m->size = (size_t)st.st_size;
  mapped_bytes += (int64_t)m->size;
  return m;
}

void ot_mapping_release(ot_mapping *m) {
  if (!m || --m->refs > 0) return;
  munmap(m->base, m->size);
  mapped_bytes -= (int64_t)m->size;
  free(m);
}

ot_tensor *ot_tensor_view(ot_mapping *m, size_t offset, ot_dtype dtype, int64_t numel) {
  size_t bytes = (size_t)numel * ot_dtype_bytes(dtype);
  if (numel < 0 || offset > m->size || bytes > m->size - offset) return NULL;
  const char *src = (const char *)m->base + offset;
  /* safetensors does not promise alignment; a misaligned tensor is copied (rare: writers pad headers). */
  if ((uintptr_t)src % ot_dtype_bytes(dtype) != 0) return ot_tensor_copy(src, dtype, numel);
  ot_tensor *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->data = src;
  t->dtype = dtype;
  t->numel = numel;
  t->mapping = m;
  m->refs++;
  /* The weights are read front to back on every pass: ask the kernel to read ahead. */
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t start = (uintptr_t)src & ~(page - 1);
  madvise((void *)start, bytes + ((uintptr_t)src - start), MADV_WILLNEED);
  return t;
}

void ot_tensor_release(ot_tensor *t) {
  if (!t || t->released) return;
  t->released = 1;
  ot_cuda_free(t->device);
  t->device = NULL;
  if (t->mapping) {
    ot_mapping_release(t->mapping);
  } else {
    allocated_bytes -= (int64_t)((size_t)t->numel * ot_dtype_bytes(t->dtype));
    free((void *)t->data);
  }
  t->data = NULL;
  t->numel = 0;
  t->mapping = NULL;
}

void ot_tensor_free(ot_tensor *t) {
  if (!t) return;
  ot_tensor_release(t);
  free(t);
}

static float bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { /* subnormal: normalise */
      exp = 127 - 15 + 1;
      while (!(man & 0x400)) {
        man <<= 1;
        exp--;
      }
      bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

void ot_tensor_read(const ot_tensor *t, int64_t start, int64_t count, float *out) {
  if (t->dtype == OT_F32) {
    memcpy(out, (const float *)t->data + start, (size_t)count * 4);
    return;
  }
  const uint16_t *src = (const uint16_t *)t->data + start;
  if (t->dtype == OT_BF16)
    for (int64_t i = 0; i < count; i++) out[i] = bf16_to_f32(src[i]);
  else
    for (int64_t i = 0; i < count; i++) out[i] = f16_to_f32(src[i]);
}

void ot_tensor_gather_rows(const ot_tensor *t, int64_t row_len, const int32_t *ids, int64_t n, float *out) {
  for (int64_t i = 0; i < n; i++) ot_tensor_read(t, (int64_t)ids[i] * row_len, row_len, out + i * row_len);
}

int ot_tensor_to_device(ot_tensor *t, char *err, size_t errlen) {
  if (t->device) return 0;
  t->device = ot_cuda_upload(t->data, t->dtype, t->numel, err, errlen);
  return t->device ? 0 : -1;
}

/* Below this many multiply-adds the copies to and from the GPU cost more than the CPU's product. */
static int64_t gpu_min_work = (int64_t)1 << 22;

void ot_tensor_set_gpu_min_work(int64_t work) { gpu_min_work = work; }

void ot_tensor_gemm(int transB, int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const ot_tensor *B, int64_t offset, int64_t ldb, float beta,
                    float *C, int64_t ldc) {
  if (B->device && m * n * k >= gpu_min_work &&
      ot_cuda_gemm(transB, m, n, k, A, lda, (const float *)B->device + offset, ldb, beta, C, ldc) == 0) {
    return;
  }
  const char *b = (const char *)B->data + (size_t)offset * ot_dtype_bytes(B->dtype);
  ot_gemm(0, transB, m, n, k, 1.0f, A, lda, b, B->dtype, ldb, beta, C, ldc);
}
