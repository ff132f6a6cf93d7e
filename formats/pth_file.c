/* formats/pth_file.c: one PyTorch checkpoint file, zip or legacy: its container, its
 * pickle handed to the walk, its storages bound to their bytes; and the scan of one file.
 *
 * Zip checkpoint (torch >= 1.6), every entry under one folder P:
 *
 *   P/data.pkl            pickle protocol 2: the saved object
 *   P/byteorder           "little" | "big"          (torch >= 2; absent = little)
 *   P/data/<key>          raw bytes of storage <key>, stored, 64-byte aligned
 *   P/version, P/.format_version, P/.storage_alignment, P/.data/serialization_id
 *
 * Legacy checkpoint (torch < 1.6, or _use_new_zipfile_serialization=False):
 *
 *   offset 0   pickle: int 0x1950a86a20f9469cfc6c (LONG1, 10 bytes)   magic
 *              pickle: int 1001                                      protocol
 *              pickle: {"protocol_version", "little_endian", "type_sizes"}
 *              pickle: the saved object; storage ids are 6-tuples
 *              pickle: [key, ...]                                    storage order
 *   then, per key in that order:
 *              u64 le  numel (elements of the storage's dtype)
 *              bytes   numel x element size
 *   end of file
 *
 * Both end in the same walk (pth_walk.c) once every storage has its bytes. */
#include "formats/pth_file_impl.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "formats/pickle.h"
#include "formats/pth_commit_impl.h"
#include "formats/pth_walk_impl.h"
#include "formats/zip.h"
#include "libconvert/alloc.h"
#include "libconvert/map.h"
#include "libconvert/rd.h"

/* data.pkl of a real checkpoint is kilobytes to a few megabytes (one call per tensor). */
#define LC_PTH_MAX_PICKLE ((uint64_t)256 << 20)

static const uint8_t legacy_magic[10] = { 0x6c, 0xfc, 0x9c, 0x46, 0xf9,
                                          0x20, 0x6a, 0xa8, 0x50, 0x19 };

/* ---- zip ---- */

/* The one entry named <P>/data.pkl with a single folder level; *prefix_len = len("P/"). */
static lc_code find_data_pkl(const lc_zip *z, const lc_zip_entry **out, size_t *prefix_len,
                             lc_error *err) {
    *out = NULL;
    for (size_t i = 0; i < lc_zip_count(z); i++) {
        const lc_zip_entry *e = lc_zip_entry_at(z, i);
        const char *slash = strchr(e->name, '/');
        if (!slash || slash == e->name || strcmp(slash + 1, "data.pkl") != 0)
            continue;
        if (*out)
            return lc_fail(err, LC_E_MALFORMED, e->header_offset,
                           "two checkpoints in one zip: %s and %s", (*out)->name, e->name);
        *out = e;
        *prefix_len = (size_t)(slash - e->name) + 1;
    }
    if (!*out)
        return lc_fail(err, LC_E_NOTFOUND, LC_NO_OFFSET,
                       "no <folder>/data.pkl entry: not a torch.save zip");
    return LC_OK;
}

static lc_code read_byteorder(const lc_zip *z, const char *prefix, size_t plen, bool *big,
                              lc_error *err) {
    char name[512];
    *big = false;
    snprintf(name, sizeof name, "%.*sbyteorder", (int)plen, prefix);
    const lc_zip_entry *e = lc_zip_find(z, name);
    if (!e)
        return LC_OK;  /* torch < 2 wrote none: native order of a little-endian writer */
    uint8_t *buf;
    size_t len;
    LC_TRY(lc_zip_entry_read_all(z, e, 16, &buf, &len, err));
    lc_code rc = LC_OK;
    if (len == 3 && memcmp(buf, "big", 3) == 0)
        *big = true;
    else if (!(len == 6 && memcmp(buf, "little", 6) == 0))
        rc = lc_fail(err, LC_E_MALFORMED, e->data_offset,
                     "byteorder is neither \"little\" nor \"big\"");
    lc_free(buf);
    if (rc)
        lc_err_context(err, NULL, e->name);
    return rc;
}

