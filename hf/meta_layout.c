/* hf/meta_layout.c: Meta's original llama folder -> the lc_hf_config and GGUF
 * tensor names lc_hf_to_gguf builds from (see hf_meta_layout.h).
 *
 * params.json (one JSON object; '?' marks optional fields):
 *   dim int > 0            -> embedding_length
 *   n_layers int > 0       -> block_count
 *   n_heads int > 0        -> head_count (dim must be a multiple of it)
 *   n_kv_heads? int > 0    -> head_count_kv (default n_heads; must divide n_heads)
 *   vocab_size? int        -> vocab_size when > 0; -1 or absent: tok_embeddings rows
 *   multiple_of? int > 0, ffn_dim_multiplier? number > 0 | null
 *                          -> checked against layers.0.feed_forward.w1 rows (Meta's
 *                             rule: h = int(2 * 4 * dim / 3); h = int(mult * h);
 *                             round h up to multiple_of)
 *   norm_eps number > 0    -> attention.layer_norm_rms_epsilon
 *   rope_theta? number > 0 -> rope.freq_base (default 10000)
 *   max_seq_len? int > 0   -> context_length (else convert.py's guess, see the header)
 *   use_scaled_rope? bool  -> true refused (Llama 3.1 factors not made here)
 *   moe?                   -> refused (Mixtral's experts)
 * State dict names (consolidated.00.pth) are the "meta" spellings of arch/llama.c:
 * tok_embeddings.weight, norm.weight, output.weight, rope.freqs (dropped),
 * layers.N.attention.w{q,k,v,o}.weight, layers.N.feed_forward.w{1,2,3}.weight,
 * layers.N.{attention,ffn}_norm.weight. */
#include "hf/meta_layout.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hf/json.h"
#include "formats/pth.h"

bool lc_hf_meta_layout_is(const char *dir) {
    return !lc_hf_json_exists(dir, "config.json") && lc_hf_json_exists(dir, "params.json") &&
           lc_hf_json_exists(dir, "consolidated.00.pth");
}

lc_code lc_hf_meta_layout_load(const char *dir, lc_model **out, lc_error *err) {
    char path[4096];
    *out = NULL;
    if (lc_hf_json_exists(dir, "consolidated.01.pth")) {
        lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "consolidated.01.pth is there: "
                "model-parallel shards (split along per-tensor dimensions) are not merged; "
                "only a single consolidated.00.pth converts");
        lc_err_context(err, dir, NULL);
        return LC_E_UNSUPPORTED;
    }
    LC_TRY(lc_hf_json_path(path, sizeof path, dir, "consolidated.00.pth", err));
    return lc_pth_load(path, NULL, out, err);
}

/* A required (or, with def != NULL, optional) integer in [lo, hi]. */
static lc_code get_int(const cJSON *root, const char *key, int64_t lo, int64_t hi,
                       const int64_t *def, int64_t *v, lc_error *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j || (def && cJSON_IsNull(j))) {
        if (!def)
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "params.json has no %s", key);
        *v = *def;
        return LC_OK;
    }
    return lc_hf_json_int(j, key, lo, hi, v, err);
}

/* A positive finite number; *v keeps its default when the key is absent or null. */
static lc_code get_num(const cJSON *root, const char *key, bool required, double *v,
                       lc_error *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j || cJSON_IsNull(j)) {
        if (required)
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "params.json has no %s", key);
        return LC_OK;
    }
    if (!cJSON_IsNumber(j) || !(j->valuedouble > 0) || !isfinite(j->valuedouble))
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s must be a positive number", key);
    *v = j->valuedouble;
    return LC_OK;
}

/* Meta's FeedForward hidden size for dim (< 2^32), multiple_of (< 2^32) and an optional
 * multiplier (0: none), with Python's int() truncation; UINT64_MAX when the multiplier
 * takes it past 2^32 (no tensor has that many rows; the cast would overflow). */
static uint64_t meta_ffn(uint64_t dim, uint64_t multiple_of, double mult) {
    double h = (double)(uint64_t)(2.0 * (double)(4 * dim) / 3.0);
    if (mult > 0)
        h = mult * h;
    if (!(h < 4294967296.0))
        return UINT64_MAX;
    const uint64_t hi = (uint64_t)h;
    return multiple_of * ((hi + multiple_of - 1) / multiple_of);
}

