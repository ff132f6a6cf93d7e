/* formats/gguf_split.c: reading a model split across GGUF files, and the one split plan
 * every GGUF writer writes by (see gguf_split.h).
 *
 * The other parts are found as llama.cpp's loader finds them (llama_get_list_splits):
 * PATH must end in "-00001-of-NNNNN.gguf"; what comes before is the prefix, and part k
 * is PREFIX-k-of-NNNNN.gguf. llama.cpp checks each part's split.no and the tensor total;
 * we also hold every part's split.count and split.tensors.count to the first part's,
 * so a part of another split of the same name (a re-split left beside it) is refused
 * instead of read. */
#include "formats/gguf_split.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "libconvert/alloc.h"
#include "libconvert/view.h"

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

/* ---- writing a split (see gguf_split.h) ---- */

static bool is_split_key(const char *key) {
    return strcmp(key, LC_GGUF_SPLIT_NO) == 0 || strcmp(key, LC_GGUF_SPLIT_COUNT) == 0 ||
           strcmp(key, LC_GGUF_SPLIT_TENSORS) == 0;
}

/* A whole number in [1, max], all of arg. */
static bool whole(const char *arg, size_t len, uint64_t max, uint64_t *v) {
    *v = 0;
    if (len == 0 || len > 20)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (arg[i] < '0' || arg[i] > '9' || *v > (UINT64_MAX - 9) / 10)
            return false;
        *v = *v * 10 + (uint64_t)(arg[i] - '0');
    }
    return *v >= 1 && *v <= max;
}

lc_code lc_gguf_split_parse(const lc_gguf_split_args *a, bool part_alone,
                            lc_gguf_split_opts *o, lc_error *err) {
    *o = (lc_gguf_split_opts){ .no_tensor_first = a->no_tensor_first,
                               .skip_existing = a->skip_existing };
    uint64_t v;
    if (a->max_size && a->max_tensors)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "give --split-max-size or "
                       "--split-max-tensors, not both");
    if (a->max_size) {
        /* gguf-split's units: M is 10^6 bytes, G 10^9 (split_str_to_n_bytes). */
        const size_t len = strlen(a->max_size);
        const char unit = len ? a->max_size[len - 1] : 0;
        const uint64_t scale = unit == 'M' ? 1000000 : unit == 'G' ? 1000000000 : 0;
        if (!scale || !whole(a->max_size, len - 1, UINT64_MAX / scale, &v))
            return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--split-max-size %.40s: want a whole "
                           "number above 0 and M (10^6 bytes) or G (10^9 bytes): 500M, 4G",
                           a->max_size);
        o->max_bytes = v * scale;
    }
    if (a->max_tensors) {
        if (!whole(a->max_tensors, strlen(a->max_tensors), INT32_MAX, &v))
            return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--split-max-tensors %.40s: want a "
                           "whole number above 0", a->max_tensors);
        o->max_tensors = (uint32_t)v;
    }
    o->split = a->max_size || a->max_tensors || a->no_tensor_first;
    if (a->part) {
        const char *slash = strchr(a->part, '/');
        uint64_t k, n;
        if (!slash || !whole(a->part, (size_t)(slash - a->part), LC_GGUF_SPLIT_MAX_PARTS, &k) ||
            !whole(slash + 1, strlen(slash + 1), LC_GGUF_SPLIT_MAX_PARTS, &n) || k > n)
            return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--part %.40s: want K/N, parts "
                           "counted from 1, 1 <= K <= N <= %d", a->part,
                           LC_GGUF_SPLIT_MAX_PARTS);
        if (!o->split && !part_alone)
            return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--part %.40s: with --split-max-size "
                           "or --split-max-tensors (the plan it is a part of)", a->part);
        o->part = (uint32_t)k;
        o->parts = (uint32_t)n;
    }
    return LC_OK;
}