static lc_code bind_zip(lc_pth_found *f, const lc_zip *z, const char *prefix, size_t plen,
                        bool big, int fd, const char *path, lc_error *err) {
    char name[512];
    for (size_t i = 0; i < f->n_st; i++) {
        lc_pth_storage *s = f->st[i];
        if ((size_t)snprintf(name, sizeof name, "%.*sdata/%s", (int)plen, prefix, s->key) >=
            sizeof name)
            return lc_fail(err, LC_E_MALFORMED, s->at, "storage key %.40s... is too long",
                           s->key);
        const lc_zip_entry *e = lc_zip_find(z, name);
        if (!e) {
            lc_fail(err, LC_E_NOTFOUND, s->at, "storage %s has no entry %s", s->key, name);
            lc_err_context(err, NULL, name);
            return err ? err->code : LC_E_NOTFOUND;
        }
        if (e->size != s->nbytes) {
            lc_fail(err, LC_E_MALFORMED, e->header_offset,
                    "storage %s declares %" PRIu64 " bytes, its entry holds %" PRIu64, s->key,
                    s->nbytes, e->size);
            lc_err_context(err, NULL, name);
            return LC_E_MALFORMED;
        }
        s->bound = true;
        s->path = path;
        s->big_endian = big;
        s->bytes = lc_zip_entry_view(z, e);
        s->zip = z;
        s->entry = e;
        s->file_offset = s->bytes ? e->data_offset : LC_NO_OFFSET;
        if (s->bytes && fd >= 0) {
            s->bytes = NULL;
            s->fd = fd;
        }
    }
    return LC_OK;
}

/* Tells the caller what the automatic choice left out (lc_pth_opts.note), once the
 * file has loaded. */
static void tell(const lc_pth_opts *o, const char *path, const char *entry,
                 const lc_error *note) {
    if (!o || !o->note || !note->msg[0])
        return;
    lc_error n = *note;
    snprintf(n.path, sizeof n.path, "%s", path ? path : "");
    snprintf(n.where, sizeof n.where, "%s", entry ? entry : "");
    o->note(o->note_ctx, &n);
}

static lc_code load_zip(const uint8_t *buf, uint64_t size, int fd, const char *path,
                        const lc_pth_opts *o, lc_model *m, lc_error *err) {
    lc_zip *z = NULL;
    lc_pickle *p = NULL;
    uint8_t *pkl = NULL;
    size_t pkl_len, plen = 0;
    lc_pth_found f = { 0 };
    lc_error note = { 0 };
    const lc_zip_entry *e = NULL;
    bool big;
    lc_code rc;
    if ((rc = lc_zip_open_file_mem(buf, size, fd, &z, err)) != LC_OK)
        return rc;
    if ((rc = lc_model_own(m, z, lc_zip_close_void, err)) != LC_OK)
        return rc;
    if ((rc = find_data_pkl(z, &e, &plen, err)) != LC_OK ||
        (rc = read_byteorder(z, e->name, plen, &big, err)) != LC_OK)
        return rc;
    if ((rc = lc_zip_entry_read_all(z, e, LC_PTH_MAX_PICKLE, &pkl, &pkl_len, err)) != LC_OK)
        goto done;
    /* Offsets in a stored pickle are file offsets; in a deflated one, pickle offsets.
     * What a deflated pickle may build is budgeted by its compressed bytes. */
    const bool stored = e->method == LC_ZIP_STORED;
    lc_pickle_opts po = { .base_offset = stored ? e->data_offset : 0,
                          .stored_size = stored ? 0 : e->comp_size };
    /* Each step frees what the next does not read, so that the peak is one of them:
     * the pickle's bytes once its values are built (they are copied), and the values
     * once the walk has what it found (names and keys are copied). */
    rc = lc_pickle_load(pkl, pkl_len, &po, &p, err);
    lc_free(pkl);
    pkl = NULL;
    if (rc != LC_OK ||
        (rc = lc_pth_walk(lc_pickle_root(p), e->comp_size, o, &f, m, err)) != LC_OK)
        goto done;
    lc_pickle_free(p);
    p = NULL;
    note = f.note;
    if ((rc = bind_zip(&f, z, e->name, plen, big, fd, path, err)) != LC_OK)
        goto done;
    if ((rc = lc_pth_commit(&f, o, m, err)) == LC_OK)
        tell(o, path, e->name, &note);
done:
    if (rc && e)
        lc_err_context(err, NULL, e->name);
    lc_pth_found_free(&f);
    lc_pickle_free(p);
    lc_free(pkl);
    return rc;
}

