/* infer/infer.c: the reference forward pass (infer.h): finding the weights through the
 * family table, the per-call state, and forward() itself. The blocks are in blocks.c,
 * the weight rows and the threaded matmul in matmul.c. */
#include "infer/infer.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "infer/blocks.h"
#include "infer/matmul.h"
#include "libconvert/alloc.h"
#include "libconvert/bytes.h"

/* ---- the model ---- */

/* One layer's weights: matrices read row by row, 1-D tensors held in float32. */
typedef struct layer_weights {
    float *attn_norm;           /* [embd] */
    float *ffn_norm;            /* [embd] */
    float *bq, *bk, *bv;        /* [q_dim], [kv_dim], [kv_dim]; NULL when absent */
    lc_infer_mat wq;            /* [q_dim, embd] */
    lc_infer_mat wk, wv;        /* [kv_dim, embd] */
    lc_infer_mat wo;            /* [embd, q_dim] */
    lc_infer_mat gate, up;      /* [ff, embd] */
    lc_infer_mat down;          /* [embd, ff] */
} layer_weights;

struct lc_infer {
    uint32_t n_layers, embd, n_heads, n_kv_heads, head_dim, ff, vocab;
    uint32_t q_dim, kv_dim;     /* n_heads * head_dim, n_kv_heads * head_dim */
    float eps;
    lc_infer_mat tok_embd;      /* [vocab, embd] */
    lc_infer_mat output;        /* [vocab, embd]; token_embd's when tied */
    float *output_norm;         /* [embd] */
    layer_weights *layers;      /* [n_layers] */
    lc_infer_rope rope;         /* rope.inv_freq: [head_dim / 2] */
    lc_infer_mm mm;             /* per-thread weight rows */
    uint8_t *raw_row;           /* [tok_embd.row_bytes] one embedding row as stored */
};

/* The tensors of a model by role: top-level ones and one set per layer. */
typedef struct found {
    const lc_tensor *top[LC_ROLE_COUNT];
    const lc_tensor *(*layer)[LC_ROLE_COUNT];       /* [n_layers][LC_ROLE_COUNT] */
} found;

/* Files every tensor whose name the family knows under its role and layer, checks its
 * shape against hp, and that every required one is there. */
static lc_code find_tensors(const lc_model *m, const lc_arch *a, const lc_hparams *hp,
                            lc_spelling sp, found *f, lc_error *err) {
    lc_arch_seen seen;
    LC_TRY(lc_arch_seen_init(&seen, a, hp->block_count, err));
    lc_code rc = LC_OK;
    for (size_t i = 0; i < lc_model_tensor_count(m) && rc == LC_OK; i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        uint32_t layer;
        const lc_arch_tensor *row = lc_arch_find(a, sp, t->name, &layer);
        if (!row)
            continue;                           /* not the forward pass's (or unknown) */
        if (layer != UINT32_MAX && layer >= hp->block_count) {
            lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "tensor %.100s is in layer %" PRIu32
                    " of a %" PRIu32 "-layer model", t->name, layer, hp->block_count);
            lc_err_context(err, NULL, t->name);
            rc = LC_E_MALFORMED;
            break;
        }
        uint32_t nd;
        uint64_t want[2];
        if (lc_arch_shape(row, hp, &nd, want) &&
            (t->ndim != nd || t->shape[0] != want[0] || (nd == 2 && t->shape[1] != want[1]))) {
            char have[96], exp[64];
            lc_shape_format(t, have, sizeof have);
            snprintf(exp, sizeof exp, nd == 2 ? "[%" PRIu64 ", %" PRIu64 "]" : "[%" PRIu64 "]",
                     want[0], want[1]);
            lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "tensor %.80s has shape %s; the "
                    "hyperparameters give %s", t->name, have, exp);
            lc_err_context(err, NULL, t->name);
            rc = LC_E_MISMATCH;
            break;
        }
        if (layer == UINT32_MAX)
            f->top[row->role] = t;
        else
            f->layer[layer][row->role] = t;
        lc_arch_seen_mark(&seen, row, layer);
    }
    if (rc == LC_OK)
        rc = lc_arch_seen_check(&seen, sp, err);
    lc_arch_seen_free(&seen);
    return rc;
}

