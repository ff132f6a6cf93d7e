/* Unit tests for the rules formats/gguf.c holds a file to (its RULES table): one
 * literal-bytes case per rule, checking the strict reader's code and offset, and what
 * a lenient open (model-inspect) records instead: a refused warning for REFUSE rules,
 * a note for NOTE rules, which the strict reader accepts. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "libconvert/bytes.h"
#include "libconvert/error.h"
#include "libconvert/model.h"

/* ---- a growable little-endian builder ---- */

typedef struct gb {
    uint8_t *b;
    size_t n, cap;
} gb;

static size_t put(gb *g, const void *p, size_t n) {
    if (g->n + n > g->cap) {
        g->cap = (g->n + n) * 2 + 256;
        g->b = realloc(g->b, g->cap);
        cr_assert_not_null(g->b);
    }
    size_t at = g->n;
    memcpy(g->b + g->n, p, n);
    g->n += n;
    return at;
}
static size_t u8(gb *g, uint8_t v) { return put(g, &v, 1); }
static size_t u32(gb *g, uint32_t v) { uint8_t b[4]; lc_store_le32(b, v); return put(g, b, 4); }
static size_t u64(gb *g, uint64_t v) { uint8_t b[8]; lc_store_le64(b, v); return put(g, b, 8); }
static size_t strn(gb *g, const char *s, size_t n) {
    size_t at = u64(g, n);
    put(g, s, n);
    return at;
}
static size_t str(gb *g, const char *s) { return strn(g, s, strlen(s)); }
static void header(gb *g, uint64_t nt, uint64_t nkv) {
    g->n = 0;
    put(g, "GGUF", 4);
    u32(g, 3);
    u64(g, nt);
    u64(g, nkv + 1);               /* + general.architecture, so no note for its absence */
    str(g, "general.architecture");
    u32(g, LC_VT_STRING);
    str(g, "llama");
}
/* A u8 metadata entry; returns the offset of its key. */
static size_t kv_u8(gb *g, const char *key) {
    size_t at = str(g, key);
    u32(g, LC_VT_U8);
    u8(g, 1);
    return at;
}
/* An F32 tensor info of ne[0..ndim); returns the offset of its name. */
static size_t tinfo(gb *g, const char *name, uint32_t ndim, const uint64_t *ne, uint32_t type,
                    uint64_t off) {
    size_t at = str(g, name);
    u32(g, ndim);
    for (uint32_t d = 0; d < ndim; d++)
        u64(g, ne[d]);
    u32(g, type);
    u64(g, off);
    return at;
}
/* Zero padding to 32 and `data` bytes of zeros. */
static void finish(gb *g, size_t data) {
    while (g->n % 32)
        u8(g, 0);
    for (size_t i = 0; i < data; i++)
        u8(g, 0);
}

static const uint64_t ONE[] = { 1 };

/* Strict: the code and offset; lenient: LC_OK and a warning of `rule` at that offset
 * with `refused` as given. A rule of NULL: lenient fails the same way (fatal); of
 * "none": both accept the file and a lenient open says nothing. */
static void expect_rule(gb *g, lc_code code, uint64_t off, const char *rule, bool refused) {
    lc_model *m = (lc_model *)1;
    lc_error err = { 0 };
    lc_code rc = lc_gguf_load_mem(g->b, g->n, &m, &err);
    if (code == LC_OK) {
        cr_assert_eq(rc, LC_OK, "strict: %s (%s)", lc_code_name(rc), err.msg);
        cr_assert_eq(lc_model_warning_count(m), 0, "a strict open records no warning");
    } else {
        cr_assert_eq(rc, code, "strict: %s (%s), want %s", lc_code_name(rc), err.msg,
                     lc_code_name(code));
        cr_assert_eq(err.offset, off, "strict offset %#llx (%s), want %#llx",
                     (unsigned long long)err.offset, err.msg, (unsigned long long)off);
        cr_assert_null(m);
    }
    lc_model_free(code == LC_OK ? m : NULL);
    lc_error e2 = { 0 };
    m = NULL;
    rc = lc_gguf_open_mem(g->b, g->n, LC_GGUF_LENIENT, &m, NULL, &e2);
    if (!rule) {
        cr_assert_eq(rc, code, "lenient: %s (%s)", lc_code_name(rc), e2.msg);
        return;
    }
    cr_assert_eq(rc, LC_OK, "lenient: %s (%s)", lc_code_name(rc), e2.msg);
    if (strcmp(rule, "none") == 0) {            /* a clean file: nothing to say */
        cr_assert_eq(lc_model_warning_count(m), 0, "%s", lc_model_warning(m, 0)->rule);
        lc_model_free(m);
        return;
    }
    const lc_warning *w = NULL;
    for (size_t i = 0; i < lc_model_warning_count(m) && !w; i++)
        if (strcmp(lc_model_warning(m, i)->rule, rule) == 0)
            w = lc_model_warning(m, i);
    cr_assert_not_null(w, "no %s warning (%zu others)", rule, lc_model_warning_count(m));
    cr_assert_eq(w->refused, refused, "%s refused = %d", rule, w->refused);
    cr_assert_eq(w->e.offset, off, "%s at %#llx, want %#llx (%s)", rule,
                 (unsigned long long)w->e.offset, (unsigned long long)off, w->e.msg);
    cr_assert(w->e.msg[0]);
    cr_assert_eq(lc_model_first_refusal(m) != NULL, refused);
    lc_model_free(m);
}

