/* formats/safetensors.c: sharded safetensors checkpoints (the index) and the
 * streaming writer; the reader of one file is formats/safetensors_read.c. */
#include "formats/safetensors.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libconvert/alloc.h"
#include "libconvert/inspect.h"
#include "libconvert/bytes.h"
#include "libconvert/json.h"
#include "libconvert/json_scan.h"
#include "libconvert/map.h"
#include "libconvert/outfile.h"
#include "libconvert/segments.h"

/* ---- sharded checkpoints: model.safetensors.index.json ---- */

typedef struct wm_entry {
    const char *name, *shard; /* in the names arena of read_weight_map */
    size_t      shard_no;
    bool        found;
} wm_entry;

static int wm_by_name(const void *a, const void *b) {
    return strcmp(((const wm_entry *)a)->name, ((const wm_entry *)b)->name);
}
static int wm_by_shard(const void *a, const void *b) {
    return strcmp(((const wm_entry *)a)->shard, ((const wm_entry *)b)->shard);
}

static void free_model(void *p) { lc_model_free(p); }

/* Shard names are plain relative paths: never absolute, never "..". */
static bool safe_shard_name(const char *s) {
    if (!*s || *s == '/')
        return false;
    for (const char *p = s; *p;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return false;
        p += len + (slash ? 1 : 0);
    }
    return true;
}

/* weight_map of an index's text {"metadata": ..., "weight_map": {NAME: SHARD, ...}}
 * into *wm (*count entries) whose strings are decoded into *names, one arena the
 * size of the text: scanned (libconvert/json_scan.h), never held as a tree, so an
 * index costs its bytes and 32 bytes an entry whatever else it holds. */
