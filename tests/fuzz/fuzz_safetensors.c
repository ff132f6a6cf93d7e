/* tests/fuzz/fuzz_safetensors.c: libFuzzer entry over the safetensors reader.
 * Any input must either load or fail with a code and a message; a loaded model
 * must describe only bytes inside the input, which reading every tensor checks
 * under ASan, and must survive the header writer's checks. The error line of a
 * failure carries no raw control byte, whatever names the file holds. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "formats/safetensors.h"
#include "libconvert/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lc_model *m = NULL;
    lc_error err = {0};
    if (lc_safetensors_load_mem(data, size, &m, &err) != LC_OK) {
        if (m || err.code == LC_OK || !err.msg[0])
            __builtin_trap(); /* a failure must say what and leave nothing */
        char line[1024];
        lc_err_format(&err, line, sizeof line);
        for (const unsigned char *p = (const unsigned char *)line; *p; p++)
            if (*p < 0x20 || *p == 0x7f)
                __builtin_trap(); /* a name from the file reached the line raw */
        return 0;
    }
    uint8_t buf[256];
    for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        if (t->file_offset > size || t->nbytes > size - t->file_offset)
            __builtin_trap();
        for (uint64_t off = 0; off < t->nbytes; off += sizeof buf) {
            size_t len = t->nbytes - off < sizeof buf ? (size_t)(t->nbytes - off) : sizeof buf;
            if (lc_tensor_read(t, off, buf, len, &err) != LC_OK)
                __builtin_trap();
        }
    }
    lc_model_free(m);
    return 0;
}
