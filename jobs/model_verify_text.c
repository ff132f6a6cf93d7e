/* jobs/model_verify_text.c: the text report, for people: both sides, the metadata
 * differences, the tensors worst first (every failing one, then the worst of the rest),
 * the logits figures, the layers and the verdict with its reasons. Names and values from
 * the files are escaped (libconvert/escape.c's rule, and quotes), so a hostile name cannot
 * forge a line of the report or act on the terminal. */
#include "jobs/model_verify_impl.h"
#include "libconvert/escape.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define TEXT_TENSORS 12     /* tensor rows in the text report (the failing ones always) */

/* ---- helpers ---- */

/* Writes s[0..len) into buf by libconvert/escape.c's rule (C0 and C1 controls, DEL, bidi
 * controls, bytes that are not UTF-8), with quotes and backslashes escaped too, as the
 * quoted form needs; "..." when cut. Returns the length written. */
static size_t escape(const char *s, size_t len, char *buf, size_t cap) {
    const uint8_t *u = (const uint8_t *)s;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        char e[8];
        size_t step = 1, k = 0;
        const char *from = e;
        if (u[i] == '"' || u[i] == '\\') {
            e[0] = '\\';
            e[1] = (char)u[i];
            k = 2;
        } else if ((k = lc_escape_one(u + i, len - i, false, &step, e)) == 0) {
            from = s + i;
            k = step;
        }
        if (o + k + 4 > cap) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        memcpy(buf + o, from, k);
        o += k;
        i += step;
    }
    buf[o] = '\0';
    return o;
}

void lc_vf_escape(const char *s, char *buf, size_t cap) {
    if (cap < 8) {
        if (cap)
            buf[0] = '\0';
        return;
    }
    escape(s, strlen(s), buf, cap);
}

void lc_vf_quote(const char *s, size_t len, char *buf, size_t cap) {
    if (cap < 8) {
        if (cap)
            buf[0] = '\0';
        return;
    }
    buf[0] = '"';
    const size_t o = 1 + escape(s, len, buf + 1, cap - 2);
    buf[o] = '"';
    buf[o + 1] = '\0';
}

/* Writes the report's lines. The names in them are escaped already; the notes and
 * reasons may quote a file's text (a tokenizer's error, a key), so every line goes
 * through libconvert/escape.c's rule once more here, newlines kept: nothing a file holds
 * reaches the terminal raw, whatever field it came in by. Escaped text passes unchanged. */
static lc_code flush(lc_json_buf *b, FILE *f, lc_error *err) {
    const uint8_t *u = (const uint8_t *)b->data;
    size_t run = 0; /* start of the bytes not yet written, all safe */
    bool ok = true;
    for (size_t i = 0; ok && i < b->len;) {
        char e[8];
        size_t step = 1, k = u[i] == '\n' ? 0 : lc_escape_one(u + i, b->len - i, false, &step, e);
        if (k) {
            ok = fwrite(b->data + run, 1, i - run, f) == i - run && fwrite(e, 1, k, f) == k;
            run = i + step;
        }
        i += step;
    }
    if (!ok || fwrite(b->data + run, 1, b->len - run, f) != b->len - run)
        return lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot write the report: %s",
                       strerror(errno));
    b->len = 0;
    return LC_OK;
}

static void fmt_snr(double v, char *buf, size_t cap) {
    if (v == INFINITY)
        snprintf(buf, cap, "exact");
    else
        snprintf(buf, cap, "%.1f", v);
}

/* What the pair may change, in a few words. */
static void fmt_expect(const lc_vf_expect *e, char *buf, size_t cap) {
    if (e->cls == LC_DT_INVALID)
        snprintf(buf, cap, "exact");
    else if (e->block > 1)
        snprintf(buf, cap, "%.3g/blk, %.0f-%.0f dB", e->rel, e->snr_lo, e->snr_hi);
    else
        snprintf(buf, cap, "2^%d rel, %.0f-%.0f dB", (int)lrint(log2(e->rel)), e->snr_lo,
                 e->snr_hi);
}

/* ---- text ---- */

static lc_code side_line(lc_json_buf *b, const lc_vf_side *s, lc_error *err) {
    char q[300];
    lc_vf_quote(s->path, strlen(s->path), q, sizeof q);
    LC_TRY(lc_json_printf(b, err, "%s  %s: %s (%s), %s, %s", s->label, q, lc_vf_kind_name(s->kind),
                          s->format ? s->format : "?", s->arch ? s->arch->name : "no family",
                          lc_vf_spelling_name(s->spelling)));
    if (s->have_hp)
        LC_TRY(lc_json_printf(b, err, ", %" PRIu32 " layers", s->hp.block_count));
    return lc_json_printf(b, err, "\n");
}

