/* libconvert/inspect.h: print any model's header, metadata and tensor table.
 *
 * Format-neutral: every reader's lc_model prints the same way, so model-inspect
 * stays a thin tool. The rules a lenient open found broken (lc_model_warning) come
 * first, one line each. Text is for people (long arrays and strings are summarised,
 * names are escaped so a hostile name cannot move the cursor); JSON is for scripts
 * and complete (every tensor, every metadata value in full, nested arrays kept). */
#ifndef LC_LIBCONVERT_INSPECT_H
#define LC_LIBCONVERT_INSPECT_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>

#include "libconvert/error.h"
#include "libconvert/json.h"
#include "libconvert/model.h"

typedef struct lc_inspect_info {
    const char *path;        /* printed as given */
    const char *format;      /* "safetensors", ... */
    uint64_t    file_size;   /* 0: unknown or a folder */
    uint64_t    header_size; /* 0: not applicable */
} lc_inspect_info;

/* Writes the report to f. LC_E_IO when f reports a write error, LC_E_NOMEM. */
lc_code lc_inspect_print_text(FILE *f, const lc_model *m, const lc_inspect_info *info,
                              lc_error *err);
/* Writes one JSON object and a newline:
 *   {"file": S, "format": S, "file_size": N, "header_size": N,
 *    "warnings": [{"rule": S, "refused": B, "offset": N or null, "where": S,
 *                  "message": S}, ...], "warnings_dropped": N,   (lc_model_warning)
 *    "metadata": {KEY: VALUE, ...},            in model order; arrays as JSON arrays
 *    "tensors": [{"name": S, "dtype": S, "shape": [N, ...], "nbytes": N,
 *                 "offset": N or null}, ...]}   in model order
 * Integers are exact; floats that are NaN or infinite print as null. */
lc_code lc_inspect_print_json(FILE *f, const lc_model *m, const lc_inspect_info *info,
                              lc_error *err);
/* Appends v as JSON text (full, nested arrays kept) to b; for other printers. */
lc_code lc_inspect_value_json(lc_json_buf *b, const lc_value *v, lc_error *err);

#endif
