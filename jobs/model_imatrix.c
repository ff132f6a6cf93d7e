/* jobs/model_imatrix.c: the model-imatrix run (model_imatrix.h): the model opened as
 * model-verify opens a side, the text tokenized by its own tokenizer, the chunks run
 * through our forward pass with the sums' tap set (model_imatrix_sums.c), the file
 * written atomically. */
#include "jobs/model_imatrix.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "formats/gguf.h"
#include "infer/infer.h"
#include "infer/tokenize.h"
#include "jobs/model_imatrix_impl.h"
#include "jobs/model_side_impl.h"
#include "libconvert/alloc.h"
#include "libconvert/outfile.h"

/* A calibration text is read whole: ids cost at most 4 bytes a byte of it. */
#define MAX_TEXT_BYTES (256u << 20)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void lc_job_imatrix_result_free(lc_job_imatrix_result *r) {
    if (!r)
        return;
    lc_free(r->tokens);
    memset(r, 0, sizeof *r);
}

/* The text's ids with BOS / EOS as the model adds them (llama-imatrix tokenizes with
 * add_special), special tokens' texts parsed only when asked. */
static lc_code tokenize(const lc_tok *tok, const char *text, size_t len, bool special,
                        int32_t **ids, size_t *n, lc_error *err) {
    const unsigned flags = LC_TOK_ADD_SPECIAL | (special ? LC_TOK_PARSE_SPECIAL : 0u);
    size_t cap = len + 16, need = 0;
    int32_t *v = lc_malloc_array(cap, sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu ids", cap);
    lc_error first = { 0 };
    lc_code rc = lc_tok_encode(tok, text, len, flags, v, cap, &need, &first);
    if (rc == LC_E_OVERFLOW && need > cap) {        /* more ids than bytes: once more */
        int32_t *w = lc_realloc_array(v, need, sizeof *v);
        if (w)
            v = w;
        rc = !w ? lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu ids", need)
                : lc_tok_encode(tok, text, len, flags, v, need, &need, err);
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

/* The chunks' ids into r->tokens: chunk i is ids [i ctx, (i + 1) ctx) with its first
 * replaced by BOS when the model adds one, as llama-imatrix feeds them. */
static lc_code make_chunks(const lc_job_imatrix_opts *o, const lc_tok *tok, const int32_t *ids,
                           size_t n, lc_job_imatrix_result *r, lc_error *err) {
    r->n_text_tokens = n;
    const size_t fit = n / o->ctx;
    if (n == 0 || fit == 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "the text gives %zu tokens, fewer than "
                       "one chunk of %" PRIu32 " (--ctx)", n, o->ctx);
    r->chunks = (uint32_t)(o->chunks && o->chunks < fit ? o->chunks
                           : fit < UINT32_MAX ? fit : UINT32_MAX);
    r->chunk_size = o->ctx;
    const size_t total = (size_t)r->chunks * o->ctx;
    if (!(r->tokens = lc_malloc_array(total, sizeof *r->tokens)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu ids", total);
    memcpy(r->tokens, ids, total * sizeof *ids);
    for (uint32_t c = 0; lc_tok_adds_bos(tok) && c < r->chunks; c++)
        r->tokens[(size_t)c * o->ctx] = lc_tok_bos(tok);
    return LC_OK;
}

/* The text (a file or the bundled one) through the model's tokenizer into chunks. */
static lc_code get_chunks(const lc_job_imatrix_opts *o, const lc_vf_side *s,
                          lc_job_imatrix_result *r, lc_error *err) {
    if (!s->meta)
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "the model has no tokenizer");
    char *owned = NULL;
    const char *text = lc_tok_default_text();
    size_t len = strlen(text);
    if (o->file) {
        LC_TRY(lc_tok_read_file(o->file, MAX_TEXT_BYTES, &owned, &len, err));
        text = owned;
    }
    lc_tok *tok = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    lc_code rc = lc_tok_open(s->meta, &tok, err);
    if (rc == LC_OK && len == 0)
        rc = lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "the text is empty");
    if (rc == LC_OK)
        rc = tokenize(tok, text, len, o->parse_special, &ids, &n, err);
    if (rc == LC_OK)
        rc = make_chunks(o, tok, ids, n, r, err);
    if (rc != LC_OK && o->file)
        lc_err_context(err, o->file, NULL);
    lc_free(ids);
    lc_tok_close(tok);
    lc_free(owned);
    return rc;
}

/* Every chunk through the forward pass, the tap adding up the products' inputs. */
static lc_code run_chunks(const lc_job_imatrix_opts *o, const lc_vf_side *s, lc_imx *sums,
                          lc_progress *p, lc_job_imatrix_result *r, lc_error *err) {
    const lc_infer_opts io = { .threads = o->threads };
    lc_infer *ctx = NULL;
    LC_TRY(lc_infer_open(s->views, s->arch, &s->hp, s->spelling, &io, &ctx, err));
    float *hidden = lc_malloc_array(o->ctx, (size_t)lc_infer_embd(ctx) * sizeof *hidden);
    lc_code rc = hidden ? LC_OK : lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for "
                                          "%" PRIu32 " hidden states", o->ctx);
    lc_infer_set_tap(ctx, lc_imx_tap, sums);
    char label[96];
    snprintf(label, sizeof label, "%" PRIu32 " chunks of %" PRIu32 " tokens", r->chunks,
             o->ctx);
    lc_progress_begin_units(p, label, (uint64_t)r->chunks * o->ctx, "tokens");
    const double t0 = now_s();
    for (uint32_t c = 0; c < r->chunks && rc == LC_OK; c++) {
        sums->chunk = c;
        rc = lc_infer_hidden(ctx, r->tokens + (size_t)c * o->ctx, o->ctx, hidden, NULL, err);
        lc_progress_add(p, o->ctx);
    }
    r->seconds = now_s() - t0;
    lc_progress_end(p);
    lc_free(hidden);
    lc_infer_close(ctx);
    return rc;
}

lc_code lc_job_model_imatrix(const lc_job_imatrix_opts *o, lc_progress *p,
                             lc_job_imatrix_result *r, lc_error *err) {
    memset(r, 0, sizeof *r);
    if (o->ctx == 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--ctx must be at least 1");
    lc_vf_side s;
    lc_imx sums = { 0 };
    lc_model *out = NULL;
    lc_code rc = lc_vf_side_open(&s, o->model, "MODEL", err);
    if (rc == LC_OK && (!s.arch || !s.have_hp)) {
        rc = lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "a %s without a model family and "
                     "hyperparameters: the forward pass cannot run it",
                     lc_vf_kind_name(s.kind));
        lc_err_context(err, o->model, NULL);
    }
    if (rc == LC_OK && (rc = get_chunks(o, &s, r, err)) == LC_OK &&
        (rc = lc_outfile_check_target(o->out, false, err)) == LC_OK &&   /* before the work */
        (rc = lc_imx_init(&sums, s.arch, lc_arch_own_layers(&s.hp), s.hp.expert_count,
                          o->process_output, err)) == LC_OK) {
        rc = run_chunks(o, &s, &sums, p, r, err);
        if (rc != LC_OK)
            lc_err_context(err, o->model, NULL);
        else if (s.spelling == LC_SPELL_HF)
            rc = lc_imx_tile(&sums, &s.hp, err);
    }
    if (rc == LC_OK && sums.n == 0)
        rc = lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "the forward pass multiplied no "
                     "weight matrix to record");
    if (rc == LC_OK && o->dat) {
        r->entries = sums.n;
        rc = lc_imx_write_dat(&sums, o->file, o->ctx, o->out, &r->chunk_count, err);
        lc_err_context(err, o->out, NULL);
    } else if (rc == LC_OK) {
        rc = lc_imx_to_gguf(&sums, o->file, o->ctx, &out, &r->chunk_count, err);
    }
    if (rc == LC_OK && !o->dat) {
        r->entries = sums.n;
        const lc_gguf_write_opts wo = { .threads = 1 };
        rc = lc_gguf_write(out, o->out, &wo, NULL, err);
        lc_err_context(err, o->out, NULL);
    }
    lc_model_free(out);
    lc_imx_free(&sums);
    lc_vf_side_close(&s);
    if (rc != LC_OK)
        lc_job_imatrix_result_free(r);
    return rc;
}
