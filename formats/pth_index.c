/* formats/pth_index.c: Hugging Face sharded PyTorch checkpoints.
 *
 *   FOLDER/pytorch_model.bin.index.json
 *     { "metadata": { "total_size": N },            (ignored)
 *       "weight_map": { "<tensor name>": "pytorch_model-00001-of-00002.bin", ... } }
 *   FOLDER/pytorch_model-0000K-of-0000N.bin         one torch.save checkpoint each
 *
 * Shard names must be plain file names in the index's folder (no '/', no ".."), so an
 * index cannot make us open files elsewhere. Every tensor must sit in the shard the
 * map names, and every shard tensor must be in the map (LC_E_MISMATCH otherwise). */
#include "formats/pth_index_impl.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/pth.h"
#include "formats/pth_file_impl.h"
#include "libconvert/alloc.h"
#include "libconvert/map.h"
#include "libconvert/outfile.h"

#define LC_PTH_INDEX_NAME "pytorch_model.bin.index.json"
#define LC_PTH_MAX_INDEX ((uint64_t)64 << 20)

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

bool lc_pth_is_index(const char *path) {
    return is_dir(path) || ends_with(path, ".index.json");
}

/* "DIR/NAME" in a new string. */
static char *join(const char *dir, size_t dlen, const char *name) {
    if (!dir)
        return lc_strdup(name);
    size_t n = strlen(name);
    char *p = lc_malloc(dlen + 1 + n + 1);
    if (!p)
        return NULL;
    memcpy(p, dir, dlen);
    p[dlen] = '/';
    memcpy(p + dlen + 1, name, n + 1);
    return p;
}

typedef struct index_file {
    char  *path;     /* of the json */
    size_t dir_len;  /* its folder is path[0, dir_len) ... */
    bool   has_dir;  /* ... when path has a '/' at all (else the current folder) */
    lc_map *map;
    cJSON *root;
    const cJSON *wmap;
} index_file;

static void index_close(index_file *ix) {
    cJSON_Delete(ix->root);
    lc_map_close(ix->map);
    lc_free(ix->path);
}

static lc_code index_open(const char *path, index_file *ix, lc_error *err) {
    memset(ix, 0, sizeof *ix);
    if (is_dir(path)) {
        ix->path = join(path, strlen(path), LC_PTH_INDEX_NAME);
    } else {
        ix->path = lc_strdup(path);
    }
    if (!ix->path)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    const char *slash = strrchr(ix->path, '/');
    ix->dir_len = slash ? (size_t)(slash - ix->path) : 0;
    ix->has_dir = slash != NULL;
    lc_code rc = lc_map_open(ix->path, &ix->map, err);
    if (rc) {
        if (err && rc == LC_E_IO)
            err->code = LC_E_NOTFOUND;
        lc_err_context(err, ix->path, NULL);
        return err ? err->code : rc;
    }
    if (ix->map->size > LC_PTH_MAX_INDEX)
        rc = lc_fail(err, LC_E_OVERFLOW, 0, "index of %llu bytes, at most %llu",
                     (unsigned long long)ix->map->size, (unsigned long long)LC_PTH_MAX_INDEX);
    else if (!(ix->root = cJSON_ParseWithLength((const char *)ix->map->data, ix->map->size)))
        rc = lc_fail(err, LC_E_MALFORMED, 0, "the index is not valid JSON");
    else if (!cJSON_IsObject(ix->wmap = cJSON_GetObjectItemCaseSensitive(ix->root, "weight_map")))
        rc = lc_fail(err, LC_E_MALFORMED, 0, "the index has no \"weight_map\" object");
    for (const cJSON *it = rc ? NULL : ix->wmap->child; it; it = it->next) {
        const char *f = cJSON_IsString(it) ? it->valuestring : NULL;
        if (!f || !*f || strchr(f, '/') || strcmp(f, "..") == 0 || strcmp(f, ".") == 0) {
            rc = lc_fail(err, LC_E_MALFORMED, 0,
                         "weight_map entry \"%s\" is not a file name in the index's folder",
                         it->string ? it->string : "?");
            break;
        }
    }
    lc_err_context(err, ix->path, NULL);
    return rc;
}

static int str_cmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Shard names, each once, sorted as transformers loads them (borrowed from the JSON).
 * Sorted first and then deduplicated: an index may name as many shards as tensors, and
 * a search per entry would be quadratic before the first shard is opened. */
