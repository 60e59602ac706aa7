/*
 * Matrix products on an NVIDIA GPU through cuBLAS, for weights the engine keeps natively.
 *
 * CUDA is opened with dlopen at run time (libcudart and libcublas of CUDA 13,
 * 12 or 11, whichever the host has), so the addon builds and runs without it and a host without a GPU
 * just reports why. A native weight can be given a device copy (widened to float32 once, at upload);
 * a product with such a weight then runs on the GPU: the activations are copied to the device, cuBLAS
 * multiplies in float32 (no TF32, so results match the CPU's to float32 rounding), and the product is
 * copied back into the wasm heap. Everything else (attention, norms, the optimizer) stays on the CPU.
 */
#ifndef OT_CUDA_H
#define OT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "gemm.h"

/* Opens CUDA and cuBLAS on device `device` (after CUDA_VISIBLE_DEVICES). Returns 0, or -1 with the reason
 * in err. Idempotent. */
int ot_cuda_open(int device, char *err, size_t errlen);
int ot_cuda_ready(void);

/* The device's name and free/total memory, after ot_cuda_open. */
void ot_cuda_describe(char *name, size_t namelen, size_t *free_bytes, size_t *total_bytes);

/* A float32 device copy of `numel` host elements of `dtype`; NULL with the reason in err on failure. */
void *ot_cuda_upload(const void *host, ot_dtype dtype, int64_t numel, char *err, size_t errlen);
void ot_cuda_free(void *device);

/* Bytes held by device copies. */
int64_t ot_cuda_device_bytes(void);

/*
 * C[m×n] = A·op(B) + beta·C, row-major, with A and C on the host and B (float32, `n×k` when transB else
 * `k×n`, leading dimension ldb) on the device. Returns 0, or -1 (the caller falls back to the CPU).
 */
int ot_cuda_gemm(int transB, int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B_device, int64_t ldb, float beta,
                 float *C, int64_t ldc);

#endif
