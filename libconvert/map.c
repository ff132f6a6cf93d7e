/* libconvert/map.c: mmap of input files. */
#define _DEFAULT_SOURCE 1
#include "libconvert/map.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libconvert/alloc.h"

lc_code lc_map_open(const char *path, lc_map **out, lc_error *err) {
    *out = NULL;
    lc_code rc = LC_OK;
    lc_map *m = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = lc_fail(err, errno == ENOENT ? LC_E_NOTFOUND : LC_E_IO, LC_NO_OFFSET,
                     "cannot open: %s", strerror(errno));
        goto done;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot stat: %s", strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "not a regular file");
        goto done;
    }
    if (!(m = lc_calloc(1, sizeof *m))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    m->fd = -1;
    m->size = (uint64_t)st.st_size;
    if (m->size > 0) {
        void *p = mmap(NULL, (size_t)m->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot map: %s", strerror(errno));
            goto done;
        }
        m->data = p;
    }
    m->fd = fd;
    fd = -1;
    *out = m;
    m = NULL;
done:
    if (fd >= 0)
        close(fd);
    lc_free(m);
    if (rc != LC_OK)
        lc_err_context(err, path, NULL);
    return rc;
}

void lc_map_close(void *map) {
    lc_map *m = map;
    if (!m)
        return;
    if (m->data)
        munmap((void *)(uintptr_t)m->data, (size_t)m->size);
    if (m->fd >= 0)
        close(m->fd);
    lc_free(m);
}

void lc_map_advise_sequential(const lc_map *m) {
    if (m && m->data)
        madvise((void *)(uintptr_t)m->data, (size_t)m->size, MADV_SEQUENTIAL);
}

lc_code lc_pread_all(int fd, uint64_t off, void *dst, size_t len, lc_error *err) {
    uint8_t *p = dst;
    while (len > 0) {
        const ssize_t k = pread(fd, p, len, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return lc_fail(err, k < 0 ? LC_E_IO : LC_E_TRUNCATED, off, "cannot read %zu bytes: %s",
                           len, k < 0 ? strerror(errno) : "the file ends before them");
        p += k;
        off += (uint64_t)k;
        len -= (size_t)k;
    }
    return LC_OK;
}

/* ---- tensors that are views of a map ---- */

static lc_code view_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                         lc_error *err) {
    (void)ctx;
    (void)err;
    memcpy(dst, t->data + off, len);
    return LC_OK;
}

static bool view_file_range(void *ctx, const lc_tensor *t, int *fd, uint64_t *off) {
    const lc_map *m = ctx;
    if (m->fd < 0 || t->file_offset == LC_NO_OFFSET)
        return false;
    *fd = m->fd;
    *off = t->file_offset;
    return true;
}

const lc_source_ops lc_map_view_ops = { view_read, NULL, view_file_range };
