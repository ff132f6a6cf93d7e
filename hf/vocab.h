/* hf/vocab.h: the GGUF vocabulary being built from a tokenizer (hf/vocab.c), shared by
 * hf/tokenizer.c, hf/bpe.c and hf/special.c. */
#ifndef LC_HF_VOCAB_H
#define LC_HF_VOCAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"
#include "libconvert/value.h"

/* GGUF token types (tokenizer.ggml.token_type, i32), equal to SentencePiece's. */
enum { LC_TOK_NORMAL = 1, LC_TOK_UNKNOWN = 2, LC_TOK_CONTROL = 3, LC_TOK_USER_DEFINED = 4,
       LC_TOK_UNUSED = 5, LC_TOK_BYTE = 6 };

/* The vocabulary being built: n tokens, their scores and types. Token texts may be
 * set again (added tokens replace pieces), so they live in one growing buffer until
 * lc_hf_vocab_tokens packs them into the GGUF array; a replaced text stays there
 * unused until the vocabulary is cleared. */
typedef struct lc_hf_vocab {
    uint64_t  n;
    char     *text;      /* token i: text + at[i], len[i] bytes and a NUL */
    size_t    text_len, text_cap;
    uint64_t *at;
    uint32_t *len;
    lc_value  scores;    /* array of f32; only the SentencePiece path writes it */
    lc_value  types;     /* array of i32 */
} lc_hf_vocab;

/* Padding past the tokenizer's own ids that no tensor confirms: at most this many, or
 * as many as the tokenizer has, whichever is more. */
#define LC_HF_VOCAB_PAD_UNCHECKED ((uint64_t)1 << 16)

/* LC_E_MISMATCH when a vocabulary of `want` ids would pad a tokenizer of `have` ids by
 * more than max_pad (or, for LC_HF_VOCAB_PAD_UNCHECKED, by more than max(have, it)). */
lc_code lc_hf_vocab_check_pad(uint64_t want, uint64_t have, uint64_t max_pad, lc_error *err);

/* n placeholder tokens "[PAD<i>]", score -10000, type unused, as llama.cpp starts. */
lc_code lc_hf_vocab_init(lc_hf_vocab *v, uint64_t n, lc_error *err);
void    lc_hf_vocab_clear(lc_hf_vocab *v);
/* Token i's text, NUL-terminated (*len: its length, if not NULL); valid until the
 * next set or clear. "" for i out of range. */
const char *lc_hf_vocab_text(const lc_hf_vocab *v, uint64_t i, size_t *len);
/* The texts as one packed GGUF array of n strings (tokenizer.ggml.tokens). */
lc_code lc_hf_vocab_tokens(const lc_hf_vocab *v, lc_value *out, lc_error *err);
/* Sets token i (replacing what was there). */
lc_code lc_hf_vocab_set(lc_hf_vocab *v, uint64_t i, const char *text, size_t len, double score,
                        int type, lc_error *err);
/* An added token (tokenizer_config added_tokens_decoder or tokenizer.json added_tokens):
 * control when special or when it looks special, else user defined with U+2581 turned
 * into a space, as llama.cpp's converter does. */
lc_code lc_hf_vocab_set_added(lc_hf_vocab *v, uint64_t i, const char *content, bool special,
                              double score, lc_error *err);

#endif
