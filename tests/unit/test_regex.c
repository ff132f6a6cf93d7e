/* Unit tests for libconvert/regex: what llama-quantize's users write matches as
 * std::regex_search does, the hostile patterns of issue 19 are refused or cheap, and
 * every refusal names its byte. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "libconvert/regex.h"

static bool search(const char *pat, const char *s) {
    lc_re *re = NULL;
    lc_error err = { 0 };
    cr_assert_eq(lc_re_compile(pat, strlen(pat), &re, &err), LC_OK, "'%s': %s", pat, err.msg);
    bool m = false;
    cr_assert_eq(lc_re_search(re, s, strlen(s), &m, &err), LC_OK);
    lc_re_free(re);
    return m;
}

static lc_error refused(const char *pat, lc_code want) {
    lc_re *re = (lc_re *)1;
    lc_error err = { 0 };
    cr_assert_eq(lc_re_compile(pat, strlen(pat), &re, &err), want, "'%s': %s (%s)", pat,
                 lc_code_name(err.code), err.msg);
    cr_assert_null(re);
    return err;
}

typedef struct { const char *pat, *name; bool want; } tcase;

/* The patterns people give --tensor-type, and the corners of the language. */
static const tcase CASES[] = {
    { "attn_v", "blk.0.attn_v.weight", true },
    { "attn_v", "blk.0.attn_q.weight", false },
    { "blk\\.[0-9]+\\.ffn_down", "blk.12.ffn_down.weight", true },
    { "blk\\.[0-9]+\\.ffn_down", "blk.x.ffn_down.weight", false },
    { "blk\\.[0-9]+\\.ffn_down", "blkX12.ffn_down.weight", false },
    { "^output\\.weight$", "output.weight", true },
    { "^output\\.weight$", "output.weight2", false },
    { "^output\\.weight$", "xoutput.weight", false },
    { "(ffn_up|ffn_gate)", "blk.3.ffn_gate.weight", true },
    { "(ffn_up|ffn_gate)", "blk.3.ffn_down.weight", false },
    { "blk\\.(0|1|2)\\.attn_(q|k)\\.weight", "blk.2.attn_k.weight", true },
    { "blk\\.(0|1|2)\\.attn_(q|k)\\.weight", "blk.3.attn_k.weight", false },
    { "blk\\.\\d+\\.ffn_.*", "blk.7.ffn_up.weight", true },
    { "blk\\.1[0-5]\\.", "blk.15.attn_v.weight", true },
    { "blk\\.1[0-5]\\.", "blk.16.attn_v.weight", false },
    { "token_embd|output", "token_embd.weight", true },
    { "^a{2,3}b$", "aab", true },
    { "^a{2,3}b$", "aaab", true },
    { "^a{2,3}b$", "aaaab", false },
    { "^a{2,3}b$", "ab", false },
    { "^a{2}$", "aa", true },
    { "^a{2}$", "aaa", false },
    { "^a{2,}$", "aaaaa", true },
    { "^a{2,}$", "a", false },
    { "^a{0}b$", "b", true },
    { "^(ab){1,2}?$", "abab", true },          /* lazy: the same yes or no */
    { "^a+?$", "aaa", true },
    { "[^a-c]x", "dx", true },
    { "[^a-c]x", "ax", false },
    { "^[\\d-z]$", "-", true },                 /* '-' after a set is a literal */
    { "^[a-]$", "-", true },
    { "^[]$", "", false },                      /* the empty class matches nothing */
    { "^[^]$", "q", true },
    { "\\bv\\b", "attn v w", true },
    { "\\bv\\b", "attnv", false },
    { "\\Bv", "attnv", true },
    { "^$", "", true },
    { "", "anything", true },
    { "a|", "zzz", true },
    { "x*", "abc", true },
    { "^.$", "\n", false },
    { "^.$", "\r", false },
    { "^.$", "\xff", true },                    /* bytes, not UTF-8 */
    { "^\\x41\\u0042\\cJ$", "AB\n", true },
    { "^\\s\\S\\w\\W\\d\\D$", " x_.1a", true },
    { "^[\\s]$", "\v", true },
    { "a\\.b", "axb", false },
    { "a\\.b", "a.b", true },
    { "^\\(\\)\\[\\]\\{\\}\\|\\*\\+\\?\\^\\$\\\\\\/$", "()[]{}|*+?^$\\/", true },
    { "]}", "a]}", true },                      /* ] and } alone are literals */
    { "(?:ab)+c", "xxababc", true },
    { "((a)|b)+$", "abba", true },
    { "(a*)*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaac", false },
    { "\\0", "", false },
};

Test(regex, matches_like_regex_search) {
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++)
        cr_expect_eq(search(CASES[i].pat, CASES[i].name), CASES[i].want, "'%s' on '%s'",
                     CASES[i].pat, CASES[i].name);
    char nul[] = "a\0b";                        /* NUL is a byte like any other */
    lc_re *re;
    bool m;
    cr_assert_eq(lc_re_compile("\\0b", 3, &re, NULL), LC_OK);
    cr_assert_eq(lc_re_search(re, nul, 3, &m, NULL), LC_OK);
    cr_assert(m);
    lc_re_free(re);
}

