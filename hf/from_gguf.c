/* hf/from_gguf.c: the way back, a GGUF model -> Hugging Face tensors (see hf.h).
 *
 * Names come from the family's table (arch/) read right to left; rows RoPE rotates
 * get the inverse permutation when the family runs NORM RoPE (transformers stores
 * half-split rows); tensors with no transformers name (rope_freqs.weight) are
 * dropped; block types are dequantized; stacks of experts are written one tensor per
 * expert (the Hub's layout, which transformers 4 and 5 both load); gemma's norms get
 * their + 1 taken off (in float32, then cast back to the GGUF's dtype or --dtype);
 * fused tensors stay fused (phi3's qkv_proj and gate_up_proj are transformers' own);
 * qwen35's recurrent layers get their value heads back in grouped order, A_log back
 * from -exp(A_log) (log(-x) in float32), the conv1d weight its [channels, 1, kernel]
 * shape, and the prediction layers their mtp.* names. */
#include "hf/hf.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "arch/arch.h"
#include "libconvert/view.h"
#include "quant/chain.h"
#include "quant/quant.h"

static float log_neg(float x) { return logf(-x); }

/* What a row undoes besides renaming (see the top). */
typedef struct back_ops {
    uint32_t heads;         /* > 0: the Q/K rows' inverse permutation */
    float shift;            /* gemma's norms: minus it */
    bool log_neg;           /* A_log = log(-x) */
    const lc_arch_tensor *row;      /* value heads back to grouped order (LC_VR_*) */
    const lc_hparams *hp;
    bool unsqueeze;         /* [rows, cols] -> [rows, 1, cols] */
} back_ops;

/* Where one output tensor's steps live: each but the last in work under the HF name and
 * a stage mark (the views there have GGUF names; the two spellings never coincide); the
 * last in out under the HF name. */
typedef struct back_steps {
    lc_model   *out, *work;
    const char *hf;
    int         stage, stages;
    lc_tensor  *made;       /* the last step made */
} back_steps;

static lc_code next_step(back_steps *b, lc_dtype dt, uint32_t nd, const uint64_t *shape,
                         lc_tensor **t, lc_error *err) {
    const bool last = ++b->stage == b->stages;
    char name[220];
    snprintf(name, sizeof name, "%s (%d)", b->hf, b->stage);
    LC_TRY(lc_model_add_tensor(last ? b->out : b->work, last ? b->hf : name, dt, nd, shape, t,
                               err));
    b->made = *t;
    return LC_OK;
}

/* quant/chain.h's steps (the dequantizer's): the next stage. */
static lc_code chain_step(void *ctx, lc_qchain_step step, const lc_tensor *like, lc_dtype dt,
                          lc_tensor **t, lc_error *err) {
    (void)step;
    return next_step(ctx, dt, like->ndim, like->shape, t, err);
}

/* One output tensor: s (through a pread view when it is an unchanged file range) ->
 * inverse permutation (heads > 0) -> dequantized -> value heads grouped -> minus
 * `shift` (gemma's norms) or log(-x) -> cast to dtype -> its dimension of 1 back. The
 * dequantizing and the cast are quant/chain.h's, as every converter's. */
static lc_code back_tensor(lc_model *out, lc_model *work, const lc_tensor *s, const char *hf,
                           const back_ops *op, lc_dtype dtype, lc_error *err) {
    const uint32_t heads = op->heads;
    const float shift = op->shift;
    lc_arch_swap sw;
    const bool swap = op->row && lc_arch_vreorder(op->row, op->hp, s, &sw);
    const bool quant = lc_dtype_is_quant(s->dtype);
    lc_tensor *t;
    /* A tensor of a mapped file is read with pread (and copied in the kernel when
     * nothing changes it), so the map's pages never count in our RSS. No map view
     * otherwise: `in` may live in plain memory (lc_gguf_load_mem), which
     * MADV_DONTNEED would zero. */
    const lc_tensor *from = s;
    int fd;
    uint64_t at;
    if (s->data && lc_tensor_file_range(s, &fd, &at)) {
        lc_tensor *v;
        LC_TRY(lc_model_add_tensor(work, s->name, s->dtype, s->ndim, s->shape, &v, err));
        LC_TRY(lc_view_file(v, fd, at, NULL, err));
        from = v;
    }
    if (quant && !lc_dequant_supported(s->dtype))
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "tensor %.80s: no dequantizer "
                       "for %s", s->name, lc_dtype_name(s->dtype));
    const bool elementwise = shift != 0 || op->log_neg;
    back_steps b = { .out = out, .work = work, .hf = hf,
                     .stages = 1 + quant + swap + elementwise + op->unsqueeze };
    const lc_qchain qc = { .add = chain_step, .ctx = &b };
    LC_TRY(next_step(&b, s->dtype, s->ndim, s->shape, &t, err));
    if (heads)
        LC_TRY(lc_view_heads(t, from, heads, true, err));
    else
        LC_TRY(lc_view_forward(t, from, err));
    const lc_tensor *cur = t;
    if (quant)
        LC_TRY(lc_qchain_to(&qc, &cur, LC_DT_F32, err));
    if (swap) {
        lc_arch_vreorder(op->row, op->hp, cur, &sw);    /* units in cur's element size */
        LC_TRY(next_step(&b, cur->dtype, s->ndim, s->shape, &t, err));
        LC_TRY(lc_view_swap(t, cur, sw.first, sw.outer, sw.b, sw.a, sw.unit, err));
        cur = t;
    }
    if (elementwise) {
        LC_TRY(next_step(&b, LC_DT_F32, s->ndim, s->shape, &t, err));
        if (op->log_neg)
            LC_TRY(lc_view_apply(t, cur, log_neg, LC_DT_F32, err));
        else
            LC_TRY(lc_view_offset(t, cur, -shift, LC_DT_F32, err));
        cur = t;
    }
    /* The cast is applied to the last step itself (cur). */
    const lc_dtype to = dtype != LC_DT_INVALID ? dtype : elementwise ? s->dtype : cur->dtype;
    LC_TRY(lc_qchain_from(&qc, b.made, to, &cur, err));
    if (op->unsqueeze && s->ndim == 2) {
        const uint64_t shape[3] = { s->shape[0], 1, s->shape[1] };
        LC_TRY(next_step(&b, cur->dtype, 3, shape, &t, err));
        LC_TRY(lc_view_strided(t, cur, 0, t->nbytes, t->nbytes, err));
    }
    return LC_OK;
}