/* ---- legacy ---- */

typedef struct legacy {
    lc_pickle *p[5];
    uint64_t   end;   /* offset after the last pickle */
} legacy;

static lc_code next_pickle(const uint8_t *buf, uint64_t size, legacy *lg, int i, lc_error *err) {
    lc_pickle_opts po = { .base_offset = lg->end, .allow_trailing = true };
    LC_TRY(lc_pickle_load(buf + lg->end, size - lg->end, &po, &lg->p[i], err));
    lg->end += lc_pickle_end(lg->p[i]);
    return LC_OK;
}

static lc_code legacy_header(const uint8_t *buf, uint64_t size, legacy *lg, lc_error *err) {
    size_t n;
    int64_t proto;
    bool little;
    LC_TRY(next_pickle(buf, size, lg, 0, err));
    const uint8_t *magic = lc_pickle_bigint(lc_pickle_root(lg->p[0]), &n);
    if (!magic || n != sizeof legacy_magic || memcmp(magic, legacy_magic, n) != 0)
        return lc_fail(err, LC_E_MALFORMED, 0,
                       "a pickle without torch's magic number: not a torch.save file");
    LC_TRY(next_pickle(buf, size, lg, 1, err));
    if (!lc_pickle_get_int(lc_pickle_root(lg->p[1]), &proto) || proto != 1001)
        return lc_fail(err, LC_E_UNSUPPORTED, lc_pickle_offset(lc_pickle_root(lg->p[1])),
                       "legacy protocol version is not 1001");
    LC_TRY(next_pickle(buf, size, lg, 2, err));
    const lc_pickle_val *info = lc_pickle_root(lg->p[2]);
    if (lc_pickle_get_bool(lc_pickle_dict_get(info, "little_endian"), &little) && !little)
        return lc_fail(err, LC_E_UNSUPPORTED, lc_pickle_offset(info),
                       "big-endian legacy checkpoints are not supported");
    return next_pickle(buf, size, lg, 3, err);
}

/* The storage keys pickle, then each storage's count and bytes, in that order. */
static lc_code bind_legacy(const uint8_t *buf, uint64_t size, int fd, const char *path,
                           legacy *lg, lc_pth_found *f, lc_error *err) {
    LC_TRY(next_pickle(buf, size, lg, 4, err));
    const lc_pickle_val *keys = lc_pickle_root(lg->p[4]);
    size_t n;
    const lc_pickle_val *const *k = lc_pickle_items(keys, LC_PICKLE_LIST, &n);
    if (!k)
        return lc_fail(err, LC_E_MALFORMED, lc_pickle_offset(keys),
                       "the storage key list is a %s",
                       lc_pickle_kind_name(lc_pickle_kind_of(keys)));
    lc_rd r = lc_rd_init(buf + lg->end, size - lg->end, lg->end, err);
    for (size_t i = 0; i < n; i++) {
        char num[24];
        int64_t ik;
        const char *key = lc_pickle_str(k[i], NULL);
        if (!key && lc_pickle_get_int(k[i], &ik)) {
            snprintf(num, sizeof num, "%" PRId64, ik);
            key = num;
        }
        lc_pth_storage *s = key ? lc_pth_found_storage(f, key) : NULL;
        if (!s || s->bound)
            return lc_fail(err, LC_E_MALFORMED, lc_pickle_offset(k[i]),
                           "storage key %s is %s", key ? key : "?",
                           s ? "listed twice" : "used by no tensor");
        const uint64_t at = lc_rd_at(&r);
        uint64_t numel, nbytes;
        const uint8_t *bytes;
        LC_TRY(lc_rd_u64(&r, &numel, "storage size"));
        const uint64_t esize = s->dtype == LC_DT_INVALID ? 1 : lc_dtype_get(s->dtype)->type_size;
        if (lc_mul_u64(numel, esize, &nbytes) || nbytes != s->nbytes)
            return lc_fail(err, LC_E_MALFORMED, at,
                           "storage %s holds %" PRIu64 " elements, the pickle declares %" PRIu64
                           " bytes", key, numel, s->nbytes);
        LC_TRY(lc_rd_bytes(&r, nbytes, &bytes, "storage data"));
        s->bound = true;
        s->path = path;
        s->bytes = fd >= 0 ? NULL : bytes;
        s->fd = fd;
        s->file_offset = at + 8;
    }
    if (lc_rd_left(&r))
        return lc_fail(err, LC_E_MALFORMED, lc_rd_at(&r),
                       "%" PRIu64 " bytes after the last storage", lc_rd_left(&r));
    return LC_OK;
}

