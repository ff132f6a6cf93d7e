/* hf/to_gguf_tensors.c: the tensor half of HF (or Meta) -> GGUF (to_gguf_impl.h): each
 * source tensor through its family's row (arch/) to the GGUF tensor the converter
 * writes, lazily.
 *
 * What a row may ask for, besides a rename and a cast:
 *   - RoPE rows of a NORM family read from transformers' half-split order: Q/K permuted;
 *   - LC_AT_EXPERTS rows spelled one expert per tensor ("...experts.%e.gate_proj"): the
 *     expert_count sources of a layer stacked along a new outermost dimension, written
 *     where the last of the layer's per-expert sources is, the layer's stacked rows in
 *     table order (convert_hf_to_gguf.py merges them when it has seen them all);
 *   - transformers 5's fused spelling (hf_fused, "mlp.experts.gate_up_proj" [expert,
 *     2 ff, embd]): each part written where the fused tensor is, in part order;
 *   - LC_AT_NORM_SHIFT: + 1, added in float32 after widening (the converter widens bf16
 *     to float32 first; float16 stays float16, so that sum is rounded to float16);
 *   - LC_AT_VOCAB_ROWS: rows past vocab_size cut;
 *   - LC_AT_KEEP_F32 (the router) and 1-D tensors and norms: F32;
 *   - qwen35's recurrent layers: LC_AT_NEG_EXP (-exp, in float32 after widening, as
 *     Qwen3NextModel.modify_tensors), LC_AT_SQUEEZE (conv1d [channels, 1, kernel] ->
 *     [channels, kernel]) and LC_VR_* (value heads grouped -> tiled, lc_view_swap);
 *   - the layers past the model's own (mtp.*) named through the family's aliases.
 * Computed tensors come first: llama3's rope_freqs.weight, phi3's rope_factors_long and
 * _short (generate_extra_tensors runs before the model's own tensors). */
#include "hf/to_gguf_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/convert.h"
#include "libconvert/view.h"
#include "quant/chain.h"
#include "quant/device.h"

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* convert_hf_to_gguf.py's choice per tensor: F32 for 1-D, norms, the router and anything
 * not a ".weight"; else the file type, falling back to F16 when a row is not whole
 * blocks (gguf-py's QuantError). */
static lc_dtype pick_dtype(const lc_arch_tensor *row, const char *gname, uint32_t ndim,
                           const uint64_t *shape, lc_dtype ftype) {
    if (ndim <= 1 || ends_with(gname, "_norm.weight") || !ends_with(gname, ".weight") ||
        (row->flags & LC_AT_KEEP_F32))
        return LC_DT_F32;
    if (shape[ndim - 1] % lc_dtype_get(ftype)->block_size != 0)
        return LC_DT_F16;
    return ftype;
}

void lc_hf_plan_free(lc_hf_plan *p) {
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        lc_free(p->rows[i].src);
        lc_free(p->rows[i].gguf);
    }
    lc_free(p->rows);
    memset(p, 0, sizeof *p);
}

