/* formats/gguf_split.c: reading a model split across GGUF files (see gguf_split.h).
 *
 * The other parts are found as llama.cpp's loader finds them (llama_get_list_splits):
 * PATH must end in "-00001-of-NNNNN.gguf"; what comes before is the prefix, and part k
 * is PREFIX-k-of-NNNNN.gguf. llama.cpp checks each part's split.no and the tensor total;
 * we also hold every part's split.count and split.tensors.count to the first part's,
 * so a part of another split of the same name (a re-split left beside it) is refused
 * instead of read. */
#include "formats/gguf_split.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "formats/gguf.h"
#include "libconvert/alloc.h"

lc_code lc_gguf_split_path(const char *prefix, uint32_t no, uint32_t count, char *buf,
                           size_t cap, lc_error *err) {
    const int n = no < count ? snprintf(buf, cap, "%s-%05" PRIu32 "-of-%05" PRIu32 ".gguf",
                                        prefix, no + 1, count) : -1;
    if (n < 0 || (size_t)n >= cap)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "no name for part %" PRIu32 " of %" PRIu32
                       " of %.200s (too long)", no + 1, count, prefix);
    return LC_OK;
}

bool lc_gguf_split_prefix(const char *path, uint32_t no, uint32_t count, char *buf,
                          size_t cap) {
    char tail[48];
    snprintf(tail, sizeof tail, "-%05" PRIu32 "-of-%05" PRIu32 ".gguf", no + 1, count);
    const size_t n = strlen(path), t = strlen(tail);
    if (n <= t || strcmp(path + n - t, tail) != 0 || n - t >= cap)
        return false;
    memcpy(buf, path, n - t);
    buf[n - t] = '\0';
    return true;
}

void lc_gguf_split_free(lc_gguf_split *s) {
    if (!s)
        return;
    for (uint32_t i = 0; s->paths && i < s->count; i++)
        lc_free(s->paths[i]);
    lc_free(s->paths);
    lc_free(s->part);
    lc_free(s);
}

/* The u16 (i32 for split.tensors.count) value of a split key of m, or absent. A key of
 * another type is refused: llama.cpp's get_key refuses it too. */
static lc_code split_key(const lc_model *m, const char *key, lc_vtype want, bool need,
                         int64_t *v, bool *found, lc_error *err) {
    const lc_value *x = lc_model_find_meta(m, key);
    *found = x != NULL;
    if (!x && need)
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "a part of a split model without %s", key);
    else if (x && x->type != want)
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s is %s, not %s", key,
                lc_vtype_name(x->type), lc_vtype_name(want));
    else {
        if (x)
            *v = want == LC_VT_I32 ? x->i : (int64_t)x->u;
        return LC_OK;
    }
    lc_err_context(err, NULL, key);
    return err ? err->code : LC_E_MALFORMED;
}

/* Appends part p's tensors to the merged model m, refusing a name m has already and a
 * tensor beyond the total the first part declared (the room s->part has). */
static lc_code add_part(lc_model *m, lc_gguf_split *s, lc_model *p, uint32_t no,
                        uint64_t total, lc_error *err) {
    /* Grown by what the part holds (its parse checked every count against its bytes),
     * never by the total a file declares. */
    uint32_t *grown = lc_realloc_array(s->part, s->n_tensors + lc_model_tensor_count(p) + 1,
                                       sizeof *s->part);
    if (!grown)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    s->part = grown;
    for (size_t i = 0; i < lc_model_tensor_count(p); i++) {
        const lc_tensor *src = lc_model_tensor(p, i);
        if (s->n_tensors >= total)
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "the parts up to this one hold "
                           "more tensors than the first part's split.tensors.count (%" PRIu64
                           ")", total);
        if (lc_model_find_tensor(m, src->name)) {
            size_t k = 0;
            while (strcmp(lc_model_tensor(m, k)->name, src->name) != 0)
                k++;
            lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "tensor also in part %" PRIu32
                    " (%.150s)", s->part[k] + 1, s->paths[s->part[k]]);
            lc_err_context(err, NULL, src->name);
            return err ? err->code : LC_E_MALFORMED;
        }
        lc_tensor *t;
        LC_TRY(lc_model_add_tensor(m, src->name, src->dtype, src->ndim, src->shape, &t, err));
        t->data = src->data;            /* a view into p's map, which m owns */
        t->ops = src->ops;
        t->ctx = src->ctx;              /* the map: not freed through ops */
        t->file_offset = src->file_offset;
        s->part[s->n_tensors++] = no;
    }
    return LC_OK;
}

