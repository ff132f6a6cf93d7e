/* infer/tokenize.c: the tokenizer built from GGUF tokenizer metadata, and encode/decode.
 *
 * Keys read, with the types llama.cpp's loader accepts (anything else is refused, as
 * llama.cpp refuses to load it):
 *   tokenizer.ggml.model           string   "llama" (SentencePiece), "gpt2" (BPE) or
 *                                  "gemma4" (BPE over raw UTF-8 with spaces as U+2581;
 *                                  no BOS/EOS defaults, add_bos forced on as llama.cpp
 *                                  forces it)
 *   tokenizer.ggml.pre             string   BPE pre-tokenizer (absent: "default")
 *   tokenizer.ggml.tokens          string[] the vocabulary in id order
 *   tokenizer.ggml.scores          f32[] or i32[], >= n tokens (absent: 0)
 *   tokenizer.ggml.token_type      i32[], >= n tokens: 1 normal, 2 unknown, 3 control,
 *                                  4 user-defined, 5 unused, 6 byte (absent: normal)
 *   tokenizer.ggml.merges          string[] "left right", rank = index (BPE, required)
 *   tokenizer.ggml.add_space_prefix bool    (SentencePiece; default true)
 *   tokenizer.ggml.{bos,eos}_token_id u32   defaults 1/2 (llama), 11/11 (gpt2); an id
 *                                  outside the vocabulary keeps the default
 *   tokenizer.ggml.add_{bos,eos}_token bool defaults: bos for llama and llama-bpe
 * plus llama.cpp's repairs: an empty token text reads "[EMPTY_<id>]", and tokens whose
 * text names an end-of-turn or fill-in-the-middle marker ("<|eot_id|>", "<|im_end|>",
 * ...) are control tokens whatever their type says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/tokenize_impl.h"
#include "libconvert/alloc.h"

/* ---- reading the keys ---- */

static lc_code key_fail(lc_error *err, lc_code code, const char *key, const char *msg) {
    lc_fail(err, code, LC_NO_OFFSET, "%s", msg);
    lc_err_context(err, NULL, key);
    return code;
}

/* An array of ELEM items at KEY, or NULL when absent; wrong types fail. */
static lc_code get_array(const lc_model *m, const char *key, lc_vtype e1, lc_vtype e2,
                         const lc_value **out, lc_error *err) {
    const lc_value *v = lc_model_find_meta(m, key);
    *out = NULL;
    if (!v)
        return LC_OK;
    if (v->type != LC_VT_ARRAY || (v->arr.elem != e1 && v->arr.elem != e2)) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "is %s%s%s, expected an array of %s%s%s",
                lc_vtype_name(v->type), v->type == LC_VT_ARRAY ? " of " : "",
                v->type == LC_VT_ARRAY ? lc_vtype_name(v->arr.elem) : "", lc_vtype_name(e1),
                e2 != e1 ? " or " : "", e2 != e1 ? lc_vtype_name(e2) : "");
        lc_err_context(err, NULL, key);
        return LC_E_MALFORMED;
    }
    *out = v;
    return LC_OK;
}

static lc_code get_bool(const lc_model *m, const char *key, bool *b, lc_error *err) {
    const lc_value *v = lc_model_find_meta(m, key);
    if (!v)
        return LC_OK;
    if (v->type != LC_VT_BOOL)
        return key_fail(err, LC_E_MALFORMED, key, "is not a bool");
    *b = v->b;
    return LC_OK;
}

/* A u32 token id at KEY: inside the vocabulary it replaces *id, outside it is ignored
 * (llama.cpp warns and keeps its default). */
static lc_code get_id(const lc_model *m, const char *key, uint32_t n_vocab, int32_t *id,
                      lc_error *err) {
    const lc_value *v = lc_model_find_meta(m, key);
    if (!v)
        return LC_OK;
    if (v->type != LC_VT_U32)
        return key_fail(err, LC_E_MALFORMED, key, "is not a u32 token id");
    if (v->u < n_vocab)
        *id = (int32_t)v->u;
    return LC_OK;
}

static const char *get_str(const lc_model *m, const char *key) {
    const lc_value *v = lc_model_find_meta(m, key);
    return v && v->type == LC_VT_STRING ? v->str.ptr : NULL;
}

