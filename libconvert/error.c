/* libconvert/error.c: recording and printing errors. */
#include "libconvert/error.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/escape.h"

static void copy_field(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Records code, offset and message unless a failure is recorded already. */
__attribute__((format(printf, 4, 0)))
static void record(lc_error *err, lc_code code, uint64_t offset, const char *fmt, va_list ap) {
    if (!err || err->code != LC_OK)
        return;
    err->code = code;
    err->offset = offset;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    /* A name from a file may have put control bytes in msg: lc_err_format escapes. */
}

lc_code lc_fail(lc_error *err, lc_code code, uint64_t offset, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    record(err, code, offset, fmt, ap);
    va_end(ap);
    return code;
}

lc_code lc_fail_in(lc_error *err, lc_code code, uint64_t offset, const char *where,
                   const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    record(err, code, offset, fmt, ap);
    va_end(ap);
    lc_err_context(err, NULL, where);      /* also names the entry of an earlier failure */
    return code;
}

void lc_err_context(lc_error *err, const char *path, const char *where) {
    if (!err || err->code == LC_OK)
        return;
    if (path && !err->path[0])
        copy_field(err->path, sizeof err->path, path);
    if (where && !err->where[0])
        copy_field(err->where, sizeof err->where, where);
}

const char *lc_code_name(lc_code code) {
    static const char *const names[LC_CODE_COUNT] = {
        [LC_OK] = "ok",
        [LC_E_IO] = "io",
        [LC_E_NOMEM] = "nomem",
        [LC_E_TRUNCATED] = "truncated",
        [LC_E_MALFORMED] = "malformed",
        [LC_E_OVERFLOW] = "overflow",
        [LC_E_UNSUPPORTED] = "unsupported",
        [LC_E_FORBIDDEN] = "forbidden",
        [LC_E_NOTFOUND] = "notfound",
        [LC_E_MISMATCH] = "mismatch",
        [LC_E_ARG] = "arg",
    };
    if ((unsigned)code >= LC_CODE_COUNT)
        return "unknown";
    return names[code];
}

/* Every field may hold bytes from a file (a path from an index, a tensor name, a
 * message quoting either): each is escaped (libconvert/escape.h) so the line stays one
 * line of plain text, whatever the file says. */
void lc_err_format(const lc_error *err, char *buf, size_t cap) {
    size_t n = 0;
    if (cap == 0)
        return;
    buf[0] = '\0';
#define ADD(...)                                                                   \
    do {                                                                           \
        int k_ = snprintf(buf + n, cap - n, __VA_ARGS__);                          \
        if (k_ > 0)                                                                \
            n = (size_t)k_ < cap - n ? n + (size_t)k_ : cap - 1;                   \
    } while (0)
#define ADD_ESC(s) (n += lc_escape(buf + n, cap - n, (s), strlen(s)))
    if (err->path[0]) {
        ADD_ESC(err->path);
        ADD(": ");
    }
    if (err->where[0])
        ADD_ESC(err->where);
    if (err->offset != LC_NO_OFFSET)
        ADD("%s@ 0x%" PRIx64, err->where[0] ? " " : "", err->offset);
    if (err->where[0] || err->offset != LC_NO_OFFSET)
        ADD(": ");
    if (err->msg[0])
        ADD_ESC(err->msg);
    else
        ADD("%s", lc_code_name(err->code));
#undef ADD_ESC
#undef ADD
}
