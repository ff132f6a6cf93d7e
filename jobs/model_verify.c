/* jobs/model_verify.c: the model-verify job (model_verify.h): open both sides, compare
 * metadata, tensors and logits, give the verdict, write the page; the figures go back
 * to the caller, who prints them (jobs/model_verify_print.h). */
#include "jobs/model_verify.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jobs/model_verify_impl.h"
#include "libconvert/alloc.h"
#include "libconvert/outfile.h"

/* Appends one reason to r->why ("; " between them). */
static void because(lc_vf_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void because(lc_vf_run *r, const char *fmt, ...) {
    const size_t n = strlen(r->why);
    if (n + 8 >= sizeof r->why)
        return;
    if (n)
        snprintf(r->why + n, sizeof r->why - n, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why + strlen(r->why), sizeof r->why - strlen(r->why), fmt, ap);
    va_end(ap);
}

/* What the logits are held to (README "model-verify", "How the verdict is reached"):
 *   - every tensor proven (DST's bytes are SRC's reproduced by our own code): nothing;
 *     the figures are reported, not judged (a correct conversion has whatever KL the
 *     model's sharpness gives it);
 *   - otherwise, with the reproduction's forward pass: LC_VF_REPRO_FACTOR x its KL (mean,
 *     p99), NMSE and per-layer hidden-state difference, plus a tenth of the class's fixed
 *     limit (so that a reproduction with next to no error does not ask for none); where
 *     some tensor's type we cannot write was stood for by a proxy type, never less than
 *     the class's fixed limit (the proxy's error is an estimate);
 *   - without a reproduction (no forward pass on it): the class's fixed limits. */
static void set_limits(lc_vf_run *r) {
    const lc_vf_logits *g = &r->logits;
    const lc_vf_limits c = lc_vf_limits_for(r->cls);
    r->limits = c;
    if (!g->ran)
        return;
    if (lc_vf_tensors_proven(&r->tensors)) {
        r->judge = LC_VF_JUDGE_PROVEN;
        return;
    }
    if (!g->repro_ran)
        return;
    r->judge = LC_VF_JUDGE_RELATIVE;
    const bool proxied = r->tensors.n_proxied > 0;
    lc_vf_limits *l = &r->limits;
    l->kl_mean = LC_VF_REPRO_FACTOR * g->repro_kl_mean + 0.1 * c.kl_mean;
    l->kl_p99 = LC_VF_REPRO_FACTOR * g->repro_kl_p99 + 0.1 * c.kl_p99;
    if (!isnan(c.nmse))
        l->nmse = LC_VF_REPRO_FACTOR * g->repro_nmse + 0.1 * c.nmse;
    if (proxied) {
        l->kl_mean = fmax(l->kl_mean, c.kl_mean);
        l->kl_p99 = fmax(l->kl_p99, c.kl_p99);
        if (!isnan(c.nmse))
            l->nmse = fmax(l->nmse, c.nmse);
    }
    /* The hidden states: layer by layer against the reproduction's. */
    if (g->layers && g->repro_layer_rel) {
        lc_vf_logits *w = &r->logits;
        w->first_over = -1;
        for (uint32_t k = 0; k < w->n_layers && w->first_over < 0; k++) {
            double lim = LC_VF_REPRO_FACTOR * w->repro_layer_rel[k] + 0.1 * c.hidden;
            if (proxied)
                lim = fmax(lim, c.hidden);
            if (!(w->layer_rel[k] <= lim)) {
                w->first_over = (int)k;
                l->hidden = lim;
            }
        }
    }
}

/* Pass or fail, and every reason named. */
static void verdict(lc_vf_run *r) {
    const lc_vf_meta *m = &r->meta;
    const lc_vf_tensors *t = &r->tensors;
    const lc_vf_logits *g = &r->logits;
    set_limits(r);
    const lc_vf_limits *l = &r->limits;
    const bool judged = r->judge != LC_VF_JUDGE_PROVEN;
    if (m->n_diffs)
        because(r, "metadata: %zu difference%s (%s)", m->n_diffs, m->n_diffs == 1 ? "" : "s",
                m->diffs[0].key);
    if (t->n_bad)
        because(r, "%zu tensor%s outside the bound (%s)", t->n_bad, t->n_bad == 1 ? "" : "s",
                t->t[0].name);
    if (t->n_extra)
        because(r, "DST has tensors SRC lacks (%s)", t->extra);
    if (g->tok_differ)
        because(r, "tokenizer: DST's ids differ from SRC's at position %zu", g->tok_at);
    if (g->unrunnable)
        because(r, "%s", g->note);
    if (g->ran && judged) {
        const char *rel = r->judge == LC_VF_JUDGE_RELATIVE ? " (from the reproduction's)" : "";
        if (!(g->kl_mean <= l->kl_mean))
            because(r, "mean KL %.3g > %.3g%s", g->kl_mean, l->kl_mean, rel);
        if (!(g->kl_p99 <= l->kl_p99))
            because(r, "p99 KL %.3g > %.3g", g->kl_p99, l->kl_p99);
        if (!isnan(l->nmse) && !(g->nmse <= l->nmse))
            because(r, "logits NMSE %.3g > %.3g", g->nmse, l->nmse);
        if (g->first_over >= 0)
            because(r, "hidden states past the limit at layer %d (%.3g > %.3g)", g->first_over,
                    g->layer_rel[g->first_over], l->hidden);
    }
    /* A failing DST reproduced without the matrix it records: say so, it may be why. */
    if (r->why[0] && r->imx.lacking)
        because(r, "reproduced without DST's importance matrix (--imatrix)");
    r->pass = r->why[0] == '\0';
    /* Where, when something failed: the layer where the models part ways. */
    if (!r->pass && g->ran && g->first_bad >= 0 && g->first_bad != g->first_over)
        because(r, "hidden states part ways at layer %d", g->first_bad);
}

void lc_job_verify_result_free(lc_job_verify_result *res) {
    if (!res)
        return;
    lc_vf_run *r = res->run;
    if (r) {
        lc_vf_logits_free(&r->logits);
        lc_vf_tensors_free(&r->tensors);
        lc_vf_side_close(&r->dst);
        lc_vf_side_close(&r->src);
        lc_imatrix_free(r->im);     /* after the tensors and the reproduction that read it */
        lc_free(r);
    }
    memset(res, 0, sizeof *res);
}

/* The headline figures, from the run res->run holds. */
static void headline(lc_job_verify_result *res) {
    const lc_vf_run *r = res->run;
    const lc_vf_logits *g = &r->logits;
    res->pass = r->pass;
    res->why = r->why;
    res->judged = r->judge == LC_VF_JUDGE_PROVEN ? "proven"
                  : r->judge == LC_VF_JUDGE_RELATIVE ? "relative" : "limits";
    res->cls = lc_vf_class_name(r->cls);
    res->keys = r->meta.n_keys;
    res->key_diffs = r->meta.n_diffs;
    res->tensors = r->tensors.n;
    res->outside = r->tensors.n_bad;
    res->proven = r->tensors.n_proven;
    res->logits_ran = g->ran;
    res->tokens = g->n;
    res->kl_mean = g->ran ? g->kl_mean : NAN;
    res->kl_p99 = g->ran ? g->kl_p99 : NAN;
    res->nmse = g->ran ? g->nmse : NAN;
    res->same_top1 = g->ran ? g->same_top1 : NAN;
    res->ppl_src = g->ran ? g->ppl_src : NAN;
    res->ppl_dst = g->ran ? g->ppl_dst : NAN;
}

lc_code lc_job_model_verify(const lc_job_verify_opts *o, lc_progress *p,
                            lc_job_verify_result *res, lc_error *err) {
    memset(res, 0, sizeof *res);
    if (!!o->tokens + !!o->text + !!o->file > 1)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "give at most one of --tokens, --text and "
                       "--file");
    lc_vf_run *r = lc_calloc(1, sizeof *r);
    if (!r)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    r->o = o;
    lc_code rc = lc_vf_side_open(&r->src, o->src, "SRC", err);
    if (rc == LC_OK)
        rc = lc_vf_side_open(&r->dst, o->dst, "DST", err);
    if (rc == LC_OK && o->report)   /* now that the inputs are known: not one of them */
        rc = lc_outfile_check_target(o->report, false, err);
    if (rc == LC_OK)
        rc = lc_vf_sides_align(&r->src, &r->dst, err);
    if (rc == LC_OK)
        rc = lc_vf_meta_compare(&r->src, &r->dst, &r->meta, err);
    if (rc == LC_OK && o->imatrix)
        rc = lc_imatrix_open(o->imatrix, &r->im, err);
    if (rc == LC_OK)
        rc = lc_vf_tensors_compare(&r->src, &r->dst, r->im, o->imatrix, o->threads, p,
                                   &r->tensors, err);
    if (rc == LC_OK)
        lc_vf_imatrix_recorded(&r->dst, r->tensors.n_weighted, o->imatrix != NULL,
                               lc_vf_tensors_proven(&r->tensors), &r->imx);
    if (rc == LC_OK) {
        r->cls = r->tensors.cls;
        r->limits = lc_vf_limits_for(r->cls);
        bool shapes = true;
        for (size_t i = 0; i < r->tensors.n; i++)
            shapes &= r->tensors.t[i].shape_ok;
        /* Not every tensor proven: the reproduction's forward pass is the yardstick. A
         * reproduction that cannot be built (a type nothing converts) leaves the fixed
         * limits. */
        lc_model *repro = NULL;
        if (shapes && !lc_vf_tensors_proven(&r->tensors) && r->src.have_hp &&
            r->dst.have_hp && r->src.arch) {
            lc_error e2 = { 0 };
            if (lc_vf_repro_build(&r->src, &r->dst, &r->tensors, &repro, &e2) != LC_OK)
                repro = NULL;
        }
        if (shapes)
            rc = lc_vf_logits_run(o, &r->src, &r->dst, repro, r->cls, p, &r->logits, err);
        lc_model_free(repro);
        if (!shapes)
            snprintf(r->logits.note, sizeof r->logits.note, "tensors of other shapes: no "
                     "forward pass");
        if (!shapes)
            r->logits.first_bad = r->logits.first_over = -1;
    }
    if (rc == LC_OK)
        verdict(r);
    if (rc == LC_OK && o->report)
        rc = lc_vf_write_report(r, o->report, err);
    res->run = r;       /* the printers read it (jobs/model_verify_print.h) */
    if (rc == LC_OK)
        headline(res);
    else
        lc_job_verify_result_free(res);
    return rc;
}