/* tokenizer.ggml.pre names llama.cpp maps to the splits we implement: llama.cpp's own
 * list, generated from its source (scripts/gen_pre_names.py). */
static const struct {
    const char *name;
    enum lc_tok_pre pre;
    bool ignore_merges, add_bos;
} PRE_NAMES[] = {
#include "infer/tokenize_pre_names_impl.h"
};

/* Token texts llama.cpp treats as control tokens whatever their type (its end-of-turn,
 * end-of-generation and fill-in-the-middle lists). llama.cpp marks only the first
 * fill-in-the-middle token of each kind it meets (in hash order) and none when the GGUF
 * names one by id; we mark every one: a vocabulary with two spellings of one marker is
 * the only place that could differ. */
static const char *const CONTROL_TEXTS[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|eom_id|>",
    "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "</s>", "<end_of_utterance>",
    "<eos>", "<turn|>", "<|tool_response>", "[e~[",
    "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>",
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
    "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>", "\xe2\x96\x81<PRE>",
    "<|code_prefix|>", "<|prefix|>",
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
    "<\xef\xbd\x9c" "fim\xe2\x96\x81" "hole\xef\xbd\x9c>", "<SUF>", "\xe2\x96\x81<SUF>",
    "<|code_suffix|>", "<|suffix|>",
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>",
    "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", "<MID>", "\xe2\x96\x81<MID>",
    "<|code_middle|>", "<|middle|>",
    "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]",
    "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>",
};

static uint8_t attr_of_type(int64_t type) {
    switch (type) {
    case 1: return LC_TA_NORMAL;
    case 2: return LC_TA_UNKNOWN;
    case 3: return LC_TA_CONTROL;
    case 4: return LC_TA_USER_DEFINED;
    case 5: return LC_TA_UNUSED;
    case 6: return LC_TA_BYTE;
    default: return 0;   /* undefined */
    }
}

static int32_t find_text(const lc_tok *tok, const char *s) {
    return (int32_t)lc_tok_index_find(&tok->vocab, s, strlen(s));
}

/* llama.cpp's text-based repairs of token attributes. */
static void fix_attrs(lc_tok *tok) {
    for (size_t i = 0; i < sizeof CONTROL_TEXTS / sizeof *CONTROL_TEXTS; i++) {
        int32_t id = find_text(tok, CONTROL_TEXTS[i]);
        if (id >= 0)
            tok->attr[id] |= LC_TA_CONTROL;
    }
    static const char *const USER[] = { "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>" };
    for (size_t i = 0; i < sizeof USER / sizeof *USER; i++) {
        int32_t id = find_text(tok, USER[i]);
        if (id >= 0)
            tok->attr[id] = LC_TA_USER_DEFINED;
    }
    /* o200k_harmony / solar-open: "<|end|>" is not an end token there. */
    int32_t end = find_text(tok, "<|end|>");
    if (end >= 0 && find_text(tok, "<|call|>") + find_text(tok, "<|calls|>") > -2 &&
        (find_text(tok, "<|return|>") >= 0 || find_text(tok, "<|flush|>") >= 0))
        tok->attr[end] = LC_TA_USER_DEFINED;
    /* gemma4 / paddleocr: "</s>" is an ordinary token when "<|tool_response>" exists. */
    int32_t s = find_text(tok, "</s>");
    if (s >= 0 && find_text(tok, "<|tool_response>") >= 0)
        tok->attr[s] = LC_TA_NORMAL;
}

/* Whether s (a string value, maybe absent) holds any of the NULL-terminated needles
 * (lower-case ASCII), s lower-cased first when `lower` (ASCII only, as std::tolower in
 * the C locale). */
static bool contains_any(const char *s, bool lower, const char *const *needles) {
    if (!s)
        return false;
    for (; *needles; needles++)
        for (const char *p = s; *p; p++) {
            size_t k = 0;
            while ((*needles)[k]) {
                const char c = lower && p[k] >= 'A' && p[k] <= 'Z' ? (char)(p[k] - 'A' + 'a')
                                                                   : p[k];
                if (c != (*needles)[k])
                    break;
                k++;
            }
            if (!(*needles)[k])
                return true;
        }
    return false;
}

