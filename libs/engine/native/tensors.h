/*
 * Tensors the engine keeps outside the WebAssembly heap: frozen weights (the base model under LoRA, a
 * reference policy, a model that only samples), either copied into malloc'd memory or memory-mapped
 * straight from a safetensors file, in float32, bfloat16 or float16. The wasm heap (4 GiB at most,
 * shared by every tensor there) then holds only activations, trainable weights and optimizer state.
 */
#ifndef OT_TENSORS_H
#define OT_TENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "gemm.h"

/* A read-only, private mapping of a whole file, shared by the tensors that view it. */
typedef struct ot_mapping {
  int refs;
  void *base;
  size_t size;
} ot_mapping;

typedef struct ot_tensor {
  const void *data;
  ot_dtype dtype;
  int64_t numel;
  /* Non-NULL when the data lies in a mapping (not owned); else the data was malloc'd here. */
  ot_mapping *mapping;
  int released;
  /* A float32 copy on the GPU (cuda.h), or NULL. */
  void *device;
} ot_tensor;

size_t ot_dtype_bytes(ot_dtype dtype);

/* Copies `numel` elements of `dtype` from `src`; NULL when out of memory. */
ot_tensor *ot_tensor_copy(const void *src, ot_dtype dtype, int64_t numel);

/* Maps `path` (whole file, read-only, private); NULL with errno set on failure. refs starts at 1. */
ot_mapping *ot_mapping_open(const char *path);
void ot_mapping_release(ot_mapping *m);

/* A tensor viewing `numel` elements at byte `offset` of a mapping (takes a reference); NULL when the range
 * is outside the file. A misaligned range is copied into owned memory instead. */
ot_tensor *ot_tensor_view(ot_mapping *m, size_t offset, ot_dtype dtype, int64_t numel);

/* Frees the data (or drops the mapping reference). The struct stays valid with numel 0 until ot_tensor_free. */
void ot_tensor_release(ot_tensor *t);
void ot_tensor_free(ot_tensor *t);

/* Element i..i+count widened to float32 into out. */
void ot_tensor_read(const ot_tensor *t, int64_t start, int64_t count, float *out);

/* out[i, :] = row ids[i] of t viewed as [numel / row_len, row_len], widened to float32. Ids must be checked
 * by the caller (0 <= id < rows). */
void ot_tensor_gather_rows(const ot_tensor *t, int64_t row_len, const int32_t *ids, int64_t n, float *out);

/* Gives the tensor a float32 device copy (see cuda.h); 0, or -1 with the reason in err. */
int ot_tensor_to_device(ot_tensor *t, char *err, size_t errlen);

/*
 * C[m×n] = A·op(B) + beta·C with B = the tensor's elements from `offset` on (row-major, `n×k` when transB
 * else `k×n`, leading dimension ldb): on the GPU when the tensor has a device copy and the product is
 * large enough to gain from it, else with ot_gemm.
 */
void ot_tensor_gemm(int transB, int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const ot_tensor *B, int64_t offset, int64_t ldb, float beta,
                    float *C, int64_t ldc);

/* The smallest product (multiply-adds) sent to the GPU; default 4M. The GPU check lowers it to 1 so that
 * tiny reference models exercise the GPU path too. */
void ot_tensor_set_gpu_min_work(int64_t work);

/* Bytes held: malloc'd by tensors, and mapped by live mappings. */
int64_t ot_tensor_allocated_bytes(void);
int64_t ot_tensor_mapped_bytes(void);

#endif
