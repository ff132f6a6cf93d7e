/* hf/config_layers.c: the per-layer attention shapes of a Gemma 4 config.json, read as
 * the pinned converter's Gemma4Model reads them (see config_impl.h).
 *
 * Sliding and full layers differ: head_dim is the sliding layers' head size and
 * num_key_value_heads their KV heads; the full layers' come from global_head_dim and
 * num_global_key_value_heads, or else from the first full layer's entry in
 * per_layer_config ({"2": {"head_dim": 32, "num_key_value_heads": 1}}, in the object's
 * order). attention_k_eq_v is not read: the converter does not either (a full layer
 * without v_proj simply has no attn_v). */
#include "hf/config_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hf/json.h"

static lc_code missing(const char *key, const char *why, lc_error *err) {
    lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "config.json has no %s (%s)", key, why);
    lc_err_context(err, NULL, key);
    return LC_E_MALFORMED;
}

/* An integer in [lo, UINT32_MAX] at KEY of obj; *present false (and *v kept) when it
 * is absent or null. */
static lc_code opt_count(const cJSON *obj, const char *key, int64_t lo, uint32_t *v,
                         bool *present, lc_error *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
    int64_t x;
    *present = false;
    if (!j || cJSON_IsNull(j))
        return LC_OK;
    if (lc_hf_json_int(j, key, lo, UINT32_MAX, &x, err) != LC_OK) {
        lc_err_context(err, NULL, key);
        return LC_E_MALFORMED;
    }
    *v = (uint32_t)x;
    *present = true;
    return LC_OK;
}

/* The full layers' FIELD: KEY at the top level, else the first per_layer_config entry
 * of a full layer that has FIELD. *found false when neither says. */
static lc_code full_layers(const cJSON *root, const char *key, const char *field,
                           const lc_hparams *hp, uint32_t *v, bool *found, lc_error *err) {
    LC_TRY(opt_count(root, key, 1, v, found, err));
    if (*found)
        return LC_OK;
    const cJSON *plc = cJSON_GetObjectItemCaseSensitive(root, "per_layer_config");
    if (!cJSON_IsObject(plc))
        return LC_OK;
    const cJSON *e;
    cJSON_ArrayForEach(e, plc) {
        char *end;
        const unsigned long layer = strtoul(e->string, &end, 10);
        if (*e->string < '0' || *e->string > '9' || *end || layer >= hp->block_count ||
            hp->swa_layers[layer])
            continue;
        LC_TRY(opt_count(e, field, 1, v, found, err));
        if (*found)
            return LC_OK;
    }
    return LC_OK;
}

/* layer_types: one string per layer, "sliding_attention" for the sliding ones. */
static lc_code parse_swa_layers(const cJSON *root, lc_hparams *hp, lc_error *err) {
    const char *key = "layer_types";
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j || cJSON_IsNull(j))
        return missing(key, "one entry per layer", err);
    const int n = cJSON_IsArray(j) ? cJSON_GetArraySize(j) : -1;
    if (n < 0 || (uint32_t)n != hp->block_count || n > LC_ARCH_MAX_LAYERS) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s has %d entries but num_hidden_layers "
                "is %u", key, n, hp->block_count);
        lc_err_context(err, NULL, key);
        return LC_E_MALFORMED;
    }
    int i = 0;
    for (const cJSON *e = j->child; e; e = e->next, i++) {
        if (!cJSON_IsString(e)) {
            lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s[%d] is not a string", key, i);
            lc_err_context(err, NULL, key);
            return LC_E_MALFORMED;
        }
        hp->swa_layers[i] = strcmp(e->valuestring, "sliding_attention") == 0;
    }
    hp->swa_layers_given = true;
    hp->n_swa_layers = (uint32_t)n;
    return LC_OK;
}

/* The full layers' proportional RoPE: rope_freqs rotates int(head_dim * factor / 2)
 * pairs (generate_extra_tensors). */
