/* quant/chain.h: the one per-tensor type conversion of libconvert, as lazy views: a
 * tensor of any dtype into another. HF -> GGUF (hf/to_gguf_tensors.c), GGUF -> HF
 * (hf/from_gguf.c), gguf-quantize (jobs/gguf_quantize_plan.c) and model-verify's
 * reproduction (jobs/model_verify_repro.c) build each tensor's conversion here, after
 * their own layout steps (RoPE rows, stacks, value heads), so all four convert a tensor
 * the same way and with the same bytes.
 *
 * The steps, each a view reading the one before:
 *   quantized source -> dequantized to F32 (ggml's dequantizers)
 *   to a block type  -> widened to F32 (when not F32), then quantized (quant/'s
 *                       reference-identical kernels, or the caller's weighted quantizer)
 *   otherwise        -> cast (libconvert/convert.h's rounding; through F32 first when the
 *                       caller asks: model-verify compares float32 values)
 * or, where the caller gives a device that converts the pair (quant/device.h), one view
 * that runs all of it there, with the same bytes. llama-quantize converts through F32
 * the same way (llama_tensor_dequantize_impl, then ggml_quantize_chunk), and
 * convert_hf_to_gguf.py casts to float32 before gguf-py quantizes.
 *
 * The caller says where each step's tensor lives (its model, its name: errors name the
 * tensor, so a person sees the name they know). */
#ifndef LC_QUANT_CHAIN_H
#define LC_QUANT_CHAIN_H

#include <stdbool.h>

#include "libconvert/error.h"
#include "libconvert/tensor.h"
#include "quant/device.h"

typedef enum lc_qchain_step {
    LC_QCHAIN_F32 = 0,      /* dequantized or widened to F32 (an intermediate) */
    LC_QCHAIN_OUT,          /* the converted tensor: the last step */
} lc_qchain_step;

typedef struct lc_qchain {
    /* Adds the tensor of one step: dtype dt, like's shape. */
    lc_code (*add)(void *ctx, lc_qchain_step step, const lc_tensor *like, lc_dtype dt,
                   lc_tensor **t, lc_error *err);
    /* Makes t read cur quantized to `to`, weighted by an importance matrix; NULL:
     * lc_quant_view's unweighted quantizer. */
    lc_code (*quantize)(void *ctx, lc_tensor *t, const lc_tensor *cur, lc_dtype to,
                        lc_error *err);
    void    *ctx;
    lc_qdev *dev;           /* where to convert when it supports the pair; NULL: the CPU */
    bool     through_f32;   /* a plain cast widens to F32 first */
} lc_qchain;

/* *cur converted to `to`: *cur ends at the last step added (unchanged when it has plain
 * dtype `to` already; a block type is dequantized and quantized again). Codes: add's and quantize's, LC_E_UNSUPPORTED
 * for a pair nothing converts (a block type without a kernel), the views' LC_E_ARG for
 * rows that are not whole blocks. */
lc_code lc_qchain_to(const lc_qchain *c, const lc_tensor **cur, lc_dtype to, lc_error *err);

/* The same from t, a tensor the caller made for this conversion (reading its source
 * unchanged, or through the caller's own layout step): a cast (to F32 before a
 * quantizer, or to `to`) is applied to t itself instead of a new step, so t may
 * already be where the caller wants the result. *out: the last tensor (t when no
 * other step was needed). */
lc_code lc_qchain_from(const lc_qchain *c, lc_tensor *t, lc_dtype to, const lc_tensor **out,
                       lc_error *err);

#endif