/* A 1-D tensor of n elements into a new float32 array; NULL t gives NULL. */
static lc_code read_vector(const lc_tensor *t, uint64_t n, float **out, lc_error *err) {
    *out = NULL;
    if (!t)
        return LC_OK;
    lc_infer_mat v;
    LC_TRY(lc_infer_mat_init(&v, t, err));
    float *buf = lc_malloc_array((size_t)n, sizeof(float));
    uint8_t *raw = lc_malloc((size_t)v.row_bytes ? (size_t)v.row_bytes : 1);
    lc_code rc = LC_OK;
    if (!buf || !raw)
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu64 " floats", n);
    else if (v.rows != 1 || v.cols != n) {
        rc = lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "tensor %.100s is not a vector of %"
                     PRIu64 " elements", t->name, n);
        lc_err_context(err, NULL, t->name);
    } else
        rc = lc_infer_mat_rows(&v, 0, 1, buf, raw, err);
    lc_free(raw);
    if (rc != LC_OK) {
        lc_free(buf);
        return rc;
    }
    *out = buf;
    return LC_OK;
}

/* Which pairs RoPE rotates, from where the Q/K rows come from (see infer.h). */
static lc_rope_style rope_style(const lc_arch *a, lc_spelling sp) {
    return sp == LC_SPELL_GGUF ? a->rope : sp == LC_SPELL_HF ? LC_ROPE_NEOX : LC_ROPE_NORM;
}

static lc_code check_hparams(const lc_hparams *hp, lc_error *err) {
    const char *bad = hp->block_count == 0 ? "block_count is 0"
                    : hp->embedding_length == 0 ? "embedding_length is 0"
                    : hp->head_count == 0 || hp->head_count_kv == 0 ? "a head count is 0"
                    : hp->head_count % hp->head_count_kv ? "head_count is not a multiple of "
                                                           "head_count_kv"
                    : hp->head_dim == 0 || hp->head_dim % 2 ? "head_dim is 0 or odd"
                    : !(hp->rms_eps >= 0) ? "the rms epsilon is negative"
                    : !(hp->rope_theta > 0) ? "the rope base is not positive" : NULL;
    if (bad)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "hyperparameters: %s", bad);
    return LC_OK;
}

static lc_code open_layer(lc_infer *c, const lc_tensor *const *t, layer_weights *L,
                          lc_error *err) {
    LC_TRY(read_vector(t[LC_ROLE_ATTN_NORM], c->embd, &L->attn_norm, err));
    LC_TRY(read_vector(t[LC_ROLE_FFN_NORM], c->embd, &L->ffn_norm, err));
    LC_TRY(read_vector(t[LC_ROLE_ATTN_Q_BIAS], c->q_dim, &L->bq, err));
    LC_TRY(read_vector(t[LC_ROLE_ATTN_K_BIAS], c->kv_dim, &L->bk, err));
    LC_TRY(read_vector(t[LC_ROLE_ATTN_V_BIAS], c->kv_dim, &L->bv, err));
    LC_TRY(lc_infer_mat_init(&L->wq, t[LC_ROLE_ATTN_Q], err));
    LC_TRY(lc_infer_mat_init(&L->wk, t[LC_ROLE_ATTN_K], err));
    LC_TRY(lc_infer_mat_init(&L->wv, t[LC_ROLE_ATTN_V], err));
    LC_TRY(lc_infer_mat_init(&L->wo, t[LC_ROLE_ATTN_OUT], err));
    LC_TRY(lc_infer_mat_init(&L->gate, t[LC_ROLE_FFN_GATE], err));
    LC_TRY(lc_infer_mat_init(&L->up, t[LC_ROLE_FFN_UP], err));
    LC_TRY(lc_infer_mat_init(&L->down, t[LC_ROLE_FFN_DOWN], err));
    return LC_OK;
}

/* The widest row (elements and stored bytes) any matrix has: the matmul scratch size. */
static void widest(const lc_infer_mat *w, size_t *cols, size_t *bytes) {
    if (w->cols > *cols)
        *cols = (size_t)w->cols;
    if (w->row_bytes > *bytes)
        *bytes = (size_t)w->row_bytes;
}

