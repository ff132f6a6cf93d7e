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
#include "formats/pth_impl.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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
    size_t dir_len;  /* its folder: path[0, dir_len) */
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

/* Shard names in first-mention order (borrowed from the JSON). */
static lc_code shard_names(const index_file *ix, const char ***names, size_t *n, lc_error *err) {
    size_t cap = (size_t)cJSON_GetArraySize(ix->wmap) + 1, k = 0;
    const char **v = lc_calloc(cap, sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (const cJSON *it = ix->wmap->child; it; it = it->next) {
        size_t j = 0;
        while (j < k && strcmp(v[j], it->valuestring) != 0)
            j++;
        if (j == k)
            v[k++] = it->valuestring;
    }
    *names = v;
    *n = k;
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
        if (!(out[i] = join(ix.path, ix.dir_len, names[i])))
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
    index_close(&ix);
    return rc;
}

/* Every tensor the shard added ([from, to) of m) must map to this shard. */
static lc_code check_shard(const index_file *ix, const lc_model *m, size_t from, size_t to,
                           const char *shard, const char *shard_path, lc_error *err) {
    for (size_t i = from; i < to; i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(ix->wmap, t->name);
        if (!it || strcmp(it->valuestring, shard) != 0) {
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
    size_t k = 0;
    lc_code rc = index_open(path, &ix, err);
    if (rc == LC_OK)
        rc = shard_names(&ix, &names, &k, err);
    for (size_t i = 0; rc == LC_OK && i < k; i++) {
        char *sp = join(ix.path, ix.dir_len, names[i]);
        size_t before = lc_model_tensor_count(m);
        if (!sp) {
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
            break;
        }
        if ((rc = lc_pth_load_file(sp, o, m, err)) == LC_OK)
            rc = check_shard(&ix, m, before, lc_model_tensor_count(m), names[i], sp, err);
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
    lc_free(names);
    index_close(&ix);
    return rc;
}

/* ---- writing an index for converted shards ---- */

struct lc_pth_index_out {
    cJSON   *root, *wmap;
    uint64_t total;
};

lc_pth_index_out *lc_pth_index_out_new(void) {
    lc_pth_index_out *ix = lc_calloc(1, sizeof *ix);
    cJSON *meta;
    if (!ix)
        return NULL;
    if (!(ix->root = cJSON_CreateObject()) ||
        !(meta = cJSON_AddObjectToObject(ix->root, "metadata")) ||
        !(ix->wmap = cJSON_AddObjectToObject(ix->root, "weight_map"))) {
        lc_pth_index_out_free(ix);
        return NULL;
    }
    return ix;
}

void lc_pth_index_out_free(lc_pth_index_out *ix) {
    if (!ix)
        return;
    cJSON_Delete(ix->root);
    lc_free(ix);
}

lc_code lc_pth_index_out_add(lc_pth_index_out *ix, const lc_model *m, const char *file,
                             lc_error *err) {
    for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        if (cJSON_GetObjectItemCaseSensitive(ix->wmap, t->name))
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "tensor %s is in two shards",
                           t->name);
        if (!cJSON_AddStringToObject(ix->wmap, t->name, file))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        ix->total += t->nbytes;
    }
    return LC_OK;
}

lc_code lc_pth_index_out_write(lc_pth_index_out *ix, const char *path, lc_error *err) {
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(ix->root, "metadata");
    lc_outfile *f = NULL;
    char *text = NULL;
    lc_code rc = LC_OK;
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "total_size");
    if (!cJSON_AddNumberToObject(meta, "total_size", (double)ix->total) ||
        !(text = cJSON_Print(ix->root)))
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (rc == LC_OK && (rc = lc_outfile_open(path, &f, err)) == LC_OK &&
        (rc = lc_outfile_write(f, text, strlen(text), err)) == LC_OK &&
        (rc = lc_outfile_write(f, "\n", 1, err)) == LC_OK) {
        rc = lc_outfile_commit(f, err);
        f = NULL;
    }
    lc_outfile_abort(f);
    cJSON_free(text);
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
