/* tests/tools/lc-pre-split.c: test-only driver for infer/tokenize_pre.c alone (text in,
 * pieces out), so that tests/llama/test_pre_split.py can put every split beside
 * llama.cpp's own unicode_regex_split on the same strings.
 *
 *   lc-pre-split TYPE   reads lines of hex-encoded UTF-8 and answers each with one line:
 *                       the lengths of its pieces in code points, comma-separated (an
 *                       empty line: the empty text, an empty answer)
 * TYPE is llama.cpp's pre type name (LLAMA_VOCAB_PRE_TYPE_<TYPE>) of a split we implement.
 * The text is decoded as the tokenizer decodes it (bad UTF-8 is U+FFFD).
 * Exit 0 ok, 1 on an error, 2 on an unknown TYPE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/tokenize_impl.h"
#include "libconvert/alloc.h"

static const struct {
    const char *name;
    enum lc_tok_pre pre;
} TYPES[] = {
    { "DEFAULT", LC_PRE_DEFAULT },     { "LLAMA3", LC_PRE_LLAMA3 },
    { "QWEN2", LC_PRE_QWEN2 },         { "GPT2", LC_PRE_GPT2 },
    { "STARCODER", LC_PRE_STARCODER }, { "FALCON", LC_PRE_FALCON },
    { "QWEN35", LC_PRE_QWEN35 },       { "DEEPSEEK_CODER", LC_PRE_DEEPSEEK_CODER },
    { "DEEPSEEK_LLM", LC_PRE_DEEPSEEK_LLM },
};

static int hexval(int c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int main(int argc, char **argv) {
    size_t t = 0, n_types = sizeof TYPES / sizeof *TYPES;
    while (argc == 2 && t < n_types && strcmp(argv[1], TYPES[t].name) != 0)
        t++;
    if (argc != 2 || t == n_types) {
        fprintf(stderr, "usage: lc-pre-split TYPE (DEFAULT, LLAMA3, ... DEEPSEEK_LLM)\n");
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int rc = 0;
    while (rc == 0 && (got = getline(&line, &cap, stdin)) >= 0) {
        size_t len = 0;
        for (ssize_t k = 0; k + 1 < got && hexval(line[k]) >= 0 && hexval(line[k + 1]) >= 0; k += 2)
            line[len++] = (char)(hexval(line[k]) << 4 | hexval(line[k + 1]));
        /* At most one code point per byte. */
        uint32_t *cpts = lc_malloc_array(len + 1, sizeof *cpts);
        lc_tok_ids pieces = { 0 };
        lc_error err = { 0 };
        size_t n = 0;
        for (size_t at = 0; cpts && at < len;)
            cpts[n++] = lc_tok_utf8_next((const uint8_t *)line, len, &at);
        if (!cpts || (n && lc_tok_pre_split(TYPES[t].pre, cpts, n, &pieces, &err) != LC_OK)) {
            fprintf(stderr, "lc-pre-split: %s\n", cpts ? lc_code_name(err.code) : "nomem");
            rc = 1;
        }
        for (size_t i = 0; rc == 0 && i < pieces.n; i++)
            printf(i ? ",%d" : "%d", pieces.v[i]);
        putchar('\n');
        fflush(stdout);
        lc_free(pieces.v);
        lc_free(cpts);
    }
    free(line);
    return rc;
}
