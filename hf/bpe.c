/* hf/bpe.c: tokenizer.json (byte-level BPE) -> GGUF "gpt2" vocabulary.
 *
 * Layout read (the tokenizers library's JSON):
 *   { "added_tokens": [ {"id": 360, "content": "<|x|>", "special": true, ...}, ... ],
 *     "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
 *         {"type": "Split", "pattern": {"Regex": "..."}, "behavior": "Isolated", ...},
 *         {"type": "ByteLevel", "use_regex": false, ...}]}          (or one ByteLevel),
 *     "decoder": {"type": "ByteLevel", ...},
 *     "model": {"type": "BPE", "byte_fallback": false, "vocab": {"token": id, ...},
 *               "merges": ["a b", ...] or [["a", "b"], ...]} } */
#include <inttypes.h>
#include <string.h>

#include "hf/bpe.h"
#include "hf/json.h"
#include "hf/vocab.h"
#include "libconvert/alloc.h"

/* The split regexes llama.cpp's pre-tokenizers implement, as tokenizer.json spells them. */
static const struct {
    const char *name;
    const char *regex;
} PRE_REGEX[] = {
    { "llama-bpe",
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
      " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
    { "qwen2",
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|"
      " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
    /* Qwen3.5's: letters keep their combining marks (\\p{M}) */
    { "qwen35",
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}|"
      " ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
};

static bool is_type(const cJSON *o, const char *type) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(t) && strcmp(t->valuestring, type) == 0;
}

/* ByteLevel with the given use_regex (tokenizers' default is true). */
static bool is_byte_level(const cJSON *o, bool use_regex) {
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "use_regex");
    return is_type(o, "ByteLevel") && (u ? cJSON_IsTrue(u) : true) == use_regex;
}

lc_code lc_hf_bpe_pre(const cJSON *tj, const char **name, lc_error *err) {
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(tj, "pre_tokenizer");
    if (is_byte_level(pt, true)) {
        *name = "gpt-2";
        return LC_OK;
    }
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(pt, "pretokenizers");
    if (is_type(pt, "Sequence") && cJSON_GetArraySize(seq) == 2 &&
        is_byte_level(cJSON_GetArrayItem(seq, 1), false)) {
        const cJSON *split = cJSON_GetArrayItem(seq, 0);
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(split, "pattern");
        const cJSON *re = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
        const cJSON *beh = cJSON_GetObjectItemCaseSensitive(split, "behavior");
        const cJSON *inv = cJSON_GetObjectItemCaseSensitive(split, "invert");
        if (is_type(split, "Split") && cJSON_IsString(re) && cJSON_IsString(beh) &&
            strcmp(beh->valuestring, "Isolated") == 0 && !cJSON_IsTrue(inv)) {
            for (size_t i = 0; i < sizeof PRE_REGEX / sizeof *PRE_REGEX; i++) {
                if (strcmp(re->valuestring, PRE_REGEX[i].regex) == 0) {
                    *name = PRE_REGEX[i].name;
                    return LC_OK;
                }
            }
        }
    }
    return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                   "the pre_tokenizer in tokenizer.json is not one we recognise "
                   "(llama-bpe, qwen2, qwen35, gpt-2); pass --pre NAME to name it");
}

/* Copies s, writing each space as U+0120 (c4 a0), the byte-level alphabet's space;
 * with buf NULL only counts. */
static size_t put_part(char *buf, size_t n, const char *s) {
    for (; *s; s++) {
        if (*s == ' ') {
            if (buf) {
                buf[n] = (char)0xc4;
                buf[n + 1] = (char)0xa0;
            }
            n += 2;
        } else {
            if (buf)
                buf[n] = *s;
            n++;
        }
    }
    return n;
}

/* One merge as GGUF wants it: "a b". Spaces inside a or b are re-encoded so the one
 * separator stays unambiguous, as gguf-py does for the pair form. Writes it to buf
 * (NULL: only counts) and returns its length, or SIZE_MAX for an item that is
 * neither form. */
static size_t merge_text(const cJSON *it, char *buf) {
    const cJSON *a = cJSON_GetArrayItem(it, 0), *b = cJSON_GetArrayItem(it, 1);
    if (cJSON_IsString(it)) {
        size_t n = strlen(it->valuestring);
        if (buf)
            memcpy(buf, it->valuestring, n);
        return n;
    }
    if (cJSON_GetArraySize(it) != 2 || !cJSON_IsString(a) || !cJSON_IsString(b))
        return SIZE_MAX;
    size_t n = put_part(buf, 0, a->valuestring);
    if (buf)
        buf[n] = ' ';
    return put_part(buf, n + 1, b->valuestring);
}

/* Into one packed string array: the first pass checks every item and sums the
 * texts, the second writes them. */
