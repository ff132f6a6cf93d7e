/* jobs/model_verify_json.c: the --json object, for scripts: the verdict and its
 * reasons, the class and its limits, both sides, every kept metadata difference, every
 * tensor pair with its figures and bound, the logits figures with the token ids and the
 * KL at each position, and the hidden-state difference after each layer. Numbers that
 * are not finite (an exact tensor's SNR, a limit that is not judged) are null. */
#include "jobs/model_verify_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

lc_code lc_vf_json_num(lc_json_buf *b, double v, lc_error *err) {
    if (!isfinite(v))
        return lc_json_printf(b, err, "null");
    return lc_json_printf(b, err, "%.9g", v);
}

/* Hands what b holds to f; with f NULL (the object wanted in memory) b keeps it all. */
static lc_code flush(lc_json_buf *b, FILE *f, lc_error *err) {
    if (!f)
        return LC_OK;
    if (b->len && fwrite(b->data, 1, b->len, f) != b->len)
        return lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot write the report: %s",
                       strerror(errno));
    b->len = 0;
    return LC_OK;
}

static lc_code jstr(lc_json_buf *b, const char *s, lc_error *err) {
    /* The display form: C1 and bidi controls as \\u escapes (the same string to a parser). */
    return s ? lc_json_put_display(b, s, strlen(s), err) : lc_json_printf(b, err, "null");
}

static lc_code jkey_num(lc_json_buf *b, const char *k, double v, lc_error *err) {
    LC_TRY(lc_json_printf(b, err, ",\"%s\":", k));
    return lc_vf_json_num(b, v, err);
}

static lc_code json_side(lc_json_buf *b, const char *key, const lc_vf_side *s, lc_error *err) {
    LC_TRY(lc_json_printf(b, err, "\"%s\":{\"path\":", key));
    LC_TRY(jstr(b, s->path, err));
    LC_TRY(lc_json_printf(b, err, ",\"kind\":"));
    LC_TRY(jstr(b, lc_vf_kind_name(s->kind), err));
    LC_TRY(lc_json_printf(b, err, ",\"format\":"));
    LC_TRY(jstr(b, s->format, err));
    LC_TRY(lc_json_printf(b, err, ",\"arch\":"));
    LC_TRY(jstr(b, s->arch ? s->arch->name : NULL, err));
    LC_TRY(lc_json_printf(b, err, ",\"spelling\":"));
    LC_TRY(jstr(b, lc_vf_spelling_name(s->spelling), err));
    if (s->have_hp)
        LC_TRY(lc_json_printf(b, err, ",\"layers\":%" PRIu32, s->hp.block_count));
    return lc_json_printf(b, err, "}");
}

static lc_code json_meta(lc_json_buf *b, const lc_vf_meta *m, lc_error *err) {
    LC_TRY(lc_json_printf(b, err, "\"metadata\":{\"compared\":%s,\"note\":",
                          m->compared ? "true" : "false"));
    LC_TRY(jstr(b, m->note, err));
    LC_TRY(lc_json_printf(b, err, ",\"keys\":%zu,\"differences\":%zu,\"items\":[", m->n_keys,
                          m->n_diffs));
    for (size_t i = 0; i < m->n_kept; i++) {
        LC_TRY(lc_json_printf(b, err, "%s{\"key\":", i ? "," : ""));
        LC_TRY(jstr(b, m->diffs[i].key, err));
        LC_TRY(lc_json_printf(b, err, ",\"src\":"));
        LC_TRY(jstr(b, m->diffs[i].src, err));
        LC_TRY(lc_json_printf(b, err, ",\"dst\":"));
        LC_TRY(jstr(b, m->diffs[i].dst, err));
        LC_TRY(lc_json_printf(b, err, "}"));
    }
    return lc_json_printf(b, err, "]}");
}