/* The plan's row for GGUF tensor g (t), read from source hf (or computed as it says). */
static lc_code plan_row(const lc_tg *c, const char *hf, const char *g, lc_dtype from,
                        lc_dtype to, const lc_tensor *t, bool computed, lc_error *err) {
    lc_hf_plan *p = c->o->plan;
    if (!p)
        return LC_OK;
    if (p->n == p->cap) {
        const size_t cap = p->cap ? 2 * p->cap : 64;
        lc_hf_plan_row *rows = lc_realloc_array(p->rows, cap, sizeof *rows);
        if (!rows)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        p->rows = rows;
        p->cap = cap;
    }
    lc_hf_plan_row *r = &p->rows[p->n];
    *r = (lc_hf_plan_row){ .from = from, .to = to, .ndim = t->ndim, .nbytes = t->nbytes,
                           .computed = computed };
    memcpy(r->shape, t->shape, sizeof r->shape);
    r->src = lc_strdup(hf);
    r->gguf = lc_strdup(g);
    if (!r->src || !r->gguf) {
        lc_free(r->src);
        lc_free(r->gguf);
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    p->n++;
    return LC_OK;
}

static float neg_exp(float x) { return -expf(x); }

/* s with what its row asks before a cast: value heads reordered (a swap view), its
 * dimensions of 1 dropped (a whole-tensor strided view), both named g in views. */
static lc_code reshape_source(lc_tg *c, const lc_tensor *s, const lc_arch_tensor *row,
                              const char *g, const lc_tensor **from, lc_error *err) {
    lc_arch_swap sw;
    lc_tensor *t;
    char name[200];
    if (lc_arch_vreorder(row, &c->cfg.hp, s, &sw)) {
        /* named apart from the squeezed view below (a model's names are unique) */
        snprintf(name, sizeof name, "%s (value heads tiled)", g);
        LC_TRY(lc_model_add_tensor(c->views, name, s->dtype, s->ndim, s->shape, &t, err));
        LC_TRY(lc_view_swap(t, *from, sw.first, sw.outer, sw.a, sw.b, sw.unit, err));
        *from = t;
    }
    if ((row->flags & LC_AT_SQUEEZE) && s->ndim > 1) {
        uint64_t shape[LC_MAX_DIMS];
        uint32_t nd = 0;
        for (uint32_t i = 0; i < s->ndim; i++)
            if (s->shape[i] != 1)
                shape[nd++] = s->shape[i];
        if (nd != s->ndim) {
            LC_TRY(lc_model_add_tensor(c->views, g, s->dtype, nd, shape, &t, err));
            LC_TRY(lc_view_strided(t, *from, 0, t->nbytes, t->nbytes, err));
            *from = t;
        }
    }
    return LC_OK;
}

/* quant/chain.h's one step for a tensor of out: into out under its GGUF name (the cast
 * to F32 before a quantizer is applied to the work tensor itself). */
typedef struct to_out {
    lc_model   *out;
    const char *name;
} to_out;

static lc_code add_out(void *ctx, lc_qchain_step step, const lc_tensor *like, lc_dtype dt,
                       lc_tensor **t, lc_error *err) {
    const to_out *o = ctx;
    (void)step;
    return lc_model_add_tensor(o->out, o->name, dt, like->ndim, like->shape, t, err);
}

/* Adds GGUF tensor g reading source s (its rows permuted when the family's RoPE style
 * differs from the source's), in dtype `to`. */
static lc_code add_tensor(lc_tg *c, const lc_tensor *s, const lc_arch_tensor *row, const char *g,
                          lc_dtype to, lc_error *err) {
    /* transformers stores Q/K rows half-split (NEOX order); Meta stores them as GGUF's
     * NORM-RoPE families want them. */
    const bool permute = c->spelling == LC_SPELL_HF && c->cfg.arch->rope == LC_ROPE_NORM;
    const uint32_t heads = permute ? lc_arch_rope_heads(row, &c->cfg.hp) : 0;
    const bool quant = lc_dtype_is_quant(to);
    const bool shift = row->flags & LC_AT_NORM_SHIFT, nexp = row->flags & LC_AT_NEG_EXP;
    /* On a device: the same conversion, the same bytes (quant/device.h). */
    const bool dev = !shift && !nexp && c->o->device &&
                     lc_qdev_supports(c->o->device, s->dtype, to);
    lc_tensor *t;
    const lc_tensor *from = s, *done;
    if (c->weights)
        LC_TRY(lc_hf_weights_view(c->weights, c->views, s, &from, err));
    LC_TRY(reshape_source(c, s, row, g, &from, err));
    s = from->ndim != s->ndim ? from : s;   /* its shape from here on */
    if (shift || nexp) {
        /* a norm or A_log: F32 out (pick_dtype), computed in float32 (float16 sources
         * in float16, as torch does) */
        const lc_dtype round = s->dtype == LC_DT_F16 ? LC_DT_F16 : LC_DT_F32;
        LC_TRY(lc_model_add_tensor(c->out, g, LC_DT_F32, s->ndim, s->shape, &t, err));
        if (shift)
            LC_TRY(lc_view_offset(t, from, 1.0f, round, err));
        else
            LC_TRY(lc_view_apply(t, from, neg_exp, round, err));
        LC_TRY(lc_tensor_cast(t, to, err));
        done = t;
        goto added;
    }
    /* The rows in GGUF's order, then the type (quant/chain.h): cast where they are (so a
     * plain type is the tensor in out), or, for a block type or on a device, converted
     * into out. bf16 -> bf16 and f16 -> f16 are copies: nothing is cast. */
    LC_TRY(lc_model_add_tensor(quant || dev ? c->work : c->out, g, s->dtype, s->ndim, s->shape,
                               &t, err));
    if (heads)
        LC_TRY(lc_view_heads(t, from, heads, false, err));
    else
        LC_TRY(lc_view_forward(t, from, err));
    to_out st = { .out = c->out, .name = g };
    const lc_qchain qc = { .add = add_out, .ctx = &st, .dev = dev ? c->o->device : NULL };
    LC_TRY(lc_qchain_from(&qc, t, to, &done, err));
added:;
    uint64_t numel = 0;
    lc_tensor_numel(done, &numel);
    c->params += numel;
    /* gguf-py's size label counts a tensor as experts by its name */
    if (strstr(g, "_exps.") && done->ndim >= 3)
        c->expert_params += numel / done->shape[0];
    return plan_row(c, s->name, g, s->dtype, to, done, false, err);
}

/* ---- computed tensors ---- */

/* F32 tensor g of n values v (owned by out from here on, also on failure). */
static lc_code add_computed(lc_tg *c, const char *g, float *v, uint64_t n, const char *what,
                            lc_error *err) {
    lc_code rc = lc_model_own(c->out, v, lc_free, err);
    lc_tensor *t;
    const uint64_t shape[1] = { n };
    if (rc == LC_OK)
        rc = lc_model_add_tensor(c->out, g, LC_DT_F32, 1, shape, &t, err);
    if (rc != LC_OK)
        return rc;
    t->data = (const uint8_t *)v;
    c->params += n;
    return plan_row(c, what, g, LC_DT_F32, LC_DT_F32, t, true, err);
}

static lc_code add_row_values(lc_tg *c, lc_role role, const float *src, uint64_t n,
                              const char *what, lc_error *err) {
    const lc_arch_tensor *row = lc_arch_role(c->cfg.arch, role);
    if (!row)
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "%s is not supported for %s", what,
                       c->cfg.arch->name);
    float *v = lc_malloc((size_t)n * sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (src)
        memcpy(v, src, (size_t)n * sizeof *v);
    else
        c->cfg.arch->hooks.rope_freqs(&c->cfg.hp, v, n);
    return add_computed(c, row->gguf, v, n, what, err);
}

static lc_code add_computed_tensors(lc_tg *c, lc_error *err) {
    const lc_hparams *hp = &c->cfg.hp;
    if (hp->rope_scaling == LC_ROPE_SCALING_LLAMA3) {
        if (!c->cfg.arch->hooks.rope_freqs)
            return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "llama3 rope scaling is not "
                           "supported for %s", c->cfg.arch->name);
        LC_TRY(add_row_values(c, LC_ROLE_ROPE_FREQS, NULL, hp->head_dim / 2,
                              "(computed: llama3 rope factors)", err));
    }
    if (hp->rope_prop_pairs) {
        /* gemma4's full layers rotate a leading share of each half as NEOX pairs;
         * llama.cpp rotates them all, so the rest get a frequency factor of 1e30 (an
         * angle of ~0). */
        const uint64_t n = hp->head_dim / 2;
        float v[LC_ARCH_MAX_ROPE_FACTORS];
        if (n > LC_ARCH_MAX_ROPE_FACTORS || hp->rope_prop_pairs > n)
            return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "proportional RoPE over %u "
                           "of %" PRIu64 " pairs is not supported", hp->rope_prop_pairs, n);
        for (uint64_t i = 0; i < n; i++)
            v[i] = i < hp->rope_prop_pairs ? 1.0f : 1e30f;
        LC_TRY(add_row_values(c, LC_ROLE_ROPE_FREQS, v, n,
                              "(computed: proportional rope factors)", err));
    }
    if (hp->rope_scaling == LC_ROPE_SCALING_LONGROPE) {
        LC_TRY(add_row_values(c, LC_ROLE_ROPE_FACTORS_LONG, hp->rope_long_factors,
                              hp->n_rope_factors, "(config: rope long_factor)", err));
        LC_TRY(add_row_values(c, LC_ROLE_ROPE_FACTORS_SHORT, hp->rope_short_factors,
                              hp->n_rope_factors, "(config: rope short_factor)", err));
    }
    return LC_OK;
}

