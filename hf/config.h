/* hf/config.h: an HF model's config.json as a family (arch/) and its hyperparameters.
 *
 * config.json is one JSON object. The fields read:
 *   1. architectures[0]: a transformers class name some arch/ family lists
 *      ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"); others are refused
 *   2. the family's config spellings (arch/ lc_arch_cfg rows): hidden_size,
 *      num_hidden_layers, num_attention_heads, intermediate_size, vocab_size,
 *      max_position_embeddings (required positive integers), num_key_value_heads
 *      (default num_attention_heads), head_dim (default hidden_size /
 *      num_attention_heads), rms_norm_eps and rope_theta (the family's defaults),
 *      tie_word_embeddings (default false)
 *   3. rope_scaling: null, or {"type" or "rope_type": "default" | "linear" | "yarn" |
 *      "llama3", "factor", "original_max_position_embeddings", and for llama3
 *      "low_freq_factor", "high_freq_factor"}; llama3 only for families with a
 *      rope_freqs hook; other types are refused. */
#ifndef LC_HF_CONFIG_H
#define LC_HF_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "arch/arch.h"
#include "libconvert/error.h"
#include "libconvert/model.h"

typedef struct lc_hf_config {
    const lc_arch *arch;    /* static */
    lc_hparams hp;
} lc_hf_config;

/* Parses config.json text. LC_E_MALFORMED for bad JSON (offset where parsing stopped) or
 * a missing/out-of-range field (named in the message), LC_E_UNSUPPORTED for an
 * architecture or rope scaling type we do not convert (named). *out is written only on
 * success. */
lc_code lc_hf_config_parse(const char *json, size_t len, lc_hf_config *out, lc_error *err);

/* Reads DIR/config.json and parses it; LC_E_NOTFOUND when it is missing. */
lc_code lc_hf_config_load(const char *dir, lc_hf_config *out, lc_error *err);

/* Adds general.architecture, general.name (NAME; skipped when NULL) and the family's
 * hyperparameter keys (arch.h lc_arch_write_keys, without general.file_type) to m. */
lc_code lc_hf_config_to_gguf(const lc_hf_config *c, const char *name, lc_model *m,
                             lc_error *err);

#endif