static lc_code json_tensor(lc_json_buf *b, const lc_vf_tensor *t, lc_error *err) {
    LC_TRY(lc_json_printf(b, err, "{\"name\":"));
    LC_TRY(jstr(b, t->name, err));
    LC_TRY(lc_json_printf(b, err, ",\"src_name\":"));
    LC_TRY(jstr(b, t->src_name, err));
    if (t->layer != UINT32_MAX)
        LC_TRY(lc_json_printf(b, err, ",\"layer\":%" PRIu32, t->layer));
    else
        LC_TRY(lc_json_printf(b, err, ",\"layer\":null"));
    LC_TRY(lc_json_printf(b, err, ",\"src_type\":\"%s\",\"dst_type\":\"%s\",\"shape\":[",
                          lc_dtype_name(t->src_dt), lc_dtype_name(t->dst_dt)));
    for (uint32_t d = 0; d < t->ndim; d++)
        LC_TRY(lc_json_printf(b, err, "%s%" PRIu64, d ? "," : "", t->shape[d]));
    LC_TRY(lc_json_printf(b, err, "],\"shape_ok\":%s,\"permuted\":%s,\"expected\":{\"class\":\"%s\","
                          "\"block\":%" PRIu32, t->shape_ok ? "true" : "false",
                          t->permuted ? "true" : "false", lc_vf_class_name(t->expect.cls),
                          t->expect.block));
    LC_TRY(jkey_num(b, "rel", t->expect.rel, err));
    LC_TRY(jkey_num(b, "abs", t->expect.abs, err));
    LC_TRY(jkey_num(b, "snr_lo", t->expect.snr_lo, err));
    LC_TRY(jkey_num(b, "snr_hi", t->expect.snr_hi, err));
    LC_TRY(jkey_num(b, "cos_min", t->expect.cos_min, err));
    LC_TRY(jkey_num(b, "rel_rmse_max", t->expect.rel_rmse_max, err));
    LC_TRY(lc_json_printf(b, err, "},\"elements\":%" PRIu64, t->n));
    LC_TRY(jkey_num(b, "rmse", t->rmse, err));
    LC_TRY(jkey_num(b, "max_abs", t->max_abs, err));
    LC_TRY(lc_json_printf(b, err, ",\"max_at\":%" PRIu64, t->max_at));
    LC_TRY(jkey_num(b, "cosine", t->cosine, err));
    LC_TRY(jkey_num(b, "snr_db", t->snr_db, err));
    LC_TRY(jkey_num(b, "rel_rmse", t->rel_rmse, err));
    LC_TRY(lc_json_printf(b, err, ",\"below_floor\":%s", t->floor_miss ? "true" : "false"));
    LC_TRY(lc_json_printf(b, err, ",\"reproduced\":\"%s\",\"repro_type\":\"%s\","
                          "\"repro_rows_differ\":%" PRIu64,
                          t->repro == LC_VF_REPRO_SAME ? "same"
                          : t->repro == LC_VF_REPRO_DIFF ? "differs" : "no",
                          t->repro_dt == LC_DT_INVALID ? "none" : lc_dtype_name(t->repro_dt),
                          t->repro_rows));
    LC_TRY(lc_json_printf(b, err, ",\"imatrix_weighted\":%s,\"dst_weighted\":%s",
                          t->im_entry != SIZE_MAX ? "true" : "false",
                          t->weighted_dst ? "true" : "false"));
    LC_TRY(jkey_num(b, "repro_rel_rmse", t->repro_rel_rmse, err));
    LC_TRY(jkey_num(b, "worst", t->worst, err));
    LC_TRY(lc_json_printf(b, err, ",\"worst_row\":%" PRIu64 ",\"worst_col\":%" PRIu64
                          ",\"nonfinite\":%" PRIu64 ",\"ok\":%s,\"snr_low\":%s,\"diagnosis\":",
                          t->worst_row, t->worst_col, t->nonfinite, t->ok ? "true" : "false",
                          t->snr_low ? "true" : "false"));
    LC_TRY(jstr(b, t->diagnosis, err));
    return lc_json_printf(b, err, "}");
}

static lc_code json_tensors(lc_json_buf *b, FILE *f, const lc_vf_tensors *r, lc_error *err) {
    LC_TRY(lc_json_printf(b, err, "\"tensors\":{\"compared\":%zu,\"outside\":%zu,\"skipped\":",
                          r->n, r->n_bad));
    LC_TRY(jstr(b, r->skipped, err));
    LC_TRY(lc_json_printf(b, err, ",\"extra\":"));
    LC_TRY(jstr(b, r->extra, err));
    LC_TRY(lc_json_printf(b, err, ",\"class\":\"%s\",\"proven\":%zu,\"repro_differ\":%zu,"
                          "\"proxied\":%zu,\"items\":[", lc_vf_class_name(r->cls), r->n_proven,
                          r->n_repro_diff, r->n_proxied));
    for (size_t i = 0; i < r->n; i++) {
        if (i)
            LC_TRY(lc_json_printf(b, err, ","));
        LC_TRY(json_tensor(b, &r->t[i], err));
        if (b->len > (1u << 16))
            LC_TRY(flush(b, f, err));
    }
    return lc_json_printf(b, err, "]}");
}

