/* libconvert/outfile.c: OUT.tmp -> fsync -> rename, and cleanup on signals. */
/* _GNU_SOURCE for copy_file_range (Linux, glibc >= 2.27). */
#define _GNU_SOURCE 1
#include "libconvert/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "libconvert/alloc.h"

#define BUF_SIZE (1u << 20)
/* Writes this big go to the kernel as they are: copying them into the buffer first
 * would cost more than the syscall it saves. */
#define DIRECT_WRITE (64u << 10)
#define MAX_LIVE 16

struct lc_outfile {
    int      fd;
    char    *path, *tmp;
    uint8_t *buf;
    size_t   used;
    uint64_t written;
    uint64_t in_kernel;     /* bytes handed to the kernel (write or copy) */
    uint64_t kicked;        /* writeback has been started for [0, kicked) */
    int      live_slot;
};

/* Temp paths of open outfiles, read by the signal handler; only async-signal-safe
 * calls (unlink, _exit) happen there. */
static char *volatile g_live[MAX_LIVE];
static bool g_durable = true;

void lc_outfile_set_durable(bool durable) { g_durable = durable; }

static void register_live(lc_outfile *f) {
    f->live_slot = -1;
    for (int i = 0; i < MAX_LIVE; i++)
        if (!g_live[i]) {
            g_live[i] = f->tmp;
            f->live_slot = i;
            return;
        }
}

static void unregister_live(lc_outfile *f) {
    if (f->live_slot >= 0)
        g_live[f->live_slot] = NULL;
    f->live_slot = -1;
}

static void on_signal(int sig) {
    for (int i = 0; i < MAX_LIVE; i++)
        if (g_live[i])
            unlink(g_live[i]);
    _exit(128 + sig);
}

void lc_outfile_cleanup_on_signal(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

static void free_outfile(lc_outfile *f) {
    unregister_live(f);
    lc_free(f->buf);
    lc_free(f->path);
    lc_free(f->tmp);
    lc_free(f);
}

lc_code lc_outfile_open(const char *path, lc_outfile **out, lc_error *err) {
    *out = NULL;
    lc_outfile *f = lc_calloc(1, sizeof *f);
    size_t n = strlen(path);
    if (!f || !(f->path = lc_strdup(path)) || !(f->tmp = lc_malloc(n + 5)) ||
        !(f->buf = lc_malloc(BUF_SIZE))) {
        if (f) {
            f->live_slot = -1;
            free_outfile(f);
        }
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    memcpy(f->tmp, path, n);
    memcpy(f->tmp + n, ".tmp", 5);
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        lc_code rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot create %s: %s", f->tmp,
                             strerror(errno));
        f->live_slot = -1;
        free_outfile(f);
        lc_err_context(err, path, NULL);
        return rc;
    }
    register_live(f);
    *out = f;
    return LC_OK;
}

/* When durable: starts writing back what the kernel holds, once it is KICK_BYTES past
 * the last start, so that the fsync at commit overlaps with the rest of the work
 * instead of following it (as RocksDB's bytes_per_sync does). Advice only: errors show
 * up at fsync. */
#define KICK_BYTES (8u << 20)

static void gave_kernel(lc_outfile *f, uint64_t n) {
    f->in_kernel += n;
    if (g_durable && f->in_kernel - f->kicked >= KICK_BYTES) {
        sync_file_range(f->fd, (off64_t)f->kicked, (off64_t)(f->in_kernel - f->kicked),
                        SYNC_FILE_RANGE_WRITE);
        f->kicked = f->in_kernel;
    }
}

static lc_code write_all(lc_outfile *f, const uint8_t *p, size_t len, lc_error *err) {
    while (len > 0) {
        ssize_t k = write(f->fd, p, len);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            lc_fail(err, LC_E_IO, f->written, "write failed: %s", strerror(errno));
            lc_err_context(err, f->path, NULL);
            return LC_E_IO;
        }
        p += k;
        len -= (size_t)k;
        gave_kernel(f, (uint64_t)k);
    }
    return LC_OK;
}

static lc_code flush(lc_outfile *f, lc_error *err) {
    lc_code rc = write_all(f, f->buf, f->used, err);
    f->used = 0;
    return rc;
}