/* A stack of experts [expert, rows, cols] back to one tensor per expert under the row's
 * per-expert transformers spelling. */
static lc_code back_experts(lc_model *out, lc_model *work, const lc_tensor *s,
                            const lc_arch *a, uint32_t n_own, const lc_arch_tensor *row,
                            uint32_t layer, lc_dtype dtype, lc_error *err) {
    if (s->ndim != 3 || s->shape[0] == 0 || s->nbytes % s->shape[0] != 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "tensor %.80s is not a stack of "
                       "experts [expert, rows, cols]", s->name);
    const uint64_t piece = s->nbytes / s->shape[0];
    for (uint64_t e = 0; e < s->shape[0]; e++) {
        char hf[200], name[200], alias[200];
        LC_TRY(lc_arch_name_expert(row, LC_SPELL_HF, layer, (uint32_t)e, hf, sizeof hf, err));
        if (lc_arch_alias_out(a, n_own, hf, alias, sizeof alias))   /* mtp.* */
            snprintf(hf, sizeof hf, "%s", alias);
        snprintf(name, sizeof name, "%s[%" PRIu64 "]", s->name, e);
        lc_tensor *one;
        LC_TRY(lc_model_add_tensor(work, name, s->dtype, 2, s->shape + 1, &one, err));
        LC_TRY(lc_view_strided(one, s, e * piece, piece, piece, err));
        const back_ops none = { 0 };
        LC_TRY(back_tensor(out, work, one, hf, &none, dtype, err));
    }
    return LC_OK;
}

lc_code lc_hf_from_gguf(lc_model *in, lc_dtype dtype, lc_model **out, lc_error *err) {
    lc_model *m = NULL, *work = NULL;
    const lc_arch *a;
    lc_hparams hp;
    lc_code rc;
    *out = NULL;
    if ((rc = lc_arch_read_keys(in, &a, &hp, err)) != LC_OK)
        goto fail_in;
    if (!(m = lc_model_new()) || !(work = lc_model_new())) {
        lc_model_free(m);
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto fail_in;
    }
    if ((rc = lc_model_own(m, in, (void (*)(void *))lc_model_free, err)) != LC_OK) {
        lc_model_free(work);
        goto fail;
    }
    if ((rc = lc_model_own(m, work, (void (*)(void *))lc_model_free, err)) != LC_OK)
        goto fail;
    for (size_t i = 0; i < lc_model_tensor_count(in) && rc == LC_OK; i++) {
        const lc_tensor *s = lc_model_tensor(in, i);
        uint32_t layer;
        const lc_arch_tensor *row = lc_arch_find(a, LC_SPELL_GGUF, s->name, &layer);
        if (row && (row->flags & LC_AT_EXPERTS) && row->hf) {
            rc = back_experts(m, work, s, a, lc_arch_own_layers(&hp), row, layer, dtype, err);
            if (rc != LC_OK)
                lc_err_context(err, NULL, s->name);
            continue;
        }
        char hf[200], alias[200];
        rc = lc_arch_map(a, LC_SPELL_GGUF, LC_SPELL_HF, s->name, 0, hf, sizeof hf, &row, err);
        if (rc == LC_E_NOTFOUND) {      /* no transformers name: dropped */
            rc = LC_OK;
            continue;
        }
        if (rc != LC_OK)
            break;
        /* the prediction layers under the Hub's mtp.* names */
        if (lc_arch_alias_out(a, lc_arch_own_layers(&hp), hf, alias, sizeof alias))
            snprintf(hf, sizeof hf, "%s", alias);
        const back_ops op = {
            .heads = a->rope == LC_ROPE_NORM ? lc_arch_rope_heads(row, &hp) : 0,
            .shift = row->flags & LC_AT_NORM_SHIFT ? 1.0f : 0.0f,
            .log_neg = row->flags & LC_AT_NEG_EXP, .row = row, .hp = &hp,
            .unsqueeze = row->flags & LC_AT_SQUEEZE,
        };
        rc = back_tensor(m, work, s, hf, &op, dtype, err);
        if (rc != LC_OK)
            lc_err_context(err, NULL, s->name);
    }
    if (rc != LC_OK)
        goto fail;
    *out = m;
    return LC_OK;
fail_in:
    lc_model_free(in);
    return rc;
fail:
    lc_model_free(m);
    return rc;
}