static lc_code json_logits(lc_json_buf *b, const lc_vf_logits *g, lc_error *err) {
    LC_TRY(lc_json_printf(b, err, "\"logits\":{\"ran\":%s,\"note\":", g->ran ? "true" : "false"));
    LC_TRY(jstr(b, g->note, err));
    LC_TRY(lc_json_printf(b, err, ",\"source\":"));
    LC_TRY(jstr(b, g->source, err));
    LC_TRY(lc_json_printf(b, err, ",\"tokenizer_agrees\":%s", g->tok_differ ? "false" : "true"));
    if (g->tok_differ)
        LC_TRY(lc_json_printf(b, err, ",\"tokenizer_difference\":{\"position\":%zu,\"src\":%"
                              PRId32 ",\"dst\":%" PRId32 "}", g->tok_at, g->tok_src, g->tok_dst));
    LC_TRY(lc_json_printf(b, err, ",\"tokens\":%zu,\"scored\":%zu,\"vocab\":%" PRIu32, g->n,
                          g->n_scored, g->vocab));
    if (g->ran) {
        LC_TRY(jkey_num(b, "nmse", g->nmse, err));
        LC_TRY(jkey_num(b, "max_abs", g->max_abs, err));
        LC_TRY(jkey_num(b, "max_logit", g->max_logit, err));
        LC_TRY(lc_json_printf(b, err, ",\"kl\":{\"mean\":"));
        LC_TRY(lc_vf_json_num(b, g->kl_mean, err));
        LC_TRY(jkey_num(b, "median", g->kl_median, err));
        LC_TRY(jkey_num(b, "p99", g->kl_p99, err));
        LC_TRY(jkey_num(b, "max", g->kl_max, err));
        LC_TRY(lc_json_printf(b, err, "},\"delta_p\":{\"rms\":"));
        LC_TRY(lc_vf_json_num(b, g->dp_rms, err));
        LC_TRY(jkey_num(b, "min", g->dp_min, err));
        LC_TRY(jkey_num(b, "p01", g->dp_p01, err));
        LC_TRY(jkey_num(b, "p05", g->dp_p05, err));
        LC_TRY(jkey_num(b, "median", g->dp_median, err));
        LC_TRY(jkey_num(b, "p95", g->dp_p95, err));
        LC_TRY(jkey_num(b, "p99", g->dp_p99, err));
        LC_TRY(jkey_num(b, "max", g->dp_max, err));
        LC_TRY(lc_json_printf(b, err, "}"));
        LC_TRY(jkey_num(b, "same_top1", g->same_top1, err));
        LC_TRY(jkey_num(b, "same_top5", g->same_top5, err));
        LC_TRY(jkey_num(b, "ppl_src", g->ppl_src, err));
        LC_TRY(jkey_num(b, "ppl_dst", g->ppl_dst, err));
        LC_TRY(lc_json_printf(b, err, ",\"token_ids\":["));
        for (size_t i = 0; i < g->n; i++)
            LC_TRY(lc_json_printf(b, err, "%s%" PRId32, i ? "," : "", g->tokens[i]));
        LC_TRY(lc_json_printf(b, err, "],\"reproduction\":{\"ran\":%s",
                              g->repro_ran ? "true" : "false"));
        if (g->repro_ran) {
            LC_TRY(jkey_num(b, "kl_mean", g->repro_kl_mean, err));
            LC_TRY(jkey_num(b, "kl_p99", g->repro_kl_p99, err));
            LC_TRY(jkey_num(b, "nmse", g->repro_nmse, err));
            LC_TRY(jkey_num(b, "same_top1", g->repro_same_top1, err));
        }
        LC_TRY(lc_json_printf(b, err, "},\"kl_per_position\":["));
        for (size_t i = 0; i < g->n_scored; i++) {
            if (i)
                LC_TRY(lc_json_printf(b, err, ","));
            LC_TRY(lc_vf_json_num(b, g->kl_pos[i], err));
        }
        LC_TRY(lc_json_printf(b, err, "]"));
    }
    LC_TRY(lc_json_printf(b, err, "},\"layers\":{\"compared\":%s", g->ran && g->layers ? "true"
                                                                                       : "false"));
    if (g->ran && g->layers) {
        LC_TRY(lc_json_printf(b, err, ",\"relative\":["));
        for (uint32_t l = 0; l < g->n_layers; l++) {
            if (l)
                LC_TRY(lc_json_printf(b, err, ","));
            LC_TRY(lc_vf_json_num(b, g->layer_rel[l], err));
        }
        LC_TRY(lc_json_printf(b, err, "],\"cosine\":["));
        for (uint32_t l = 0; l < g->n_layers; l++) {
            if (l)
                LC_TRY(lc_json_printf(b, err, ","));
            LC_TRY(lc_vf_json_num(b, g->layer_cos[l], err));
        }
        LC_TRY(lc_json_printf(b, err, "]"));
        if (g->repro_layer_rel) {
            LC_TRY(lc_json_printf(b, err, ",\"reproduction_relative\":["));
            for (uint32_t l = 0; l < g->n_layers; l++) {
                if (l)
                    LC_TRY(lc_json_printf(b, err, ","));
                LC_TRY(lc_vf_json_num(b, g->repro_layer_rel[l], err));
            }
            LC_TRY(lc_json_printf(b, err, "]"));
        }
        if (g->first_bad >= 0)
            LC_TRY(lc_json_printf(b, err, ",\"first_divergent\":%d", g->first_bad));
        else
            LC_TRY(lc_json_printf(b, err, ",\"first_divergent\":null"));
        if (g->first_over >= 0)
            LC_TRY(lc_json_printf(b, err, ",\"first_past_limit\":%d", g->first_over));
        else
            LC_TRY(lc_json_printf(b, err, ",\"first_past_limit\":null"));
    }
    return lc_json_printf(b, err, "}");
}

