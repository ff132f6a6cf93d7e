/* tests/fuzz/fuzz_tokmeta.c: libFuzzer entry for the tokenizer built from a GGUF's
 * metadata: the input is a GGUF (any bytes); what the reader accepts goes to
 * lc_tok_open, and a tokenizer that opens encodes a fixed text (plain, with special
 * tokens added, and with special tokens parsed).
 *
 * Checked: opening fails only with the codes tokenize.h names; encode succeeds or
 * refuses with its codes; the count is the same when asked again with an exact buffer;
 * every id is inside the vocabulary and decodes (special and not), and the decoded
 * pieces fit what decode says they need. Memory and time are the tokenizer's to bound:
 * a hostile vocabulary (huge, duplicate texts, merges that loop, scores that are NaN)
 * must neither crash nor run past libFuzzer's timeout. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "infer/tokenize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Spaces of every kind, digits, special tokens of the usual vocabularies, a bad byte,
 * code points of every UTF-8 length. */
static const char TEXT[] = " Hello</s> world<s>  <|endoftext|><|im_start|>user\n\tx=3.14159 "
                           "1234567 naïve café 日本語 🦙\xff\xc3 <unk><0x0A>▁▁ end ";

static void check(const lc_tok *tok, unsigned flags) {
    int32_t ids[512];
    size_t n = 0;
    lc_error err = { 0 };
    lc_code rc = lc_tok_encode(tok, TEXT, sizeof TEXT - 1, flags, ids, 512, &n, &err);
    if (rc == LC_E_UNSUPPORTED || rc == LC_E_NOMEM)
        return;
    if (rc == LC_E_OVERFLOW && n > 512) {
        int32_t *big = malloc(n * sizeof *big);
        size_t n2 = 0;
        if (!big)
            return;
        if (lc_tok_encode(tok, TEXT, sizeof TEXT - 1, flags, big, n, &n2, &err) != LC_OK ||
            n2 != n)
            abort();              /* the count it asked for is the count it gives */
        free(big);
        return;
    }
    if (rc != LC_OK)
        abort();
    size_t again = 0;
    int32_t exact[512];
    if (lc_tok_encode(tok, TEXT, sizeof TEXT - 1, flags, exact, n, &again, &err) != LC_OK ||
        again != n || memcmp(exact, ids, n * sizeof *ids) != 0)
        abort();                  /* deterministic, and an exact buffer is enough */
    for (size_t i = 0; i < n; i++) {
        char piece[64];
        for (int special = 0; special < 2; special++) {
            size_t len = 0;
            rc = lc_tok_decode_piece(tok, ids[i], special, piece, sizeof piece, &len, &err);
            if (rc == LC_E_ARG)
                abort();          /* an id encode gave is in the vocabulary */
            if (rc == LC_OK && len > sizeof piece)
                abort();
        }
        if (!lc_tok_text(tok, ids[i]))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lc_model *m = NULL;
    lc_error err = { 0 };
    if (lc_gguf_open_mem(data, size, LC_GGUF_LENIENT, &m, NULL, &err) != LC_OK)
        return 0;
    lc_tok *tok = NULL;
    const lc_code rc = lc_tok_open(m, &tok, &err);
    if (rc == LC_OK) {
        check(tok, 0);
        check(tok, LC_TOK_ADD_SPECIAL);
        check(tok, LC_TOK_ADD_SPECIAL | LC_TOK_PARSE_SPECIAL);
    } else if (rc != LC_E_NOTFOUND && rc != LC_E_UNSUPPORTED && rc != LC_E_MALFORMED &&
               rc != LC_E_NOMEM && rc != LC_E_OVERFLOW) {
        abort();
    }
    lc_tok_close(tok);
    lc_model_free(m);
    return 0;
}
