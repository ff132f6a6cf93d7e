/* quant/ref_impl.h: private to quant/'s references: the searches more than one reference
 * file runs. */
#ifndef LC_QUANT_REF_IMPL_H
#define LC_QUANT_REF_IMPL_H

#include <stdint.h>

/* ggml's make_qp_quants (quant/ref_w.c): non-negative x ~= scale * L, L in 0..nmax,
 * weighted by qw; returns the scale. L is written as bytes (a negative level wraps). */
float lc_q_fit_scales_w(int n, int nmax, const float *x, uint8_t *L, const float *qw);

#endif
