/* hf/config.c: config.json -> a family and its lc_hparams (see config.h). The
 * spellings come from the family's table in arch/; this file only knows JSON and
 * the rules every transformer config shares (head counts divide, heads rotate pairs). */
#include "hf/config.h"

#include <stdio.h>
#include <string.h>

#include "hf/json.h"

/* A required (or optional) positive integer that fits u32; *present says whether it
 * was there (null counts as absent for optional ones). */
static lc_code get_u32(const cJSON *root, const char *key, bool required, uint32_t *v,
                       bool *present, lc_error *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    int64_t x;
    *present = false;
    if (!j || (!required && cJSON_IsNull(j))) {
        if (required)
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "config.json has no %s", key);
        return LC_OK;
    }
    LC_TRY(lc_hf_json_int(j, key, 1, UINT32_MAX, &x, err));
    *v = (uint32_t)x;
    *present = true;
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
    if ((c->arch = lc_arch_by_hf_class(first->valuestring)))
        return LC_OK;
    char list[160];
    lc_arch_list_classes(list, sizeof list);
    return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                   "architecture %.80s is not supported (%s are)", first->valuestring, list);
}

/* Stores one config entry's value in the hyperparameter it spells. */
static void set_hp(lc_hparams *hp, lc_hp f, uint32_t u, double d, bool b) {
    switch (f) {
    case LC_HP_CONTEXT_LENGTH: hp->context_length = u; break;
    case LC_HP_EMBEDDING_LENGTH: hp->embedding_length = u; break;
    case LC_HP_BLOCK_COUNT: hp->block_count = u; break;
    case LC_HP_FEED_FORWARD_LENGTH: hp->feed_forward_length = u; break;
    case LC_HP_HEAD_COUNT: hp->head_count = u; break;
    case LC_HP_HEAD_COUNT_KV: hp->head_count_kv = u; break;
    case LC_HP_HEAD_DIM: hp->head_dim = u; hp->head_dim_given = true; break;
    case LC_HP_VOCAB_SIZE: hp->vocab_size = u; break;
    case LC_HP_RMS_EPS: hp->rms_eps = d; break;
    case LC_HP_ROPE_THETA: hp->rope_theta = d; break;
    case LC_HP_TIE_WORD_EMBEDDINGS: hp->tie_word_embeddings = b; break;
    default: break;
    }
}

static lc_code parse_fields(const cJSON *root, const lc_arch *a, lc_hparams *hp, lc_error *err) {
    for (size_t i = 0; i < a->n_cfg; i++) {
        const lc_arch_cfg *f = &a->cfg[i];
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, f->json);
        if (f->kind == LC_CFG_U32_REQUIRED || f->kind == LC_CFG_U32) {
            uint32_t u = 0;
            bool present;
            LC_TRY(get_u32(root, f->json, f->kind == LC_CFG_U32_REQUIRED, &u, &present, err));
            if (present)
                set_hp(hp, f->hp, u, 0, false);
        } else if (f->kind == LC_CFG_POSITIVE) {
            double d = -1;
            LC_TRY(get_pos_double(root, f->json, &d, err));
            if (d > 0)
                set_hp(hp, f->hp, 0, d, false);
        } else if (j) {
            if (!cJSON_IsBool(j))
                return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s must be a bool", f->json);
            set_hp(hp, f->hp, 0, 0, cJSON_IsTrue(j));
        }
    }
    return LC_OK;
}

/* The number at KEY of rs, or def when absent. */
static double num_or(const cJSON *rs, const char *key, double def) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(rs, key);
    return cJSON_IsNumber(j) ? j->valuedouble : def;
}

