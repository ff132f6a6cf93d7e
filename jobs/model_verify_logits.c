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
 * Memory: each model's final hidden states [n, embd]; the logits a chunk of positions at
 * a time (see "the passes"), so a vocabulary of a million tokens costs megabytes, not
 * n x vocab x 8 bytes.
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
    lc_free(r->repro_layer_rel);
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
    lc_tok_close(ta);               /* one tokenizer at a time: each is vocabulary-sized */
    ta = NULL;
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
    int      mode;          /* 0: store (SRC); 1: compare (DST); 2: compare (the
                             * reproduction: into r->repro_layer_rel) */
    lc_vf_logits *r;
} layers_ctx;

static lc_code on_layer(void *user, uint32_t layer, const float *h, size_t n, size_t embd,
                        lc_error *err) {
    layers_ctx *c = user;
    if (layer >= c->n_layers || n != c->n || embd != c->embd)
        return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the models' layers differ in shape "
                       "(layer %" PRIu32 ": %zu x %zu)", layer, n, embd);
    float *keep = c->h + (size_t)layer * n * embd;
    if (c->mode == 0) {
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
    double rel = a2 > 0 ? sqrt(d2 / a2) : d2 > 0 ? INFINITY : 0;
    if (!isfinite(rel) && a2 > 0)
        rel = INFINITY;
    if (c->mode == 2) {
        c->r->repro_layer_rel[layer] = rel;
        return LC_OK;
    }
    c->r->layer_rel[layer] = rel;
    c->r->layer_cos[layer] = a2 > 0 && b2 > 0 ? ab / sqrt(a2 * b2) : a2 == b2 ? 1 : 0;
    return LC_OK;
}

/* ---- the passes ----
 *
 * Each model runs its layers once over all n tokens, up to the final norm (hidden
 * [n, embd], kept); the logits are then taken a chunk of positions at a time from every
 * model's hidden rows (lc_infer_head: the same bits as one whole pass), and the figures
 * summed chunk by chunk in position order, so no [n, vocab] array is ever held: memory
 * is a chunk per model (chunk_bytes, at least one position) plus O(n) scalars. */

#define LOGIT_CHUNK_BYTES (4u << 20)

/* Bytes of logits per model and chunk: LOGIT_CHUNK_BYTES, or a quarter of the larger
 * model's tensors when that is more (a real model's vocabulary head then runs once, not
 * once per chunk, and the chunks stay within the files' bytes). */
static size_t chunk_bytes(const lc_vf_side *src, const lc_vf_side *dst) {
    uint64_t big = 0;
    const lc_model *ms[2] = { src->views, dst->views };
    for (int k = 0; k < 2; k++) {
        uint64_t sum = 0;
        for (size_t i = 0; i < lc_model_tensor_count(ms[k]); i++)
            sum += lc_model_tensor(ms[k], i)->nbytes;
        big = sum > big ? sum : big;
    }
    big /= 4;
    return big > LOGIT_CHUNK_BYTES && big < SIZE_MAX ? (size_t)big : LOGIT_CHUNK_BYTES;
}

typedef struct pass {
    const lc_vf_side *side;     /* whose arch and spelling */
    const lc_hparams *hp;       /* what it runs with */
    const lc_model   *m;        /* the tensors it runs on */
    lc_infer *ctx;
    float    *hidden;           /* [n, embd] */
    float    *logits;           /* [chunk, vocab] */
} pass;

static lc_code pass_hidden(pass *ps, const int32_t *tokens, size_t n, int threads,
                           uint32_t *vocab, const lc_infer_hook *hook, lc_error *err) {
    const lc_infer_opts io = { .threads = threads };
    const lc_vf_side *s = ps->side;
    LC_TRY(lc_infer_open(ps->m, s->arch, ps->hp, s->spelling, &io, &ps->ctx, err));
    const uint32_t v = lc_infer_vocab(ps->ctx), e = lc_infer_embd(ps->ctx);
    if (*vocab && *vocab != v)
        return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the vocabularies differ in size: SRC's "
                       "output has %" PRIu32 " rows, DST's %" PRIu32, *vocab, v);
    *vocab = v;
    if (!(ps->hidden = lc_malloc_array(n, (size_t)e * sizeof *ps->hidden)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu x %" PRIu32
                       " hidden states", n, e);
    return lc_infer_hidden(ps->ctx, tokens, n, ps->hidden, hook, err);
}