static lc_code parse_proportional(const cJSON *root, lc_hparams *hp, lc_error *err) {
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    const cJSON *full = cJSON_GetObjectItemCaseSensitive(rp, "full_attention");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(full, "rope_type");
    const cJSON *prf = cJSON_GetObjectItemCaseSensitive(full, "partial_rotary_factor");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "proportional") != 0) {
        lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "rope_parameters.full_attention.rope_type "
                "must be \"proportional\" (what the converter writes rope_freqs for)");
        lc_err_context(err, NULL, "rope_parameters");
        return LC_E_UNSUPPORTED;
    }
    if (!cJSON_IsNumber(prf) || !(prf->valuedouble > 0 && prf->valuedouble <= 1))
        return missing("rope_parameters.full_attention.partial_rotary_factor",
                       "a number in (0, 1]", err);
    /* int(head_dim_full * factor / 2) in Python floats */
    hp->rope_prop_pairs = (uint32_t)floor((double)hp->head_dim * prf->valuedouble / 2);
    /* the sliding layers' share: the top-level rope_parameters' factor (1 when none) */
    const cJSON *swa_prf = cJSON_GetObjectItemCaseSensitive(rp, "partial_rotary_factor");
    const double f = cJSON_IsNumber(swa_prf) ? swa_prf->valuedouble : 1.0;
    hp->rope_dim_swa = (uint32_t)(hp->head_dim_swa * f);
    hp->rope_dim = hp->head_dim;    /* n_rot_full: every dimension, rope_freqs says which */
    return LC_OK;
}

lc_code lc_hf_config_per_layer(const cJSON *root, lc_hparams *hp, lc_error *err) {
    bool have;
    if (!hp->head_dim_given)
        return missing("head_dim", "the sliding layers' head size", err);
    hp->head_dim_swa = hp->head_dim;
    LC_TRY(parse_swa_layers(root, hp, err));
    if (!cJSON_GetObjectItemCaseSensitive(root, "num_kv_shared_layers"))
        return missing("num_kv_shared_layers", "the layers that reuse earlier KV", err);
    LC_TRY(opt_count(root, "num_kv_shared_layers", 0, &hp->shared_kv_layers, &have, err));
    if (hp->shared_kv_layers >= hp->block_count && hp->shared_kv_layers) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "num_kv_shared_layers %u is not below "
                "num_hidden_layers %u", hp->shared_kv_layers, hp->block_count);
        lc_err_context(err, NULL, "num_kv_shared_layers");
        return LC_E_MALFORMED;
    }
    LC_TRY(opt_count(root, "hidden_size_per_layer_input", 0, &hp->embd_per_layer_input, &have,
                     err));
    const cJSON *wide = cJSON_GetObjectItemCaseSensitive(root, "use_double_wide_mlp");
    if (cJSON_IsTrue(wide)) {
        lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "use_double_wide_mlp (a feed-forward "
                "length per layer) is not supported");
        lc_err_context(err, NULL, "use_double_wide_mlp");
        return LC_E_UNSUPPORTED;
    }
    uint32_t head_full = 0, kv_full = 0;
    LC_TRY(full_layers(root, "global_head_dim", "head_dim", hp, &head_full, &have, err));
    if (!have)
        return missing("global_head_dim", "nor a full layer's head_dim in per_layer_config",
                       err);
    if (head_full % 2)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "the full layers' head dimension %u "
                       "is odd", head_full);
    hp->head_dim = head_full;
    /* KV heads per layer only when both kinds are known (else the one count) */
    LC_TRY(full_layers(root, "num_global_key_value_heads", "num_key_value_heads", hp, &kv_full,
                       &have, err));
    const cJSON *kv_swa = cJSON_GetObjectItemCaseSensitive(root, "num_key_value_heads");
    if (have && hp->head_count % kv_full) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "num_attention_heads %u is not a multiple "
                "of the full layers' %u KV heads", hp->head_count, kv_full);
        lc_err_context(err, NULL, "num_global_key_value_heads");
        return LC_E_MALFORMED;
    }
    if (have && kv_swa && !cJSON_IsNull(kv_swa)) {
        for (uint32_t i = 0; i < hp->block_count; i++)
            hp->head_count_kv_layers[i] = hp->swa_layers[i] ? hp->head_count_kv : kv_full;
        hp->n_head_count_kv_layers = hp->block_count;
        hp->head_count_kv = hp->head_count_kv_layers[0];
    }
    /* find_hparam: the first of the two spellings present, null meaning none */
    const char *ff = cJSON_GetObjectItemCaseSensitive(root, "expert_intermediate_size")
                   ? "expert_intermediate_size" : "moe_intermediate_size";
    LC_TRY(opt_count(root, ff, 1, &hp->expert_ff_length, &have, err));
    return parse_proportional(root, hp, err);
}