/* RoPE's frequencies: a GGUF's rope_freqs tensor (llama3 factors, written by the
 * converter) when it has one, else the family's hook when hp asks for llama3 scaling.
 * Meta's rope.freqs shares the row but holds Meta's precomputed inverse frequencies,
 * not factors: like every LC_AT_COMPUTED tensor of a source, it is ignored. */
static lc_code build_rope(lc_infer *c, const lc_arch *a, const lc_hparams *hp,
                          lc_spelling sp, const lc_tensor *freqs_t, lc_error *err) {
    const uint32_t half = hp->head_dim / 2;
    float *factors = NULL;
    lc_code rc = LC_OK;
    c->rope.style = rope_style(a, sp);
    if (!(c->rope.inv_freq = lc_malloc_array(half, sizeof(float))))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (freqs_t) {
        if ((rc = read_vector(freqs_t, half, &factors, err)) != LC_OK)
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
    lc_infer_rope_init(&c->rope, hp, factors);
done:
    lc_free(factors);
    return rc;
}

lc_code lc_infer_open(const lc_model *m, const lc_arch *a, const lc_hparams *hp_in,
                      lc_spelling sp, const lc_infer_opts *o, lc_infer **out, lc_error *err) {
    lc_infer *c = NULL;
    found f = { 0 };
    lc_hparams hp = *hp_in;
    lc_code rc;
    *out = NULL;
    if ((rc = check_hparams(&hp, err)) != LC_OK)
        goto done;
    /* A declared count becomes an allocation only once it is proven: every layer has a
     * tensor of its own, so a model holds more tensors than layers. */
    if (hp.block_count > lc_model_tensor_count(m)) {
        rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "hyperparameters: block_count %" PRIu32
                     " but the model has %zu tensors", hp.block_count, lc_model_tensor_count(m));
        goto done;
    }
    if (!(f.layer = lc_calloc(hp.block_count, sizeof *f.layer)) ||
        !(c = lc_calloc(1, sizeof *c)) ||
        !(c->layers = lc_calloc(hp.block_count, sizeof *c->layers))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu32 " layers",
                     hp.block_count);
        goto done;
    }
    /* Sizes the keys may leave out come from the tensors (GGUF qwen2 has no vocab_size). */
    const lc_arch_tensor *er = lc_arch_role(a, LC_ROLE_TOKEN_EMBD);
    const lc_arch_tensor *gr = lc_arch_role(a, LC_ROLE_FFN_GATE);
    char name[160];
    const lc_tensor *t;
    if (!hp.vocab_size && er && lc_arch_name(er, sp, 0, name, sizeof name, NULL) == LC_OK &&
        (t = lc_model_find_tensor(m, name)) && t->ndim == 2 && t->shape[0] <= UINT32_MAX)
        hp.vocab_size = (uint32_t)t->shape[0];
    if (!hp.feed_forward_length && gr && lc_arch_name(gr, sp, 0, name, sizeof name, NULL) == LC_OK &&
        (t = lc_model_find_tensor(m, name)) && t->ndim == 2 && t->shape[0] <= UINT32_MAX)
        hp.feed_forward_length = (uint32_t)t->shape[0];
    if ((rc = find_tensors(m, a, &hp, sp, &f, err)) != LC_OK)
        goto done;

    c->n_layers = hp.block_count;
    c->embd = hp.embedding_length;
    c->n_heads = hp.head_count;
    c->n_kv_heads = hp.head_count_kv;
    c->head_dim = hp.head_dim;
    c->ff = hp.feed_forward_length;
    c->vocab = hp.vocab_size;
    c->q_dim = c->n_heads * c->head_dim;
    c->kv_dim = c->n_kv_heads * c->head_dim;
    c->eps = (float)hp.rms_eps;
    if ((rc = lc_infer_mat_init(&c->tok_embd, f.top[LC_ROLE_TOKEN_EMBD], err)) != LC_OK ||
        (rc = lc_infer_mat_init(&c->output, f.top[LC_ROLE_OUTPUT] ? f.top[LC_ROLE_OUTPUT]
                                : f.top[LC_ROLE_TOKEN_EMBD], err)) != LC_OK ||
        (rc = read_vector(f.top[LC_ROLE_OUTPUT_NORM], c->embd, &c->output_norm, err)) != LC_OK)
        goto done;
    size_t cols = 0, bytes = 0;
    widest(&c->output, &cols, &bytes);
    for (uint32_t l = 0; l < c->n_layers; l++) {
        layer_weights *L = &c->layers[l];
        if ((rc = open_layer(c, f.layer[l], L, err)) != LC_OK)
            goto done;
        const lc_infer_mat *ms[] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->gate, &L->up, &L->down };
        for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
            widest(ms[i], &cols, &bytes);
    }
    if (!(c->raw_row = lc_malloc((size_t)c->tok_embd.row_bytes))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    if ((rc = build_rope(c, a, &hp, sp, sp == LC_SPELL_GGUF ? f.top[LC_ROLE_ROPE_FREQS] : NULL,
                         err)) != LC_OK ||
        (rc = lc_infer_mm_build(&c->mm, o ? o->threads : 0, cols, bytes, err)) != LC_OK)
        goto done;
    *out = c;
    c = NULL;
done:
    lc_free(f.layer);
    lc_infer_close(c);
    return rc;
}

