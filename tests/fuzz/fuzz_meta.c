/* tests/fuzz/fuzz_meta.c: libFuzzer entry for Meta's params.json reader and tensor-name
 * map (formats/hf_meta_layout.c). Seeds: fixtures/meta (params.json among them).
 * The input is parsed as params.json with the tiny fixture's row counts, then read as
 * a tensor name up to its first NUL. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "formats/hf_meta_layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lc_hf_config c;
    lc_error err = { 0 };
    lc_code rc = lc_hf_meta_layout_config((const char *)data, size, 400, 128, &c, &err);
    if (rc == LC_OK) {
        /* what lc_hf_to_gguf relies on: sizes that make whole heads */
        if (c.head_count == 0 || c.head_count_kv == 0 || c.head_count % c.head_count_kv ||
            c.head_dim == 0 || c.head_dim % 2 || c.context_length == 0 || c.vocab_size == 0)
            __builtin_trap();
    } else if (err.code == LC_OK) {
        __builtin_trap();   /* a failure must say why */
    }
    char name[256], buf[64];
    const size_t n = size < sizeof name - 1 ? size : sizeof name - 1;
    memcpy(name, data, n);
    name[n] = '\0';
    lc_hf_role role;
    lc_error e2 = { 0 };
    if (lc_hf_meta_layout_name(name, 8, buf, sizeof buf, &role, &e2) == LC_OK &&
        role == LC_HF_ROLE_PLAIN && !memchr(buf, '\0', sizeof buf))
        __builtin_trap();
    return 0;
}
