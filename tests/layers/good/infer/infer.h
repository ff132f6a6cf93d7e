int lc_infer_run(void);
