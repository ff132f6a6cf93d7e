/* infer/tokenize_bpe.c: byte-level BPE as llama.cpp runs it (llm_tokenizer_bpe_session).
 *
 * A fragment is decoded to code points (bad bytes become U+FFFD), split into pieces by
 * the pre-tokenizer, and each piece written in GPT-2's byte alphabet (every byte of its
 * UTF-8 as one code point, so ' ' is "Ġ"). Within a piece, neighbouring symbols are
 * merged by the rank of "left right" in tokenizer.ggml.merges, lowest rank first, the
 * leftmost among equal ranks. With ignore_merges (llama-bpe) a piece that is a token is
 * taken whole. A symbol left that is not a token is replaced by the tokens of its
 * single bytes, those that exist; the rest are dropped, as llama.cpp drops them.
 *
 * gemma4 (LC_PRE_GEMMA4) is the same merging over raw UTF-8 (no byte alphabet; its
 * spaces arrive as U+2581, tokenize.c): a piece of newlines that is a token is taken
 * whole, and a symbol that is not a token falls back to its bytes' "<0xXX>" tokens. */
#include <stdio.h>
#include <string.h>

#include "infer/tokenize_impl.h"
#include "libconvert/alloc.h"

typedef struct sym {
    size_t off, n;
    int64_t prev, next;
} sym;

typedef struct bigram {
    uint32_t rank;
    size_t left, right, size;
} bigram;