/* Opens part no (from 1) and checks its split keys against the first part's. */
static lc_code open_part(lc_model *m, lc_gguf_split *s, const char *prefix, uint32_t no,
                         int64_t total, lc_error *err) {
    char path[4096];
    lc_model *p = NULL;
    int64_t v = 0;
    bool found;
    lc_code rc = lc_gguf_split_path(prefix, no, s->count, path, sizeof path, err);
    if (rc == LC_OK && !(s->paths[no] = lc_strdup(path)))
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (rc == LC_OK) {
        lc_error sub = { .code = LC_OK };
        if ((rc = lc_gguf_load(path, &p, &sub)) == LC_E_NOTFOUND)
            lc_fail(err, rc, LC_NO_OFFSET, "part %" PRIu32 " of %" PRIu32 " is missing",
                    no + 1, s->count);
        else if (rc != LC_OK && err && err->code == LC_OK)
            *err = sub;
    }
    if (rc == LC_OK && (rc = split_key(p, LC_GGUF_SPLIT_NO, LC_VT_U16, true, &v, &found,
                                       err)) == LC_OK && v != no)
        rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "split.no is %" PRId64 " (part %" PRId64
                     "), but its name makes it part %" PRIu32, v, v + 1, no + 1);
    if (rc == LC_OK && (rc = split_key(p, LC_GGUF_SPLIT_COUNT, LC_VT_U16, true, &v, &found,
                                       err)) == LC_OK && v != s->count)
        rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "split.count is %" PRId64 ", but the "
                     "first part's is %" PRIu32, v, s->count);
    if (rc == LC_OK && (rc = split_key(p, LC_GGUF_SPLIT_TENSORS, LC_VT_I32, false, &v, &found,
                                       err)) == LC_OK && found && v != total)
        rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "split.tensors.count is %" PRId64
                     ", but the first part's is %" PRId64, v, total);
    if (rc == LC_OK)
        rc = add_part(m, s, p, no, (uint64_t)total, err);
    if (rc == LC_OK) {
        rc = lc_model_own(m, p, (void (*)(void *))lc_model_free, err);
        p = NULL;
    }
    lc_model_free(p);
    lc_err_context(err, path, NULL);
    return rc;
}

/* The first part's split keys, and the other parts. */
static lc_code open_parts(lc_model *m, lc_gguf_split *s, const char *path, lc_error *err) {
    int64_t count = 0, no = 0, total = 0;
    bool found;
    LC_TRY(split_key(m, LC_GGUF_SPLIT_COUNT, LC_VT_U16, false, &count, &found, err));
    s->count = count > 1 ? (uint32_t)count : 1;
    if (!(s->paths = lc_calloc(s->count, sizeof *s->paths)) || !(s->paths[0] = lc_strdup(path)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    const size_t n0 = lc_model_tensor_count(m);
    if (!(s->part = lc_calloc(n0 ? n0 : 1, sizeof *s->part)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    s->n_tensors = n0;          /* all in part 0 */
    if (s->count == 1)
        return LC_OK;
    LC_TRY(split_key(m, LC_GGUF_SPLIT_NO, LC_VT_U16, true, &no, &found, err));
    if (no != 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "part %" PRId64 " of %" PRIu32 " of a "
                       "split model: give the first part", no + 1, s->count);
    LC_TRY(split_key(m, LC_GGUF_SPLIT_TENSORS, LC_VT_I32, true, &total, &found, err));
    char prefix[4096];
    if (!lc_gguf_split_prefix(path, 0, s->count, prefix, sizeof prefix))
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "the first of %" PRIu32 " parts, but "
                       "its name does not end in -00001-of-%05" PRIu32 ".gguf (the other "
                       "parts are found by that name)", s->count, s->count);
    if (total < 0 || (uint64_t)total < n0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "split.tensors.count is %" PRId64
                       ", but the first part holds %zu tensors", total, n0);
    for (uint32_t k = 1; k < s->count; k++)    /* one at a time: the first bad one stops */
        LC_TRY(open_part(m, s, prefix, k, total, err));
    if (s->n_tensors != (uint64_t)total)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "split.tensors.count is %" PRId64
                       ", but the %" PRIu32 " parts hold %zu tensors", total, s->count,
                       s->n_tensors);
    return LC_OK;
}

lc_code lc_gguf_split_extend(lc_model *m, const char *path, lc_gguf_split **split,
                             lc_error *err) {
    lc_gguf_split *s = lc_calloc(1, sizeof *s);
    if (split)
        *split = NULL;
    lc_code rc = s ? open_parts(m, s, path, err)
                   : lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (rc != LC_OK)
        lc_err_context(err, path, NULL);
    else if (split) {
        *split = s;
        s = NULL;
    }
    lc_gguf_split_free(s);
    return rc;
}

lc_code lc_gguf_split_load(const char *path, lc_model **model, lc_gguf_split **split,
                           lc_error *err) {
    lc_model *m = NULL;
    *model = NULL;
    if (split)
        *split = NULL;
    lc_code rc = lc_gguf_load(path, &m, err);
    if (rc == LC_OK && (rc = lc_gguf_split_extend(m, path, split, err)) == LC_OK) {
        *model = m;
        m = NULL;
    }
    lc_model_free(m);
    return rc;
}
