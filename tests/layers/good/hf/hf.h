int lc_hf_convert(const char *dir);
