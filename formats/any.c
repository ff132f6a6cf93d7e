/* formats/any.c: format detection and dispatch to the readers. */
#include "formats/any.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "formats/gguf_split.h"
#include "formats/pth.h"
#include "formats/safetensors.h"
#include "libconvert/input.h"

static bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && memcmp(s + n - k, tail, k) == 0;
}

/* A Hugging Face folder holds model.safetensors.index.json or, older,
 * pytorch_model.bin.index.json; safetensors wins when both are there. */
static bool is_pth_index(const char *path, bool dir) {
    char p[4096];
    if (!dir)
        return ends_with(path, ".bin.index.json");
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", path);
    if (access(p, F_OK) == 0)
        return false;
    snprintf(p, sizeof p, "%s/pytorch_model.bin.index.json", path);
    return access(p, F_OK) == 0;
}

/* The one weights file of an unsharded Hugging Face folder (model.safetensors, else
 * pytorch_model.bin), or NULL where the folder has an index (sharded) or neither. */
static const char *single_file_of(const char *dir) {
    static const char *const index[] = {"model.safetensors.index.json",
                                        "pytorch_model.bin.index.json"};
    static const char *const single[] = {"model.safetensors", "pytorch_model.bin"};
    char p[4096];
    for (size_t i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, index[i]);
        if (access(p, F_OK) == 0)
            return NULL;
    }
    for (size_t i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, single[i]);
        if (access(p, F_OK) == 0)
            return single[i];
    }
    return NULL;
}

static lc_code open_any(const char *path, bool lenient, const lc_pth_opts *pth, lc_model **out,
                        lc_any_info *info, lc_error *err) {
    *out = NULL;
    memset(info, 0, sizeof *info);
    struct stat st;
    if (stat(path, &st) != 0) {
        lc_fail(err, errno == ENOENT ? LC_E_NOTFOUND : LC_E_IO, LC_NO_OFFSET, "cannot open: %s",
                strerror(errno));
        lc_err_context(err, path, NULL);
        return err ? err->code : LC_E_IO;
    }
    if (S_ISDIR(st.st_mode)) {
        /* A folder of one unsharded file (the Hub's small models): that file. */
        const char *single = single_file_of(path);
        if (single) {
            char p[4096];
            if (snprintf(p, sizeof p, "%s/%s", path, single) < (int)sizeof p)
                return open_any(p, lenient, pth, out, info, err);
        }
    }
    if (S_ISDIR(st.st_mode) || ends_with(path, ".index.json")) {
        if (is_pth_index(path, S_ISDIR(st.st_mode))) {
            info->format = "pth-sharded";
            return lc_pth_load(path, pth, out, err);
        }
        info->format = "safetensors-sharded";
        return lc_safetensors_load_index(path, out, err);
    }
    uint8_t magic[9] = {0};
    int fd;
    lc_code rc = lc_input_open(path, &fd, &info->file_size, err);   /* a FIFO: refused */
    if (rc != LC_OK)
        return rc;
    ssize_t got = read(fd, magic, sizeof magic);
    (void)got; /* a short file keeps zeros and falls through to safetensors */
    close(fd);
    if (memcmp(magic, "GGUF", 4) == 0) {
        lc_gguf_info gi;
        info->format = "gguf";
        rc = lc_gguf_open(path, lenient ? LC_GGUF_LENIENT : 0, out, &gi, err);
        if (rc == LC_OK)
            info->header_size = gi.data_offset; /* header, metadata, infos and padding */
        lc_gguf_split *split = NULL;
        /* The first part of a split model: the whole model, as llama.cpp loads it. */
        if (rc == LC_OK && (rc = lc_gguf_split_extend(*out, path, &split, err)) == LC_OK &&
            split->count > 1)
            info->format = "gguf-split";
        if (rc != LC_OK) {
            lc_model_free(*out);
            *out = NULL;
        }
        lc_gguf_split_free(split);
        return rc;
    }
    /* A zip, or a legacy pickle (a safetensors length may start 0x80 too, but then
     * byte 8 opens its JSON header). */
    if (memcmp(magic, "PK\3\4", 4) == 0 || (magic[8] != '{' && magic[0] == 0x80 && magic[1] <= 5)) {
        info->format = "pth";
        return lc_pth_load(path, pth, out, err);
    }
    info->format = "safetensors";
    return lc_safetensors_load_hdr(path, out, &info->header_size, err);
}

lc_code lc_model_open_any_info(const char *path, lc_model **out, lc_any_info *info,
                               lc_error *err) {
    return open_any(path, false, NULL, out, info, err);
}

lc_code lc_model_open_any_lenient(const char *path, lc_model **out, lc_any_info *info,
                                  lc_error *err) {
    return open_any(path, true, NULL, out, info, err);
}

lc_code lc_model_open_any_pth(const char *path, const lc_pth_opts *pth, lc_model **out,
                              lc_any_info *info, lc_error *err) {
    return open_any(path, false, pth, out, info, err);
}

lc_code lc_model_open_any(const char *path, lc_model **out, const char **format, lc_error *err) {
    lc_any_info info;
    lc_code rc = lc_model_open_any_info(path, out, &info, err);
    if (format)
        *format = info.format;
    return rc;
}
