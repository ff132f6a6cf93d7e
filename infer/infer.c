/* infer/infer.c: the reference forward pass (infer.h): the per-call state and forward()
 * itself over the weights infer_open.c found. The blocks are in blocks.c, the weight
 * rows and the threaded matmul in matmul.c. */
#include "infer/infer.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infer/infer_impl.h"
#include "libconvert/alloc.h"
#include "libconvert/bytes.h"

/* ---- the state of one forward call ---- */


static lc_code build_run(lc_infer_run *s, const lc_infer *c, size_t n, lc_error *err) {
    memset(s, 0, sizeof *s);
    size_t ff = c->ff > c->ff_exp ? c->ff : c->ff_exp;
    ff = ff > c->ff_shexp ? ff : c->ff_shexp;
    const size_t ne = c->n_expert, nu = c->n_expert_used;
    struct { void **p; size_t width, size; } bufs[] = {
        { (void **)&s->x, c->embd, 4 }, { (void **)&s->xb, c->embd, 4 },
        { (void **)&s->proj, c->embd, 4 }, { (void **)&s->q, c->q_dim, 4 },
        { (void **)&s->k, c->kv_dim, 4 }, { (void **)&s->v, c->kv_dim, 4 },
        { (void **)&s->att, c->q_dim, 4 }, { (void **)&s->scores, 1, 4 },
        { (void **)&s->hb, ff, 4 }, { (void **)&s->hb2, ff, 4 },
        { (void **)&s->route, ne, 4 }, { (void **)&s->xe, ne ? c->embd : 0, 4 },
        { (void **)&s->ye, ne ? c->embd : 0, 4 }, { (void **)&s->chosen, nu, 4 },
        { (void **)&s->weight, nu, 4 }, { (void **)&s->rows, ne ? 1 : 0, sizeof(size_t) },
        { (void **)&s->qg, c->attn_gate ? 2 * (size_t)c->q_dim : 0, 4 },
        { (void **)&s->mix, c->ssm_conv, 4 },
        { (void **)&s->z, (size_t)c->ssm_nv * c->ssm_dv, 4 },
        { (void **)&s->beta, c->ssm_nv, 4 }, { (void **)&s->decay, c->ssm_nv, 4 },
        { (void **)&s->core, (size_t)c->ssm_nv * c->ssm_dv, 4 },
    };
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) {
        uint64_t count;
        if (bufs[i].width == 0)
            continue;
        if (lc_mul_u64(n, bufs[i].width, &count) || count > SIZE_MAX / bufs[i].size ||
            !(*bufs[i].p = lc_malloc_array((size_t)count, bufs[i].size)))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu tokens of "
                           "%zu values", n, bufs[i].width);
    }
    /* not per token: one layer's state, reused layer after layer */
    if (c->ssm_nv && (!(s->state = lc_malloc_array((size_t)c->ssm_nv * c->ssm_dk,
                                                   c->ssm_dv * sizeof(float))) ||
                      !(s->delta = lc_malloc_array(c->ssm_dv, sizeof(float)))))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for the recurrent state");
    return c->gemma4 ? lc_infer_g4_run_build(c, s, n, err) : LC_OK;
}

static void free_run(lc_infer_run *s) {
    void *all[] = { s->x, s->xb, s->proj, s->q, s->k, s->v, s->att, s->scores, s->hb, s->hb2,
                    s->route, s->xe, s->ye, s->chosen, s->weight, s->rows, s->qg, s->mix,
                    s->z, s->beta, s->decay, s->core, s->state, s->delta };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        lc_free(all[i]);
    lc_infer_g4_run_free(s);
    memset(s, 0, sizeof *s);
}

/* ---- the forward pass ---- */

void lc_infer_set_tap(lc_infer *c, lc_infer_tap_fn fn, void *user) {
    c->tap = fn;
    c->tap_user = user;
}


