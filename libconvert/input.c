/* libconvert/input.c: non-blocking checked opens, and the registry of input files. */
#include "libconvert/input.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libconvert/alloc.h"

/* ---- the registry: an open-addressing set of (dev, ino) -> path ----
 * One entry per distinct file; a run reads at most a few hundred thousand shards, and
 * each lookup is one probe sequence, so checking every output against it is cheap.
 * Inode numbers come from the file system, not from file contents, but the mix is
 * keyed per process anyway (the house rule for every hash table). */

typedef struct entry {
    uint64_t dev, ino;
    char    *path;        /* NULL: the slot is free */
} entry;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static entry *g_tab;
static size_t g_cap, g_used;       /* g_cap is 0 or a power of two */

static uint64_t g_key;              /* set with the first table */

static uint64_t mix(uint64_t dev, uint64_t ino) {
    uint64_t x = (ino ^ g_key) + dev * 0x9e3779b97f4a7c15u;   /* splitmix64's finaliser */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static entry *slot_of(entry *tab, size_t cap, uint64_t dev, uint64_t ino) {
    size_t i = (size_t)mix(dev, ino) & (cap - 1);
    while (tab[i].path && !(tab[i].dev == dev && tab[i].ino == ino))
        i = (i + 1) & (cap - 1);
    return &tab[i];
}

/* Under g_lock. Keeps the table at most half full. */
static bool grow(void) {
    size_t cap = g_cap ? g_cap * 2 : 64;
    entry *tab = lc_calloc(cap, sizeof *tab);
    if (!tab)
        return false;
    if (!g_cap && getrandom(&g_key, sizeof g_key, GRND_NONBLOCK) != (ssize_t)sizeof g_key)
        g_key = (uint64_t)(uintptr_t)tab ^ ((uint64_t)getpid() << 32);   /* no entropy yet */
    for (size_t i = 0; i < g_cap; i++)
        if (g_tab[i].path)
            *slot_of(tab, cap, g_tab[i].dev, g_tab[i].ino) = g_tab[i];
    lc_free(g_tab);
    g_tab = tab;
    g_cap = cap;
    return true;
}

static lc_code note(uint64_t dev, uint64_t ino, const char *path, lc_error *err) {
    lc_code rc = LC_OK;
    pthread_mutex_lock(&g_lock);
    if ((g_used + 1) * 2 > g_cap && !grow()) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    } else {
        entry *e = slot_of(g_tab, g_cap, dev, ino);
        if (!e->path) {
            if ((e->path = lc_strdup(path))) {
                e->dev = dev;
                e->ino = ino;
                g_used++;
            } else {
                rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
            }
        }
    }
    pthread_mutex_unlock(&g_lock);
    return rc;
}

const char *lc_input_find(uint64_t dev, uint64_t ino) {
    const char *p = NULL;
    pthread_mutex_lock(&g_lock);
    if (g_cap)
        p = slot_of(g_tab, g_cap, dev, ino)->path;
    pthread_mutex_unlock(&g_lock);
    return p;
}

void lc_input_forget_all(void) {
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_cap; i++)
        lc_free(g_tab[i].path);
    lc_free(g_tab);
    g_tab = NULL;
    g_cap = g_used = 0;
    pthread_mutex_unlock(&g_lock);
}

/* ---- opening ---- */

const char *lc_input_kind(unsigned mode) {
    switch (mode & S_IFMT) {
    case S_IFREG:  return "a regular file";
    case S_IFDIR:  return "a folder";
    case S_IFIFO:  return "a FIFO";
    case S_IFSOCK: return "a socket";
    case S_IFCHR:  return "a character device";
    case S_IFBLK:  return "a block device";
    case S_IFLNK:  return "a symbolic link";
    default:       return "not a regular file";
    }
}

lc_code lc_input_open(const char *path, int *fd, uint64_t *size, lc_error *err) {
    lc_code rc = LC_OK;
    struct stat st;
    *fd = -1;
    /* O_NONBLOCK: opening a FIFO without a writer, or some devices, would wait forever;
     * nothing is read before fstat says this is a regular file. O_NOCTTY: a terminal
     * named as input must not become our controlling terminal. */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (f < 0) {
        const int e = errno;
        if (e == ENXIO && stat(path, &st) == 0) /* a socket, or a device without driver */
            rc = lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "is %s, not a regular file",
                         lc_input_kind(st.st_mode));
        else
            rc = lc_fail(err, e == ENOENT ? LC_E_NOTFOUND : LC_E_IO, LC_NO_OFFSET,
                         "cannot open: %s", strerror(e));
        goto done;
    }
    if (fstat(f, &st) != 0) {
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot stat: %s", strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "is %s, not a regular file",
                     lc_input_kind(st.st_mode));
        goto done;
    }
    /* Back to blocking reads: O_NONBLOCK means nothing for regular files on Linux, but
     * a file system may honour it (FUSE, NFS) and return EAGAIN from read. */
    const int fl = fcntl(f, F_GETFL);
    if (fl < 0 || fcntl(f, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot set blocking mode: %s",
                     strerror(errno));
        goto done;
    }
    if ((rc = note((uint64_t)st.st_dev, (uint64_t)st.st_ino, path, err)) != LC_OK)
        goto done;
    *fd = f;
    *size = (uint64_t)st.st_size;
    f = -1;
done:
    if (f >= 0)
        close(f);
    if (rc != LC_OK)
        lc_err_context(err, path, NULL);
    return rc;
}
