/* hf/tokenizer.c: picks the tokenizer file of an HF folder and turns it into
 * GGUF tokenizer.* keys (see hf/tokenizer.h for the files and keys). The SentencePiece
 * path lives here; tokenizer.json BPE is hf/bpe.c, special tokens hf/special.c. */
#include "hf/tokenizer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hf/bpe.h"
#include "hf/json.h"
#include "hf/special.h"
#include "hf/vocab.h"
#include "hf/spm.h"
#include "libconvert/alloc.h"
#include "libconvert/map.h"

/* ---- overrides shared by both paths ---- */

/* tokenizer_config.json added_tokens_decoder {"<id>": {"content", "special"}} and the
 * older added_tokens.json {"content": id}, applied over v like llama.cpp's SentencePiece
 * path (score -1000). Ids past the vocabulary are skipped, as there. */
/* Phi3MiniModel's rule for one added token: its text, score -1000, control when
 * special else user-defined, whatever the token looks like. */
static lc_code set_added_phi3(lc_hf_vocab *v, uint64_t id, const char *content, bool special,
                              lc_error *err) {
    return lc_hf_vocab_set(v, id, content, strlen(content), -1000.0,
                           special ? LC_TOK_CONTROL : LC_TOK_USER_DEFINED, err);
}

/* Phi3MiniModel's pass over tokenizer.json's added_tokens [{"id", "content", "special"}]. */
static lc_code apply_added_json(const cJSON *tj, lc_hf_vocab *v, lc_error *err) {
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(tj, "added_tokens")) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        int64_t i;
        if (!cJSON_IsString(content))
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "tokenizer.json added token "
                           "without a content");
        LC_TRY(lc_hf_json_int(id, "tokenizer.json added token id", 0, INT64_MAX, &i, err));
        if ((uint64_t)i >= v->n)
            continue;
        LC_TRY(set_added_phi3(v, (uint64_t)i, content->valuestring,
                              cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "special")), err));
    }
    return LC_OK;
}

static lc_code apply_added(const char *dir, lc_hf_vocab *v, bool phi3, lc_error *err) {
    cJSON *j = NULL;
    const char *file = "added_tokens.json";
    lc_code rc;
    LC_TRY(lc_hf_json_load(dir, file, true, &j, err));
    const cJSON *it;
    if (j && !cJSON_IsObject(j)) {
        rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "added_tokens.json is not an object");
        goto done;
    }
    cJSON_ArrayForEach(it, j) {
        int64_t id;
        if ((rc = lc_hf_json_int(it, "added_tokens.json id", 0, INT64_MAX, &id, err)) != LC_OK)
            goto done;
        if ((uint64_t)id >= v->n)
            continue;
        rc = lc_hf_vocab_set(v, (uint64_t)id, it->string, strlen(it->string), -1000.0,
                             LC_TOK_USER_DEFINED, err);
        if (rc != LC_OK)
            goto done;
    }
    cJSON_Delete(j);
    j = NULL;
    file = "tokenizer_config.json";
    LC_TRY(lc_hf_json_load(dir, file, true, &j, err));
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(j, "added_tokens_decoder");
    if (dec && !cJSON_IsObject(dec)) {
        rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "added_tokens_decoder is not an object");
        goto done;
    }
    cJSON_ArrayForEach(it, dec) {
        char *end;
        unsigned long long id = strtoull(it->string, &end, 10);
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (*it->string < '0' || *it->string > '9' || *end != '\0' || !cJSON_IsString(content)) {
            rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                         "added_tokens_decoder entry \"%.40s\" needs a numeric key and a content",
                         it->string);
            goto done;
        }
        if (id >= v->n)
            continue;
        bool special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "special"));
        rc = phi3 ? set_added_phi3(v, id, content->valuestring, special, err)
                  : lc_hf_vocab_set_added(v, id, content->valuestring, special, -1000.0, err);
        if (rc != LC_OK)
            goto done;
    }
    rc = LC_OK;
done:
    cJSON_Delete(j);
    if (rc != LC_OK) {
        char path[4096];
        if (lc_hf_json_path(path, sizeof path, dir, file, NULL) == LC_OK)
            lc_err_context(err, path, NULL);
    }
    return rc;
}

/* Moves the finished arrays into m (m takes them even on failure). */
static lc_code vocab_to_gguf(lc_hf_vocab *v, bool scores, lc_model *m, lc_error *err) {
    lc_value tokens;
    lc_code rc = lc_hf_vocab_tokens(v, &tokens, err);
    if (rc == LC_OK)
        rc = lc_model_set_meta(m, "tokenizer.ggml.tokens", &tokens, err);
    if (rc == LC_OK && scores)
        rc = lc_model_set_meta(m, "tokenizer.ggml.scores", &v->scores, err);
    if (rc == LC_OK)
        rc = lc_model_set_meta(m, "tokenizer.ggml.token_type", &v->types, err);
    lc_hf_vocab_clear(v);
    return rc;
}

/* ---- the two paths ---- */

