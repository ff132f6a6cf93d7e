/* jobs/safetensors_rewrite.c: safetensors (or shards) -> one safetensors file. */
#include "jobs/safetensors_rewrite.h"

#include <string.h>
#include <sys/stat.h>

#include "formats/safetensors.h"
#include "libconvert/convert.h"

bool lc_job_st_is_sharded(const char *path) {
    struct stat st;
    size_t n = strlen(path);
    return (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) ||
           (n >= 11 && strcmp(path + n - 11, ".index.json") == 0);
}

lc_code lc_job_safetensors_rewrite(const lc_job_st_rewrite_opts *o, lc_progress *p,
                                   lc_error *err) {
    const lc_st_write_opts wo = { .stringify_meta = o->stringify_meta, .threads = o->threads };
    lc_model *m = NULL;
    lc_code rc = lc_job_st_is_sharded(o->in) ? lc_safetensors_load_index(o->in, &m, err)
                                             : lc_safetensors_load(o->in, &m, err);
    if (rc == LC_OK && o->cast != LC_DT_INVALID)
        rc = lc_model_cast(m, o->cast, NULL, err);   /* lazy: converts while writing */
    if (rc == LC_OK && (rc = lc_safetensors_write(m, o->out, &wo, p, err)) != LC_OK)
        lc_err_context(err, o->in, NULL);   /* a source's failure: an offset in the input */
    lc_model_free(m);
    return rc;
}
