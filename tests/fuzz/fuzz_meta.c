/* tests/fuzz/fuzz_meta.c: libFuzzer entry for Meta's params.json reader
 * (hf/meta_layout.c) and the arch/ name map, every spelling of every family. Seeds: fixtures/meta (params.json among them).
 * The input is parsed as params.json with the tiny fixture's row counts, then read as
 * a tensor name up to its first NUL. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch/arch.h"
#include "hf/meta_layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lc_hf_config c;
    lc_error err = { 0 };
    lc_code rc = lc_hf_meta_layout_config((const char *)data, size, 400, 128, &c, &err);
    if (rc == LC_OK) {
        /* what lc_hf_to_gguf relies on: sizes that make whole heads */
        const lc_hparams *h = &c.hp;
        if (!c.arch || h->head_count == 0 || h->head_count_kv == 0 ||
            h->head_count % h->head_count_kv || h->head_dim == 0 || h->head_dim % 2 ||
            h->context_length == 0 || h->vocab_size == 0)
            __builtin_trap();
    } else if (err.code == LC_OK) {
        __builtin_trap();   /* a failure must say why */
    }
    char name[256], buf[64];
    const size_t n = size < sizeof name - 1 ? size : sizeof name - 1;
    memcpy(name, data, n);
    name[n] = '\0';
    for (const lc_arch *const *a = lc_arch_all(); *a; a++) {
        for (int from = LC_SPELL_GGUF; from <= LC_SPELL_META; from++) {
            const lc_arch_tensor *row;
            lc_error e2 = { 0 };
            lc_code r2 = lc_arch_map(*a, (lc_spelling)from, LC_SPELL_GGUF, name, 8, buf,
                                     sizeof buf, &row, &e2);
            /* a mapped name fits the buffer; a refusal says why */
            if ((r2 == LC_OK && !memchr(buf, '\0', sizeof buf)) ||
                (r2 != LC_OK && r2 != LC_E_NOTFOUND && e2.code == LC_OK))
                __builtin_trap();
        }
    }
    return 0;
}
