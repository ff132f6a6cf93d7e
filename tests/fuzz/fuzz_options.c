/* tests/fuzz/fuzz_options.c: libFuzzer entry for gguf-quantize's option parsing:
 * --override-kv KEY=TYPE:VALUE (lc_job_quantize_override) and --tensor-type
 * PATTERN=TYPE (lc_job_gguf_quantize_check), and the pattern matcher behind it
 * (libconvert/regex.h, through lc_mix_pattern_compile).
 *
 * Input: byte 0 picks what the rest is: an --override-kv argument, a --tensor-type
 * argument, or a pattern (NUL-free text up to the first NUL) followed by names to
 * search (the bytes after it, split at NUL).
 *
 * Checked: the parsers fail only with LC_E_ARG (or LC_E_OVERFLOW / LC_E_NOMEM for a
 * pattern) and leave a parsed value the type asked for; a pattern either compiles to at
 * most LC_RE_MAX_STATES states or is refused, the same way twice; a search finishes
 * (libFuzzer's timeout is the linear-time check) and agrees with itself; a pattern of
 * literal bytes only matches exactly where it occurs; and every error line is one line
 * with no raw control byte. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/gguf_quantize.h"
#include "jobs/gguf_quantize_impl.h"
#include "libconvert/regex.h"
#include "libconvert/value.h"
#include "quant/ftype.h"
#include "quant/mix.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The error line a tool prints (lc_err_format escapes what the message quotes): one
 * line, no raw control byte. */
static void one_line(const lc_error *e) {
    char line[1024];
    lc_err_format(e, line, sizeof line);
    for (const unsigned char *p = (const unsigned char *)line; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            abort();
}

static char *cstr(const uint8_t *p, size_t n) {
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

/* Whether needle[0..m) occurs in hay[0..n) (memmem is not in POSIX). */
static bool contains(const void *hay, size_t n, const void *needle, size_t m) {
    for (size_t i = 0; m <= n && i <= n - m; i++)
        if (memcmp((const char *)hay + i, needle, m) == 0)
            return true;
    return false;
}

static bool literal_only(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strchr("\\^$.|?*+()[]{}", p[i]) || (p[i] >= 'A' && p[i] <= 'Z'))
            return false;
    return true;
}

static void patterns(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    const size_t plen = nul ? (size_t)(nul - data) : size;
    lc_re *re = NULL, *again = NULL;
    lc_error err = { 0 }, e2 = { 0 };
    const lc_code rc = lc_mix_pattern_compile((const char *)data, plen, &re, &err);
    if (lc_mix_pattern_compile((const char *)data, plen, &again, &e2) != rc)
        abort();
    lc_re_free(again);
    if (rc != LC_OK) {
        if ((rc != LC_E_ARG && rc != LC_E_OVERFLOW && rc != LC_E_NOMEM) || re)
            abort();
        one_line(&err);
        return;
    }
    if (lc_re_states(re) > LC_RE_MAX_STATES)
        abort();
    const bool lit = literal_only((const char *)data, plen);
    const uint8_t *p = nul ? nul + 1 : data + size;
    static const char *const names[] = { "token_embd.weight", "blk.0.attn_v.weight",
                                         "blk.12.ffn_down.weight", "output.weight", "" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        bool m1, m2;
        if (lc_re_search(re, names[i], strlen(names[i]), &m1, NULL) != LC_OK ||
            lc_re_search(re, names[i], strlen(names[i]), &m2, NULL) != LC_OK || m1 != m2)
            abort();
        if (lit && m1 != contains(names[i], strlen(names[i]), data, plen))
            abort();
    }
    while (p < data + size) {                       /* the input's own names */
        const uint8_t *e = memchr(p, 0, (size_t)(data + size - p));
        const size_t n = e ? (size_t)(e - p) : (size_t)(data + size - p);
        bool m;
        if (lc_re_search(re, (const char *)p, n, &m, NULL) != LC_OK)
            abort();
        if (lit && m != contains(p, n, data, plen))
            abort();
        p += n + 1;
    }
    lc_re_free(re);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    const uint8_t mode = data[0] % 3;
    data++, size--;
    if (mode == 2) {
        patterns(data, size);
        return 0;
    }
    char *arg = cstr(data, size);
    if (!arg)
        return 0;
    lc_error err = { 0 };
    if (mode == 0) {
        char key[128];
        lc_value v = { 0 };
        const lc_code rc = lc_job_quantize_override(arg, key, sizeof key, &v, &err);
        if (rc == LC_OK) {
            if (strlen(key) >= sizeof key || !strchr(arg, '=') ||
                (v.type != LC_VT_U32 && v.type != LC_VT_F32 && v.type != LC_VT_BOOL &&
                 v.type != LC_VT_STRING))
                abort();
            lc_value_clear(&v);
        } else if (rc != LC_E_ARG && rc != LC_E_NOMEM) {
            abort();
        } else {
            one_line(&err);
        }
    } else {
        const char *const list[1] = { arg };
        lc_job_quantize_opts o = { .ftype = lc_ftype_by_name("Q4_0"), .dry_run = true,
                                   .tensor_types = list, .n_tensor_types = 1 };
        const lc_code rc = lc_job_gguf_quantize_check(&o, &err);
        if (rc != LC_OK && rc != LC_E_ARG && rc != LC_E_OVERFLOW && rc != LC_E_NOMEM)
            abort();
        if (rc != LC_OK)
            one_line(&err);
    }
    free(arg);
    return 0;
}