lc_code lc_outfile_write(lc_outfile *f, const void *buf, size_t len, lc_error *err) {
    const uint8_t *p = buf;
    if (len < DIRECT_WRITE && f->used + len <= BUF_SIZE) {
        memcpy(f->buf + f->used, p, len);
        f->used += len;
    } else {
        LC_TRY(flush(f, err));
        if (len >= DIRECT_WRITE) {
            LC_TRY(write_all(f, p, len, err)); /* big payloads skip the copy */
        } else {
            memcpy(f->buf, p, len);
            f->used = len;
        }
    }
    f->written += len;
    return LC_OK;
}

/* Bytes through our buffer when the kernel cannot copy between these two files. */
static lc_code copy_by_pread(lc_outfile *f, int fd, uint64_t off, uint64_t len, lc_error *err) {
    while (len > 0) {
        size_t want = len < BUF_SIZE ? (size_t)len : BUF_SIZE;
        ssize_t k = pread(fd, f->buf, want, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            lc_fail(err, k < 0 ? LC_E_IO : LC_E_TRUNCATED, off, "cannot read the source: %s",
                    k < 0 ? strerror(errno) : "it ended early");
            return k < 0 ? LC_E_IO : LC_E_TRUNCATED;
        }
        LC_TRY(write_all(f, f->buf, (size_t)k, err));
        off += (uint64_t)k;
        len -= (uint64_t)k;
        f->written += (uint64_t)k;
    }
    return LC_OK;
}

lc_code lc_outfile_copy_from(lc_outfile *f, int fd, uint64_t off, uint64_t len, lc_error *err) {
    LC_TRY(flush(f, err));
    while (len > 0) {
        off64_t in = (off64_t)off;
        size_t want = len < (1u << 30) ? (size_t)len : (1u << 30);
        ssize_t k = copy_file_range(fd, &in, f->fd, NULL, want, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
                      errno == EOPNOTSUPP || errno == EBADF || errno == EPERM))
            return copy_by_pread(f, fd, off, len, err); /* other fs, old kernel, pipes */
        if (k < 0) {
            lc_fail(err, LC_E_IO, f->written, "copy failed: %s", strerror(errno));
            lc_err_context(err, f->path, NULL);
            return LC_E_IO;
        }
        if (k == 0)
            return lc_fail(err, LC_E_TRUNCATED, off, "the source ended %" PRIu64
                           " bytes early", len);
        gave_kernel(f, (uint64_t)k);
        off += (uint64_t)k;
        len -= (uint64_t)k;
        f->written += (uint64_t)k;
    }
    return LC_OK;
}

lc_code lc_outfile_pad(lc_outfile *f, size_t len, lc_error *err) {
    static const uint8_t zeros[256];
    while (len > 0) {
        size_t k = len < sizeof zeros ? len : sizeof zeros;
        LC_TRY(lc_outfile_write(f, zeros, k, err));
        len -= k;
    }
    return LC_OK;
}

uint64_t lc_outfile_tell(const lc_outfile *f) { return f->written; }

void lc_outfile_reserve(lc_outfile *f, uint64_t size) {
    /* KEEP_SIZE: the size still grows only as bytes are written, so a wrong guess
     * can never leave zeros at the end of the file. Advice only: some filesystems
     * have no fallocate, and the writes work the same without it. */
    if (size > f->written && size <= (uint64_t)INT64_MAX)
        fallocate(f->fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)size);
}

static void fsync_dir_of(const char *path) {
    char *copy = lc_strdup(path);
    if (!copy)
        return;
    int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    lc_free(copy);
}

lc_code lc_outfile_commit(lc_outfile *f, lc_error *err) {
    lc_code rc = flush(f, err);
    if (rc == LC_OK && g_durable && fsync(f->fd) != 0) {
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "fsync failed: %s", strerror(errno));
        lc_err_context(err, f->path, NULL);
    }
    if (close(f->fd) != 0 && rc == LC_OK) {
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "close failed: %s", strerror(errno));
        lc_err_context(err, f->path, NULL);
    }
    f->fd = -1;
    if (rc == LC_OK && rename(f->tmp, f->path) != 0) {
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot rename %s: %s", f->tmp, strerror(errno));
        lc_err_context(err, f->path, NULL);
    }
    if (rc != LC_OK)
        unlink(f->tmp);
    else if (g_durable)
        fsync_dir_of(f->path);
    free_outfile(f);
    return rc;
}

void lc_outfile_abort(lc_outfile *f) {
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    unlink(f->tmp);
    free_outfile(f);
}
