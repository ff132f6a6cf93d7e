/* jobs/model_verify_pairs.c: which tensor of DST each tensor of SRC is compared with.
 *
 * Each SRC tensor's name is looked up in the family's table (arch/ lc_arch_lookup) and
 * spelled as DST spells it; tensors the family computes or drops (rope_freqs,
 * rotary_emb.inv_freq) are skipped; a SRC tensor DST lacks ends the run (LC_E_MISMATCH);
 * a DST tensor no pair reads is a difference. Without a family on either side, tensors
 * pair by name. What the two sides may store differently is undone before comparing:
 *   - Q/K rows in the other RoPE order (transformers' halves, GGUF llama's interleaved
 *     pairs): SRC's rows are read in DST's order (libconvert/view.h lc_view_head_row), so
 *     a correct permutation compares equal and a skipped one does not;
 *   - experts: one pair per expert, whatever each side does: one tensor per expert
 *     (transformers' "experts.%e."), a stack [expert, rows, cols] (GGUF), or transformers
 *     5's fused stack (gate and up side by side): each side's piece of expert e is a view
 *     of its rows (named "<stack>[e]"), so two swapped experts are two failing pairs that
 *     the diagnosis names;
 *   - gemma's norms, stored + 1 in GGUF: the side in transformers' spelling gets its + 1
 *     (in float32, rounded as the converter rounds it), so an intact conversion compares
 *     exact and a skipped shift is off by 1 everywhere;
 *   - qwen35's recurrent layers: the side in transformers' spelling gets what the
 *     converter does (value heads grouped -> tiled, A_log -> -exp(A_log), the conv1d
 *     weight squeezed), so a skipped reorder or a copied A_log fails on those tensors;
 *     the prediction layers (mtp.*) pair through the family's aliases.
 * The views live in r->derived. */
#include "jobs/model_verify_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/convert.h"
#include "libconvert/view.h"
#include "quant/quant.h"

static bool readable(lc_dtype dt) {
    return lc_dtype_is_quant(dt) ? lc_dequant_supported(dt) : lc_convert_supported(dt, LC_DT_F32);
}

/* Which order a side keeps a RoPE-rotated tensor's rows in: true for interleaved pairs
 * (GGUF llama, Meta), false for halves (transformers, GGUF qwen2). */
static bool interleaved(const lc_vf_side *s) {
    return s->spelling == LC_SPELL_META ||
           (s->spelling == LC_SPELL_GGUF && s->arch && s->arch->rope == LC_ROPE_NORM);
}

static void append(char *list, size_t cap, const char *raw) {
    char name[96];
    lc_vf_escape(raw, name, sizeof name);
    const size_t n = strlen(list);
    if (n + 8 >= cap)
        return;
    if (n + strlen(name) + 3 >= cap - 4)
        snprintf(list + n, cap - n, "%s...", n ? ", " : "");
    else
        snprintf(list + n, cap - n, "%s%s", n ? ", " : "", name);
}

/* The pairing state: the result, its capacity, the DST tensors some pair reads. */
typedef struct pairing {
    const lc_vf_side *src, *dst;
    lc_vf_tensors *r;
    size_t cap;
    const lc_tensor **used;     /* DST tensors read, sorted at the end */
    size_t n_used, cap_used;
} pairing;

static lc_code mark_used(pairing *pg, const lc_tensor *u, lc_error *err) {
    if (pg->n_used == pg->cap_used) {
        const size_t nc = pg->cap_used ? pg->cap_used * 2 : 64;
        const lc_tensor **p = lc_realloc_array(pg->used, nc, sizeof *p);
        if (!p)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        pg->used = p;
        pg->cap_used = nc;
    }
    pg->used[pg->n_used++] = u;
    return LC_OK;
}

/* One pair: a (SRC's, or a view of it) against b (DST's, or a view); a0/b0 are the
 * tensors as the files store them (their dtypes set what the conversion may change). */
