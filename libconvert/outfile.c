/* libconvert/outfile.c: a unique temporary -> fsync -> rename over OUT. */
/* _GNU_SOURCE for copy_file_range, sync_file_range, fallocate (Linux, glibc >= 2.27). */
#define _GNU_SOURCE 1
#include "libconvert/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "libconvert/alloc.h"
#include "libconvert/input.h"

#define BUF_SIZE (1u << 20)
/* Writes this big go to the kernel as they are: copying them into the buffer first
 * would cost more than the syscall it saves. */
#define DIRECT_WRITE (64u << 10)
/* How much of OUT's name the temporary repeats: the whole temporary name must stay
 * within NAME_MAX (255) bytes. */
#define NAME_KEEP 200
#define RAND_CHARS 10
/* Random names to try before giving up: a clash is an accident or someone planting
 * files at guessed names, and 62^10 names leave nothing to guess. */
#define TRIES 64

struct lc_outfile {
    int      fd;
    char    *path;
    uint8_t *buf;
    size_t   used;
    uint64_t written;
    uint64_t in_kernel;     /* bytes handed to the kernel (write or copy) */
    uint64_t kicked;        /* writeback has been started for [0, kicked) */
    lc_cleanup_tmp *live;   /* the temporary's registration for signal handlers */
    char     tmp[LC_CLEANUP_PATH_MAX];
};

static bool g_durable = true;

void lc_outfile_set_durable(bool durable) { g_durable = durable; }
bool lc_outfile_durable(void) { return g_durable; }

/* ---- temporary names ---- */

static uint64_t g_test_seed;

void lc_outfile_test_names(uint64_t seed) { g_test_seed = seed; }

static uint64_t next_random(void) {
    uint64_t r;
    if (g_test_seed) {
        r = (g_test_seed += 0x9e3779b97f4a7c15u);          /* splitmix64 */
    } else if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        /* No entropy yet (early boot) or no syscall: unique, if guessable; O_EXCL
         * still refuses anything planted at the name. */
        static _Atomic uint64_t counter;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        r = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^
            ++counter;
    }
    r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9u;
    r = (r ^ (r >> 27)) * 0x94d049bb133111ebu;
    return r ^ (r >> 31);
}

/* ".NAME.lc-XXXXXXXXXX.tmp" in PATH's folder, into tmp. */
static lc_code temp_name(const char *path, char *tmp, size_t cap, lc_error *err) {
    static const char ALNUM[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const int dlen = slash ? (int)(base - path) : 0;        /* with its '/' */
    size_t blen = strlen(base);
    if (blen > NAME_KEEP)
        blen = NAME_KEEP;
    char rnd[RAND_CHARS + 1];
    uint64_t r = next_random();
    for (int i = 0; i < RAND_CHARS; i++) {
        rnd[i] = ALNUM[r % 62];
        r /= 62;
    }
    rnd[RAND_CHARS] = '\0';
    const int n = snprintf(tmp, cap, "%.*s.%.*s.lc-%s.tmp", dlen, path, (int)blen, base, rnd);
    if (n < 0 || (size_t)n >= cap)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "the path is too long");
    return LC_OK;
}

lc_code lc_outfile_make_temp(const char *path, bool is_dir, char *tmp, size_t cap, int *fd,
                             lc_cleanup_tmp **slot, lc_error *err) {
    *fd = -1;
    *slot = NULL;
    const size_t n = strlen(path);
    if (n == 0 || path[n - 1] == '/')
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "names a folder, not a file");
    for (int i = 0; i < TRIES; i++) {
        LC_TRY(temp_name(path, tmp, cap < LC_CLEANUP_PATH_MAX ? cap : LC_CLEANUP_PATH_MAX, err));
        /* Create and register with signals blocked: a handler running in between
         * would leave the file, and registering first could remove someone else's
         * file that made us pick another name. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        int f = -1, e = 0;
        if (is_dir ? mkdir(tmp, 0700) != 0
                   : (f = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                               0666)) < 0)
            e = errno;
        else if (!(*slot = lc_cleanup_add(tmp, is_dir))) {
            if (is_dir) {
                rmdir(tmp);
            } else {
                close(f);
                unlink(tmp);
            }
            e = ENOMEM;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (e == EEXIST)
            continue;
        if (e == ENOMEM)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        if (e)
            return lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot create the temporary %s: %s", tmp,
                           strerror(e));
        *fd = f;
        return LC_OK;
    }
    return lc_fail(err, LC_E_IO, LC_NO_OFFSET, "%d temporary names beside it were all taken",
                   TRIES);
}

/* ---- what OUT may be ---- */

lc_code lc_outfile_check_target(const char *path, bool want_dir, lc_error *err) {
    struct stat st;
    lc_code rc = LC_OK;
    if (stat(path, &st) != 0)
        return LC_OK;   /* absent (or unreachable: creating the temporary will say why) */
    const char *in = lc_input_find((uint64_t)st.st_dev, (uint64_t)st.st_ino);
    if (in && strcmp(in, path) == 0)
        rc = lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "is an input of this run; refusing to "
                     "write the output over it");
    else if (in)
        rc = lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "is the same file as the input %s; refusing "
                     "to write the output over it", in);
    else if (want_dir && !S_ISDIR(st.st_mode))
        rc = lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "is %s, not a folder",
                     lc_input_kind(st.st_mode));
    else if (!want_dir && S_ISDIR(st.st_mode))
        rc = lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "is a folder; the output must be a file");
    else if (!want_dir && !S_ISREG(st.st_mode))
        rc = lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "is %s; refusing to replace it with the "
                     "output", lc_input_kind(st.st_mode));
    lc_err_context(err, path, NULL);
    return rc;
}

