/* hf/vocab_hf.c: a SentencePiece-style BPE tokenizer.json (byte fallback, "▁" for
 * spaces) read as gguf-py's LlamaHfVocab reads it through transformers, for families
 * that write it under their own tokenizer model name (gemma4; see tokenizer.h).
 *
 * Tokens: model.vocab by id, then the added tokens whose ids lie past it, by id. Every
 * score is -1000. Types: "<0xXX>" byte tokens are BYTE; the ids of the special tokens
 * transformers lists (special_tokens_map.json's and tokenizer_config.json's
 * bos/eos/unk/sep/pad/cls/mask_token and additional_special_tokens) are CONTROL; other added tokens USER_DEFINED; the rest
 * NORMAL; then Gemma4Model.set_vocab's tokens that chat parsers must see are
 * USER_DEFINED whatever they were. The merges follow (SpecialVocab(load_merges=True)),
 * then the special ids and flags (hf/special.c). No tokenizer.ggml.pre is written. */
#include "hf/tokenizer.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hf/bpe.h"
#include "hf/json.h"
#include "hf/special.h"
#include "hf/vocab.h"
#include "libconvert/alloc.h"

/* Gemma4Model.set_vocab's always-rendered tokens. */
static const char *const VISIBLE[] = { "<|channel>", "<channel|>", "<|tool_call>",
    "<tool_call|>", "<|tool_response>", "<tool_response|>", "<|\"|>", NULL };

static bool is_type(const cJSON *obj, const char *type) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(obj, "type");
    return cJSON_IsString(t) && strcmp(t->valuestring, type) == 0;
}

static bool is_byte_token(const char *s) {
    static const char hex[] = "0123456789abcdefABCDEF";
    return strlen(s) == 6 && strncmp(s, "<0x", 3) == 0 && s[2 + 3] == '>' &&
           s[3] && strchr(hex, s[3]) && s[4] && strchr(hex, s[4]);
}

/* The id of token TEXT in model.vocab or added_tokens; -1 when neither has it. */
static int64_t id_of(const cJSON *vocab, const cJSON *added, const char *text) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(vocab, text);
    if (cJSON_IsNumber(j))
        return (int64_t)j->valuedouble;
    const cJSON *it;
    cJSON_ArrayForEach(it, added) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "content");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        if (cJSON_IsString(c) && cJSON_IsNumber(id) && strcmp(c->valuestring, text) == 0)
            return (int64_t)id->valuedouble;
    }
    return -1;
}

/* A special token entry: "text" or {"content": "text"}. */
static const char *special_text(const cJSON *j) {
    if (cJSON_IsString(j))
        return j->valuestring;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "content");
    return cJSON_IsString(c) ? c->valuestring : NULL;
}

/* Marks the ids of the special tokens transformers lists (all_special_ids) in is_special
 * (n entries). */
static lc_code mark_specials(const char *dir, const cJSON *vocab, const cJSON *added,
                             uint8_t *is_special, uint64_t n, lc_error *err) {
    static const char *const NAMED[] = { "bos_token", "eos_token", "unk_token", "sep_token",
                                         "pad_token", "cls_token", "mask_token", NULL };
    static const char *const FILES[] = { "special_tokens_map.json", "tokenizer_config.json",
                                         NULL };
    for (const char *const *f = FILES; *f; f++) {
        cJSON *tc;
        LC_TRY(lc_hf_json_load(dir, *f, true, &tc, err));
        for (const char *const *k = NAMED; tc && *k; k++) {
            const char *t = special_text(cJSON_GetObjectItemCaseSensitive(tc, *k));
            const int64_t id = t ? id_of(vocab, added, t) : -1;
            if (id >= 0 && (uint64_t)id < n)
                is_special[id] = 1;
        }
        /* transformers 5 writes the list as extra_special_tokens (read the same here;
         * the pinned converter's transformers 4.57 stops on it) */
        static const char *const LISTS[] = { "additional_special_tokens",
                                             "extra_special_tokens", NULL };
        for (const char *const *l = LISTS; tc && *l; l++) {
            const cJSON *list = cJSON_GetObjectItemCaseSensitive(tc, *l), *e;
            if (!cJSON_IsArray(list))
                continue;
            cJSON_ArrayForEach(e, list) {
                const char *t = special_text(e);
                const int64_t id = t ? id_of(vocab, added, t) : -1;
                if (id >= 0 && (uint64_t)id < n)
                    is_special[id] = 1;
            }
        }
        cJSON_Delete(tc);
    }
    return LC_OK;
}

static int visible_or(const char *text, int type) {
    for (const char *const *v = VISIBLE; *v; v++)
        if (strcmp(*v, text) == 0)
            return LC_TOK_USER_DEFINED;
    return type;
}

/* The base vocabulary (ids 0 .. n_base - 1, each present once) and the added tokens
 * past it into v. */
