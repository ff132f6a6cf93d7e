/* tests/fuzz/fuzz_imatrix.c: libFuzzer entry for the importance-matrix reader
 * (formats/gguf_imatrix.h), both formats. A matrix that opens has entries sorted by name
 * and findable, each a whole number of rows for its counts, and every row's weights can
 * be read (a bounded number of them: the work stays a small multiple of the input). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf_imatrix.h"
#include "libconvert/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lc_imatrix *im = NULL;
    lc_error err = { 0 };
    if (lc_imatrix_open_mem(data, size, &im, &err) != LC_OK) {
        if (im || err.code == LC_OK)
            abort();                    /* a failure leaves nothing and says why */
        return 0;
    }
    const size_t n = lc_imatrix_count(im);
    uint64_t budget = (uint64_t)size * 4 + 4096;    /* floats read in all */
    for (size_t i = 0; i < n; i++) {
        const char *name = lc_imatrix_name(im, i);
        if (i > 0 && strcmp(lc_imatrix_name(im, i - 1), name) >= 0)
            abort();                    /* sorted, no duplicates */
        if (lc_imatrix_find(im, name) != i)
            abort();
        const uint64_t nv = lc_imatrix_values(im, i), nm = lc_imatrix_matrices(im, i);
        if (nv == 0 || nm == 0 || nv % nm != 0)
            abort();
        const uint64_t ne0 = nv / nm;
        if (ne0 > budget)
            continue;
        float *w = lc_malloc((size_t)ne0 * sizeof *w);
        if (!w)
            continue;
        for (uint64_t m = 0; m < nm && budget >= ne0; m++, budget -= ne0)
            if (lc_imatrix_weights(im, i, m, w, &err) != LC_OK)
                abort();                /* an entry that opened reads */
        lc_free(w);
    }
    lc_imatrix_free(im);
    return 0;
}