/* The token attributes llama.cpp sets by name, not from the file (llama_vocab::impl::load,
 * "Handle per token attributes"); one branch only, the first that applies:
 *   1. tokenizer.ggml.pre holding jina-v2-de/-es/-code, or general.architecture holding
 *      nomic-bert-moe or jina-bert-v3: "<mask>" (when present) LSTRIP;
 *   2. general.name, lower-cased, holding "phi-3" or "phi3": every special token (control,
 *      user-defined, unknown) and "</s>" RSTRIP, then "<unk>", "<s>" and
 *      "<|endoftext|>" not; llama.cpp looks these four up with map::at, so a vocabulary
 *      without one of them does not load there, and is refused here;
 *   3. general.name holding "modern-bert": "[MASK]" (when present) LSTRIP. */
static lc_code name_attrs(lc_tok *tok, const lc_model *m, lc_error *err) {
    const char *name = get_str(m, "general.name"), *pre = get_str(m, "tokenizer.ggml.pre");
    const char *arch = get_str(m, "general.architecture");
    static const char *const JINA_PRE[] = { "jina-v2-de", "jina-v2-es", "jina-v2-code", NULL };
    static const char *const JINA_ARCH[] = { "nomic-bert-moe", "jina-bert-v3", NULL };
    static const char *const PHI3[] = { "phi-3", "phi3", NULL };
    static const char *const MODERN[] = { "modern-bert", NULL };
    if (contains_any(pre, false, JINA_PRE) || contains_any(arch, false, JINA_ARCH)) {
        const int32_t id = find_text(tok, "<mask>");
        if (id >= 0)
            tok->attr[id] |= LC_TA_LSTRIP;
    } else if (contains_any(name, true, PHI3)) {
        static const char *const NEED[] = { "</s>", "<unk>", "<s>", "<|endoftext|>" };
        for (size_t i = 0; i < sizeof NEED / sizeof *NEED; i++)
            if (find_text(tok, NEED[i]) < 0)
                return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "a phi-3 vocabulary "
                               "(by general.name) without the token %s: llama.cpp cannot load "
                               "it", NEED[i]);
        for (uint32_t i = 0; i < tok->n_vocab; i++)
            if (tok->attr[i] & (LC_TA_CONTROL | LC_TA_USER_DEFINED | LC_TA_UNKNOWN))
                tok->attr[i] |= LC_TA_RSTRIP;
        tok->attr[find_text(tok, "</s>")] |= LC_TA_RSTRIP;
        for (size_t i = 1; i < sizeof NEED / sizeof *NEED; i++)
            tok->attr[find_text(tok, NEED[i])] &= (uint8_t)~LC_TA_RSTRIP;
    } else if (contains_any(name, true, MODERN)) {
        const int32_t id = find_text(tok, "[MASK]");
        if (id >= 0)
            tok->attr[id] |= LC_TA_LSTRIP;
    }
    return LC_OK;
}

/* Longest text first; equal lengths by id, so the order never depends on a sort. */
static int cmp_special(const void *a, const void *b, const lc_tok *tok) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (tok->text[x].len != tok->text[y].len)
        return tok->text[x].len > tok->text[y].len ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Shell sort (qsort takes no context): plenty for the few hundred special tokens real
 * vocabularies have, and no quadratic worst case for a hostile one. */
static void sort_specials(lc_tok *tok) {
    int32_t *v = tok->special;
    size_t n = tok->n_special;
    for (size_t gap = n / 2; gap > 0; gap /= 2)
        for (size_t i = gap; i < n; i++) {
            int32_t t = v[i];
            size_t j = i;
            for (; j >= gap && cmp_special(&v[j - gap], &t, tok) > 0; j -= gap)
                v[j] = v[j - gap];
            v[j] = t;
        }
}

