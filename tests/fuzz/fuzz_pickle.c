/* libFuzzer harness for the pickle VM and scanner. Besides memory safety it checks the
 * property the two exist for: they never disagree. A pickle the loader accepts, the
 * scanner passes; a pickle the loader refuses as forbidden, the scanner refuses too. */
#include <stddef.h>
#include <stdint.h>

#include "formats/pickle.h"

/* Values the walk may still visit for this input. The memo lets a 160-byte pickle make a
 * list holding itself (or one list) dozens of times, so a walk bounded by depth alone
 * visits up to 37^8 values: the harness's own timeout, not the library's. */
static size_t walk_budget;

static size_t walk(const lc_pickle_val *v, int depth) {
    /* Touch every accessor on a bounded walk (cycles are cut by the depth, sharing by the
     * budget). */
    size_t n = 0, k = 0, sum = 0;
    if (!v || depth > 8 || walk_budget == 0)
        return 0;
    walk_budget--;
    const lc_pickle_val *const *it = lc_pickle_items(v, lc_pickle_kind_of(v), &n);
    for (size_t i = 0; it && i < n && i < 16; i++)
        sum += walk(it[i], depth + 1);
    for (size_t i = 0; i < lc_pickle_dict_len(v) && i < 16; i++)
        sum += walk(lc_pickle_dict_key(v, i), depth + 1) +
               walk(lc_pickle_dict_value(v, i), depth + 1);
    sum += walk(lc_pickle_callable(v), depth + 1) + walk(lc_pickle_args(v), depth + 1);
    sum += walk(lc_pickle_kwargs(v), depth + 1) + walk(lc_pickle_state(v), depth + 1);
    sum += walk(lc_pickle_persid(v), depth + 1);
    const char *s = lc_pickle_str(v, &k);
    const uint8_t *b = lc_pickle_bytes(v, &k);
    sum += (s ? (size_t)s[k] : 0) + (b ? k : 0) + lc_pickle_id(v);
    return sum + 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lc_pickle *p = NULL;
    lc_error err = {0}, serr = {0};
    lc_code rc = lc_pickle_load(data, size, NULL, &p, &err);
    lc_code src = lc_pickle_scan(data, size, NULL, NULL, NULL, &serr);
    if (rc == LC_OK) {
        walk_budget = 100000;
        (void)walk(lc_pickle_root(p), 0);
        if (src != LC_OK)
            __builtin_trap(); /* loaded, yet the scanner objects */
    }
    if (rc == LC_E_FORBIDDEN && src != LC_E_FORBIDDEN)
        __builtin_trap();     /* refused a name the scanner let through */
    lc_pickle_free(p);
    return 0;
}
