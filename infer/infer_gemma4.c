/* infer/infer_gemma4.c: gemma4's forward pass (Gemma 4's text model, dense and with experts),
 * as transformers' Gemma4ForCausalLM computes it in float32, from a GGUF as the pinned
 * converter writes it or from transformers' folder (the same tensors: norms as they
 * are, Gemma 4 multiplies by w, not 1 + w; the per-layer shapes in lc_hparams either
 * way, from the keys or from config.json).
 *
 * What differs from gemma3's blocks (infer.c), per layer l:
 *   - its kind from attention.sliding_window_pattern (layer_types): sliding layers attend
 *     within sliding_window with their own head size (key_length_swa), KV heads
 *     (head_count_kv[l]) and RoPE (freq_base_swa over rope.dimension_count_swa); full
 *     layers use key_length and the proportional RoPE (rope_freqs, or the same made from
 *     hp->rope_prop_pairs: 1 on the rotated pairs, 1e30 on the others, which do not
 *     turn);
 *   - q and k RMS-normed per head with their weights, v with none; scores are not
 *     scaled (1.0); a full layer without attn_v takes its values from the keys'
 *     projection (attention_k_eq_v), before the norms;
 *   - the last shared_kv_layers layers have no K/V of their own: each attends to the
 *     keys and values of the last earlier layer of its kind that has them;
 *   - after the FFN, the per-layer input (embedding_length_per_layer_input = P):
 *     x += rmsnorm(Wproj (gelu(Wgate x) * pin_l)) * post_norm, where pin [layers, n, P]
 *     = ((rmsnorm_P(Wmodel_proj x0 / sqrt(embd)) * proj_norm) + ple_embd[token] sqrt(P))
 *       / sqrt(2), x0 the scaled embedding;
 *   - x *= layer_output_scale;
 *   - with experts (ffn_gate_inp), the dense FFN and the experts run side by side on
 *     the attention's output r:
 *       ffn = post_norm_1(dense(ffn_norm(r))) + post_norm_2(experts(pre_norm_2(r)))
 *     routed by softmax(Wrouter (rmsnorm(r) * router_scale / sqrt(embd))), top-k,
 *     renormalised, times each chosen expert's scale; gate and up rows of an expert are
 *     one stack [expert, 2 ff_exp, embd].
 * Memory: the generic run buffers sized for the widest layer, plus pin and the kept
 * keys and values of one sliding and one full layer (the KV cache shared layers read). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infer/infer_impl.h"
#include "libconvert/alloc.h"

/* ---- opening ---- */

