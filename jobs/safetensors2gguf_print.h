/* jobs/safetensors2gguf_print.h: what safetensors2gguf --dry-run prints, from the job's
 * result (jobs/safetensors2gguf.h): the tool and the foreign interface print it. */
#ifndef LC_JOBS_SAFETENSORS2GGUF_PRINT_H
#define LC_JOBS_SAFETENSORS2GGUF_PRINT_H

#include <stdio.h>

#include "jobs/safetensors2gguf.h"

/* One line per planned tensor ("tensor SRC -> GGUF FROM -> TO SHAPE N bytes"), in the
 * order the converter added them: all a failed dry run had planned. */
void lc_job_st2gguf_print_rows(const lc_job_st2gguf_result *r, FILE *f);

/* The whole plan of a dry run: the rows, then every key and the totals, then OUT (or
 * each part the split options make); with a llama-quantize TYPE, gguf-quantize's plan
 * and the line saying what it would write. Names from the files are escaped for a
 * terminal where the tool always escaped them (OUT, the parts). After a failure, the
 * part planned before it. */
void lc_job_st2gguf_print(const lc_job_st2gguf_result *r, FILE *f);

#endif