lc_code lc_gguf_split_prefix_of(const char *out, char *buf, size_t cap, lc_error *err) {
    size_t n = strlen(out);
    if (n > 5 && strcmp(out + n - 5, ".gguf") == 0)
        n -= 5;
    if (n == 0 || n >= cap || out[n - 1] == '/')
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "no prefix for the parts of %.200s", out);
    memcpy(buf, out, n);
    buf[n] = '\0';
    return LC_OK;
}

lc_code lc_gguf_split_plan(const lc_model *m, const lc_gguf_split_opts *o, uint32_t *part,
                           uint32_t *count, lc_error *err) {
    const size_t n = lc_model_tensor_count(m);
    const uint64_t per = o->max_tensors ? o->max_tensors : LC_GGUF_SPLIT_DEFAULT_TENSORS;
    uint32_t cur = o->no_tensor_first ? 1 : 0;
    size_t in_cur = 0;          /* tensors in part cur */
    uint64_t bytes = 0;         /* their padded bytes */
    for (size_t i = 0; i < n; i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        /* GGML_PAD(ggml_nbytes(t), GGUF_DEFAULT_ALIGNMENT), whatever the alignment. */
        const uint64_t padded = t->nbytes > UINT64_MAX - 31 ? UINT64_MAX
                                                             : (t->nbytes + 31) & ~31ull;
        const uint64_t next = bytes > UINT64_MAX - padded ? UINT64_MAX : bytes + padded;
        const bool cut = o->max_bytes ? next > o->max_bytes : i > 0 && i % per == 0;
        if (cut && in_cur == 0)
            return lc_fail_in(err, LC_E_ARG, LC_NO_OFFSET, t->name, "%" PRIu64 " bytes (padded "
                              "to 32) alone pass --split-max-size (%" PRIu64 " bytes): a part "
                              "would hold no tensor", padded, o->max_bytes);
        if (cut) {
            if (cur + 1 >= LC_GGUF_SPLIT_MAX_PARTS)
                return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "the split would have more than "
                               "%d parts (split.count is a u16)", LC_GGUF_SPLIT_MAX_PARTS);
            cur++;
            in_cur = 0;
            bytes = padded;
        } else {
            bytes = next;
        }
        part[i] = cur;
        in_cur++;
    }
    *count = cur + 1;
    return LC_OK;
}

/* A tensor of dst reading src, with ggml's dimensions (trailing ne of 1 dropped: the
 * IR's leading 1s), as gguf_add_tensor records it. */
static lc_code add_view(lc_model *dst, const lc_tensor *src, lc_error *err) {
    lc_tensor *t;
    LC_TRY(lc_model_add_tensor(dst, src->name, src->dtype, src->ndim, src->shape, &t, err));
    LC_TRY(lc_view_forward(t, src, err));
    uint32_t drop = 0;
    while (t->ndim - drop > 1 && t->shape[drop] == 1)
        drop++;
    if (drop) {     /* the same bytes: only the shape's spelling changes */
        memmove(t->shape, t->shape + drop, (t->ndim - drop) * sizeof t->shape[0]);
        t->ndim -= drop;
    }
    return LC_OK;
}

/* Appends split.no, split.tensors.count and split.count to part `no` (rule 2). */
static lc_code add_split_keys(lc_model *p, uint32_t no, uint32_t count, size_t tensors,
                              lc_error *err) {
    lc_value v = lc_value_uint(LC_VT_U16, no);
    LC_TRY(lc_model_add_meta(p, LC_GGUF_SPLIT_NO, &v, err));
    v = lc_value_int(LC_VT_I32, (int64_t)tensors);
    LC_TRY(lc_model_add_meta(p, LC_GGUF_SPLIT_TENSORS, &v, err));
    v = lc_value_uint(LC_VT_U16, count);
    return lc_model_add_meta(p, LC_GGUF_SPLIT_COUNT, &v, err);
}

