/* jobs/model_verify_report.c: the --report page. One self-contained HTML file: inline
 * CSS and SVG, no script, no network; readable in any browser and printable.
 *
 *   1. the verdict, both sides, the reasons;
 *   2. metadata differences (the kept ones);
 *   3. per tensor, worst first: a bar of its SNR in dB against the band its type
 *      gives (shaded), red when outside its bound, with RMSE, max |err|, cosine;
 *   4. KL divergence at each scored position (log scale), with the mean;
 *   5. the relative difference of the hidden states after each layer (log scale),
 *      with the class's limit and the first layer past it.
 * Written through libconvert/outfile.h: it appears whole or not at all. */
#include "jobs/model_verify_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/escape.h"
#include "libconvert/outfile.h"

#define BAR_TENSORS 400     /* tensors drawn (the failing ones first); the rest counted */

/* HTML text: the five special characters as entities, and what libconvert/escape.c
 * escapes (controls, C1, bidi controls, bytes that are not UTF-8) as its escapes. */
static lc_code esc(lc_json_buf *b, const char *s, lc_error *err) {
    const uint8_t *u = (const uint8_t *)s;
    const size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        const char c = s[i];
        const char *e = c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;"
                      : c == '"' ? "&quot;" : c == '\'' ? "&#39;" : NULL;
        char x[8];
        size_t step = 1, k = 0;
        if (e)
            LC_TRY(lc_json_put(b, e, strlen(e), err));
        else if ((k = lc_escape_one(u + i, n - i, false, &step, x)) != 0)
            LC_TRY(lc_json_put(b, x, k, err));
        else
            LC_TRY(lc_json_put(b, s + i, step, err));
        i += step;
    }
    return LC_OK;
}

static lc_code head(lc_json_buf *b, const lc_vf_run *r, lc_error *err) {
    LC_TRY(lc_json_printf(b, err, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>model-verify: %s</title><style>\n"
        "body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:72em;color:#222}\n"
        "h1{font-size:1.4em} h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ccc}\n"
        "table{border-collapse:collapse} td,th{padding:2px 8px;text-align:left;"
        "font-variant-numeric:tabular-nums} tr:nth-child(even){background:#f6f6f6}\n"
        ".pass{color:#186a1d;font-weight:bold} .fail{color:#b3141b;font-weight:bold}\n"
        "code{font-size:12px} svg text{font:11px sans-serif}\n</style></head><body>\n",
        r->pass ? "PASS" : "FAIL"));
    LC_TRY(lc_json_printf(b, err, "<h1>model-verify: <span class=\"%s\">%s</span> (class %s)</h1>\n",
                          r->pass ? "pass" : "fail", r->pass ? "PASS" : "FAIL",
                          lc_vf_class_name(r->cls)));
    if (!r->pass) {
        LC_TRY(lc_json_printf(b, err, "<p class=\"fail\">"));
        LC_TRY(esc(b, r->why, err));
        LC_TRY(lc_json_printf(b, err, "</p>\n"));
    }
    const lc_vf_tensors *ts = &r->tensors;
    LC_TRY(lc_json_printf(b, err, "<p>Reproduced from SRC by our own conversion: %zu of %zu "
                          "tensors identical (proven), %zu differing, %zu of types we cannot "
                          "write. ", ts->n_proven, ts->n, ts->n_repro_diff, ts->n_proxied));
    if (r->judge == LC_VF_JUDGE_PROVEN)
        LC_TRY(lc_json_printf(b, err, "Every tensor proven: the logits are reported, not "
                              "judged.</p>\n"));
    else if (r->judge == LC_VF_JUDGE_RELATIVE)
        LC_TRY(lc_json_printf(b, err, "The logits are judged against the reproduction's own: "
                              "KL mean %.4g, p99 %.4g (limits: %.1fx those plus a margin).</p>\n",
                              r->logits.repro_kl_mean, r->logits.repro_kl_p99,
                              LC_VF_REPRO_FACTOR));
    else
        LC_TRY(lc_json_printf(b, err, "The logits are held to the class's fixed limits.</p>\n"));
    if (r->imx.given)
        LC_TRY(lc_json_printf(b, err, "<p>Importance matrix (--imatrix): %zu tensors reproduced "
                              "with its weights.</p>\n", r->imx.weighted));
    if (r->imx.lacking)
        LC_TRY(lc_json_printf(b, err, "<p class=\"fail\">DST was quantized with an importance "
                              "matrix (quantize.imatrix.*) that the reproduction lacks: its "
                              "tensors cannot be proven without it (--imatrix).</p>\n"));
    LC_TRY(lc_json_printf(b, err, "<table>"));
    const lc_vf_side *s[2] = { &r->src, &r->dst };
    for (int i = 0; i < 2; i++) {
        LC_TRY(lc_json_printf(b, err, "<tr><th>%s</th><td><code>", s[i]->label));
        LC_TRY(esc(b, s[i]->path, err));
        LC_TRY(lc_json_printf(b, err, "</code></td><td>%s, %s, %s</td></tr>",
                              lc_vf_kind_name(s[i]->kind), s[i]->arch ? s[i]->arch->name : "no family",
                              lc_vf_spelling_name(s[i]->spelling)));
    }
    return lc_json_printf(b, err, "</table>\n");
}

