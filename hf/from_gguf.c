/* hf/from_gguf.c: the way back, a GGUF model -> Hugging Face tensors (see hf.h).
 *
 * Names come from the family's table (arch/) read right to left; rows RoPE rotates
 * get the inverse permutation when the family runs NORM RoPE (transformers stores
 * half-split rows); tensors with no transformers name (rope_freqs.weight) are
 * dropped; block types are dequantized. */
#include "hf/hf.h"

#include <stdio.h>

#include "arch/arch.h"
#include "libconvert/convert.h"
#include "libconvert/view.h"
#include "quant/quant.h"
#include "quant/view.h"

/* One output tensor: s (through a pread view when it is an unchanged file range) ->
 * inverse permutation (heads > 0) -> dequantized -> cast to dtype. */
static lc_code back_tensor(lc_model *out, lc_model *work, const lc_tensor *s, const char *hf,
                           uint32_t heads, lc_dtype dtype, lc_error *err) {
    const bool quant = lc_dtype_is_quant(s->dtype);
    lc_tensor *t;
    /* A tensor of a mapped file is read with pread (and copied in the kernel when
     * nothing changes it), so the map's pages never count in our RSS. No map view
     * otherwise: `in` may live in plain memory (lc_gguf_load_mem), which
     * MADV_DONTNEED would zero. */
    const lc_tensor *from = s;
    int fd;
    uint64_t at;
    if (s->data && lc_tensor_file_range(s, &fd, &at)) {
        lc_tensor *v;
        LC_TRY(lc_model_add_tensor(work, s->name, s->dtype, s->ndim, s->shape, &v, err));
        LC_TRY(lc_view_file(v, fd, at, NULL, err));
        from = v;
    }
    if (quant && !lc_dequant_supported(s->dtype))
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "tensor %.80s: no dequantizer "
                       "for %s", s->name, lc_dtype_name(s->dtype));
    /* Blocks are permuted in work under the HF name (the file view there has the GGUF
     * name; the two spellings never coincide), then dequantized into out. */
    LC_TRY(lc_model_add_tensor(quant ? work : out, hf, s->dtype, s->ndim, s->shape, &t, err));
    if (heads)
        LC_TRY(lc_view_heads(t, from, heads, true, err));
    else
        LC_TRY(lc_view_forward(t, from, err));
    if (quant) {
        const lc_tensor *w = t;
        LC_TRY(lc_model_add_tensor(out, hf, LC_DT_F32, s->ndim, s->shape, &t, err));
        LC_TRY(lc_quant_view(t, w, s->dtype, false, err));
    }
    const lc_dtype to = dtype != LC_DT_INVALID ? dtype : t->dtype;
    return lc_tensor_cast(t, to, err);
}

lc_code lc_hf_from_gguf(lc_model *in, lc_dtype dtype, lc_model **out, lc_error *err) {
    lc_model *m = NULL, *work = NULL;
    const lc_arch *a;
    lc_hparams hp;
    lc_code rc;
    *out = NULL;
    if ((rc = lc_arch_read_keys(in, &a, &hp, err)) != LC_OK)
        goto fail_in;
    if (!(m = lc_model_new()) || !(work = lc_model_new())) {
        lc_model_free(m);
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto fail_in;
    }
    if ((rc = lc_model_own(m, in, (void (*)(void *))lc_model_free, err)) != LC_OK) {
        lc_model_free(work);
        goto fail;
    }
    if ((rc = lc_model_own(m, work, (void (*)(void *))lc_model_free, err)) != LC_OK)
        goto fail;
    for (size_t i = 0; i < lc_model_tensor_count(in) && rc == LC_OK; i++) {
        const lc_tensor *s = lc_model_tensor(in, i);
        const lc_arch_tensor *row;
        char hf[160];
        rc = lc_arch_map(a, LC_SPELL_GGUF, LC_SPELL_HF, s->name, 0, hf, sizeof hf, &row, err);
        if (rc == LC_E_NOTFOUND) {      /* no transformers name: dropped */
            rc = LC_OK;
            continue;
        }
        if (rc != LC_OK)
            break;
        const uint32_t heads = a->rope == LC_ROPE_NORM ? lc_arch_rope_heads(row, &hp) : 0;
        rc = back_tensor(m, work, s, hf, heads, dtype, err);
        if (rc != LC_OK)
            lc_err_context(err, NULL, s->name);
    }
    if (rc != LC_OK)
        goto fail;
    *out = m;
    return LC_OK;
fail_in:
    lc_model_free(in);
    return rc;
fail:
    lc_model_free(m);
    return rc;
}