void lc_gguf_split_set_free(lc_gguf_split_set *s) {
    if (!s)
        return;
    for (uint32_t k = 0; k < s->count; k++) {
        if (s->models)
            lc_model_free(s->models[k]);
        if (s->paths)
            lc_free(s->paths[k]);
    }
    lc_free(s->models);
    lc_free(s->paths);
    lc_free(s->part);
    lc_free(s);
}

static lc_code build_set(const lc_model *m, const char *prefix, const lc_gguf_split_opts *o,
                         lc_gguf_split_set *s, lc_error *err) {
    const size_t n = lc_model_tensor_count(m);
    if (n > INT32_MAX)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%zu tensors: split.tensors.count is an "
                       "i32", n);
    uint32_t count = 0;
    if (!(s->part = lc_calloc(n ? n : 1, sizeof *s->part)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    LC_TRY(lc_gguf_split_plan(m, o, s->part, &count, err));
    if (o->part && o->parts != count)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--part %" PRIu32 "/%" PRIu32 ": the split "
                       "plan gives %" PRIu32 " part%s", o->part, o->parts, count,
                       count == 1 ? "" : "s");
    if (!(s->models = lc_calloc(count, sizeof *s->models)) ||
        !(s->paths = lc_calloc(count, sizeof *s->paths)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    s->count = count;
    for (uint32_t k = 0; k < count; k++) {
        char path[4096];
        LC_TRY(lc_gguf_split_path(prefix, k, count, path, sizeof path, err));
        if (!(s->paths[k] = lc_strdup(path)) || !(s->models[k] = lc_model_new()))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    for (size_t i = 0; i < lc_model_meta_count(m); i++) {
        const lc_kv *kv = lc_model_meta(m, i);
        lc_value v;
        if (is_split_key(kv->key))
            continue;
        LC_TRY(lc_value_copy(&v, &kv->val, err));
        LC_TRY(lc_model_add_meta(s->models[0], kv->key, &v, err));
    }
    for (size_t i = 0; i < n; i++)
        LC_TRY(add_view(s->models[s->part[i]], lc_model_tensor(m, i), err));
    for (uint32_t k = 0; k < count; k++)
        LC_TRY(add_split_keys(s->models[k], k, count, n, err));
    return LC_OK;
}

lc_code lc_gguf_split_set_new(const lc_model *m, const char *prefix,
                              const lc_gguf_split_opts *o, lc_gguf_split_set **out,
                              lc_error *err) {
    *out = NULL;
    lc_gguf_split_set *s = lc_calloc(1, sizeof *s);
    if (!s)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    const lc_code rc = build_set(m, prefix, o, s, err);
    if (rc != LC_OK) {
        lc_gguf_split_set_free(s);
        return rc;
    }
    *out = s;
    return LC_OK;
}

/* --skip-existing: whether the file at PATH is the one m would be written as (*keep),
 * judged by its header bytes and size; absent: not kept. Anything else at PATH is
 * refused: a shorter file (a copy cut off), a file that is not a GGUF, another split's
 * part, another run's. Nothing of its data is read. */
static lc_code check_existing(const lc_model *m, const char *path, bool *keep, lc_error *err) {
    struct stat st;
    *keep = false;
    if (stat(path, &st) != 0)
        return errno == ENOENT ? LC_OK : lc_fail(err, LC_E_IO, LC_NO_OFFSET, "--skip-existing: "
                                                 "cannot look at it: %s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--skip-existing: not a regular file");
    uint8_t *want = NULL, *have = NULL;
    size_t len = 0;
    uint64_t size = 0;
    lc_code rc = lc_gguf_header(m, &want, &len, &size, err);
    const size_t n = (uint64_t)st.st_size < len ? (size_t)st.st_size : len;
    int fd = -1;
    ssize_t got = 0;
    if (rc == LC_OK && !(have = lc_malloc(n ? n : 1)))
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (rc == LC_OK && ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 ||
                        (got = pread(fd, have, n, 0)) != (ssize_t)n))
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "--skip-existing: cannot read it: %s",
                     got < 0 || fd < 0 ? strerror(errno) : "it changed while being read");
    if (fd >= 0)
        close(fd);
    size_t at = 0;          /* the first byte that differs */
    while (rc == LC_OK && at < n && have[at] == want[at])
        at++;
    if (rc == LC_OK && at == len && (uint64_t)st.st_size == size) {
        *keep = true;
    } else if (rc == LC_OK) {
        /* Say why: the split keys a GGUF reader finds tell another split from a cut. */
        lc_model *e = NULL;
        lc_error sub = { .code = LC_OK };
        /* Mapped here, not through lc_gguf_load: that would note the file as an input of
         * this run, and a file that is an input may not be written over. */
        void *map = MAP_FAILED;
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0 && st.st_size > 0)
            map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (fd >= 0)
            close(fd);
        const lc_code lr = map == MAP_FAILED ? lc_fail(&sub, LC_E_TRUNCATED, 0, "empty") :
                           lc_gguf_load_mem(map, (uint64_t)st.st_size, &e, &sub);
        const char *keys[] = { LC_GGUF_SPLIT_NO, LC_GGUF_SPLIT_COUNT, LC_GGUF_SPLIT_TENSORS };
        const char *differs = NULL;
        char theirs[32] = "none", ours[32] = "none";
        for (size_t i = 0; lr == LC_OK && !differs && i < 3; i++) {
            const lc_value *a = lc_model_find_meta(e, keys[i]), *b = lc_model_find_meta(m, keys[i]);
            if (!a != !b || (a && (a->type != b->type || a->u != b->u))) {
                differs = keys[i];
                if (a)
                    snprintf(theirs, sizeof theirs, "%" PRId64, a->type == LC_VT_I32 ? a->i :
                             (int64_t)a->u);
                if (b)
                    snprintf(ours, sizeof ours, "%" PRId64, b->type == LC_VT_I32 ? b->i :
                             (int64_t)b->u);
            }
        }
        if (differs)
            rc = lc_fail_in(err, LC_E_MISMATCH, LC_NO_OFFSET, differs, "--skip-existing: the "
                            "file here belongs to another split (its %s is %s, this run's "
                            "%s); remove it, or write elsewhere", differs, theirs, ours);
        else if (at == n && (uint64_t)st.st_size < size)
            rc = lc_fail(err, LC_E_TRUNCATED, (uint64_t)st.st_size, "--skip-existing: the "
                         "file here is truncated (%" PRIu64 " of the %" PRIu64 " bytes this "
                         "part takes); remove it and run again", (uint64_t)st.st_size, size);
        else if (lr != LC_OK)
            rc = lc_fail(err, LC_E_MISMATCH, sub.offset, "--skip-existing: the file here is "
                         "not this run's part: %.160s", sub.msg);
        else if (at < n || n < len)
            rc = lc_fail(err, LC_E_MISMATCH, at, "--skip-existing: the file here is another "
                         "run's part (its header differs from this run's at byte %zu: another "
                         "input, type or option); remove it, or write elsewhere", at);
        else
            rc = lc_fail(err, LC_E_MISMATCH, size, "--skip-existing: the file here is longer "
                         "than this run's part (%" PRIu64 " bytes, not %" PRIu64 ")",
                         (uint64_t)st.st_size, size);
        lc_model_free(e);
        if (map != MAP_FAILED)
            munmap(map, (size_t)st.st_size);
    }
    lc_free(want);
    lc_free(have);
    return rc;
}

