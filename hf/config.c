/* hf/config.c: config.json -> a family and its lc_hparams (see config.h). The
 * spellings come from the family's table in arch/; this file only knows JSON and
 * the rules every transformer config shares (head counts divide, heads rotate pairs). */
#include "hf/config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hf/config_impl.h"
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
    char list[512];
    lc_arch_list_classes(list, sizeof list);
    return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                   "architecture %.80s is not supported (%s are)", first->valuestring, list);
}

/* Stores one config entry's value in the hyperparameter it spells. */
static void set_hp(lc_hparams *hp, lc_hp f, uint32_t u, double d, bool b) {
    if (f == LC_HP_HEAD_DIM)
        hp->head_dim_given = true;
    lc_arch_hparam_set(hp, f, u ? (double)u : d > 0 ? d : b ? 1 : 0);
}

/* layer_types: one entry per layer (num_hidden_layers, read before it), each a string;
 * "linear_attention" layers are recurrent. */
static lc_code parse_layer_kinds(const cJSON *j, const char *key, lc_hparams *hp,
                                 lc_error *err) {
    if (!cJSON_IsArray(j))
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s must be a list of layer types",
                       key);
    const int n = cJSON_GetArraySize(j);
    if ((uint32_t)n != hp->block_count)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s has %d entries but "
                       "num_hidden_layers is %u", key, n, hp->block_count);
    if (hp->block_count > LC_ARCH_MAX_LAYERS)
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "%s: %u layers is more than %d",
                       key, hp->block_count, LC_ARCH_MAX_LAYERS);
    int i = 0;
    for (const cJSON *e = j->child; e; e = e->next, i++) {
        if (!cJSON_IsString(e))
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s[%d] is not a string", key, i);
        hp->recurrent[i] = strcmp(e->valuestring, "linear_attention") == 0;
    }
    hp->layer_kinds_given = true;
    hp->n_layer_kinds = (uint32_t)n;
    return LC_OK;
}

static lc_code parse_field(const cJSON *root, const lc_arch_cfg *f, lc_hparams *hp,
                           lc_error *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, f->json);
    if (f->kind == LC_CFG_LIST) {
        if (!j || cJSON_IsNull(j))
            return LC_OK;
        return parse_layer_kinds(j, f->json, hp, err);
    }
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
    } else if (f->kind == LC_CFG_NUMBER) {
        if (!j || cJSON_IsNull(j))
            return LC_OK;
        if (!cJSON_IsNumber(j) || !(j->valuedouble >= 0) || j->valuedouble > 1e300)
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s must be a number >= 0",
                           f->json);
        lc_arch_hparam_set(hp, f->hp, j->valuedouble);
    } else if (j && !cJSON_IsNull(j)) {
        if (!cJSON_IsBool(j))
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s must be a bool", f->json);
        lc_arch_hparam_set(hp, f->hp, cJSON_IsTrue(j));
    }
    return LC_OK;
}

static lc_code parse_fields(const cJSON *root, const lc_arch *a, lc_hparams *hp, lc_error *err) {
    for (size_t i = 0; i < a->n_cfg; i++)
        LC_TRY(parse_field(root, &a->cfg[i], hp, err));
    for (size_t i = 0; i < a->n_cfg_extra; i++)
        LC_TRY(parse_field(root, &a->cfg_extra[i], hp, err));
    return LC_OK;
}

/* The number at KEY of rs, or def when absent. */
static double num_or(const cJSON *rs, const char *key, double def) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(rs, key);
    return cJSON_IsNumber(j) ? j->valuedouble : def;
}

/* An optional positive integer < 2^32 at KEY of obj into *v (kept when absent). */
static lc_code opt_u32(const cJSON *obj, const char *key, const char *what, uint32_t *v,
                       lc_error *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!j || cJSON_IsNull(j))
        return LC_OK;
    int64_t x;
    LC_TRY(lc_hf_json_int(j, what, 1, UINT32_MAX, &x, err));
    *v = (uint32_t)x;
    return LC_OK;
}