void lc_infer_close(lc_infer *c) {
    if (!c)
        return;
    for (uint32_t l = 0; c->layers && l < c->n_layers; l++) {
        layer_weights *L = &c->layers[l];
        lc_free(L->attn_norm);
        lc_free(L->ffn_norm);
        lc_free(L->bq);
        lc_free(L->bk);
        lc_free(L->bv);
    }
    lc_free(c->layers);
    lc_free(c->output_norm);
    lc_free(c->rope.inv_freq);
    lc_free(c->raw_row);
    lc_infer_mm_free(&c->mm);
    lc_free(c);
}

uint32_t lc_infer_vocab(const lc_infer *c) { return c->vocab; }
uint32_t lc_infer_embd(const lc_infer *c) { return c->embd; }

/* ---- the state of one forward call ---- */

typedef struct run_state {
    float *x;           /* [n, embd] the residual stream */
    float *xb;          /* [n, embd] normed input of a block */
    float *proj;        /* [n, embd] a block's output, added to x */
    float *q;           /* [n, q_dim] queries */
    float *k, *v;       /* [n, kv_dim] keys and values of this layer: its KV cache */
    float *att;         /* [n, q_dim] attention output, all heads */
    float *scores;      /* [n] one head's attention weights */
    float *hb, *hb2;    /* [n, ff] gate and up projections */
} run_state;

static lc_code build_run_state(run_state *s, const lc_infer *c, size_t n, lc_error *err) {
    memset(s, 0, sizeof *s);
    struct { float **p; size_t width; } bufs[] = {
        { &s->x, c->embd }, { &s->xb, c->embd }, { &s->proj, c->embd }, { &s->q, c->q_dim },
        { &s->k, c->kv_dim }, { &s->v, c->kv_dim }, { &s->att, c->q_dim }, { &s->scores, 1 },
        { &s->hb, c->ff }, { &s->hb2, c->ff },
    };
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) {
        uint64_t count;
        if (lc_mul_u64(n, bufs[i].width, &count) || count > SIZE_MAX / sizeof(float) ||
            !(*bufs[i].p = lc_malloc_array((size_t)count, sizeof(float))))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu tokens of "
                           "%zu floats", n, bufs[i].width);
    }
    return LC_OK;
}

static void free_run_state(run_state *s) {
    float *all[] = { s->x, s->xb, s->proj, s->q, s->k, s->v, s->att, s->scores, s->hb, s->hb2 };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        lc_free(all[i]);
    memset(s, 0, sizeof *s);
}

/* ---- the forward pass ---- */

/* x[t] = token_embd[tokens[t]] */
static lc_code embed(lc_infer *c, const int32_t *tokens, size_t n, float *x, lc_error *err) {
    for (size_t t = 0; t < n; t++)
        LC_TRY(lc_infer_mat_rows(&c->tok_embd, (uint64_t)tokens[t], 1, x + t * c->embd,
                                 c->raw_row, err));
    return LC_OK;
}