lc_code lc_infer_g4_open(lc_infer *c, const lc_hparams *hp, const lc_tensor *const *top,
                         lc_error *err) {
    const uint32_t shared = hp->shared_kv_layers;
    const uint32_t head_swa = hp->head_dim_swa ? hp->head_dim_swa : hp->head_dim;
    c->ple = hp->embd_per_layer_input;
    c->rot_swa = hp->rope_dim_swa;
    if (!hp->swa_layers_given || hp->n_swa_layers != c->n_layers)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "hyperparameters: gemma4 needs its "
                       "sliding layers' list (attention.sliding_window_pattern, layer_types) "
                       "of one entry a layer");
    for (uint32_t l = 0; l < c->n_layers; l++)
        c->layers[l].sliding = hp->swa_layers[l];
    if (shared > c->n_layers)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "hyperparameters: %" PRIu32
                       " shared-KV layers (attention.shared_kv_layers) of %" PRIu32, shared,
                       c->n_layers);
    if (head_swa % 2)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "hyperparameters: the sliding layers' "
                       "head size %" PRIu32 " (attention.key_length_swa) is odd", head_swa);
    const uint32_t first_shared = c->n_layers - shared;
    int32_t keeper[2] = { -1, -1 };         /* the last layer of each kind owning K/V */
    c->q_dim = c->kv_dim = 0;
    for (uint32_t l = 0; l < c->n_layers; l++) {
        lc_infer_layer *L = &c->layers[l];
        const int kind = L->sliding ? 0 : 1;
        L->head_dim = L->sliding ? head_swa : hp->head_dim;
        L->n_kv_heads = l < hp->n_head_count_kv_layers ? hp->head_count_kv_layers[l]
                                                       : hp->head_count_kv;
        if (L->n_kv_heads == 0 || c->n_heads % L->n_kv_heads)
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "hyperparameters: layer %" PRIu32
                           ": %" PRIu32 " KV heads (attention.head_count_kv) for %" PRIu32
                           " heads", l, L->n_kv_heads, c->n_heads);
        L->v_norm = true;
        L->out_scale = 1.0f;
        if (l < first_shared) {
            keeper[kind] = (int32_t)l;
        } else {
            if (keeper[kind] < 0)           /* the keys and the tensors disagree */
                return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "layer %" PRIu32 " shares the "
                               "keys of an earlier %s layer (attention.shared_kv_layers), and "
                               "there is none", l, L->sliding ? "sliding" : "full");
            const lc_infer_layer *K = &c->layers[keeper[kind]];
            L->shares_kv = true;
            L->n_kv_heads = K->n_kv_heads;  /* it attends to the keeper's heads */
            c->layers[keeper[kind]].keeps_kv = true;
        }
        const uint32_t q = c->n_heads * L->head_dim, kv = L->n_kv_heads * L->head_dim;
        c->q_dim = q > c->q_dim ? q : c->q_dim;
        c->kv_dim = kv > c->kv_dim ? kv : c->kv_dim;
    }
    c->window = hp->sliding_window;
    c->attn_scale = 1.0f;                   /* transformers' self.scaling = 1.0 */
    c->norm_topk = true;                    /* the router renormalises its top k */
    if (c->ple == 0)
        return LC_OK;
    const lc_tensor *emb = top[LC_ROLE_PER_LAYER_TOKEN_EMBD];
    const lc_tensor *proj = top[LC_ROLE_PER_LAYER_MODEL_PROJ];
    if (!emb || !proj || !top[LC_ROLE_PER_LAYER_PROJ_NORM])
        return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the model has per-layer inputs of %"
                       PRIu32 " but no %s", c->ple, !emb ? "per_layer_token_embd"
                       : !proj ? "per_layer_model_proj" : "per_layer_proj_norm");
    const uint64_t width = (uint64_t)c->ple * c->n_layers;
    LC_TRY(lc_infer_mat_init(&c->ple_embd, emb, err));
    LC_TRY(lc_infer_mat_init(&c->ple_model_proj, proj, err));
    if (c->ple_embd.cols != width || c->ple_embd.rows < c->vocab)
        return lc_fail_in(err, LC_E_MISMATCH, LC_NO_OFFSET, emb->name, "tensor %.100s is %"
                          PRIu64 " x %" PRIu64 "; the model needs %" PRIu32 " x %" PRIu64,
                          emb->name, c->ple_embd.rows, c->ple_embd.cols, c->vocab, width);
    if (c->ple_model_proj.rows != width || c->ple_model_proj.cols != c->embd)
        return lc_fail_in(err, LC_E_MISMATCH, LC_NO_OFFSET, proj->name, "tensor %.100s is not %"
                          PRIu64 " x %" PRIu32, proj->name, width, c->embd);
    c->ple_model_proj.role = LC_ROLE_PER_LAYER_MODEL_PROJ;
    c->ple_model_proj.layer = c->ple_model_proj.expert = UINT32_MAX;
    LC_TRY(lc_infer_read_vector(top[LC_ROLE_PER_LAYER_PROJ_NORM], c->ple, 0,
                                &c->ple_proj_norm, err));
    if (!(c->ple_raw = lc_malloc((size_t)c->ple_embd.row_bytes)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    return LC_OK;
}

/* w is tensor t of role in layer l, rows x cols. */
static lc_code mat(lc_infer_mat *w, const lc_tensor *t, lc_role role, uint32_t l,
                   uint64_t rows, uint64_t cols, lc_error *err) {
    LC_TRY(lc_infer_mat_init(w, t, err));
    if (w->rows != rows || w->cols != cols)
        return lc_fail_in(err, LC_E_MISMATCH, LC_NO_OFFSET, t->name, "tensor %.100s is %" PRIu64
                          " x %" PRIu64 "; layer %" PRIu32 " needs %" PRIu64 " x %" PRIu64,
                          t->name, w->rows, w->cols, l, rows, cols);
    w->role = role;
    w->layer = l;
    w->expert = UINT32_MAX;
    return LC_OK;
}

/* The experts of layer l: a router with its input scale, per-expert scales, the
 * stacked gate-and-up and down matrices sliced one expert at a time, the extra norms. */
static lc_code open_experts(lc_infer *c, const lc_tensor *const *t, uint32_t l,
                            lc_infer_layer *L, lc_error *err) {
    const uint32_t E = c->n_expert, ff = c->ff_exp, d = c->embd;
    const struct { lc_role role; const char *name; } need[] = {
        { LC_ROLE_FFN_GATE_UP_EXPS, "ffn_gate_up_exps" },
        { LC_ROLE_FFN_DOWN_EXPS, "ffn_down_exps" },
        { LC_ROLE_FFN_GATE_INP_SCALE, "ffn_gate_inp.scale" },
        { LC_ROLE_FFN_DOWN_EXPS_SCALE, "ffn_down_exps.scale" },
        { LC_ROLE_FFN_POST_NORM_1, "post_ffw_norm_1" }, { LC_ROLE_FFN_PRE_NORM_2, "pre_ffw_norm_2" },
        { LC_ROLE_FFN_POST_NORM_2, "post_ffw_norm_2" },
    };
    for (size_t i = 0; i < sizeof need / sizeof *need; i++)
        if (!t[need[i].role])
            return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "layer %" PRIu32 " has a router "
                           "but no %s", l, need[i].name);
    if (E == 0)
        return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the model has a router but "
                       "declares no experts (expert_count)");
    LC_TRY(mat(&L->router, t[LC_ROLE_FFN_GATE_INP], LC_ROLE_FFN_GATE_INP, l, E, d, err));
    lc_infer_mat gu, dn;
    LC_TRY(mat(&gu, t[LC_ROLE_FFN_GATE_UP_EXPS], LC_ROLE_FFN_GATE_UP_EXPS, l,
               (uint64_t)E * 2 * ff, d, err));
    LC_TRY(mat(&dn, t[LC_ROLE_FFN_DOWN_EXPS], LC_ROLE_FFN_DOWN_EXPS, l, (uint64_t)E * d, ff,
               err));
    if (!(L->egate = lc_calloc(E, sizeof *L->egate)) ||
        !(L->eup = lc_calloc(E, sizeof *L->eup)) || !(L->edown = lc_calloc(E, sizeof *L->edown)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu32 " experts", E);
    for (uint32_t e = 0; e < E; e++) {
        LC_TRY(lc_infer_mat_slice(&L->egate[e], &gu, (uint64_t)e * 2 * ff, ff, err));
        LC_TRY(lc_infer_mat_slice(&L->eup[e], &gu, (uint64_t)e * 2 * ff + ff, ff, err));
        LC_TRY(lc_infer_mat_slice(&L->edown[e], &dn, (uint64_t)e * d, d, err));
        L->egate[e].expert = L->edown[e].expert = e;
        L->eup[e].role = LC_ROLE_NONE;      /* one product with gate: told once */
    }
    LC_TRY(lc_infer_read_vector(t[LC_ROLE_FFN_GATE_INP_SCALE], d, 0, &L->router_scale, err));
    LC_TRY(lc_infer_read_vector(t[LC_ROLE_FFN_DOWN_EXPS_SCALE], E, 0, &L->expert_scale, err));
    LC_TRY(lc_infer_read_vector(t[LC_ROLE_FFN_POST_NORM_1], d, 0, &L->ffn_post_norm_1, err));
    LC_TRY(lc_infer_read_vector(t[LC_ROLE_FFN_PRE_NORM_2], d, 0, &L->ffn_pre_norm_2, err));
    LC_TRY(lc_infer_read_vector(t[LC_ROLE_FFN_POST_NORM_2], d, 0, &L->ffn_post_norm_2, err));
    L->moe = true;
    return LC_OK;
}