static lc_code text_meta(lc_json_buf *b, const lc_vf_meta *m, lc_error *err) {
    if (!m->compared)
        return lc_json_printf(b, err, "metadata: not compared (%s)\n", m->note);
    if (!m->n_diffs)
        return lc_json_printf(b, err, "metadata: %zu keys compared, all agree\n", m->n_keys);
    LC_TRY(lc_json_printf(b, err, "metadata: %zu keys compared, %zu difference%s:\n", m->n_keys,
                          m->n_diffs, m->n_diffs == 1 ? "" : "s"));
    for (size_t i = 0; i < m->n_kept; i++)
        LC_TRY(lc_json_printf(b, err, "  %-40s SRC %-24s DST %s\n", m->diffs[i].key,
                              m->diffs[i].src, m->diffs[i].dst));
    if (m->n_kept < m->n_diffs)
        LC_TRY(lc_json_printf(b, err, "  ... and %zu more (--json lists the first %d)\n",
                              m->n_diffs - m->n_kept, LC_VF_MAX_DIFFS));
    return LC_OK;
}

static lc_code text_tensor(lc_json_buf *b, const lc_vf_tensor *t, lc_error *err) {
    char types[40], snr[16], ex[48];
    snprintf(types, sizeof types, t->src_dt == t->dst_dt ? "%s" : "%s>%s",
             lc_dtype_name(t->src_dt), lc_dtype_name(t->dst_dt));
    fmt_snr(t->snr_db, snr, sizeof snr);
    fmt_expect(&t->expect, ex, sizeof ex);
    if (!t->shape_ok)
        LC_TRY(lc_json_printf(b, err, "  %-28s %-10s %-14s %9s %9s %10s %7s   %-24s FAIL\n",
                              t->name, types, t->shape_s, "-", "-", "-", "-", ex));
    else
        LC_TRY(lc_json_printf(b, err, "  %-28s %-10s %-14s %9.3g %9.3g %10.7f %7s %s %-24s %s\n",
                              t->name, types, t->shape_s, t->rmse, t->max_abs, t->cosine, snr,
                              t->snr_low ? "!" : " ", ex, t->ok ? "ok" : "FAIL"));
    if (t->ok)
        return LC_OK;
    if (!t->shape_ok)
        return lc_json_printf(b, err, "      shape %s in DST, another in SRC (%s)%s%s\n",
                              t->shape_s, t->src_name, t->diagnosis[0] ? ": " : "",
                              t->diagnosis);
    if (t->nonfinite)
        LC_TRY(lc_json_printf(b, err, "      %" PRIu64 " NaN/inf element%s where SRC has none "
                              "(first at row %" PRIu64 ", element %" PRIu64 ")\n", t->nonfinite,
                              t->nonfinite == 1 ? "" : "s", t->worst_row, t->worst_col));
    else if (t->floor_miss)
        LC_TRY(lc_json_printf(b, err, "      the tensor as a whole: cosine %.4g (at least %.4g), "
                              "relative RMSE %.3g (at most %.3g) for %s\n", t->cosine,
                              t->expect.cos_min, t->rel_rmse, t->expect.rel_rmse_max,
                              lc_vf_class_name(t->expect.cls)));
    else if (t->expect.block > 1)
        LC_TRY(lc_json_printf(b, err, "      at row %" PRIu64 ", block of elements %" PRIu64
                              "..%" PRIu64 ": %.3g x what %s may change there\n", t->worst_row,
                              t->worst_col, t->worst_col + t->expect.block - 1, t->worst,
                              lc_vf_class_name(t->expect.cls)));
    else
        LC_TRY(lc_json_printf(b, err, "      at row %" PRIu64 ", element %" PRIu64 ": %s\n",
                              t->worst_row, t->worst_col,
                              t->expect.cls == LC_DT_INVALID ? "differs where the values must be "
                                                               "equal"
                                                             : "past the type's rounding"));
    if (t->diagnosis[0])
        LC_TRY(lc_json_printf(b, err, "      %s\n", t->diagnosis));
    return LC_OK;
}