static void pass_free(pass *ps) {
    lc_infer_close(ps->ctx);
    lc_free(ps->hidden);
    lc_free(ps->logits);
    memset(ps, 0, sizeof *ps);
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

/* The running sums of one comparison (SRC against one other model). */
typedef struct figs {
    lc_vf_logits *r;            /* where the figures go */
    double d2, a2, nll_a, nll_b, dp2, kl_sum;
    size_t top1, top5;
    double *kl, *dp;            /* [n_scored] */
} figs;

static lc_code figs_init(figs *f, lc_vf_logits *r, lc_error *err) {
    memset(f, 0, sizeof *f);
    f->r = r;
    const size_t ns = r->n_scored;
    f->kl = lc_malloc_array(ns, sizeof *f->kl);
    f->dp = lc_malloc_array(ns, sizeof *f->dp);
    r->kl_pos = lc_malloc_array(ns, sizeof *r->kl_pos);
    if (!f->kl || !f->dp || !r->kl_pos)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    return LC_OK;
}

static void figs_free(figs *f) {
    lc_free(f->kl);
    lc_free(f->dp);
    f->kl = f->dp = NULL;
}

/* Positions [t0, t0 + nt): la and lb are their logits [nt, vocab]. */
static void figs_add(figs *f, const float *la, const float *lb, size_t t0, size_t nt) {
    lc_vf_logits *r = f->r;
    const uint32_t v = r->vocab;
    for (size_t i = 0; i < nt * (size_t)v; i++) {
        const double a = la[i], d = a - lb[i];
        f->d2 += d * d;
        f->a2 += a * a;
        r->max_abs = fabs(d) > r->max_abs ? fabs(d) : r->max_abs;
        r->max_logit = fabs(a) > r->max_logit ? fabs(a) : r->max_logit;
    }
    for (size_t t = t0; t < t0 + nt && t < r->n_scored; t++) {
        const float *a = la + (t - t0) * v, *b = lb + (t - t0) * v;
        uint32_t ka, kb;
        const double za = lse(a, v, &ka), zb = lse(b, v, &kb);
        double s = 0;
        for (uint32_t i = 0; i < v; i++) {
            const double lpa = a[i] - za, lpb = b[i] - zb;
            s += exp(lpa) * (lpa - lpb);
        }
        f->kl[t] = s;
        r->kl_pos[t] = (float)s;
        f->kl_sum += s;
        f->top1 += ka == kb;
        uint32_t above = 0;             /* DST logits ranked before SRC's top token */
        for (uint32_t i = 0; i < v && above < 5; i++)
            above += b[i] > b[ka] || (b[i] == b[ka] && i < ka);
        f->top5 += above < 5;
        const int32_t next = r->tokens[t + 1];
        const double na = za - a[next], nb = zb - b[next];
        f->nll_a += na;
        f->nll_b += nb;
        f->dp[t] = exp(-nb) - exp(-na);
        f->dp2 += f->dp[t] * f->dp[t];
    }
}

static void figs_finish(figs *f) {
    lc_vf_logits *r = f->r;
    const size_t ns = r->n_scored;
    double *kl = f->kl, *dp = f->dp;
    r->nmse = f->a2 > 0 ? f->d2 / f->a2 : f->d2 > 0 ? INFINITY : 0;
    r->kl_mean = f->kl_sum / (double)ns;
    r->same_top1 = (double)f->top1 / (double)ns;
    r->same_top5 = (double)f->top5 / (double)ns;
    r->ppl_src = exp(f->nll_a / (double)ns);
    r->ppl_dst = exp(f->nll_b / (double)ns);
    r->dp_rms = sqrt(f->dp2 / (double)ns);
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
}

/* Every model's logits a chunk of positions at a time, into each comparison's sums:
 * fs[k] compares ps[0] (SRC) with ps[k + 1]. */
static lc_code chunked(pass *ps, figs *fs, size_t n_other, size_t n, uint32_t vocab,
                       size_t budget, lc_error *err) {
    size_t chunk = budget / ((size_t)vocab * sizeof(float));
    chunk = chunk < 1 ? 1 : chunk > n ? n : chunk;
    for (size_t k = 0; k <= n_other; k++)
        if (!(ps[k].logits = lc_malloc_array(chunk, (size_t)vocab * sizeof(float))))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu x %" PRIu32
                           " logits", chunk, vocab);
    for (size_t t0 = 0; t0 < n; t0 += chunk) {
        const size_t nt = n - t0 < chunk ? n - t0 : chunk;
        for (size_t k = 0; k <= n_other; k++) {
            const size_t embd = lc_infer_embd(ps[k].ctx);
            LC_TRY(lc_infer_head(ps[k].ctx, ps[k].hidden + t0 * embd, nt, ps[k].logits, err));
        }
        for (size_t k = 0; k < n_other; k++)
            figs_add(&fs[k], ps[0].logits, ps[k + 1].logits, t0, nt);
    }
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
                         const lc_vf_side *dst, const lc_model *repro, lc_dtype cls,
                         lc_progress *p, lc_vf_logits *r, lc_error *err) {
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
    /* The reproduction has DST's names and SRC's hyperparameters: a correct conversion
     * of SRC, whatever DST's keys say. */
    pass ps[3] = { { .side = src, .hp = &src->hp, .m = src->views },
                   { .side = dst, .hp = &dst->hp, .m = dst->views },
                   { .side = dst, .hp = &src->hp, .m = repro } };
    const size_t n_other = repro ? 2 : 1;
    figs fs[2] = { { 0 }, { 0 } };
    lc_vf_logits rr = { 0 };            /* the reproduction's figures */
    lc_code rc = LC_OK;
    if (r->layers) {
        r->n_layers = lc.n_layers;
        lc.h = lc_malloc_array((size_t)lc.n_layers * r->n, lc.embd * sizeof(float));
        r->layer_rel = lc_calloc(lc.n_layers ? lc.n_layers : 1, sizeof *r->layer_rel);
        r->layer_cos = lc_calloc(lc.n_layers ? lc.n_layers : 1, sizeof *r->layer_cos);
        if (repro)
            r->repro_layer_rel = lc_calloc(lc.n_layers ? lc.n_layers : 1,
                                           sizeof *r->repro_layer_rel);
        if ((!lc.h && lc.n_layers) || !r->layer_rel || !r->layer_cos ||
            (repro && !r->repro_layer_rel))
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for the hidden states "
                         "(%" PRIu32 " layers x %zu tokens x %zu)", lc.n_layers, r->n, lc.embd);
    }
    const lc_infer_hook hook = { on_layer, &lc };
    lc_progress_begin(p, "forward pass of SRC", 0);
    if (rc == LC_OK) {
        rc = pass_hidden(&ps[0], r->tokens, r->n, o->threads, &r->vocab,
                         r->layers ? &hook : NULL, err);
        if (rc != LC_OK)
            lc_err_context(err, src->path, NULL);
    }
    lc_progress_end(p);
    lc.mode = 1;
    lc_progress_begin(p, "forward pass of DST", 0);
    if (rc == LC_OK) {
        rc = pass_hidden(&ps[1], r->tokens, r->n, o->threads, &r->vocab,
                         r->layers ? &hook : NULL, err);
        if (rc != LC_OK)
            lc_err_context(err, dst->path, NULL);
    }
    lc_progress_end(p);
    lc.mode = 2;
    if (repro) {
        lc_progress_begin(p, "forward pass of the reproduction", 0);
        if (rc == LC_OK) {
            rc = pass_hidden(&ps[2], r->tokens, r->n, o->threads, &r->vocab,
                             r->layers ? &hook : NULL, err);
            if (rc != LC_OK)
                lc_err_context(err, NULL, "the reproduction of DST from SRC");
        }
        lc_progress_end(p);
    }
    lc_free(lc.h);                      /* SRC's layers: compared, no longer needed */
    lc.h = NULL;
    rr.tokens = r->tokens;
    rr.n = r->n;
    rr.n_scored = r->n_scored;
    rr.vocab = r->vocab;
    if (rc == LC_OK)
        rc = figs_init(&fs[0], r, err);
    if (rc == LC_OK && repro)
        rc = figs_init(&fs[1], &rr, err);
    lc_progress_begin(p, "logits", 0);
    if (rc == LC_OK)
        rc = chunked(ps, fs, n_other, r->n, r->vocab, chunk_bytes(src, dst), err);
    lc_progress_end(p);
    if (rc == LC_OK) {
        figs_finish(&fs[0]);
        r->ran = true;
        if (r->layers)
            find_divergence(r, lc_vf_limits_for(cls).hidden);
    }
    if (rc == LC_OK && repro) {
        figs_finish(&fs[1]);
        r->repro_ran = true;
        r->repro_kl_mean = rr.kl_mean;
        r->repro_kl_p99 = rr.kl_p99;
        r->repro_nmse = rr.nmse;
        r->repro_same_top1 = rr.same_top1;
    }
    lc_free(rr.kl_pos);
    figs_free(&fs[0]);
    figs_free(&fs[1]);
    for (size_t k = 0; k < 3; k++)
        pass_free(&ps[k]);
    return rc;
}