/* The first of KEYS of obj that is a number, or NULL. */
static const cJSON *first_number(const cJSON *obj, const char *const *keys) {
    for (; *keys; keys++) {
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, *keys);
        if (cJSON_IsNumber(j))
            return j;
    }
    return NULL;
}

/* longrope's per-pair factor list KEY of g: n numbers. */
static lc_code read_factors(const cJSON *g, const char *key, uint32_t n, float *out,
                            lc_error *err) {
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(g, key);
    if (!cJSON_IsArray(l) || (uint32_t)cJSON_GetArraySize(l) != n)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "rope %s must be a list of %u "
                       "numbers (rotated dimensions / 2)", key, n);
    uint32_t i = 0;
    for (const cJSON *e = l->child; e; e = e->next, i++) {
        if (!cJSON_IsNumber(e))
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "rope %s[%u] is not a number",
                           key, i);
        out[i] = (float)e->valuedouble;
    }
    return LC_OK;
}

/* phi3's longrope: both factor lists, the original context and the attention factor
 * the converter computes (sqrt(1 + ln(scale) / ln(original context)), 1 unscaled). */
static lc_code parse_longrope(const cJSON *g, lc_hparams *hp, lc_error *err) {
    if (!hp->rope_scaling_orig_ctx)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "rope scaling longrope needs "
                       "original_max_position_embeddings");
    const uint32_t n = hp->rope_dim / 2;
    if (n == 0 || n > LC_ARCH_MAX_ROPE_FACTORS)
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "longrope over %u rotated "
                       "dimensions is not supported", hp->rope_dim);
    hp->rope_scaling = LC_ROPE_SCALING_LONGROPE;
    hp->n_rope_factors = n;
    LC_TRY(read_factors(g, "long_factor", n, hp->rope_long_factors, err));
    LC_TRY(read_factors(g, "short_factor", n, hp->rope_short_factors, err));
    const double scale = (double)hp->context_length / hp->rope_scaling_orig_ctx;
    hp->rope_attn_factor = scale > 1.0 ? sqrt(1 + log(scale) / log(hp->rope_scaling_orig_ctx))
                                       : 1.0;
    return LC_OK;
}

/* RoPE as convert_hf_to_gguf.py reads it (TextModel.__init__): rope_parameters
 * (transformers 5) or rope_scaling (older) or nothing; its "full_attention" entry when
 * it has one (the "sliding_attention" entry gives the sliding layers' base), else the
 * object itself, with the config's top-level rope_theta, local base, partial rotary
 * factor and original context filling what it lacks. */
