/* tests/fuzz/fuzz_spm.c: libFuzzer entry for the SentencePiece protobuf reader.
 * Seeds: fixtures/spm (a real tokenizer.model) and fixtures/bad/spm. */
#include <stddef.h>
#include <stdint.h>

#include "hf/spm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lc_hf_spm *m = NULL;
    lc_error err = { 0 };
    if (lc_hf_spm_parse(data, size, 0, &m, &err) == LC_OK) {
        /* Touch every piece so ASan sees any text pointer outside the input. */
        volatile uint8_t sink = 0;
        for (uint64_t i = 0; i < m->n_pieces; i++)
            for (uint32_t k = 0; k < m->pieces[i].len; k++)
                sink ^= (uint8_t)m->pieces[i].text[k];
        (void)sink;
    } else if (m != NULL || err.code == LC_OK) {
        __builtin_trap();   /* a failure must leave *out NULL and say why */
    }
    lc_hf_spm_free(m);
    return 0;
}
