/* jobs/model_verify_logits.c: both forward passes on the same tokens, and what their
 * logits and hidden states say.
 *
 * Tokens: --tokens as given, else --text / --file / the bundled text tokenized by SRC's
 * own tokenizer (infer/tokenize.h, from its GGUF-shaped metadata) with BOS/EOS as the
 * model adds them, then cut at max_tokens and at both models' context length. When DST
 * has a tokenizer too, it must give the same ids for the text (else the first position
 * where they differ is kept); both models run on SRC's ids either way.
 *
 * Figures, as llama.cpp's perplexity.cpp computes them (tools/perplexity), over the
 * scored positions t = 0..n-2 (each predicts token t+1), SRC being the base:
 *   KL_t  = sum_i p_src(i) (log p_src(i) - log p_dst(i)), log-softmax in double;
 *           mean, median (the mean of the two middle values for an even count), p99 and
 *           max; perplexity.cpp's percentile: linear between the order statistics
 *           around fraction x (count - 1);
 *   dp_t  = p_dst(tok[t+1]) - p_src(tok[t+1]): RMS and percentiles;
 *   same top-1: argmax equal (the first index on ties); top-5: SRC's top token among
 *           DST's five largest logits;
 *   perplexity of each: exp(mean of -log p(tok[t+1]));
 * and over every logit of every position: NMSE = sum (a-b)^2 / sum a^2 (llama.cpp's
 * conversion check), max |a - b|. perplexity.cpp scores only the second half of each
 * 512-token window and stores the base's log-probabilities in 16 bits; we score every
 * position in double.
 *
 * Layers: SRC's residual stream after every layer is kept ([layers, n, embd] floats),
 * then DST's is compared with it as it comes: ||h_dst - h_src|| / ||h_src|| and cosine
 * per layer; the first layer past the class's limit is where the models part ways. */
#include "jobs/model_verify_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infer/infer.h"
#include "infer/tokenize.h"
#include "libconvert/alloc.h"

#define MAX_TEXT_BYTES (64u << 20)

void lc_vf_logits_free(lc_vf_logits *r) {
    lc_free(r->tokens);
    lc_free(r->kl_pos);
    lc_free(r->layer_rel);
    lc_free(r->layer_cos);
    memset(r, 0, sizeof *r);
}

double lc_vf_percentile(const double *v, size_t n, double fraction) {
    if (n == 0)
        return 0;
    if (fraction <= 0)
        return v[0];
    if (fraction >= 1)
        return v[n - 1];
    double p = fraction * (double)(n - 1);
    const size_t i = (size_t)p;
    p -= (double)i;
    return (1 - p) * v[i] + p * v[i + 1 < n ? i + 1 : n - 1];
}