/* ---- where a source goes ---- */

/* The hits of source s (a fused tensor has one per part) into hits[0..*n), checked
 * against the config's layer and expert counts; dropped and computed rows left out. */
static lc_code resolve(lc_tg *c, const lc_tensor *s, lc_arch_hit *hits, size_t *n,
                       lc_error *err) {
    const lc_arch *a = c->cfg.arch;
    const lc_hparams *hp = &c->cfg.hp;
    lc_arch_hit h;
    const lc_arch_tensor *after = NULL;
    bool any = false;
    char alias[200];
    /* the prediction layers' spelling ("mtp.fc.weight") as the rows know it */
    const char *name = c->spelling == LC_SPELL_HF &&
                       lc_arch_alias_in(a, lc_arch_own_layers(hp), s->name, alias, sizeof alias)
                     ? alias : s->name;
    *n = 0;
    if (c->spelling == LC_SPELL_HF && lc_arch_multimodal(s->name))
        return LC_OK;                       /* a vision or audio tower's: not the text model */
    while (lc_arch_lookup(a, c->spelling, name, after, &h)) {
        after = h.row;
        any = true;
        if (h.layer != UINT32_MAX && h.layer >= hp->block_count) {
            lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "tensor %.80s is in layer %" PRIu32
                    " but %s has %s %" PRIu32, s->name, h.layer, c->cfg_file,
                    c->spelling == LC_SPELL_META ? "n_layers" : "num_hidden_layers",
                    hp->block_count);
            lc_err_context(err, NULL, s->name);
            return LC_E_MALFORMED;
        }
        if ((h.row->flags & LC_AT_EXPERTS) && hp->expert_count == 0)
            return lc_fail_in(err, LC_E_MISMATCH, LC_NO_OFFSET, s->name, "tensor %.80s "
                              "holds experts but %s declares none", s->name, c->cfg_file);
        if (h.expert != UINT32_MAX && h.expert >= hp->expert_count) {
            lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "tensor %.80s is expert %" PRIu32 " but "
                    "%s declares %" PRIu32 " experts", s->name, h.expert, c->cfg_file,
                    hp->expert_count);
            lc_err_context(err, NULL, s->name);
            return LC_E_MISMATCH;
        }
        /* Dropped (transformers' cached inverse frequencies) or made by a hook. */
        if (!h.row->gguf || (h.row->flags & LC_AT_COMPUTED))
            continue;
        if (*n == 4)
            break;
        hits[(*n)++] = h;
        if (!h.fused)
            break;          /* one tensor, one row */
    }
    if (!any)
        return lc_fail_in(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, s->name, "tensor %.100s has "
                          "no GGUF name for architecture %s", s->name, a->name);
    return LC_OK;
}

