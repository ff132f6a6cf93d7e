/* lc-pth-dump: test-only driver for formats/pth.
 *
 *   lc-pth-dump [--key K] [--dedupe] [--zero-copy] [--raw DIR] [--chunk N] PATH
 *
 * stdout, tab-separated: one line per tensor "tensor NAME DTYPE SHAPE NBYTES KIND"
 * (SHAPE comma-separated, empty for rank 0; KIND "view" for zero-copy, "lazy"), then
 * one line per metadata entry "meta KEY VALUE". With --raw, tensor i's contiguous
 * bytes go to DIR/i.bin, read through lc_tensor_read in N-byte chunks (default 1 MiB;
 * odd N exercises reads that start and end inside elements).
 * On failure: "lc-pth-dump: CODE: <error>" on stderr, exit 1; usage errors exit 2. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pth.h"
#include "libconvert/alloc.h"

static int fail(const lc_error *err) {
    char buf[1024];
    lc_err_format(err, buf, sizeof buf);
    fprintf(stderr, "lc-pth-dump: %s: %s\n", lc_code_name(err->code), buf);
    return 1;
}

static lc_code dump_raw(const lc_tensor *t, const char *path, size_t chunk, lc_error *err) {
    FILE *f = fopen(path, "wb");
    uint8_t *buf = lc_malloc(chunk);
    lc_code rc = LC_OK;
    if (!f || !buf)
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot write %s", path);
    for (uint64_t off = 0; rc == LC_OK && off < t->nbytes; off += chunk) {
        size_t n = t->nbytes - off < chunk ? (size_t)(t->nbytes - off) : chunk;
        if ((rc = lc_tensor_read(t, off, buf, n, err)) == LC_OK && fwrite(buf, 1, n, f) != n)
            rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot write %s", path);
    }
    lc_free(buf);
    if (f)
        fclose(f);
    return rc;
}

static void print_value(const lc_value *v) {
    switch (v->type) {
    case LC_VT_STRING: fputs(v->str.ptr, stdout); break;
    case LC_VT_BOOL: fputs(v->b ? "true" : "false", stdout); break;
    case LC_VT_I64: printf("%" PRId64, v->i); break;
    case LC_VT_F64: printf("%.17g", v->f); break;
    default: printf("<%s>", lc_vtype_name(v->type)); break;
    }
}

int main(int argc, char **argv) {
    lc_pth_opts o = { 0 };
    const char *raw = NULL;
    size_t chunk = 1u << 20;
    int i = 1;
    for (; i < argc - 1; i++) {
        if (strcmp(argv[i], "--key") == 0 && i + 2 < argc)
            o.key = argv[++i];
        else if (strcmp(argv[i], "--dedupe") == 0)
            o.dedupe = true;
        else if (strcmp(argv[i], "--zero-copy") == 0)
            o.zero_copy = true;
        else if (strcmp(argv[i], "--raw") == 0 && i + 2 < argc)
            raw = argv[++i];
        else if (strcmp(argv[i], "--chunk") == 0 && i + 2 < argc)
            chunk = (size_t)strtoull(argv[++i], NULL, 10);
        else
            break;
    }
    if (i != argc - 1 || chunk == 0) {
        fprintf(stderr, "usage: lc-pth-dump [--key K] [--dedupe] [--zero-copy] [--raw DIR] "
                        "[--chunk N] PATH\n");
        return 2;
    }
    lc_error err = { 0 };
    lc_model *m;
    if (lc_pth_load(argv[i], &o, &m, &err) != LC_OK)
        return fail(&err);
    for (size_t k = 0; k < lc_model_tensor_count(m); k++) {
        const lc_tensor *t = lc_model_tensor(m, k);
        printf("tensor\t%s\t%s\t", t->name, lc_dtype_get(t->dtype)->st_name);
        for (uint32_t d = 0; d < t->ndim; d++)
            printf("%s%" PRIu64, d ? "," : "", t->shape[d]);
        printf("\t%" PRIu64 "\t%s\n", t->nbytes, t->data ? "view" : "lazy");
        if (raw) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%zu.bin", raw, k);
            if (dump_raw(t, path, chunk, &err) != LC_OK) {
                lc_err_context(&err, argv[i], t->name);
                lc_model_free(m);
                return fail(&err);
            }
        }
    }
    for (size_t k = 0; k < lc_model_meta_count(m); k++) {
        const lc_kv *kv = lc_model_meta(m, k);
        printf("meta\t%s\t", kv->key);
        print_value(&kv->val);
        putchar('\n');
    }
    lc_model_free(m);
    return 0;
}
