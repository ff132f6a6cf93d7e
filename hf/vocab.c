/* hf/vocab.c: the three parallel GGUF vocabulary arrays (tokens, scores, token
 * types) both tokenizer paths fill, and llama.cpp's rule for typing added tokens. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "hf/vocab.h"
#include "libconvert/alloc.h"

lc_code lc_hf_vocab_check_pad(uint64_t want, uint64_t have, uint64_t max_pad, lc_error *err) {
    if (max_pad == LC_HF_VOCAB_PAD_UNCHECKED && have > max_pad)
        max_pad = have;
    if (want <= have || want - have <= max_pad)
        return LC_OK;
    return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "vocab_size %" PRIu64 " would pad a "
                   "tokenizer of %" PRIu64 " tokens with %" PRIu64 " placeholders, and no "
                   "embedding confirms that size (at most %" PRIu64 " without one)", want, have,
                   want - have, max_pad);
}

lc_code lc_hf_vocab_init(lc_hf_vocab *v, uint64_t n, lc_error *err) {
    memset(v, 0, sizeof *v);
    lc_code rc = lc_value_array(&v->scores, LC_VT_F32, n, err);
    if (rc == LC_OK)
        rc = lc_value_array(&v->types, LC_VT_I32, n, err);
    if (rc == LC_OK && n > SIZE_MAX / sizeof *v->at)
        rc = lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "a vocabulary of %" PRIu64 " tokens is "
                     "too large", n);
    if (rc == LC_OK && n && (!(v->at = lc_calloc((size_t)n, sizeof *v->at)) ||
                             !(v->len = lc_calloc((size_t)n, sizeof *v->len))))
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu64 " tokens", n);
    if (rc != LC_OK) {
        lc_hf_vocab_clear(v);
        return rc;
    }
    v->n = n;
    for (uint64_t i = 0; i < n && rc == LC_OK; i++) {
        char pad[32];
        int len = snprintf(pad, sizeof pad, "[PAD%" PRIu64 "]", i);
        rc = lc_hf_vocab_set(v, i, pad, (size_t)len, -10000.0, LC_TOK_UNUSED, err);
    }
    if (rc != LC_OK)
        lc_hf_vocab_clear(v);
    return rc;
}

void lc_hf_vocab_clear(lc_hf_vocab *v) {
    lc_free(v->text);
    lc_free(v->at);
    lc_free(v->len);
    lc_value_clear(&v->scores);
    lc_value_clear(&v->types);
    memset(v, 0, sizeof *v);
}

const char *lc_hf_vocab_text(const lc_hf_vocab *v, uint64_t i, size_t *len) {
    if (len)
        *len = i < v->n ? v->len[i] : 0;
    return i < v->n ? v->text + v->at[i] : "";
}

lc_code lc_hf_vocab_tokens(const lc_hf_vocab *v, lc_value *out, lc_error *err) {
    uint64_t bytes = 0;
    for (uint64_t i = 0; i < v->n; i++)
        bytes += v->len[i];
    lc_value t;
    LC_TRY(lc_value_string_array(&t, v->n, bytes, err));
    for (uint64_t i = 0; i < v->n; i++) {
        lc_code rc = lc_value_arr_set_str(&t, i, v->text + v->at[i], v->len[i], err);
        if (rc != LC_OK) {
            lc_value_clear(&t);
            return rc;
        }
    }
    *out = t;
    return LC_OK;
}

lc_code lc_hf_vocab_set(lc_hf_vocab *v, uint64_t i, const char *text, size_t len, double score,
                        int type, lc_error *err) {
    if (i >= v->n || len > UINT32_MAX)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "token %" PRIu64 " of %zu bytes does not "
                       "fit a vocabulary of %" PRIu64, i, len, v->n);
    if (len + 1 > v->text_cap - v->text_len) {
        size_t cap = v->text_cap ? v->text_cap : 4096;
        while (cap - v->text_len < len + 1) {
            if (cap > SIZE_MAX / 2)
                return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "vocabulary text too large");
            cap *= 2;
        }
        char *p = lc_realloc(v->text, cap);
        if (!p)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for the vocabulary");
        v->text = p;
        v->text_cap = cap;
    }
    if (len)
        memcpy(v->text + v->text_len, text, len);
    v->text[v->text_len + len] = '\0';
    v->at[i] = v->text_len;
    v->len[i] = (uint32_t)len;
    v->text_len += len + 1;
    LC_TRY(lc_value_arr_set(&v->scores, i, lc_value_float(LC_VT_F32, (double)(float)score), err));
    return lc_value_arr_set(&v->types, i, lc_value_int(LC_VT_I32, type), err);
}

/* llama.cpp's does_token_look_special: names some models ship as non-special. */
static bool looks_special(const char *t) {
    size_t n = strlen(t);
    static const char *const names[] = { "<pad>", "<mask>", "<2mass>", "[@BOS@]" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(t, names[i]) == 0)
            return true;
    /* "<|...|>", "<｜...｜>" (fullwidth bar, U+FF5C) and "<unused...>" */
    if (n >= 4 && strncmp(t, "<|", 2) == 0 && strcmp(t + n - 2, "|>") == 0)
        return true;
    if (n >= 8 && strncmp(t, "<\xef\xbd\x9c", 4) == 0 && strcmp(t + n - 4, "\xef\xbd\x9c>") == 0)
        return true;
    return strncmp(t, "<unused", 7) == 0 && t[n - 1] == '>';
}

lc_code lc_hf_vocab_set_added(lc_hf_vocab *v, uint64_t i, const char *content, bool special,
                              double score, lc_error *err) {
    if (special || looks_special(content))
        return lc_hf_vocab_set(v, i, content, strlen(content), score, LC_TOK_CONTROL, err);
    /* User-defined tokens are matched before normalisation, so store them with
     * SentencePiece's U+2581 (e2 96 81) already turned back into spaces. */
    size_t n = strlen(content), o = 0;
    char *buf = lc_malloc(n + 1);
    if (!buf)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (size_t k = 0; k < n; k++) {
        if (k + 3 <= n && memcmp(content + k, "\xe2\x96\x81", 3) == 0) {
            buf[o++] = ' ';
            k += 2;
        } else {
            buf[o++] = content[k];
        }
    }
    lc_code rc = lc_hf_vocab_set(v, i, buf, o, score, LC_TOK_USER_DEFINED, err);
    lc_free(buf);
    return rc;
}
