/* infer/infer_open.c: opening a model for the forward pass (infer.h): its tensors found
 * by role, layer and expert through the family's table in the model's spelling, shapes
 * checked against the hyperparameters, the 1-D tensors read, and the matrices described
 * (a fused matrix as runs of its rows, a stack of experts as one run per expert). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infer/infer_impl.h"
#include "libconvert/alloc.h"

/* The stacked rows' roles, in the order a layer's expert arrays hold them. */
static const lc_role EXP_ROLES[3] = { LC_ROLE_FFN_GATE_EXPS, LC_ROLE_FFN_UP_EXPS,
                                      LC_ROLE_FFN_DOWN_EXPS };

static int exp_slot(lc_role r) {
    for (int i = 0; i < 3; i++)
        if (EXP_ROLES[i] == r)
            return i;
    return -1;
}

/* How a layer's tensor of a role was found. */
enum { HOW_WHOLE = 0, HOW_FUSED, HOW_PER_EXPERT };

/* The tensors of a model by role: top-level ones, one set per layer, and per-expert
 * tensors where the model spells the experts one tensor each. */
typedef struct found {
    const lc_tensor *top[LC_ROLE_COUNT];
    const lc_tensor *(*layer)[LC_ROLE_COUNT];       /* [n_layers][LC_ROLE_COUNT] */
    uint8_t (*how)[LC_ROLE_COUNT];                  /* [n_layers][LC_ROLE_COUNT] HOW_* */
    const lc_arch_tensor *(*row)[LC_ROLE_COUNT];    /* [n_layers][LC_ROLE_COUNT] */
    const lc_tensor **exp;                          /* [n_layers][3][n_expert], made at
                                                     * the first per-expert tensor */
    uint32_t n_expert;
    size_t n_tensors;                               /* the model's */
} found;

static const lc_tensor **exp_at(const found *f, uint32_t l, int k, uint32_t e) {
    return &f->exp[((size_t)l * 3 + (size_t)k) * f->n_expert + e];
}

static void found_free(found *f) {
    lc_free(f->layer);
    lc_free(f->how);
    lc_free(f->row);
    lc_free(f->exp);
}

static lc_code file_tensor(found *f, const lc_arch_hit *h, const lc_tensor *t,
                           const lc_hparams *hp, lc_error *err) {
    char want[96];
    if (h->layer != UINT32_MAX && h->layer >= hp->block_count)
        return lc_fail_in(err, LC_E_MALFORMED, LC_NO_OFFSET, t->name, "tensor %.100s is in "
                          "layer %" PRIu32 " of a %" PRIu32 "-layer model", t->name, h->layer,
                          hp->block_count);
    if (h->expert != UINT32_MAX && h->expert >= hp->expert_count)
        return lc_fail_in(err, LC_E_MALFORMED, LC_NO_OFFSET, t->name, "tensor %.100s is expert %"
                          PRIu32 " of %" PRIu32, t->name, h->expert, hp->expert_count);
    if (!lc_arch_hit_shape_is(h, hp, t, want, sizeof want)) {
        char have[96];
        lc_shape_format(t, have, sizeof have);
        return lc_fail_in(err, LC_E_MISMATCH, LC_NO_OFFSET, t->name, "tensor %.80s has shape %s; "
                          "the hyperparameters give %s", t->name, have, want);
    }
    if (h->layer == UINT32_MAX) {
        f->top[h->row->role] = t;
        return LC_OK;
    }
    const int k = exp_slot(h->row->role);
    if (h->expert != UINT32_MAX) {
        if (k < 0)
            return lc_fail_in(err, LC_E_MALFORMED, LC_NO_OFFSET, t->name, "tensor %.100s: one "
                              "expert's tensor of a row that is not stacked", t->name);
        if (!f->exp) {
            /* made at the first one: a slot per expert tensor the model can hold */
            const uint64_t slots = (uint64_t)hp->block_count * 3 * f->n_expert;
            if (slots > (uint64_t)f->n_tensors * 16 + 4096)
                return lc_fail_in(err, LC_E_MALFORMED, LC_NO_OFFSET, t->name, "%" PRIu32
                                  " layers of %" PRIu32 " experts: more expert tensors than "
                                  "the model's %zu", hp->block_count, f->n_expert, f->n_tensors);
            if (!(f->exp = lc_calloc((size_t)slots, sizeof *f->exp)))
                return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu64
                               " expert tensors", slots);
        }
        *exp_at(f, h->layer, k, h->expert) = t;
        f->how[h->layer][h->row->role] = HOW_PER_EXPERT;
    } else {
        f->layer[h->layer][h->row->role] = t;
        f->how[h->layer][h->row->role] = h->fused ? HOW_FUSED : HOW_WHOLE;
    }
    f->row[h->layer][h->row->role] = h->row;
    return LC_OK;
}