static int cmp_double(const void *x, const void *y) {
    const double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* ---- tokens ---- */

static lc_code encode(const lc_tok *tok, const char *text, size_t len, int32_t **ids,
                      size_t *n, lc_error *err) {
    size_t cap = len + 16, need = 0;
    int32_t *v = lc_malloc_array(cap, sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_error first = { 0 };
    lc_code rc = lc_tok_encode(tok, text, len, LC_TOK_ADD_SPECIAL, v, cap, &need, &first);
    if (rc == LC_E_OVERFLOW && need > cap) {        /* more ids than bytes: once more */
        int32_t *w = lc_realloc_array(v, need, sizeof *v);
        if (w)
            v = w;
        rc = !w ? lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory")
                : lc_tok_encode(tok, text, len, LC_TOK_ADD_SPECIAL, v, need, &need, err);
    } else if (rc != LC_OK && err && err->code == LC_OK) {
        *err = first;
    }
    if (rc != LC_OK) {
        lc_free(v);
        return rc;
    }
    *ids = v;
    *n = need;
    return LC_OK;
}

/* The ids both models run on, and whether DST's tokenizer agrees. */
static lc_code get_tokens(const lc_job_verify_opts *o, const lc_vf_side *src,
                          const lc_vf_side *dst, lc_vf_logits *r, bool *skip, lc_error *err) {
    *skip = false;
    if (o->tokens) {
        snprintf(r->source, sizeof r->source, "--tokens");
        return lc_tok_parse_ids(o->tokens, 0, &r->tokens, &r->n, err);
    }
    const lc_model *meta = src->meta ? src->meta : dst->meta;
    if (!meta) {
        snprintf(r->note, sizeof r->note, "neither side has a tokenizer: give --tokens to run "
                 "the forward pass");
        *skip = true;
        return LC_OK;
    }
    char *owned = NULL;
    const char *text;
    size_t len;
    if (o->file) {
        LC_TRY(lc_tok_read_file(o->file, MAX_TEXT_BYTES, &owned, &len, err));
        text = owned;
        snprintf(r->source, sizeof r->source, "--file");
    } else if (o->text) {
        text = o->text;
        len = strlen(text);
        snprintf(r->source, sizeof r->source, "--text");
    } else {
        text = lc_tok_default_text();
        len = strlen(text);
        snprintf(r->source, sizeof r->source, "the bundled text");
    }
    lc_tok *ta = NULL, *tb = NULL;
    int32_t *other = NULL;
    size_t n_other = 0;
    lc_code rc = lc_tok_open(meta, &ta, err);
    if (rc == LC_OK)
        rc = encode(ta, text, len, &r->tokens, &r->n, err);
    if (rc == LC_OK && src->meta && dst->meta) {
        lc_error e2 = { 0 };
        if (lc_tok_open(dst->meta, &tb, &e2) != LC_OK ||
            encode(tb, text, len, &other, &n_other, &e2) != LC_OK) {
            r->tok_differ = true;
            r->tok_src = r->tok_dst = -1;
            snprintf(r->note, sizeof r->note, "DST's tokenizer fails on the text: %.150s",
                     e2.msg);
        } else {
            size_t i = 0;
            while (i < r->n && i < n_other && r->tokens[i] == other[i])
                i++;
            if (i < r->n || i < n_other) {
                r->tok_differ = true;
                r->tok_at = i;
                r->tok_src = i < r->n ? r->tokens[i] : -1;
                r->tok_dst = i < n_other ? other[i] : -1;
            }
        }
    }
    lc_free(other);
    lc_tok_close(ta);
    lc_tok_close(tb);
    lc_free(owned);
    return rc;
}

/* ---- hidden states ---- */

typedef struct layers_ctx {
    float   *h;             /* [layers, n, embd] SRC's */
    size_t   n, embd;
    uint32_t n_layers;
    bool     second;        /* false: store (SRC), true: compare (DST) */
    lc_vf_logits *r;
} layers_ctx;

static lc_code on_layer(void *user, uint32_t layer, const float *h, size_t n, size_t embd,
                        lc_error *err) {
    layers_ctx *c = user;
    if (layer >= c->n_layers || n != c->n || embd != c->embd)
        return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the models' layers differ in shape "
                       "(layer %" PRIu32 ": %zu x %zu)", layer, n, embd);
    float *keep = c->h + (size_t)layer * n * embd;
    if (!c->second) {
        memcpy(keep, h, n * embd * sizeof *h);
        return LC_OK;
    }
    double d2 = 0, a2 = 0, b2 = 0, ab = 0;
    for (size_t i = 0; i < n * embd; i++) {
        const double a = keep[i], b = h[i];
        d2 += (a - b) * (a - b);
        a2 += a * a;
        b2 += b * b;
        ab += a * b;
    }
    c->r->layer_rel[layer] = a2 > 0 ? sqrt(d2 / a2) : d2 > 0 ? INFINITY : 0;
    c->r->layer_cos[layer] = a2 > 0 && b2 > 0 ? ab / sqrt(a2 * b2) : a2 == b2 ? 1 : 0;
    if (!isfinite(c->r->layer_rel[layer]) && a2 > 0)
        c->r->layer_rel[layer] = INFINITY;
    return LC_OK;
}

/* ---- the passes ---- */

static lc_code run_one(const lc_vf_side *s, const int32_t *tokens, size_t n, int threads,
                       float **logits, uint32_t *vocab, const lc_infer_hook *hook,
                       lc_error *err) {
    lc_infer *ctx = NULL;
    const lc_infer_opts io = { .threads = threads };
    LC_TRY(lc_infer_open(s->views, s->arch, &s->hp, s->spelling, &io, &ctx, err));
    const uint32_t v = lc_infer_vocab(ctx);
    lc_code rc = LC_OK;
    if (!*logits && !(*logits = lc_malloc_array(n * (size_t)v, sizeof **logits)))
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu x %" PRIu32
                     " logits", n, v);
    else if (*vocab && *vocab != v)
        rc = lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the vocabularies differ in size: SRC's "
                     "output has %" PRIu32 " rows, DST's %" PRIu32, *vocab, v);
    if (rc == LC_OK) {
        *vocab = v;
        rc = lc_infer_forward(ctx, tokens, n, *logits, hook, err);
    }
    lc_infer_close(ctx);
    return rc;
}

