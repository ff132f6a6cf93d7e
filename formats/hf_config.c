/* formats/hf_config.c: config.json -> lc_hf_config -> GGUF hyperparameter keys.
 *
 * Layout read (a JSON object; see hf_config.h for the fields):
 *   { "architectures": ["LlamaForCausalLM"], "hidden_size": 64, ..., "rope_scaling": null }
 * Keys written, as llama.cpp's converter writes them for llama/qwen2:
 *   general.architecture str, general.name str, <a>.block_count u32,
 *   <a>.context_length u32, <a>.embedding_length u32, <a>.feed_forward_length u32,
 *   <a>.attention.head_count u32, <a>.attention.head_count_kv u32,
 *   <a>.rope.freq_base f32, <a>.attention.layer_norm_rms_epsilon f32, <a>.vocab_size u32,
 *   <a>.rope.dimension_count u32, and with scaling <a>.rope.scaling.type str,
 *   <a>.rope.scaling.factor f32, <a>.rope.scaling.original_context_length u32 (yarn). */
#include "formats/hf_config.h"

#include <stdio.h>
#include <string.h>

#include "formats/hf_impl.h"

static const struct {
    const char *hf;
    lc_hf_arch arch;
    const char *gguf;
} ARCHS[] = {
    { "LlamaForCausalLM", LC_HF_ARCH_LLAMA, "llama" },
    { "MistralForCausalLM", LC_HF_ARCH_LLAMA, "llama" },
    { "Qwen2ForCausalLM", LC_HF_ARCH_QWEN2, "qwen2" },
};

/* A required positive integer that fits u32. */
static lc_code get_u32(const cJSON *root, const char *key, uint32_t *v, lc_error *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    int64_t x;
    if (!j)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "config.json has no %s", key);
    LC_TRY(lc_hf_json_int(j, key, 1, UINT32_MAX, &x, err));
    *v = (uint32_t)x;
    return LC_OK;
}

/* An optional positive number; *v keeps its default when the key is absent or null. */
static lc_code get_pos_double(const cJSON *root, const char *key, double *v, lc_error *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j || cJSON_IsNull(j))
        return LC_OK;
    if (!cJSON_IsNumber(j) || !(j->valuedouble > 0))
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s must be a positive number", key);
    *v = j->valuedouble;
    return LC_OK;
}

static lc_code parse_arch(const cJSON *root, lc_hf_config *c, lc_error *err) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(a) ? cJSON_GetArrayItem(a, 0) : NULL;
    if (!cJSON_IsString(first))
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                       "config.json has no architectures list with a name in it");
    for (size_t i = 0; i < sizeof ARCHS / sizeof *ARCHS; i++) {
        if (strcmp(first->valuestring, ARCHS[i].hf) == 0) {
            c->arch = ARCHS[i].arch;
            c->arch_name = ARCHS[i].gguf;
            return LC_OK;
        }
    }
    return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                   "architecture %.80s is not supported (llama, mistral and qwen2 are)",
                   first->valuestring);
}

static lc_code parse_rope_scaling(const cJSON *root, lc_hf_config *c, lc_error *err) {
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    if (!rs || cJSON_IsNull(rs))
        return LC_OK;
    if (!cJSON_IsObject(rs))
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "rope_scaling must be an object");
    /* transformers >= 4.43 writes rope_type; older files only type. */
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!cJSON_IsString(t))
        t = cJSON_GetObjectItemCaseSensitive(rs, "type");
    if (!cJSON_IsString(t))
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "rope_scaling has no type");
    if (strcmp(t->valuestring, "default") == 0)
        return LC_OK;
    if (strcmp(t->valuestring, "linear") == 0)
        c->rope_scaling = "linear";
    else if (strcmp(t->valuestring, "yarn") == 0)
        c->rope_scaling = "yarn";
    else
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                       "rope_scaling type %.40s is not supported (linear and yarn are)",
                       t->valuestring);
    c->rope_scaling_factor = 0;
    LC_TRY(get_pos_double(rs, "factor", &c->rope_scaling_factor, err));
    if (c->rope_scaling_factor == 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "rope_scaling has no factor");
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(rs, "original_max_position_embeddings");
    if (o && !cJSON_IsNull(o)) {
        int64_t x;
        LC_TRY(lc_hf_json_int(o, "rope_scaling.original_max_position_embeddings", 1, UINT32_MAX,
                              &x, err));
        c->rope_scaling_orig_ctx = (uint32_t)x;
    }
    return LC_OK;
}