/* Issue 19's hostile patterns: glibc died (SIGSEGV), took 8 s, or spent 3 GB. */
Test(regex, hostile_patterns_are_refused_with_a_reason) {
    lc_error e = refused("(|)(\\1\\1)*", LC_E_ARG);
    cr_assert(strstr(e.msg, "back-references") && strstr(e.msg, "at byte 4"), "%s", e.msg);
    e = refused("^(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)\\9\\8\\7\\6\\5\\4\\3\\2\\1x$", LC_E_ARG);
    cr_assert(strstr(e.msg, "back-references"), "%s", e.msg);
    e = refused("((.{1,255}){1,255}){1,255}", LC_E_OVERFLOW);
    cr_assert(strstr(e.msg, "4096 NFA states"), "%s", e.msg);
    refused("a{1000000}", LC_E_OVERFLOW);
    refused("(?:(?:(?:a{64}){64}){64})", LC_E_OVERFLOW);
    e = refused("\\k<x>", LC_E_ARG);
    cr_assert(strstr(e.msg, "back-references"), "%s", e.msg);
}

Test(regex, syntax_errors_name_the_byte) {
    static const struct { const char *pat; const char *what; size_t at; } bad[] = {
        { "(?=a)", "lookaround", 0 },     { "a(?!b)", "lookaround", 1 },
        { "(?<n>a)", "named groups", 0 }, { "(?x)", "starts no group", 0 },
        { "a**", "nothing to repeat", 2 }, { "a{2}{3}", "nothing to repeat", 4 },
        { "*a", "nothing to repeat", 0 }, { "^*", "nothing to repeat", 1 },
        { "a|+", "nothing to repeat", 2 }, { "a{", "opens no repetition", 1 },
        { "a{x}", "opens no repetition", 1 }, { "a{2,x}", "opens no repetition", 1 },
        { "a{3,2}", "n > m", 1 },         { "(ab", "unbalanced (", 0 },
        { "ab)", "unbalanced )", 2 },     { "[ab", "unbalanced [", 0 },
        { "[z-a]", "out of order", 2 },   { "\\q", "unknown escape", 0 },
        { "ab\\", "backslash ends", 2 },  { "\\x4", "two hex digits", 0 },
        { "\\u0100", "U+00FF", 0 },       { "\\01", "octal", 0 },
        { "\\c1", "wants a letter", 0 },  { "[\\1]", "back-references", 1 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        lc_error e = refused(bad[i].pat, LC_E_ARG);
        char at[32];
        snprintf(at, sizeof at, "at byte %zu ", bad[i].at);
        cr_expect(strstr(e.msg, bad[i].what) && strstr(e.msg, at), "'%s': %s", bad[i].pat,
                  e.msg);
    }
    char deep[512];                                 /* nesting is capped, not the stack */
    memset(deep, '(', 256);
    memset(deep + 256, ')', 256);
    lc_re *re;
    lc_error err = { 0 };
    cr_assert_eq(lc_re_compile(deep, sizeof deep, &re, &err), LC_E_ARG);
    cr_assert(strstr(err.msg, "nested too deep"), "%s", err.msg);
}

/* Time linear in the name: patterns that make a backtracking matcher exponential. */
Test(regex, search_time_is_linear) {
    static char name[100001];
    memset(name, 'a', sizeof name - 1);
    static const char *const pats[] = { "(a*)*b", "(a|a)*(a|a)*(a|aa)*b", "^(a+)+$x",
                                        "(.*.*.*.*.*.*.*.*)*b", "(x+x+)+y" };
    for (size_t i = 0; i < sizeof pats / sizeof *pats; i++) {
        lc_re *re;
        cr_assert_eq(lc_re_compile(pats[i], strlen(pats[i]), &re, NULL), LC_OK);
        const clock_t t0 = clock();
        bool m = true;
        cr_assert_eq(lc_re_search(re, name, sizeof name - 1, &m, NULL), LC_OK);
        const double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
        cr_assert(!m, "%s", pats[i]);
        cr_assert_lt(secs, 2.0, "'%s' took %.2f s on 100 kB", pats[i], secs);
        lc_re_free(re);
    }
}

Test(regex, states_are_counted_exactly) {
    static const struct { const char *pat; size_t states; } c[] = {
        { "ab", 3 }, { "a|b", 5 }, { "a*", 4 }, { "a{2,3}", 5 }, { "a{2,}", 6 },
        { "", 1 },   { "(a|b|c)", 8 },
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        lc_re *re;
        cr_assert_eq(lc_re_compile(c[i].pat, strlen(c[i].pat), &re, NULL), LC_OK);
        cr_expect_eq(lc_re_states(re), c[i].states, "'%s': %zu", c[i].pat, lc_re_states(re));
        lc_re_free(re);
    }
    /* The cap itself: 4095 literals and MATCH fit, one more does not. */
    static char big[4097];
    memset(big, 'a', sizeof big);
    lc_re *re;
    cr_assert_eq(lc_re_compile(big, 4095, &re, NULL), LC_OK);
    lc_re_free(re);
    cr_assert_eq(lc_re_compile(big, 4096, &re, NULL), LC_E_OVERFLOW);
}