/* x[t] = token_embd[tokens[t]] (times gemma's sqrt(embd)) */
static lc_code embed(lc_infer *c, const int32_t *tokens, size_t n, float *x, lc_error *err) {
    for (size_t t = 0; t < n; t++) {
        float *xt = x + t * c->embd;
        LC_TRY(lc_infer_mat_rows(&c->tok_embd, (uint64_t)tokens[t], 1, xt, c->raw_row, err));
        for (uint32_t i = 0; c->embd_scale != 1.0f && i < c->embd; i++)
            xt[i] *= c->embd_scale;
    }
    return LC_OK;
}


/* x += proj */
static void residual(float *x, const float *proj, size_t count) {
    for (size_t i = 0; i < count; i++)
        x[i] += proj[i];
}

/* The RoPE a layer turns with for a sequence of n tokens. */
static const lc_infer_rope *rope_of(const lc_infer *c, const lc_infer_layer *L, size_t n) {
    if (L->sliding && c->rope_local.inv_freq)
        return &c->rope_local;
    return n > c->long_after && c->rope_long.inv_freq ? &c->rope_long : &c->rope;
}

/* att [n, q_dim] = attention(rope(qnorm(q)), rope(knorm(k)), v) over s->q, s->k, s->v */
static lc_code attend(lc_infer *c, const lc_infer_layer *L, lc_infer_run *s, size_t n,
                      lc_error *err) {
    if (L->q_norm)                          /* every head of every token */
        lc_infer_rmsnorm_rows(s->q, s->q, L->q_norm, n * c->n_heads, c->head_dim, c->eps);
    if (L->k_norm)
        lc_infer_rmsnorm_rows(s->k, s->k, L->k_norm, n * c->n_kv_heads, c->head_dim, c->eps);
    const lc_infer_rope *rope = rope_of(c, L, n);
    for (size_t t = 0; t < n; t++) {
        lc_infer_rope_apply(rope, s->q + t * c->q_dim, c->n_heads, (uint32_t)t);
        lc_infer_rope_apply(rope, s->k + t * c->kv_dim, c->n_kv_heads, (uint32_t)t);
    }
    return lc_infer_attend(s->att, s->q, s->k, s->v, n, c->n_heads, c->n_kv_heads, c->head_dim,
                           c->attn_scale, L->sliding ? c->window : 0, c->mm.threads, err);
}

/* x += post(Wo attention(rope(qnorm(Wq h + bq)), rope(knorm(Wk h + bk)), Wv h + bv)),
 * h = rmsnorm(x) */
static lc_code attention_block(lc_infer *c, const lc_infer_layer *L, lc_infer_run *s, size_t n,
                               lc_error *err) {
    lc_infer_rmsnorm_rows(s->xb, s->x, L->attn_norm, n, c->embd, c->eps);
    LC_TRY(lc_infer_mm_tapped(c, &L->wq, L->bq, s->xb, n, s->q, err));
    LC_TRY(lc_infer_mm_tapped(c, &L->wk, L->bk, s->xb, n, s->k, err));
    LC_TRY(lc_infer_mm_tapped(c, &L->wv, L->bv, s->xb, n, s->v, err));
    LC_TRY(attend(c, L, s, n, err));
    LC_TRY(lc_infer_mm_tapped(c, &L->wo, NULL, s->att, n, s->proj, err));
    if (L->attn_post_norm)
        lc_infer_rmsnorm_rows(s->proj, s->proj, L->attn_post_norm, n, c->embd, c->eps);
    residual(s->x, s->proj, n * c->embd);
    return LC_OK;
}

/* The gated full-attention layer (qwen35): Wq gives each head's query and an output gate
 * [n, n_heads, (q, gate), head_dim]; x += Wo (attention(...) * sigmoid(gate)). */
