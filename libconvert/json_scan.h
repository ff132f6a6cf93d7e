/* libconvert/json_scan.h: a strict JSON pull scanner, for JSON we read without
 * building a tree (a safetensors header, an index's weight_map).
 *
 * lc_jscan_next hands out one token at a time with the file offset of its first byte
 * and checks the grammar as it goes, as strictly as serde_json (what the safetensors
 * reference parses with): RFC 8259 numbers (no leading zeros, no "1."), exact
 * literals, no trailing commas, escapes and surrogate pairs checked, whitespace only
 * space, tab, CR and LF. Ours on top: nesting deeper than LC_JSCAN_MAX_DEPTH is
 * refused, and so is \u0000 (LC_E_UNSUPPORTED: names are C strings in the IR).
 * The text must be valid UTF-8 (the caller checks it first).
 *
 * It allocates nothing: scanning a document of any size costs this struct, so what a
 * reader keeps of it is the reader's choice and the reader's bound. */
#ifndef LC_LIBCONVERT_JSON_SCAN_H
#define LC_LIBCONVERT_JSON_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"

#define LC_JSCAN_MAX_DEPTH 64

typedef enum lc_jkind {
    LC_JT_OBJ, LC_JT_OBJ_END, LC_JT_ARR, LC_JT_ARR_END,
    LC_JT_KEY,      /* an object key (a string) */
    LC_JT_STR,      /* a string value */
    LC_JT_NUM, LC_JT_TRUE, LC_JT_FALSE, LC_JT_NULL,
    LC_JT_END       /* the top-level value is complete */
} lc_jkind;

typedef struct lc_jtok {
    lc_jkind kind;
    uint64_t at;    /* file offset of the token's first byte (the quote of a string) */
    uint64_t len;   /* its bytes in the text, quotes included */
} lc_jtok;

typedef struct lc_jscan {
    const uint8_t *s;      /* borrowed text */
    uint64_t       n, pos;
    uint64_t       base;   /* file offset of s[0], for tokens and errors */
    int            expect, depth;
    uint8_t        stack[LC_JSCAN_MAX_DEPTH];   /* 1: an object, 0: an array */
} lc_jscan;

/* Starts a scan of one JSON value in s[0..n), which sits at file offset `base`. */
void lc_jscan_init(lc_jscan *j, const void *s, uint64_t n, uint64_t base);
/* The next token. After the top-level value it returns LC_JT_END (again and again),
 * and j->pos is the index of the byte after the value: what may follow is the
 * caller's rule. LC_E_MALFORMED at the byte where the grammar breaks (the end of the
 * text when it stops inside the value), LC_E_UNSUPPORTED at a \u0000. */
lc_code lc_jscan_next(lc_jscan *j, lc_jtok *t, lc_error *err);
/* Skips the rest of the value t opened (nothing to do for a scalar or a key). */
lc_code lc_jscan_skip(lc_jscan *j, const lc_jtok *t, lc_error *err);
/* The number of items of the array or entries of the object t opened, counted on a
 * copy of j (j does not move). */
lc_code lc_jscan_count(const lc_jscan *j, const lc_jtok *t, uint64_t *count, lc_error *err);
/* Writes the text of string or key token t (as lc_jscan_next returned it) to out,
 * NUL-terminated, and returns its length: out needs at most t->len bytes. */
size_t lc_jscan_decode(const lc_jscan *j, const lc_jtok *t, char *out);
/* True when string or key token t decodes to s (a C string). */
bool lc_jscan_equals(const lc_jscan *j, const lc_jtok *t, const char *s);

/* ---- bounding a tree parser ----
 * Where JSON is still read into a tree (cJSON, for the small files of an HF folder and
 * a .bin index), the tree costs a node on every value (64 bytes, 80 with the
 * allocator's header) and an allocation of at least 32 bytes on every string and
 * key: 10-15 times a real tokenizer.json, up to 40 times a hostile text ([0,0,...]).
 * Counted before parsing, it is held to LC_JSON_TREE_RATIO times the text plus
 * 1 MiB, and to LC_JSON_TREE_MAX in all. */
#define LC_JSON_TREE_RATIO 24u
#define LC_JSON_TREE_MAX ((uint64_t)1 << 30)

/* The bytes such a tree of s[0..n) takes, from above, counted without parsing (any
 * text, valid JSON or not: what cannot be JSON is skipped). */
uint64_t lc_json_tree_cost(const void *s, size_t n);
/* LC_E_OVERFLOW at offset 0 when lc_json_tree_cost passes either bound. */
lc_code lc_json_tree_check(const void *s, size_t n, lc_error *err);

#endif