static lc_code meta(lc_json_buf *b, const lc_vf_meta *m, lc_error *err) {
    LC_TRY(lc_json_printf(b, err, "<h2>Metadata</h2>\n"));
    if (!m->compared) {
        LC_TRY(lc_json_printf(b, err, "<p>Not compared: "));
        LC_TRY(esc(b, m->note, err));
        return lc_json_printf(b, err, "</p>\n");
    }
    LC_TRY(lc_json_printf(b, err, "<p>%zu keys compared, %zu difference%s.</p>\n", m->n_keys,
                          m->n_diffs, m->n_diffs == 1 ? "" : "s"));
    if (!m->n_kept)
        return LC_OK;
    LC_TRY(lc_json_printf(b, err, "<table><tr><th>key</th><th>SRC</th><th>DST</th></tr>\n"));
    for (size_t i = 0; i < m->n_kept; i++) {
        LC_TRY(lc_json_printf(b, err, "<tr><td><code>"));
        LC_TRY(esc(b, m->diffs[i].key, err));
        LC_TRY(lc_json_printf(b, err, "</code></td><td><code>"));
        LC_TRY(esc(b, m->diffs[i].src, err));
        LC_TRY(lc_json_printf(b, err, "</code></td><td><code>"));
        LC_TRY(esc(b, m->diffs[i].dst, err));
        LC_TRY(lc_json_printf(b, err, "</code></td></tr>\n"));
    }
    return lc_json_printf(b, err, "</table>\n");
}