/* Source s has the shape hit h asks for. */
static lc_code check_source_shape(lc_tg *c, const lc_arch_hit *h, const lc_tensor *s,
                                  lc_error *err) {
    char have[96], want[96];
    if (lc_arch_hit_shape_is(h, &c->cfg.hp, s, want, sizeof want))
        return LC_OK;
    lc_shape_format(s, have, sizeof have);
    return lc_fail_in(err, LC_E_MISMATCH, LC_NO_OFFSET, s->name, "tensor %.80s has shape %s but "
                      "%s implies %s", s->name, have, c->cfg_file, want);
}

/* ---- experts spelled one per tensor ---- */

static size_t exp_index(const lc_tg_experts *e, const lc_arch_tensor *row) {
    for (size_t i = 0; i < e->n_rows; i++)
        if (e->row[i] == row)
            return i;
    return SIZE_MAX;
}

/* The stacked rows the source spells one expert per tensor. */
static void experts_init(lc_tg *c) {
    lc_tg_experts *e = &c->exps;
    const lc_arch *a = c->cfg.arch;
    for (size_t i = 0; i < a->n_tensors; i++) {
        const lc_arch_tensor *row = &a->tensors[i];
        const char *p = c->spelling == LC_SPELL_HF ? row->hf : row->meta;
        if ((row->flags & LC_AT_EXPERTS) && p && strstr(p, "%e") &&
            e->n_rows < sizeof e->row / sizeof e->row[0])
            e->row[e->n_rows++] = row;
    }
    e->n_expert = c->cfg.hp.expert_count;
}