lc_code lc_infer_g4_open_layer(lc_infer *c, const lc_tensor *const *t, uint32_t l,
                               lc_error *err) {
    lc_infer_layer *L = &c->layers[l];
    const uint32_t hd = L->head_dim, d = c->embd, q = c->n_heads * hd, kv = L->n_kv_heads * hd;
    struct { lc_role role; uint32_t n; float **out; } vec[] = {
        { LC_ROLE_ATTN_NORM, d, &L->attn_norm }, { LC_ROLE_FFN_NORM, d, &L->ffn_norm },
        { LC_ROLE_ATTN_POST_NORM, d, &L->attn_post_norm },
        { LC_ROLE_FFN_POST_NORM, d, &L->ffn_post_norm }, { LC_ROLE_ATTN_Q_NORM, hd, &L->q_norm },
        { LC_ROLE_ATTN_K_NORM, hd, &L->k_norm },
    };
    for (size_t i = 0; i < sizeof vec / sizeof *vec; i++)
        LC_TRY(lc_infer_read_vector(t[vec[i].role], vec[i].n, 0, vec[i].out, err));
    LC_TRY(mat(&L->wq, t[LC_ROLE_ATTN_Q], LC_ROLE_ATTN_Q, l, q, d, err));
    LC_TRY(mat(&L->wo, t[LC_ROLE_ATTN_OUT], LC_ROLE_ATTN_OUT, l, d, q, err));
    if (!L->shares_kv) {
        if (!t[LC_ROLE_ATTN_K] || !L->k_norm)
            return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "layer %" PRIu32 " has keys of "
                           "its own (before gemma4.attention.shared_kv_layers) but no blk.%"
                           PRIu32 ".%s.weight", l, l,
                           !t[LC_ROLE_ATTN_K] ? "attn_k" : "attn_k_norm");
        LC_TRY(mat(&L->wk, t[LC_ROLE_ATTN_K], LC_ROLE_ATTN_K, l, kv, d, err));
        if (t[LC_ROLE_ATTN_V])              /* else the keys' projection is the values' */
            LC_TRY(mat(&L->wv, t[LC_ROLE_ATTN_V], LC_ROLE_ATTN_V, l, kv, d, err));
    }
    LC_TRY(mat(&L->gate, t[LC_ROLE_FFN_GATE], LC_ROLE_FFN_GATE, l, c->ff, d, err));
    LC_TRY(mat(&L->up, t[LC_ROLE_FFN_UP], LC_ROLE_FFN_UP, l, c->ff, d, err));
    LC_TRY(mat(&L->down, t[LC_ROLE_FFN_DOWN], LC_ROLE_FFN_DOWN, l, d, c->ff, err));
    if (t[LC_ROLE_LAYER_OUTPUT_SCALE]) {
        float *s;
        LC_TRY(lc_infer_read_vector(t[LC_ROLE_LAYER_OUTPUT_SCALE], 1, 0, &s, err));
        L->out_scale = s[0];
        lc_free(s);
    }
    if (c->ple) {
        const char *missing = !t[LC_ROLE_PER_LAYER_INP_GATE] ? "inp_gate"
                            : !t[LC_ROLE_PER_LAYER_PROJ] ? "proj"
                            : !t[LC_ROLE_PER_LAYER_POST_NORM] ? "post_norm" : NULL;
        if (missing)
            return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "layer %" PRIu32 " has no %s (the "
                           "model has per-layer inputs)", l, missing);
        LC_TRY(mat(&L->ple_gate, t[LC_ROLE_PER_LAYER_INP_GATE], LC_ROLE_PER_LAYER_INP_GATE, l,
                   c->ple, d, err));
        LC_TRY(mat(&L->ple_proj, t[LC_ROLE_PER_LAYER_PROJ], LC_ROLE_PER_LAYER_PROJ, l, d,
                   c->ple, err));
        LC_TRY(lc_infer_read_vector(t[LC_ROLE_PER_LAYER_POST_NORM], d, 0, &L->ple_norm, err));
    }
    return t[LC_ROLE_FFN_GATE_INP] ? open_experts(c, t, l, L, err) : LC_OK;
}