/* Per-tensor bars: SNR in dB from 0 to 100 (exact: the full width). */
static lc_code tensors(lc_json_buf *b, const lc_vf_tensors *t, lc_error *err) {
    const size_t n = t->n < BAR_TENSORS ? t->n : BAR_TENSORS;
    const int row = 16, label = 260, width = 420, top = 20;
    LC_TRY(lc_json_printf(b, err, "<h2>Tensors</h2>\n<p>%zu pairs, class %s, %zu outside the "
                          "bound. Bars: SNR in dB (right is better); the shaded band is what "
                          "the type gives model weights; red: outside the bound.</p>\n",
                          t->n, lc_vf_class_name(t->cls), t->n_bad));
    LC_TRY(lc_json_printf(b, err, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                          "height=\"%zu\" role=\"img\">\n", label + width + 240,
                          (size_t)top + n * (size_t)row + 10));
    for (int db = 0; db <= 100; db += 20)
        LC_TRY(lc_json_printf(b, err, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%zu\" "
                              "stroke=\"#ddd\"/><text x=\"%d\" y=\"12\">%d dB</text>\n",
                              label + db * width / 100, top - 4, label + db * width / 100,
                              top + n * (size_t)row, label + db * width / 100 - 10, db));
    for (size_t i = 0; i < n; i++) {
        const lc_vf_tensor *x = &t->t[i];
        const size_t y = top + i * (size_t)row;
        const double snr = !(x->snr_db >= 0) ? 0 : x->snr_db > 100 ? 100 : x->snr_db;
        if (isfinite(x->expect.snr_lo) && x->expect.cls != LC_DT_INVALID) {
            const double lo = x->expect.snr_lo, hi = x->expect.snr_hi > 100 ? 100 : x->expect.snr_hi;
            LC_TRY(lc_json_printf(b, err, "<rect x=\"%.1f\" y=\"%zu\" width=\"%.1f\" height=\"%d\" "
                                  "fill=\"#e4ecf7\"/>\n", label + lo * width / 100, y,
                                  (hi - lo) * width / 100, row - 2));
        }
        LC_TRY(lc_json_printf(b, err, "<rect x=\"%d\" y=\"%zu\" width=\"%.1f\" height=\"%d\" "
                              "fill=\"%s\"><title>", label, y + 3,
                              snr * width / 100 > 3 ? snr * width / 100 : 3, row - 8,
                              x->ok ? "#4a7fc1" : "#c62828"));
        LC_TRY(esc(b, x->name, err));
        if (x->shape_ok)
            LC_TRY(lc_json_printf(b, err, ": RMSE %.3g, max|err| %.3g, cosine %.7f, SNR %.1f dB",
                                  x->rmse, x->max_abs, x->cosine, x->snr_db));
        else
            LC_TRY(lc_json_printf(b, err, ": shape %s, another in SRC", x->shape_s));
        LC_TRY(lc_json_printf(b, err, "</title></rect>\n<text x=\"0\" y=\"%zu\"%s>", y + row - 4,
                              x->ok ? "" : " fill=\"#c62828\""));
        LC_TRY(esc(b, x->name, err));
        char db[24];
        if (x->snr_db == INFINITY)
            snprintf(db, sizeof db, "exact");
        else if (!x->shape_ok)
            snprintf(db, sizeof db, "other shape");
        else
            snprintf(db, sizeof db, "%.1f dB", x->snr_db);
        LC_TRY(lc_json_printf(b, err, "</text><text x=\"%d\" y=\"%zu\"%s>%s %s%s</text>\n",
                              label + width + 6, y + row - 4, x->ok ? "" : " fill=\"#c62828\"",
                              lc_dtype_name(x->dst_dt), db, x->ok ? "" : " FAIL"));
    }
    LC_TRY(lc_json_printf(b, err, "</svg>\n"));
    if (n < t->n)
        LC_TRY(lc_json_printf(b, err, "<p>... %zu more within the bound.</p>\n", t->n - n));
    for (size_t i = 0; i < t->n; i++) {
        if (t->t[i].ok || !t->t[i].diagnosis[0])
            continue;
        LC_TRY(lc_json_printf(b, err, "<p><code>"));
        LC_TRY(esc(b, t->t[i].name, err));
        LC_TRY(lc_json_printf(b, err, "</code>: "));
        LC_TRY(esc(b, t->t[i].diagnosis, err));
        LC_TRY(lc_json_printf(b, err, "</p>\n"));
    }
    return LC_OK;
}

/* log10 for the charts: at least -9; NaN and infinity drawn at the top (1e9). */
static double lg(double v) {
    return isnan(v) || v == INFINITY ? 9 : v > 1e-9 ? log10(v) : -9;
}