/* Files every tensor whose name the family knows under its role, layer (and expert),
 * checks its shape against hp, and that every required one is there: with every
 * expert, when the model spells them one tensor each. */
static lc_code find_tensors(const lc_model *m, const lc_arch *a, const lc_hparams *hp,
                            lc_spelling sp, found *f, lc_error *err) {
    const uint32_t L = hp->block_count, E = hp->expert_count;
    f->n_expert = E;
    f->n_tensors = lc_model_tensor_count(m);
    if (!(f->layer = lc_calloc(L, sizeof *f->layer)) || !(f->how = lc_calloc(L, sizeof *f->how)) ||
        !(f->row = lc_calloc(L, sizeof *f->row)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu32 " layers",
                       L);
    lc_arch_seen seen;
    LC_TRY(lc_arch_seen_init(&seen, a, L, err));
    lc_code rc = LC_OK;
    seen.recurrent = hp->ssm_time_step_rank ? hp->recurrent : NULL;
    for (size_t i = 0; i < lc_model_tensor_count(m) && rc == LC_OK; i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        lc_arch_hit h;
        const lc_arch_tensor *after = NULL;
        char alias[200];
        /* the prediction layers' transformers spelling (mtp.*), as the rows know it */
        const char *name = sp == LC_SPELL_HF && lc_arch_alias_in(a, lc_arch_own_layers(hp),
                                                                 t->name, alias, sizeof alias)
                         ? alias : t->name;
        while (rc == LC_OK && lc_arch_lookup(a, sp, name, after, &h)) {
            after = h.row;
            if ((h.row->flags & LC_AT_EXPERTS) && E == 0)
                rc = lc_fail_in(err, LC_E_MISMATCH, LC_NO_OFFSET, t->name, "tensor %.100s "
                                "holds experts but the model declares none", t->name);
            else
                rc = file_tensor(f, &h, t, hp, err);
            if (rc == LC_OK && h.expert == UINT32_MAX)
                lc_arch_seen_mark(&seen, h.row, h.layer);
            if (!h.fused)
                break;
        }
    }
    /* a stack spelled one tensor per expert is there when all of them are */
    for (uint32_t l = 0; rc == LC_OK && f->exp && l < L; l++)
        for (int k = 0; k < 3 && rc == LC_OK; k++) {
            if (f->how[l][EXP_ROLES[k]] != HOW_PER_EXPERT)
                continue;
            for (uint32_t e = 0; e < E && rc == LC_OK; e++)
                if (!*exp_at(f, l, k, e))
                    rc = lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "layer %" PRIu32 " has no "
                                 "expert %" PRIu32 " of its %s stack", l, e,
                                 k == 0 ? "gate" : k == 1 ? "up" : "down");
            if (rc == LC_OK)
                lc_arch_seen_mark(&seen, f->row[l][EXP_ROLES[k]], l);
        }
    /* A model is a mixture of experts when it has a router: the tensors say what runs
     * (a dense model whose keys claim experts runs dense; model-verify names the keys). */
    for (uint32_t l = 0; l < L; l++)
        seen.moe |= f->layer[l][LC_ROLE_FFN_GATE_INP] != NULL;
    if (rc == LC_OK && seen.moe && E == 0)
        rc = lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the model has a router but declares "
                     "no experts (expert_count)");
    if (rc == LC_OK)
        rc = lc_arch_seen_check(&seen, sp, err);
    lc_arch_seen_free(&seen);
    return rc;
}


/* Which pairs RoPE rotates, from where the Q/K rows come from (see infer.h). */
static lc_rope_style rope_style(const lc_arch *a, lc_spelling sp) {
    return sp == LC_SPELL_GGUF ? a->rope : sp == LC_SPELL_HF ? LC_ROPE_NEOX : LC_ROPE_NORM;
}

