/* libconvert/cleanup.c: registries a signal handler can read, and the handlers. */
/* _GNU_SOURCE for syscall(), SIGPOLL, SIGPWR, SIGSTKFLT and SIGRTMIN. */
#define _GNU_SOURCE 1
#include "libconvert/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libconvert/alloc.h"

/* ---- the registries ----
 * Slots live in chunks linked by atomic pointers. The first chunk is static, later
 * ones come from the heap and are never freed, so a handler can walk the list at any
 * moment without a lock. A slot is claimed by a compare-and-swap on its state, filled,
 * then published with a release store; the handler reads the state with acquire. */

enum { FREE = 0, BUSY, LIVE_FILE, LIVE_DIR, LIVE_MAP };

struct lc_cleanup_tmp {
    atomic_int state;
    char       path[LC_CLEANUP_PATH_MAX];
};

struct lc_cleanup_map {
    atomic_int  state;
    uintptr_t   start;
    uint64_t    len;
    const char *path;       /* owned by the map, valid while LIVE_MAP */
};

#define TMPS_PER_CHUNK 16
#define MAPS_PER_CHUNK 256

typedef struct tmp_chunk {
    lc_cleanup_tmp s[TMPS_PER_CHUNK];
    struct tmp_chunk *_Atomic next;
} tmp_chunk;

typedef struct map_chunk {
    lc_cleanup_map s[MAPS_PER_CHUNK];
    struct map_chunk *_Atomic next;
} map_chunk;

static tmp_chunk g_tmps;
static map_chunk g_maps;
static pthread_mutex_t g_grow = PTHREAD_MUTEX_INITIALIZER;

static bool claim(atomic_int *state) {
    int expect = FREE;
    return atomic_compare_exchange_strong(state, &expect, BUSY);
}

/* The chunk after c, appended when there is none. NULL when memory runs out. */
#define NEXT_CHUNK(type, c)                                                              \
    do {                                                                                 \
        type *n_ = atomic_load(&(c)->next);                                              \
        if (!n_) {                                                                       \
            pthread_mutex_lock(&g_grow);                                                 \
            if (!(n_ = atomic_load(&(c)->next)) && (n_ = lc_calloc(1, sizeof *n_)))     \
                atomic_store(&(c)->next, n_);                                            \
            pthread_mutex_unlock(&g_grow);                                               \
        }                                                                                \
        (c) = n_;                                                                        \
    } while (0)

lc_cleanup_tmp *lc_cleanup_add(const char *path, bool is_dir) {
    const size_t n = strlen(path);
    if (n >= LC_CLEANUP_PATH_MAX)
        return NULL;
    for (tmp_chunk *c = &g_tmps; c;) {
        for (int i = 0; i < TMPS_PER_CHUNK; i++) {
            lc_cleanup_tmp *t = &c->s[i];
            if (claim(&t->state)) {
                memcpy(t->path, path, n + 1);
                atomic_store_explicit(&t->state, is_dir ? LIVE_DIR : LIVE_FILE,
                                      memory_order_release);
                return t;
            }
        }
        NEXT_CHUNK(tmp_chunk, c);
    }
    return NULL;
}

void lc_cleanup_remove(lc_cleanup_tmp *t) {
    if (t)
        atomic_store_explicit(&t->state, FREE, memory_order_release);
}

lc_cleanup_map *lc_cleanup_watch(const void *addr, uint64_t len, const char *path) {
    for (map_chunk *c = &g_maps; c;) {
        for (int i = 0; i < MAPS_PER_CHUNK; i++) {
            lc_cleanup_map *m = &c->s[i];
            if (claim(&m->state)) {
                m->start = (uintptr_t)addr;
                m->len = len;
                m->path = path;
                atomic_store_explicit(&m->state, LIVE_MAP, memory_order_release);
                return m;
            }
        }
        NEXT_CHUNK(map_chunk, c);
    }
    return NULL;
}

void lc_cleanup_unwatch(lc_cleanup_map *m) {
    if (m)
        atomic_store_explicit(&m->state, FREE, memory_order_release);
}

/* ---- what the handlers do: async-signal-safe calls only ---- */

void lc_cleanup_remove_dir(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        /* Removing entries while listing them may make the listing skip some: list
         * again until a pass removes nothing. */
        for (int pass = 0; pass < 16; pass++) {
            _Alignas(8) char buf[4096];
            bool removed = false;
            long n;
            lseek(fd, 0, SEEK_SET);
            while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
                /* struct linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type, name */
                for (long at = 0; at + 19 < n;) {
                    uint16_t reclen;
                    memcpy(&reclen, buf + at + 16, sizeof reclen);
                    const char *name = buf + at + 19;
                    if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
                        unlinkat(fd, name, 0) == 0)
                        removed = true;
                    if (reclen == 0)
                        break;
                    at += reclen;
                }
            }
            if (!removed)
                break;
        }
        close(fd);
    }
    rmdir(path);
}

static void remove_all(void) {
    /* Files first: a file may sit inside a temporary folder. */
    for (tmp_chunk *c = &g_tmps; c; c = atomic_load(&c->next))
        for (int i = 0; i < TMPS_PER_CHUNK; i++)
            if (atomic_load_explicit(&c->s[i].state, memory_order_acquire) == LIVE_FILE)
                unlink(c->s[i].path);
    for (tmp_chunk *c = &g_tmps; c; c = atomic_load(&c->next))
        for (int i = 0; i < TMPS_PER_CHUNK; i++)
            if (atomic_load_explicit(&c->s[i].state, memory_order_acquire) == LIVE_DIR)
                lc_cleanup_remove_dir(c->s[i].path);
}

