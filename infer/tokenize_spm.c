/* infer/tokenize_spm.c: SentencePiece as llama.cpp runs it (llm_tokenizer_spm_session).
 *
 * The text is cut into UTF-8 characters by their lead byte alone (no validation), then
 * neighbouring pieces are merged while their concatenation is a token, always the pair
 * whose token has the highest score first, the leftmost among equal scores. Each piece
 * left is its token, or, when it is none (a character missing from the vocabulary), its
 * bytes' <0xXX> tokens. This is llama.cpp's algorithm, not sentencepiece's (which runs
 * its normalizer first and, for unigram models, a Viterbi search). */
#include <string.h>

#include "infer/tokenize_impl.h"
#include "libconvert/alloc.h"

typedef struct sym {
    size_t off, n;      /* bytes of the text; n == 0 once merged into its left */
    int64_t prev, next; /* -1: none */
} sym;

typedef struct bigram {
    float  score;
    size_t left, right, size;
} bigram;

/* Max-heap order: higher score first, then the lower left index. */
static bool before(const bigram *a, const bigram *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

typedef struct heap {
    bigram *v;
    size_t n, cap;
} heap;

static lc_code heap_push(heap *h, bigram b, lc_error *err) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        bigram *v = lc_realloc_array(h->v, cap, sizeof *v);
        if (!v)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory tokenizing");
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0 && before(&b, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = b;
    return LC_OK;
}

static bigram heap_pop(heap *h) {
    bigram top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c]))
            c++;
        if (!before(&h->v[c], &last))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = last;
    return top;
}

/* Queues (left, right) when their concatenation is a token. */
static lc_code try_pair(const lc_tok *tok, const char *text, const sym *s, int64_t l, int64_t r,
                        heap *h, lc_error *err) {
    if (l < 0 || r < 0)
        return LC_OK;
    size_t size = s[l].n + s[r].n;
    int64_t id = lc_tok_index_find(&tok->vocab, text + s[l].off, size);
    if (id < 0)
        return LC_OK;
    bigram b = { tok->score[id], (size_t)l, (size_t)r, size };
    return heap_push(h, b, err);
}

lc_code lc_tok_spm_encode(const lc_tok *tok, const char *text, size_t len, lc_tok_ids *out,
                          lc_error *err) {
    lc_code rc = LC_OK;
    heap h = { 0 };
    sym *s = lc_malloc_array(len ? len : 1, sizeof *s);
    if (!s)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory tokenizing %zu bytes", len);
    size_t n = 0;
    for (size_t off = 0; off < len; n++) {
        size_t k = lc_tok_utf8_len((uint8_t)text[off]);
        if (k > len - off)
            k = len - off;
        s[n] = (sym){ off, k, (int64_t)n - 1, off + k == len ? -1 : (int64_t)n + 1 };
        off += k;
    }
    for (size_t i = 1; i < n && rc == LC_OK; i++)
        rc = try_pair(tok, text, s, (int64_t)i - 1, (int64_t)i, &h, err);
    while (h.n && rc == LC_OK) {
        bigram b = heap_pop(&h);
        sym *l = &s[b.left], *r = &s[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size)
            continue;   /* one side was merged since: stale */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            s[r->next].prev = (int64_t)b.left;
        rc = try_pair(tok, text, s, l->prev, (int64_t)b.left, &h, err);
        if (rc == LC_OK)
            rc = try_pair(tok, text, s, (int64_t)b.left, l->next, &h, err);
    }
    for (int64_t i = n ? 0 : -1; i >= 0 && rc == LC_OK; i = s[i].next) {
        int64_t id = lc_tok_index_find(&tok->vocab, text + s[i].off, s[i].n);
        if (id >= 0) {
            rc = lc_tok_ids_push(out, (int32_t)id, err);
            continue;
        }
        for (size_t j = 0; j < s[i].n && rc == LC_OK; j++) {
            uint8_t byte = (uint8_t)text[s[i].off + j];
            if (tok->spm_byte[byte] < 0)
                rc = lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                             "byte 0x%02x is no token and the vocabulary has no <0x%02X> "
                             "token to spell it (llama.cpp stops here too)", byte, byte);
            else
                rc = lc_tok_ids_push(out, tok->spm_byte[byte], err);
        }
    }
    lc_free(h.v);
    lc_free(s);
    return rc;
}