static lc_code load_legacy(const uint8_t *buf, uint64_t size, int fd, const char *path,
                           const lc_pth_opts *o, lc_model *m, lc_error *err) {
    legacy lg = { { 0 }, 0 };
    lc_pth_found f = { 0 };
    lc_error note = { 0 };
    lc_code rc;
    if ((rc = legacy_header(buf, size, &lg, err)) == LC_OK &&
        (rc = lc_pth_walk(lc_pickle_root(lg.p[3]), lc_pickle_end(lg.p[3]), o, &f, m, err)) ==
            LC_OK) {
        note = f.note;
        if ((rc = bind_legacy(buf, size, fd, path, &lg, &f, err)) == LC_OK &&
            (rc = lc_pth_commit(&f, o, m, err)) == LC_OK)
            tell(o, path, NULL, &note);
    }
    lc_pth_found_free(&f);
    for (int i = 0; i < 5; i++)
        lc_pickle_free(lg.p[i]);
    return rc;
}

/* ---- one file ---- */

static bool is_zip(const uint8_t *buf, uint64_t size) {
    return size >= 4 && buf[0] == 'P' && buf[1] == 'K';
}

/* torch writes protocol 2 (0x80 0x02); a pickle of protocol 0 or 1 (not from torch,
 * but the classic way to ship a payload) starts with one of these opcodes. Reading it
 * as a pickle lets the allowlist name the payload instead of "not a checkpoint". */
static bool is_pickle(const uint8_t *buf, uint64_t size) {
    return size >= 2 && (buf[0] == 0x80 || strchr("(]})cIiLNSVX", buf[0]) != NULL) &&
           buf[0] != 0;
}

lc_code lc_pth_load_into(const uint8_t *buf, uint64_t size, int fd, const char *path,
                         const lc_pth_opts *o, lc_model *m, lc_error *err) {
    if (o && o->zero_copy)
        fd = -1;
    if (is_zip(buf, size))
        return load_zip(buf, size, fd, path, o, m, err);
    if (is_pickle(buf, size))
        return load_legacy(buf, size, fd, path, o, m, err);
    return lc_fail(err, LC_E_MALFORMED, 0, "neither a zip nor a pickle: not a torch.save file");
}