/* xb[t] = rmsnorm(x[t]) * w for every token */
static void rmsnorm_rows(float *xb, const float *x, const float *w, size_t n, uint32_t embd,
                         float eps) {
    for (size_t t = 0; t < n; t++)
        lc_infer_rmsnorm(xb + t * embd, x + t * embd, w, embd, eps);
}

/* x += proj */
static void residual(float *x, const float *proj, size_t count) {
    for (size_t i = 0; i < count; i++)
        x[i] += proj[i];
}

/* x += Wo attention(rope(Wq h + bq), rope(Wk h + bk), Wv h + bv), h = rmsnorm(x) */
static lc_code attention_block(lc_infer *c, const layer_weights *L, run_state *s, size_t n,
                               lc_error *err) {
    rmsnorm_rows(s->xb, s->x, L->attn_norm, n, c->embd, c->eps);
    LC_TRY(lc_infer_matmul(&c->mm, &L->wq, L->bq, s->xb, n, s->q, err));
    LC_TRY(lc_infer_matmul(&c->mm, &L->wk, L->bk, s->xb, n, s->k, err));
    LC_TRY(lc_infer_matmul(&c->mm, &L->wv, L->bv, s->xb, n, s->v, err));
    for (size_t t = 0; t < n; t++) {
        lc_infer_rope_apply(&c->rope, s->q + t * c->q_dim, c->n_heads, (uint32_t)t);
        lc_infer_rope_apply(&c->rope, s->k + t * c->kv_dim, c->n_kv_heads, (uint32_t)t);
    }
    for (size_t t = 0; t < n; t++)
        lc_infer_attention(s->att + t * c->q_dim, s->q + t * c->q_dim, s->k, s->v, t,
                           c->n_heads, c->n_kv_heads, c->head_dim, s->scores);
    LC_TRY(lc_infer_matmul(&c->mm, &L->wo, NULL, s->att, n, s->proj, err));
    residual(s->x, s->proj, n * c->embd);
    return LC_OK;
}

/* x += Wdown (silu(Wgate h) * Wup h), h = rmsnorm(x) */
static lc_code ffn_block(lc_infer *c, const layer_weights *L, run_state *s, size_t n,
                         lc_error *err) {
    rmsnorm_rows(s->xb, s->x, L->ffn_norm, n, c->embd, c->eps);
    LC_TRY(lc_infer_matmul(&c->mm, &L->gate, NULL, s->xb, n, s->hb, err));
    LC_TRY(lc_infer_matmul(&c->mm, &L->up, NULL, s->xb, n, s->hb2, err));
    lc_infer_swiglu(s->hb, s->hb, s->hb2, n * c->ff);
    LC_TRY(lc_infer_matmul(&c->mm, &L->down, NULL, s->hb, n, s->proj, err));
    residual(s->x, s->proj, n * c->embd);
    return LC_OK;
}

lc_code lc_infer_forward(lc_infer *c, const int32_t *tokens, size_t n, float *logits,
                         const lc_infer_hook *hook, lc_error *err) {
    if (n == 0 || n > UINT32_MAX)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%zu tokens: at least 1 and below 2^32",
                       n);
    for (size_t t = 0; t < n; t++)
        if (tokens[t] < 0 || (uint32_t)tokens[t] >= c->vocab)
            return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "token %zu is %" PRId32 ", outside the "
                           "vocabulary of %" PRIu32, t, tokens[t], c->vocab);
    run_state s;
    lc_code rc = build_run_state(&s, c, n, err);
    if (rc == LC_OK)
        rc = embed(c, tokens, n, s.x, err);
    for (uint32_t l = 0; l < c->n_layers && rc == LC_OK; l++) {
        if ((rc = attention_block(c, &c->layers[l], &s, n, err)) != LC_OK ||
            (rc = ffn_block(c, &c->layers[l], &s, n, err)) != LC_OK)
            break;
        if (hook && hook->fn)
            rc = hook->fn(hook->user, l, s.x, n, c->embd, err);
    }
    if (rc == LC_OK) {
        rmsnorm_rows(s.xb, s.x, c->output_norm, n, c->embd, c->eps);
        rc = lc_infer_matmul(&c->mm, &c->output, NULL, s.xb, n, logits, err);
    }
    free_run_state(&s);
    return rc;
}