static lc_code gated_attention_block(lc_infer *c, const lc_infer_layer *L, lc_infer_run *s,
                                     size_t n, lc_error *err) {
    const uint32_t hd = c->head_dim;
    lc_infer_rmsnorm_rows(s->xb, s->x, L->attn_norm, n, c->embd, c->eps);
    LC_TRY(lc_infer_mm_tapped(c, &L->wq, L->bq, s->xb, n, s->qg, err));
    LC_TRY(lc_infer_mm_tapped(c, &L->wk, L->bk, s->xb, n, s->k, err));
    LC_TRY(lc_infer_mm_tapped(c, &L->wv, L->bv, s->xb, n, s->v, err));
    for (size_t t = 0; t < n; t++)          /* the queries apart from their gates */
        for (uint32_t h = 0; h < c->n_heads; h++)
            memcpy(s->q + t * c->q_dim + (size_t)h * hd,
                   s->qg + (t * c->n_heads + h) * 2 * hd, hd * sizeof(float));
    LC_TRY(attend(c, L, s, n, err));
    for (size_t t = 0; t < n; t++)
        for (uint32_t h = 0; h < c->n_heads; h++) {
            float *o = s->att + t * c->q_dim + (size_t)h * hd;
            const float *g = s->qg + (t * c->n_heads + h) * 2 * hd + hd;
            for (uint32_t i = 0; i < hd; i++)
                o[i] *= 1.0f / (1.0f + expf(-g[i]));
        }
    LC_TRY(lc_infer_mm_tapped(c, &L->wo, NULL, s->att, n, s->proj, err));
    if (L->attn_post_norm)
        lc_infer_rmsnorm_rows(s->proj, s->proj, L->attn_post_norm, n, c->embd, c->eps);
    residual(s->x, s->proj, n * c->embd);
    return LC_OK;
}

/* The Gated-DeltaNet recurrent layer (qwen35), h = rmsnorm(x):
 *   mix [n, conv] = silu(causal_conv(Wqkv h)), split into q [nk, dk], k [nk, dk],
 *   v [nv, dv] per token; q, k L2-normalised, q / sqrt(dk);
 *   beta = sigmoid(Wb h), decay = exp(A softplus(Wa h + dt)) [n, nv], A = -exp(A_log);
 *   per value head j (reading key head kh(j)): state [dk, dv] from 0, token by token
 *   through the gated delta rule, core_j = state^T q;
 *   x += Wout (rmsnorm(core_j) * w_norm * silu(Wz h)_j). */
static lc_code recurrent_block(lc_infer *c, const lc_infer_layer *L, lc_infer_run *s, size_t n,
                               lc_error *err) {
    const uint32_t nk = c->ssm_nk, nv = c->ssm_nv, dk = c->ssm_dk, dv = c->ssm_dv;
    const size_t inner = (size_t)nv * dv, key = (size_t)nk * dk;
    lc_infer_rmsnorm_rows(s->xb, s->x, L->attn_norm, n, c->embd, c->eps);
    LC_TRY(lc_infer_mm_tapped(c, &L->ssm_qkv, NULL, s->xb, n, s->mix, err));
    LC_TRY(lc_infer_mm_tapped(c, &L->ssm_z, NULL, s->xb, n, s->z, err));
    LC_TRY(lc_infer_mm_tapped(c, &L->ssm_beta, NULL, s->xb, n, s->beta, err));
    LC_TRY(lc_infer_mm_tapped(c, &L->ssm_alpha, NULL, s->xb, n, s->decay, err));
    lc_infer_conv_silu(s->mix, n, c->ssm_conv, L->ssm_conv, c->ssm_kernel);
    const float qscale = 1.0f / sqrtf((float)dk);
    for (size_t t = 0; t < n; t++) {
        float *m = s->mix + t * c->ssm_conv;
        /* transformers' l2norm: eps 1e-6 inside the square root, whatever the model's */
        for (uint32_t h = 0; h < 2 * nk; h++)
            lc_infer_l2norm(m + (size_t)h * dk, dk, 1e-6f);
        for (size_t i = 0; i < key; i++)
            m[i] *= qscale;
        for (uint32_t j = 0; j < nv; j++) {
            float *b = s->beta + t * nv + j, *g = s->decay + t * nv + j;
            *b = 1.0f / (1.0f + expf(-*b));
            *g = expf(L->ssm_a[j] * lc_infer_softplus(*g + L->ssm_dt[j]));
        }
    }
    for (uint32_t j = 0; j < nv; j++) {
        const uint32_t kh = c->ssm_tiled ? j % nk : j / (nv / nk);
        float *state = s->state + (size_t)j * dk * dv;
        memset(state, 0, (size_t)dk * dv * sizeof *state);
        for (size_t t = 0; t < n; t++) {
            const float *m = s->mix + t * c->ssm_conv;
            lc_infer_delta_step(state, m + (size_t)kh * dk, m + key + (size_t)kh * dk,
                                m + 2 * key + (size_t)j * dv, s->decay[t * nv + j],
                                s->beta[t * nv + j], dk, dv, s->core + t * inner + (size_t)j * dv,
                                s->delta);
        }
    }
    for (size_t t = 0; t < n; t++)
        for (uint32_t j = 0; j < nv; j++) {
            float *o = s->core + t * inner + (size_t)j * dv;
            lc_infer_gated_rmsnorm(o, o, L->ssm_norm, s->z + t * inner + (size_t)j * dv, dv,
                                   c->eps);
        }
    LC_TRY(lc_infer_mm_tapped(c, &L->ssm_out, NULL, s->core, n, s->proj, err));
    residual(s->x, s->proj, n * c->embd);
    return LC_OK;
}