/* r over head_dim dimensions, n_rot of them turning, from base; factors divide the
 * frequencies (NULL: none). */
static lc_code make_rope(lc_infer_rope *r, uint32_t head_dim, uint32_t n_rot, double base,
                         const float *factors, lc_error *err) {
    lc_hparams h = { .head_dim = head_dim, .rope_dim = n_rot, .rope_theta = base };
    r->style = LC_ROPE_NEOX;
    if (!(r->inv_freq = lc_malloc_array(n_rot / 2, sizeof(float))))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_infer_rope_init(r, &h, factors);
    return LC_OK;
}

lc_code lc_infer_g4_rope(lc_infer *c, const lc_hparams *hp, const lc_tensor *rope_freqs,
                         lc_error *err) {
    uint32_t head_swa = 0, rot_swa = 0;
    for (uint32_t l = 0; l < c->n_layers; l++)
        if (c->layers[l].sliding)
            head_swa = c->layers[l].head_dim;
    const uint32_t rot = hp->rope_dim ? hp->rope_dim : hp->head_dim;
    if (rot == 0 || rot % 2 || rot > hp->head_dim)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "hyperparameters: the full layers' "
                       "rotated dimensions are 0, odd or past key_length");
    /* a GGUF's rope_freqs, else transformers' proportional RoPE made the same way:
     * 1 on the rotated pairs, 1e30 (no turn) on the rest */
    float *factors = NULL;
    LC_TRY(lc_infer_read_vector(rope_freqs, rot / 2, 0, &factors, err));
    if (!factors && hp->rope_prop_pairs) {
        if (!(factors = lc_malloc_array(rot / 2, sizeof(float))))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        for (uint32_t i = 0; i < rot / 2; i++)
            factors[i] = i < hp->rope_prop_pairs ? 1.0f : 1e30f;
    }
    lc_code rc = make_rope(&c->rope, hp->head_dim, rot, hp->rope_theta, factors, err);
    lc_free(factors);
    LC_TRY(rc);
    if (head_swa == 0)
        return LC_OK;
    rot_swa = c->rot_swa ? c->rot_swa : head_swa;
    if (rot_swa % 2 || rot_swa > head_swa)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "hyperparameters: the sliding layers "
                       "rotate %" PRIu32 " of %" PRIu32 " dimensions (rope.dimension_count_swa)",
                       rot_swa, head_swa);
    return make_rope(&c->rope_local, head_swa, rot_swa,
                     hp->rope_theta_swa > 0 ? hp->rope_theta_swa : hp->rope_theta, NULL, err);
}