lc_code lc_hf_bpe_merges(const cJSON *list, lc_value *merges, lc_error *err) {
    const cJSON *it;
    uint64_t i = 0, bytes = 0;
    size_t longest = 0;
    cJSON_ArrayForEach(it, list) {
        size_t n = merge_text(it, NULL);
        if (n == SIZE_MAX)
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                           "merge %" PRIu64 " is neither \"a b\" nor [\"a\", \"b\"]", i);
        bytes += n;
        longest = n > longest ? n : longest;
        i++;
    }
    char *buf = lc_malloc(longest + 1);
    if (!buf)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_code rc = lc_value_string_array(merges, i, bytes, err);
    i = 0;
    cJSON_ArrayForEach(it, list) {
        if (rc != LC_OK)
            break;
        rc = lc_value_arr_set_str(merges, i++, buf, merge_text(it, buf), err);
    }
    lc_free(buf);
    return rc;
}

/* Highest id in model.vocab and added_tokens, checking each is an integer. */
static lc_code max_id(const cJSON *vocab, const cJSON *added, int64_t *max, lc_error *err) {
    const cJSON *it;
    int64_t id;
    *max = -1;
    cJSON_ArrayForEach(it, vocab) {
        LC_TRY(lc_hf_json_int(it, "model.vocab id", 0, UINT32_MAX - 1, &id, err));
        *max = id > *max ? id : *max;
    }
    cJSON_ArrayForEach(it, added) {
        LC_TRY(lc_hf_json_int(cJSON_GetObjectItemCaseSensitive(it, "id"), "added_tokens id", 0,
                              UINT32_MAX - 1, &id, err));
        *max = id > *max ? id : *max;
    }
    return LC_OK;
}

static lc_code fill(const cJSON *vocab, const cJSON *added, lc_hf_vocab *v, lc_error *err) {
    uint8_t *seen = lc_calloc((size_t)v->n, 1);
    lc_code rc = LC_OK;
    if (!seen)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    const cJSON *it;
    cJSON_ArrayForEach(it, vocab) {
        uint64_t id = (uint64_t)it->valuedouble;   /* checked by max_id */
        if (seen[id]++) {
            rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "id %" PRIu64 " appears twice in "
                         "model.vocab", id);
            goto done;
        }
        if ((rc = lc_hf_vocab_set(v, id, it->string, strlen(it->string), 0.0, LC_TOK_NORMAL,
                                  err)) != LC_OK)
            goto done;
    }
    /* Added tokens may repeat a vocab entry (same id); they then take its type. */
    cJSON_ArrayForEach(it, added) {
        uint64_t id = (uint64_t)cJSON_GetObjectItemCaseSensitive(it, "id")->valuedouble;
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsString(content)) {
            rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "added token %" PRIu64
                         " has no content", id);
            goto done;
        }
        bool special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "special"));
        if ((rc = lc_hf_vocab_set_added(v, id, content->valuestring, special, 0.0, err)))
            goto done;
    }
done:
    lc_free(seen);
    return rc;
}

lc_code lc_hf_bpe_vocab(const cJSON *tj, uint32_t cfg_vocab, uint64_t max_pad, lc_hf_vocab *v,
                        lc_value *merges, lc_error *err) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(tj, "model");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(tj, "added_tokens");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(tj, "decoder");
    int64_t max;
    memset(v, 0, sizeof *v);
    memset(merges, 0, sizeof *merges);
    if (!is_type(model, "BPE") || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model,
                                                                             "byte_fallback")) ||
        !is_type(dec, "ByteLevel"))
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                       "tokenizer.json is not a byte-level BPE tokenizer (and the folder has "
                       "no tokenizer.model)");
    if (!cJSON_IsObject(vocab) || (added && !cJSON_IsArray(added)) || !cJSON_IsArray(list))
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                       "tokenizer.json needs model.vocab {}, model.merges [] and added_tokens []");
    LC_TRY(max_id(vocab, added, &max, err));
    /* llama.cpp sizes the vocabulary from config.json and insists every id fits. */
    uint64_t n = cfg_vocab ? cfg_vocab : (uint64_t)(max + 1);
    if (max >= 0 && (uint64_t)max >= n)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                       "token id %" PRId64 " is past config.json's vocab_size %" PRIu64, max, n);
    LC_TRY(lc_hf_vocab_check_pad(n, (uint64_t)(max + 1), max_pad, err));
    LC_TRY(lc_hf_vocab_init(v, n, err));
    lc_code rc = fill(vocab, added, v, err);
    if (rc == LC_OK)
        rc = lc_hf_bpe_merges(list, merges, err);
    if (rc != LC_OK) {
        lc_hf_vocab_clear(v);
        lc_value_clear(merges);
    }
    return rc;
}
