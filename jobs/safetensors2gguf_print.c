/* jobs/safetensors2gguf_print.c: the dry run's plan of safetensors2gguf, printed from
 * the result (see safetensors2gguf_print.h); the formats are the tool's, byte for byte,
 * and a failed run's result prints what the tool had printed before the failure. */
#include "jobs/safetensors2gguf_print.h"

#include <inttypes.h>
#include <string.h>

#include "hf/meta.h"
#include "jobs/gguf_quantize_print.h"
#include "libconvert/escape.h"

void lc_job_st2gguf_print_rows(const lc_job_st2gguf_result *r, FILE *f) {
    for (size_t i = 0; i < r->plan.n; i++) {
        const lc_hf_plan_row *w = &r->plan.rows[i];
        if (w->computed) {
            fprintf(f, "tensor %-44s -> %-26s %-4s -> %-4s [%" PRIu64 "]\n", w->src, w->gguf,
                    lc_dtype_name(w->from), lc_dtype_name(w->to), w->shape[0]);
            continue;
        }
        lc_tensor t = { .ndim = w->ndim };
        memcpy(t.shape, w->shape, sizeof t.shape);
        char shape[96];
        lc_shape_format(&t, shape, sizeof shape);
        fprintf(f, "tensor %-44s -> %-26s %-4s -> %-4s %-14s %12" PRIu64 " bytes\n", w->src,
                w->gguf, lc_dtype_name(w->from), lc_dtype_name(w->to), shape, w->nbytes);
    }
}

void lc_job_st2gguf_print(const lc_job_st2gguf_result *r, FILE *f) {
    if (r->quantized) {     /* never fails without JSON */
        lc_job_quantize_print(&r->quantize, false, f, NULL, NULL);
        return;
    }
    lc_job_st2gguf_print_rows(r, f);
    if (!r->model)
        return;
    lc_hf_meta_print(r->model, f);
    if (!r->out_planned)
        return;
    if (!r->n_parts) {
        fputs("output ", f);
        lc_escape_fputs(f, r->out);         /* the name may come from config.json */
        fputs(" (not written: --dry-run)\n", f);
        return;
    }
    for (uint32_t k = 0; k < r->n_parts; k++) {
        fprintf(f, "output part %" PRIu32 "/%" PRIu32 " ", k + 1, r->n_parts);
        lc_escape_fputs(f, r->part_paths[k]);
        fprintf(f, ": %zu tensors (not written: --dry-run)\n", r->part_tensors[k]);
    }
}
