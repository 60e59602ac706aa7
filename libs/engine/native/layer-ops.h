/*
 * The elementwise and row-wise stages of a decoder layer, forward and backward, on the pool's threads
 * (they ran single-threaded in wasm before): RMSNorm, rotary positions, SwiGLU's silu(g)·u, the
 * attention softmax with its additive mask, and the AdamW update. Every array is row-major float32
 * (views of the wasm heap); the caller (addon.c) checks sizes. Rows are split across threads; a
 * reduction over rows (RMSNorm's weight gradient) is summed per thread and then added in a fixed order,
 * so results do not depend on the thread count's timing (only on the count itself, through that order).
 */
#ifndef OT_LAYER_OPS_H
#define OT_LAYER_OPS_H

#include <stdint.h>

/* y[r] = w · x[r] / sqrt(mean(x[r]²) + eps), rows r < n of width d. */
void ot_rms_norm(const float *x, const float *w, int64_t n, int64_t d, float eps, float *y);

/* With s = 1/sqrt(mean(x²) + eps) and g = dy·w: dx = s·g − x·s³·mean(g·x); dw = Σ_rows dy·x·s. dw may be
 * NULL (a frozen norm). Returns -1 when out of memory for the per-thread sums. */
int ot_rms_norm_grad(const float *x, const float *w, const float *dy, int64_t n, int64_t d, float eps, float *dx, float *dw);

/* y = silu(g)·u elementwise over count values. */
void ot_swiglu(const float *g, const float *u, int64_t count, float *y);

/* dg = dy·u·σ(g)·(1 + g·(1 − σ(g))), du = dy·g·σ(g). */
void ot_swiglu_grad(const float *g, const float *u, const float *dy, int64_t count, float *dg, float *du);

/*
 * Rotary positions on x `[rows, heads, hd]` with per-row tables cos, sin `[rows, hd]` (the sign of
 * rotate_half folded into sin: negative on the first half): y = x·cos + swap(x)·sin, swap exchanging the
 * halves; with `transpose`, the gradient form dy·cos + swap(dy·sin).
 */
void ot_rope(const float *x, const float *cos, const float *sin, int64_t rows, int64_t heads, int64_t hd, int transpose, float *y);

/* In place over `rows` rows of width s: x = softmax(x + bias). Row r adds bias row (r / group)·period +
 * r % period, group a multiple of period (attention: scores [B, heads, T, S] against a mask [B, T, S] take
 * group = heads·T, period = T);
 * bias may be NULL. */
void ot_softmax_rows(float *x, const float *bias, int64_t rows, int64_t s, int64_t group, int64_t period);

/* dx = y·(dy − Σ_row dy·y), the softmax's input gradient from its output y, rows of width s. */
void ot_softmax_grad(const float *y, const float *dy, int64_t rows, int64_t s, float *dx);

/* One AdamW step on count values, as torch.optim.AdamW: p ← p·decay; m ← b1·m + (1−b1)·g; v ← b2·v + (1−b2)·g²;
 * p ← p − step·m / (√v / sqrt_bc2 + eps), with decay = 1 − lr·wd, step = lr / (1 − b1ᵗ), g scaled by `gscale`
 * (clipping) first. */
void ot_adamw(float *p, float *m, float *v, const float *g, int64_t count, float gscale, float b1, float b2, float eps, float decay, float step,
              float sqrt_bc2);

/*
 * One token per row of logits `[rows, all]`, drawn among the first v ids from softmax(z·inv_t) by inverse
 * CDF at u[r] ∈ [0, 1) (inv_t = 0: the argmax, greedy); logp[r] = log softmax(z)[token] over all ids at
 * temperature 1, slogp[r] = the log-prob under the distribution drawn from (0 when greedy). Rows run in
 * parallel. -1 when v is outside [1, all] or above 262,144.
 */
int ot_sample_rows(const float *logits, int64_t rows, int64_t all, int64_t v, float inv_t, const double *u, int32_t *token, float *logp, float *slogp);

#endif