static lc_code load_vocab(lc_tok *tok, const lc_model *m, lc_error *err) {
    const lc_value *tokens, *scores, *types;
    LC_TRY(get_array(m, "tokenizer.ggml.tokens", LC_VT_STRING, LC_VT_STRING, &tokens, err));
    if (!tokens)
        return key_fail(err, LC_E_NOTFOUND, "tokenizer.ggml.tokens", "the vocabulary is missing");
    if (tokens->arr.count == 0 || tokens->arr.count > INT32_MAX)
        return key_fail(err, LC_E_MALFORMED, "tokenizer.ggml.tokens",
                        "the vocabulary must hold 1 to 2^31-1 tokens");
    uint32_t n = (uint32_t)tokens->arr.count;
    LC_TRY(get_array(m, "tokenizer.ggml.scores", LC_VT_F32, LC_VT_I32, &scores, err));
    LC_TRY(get_array(m, "tokenizer.ggml.token_type", LC_VT_I32, LC_VT_I32, &types, err));
    if (scores && scores->arr.count < n)
        return key_fail(err, LC_E_MALFORMED, "tokenizer.ggml.scores", "has fewer items than tokens");
    if (types && types->arr.count < n)
        return key_fail(err, LC_E_MALFORMED, "tokenizer.ggml.token_type", "has fewer items than tokens");
    /* One arena for every text, each NUL-terminated; empty ones become [EMPTY_<id>]. */
    size_t bytes = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t len;
        lc_value_arr_str(tokens, i, &len);
        bytes += (len ? len : 20) + 1;
    }
    tok->n_vocab = n;
    tok->text = lc_calloc(n, sizeof *tok->text);
    tok->score = lc_calloc(n, sizeof *tok->score);
    tok->attr = lc_calloc(n, sizeof *tok->attr);
    tok->arena = lc_malloc(bytes);
    if (!tok->text || !tok->score || !tok->attr || !tok->arena)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %u tokens", n);
    char *p = tok->arena;
    for (uint32_t i = 0; i < n; i++) {
        size_t len;
        const char *t = lc_value_arr_str(tokens, i, &len);
        if (len)
            memcpy(p, t, len);
        else
            len = (size_t)snprintf(p, 21, "[EMPTY_%u]", i);
        p[len] = '\0';
        tok->text[i] = (lc_tok_str){ p, (uint32_t)len };
        p += len + 1;
        tok->score[i] = !scores ? 0.0f : scores->arr.elem == LC_VT_F32
                        ? (float)lc_value_arr_float(scores, i) : (float)lc_value_arr_int(scores, i);
        tok->attr[i] = types ? attr_of_type(lc_value_arr_int(types, i)) : LC_TA_NORMAL;
    }
    size_t dup = 0;
    lc_code rc = lc_tok_index_build(&tok->vocab, tok->text, n, true, &dup, err);
    if (rc != LC_OK)   /* llama.cpp refuses duplicates too */
        lc_err_context(err, NULL, "tokenizer.ggml.tokens");
    return rc;
}

static lc_code load_merges(lc_tok *tok, const lc_model *m, lc_error *err) {
    const lc_value *merges;
    LC_TRY(get_array(m, "tokenizer.ggml.merges", LC_VT_STRING, LC_VT_STRING, &merges, err));
    if (!merges)
        return key_fail(err, LC_E_NOTFOUND, "tokenizer.ggml.merges",
                        "a gpt2 (BPE) vocabulary needs its merges");
    size_t n = (size_t)merges->arr.count, bytes = 0;
    if (merges->arr.count > INT32_MAX)
        return key_fail(err, LC_E_MALFORMED, "tokenizer.ggml.merges", "has over 2^31 merges");
    for (size_t i = 0; i < n; i++) {
        size_t len;
        lc_value_arr_str(merges, i, &len);
        bytes += len + 1;
    }
    tok->merges = lc_calloc(n ? n : 1, sizeof *tok->merges);
    tok->merge_arena = lc_malloc(bytes ? bytes : 1);
    if (!tok->merges || !tok->merge_arena)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu merges", n);
    char *p = tok->merge_arena;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *v = lc_value_arr_str(merges, i, &len);
        if (len)
            memcpy(p, v, len);
        p[len] = '\0';
        tok->merges[i] = (lc_tok_str){ p, (uint32_t)len };
        p += len + 1;
    }
    tok->n_merges = n;
    /* Looked up as "left right" with neither side holding a space, which only a merge
     * string with its one space past the first byte can equal: the same pairs llama.cpp
     * splits out (at the first space after byte 0), the first of equal ones winning. */
    return lc_tok_index_build(&tok->merge_ix, tok->merges, n, false, NULL, err);
}

