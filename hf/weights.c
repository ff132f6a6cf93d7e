/* hf/weights.c: an HF folder's weight files and pread views of their tensors (see
 * weights.h). */
#include "hf/weights.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "formats/pth.h"
#include "formats/safetensors.h"
#include "hf/json.h"
#include "libconvert/alloc.h"
#include "libconvert/input.h"
#include "libconvert/view.h"

typedef struct srcfile {
    struct srcfile *next;
    int fd;
    char path[4096];
    char name[];            /* file name inside the folder */
} srcfile;

struct lc_hf_weights {
    char dir[4096];
    cJSON *index;           /* model.safetensors.index.json (NULL: one file or pth) */
    const cJSON *weight_map;
    srcfile *files;         /* opened on first use */
};

void lc_hf_weights_free(lc_hf_weights *w) {
    if (!w)
        return;
    for (srcfile *f = w->files, *next; f; f = next) {
        next = f->next;
        if (f->fd >= 0)
            close(f->fd);
        lc_free(f);
    }
    cJSON_Delete(w->index);
    lc_free(w);
}

static lc_code load(lc_hf_weights *w, const char *dir, lc_model **in, lc_error *err) {
    char path[4096];
    if (lc_hf_json_exists(dir, "model.safetensors.index.json")) {
        LC_TRY(lc_safetensors_load_index(dir, in, err));
        /* already validated by the loader; kept for the file names */
        LC_TRY(lc_hf_json_load(dir, "model.safetensors.index.json", false, &w->index, err));
        w->weight_map = cJSON_GetObjectItemCaseSensitive(w->index, "weight_map");
        return LC_OK;
    }
    LC_TRY(lc_hf_json_path(path, sizeof path, dir, "model.safetensors", err));
    if (lc_hf_json_exists(dir, "model.safetensors"))
        return lc_safetensors_load(path, in, err);
    /* Older transformers checkpoints: torch.save files, read by the pth reader (lazy
     * sources, so views read through it). */
    if (lc_hf_json_exists(dir, "pytorch_model.bin.index.json"))
        return lc_pth_load(dir, NULL, in, err);
    LC_TRY(lc_hf_json_path(path, sizeof path, dir, "pytorch_model.bin", err));
    if (lc_hf_json_exists(dir, "pytorch_model.bin"))
        return lc_pth_load(path, NULL, in, err);
    lc_fail(err, LC_E_NOTFOUND, LC_NO_OFFSET, "the folder has no model.safetensors, "
            "pytorch_model.bin or an index of either");
    lc_err_context(err, dir, NULL);
    return LC_E_NOTFOUND;
}

lc_code lc_hf_weights_open(const char *dir, lc_model **in, lc_hf_weights **out, lc_error *err) {
    *in = NULL;
    *out = NULL;
    lc_hf_weights *w = lc_calloc(1, sizeof *w);
    if (!w)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    lc_code rc = load(w, dir, in, err);
    if (rc != LC_OK) {
        lc_model_free(*in);
        *in = NULL;
        lc_hf_weights_free(w);
        return rc;
    }
    *out = w;
    return LC_OK;
}

/* The open file holding s, or NULL when s is not a view of a safetensors file of the
 * folder (a lazy pth source, or a name the index does not list). */
static lc_code source_file(lc_hf_weights *w, const lc_tensor *s, srcfile **out, lc_error *err) {
    *out = NULL;
    if (!s->data || s->file_offset == LC_NO_OFFSET)
        return LC_OK;
    const char *file = "model.safetensors";
    if (w->weight_map) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(w->weight_map, s->name);
        if (!cJSON_IsString(f))
            return LC_OK;
        file = f->valuestring;
    }
    srcfile *sf = w->files;
    while (sf && strcmp(sf->name, file) != 0)
        sf = sf->next;
    if (!sf) {
        if (!(sf = lc_calloc(1, sizeof *sf + strlen(file) + 1)))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        strcpy(sf->name, file);
        sf->fd = -1;
        sf->next = w->files;
        w->files = sf;
        LC_TRY(lc_hf_json_path(sf->path, sizeof sf->path, w->dir, file, err));
        uint64_t size;
        LC_TRY(lc_input_open(sf->path, &sf->fd, &size, err));    /* a FIFO: refused */
    }
    *out = sf;
    return LC_OK;
}

lc_code lc_hf_weights_view(lc_hf_weights *w, lc_model *views, const lc_tensor *s,
                           const lc_tensor **out, lc_error *err) {
    srcfile *sf;
    *out = s;
    LC_TRY(source_file(w, s, &sf, err));
    if (!sf && !s->data)
        return LC_OK;
    lc_tensor *t;
    LC_TRY(lc_model_add_tensor(views, s->name, s->dtype, s->ndim, s->shape, &t, err));
    if (sf)
        LC_TRY(lc_view_file(t, sf->fd, s->file_offset, sf->path, err));
    else
        LC_TRY(lc_view_map(t, s, err));
    *out = t;
    return LC_OK;
}
