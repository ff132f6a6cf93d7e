/* jobs/model_verify_rows.c: a tensor's rows as float32, in any order, for the
 * statistics (model_verify_tensors.c) and the diagnosis (model_verify_diagnose.c). Plain
 * types through libconvert/convert.h, block types through quant/'s dequantizers; a
 * read covers whole blocks (column ranges start at a multiple of 256 elements). */
#include "jobs/model_verify_impl.h"

#include <inttypes.h>
#include <string.h>

#include "libconvert/convert.h"
#include "libconvert/view.h"
#include "quant/quant.h"

void lc_vf_matrix(const lc_tensor *t, bool permuted, uint64_t *rows, uint64_t *cols) {
    if (t->ndim == 0) {
        *rows = *cols = 1;
    } else if (t->ndim == 1) {
        *rows = permuted ? t->shape[0] : 1;
        *cols = permuted ? 1 : t->shape[0];
    } else {
        uint64_t r = 1;
        for (uint32_t d = 0; d + 1 < t->ndim; d++)
            r *= t->shape[d];           /* nbytes was computed with checked products */
        *rows = r;
        *cols = t->shape[t->ndim - 1];
    }
}

static lc_code to_f32(lc_dtype dt, const uint8_t *raw, float *dst, size_t nr, size_t nc,
                      lc_error *err) {
    if (lc_dtype_is_quant(dt))
        return lc_dequantize_rows(dt, raw, dst, nr, nc, err);
    if (dt == LC_DT_F32) {
        memcpy(dst, raw, nr * nc * sizeof(float));
        return LC_OK;
    }
    return lc_convert(dt, raw, LC_DT_F32, dst, nr * nc, err);
}

lc_code lc_vf_read_rows(const lc_tensor *t, uint64_t rows, uint64_t cols, uint64_t r0,
                        size_t nr, uint64_t c0, size_t nc, uint32_t heads, bool inverse,
                        float *dst, uint8_t *raw, lc_error *err) {
    uint64_t row_bytes, cb0, cbn;
    if (!lc_dtype_row_bytes(t->dtype, cols, &row_bytes) ||
        !lc_dtype_row_bytes(t->dtype, c0, &cb0) || !lc_dtype_row_bytes(t->dtype, nc, &cbn))
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "tensor %.80s: rows of %" PRIu64
                       " do not fit %s blocks", t->name, cols, lc_dtype_name(t->dtype));
    if (!heads && nc == cols) {
        LC_TRY(lc_tensor_read(t, r0 * row_bytes, raw, nr * (size_t)row_bytes, err));
        return to_f32(t->dtype, raw, dst, nr, nc, err);
    }
    for (size_t i = 0; i < nr; i++) {
        const uint64_t r = heads ? lc_view_head_row(r0 + i, rows, heads, inverse) : r0 + i;
        LC_TRY(lc_tensor_read(t, r * row_bytes + cb0, raw, (size_t)cbn, err));
        LC_TRY(to_f32(t->dtype, raw, dst + i * nc, 1, nc, err));
    }
    return LC_OK;
}
