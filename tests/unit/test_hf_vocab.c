/* Unit tests for hf/vocab.c: placeholders and llama.cpp's added-token typing. */
#include <criterion/criterion.h>
#include <string.h>

#include "hf/vocab.h"
#include "libconvert/alloc.h"

Test(hf_vocab, placeholders_then_added_tokens) {
    lc_hf_vocab v;
    lc_error err = { 0 };
    cr_assert_eq(lc_hf_vocab_init(&v, 6, &err), LC_OK);
    cr_assert_str_eq(lc_hf_vocab_text(&v, 5, NULL), "[PAD5]");
    cr_assert_eq(lc_value_arr_float(&v.scores, 5), -10000.0);
    cr_assert_eq(lc_value_arr_int(&v.types, 5), LC_TOK_UNUSED);
    static const struct { const char *in, *out; bool special; int type; } cases[] = {
        { "<s>", "<s>", true, LC_TOK_CONTROL },
        { "<|im_end|>", "<|im_end|>", false, LC_TOK_CONTROL },          /* looks special */
        { "<\xef\xbd\x9c" "fim\xef\xbd\x9c>", "<\xef\xbd\x9c" "fim\xef\xbd\x9c>", false,
          LC_TOK_CONTROL },                                              /* fullwidth bars */
        { "<unused7>", "<unused7>", false, LC_TOK_CONTROL },
        { "\xe2\x96\x81hi\xe2\x96\x81", " hi ", false, LC_TOK_USER_DEFINED }, /* U+2581 */
        { "<|half", "<|half", false, LC_TOK_USER_DEFINED },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cr_assert_eq(lc_hf_vocab_set_added(&v, i % 6, cases[i].in, cases[i].special, -1000.0,
                                           &err), LC_OK);
        cr_assert_str_eq(lc_hf_vocab_text(&v, i % 6, NULL), cases[i].out, "case %zu", i);
        cr_assert_eq(lc_value_arr_int(&v.types, i % 6), cases[i].type, "case %zu", i);
        cr_assert_eq(lc_value_arr_float(&v.scores, i % 6), -1000.0);
    }
    lc_hf_vocab_clear(&v);
    lc_hf_vocab_clear(&v);   /* clearing twice is harmless */
}

Test(hf_vocab, init_out_of_memory_leaves_nothing) {
    lc_hf_vocab v;
    lc_error err = { 0 };
    lc_alloc_fail_after(5);
    lc_code rc = lc_hf_vocab_init(&v, 4, &err);
    lc_alloc_fail_after(0);
    cr_assert_eq(rc, LC_E_NOMEM);
    cr_assert_eq(v.n, 0);
}
