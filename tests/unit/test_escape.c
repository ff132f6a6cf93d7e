/* Unit tests for libconvert/escape and the places that print names from files: the
 * error line (lc_err_format) and the quoted JSON forms of reports. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/error.h"
#include "libconvert/escape.h"
#include "libconvert/json.h"

/* No byte a terminal acts on: C0, DEL, ESC sequences, C1 (as UTF-8), bidi controls. */
static void assert_terminal_safe(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        cr_assert(*p >= 0x20 && *p != 0x7f, "raw byte 0x%02x in \"%s\"", *p, s);
        if (p[0] == 0xc2)
            cr_assert(p[1] < 0x80 || p[1] > 0x9f, "raw C1 control in \"%s\"", s);
        if (p[0] == 0xe2 && p[1] == 0x80)
            cr_assert(p[2] < 0xaa || p[2] > 0xae, "raw bidi control in \"%s\"", s);
    }
}

Test(escape, controls_del_and_bad_utf8) {
    char out[128];
    static const char in[] = "a\nall checks passed\x1b[32m\x7f\xff\t\xc3\xa9\\";
    size_t n = lc_escape(out, sizeof out, in, sizeof in - 1);
    cr_assert_str_eq(out, "a\\nall checks passed\\x1b[32m\\x7f\\xff\\t\xc3\xa9\\");
    cr_assert_eq(n, strlen(out));
    assert_terminal_safe(out);
}

Test(escape, c1_and_bidi_controls) {
    char out[64];
    static const char in[] = "x\xc2\x9b" "31m\xe2\x80\xae" "gnp.exe";
    lc_escape(out, sizeof out, in, sizeof in - 1);
    cr_assert_str_eq(out, "x\\u009b31m\\u202egnp.exe");
    assert_terminal_safe(out);
}

Test(escape, truncation_never_splits_an_escape) {
    char out[6];
    lc_escape(out, sizeof out, "ab\x1b" "cd", 5);
    cr_assert_str_eq(out, "ab");   /* "\x1b" needs 4 bytes, only 3 left */
    lc_escape(out, sizeof out, "abc\xc3\xa9", 5);
    cr_assert_str_eq(out, "abc\xc3\xa9");
    lc_escape(out, 5, "abc\xc3\xa9", 5);
    cr_assert_str_eq(out, "abc");  /* never half a UTF-8 character */
}

Test(escape, error_line_escapes_every_field) {
    lc_error err = {0};
    lc_fail(&err, LC_E_MALFORMED, 0x40, "key '%s' is bad", "k\r\x1b[2K");
    lc_err_context(&err, "dir/\x1b]0;title\x07.gguf", "a\nall checks passed\x1b[32m");
    char line[512];
    lc_err_format(&err, line, sizeof line);
    cr_assert_str_eq(line, "dir/\\x1b]0;title\\x07.gguf: a\\nall checks passed\\x1b[32m @ 0x40: "
                           "key 'k\\r\\x1b[2K' is bad");
    assert_terminal_safe(line);
}

Test(escape, json_display_is_valid_json_and_safe) {
    lc_json_buf b = {0}, raw = {0};
    static const char in[] = "n\x7f\xc2\x85\xe2\x81\xa6\"\x01";
    cr_assert_eq(lc_json_put_display(&b, in, sizeof in - 1, NULL), LC_OK);
    cr_assert_str_eq(b.data, "\"n\\u007f\\u0085\\u2066\\\"\\u0001\"");
    assert_terminal_safe(b.data);
    /* The serde_json form the safetensors writer needs is unchanged: DEL and C1 raw. */
    cr_assert_eq(lc_json_put_string(&raw, in, sizeof in - 1, NULL), LC_OK);
    cr_assert_str_eq(raw.data, "\"n\x7f\xc2\x85\xe2\x81\xa6\\\"\\u0001\"");
    lc_json_buf_free(&b);
    lc_json_buf_free(&raw);
}