/* proj [n, embd] = sum over each token's chosen experts of weight * expert(h): each
 * expert runs once over the tokens that chose it, in expert order. */
static lc_code moe_ffn(lc_infer *c, const lc_infer_layer *L, lc_infer_run *s, size_t n,
                       lc_error *err) {
    const uint32_t k = c->n_expert_used;
    LC_TRY(lc_infer_mm_tapped(c, &L->router, NULL, s->xb, n, s->route, err));
    for (size_t t = 0; t < n; t++)
        lc_infer_route_token(c, s->route + t * c->n_expert, s->chosen + t * k, s->weight + t * k);
    memset(s->proj, 0, n * c->embd * sizeof *s->proj);
    for (uint32_t e = 0; e < c->n_expert; e++) {
        size_t m = 0;
        for (size_t t = 0; t < n; t++)
            for (uint32_t j = 0; j < k; j++)
                if (s->chosen[t * k + j] == (int32_t)e) {
                    s->rows[m] = t * k + j;
                    memcpy(s->xe + m * c->embd, s->xb + t * c->embd, c->embd * sizeof(float));
                    m++;
                }
        if (m == 0)
            continue;
        LC_TRY(lc_infer_gated_ffn(c, &L->egate[e], &L->eup[e], &L->edown[e], s->xe, m, s->hb,
                                  s->hb2, s->ye, err));
        for (size_t i = 0; i < m; i++) {
            const size_t t = s->rows[i] / k;
            const float w = s->weight[s->rows[i]];
            for (uint32_t d = 0; d < c->embd; d++)
                s->proj[t * c->embd + d] += s->ye[i * c->embd + d] * w;
        }
    }
    if (!L->shexp)
        return LC_OK;
    /* qwen35moe: proj += sigmoid(sgate_inp . h) * shared(h) for every token */
    LC_TRY(lc_infer_gated_ffn(c, &L->sgate, &L->sup, &L->sdown, s->xb, n, s->hb, s->hb2, s->xe,
                              err));
    LC_TRY(lc_infer_mm_tapped(c, &L->sgate_inp, NULL, s->xb, n, s->route, err));
    for (size_t t = 0; t < n; t++) {
        const float g = 1.0f / (1.0f + expf(-s->route[t]));
        for (uint32_t d = 0; d < c->embd; d++)
            s->proj[t * c->embd + d] += g * s->xe[t * c->embd + d];
    }
    return LC_OK;
}