static lc_code parse_root(const cJSON *root, lc_hf_config *c, lc_error *err) {
    if (!cJSON_IsObject(root))
        return lc_fail(err, LC_E_MALFORMED, 0, "config.json is not a JSON object");
    LC_TRY(parse_arch(root, c, err));
    LC_TRY(get_u32(root, "hidden_size", &c->embedding_length, err));
    LC_TRY(get_u32(root, "num_hidden_layers", &c->block_count, err));
    LC_TRY(get_u32(root, "num_attention_heads", &c->head_count, err));
    LC_TRY(get_u32(root, "intermediate_size", &c->feed_forward_length, err));
    LC_TRY(get_u32(root, "vocab_size", &c->vocab_size, err));
    LC_TRY(get_u32(root, "max_position_embeddings", &c->context_length, err));
    c->head_count_kv = c->head_count;
    if (cJSON_GetObjectItemCaseSensitive(root, "num_key_value_heads"))
        LC_TRY(get_u32(root, "num_key_value_heads", &c->head_count_kv, err));
    if (c->head_count % c->head_count_kv != 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                       "num_attention_heads %u is not a multiple of num_key_value_heads %u",
                       c->head_count, c->head_count_kv);
    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(root, "head_dim");
    if (hd && !cJSON_IsNull(hd)) {
        LC_TRY(get_u32(root, "head_dim", &c->head_dim, err));
    } else {
        if (c->embedding_length % c->head_count != 0)
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                           "hidden_size %u is not a multiple of num_attention_heads %u",
                           c->embedding_length, c->head_count);
        c->head_dim = c->embedding_length / c->head_count;
    }
    if (c->head_dim % 2 != 0)   /* RoPE rotates pairs */
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "head dimension %u is odd",
                       c->head_dim);
    c->rms_eps = 1e-6;          /* transformers' LlamaConfig/Qwen2Config defaults */
    c->rope_theta = 10000.0;
    LC_TRY(get_pos_double(root, "rms_norm_eps", &c->rms_eps, err));
    LC_TRY(get_pos_double(root, "rope_theta", &c->rope_theta, err));
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (tie && !cJSON_IsBool(tie))
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "tie_word_embeddings must be a bool");
    c->tie_word_embeddings = cJSON_IsTrue(tie);
    return parse_rope_scaling(root, c, err);
}

lc_code lc_hf_config_parse(const char *json, size_t len, lc_hf_config *out, lc_error *err) {
    cJSON *root;
    LC_TRY(lc_hf_json_parse(json, len, &root, err));
    lc_hf_config c = { 0 };
    lc_code rc = parse_root(root, &c, err);
    cJSON_Delete(root);
    if (rc == LC_OK)
        *out = c;
    return rc;
}

lc_code lc_hf_config_load(const char *dir, lc_hf_config *out, lc_error *err) {
    cJSON *root;
    char path[4096];
    LC_TRY(lc_hf_json_load(dir, "config.json", false, &root, err));
    lc_hf_config c = { 0 };
    lc_code rc = parse_root(root, &c, err);
    cJSON_Delete(root);
    if (rc == LC_OK)
        *out = c;
    if (lc_hf_json_path(path, sizeof path, dir, "config.json", NULL) == LC_OK)
        lc_err_context(err, path, NULL);
    return rc;
}

/* Sets "<arch>.<suffix>" to a u32 (f32 when is_f32). */
static lc_code put(lc_model *m, const lc_hf_config *c, const char *suffix, double v, bool is_f32,
                   lc_error *err) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", c->arch_name, suffix);
    return is_f32 ? lc_hf_json_meta_f32(m, key, v, err)
                  : lc_hf_json_meta_u32(m, key, (uint64_t)v, err);
}

lc_code lc_hf_config_to_gguf(const lc_hf_config *c, const char *name, lc_model *m,
                             lc_error *err) {
    /* In the order llama.cpp's converter adds them. */
    const struct { const char *suffix; double v; bool is_f32; } keys[] = {
        { "block_count", c->block_count, false },
        { "context_length", c->context_length, false },
        { "embedding_length", c->embedding_length, false },
        { "feed_forward_length", c->feed_forward_length, false },
        { "attention.head_count", c->head_count, false },
        { "attention.head_count_kv", c->head_count_kv, false },
        { "rope.freq_base", c->rope_theta, true },
        { "attention.layer_norm_rms_epsilon", c->rms_eps, true },
        { "vocab_size", c->vocab_size, false },
        { "rope.dimension_count", c->head_dim, false },
    };
    LC_TRY(lc_model_set_meta_str(m, "general.architecture", c->arch_name, err));
    if (name)
        LC_TRY(lc_model_set_meta_str(m, "general.name", name, err));
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        LC_TRY(put(m, c, keys[i].suffix, keys[i].v, keys[i].is_f32, err));
    if (!c->rope_scaling)
        return LC_OK;
    char key[96];
    snprintf(key, sizeof key, "%s.rope.scaling.type", c->arch_name);
    LC_TRY(lc_model_set_meta_str(m, key, c->rope_scaling, err));
    LC_TRY(put(m, c, "rope.scaling.factor", c->rope_scaling_factor, true, err));
    if (c->rope_scaling_orig_ctx)
        LC_TRY(put(m, c, "rope.scaling.original_context_length", c->rope_scaling_orig_ctx, false,
                   err));
    return LC_OK;
}
