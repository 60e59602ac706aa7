/*
 * A whole decoding step of a Llama / Qwen2 model in one native call: one new token per row through every
 * layer (RMSNorm, q/k/v with biases and LoRA terms, rotary positions, attention against a key/value cache
 * held here, o, SwiGLU MLP) and the head, on the pool's threads, with no tensor of the step in the wasm heap
 * and no JavaScript between the stages. The weights are the model's native tensors (frozen: the base
 * under LoRA, or a model that only samples), read in place; LoRA factors are copied in per sampling call.
 *
 * The numerics are those of the TensorFlow.js pass (float32 throughout, bf16/f16 weights widened exactly,
 * masked keys given probability exactly 0); only the order of additions differs.
 */
#ifndef OT_DECODE_H
#define OT_DECODE_H

#include <stdint.h>

#include "tensors.h"

/* The linears of a layer, in the order ot_decoder_create takes them. */
enum { OT_DEC_Q, OT_DEC_K, OT_DEC_V, OT_DEC_O, OT_DEC_GATE, OT_DEC_UP, OT_DEC_DOWN, OT_DEC_LINEARS };

typedef struct ot_decoder ot_decoder;
typedef struct ot_kv ot_kv;
typedef struct ot_dec_lora ot_dec_lora;

typedef struct {
  int64_t layers, d, heads, kv_heads, hd, inter, vocab;
  float eps;
} ot_dec_dims;

/*
 * A decoder over the given tensors (not owned; they must outlive it): per layer the seven linears in
 * OT_DEC_* order, `[out, in]` as Hugging Face stores them, then the embedding and the head `[vocab, d]`.
 * norms: per layer the input and post-attention RMSNorm weights (d each), then the final norm's (copied).
 * biases: per layer q, k, v biases ((heads + 2·kv_heads)·hd), or NULL (copied). NULL with a reason in
 * err when a shape does not match the dims.
 */
ot_decoder *ot_decoder_create(const ot_dec_dims *dims, const ot_tensor *const *tensors, const float *norms, const float *biases, char *err, int errlen);
void ot_decoder_free(ot_decoder *D);
const ot_dec_dims *ot_decoder_dims(const ot_decoder *D);

/* A key/value cache for `rows` sequences of up to `capacity` positions, with its step buffers; NULL when out of memory. */
ot_kv *ot_kv_create(const ot_decoder *D, int64_t rows, int64_t capacity);
void ot_kv_free(ot_kv *C);
int64_t ot_kv_rows(const ot_kv *C);
/*
 * The rows later steps compute (rows: ascending cache rows; all of them at first): a step's tokens,
 * positions and logits are then those rows', in this order, and the rest (rows that finished) are left
 * as they are. 0, or -1 for a list that is empty, unordered or outside the cache.
 */
int ot_kv_set_active(ot_kv *C, const int32_t *rows, int64_t count);
int64_t ot_kv_active_rows(const ot_kv *C);
int64_t ot_kv_capacity(const ot_kv *C);
int64_t ot_kv_length(const ot_kv *C);
/* Layers, key/value heads and head size of its positions. */
void ot_kv_shape(const ot_kv *C, int64_t *layers, int64_t *kv_heads, int64_t *hd);
/* Seconds the steps on this cache spent per stage (a profile by kernel), indexed by OT_DEC_STAGE_*. */
enum {
  OT_DEC_STAGE_QKV,
  OT_DEC_STAGE_ATTENTION,
  OT_DEC_STAGE_O,
  OT_DEC_STAGE_GATE_UP,
  OT_DEC_STAGE_DOWN,
  OT_DEC_STAGE_HEAD,
  OT_DEC_STAGE_LORA,
  OT_DEC_STAGE_ELEMENTWISE,
  OT_DEC_STAGES
};
const double *ot_kv_stage_seconds(const ot_kv *C);
/* Bytes it holds. */
int64_t ot_kv_bytes(const ot_kv *C);
/*
 * Before any load: rows continue `sources` prompts of plen positions, row r prompt row_source[r]; the
 * prompts' keys and values are then loaded (and held) once per prompt. 0, or -1 for arguments out of
 * range or a cache already loaded or shared, -2 when out of memory.
 */
int ot_kv_share(ot_kv *C, const int32_t *row_source, int64_t sources, int64_t plen);
/* Rows ot_kv_load takes: the cache's rows, or its prompts once shared; and the shared prompts' length (0: none). */
int64_t ot_kv_load_rows(const ot_kv *C);
int64_t ot_kv_shared_length(const ot_kv *C);
/* Layer `layer`'s keys and values of positions 0..len-1, each [ot_kv_load_rows, kv_heads, len, hd] (rotary
 * positions applied to keys); with shared prompts len is their plen. */
void ot_kv_load(ot_kv *C, int64_t layer, const float *k, const float *v, int64_t len);
/* Sets the cached length and which positions are real tokens (mask [rows, len], 1 = real). */
void ot_kv_set_mask(ot_kv *C, const uint8_t *mask, int64_t len);

/*
 * LoRA terms for a decoder's linears: slot layer·OT_DEC_LINEARS + linear, or layers·OT_DEC_LINEARS for
 * the head. Each adds ((x·A) ⊙ mask)·B: A [in, r], B [r, out] (scaling folded in), mask [rows, r] or NULL
 * (every row). Terms are copied. NULL when out of memory.
 */
typedef struct {
  int64_t slot, r;
  const float *A, *B, *mask;
} ot_dec_lora_term;
ot_dec_lora *ot_dec_lora_create(const ot_decoder *D, int64_t rows, const ot_dec_lora_term *terms, int64_t count);
void ot_dec_lora_free(ot_dec_lora *L);
int64_t ot_dec_lora_rows(const ot_dec_lora *L);

/*
 * One token per row (tokens [rows]) at the cache's next position, with its rotary tables cos/sin [rows, hd]
 * (the sign of rotate_half folded into sin, as ot_rope takes them): appends every layer's key and value,
 * marks the position real, and writes the next-token logits [rows, vocab]. Returns 0, or -1 with the
 * reason in err (the cache is full; a tensor was freed; out of memory).
 */
int ot_decode_step(const ot_decoder *D, ot_kv *C, const ot_dec_lora *L, const int32_t *tokens, const float *cos, const float *sin, float *logits, char *err,
                   int errlen);

#endif
