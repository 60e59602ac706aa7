/*
 * The language-model head fused with its log-softmax: per-token log-probs (and entropies) of a batch
 * without ever holding the `[n, vocab]` logits. At Qwen2.5's 151,936-token vocabulary those are 600 KB
 * per token in float32, three copies of them per trained token in a plain graph (logits, log-softmax,
 * its gradient); here one tile of the vocabulary for a chunk of rows at a time lives in a scratch buffer
 * outside the wasm heap (the softmax statistics run online across tiles), and the backward pass
 * recomputes each tile's logits instead of storing them. Rows run in parallel on the addon's pool.
 *
 * h: [n, d] hidden states (float32). W: [vocab, d], the head (or tied embedding): a native tensor of any
 * dtype (on the GPU when it has a device copy), or a float32 array wrapped as one.
 * targets: [n] token ids in [0, vocab), or -1 for a row that is not scored: nothing is computed for it
 * (its log-prob, log-sum-exp, entropy, E_p[W] and gradient are 0), which is how a training pass skips
 * the head for the prompt's positions.
 */
#ifndef OT_TOKEN_SCORES_H
#define OT_TOKEN_SCORES_H

#include <stdint.h>

#include "tensors.h"

/*
 * logp[i] = log softmax(h[i]·Wᵀ)[targets[i]]; lse[i] = logsumexp of the row (kept for the backward
 * pass); entropy[i] = -Σ p log p when entropy is non-NULL. With ew non-NULL ([n, d]), also
 * ew[i] = E_p[W] = Σ_v p_v·W_v, which is all the log-prob's gradient needs (dlogp_i/dh_i = W_target − E_p[W]),
 * so a training pass need not recompute the logits in its backward pass: one more product here instead of
 * two there. Returns 0, or -1 when out of memory.
 */
int ot_token_scores(const float *h, int64_t n, int64_t d, const ot_tensor *W, int64_t vocab, const int32_t *targets, float *logp, float *lse, float *entropy,
                    float *ew);

/* dh[i] = dlogp[i]·(W[targets[i]] − ew[i]): the gradient of Σ dlogp·logp from ot_token_scores' ew (no entropy term). */
void ot_token_scores_grad_ew(int64_t n, int64_t d, const ot_tensor *W, const int32_t *targets, const float *dlogp, const float *ew, float *dh);

/*
 * Backward of L = Σ dlogp[i]·logp[i] + Σ dent[i]·entropy[i] (dent and entropy may be NULL together):
 * dh [n, d] is overwritten with dL/dh; when dW is non-NULL (a float32 [vocab, d] trainable head) dL/dW is
 * added to it. Rows whose coefficients are all zero cost nothing. Returns 0, or -1 when out of memory.
 */
int ot_token_scores_grad(const float *h, int64_t n, int64_t d, const ot_tensor *W, int64_t vocab, const int32_t *targets, const float *lse,
                         const float *entropy, const float *dlogp, const float *dent, float *dh, float *dW);

#endif
