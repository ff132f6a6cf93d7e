/* quant/chain.c: a tensor's conversion to another dtype as a chain of lazy views (see
 * chain.h). */
#include "quant/chain.h"

#include "libconvert/convert.h"
#include "libconvert/view.h"
#include "quant/view.h"

/* A cast of *cur to `to`: on *cur itself when it is own (the caller's), else a new step
 * that reads *cur unchanged and casts it (nothing when *cur has `to` and no step is
 * needed). */
static lc_code cast_step(const lc_qchain *c, lc_qchain_step step, lc_tensor *own,
                         const lc_tensor **cur, lc_dtype to, lc_error *err) {
    if (own && *cur == own)
        return lc_tensor_cast(own, to, err);
    lc_tensor *t;
    LC_TRY(c->add(c->ctx, step, *cur, (*cur)->dtype, &t, err));
    LC_TRY(lc_view_forward(t, *cur, err));
    LC_TRY(lc_tensor_cast(t, to, err));
    *cur = t;
    return LC_OK;
}

static lc_code convert(const lc_qchain *c, lc_tensor *own, const lc_tensor **cur, lc_dtype to,
                       lc_error *err) {
    lc_tensor *t;
    const bool quant = lc_dtype_is_quant(to);
    if ((*cur)->dtype == to && !quant)
        return LC_OK;
    if (c->dev && lc_qdev_supports(c->dev, (*cur)->dtype, to)) {
        LC_TRY(c->add(c->ctx, LC_QCHAIN_OUT, *cur, to, &t, err));
        LC_TRY(lc_qdev_view(t, *cur, c->dev, err));
        *cur = t;
        return LC_OK;
    }
    if (lc_dtype_is_quant((*cur)->dtype)) {
        LC_TRY(c->add(c->ctx, LC_QCHAIN_F32, *cur, LC_DT_F32, &t, err));
        LC_TRY(lc_quant_view(t, *cur, (*cur)->dtype, false, err));
        *cur = t;
    } else if ((*cur)->dtype != LC_DT_F32 && (quant || (c->through_f32 && (*cur)->dtype != to))) {
        LC_TRY(cast_step(c, LC_QCHAIN_F32, own, cur, LC_DT_F32, err));
    }
    if (!quant)
        return (*cur)->dtype == to ? LC_OK : cast_step(c, LC_QCHAIN_OUT, own, cur, to, err);
    LC_TRY(c->add(c->ctx, LC_QCHAIN_OUT, *cur, to, &t, err));
    LC_TRY(c->quantize ? c->quantize(c->ctx, t, *cur, to, err)
                       : lc_quant_view(t, *cur, to, true, err));
    *cur = t;
    return LC_OK;
}

lc_code lc_qchain_to(const lc_qchain *c, const lc_tensor **cur, lc_dtype to, lc_error *err) {
    return convert(c, NULL, cur, to, err);
}

lc_code lc_qchain_from(const lc_qchain *c, lc_tensor *t, lc_dtype to, const lc_tensor **out,
                       lc_error *err) {
    *out = t;
    return convert(c, t, out, to, err);
}
