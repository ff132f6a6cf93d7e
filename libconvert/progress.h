/* libconvert/progress.h: progress on stderr for work that takes more than a second.
 *
 * Library code reports bytes done against a total; nothing is printed until a second
 * has passed, and nothing at all when the reporter is disabled (stderr not a terminal,
 * or -q). Every function accepts NULL, so library code never checks. Updates may come
 * from several threads. */
#ifndef LC_LIBCONVERT_PROGRESS_H
#define LC_LIBCONVERT_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct lc_progress lc_progress;

/* enabled = false gives a silent reporter. NULL when out of memory (also silent). */
lc_progress *lc_progress_new(bool enabled);

/* A reporter that prints nothing and calls FN instead (a library caller's own display,
 * the Python package's callback): FN(ctx, label, done, total) at each begin, at most
 * every 0.1 s while bytes are added, and at each end (done then final). Calls are made
 * under the reporter's lock, one at a time, from whichever thread adds; FN must not
 * call back into this reporter. NULL when out of memory. */
typedef void (*lc_progress_fn)(void *ctx, const char *label, uint64_t done, uint64_t total);
lc_progress *lc_progress_new_fn(lc_progress_fn fn, void *ctx);
void lc_progress_free(lc_progress *p);
/* Starts a phase: label ("writing out.safetensors") and total bytes (0: unknown). */
void lc_progress_begin(lc_progress *p, const char *label, uint64_t total);
/* The same for work counted in other units (UNIT: "tokens", a static string): the line
 * shows "45.0% 23040/51200 tokens 812 tokens/s" instead of MiB. */
void lc_progress_begin_units(lc_progress *p, const char *label, uint64_t total,
                             const char *unit);
void lc_progress_add(lc_progress *p, uint64_t bytes);
/* Ends the phase, erasing the progress line if one was printed. */
void lc_progress_end(lc_progress *p);

#endif
