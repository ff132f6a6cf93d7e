/* formats/pth_commit.c: the tensors one checkpoint file describes join the model.
 *
 * Two jobs: hand the storages to the model (tensor sources point into them), and
 * --dedupe, which mirrors safetensors' convert script so that our output matches
 * what users get from it: tensors are grouped by storage; inside a group, sorted by
 * (first byte, end byte, name), a tensor that starts at or after the previous one's
 * end opens a new cluster (the previous *one*, not the furthest end: the
 * reference's rule); of each cluster of two or more, the tensor that covers its
 * whole storage (starts at 0, numel x size == storage bytes) with the smallest name
 * stays and the others are dropped, each recorded as metadata dropped -> kept.
 *
 * Before a tensor joins, two refusals that name the pickle offset of its rebuild call:
 * a name the model already has (two paths that flatten to one name, or a tensor in
 * two shards), and views of one storage that would write more than
 * LC_PTH_EXPAND_FACTOR times its bytes (stride 0), unless opts->allow_expand. */
#include "formats/pth_commit_impl.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pth_source_impl.h"
#include "libconvert/alloc.h"
#include "libconvert/bytes.h"

typedef struct storage_table {
    lc_pth_storage **st;
    size_t           n;
} storage_table;

static void table_free(void *p) {
    storage_table *tab = p;
    if (!tab)
        return;
    for (size_t i = 0; i < tab->n; i++) {
        lc_free(tab->st[i]->key);
        lc_free(tab->st[i]);
    }
    lc_free(tab->st);
    lc_free(tab);
}

typedef struct area {
    const lc_pth_storage *st;
    uint64_t              start, stop;  /* bytes of the storage the view spans */
    const char           *name;
    size_t                idx;
    bool                  complete;     /* covers the whole storage */
} area;

static int area_cmp(const void *pa, const void *pb) {
    const area *a = pa, *b = pb;
    if (a->st != b->st)
        return (uintptr_t)a->st < (uintptr_t)b->st ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->stop != b->stop)
        return a->stop < b->stop ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Fills keep[i] with the index of the tensor that replaces tensor i, or i itself. */
static lc_code dedupe(const lc_pth_found *f, size_t *keep, lc_error *err) {
    area *ar = lc_calloc(f->n_t ? f->n_t : 1, sizeof *ar);
    if (!ar)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < f->n_t; i++) {
        lc_pth_tensor one;
        lc_pth_found_tensor(f, i, &one);
        const lc_pth_tensor *t = &one;
        const uint64_t esize = lc_dtype_get(t->dtype)->type_size;
        uint64_t numel = 1, last = t->offset;
        for (uint32_t d = 0; d < t->ndim; d++)
            numel *= t->shape[d];  /* checked against the storage by the walk */
        if (numel == 0 || t->st->nbytes == 0)
            continue;             /* never shared, as in the reference */
        for (uint32_t d = 0; d < t->ndim; d++)
            last += (t->shape[d] - 1) * t->stride[d];
        ar[n] = (area){ t->st, t->offset * esize, (last + 1) * esize, t->name, i,
                        t->offset == 0 && numel * esize == t->st->nbytes };
        n++;
    }
    qsort(ar, n, sizeof *ar, area_cmp);
    for (size_t g = 0; g < n;) {
        /* One cluster: [g, e). */
        size_t e = g + 1;
        uint64_t last_stop = ar[g].stop;
        while (e < n && ar[e].st == ar[g].st && ar[e].start < last_stop) {
            last_stop = ar[e].stop;
            e++;
        }
        const area *best = NULL;
        for (size_t k = g; k < e; k++)
            if (ar[k].complete && (!best || strcmp(ar[k].name, best->name) < 0))
                best = &ar[k];
        for (size_t k = g; best && k < e; k++)
            keep[ar[k].idx] = best->idx;
        g = e;
    }
    lc_free(ar);
    return LC_OK;
}

