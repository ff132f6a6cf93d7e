/* infer/infer.h: the reference forward pass of the families in arch/.
 *
 * infer/ owns the forward pass model-verify runs on both sides of a conversion: given
 * any reader's lc_model, its family (arch/) and hyperparameters, it computes the logits
 * of a token sequence, and on request the hidden state after every layer. It uses
 * quant/ (dequantization), arch/ (the family tables) and libconvert/ only.
 *
 * What it computes (llama and qwen2, as transformers' LlamaForCausalLM and
 * Qwen2ForCausalLM do in float32):
 *   1. x = token_embd[tokens]                                 x: [n, embd]
 *   2. per layer:  h = rmsnorm(x) * attn_norm
 *                  q, k, v = h Wq^T (+bq), h Wk^T (+bk), h Wv^T (+bv)
 *                  RoPE on q and k at positions 0..n-1 (see below)
 *                  a = softmax(q k^T / sqrt(head_dim) + causal mask) v, grouped-query
 *                  x += a Wo^T
 *                  h = rmsnorm(x) * ffn_norm
 *                  x += (silu(h Wgate^T) * (h Wup^T)) Wdown^T
 *   3. logits = rmsnorm(x) * output_norm  W_out^T      (W_out = token_embd when tied)
 * Every sum is accumulated in float32 (norms and softmax denominators in double).
 * gemma4 (lc_arch.per_layer_attention) runs its own blocks (infer_gemma4.c: per-layer
 * head sizes, KV heads and RoPE, shared-KV layers, per-layer inputs, experts beside the
 * dense FFN).
 *
 * Tensors are found by role and layer through the family's table (lc_arch_find) in the
 * spelling the model uses: GGUF names for a GGUF file, transformers' names for an HF
 * folder or safetensors file, Meta's for a consolidated.pth. The spelling also fixes
 * how Q and K rows are ordered and so how RoPE rotates them: GGUF stores what the family
 * runs with (llama: NORM, adjacent pairs, rows interleaved by the converter; qwen2:
 * NEOX, halves), transformers always stores halves (NEOX), Meta adjacent pairs (NORM).
 * RoPE: theta_i = base^(-2i/head_dim), scaled per hp->rope_scaling: linear (1/factor),
 * yarn (transformers' and llama.cpp's ramp and 0.1 ln(factor) + 1 on cos and sin),
 * llama3 (per-pair factors from a GGUF's rope_freqs tensor when it has one, else the
 * family's rope_freqs hook). When a GGUF has a rope_freqs tensor it is used whatever
 * hp->rope_scaling says, as llama.cpp does; a source's own copy (Meta's rope.freqs, its
 * precomputed frequencies) is ignored.
 *
 * Weights are read through the IR (lc_tensor_read or the zero-copy view) in any plain
 * float dtype or any block type quant/ dequantizes, a few rows at a time, converted to
 * float32 into a per-thread buffer and multiplied against every token's activations;
 * the model is never held in float32. Memory: threads x LC_INFER_ROWS rows of the
 * widest matrix in float32 and in its own dtype, the 1-D tensors (norms, biases) in
 * float32, and per forward call the activations of one layer for n tokens (the keys and
 * values of the layer being run are its KV cache: each call starts at position 0, so no
 * cache outlives a layer): n x (3 embd + q + 2 kv + 2 ff) + n floats, and while a layer
 * attends, per thread 2 n head_dim + 32 n + 64 head_dim floats; the caller holds
 * the logits. A llama-2 7B f16 GGUF (13.5 GB, mapped: its pages are the page cache's, not
 * the heap's) runs 512 tokens in about 95 MB of activations + 8 MB of row buffers on 8
 * threads + 1 MB of norms, and 65 MB of logits. Results do not depend on the thread
 * count. */
#ifndef LC_INFER_INFER_H
#define LC_INFER_INFER_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "arch/arch.h"
#include "libconvert/error.h"
#include "libconvert/model.h"

/* Weight rows converted per job (and per thread buffer). */
#define LC_INFER_ROWS 16

typedef struct lc_infer lc_infer;

typedef struct lc_infer_opts {
    int threads;            /* matmul threads; 0: one per online core, at most 8 */
} lc_infer_opts;

/* Called after layer `layer` (0-based) with the residual stream h [n, embd] (before the
 * final norm), which stays valid until the call returns. A code other than LC_OK stops
 * the forward pass and is returned by it. */