/* A log-scale line chart of n values (floor 1e-9), with an optional horizontal line. */
static lc_code chart(lc_json_buf *b, const double *v, size_t n, double line, int mark,
                     const char *xlabel, lc_error *err) {
    const int w = 720, h = 220, l = 50, t = 10, bot = 30;
    double lo = 0, hi = -9;
    for (size_t i = 0; i < n; i++) {
        const double y = lg(v[i]);
        hi = y > hi ? y : hi;
        lo = y < lo ? y : lo;
    }
    if (line > 0 && isfinite(line))
        hi = log10(line) > hi ? log10(line) : hi;
    lo = floor(lo);
    hi = ceil(hi) > lo ? ceil(hi) : lo + 1;
    LC_TRY(lc_json_printf(b, err, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                          "height=\"%d\" role=\"img\">\n", w + l + 10, h + t + bot));
    for (double e = lo; e <= hi; e += 1) {
        const double y = t + h - (e - lo) / (hi - lo) * h;
        LC_TRY(lc_json_printf(b, err, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
                              "stroke=\"#ddd\"/><text x=\"2\" y=\"%.1f\">1e%d</text>\n", l, l + w,
                              y, y, y + 4, (int)e));
    }
    LC_TRY(lc_json_printf(b, err, "<text x=\"%d\" y=\"%d\">%s</text>\n", l + w / 2 - 20,
                          t + h + 26, xlabel));
    if (line > 0 && isfinite(line)) {
        const double y = t + h - (log10(line) - lo) / (hi - lo) * h;
        LC_TRY(lc_json_printf(b, err, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
                              "stroke=\"#c62828\" stroke-dasharray=\"4 3\"/>\n", l, l + w, y, y));
    }
    LC_TRY(lc_json_printf(b, err, "<polyline fill=\"none\" stroke=\"#4a7fc1\" points=\""));
    for (size_t i = 0; i < n; i++) {
        const double x = l + (n > 1 ? (double)i * w / (double)(n - 1) : w / 2.0);
        const double y = t + h - (lg(v[i]) - lo) / (hi - lo) * h;
        LC_TRY(lc_json_printf(b, err, "%.1f,%.1f ", x, y));
    }
    LC_TRY(lc_json_printf(b, err, "\"/>\n"));
    /* Points and x ticks where they can be told apart. */
    const size_t step = n <= 32 ? 1 : (n + 9) / 10;
    for (size_t i = 0; i < n; i++) {
        const double x = l + (n > 1 ? (double)i * w / (double)(n - 1) : w / 2.0);
        const double y = t + h - (lg(v[i]) - lo) / (hi - lo) * h;
        if (n <= 64)
            LC_TRY(lc_json_printf(b, err, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" "
                                  "fill=\"#4a7fc1\"/>\n", x, y));
        if (i % step == 0)
            LC_TRY(lc_json_printf(b, err, "<text x=\"%.1f\" y=\"%d\">%zu</text>\n", x - 3,
                                  t + h + 12, i));
    }
    if (mark >= 0 && (size_t)mark < n) {
        const double x = l + (n > 1 ? (double)mark * w / (double)(n - 1) : w / 2.0);
        LC_TRY(lc_json_printf(b, err, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" "
                              "stroke=\"#c62828\"/><text x=\"%.1f\" y=\"%d\" fill=\"#c62828\">"
                              "%d</text>\n", x, x, t, t + h, x + 3, t + 12, mark));
    }
    return lc_json_printf(b, err, "</svg>\n");
}