/* Min-heap order: lower rank first, then the lower left index. */
static bool before(const bigram *a, const bigram *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
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

/* Scratch reused across the pieces of one fragment. */
typedef struct work {
    sym  *s;
    size_t cap_s;
    char *key;       /* "left right" */
    size_t cap_key;
    heap  h;
} work;

static lc_code grow(void **p, size_t *cap, size_t need, size_t item, lc_error *err) {
    if (need <= *cap)
        return LC_OK;
    size_t cap2 = *cap ? *cap : 64;
    while (cap2 < need)
        cap2 *= 2;
    void *q = lc_realloc_array(*p, cap2, item);
    if (!q)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory tokenizing");
    *p = q;
    *cap = cap2;
    return LC_OK;
}

static lc_code try_pair(const lc_tok *tok, const char *w, work *k, int64_t l, int64_t r,
                        lc_error *err) {
    if (l < 0 || r < 0)
        return LC_OK;
    const sym *a = &k->s[l], *b = &k->s[r];
    size_t size = a->n + b->n;
    LC_TRY(grow((void **)&k->key, &k->cap_key, size + 1, 1, err));
    memcpy(k->key, w + a->off, a->n);
    k->key[a->n] = ' ';
    memcpy(k->key + a->n + 1, w + b->off, b->n);
    int64_t rank = lc_tok_index_find(&tok->merge_ix, k->key, size + 1);
    if (rank < 0)
        return LC_OK;
    bigram g = { (uint32_t)rank, (size_t)l, (size_t)r, size };
    return heap_push(&k->h, g, err);
}

static bool only_newlines(const char *w, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (w[i] != '\n')
            return false;
    return true;
}

/* Merges one piece W[0..len) (in the byte alphabet, or raw) and appends its ids. */
static lc_code encode_piece(const lc_tok *tok, const char *w, size_t len, work *k,
                            lc_tok_ids *out, lc_error *err) {
    lc_code rc = LC_OK;
    size_t n = 0;
    LC_TRY(grow((void **)&k->s, &k->cap_s, len, sizeof *k->s, err));
    k->h.n = 0;
    const bool raw = tok->pre == LC_PRE_GEMMA4;
    if ((tok->ignore_merges || (raw && only_newlines(w, len))) &&
        lc_tok_index_find(&tok->vocab, w, len) >= 0) {
        k->s[n++] = (sym){ 0, len, -1, -1 };
    } else {
        for (size_t off = 0; off < len; n++) {
            size_t c = lc_tok_utf8_len((uint8_t)w[off]);
            if (c > len - off)
                c = len - off;
            k->s[n] = (sym){ off, c, (int64_t)n - 1, off + c == len ? -1 : (int64_t)n + 1 };
            off += c;
        }
        for (size_t i = 1; i < n && rc == LC_OK; i++)
            rc = try_pair(tok, w, k, (int64_t)i - 1, (int64_t)i, err);
        while (k->h.n && rc == LC_OK) {
            bigram g = heap_pop(&k->h);
            sym *l = &k->s[g.left], *r = &k->s[g.right];
            /* Stale when a side was merged since (llama.cpp compares the texts; with
             * both sides alive and adjacent, equal sizes mean equal texts). */
            if (l->n == 0 || r->n == 0 || l->n + r->n != g.size)
                continue;
            l->n += r->n;
            r->n = 0;
            l->next = r->next;
            if (r->next >= 0)
                k->s[r->next].prev = (int64_t)g.left;
            rc = try_pair(tok, w, k, l->prev, (int64_t)g.left, err);
            if (rc == LC_OK)
                rc = try_pair(tok, w, k, (int64_t)g.left, l->next, err);
        }
    }
    for (int64_t i = n ? 0 : -1; i >= 0 && rc == LC_OK; i = k->s[i].next) {
        const sym *y = &k->s[i];
        int64_t id = lc_tok_index_find(&tok->vocab, w + y->off, y->n);
        if (id >= 0) {
            rc = lc_tok_ids_push(out, (int32_t)id, err);
            continue;
        }
        for (size_t j = 0; j < y->n && rc == LC_OK; j++) {
            char hex[8];
            if (raw)
                snprintf(hex, sizeof hex, "<0x%02X>", (uint8_t)w[y->off + j]);
            id = raw ? lc_tok_index_find(&tok->vocab, hex, 6)
                     : lc_tok_index_find(&tok->vocab, w + y->off + j, 1);
            if (id >= 0)
                rc = lc_tok_ids_push(out, (int32_t)id, err);
        }
    }
    return rc;
}

lc_code lc_tok_bpe_encode(const lc_tok *tok, const char *text, size_t len, size_t base,
                          lc_tok_ids *out, lc_error *err) {
    lc_code rc = LC_OK;
    lc_tok_ids pieces = { 0 };
    work k = { 0 };
    char *w = NULL;
    uint32_t *cpts = lc_malloc_array(len ? len : 1, sizeof *cpts);
    size_t *at = lc_malloc_array(len ? len : 1, sizeof *at);   /* byte offset of each */
    if (!cpts || !at) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory tokenizing %zu bytes", len);
        goto done;
    }
    size_t n = 0;
    for (size_t off = 0; off < len; n++) {
        at[n] = off;
        cpts[n] = lc_tok_utf8_next((const uint8_t *)text, len, &off);
        if (cpts[n] > 0x10FFFF) {
            rc = lc_fail(err, LC_E_UNSUPPORTED, base + at[n],
                         "the bytes decode to U+%X, past U+10FFFF: llama.cpp cannot "
                         "tokenize them (it throws)", (unsigned)cpts[n]);
            goto done;
        }
    }
    if (n == 0)
        goto done;
    if ((rc = lc_tok_pre_split(tok->pre, cpts, n, &pieces, err)) != LC_OK)
        goto done;
    /* A code point is at most 4 bytes, each at most 2 in the byte alphabet. */
    size_t cap_w = 0;
    size_t start = 0;
    for (size_t p = 0; p < pieces.n && rc == LC_OK; p++) {
        size_t m = (size_t)pieces.v[p], wl = 0;
        if ((rc = grow((void **)&w, &cap_w, 8 * m, 1, err)) != LC_OK)
            break;
        for (size_t i = start; i < start + m; i++) {
            char u[4];
            size_t ul = lc_tok_utf8_put(cpts[i], u);
            if (tok->pre == LC_PRE_GEMMA4) {
                memcpy(w + wl, u, ul);
                wl += ul;
                continue;
            }
            for (size_t j = 0; j < ul; j++)
                wl += lc_tok_utf8_put(lc_tok_byte_cp((uint8_t)u[j]), w + wl);
        }
        rc = encode_piece(tok, w, wl, &k, out, err);
        start += m;
    }
done:
    lc_free(pieces.v);
    lc_free(k.s);
    lc_free(k.key);
    lc_free(k.h.v);
    lc_free(w);
    lc_free(cpts);
    lc_free(at);
    return rc;
}