/* The slots, made when the first tensor of one expert is met (a fused layout needs
 * none). Every slot is a tensor of the checkpoint's, but for layers without experts
 * (a model may mix dense and MoE layers): the config's counts are held to that. */
static lc_code experts_alloc(lc_tg *c, lc_error *err) {
    lc_tg_experts *e = &c->exps;
    const uint32_t L = c->cfg.hp.block_count;
    const uint64_t slots = (uint64_t)L * e->n_rows * e->n_expert;
    const size_t T = lc_model_tensor_count(c->in);
    if (e->slot)
        return LC_OK;
    if (slots > (uint64_t)T * 16 + 4096)
        return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "%s declares %" PRIu32 " layers of %"
                       PRIu32 " experts: more expert tensors than the checkpoint's %zu tensors "
                       "could hold", c->cfg_file, L, e->n_expert, T);
    if (!(e->slot = lc_calloc((size_t)slots, sizeof *e->slot)) ||
        !(e->count = lc_calloc(L, sizeof *e->count)) || !(e->last = lc_calloc(L, sizeof *e->last)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu32 " layers of %"
                       PRIu32 " experts", L, e->n_expert);
    return LC_OK;
}

static const lc_tensor **slot_of(const lc_tg_experts *e, uint32_t layer, size_t r, uint32_t x) {
    return &e->slot[((size_t)layer * e->n_rows + r) * e->n_expert + x];
}

/* Every stacked row of every layer that has one has all its experts. */
static lc_code experts_check(lc_tg *c, lc_error *err) {
    const lc_tg_experts *e = &c->exps;
    char name[160];
    for (uint32_t l = 0; e->slot && l < c->cfg.hp.block_count; l++) {
        if (e->count[l] == 0)
            continue;           /* not a MoE layer, or its experts are fused */
        for (size_t r = 0; r < e->n_rows; r++)
            for (uint32_t x = 0; x < e->n_expert; x++) {
                if (*slot_of(e, l, r, x))
                    continue;
                lc_arch_name_expert(e->row[r], c->spelling, l, x, name, sizeof name, NULL);
                return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "layer %" PRIu32 " has no "
                               "%.100s: expert %" PRIu32 " of the %" PRIu32 " %s declares is "
                               "missing", l, name, x, e->n_expert, c->cfg_file);
            }
        for (size_t r = 0; r < e->n_rows; r++)
            lc_arch_seen_mark(&c->seen, e->row[r], l);
    }
    return LC_OK;
}