static lc_code fill(const char *dir, const cJSON *vocab, const cJSON *added, uint64_t n_base,
                    lc_hf_vocab *v, lc_error *err) {
    uint8_t *is_special = lc_calloc((size_t)v->n, 1);
    const char **text = lc_calloc((size_t)v->n, sizeof *text);
    lc_code rc = LC_OK;
    if (!is_special || !text) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    if ((rc = mark_specials(dir, vocab, added, is_special, v->n, err)) != LC_OK)
        goto done;
    const cJSON *it;
    cJSON_ArrayForEach(it, vocab) {
        int64_t id;
        if ((rc = lc_hf_json_int(it, "model.vocab id", 0, (int64_t)n_base - 1, &id, err)))
            goto done;
        if (text[id]) {
            rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "id %" PRId64 " appears twice in "
                         "model.vocab", id);
            goto done;
        }
        text[id] = it->string;
    }
    uint64_t i = 0;
    for (; i < n_base; i++) {
        const int type = is_byte_token(text[i]) ? LC_TOK_BYTE
                       : is_special[i] ? LC_TOK_CONTROL : LC_TOK_NORMAL;
        if ((rc = lc_hf_vocab_set(v, i, text[i], strlen(text[i]), -1000.0,
                                  visible_or(text[i], type), err)) != LC_OK)
            goto done;
    }
    /* added tokens past the base vocabulary, by id (checked dense by the caller) */
    for (; i < v->n; i++) {
        const char *t = NULL;
        cJSON_ArrayForEach(it, added) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
            if (cJSON_IsNumber(id) && (uint64_t)id->valuedouble == i)
                t = special_text(it);
        }
        if (!t) {
            rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "added token id %" PRIu64 " has no "
                         "content", i);
            goto done;
        }
        const int type = is_special[i] ? LC_TOK_CONTROL : LC_TOK_USER_DEFINED;
        if ((rc = lc_hf_vocab_set(v, i, t, strlen(t), -1000.0, visible_or(t, type), err)))
            goto done;
    }
done:
    lc_free(is_special);
    lc_free(text);
    return rc;
}

lc_code lc_hf_vocab_hf_to_gguf(const char *dir, const char *model_name, lc_model *m,
                               lc_error *err) {
    cJSON *tj = NULL;
    lc_hf_vocab v = { 0 };
    lc_value merges = { 0 };
    lc_code rc;
    char path[4096];
    LC_TRY(lc_hf_json_path(path, sizeof path, dir, "tokenizer.json", err));
    if ((rc = lc_hf_json_load(dir, "tokenizer.json", false, &tj, err)) != LC_OK)
        goto done;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(tj, "model");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(tj, "added_tokens");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!is_type(model, "BPE") ||
        !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "byte_fallback")) ||
        !is_type(cJSON_GetObjectItemCaseSensitive(tj, "decoder"), "Sequence")) {
        rc = lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "tokenizer.json is not a BPE "
                     "tokenizer with byte fallback (what %s's vocabulary is read from)",
                     model_name);
        goto done;
    }
    if (!cJSON_IsObject(vocab) || (added && !cJSON_IsArray(added)) || !cJSON_IsArray(list)) {
        rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "tokenizer.json needs model.vocab {}, "
                     "model.merges [] and added_tokens []");
        goto done;
    }
    /* the added tokens past the base vocabulary must follow it without gaps */
    const uint64_t n_base = (uint64_t)cJSON_GetArraySize(vocab);
    uint64_t n = n_base;
    const cJSON *it;
    cJSON_ArrayForEach(it, added) {
        int64_t id;
        if ((rc = lc_hf_json_int(cJSON_GetObjectItemCaseSensitive(it, "id"), "added_tokens id",
                                 0, UINT32_MAX - 1, &id, err)) != LC_OK)
            goto done;
        n += (uint64_t)id >= n_base;
    }
    if ((rc = lc_hf_vocab_init(&v, n, err)) != LC_OK ||
        (rc = fill(dir, vocab, added, n_base, &v, err)) != LC_OK ||
        (rc = lc_hf_bpe_merges(list, &merges, err)) != LC_OK)
        goto done;
    if ((rc = lc_model_set_meta_str(m, "tokenizer.ggml.model", model_name, err)) != LC_OK)
        goto done;
    lc_value tokens;
    if ((rc = lc_hf_vocab_tokens(&v, &tokens, err)) != LC_OK ||
        (rc = lc_model_set_meta(m, "tokenizer.ggml.tokens", &tokens, err)) != LC_OK ||
        (rc = lc_model_set_meta(m, "tokenizer.ggml.scores", &v.scores, err)) != LC_OK ||
        (rc = lc_model_set_meta(m, "tokenizer.ggml.token_type", &v.types, err)) != LC_OK)
        goto done;
    if (merges.arr.count && (rc = lc_model_set_meta(m, "tokenizer.ggml.merges", &merges, err)))
        goto done;
    if ((rc = lc_hf_special_to_gguf(dir, tj, n, m, err)) != LC_OK)
        goto done;
    /* Gemma4Model.set_vocab's last words */
    if ((rc = lc_hf_json_meta_bool(m, "tokenizer.ggml.add_space_prefix", false, err)) == LC_OK)
        rc = lc_hf_json_meta_bool(m, "tokenizer.ggml.add_bos_token", true, err);
done:
    lc_value_clear(&merges);
    lc_hf_vocab_clear(&v);
    cJSON_Delete(tj);
    lc_err_context(err, path, NULL);
    return rc;
}