/* ---- metadata keys ---- */

Test(gguf_rules, key_empty) {
    gb g = { 0 };
    header(&g, 0, 1);
    size_t at = kv_u8(&g, "");
    finish(&g, 0);
    expect_rule(&g, LC_E_MALFORMED, at, "gguf.key-empty", true);
    free(g.b);
}

Test(gguf_rules, key_too_long) {
    gb g = { 0 };
    char *key = malloc(LC_GGUF_MAX_KEY + 2);
    memset(key, 'a', LC_GGUF_MAX_KEY + 1);
    key[LC_GGUF_MAX_KEY + 1] = '\0';
    header(&g, 0, 2);
    key[LC_GGUF_MAX_KEY] = '\0';
    kv_u8(&g, key);                               /* 65535 bytes: the spec's longest */
    key[LC_GGUF_MAX_KEY] = 'b';
    size_t at = kv_u8(&g, key);
    finish(&g, 0);
    expect_rule(&g, LC_E_MALFORMED, at, "gguf.key-too-long", true);
    free(key);
    free(g.b);
}

Test(gguf_rules, key_control) {
    static const char *const keys[] = { "a\nall checks passed\x1b[32m", "k\x7f", "tab\tkey" };
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        gb g = { 0 };
        header(&g, 0, 1);
        size_t at = kv_u8(&g, keys[i]);
        finish(&g, 0);
        expect_rule(&g, LC_E_MALFORMED, at, "gguf.key-control", true);
        free(g.b);
    }
}

Test(gguf_rules, key_segment) {
    static const char *const keys[] = { ".general.name", "general.", "general..name", "." };
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        gb g = { 0 };
        header(&g, 0, 1);
        size_t at = kv_u8(&g, keys[i]);
        finish(&g, 0);
        expect_rule(&g, LC_E_MALFORMED, at, "gguf.key-segment", true);
        free(g.b);
    }
}

Test(gguf_rules, key_not_ascii_is_a_note) {
    gb g = { 0 };
    header(&g, 0, 1);
    size_t at = kv_u8(&g, "t.unicode.\xc3\xa9");     /* gguf-py writes such keys */
    finish(&g, 0);
    expect_rule(&g, LC_OK, at, "gguf.key-ascii", false);
    free(g.b);
}

Test(gguf_rules, key_case_is_a_note) {
    gb g = { 0 };
    header(&g, 0, 1);
    size_t at = kv_u8(&g, "command-r.context_length");  /* llama.cpp's own arch name */
    finish(&g, 0);
    expect_rule(&g, LC_OK, at, "gguf.key-case", false);
    free(g.b);
}

/* general.architecture = ARCH, then `key` (a u8): the offset of its key. */
static size_t arch_and_key(gb *g, const char *arch, const char *key) {
    g->n = 0;
    put(g, "GGUF", 4);
    u32(g, 3);
    u64(g, 0);
    u64(g, 2);
    str(g, "general.architecture");
    u32(g, LC_VT_STRING);
    str(g, arch);
    return kv_u8(g, key);
}