static lc_code check_hparams(const lc_hparams *hp, lc_error *err) {
    const uint32_t rot = hp->rope_dim ? hp->rope_dim : hp->head_dim;
    const char *bad = hp->block_count == 0 ? "block_count is 0"
                    : hp->embedding_length == 0 ? "embedding_length is 0"
                    : hp->head_count == 0 || hp->head_count_kv == 0 ? "a head count is 0"
                    : hp->head_count % hp->head_count_kv ? "head_count is not a multiple of "
                                                           "head_count_kv"
                    : hp->head_dim == 0 || hp->head_dim % 2 ? "head_dim is 0 or odd"
                    : rot == 0 || rot % 2 || rot > hp->head_dim ? "the rotated dimensions are "
                                                                  "0, odd or past head_dim"
                    : !(hp->rms_eps >= 0) ? "the rms epsilon is negative"
                    : !(hp->rope_theta > 0) ? "the rope base is not positive"
                    : hp->expert_count && (hp->expert_used_count == 0 ||
                                           hp->expert_used_count > hp->expert_count)
                      ? "expert_used_count is 0 or above expert_count" : NULL;
    if (bad)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "hyperparameters: %s", bad);
    return LC_OK;
}

/* gemma's norms are stored + 1 in GGUF and as is in transformers' spelling. */
static float shift_of(const lc_arch_tensor *row, lc_spelling sp) {
    return row && (row->flags & LC_AT_NORM_SHIFT) && sp != LC_SPELL_GGUF ? 1.0f : 0.0f;
}

/* What the tap is told w is (infer.h): the GGUF tensor of role in layer l, expert e. */
static void tag(lc_infer_mat *w, lc_role role, uint32_t l, uint32_t e) {
    w->role = role;
    w->layer = l;
    w->expert = e;
}

/* Expert e's matrix of stacked role k: a run of rows of a stack or fused tensor, or its
 * own tensor. */
static lc_code expert_mat(const found *f, uint32_t l, int k, uint32_t e, uint64_t rows,
                          lc_infer_mat *out, lc_error *err) {
    const lc_role role = EXP_ROLES[k];
    if (f->how[l][role] == HOW_PER_EXPERT)
        return lc_infer_mat_init(out, *exp_at(f, l, k, e), err);
    lc_infer_mat whole;
    LC_TRY(lc_infer_mat_init(&whole, f->layer[l][role], err));
    const lc_arch_tensor *row = f->row[l][role];
    const uint64_t parts = f->how[l][role] == HOW_FUSED && row->parts ? row->parts : 1;
    const uint64_t part = parts > 1 ? row->part : 0;
    return lc_infer_mat_slice(out, &whole, ((uint64_t)e * parts + part) * rows, rows, err);
}