static lc_code add_pair(pairing *pg, const lc_tensor *a, const lc_tensor *b, const lc_tensor *a0,
                        const lc_tensor *b0, const lc_arch_tensor *row, uint32_t layer,
                        uint32_t expert, lc_error *err) {
    lc_vf_tensors *r = pg->r;
    if (r->n == pg->cap) {
        const size_t nc = pg->cap ? pg->cap * 2 : 64;
        lc_vf_tensor *t = lc_realloc_array(r->t, nc, sizeof *t);
        if (!t)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        r->t = t;
        pg->cap = nc;
    }
    lc_vf_tensor *p = &r->t[r->n++];
    memset(p, 0, sizeof *p);
    lc_vf_escape(b->name, p->name, sizeof p->name);
    lc_vf_escape(a->name, p->src_name, sizeof p->src_name);
    p->row = row;
    p->layer = layer;
    p->expert = expert;
    p->src_dt = a0->dtype;
    p->dst_dt = b0->dtype;
    p->src_t = a;
    p->dst_t = b;
    p->dst_stored = b0;
    p->im_entry = SIZE_MAX;
    p->ndim = b->ndim;
    memcpy(p->shape, b->shape, sizeof p->shape);
    lc_shape_format(b, p->shape_s, sizeof p->shape_s);
    p->shape_ok = a->ndim == b->ndim && memcmp(a->shape, b->shape, a->ndim * sizeof *a->shape) == 0;
    if (!p->shape_ok && a->ndim == 2 && b->ndim == 2 && a->shape[0] == b->shape[1] &&
        a->shape[1] == b->shape[0])
        snprintf(p->diagnosis, sizeof p->diagnosis, "its shape is SRC's transposed");
    p->expect = lc_vf_expect_pair(a0->dtype, b0->dtype);
    {
        uint64_t rows, cols;
        bool proxy;
        lc_vf_matrix(b, false, &rows, &cols);
        p->repro_dt = lc_vf_repro_type(b->dtype, cols, false, &proxy);
    }
    p->cosine = 1;
    p->ok = true;
    if (!readable(a->dtype) || !readable(b->dtype)) {
        const lc_tensor *t = readable(a->dtype) ? b : a;
        lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "tensor %.80s is %s, which cannot be read "
                "as float32 (no dequantizer)", t->name, lc_dtype_name(t->dtype));
        lc_err_context(err, t == a ? pg->src->path : pg->dst->path, t->name);
        return LC_E_UNSUPPORTED;
    }
    const lc_vf_side *src = pg->src, *dst = pg->dst;
    if (row && (row->flags & (LC_AT_ROPE_Q | LC_AT_ROPE_K)) && interleaved(src) != interleaved(dst)) {
        const lc_hparams *hp = src->have_hp ? &src->hp : &dst->hp;
        uint64_t rows, cols;
        p->heads = lc_arch_rope_heads(row, hp);
        lc_vf_matrix(b, true, &rows, &cols);
        if (p->heads && b->ndim <= 2 && rows % (2ull * p->heads) == 0) {
            p->permuted = true;
            p->perm_inverse = interleaved(src);   /* view.h: forward is halves -> pairs */
        } else {
            p->heads = 0;
        }
    }
    return LC_OK;
}

/* ---- views ---- */

/* Expert e's [rows, cols] of stack t: [expert, parts x rows, cols] holding `parts`
 * matrices per expert, this one part `part`. LC_E_MISMATCH when t is no such stack. */