/* x += post(ffn(h)), h = rmsnorm(x): gated (SiLU or GELU) or a mixture of experts */
static lc_code ffn_block(lc_infer *c, const lc_infer_layer *L, lc_infer_run *s, size_t n,
                         lc_error *err) {
    lc_infer_rmsnorm_rows(s->xb, s->x, L->ffn_norm, n, c->embd, c->eps);
    if (L->moe)
        LC_TRY(moe_ffn(c, L, s, n, err));
    else
        LC_TRY(lc_infer_gated_ffn(c, &L->gate, &L->up, &L->down, s->xb, n, s->hb, s->hb2, s->proj,
                         err));
    if (L->ffn_post_norm)
        lc_infer_rmsnorm_rows(s->proj, s->proj, L->ffn_post_norm, n, c->embd, c->eps);
    residual(s->x, s->proj, n * c->embd);
    return LC_OK;
}

lc_code lc_infer_hidden(lc_infer *c, const int32_t *tokens, size_t n, float *hidden,
                        const lc_infer_hook *hook, lc_error *err) {
    if (n == 0 || n > UINT32_MAX)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%zu tokens: at least 1 and below 2^32",
                       n);
    for (size_t t = 0; t < n; t++)
        if (tokens[t] < 0 || (uint32_t)tokens[t] >= c->vocab)
            return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "token %zu is %" PRId32 ", outside the "
                           "vocabulary of %" PRIu32, t, tokens[t], c->vocab);
    lc_infer_run s;
    lc_code rc = build_run(&s, c, n, err);
    if (rc == LC_OK)
        rc = embed(c, tokens, n, s.x, err);
    if (rc == LC_OK && c->gemma4)
        rc = lc_infer_g4_inputs(c, tokens, &s, n, err);
    for (uint32_t l = 0; l < c->n_layers && rc == LC_OK; l++) {
        const lc_infer_layer *L = &c->layers[l];
        if (c->gemma4) {            /* its own blocks: per-layer shapes and inputs */
            if ((rc = lc_infer_g4_layer(c, l, &s, n, err)) == LC_OK && hook && hook->fn)
                rc = hook->fn(hook->user, l, s.x, n, c->embd, err);
            continue;
        }
        rc = L->recurrent ? recurrent_block(c, L, &s, n, err)
           : c->attn_gate ? gated_attention_block(c, L, &s, n, err)
                          : attention_block(c, L, &s, n, err);
        if (rc != LC_OK || (rc = ffn_block(c, L, &s, n, err)) != LC_OK)
            break;
        if (hook && hook->fn)
            rc = hook->fn(hook->user, l, s.x, n, c->embd, err);
    }
    if (rc == LC_OK)
        lc_infer_rmsnorm_rows(hidden, s.x, c->output_norm, n, c->embd, c->eps);
    if (rc == LC_OK && c->tap && c->output.role != LC_ROLE_NONE)   /* the head's input */
        rc = c->tap(c->tap_user, c->output.role, UINT32_MAX, UINT32_MAX, hidden, n, c->embd,
                    err);
    free_run(&s);
    return rc;
}

lc_code lc_infer_head(lc_infer *c, const float *hidden, size_t n, float *logits,
                      lc_error *err) {
    if (n == 0)
        return LC_OK;
    LC_TRY(lc_infer_matmul(&c->mm, &c->output, NULL, hidden, n, logits, err));
    if (c->final_softcap > 0)               /* gemma: cap * tanh(logits / cap) */
        lc_infer_softcap(logits, n * (size_t)c->vocab, c->final_softcap);
    return LC_OK;
}

lc_code lc_infer_forward(lc_infer *c, const int32_t *tokens, size_t n, float *logits,
                         const lc_infer_hook *hook, lc_error *err) {
    if (n == 0 || n > UINT32_MAX)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%zu tokens: at least 1 and below 2^32",
                       n);
    float *h = lc_malloc_array(n, (size_t)c->embd * sizeof *h);
    if (!h)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu tokens of %"
                       PRIu32 " floats", n, c->embd);
    lc_code rc = lc_infer_hidden(c, tokens, n, h, hook, err);
    if (rc == LC_OK)
        rc = lc_infer_head(c, h, n, logits, err);
    lc_free(h);
    return rc;
}
