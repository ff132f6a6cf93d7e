/* jobs/pth2safetensors_print.h: what pth2safetensors --list and --scan print, from the
 * job's result and the globals it streams (jobs/pth2safetensors.h). Names, entries and
 * modules come from the file: escaped for a terminal (libconvert/escape.h). */
#ifndef LC_JOBS_PTH2SAFETENSORS_PRINT_H
#define LC_JOBS_PTH2SAFETENSORS_PRINT_H

#include <stdio.h>

#include "formats/pth.h"
#include "jobs/pth2safetensors.h"

/* --scan's line for one global, "entry @ 0xOFF: module.name allowed|FORBIDDEN", to the
 * FILE *ctx: an lc_pth_scan_fn for lc_job_pth2st_opts.on_ref. */
void lc_job_pth2st_print_ref(void *ctx, const lc_pth_ref *r);

/* --list: "name\tdtype\tshape" per tensor of r->model (nothing without one). */
void lc_job_pth2st_print_list(const lc_job_pth2st_result *r, FILE *f);

#endif