static lc_code piece(pairing *pg, const lc_vf_side *side, const lc_tensor *t, uint32_t e,
                     uint32_t part, uint32_t parts, const lc_tensor **out, lc_error *err) {
    if (t->ndim != 3 || t->shape[0] <= e || t->shape[1] % parts != 0 ||
        t->nbytes % ((uint64_t)t->shape[0] * parts) != 0) {
        lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "tensor %.80s is not a stack of at least %"
                PRIu32 " experts [expert, rows, cols]", t->name, e + 1);
        lc_err_context(err, side->path, t->name);
        return LC_E_MISMATCH;
    }
    char name[200];
    /* both sides' stacks may have one name (two GGUFs): SRC's pieces are told apart */
    const char *mark = side == pg->src && lc_model_find_tensor(pg->dst->views, t->name)
                     ? " (SRC)" : "";
    if (parts > 1)
        snprintf(name, sizeof name, "%s[%" PRIu32 "].%" PRIu32 "%s", t->name, e, part, mark);
    else
        snprintf(name, sizeof name, "%s[%" PRIu32 "]%s", t->name, e, mark);
    const uint64_t each = t->nbytes / t->shape[0] / parts;
    const uint64_t shape[2] = { t->shape[1] / parts, t->shape[2] };
    lc_tensor *v;
    LC_TRY(lc_model_add_tensor(pg->r->derived, name, t->dtype, 2, shape, &v, err));
    LC_TRY(lc_view_strided(v, t, ((uint64_t)e * parts + part) * each, each, each, err));
    *out = v;
    return LC_OK;
}

/* t in GGUF's form for a gemma norm: t + 1 in float32 (rounded through float16 for a
 * float16 t, as the converter adds in t's dtype). */
static lc_code plus_one(pairing *pg, const lc_tensor *t, const lc_tensor **out, lc_error *err) {
    char name[200];
    snprintf(name, sizeof name, "%s + 1", t->name);
    lc_tensor *v;
    LC_TRY(lc_model_add_tensor(pg->r->derived, name, LC_DT_F32, t->ndim, t->shape, &v, err));
    LC_TRY(lc_view_offset(v, t, 1.0f, t->dtype == LC_DT_F16 ? LC_DT_F16 : LC_DT_F32, err));
    *out = v;
    return LC_OK;
}

static float neg_exp(float x) { return -expf(x); }

/* t (in transformers' spelling) as the converter writes it in GGUF: value heads tiled,
 * dimensions of 1 dropped, + 1 (gemma's norms) or -exp (A_log). */
static lc_code gguf_form(pairing *pg, const lc_tensor *t, const lc_arch_tensor *row,
                         const lc_tensor **out, lc_error *err) {
    const lc_hparams *hp = pg->src->have_hp ? &pg->src->hp : &pg->dst->hp;
    char name[220];
    lc_tensor *v;
    lc_arch_swap sw;
    *out = t;
    if (lc_arch_vreorder(row, hp, t, &sw)) {
        snprintf(name, sizeof name, "%s (value heads tiled)", t->name);
        LC_TRY(lc_model_add_tensor(pg->r->derived, name, t->dtype, t->ndim, t->shape, &v, err));
        LC_TRY(lc_view_swap(v, *out, sw.first, sw.outer, sw.a, sw.b, sw.unit, err));
        *out = v;
    }
    if ((row->flags & LC_AT_SQUEEZE) && t->ndim > 2) {
        uint64_t shape[LC_MAX_DIMS];
        uint32_t nd = 0;
        for (uint32_t i = 0; i < t->ndim; i++)
            if (t->shape[i] != 1)
                shape[nd++] = t->shape[i];
        snprintf(name, sizeof name, "%s (squeezed)", t->name);
        LC_TRY(lc_model_add_tensor(pg->r->derived, name, t->dtype, nd, shape, &v, err));
        LC_TRY(lc_view_strided(v, *out, 0, v->nbytes, v->nbytes, err));
        *out = v;
    }
    if (row->flags & LC_AT_NORM_SHIFT)
        return plus_one(pg, *out, out, err);
    if (row->flags & LC_AT_NEG_EXP) {
        const lc_tensor *w = *out;
        snprintf(name, sizeof name, "-exp(%s)", t->name);
        LC_TRY(lc_model_add_tensor(pg->r->derived, name, LC_DT_F32, w->ndim, w->shape, &v, err));
        LC_TRY(lc_view_apply(v, w, neg_exp, w->dtype == LC_DT_F16 ? LC_DT_F16 : LC_DT_F32,
                             err));
        *out = v;
    }
    return LC_OK;
}

static lc_code missing(const lc_vf_side *dst, const char *name, const char *src_name,
                       lc_error *err) {
    lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "DST has no %.80s (SRC's %.80s)", name, src_name);
    lc_err_context(err, dst->path, name);
    return LC_E_MISMATCH;
}