static lc_code parse_rope(const cJSON *root, const lc_arch *a, lc_hparams *hp, lc_error *err) {
    static const char *const THETA[] = { "global_rope_theta", "rope_global_theta",
        "rope_theta_global", "rope_theta", "rotary_emb_base", NULL };
    static const char *const LOCAL[] = { "local_rope_theta", "rope_local_theta",
        "rope_theta_local", "swa_rope_theta", "rope_local_base_freq", NULL };
    static const char *const PARTIAL[] = { "partial_rotary_factor", "rope_pct",
        "rope_percent", NULL };
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    if (!rp || cJSON_IsNull(rp))
        rp = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    if (rp && !cJSON_IsNull(rp) && !cJSON_IsObject(rp))
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s must be an object",
                       rp->string ? rp->string : "rope_parameters");
    if (rp && !cJSON_IsObject(rp))
        rp = NULL;
    const cJSON *full = cJSON_GetObjectItemCaseSensitive(rp, "full_attention");
    const cJSON *slide = cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention");
    const bool split = full || slide;
    const cJSON *g = full ? full : rp;      /* the global layers' parameters */
    if (g && !cJSON_IsObject(g))
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "rope full_attention must be an object");
    const cJSON *theta = first_number(g, THETA + 3);                /* "rope_theta" */
    const cJSON *local = split ? first_number(slide, THETA + 3) : first_number(root, LOCAL);
    if (!theta && !split)
        theta = first_number(root, THETA);
    if (theta) {
        if (!(theta->valuedouble > 0))
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "rope_theta must be positive");
        hp->rope_theta = theta->valuedouble;
    }
    if (local) {
        if (!(local->valuedouble > 0))
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "the sliding layers' rope_theta "
                           "must be positive");
        hp->rope_theta_swa = local->valuedouble;
    }
    /* a per-layer family's rotated share is its own (hf/config_layers.c) */
    const cJSON *partial = a->per_layer_attention ? NULL : first_number(g, PARTIAL);
    if (!partial && !split && !a->per_layer_attention)
        partial = first_number(root, PARTIAL);
    if (partial) {
        const double r = partial->valuedouble;
        if (!(r > 0 && r <= 1))
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "partial_rotary_factor must be "
                           "in (0, 1]");
        /* as the converter computes it: int(factor * n_embd) // n_head (phi3), or
         * int(head_dim * factor) (Qwen3NextModel) */
        hp->rope_dim = a->partial_rotary_of_head
                     ? (uint32_t)(hp->head_dim * r)
                     : (uint32_t)((uint64_t)(r * hp->embedding_length) / hp->head_count);
        if (hp->rope_dim == 0 || hp->rope_dim % 2 || hp->rope_dim > hp->head_dim)
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "partial_rotary_factor gives "
                           "%u rotated dimensions of a %u-wide head", hp->rope_dim, hp->head_dim);
    }
    /* multi-section RoPE's sections (qwen35), padded to four as the converter does */
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(rp, "mrope_section");
    if (ms && !cJSON_IsNull(ms)) {
        const int n = cJSON_GetArraySize(ms);
        if (!cJSON_IsArray(ms) || n > 4)
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "mrope_section must be a list of "
                           "at most 4 integers");
        int i = 0;
        for (const cJSON *e = ms->child; e; e = e->next, i++) {
            int64_t v;
            LC_TRY(lc_hf_json_int(e, "mrope_section", 0, INT32_MAX, &v, err));
            hp->rope_sections[i] = (uint32_t)v;
        }
        hp->rope_sections_given = true;
    }
    LC_TRY(opt_u32(root, "original_max_position_embeddings",
                   "original_max_position_embeddings", &hp->rope_scaling_orig_ctx, err));
    LC_TRY(opt_u32(g, "original_max_position_embeddings",
                   "rope original_max_position_embeddings", &hp->rope_scaling_orig_ctx, err));
    /* transformers >= 4.43 writes rope_type; older files only type. */
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(g, "rope_type");
    if (!cJSON_IsString(t))
        t = cJSON_GetObjectItemCaseSensitive(g, "type");
    if (!g || (!t && !cJSON_GetObjectItemCaseSensitive(g, "factor")))
        return LC_OK;           /* no scaling */
    if (!cJSON_IsString(t))
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "rope scaling has no type");
    const char *type = t->valuestring;
    if (strcmp(type, "default") == 0 ||
        (a->per_layer_attention && strcmp(type, "proportional") == 0))
        return LC_OK;
    if (strcmp(type, "longrope") == 0 || strcmp(type, "su") == 0) {
        if (!a->recipe.longrope)
            return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "rope scaling %s is not "
                           "supported for %s", type, a->name);
        return parse_longrope(g, hp, err);
    }
    if (strcmp(type, "llama3") == 0 && a->hooks.rope_freqs) {
        /* LlamaModel's defaults; the factors become rope_freqs.weight, no keys. */
        hp->rope_scaling = LC_ROPE_SCALING_LLAMA3;
        hp->rope_scaling_factor = num_or(g, "factor", 8.0);
        hp->rope_low_freq_factor = num_or(g, "low_freq_factor", 1.0);
        hp->rope_high_freq_factor = num_or(g, "high_freq_factor", 4.0);
        if (!cJSON_GetObjectItemCaseSensitive(g, "original_max_position_embeddings"))
            hp->rope_scaling_orig_ctx = 8192;
        if (!(hp->rope_scaling_factor > 0) ||
            hp->rope_high_freq_factor == hp->rope_low_freq_factor)
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "rope_scaling llama3 needs a "
                           "positive factor and distinct low and high frequency factors");
        return LC_OK;
    }
    if (strcmp(type, "linear") == 0)
        hp->rope_scaling = LC_ROPE_SCALING_LINEAR;
    else if (strcmp(type, "yarn") == 0)
        hp->rope_scaling = LC_ROPE_SCALING_YARN;
    else
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                       "rope scaling type %.40s is not supported for %s (linear, yarn%s%s are)",
                       type, a->name, a->hooks.rope_freqs ? ", llama3" : "",
                       a->recipe.longrope ? ", longrope" : "");
    hp->rope_scaling_factor = 0;
    LC_TRY(get_pos_double(g, "factor", &hp->rope_scaling_factor, err));
    if (hp->rope_scaling_factor == 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "rope scaling has no factor");
    /* Only yarn's original context is a key (and only when the scaling names one). */
    if (!cJSON_GetObjectItemCaseSensitive(g, "original_max_position_embeddings"))
        hp->rope_scaling_orig_ctx = 0;
    return LC_OK;
}