static lc_code parse(const cJSON *root, uint64_t vocab_rows, uint64_t ff_rows, lc_hf_config *c,
                     lc_error *err) {
    int64_t dim, layers, heads, kv, vocab, ctx = 0, mof = 0;
    const int64_t minus1 = -1, zero = 0;
    if (!cJSON_IsObject(root))
        return lc_fail(err, LC_E_MALFORMED, 0, "params.json is not a JSON object");
    if (cJSON_GetObjectItemCaseSensitive(root, "moe"))
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                       "params.json has moe: mixture-of-experts checkpoints do not convert");
    const cJSON *sr = cJSON_GetObjectItemCaseSensitive(root, "use_scaled_rope");
    if (sr && !cJSON_IsBool(sr))
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "use_scaled_rope must be a bool");
    if (cJSON_IsTrue(sr))
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "params.json has use_scaled_rope "
                       "true: llama3 rope factors are not made for Meta folders");
    LC_TRY(get_int(root, "dim", 1, UINT32_MAX, NULL, &dim, err));
    LC_TRY(get_int(root, "n_layers", 1, UINT16_MAX, NULL, &layers, err));
    LC_TRY(get_int(root, "n_heads", 1, UINT32_MAX, NULL, &heads, err));
    LC_TRY(get_int(root, "n_kv_heads", 1, UINT32_MAX, &heads, &kv, err));
    LC_TRY(get_int(root, "vocab_size", -1, UINT32_MAX, &minus1, &vocab, err));
    LC_TRY(get_int(root, "max_seq_len", 1, UINT32_MAX, &zero, &ctx, err));
    LC_TRY(get_int(root, "multiple_of", 1, UINT32_MAX, &zero, &mof, err));
    double eps = 0, theta = 10000, mult = 0;
    LC_TRY(get_num(root, "norm_eps", true, &eps, err));
    LC_TRY(get_num(root, "rope_theta", false, &theta, err));
    LC_TRY(get_num(root, "ffn_dim_multiplier", false, &mult, err));
    if (vocab == 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "vocab_size must not be 0");
    if (dim % heads != 0 || (dim / heads) % 2 != 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "dim %" PRId64 " is not a multiple "
                       "of n_heads %" PRId64 " with an even head size", dim, heads);
    if (heads % kv != 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "n_heads %" PRId64 " is not a "
                       "multiple of n_kv_heads %" PRId64, heads, kv);
    if (vocab_rows == 0)
        return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET,
                       "the checkpoint has no 2-D tok_embeddings.weight");
    if (ff_rows == 0)
        return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET,
                       "the checkpoint has no 2-D layers.0.feed_forward.w1.weight");
    if (ff_rows > UINT32_MAX || vocab_rows > UINT32_MAX)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "tensor rows %" PRIu64 " or %"
                       PRIu64 " do not fit 32 bits", vocab_rows, ff_rows);
    if (mof > 0 && meta_ffn((uint64_t)dim, (uint64_t)mof, mult) == UINT64_MAX)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "ffn_dim_multiplier %g makes a "
                       "feed-forward size past 32 bits", mult);
    if (mof > 0 && meta_ffn((uint64_t)dim, (uint64_t)mof, mult) != ff_rows)
        return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "layers.0.feed_forward.w1.weight has "
                       "%" PRIu64 " rows but dim %" PRId64 ", multiple_of %" PRId64 " and "
                       "ffn_dim_multiplier %g imply %" PRIu64, ff_rows, dim, mof, mult,
                       meta_ffn((uint64_t)dim, (uint64_t)mof, mult));
    if (ctx == 0)   /* llama.cpp's legacy convert.py guess (no Meta params.json has it) */
        ctx = theta == 1000000 ? 16384 : eps == 1e-5 ? 4096 : 2048;
    memset(c, 0, sizeof *c);
    /* Meta released llama in this layout; its table row spellings are the "meta" column
     * of arch/llama.c. */
    c->arch = lc_arch_by_name("llama");
    lc_hparams *hp = &c->hp;
    hp->context_length = (uint32_t)ctx;
    hp->embedding_length = (uint32_t)dim;
    hp->block_count = (uint32_t)layers;
    hp->feed_forward_length = (uint32_t)ff_rows;
    hp->head_count = (uint32_t)heads;
    hp->head_count_kv = (uint32_t)kv;
    hp->head_dim = (uint32_t)(dim / heads);
    hp->rope_dim = hp->head_dim;
    hp->vocab_size = vocab > 0 ? (uint32_t)vocab : (uint32_t)vocab_rows;
    hp->rms_eps = eps;
    hp->rope_theta = theta;
    return c->arch ? LC_OK : lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "no llama table");
}

lc_code lc_hf_meta_layout_config(const char *json, size_t len, uint64_t vocab_rows,
                                 uint64_t ff_rows, lc_hf_config *out, lc_error *err) {
    cJSON *root;
    LC_TRY(lc_hf_json_parse(json, len, &root, err));
    lc_hf_config c;
    lc_code rc = parse(root, vocab_rows, ff_rows, &c, err);
    cJSON_Delete(root);
    if (rc == LC_OK)
        *out = c;
    return rc;
}
