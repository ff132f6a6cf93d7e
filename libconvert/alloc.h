/* libconvert/alloc.h: every allocation goes through here.
 *
 * lc_calloc and lc_malloc_array check the multiplication for overflow. A test hook
 * makes the Nth allocation from now fail, so out-of-memory paths can be exercised
 * (sqlite-style). lc_free accepts NULL. */
#ifndef LC_LIBCONVERT_ALLOC_H
#define LC_LIBCONVERT_ALLOC_H

#include <stddef.h>

void *lc_malloc(size_t n);
void *lc_calloc(size_t count, size_t size);
void *lc_malloc_array(size_t count, size_t size);   /* malloc with checked count*size */
void *lc_realloc(void *p, size_t n);
void *lc_realloc_array(void *p, size_t count, size_t size);
void  lc_free(void *p);
char *lc_strdup(const char *s);
char *lc_strndup(const char *s, size_t n);           /* always NUL-terminated */

/* Test hook: the `nth` allocation from now (1 = the next) and every later one fail
 * until reset with 0. Not thread-safe; tests only. */
void lc_alloc_fail_after(long nth);

#endif