static lc_code open_experts(lc_infer *c, const found *f, uint32_t l, lc_infer_layer *L,
                            lc_error *err) {
    if (!(L->egate = lc_calloc(c->n_expert, sizeof *L->egate)) ||
        !(L->eup = lc_calloc(c->n_expert, sizeof *L->eup)) ||
        !(L->edown = lc_calloc(c->n_expert, sizeof *L->edown)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu32 " experts",
                       c->n_expert);
    LC_TRY(lc_infer_mat_init(&L->router, f->layer[l][LC_ROLE_FFN_GATE_INP], err));
    tag(&L->router, LC_ROLE_FFN_GATE_INP, l, UINT32_MAX);
    const lc_tensor *const *t = f->layer[l];
    if (t[LC_ROLE_FFN_GATE_INP_SHEXP]) {    /* qwen35moe: the shared expert */
        L->shexp = true;
        LC_TRY(lc_infer_mat_init(&L->sgate, t[LC_ROLE_FFN_GATE_SHEXP], err));
        LC_TRY(lc_infer_mat_init(&L->sup, t[LC_ROLE_FFN_UP_SHEXP], err));
        LC_TRY(lc_infer_mat_init(&L->sdown, t[LC_ROLE_FFN_DOWN_SHEXP], err));
        LC_TRY(lc_infer_mat_init(&L->sgate_inp, t[LC_ROLE_FFN_GATE_INP_SHEXP], err));
        tag(&L->sgate, LC_ROLE_FFN_GATE_SHEXP, l, UINT32_MAX);
        tag(&L->sup, LC_ROLE_FFN_UP_SHEXP, l, UINT32_MAX);
        tag(&L->sdown, LC_ROLE_FFN_DOWN_SHEXP, l, UINT32_MAX);
        tag(&L->sgate_inp, LC_ROLE_FFN_GATE_INP_SHEXP, l, UINT32_MAX);
    }
    for (uint32_t e = 0; e < c->n_expert; e++) {
        LC_TRY(expert_mat(f, l, 0, e, c->ff_exp, &L->egate[e], err));
        LC_TRY(expert_mat(f, l, 1, e, c->ff_exp, &L->eup[e], err));
        LC_TRY(expert_mat(f, l, 2, e, c->embd, &L->edown[e], err));
        tag(&L->egate[e], EXP_ROLES[0], l, e);
        tag(&L->eup[e], EXP_ROLES[1], l, e);
        tag(&L->edown[e], EXP_ROLES[2], l, e);
    }
    L->moe = true;
    return LC_OK;
}

/* A matrix of `rows` x `cols` (any rank: its leading dimensions are rows) into a new
 * float32 array. */
static lc_code read_matrix(const lc_tensor *t, uint64_t rows, uint64_t cols, float **out,
                           lc_error *err) {
    lc_infer_mat w;
    *out = NULL;
    LC_TRY(lc_infer_mat_init(&w, t, err));
    if (w.rows != rows || w.cols != cols)
        return lc_fail_in(err, LC_E_MISMATCH, LC_NO_OFFSET, t->name, "tensor %.100s is not %"
                          PRIu64 " x %" PRIu64, t->name, rows, cols);
    float *buf = lc_malloc_array((size_t)(rows * cols), sizeof(float));
    uint8_t *raw = lc_malloc_array((size_t)rows, (size_t)w.row_bytes ? (size_t)w.row_bytes : 1);
    lc_code rc = !buf || !raw ? lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory")
                              : lc_infer_mat_rows(&w, 0, (size_t)rows, buf, raw, err);
    lc_free(raw);
    if (rc != LC_OK)
        lc_free(buf);
    else
        *out = buf;
    return rc;
}

/* A Gated-DeltaNet layer's weights: transformers' A_log becomes -exp(A_log), GGUF's
 * ssm_a is that already. */
static lc_code open_recurrent(lc_infer *c, const found *f, uint32_t l, lc_spelling sp,
                              lc_infer_layer *L, lc_error *err) {
    const lc_tensor *const *t = f->layer[l];
    L->recurrent = true;
    LC_TRY(lc_infer_mat_init(&L->ssm_qkv, t[LC_ROLE_SSM_QKV], err));
    LC_TRY(lc_infer_mat_init(&L->ssm_z, t[LC_ROLE_SSM_Z], err));
    LC_TRY(lc_infer_mat_init(&L->ssm_beta, t[LC_ROLE_SSM_BETA], err));
    LC_TRY(lc_infer_mat_init(&L->ssm_alpha, t[LC_ROLE_SSM_ALPHA], err));
    LC_TRY(lc_infer_mat_init(&L->ssm_out, t[LC_ROLE_SSM_OUT], err));
    tag(&L->ssm_qkv, LC_ROLE_SSM_QKV, l, UINT32_MAX);
    tag(&L->ssm_z, LC_ROLE_SSM_Z, l, UINT32_MAX);
    tag(&L->ssm_beta, LC_ROLE_SSM_BETA, l, UINT32_MAX);
    tag(&L->ssm_alpha, LC_ROLE_SSM_ALPHA, l, UINT32_MAX);
    tag(&L->ssm_out, LC_ROLE_SSM_OUT, l, UINT32_MAX);
    LC_TRY(lc_infer_read_vector(t[LC_ROLE_SSM_A], c->ssm_nv, 0, &L->ssm_a, err));
    LC_TRY(lc_infer_read_vector(t[LC_ROLE_SSM_DT], c->ssm_nv, 0, &L->ssm_dt, err));
    LC_TRY(lc_infer_read_vector(t[LC_ROLE_SSM_NORM], c->ssm_dv, 0, &L->ssm_norm, err));
    LC_TRY(read_matrix(t[LC_ROLE_SSM_CONV1D], c->ssm_conv, c->ssm_kernel, &L->ssm_conv, err));
    const lc_arch_tensor *row = f->row[l][LC_ROLE_SSM_A];
    for (uint32_t j = 0; sp != LC_SPELL_GGUF && row && (row->flags & LC_AT_NEG_EXP) &&
                         j < c->ssm_nv; j++)
        L->ssm_a[j] = -expf(L->ssm_a[j]);
    return LC_OK;
}

static lc_code open_layer(lc_infer *c, const found *f, uint32_t l, lc_spelling sp,
                          lc_infer_layer *L, lc_error *err) {
    const lc_tensor *const *t = f->layer[l];
    const lc_arch_tensor *const *row = f->row[l];
    struct { lc_role role; uint32_t n; float **out; } vec[] = {
        { LC_ROLE_ATTN_NORM, c->embd, &L->attn_norm }, { LC_ROLE_FFN_NORM, c->embd, &L->ffn_norm },
        { LC_ROLE_ATTN_POST_NORM, c->embd, &L->attn_post_norm },
        { LC_ROLE_FFN_POST_NORM, c->embd, &L->ffn_post_norm },
        { LC_ROLE_ATTN_Q_NORM, c->head_dim, &L->q_norm },
        { LC_ROLE_ATTN_K_NORM, c->head_dim, &L->k_norm },
        { LC_ROLE_ATTN_Q_BIAS, c->q_dim, &L->bq }, { LC_ROLE_ATTN_K_BIAS, c->kv_dim, &L->bk },
        { LC_ROLE_ATTN_V_BIAS, c->kv_dim, &L->bv },
    };
    for (size_t i = 0; i < sizeof vec / sizeof *vec; i++)
        LC_TRY(lc_infer_read_vector(t[vec[i].role], vec[i].n, shift_of(row[vec[i].role], sp),
                           vec[i].out, err));
    if (c->ssm_nv && c->recurrent_layers[l])
        LC_TRY(open_recurrent(c, f, l, sp, L, err));
    else if (t[LC_ROLE_ATTN_QKV]) {              /* phi3: Q, K, V rows of one matrix */
        lc_infer_mat qkv;
        LC_TRY(lc_infer_mat_init(&qkv, t[LC_ROLE_ATTN_QKV], err));
        LC_TRY(lc_infer_mat_slice(&L->wq, &qkv, 0, c->q_dim, err));
        LC_TRY(lc_infer_mat_slice(&L->wk, &qkv, c->q_dim, c->kv_dim, err));
        LC_TRY(lc_infer_mat_slice(&L->wv, &qkv, c->q_dim + c->kv_dim, c->kv_dim, err));
        tag(&L->wq, LC_ROLE_ATTN_QKV, l, UINT32_MAX);   /* wk, wv: the same input */
    } else {
        LC_TRY(lc_infer_mat_init(&L->wq, t[LC_ROLE_ATTN_Q], err));
        LC_TRY(lc_infer_mat_init(&L->wk, t[LC_ROLE_ATTN_K], err));
        LC_TRY(lc_infer_mat_init(&L->wv, t[LC_ROLE_ATTN_V], err));
        tag(&L->wq, LC_ROLE_ATTN_Q, l, UINT32_MAX);
        tag(&L->wk, LC_ROLE_ATTN_K, l, UINT32_MAX);
        tag(&L->wv, LC_ROLE_ATTN_V, l, UINT32_MAX);
    }
    if (!L->recurrent) {
        LC_TRY(lc_infer_mat_init(&L->wo, t[LC_ROLE_ATTN_OUT], err));
        tag(&L->wo, LC_ROLE_ATTN_OUT, l, UINT32_MAX);
    }
    if (t[LC_ROLE_FFN_GATE_INP])
        return open_experts(c, f, l, L, err);
    if (t[LC_ROLE_FFN_GATE]) {
        LC_TRY(lc_infer_mat_init(&L->gate, t[LC_ROLE_FFN_GATE], err));
        LC_TRY(lc_infer_mat_init(&L->up, t[LC_ROLE_FFN_UP], err));
        tag(&L->gate, LC_ROLE_FFN_GATE, l, UINT32_MAX);
        tag(&L->up, LC_ROLE_FFN_UP, l, UINT32_MAX);
    } else {                                /* phi3: gate rows then up rows */
        lc_infer_mat gu;
        LC_TRY(lc_infer_mat_init(&gu, t[LC_ROLE_FFN_UP], err));
        LC_TRY(lc_infer_mat_slice(&L->gate, &gu, 0, c->ff, err));
        LC_TRY(lc_infer_mat_slice(&L->up, &gu, c->ff, c->ff, err));
        tag(&L->gate, LC_ROLE_FFN_UP, l, UINT32_MAX);   /* up: the same input */
    }
    LC_TRY(lc_infer_mat_init(&L->down, t[LC_ROLE_FFN_DOWN], err));
    tag(&L->down, LC_ROLE_FFN_DOWN, l, UINT32_MAX);
    return LC_OK;
}

/* The widest row (elements and stored bytes) any matrix has: the matmul scratch size. */
static void widest(const lc_infer_mat *w, size_t *cols, size_t *bytes) {
    if (w->cols > *cols)
        *cols = (size_t)w->cols;
    if (w->row_bytes > *bytes)
        *bytes = (size_t)w->row_bytes;
}

static void layer_widest(const lc_infer *c, const lc_infer_layer *L, size_t *cols,
                         size_t *bytes) {
    const lc_infer_mat *ms[] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->gate, &L->up, &L->down,
                                 &L->router, &L->ssm_qkv, &L->ssm_z, &L->ssm_beta,
                                 &L->ssm_alpha, &L->ssm_out, &L->sgate, &L->sup, &L->sdown,
                                 &L->sgate_inp, &L->ple_gate, &L->ple_proj };
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
        widest(ms[i], cols, bytes);
    for (uint32_t e = 0; L->moe && e < c->n_expert; e++) {
        widest(&L->egate[e], cols, bytes);
        widest(&L->eup[e], cols, bytes);
        widest(&L->edown[e], cols, bytes);
    }
}

