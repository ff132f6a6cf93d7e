/* libconvert/map.h: a read-only memory map of a whole file.
 *
 * An empty file maps to data == NULL, size == 0. The map is the owner of the bytes
 * that zero-copy tensor views borrow. */
#ifndef LC_LIBCONVERT_MAP_H
#define LC_LIBCONVERT_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "libconvert/error.h"
#include "libconvert/tensor.h"

typedef struct lc_map {
    const uint8_t *data;
    uint64_t       size;
    int            fd;   /* kept open until lc_map_close, for copy_file_range */
} lc_map;

/* Maps PATH read-only and keeps its descriptor open (m->fd) so that writers can
 * copy unchanged byte ranges in the kernel (lc_outfile_copy_from). The file is opened
 * with lc_input_open (never blocks, noted as an input of this run) and the map is
 * registered with libconvert/cleanup, so a file truncated while it is read ends the
 * process with "PATH: changed on disk while being read" instead of a bare SIGBUS
 * (when the tool installed the handlers). LC_E_NOTFOUND / LC_E_IO (with errno's text)
 * when it cannot be opened or mapped, LC_E_ARG when it is not a regular file. *out
 * owns the map; lc_map_close() frees it. */
lc_code lc_map_open(const char *path, lc_map **out, lc_error *err);
/* NULL-safe; void * so it can be handed to lc_model_own. */
void lc_map_close(void *map);
/* Hints that the bytes will be read front to back once (readahead, early drop). */
void lc_map_advise_sequential(const lc_map *m);
/* Gives the whole pages of [off, off + len) back to the kernel (MADV_DONTNEED): for a
 * reader that has copied what it needs from them (a GGUF's metadata), so they stop
 * counting in the process's RSS. A later touch reads them again from the file. */
void lc_map_drop(const lc_map *m, uint64_t off, uint64_t len);

/* Reads exactly len bytes at offset off of fd into dst, retrying short reads and
 * EINTR. LC_E_IO (errno's text) or LC_E_TRUNCATED (the file ended early), with the
 * offset of the first byte not read. */
lc_code lc_pread_all(int fd, uint64_t off, void *dst, size_t len, lc_error *err);

/* Source ops for a tensor whose `data` points into a map (ctx = the lc_map, owned
 * elsewhere, e.g. by the model through lc_model_own; t->file_offset = where the bytes
 * start in the file): reads copy from the map, and file_range names the map's
 * descriptor so that writers copy the bytes in the kernel or pread them instead of
 * touching the map. Readers of mapped formats (safetensors, GGUF) set these. */
extern const lc_source_ops lc_map_view_ops;

#endif