lc_code lc_tok_open(const lc_model *m, lc_tok **out, lc_error *err) {
    lc_code rc;
    *out = NULL;
    lc_tok *tok = lc_calloc(1, sizeof *tok);
    if (!tok)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    const lc_value *model = lc_model_find_meta(m, "tokenizer.ggml.model");
    const char *pre = get_str(m, "tokenizer.ggml.pre");
    if (!model) {
        rc = key_fail(err, LC_E_NOTFOUND, "tokenizer.ggml.model", "the model has no tokenizer");
        goto done;
    }
    if (model->type != LC_VT_STRING) {
        rc = key_fail(err, LC_E_MALFORMED, "tokenizer.ggml.model", "is not a string");
        goto done;
    }
    if (lc_model_find_meta(m, "tokenizer.ggml.pre") && !pre) {
        rc = key_fail(err, LC_E_MALFORMED, "tokenizer.ggml.pre", "is not a string");
        goto done;
    }
    int32_t bos, eos;
    if (strcmp(model->str.ptr, "llama") == 0) {
        tok->kind = LC_TOK_SPM;
        bos = 1, eos = 2;
        tok->add_bos = true;
        tok->add_space_prefix = true;
    } else if (strcmp(model->str.ptr, "gpt2") == 0) {
        tok->kind = LC_TOK_BPE;
        bos = 11, eos = 11;
        size_t i = 0, n = sizeof PRE_NAMES / sizeof *PRE_NAMES;
        while (pre && i < n && strcmp(pre, PRE_NAMES[i].name) != 0)
            i++;
        if (i == n) {
            rc = lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                         "pre-tokenizer \"%.60s\" is not implemented (we tokenize every name "
                         "llama.cpp splits as llama-bpe, qwen2, qwen35, gpt-2, starcoder, falcon, "
                         "deepseek-coder, deepseek-llm or default do: %zu names)", pre, sizeof PRE_NAMES / sizeof *PRE_NAMES);
            lc_err_context(err, NULL, "tokenizer.ggml.pre");
            goto done;
        }
        tok->pre = pre ? PRE_NAMES[i].pre : LC_PRE_DEFAULT;
        tok->ignore_merges = pre && PRE_NAMES[i].ignore_merges;
        tok->add_bos = pre && PRE_NAMES[i].add_bos;
    } else if (strcmp(model->str.ptr, "gemma4") == 0) {
        tok->kind = LC_TOK_BPE;
        tok->pre = LC_PRE_GEMMA4;       /* whatever tokenizer.ggml.pre says */
        bos = eos = -1;
    } else {
        rc = lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                     "tokenizer model \"%.60s\" is not implemented (we tokenize \"llama\", "
                     "\"gpt2\" and \"gemma4\")", model->str.ptr);
        lc_err_context(err, NULL, "tokenizer.ggml.model");
        goto done;
    }
    if ((rc = load_vocab(tok, m, err)) != LC_OK)
        goto done;
    if (tok->kind == LC_TOK_BPE && (rc = load_merges(tok, m, err)) != LC_OK)
        goto done;
    /* Defaults past the vocabulary mean "none". */
    tok->bos = (uint32_t)bos < tok->n_vocab ? bos : -1;
    tok->eos = (uint32_t)eos < tok->n_vocab ? eos : -1;
    if ((rc = get_bool(m, "tokenizer.ggml.add_space_prefix", &tok->add_space_prefix, err)) ||
        (rc = get_id(m, "tokenizer.ggml.bos_token_id", tok->n_vocab, &tok->bos, err)) ||
        (rc = get_id(m, "tokenizer.ggml.eos_token_id", tok->n_vocab, &tok->eos, err)) ||
        (rc = get_bool(m, "tokenizer.ggml.add_bos_token", &tok->add_bos, err)) ||
        (rc = get_bool(m, "tokenizer.ggml.add_eos_token", &tok->add_eos, err)))
        goto done;
    if (tok->pre == LC_PRE_GEMMA4)
        tok->add_bos = true;            /* llama.cpp's workaround for Gemma 4 */
    if (tok->add_bos && tok->bos < 0) {
        rc = key_fail(err, LC_E_MALFORMED, "tokenizer.ggml.add_bos_token",
                      "is true, but the model has no BOS token");
        goto done;
    }
    if (tok->add_eos && tok->eos < 0) {
        rc = key_fail(err, LC_E_MALFORMED, "tokenizer.ggml.add_eos_token",
                      "is true, but the model has no EOS token");
        goto done;
    }
    fix_attrs(tok);
    if ((rc = name_attrs(tok, m, err)) != LC_OK)
        goto done;
    size_t n_special = 0;
    for (uint32_t i = 0; i < tok->n_vocab; i++)
        n_special += (tok->attr[i] & (LC_TA_CONTROL | LC_TA_USER_DEFINED | LC_TA_UNKNOWN)) != 0;
    if (!(tok->special = lc_malloc_array(n_special ? n_special : 1, sizeof *tok->special))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < tok->n_vocab; i++)
        if (tok->attr[i] & (LC_TA_CONTROL | LC_TA_USER_DEFINED | LC_TA_UNKNOWN))
            tok->special[tok->n_special++] = (int32_t)i;
    sort_specials(tok);
    for (int b = 0; b < 256; b++) {
        char hex[8], one[1] = { (char)b };
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        int64_t id = lc_tok_index_find(&tok->vocab, hex, 6);
        if (id < 0)
            id = lc_tok_index_find(&tok->vocab, one, 1);   /* llama.cpp's second try */
        tok->spm_byte[b] = (int32_t)id;
    }
    *out = tok;
    tok = NULL;
