/* tests/tools/lc-quant-raw.c: test-only driver for the oracle tests.
 *   lc-quant-raw quantize TYPE IN OUT [N_PER_ROW [IMATRIX]]
 *                                         IN: raw little-endian f32, OUT: blocks; as rows
 *                                         of N_PER_ROW (default: one row), each weighted by
 *                                         IMATRIX (N_PER_ROW raw f32) when given
 *   lc-quant-raw dequantize TYPE IN OUT   IN: blocks, OUT: raw f32
 *   lc-quant-raw types                    one line per block type: NAME GGUF_ID
 *                                         BLOCK_SIZE TYPE_SIZE Q D (Q, D: 1 when it can
 *                                         be quantized, dequantized)
 * TYPE is a ggml type name (Q8_0, q4_k, iq2_xxs, ...). Uses lc_quantize_rows_imatrix,
 * i.e. the kernel lc_qkernels_best() picks (LC_QUANT=ref forces the reference).
 * Exit 0 ok, 1 failure, 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/dtype.h"
#include "libconvert/error.h"
#include "libconvert/map.h"
#include "quant/quant.h"

static int write_all(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

static int list_types(void) {
    for (int t = 1; t < LC_DT_COUNT; t++) {
        const lc_dtype_info *info = lc_dtype_get((lc_dtype)t);
        if (lc_dtype_is_quant((lc_dtype)t))
            printf("%s %d %u %u %d %d\n", info->name, info->gguf_id, (unsigned)info->block_size,
                   (unsigned)info->type_size, lc_quant_writable((lc_dtype)t),
                   lc_dequant_supported((lc_dtype)t));
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "types") == 0)
        return list_types();
    const bool quant = argc > 1 && strcmp(argv[1], "quantize") == 0;
    if ((argc != 5 && !(quant && (argc == 6 || argc == 7))) ||
        (!quant && strcmp(argv[1], "dequantize"))) {
        fprintf(stderr, "usage: lc-quant-raw quantize|dequantize TYPE IN OUT "
                        "[N_PER_ROW [IMATRIX]] | types\n");
        return 2;
    }
    const lc_dtype t = lc_dtype_from_name(argv[2]);
    if (quant ? !lc_quant_writable(t) : !lc_dequant_supported(t)) {
        fprintf(stderr, "lc-quant-raw: unsupported type %s\n", argv[2]);
        return 2;
    }
    const lc_dtype_info *info = lc_dtype_get(t);
    lc_error err = {0};
    lc_map *in = NULL, *im = NULL;
    void *out = NULL;
    int rc = 1;
    if (lc_map_open(argv[3], &in, &err) != LC_OK)
        goto done;
    size_t ncols, out_bytes;
    if (quant) {
        ncols = in->size / sizeof(float);
        out_bytes = ncols / info->block_size * info->type_size;
        if (in->size % sizeof(float) != 0)
            ncols = 1;                          /* let lc_quantize_rows reject it */
    } else {
        if (in->size % info->type_size != 0) {
            fprintf(stderr, "lc-quant-raw: %s is not a whole number of blocks\n", argv[3]);
            goto done;
        }
        ncols = in->size / info->type_size * info->block_size;
        out_bytes = ncols * sizeof(float);
    }
    if (!(out = lc_malloc(out_bytes ? out_bytes : 1))) {
        lc_fail(&err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    const float *xf = (const float *)(const void *)in->data;   /* mmap: page-aligned */
    size_t nrows = 1, per_row = ncols;
    const float *imatrix = NULL;
    if (argc >= 6) {
        per_row = (size_t)strtoull(argv[5], NULL, 10);
        if (per_row == 0 || ncols % per_row != 0) {
            fprintf(stderr, "lc-quant-raw: %zu values are not rows of %s\n", ncols, argv[5]);
            goto done;
        }
        nrows = ncols / per_row;
    }
    if (argc == 7) {
        if (lc_map_open(argv[6], &im, &err) != LC_OK)
            goto done;
        if (im->size != per_row * sizeof(float)) {
            fprintf(stderr, "lc-quant-raw: %s is not %zu floats\n", argv[6], per_row);
            goto done;
        }
        imatrix = (const float *)(const void *)im->data;
    }
    lc_code c = quant ? lc_quantize_rows_imatrix(t, xf, out, nrows, per_row, imatrix, &err)
                      : lc_dequantize_rows(t, in->data, out, 1, ncols, &err);
    if (c == LC_OK)
        rc = write_all(argv[4], out, out_bytes);
done:
    if (err.code != LC_OK) {
        char line[700];
        lc_err_format(&err, line, sizeof line);
        fprintf(stderr, "lc-quant-raw: %s\n", line);
    }
    lc_free(out);
    lc_map_close(in);
    lc_map_close(im);
    return rc;
}