/* Keys prefixed with the file's own hyphenated architecture name are llama.cpp's. */
Test(gguf_rules, key_of_a_hyphenated_architecture_is_clean) {
    static const char *const archs[] = { "command-r", "nomic-bert-moe", "gpt-oss" };
    for (size_t i = 0; i < sizeof archs / sizeof *archs; i++) {
        gb g = { 0 };
        char key[64];
        snprintf(key, sizeof key, "%s.attention.head_count", archs[i]);
        arch_and_key(&g, archs[i], key);
        finish(&g, 0);
        expect_rule(&g, LC_OK, 0, "none", false);
        free(g.b);
    }
    /* Still a note: a hyphen past the architecture, an upper-case one, another's name. */
    static const char *const cases[][2] = { { "command-r", "command-r.rope-theta" },
                                            { "Command-R", "Command-R.block_count" },
                                            { "gpt-oss", "command-r.block_count" } };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gb g = { 0 };
        size_t at = arch_and_key(&g, cases[i][0], cases[i][1]);
        finish(&g, 0);
        expect_rule(&g, LC_OK, at, "gguf.key-case", false);
        free(g.b);
    }
}

Test(gguf_rules, key_duplicate) {
    gb g = { 0 };
    header(&g, 0, 2);
    kv_u8(&g, "k.a");
    size_t at = kv_u8(&g, "k.a");
    finish(&g, 0);
    expect_rule(&g, LC_E_MALFORMED, at, "gguf.key-duplicate", true);
    /* Lenient keeps the first value. */
    lc_model *m;
    cr_assert_eq(lc_gguf_open_mem(g.b, g.n, LC_GGUF_LENIENT, &m, NULL, NULL), LC_OK);
    cr_assert_eq(lc_model_meta_count(m), 2);
    lc_model_free(m);
    free(g.b);
}

Test(gguf_rules, key_with_nul_is_fatal) {
    gb g = { 0 };
    header(&g, 0, 1);
    size_t at = strn(&g, "k\0a", 3);
    u32(&g, LC_VT_U8);
    u8(&g, 1);
    finish(&g, 0);
    expect_rule(&g, LC_E_MALFORMED, at, NULL, true);
    free(g.b);
}

/* ---- values ---- */

Test(gguf_rules, bool_not_0_or_1) {
    gb g = { 0 };
    header(&g, 0, 1);
    str(&g, "k.b");
    u32(&g, LC_VT_BOOL);
    size_t at = u8(&g, 2);
    finish(&g, 0);
    expect_rule(&g, LC_E_MALFORMED, at, "gguf.bool", true);
    free(g.b);
}

Test(gguf_rules, string_not_utf8_is_a_note) {
    gb g = { 0 };
    header(&g, 0, 1);
    str(&g, "k.s");
    u32(&g, LC_VT_STRING);
    size_t at = str(&g, "\xff\xfe");
    finish(&g, 0);
    expect_rule(&g, LC_OK, at, "gguf.string-utf8", false);
    free(g.b);
}

Test(gguf_rules, nested_array_is_a_note) {
    gb g = { 0 };
    header(&g, 0, 1);
    str(&g, "k.n");
    u32(&g, LC_VT_ARRAY);
    size_t at = u32(&g, LC_VT_ARRAY);     /* the outer array's element type */
    u64(&g, 1);
    u32(&g, LC_VT_U8);
    u64(&g, 1);
    u8(&g, 7);
    finish(&g, 0);
    expect_rule(&g, LC_OK, at, "gguf.array-nested", false);
    free(g.b);
}

/* ggml's GGUF_MAX_STRING_LENGTH and GGUF_MAX_ARRAY_ELEMENTS (1 GiB): only a file
 * longer than that can hold one, so the test maps a sparse file. */
static void sparse_case(bool array) {
    gb g = { 0 };
    header(&g, 0, 1);
    str(&g, "k.big");
    size_t at;
    if (array) {
        u32(&g, LC_VT_ARRAY);
        u32(&g, LC_VT_U8);
        at = u64(&g, LC_GGUF_MAX_ARRAY + 1);
    } else {
        u32(&g, LC_VT_STRING);
        at = u64(&g, LC_GGUF_MAX_STRING + 1);
    }
    char path[] = "/tmp/lc-gguf-rules-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, g.b, g.n), (ssize_t)g.n);
    cr_assert_eq(ftruncate(fd, (off_t)(g.n + LC_GGUF_MAX_STRING + 64)), 0);
    close(fd);
    lc_model *m;
    lc_error err = { 0 };
    lc_code rc = lc_gguf_load(path, &m, &err);
    unlink(path);
    cr_assert_eq(rc, LC_E_OVERFLOW, "%s (%s)", lc_code_name(rc), err.msg);
    cr_assert_eq(err.offset, at);
    free(g.b);
}
Test(gguf_rules, string_too_long) { sparse_case(false); }
Test(gguf_rules, array_too_long) { sparse_case(true); }