/* log-sum-exp, the argmax (first on ties) of one row of logits. */
static double lse(const float *l, uint32_t v, uint32_t *arg) {
    float m = l[0];
    uint32_t k = 0;
    for (uint32_t i = 1; i < v; i++)
        if (l[i] > m) {
            m = l[i];
            k = i;
        }
    double s = 0;
    for (uint32_t i = 0; i < v; i++)
        s += exp((double)l[i] - m);
    *arg = k;
    return m + log(s);
}

static lc_code figures(lc_vf_logits *r, const float *la, const float *lb, lc_error *err) {
    const uint32_t v = r->vocab;
    const size_t n = r->n, ns = r->n_scored;
    double d2 = 0, a2 = 0, nll_a = 0, nll_b = 0, dp2 = 0, kl_sum = 0;
    size_t top1 = 0, top5 = 0;
    double *kl = lc_malloc_array(ns, sizeof *kl), *dp = lc_malloc_array(ns, sizeof *dp);
    r->kl_pos = lc_malloc_array(ns, sizeof *r->kl_pos);
    if (!kl || !dp || !r->kl_pos) {
        lc_free(kl);
        lc_free(dp);
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    for (size_t i = 0; i < n * (size_t)v; i++) {
        const double a = la[i], d = a - lb[i];
        d2 += d * d;
        a2 += a * a;
        r->max_abs = fabs(d) > r->max_abs ? fabs(d) : r->max_abs;
        r->max_logit = fabs(a) > r->max_logit ? fabs(a) : r->max_logit;
    }
    for (size_t t = 0; t < ns; t++) {
        const float *a = la + t * v, *b = lb + t * v;
        uint32_t ka, kb;
        const double za = lse(a, v, &ka), zb = lse(b, v, &kb);
        double s = 0;
        for (uint32_t i = 0; i < v; i++) {
            const double lpa = a[i] - za, lpb = b[i] - zb;
            s += exp(lpa) * (lpa - lpb);
        }
        kl[t] = s;
        r->kl_pos[t] = (float)s;
        kl_sum += s;
        top1 += ka == kb;
        uint32_t above = 0;             /* DST logits ranked before SRC's top token */
        for (uint32_t i = 0; i < v && above < 5; i++)
            above += b[i] > b[ka] || (b[i] == b[ka] && i < ka);
        top5 += above < 5;
        const int32_t next = r->tokens[t + 1];
        const double na = za - a[next], nb = zb - b[next];
        nll_a += na;
        nll_b += nb;
        dp[t] = exp(-nb) - exp(-na);
        dp2 += dp[t] * dp[t];
    }
    r->nmse = a2 > 0 ? d2 / a2 : d2 > 0 ? INFINITY : 0;
    r->kl_mean = kl_sum / (double)ns;
    r->same_top1 = (double)top1 / (double)ns;
    r->same_top5 = (double)top5 / (double)ns;
    r->ppl_src = exp(nll_a / (double)ns);
    r->ppl_dst = exp(nll_b / (double)ns);
    r->dp_rms = sqrt(dp2 / (double)ns);
    qsort(kl, ns, sizeof *kl, cmp_double);
    qsort(dp, ns, sizeof *dp, cmp_double);
    r->kl_median = ns % 2 ? kl[ns / 2] : 0.5 * (kl[ns / 2] + kl[ns / 2 - 1]);
    r->kl_p99 = lc_vf_percentile(kl, ns, 0.99);
    r->kl_max = kl[ns - 1];
    r->dp_min = dp[0];
    r->dp_p01 = lc_vf_percentile(dp, ns, 0.01);
    r->dp_p05 = lc_vf_percentile(dp, ns, 0.05);
    r->dp_median = ns % 2 ? dp[ns / 2] : 0.5 * (dp[ns / 2] + dp[ns / 2 - 1]);
    r->dp_p95 = lc_vf_percentile(dp, ns, 0.95);
    r->dp_p99 = lc_vf_percentile(dp, ns, 0.99);
    r->dp_max = dp[ns - 1];
    lc_free(kl);
    lc_free(dp);
    return LC_OK;
}

static void find_divergence(lc_vf_logits *r, double limit) {
    for (uint32_t l = 0; l < r->n_layers; l++) {
        const double cur = r->layer_rel[l], prev = l ? r->layer_rel[l - 1] : 0;
        const bool over = !(cur <= limit);
        const bool jump = l > 0 && cur > limit / 10 && cur > LC_VF_JUMP * prev;
        if (over && r->first_over < 0)
            r->first_over = (int)l;
        if ((over || jump) && r->first_bad < 0) {
            r->first_bad = (int)l;
            r->jump = l > 0 && prev > 0 ? cur / prev : 0;
        }
    }
}

lc_code lc_vf_logits_run(const lc_job_verify_opts *o, const lc_vf_side *src,
                         const lc_vf_side *dst, lc_dtype cls, lc_progress *p,
                         lc_vf_logits *r, lc_error *err) {
    memset(r, 0, sizeof *r);
    r->first_bad = r->first_over = -1;
    if (!src->arch || !src->have_hp || !dst->have_hp) {
        snprintf(r->note, sizeof r->note, "neither side has hyperparameters (bare tensor "
                 "files): no forward pass");
        return LC_OK;
    }
    bool skip;
    LC_TRY(get_tokens(o, src, dst, r, &skip, err));
    if (skip)
        return LC_OK;
    size_t max = o->max_tokens ? o->max_tokens : LC_VERIFY_MAX_TOKENS;
    const char *cut = "";
    if (src->hp.context_length && src->hp.context_length < max) {
        max = src->hp.context_length;
        cut = " (the context length)";
    }
    if (r->n > max) {
        snprintf(r->note + strlen(r->note), sizeof r->note - strlen(r->note),
                 "%s%zu tokens cut to %zu%s", r->note[0] ? "; " : "", r->n, max, cut);
        r->n = max;
    }
    if (r->n < 2)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%zu token%s: the forward pass needs at "
                       "least 2 (each position predicts the next)", r->n, r->n == 1 ? "" : "s");
    r->n_scored = r->n - 1;
    r->layers = o->layers || o->report;
    layers_ctx lc = { .n = r->n, .embd = src->hp.embedding_length,
                      .n_layers = src->hp.block_count, .r = r };
    float *la = NULL, *lb = NULL;
    lc_code rc = LC_OK;
    if (r->layers) {
        r->n_layers = lc.n_layers;
        lc.h = lc_malloc_array((size_t)lc.n_layers * r->n, lc.embd * sizeof(float));
        r->layer_rel = lc_calloc(lc.n_layers ? lc.n_layers : 1, sizeof *r->layer_rel);
        r->layer_cos = lc_calloc(lc.n_layers ? lc.n_layers : 1, sizeof *r->layer_cos);
        if ((!lc.h && lc.n_layers) || !r->layer_rel || !r->layer_cos)
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for the hidden states "
                         "(%" PRIu32 " layers x %zu tokens x %zu)", lc.n_layers, r->n, lc.embd);
    }
    const lc_infer_hook hook = { on_layer, &lc };
    lc_progress_begin(p, "forward pass of SRC", 0);
    if (rc == LC_OK)
        rc = run_one(src, r->tokens, r->n, o->threads, &la, &r->vocab, r->layers ? &hook : NULL,
                     err);
    lc_progress_end(p);
    if (rc != LC_OK)
        lc_err_context(err, src->path, NULL);
    lc.second = true;
    lc_progress_begin(p, "forward pass of DST", 0);
    if (rc == LC_OK) {
        rc = run_one(dst, r->tokens, r->n, o->threads, &lb, &r->vocab, r->layers ? &hook : NULL,
                     err);
        if (rc != LC_OK)
            lc_err_context(err, dst->path, NULL);
    }
    lc_progress_end(p);
    if (rc == LC_OK)
        rc = figures(r, la, lb, err);
    if (rc == LC_OK) {
        r->ran = true;
        if (r->layers)
            find_divergence(r, lc_vf_limits_for(cls).hidden);
    }
    lc_free(lc.h);
    lc_free(la);
    lc_free(lb);
    return rc;
}
