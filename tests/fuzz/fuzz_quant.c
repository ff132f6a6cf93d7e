/* tests/fuzz/fuzz_quant.c: every reference kernel on arbitrary bytes, read both as
 * floats (NaN, infinities, subnormals, any payload) and as blocks (any scale bits, grid
 * index and sign pattern; the dequantize-only types get the second half only).
 * Kernels cannot fail, so this hunts undefined behaviour (clang's UBSan includes
 * float-cast-overflow, which ggml's plain casts would trip) and out-of-bounds
 * access on odd lengths. Seeds: fixtures/quant/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/dtype.h"
#include "quant/quant.h"

/* Every type of quant/types.h, in its order (the first input byte picks one): those we
 * quantize, then those we only dequantize. */
static const lc_dtype types[] = { LC_QUANT_TYPES(LC_QUANT_DTYPE)
                                  LC_DEQUANT_TYPES(LC_QUANT_DTYPE) };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    const lc_dtype t = types[data[0] % (sizeof types / sizeof types[0])];
    data++, size--;
    const lc_dtype_info *info = lc_dtype_get(t);
    const size_t n = size / sizeof(float);               /* may leave a partial block */
    const size_t nb = n / info->block_size;
    float *x = malloc(n * sizeof *x + 1), *y = malloc(n * sizeof *y + 1);
    uint8_t *q = malloc(nb * info->type_size + 1);
    if (!x || !y || !q)
        goto done;
    memcpy(x, data, n * sizeof *x);
    if (lc_quant_supported(t)) {
        lc_qk_quantize(lc_qkernels_best(), t)(x, q, n);
        lc_qk_dequantize(lc_qkernels_best(), t)(q, y, n);
    }

    /* The same bytes as blocks: exact-size copy so ASan sees any overread. */
    const size_t nb2 = size / info->type_size;
    uint8_t *blocks = malloc(nb2 * info->type_size + 1);
    float *z = malloc(nb2 * info->block_size * sizeof *z + 1);
    if (blocks && z) {
        memcpy(blocks, data, nb2 * info->type_size);
        lc_qk_dequantize(lc_qkernels_best(), t)(blocks, z, nb2 * info->block_size);
    }
    free(blocks);
    free(z);
done:
    free(x);
    free(y);
    free(q);
    return 0;
}