/* The importance matrix: the one given, the one DST records. */
static lc_code text_imatrix(lc_json_buf *b, const lc_vf_imatrix_note *n, lc_error *err) {
    char q[160] = "";
    if (n->dst_file[0])
        lc_vf_quote(n->dst_file, strlen(n->dst_file), q, sizeof q);
    if (n->given)
        LC_TRY(lc_json_printf(b, err, "  importance matrix (--imatrix): %zu tensor%s "
                              "reproduced with its weights\n", n->weighted,
                              n->weighted == 1 ? "" : "s"));
    if (n->lacking)
        return lc_json_printf(b, err, "  DST was quantized with an importance matrix (%s%s"
                              "quantize.imatrix.*) that the reproduction lacks: its tensors "
                              "cannot be proven without it; give it with --imatrix\n", q,
                              q[0] ? " in " : "");
    if (n->dst_records && !n->given)
        return lc_json_printf(b, err, "  DST records an importance matrix (%s%squantize."
                              "imatrix.*); every tensor is reproduced without it\n", q,
                              q[0] ? " in " : "");
    return LC_OK;
}

static lc_code text_tensors(lc_json_buf *b, const lc_vf_tensors *r,
                            const lc_vf_imatrix_note *im, lc_error *err) {
    LC_TRY(lc_json_printf(b, err, "tensors: %zu pairs compared", r->n));
    if (r->n_skipped)
        LC_TRY(lc_json_printf(b, err, " (%zu skipped: the family computes or drops %s)",
                              r->n_skipped, r->n_skipped == 1 ? "it" : "them"));
    LC_TRY(lc_json_printf(b, err, "; class %s; %zu outside the bound\n",
                          lc_vf_class_name(r->cls), r->n_bad));
    if (r->n_extra)
        LC_TRY(lc_json_printf(b, err, "  DST has %zu tensor%s SRC lacks: %s\n", r->n_extra,
                              r->n_extra == 1 ? "" : "s", r->extra));
    if (r->n)
        LC_TRY(lc_json_printf(b, err, "  reproduced from SRC by our own conversion: %zu "
                              "identical (proven), %zu differing, %zu of types we cannot "
                              "write\n", r->n_proven, r->n_repro_diff, r->n_proxied));
    LC_TRY(text_imatrix(b, im, err));
    if (!r->n)
        return LC_OK;
    LC_TRY(lc_json_printf(b, err, "  %-28s %-10s %-14s %9s %9s %10s %7s   %-24s\n", "name (worst first)",
                          "type", "shape", "RMSE", "max|err|", "cosine", "SNR dB", "expected"));
    size_t shown = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->t[i].ok && shown >= TEXT_TENSORS)
            continue;
        LC_TRY(text_tensor(b, &r->t[i], err));
        shown++;
    }
    if (shown < r->n)
        LC_TRY(lc_json_printf(b, err, "  ... %zu more within the bound (--json lists all)\n",
                              r->n - shown));
    return LC_OK;
}

