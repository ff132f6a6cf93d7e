int lc_st_load(const char *path);