done:
    lc_tok_close(tok);
    return rc;
}

void lc_tok_close(lc_tok *tok) {
    if (!tok)
        return;
    lc_tok_index_free(&tok->vocab);
    lc_tok_index_free(&tok->merge_ix);
    lc_free(tok->text);
    lc_free(tok->score);
    lc_free(tok->attr);
    lc_free(tok->arena);
    lc_free(tok->merges);
    lc_free(tok->merge_arena);
    lc_free(tok->special);
    lc_free(tok);
}

uint32_t lc_tok_n_vocab(const lc_tok *tok) { return tok->n_vocab; }
int32_t lc_tok_bos(const lc_tok *tok) { return tok->bos; }
int32_t lc_tok_eos(const lc_tok *tok) { return tok->eos; }
bool lc_tok_adds_bos(const lc_tok *tok) { return tok->add_bos; }

const char *lc_tok_text(const lc_tok *tok, int32_t id) {
    return id >= 0 && (uint32_t)id < tok->n_vocab ? tok->text[id].s : NULL;
}

/* ---- encode ---- */

typedef struct frag {
    int32_t id;        /* a special token, or -1 for raw text */
    size_t  off, len;  /* raw text */
} frag;

typedef struct frags {
    frag  *v;
    size_t n, cap;
} frags;

static lc_code frag_push(frags *f, frag x, lc_error *err) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        frag *v = lc_realloc_array(f->v, cap, sizeof *v);
        if (!v)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory tokenizing");
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = x;
    return LC_OK;
}

/* First occurrence of NEEDLE in HAY[from, to), or SIZE_MAX. */
static size_t find(const char *hay, size_t from, size_t to, const lc_tok_str *needle) {
    size_t k = needle->len;
    while (to - from >= k) {
        const char *p = memchr(hay + from, needle->s[0], to - from - k + 1);
        if (!p)
            return SIZE_MAX;
        size_t at = (size_t)(p - hay);
        if (memcmp(p, needle->s, k) == 0)
            return at;
        from = at + 1;
    }
    return SIZE_MAX;
}

/* isspace in the C locale, as llama.cpp strips with it. */
static bool is_c_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* llama.cpp's tokenizer_st_partition: each special token in turn (longest first) is cut
 * out of every raw fragment wherever it occurs, leftmost first; the whitespace beside it
 * goes too when the token is LSTRIP or RSTRIP (name_attrs). */