/* Writes layer l's stacked rows: each a stack of its experts' sources. */
static lc_code experts_add(lc_tg *c, uint32_t l, lc_error *err) {
    const lc_tg_experts *e = &c->exps;
    const lc_tensor **from = lc_malloc_array(e->n_expert, sizeof *from);
    if (!from)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_code rc = LC_OK;
    for (size_t r = 0; r < e->n_rows && rc == LC_OK; r++) {
        const lc_tensor *first = *slot_of(e, l, r, 0);
        for (uint32_t x = 0; x < e->n_expert && rc == LC_OK; x++) {
            from[x] = *slot_of(e, l, r, x);
            if (c->weights)
                rc = lc_hf_weights_view(c->weights, c->views, from[x], &from[x], err);
            if (rc == LC_OK && from[x]->dtype != first->dtype)
                rc = lc_fail_in(err, LC_E_MISMATCH, LC_NO_OFFSET, from[x]->name, "tensor "
                                "%.80s has dtype %s; expert 0's has %s", from[x]->name,
                                lc_dtype_name(from[x]->dtype), lc_dtype_name(first->dtype));
        }
        char g[160];
        uint64_t shape[3] = { e->n_expert, first->shape[0], first->shape[1] };
        lc_tensor *stack;
        if (rc == LC_OK)
            rc = lc_arch_name(e->row[r], LC_SPELL_GGUF, l, g, sizeof g, err);
        if (rc == LC_OK)
            rc = lc_model_add_tensor(c->views, g, first->dtype, 3, shape, &stack, err);
        if (rc == LC_OK)
            rc = lc_view_stack(stack, from, e->n_expert, err);
        if (rc == LC_OK)
            rc = add_tensor(c, stack, e->row[r], g,
                            pick_dtype(e->row[r], g, 3, shape, c->ftype), err);
    }
    lc_free(from);
    return rc;
}

/* ---- the passes ---- */

static lc_code check_dtype(const lc_tensor *s, lc_error *err) {
    if (lc_dtype_is_quant(s->dtype) || !lc_convert_supported(s->dtype, LC_DT_F32))
        return lc_fail_in(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, s->name, "tensor %.80s has "
                          "dtype %s, which does not convert to a float", s->name,
                          lc_dtype_name(s->dtype));
    return LC_OK;
}

lc_code lc_tg_check_tensors(lc_tg *c, lc_error *err) {
    const uint32_t n_layers = c->cfg.hp.block_count;
    /* A layer is at least one tensor: more layers than tensors cannot be. */
    if (n_layers > lc_model_tensor_count(c->in))
        return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "%s declares %" PRIu32 " layers but "
                       "the checkpoint has %zu tensors", c->cfg_file, n_layers,
                       lc_model_tensor_count(c->in));
    LC_TRY(lc_arch_seen_init(&c->seen, c->cfg.arch, n_layers, err));
    c->seen.moe = c->cfg.hp.expert_count > 0;
    c->seen.recurrent = c->cfg.hp.ssm_time_step_rank ? c->cfg.hp.recurrent : NULL;
    experts_init(c);
    for (size_t i = 0; i < lc_model_tensor_count(c->in); i++) {
        const lc_tensor *s = lc_model_tensor(c->in, i);
        lc_arch_hit hits[4];
        size_t n;
        LC_TRY(resolve(c, s, hits, &n, err));
        if (n)
            LC_TRY(check_dtype(s, err));
        for (size_t k = 0; k < n; k++) {
            const lc_arch_hit *h = &hits[k];
            LC_TRY(check_source_shape(c, h, s, err));
            if (h->expert == UINT32_MAX) {
                lc_arch_seen_mark(&c->seen, h->row, h->layer);
                continue;
            }
            const size_t r = exp_index(&c->exps, h->row);
            if (r == SIZE_MAX || h->layer == UINT32_MAX)
                return lc_fail_in(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, s->name, "tensor "
                                  "%.80s: one expert's tensor of a row that is not stacked",
                                  s->name);
            LC_TRY(experts_alloc(c, err));
            *slot_of(&c->exps, h->layer, r, h->expert) = s;
            c->exps.count[h->layer]++;
            c->exps.last[h->layer] = i;
        }
    }
    LC_TRY(experts_check(c, err));
    return lc_arch_seen_check(&c->seen, c->spelling, err);
}

