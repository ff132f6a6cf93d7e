/* tests/fuzz/fuzz_tokenize.c: libFuzzer entry for infer/tokenize's encode, over the
 * vocabularies of the HF fixtures' reference GGUFs (fixtures/hf-ref, read from the
 * repository root): llama-spm (SentencePiece), llama-bpe with the llama-bpe, gpt-2,
 * default, deepseek-coder and deepseek-llm pre-tokenizers, and qwen2.
 *
 * Input: byte 0 picks the tokenizer (low 3 bits) and the flags (bits 4-5); the rest is
 * the text. Checked: encode succeeds (or refuses a code point past U+10FFFF, BPE only),
 * the count is the same with an exact buffer, every id is in the vocabulary and decodes,
 * and the pieces give the text back -- BPE exactly for valid UTF-8 (every byte has a
 * token there), SentencePiece as " " + text for valid UTF-8 without U+2581 when special
 * tokens are not parsed (every byte has a <0xXX> token; a bad lead byte swallows the
 * next bytes, the escaped space among them, as it does in llama.cpp). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "infer/tokenize.h"
#include "infer/tokenize_impl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { N_TOK = 7 };
static lc_tok *g_tok[N_TOK];

static lc_tok *load(const char *path, const char *pre) {
    lc_model *m = NULL;
    lc_tok *tok = NULL;
    lc_error err = { 0 };
    if (lc_gguf_load(path, &m, &err) != LC_OK ||
        (pre && lc_model_set_meta_str(m, "tokenizer.ggml.pre", pre, &err) != LC_OK) ||
        lc_tok_open(m, &tok, &err) != LC_OK)
        abort();   /* run from the repository root */
    lc_model_free(m);
    return tok;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    g_tok[0] = load("fixtures/hf-ref/llama-spm-f16.gguf", NULL);
    g_tok[1] = load("fixtures/hf-ref/llama-bpe-f16.gguf", NULL);
    g_tok[2] = load("fixtures/hf-ref/llama-bpe-f16.gguf", "gpt-2");
    g_tok[3] = load("fixtures/hf-ref/llama-bpe-f16.gguf", "default");
    g_tok[4] = load("fixtures/hf-ref/qwen2-f16.gguf", NULL);
    g_tok[5] = load("fixtures/hf-ref/llama-bpe-f16.gguf", "deepseek-coder");
    g_tok[6] = load("fixtures/hf-ref/llama-bpe-f16.gguf", "deepseek-llm");
    return 0;
}

/* UTF-8 that decodes and re-encodes to the same bytes (no bad bytes, no overlong
 * forms, nothing past U+10FFFF). */
static bool valid_utf8(const uint8_t *s, size_t len) {
    for (size_t i = 0; i < len;) {
        size_t at = i;
        uint32_t cp = lc_tok_utf8_next(s, len, &i);
        char u[4];
        if (cp > 0x10FFFF || lc_tok_utf8_put(cp, u) != i - at || memcmp(u, s + at, i - at))
            return false;
    }
    return true;
}

static bool has_escape(const char *s, size_t len) {   /* U+2581, which decodes to ' ' */
    for (size_t i = 0; i + 2 < len; i++)
        if (memcmp(s + i, "\xe2\x96\x81", 3) == 0)
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    const lc_tok *tok = g_tok[(data[0] & 7) % N_TOK];
    unsigned flags = (data[0] >> 4) & 3;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    lc_error err = { 0 };
    size_t n = 0, n2 = 0;
    lc_code rc = lc_tok_encode(tok, text, len, flags, NULL, 0, &n, &err);
    if (rc == LC_E_UNSUPPORTED && tok->kind == LC_TOK_BPE && !valid_utf8(data + 1, len))
        return 0;   /* a code point llama.cpp cannot take */
    if (rc != LC_E_OVERFLOW && !(rc == LC_OK && n == 0))
        __builtin_trap();
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (lc_tok_encode(tok, text, len, flags, ids, n, &n2, &err) != LC_OK || n2 != n)
        __builtin_trap();
    size_t cap = 16 * len + 64, out_n = 0;
    char *out = malloc(cap);
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        if (ids[i] < 0 || (uint32_t)ids[i] >= lc_tok_n_vocab(tok) ||
            lc_tok_decode_piece(tok, ids[i], true, out + out_n, cap - out_n, &k, &err) != LC_OK)
            __builtin_trap();
        out_n += k;
    }
    if (tok->kind == LC_TOK_BPE && !(flags & LC_TOK_ADD_SPECIAL) && valid_utf8(data + 1, len) &&
        (out_n != len || memcmp(out, text, len) != 0))
        __builtin_trap();   /* byte-level BPE loses nothing */
    if (tok->kind == LC_TOK_SPM && flags == 0 && len && valid_utf8(data + 1, len)) {
        bool same = out_n == len + 1 && out[0] == ' ';
        for (size_t i = 0; same && i < len; i++)
            same = out[i + 1] == text[i];
        if (!same && !has_escape(text, len))
            __builtin_trap();   /* SentencePiece with byte fallback loses nothing either */
    }
    free(out);
    free(ids);
    return 0;
}