lc_code lc_gguf_write_parts(const lc_model *const *models, const char *const *paths,
                            uint32_t n, const lc_gguf_split_opts *o,
                            const lc_gguf_write_opts *wo, lc_progress *p, uint32_t *kept,
                            lc_error *err) {
    const lc_model **ms = lc_calloc(n ? n : 1, sizeof *ms);
    const char **ps = lc_calloc(n ? n : 1, sizeof *ps);
    uint32_t todo = 0, skipped = 0;
    lc_code rc = ms && ps ? LC_OK : lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (kept)
        *kept = 0;
    if (rc == LC_OK && o && o->part && o->parts != n)
        rc = lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--part %" PRIu32 "/%" PRIu32 ": this run "
                     "writes %" PRIu32 " part%s", o->part, o->parts, n, n == 1 ? "" : "s");
    /* Every check before any write: a refused part leaves the others unwritten too. */
    for (uint32_t k = 0; rc == LC_OK && k < n; k++) {
        bool keep = false;
        if (o && o->part && k + 1 != o->part)
            continue;
        if (o && o->skip_existing && (rc = check_existing(models[k], paths[k], &keep,
                                                          err)) != LC_OK)
            lc_err_context(err, paths[k], NULL);
        else if (keep)
            skipped++;
        else {
            ms[todo] = models[k];
            ps[todo++] = paths[k];
        }
    }
    if (rc == LC_OK && todo)
        rc = lc_gguf_write_set(ms, ps, todo, wo, p, err);
    if (rc == LC_OK && kept)
        *kept = skipped;
    lc_free(ms);
    lc_free(ps);
    return rc;
}

