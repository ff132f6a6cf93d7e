/* formats/pth_file_impl.h: pth_file.c, private to formats/pth (not installed).
 *
 * One checkpoint file (zip or legacy): what pth.c (single files) and pth_index.c
 * (the shards of a folder) both load and scan through. */
#ifndef LC_FORMATS_PTH_FILE_IMPL_H
#define LC_FORMATS_PTH_FILE_IMPL_H

#include <stdint.h>

#include "formats/pth.h"
#include "libconvert/error.h"
#include "libconvert/model.h"

/* Loads one checkpoint (zip or legacy) from buf into m. With fd >= 0 (the same file,
 * open) and !o->zero_copy, stored storages are read with pread instead of viewed.
 * path (NULL for memory) must live as long as m: tensor sources name it in errors,
 * and o->note gets it. */
lc_code lc_pth_load_into(const uint8_t *buf, uint64_t size, int fd, const char *path,
                         const lc_pth_opts *o, lc_model *m, lc_error *err);
/* Maps PATH (the map, owned by m, keeps the descriptor pread uses) and loads it. */
lc_code lc_pth_load_file(const char *path, const lc_pth_opts *o, lc_model *m, lc_error *err);

/* Calls fn for every global the pickle(s) of the one file PATH name, as lc_pth_scan
 * does (LC_E_FORBIDDEN when any is refused); does not load the checkpoint. */
lc_code lc_pth_scan_file(const char *path, lc_pth_scan_fn fn, void *ctx, lc_error *err);

/* Folds one scan result into the running verdict: FORBIDDEN outranks the rest, then
 * the first failure. */
static inline lc_code lc_pth_worse(lc_code have, lc_code now) {
    if (have == LC_E_FORBIDDEN || now == LC_OK)
        return have;
    return now == LC_E_FORBIDDEN || have == LC_OK ? now : have;
}

#endif