/* RoPE's frequencies: a GGUF's rope_freqs tensor (llama3 factors, written by the
 * converter) when it has one, else the family's hook when hp asks for llama3 scaling;
 * longrope's short factors (a GGUF's rope_factors_short, else the config's) and its
 * long ones for sequences past the original context; the sliding layers' base. Meta's
 * rope.freqs shares the row but holds Meta's precomputed inverse frequencies, not
 * factors: like every LC_AT_COMPUTED tensor of a source, it is ignored. */
static lc_code init_rope(lc_infer_rope *r, lc_rope_style style, const lc_hparams *hp,
                         const float *factors, lc_error *err) {
    const uint32_t half = (hp->rope_dim ? hp->rope_dim : hp->head_dim) / 2;
    r->style = style;
    if (!(r->inv_freq = lc_malloc_array(half, sizeof(float))))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_infer_rope_init(r, hp, factors);
    return LC_OK;
}

static lc_code build_rope(lc_infer *c, const lc_arch *a, const lc_hparams *hp,
                          lc_spelling sp, const found *f, lc_error *err) {
    const uint32_t half = (hp->rope_dim ? hp->rope_dim : hp->head_dim) / 2;
    const lc_rope_style style = rope_style(a, sp);
    const bool gguf = sp == LC_SPELL_GGUF;
    float *factors = NULL, *long_f = NULL;
    lc_code rc = LC_OK;
    if (hp->rope_scaling == LC_ROPE_SCALING_LONGROPE ||
        (gguf && f->top[LC_ROLE_ROPE_FACTORS_SHORT])) {
        if (gguf && f->top[LC_ROLE_ROPE_FACTORS_SHORT]) {
            if ((rc = lc_infer_read_vector(f->top[LC_ROLE_ROPE_FACTORS_SHORT], half, 0, &factors,
                                  err)) != LC_OK ||
                (rc = lc_infer_read_vector(f->top[LC_ROLE_ROPE_FACTORS_LONG], half, 0, &long_f,
                                  err)) != LC_OK)
                goto done;
        } else if (hp->n_rope_factors == half) {
            factors = lc_malloc_array(half, sizeof(float));
            long_f = lc_malloc_array(half, sizeof(float));
            if (!factors || !long_f) {
                rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
                goto done;
            }
            memcpy(factors, hp->rope_short_factors, half * sizeof(float));
            memcpy(long_f, hp->rope_long_factors, half * sizeof(float));
        }
    } else if (gguf && f->top[LC_ROLE_ROPE_FREQS]) {
        if ((rc = lc_infer_read_vector(f->top[LC_ROLE_ROPE_FREQS], half, 0, &factors, err)) != LC_OK)
            goto done;
    } else if (hp->rope_scaling == LC_ROPE_SCALING_LLAMA3) {
        if (!a->hooks.rope_freqs) {
            rc = lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "architecture %s has no llama3 "
                         "rope scaling", a->name);
            goto done;
        }
        if (!(factors = lc_malloc_array(half, sizeof(float)))) {
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
            goto done;
        }
        a->hooks.rope_freqs(hp, factors, half);
    }
    /* a GGUF says longrope by its factor tensors alone (phi3 writes no scaling type) */
    lc_hparams scaled = *hp;
    if (long_f)
        scaled.rope_scaling = LC_ROPE_SCALING_LONGROPE;
    if ((rc = init_rope(&c->rope, style, &scaled, factors, err)) != LC_OK)
        goto done;
    c->long_after = UINT32_MAX;
    if (long_f) {
        if ((rc = init_rope(&c->rope_long, style, &scaled, long_f, err)) != LC_OK)
            goto done;
        c->long_after = hp->rope_scaling_orig_ctx ? hp->rope_scaling_orig_ctx : UINT32_MAX;
    }
    if (hp->rope_theta_swa > 0) {
        /* the sliding layers turn with their own base and no scaling (gemma3) */
        lc_hparams local = *hp;
        local.rope_theta = hp->rope_theta_swa;
        local.rope_scaling = LC_ROPE_SCALING_NONE;
        rc = init_rope(&c->rope_local, style, &local, NULL, err);
    }