/* ---- one SRC tensor ---- */

/* The expert count both sides are read with. */
static uint32_t n_experts(const pairing *pg) {
    return pg->src->have_hp ? pg->src->hp.expert_count : pg->dst->hp.expert_count;
}

/* Every expert of SRC tensor t (hit h: one expert's, a stack, or a fused stack's part)
 * against DST's piece of the same expert. */
static lc_code pair_experts(pairing *pg, const lc_tensor *t, const lc_arch_hit *h,
                            lc_error *err) {
    const lc_vf_side *src = pg->src, *dst = pg->dst;
    const lc_arch_tensor *row = h->row;
    const uint32_t E = n_experts(pg);
    const uint32_t lo = h->expert != UINT32_MAX ? h->expert : 0;
    const uint32_t hi = h->expert != UINT32_MAX ? h->expert + 1 : E;
    const char *dpat = dst->spelling == LC_SPELL_HF ? row->hf : dst->spelling == LC_SPELL_META
                       ? row->meta : row->gguf;
    const bool dst_per_expert = dpat && strstr(dpat, "%e");
    char name[256];
    const lc_tensor *stack = NULL;
    uint32_t dpart = 0, dparts = 1;
    if (!dst_per_expert) {
        /* DST's stack: its own spelling, else transformers 5's fused one */
        if (dpat && lc_arch_name(row, dst->spelling, h->layer, name, sizeof name, NULL) == LC_OK)
            stack = lc_model_find_tensor(dst->views, name);
        if (!stack && dst->spelling == LC_SPELL_HF &&
            lc_arch_name_fused(row, h->layer, name, sizeof name, NULL) == LC_OK) {
            stack = lc_model_find_tensor(dst->views, name);
            dpart = row->part;
            dparts = row->parts ? row->parts : 1;
        }
        if (!stack)
            return missing(dst, name, t->name, err);
        LC_TRY(mark_used(pg, stack, err));
    }
    for (uint32_t e = lo; e < hi; e++) {
        const lc_tensor *a = t, *b;
        if (h->expert == UINT32_MAX)
            LC_TRY(piece(pg, src, t, e, h->fused ? row->part : 0,
                         h->fused && row->parts ? row->parts : 1, &a, err));
        if (dst_per_expert) {
            lc_arch_name_expert(row, dst->spelling, h->layer, e, name, sizeof name, NULL);
            const lc_tensor *u = lc_model_find_tensor(dst->views, name);
            if (!u)
                return missing(dst, name, a->name, err);
            LC_TRY(mark_used(pg, u, err));
            b = u;
        } else {
            LC_TRY(piece(pg, dst, stack, e, dpart, dparts, &b, err));
        }
        LC_TRY(add_pair(pg, a, b, t, dst_per_expert ? b : stack, row, h->layer, e, err));
    }
    return LC_OK;
}

/* SRC tensor t of row h->row (not experts) against DST's tensor of the same row. */
static lc_code pair_one(pairing *pg, const lc_tensor *t, const lc_arch_hit *h, lc_error *err) {
    const lc_vf_side *src = pg->src, *dst = pg->dst;
    const lc_arch_tensor *row = h->row;
    char name[256], alias[256];
    snprintf(name, sizeof name, "%s", t->name);
    if (row && lc_arch_name(row, dst->spelling, h->layer, name, sizeof name, NULL) != LC_OK)
        snprintf(name, sizeof name, "%s", t->name);
    /* the prediction layers under transformers' mtp.* names */
    if (row && dst->spelling == LC_SPELL_HF && dst->arch &&
        lc_arch_alias_out(dst->arch, lc_arch_own_layers(&dst->hp), name, alias, sizeof alias))
        snprintf(name, sizeof name, "%s", alias);
    const lc_tensor *u = lc_model_find_tensor(dst->views, name);
    if (!u)
        return missing(dst, name, t->name, err);
    LC_TRY(mark_used(pg, u, err));
    const lc_tensor *a = t, *b = u;
    /* the side in transformers' (or Meta's) spelling gets what the converter does to it:
     * gemma's + 1, qwen35's reorder, -exp and squeeze */
    if (row && (src->spelling == LC_SPELL_GGUF) != (dst->spelling == LC_SPELL_GGUF)) {
        if (src->spelling != LC_SPELL_GGUF)
            LC_TRY(gguf_form(pg, t, row, &a, err));
        else
            LC_TRY(gguf_form(pg, u, row, &b, err));
    }
    return add_pair(pg, a, b, t, u, row, h->layer, UINT32_MAX, err);
}

