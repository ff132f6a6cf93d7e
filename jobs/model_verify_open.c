/* jobs/model_verify_open.c: one side of a comparison, whatever it is.
 *
 *   GGUF         the file: tensors in GGUF names, metadata and hyperparameters from its
 *                keys (arch/ lc_arch_read_keys); a GGUF without general.architecture
 *                (a bare tensor container) is a bare side
 *   HF folder    config.json (hf/config.h) for the family and the hyperparameters its
 *                forward pass runs with; the weights as transformers saved them (its
 *                names, Q/K rows in half-split order), never through the converter, so
 *                a converter's mistake cannot hide on both sides; the metadata is what
 *                hf/ makes of the folder (lc_hf_to_gguf, vocab only)
 *   Meta folder  params.json + consolidated.00.pth (hf/meta_layout.h), Meta's names
 *   a file       (.safetensors, .pth) beside a config.json or params.json: that
 *                folder's metadata with this file's tensors; alone, a bare side
 *   bare         tensors only: lc_vf_sides_align gives it the other side's family
 * Every tensor is then re-attached to a view that reads it with pread (no mapped page
 * joins the process's RSS), or through a map view that gives pages back, or through
 * its own lazy source. */
#include "jobs/model_verify_impl.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/any.h"
#include "hf/config.h"
#include "hf/hf.h"
#include "hf/meta_layout.h"
#include "libconvert/map.h"
#include "libconvert/view.h"

const char *lc_vf_kind_name(lc_vf_kind k) {
    switch (k) {
    case LC_VF_GGUF: return "GGUF";
    case LC_VF_HF:   return "HF folder";
    case LC_VF_META: return "Meta folder";
    default:         return "bare tensors";
    }
}

const char *lc_vf_spelling_name(lc_spelling sp) {
    return sp == LC_SPELL_HF ? "transformers' names" : sp == LC_SPELL_META ? "Meta's names"
                                                                          : "GGUF names";
}

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool has_file(const char *dir, const char *name) {
    char p[4096];
    struct stat st;
    const int n = snprintf(p, sizeof p, "%s/%s", dir, name);
    return n > 0 && (size_t)n < sizeof p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The folder's weights as hf/weights.c picks them: an index (lc_model_open_any reads
 * the folder), else model.safetensors, else pytorch_model.bin. */
static lc_code open_weights(const char *dir, lc_model **m, const char **fmt, lc_error *err) {
    char p[4096];
    if (has_file(dir, "model.safetensors.index.json") ||
        (!has_file(dir, "model.safetensors") && has_file(dir, "pytorch_model.bin.index.json")))
        return lc_model_open_any(dir, m, fmt, err);
    snprintf(p, sizeof p, "%s/%s", dir,
             has_file(dir, "model.safetensors") || !has_file(dir, "pytorch_model.bin")
                 ? "model.safetensors" : "pytorch_model.bin");
    return lc_model_open_any(p, m, fmt, err);
}

/* Meta's hyperparameters: params.json plus the two sizes it leaves to the tensors. */
static lc_code meta_config(const char *dir, const lc_model *m, lc_hf_config *cfg,
                           lc_error *err) {
    char p[4096];
    lc_map *map = NULL;
    snprintf(p, sizeof p, "%s/params.json", dir);
    LC_TRY(lc_map_open(p, &map, err));
    const lc_tensor *e = lc_model_find_tensor(m, "tok_embeddings.weight");
    const lc_tensor *w1 = lc_model_find_tensor(m, "layers.0.feed_forward.w1.weight");
    lc_code rc = lc_hf_meta_layout_config((const char *)map->data, (size_t)map->size,
                                          e && e->ndim == 2 ? e->shape[0] : 0,
                                          w1 && w1->ndim == 2 ? w1->shape[0] : 0, cfg, err);
    lc_map_close(map);
    lc_err_context(err, p, NULL);
    return rc;
}

/* A folder's side: family and hyperparameters, metadata; the tensors from `weights`
 * (a file of the folder) or from the folder itself when NULL. */
static lc_code open_folder(lc_vf_side *s, const char *dir, const char *weights,
                           lc_error *err) {
    lc_hf_config cfg;
    if (lc_hf_meta_layout_is(dir)) {
        s->kind = LC_VF_META;
        s->spelling = LC_SPELL_META;
        s->format = "pth";
        if (weights)
            LC_TRY(lc_model_open_any(weights, &s->m, &s->format, err));
        else
            LC_TRY(lc_hf_meta_layout_load(dir, &s->m, err));
        LC_TRY(meta_config(dir, s->m, &cfg, err));
    } else {
        s->kind = LC_VF_HF;
        s->spelling = LC_SPELL_HF;
        LC_TRY(lc_hf_config_load(dir, &cfg, err));
        if (weights)
            LC_TRY(lc_model_open_any(weights, &s->m, &s->format, err));
        else
            LC_TRY(open_weights(dir, &s->m, &s->format, err));
    }
    s->arch = cfg.arch;
    s->hp = cfg.hp;
    s->have_hp = true;
    const lc_hf_opts ho = { .outtype = LC_DT_F32, .vocab_only = true };
    return lc_hf_to_gguf(dir, &ho, &s->meta, err);
}