static lc_code spm_to_gguf(const char *dir, uint32_t cfg_vocab, uint64_t max_pad,
                           const lc_arch *arch, lc_model *m, lc_error *err) {
    const bool phi3 = arch && arch->spm_added_as_phi3;
    /* SpecialVocab reads tokenizer.json whenever the folder has one (transformers 5
     * saves it beside tokenizer.model, with the post-processor that says add_bos). */
    cJSON *tj = NULL;
    char path[4096];
    lc_map *map = NULL;
    lc_hf_spm *spm = NULL;
    lc_hf_vocab v = { 0 };
    lc_code rc;
    LC_TRY(lc_hf_json_path(path, sizeof path, dir, "tokenizer.model", err));
    if ((rc = lc_map_open(path, &map, err)) != LC_OK)
        goto done;
    if ((rc = lc_hf_spm_parse(map->data, map->size, 0, &spm, err)) != LC_OK)
        goto done;
    /* config.json's vocab_size wins, as in llama.cpp: extra ids become [PAD<i>]. */
    uint64_t n = cfg_vocab ? cfg_vocab : spm->n_pieces;
    if ((rc = lc_hf_vocab_check_pad(n, spm->n_pieces, max_pad, err)) != LC_OK ||
        (rc = lc_hf_vocab_init(&v, n, err)) != LC_OK)
        goto done;
    for (uint64_t i = 0; i < spm->n_pieces && i < n; i++) {
        const lc_hf_spm_piece *p = &spm->pieces[i];
        /* llama.cpp asks IsUnknown/IsControl/IsUnused/IsByte; user-defined is normal. */
        int type = p->type == LC_SPM_USER_DEFINED ? LC_TOK_NORMAL : p->type;
        if ((rc = lc_hf_vocab_set(&v, i, p->text, p->len, p->score, type, err)) != LC_OK)
            goto done;
    }
    lc_err_context(err, path, NULL);
    if ((rc = apply_added(dir, &v, phi3, err)) != LC_OK ||
        (rc = lc_hf_json_load(dir, "tokenizer.json", true, &tj, err)) != LC_OK ||
        (phi3 && (rc = apply_added_json(tj, &v, err)) != LC_OK))
        goto done;
    if ((rc = lc_model_set_meta_str(m, "tokenizer.ggml.model", "llama", err)) != LC_OK ||
        (rc = lc_model_set_meta_str(m, "tokenizer.ggml.pre", "default", err)) != LC_OK)
        goto done;
    n = v.n;
    if ((rc = vocab_to_gguf(&v, true, m, err)) != LC_OK)
        goto done;
    rc = lc_hf_special_to_gguf(dir, tj, n, m, err);
done:
    cJSON_Delete(tj);
    lc_hf_vocab_clear(&v);
    lc_hf_spm_free(spm);
    lc_map_close(map);
    lc_err_context(err, path, NULL);
    return rc;
}

static lc_code bpe_to_gguf(const char *dir, uint32_t cfg_vocab, uint64_t max_pad, const char *pre,
                           lc_model *m, lc_error *err) {
    cJSON *tj = NULL;
    lc_hf_vocab v = { 0 };
    lc_value merges = { 0 };
    lc_code rc;
    char path[4096];
    LC_TRY(lc_hf_json_path(path, sizeof path, dir, "tokenizer.json", err));
    if ((rc = lc_hf_json_load(dir, "tokenizer.json", false, &tj, err)) != LC_OK)
        goto done;
    if (!pre && (rc = lc_hf_bpe_pre(tj, &pre, err)) != LC_OK)
        goto done;
    if ((rc = lc_hf_bpe_vocab(tj, cfg_vocab, max_pad, &v, &merges, err)) != LC_OK)
        goto done;
    if ((rc = lc_model_set_meta_str(m, "tokenizer.ggml.model", "gpt2", err)) != LC_OK ||
        (rc = lc_model_set_meta_str(m, "tokenizer.ggml.pre", pre, err)) != LC_OK)
        goto done;
    uint64_t n = v.n;
    if ((rc = vocab_to_gguf(&v, false, m, err)) != LC_OK)
        goto done;
    /* gguf-py writes no key for an empty array. */
    if (merges.arr.count && (rc = lc_model_set_meta(m, "tokenizer.ggml.merges", &merges, err)))
        goto done;
    rc = lc_hf_special_to_gguf(dir, tj, n, m, err);
done:
    lc_value_clear(&merges);
    lc_hf_vocab_clear(&v);
    cJSON_Delete(tj);
    lc_err_context(err, path, NULL);
    return rc;
}

lc_code lc_hf_tokenizer_to_gguf(const char *dir, uint32_t cfg_vocab, uint64_t max_pad,
                                const char *pre, const lc_arch *arch,
                                lc_model *m, lc_error *err) {
    if (arch && arch->hf_vocab_model)
        return lc_hf_vocab_hf_to_gguf(dir, arch->hf_vocab_model, m, err);
    if (lc_hf_json_exists(dir, "tokenizer.model"))
        return spm_to_gguf(dir, cfg_vocab, max_pad, arch, m, err);
    if (lc_hf_json_exists(dir, "tokenizer.json"))
        return bpe_to_gguf(dir, cfg_vocab, max_pad, pre, m, err);
    lc_code rc = lc_fail(err, LC_E_NOTFOUND, LC_NO_OFFSET,
                         "the folder has neither tokenizer.model nor tokenizer.json");
    lc_err_context(err, dir, NULL);
    return rc;
}

lc_code lc_hf_tokenizer_pre(const char *json, size_t len, const char **name, lc_error *err) {
    cJSON *tj;
    LC_TRY(lc_hf_json_parse(json, len, &tj, err));
    lc_code rc = lc_hf_bpe_pre(tj, name, err);
    cJSON_Delete(tj);
    return rc;
}
