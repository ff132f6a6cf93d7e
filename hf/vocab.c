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
    lc_code rc = lc_value_array(&v->tokens, LC_VT_STRING, n, err);
    if (rc == LC_OK)
        rc = lc_value_array(&v->scores, LC_VT_F32, n, err);
    if (rc == LC_OK)
        rc = lc_value_array(&v->types, LC_VT_I32, n, err);
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
    lc_value_clear(&v->tokens);
    lc_value_clear(&v->scores);
    lc_value_clear(&v->types);
    v->n = 0;
}

lc_code lc_hf_vocab_set(lc_hf_vocab *v, uint64_t i, const char *text, size_t len, double score,
                        int type, lc_error *err) {
    lc_value s;
    LC_TRY(lc_value_string(&s, text, len, err));
    lc_value_clear(&v->tokens.arr.items[i]);
    v->tokens.arr.items[i] = s;
    v->scores.arr.items[i] = lc_value_float(LC_VT_F32, (double)(float)score);
    v->types.arr.items[i] = lc_value_int(LC_VT_I32, type);
    return LC_OK;
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