/* A multimodal checkpoint's config keeps the text model's under "text_config": read as
 * the converter reads it (TextModel.__init__), every text_config entry over the top
 * level's, into *merged (NULL when there is none). False when out of memory. */
static bool text_model_view(const cJSON *root, cJSON **merged) {
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    *merged = NULL;
    if (!cJSON_IsObject(tc))
        return true;
    cJSON *m = cJSON_Duplicate(root, true);
    for (const cJSON *e = tc->child; m && e; e = e->next) {
        cJSON *v = cJSON_Duplicate(e, true);
        if (!v || (cJSON_HasObjectItem(m, e->string)
                       ? !cJSON_ReplaceItemInObjectCaseSensitive(m, e->string, v)
                       : !cJSON_AddItemToObject(m, e->string, v))) {
            cJSON_Delete(v);
            cJSON_Delete(m);
            return false;
        }
    }
    *merged = m;
    return m != NULL;
}

static lc_code parse_text_model(const cJSON *root, lc_hf_config *c, lc_error *err);

static lc_code parse_root(const cJSON *root, lc_hf_config *c, lc_error *err) {
    if (!cJSON_IsObject(root))
        return lc_fail(err, LC_E_MALFORMED, 0, "config.json is not a JSON object");
    cJSON *m;
    if (!text_model_view(root, &m))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_code rc = parse_text_model(m ? m : root, c, err);
    cJSON_Delete(m);
    return rc;
}

static lc_code parse_text_model(const cJSON *root, lc_hf_config *c, lc_error *err) {
    LC_TRY(parse_arch(root, c, err));
    lc_hparams *hp = &c->hp;
    hp->rms_eps = c->arch->default_rms_eps;
    hp->rope_theta = c->arch->default_rope_theta;
    hp->swa_pattern = c->arch->default_swa_pattern;
    hp->expert_norm_topk = c->arch->recipe.moe_norm_topk;
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
    LC_TRY(parse_rope(root, c->arch, hp, err));
    if (!hp->rope_dim)
        hp->rope_dim = hp->head_dim;
    /* the prediction layers come after the model's own (mtp_num_hidden_layers) */
    if (hp->nextn_layers) {
        if (hp->nextn_layers > LC_ARCH_MAX_LAYERS ||
            (uint64_t)hp->block_count + hp->nextn_layers > LC_ARCH_MAX_LAYERS)
            return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "num_hidden_layers %u and "
                           "mtp_num_hidden_layers %u: more than %d layers", hp->block_count,
                           hp->nextn_layers, LC_ARCH_MAX_LAYERS);
        hp->block_count += hp->nextn_layers;
    }
    if (c->arch->per_layer_attention)
        LC_TRY(lc_hf_config_per_layer(root, hp, err));
    return lc_arch_hparams_finish(c->arch, hp, err);
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