void lc_infer_g4_close(lc_infer *c) {
    for (uint32_t l = 0; c->layers && l < c->n_layers; l++) {
        lc_infer_layer *L = &c->layers[l];
        float *v[] = { L->ple_norm, L->router_scale, L->expert_scale, L->ffn_post_norm_1,
                       L->ffn_pre_norm_2, L->ffn_post_norm_2 };
        for (size_t i = 0; i < sizeof v / sizeof *v; i++)
            lc_free(v[i]);
    }
    lc_free(c->ple_proj_norm);
    lc_free(c->ple_raw);
}

/* ---- running ---- */

lc_code lc_infer_g4_run_build(const lc_infer *c, lc_infer_run *s, size_t n, lc_error *err) {
    bool shares = false;
    for (uint32_t l = 0; l < c->n_layers; l++)
        shares |= c->layers[l].shares_kv;
    const size_t P = c->ple, W = (size_t)c->ple * c->n_layers, kv = c->kv_dim;
    struct { float **p; size_t count; } bufs[] = {
        { &s->pin, W * n }, { &s->ptmp, W * n }, { &s->prow, W }, { &s->pg, P * n },
        { &s->y2, c->n_expert ? (size_t)c->embd * n : 0 },
        { &s->kept_k[0], shares ? kv * n : 0 }, { &s->kept_v[0], shares ? kv * n : 0 },
        { &s->kept_k[1], shares ? kv * n : 0 }, { &s->kept_v[1], shares ? kv * n : 0 },
    };
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i].count && !(*bufs[i].p = lc_malloc_array(bufs[i].count, sizeof(float))))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu tokens", n);
    return LC_OK;
}

void lc_infer_g4_run_free(lc_infer_run *s) {
    float *all[] = { s->pin, s->ptmp, s->prow, s->pg, s->y2, s->kept_k[0], s->kept_v[0],
                     s->kept_k[1], s->kept_v[1] };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        lc_free(all[i]);
}

lc_code lc_infer_g4_inputs(lc_infer *c, const int32_t *tokens, lc_infer_run *s, size_t n,
                           lc_error *err) {
    if (c->ple == 0)
        return LC_OK;
    const uint32_t P = c->ple, NL = c->n_layers;
    const size_t W = (size_t)P * NL;
    /* float32 constants as transformers makes them from Python floats */
    const float proj_scale = (float)(1.0 / sqrt((double)c->embd));
    const float embd_scale = (float)sqrt((double)P), mix = (float)(1.0 / sqrt(2.0));
    LC_TRY(lc_infer_mm_tapped(c, &c->ple_model_proj, NULL, s->x, n, s->ptmp, err));
    for (size_t t = 0; t < n; t++) {
        float *p = s->ptmp + t * W;         /* [NL, P] this token's context part */
        LC_TRY(lc_infer_mat_rows(&c->ple_embd, (uint64_t)tokens[t], 1, s->prow, c->ple_raw,
                                 err));
        for (size_t i = 0; i < W; i++)
            p[i] *= proj_scale;
        for (uint32_t l = 0; l < NL; l++) {
            float *pl = p + (size_t)l * P, *out = s->pin + ((size_t)l * n + t) * P;
            lc_infer_rmsnorm(pl, pl, c->ple_proj_norm, P, c->eps);
            for (uint32_t i = 0; i < P; i++)
                out[i] = (pl[i] + s->prow[(size_t)l * P + i] * embd_scale) * mix;
        }
    }
    return LC_OK;
}