static lc_code partition(const lc_tok *tok, const char *text, size_t len, bool parse_special,
                         frags *out, lc_error *err) {
    frags cur = { 0 }, next = { 0 };
    lc_code rc = LC_OK;
    if (len)
        rc = frag_push(&cur, (frag){ -1, 0, len }, err);
    for (size_t s = 0; s < tok->n_special && rc == LC_OK; s++) {
        int32_t id = tok->special[s];
        if (!parse_special && (tok->attr[id] & (LC_TA_CONTROL | LC_TA_UNKNOWN)))
            continue;   /* user-defined tokens are cut out either way */
        const lc_tok_str *t = &tok->text[id];
        next.n = 0;
        for (size_t i = 0; i < cur.n && rc == LC_OK; i++) {
            frag f = cur.v[i];
            if (f.id >= 0) {
                rc = frag_push(&next, f, err);
                continue;
            }
            size_t pos = f.off, end = f.off + f.len, at;
            while (rc == LC_OK && (at = find(text, pos, end, t)) != SIZE_MAX) {
                size_t left = at;
                if (tok->attr[id] & LC_TA_LSTRIP)      /* the spaces before it dropped */
                    while (left > pos && is_c_space(text[left - 1]))
                        left--;
                if (left > pos)
                    rc = frag_push(&next, (frag){ -1, pos, left - pos }, err);
                if (rc == LC_OK)
                    rc = frag_push(&next, (frag){ id, 0, 0 }, err);
                pos = at + t->len;
                if (tok->attr[id] & LC_TA_RSTRIP)      /* and the spaces after it */
                    while (pos < end && is_c_space(text[pos]))
                        pos++;
            }
            if (rc == LC_OK && pos < end)
                rc = frag_push(&next, (frag){ -1, pos, end - pos }, err);
        }
        frags x = cur;
        cur = next;
        next = x;
    }
    lc_free(next.v);
    if (rc != LC_OK) {
        lc_free(cur.v);
        return rc;
    }
    *out = cur;
    return LC_OK;
}

/* SentencePiece's view of a raw fragment: an optional leading space, ' ' -> U+2581;
 * gemma4's BPE sees the same (never a leading space). */
static lc_code spm_fragment(const lc_tok *tok, const char *s, size_t len, bool prefix,
                            size_t base, lc_tok_ids *out, lc_error *err) {
    size_t spaces = prefix;
    for (size_t i = 0; i < len; i++)
        spaces += s[i] == ' ';
    char *buf = lc_malloc(len + 2 * spaces + 1);
    if (!buf)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory tokenizing");
    size_t n = 0;
    if (prefix) {
        memcpy(buf, "\xe2\x96\x81", 3);
        n = 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') {
            memcpy(buf + n, "\xe2\x96\x81", 3);
            n += 3;
        } else {
            buf[n++] = s[i];
        }
    }
    lc_code rc = tok->kind == LC_TOK_SPM ? lc_tok_spm_encode(tok, buf, n, out, err)
                                         : lc_tok_bpe_encode(tok, buf, n, base, out, err);
    lc_free(buf);
    return rc;
}