static lc_code parse_rope_scaling(const cJSON *root, const lc_arch *a, lc_hparams *hp,
                                  lc_error *err) {
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
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(rs, "original_max_position_embeddings");
    if (strcmp(t->valuestring, "default") == 0)
        return LC_OK;
    if (strcmp(t->valuestring, "llama3") == 0 && a->hooks.rope_freqs) {
        /* LlamaModel's defaults; the factors become rope_freqs.weight, no keys. */
        hp->rope_scaling = LC_ROPE_SCALING_LLAMA3;
        hp->rope_scaling_factor = num_or(rs, "factor", 8.0);
        hp->rope_low_freq_factor = num_or(rs, "low_freq_factor", 1.0);
        hp->rope_high_freq_factor = num_or(rs, "high_freq_factor", 4.0);
        hp->rope_scaling_orig_ctx = 8192;
        if (o && !cJSON_IsNull(o)) {
            int64_t x;
            LC_TRY(lc_hf_json_int(o, "rope_scaling.original_max_position_embeddings", 1,
                                  UINT32_MAX, &x, err));
            hp->rope_scaling_orig_ctx = (uint32_t)x;
        }
        if (!(hp->rope_scaling_factor > 0) ||
            hp->rope_high_freq_factor == hp->rope_low_freq_factor)
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "rope_scaling llama3 needs a "
                           "positive factor and distinct low and high frequency factors");
        return LC_OK;
    }
    if (strcmp(t->valuestring, "linear") == 0)
        hp->rope_scaling = LC_ROPE_SCALING_LINEAR;
    else if (strcmp(t->valuestring, "yarn") == 0)
        hp->rope_scaling = LC_ROPE_SCALING_YARN;
    else
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                       "rope_scaling type %.40s is not supported for %s (linear, yarn%s are)",
                       t->valuestring, a->name, a->hooks.rope_freqs ? ", llama3" : "");
    hp->rope_scaling_factor = 0;
    LC_TRY(get_pos_double(rs, "factor", &hp->rope_scaling_factor, err));
    if (hp->rope_scaling_factor == 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "rope_scaling has no factor");
    if (o && !cJSON_IsNull(o)) {
        int64_t x;
        LC_TRY(lc_hf_json_int(o, "rope_scaling.original_max_position_embeddings", 1, UINT32_MAX,
                              &x, err));
        hp->rope_scaling_orig_ctx = (uint32_t)x;
    }
    return LC_OK;
}

static lc_code parse_root(const cJSON *root, lc_hf_config *c, lc_error *err) {
    if (!cJSON_IsObject(root))
        return lc_fail(err, LC_E_MALFORMED, 0, "config.json is not a JSON object");
    LC_TRY(parse_arch(root, c, err));
    lc_hparams *hp = &c->hp;
    hp->rms_eps = c->arch->default_rms_eps;
    hp->rope_theta = c->arch->default_rope_theta;
    LC_TRY(parse_fields(root, c->arch, hp, err));
    if (!hp->head_count_kv)
        hp->head_count_kv = hp->head_count;
    if (hp->head_count % hp->head_count_kv != 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                       "num_attention_heads %u is not a multiple of num_key_value_heads %u",
                       hp->head_count, hp->head_count_kv);
    if (!hp->head_dim_given) {
        if (hp->embedding_length % hp->head_count != 0)
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                           "hidden_size %u is not a multiple of num_attention_heads %u",
                           hp->embedding_length, hp->head_count);
        hp->head_dim = hp->embedding_length / hp->head_count;
    }
    if (hp->head_dim % 2 != 0)   /* RoPE rotates pairs */
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "head dimension %u is odd",
                       hp->head_dim);
    return parse_rope_scaling(root, c->arch, hp, err);
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

lc_code lc_hf_config_to_gguf(const lc_hf_config *c, const char *name, lc_model *m,
                             lc_error *err) {
    LC_TRY(lc_model_set_meta_str(m, "general.architecture", c->arch->name, err));
    if (name)
        LC_TRY(lc_model_set_meta_str(m, "general.name", name, err));
    return lc_arch_write_keys(c->arch, &c->hp, LC_ARCH_NO_FILE_TYPE, m, err);
}
