/* lc-convert-raw: test-only driver for the oracle tests.
 *
 *   lc-convert-raw [--via-cast=CHUNK] FROM TO IN OUT
 *
 * Converts IN, a raw little-endian array of FROM elements, into OUT as TO elements
 * with lc_convert(). With --via-cast the array becomes a 1-D tensor that is cast with
 * lc_tensor_cast() and read back in CHUNK-byte pieces, so that reads start and end
 * inside elements. Exit 0 ok, 1 conversion or I/O failure (the error on stderr),
 * 2 usage. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/convert.h"
#include "libconvert/dtype.h"
#include "libconvert/error.h"
#include "libconvert/tensor.h"

static int fail(const lc_error *err) {
    char line[700];
    lc_err_format(err, line, sizeof line);
    fprintf(stderr, "lc-convert-raw: %s\n", line);
    return 1;
}

static int usage(void) {
    fprintf(stderr, "usage: lc-convert-raw [--via-cast=CHUNK] FROM TO IN OUT\n");
    return 2;
}

static lc_code read_all(const char *path, uint8_t **buf, size_t *len, lc_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot open %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = lc_malloc(n > 0 ? (size_t)n : 1);
    *len = n > 0 ? (size_t)n : 0;
    lc_code rc = LC_OK;
    if (!*buf)
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    else if (*len && fread(*buf, 1, *len, f) != *len)
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot read %s", path);
    fclose(f);
    return rc;
}

int main(int argc, char **argv) {
    long chunk = 0;
    int i = 1;
    if (argc > 1 && strncmp(argv[1], "--via-cast=", 11) == 0) {
        chunk = strtol(argv[1] + 11, NULL, 10);
        if (chunk <= 0)
            return usage();
        i = 2;
    }
    if (argc - i != 4)
        return usage();
    lc_dtype from = lc_dtype_from_name(argv[i]), to = lc_dtype_from_name(argv[i + 1]);
    if (from == LC_DT_INVALID || to == LC_DT_INVALID)
        return usage();
    lc_error err = {0};
    uint8_t *in = NULL, *out = NULL;
    size_t len = 0;
    int rc = 1;
    const size_t fs = lc_dtype_get(from)->type_size, ts = lc_dtype_get(to)->type_size;
    if (read_all(argv[i + 2], &in, &len, &err) != LC_OK)
        goto done;
    if (len % fs) {
        lc_fail(&err, LC_E_MALFORMED, len, "%zu bytes is not a whole number of %s", len,
                lc_dtype_name(from));
        goto done;
    }
    const size_t n = len / fs;
    if (!(out = lc_malloc_array(n ? n : 1, ts))) {
        lc_fail(&err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    if (chunk == 0) {
        if (lc_convert(from, in, to, out, n, &err) != LC_OK)
            goto done;
    } else {
        char name[] = "raw";
        lc_tensor t = { .name = name, .dtype = from, .ndim = 1, .shape = { n },
                        .nbytes = len, .data = in, .file_offset = 0 };
        if (lc_tensor_cast(&t, to, &err) != LC_OK)
            goto done;
        lc_code c = LC_OK;
        for (uint64_t off = 0; off < t.nbytes && c == LC_OK; off += (uint64_t)chunk) {
            size_t k = t.nbytes - off < (uint64_t)chunk ? (size_t)(t.nbytes - off) : (size_t)chunk;
            c = lc_tensor_read(&t, off, out + off, k, &err);
        }
        t.ops->free(t.ctx);
        if (c != LC_OK)
            goto done;
    }
    FILE *f = fopen(argv[i + 3], "wb");
    bool ok = f && fwrite(out, ts, n, f) == n;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok) {
        lc_fail(&err, LC_E_IO, LC_NO_OFFSET, "cannot write %s", argv[i + 3]);
        goto done;
    }
    rc = 0;
done:
    lc_free(in);
    lc_free(out);
    return rc ? fail(&err) : 0;
}