/* Tensor i's name must be new to the model: say where its twin was made. */
static lc_code check_name(const lc_pth_found *f, const size_t *keep, size_t i,
                          const lc_model *m, lc_error *err) {
    const lc_pth_packed *pt = &f->t[i];
    if (!lc_model_find_tensor(m, pt->name))
        return LC_OK;
    for (size_t j = 0; j < i; j++)
        if (keep[j] == j && strcmp(f->t[j].name, pt->name) == 0)
            return lc_fail(err, LC_E_MALFORMED, pt->at,
                           "two tensors are named \"%.80s\": the rebuild calls at 0x%" PRIx64
                           " and here", pt->name, f->t[j].at);
    return lc_fail(err, LC_E_MALFORMED, pt->at,
                   "tensor \"%.80s\" is also in a shard read before this one", pt->name);
}

/* Charges tensor pt's bytes to its storage (see LC_PTH_EXPAND_FACTOR). */
static lc_code check_expand(const lc_pth_tensor *pt, const lc_pth_opts *o, lc_error *err) {
    lc_pth_storage *s = pt->st;
    uint64_t nbytes, limit, total;
    LC_TRY(lc_shape_nbytes(pt->dtype, pt->ndim, pt->shape, &nbytes, err));
    if (lc_mul_u64(s->nbytes, LC_PTH_EXPAND_FACTOR, &limit) ||
        lc_add_u64(limit, LC_PTH_EXPAND_SLACK, &limit))
        limit = UINT64_MAX;
    if (lc_add_u64(s->out_bytes, nbytes, &total))
        total = UINT64_MAX;
    if (total > limit && !(o && o->allow_expand))
        return lc_fail(err, LC_E_OVERFLOW, pt->at,
                       "tensor \"%.60s\" takes %" PRIu64 " bytes from the %" PRIu64
                       "-byte storage %.20s, whose views may write %u times its bytes + %u "
                       "in all (%" PRIu64 " so far): an expanded view (stride 0)? "
                       "--allow-expand writes it", pt->name, nbytes, s->nbytes, s->key,
                       LC_PTH_EXPAND_FACTOR, LC_PTH_EXPAND_SLACK, s->out_bytes);
    s->out_bytes = total;
    return LC_OK;
}

lc_code lc_pth_commit(lc_pth_found *f, const lc_pth_opts *o, lc_model *m, lc_error *err) {
    lc_code rc = LC_OK;
    size_t *keep = NULL;
    storage_table *tab = lc_calloc(1, sizeof *tab);
    if (!tab) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    tab->st = f->st;
    tab->n = f->n_st;
    f->st = NULL;
    f->n_st = f->cap_st = 0;
    if ((rc = lc_model_own(m, tab, table_free, err)) != LC_OK)
        goto done;
    for (size_t i = 0; i < tab->n; i++)
        if (!tab->st[i]->bound) {
            rc = lc_fail(err, LC_E_NOTFOUND, tab->st[i]->at, "storage %s has no data",
                         tab->st[i]->key);
            goto done;
        }
    if (!(keep = lc_calloc(f->n_t ? f->n_t : 1, sizeof *keep))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < f->n_t; i++)
        keep[i] = i;
    if (o && o->dedupe && (rc = dedupe(f, keep, err)) != LC_OK)
        goto done;
    for (size_t i = 0; i < f->n_t; i++) {
        lc_pth_tensor one;
        lc_pth_found_tensor(f, i, &one);
        const lc_pth_tensor *pt = &one;
        lc_tensor *t;
        if (keep[i] != i)
            continue;
        if ((rc = check_name(f, keep, i, m, err)) || (rc = check_expand(pt, o, err)))
            goto done;
        if ((rc = lc_model_add_tensor(m, pt->name, pt->dtype, pt->ndim, pt->shape, &t, err)) ||
            (rc = lc_pth_source_attach(t, pt, err))) {
            lc_err_context(err, NULL, pt->name);
            goto done;
        }
    }
    for (size_t i = 0; i < f->n_t; i++)
        if (keep[i] != i && !lc_model_find_meta(m, f->t[i].name) &&
            (rc = lc_model_set_meta_str(m, f->t[i].name, f->t[keep[i]].name, err)))
            goto done;
done:
    lc_free(keep);
    lc_pth_found_free(f);
    return rc;
}