static int by_ptr(const void *x, const void *y) {
    const uintptr_t a = (uintptr_t)*(const lc_tensor *const *)x;
    const uintptr_t b = (uintptr_t)*(const lc_tensor *const *)y;
    return a < b ? -1 : a > b;
}

lc_code lc_vf_pair_up(const lc_vf_side *src, const lc_vf_side *dst, lc_vf_tensors *r,
                      lc_error *err) {
    const lc_arch *a = src->arch;
    pairing pg = { .src = src, .dst = dst, .r = r };
    lc_code rc = LC_OK;
    if (!(r->derived = lc_model_new()))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (size_t i = 0; i < lc_model_tensor_count(src->views) && rc == LC_OK; i++) {
        const lc_tensor *t = lc_model_tensor(src->views, i);
        lc_arch_hit h = { .row = NULL, .layer = UINT32_MAX, .expert = UINT32_MAX };
        const lc_arch_tensor *after = NULL;
        bool any = false;
        char alias[256];
        const char *name = a && src->spelling == LC_SPELL_HF &&
                           lc_arch_alias_in(a, lc_arch_own_layers(&src->hp), t->name, alias,
                                            sizeof alias) ? alias : t->name;
        if (a && src->spelling == LC_SPELL_HF && lc_arch_multimodal(t->name)) {
            r->n_skipped++;                 /* a vision or audio tower's */
            append(r->skipped, sizeof r->skipped, t->name);
            continue;
        }
        while (rc == LC_OK && a && lc_arch_lookup(a, src->spelling, name, after, &h)) {
            after = h.row;
            any = true;
            if ((h.row->flags & LC_AT_COMPUTED) || !h.row->gguf) {
                r->n_skipped++;
                append(r->skipped, sizeof r->skipped, t->name);
            } else if (h.row->flags & LC_AT_EXPERTS) {
                rc = pair_experts(&pg, t, &h, err);
            } else {
                rc = pair_one(&pg, t, &h, err);
            }
            if (!h.fused)
                break;
        }
        if (rc == LC_OK && !any) {              /* compared by name */
            h = (lc_arch_hit){ .row = NULL, .layer = UINT32_MAX, .expert = UINT32_MAX };
            rc = pair_one(&pg, t, &h, err);
        }
    }
    /* DST's tensors no pair reads, but those the family computes or drops. */
    if (rc == LC_OK && pg.n_used)
        qsort(pg.used, pg.n_used, sizeof *pg.used, by_ptr);
    for (size_t i = 0; rc == LC_OK && i < lc_model_tensor_count(dst->views); i++) {
        const lc_tensor *u = lc_model_tensor(dst->views, i);
        lc_arch_hit h;
        char alias[256];
        const char *name = a && dst->spelling == LC_SPELL_HF &&
                           lc_arch_alias_in(a, lc_arch_own_layers(&dst->hp), u->name, alias,
                                            sizeof alias) ? alias : u->name;
        if (a && dst->spelling == LC_SPELL_HF && lc_arch_multimodal(u->name))
            continue;
        if (a && lc_arch_lookup(a, dst->spelling, name, NULL, &h) &&
            ((h.row->flags & LC_AT_COMPUTED) || !h.row->gguf))
            continue;
        if (pg.n_used && bsearch(&u, pg.used, pg.n_used, sizeof *pg.used, by_ptr))
            continue;
        r->n_extra++;
        append(r->extra, sizeof r->extra, u->name);
    }
    lc_free(pg.used);
    return rc;
}