/* ---- general.alignment ---- */

static size_t alignment_case(gb *g, uint32_t type, uint64_t v, size_t *type_at) {
    header(g, 0, 1);
    str(g, "general.alignment");
    *type_at = u32(g, type);
    return type == LC_VT_U32 ? u32(g, (uint32_t)v) : u64(g, v);
}

Test(gguf_rules, alignment_type) {
    gb g = { 0 };
    size_t type_at;
    alignment_case(&g, LC_VT_U64, 32, &type_at);
    finish(&g, 0);
    expect_rule(&g, LC_E_MALFORMED, type_at, "gguf.alignment-type", true);
    free(g.b);
}

Test(gguf_rules, alignment_value) {
    static const uint64_t bad[] = { 0, 3, 48, 4, 1 };   /* not a power of two; below 8 */
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gb g = { 0 };
        size_t type_at, at = alignment_case(&g, LC_VT_U32, bad[i], &type_at);
        finish(&g, 0);
        expect_rule(&g, LC_E_MALFORMED, at, "gguf.alignment-value", true);
        free(g.b);
    }
    gb g = { 0 };
    size_t type_at;
    alignment_case(&g, LC_VT_U32, 8, &type_at);   /* the smallest the spec allows */
    finish(&g, 0);
    expect_rule(&g, LC_OK, 0, "none", false);
    free(g.b);
}

/* ---- tensor infos ---- */

Test(gguf_rules, name_too_long) {
    char name[80];
    memset(name, 'n', sizeof name);
    gb g = { 0 };
    header(&g, 2, 0);
    name[LC_GGUF_MAX_NAME - 1] = '\0';
    tinfo(&g, name, 1, ONE, 0, 0);                /* 63 bytes: ggml's longest */
    name[LC_GGUF_MAX_NAME - 1] = 'x';
    name[LC_GGUF_MAX_NAME] = '\0';
    size_t at = tinfo(&g, name, 1, ONE, 0, 32);
    finish(&g, 36);
    expect_rule(&g, LC_E_MALFORMED, at, "gguf.name-too-long", true);
    free(g.b);
}

Test(gguf_rules, name_duplicate) {
    gb g = { 0 };
    header(&g, 2, 0);
    tinfo(&g, "t", 1, ONE, 0, 0);
    size_t at = tinfo(&g, "t", 1, ONE, 0, 32);
    finish(&g, 36);
    expect_rule(&g, LC_E_MALFORMED, at, "gguf.name-duplicate", true);
    lc_model *m;
    cr_assert_eq(lc_gguf_open_mem(g.b, g.n, LC_GGUF_LENIENT, &m, NULL, NULL), LC_OK);
    cr_assert_eq(lc_model_tensor_count(m), 1, "lenient shows the first one");
    lc_model_free(m);
    free(g.b);
}

