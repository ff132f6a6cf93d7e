/* tests/fuzz/fuzz_gguf.c: libFuzzer entry for the GGUF reader. A file that parses is
 * also written back and re-read, so the writer sees every shape of metadata the reader
 * accepts, and the copy must parse to the same counts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "formats/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lc_model *m = NULL;
    lc_error err = { 0 };
    if (lc_gguf_load_mem(data, size, &m, &err) != LC_OK)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/tmp/lc-fuzz-gguf-%ld.gguf", (long)getpid());
    if (lc_gguf_write(m, path, NULL, NULL, &err) == LC_OK) {
        lc_model *back = NULL;
        lc_error e2 = { 0 };
        if (lc_gguf_load(path, &back, &e2) != LC_OK ||
            lc_model_tensor_count(back) != lc_model_tensor_count(m) ||
            lc_model_meta_count(back) != lc_model_meta_count(m))
            abort();   /* what we write must read back */
        lc_model_free(back);
        unlink(path);
    }
    lc_model_free(m);
    return 0;
}