static lc_code read_weight_map(const uint8_t *s, uint64_t n, char **names, wm_entry **wm,
                               size_t *count, lc_error *err) {
    lc_jscan js;
    lc_jtok t, v;
    *count = 0;
    const size_t good = lc_json_utf8_valid_prefix(s, (size_t)n);
    if (good != n)
        return lc_fail(err, LC_E_MALFORMED, good, "index is not valid UTF-8");
    lc_jscan_init(&js, s, n, 0);   /* first the grammar of the whole text */
    do
        LC_TRY(lc_jscan_next(&js, &t, err));
    while (t.kind != LC_JT_END);
    for (uint64_t i = js.pos; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return lc_fail(err, LC_E_MALFORMED, i, "text follows the index's JSON value");
    lc_jscan_init(&js, s, n, 0);
    LC_TRY(lc_jscan_next(&js, &t, err));
    bool found = false;
    while (t.kind != LC_JT_END && !found) {   /* the first "weight_map" key, an object */
        LC_TRY(lc_jscan_next(&js, &t, err));
        if (t.kind != LC_JT_KEY)
            break;
        LC_TRY(lc_jscan_next(&js, &v, err));
        if (lc_jscan_equals(&js, &t, "weight_map")) {
            found = v.kind == LC_JT_OBJ;
            break;
        }
        LC_TRY(lc_jscan_skip(&js, &v, err));
    }
    if (!found) {
        lc_fail(err, LC_E_MALFORMED, 0, "index has no \"weight_map\" object");
        lc_err_context(err, NULL, "weight_map");
        return LC_E_MALFORMED;
    }
    uint64_t items;
    LC_TRY(lc_jscan_count(&js, &v, &items, err));
    if (!(*wm = lc_calloc(items ? (size_t)items : 1, sizeof **wm)) ||
        !(*names = lc_malloc((size_t)n)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for an index of %" PRIu64
                       " entries", items);
    size_t used = 0;
    for (size_t k = 0; k < items; k++) {
        wm_entry *e = &(*wm)[k];
        LC_TRY(lc_jscan_next(&js, &t, err));
        LC_TRY(lc_jscan_next(&js, &v, err));
        e->name = *names + used;
        used += lc_jscan_decode(&js, &t, *names + used) + 1;
        if (v.kind != LC_JT_STR)
            return lc_fail_in(err, LC_E_MALFORMED, v.at, e->name,
                              "weight_map value is not a relative shard file name");
        e->shard = *names + used;
        used += lc_jscan_decode(&js, &v, *names + used) + 1;
        if (!safe_shard_name(e->shard))
            return lc_fail_in(err, LC_E_MALFORMED, v.at, e->name,
                              "weight_map value is not a relative shard file name");
    }
    *count = (size_t)items;
    return LC_OK;
}

/* Moves the tensors of one loaded shard into `all`, checking them against the map. */
static lc_code merge_shard(lc_model *all, lc_model *shard, const char *shard_path, size_t shard_no,
                           wm_entry *wm, size_t nwm, lc_error *err) {
    for (size_t i = 0; i < lc_model_tensor_count(shard); i++) {
        const lc_tensor *t = lc_model_tensor(shard, i);
        wm_entry key = { t->name, NULL, 0, false };
        wm_entry *w = bsearch(&key, wm, nwm, sizeof *wm, wm_by_name);
        if (!w || w->shard_no != shard_no) {
            lc_fail(err, LC_E_MISMATCH, t->file_offset, "tensor is in this shard but the index "
                    "%s", w ? "places it in another shard" : "does not list it");
            lc_err_context(err, shard_path, NULL);
            lc_err_context(err, NULL, t->name);
            return LC_E_MISMATCH;
        }
        w->found = true;
        lc_tensor *nt;
        LC_TRY(lc_model_add_tensor(all, t->name, t->dtype, t->ndim, t->shape, &nt, err));
        nt->data = t->data;
        nt->ops = t->ops; /* the view source: its ctx (the map) stays owned by `shard` */
        nt->ctx = t->ctx;
        nt->file_offset = t->file_offset;
    }
    for (size_t i = 0; i < lc_model_meta_count(shard); i++) {
        const lc_kv *kv = lc_model_meta(shard, i);
        if (lc_model_find_meta(all, kv->key))
            continue;
        lc_value v;
        LC_TRY(lc_value_copy(&v, &kv->val, err));
        LC_TRY(lc_model_add_meta(all, kv->key, &v, err));
    }
    return LC_OK;
}

lc_code lc_safetensors_load_index(const char *index_json_path_or_dir, lc_model **out,
                                  lc_error *err) {
    lc_code rc = LC_OK;
    char *index = NULL, *dir = NULL, *shard_path = NULL;
    lc_map *map = NULL;
    char *names = NULL;
    wm_entry *wm = NULL;
    const char **shards = NULL;
    lc_model *all = NULL;
    *out = NULL;

    struct stat st;
    const char *p = index_json_path_or_dir;
    size_t plen = strlen(p);
    bool is_dir = stat(p, &st) == 0 && S_ISDIR(st.st_mode);
    if (!(index = lc_malloc(plen + 40)) || !(dir = lc_malloc(plen + 2))) {
        lc_free(index);      /* not filled in yet: the error names the argument */
        index = NULL;
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    if (is_dir) {
        snprintf(index, plen + 40, "%s/model.safetensors.index.json", p);
        memcpy(dir, p, plen + 1);
    } else {
        memcpy(index, p, plen + 1);
        const char *slash = strrchr(p, '/');
        size_t dlen = slash ? (size_t)(slash - p) : 0;
        memcpy(dir, slash ? p : ".", slash ? dlen : 1);
        dir[slash ? dlen : 1] = '\0';
        if (slash && dlen == 0)
            memcpy(dir, "/", 2);
    }
    if ((rc = lc_map_open(index, &map, err)) != LC_OK)
        goto done;
    if (map->size > LC_SAFETENSORS_MAX_HEADER) {
        rc = lc_fail(err, LC_E_OVERFLOW, 0, "index of %" PRIu64 " bytes is above the limit of %u",
                     map->size, LC_SAFETENSORS_MAX_HEADER);
        goto done;
    }
    size_t nwm = 0, nshards = 0;
    if ((rc = read_weight_map(map->data, map->size, &names, &wm, &nwm, err)) != LC_OK)
        goto done;
    if (!(shards = lc_calloc(nwm ? nwm : 1, sizeof *shards))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    size_t k;
    /* Shards in file-name order (model-00001-of-N first), as transformers and
     * llama.cpp's converter read them; weight_map lists tensors by name, so its first
     * mention of a shard says nothing about the order. Sorting the entries by shard
     * numbers the distinct shards in that order in n log n: an index may name as many
     * shards as tensors, and a search per entry would be quadratic. */
    qsort(wm, nwm, sizeof *wm, wm_by_shard);
    for (k = 0; k < nwm; k++) {
        if (k == 0 || strcmp(wm[k - 1].shard, wm[k].shard) != 0)
            shards[nshards++] = wm[k].shard;
        wm[k].shard_no = nshards - 1;
    }
    qsort(wm, nwm, sizeof *wm, wm_by_name);
    for (k = 1; k < nwm; k++)
        if (strcmp(wm[k - 1].name, wm[k].name) == 0) {
            rc = lc_fail_in(err, LC_E_MALFORMED, LC_NO_OFFSET, wm[k].name,
                            "weight_map lists the tensor twice");
            goto done;
        }
    if (!(all = lc_model_new())) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    for (size_t s = 0; s < nshards; s++) {
        size_t need = strlen(dir) + strlen(shards[s]) + 2;
        lc_free(shard_path);
        if (!(shard_path = lc_malloc(need))) {
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
            goto done;
        }
        snprintf(shard_path, need, "%s/%s", dir, shards[s]);
        lc_model *shard = NULL;
        if ((rc = lc_safetensors_load(shard_path, &shard, err)) != LC_OK)
            goto done;
        /* `all` owns the shard model (and so its map) from here, even on failure. */
        if ((rc = lc_model_own(all, shard, free_model, err)) != LC_OK ||
            (rc = merge_shard(all, shard, shard_path, s, wm, nwm, err)) != LC_OK)
            goto done;
    }
    for (k = 0; k < nwm; k++)
        if (!wm[k].found) {
            lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the index places the tensor in %s, which "
                    "does not hold it", wm[k].shard);
            lc_err_context(err, index, NULL);
            lc_err_context(err, NULL, wm[k].name);
            rc = LC_E_MISMATCH;
            goto done;
        }
    *out = all;
    all = NULL;
done:
    lc_err_context(err, index ? index : index_json_path_or_dir, NULL);
    lc_model_free(all);
    lc_free((void *)shards);
    lc_free(wm);
    lc_free(names);
    lc_map_close(map);
    lc_free(shard_path);
    lc_free(dir);
    lc_free(index);
    return rc;
}

/* ---- writer ---- */

/* Position of each dtype in the reference's Dtype enum (tensor.rs), which the
 * reference sorts by, largest first: BOOL F4 F6_E2M3 F6_E3M2 U8 I8 F8_E5M2 F8_E4M3
 * F8_E8M0 F8_E4M3FNUZ F8_E5M2FNUZ I16 U16 F16 BF16 I32 U32 F32 C64 F64 I64 U64.
 * 0 marks dtypes safetensors cannot hold. */
static const uint8_t g_rank[LC_DT_COUNT] = {
    [LC_DT_BOOL] = 1,     [LC_DT_U8] = 5,       [LC_DT_I8] = 6,   [LC_DT_F8_E5M2] = 7,
    [LC_DT_F8_E4M3] = 8,  [LC_DT_F8_E8M0] = 9,  [LC_DT_F8_E4M3FNUZ] = 10,
    [LC_DT_F8_E5M2FNUZ] = 11,                   [LC_DT_I16] = 12, [LC_DT_U16] = 13, [LC_DT_F16] = 14,
    [LC_DT_BF16] = 15,    [LC_DT_I32] = 16,     [LC_DT_U32] = 17, [LC_DT_F32] = 18,
    [LC_DT_F64] = 20,     [LC_DT_I64] = 21,     [LC_DT_U64] = 22,
};

static int by_dtype_then_name(const void *a, const void *b) {
    const lc_tensor *x = *(const lc_tensor *const *)a, *y = *(const lc_tensor *const *)b;
    if (g_rank[x->dtype] != g_rank[y->dtype])
        return g_rank[x->dtype] > g_rank[y->dtype] ? -1 : 1;
    return strcmp(x->name, y->name);
}

static bool utf8_ok(const char *s, size_t len) {
    return lc_json_utf8_valid_prefix((const uint8_t *)s, len) == len;
}

/* The header grows past the format's limit: checked as it is built, so a value that
 * expands when stringified (a GGUF array of 60 M u8 is 180 MB of text) stops early. */
static lc_code check_header_size(const lc_json_buf *h, lc_error *err) {
    if (h->len <= LC_SAFETENSORS_MAX_HEADER)
        return LC_OK;
    return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "the header passes the limit of %u bytes",
                   LC_SAFETENSORS_MAX_HEADER);
}

/* A stringified value's text, handed on in parts of whole items (inspect.h): each
 * part is checked, escaped into the header's string and dropped. */
typedef struct meta_sink {
    lc_json_buf *h;
    const char  *key;
} meta_sink;

static lc_code meta_flush(void *ctx, lc_json_buf *text, lc_error *err) {
    const meta_sink *ms = ctx;
    if (!utf8_ok(text->data, text->len))
        return lc_fail_in(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, ms->key,
                          "metadata is not valid UTF-8");
    LC_TRY(lc_json_put_escaped(ms->h, text->data, text->len, err));
    text->len = 0;
    return check_header_size(ms->h, err);
}

/* One entry KEY: VALUE of __metadata__; a value that is not a string is written as
 * its JSON text when the options say so. */
static lc_code put_meta_kv(lc_json_buf *h, const lc_kv *kv, const lc_st_write_opts *opts,
                           lc_json_buf *text, lc_error *err) {
    const bool str = kv->val.type == LC_VT_STRING;
    if (!str && !(opts && opts->stringify_meta))
        return lc_fail_in(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, kv->key,
                          "safetensors metadata holds strings only");
    if (!utf8_ok(kv->key, strlen(kv->key)) ||
        (str && !utf8_ok(kv->val.str.ptr, (size_t)kv->val.str.len)))
        return lc_fail_in(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, kv->key,
                          "metadata is not valid UTF-8");
    LC_TRY(lc_json_put_string(h, kv->key, strlen(kv->key), err));
    LC_TRY(lc_json_put(h, ":", 1, err));
    if (str)
        LC_TRY(lc_json_put_string(h, kv->val.str.ptr, (size_t)kv->val.str.len, err));
    else {
        meta_sink ms = { h, kv->key };
        text->len = 0;
        LC_TRY(lc_json_put(h, "\"", 1, err));
        LC_TRY(lc_inspect_value_json_to(text, &kv->val, meta_flush, &ms, err));
        LC_TRY(meta_flush(&ms, text, err));
        LC_TRY(lc_json_put(h, "\"", 1, err));
    }
    return check_header_size(h, err);
}

static lc_code put_meta(lc_json_buf *h, const lc_model *m, const lc_st_write_opts *opts,
                        lc_error *err) {
    lc_code rc = LC_OK;
    lc_json_buf text = {0};
    size_t nmeta = lc_model_meta_count(m);
    if (nmeta == 0)
        return LC_OK;
    LC_TRY(lc_json_put(h, "\"__metadata__\":{", 16, err));
    for (size_t i = 0; i < nmeta && rc == LC_OK; i++) {
        if (i)
            rc = lc_json_put(h, ",", 1, err);
        if (rc == LC_OK)
            rc = put_meta_kv(h, lc_model_meta(m, i), opts, &text, err);
    }
    lc_json_buf_free(&text);
    if (rc == LC_OK)
        rc = lc_json_put(h, "}", 1, err);
    return rc;
}

/* Builds the padded header for tensors in `order`, exactly as serde_json writes it. */
static lc_code build_header(const lc_model *m, const lc_tensor *const *order, size_t n,
                            const lc_st_write_opts *opts, lc_json_buf *h, lc_error *err) {
    LC_TRY(lc_json_put(h, "{", 1, err));
    LC_TRY(put_meta(h, m, opts, err));
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        const lc_tensor *t = order[i];
        const char *st_name = lc_dtype_get(t->dtype)->st_name;
        if (!st_name || !g_rank[t->dtype])
            return lc_fail_in(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, t->name,
                              "safetensors has no such dtype");
        if (!utf8_ok(t->name, strlen(t->name)))
            return lc_fail_in(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, t->name,
                              "tensor name is not valid UTF-8");
        uint64_t end;
        if (lc_add_u64(off, t->nbytes, &end))
            return lc_fail_in(err, LC_E_OVERFLOW, LC_NO_OFFSET, t->name,
                              "data passes 2^64 bytes");
        if (i || lc_model_meta_count(m))
            LC_TRY(lc_json_put(h, ",", 1, err));
        LC_TRY(lc_json_put_string(h, t->name, strlen(t->name), err));
        LC_TRY(lc_json_printf(h, err, ":{\"dtype\":\"%s\",\"shape\":[", st_name));
        for (uint32_t d = 0; d < t->ndim; d++)
            LC_TRY(lc_json_printf(h, err, d ? ",%" PRIu64 : "%" PRIu64, t->shape[d]));
        LC_TRY(lc_json_printf(h, err, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", off, end));
        off = end;
    }
    LC_TRY(lc_json_put(h, "}", 1, err));
    while (h->len % 8)
        LC_TRY(lc_json_put(h, " ", 1, err));
    if (h->len > LC_SAFETENSORS_MAX_HEADER)
        return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "header of %zu bytes is above the "
                       "limit of %u", h->len, LC_SAFETENSORS_MAX_HEADER);
    return LC_OK;
}

/* The open file a tensor is an unchanged range of (any reader's source may say so),
 * or -1. */
static int source_fd(const lc_tensor *t, uint64_t *off) {
    int fd;
    return lc_tensor_file_range(t, &fd, off) ? fd : -1;
}

/* Lays the tensors out as segments (libconvert/segments.h): tensors that sit back
 * to back in the same input file, as they do when a reference-written file is
 * rewritten, are one COPY run (copied in the kernel, or read with pread when small,
 * never through a map, whose touched pages would count in RSS); zero-copy views are
 * written as they are; the rest is read through their sources by worker threads.
 * first[k] is the index in order[] of segment k's first tensor, for error names. */
static size_t plan_segments(const lc_tensor **order, size_t n, lc_segment *segs,
                            size_t *first) {
    size_t k = 0;
    for (size_t i = 0, j; i < n; i = j, k++) {
        uint64_t start, next;
        const int fd = source_fd(order[i], &start);
        uint64_t len = order[i]->nbytes;
        for (j = i + 1; fd >= 0 && j < n && source_fd(order[j], &next) == fd &&
                        next == start + len; j++)
            len += order[j]->nbytes;
        first[k] = i;
        if (fd >= 0)
            segs[k] = (lc_segment){ .kind = LC_SEG_COPY, .t = order[i], .fd = fd, .off = start,
                                    .len = len };
        else if (order[i]->data)
            segs[k] = (lc_segment){ .kind = LC_SEG_VIEW, .t = order[i], .ptr = order[i]->data,
                                    .len = len };
        else
            segs[k] = (lc_segment){ .kind = LC_SEG_READ, .t = order[i], .len = len };
    }
    return k;
}

lc_code lc_safetensors_write(const lc_model *m, const char *path, const lc_st_write_opts *opts,
                             lc_progress *progress, lc_error *err) {
    lc_code rc = LC_OK;
    size_t n = lc_model_tensor_count(m);
    const lc_tensor **order = lc_calloc(n, sizeof *order);
    lc_segment *segs = lc_calloc(n ? n : 1, sizeof *segs);
    size_t *first = lc_calloc(n ? n : 1, sizeof *first);
    lc_json_buf h = {0};
    lc_outfile *f = NULL;
    lc_segments_failure failed = { 0, false };
    if (!order || !segs || !first) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        order[i] = lc_model_tensor(m, i);
        total += order[i]->nbytes; /* for progress only; build_header checks overflow */
    }
    qsort((void *)order, n, sizeof *order, by_dtype_then_name);
    if ((rc = build_header(m, order, n, opts, &h, err)) != LC_OK)
        goto done;
    if ((rc = lc_outfile_open(path, &f, err)) != LC_OK)
        goto done;
    uint8_t len8[8];
    lc_store_le64(len8, (uint64_t)h.len);
    if ((rc = lc_outfile_write(f, len8, 8, err)) != LC_OK ||
        (rc = lc_outfile_write(f, h.data, h.len, err)) != LC_OK)
        goto done;
    lc_outfile_reserve(f, 8 + h.len + total);     /* build_header checked the sum */
    lc_progress_begin(progress, path, total);
    const size_t nseg = plan_segments(order, n, segs, first);
    const lc_segments_opts so = { .threads = opts ? opts->threads : 0 };
    if ((rc = lc_segments_write(f, segs, nseg, &so, progress, &failed, err)) != LC_OK) {
        if (failed.segment < nseg)
            lc_err_context(err, NULL, order[first[failed.segment]]->name);
        goto done;
    }
    lc_progress_end(progress);
    rc = lc_outfile_commit(f, err);
    f = NULL;
done:
    lc_progress_end(progress);
    lc_outfile_abort(f);
    lc_free(segs);
    lc_free(first);
    lc_json_buf_free(&h);
    lc_free((void *)order);
    /* A source's failure (a bad CRC, a value the cast cannot hold) is about an input
     * file at an input offset: the caller, who knows that file, names it. */
    if (!failed.source)
        lc_err_context(err, path, NULL);
    return rc;
}
