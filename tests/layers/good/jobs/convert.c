#include "jobs/jobs.h"
#include "hf/hf.h"
#include "infer/infer.h"

int lc_job_convert(const char *dir) { return lc_hf_convert(dir) + lc_infer_run(); }