done:
    lc_free(factors);
    lc_free(long_f);
    return rc;
}

/* Sizes the keys may leave out come from the tensors (GGUF qwen2 has no vocab_size). */
static void sizes_from_tensors(const lc_model *m, const lc_arch *a, lc_spelling sp,
                               lc_hparams *hp) {
    const lc_arch_tensor *er = lc_arch_role(a, LC_ROLE_TOKEN_EMBD);
    const lc_arch_tensor *gr = lc_arch_role(a, LC_ROLE_FFN_GATE);
    char name[160];
    const lc_tensor *t;
    if (!hp->vocab_size && er && lc_arch_name(er, sp, 0, name, sizeof name, NULL) == LC_OK &&
        (t = lc_model_find_tensor(m, name)) && t->ndim == 2 && t->shape[0] <= UINT32_MAX)
        hp->vocab_size = (uint32_t)t->shape[0];
    if (!hp->feed_forward_length && gr && lc_arch_name(gr, sp, 0, name, sizeof name, NULL) ==
        LC_OK && (t = lc_model_find_tensor(m, name)) && t->ndim == 2 && t->shape[0] <= UINT32_MAX)
        hp->feed_forward_length = (uint32_t)t->shape[0];
}

lc_code lc_infer_open(const lc_model *m, const lc_arch *a, const lc_hparams *hp_in,
                      lc_spelling sp, const lc_infer_opts *o, lc_infer **out, lc_error *err) {
    lc_infer *c = NULL;
    found f = { 0 };
    lc_hparams hp = *hp_in;
    lc_code rc;
    *out = NULL;
    if (a->no_forward_pass)     /* a family read and quantized, not yet run */
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "%s", a->no_forward_pass);
    sizes_from_tensors(m, a, sp, &hp);
    if ((rc = check_hparams(&hp, err)) != LC_OK)
        goto done;
    /* A declared count becomes an allocation only once it is proven: every layer has a
     * tensor of its own (and every expert of a stack at least a share of one), so a model
     * holds more tensors than layers. */
    if (hp.block_count > lc_model_tensor_count(m)) {
        rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "hyperparameters: block_count %" PRIu32
                     " but the model has %zu tensors", hp.block_count, lc_model_tensor_count(m));
        goto done;
    }
    if (!(c = lc_calloc(1, sizeof *c)) ||
        !(c->layers = lc_calloc(hp.block_count, sizeof *c->layers))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu32 " layers",
                     hp.block_count);
        goto done;
    }
    c->n_layers = hp.block_count;   /* before anything can fail: close() walks the layers */
    if ((rc = find_tensors(m, a, &hp, sp, &f, err)) != LC_OK)
        goto done;
    /* the prediction layers past the model's own are written, never run */
    c->n_layers = lc_arch_own_layers(&hp);
    c->attn_gate = a->recipe.attn_gate;
    if (hp.ssm_time_step_rank) {
        c->ssm_nk = hp.ssm_group_count;
        c->ssm_nv = hp.ssm_time_step_rank;
        c->ssm_dk = hp.ssm_state_size;
        c->ssm_dv = hp.ssm_head_v;
        c->ssm_kernel = hp.ssm_conv_kernel;
        c->ssm_conv = 2 * c->ssm_nk * c->ssm_dk + c->ssm_nv * c->ssm_dv;
        c->ssm_tiled = sp == LC_SPELL_GGUF;
        memcpy(c->recurrent_layers, hp.recurrent, sizeof c->recurrent_layers);
    }
    c->embd = hp.embedding_length;
    c->n_heads = hp.head_count;
    c->n_kv_heads = hp.head_count_kv;
    c->head_dim = hp.head_dim;
    c->ff = hp.feed_forward_length;
    c->vocab = hp.vocab_size;
    c->q_dim = c->n_heads * c->head_dim;
    c->kv_dim = c->n_kv_heads * c->head_dim;
    c->n_expert = hp.expert_count;
    c->n_expert_used = hp.expert_used_count;
    c->ff_exp = hp.expert_ff_length ? hp.expert_ff_length : hp.feed_forward_length;
    c->ff_shexp = hp.expert_shared_ff_length;
    c->norm_topk = hp.expert_norm_topk;
    c->eps = (float)hp.rms_eps;
    /* transformers scales by query_pre_attn_scalar^-1/2 where a config names it; a GGUF
     * does not store it, and llama.cpp scales by head_dim^-1/2 */
    c->attn_scale = hp.attn_scale > 0 && sp != LC_SPELL_GGUF ? (float)(1.0 / sqrt(hp.attn_scale))
                                                             : 1.0f / sqrtf((float)c->head_dim);
    c->window = hp.swa_pattern ? hp.sliding_window : 0;
    /* gemma: the embedding times sqrt(hidden_size), a float32 constant */
    c->embd_scale = a->recipe.embd_scale ? (float)sqrt((double)c->embd) : 1.0f;
    c->final_softcap = (float)hp.final_softcap;
    c->act = a->recipe.act;
    /* gemma4: layers of different shapes, its own blocks (infer/infer_gemma4.c) */
    c->gemma4 = a->per_layer_attention;
    if (c->gemma4 && (rc = lc_infer_g4_open(c, &hp, f.top, err)) != LC_OK)
        goto done;
    if ((rc = lc_infer_mat_init(&c->tok_embd, f.top[LC_ROLE_TOKEN_EMBD], err)) != LC_OK ||
        (rc = lc_infer_mat_init(&c->output, f.top[LC_ROLE_OUTPUT] ? f.top[LC_ROLE_OUTPUT]
                                : f.top[LC_ROLE_TOKEN_EMBD], err)) != LC_OK ||
        (rc = lc_infer_read_vector(f.top[LC_ROLE_OUTPUT_NORM], c->embd,
                          shift_of(lc_arch_role(a, LC_ROLE_OUTPUT_NORM), sp), &c->output_norm,
                          err)) != LC_OK)
        goto done;
    if (f.top[LC_ROLE_OUTPUT])              /* tied: llama.cpp's head is token_embd */
        tag(&c->output, LC_ROLE_OUTPUT, UINT32_MAX, UINT32_MAX);
    if (c->tok_embd.rows > c->vocab)        /* gemma: rows past the vocabulary */
        c->tok_embd.rows = c->vocab;
    if (c->output.rows > c->vocab)          /* ... and so the tied output's */
        c->output.rows = c->vocab;
    size_t cols = 0, bytes = 0;
    widest(&c->output, &cols, &bytes);
    widest(&c->ple_model_proj, &cols, &bytes);      /* gemma4's; none: 0 x 0 */
    for (uint32_t l = 0; l < c->n_layers; l++) {
        lc_infer_layer *L = &c->layers[l];
        if (c->gemma4) {
            if ((rc = lc_infer_g4_open_layer(c, f.layer[l], l, err)) != LC_OK)
                goto done;
        } else if ((rc = open_layer(c, &f, l, sp, L, err)) != LC_OK)
            goto done;
        else
            L->sliding = c->window && (l + 1) % hp.swa_pattern != 0;
        layer_widest(c, L, &cols, &bytes);
    }
    if (!(c->raw_row = lc_malloc((size_t)c->tok_embd.row_bytes))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    if ((rc = c->gemma4 ? lc_infer_g4_rope(c, &hp, f.top[LC_ROLE_ROPE_FREQS], err)
                        : build_rope(c, a, &hp, sp, &f, err)) != LC_OK ||
        (rc = lc_infer_mm_build(&c->mm, o ? o->threads : 0, cols, bytes, err)) != LC_OK)
        goto done;
    *out = c;
    c = NULL;
done:
    found_free(&f);
    lc_infer_close(c);
    return rc;
}

void lc_infer_close(lc_infer *c) {
    if (!c)
        return;
    for (uint32_t l = 0; c->layers && l < c->n_layers; l++) {
        lc_infer_layer *L = &c->layers[l];
        float *v[] = { L->attn_norm, L->ffn_norm, L->attn_post_norm, L->ffn_post_norm,
                       L->q_norm, L->k_norm, L->bq, L->bk, L->bv, L->ssm_a, L->ssm_dt,
                       L->ssm_conv, L->ssm_norm };
        for (size_t i = 0; i < sizeof v / sizeof *v; i++)
            lc_free(v[i]);
        lc_free(L->egate);
        lc_free(L->eup);
        lc_free(L->edown);
    }
    lc_infer_g4_close(c);
    lc_free(c->layers);
    lc_free(c->output_norm);
    lc_free(c->rope.inv_freq);
    lc_free(c->rope_local.inv_freq);
    lc_free(c->rope_long.inv_freq);
    lc_free(c->raw_row);
    lc_infer_mm_free(&c->mm);
    lc_free(c);
}

uint32_t lc_infer_vocab(const lc_infer *c) { return c->vocab; }
uint32_t lc_infer_embd(const lc_infer *c) { return c->embd; }
