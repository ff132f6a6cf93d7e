/* jobs/pth2safetensors_print.c: pth2safetensors' --scan and --list lines (see
 * pth2safetensors_print.h). */
#include "jobs/pth2safetensors_print.h"

#include <inttypes.h>

#include "libconvert/escape.h"

/* Entry, module and name come from the file: escaped (libconvert/escape.h). */
void lc_job_pth2st_print_ref(void *ctx, const lc_pth_ref *r) {
    FILE *f = ctx;
    if (!f)
        return;
    lc_escape_fputs(f, r->entry);
    fprintf(f, " @ 0x%" PRIx64 ": ", r->offset);
    lc_escape_fputs(f, r->module);
    fputc('.', f);
    lc_escape_fputs(f, r->name);
    fprintf(f, " %s\n", r->allowed ? "allowed" : "FORBIDDEN");
}

void lc_job_pth2st_print_list(const lc_job_pth2st_result *r, FILE *f) {
    for (size_t i = 0; r->model && i < lc_model_tensor_count(r->model); i++) {
        char shape[256];
        const lc_tensor *t = lc_model_tensor(r->model, i);
        lc_shape_format(t, shape, sizeof shape);
        lc_escape_fputs(f, t->name);   /* from the file; tabs in a name become \t */
        fprintf(f, "\t%s\t%s\n", lc_dtype_name(t->dtype), shape);
    }
}