Test(gguf_rules, n_dims) {
    static const uint64_t ne[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    gb g = { 0 };
    header(&g, 1, 0);
    size_t name_at = tinfo(&g, "t", 5, ne, 0, 0);
    size_t at = name_at + 8 + 1;                 /* the n_dims field */
    finish(&g, 4);
    expect_rule(&g, LC_E_MALFORMED, at, "gguf.n-dims", true);
    header(&g, 1, 0);
    tinfo(&g, "t", 9, ne, 0, 0);                 /* more than the IR holds: fatal */
    finish(&g, 4);
    expect_rule(&g, LC_E_MALFORMED, at, NULL, true);
    free(g.b);
}

Test(gguf_rules, numel_as_ggml_counts) {
    /* 2^63 - 1 elements of I8: ggml refuses (INT64_MAX / 1 <= ne[0]); before, the
     * reader let it through to the end-of-file check. */
    const uint64_t ne[] = { (uint64_t)INT64_MAX };
    gb g = { 0 };
    header(&g, 1, 0);
    size_t at = tinfo(&g, "t", 1, ne, 24, 0) + 8 + 1 + 4;   /* ne[0] */
    finish(&g, 0);
    expect_rule(&g, LC_E_OVERFLOW, at, NULL, true);
    /* A zero dimension makes the count trivially representable, as in ggml. */
    const uint64_t zero[] = { 4, 0 };
    header(&g, 1, 0);
    tinfo(&g, "t", 2, zero, 0, 0);
    finish(&g, 0);
    expect_rule(&g, LC_OK, 0, "none", false);
    free(g.b);
}

Test(gguf_rules, offset_aligned) {
    gb g = { 0 };
    header(&g, 2, 0);
    tinfo(&g, "a", 1, ONE, 0, 0);
    size_t at = tinfo(&g, "b", 1, ONE, 0, 33) + 8 + 1 + 4 + 8 + 4;
    finish(&g, 40);
    expect_rule(&g, LC_E_MALFORMED, at, "gguf.offset-aligned", true);
    free(g.b);
}

Test(gguf_rules, offset_order) {
    gb g = { 0 };
    header(&g, 2, 0);
    tinfo(&g, "a", 1, ONE, 0, 0);
    size_t at = tinfo(&g, "b", 1, ONE, 0, 64) + 8 + 1 + 4 + 8 + 4;   /* a gap */
    finish(&g, 68);
    expect_rule(&g, LC_E_MALFORMED, at, "gguf.offset-order", true);
    free(g.b);
}

Test(gguf_rules, header_padding) {
    gb g = { 0 };
    header(&g, 1, 0);
    tinfo(&g, "a", 1, ONE, 0, 0);
    size_t at = g.n;
    finish(&g, 4);
    cr_assert(at % 32 != 0);
    g.b[at + 1] = 0xee;                         /* inside the padding before the data */
    expect_rule(&g, LC_E_MALFORMED, at, "gguf.header-padding", true);
    free(g.b);
}

Test(gguf_rules, tensor_padding_is_a_note) {
    gb g = { 0 };
    header(&g, 2, 0);
    tinfo(&g, "a", 1, ONE, 0, 0);
    tinfo(&g, "b", 1, ONE, 0, 32);
    finish(&g, 36);
    const size_t data = g.n - 36;
    g.b[data + 4] = 1;                          /* after a's 4 bytes, before b */
    expect_rule(&g, LC_OK, data + 4, "gguf.tensor-padding", false);
    free(g.b);
}

Test(gguf_rules, data_end_is_a_note) {
    gb g = { 0 };
    header(&g, 2, 0);
    tinfo(&g, "a", 1, ONE, 0, 0);
    tinfo(&g, "b", 1, ONE, 0, 32);
    finish(&g, 36);                             /* b's 4 bytes, not its 28 of padding */
    expect_rule(&g, LC_OK, g.n, "gguf.data-end", false);
    finish(&g, 28);
    expect_rule(&g, LC_OK, 0, "none", false);
    free(g.b);
}

/* ---- the model as a whole ---- */

Test(gguf_rules, quantization_version_is_a_note) {
    const uint64_t ne[] = { 32 };
    gb g = { 0 };
    header(&g, 1, 0);
    tinfo(&g, "q", 1, ne, 8, 0);                /* Q8_0, no general.quantization_version */
    finish(&g, 34);
    expect_rule(&g, LC_OK, LC_NO_OFFSET, "gguf.quantization-version", false);
    free(g.b);
}

Test(gguf_rules, architecture_is_a_note) {
    gb g = { 0 };
    g.n = 0;
    put(&g, "GGUF", 4);
    u32(&g, 3);
    u64(&g, 0);
    u64(&g, 1);
    kv_u8(&g, "k.a");
    finish(&g, 0);
    expect_rule(&g, LC_OK, LC_NO_OFFSET, "gguf.architecture", false);
    free(g.b);
}

/* ---- the writer writes nothing the reader refuses ---- */

Test(gguf_rules, writer_refuses_what_the_reader_refuses) {
    static const char *const keys[] = { "", "a\nb", "a..b" };
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        lc_model *m = lc_model_new();
        lc_error err = { 0 };
        cr_assert_eq(lc_model_set_meta_str(m, keys[i], "v", &err), LC_OK);
        cr_assert_eq(lc_gguf_write(m, "/tmp/lc-gguf-rules-never.gguf", NULL, NULL, &err),
                     LC_E_ARG, "key %zu: %s", i, err.msg);
        cr_assert_str_eq(err.where, keys[i]);
        cr_assert_eq(access("/tmp/lc-gguf-rules-never.gguf", F_OK), -1);
        lc_model_free(m);
    }
    lc_model *m = lc_model_new();
    lc_error err = { 0 };
    lc_value v = lc_value_uint(LC_VT_U32, 4);
    cr_assert_eq(lc_model_set_meta(m, "general.alignment", &v, &err), LC_OK);
    cr_assert_eq(lc_gguf_write(m, "/tmp/lc-gguf-rules-never.gguf", NULL, NULL, &err), LC_E_ARG);
    lc_model_free(m);
}
