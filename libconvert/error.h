/* libconvert/error.h: the one error value every fallible function fills.
 *
 * Every fallible function returns an lc_code (LC_OK == 0) and takes `lc_error *err`
 * last. The innermost detector records code, offset and message with lc_fail();
 * the first failure wins, and outer layers only add the file and the entry
 * (zip member, tensor, key) with lc_err_context() when those are still empty.
 * The buffers are fixed so that running out of memory can be reported without
 * allocating. */
#ifndef LC_LIBCONVERT_ERROR_H
#define LC_LIBCONVERT_ERROR_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* Stable coarse codes; the detail is in the message. Tests match codes, never text. */
typedef enum lc_code {
    LC_OK = 0,
    LC_E_IO,          /* the OS refused a read, write, map or rename                */
    LC_E_NOMEM,       /* an allocation failed                                        */
    LC_E_TRUNCATED,   /* a field or payload runs past the end of its container       */
    LC_E_MALFORMED,   /* bad magic, bad JSON, impossible or inconsistent value       */
    LC_E_OVERFLOW,    /* a declared size, count or offset overflows or passes a limit */
    LC_E_UNSUPPORTED, /* valid input we do not handle (dtype, zip method, opcode)    */
    LC_E_FORBIDDEN,   /* a pickle names a global that is not on the allowlist        */
    LC_E_NOTFOUND,    /* a named file, tensor or key is absent                       */
    LC_E_MISMATCH,    /* two things that must agree do not (model-verify, shards)    */
    LC_E_ARG,         /* the caller asked for something invalid                      */
    LC_CODE_COUNT
} lc_code;

#define LC_NO_OFFSET UINT64_MAX

typedef struct lc_error {
    lc_code  code;
    uint64_t offset;      /* byte offset in `path`, or LC_NO_OFFSET */
    char     path[256];   /* file being read or written */
    char     where[128];  /* zip entry, tensor name or metadata key */
    char     msg[256];    /* one sentence for a person; may quote bytes from a file */
} lc_error;

/* Records a failure unless one is recorded already; returns `code`. `err` may be NULL. */
lc_code lc_fail(lc_error *err, lc_code code, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* lc_fail, then lc_err_context(err, NULL, where): a failure found while looking at a
 * named entry (tensor, key) says which. */
lc_code lc_fail_in(lc_error *err, lc_code code, uint64_t offset, const char *where,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Fills path and where if they are still empty; either argument may be NULL. */
void lc_err_context(lc_error *err, const char *path, const char *where);

/* Short stable name of a code ("truncated"); never NULL. */
const char *lc_code_name(lc_code code);

/* Writes the one-line printed form "PATH: WHERE @ 0xOFF: MSG" into buf, every field
 * escaped for a terminal (libconvert/escape.h): no control byte, DEL or invalid UTF-8
 * from a file reaches the line raw. */
void lc_err_format(const lc_error *err, char *buf, size_t cap);

/* Only in functions with nothing to free; otherwise `goto done`. */
#define LC_TRY(expr) do { lc_code rc_ = (expr); if (rc_ != LC_OK) return rc_; } while (0)

#endif