lc_code lc_tok_encode(const lc_tok *tok, const char *text, size_t len, unsigned flags,
                      int32_t *ids, size_t cap, size_t *n, lc_error *err) {
    *n = 0;
    if (len > INT32_MAX)
        return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET,
                       "%zu bytes of text is more than llama.cpp takes (2^31-1)", len);
    frags f = { 0 };
    lc_tok_ids out = { 0 };
    bool add = flags & LC_TOK_ADD_SPECIAL;
    lc_code rc = partition(tok, text, len, flags & LC_TOK_PARSE_SPECIAL, &f, err);
    if (rc == LC_OK && add && tok->add_bos)
        rc = lc_tok_ids_push(&out, tok->bos, err);
    bool prev_special = true;   /* SentencePiece: a space starts the text */
    for (size_t i = 0; i < f.n && rc == LC_OK; i++) {
        if (f.v[i].id >= 0) {
            rc = lc_tok_ids_push(&out, f.v[i].id, err);
            prev_special = true;
        } else if (tok->kind == LC_TOK_SPM) {
            rc = spm_fragment(tok, text + f.v[i].off, f.v[i].len,
                              tok->add_space_prefix && prev_special, f.v[i].off, &out, err);
            prev_special = false;
        } else if (tok->pre == LC_PRE_GEMMA4) {
            rc = spm_fragment(tok, text + f.v[i].off, f.v[i].len, false, f.v[i].off, &out, err);
        } else {
            rc = lc_tok_bpe_encode(tok, text + f.v[i].off, f.v[i].len, f.v[i].off, &out, err);
        }
    }
    if (rc == LC_OK && add && tok->add_eos)
        rc = lc_tok_ids_push(&out, tok->eos, err);
    if (rc == LC_OK) {
        if (ids && cap && out.n)   /* out.v is NULL when there is no id */
            memcpy(ids, out.v, (out.n < cap ? out.n : cap) * sizeof *ids);
        *n = out.n;
        if (out.n > cap)
            rc = lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET,
                         "the text is %zu tokens, the buffer holds %zu", out.n, cap);
    }
    lc_free(f.v);
    lc_free(out.v);
    return rc;
}

/* ---- decode ---- */

static lc_code put(char *buf, size_t cap, size_t *n, const char *s, size_t len) {
    if (*n < cap)
        memcpy(buf + *n, s, len < cap - *n ? len : cap - *n);
    *n += len;
    return LC_OK;
}

/* llama.cpp's token_to_byte: strtol over the two characters after "<0x". */
static char byte_of(const lc_tok_str *t) {
    char two[3] = { 0 };
    if (t->len > 3)
        memcpy(two, t->s + 3, t->len - 3 < 2 ? t->len - 3 : 2);
    return (char)strtol(two, NULL, 16);
}

lc_code lc_tok_decode_piece(const lc_tok *tok, int32_t id, bool special, char *buf,
                            size_t cap, size_t *n, lc_error *err) {
    *n = 0;
    if (id < 0 || (uint32_t)id >= tok->n_vocab)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "token id %d is outside the vocabulary "
                       "(%u tokens)", id, tok->n_vocab);
    const lc_tok_str *t = &tok->text[id];
    uint8_t a = tok->attr[id];
    if (a & (LC_TA_UNKNOWN | LC_TA_CONTROL | LC_TA_USER_DEFINED)) {
        if (special || !(a & (LC_TA_UNKNOWN | LC_TA_CONTROL)))
            put(buf, cap, n, t->s, t->len);
    } else if (a & LC_TA_NORMAL) {
        const uint8_t *s = (const uint8_t *)t->s;
        for (size_t i = 0; i < t->len;) {
            if (tok->kind == LC_TOK_SPM || tok->pre == LC_PRE_GEMMA4) {   /* U+2581 -> ' ' */
                bool esc = t->len - i >= 3 && s[i] == 0xE2 && s[i + 1] == 0x96 && s[i + 2] == 0x81;
                put(buf, cap, n, esc ? " " : t->s + i, 1);
                i += esc ? 3 : 1;
                continue;
            }
            uint32_t cp = lc_tok_utf8_next(s, t->len, &i);
            int b = lc_tok_cp_byte(cp);
            if (b >= 0) {
                char c = (char)b;
                put(buf, cap, n, &c, 1);
            } else {   /* llama.cpp's marker for a character outside the alphabet */
                char u[4], hex[3];
                size_t ul = cp <= 0x10FFFF ? lc_tok_utf8_put(cp, u) : 0;
                put(buf, cap, n, "[UNK_BYTE_0x", 12);
                for (size_t j = 0; j < ul; j++) {
                    snprintf(hex, sizeof hex, "%02x", (uint8_t)u[j]);
                    put(buf, cap, n, hex, 2);
                }
                put(buf, cap, n, t->s, t->len);
                put(buf, cap, n, "]", 1);
            }
        }
    } else if (a & LC_TA_BYTE) {
        char c = byte_of(t);
        put(buf, cap, n, &c, 1);
    }
    if (*n > cap)
        return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "token %d is %zu bytes, the buffer "
                       "holds %zu", id, *n, cap);
    return LC_OK;
}
