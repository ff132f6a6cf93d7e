/* Unit tests for hf/spm.c: the SentencePiece protobuf reader, one literal-bytes
 * case per code it returns (code and offset), and the bad-input fixtures. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hf/spm.h"
#include "libconvert/alloc.h"
#include "libconvert/map.h"

static lc_code parse(const uint8_t *b, size_t n, lc_hf_spm **m, lc_error *err) {
    memset(err, 0, sizeof *err);
    return lc_hf_spm_parse(b, n, 0, m, err);
}

#define EXPECT_FAIL(bytes, code, off)                                   \
    do {                                                                \
        lc_hf_spm *m_ = (lc_hf_spm *)1;                                 \
        lc_error e_;                                                    \
        cr_assert_eq(parse(bytes, sizeof bytes, &m_, &e_), code, "%s", e_.msg); \
        cr_assert_eq(e_.offset, (uint64_t)(off), "offset %llu", (unsigned long long)e_.offset); \
        cr_assert_null(m_);                                             \
    } while (0)

Test(hf_spm, parses_pieces_specs_and_skips_unknown_fields) {
    static const uint8_t b[] = {
        /* pieces { piece "ab" score 1.5f type 2 } */
        0x0a, 0x0b, 0x0a, 0x02, 'a', 'b', 0x15, 0x00, 0x00, 0xc0, 0x3f, 0x18, 0x02,
        /* pieces { piece "c" } : defaults score 0, type normal */
        0x0a, 0x03, 0x0a, 0x01, 'c',
        /* trainer_spec { model_type 2, vocab_size 300, byte_fallback 1, unk 5, pad -1 } */
        0x12, 0x17, 0x18, 0x02, 0x20, 0xac, 0x02, 0x98, 0x02, 0x01, 0xc0, 0x02, 0x05,
        0xd8, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        /* normalizer_spec { add_dummy_prefix 0, name "x" (skipped) } */
        0x1a, 0x05, 0x18, 0x00, 0x0a, 0x01, 'x',
        /* unknown fields 7 of each wire type: varint, fixed64, len, fixed32 */
        0x38, 0x96, 0x01, 0x39, 1, 2, 3, 4, 5, 6, 7, 8, 0x3a, 0x01, 0x00, 0x3d, 1, 2, 3, 4,
    };
    lc_hf_spm *m;
    lc_error err;
    cr_assert_eq(parse(b, sizeof b, &m, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(m->n_pieces, 2);
    cr_assert_eq(m->pieces[0].len, 2);
    cr_assert(memcmp(m->pieces[0].text, "ab", 2) == 0);
    cr_assert_float_eq(m->pieces[0].score, 1.5f, 0);
    cr_assert_eq(m->pieces[0].type, LC_SPM_UNKNOWN);
    cr_assert_eq(m->pieces[1].len, 1);
    cr_assert_eq(m->pieces[1].score, 0.0f);
    cr_assert_eq(m->pieces[1].type, LC_SPM_NORMAL);
    cr_assert_eq(m->model_type, 2);
    cr_assert_eq(m->vocab_size, 300);
    cr_assert(m->byte_fallback);
    cr_assert_eq(m->unk_id, 5);
    cr_assert_eq(m->bos_id, 1);   /* default kept */
    cr_assert_eq(m->pad_id, -1);  /* ten-byte sign-extended varint */
    cr_assert_not(m->add_dummy_prefix);
    cr_assert(m->remove_extra_whitespaces);
    lc_hf_spm_free(m);
}

Test(hf_spm, empty_input_is_an_empty_model) {
    lc_hf_spm *m;
    lc_error err;
    cr_assert_eq(lc_hf_spm_parse(NULL, 0, 0, &m, &err), LC_OK);
    cr_assert_eq(m->n_pieces, 0);
    cr_assert_eq(m->eos_id, 2);
    lc_hf_spm_free(m);
}

Test(hf_spm, truncated_key_varint) {
    static const uint8_t b[] = { 0x80 };
    EXPECT_FAIL(b, LC_E_TRUNCATED, 0);
}

Test(hf_spm, truncated_length_past_end) {
    static const uint8_t b[] = { 0x0a, 0x05, 'a' };
    EXPECT_FAIL(b, LC_E_TRUNCATED, 1);   /* the length varint */
}

Test(hf_spm, truncated_nested_length_stays_inside_parent) {
    /* The piece's string claims 5 bytes but its message has only 1 left. */
    static const uint8_t b[] = { 0x0a, 0x03, 0x0a, 0x05, 'a', 'b', 'c', 'd', 'e' };
    EXPECT_FAIL(b, LC_E_TRUNCATED, 3);
}

Test(hf_spm, truncated_fixed32_score) {
    static const uint8_t b[] = { 0x0a, 0x03, 0x15, 0x00, 0x00 };
    EXPECT_FAIL(b, LC_E_TRUNCATED, 3);
}

Test(hf_spm, malformed_varint_longer_than_64_bits) {
    static const uint8_t b[] = { 0x38, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                 0x02 };
    EXPECT_FAIL(b, LC_E_MALFORMED, 1);
}

Test(hf_spm, malformed_field_number_zero) {
    static const uint8_t b[] = { 0x0a, 0x00, 0x00 };
    EXPECT_FAIL(b, LC_E_MALFORMED, 2);
}

Test(hf_spm, malformed_known_field_with_wrong_wire_type) {
    static const uint8_t b[] = { 0x0a, 0x00, 0x08, 0x01 };
    EXPECT_FAIL(b, LC_E_MALFORMED, 2);
}

Test(hf_spm, malformed_piece_type) {
    static const uint8_t b[] = { 0x0a, 0x02, 0x18, 0x07 };
    EXPECT_FAIL(b, LC_E_MALFORMED, 3);
}

Test(hf_spm, malformed_int32_out_of_range) {
    /* trainer_spec { bos_id = 2^40 } */
    static const uint8_t b[] = { 0x12, 0x08, 0xc8, 0x02, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20 };
    EXPECT_FAIL(b, LC_E_MALFORMED, 4);
}

Test(hf_spm, malformed_wire_type_7) {
    static const uint8_t b[] = { 0x3f };
    EXPECT_FAIL(b, LC_E_MALFORMED, 0);
}

Test(hf_spm, unsupported_group) {
    static const uint8_t b[] = { 0x0a, 0x00, 0x3b };
    EXPECT_FAIL(b, LC_E_UNSUPPORTED, 2);
}

Test(hf_spm, out_of_memory_is_reported) {
    static const uint8_t b[] = { 0x0a, 0x01, 0x0a };
    lc_hf_spm *m;
    lc_error err = { 0 };
    for (long nth = 1; nth <= 2; nth++) {
        memset(&err, 0, sizeof err);
        lc_alloc_fail_after(nth);
        lc_code rc = lc_hf_spm_parse((const uint8_t *)"\x0a\x00", 2, 0, &m, &err);
        lc_alloc_fail_after(0);
        cr_assert_eq(rc, LC_E_NOMEM, "allocation %ld", nth);
        cr_assert_null(m);
    }
    cr_assert_eq(lc_hf_spm_parse(b, sizeof b, 0, &m, &err), LC_E_TRUNCATED);
}

Test(hf_spm, offsets_include_the_base) {
    static const uint8_t b[] = { 0x0a, 0x05, 'a' };
    lc_hf_spm *m;
    lc_error err = { 0 };
    cr_assert_eq(lc_hf_spm_parse(b, sizeof b, 100, &m, &err), LC_E_TRUNCATED);
    cr_assert_eq(err.offset, 101);
}

/* Every fixtures/bad/spm/<code>-*.bin fails with <code>. */
Test(hf_spm, bad_fixtures_fail_with_their_code) {
    const char *root = getenv("LC_FIXTURES") ? getenv("LC_FIXTURES") : "fixtures";
    char dir[512];
    snprintf(dir, sizeof dir, "%s/bad/spm", root);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "no %s", dir);
    int seen = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        lc_map *map;
        lc_error err = { 0 };
        cr_assert_eq(lc_map_open(path, &map, &err), LC_OK);
        lc_hf_spm *m;
        lc_code rc = lc_hf_spm_parse(map->data, map->size, 0, &m, &err);
        lc_map_close(map);
        const char *name = lc_code_name(rc);
        cr_assert(strncmp(e->d_name, name, strlen(name)) == 0 && e->d_name[strlen(name)] == '-',
                  "%s gave %s", e->d_name, name);
        seen++;
    }
    closedir(d);
    cr_assert_geq(seen, 8);
}