static lc_code text_logits(lc_json_buf *b, const lc_vf_logits *g, lc_error *err) {
    if (g->tok_differ && g->tok_src == -1 && g->tok_dst == -1)
        LC_TRY(lc_json_printf(b, err, "tokenizer: %s\n", g->note));
    else if (g->tok_differ)
        LC_TRY(lc_json_printf(b, err, "tokenizer: DST's ids differ from SRC's at position %zu "
                              "(SRC %" PRId32 ", DST %" PRId32 "); both models ran on SRC's\n",
                              g->tok_at, g->tok_src, g->tok_dst));
    if (!g->ran)
        return lc_json_printf(b, err, "logits: not compared (%s)\n", g->note);
    LC_TRY(lc_json_printf(b, err, "logits: %zu tokens (%s%s%s), %zu scored, vocabulary %" PRIu32
                          "\n", g->n, g->source, g->note[0] && !g->tok_differ ? "; " : "",
                          g->tok_differ ? "" : g->note, g->n_scored, g->vocab));
    LC_TRY(lc_json_printf(b, err, "  NMSE %.3g   max|diff| %.3g (max|logit| %.3g)\n", g->nmse,
                          g->max_abs, g->max_logit));
    LC_TRY(lc_json_printf(b, err, "  KL divergence   mean %.6g   median %.6g   p99 %.6g   max "
                          "%.6g\n", g->kl_mean, g->kl_median, g->kl_p99, g->kl_max));
    LC_TRY(lc_json_printf(b, err, "  delta-p         RMS %.3f %%   min %.3f %%   p1 %.3f %%   "
                          "median %.3f %%   p99 %.3f %%   max %.3f %%\n", 100 * g->dp_rms,
                          100 * g->dp_min, 100 * g->dp_p01, 100 * g->dp_median, 100 * g->dp_p99,
                          100 * g->dp_max));
    LC_TRY(lc_json_printf(b, err, "  same top-1 %.2f %%   SRC's top in DST's top-5 %.2f %%\n",
                          100 * g->same_top1, 100 * g->same_top5));
    LC_TRY(lc_json_printf(b, err, "  perplexity      SRC %.4f   DST %.4f\n", g->ppl_src,
                          g->ppl_dst));
    if (g->repro_ran)
        LC_TRY(lc_json_printf(b, err, "  the reproduction (SRC converted by our own code): KL "
                              "mean %.6g   p99 %.6g   NMSE %.3g   same top-1 %.2f %%\n",
                              g->repro_kl_mean, g->repro_kl_p99, g->repro_nmse,
                              100 * g->repro_same_top1));
    if (!g->layers)
        return LC_OK;
    LC_TRY(lc_json_printf(b, err, "layers: ||h_DST - h_SRC|| / ||h_SRC|| after each layer:\n "));
    for (uint32_t l = 0; l < g->n_layers; l++)
        LC_TRY(lc_json_printf(b, err, " %" PRIu32 ":%.3g", l, g->layer_rel[l]));
    if (g->first_bad >= 0 && g->jump > 0)
        return lc_json_printf(b, err, "\n  the hidden states part ways at layer %d (the "
                              "difference grows %.1fx there)\n", g->first_bad, g->jump);
    if (g->first_bad >= 0)
        return lc_json_printf(b, err, "\n  the hidden states part ways at layer %d\n",
                              g->first_bad);
    return lc_json_printf(b, err, "\n  they grow apart evenly, within the limit, after every "
                          "layer\n");
}

lc_code lc_vf_print_text(const lc_vf_run *r, FILE *f, lc_error *err) {
    lc_json_buf b = { 0 };
    lc_code rc = side_line(&b, &r->src, err);
    if (rc == LC_OK)
        rc = side_line(&b, &r->dst, err);
    if (rc == LC_OK)
        rc = text_meta(&b, &r->meta, err);
    if (rc == LC_OK)
        rc = flush(&b, f, err);
    if (rc == LC_OK)
        rc = text_tensors(&b, &r->tensors, &r->imx, err);
    if (rc == LC_OK)
        rc = text_logits(&b, &r->logits, err);
    if (rc == LC_OK) {
        const lc_vf_limits *l = &r->limits;
        char nmse[48] = "";
        if (!isnan(l->nmse))
            snprintf(nmse, sizeof nmse, ", NMSE <= %.3g", l->nmse);
        rc = r->pass && r->judge == LC_VF_JUDGE_PROVEN
                 ? lc_json_printf(&b, err, "verdict: PASS (%s: every tensor is SRC's converted "
                                  "byte for byte%s; KL reported, not judged)\n",
                                  lc_vf_class_name(r->cls),
                                  r->meta.compared ? ", every key agrees" : "")
             : r->pass && r->judge == LC_VF_JUDGE_RELATIVE
                 ? lc_json_printf(&b, err, "verdict: PASS (%s: every key and tensor within its "
                                  "bound, mean KL <= %.3g, p99 KL <= %.3g%s: the reproduction's "
                                  "x%.1f + a margin%s)\n", lc_vf_class_name(r->cls), l->kl_mean,
                                  l->kl_p99, nmse, LC_VF_REPRO_FACTOR, r->imx.lacking ?
                                  "; not proven: reproduced without DST's importance matrix" : "")
             : r->pass && !r->logits.ran
                 ? lc_json_printf(&b, err, "verdict: PASS (%s: every %s within its bound; no "
                                  "forward pass)\n", lc_vf_class_name(r->cls),
                                  r->meta.compared ? "key and tensor" : "tensor")
             : r->pass ? lc_json_printf(&b, err, "verdict: PASS (%s: every key and tensor within "
                                        "its bound, mean KL <= %.3g, p99 KL <= %.3g%s)\n",
                                        lc_vf_class_name(r->cls), l->kl_mean, l->kl_p99, nmse)
                     : lc_json_printf(&b, err, "verdict: FAIL (%s): %s\n",
                                      lc_vf_class_name(r->cls), r->why);
    }
    if (rc == LC_OK)
        rc = flush(&b, f, err);
    lc_json_buf_free(&b);
    return rc;
}