/* x += post_norm(Wo attention(rope(qnorm(Wq h)), rope(knorm(Wk h)), vnorm(Wv h))),
 * h = rmsnorm(x) * attn_norm; a shared-KV layer's keys and values are the keeper's. */
static lc_code attention_block(lc_infer *c, const lc_infer_layer *L, lc_infer_run *s,
                               size_t n, lc_error *err) {
    const uint32_t hd = L->head_dim, H = c->n_heads, KVH = L->n_kv_heads;
    const size_t qd = (size_t)H * hd, kvd = (size_t)KVH * hd;
    const int kind = L->sliding ? 0 : 1;
    const lc_infer_rope *rope = L->sliding ? &c->rope_local : &c->rope;
    lc_infer_rmsnorm_rows(s->xb, s->x, L->attn_norm, n, c->embd, c->eps);
    LC_TRY(lc_infer_mm_tapped(c, &L->wq, NULL, s->xb, n, s->q, err));   /* [n, H, hd] */
    lc_infer_rmsnorm_rows(s->q, s->q, L->q_norm, n * H, hd, c->eps);
    for (size_t t = 0; t < n; t++)
        lc_infer_rope_apply(rope, s->q + t * qd, H, (uint32_t)t);
    float *k = L->keeps_kv ? s->kept_k[kind] : s->k;   /* [n, KVH, hd] */
    float *v = L->keeps_kv ? s->kept_v[kind] : s->v;
    if (L->shares_kv) {
        k = s->kept_k[kind];
        v = s->kept_v[kind];
    } else {
        LC_TRY(lc_infer_mm_tapped(c, &L->wk, NULL, s->xb, n, k, err));
        if (L->wv.t)
            LC_TRY(lc_infer_mm_tapped(c, &L->wv, NULL, s->xb, n, v, err));
        else                                /* attention_k_eq_v: before either norm */
            memcpy(v, k, n * kvd * sizeof *v);
        lc_infer_rmsnorm_rows(k, k, L->k_norm, n * KVH, hd, c->eps);
        lc_infer_rmsnorm_rows(v, v, NULL, n * KVH, hd, c->eps);
        for (size_t t = 0; t < n; t++)
            lc_infer_rope_apply(rope, k + t * kvd, KVH, (uint32_t)t);
    }
    LC_TRY(lc_infer_attend(s->att, s->q, k, v, n, H, KVH, hd, c->attn_scale,
                           L->sliding ? c->window : 0, c->mm.threads, err));
    LC_TRY(lc_infer_mm_tapped(c, &L->wo, NULL, s->att, n, s->proj, err));
    lc_infer_rmsnorm_rows(s->proj, s->proj, L->attn_post_norm, n, c->embd, c->eps);
    for (size_t i = 0; i < n * c->embd; i++)
        s->x[i] += s->proj[i];
    return LC_OK;
}

/* y2 [n, embd] = the experts on r = s->x (the attention's output): routed by
 * softmax(Wrouter (rmsnorm(r) * router_scale / sqrt(embd))), top k renormalised, times
 * the chosen experts' scales; each expert runs once over its tokens' pre_norm_2(r). */