lc_code lc_pth_load_file(const char *path, const lc_pth_opts *o, lc_model *m, lc_error *err) {
    lc_map *map = NULL;
    /* The model keeps the name: errors met while reading tensors later (a bad CRC, a
     * file cut short, no memory for a strided view) name this file, not the output. */
    char *own = lc_strdup(path);
    if (!own)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    LC_TRY(lc_model_own(m, own, lc_free, err));
    LC_TRY(lc_map_open(path, &map, err));
    LC_TRY(lc_model_own(m, map, lc_map_close, err));
    /* Storages are read with pread on the map's own descriptor: the same file. */
    if (map->fd >= 0)
        posix_fadvise(map->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return lc_pth_load_into(map->data, map->size, map->fd, own, o, m, err);
}

/* ---- scanning ---- */

typedef struct scan_ctx {
    lc_pth_scan_fn fn;
    void          *ctx;
    const char    *entry;
} scan_ctx;

static void scan_cb(void *p, const lc_pickle_ref *ref) {
    scan_ctx *s = p;
    lc_pth_ref r = { s->entry, ref->offset, ref->module, ref->name, ref->allowed };
    if (s->fn)
        s->fn(s->ctx, &r);
}

static lc_code scan_zip(const uint8_t *buf, uint64_t size, scan_ctx *sc, lc_error *err) {
    lc_zip *z = NULL;
    lc_code rc = LC_OK;
    lc_error first = { 0 };
    LC_TRY(lc_zip_open_mem(buf, size, &z, err));
    for (size_t i = 0; i < lc_zip_count(z); i++) {
        const lc_zip_entry *e = lc_zip_entry_at(z, i);
        size_t n = strlen(e->name);
        if (n < 4 || strcmp(e->name + n - 4, ".pkl") != 0)
            continue;  /* every pickle a torch loader might run, not only data.pkl */
        uint8_t *pkl = NULL;
        size_t len;
        lc_error one = { 0 };
        lc_code r = lc_zip_entry_read_all(z, e, LC_PTH_MAX_PICKLE, &pkl, &len, &one);
        if (r == LC_OK) {
            lc_pickle_opts po = { .base_offset = e->method == LC_ZIP_STORED ? e->data_offset : 0 };
            sc->entry = e->name;
            r = lc_pickle_scan(pkl, len, &po, scan_cb, sc, &one);
        }
        lc_free(pkl);
        lc_err_context(&one, NULL, e->name);
        if (lc_pth_worse(rc, r) != rc) {
            rc = r;
            first = one;
        }
    }
    lc_zip_close(z);
    if (rc && err && !err->code)
        *err = first;
    return rc;
}

static lc_code scan_legacy(const uint8_t *buf, uint64_t size, scan_ctx *sc, lc_error *err) {
    legacy lg = { { 0 }, 0 };
    lc_error tmp = { 0 };
    sc->entry = "pickle";
    /* The header pickles must load as plain values; then the object pickle is scanned
     * up to its STOP when it loads, else to the end of the file. */
    lc_code rc = legacy_header(buf, size, &lg, &tmp);
    uint64_t start = lg.end, stop = size;
    if (rc == LC_OK) {
        start = lg.end - lc_pickle_end(lg.p[3]);
        stop = lg.end;
    } else if (rc == LC_E_FORBIDDEN) {
        /* From the pickle that was refused (for a plain pickle, the whole file). */
    } else {
        for (int i = 0; i < 5; i++)
            lc_pickle_free(lg.p[i]);
        if (err && !err->code)
            *err = tmp;
        return rc;
    }
    for (int i = 0; i < 5; i++)
        lc_pickle_free(lg.p[i]);
    lc_pickle_opts po = { .base_offset = start, .allow_trailing = true };
    return lc_pickle_scan(buf + start, stop - start, &po, scan_cb, sc, err);
}

lc_code lc_pth_scan_file(const char *path, lc_pth_scan_fn fn, void *ctx, lc_error *err) {
    scan_ctx sc = { fn, ctx, NULL };
    lc_map *map = NULL;
    lc_code rc = lc_map_open(path, &map, err);
    if (rc == LC_OK) {
        if (is_zip(map->data, map->size))
            rc = scan_zip(map->data, map->size, &sc, err);
        else if (is_pickle(map->data, map->size))
            rc = scan_legacy(map->data, map->size, &sc, err);
        else
            rc = lc_fail(err, LC_E_MALFORMED, 0,
                         "neither a zip nor a pickle: not a torch.save file");
    }
    lc_map_close(map);
    lc_err_context(err, path, NULL);
    return rc;
}
