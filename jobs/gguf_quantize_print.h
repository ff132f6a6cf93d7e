/* jobs/gguf_quantize_print.h: what gguf-quantize prints of a run (the plan, the summary
 * line, --json's object), from the job's result (jobs/gguf_quantize.h). The job prints
 * nothing; the tool, safetensors2gguf's dry run and the foreign interface print or
 * serialise this. */
#ifndef LC_JOBS_GGUF_QUANTIZE_PRINT_H
#define LC_JOBS_GGUF_QUANTIZE_PRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "jobs/gguf_quantize.h"
#include "libconvert/error.h"

/* The dry run's plan: a line per output part, then one per tensor (names escaped for a
 * terminal, libconvert/escape.h). */
void lc_job_quantize_print_plan(const lc_job_quantize_result *r, FILE *f);

/* The one line that says what was written ("wrote OUT as TYPE: ..., 0.4 s"). */
void lc_job_quantize_print_summary(const lc_job_quantize_result *r, FILE *f);

/* The object --json prints, with its newline, into *text (NUL-terminated, *len bytes
 * without the NUL; lc_free it). LC_E_NOMEM. */
lc_code lc_job_quantize_json(const lc_job_quantize_result *r, char **text, size_t *len,
                             lc_error *err);

/* What the tool prints: with json the object to `print`; else a dry run's plan and
 * summary to `print`, a run's summary to `summary`. Either FILE may be NULL (nowhere).
 * LC_E_IO when `print` takes the JSON short; LC_E_NOMEM. */
lc_code lc_job_quantize_print(const lc_job_quantize_result *r, bool json, FILE *print,
                              FILE *summary, lc_error *err);

#endif
