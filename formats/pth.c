/* formats/pth.c: the entry points of the PyTorch checkpoint reader; they only choose.
 *
 * The reader's files, each using only those below it (no file calls back up):
 *
 *   pth.c         entry points: a file, a sharded folder, memory; scanning
 *   pth_index.c   Hugging Face sharded folders: the index, then every shard as a file
 *   pth_file.c    one file: zip or legacy container, its pickle, storages bound to bytes
 *   pth_commit.c  the tensors of one file join the model (--dedupe)
 *   pth_source.c  the lazy source of one tensor: strides, byte order, negation, DEFLATE
 *   pth_walk.c    the pickle tree -> storages and tensor descriptions (pth_walk_impl.h)
 *
 * Each private header (pth_<file>_impl.h) belongs to its one .c file; pth.h is the
 * public face of them all. Outside formats/pth only zip.h and pickle.h are used. */
#include "formats/pth.h"

#include "formats/pth_file_impl.h"
#include "formats/pth_index_impl.h"
#include "libconvert/alloc.h"

lc_code lc_pth_load_mem(const uint8_t *buf, uint64_t size, const lc_pth_opts *o,
                        lc_model **out, lc_error *err) {
    *out = NULL;
    lc_model *m = lc_model_new();
    if (!m)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_code rc = lc_pth_load_into(buf, size, -1, NULL, o, m, err);
    if (rc) {
        lc_model_free(m);
        return rc;
    }
    *out = m;
    return LC_OK;
}

lc_code lc_pth_load(const char *path, const lc_pth_opts *o, lc_model **out, lc_error *err) {
    lc_code rc;
    *out = NULL;
    lc_model *m = lc_model_new();
    if (!m) {
        lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        lc_err_context(err, path, NULL);
        return LC_E_NOMEM;
    }
    rc = lc_pth_is_index(path) ? lc_pth_index_load(path, o, m, err)
                               : lc_pth_load_file(path, o, m, err);
    lc_err_context(err, path, NULL);
    if (rc) {
        lc_model_free(m);
        return rc;
    }
    *out = m;
    return LC_OK;
}

lc_code lc_pth_scan(const char *path, lc_pth_scan_fn fn, void *ctx, lc_error *err) {
    lc_code rc = LC_OK;
    if (lc_pth_is_index(path)) {
        char **files = NULL;
        size_t n = 0;
        rc = lc_pth_index_shards(path, &files, &n, err);
        for (size_t i = 0; i < n; i++) {
            lc_error one = { 0 };
            lc_code r = lc_pth_scan_file(files[i], fn, ctx, &one);
            if (lc_pth_worse(rc, r) != rc) {
                rc = r;
                if (err)
                    *err = one;
            }
            lc_free(files[i]);
        }
        lc_free(files);
    } else {
        rc = lc_pth_scan_file(path, fn, ctx, err);
    }
    if (rc)
        return rc;
    lc_model *m = NULL;
    rc = lc_pth_load(path, NULL, &m, err);
    lc_model_free(m);
    return rc;
}
