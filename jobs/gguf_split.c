/* jobs/gguf_split.c: gguf-split --split and --merge (see gguf_split.h); the plan and the
 * parts are formats/gguf_split.c's, shared with every other writer. */
#include "jobs/gguf_split.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/gguf.h"
#include "libconvert/alloc.h"
#include "libconvert/escape.h"

/* gguf-split's print_info: per part the size of its header (gguf_get_meta_size: keys,
 * tensor infos, padding) plus its tensors' bytes, unpadded, in 10^6 bytes rounded down. */
static lc_code print_plan(const lc_gguf_split_set *s, FILE *f, lc_error *err) {
    fprintf(f, "n_split: %" PRIu32 "\n", s->count);
    for (uint32_t k = 0; k < s->count; k++) {
        uint8_t *hdr;
        size_t len;
        LC_TRY(lc_gguf_header(s->models[k], &hdr, &len, NULL, err));
        lc_free(hdr);
        uint64_t total = len;
        const size_t n = lc_model_tensor_count(s->models[k]);
        for (size_t i = 0; i < n; i++)
            total += lc_model_tensor(s->models[k], i)->nbytes;
        fprintf(f, "split %05" PRIu32 ": n_tensors = %zu, total_size = %" PRIu64 "M\n", k + 1,
                n, total / 1000 / 1000);
    }
    return LC_OK;
}

static lc_code split(const lc_job_gguf_split_opts *o, const lc_model *m, lc_progress *p,
                     lc_error *err) {
    lc_gguf_split_set *s = NULL;
    uint32_t kept = 0;
    const lc_gguf_write_opts wo = { .threads = o->threads };
    LC_TRY(lc_gguf_split_set_new(m, o->out, &o->split, &s, err));
    lc_code rc = o->print ? print_plan(s, o->print, err) : LC_OK;
    if (rc == LC_OK && !o->dry_run)
        rc = lc_gguf_write_parts((const lc_model *const *)s->models,
                                 (const char *const *)s->paths, s->count, &o->split, &wo, p,
                                 &kept, err);
    if (rc == LC_OK && o->summary) {
        const uint32_t first = o->split.part ? o->split.part - 1 : 0;
        const uint32_t n = o->split.part ? 1 : s->count;
        /* Paths through the one terminal rule: a directory's name is anybody's bytes. */
        fprintf(o->summary, "%s ", o->dry_run ? "would write" : "wrote");
        lc_escape_fputs(o->summary, s->paths[first]);
        fputs(n > 1 ? " ..." : "", o->summary);
        fprintf(o->summary, " (%s%" PRIu32 " of %" PRIu32 " parts, %zu tensors in all)",
                o->split.part ? "part " : "", o->split.part ? o->split.part : n, s->count,
                lc_model_tensor_count(m));
        if (kept)
            fprintf(o->summary, ", %" PRIu32 " already there and kept", kept);
        fputc('\n', o->summary);
    }
    lc_gguf_split_set_free(s);
    return rc;
}

static lc_code merge(const lc_job_gguf_split_opts *o, const lc_model *m, lc_progress *p,
                     lc_error *err) {
    lc_model *r = NULL;
    const lc_gguf_write_opts wo = { .threads = o->threads };
    LC_TRY(lc_gguf_split_merged(m, &r, err));
    const lc_value *c = lc_model_find_meta(m, LC_GGUF_SPLIT_COUNT);
    lc_code rc = o->dry_run ? LC_OK : lc_gguf_write(r, o->out, &wo, p, err);
    if (rc == LC_OK && o->summary) {
        fprintf(o->summary, "%s ", o->dry_run ? "would merge" : "merged");
        lc_escape_fputs(o->summary, o->out);
        fprintf(o->summary, " from %" PRIu64 " parts with %zu tensors\n", c->u,
                lc_model_tensor_count(r));
    }
    lc_model_free(r);
    return rc;
}

lc_code lc_job_gguf_split(const lc_job_gguf_split_opts *o, lc_progress *p, lc_error *err) {
    struct stat st;
    if (o->merge && lstat(o->out, &st) == 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "OUT %.200s exists already; gguf-split "
                       "--merge does not replace a file", o->out);
    if (o->merge && errno != ENOENT)
        return lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot look at OUT %.200s: %s", o->out,
                       strerror(errno));
    lc_model *m = NULL;
    lc_code rc = lc_gguf_split_load(o->in, &m, NULL, err);
    if (rc == LC_OK)
        rc = o->merge ? merge(o, m, p, err) : split(o, m, p, err);
    if (rc != LC_OK)
        lc_err_context(err, o->in, NULL);
    lc_model_free(m);
    return rc;
}
