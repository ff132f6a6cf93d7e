int lc_any_load(const char *path);
