int lc_job_convert(const char *dir);