static lc_code shard_names(const index_file *ix, const char ***names, size_t *n, lc_error *err) {
    size_t cap = (size_t)cJSON_GetArraySize(ix->wmap) + 1, k = 0;
    const char **v = lc_calloc(cap, sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (const cJSON *it = ix->wmap->child; it; it = it->next)
        v[k++] = it->valuestring;
    qsort((void *)v, k, sizeof *v, str_cmp);
    size_t distinct = 0;
    for (size_t j = 0; j < k; j++)
        if (distinct == 0 || strcmp(v[distinct - 1], v[j]) != 0)
            v[distinct++] = v[j];
    *names = v;
    *n = distinct;
    return LC_OK;
}

lc_code lc_pth_index_shards(const char *path, char ***files, size_t *n, lc_error *err) {
    index_file ix;
    const char **names = NULL;
    size_t k = 0;
    *files = NULL;
    *n = 0;
    lc_code rc = index_open(path, &ix, err);
    if (rc == LC_OK)
        rc = shard_names(&ix, &names, &k, err);
    char **out = rc ? NULL : lc_calloc(k + 1, sizeof *out);
    if (!rc && !out)
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (size_t i = 0; !rc && i < k; i++)
        if (!(out[i] = join(ix.has_dir ? ix.path : NULL, ix.dir_len, names[i])))
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (rc && out) {
        for (size_t i = 0; i < k; i++)
            lc_free(out[i]);
        lc_free(out);
    } else if (!rc) {
        *files = out;
        *n = k;
    }
    lc_free(names);
    lc_err_context(err, ix.path ? ix.path : path, NULL);   /* out of memory included */
    index_close(&ix);
    return rc;
}

/* weight_map as (tensor, shard) rows sorted by tensor name, for a binary search per
 * shard tensor (cJSON's own lookup walks the whole map each time). Where a name is
 * listed twice the first listing wins, as with cJSON_GetObjectItemCaseSensitive. */
typedef struct map_row {
    const char *name, *shard;
    size_t      at;          /* position in weight_map */
} map_row;

static int row_by_name(const void *a, const void *b) {
    const map_row *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

static lc_code map_rows(const index_file *ix, map_row **rows, size_t *n, lc_error *err) {
    size_t k = 0;
    map_row *r = lc_calloc((size_t)cJSON_GetArraySize(ix->wmap) + 1, sizeof *r);
    if (!r)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (const cJSON *it = ix->wmap->child; it; it = it->next, k++)
        r[k] = (map_row){ it->string, it->valuestring, k };
    qsort(r, k, sizeof *r, row_by_name);
    *rows = r;
    *n = k;
    return LC_OK;
}

/* The first listing of NAME, or NULL. */
static const map_row *find_row(const map_row *rows, size_t n, const char *name) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(rows[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && strcmp(rows[lo].name, name) == 0 ? &rows[lo] : NULL;
}

/* Every tensor the shard added ([from, to) of m) must map to this shard. */
static lc_code check_shard(const map_row *rows, size_t nrows, const lc_model *m, size_t from,
                           size_t to, const char *shard, const char *shard_path, lc_error *err) {
    for (size_t i = from; i < to; i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        const map_row *it = find_row(rows, nrows, t->name);
        if (!it || strcmp(it->shard, shard) != 0) {
            lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "tensor is in %s but the index %s", shard,
                    it ? "names another shard" : "does not list it");
            lc_err_context(err, shard_path, t->name);
            return LC_E_MISMATCH;
        }
    }
    return LC_OK;
}

lc_code lc_pth_index_load(const char *path, const lc_pth_opts *o, lc_model *m, lc_error *err) {
    index_file ix;
    const char **names = NULL;
    map_row *rows = NULL;
    size_t k = 0, nrows = 0;
    lc_code rc = index_open(path, &ix, err);
    if (rc == LC_OK)
        rc = shard_names(&ix, &names, &k, err);
    if (rc == LC_OK)
        rc = map_rows(&ix, &rows, &nrows, err);
    for (size_t i = 0; rc == LC_OK && i < k; i++) {
        char *sp = join(ix.has_dir ? ix.path : NULL, ix.dir_len, names[i]);
        size_t before = lc_model_tensor_count(m);
        if (!sp) {
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
            break;
        }
        if ((rc = lc_pth_load_file(sp, o, m, err)) == LC_OK)
            rc = check_shard(rows, nrows, m, before, lc_model_tensor_count(m), names[i], sp,
                             err);
        lc_err_context(err, sp, NULL);
        lc_free(sp);
    }
    /* Every mapped tensor must exist (or have been dropped by --dedupe as an alias). */
    for (const cJSON *it = rc ? NULL : ix.wmap->child; it; it = it->next)
        if (!lc_model_find_tensor(m, it->string) && !lc_model_find_meta(m, it->string)) {
            rc = lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "tensor listed for %s is in no shard",
                         it->valuestring);
            lc_err_context(err, ix.path, it->string);
            break;
        }
    lc_free(rows);
    lc_free(names);
    index_close(&ix);
    return rc;
}

/* ---- writing an index for converted shards ----
 *
 * Written as Hugging Face writes it (json.dumps(index, indent=2, sort_keys=True) and a
 * newline): keys sorted by code point, non-ASCII escaped as \uXXXX (UTF-16). */

typedef struct index_row {
    char       *name;
    const char *file;   /* one of ix->files */
} index_row;

struct lc_pth_index_out {
    index_row *rows;
    size_t     n, cap;
    char     **files;
    size_t     n_files;
    uint64_t   total;
};

lc_pth_index_out *lc_pth_index_out_new(void) {
    return lc_calloc(1, sizeof(lc_pth_index_out));
}

void lc_pth_index_out_free(lc_pth_index_out *ix) {
    if (!ix)
        return;
    for (size_t i = 0; i < ix->n; i++)
        lc_free(ix->rows[i].name);
    for (size_t i = 0; i < ix->n_files; i++)
        lc_free(ix->files[i]);
    lc_free(ix->rows);
    lc_free(ix->files);
    lc_free(ix);
}

lc_code lc_pth_index_out_add(lc_pth_index_out *ix, const lc_model *m, const char *file,
                             lc_error *err) {
    char **files = lc_realloc_array(ix->files, ix->n_files + 1, sizeof *files);
    if (!files)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    ix->files = files;
    if (!(files[ix->n_files] = lc_strdup(file)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    const char *f = files[ix->n_files++];
    for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        if (ix->n == ix->cap) {
            size_t cap = ix->cap ? ix->cap * 2 : 64;
            index_row *rows = lc_realloc_array(ix->rows, cap, sizeof *rows);
            if (!rows)
                return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
            ix->rows = rows;
            ix->cap = cap;
        }
        if (!(ix->rows[ix->n].name = lc_strdup(t->name)))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        ix->rows[ix->n++].file = f;
        ix->total += t->nbytes;
    }
    return LC_OK;
}

static int row_cmp(const void *a, const void *b) {
    return strcmp(((const index_row *)a)->name, ((const index_row *)b)->name);
}

/* Appends s as a JSON string the way Python's json.dumps (ensure_ascii) does. */
static lc_code put_json_str(lc_outfile *f, const char *s, lc_error *err) {
    char buf[16];
    LC_TRY(lc_outfile_write(f, "\"", 1, err));
    for (const uint8_t *p = (const uint8_t *)s; *p;) {
        uint32_t c = *p++;
        int more = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
        if (more)
            c &= 0x3fu >> more;
        for (; more && (*p & 0xc0) == 0x80; more--)
            c = c << 6 | (*p++ & 0x3f);
        if (c == '"' || c == '\\') {
            buf[0] = '\\';
            buf[1] = (char)c;
            LC_TRY(lc_outfile_write(f, buf, 2, err));
        } else if (c >= 0x20 && c < 0x7f) {
            buf[0] = (char)c;
            LC_TRY(lc_outfile_write(f, buf, 1, err));
        } else if (c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f') {
            buf[0] = '\\';
            buf[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : c == '\b' ? 'b' : 'f';
            LC_TRY(lc_outfile_write(f, buf, 2, err));
        } else if (c < 0x10000) {
            snprintf(buf, sizeof buf, "\\u%04x", (unsigned)c);
            LC_TRY(lc_outfile_write(f, buf, 6, err));
        } else {
            c -= 0x10000;
            snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xd800u + (unsigned)(c >> 10),
                     0xdc00u + (unsigned)(c & 0x3ff));
            LC_TRY(lc_outfile_write(f, buf, 12, err));
        }
    }
    return lc_outfile_write(f, "\"", 1, err);
}

static lc_code write_index(lc_pth_index_out *ix, lc_outfile *f, lc_error *err) {
    char head[96];
    snprintf(head, sizeof head, "{\n  \"metadata\": {\n    \"total_size\": %llu\n  },\n"
             "  \"weight_map\": {", (unsigned long long)ix->total);
    LC_TRY(lc_outfile_write(f, head, strlen(head), err));
    qsort(ix->rows, ix->n, sizeof *ix->rows, row_cmp);
    for (size_t i = 0; i < ix->n; i++) {
        LC_TRY(lc_outfile_write(f, i ? ",\n    " : "\n    ", i ? 6 : 5, err));
        LC_TRY(put_json_str(f, ix->rows[i].name, err));
        LC_TRY(lc_outfile_write(f, ": ", 2, err));
        LC_TRY(put_json_str(f, ix->rows[i].file, err));
    }
    const char *tail = ix->n ? "\n  }\n}\n" : "}\n}\n";
    return lc_outfile_write(f, tail, strlen(tail), err);
}

lc_code lc_pth_index_out_write(lc_pth_index_out *ix, const char *path, lc_error *err) {
    lc_outfile *f = NULL;
    lc_code rc = lc_outfile_open(path, &f, err);
    if (rc == LC_OK && (rc = write_index(ix, f, err)) == LC_OK) {
        rc = lc_outfile_commit(f, err);
        f = NULL;
    }
    lc_outfile_abort(f);
    lc_err_context(err, path, NULL);
    return rc;
}

void lc_pth_shard_out_name(const char *shard, char *buf, size_t cap) {
    const char *base = strrchr(shard, '/') ? strrchr(shard, '/') + 1 : shard;
    size_t n = strlen(base);
    static const char *const exts[] = { ".bin", ".pth", ".pt" };
    for (size_t i = 0; i < sizeof exts / sizeof *exts; i++)
        if (ends_with(base, exts[i])) {
            n -= strlen(exts[i]);
            break;
        }
    const char *pre = strncmp(base, "pytorch_model", 13) == 0 ? "model" : "";
    size_t skip = *pre ? 13 : 0;
    snprintf(buf, cap, "%s%.*s.safetensors", pre, (int)(n - skip), base + skip);
}