typedef lc_code (*lc_infer_layer_fn)(void *user, uint32_t layer, const float *h, size_t n,
                                     size_t embd, lc_error *err);
typedef struct lc_infer_hook {
    lc_infer_layer_fn fn;
    void *user;
} lc_infer_hook;

/* A tap on the weight products (model-imatrix): called before each product y = x W^T
 * the forward pass computes with a weight matrix of the model, with its input rows
 * x [n, cols], valid until the call returns. The matrix is named by its role and layer
 * in the family's table (the GGUF tensor it is), and for one expert of a stack by the
 * expert: x then holds only the tokens routed to it, one row per token. A fused matrix
 * (phi3's attn_qkv, ffn_up of gate and up rows) is reported once, as the one product
 * llama.cpp computes with it. The final norm's output, the input of the output matrix,
 * is reported as LC_ROLE_OUTPUT by lc_infer_hidden when the model has an output matrix
 * of its own (not when it is tied to the embedding); lc_infer_head reports nothing.
 * layer and expert are UINT32_MAX where they do not apply. A code other than LC_OK
 * stops the forward pass and is returned by it. */
typedef lc_code (*lc_infer_tap_fn)(void *user, lc_role role, uint32_t layer,
                                   uint32_t expert, const float *x, size_t n, size_t cols,
                                   lc_error *err);

/* Sets (fn NULL: removes) the tap of ctx. Without one the forward pass does no extra
 * work. */
void lc_infer_set_tap(lc_infer *ctx, lc_infer_tap_fn fn, void *user);

/* Prepares the forward pass of model m, a model of family `arch` with hyperparameters
 * hp whose tensors are named in `spelling`: lc_arch_read_keys gives arch and hp for a
 * GGUF (LC_SPELL_GGUF), hf/config.h for an HF folder (LC_SPELL_HF). hp->vocab_size 0
 * takes the vocabulary from the embedding's rows; feed_forward_length 0 from ffn_gate's.
 * Every tensor the family needs is found and its shape and dtype checked here; the
 * 1-D tensors are read. m, arch and hp must outlive *out (m is borrowed, not copied).
 * Codes: LC_E_MISMATCH for a missing required tensor or a shape the hyperparameters do
 * not give (where = tensor), LC_E_MALFORMED for impossible hyperparameters or a tensor
 * in a layer past block_count, LC_E_UNSUPPORTED for a dtype that cannot be read as
 * float32 (where = tensor), LC_E_NOMEM, and the tensor source's codes. NULL o: defaults.
 * On failure *out is NULL. */
lc_code lc_infer_open(const lc_model *m, const lc_arch *arch, const lc_hparams *hp,
                      lc_spelling spelling, const lc_infer_opts *o, lc_infer **out,
                      lc_error *err);

/* Runs tokens[0..n) at positions 0..n-1 and writes logits [n, vocab] (row t: the logits
 * after token t). hook may be NULL. LC_E_ARG for n == 0 or a token id outside the
 * vocabulary (named), LC_E_NOMEM, the weights' read errors (where = tensor), or the
 * hook's code. Not thread-safe on one ctx (it runs its own threads). */
lc_code lc_infer_forward(lc_infer *ctx, const int32_t *tokens, size_t n, float *logits,
                         const lc_infer_hook *hook, lc_error *err);

/* lc_infer_forward in two steps, for a caller that takes the logits a chunk of
 * positions at a time (model-verify: [n, vocab] can be far larger than the model):
 * lc_infer_hidden runs the layers and writes hidden [n, embd], the final norm's output
 * (rmsnorm(x) * output_norm); lc_infer_head multiplies rows of it by the output matrix
 * into logits [n, vocab]. A row's logits are the same bits whatever rows come with it,
 * and the same as lc_infer_forward's. Codes as lc_infer_forward's. */
lc_code lc_infer_hidden(lc_infer *ctx, const int32_t *tokens, size_t n, float *hidden,
                        const lc_infer_hook *hook, lc_error *err);
lc_code lc_infer_head(lc_infer *ctx, const float *hidden, size_t n, float *logits,
                      lc_error *err);

/* The vocabulary size (columns of the logits) and the embedding width. */
uint32_t lc_infer_vocab(const lc_infer *ctx);
uint32_t lc_infer_embd(const lc_infer *ctx);

/* NULL-safe. */
void lc_infer_close(lc_infer *ctx);

#endif