static lc_code experts(lc_infer *c, const lc_infer_layer *L, lc_infer_run *s, size_t n,
                       lc_error *err) {
    const uint32_t k = c->n_expert_used, d = c->embd;
    const float root = (float)(1.0 / sqrt((double)d));
    for (size_t t = 0; t < n; t++) {        /* the router's input, into xb */
        float *h = s->xb + t * d;
        lc_infer_rmsnorm(h, s->x + t * d, NULL, d, c->eps);
        for (uint32_t i = 0; i < d; i++)
            h[i] = h[i] * L->router_scale[i] * root;
    }
    LC_TRY(lc_infer_mm_tapped(c, &L->router, NULL, s->xb, n, s->route, err));
    for (size_t t = 0; t < n; t++) {
        lc_infer_route_token(c, s->route + t * c->n_expert, s->chosen + t * k,
                             s->weight + t * k);
        for (uint32_t j = 0; j < k; j++)
            s->weight[t * k + j] *= L->expert_scale[s->chosen[t * k + j]];
    }
    lc_infer_rmsnorm_rows(s->xb, s->x, L->ffn_pre_norm_2, n, d, c->eps);
    memset(s->y2, 0, n * d * sizeof *s->y2);
    for (uint32_t e = 0; e < c->n_expert; e++) {
        size_t m = 0;
        for (size_t t = 0; t < n; t++)
            for (uint32_t j = 0; j < k; j++)
                if (s->chosen[t * k + j] == (int32_t)e) {
                    s->rows[m] = t * k + j;
                    memcpy(s->xe + m * d, s->xb + t * d, d * sizeof(float));
                    m++;
                }
        if (m == 0)
            continue;
        LC_TRY(lc_infer_gated_ffn(c, &L->egate[e], &L->eup[e], &L->edown[e], s->xe, m, s->hb,
                                  s->hb2, s->ye, err));
        for (size_t i = 0; i < m; i++) {
            const size_t t = s->rows[i] / k;
            const float w = s->weight[s->rows[i]];
            for (uint32_t j = 0; j < d; j++)
                s->y2[t * d + j] += s->ye[i * d + j] * w;
        }
    }
    return LC_OK;
}

/* x += post_norm(ffn), ffn = dense(ffn_norm(x)), or with experts
 * post_norm_1(dense(...)) + post_norm_2(experts(x)). */
static lc_code ffn_block(lc_infer *c, const lc_infer_layer *L, lc_infer_run *s, size_t n,
                         lc_error *err) {
    const size_t count = n * c->embd;
    lc_infer_rmsnorm_rows(s->xb, s->x, L->ffn_norm, n, c->embd, c->eps);
    LC_TRY(lc_infer_gated_ffn(c, &L->gate, &L->up, &L->down, s->xb, n, s->hb, s->hb2, s->proj,
                              err));
    if (L->moe) {
        lc_infer_rmsnorm_rows(s->proj, s->proj, L->ffn_post_norm_1, n, c->embd, c->eps);
        LC_TRY(experts(c, L, s, n, err));
        lc_infer_rmsnorm_rows(s->y2, s->y2, L->ffn_post_norm_2, n, c->embd, c->eps);
        for (size_t i = 0; i < count; i++)
            s->proj[i] += s->y2[i];
    }
    lc_infer_rmsnorm_rows(s->proj, s->proj, L->ffn_post_norm, n, c->embd, c->eps);
    for (size_t i = 0; i < count; i++)
        s->x[i] += s->proj[i];
    return LC_OK;
}

/* x += rmsnorm(Wproj (gelu(Wgate x) * pin_l)) * ple_norm */
static lc_code per_layer_input_block(lc_infer *c, uint32_t l, lc_infer_run *s, size_t n,
                                     lc_error *err) {
    const lc_infer_layer *L = &c->layers[l];
    LC_TRY(lc_infer_mm_tapped(c, &L->ple_gate, NULL, s->x, n, s->pg, err));   /* [n, P] */
    lc_infer_geglu(s->pg, s->pg, s->pin + (size_t)l * n * c->ple, n * c->ple);
    LC_TRY(lc_infer_mm_tapped(c, &L->ple_proj, NULL, s->pg, n, s->proj, err));
    lc_infer_rmsnorm_rows(s->proj, s->proj, L->ple_norm, n, c->embd, c->eps);
    for (size_t i = 0; i < n * c->embd; i++)
        s->x[i] += s->proj[i];
    return LC_OK;
}

lc_code lc_infer_g4_layer(lc_infer *c, uint32_t l, lc_infer_run *s, size_t n,
                          lc_error *err) {
    const lc_infer_layer *L = &c->layers[l];
    LC_TRY(attention_block(c, L, s, n, err));
    LC_TRY(ffn_block(c, L, s, n, err));
    if (c->ple)
        LC_TRY(per_layer_input_block(c, l, s, n, err));
    for (size_t i = 0; L->out_scale != 1.0f && i < n * c->embd; i++)
        s->x[i] *= L->out_scale;
    return LC_OK;
}