/* Part h->row->part of the fused tensor s: a strided view named as in GGUF. */
static lc_code add_part(lc_tg *c, const lc_tensor *s, const lc_tensor *from,
                        const lc_arch_hit *h, const char *g, lc_error *err) {
    const uint32_t parts = h->row->parts ? h->row->parts : 1;
    uint64_t shape[3];
    memcpy(shape, s->shape, sizeof shape);
    shape[1] /= parts;
    const uint64_t piece = s->nbytes / s->shape[0] / parts;
    lc_tensor *t;
    LC_TRY(lc_model_add_tensor(c->views, g, s->dtype, s->ndim, shape, &t, err));
    LC_TRY(lc_view_strided(t, from, h->row->part * piece, piece, parts * piece, err));
    return add_tensor(c, t, h->row, g, pick_dtype(h->row, g, s->ndim, shape, c->ftype), err);
}

/* gemma's embedding: the rows past vocab_size cut (a prefix of the bytes). */
static lc_code add_vocab_rows(lc_tg *c, const lc_tensor *s, const lc_arch_hit *h,
                              const char *g, lc_error *err) {
    const lc_tensor *from = s;
    if (c->weights)
        LC_TRY(lc_hf_weights_view(c->weights, c->views, s, &from, err));
    uint64_t shape[2] = { c->cfg.hp.vocab_size, s->shape[1] };
    lc_tensor *t;
    LC_TRY(lc_model_add_tensor(c->views, g, s->dtype, 2, shape, &t, err));
    LC_TRY(lc_view_strided(t, from, 0, t->nbytes, t->nbytes, err));
    return add_tensor(c, t, h->row, g, pick_dtype(h->row, g, 2, shape, c->ftype), err);
}

lc_code lc_tg_add_tensors(lc_tg *c, lc_error *err) {
    LC_TRY(add_computed_tensors(c, err));
    for (size_t i = 0; i < lc_model_tensor_count(c->in); i++) {
        const lc_tensor *s = lc_model_tensor(c->in, i);
        lc_arch_hit hits[4];
        size_t n;
        const lc_tensor *from = NULL;       /* a fused source's one view for its parts */
        LC_TRY(resolve(c, s, hits, &n, err));
        for (size_t k = 0; k < n; k++) {
            const lc_arch_hit *h = &hits[k];
            char g[160];
            if (h->expert != UINT32_MAX) {
                if (c->exps.last[h->layer] == i)
                    LC_TRY(experts_add(c, h->layer, err));
                continue;
            }
            LC_TRY(lc_arch_name(h->row, LC_SPELL_GGUF, h->layer, g, sizeof g, err));
            if (h->fused) {
                if (!from) {
                    from = s;
                    if (c->weights)
                        LC_TRY(lc_hf_weights_view(c->weights, c->views, s, &from, err));
                }
                LC_TRY(add_part(c, s, from, h, g, err));
            }
            else if ((h->row->flags & LC_AT_VOCAB_ROWS) && s->ndim == 2 &&
                     s->shape[0] > c->cfg.hp.vocab_size)
                LC_TRY(add_vocab_rows(c, s, h, g, err));
            else
                LC_TRY(add_tensor(c, s, h->row, g,
                                  pick_dtype(h->row, g, s->ndim, s->shape, c->ftype), err));
        }
    }
    return LC_OK;
}

void lc_tg_free(lc_tg *c) {
    lc_arch_seen_free(&c->seen);
    lc_free(c->exps.slot);
    lc_free(c->exps.count);
    lc_free(c->exps.last);
    memset(&c->exps, 0, sizeof c->exps);
}
