/* libconvert/cleanup.h: what an interrupted process must undo, and the signal
 * handlers that undo it.
 *
 * Two registries that a signal handler can read (fixed slots, lock-free, never freed):
 * - temporaries: the files and folders lc_outfile / lc_outdir are building. On any
 *   catchable signal whose default is to end the process (INT TERM HUP QUIT ALRM USR1
 *   USR2 VTALRM PROF POLL PWR and the real-time signals) they are removed and the
 *   process exits with 128 + the signal's number. A signal that is ignored when the
 *   handlers are installed (`nohup`, a background job's INT/QUIT) stays ignored.
 *   SIGPIPE and SIGXFSZ are ignored, so that a broken pipe or the file-size limit
 *   (`ulimit -f`) comes back from write(2) as EPIPE / EFBIG and is reported as an
 *   ordinary error. On a crash (SEGV, BUS, ILL, FPE, ABRT, SYS) the temporaries are
 *   removed and the signal goes on to the handler that was there before (the default:
 *   a core dump; or a sanitizer's report).
 * - input maps: the address range and path of every mapped input. Truncating a mapped
 *   file while it is read raises SIGBUS at the first page past the new end; when the
 *   faulting address is in an input map the handler prints
 *   "PROG: PATH: changed on disk while being read (at offset 0xOFF)", removes the
 *   temporaries and exits with status 1.
 * SIGKILL cannot be caught: after one, a temporary stays behind under its documented
 * pattern (see outfile.h); it is never opened again, since every run picks a new name.
 * The library registers; only a tool installs the handlers (lc_cleanup_install). */
#ifndef LC_LIBCONVERT_CLEANUP_H
#define LC_LIBCONVERT_CLEANUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest path a temporary may have (the slot holds a copy, so that the handler
 * never reads memory another thread may free). */
#define LC_CLEANUP_PATH_MAX 4096

typedef struct lc_cleanup_tmp lc_cleanup_tmp;
typedef struct lc_cleanup_map lc_cleanup_map;

/* Registers temporary PATH (a file, or a folder whose files are removed with it).
 * NULL when PATH is LC_CLEANUP_PATH_MAX bytes or longer or memory runs out. */
lc_cleanup_tmp *lc_cleanup_add(const char *path, bool is_dir);
/* Forgets a temporary (renamed into place or removed); NULL-safe. */
void lc_cleanup_remove(lc_cleanup_tmp *t);

/* Registers the input map [addr, addr + len) of PATH, which must stay valid until
 * lc_cleanup_unwatch (the map owns it). NULL when memory runs out. */
lc_cleanup_map *lc_cleanup_watch(const void *addr, uint64_t len, const char *path);
/* Call before unmapping; NULL-safe. */
void lc_cleanup_unwatch(lc_cleanup_map *m);

/* Installs the handlers described above. PROG (kept, not copied) starts the SIGBUS
 * message. Called once by a tool after parsing its options; never by the library. */
void lc_cleanup_install(const char *prog);

/* Removes the files of folder PATH (not recursive) and then the folder. Only
 * async-signal-safe calls, so the handlers use it too. Best effort: what cannot be
 * removed stays. */
void lc_cleanup_remove_dir(const char *path);

#endif
