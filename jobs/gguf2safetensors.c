/* jobs/gguf2safetensors.c: GGUF -> safetensors, as a model or as a container. */
#include "jobs/gguf2safetensors.h"

#include "formats/gguf.h"
#include "formats/gguf_bare.h"
#include "formats/gguf_split.h"
#include "hf/hf.h"
#include "formats/safetensors.h"

bool lc_job_gguf_is_model(const lc_model *m) {
    return lc_model_find_meta(m, "general.architecture") &&
           lc_model_find_tensor(m, "token_embd.weight");
}

lc_code lc_job_gguf2safetensors(const lc_job_gguf2st_opts *o, lc_progress *p, lc_error *err) {
    lc_model *in = NULL, *m = NULL;
    const lc_st_write_opts wo = { .stringify_meta = true, .threads = o->threads };
    lc_code rc = lc_gguf_split_load(o->in, &in, NULL, err);     /* every part of a split */
    if (rc == LC_OK) {
        if (lc_job_gguf_is_model(in))
            rc = lc_hf_from_gguf(in, o->dtype, &m, err);       /* takes in */
        else if (o->dtype != LC_DT_INVALID) {
            rc = lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--dtype needs a model GGUF "
                         "(general.architecture and token_embd.weight)");
            lc_model_free(in);
        } else
            rc = lc_gguf_bare_decode(in, &m, err);             /* takes in */
    }
    if (rc == LC_OK)
        rc = lc_safetensors_write(m, o->out, &wo, p, err);
    if (rc != LC_OK)
        lc_err_context(err, o->in, NULL);
    lc_model_free(m);
    return rc;
}