lc_code lc_gguf_split_write(const lc_model *m, const char *out, const lc_gguf_split_opts *o,
                            const lc_gguf_write_opts *wo, lc_progress *p, uint32_t *kept,
                            lc_error *err) {
    if (kept)
        *kept = 0;
    if (!o || (!o->split && !o->skip_existing))
        return lc_gguf_write(m, out, wo, p, err);
    if (!o->split) {
        const lc_gguf_split_opts one = { .skip_existing = true };
        return lc_gguf_write_parts(&m, &out, 1, &one, wo, p, kept, err);
    }
    char prefix[4096];
    lc_gguf_split_set *s = NULL;
    LC_TRY(lc_gguf_split_prefix_of(out, prefix, sizeof prefix, err));
    LC_TRY(lc_gguf_split_set_new(m, prefix, o, &s, err));
    const lc_code rc = lc_gguf_write_parts((const lc_model *const *)s->models,
                                           (const char *const *)s->paths, s->count, o, wo, p,
                                           kept, err);
    lc_gguf_split_set_free(s);
    return rc;
}

lc_code lc_gguf_split_merged(const lc_model *m, lc_model **out, lc_error *err) {
    *out = NULL;
    const lc_value *c = lc_model_find_meta(m, LC_GGUF_SPLIT_COUNT);
    if (!c)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "not a split model: it has no %s",
                       LC_GGUF_SPLIT_COUNT);
    if (c->type != LC_VT_U16 || c->u == 0)
        return lc_fail_in(err, LC_E_MALFORMED, LC_NO_OFFSET, LC_GGUF_SPLIT_COUNT, "not a split "
                          "model's first part: %s is not a u16 above 0", LC_GGUF_SPLIT_COUNT);
    lc_model *r = lc_model_new();
    lc_code rc = r ? LC_OK : lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    /* gguf_merge sets split.count to 0 on the first part's keys: removed, appended. */
    for (size_t i = 0; rc == LC_OK && i < lc_model_meta_count(m); i++) {
        const lc_kv *kv = lc_model_meta(m, i);
        lc_value v;
        if (strcmp(kv->key, LC_GGUF_SPLIT_COUNT) != 0 &&
            (rc = lc_value_copy(&v, &kv->val, err)) == LC_OK)
            rc = lc_model_add_meta(r, kv->key, &v, err);
    }
    if (rc == LC_OK) {
        lc_value v = lc_value_uint(LC_VT_U16, 0);
        rc = lc_model_add_meta(r, LC_GGUF_SPLIT_COUNT, &v, err);
    }
    for (size_t i = 0; rc == LC_OK && i < lc_model_tensor_count(m); i++)
        rc = add_view(r, lc_model_tensor(m, i), err);
    if (rc != LC_OK) {
        lc_model_free(r);
        return rc;
    }
    *out = r;
    return LC_OK;
}
