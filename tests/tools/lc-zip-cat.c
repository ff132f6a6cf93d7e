/* lc-zip-cat: test-only driver for formats/zip.
 *
 *   lc-zip-cat ZIP            one line per entry: name, method, comp_size, size, crc32
 *                             (hex), data_offset; tab-separated, central directory order
 *   lc-zip-cat ZIP ENTRY      the entry's bytes on stdout, through the streaming reader
 *   lc-zip-cat --check ZIP    reads every entry through every API (reader, read_all,
 *                             pread in chunks, view + verify_crc) and checks they agree
 *   lc-zip-cat --pread ZIP    reads "ENTRY OFFSET LENGTH" lines on stdin and writes each
 *                             range, read with lc_zip_entry_pread, to stdout
 * On failure: "lc-zip-cat: CODE: <error>" on stderr, exit 1; usage errors exit 2. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "formats/zip.h"
#include "libconvert/alloc.h"

static int fail(const lc_error *err) {
    char buf[1024];
    lc_err_format(err, buf, sizeof buf);
    fprintf(stderr, "lc-zip-cat: %s: %s\n", lc_code_name(err->code), buf);
    return 1;
}

static lc_code cat(const lc_zip *z, const lc_zip_entry *e, lc_error *err) {
    static uint8_t buf[1 << 16];
    lc_zip_reader *rd;
    size_t got;
    lc_code rc = lc_zip_reader_open(z, e, &rd, err);
    while (rc == LC_OK && (rc = lc_zip_reader_read(rd, buf, sizeof buf, &got, err)) == LC_OK &&
           got > 0)
        fwrite(buf, 1, got, stdout);
    lc_zip_reader_close(rd);
    return rc;
}

/* All ways of reading one entry must give the same bytes (or the same failure kind). */
static lc_code check(const lc_zip *z, const lc_zip_entry *e, lc_error *err) {
    uint8_t *all = NULL, *chunks = NULL;
    size_t len;
    lc_code rc = lc_zip_entry_read_all(z, e, UINT64_C(1) << 30, &all, &len, err);
    if (rc != LC_OK)
        goto done;
    if (len != e->size) {
        rc = lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "read_all gave %zu bytes", len);
        goto done;
    }
    if ((rc = lc_zip_entry_verify_crc(z, e, err)) != LC_OK)
        goto done;
    if (!(chunks = lc_malloc(len + 1))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    /* Uneven chunk sizes cross every kind of boundary; a backward step forces a restart. */
    for (size_t off = 0, step = 1; off < len; off += step, step = step * 3 + 1) {
        if (step > len - off)
            step = len - off;
        if ((rc = lc_zip_entry_pread(z, e, off, chunks + off, step, err)) != LC_OK)
            goto done;
    }
    if (len > 2 && (rc = lc_zip_entry_pread(z, e, 1, chunks + 1, 1, err)) != LC_OK)
        goto done;
    const uint8_t *v = lc_zip_entry_view(z, e);
    if (memcmp(all, chunks, len) != 0 || (v && memcmp(v, all, len) != 0) ||
        (!v) != (e->method != LC_ZIP_STORED))
        rc = lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the read APIs disagree");
done:
    lc_free(all);
    lc_free(chunks);
    lc_err_context(err, NULL, e->name);
    return rc;
}

/* Serves "ENTRY OFFSET LENGTH" requests in the order given (out of order across
 * entries, backwards: the DEFLATE cache's streams and histories). */
static lc_code preads(const lc_zip *z, lc_error *err) {
    char name[256];
    uint64_t off, len;
    static uint8_t buf[1 << 24];
    while (scanf("%255s %" SCNu64 " %" SCNu64, name, &off, &len) == 3) {
        const lc_zip_entry *e = lc_zip_find(z, name);
        if (!e)
            return lc_fail(err, LC_E_NOTFOUND, LC_NO_OFFSET, "no entry named %s", name);
        if (len > sizeof buf)
            return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "a read of %" PRIu64 " bytes", len);
        LC_TRY(lc_zip_entry_pread(z, e, off, buf, (size_t)len, err));
        fwrite(buf, 1, (size_t)len, stdout);
    }
    return LC_OK;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--pread") == 0) {
        lc_error err = {0};
        lc_zip *z;
        if (lc_zip_open(argv[2], &z, &err) != LC_OK)
            return fail(&err);
        const lc_code rc = preads(z, &err);
        lc_zip_close(z);
        return rc == LC_OK ? 0 : fail(&err);
    }
    bool do_check = argc > 1 && strcmp(argv[1], "--check") == 0;
    int i = do_check ? 2 : 1;
    if (argc - i < 1 || argc - i > 2 || (do_check && argc - i != 1)) {
        fprintf(stderr, "usage: lc-zip-cat [--check] ZIP [ENTRY]\n");
        return 2;
    }
    lc_error err = {0};
    lc_zip *z;
    if (lc_zip_open(argv[i], &z, &err) != LC_OK)
        return fail(&err);
    lc_code rc = LC_OK;
    if (argc - i == 2) {
        const lc_zip_entry *e = lc_zip_find(z, argv[i + 1]);
        rc = e ? cat(z, e, &err)
               : lc_fail(&err, LC_E_NOTFOUND, LC_NO_OFFSET, "no entry named %s", argv[i + 1]);
    } else {
        for (size_t k = 0; k < lc_zip_count(z) && rc == LC_OK; k++) {
            const lc_zip_entry *e = lc_zip_entry_at(z, k);
            if (do_check)
                rc = check(z, e, &err);
            else
                printf("%s\t%u\t%" PRIu64 "\t%" PRIu64 "\t%08" PRIx32 "\t%" PRIu64 "\n", e->name,
                       e->method, e->comp_size, e->size, e->crc32, e->data_offset);
        }
    }
    lc_err_context(&err, argv[i], NULL);
    lc_zip_close(z);
    return rc == LC_OK ? 0 : fail(&err);
}