Test(hf_spm, real_tiny_model) {
    const char *root = getenv("LC_FIXTURES") ? getenv("LC_FIXTURES") : "fixtures";
    char path[512];
    snprintf(path, sizeof path, "%s/spm/tiny.model", root);
    lc_map *map;
    lc_error err = { 0 };
    cr_assert_eq(lc_map_open(path, &map, &err), LC_OK);
    lc_hf_spm *m;
    cr_assert_eq(lc_hf_spm_parse(map->data, map->size, 0, &m, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(m->n_pieces, 120);
    cr_assert_eq(m->model_type, 1);                       /* unigram */
    cr_assert_eq(m->pieces[0].type, LC_SPM_UNKNOWN);      /* <unk> */
    cr_assert(m->pieces[0].len == 5 && memcmp(m->pieces[0].text, "<unk>", 5) == 0);
    cr_assert_eq(m->pieces[1].type, LC_SPM_CONTROL);      /* <s> */
    cr_assert_eq(m->pieces[3].type, LC_SPM_CONTROL);      /* <c> */
    cr_assert_eq(m->pieces[4].type, LC_SPM_USER_DEFINED); /* <u> */
    cr_assert_eq(m->vocab_size, 120);
    lc_hf_spm_free(m);
    lc_map_close(map);
}