static void free_outfile(lc_outfile *f) {
    lc_cleanup_remove(f->live);
    lc_free(f->buf);
    lc_free(f->path);
    lc_free(f);
}

lc_code lc_outfile_open(const char *path, lc_outfile **out, lc_error *err) {
    *out = NULL;
    LC_TRY(lc_outfile_check_target(path, false, err));
    lc_outfile *f = lc_calloc(1, sizeof *f);
    if (!f || !(f->path = lc_strdup(path)) || !(f->buf = lc_malloc(BUF_SIZE))) {
        if (f)
            free_outfile(f);
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    lc_code rc = lc_outfile_make_temp(path, false, f->tmp, sizeof f->tmp, &f->fd, &f->live, err);
    if (rc != LC_OK) {
        free_outfile(f);
        lc_err_context(err, path, NULL);
        return rc;
    }
    *out = f;
    return LC_OK;
}

/* errno's text, with what to do about the limits a user can hit. */
static const char *why(int e) {
    switch (e) {
    case EFBIG:  return "File too large (the file-size limit, ulimit -f, or the file system's)";
    case ENOSPC: return "No space left on device";
    case EDQUOT: return "Disk quota exceeded";
    default:     return strerror(e);
    }
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
            lc_fail(err, LC_E_IO, f->written, "write failed: %s", why(errno));
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

/* A copy's source ended early: its size was checked when it was opened, so it changed
 * since. The error names the input (found by its inode among the run's inputs), since
 * the offset is in the input. */
static lc_code source_shrank(int fd, uint64_t off, uint64_t missing, lc_error *err) {
    struct stat st;
    const char *in = fstat(fd, &st) == 0
                   ? lc_input_find((uint64_t)st.st_dev, (uint64_t)st.st_ino) : NULL;
    lc_fail(err, LC_E_TRUNCATED, off, "changed on disk while being read (it ends %" PRIu64
            " bytes early)", missing);
    lc_err_context(err, in, NULL);
    return LC_E_TRUNCATED;
}

/* Bytes through our buffer when the kernel cannot copy between these two files. */
static lc_code copy_by_pread(lc_outfile *f, int fd, uint64_t off, uint64_t len, lc_error *err) {
    while (len > 0) {
        size_t want = len < BUF_SIZE ? (size_t)len : BUF_SIZE;
        ssize_t k = pread(fd, f->buf, want, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k == 0)
            return source_shrank(fd, off, len, err);
        if (k < 0)
            return lc_fail(err, LC_E_IO, off, "cannot read the source: %s", strerror(errno));
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
            lc_fail(err, LC_E_IO, f->written, "copy failed: %s", why(errno));
            lc_err_context(err, f->path, NULL);
            return LC_E_IO;
        }
        if (k == 0)
            return source_shrank(fd, off, len, err);
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

/* Flush, fsync and close: the temporary holds the whole file; it is not renamed yet. */
static lc_code finish(lc_outfile *f, lc_error *err) {
    lc_code rc = flush(f, err);
    if (rc == LC_OK && g_durable && fsync(f->fd) != 0) {
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "fsync failed: %s", why(errno));
        lc_err_context(err, f->path, NULL);
    }
    if (close(f->fd) != 0 && rc == LC_OK) {
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "close failed: %s", why(errno));
        lc_err_context(err, f->path, NULL);
    }
    f->fd = -1;
    /* Again, for an input opened after the output (a shard read while writing). */
    if (rc == LC_OK)
        rc = lc_outfile_check_target(f->path, false, err);
    return rc;
}

static lc_code publish(lc_outfile *f, lc_error *err) {
    if (rename(f->tmp, f->path) == 0)
        return LC_OK;
    lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot rename %s: %s", f->tmp, strerror(errno));
    lc_err_context(err, f->path, NULL);
    return err ? err->code : LC_E_IO;
}

lc_code lc_outfile_commit(lc_outfile *f, lc_error *err) {
    lc_code rc = finish(f, err);
    if (rc == LC_OK)
        rc = publish(f, err);
    if (rc != LC_OK)
        unlink(f->tmp);
    else if (g_durable)
        fsync_dir_of(f->path);
    free_outfile(f);
    return rc;
}

lc_code lc_outfile_commit_set(lc_outfile **fs, size_t n, lc_error *err) {
    lc_code rc = LC_OK;
    size_t published = 0;
    lc_cleanup_tmp **live = lc_calloc(n ? n : 1, sizeof *live);
    if (!live)
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (size_t i = 0; rc == LC_OK && i < n; i++)
        rc = finish(fs[i], err);
    /* Every file is whole on disk before the first rename; a published file stays
     * registered for the signal handlers until the last one is in place. */
    for (; rc == LC_OK && published < n; published++) {
        if ((rc = publish(fs[published], err)) != LC_OK)
            break;
        live[published] = lc_cleanup_add(fs[published]->path, false);
    }
    for (size_t i = 0; i < n; i++) {
        if (rc != LC_OK && i < published)
            unlink(fs[i]->path);
        else if (rc != LC_OK) {
            if (fs[i]->fd >= 0)
                close(fs[i]->fd);
            unlink(fs[i]->tmp);
        } else if (g_durable) {
            fsync_dir_of(fs[i]->path);
        }
        if (live)
            lc_cleanup_remove(live[i]);
        free_outfile(fs[i]);
        fs[i] = NULL;
    }
    lc_free(live);
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
