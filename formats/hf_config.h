/* formats/hf_config.h: an HF model's config.json as GGUF hyperparameters.
 *
 * config.json is one JSON object. The fields read (transformers' names):
 *   1. architectures[0]         "LlamaForCausalLM" | "MistralForCausalLM" -> "llama",
 *                               "Qwen2ForCausalLM" -> "qwen2"; anything else is refused
 *   2. hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, vocab_size,
 *      max_position_embeddings (all required, positive integers)
 *   3. num_key_value_heads (default num_attention_heads), head_dim (default
 *      hidden_size / num_attention_heads), rms_norm_eps (default 1e-6), rope_theta
 *      (default 10000), tie_word_embeddings (default false)
 *   4. rope_scaling: null, or {"type" or "rope_type": "default" | "linear" | "yarn",
 *      "factor", "original_max_position_embeddings"}; "llama3" and the rest are refused
 *      (they need tensors or keys this module does not make). */
#ifndef LC_FORMATS_HF_CONFIG_H
#define LC_FORMATS_HF_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"
#include "libconvert/model.h"

typedef enum lc_hf_arch { LC_HF_ARCH_LLAMA = 1, LC_HF_ARCH_QWEN2 } lc_hf_arch;

typedef struct lc_hf_config {
    lc_hf_arch arch;
    const char *arch_name;          /* GGUF spelling: "llama", "qwen2"; static storage */
    uint32_t context_length;        /* max_position_embeddings */
    uint32_t embedding_length;      /* hidden_size */
    uint32_t block_count;           /* num_hidden_layers */
    uint32_t feed_forward_length;   /* intermediate_size */
    uint32_t head_count;            /* num_attention_heads */
    uint32_t head_count_kv;         /* num_key_value_heads */
    uint32_t head_dim;              /* rope.dimension_count */
    uint32_t vocab_size;
    double   rms_eps;
    double   rope_theta;
    bool     tie_word_embeddings;
    const char *rope_scaling;       /* NULL, "linear" or "yarn"; static storage */
    double   rope_scaling_factor;
    uint32_t rope_scaling_orig_ctx; /* 0 when absent */
} lc_hf_config;

/* Parses config.json text. LC_E_MALFORMED for bad JSON (offset where parsing stopped) or
 * a missing/out-of-range field (named in the message), LC_E_UNSUPPORTED for an
 * architecture or rope scaling type we do not convert (named). *out is written only on
 * success. */
lc_code lc_hf_config_parse(const char *json, size_t len, lc_hf_config *out, lc_error *err);

/* Reads DIR/config.json and parses it; LC_E_NOTFOUND when it is missing. */
lc_code lc_hf_config_load(const char *dir, lc_hf_config *out, lc_error *err);

/* Adds general.architecture, general.name (NAME; skipped when NULL) and the
 * <arch>.* hyperparameter keys to m, with the value types gguf-py's GGUFWriter uses:
 * u32 for counts and lengths, f32 for rms epsilon, rope base and scaling factor,
 * string for the scaling type. */
lc_code lc_hf_config_to_gguf(const lc_hf_config *c, const char *name, lc_model *m,
                             lc_error *err);

#endif
