/* jobs/gguf_split_print.c: gguf-split's plan and summary line from the job's result
 * (see gguf_split_print.h). */
#include "jobs/gguf_split_print.h"

#include <inttypes.h>

#include "libconvert/escape.h"

void lc_job_gguf_split_print_plan(const lc_job_gguf_split_result *r, FILE *f) {
    if (r->merge || !r->n_parts)
        return;
    fprintf(f, "n_split: %" PRIu32 "\n", r->n_parts);
    for (uint32_t k = 0; k < r->n_figured; k++)
        fprintf(f, "split %05" PRIu32 ": n_tensors = %zu, total_size = %" PRIu64 "M\n", k + 1,
                r->part_tensors[k], r->part_bytes[k] / 1000 / 1000);
}

void lc_job_gguf_split_print_summary(const lc_job_gguf_split_result *r, FILE *f) {
    if (r->merge) {
        fprintf(f, "%s ", r->dry_run ? "would merge" : "merged");
        lc_escape_fputs(f, r->out);
        fprintf(f, " from %" PRIu32 " parts with %zu tensors\n", r->n_parts, r->tensors);
        return;
    }
    if (!r->planned)
        return;
    const uint32_t first = r->only ? r->only - 1 : 0;
    const uint32_t n = r->only ? 1 : r->n_parts;
    /* Paths through the one terminal rule: a directory's name is anybody's bytes. */
    fprintf(f, "%s ", r->dry_run ? "would write" : "wrote");
    lc_escape_fputs(f, r->part_paths[first]);
    fputs(n > 1 ? " ..." : "", f);
    fprintf(f, " (%s%" PRIu32 " of %" PRIu32 " parts, %zu tensors in all)", r->only ? "part " : "",
            r->only ? r->only : n, r->n_parts, r->tensors);
    if (r->kept)
        fprintf(f, ", %" PRIu32 " already there and kept", r->kept);
    fputc('\n', f);
}
