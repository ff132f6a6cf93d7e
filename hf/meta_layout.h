/* hf/meta_layout.h: Meta's original llama release layout (params.json +
 * consolidated.NN.pth + tokenizer.model) as input to lc_hf_to_gguf.
 *
 * The folder:
 *   1. params.json: {"dim", "n_layers", "n_heads", "n_kv_heads"?, "vocab_size"? (-1 or
 *      absent: the embedding's rows), "multiple_of"?, "ffn_dim_multiplier"?, "norm_eps",
 *      "rope_theta"?, "max_seq_len"?}.
 *   2. consolidated.00.pth: the state dict (torch.save). consolidated.01.pth and on are
 *      model-parallel slices concatenated along a per-tensor dimension: refused.
 *   3. tokenizer.model (SentencePiece), read by hf/tokenizer.c as for an HF folder.
 * Meta's q/k rows are already in the interleaved RoPE order GGUF uses, so no tensor is
 * permuted; names map one to one through the "meta" column of arch/llama.c. */
#ifndef LC_HF_META_LAYOUT_H
#define LC_HF_META_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "hf/config.h"
#include "libconvert/error.h"
#include "libconvert/model.h"

/* True when DIR has params.json and consolidated.00.pth and no config.json (an HF
 * config wins when both are there). */
bool lc_hf_meta_layout_is(const char *dir);

/* Loads DIR/consolidated.00.pth (lazy tensors, formats/pth.h) into *out.
 * LC_E_UNSUPPORTED when DIR also has consolidated.01.pth (a model-parallel split);
 * the pth reader's codes otherwise. */
lc_code lc_hf_meta_layout_load(const char *dir, lc_model **out, lc_error *err);

/* Parses params.json text into *out (architecture llama, no rope scaling, no tied
 * embeddings). vocab_rows and ff_rows are the first dimension of tok_embeddings.weight
 * and layers.0.feed_forward.w1.weight (0 when the tensor is absent):
 * feed_forward_length is ff_rows, and vocab_size is vocab_rows unless params.json gives
 * a positive one. context_length is max_seq_len when present, else what llama.cpp's
 * legacy convert.py guessed: 16384 for rope_theta 1e6 (CodeLlama), 4096 for norm_eps
 * 1e-5 (Llama 2), else 2048 (Llama 1).
 * LC_E_MALFORMED (offset where parsing stopped, or LC_NO_OFFSET) for bad JSON or a
 * missing/mistyped/out-of-range field (named); LC_E_MISMATCH when a tensor is absent
 * or ff_rows differs from Meta's rule for multiple_of/ffn_dim_multiplier;
 * LC_E_UNSUPPORTED for use_scaled_rope true or a "moe" model. *out is written only on
 * success. */
lc_code lc_hf_meta_layout_config(const char *json, size_t len, uint64_t vocab_rows,
                                 uint64_t ff_rows, lc_hf_config *out, lc_error *err);

#endif
