/* formats/hf_tensors.h: HF tensor names -> GGUF names, and the llama Q/K row permutation
 * as a lazy tensor source.
 *
 * Names mapped (N a decimal layer index):
 *   model.embed_tokens.weight  -> token_embd.weight
 *   model.norm.weight          -> output_norm.weight
 *   lm_head.weight             -> output.weight
 *   model.layers.N.input_layernorm.weight           -> blk.N.attn_norm.weight
 *   model.layers.N.self_attn.{q,k,v,o}_proj.{weight,bias}
 *                                   -> blk.N.attn_{q,k,v,output}.{weight,bias}
 *   model.layers.N.post_attention_layernorm.weight  -> blk.N.ffn_norm.weight
 *   model.layers.N.mlp.{gate,up,down}_proj.weight   -> blk.N.ffn_{gate,up,down}.weight
 *   model.layers.N.self_attn.rotary_emb.inv_freq    -> dropped (recomputed by the runtime)
 *
 * Permutation (llama only; HF stores q/k rows for rotate-half RoPE, GGUF interleaves
 * pairs): with R = rows / heads, view the rows as [heads, 2, R/2] and swap the last two
 * axes. Forward, GGUF row h*R + 2i + j comes from HF row h*R + j*R/2 + i; the inverse
 * undoes it. Rows are contiguous, so any byte range maps row by row. */
#ifndef LC_FORMATS_HF_TENSORS_H
#define LC_FORMATS_HF_TENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"
#include "libconvert/tensor.h"

typedef enum lc_hf_role {
    LC_HF_ROLE_PLAIN = 0,   /* copy as is */
    LC_HF_ROLE_Q,           /* attn_q weight or bias: permute with head_count (llama) */
    LC_HF_ROLE_K,           /* attn_k weight or bias: permute with head_count_kv (llama) */
    LC_HF_ROLE_DROP,        /* not written to GGUF */
} lc_hf_role;

/* Maps HF name to its GGUF name in buf (cap bytes) and says what to do with it.
 * LC_E_UNSUPPORTED naming the tensor when it is not in the table above,
 * LC_E_MALFORMED when the layer index is not below n_layers (0: unchecked),
 * LC_E_ARG when buf is too small. buf is untouched for LC_HF_ROLE_DROP. */
lc_code lc_hf_tensors_name(const char *hf, uint32_t n_layers, char *buf, size_t cap,
                          lc_hf_role *role, lc_error *err);

/* The source row that permuted row `row` reads (inverse: the GGUF -> HF direction).
 * rows must be a multiple of 2 * heads. */
uint64_t lc_hf_tensors_permute_row(uint64_t row, uint64_t rows, uint32_t heads, bool inverse);

/* Makes dst a lazy, permuted view of src: reads of any byte range of dst are served
 * from src row by row, nothing is materialised. dst must have src's dtype and shape
 * (LC_E_ARG otherwise); the first dimension must be a multiple of 2 * heads
 * (LC_E_MALFORMED). src is borrowed: it (and its model) must outlive dst's model. */
lc_code lc_hf_tensors_permute(lc_tensor *dst, const lc_tensor *src, uint32_t heads, bool inverse,
                             lc_error *err);

/* Makes dst a lazy view that forwards reads to src unchanged (same rules as above);
 * for src tensors whose own source belongs to another model. */
lc_code lc_hf_tensors_forward(lc_tensor *dst, const lc_tensor *src, lc_error *err);

#endif
