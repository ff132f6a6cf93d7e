/* jobs/gguf_split_print.h: what gguf-split prints of a run (jobs/gguf_split.h): the
 * split plan as llama.cpp's gguf-split prints it, and the line saying what was written
 * or merged. */
#ifndef LC_JOBS_GGUF_SPLIT_PRINT_H
#define LC_JOBS_GGUF_SPLIT_PRINT_H

#include <stdio.h>

#include "jobs/gguf_split.h"

/* "n_split: N", then "split 00001: n_tensors = T, total_size = SM" per part (10^6
 * bytes, rounded down), as far as the parts were figured (nothing for a merge). */
void lc_job_gguf_split_print_plan(const lc_job_gguf_split_result *r, FILE *f);

/* "wrote OUT-00001-of-0000N.gguf ... (N of N parts, T tensors in all)", or the merge's
 * "merged OUT from N parts with T tensors" ("would ..." for a dry run); paths escaped
 * for a terminal. */
void lc_job_gguf_split_print_summary(const lc_job_gguf_split_result *r, FILE *f);

#endif