static lc_code logits(lc_json_buf *b, const lc_vf_logits *g, const lc_vf_limits *lim,
                      lc_error *err) {
    LC_TRY(lc_json_printf(b, err, "<h2>Logits</h2>\n"));
    if (!g->ran) {
        LC_TRY(lc_json_printf(b, err, "<p>Not compared: "));
        LC_TRY(esc(b, g->note, err));
        return lc_json_printf(b, err, "</p>\n");
    }
    char nmse_limit[48] = "not judged for this type";
    if (!isnan(lim->nmse))
        snprintf(nmse_limit, sizeof nmse_limit, "limit %.3g", lim->nmse);
    LC_TRY(lc_json_printf(b, err, "<p>%zu tokens (", g->n));
    LC_TRY(esc(b, g->source, err));
    LC_TRY(lc_json_printf(b, err, "), %zu scored, vocabulary %" PRIu32 ".</p>\n<table>"
        "<tr><td>NMSE</td><td>%.3g</td><td>%s</td></tr>"
        "<tr><td>max |diff|</td><td>%.3g</td><td>max |logit| %.3g</td></tr>"
        "<tr><td>KL mean / median / p99 / max</td><td>%.6g / %.6g / %.6g / %.6g</td>"
        "<td>limits %.3g (mean), %.3g (p99)</td></tr>"
        "<tr><td>delta-p RMS / min / median / max</td><td>%.3f %% / %.3f %% / %.3f %% / %.3f %%"
        "</td><td></td></tr>"
        "<tr><td>same top-1 / top-5</td><td>%.2f %% / %.2f %%</td><td>(reported)</td></tr>"
        "<tr><td>perplexity SRC / DST</td><td>%.4f / %.4f</td><td></td></tr></table>\n",
        g->n_scored, g->vocab, g->nmse, nmse_limit, g->max_abs, g->max_logit, g->kl_mean,
        g->kl_median, g->kl_p99, g->kl_max, lim->kl_mean, lim->kl_p99, 100 * g->dp_rms,
        100 * g->dp_min, 100 * g->dp_median, 100 * g->dp_max, 100 * g->same_top1,
        100 * g->same_top5, g->ppl_src, g->ppl_dst));
    LC_TRY(lc_json_printf(b, err, "<h2>KL divergence per position</h2>\n<p>KL(SRC || DST) of "
                          "the next-token distribution at each position (log scale); dashed: "
                          "the mean.</p>\n"));
    double *v = lc_malloc_array(g->n_scored ? g->n_scored : 1, sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (size_t i = 0; i < g->n_scored; i++)
        v[i] = g->kl_pos[i];
    lc_code rc = chart(b, v, g->n_scored, g->kl_mean, -1, "position", err);
    lc_free(v);
    LC_TRY(rc);
    if (!g->layers)
        return LC_OK;
    LC_TRY(lc_json_printf(b, err, "<h2>Hidden states, layer by layer</h2>\n<p>||h<sub>DST</sub> "
                          "- h<sub>SRC</sub>|| / ||h<sub>SRC</sub>|| after each layer (log "
                          "scale); dashed: the limit %.3g; ", lim->hidden));
    if (g->first_bad >= 0)
        LC_TRY(lc_json_printf(b, err, "<b class=\"fail\">the models part ways at layer %d</b>.",
                              g->first_bad));
    else
        LC_TRY(lc_json_printf(b, err, "within the limit after every layer."));
    LC_TRY(lc_json_printf(b, err, "</p>\n"));
    return chart(b, g->layer_rel, g->n_layers, lim->hidden, g->first_bad, "layer", err);
}

lc_code lc_vf_write_report(const lc_vf_run *r, const char *path, lc_error *err) {
    lc_json_buf b = { 0 };
    lc_outfile *f = NULL;
    lc_code rc = head(&b, r, err);
    if (rc == LC_OK)
        rc = meta(&b, &r->meta, err);
    if (rc == LC_OK)
        rc = tensors(&b, &r->tensors, err);
    if (rc == LC_OK)
        rc = logits(&b, &r->logits, &r->limits, err);
    if (rc == LC_OK)
        rc = lc_json_printf(&b, err, "<p><small>Written by model-verify (libconvert). Figures: "
                            "README \"model-verify\".</small></p>\n</body></html>\n");
    if (rc == LC_OK)
        rc = lc_outfile_open(path, &f, err);
    if (rc == LC_OK)
        rc = lc_outfile_write(f, b.data, b.len, err);
    if (rc == LC_OK) {
        rc = lc_outfile_commit(f, err);
        f = NULL;
    }
    lc_outfile_abort(f);
    lc_json_buf_free(&b);
    return rc;
}