/* A file: GGUF, or a safetensors / pth file, beside its folder's config or alone. */
static lc_code open_file(lc_vf_side *s, const char *path, lc_error *err) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (slash == path)
        snprintf(dir, sizeof dir, "/");
    lc_model *m = NULL;
    const char *fmt = NULL;
    LC_TRY(lc_model_open_any(path, &m, &fmt, err));
    if (strcmp(fmt, "gguf") == 0 || strcmp(fmt, "gguf-split") == 0) {
        s->m = m;
        s->format = fmt;
        if (!lc_model_find_meta(m, "general.architecture")) {
            s->kind = LC_VF_BARE;       /* a tensor container: no family, no metadata */
            return LC_OK;
        }
        s->kind = LC_VF_GGUF;
        s->meta = m;
        s->spelling = LC_SPELL_GGUF;
        LC_TRY(lc_arch_read_keys(m, &s->arch, &s->hp, err));
        s->have_hp = true;
        return LC_OK;
    }
    if (has_file(dir, "config.json") || lc_hf_meta_layout_is(dir)) {
        lc_model_free(m);       /* the folder's reader opens it again, its own way */
        return open_folder(s, dir, path, err);
    }
    s->m = m;
    s->format = fmt;
    s->kind = LC_VF_BARE;
    return LC_OK;
}

/* Re-attaches every tensor of s->m to a pread / map / forwarding view in s->views. */
static lc_code make_views(lc_vf_side *s, lc_error *err) {
    if (!(s->views = lc_model_new()))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (size_t i = 0; i < lc_model_tensor_count(s->m); i++) {
        const lc_tensor *t = lc_model_tensor(s->m, i);
        lc_tensor *v;
        int fd;
        uint64_t off;
        LC_TRY(lc_model_add_tensor(s->views, t->name, t->dtype, t->ndim, t->shape, &v, err));
        if (t->data && lc_tensor_file_range(t, &fd, &off))
            LC_TRY(lc_view_file(v, fd, off, s->path, err));
        else if (t->data)
            LC_TRY(lc_view_map(v, t, err));
        else
            LC_TRY(lc_view_forward(v, t, err));
    }
    return LC_OK;
}

lc_code lc_vf_side_open(lc_vf_side *s, const char *path, const char *label, lc_error *err) {
    memset(s, 0, sizeof *s);
    s->path = path;
    s->label = label;
    lc_code rc;
    if (!is_dir(path)) {
        rc = open_file(s, path, err);
    } else if (has_file(path, "config.json") || lc_hf_meta_layout_is(path)) {
        rc = open_folder(s, path, NULL, err);
    } else {
        s->kind = LC_VF_BARE;       /* a sharded checkpoint without config.json */
        rc = lc_model_open_any(path, &s->m, &s->format, err);
    }
    if (rc == LC_OK)
        rc = make_views(s, err);
    lc_err_context(err, path, NULL);
    return rc;
}

void lc_vf_side_close(lc_vf_side *s) {
    lc_model_free(s->views);        /* views read m: freed first */
    if (s->meta != s->m)
        lc_model_free(s->meta);
    lc_model_free(s->m);
    s->views = s->meta = s->m = NULL;
}

/* How many of m's tensors the family knows in spelling sp. */
static size_t known_names(const lc_model *m, const lc_arch *a, lc_spelling sp) {
    size_t k = 0;
    for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
        uint32_t layer;
        k += lc_arch_find(a, sp, lc_model_tensor(m, i)->name, &layer) != NULL;
    }
    return k;
}

static void adopt(lc_vf_side *bare, const lc_vf_side *other) {
    static const lc_spelling all[] = { LC_SPELL_GGUF, LC_SPELL_HF, LC_SPELL_META };
    size_t best = 0;
    bare->arch = other->arch;
    bare->hp = other->hp;
    bare->have_hp = other->have_hp;
    bare->spelling = other->spelling;
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        const size_t k = known_names(bare->m, other->arch, all[i]);
        if (k > best) {
            best = k;
            bare->spelling = all[i];
        }
    }
}

/* Two bare sides: the family whose table knows most of SRC's names (at least half), in
 * the spelling each side matches best; no hyperparameters, so no forward pass. */
static void guess_family(lc_vf_side *src, lc_vf_side *dst) {
    static const lc_spelling all[] = { LC_SPELL_GGUF, LC_SPELL_HF, LC_SPELL_META };
    const size_t n = lc_model_tensor_count(src->m);
    size_t best = 0;
    for (const lc_arch *const *a = lc_arch_all(); *a; a++)
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
            const size_t k = known_names(src->m, *a, all[i]);
            if (k > best && 2 * k >= n) {
                best = k;
                src->arch = *a;
            }
        }
    if (src->arch) {
        lc_vf_side model = { .arch = src->arch, .spelling = LC_SPELL_GGUF };
        adopt(src, &model);
        adopt(dst, &model);
    }
}

lc_code lc_vf_sides_align(lc_vf_side *src, lc_vf_side *dst, lc_error *err) {
    if (src->arch && dst->arch && src->arch != dst->arch) {
        lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the models are of different families: "
                "SRC is %s, DST is %s", src->arch->name, dst->arch->name);
        lc_err_context(err, NULL, "general.architecture");
        return LC_E_MISMATCH;
    }
    if (!src->arch && dst->arch)
        adopt(src, dst);
    else if (src->arch && !dst->arch)
        adopt(dst, src);
    else if (!src->arch && !dst->arch)
        guess_family(src, dst);
    return LC_OK;
}
