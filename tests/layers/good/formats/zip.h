int lc_zip_open(const char *path);
