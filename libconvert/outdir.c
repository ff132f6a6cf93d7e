/* libconvert/outdir.c: a temporary folder beside OUT, renamed (or swapped) into place. */
/* _GNU_SOURCE for renameat2 and RENAME_EXCHANGE (glibc >= 2.28). */
#define _GNU_SOURCE 1
#include "libconvert/outdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libconvert/alloc.h"
#include "libconvert/cleanup.h"
#include "libconvert/input.h"
#include "libconvert/outfile.h"

struct lc_outdir {
    char           *path;      /* OUT, without trailing slashes */
    lc_cleanup_tmp *live;
    char            tmp[LC_CLEANUP_PATH_MAX];
};

/* Why OUT's entry NAME may not be replaced, or NULL when it may: a regular file that
 * is no input of this run, and (when new_fd >= 0) that the new set also has. */
static const char *lost_entry(int old_fd, int new_fd, const char *name) {
    struct stat st;
    if (fstatat(old_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return NULL;                         /* gone meanwhile: nothing to lose */
    if (!S_ISREG(st.st_mode))
        return lc_input_kind(st.st_mode);
    if (lc_input_find((uint64_t)st.st_dev, (uint64_t)st.st_ino))
        return "an input of this run";
    if (new_fd >= 0 && fstatat(new_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return "a file the new output does not have";
    return NULL;
}

/* LC_OK when every entry of folder OLD may be replaced (see lost_entry); *empty says
 * whether it has none. new_dir NULL: only the checks that need no new set. */
static lc_code check_old(const char *old, const char *new_dir, bool *empty, lc_error *err) {
    lc_code rc = LC_OK;
    *empty = true;
    int old_fd = open(old, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int new_fd = new_dir ? open(new_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    DIR *d = old_fd >= 0 ? fdopendir(dup(old_fd)) : NULL;
    if (!d || (new_dir && new_fd < 0)) {
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot list the folder: %s", strerror(errno));
        goto done;
    }
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        *empty = false;
        const char *why = lost_entry(old_fd, new_fd, e->d_name);
        if (why) {
            rc = lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "holds %s (%s), which writing the output "
                         "here would delete; remove it or choose another folder", e->d_name, why);
            break;
        }
    }
done:
    if (d)
        closedir(d);
    if (old_fd >= 0)
        close(old_fd);
    if (new_fd >= 0)
        close(new_fd);
    lc_err_context(err, old, NULL);
    return rc;
}

lc_code lc_outdir_open(const char *path, lc_outdir **out, lc_error *err) {
    *out = NULL;
    lc_code rc = LC_OK;
    bool empty;
    int fd = -1;
    lc_outdir *d = lc_calloc(1, sizeof *d);
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (!d || !(d->path = lc_strndup(path, n))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    if ((rc = lc_outfile_check_target(d->path, true, err)) != LC_OK)
        goto done;
    if (access(d->path, F_OK) == 0 && (rc = check_old(d->path, NULL, &empty, err)) != LC_OK)
        goto done;
    rc = lc_outfile_make_temp(d->path, true, d->tmp, sizeof d->tmp, &fd, &d->live, err);
done:
    if (rc != LC_OK) {
        lc_err_context(err, path, NULL);
        if (d)
            lc_free(d->path);
        lc_free(d);
        return rc;
    }
    *out = d;
    return LC_OK;
}

lc_code lc_outdir_file(const lc_outdir *d, const char *name, char *buf, size_t cap,
                       lc_error *err) {
    lc_code rc = LC_OK;
    int k = snprintf(buf, cap, "%s/%s", d->tmp, name);
    if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        rc = lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "\"%s\" is not a plain file name", name);
    else if (k < 0 || (size_t)k >= cap)
        rc = lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "the path of %s is too long", name);
    lc_err_context(err, d->path, NULL);
    return rc;
}

const char *lc_outdir_tmp_path(const lc_outdir *d) { return d->tmp; }

static void free_outdir(lc_outdir *d) {
    lc_cleanup_remove(d->live);
    lc_free(d->path);
    lc_free(d);
}

void lc_outdir_abort(lc_outdir *d) {
    if (!d)
        return;
    lc_cleanup_remove_dir(d->tmp);
    free_outdir(d);
}

/* The mode a new folder gets: 0777 less the umask, read without umask(2), which
 * would change it for every thread meanwhile. */
static mode_t new_dir_mode(void) {
    unsigned mask = 022;
    FILE *f = fopen("/proc/self/status", "re");
    char line[128];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Umask: %o", &mask) == 1)
            break;
    if (f)
        fclose(f);
    return (mode_t)(0777 & ~mask);
}

static void fsync_path(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* After a swap, the old set sits at OLD: removes its files that the new set (at NEW)
 * replaced, then the folder. Anything else (put there since the check) stays. */
static void remove_old_set(const char *old, const char *new_dir) {
    int old_fd = open(old, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int new_fd = open(new_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = old_fd >= 0 ? fdopendir(dup(old_fd)) : NULL;
    for (struct dirent *e; d && new_fd >= 0 && (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            !lost_entry(old_fd, new_fd, e->d_name))
            unlinkat(old_fd, e->d_name, 0);
    if (d)
        closedir(d);
    if (old_fd >= 0)
        close(old_fd);
    if (new_fd >= 0)
        close(new_fd);
    rmdir(old);
}

lc_code lc_outdir_commit(lc_outdir *d, lc_error *err) {
    lc_code rc = LC_OK;
    bool empty;
    if (chmod(d->tmp, new_dir_mode()) != 0) {
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot set the mode of %s: %s", d->tmp,
                     strerror(errno));
        goto done;
    }
    if (lc_outfile_durable())
        fsync_path(d->tmp);
    if ((rc = lc_outfile_check_target(d->path, true, err)) != LC_OK)
        goto done;
    if (rename(d->tmp, d->path) == 0)
        goto placed;
    if (errno != ENOTEMPTY && errno != EEXIST) {
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot rename %s: %s", d->tmp, strerror(errno));
        goto done;
    }
    /* OUT holds files: swap only when the new set replaces every one of them. */
    if ((rc = check_old(d->path, d->tmp, &empty, err)) != LC_OK)
        goto done;
    if (renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->path, RENAME_EXCHANGE) != 0) {
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot swap %s into place: %s%s", d->tmp,
                     strerror(errno), errno == EINVAL || errno == ENOSYS
                         ? " (the file system cannot swap folders: remove the old one first)"
                         : "");
        goto done;
    }
    remove_old_set(d->tmp, d->path);
placed:
    if (lc_outfile_durable()) {
        char *parent = lc_strdup(d->path);
        char *slash = parent ? strrchr(parent, '/') : NULL;
        if (slash)
            slash[slash == parent ? 1 : 0] = '\0';      /* "/x" -> "/", "a/b" -> "a" */
        if (parent)
            fsync_path(slash ? parent : ".");
        lc_free(parent);
    }
done:
    if (rc != LC_OK) {
        lc_err_context(err, d->path, NULL);
        lc_cleanup_remove_dir(d->tmp);
    }
    free_outdir(d);
    return rc;
}