static lc_code json_imatrix(lc_json_buf *b, const lc_vf_run *r, lc_error *err) {
    const lc_vf_imatrix_note *n = &r->imx;
    LC_TRY(lc_json_printf(b, err, "\"imatrix\":{\"given\":"));
    LC_TRY(jstr(b, r->o->imatrix, err));
    LC_TRY(lc_json_printf(b, err, ",\"weighted\":%zu,\"dst_records\":%s,\"dst_file\":",
                          n->weighted, n->dst_records ? "true" : "false"));
    LC_TRY(jstr(b, n->dst_file[0] ? n->dst_file : NULL, err));
    if (n->dst_entries >= 0)
        LC_TRY(lc_json_printf(b, err, ",\"dst_entries\":%" PRId64, n->dst_entries));
    else
        LC_TRY(lc_json_printf(b, err, ",\"dst_entries\":null"));
    return lc_json_printf(b, err, ",\"lacking\":%s}", n->lacking ? "true" : "false");
}

/* The object into b, handed to f as it grows (f NULL: all of it left in b). */
static lc_code json_run(const lc_vf_run *r, lc_json_buf *b, FILE *f, lc_error *err) {
    const lc_vf_limits *l = &r->limits;
    lc_code rc = lc_json_printf(b, err, "{\"verdict\":\"%s\",\"judged\":\"%s\",\"why\":",
                                r->pass ? "pass" : "fail",
                                r->judge == LC_VF_JUDGE_PROVEN ? "proven"
                                : r->judge == LC_VF_JUDGE_RELATIVE ? "relative" : "limits");
    if (rc == LC_OK)
        rc = jstr(b, r->why, err);
    if (rc == LC_OK)
        rc = lc_json_printf(b, err, ",\"class\":\"%s\",\"limits\":{\"kl_mean\":%.9g,\"kl_p99\":"
                            "%.9g,\"hidden\":%.9g,\"nmse\":", lc_vf_class_name(r->cls),
                            l->kl_mean, l->kl_p99, l->hidden);
    if (rc == LC_OK)
        rc = lc_vf_json_num(b, l->nmse, err);
    if (rc == LC_OK)
        rc = lc_json_printf(b, err, "},");
    if (rc == LC_OK)
        rc = json_imatrix(b, r, err);
    if (rc == LC_OK)
        rc = lc_json_printf(b, err, ",");
    if (rc == LC_OK)
        rc = json_side(b, "src", &r->src, err);
    if (rc == LC_OK)
        rc = lc_json_printf(b, err, ",");
    if (rc == LC_OK)
        rc = json_side(b, "dst", &r->dst, err);
    if (rc == LC_OK)
        rc = lc_json_printf(b, err, ",");
    if (rc == LC_OK)
        rc = json_meta(b, &r->meta, err);
    if (rc == LC_OK)
        rc = lc_json_printf(b, err, ",");
    if (rc == LC_OK)
        rc = json_tensors(b, f, &r->tensors, err);
    if (rc == LC_OK)
        rc = lc_json_printf(b, err, ",");
    if (rc == LC_OK)
        rc = json_logits(b, &r->logits, err);
    if (rc == LC_OK)
        rc = lc_json_printf(b, err, "}\n");
    if (rc == LC_OK)
        rc = flush(b, f, err);
    return rc;
}

lc_code lc_vf_print_json(const lc_vf_run *r, FILE *f, lc_error *err) {
    lc_json_buf b = { 0 };
    const lc_code rc = json_run(r, &b, f, err);
    lc_json_buf_free(&b);
    return rc;
}

lc_code lc_vf_json_text(const lc_vf_run *r, char **text, size_t *len, lc_error *err) {
    lc_json_buf b = { 0 };
    *text = NULL;
    *len = 0;
    const lc_code rc = json_run(r, &b, NULL, err);
    if (rc != LC_OK) {
        lc_json_buf_free(&b);
        return rc;
    }
    *text = b.data;
    *len = b.len;
    return LC_OK;
}
