/* tests/fuzz/fuzz_pth.c: libFuzzer entry over the PyTorch checkpoint reader (zip and
 * legacy, through the zip and pickle readers). Any input must load or fail with a
 * code and a message and leave nothing; a loaded model's tensors must read without
 * touching bytes outside the input (ASan checks), with and without --dedupe. A view
 * may be far larger than its storage (stride 0), so each tensor's read is capped. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "formats/pth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define READ_CAP (1u << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (int pass = 0; pass < 2; pass++) {
        lc_pth_opts o = { .dedupe = pass == 1, .zero_copy = pass == 0 };
        lc_model *m = NULL;
        lc_error err = { 0 };
        if (lc_pth_load_mem(data, size, &o, &m, &err) != LC_OK) {
            if (m || err.code == LC_OK || !err.msg[0])
                __builtin_trap(); /* a failure must say what and leave nothing */
            return 0;
        }
        uint8_t buf[509];   /* odd: reads start and end inside elements */
        for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
            const lc_tensor *t = lc_model_tensor(m, i);
            uint64_t end = t->nbytes < READ_CAP ? t->nbytes : READ_CAP;
            for (uint64_t off = 0; off < end; off += sizeof buf) {
                size_t len = end - off < sizeof buf ? (size_t)(end - off) : sizeof buf;
                if (lc_tensor_read(t, off, buf, len, &err) != LC_OK && !err.msg[0])
                    __builtin_trap();
            }
        }
        lc_model_free(m);
    }
    return 0;
}
