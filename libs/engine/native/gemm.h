/*
 * The engine's own matrix product, so that speed never depends on a library the host may lack.
 *
 *   C[m×n] = alpha · op(A) · op(B) + beta · C        (all row-major)
 *
 * A is float32 (activations or gradients, usually views of the wasm heap). B is float32, bfloat16 or
 * float16 (weights kept natively, often memory-mapped straight from a safetensors file); 16-bit values
 * are widened to float32 inside the kernel, so the arithmetic is float32 throughout and a bf16 weight
 * gives exactly the product of its float32 value.
 *
 * transA: A is stored k×m (lda ≥ m) instead of m×k (lda ≥ k).
 * transB: B is stored n×k (ldb ≥ k), the layout of a Hugging Face linear weight `[out, in]`, instead
 *         of k×n (ldb ≥ n).
 * beta == 0 means C is write-only (never read, so it may hold NaN garbage). k == 0 or alpha == 0 make
 * C = beta·C without reading A or B; m == 0 or n == 0 do nothing.
 *
 * Work is spread over the pool's threads (ot_set_threads). Every function is safe to call from one
 * thread at a time (the engine calls from Node's main thread).
 */
#ifndef OT_GEMM_H
#define OT_GEMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { OT_F32 = 0, OT_BF16 = 1, OT_F16 = 2 } ot_dtype;

void ot_gemm(int transA, int transB, int64_t m, int64_t n, int64_t k, float alpha, const float *A, int64_t lda,
             const void *B, ot_dtype btype, int64_t ldb, float beta, float *C, int64_t ldc);

/* ot_gemm on the calling thread only, never touching the pool: for use inside a pool item of thread
 * `thread` (0 ≤ thread < the pool's threads; its packing buffers are used). */
void ot_gemm_serial(int thread, int transA, int transB, int64_t m, int64_t n, int64_t k, float alpha, const float *A, int64_t lda, const void *B,
                    ot_dtype btype, int64_t ldb, float beta, float *C, int64_t ldc);

/* C[i] = op(A[i]) · op(B[i]) for i < batch, the operands and outputs sa, sb, sc elements apart (0
 * broadcasts an operand), alpha 1, beta 0: whole products go to the pool's threads when they share out
 * evenly, else each runs on all threads in turn. */
void ot_gemm_batch(int transA, int transB, int64_t batch, int64_t m, int64_t n, int64_t k, const float *A, int64_t sa, int64_t lda, const void *B,
                   ot_dtype btype, int64_t sb, int64_t ldb, float *C, int64_t sc, int64_t ldc);

/* Threads used by ot_gemm (1 = the calling thread only; the default). Idle threads sleep; they never spin
 * for long. Products below about a million multiply-adds always run on the calling thread. */
void ot_set_threads(int threads);
int ot_get_threads(void);

/* Which microkernel runs on this CPU: "avx512", "avx2" or "generic". */
const char *ot_gemm_kernel(void);

/* Forces a microkernel ("avx512", "avx2", "generic"; NULL: back to the best this CPU runs), for tests
 * and benchmarks. Returns 0, or -1 (nothing changed) if the name is unknown or the CPU lacks it. */
int ot_gemm_set_kernel(const char *name);

#ifdef __cplusplus
}
#endif

#endif