static const lc_cleanup_map *find_map(uintptr_t a) {
    for (map_chunk *c = &g_maps; c; c = atomic_load(&c->next))
        for (int i = 0; i < MAPS_PER_CHUNK; i++) {
            const lc_cleanup_map *m = &c->s[i];
            if (atomic_load_explicit(&m->state, memory_order_acquire) == LIVE_MAP &&
                a >= m->start && a - m->start < m->len)
                return m;
        }
    return NULL;
}

static const char *g_prog = "libconvert";
static atomic_int g_dying;

static void put(char *buf, size_t *n, size_t cap, const char *s) {
    while (*s && *n < cap)
        buf[(*n)++] = *s++;
}

/* "PROG: PATH: changed on disk while being read (at offset 0x...)" without stdio. */
static void say_changed(const lc_cleanup_map *m, uint64_t off) {
    char line[LC_CLEANUP_PATH_MAX + 256], hex[17];
    size_t n = 0, cap = sizeof line - 1;
    int k = 16;
    hex[k] = '\0';
    do {
        hex[--k] = "0123456789abcdef"[off & 15];
        off >>= 4;
    } while (off && k > 0);
    put(line, &n, cap, g_prog);
    put(line, &n, cap, ": ");
    put(line, &n, cap, m->path);
    put(line, &n, cap, ": changed on disk while being read (at offset 0x");
    put(line, &n, cap, hex + k);
    put(line, &n, cap, ")");
    line[n++] = '\n';
    for (size_t at = 0; at < n;) {
        ssize_t w = write(STDERR_FILENO, line + at, n - at);
        if (w <= 0 && errno != EINTR)
            break;
        at += w > 0 ? (size_t)w : 0;
    }
}

/* Another thread is already cleaning up and will end the process. */
static void wait_for_exit(void) {
    for (;;)
        pause();
}

static void on_terminate(int sig) {
    if (atomic_exchange(&g_dying, 1))
        wait_for_exit();
    remove_all();
    _exit(128 + sig);
}

static const int FAULTS[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS };
#define N_FAULTS (sizeof FAULTS / sizeof *FAULTS)
static struct sigaction g_old_fault[N_FAULTS];

static void on_fault(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    const lc_cleanup_map *m = NULL;
    /* Reading a map past the end of a file that shrank is SIGBUS (BUS_ADRERR); a
     * SIGSEGV in a read-only map would be our own stray write, so it is a crash. */
    if (sig == SIGBUS && si->si_code > 0 && (m = find_map((uintptr_t)si->si_addr))) {
        if (atomic_exchange(&g_dying, 1))
            wait_for_exit();
        say_changed(m, (uint64_t)((uintptr_t)si->si_addr - m->start));
        remove_all();
        _exit(1);
    }
    /* A crash: remove the temporaries, then let the handler that was there before
     * (default: core dump; a sanitizer's report) have the signal. A fault raised by
     * the CPU happens again when we return; one sent by kill() is sent again. */
    atomic_store(&g_dying, 1);
    remove_all();
    for (size_t i = 0; i < N_FAULTS; i++)
        if (FAULTS[i] == sig)
            sigaction(sig, &g_old_fault[i], NULL);
    if (si->si_code <= 0)
        raise(sig);
}

/* Signals whose default action ends the process, other than the faults above and the
 * two we ignore. */
static int terminating(int i) {
    static const int SIGS[] = {
        SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGALRM, SIGUSR1, SIGUSR2, SIGVTALRM, SIGPROF,
#ifdef SIGPOLL
        SIGPOLL,
#endif
#ifdef SIGPWR
        SIGPWR,
#endif
#ifdef SIGSTKFLT
        SIGSTKFLT,
#endif
    };
    const int n = (int)(sizeof SIGS / sizeof *SIGS);
    if (i < n)
        return SIGS[i];
    const int rt = SIGRTMIN + (i - n);
    return rt <= SIGRTMAX ? rt : 0;
}

void lc_cleanup_install(const char *prog) {
    static atomic_int done;
    if (atomic_exchange(&done, 1))
        return;
    g_prog = prog;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    /* No handler runs inside another: every signal we handle is blocked meanwhile. */
    sigemptyset(&sa.sa_mask);
    for (int i = 0, s; (s = terminating(i)) != 0; i++)
        sigaddset(&sa.sa_mask, s);
    for (size_t i = 0; i < N_FAULTS; i++)
        sigaddset(&sa.sa_mask, FAULTS[i]);

    sa.sa_handler = on_terminate;
    for (int i = 0, s; (s = terminating(i)) != 0; i++) {
        struct sigaction old;
        if (sigaction(s, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;   /* nohup, or a background job: the caller wants it ignored */
        sigaction(s, &sa, NULL);
    }
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    for (size_t i = 0; i < N_FAULTS; i++)
        sigaction(FAULTS[i], &sa, &g_old_fault[i]);

    /* EPIPE and EFBIG from write(2) are errors we report, naming the file. */
    sa.sa_handler = SIG_IGN;
    sa.sa_flags = 0;
    sigaction(SIGPIPE, &sa, NULL);
    sigaction(SIGXFSZ, &sa, NULL);
}
