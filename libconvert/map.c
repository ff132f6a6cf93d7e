/* libconvert/map.c: mmap of input files. */
#define _DEFAULT_SOURCE 1
#include "libconvert/map.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libconvert/alloc.h"
#include "libconvert/cleanup.h"
#include "libconvert/input.h"

/* The map and what only this file needs: the path for the message a truncated input
 * gives (libconvert/cleanup.h), and the registration that lets the handler find it. */
typedef struct map_full {
    lc_map          pub;
    lc_cleanup_map *watch;
    char            path[];
} map_full;

lc_code lc_map_open(const char *path, lc_map **out, lc_error *err) {
    *out = NULL;
    lc_code rc = LC_OK;
    map_full *m = NULL;
    int fd = -1;
    uint64_t size = 0;
    if ((rc = lc_input_open(path, &fd, &size, err)) != LC_OK)
        goto done;
    const size_t plen = strlen(path);
    if (!(m = lc_calloc(1, sizeof *m + plen + 1))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    memcpy(m->path, path, plen + 1);
    m->pub.fd = -1;
    m->pub.size = size;
    if (size > 0) {
        void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot map: %s", strerror(errno));
            goto done;
        }
        m->pub.data = p;
        if (!(m->watch = lc_cleanup_watch(p, size, m->path))) {
            munmap(p, (size_t)size);
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
            goto done;
        }
    }
    m->pub.fd = fd;
    fd = -1;
    *out = &m->pub;
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
    map_full *m = map;
    if (!m)
        return;
    lc_cleanup_unwatch(m->watch);
    if (m->pub.data)
        munmap((void *)(uintptr_t)m->pub.data, (size_t)m->pub.size);
    if (m->pub.fd >= 0)
        close(m->pub.fd);
    lc_free(m);
}

void lc_map_advise_sequential(const lc_map *m) {
    if (m && m->data)
        madvise((void *)(uintptr_t)m->data, (size_t)m->size, MADV_SEQUENTIAL);
}

void lc_map_drop(const lc_map *m, uint64_t off, uint64_t len) {
    if (!m || !m->data || off >= m->size)
        return;
    if (len > m->size - off)
        len = m->size - off;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = ((uintptr_t)m->data + off + page - 1) & ~(page - 1);
    const uintptr_t hi = ((uintptr_t)m->data + off + len) & ~(page - 1);
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);   /* advice: failure is harmless */
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
