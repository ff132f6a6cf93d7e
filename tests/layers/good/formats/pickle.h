int lc_pickle_load(const char *buf);
