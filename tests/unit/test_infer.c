/* Unit tests for infer/: each block of the forward pass against values computed by hand,
 * the matmul tile against a double-precision sum, and lc_infer_open/forward on tiny
 * models built in memory (a forward pass small enough to compute by hand, and the
 * errors). transformers' logits for whole models are tests/integration/test_infer.py's. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "infer/blocks.h"
#include "infer/infer.h"
#include "infer/matmul.h"
#include "infer/matmul_impl.h"
#include "libconvert/alloc.h"
#include "libconvert/model.h"
#include "quant/quant.h"

#define near(a, b, tol, ...) cr_assert(fabs((double)(a) - (double)(b)) <= (tol), __VA_ARGS__)

/* ---- blocks ---- */

Test(infer_blocks, rmsnorm_by_hand) {
    const float x[4] = { 1, 2, 3, 4 }, w[4] = { 1, 1, 2, 0.5f };
    float out[4];
    /* mean(x^2) = 30 / 4 = 7.5; 1 / sqrt(7.5) = 0.36514837 */
    lc_infer_rmsnorm(out, x, w, 4, 0.0f);
    const float want[4] = { 0.36514837f, 0.73029674f, 2.19089023f, 0.73029674f };
    for (int i = 0; i < 4; i++)
        near(out[i], want[i], 1e-6, "rmsnorm[%d] = %.8f", i, out[i]);
    /* eps = 1: 1 / sqrt(8.5) = 0.34299717 */
    lc_infer_rmsnorm(out, x, w, 4, 1.0f);
    near(out[0], 0.34299717f, 1e-6, "eps is added under the root");
    /* in place */
    float y[4] = { 1, 2, 3, 4 };
    lc_infer_rmsnorm(y, y, w, 4, 0.0f);
    near(y[2], want[2], 1e-6, "out may be x");
    /* no weight (gemma4's value norm): x / rms alone */
    lc_infer_rmsnorm(out, x, NULL, 4, 0.0f);
    const float bare[4] = { 0.36514837f, 0.73029674f, 1.09544512f, 1.46059349f };
    for (int i = 0; i < 4; i++)
        near(out[i], bare[i], 1e-6, "rmsnorm without weight[%d] = %.8f", i, out[i]);
}

Test(infer_blocks, softmax_by_hand) {
    float x[3] = { 1, 2, 3 };
    lc_infer_softmax(x, 3);
    near(x[0], 0.09003057, 1e-7, "p0");
    near(x[1], 0.24472847, 1e-7, "p1");
    near(x[2], 0.66524096, 1e-7, "p2");
    /* large logits do not overflow: the max is subtracted first */
    float big[2] = { 1000, 1000 };
    lc_infer_softmax(big, 2);
    near(big[0], 0.5, 1e-7, "max subtracted");
}

Test(infer_blocks, swiglu_by_hand) {
    const float gate[3] = { 0, 1, -2 }, up[3] = { 3, 2, 1 };
    float out[3];
    lc_infer_swiglu(out, gate, up, 3);
    near(out[0], 0.0, 1e-7, "silu(0) = 0");
    near(out[1], 2 * 0.73105858, 1e-6, "silu(1) * 2 = 2 / (1 + e^-1)");
    near(out[2], -2 / (1 + exp(2.0)), 1e-6, "silu(-2) * 1");
}

/* ---- the Gated-DeltaNet recurrent layer's blocks ---- */

Test(infer_blocks, causal_conv_by_hand) {
    /* 2 channels, kernel 2 (w[1] on the position itself, w[0] on the one before) */
    float x[3 * 2] = { 1, 10, 2, 20, 3, 30 };
    const float w[2 * 2] = { 0.5f, 1, -1, 2 };
    lc_infer_conv_silu(x, 3, 2, w, 2);
    /* channel 0: 1, 2 + 0.5, 3 + 1; channel 1: 20, 40 - 10, 60 - 20 */
    const float pre[6] = { 1, 20, 2.5f, 30, 4, 40 };
    for (int i = 0; i < 6; i++)
        near(x[i], pre[i] / (1 + exp(-(double)pre[i])), 1e-5, "conv+silu[%d] = %.7f", i, x[i]);
}

Test(infer_blocks, l2norm_and_softplus) {
    float x[2] = { 3, 4 };
    lc_infer_l2norm(x, 2, 0.0f);
    near(x[0], 0.6, 1e-7, "3/5");
    near(x[1], 0.8, 1e-7, "4/5");
    near(lc_infer_softplus(0), log(2.0), 1e-7, "softplus(0) = ln 2");
    near(lc_infer_softplus(25), 25, 0, "past torch's threshold: x itself");
}

Test(infer_blocks, delta_rule_by_hand) {
    /* dk = dv = 2; k = e0: the state learns e0 -> v */
    float S[4] = { 0 }, out[2], scratch[2];
    const float q[2] = { 1, 0 }, k[2] = { 1, 0 }, v[2] = { 2, 4 };
    lc_infer_delta_step(S, q, k, v, 0.5f, 0.5f, 2, 2, out, scratch);
    /* S = 0 + k (0.5 (v - 0))^T = [[1, 2], [0, 0]]; out = S^T q = (1, 2) */
    near(out[0], 1, 1e-7, "first step o0");
    near(out[1], 2, 1e-7, "first step o1");
    lc_infer_delta_step(S, q, k, v, 0.5f, 0.5f, 2, 2, out, scratch);
    /* S *= 0.5 -> [[0.5, 1]]; S^T k = (0.5, 1); delta = 0.5 ((2, 4) - (0.5, 1)) =
     * (0.75, 1.5); S = [[1.25, 2.5]]; out = (1.25, 2.5) */
    near(out[0], 1.25, 1e-6, "second step o0");
    near(out[1], 2.5, 1e-6, "second step o1");
    near(S[2], 0, 0, "rows of other keys untouched");
}

Test(infer_blocks, gated_rmsnorm_by_hand) {
    const float x[2] = { 3, 4 }, w[2] = { 1, 2 }, z[2] = { 0, 1 };
    float out[2];
    lc_infer_gated_rmsnorm(out, x, w, z, 2, 0.0f);
    /* rms = sqrt(12.5); silu(0) = 0, silu(1) = 0.7310586 */
    near(out[0], 0, 1e-7, "silu(0) gates off");
    near(out[1], 2 * 4 / sqrt(12.5) * 0.7310585786, 1e-6, "norm * w * silu(z)");
}

static lc_hparams rope_hp(uint32_t head_dim, double theta) {
    return (lc_hparams){ .head_dim = head_dim, .rope_theta = theta, .context_length = 256 };
}

Test(infer_blocks, rope_norm_rotates_adjacent_pairs) {
    const lc_hparams hp = rope_hp(4, 10000);
    float inv[2];
    lc_infer_rope r = { .style = LC_ROPE_NORM, .inv_freq = inv };
    lc_infer_rope_init(&r, &hp, NULL);
    near(inv[0], 1.0, 0, "theta_0 = 1");
    near(inv[1], 0.01, 1e-9, "theta_1 = 10000^(-2/4)");
    float x[4] = { 1, 0, 0, 1 };
    lc_infer_rope_apply(&r, x, 1, 1);
    /* pair (0,1) turns by 1 rad, pair (2,3) by 0.01 rad */
    near(x[0], cos(1.0), 1e-6, "x0");
    near(x[1], sin(1.0), 1e-6, "x1");
    near(x[2], -sin(0.01), 1e-6, "x2");
    near(x[3], cos(0.01), 1e-6, "x3");
    float y[4] = { 1, 2, 3, 4 };
    lc_infer_rope_apply(&r, y, 1, 0);
    cr_assert(y[0] == 1 && y[1] == 2 && y[2] == 3 && y[3] == 4, "position 0 is the identity");
}

Test(infer_blocks, rope_neox_rotates_halves) {
    const lc_hparams hp = rope_hp(4, 10000);
    float inv[2];
    lc_infer_rope r = { .style = LC_ROPE_NEOX, .inv_freq = inv };
    lc_infer_rope_init(&r, &hp, NULL);
    float x[4] = { 1, 0, 0, 1 };
    lc_infer_rope_apply(&r, x, 1, 1);
    /* pair (0,2) turns by 1 rad, pair (1,3) by 0.01 rad */
    near(x[0], cos(1.0), 1e-6, "x0");
    near(x[2], sin(1.0), 1e-6, "x2");
    near(x[1], -sin(0.01), 1e-6, "x1");
    near(x[3], cos(0.01), 1e-6, "x3");
}

/* NORM on rows interleaved the way llama.cpp's converter permutes them equals NEOX on
 * transformers' half-split rows: the reason the spelling decides the style. */
Test(infer_blocks, rope_styles_agree_through_the_permutation) {
    enum { HD = 8, HEADS = 2 };
    const lc_hparams hp = rope_hp(HD, 500000);
    float inv[HD / 2];
    lc_infer_rope neox = { .style = LC_ROPE_NEOX, .inv_freq = inv };
    lc_infer_rope_init(&neox, &hp, NULL);
    lc_infer_rope norm = neox;
    norm.style = LC_ROPE_NORM;
    float half[HEADS * HD], inter[HEADS * HD];
    for (int i = 0; i < HEADS * HD; i++)
        half[i] = (float)(i * 7 % 11) - 5;
    for (int h = 0; h < HEADS; h++)           /* interleave: (i, i + HD/2) -> (2i, 2i+1) */
        for (int i = 0; i < HD / 2; i++) {
            inter[h * HD + 2 * i] = half[h * HD + i];
            inter[h * HD + 2 * i + 1] = half[h * HD + i + HD / 2];
        }
    lc_infer_rope_apply(&neox, half, HEADS, 5);
    lc_infer_rope_apply(&norm, inter, HEADS, 5);
    for (int h = 0; h < HEADS; h++)
        for (int i = 0; i < HD / 2; i++) {
            cr_assert_eq(inter[h * HD + 2 * i], half[h * HD + i]);
            cr_assert_eq(inter[h * HD + 2 * i + 1], half[h * HD + i + HD / 2]);
        }
}

Test(infer_blocks, rope_scaling) {
    float inv[4];
    lc_infer_rope r = { .style = LC_ROPE_NEOX, .inv_freq = inv };
    lc_hparams hp = rope_hp(8, 10000);
    hp.rope_scaling = LC_ROPE_SCALING_LINEAR;
    hp.rope_scaling_factor = 2;
    lc_infer_rope_init(&r, &hp, NULL);
    near(inv[0], 0.5, 0, "linear: theta / factor");
    near(inv[1], 0.1 / 2, 1e-8, "linear: theta_1 = 10000^(-1/4) / 2");
    near(r.mscale, 1.0, 0, "linear leaves cos and sin alone");

    /* yarn, factor 4, original context 128, head_dim 8, base 10000: the correction dims
     * are 8 ln(128 / (32 * 2pi)) / (2 ln 10000) = -0.20 -> 0 and
     * 8 ln(128 / 2pi) / (2 ln 10000) = 1.31 -> 2: pair 0 kept, pair 1 halfway, pairs 2
     * and 3 divided by 4; cos and sin times 0.1 ln 4 + 1. */
    hp.rope_scaling = LC_ROPE_SCALING_YARN;
    hp.rope_scaling_factor = 4;
    hp.rope_scaling_orig_ctx = 128;
    lc_infer_rope_init(&r, &hp, NULL);
    near(r.mscale, 0.1 * log(4.0) + 1, 1e-6, "yarn mscale");
    near(inv[0], 1.0, 1e-7, "yarn: fast pair extrapolated");
    near(inv[1], 0.1 * (0.5 + 0.5 / 4), 1e-7, "yarn: ramp halfway");
    near(inv[2], 0.01 / 4, 1e-9, "yarn: slow pairs interpolated");
    near(inv[3], 0.001 / 4, 1e-10, "yarn: slow pairs interpolated");

    /* llama3: per-pair factors divide theta (llama.cpp's rope_freqs) */
    hp = rope_hp(8, 10000);
    const float factors[4] = { 1, 2, 4, 8 };
    lc_infer_rope_init(&r, &hp, factors);
    near(inv[0], 1.0, 0, "factor 1");
    near(inv[3], 0.001 / 8, 1e-10, "factor 8");
}

Test(infer_blocks, causal_grouped_attention_by_hand) {
    /* 2 query heads share 1 kv head, head_dim 2, 3 positions; position 2 holds values
     * that must never reach a query at position 1. */
    const float k[3 * 2] = { 1, 0, 0, 1, 100, 100 };
    const float v[3 * 2] = { 1, 2, 3, 4, 1000, 1000 };
    const float q[2 * 2] = { 1, 0, 0, 1 };              /* [heads, head_dim] */
    float out[4], scores[3];
    lc_infer_attention(out, q, k, v, 0, 2, 1, 2, scores);
    near(out[0], 1, 1e-7, "t=0 sees only v0");
    near(out[1], 2, 1e-7, "t=0 sees only v0");
    near(out[2], 1, 1e-7, "t=0 sees only v0, head 1");
    lc_infer_attention(out, q, k, v, 1, 2, 1, 2, scores);
    /* head 0: scores (1/sqrt 2, 0) -> p = (0.66976155, 0.33023845) */
    near(out[0], 0.66976155 * 1 + 0.33023845 * 3, 1e-6, "head 0, dim 0");
    near(out[1], 0.66976155 * 2 + 0.33023845 * 4, 1e-6, "head 0, dim 1");
    /* head 1: scores (0, 1/sqrt 2) -> p = (0.33023845, 0.66976155) */
    near(out[2], 0.33023845 * 1 + 0.66976155 * 3, 1e-6, "head 1, dim 0");
    near(out[3], 0.33023845 * 2 + 0.66976155 * 4, 1e-6, "head 1, dim 1");
}

Test(infer_blocks, whole_sequence_attention_equals_per_query) {
    /* lc_infer_attend against lc_infer_attention_ex position by position: 4 query heads
     * on 2 kv heads, 70 positions (two full blocks of 32 and a part), head_dim 12 (not a
     * multiple of 8: the tile's tail), with and without a sliding window of 37, on 1 and
     * 3 threads (the same bits). */
    enum { N = 70, H = 4, KV = 2, HD = 12 };
    static float q[N * H * HD], k[N * KV * HD], v[N * KV * HD];
    static float want[N * H * HD], got[N * H * HD], got3[N * H * HD];
    float scores[N];
    for (int i = 0; i < N * H * HD; i++)
        q[i] = (float)((i * 29 % 23) - 11) / 8;
    for (int i = 0; i < N * KV * HD; i++) {
        k[i] = (float)((i * 13 % 17) - 8) / 8;
        v[i] = (float)((i * 7 % 19) - 9) / 4;
    }
    const size_t windows[2] = { 0, 37 };
    for (int wi = 0; wi < 2; wi++) {
        const float scale = 0.3f;
        for (size_t t = 0; t < N; t++)
            lc_infer_attention_ex(want + t * H * HD, q + t * H * HD, k, v, t, H, KV, HD, scale,
                                  windows[wi], scores);
        lc_error err = { 0 };
        cr_assert_eq(lc_infer_attend(got, q, k, v, N, H, KV, HD, scale, windows[wi], 1, &err),
                     LC_OK);
        cr_assert_eq(lc_infer_attend(got3, q, k, v, N, H, KV, HD, scale, windows[wi], 3, &err),
                     LC_OK);
        for (int i = 0; i < N * H * HD; i++) {
            near(got[i], want[i], 1e-5, "window %zu: att[%d] = %f, want %f", windows[wi], i,
                 got[i], want[i]);
            cr_assert_eq(memcmp(&got[i], &got3[i], sizeof(float)), 0, "att[%d]: 1 vs 3 threads", i);
        }
    }
}

/* ---- the matmul ---- */

static void check_tile(lc_infer_tile_fn tile, const char *name) {
    enum { NR = 7, N = 3, COLS = 37 };
    float w[NR * COLS], x[N * COLS], y[N * NR];
    for (int i = 0; i < NR * COLS; i++)
        w[i] = (float)((i * 37 % 19) - 9) / 8;
    for (int i = 0; i < N * COLS; i++)
        x[i] = (float)((i * 11 % 13) - 6) / 4;
    tile(w, NR, x, N, COLS, y, NR);
    for (int t = 0; t < N; t++)
        for (int r = 0; r < NR; r++) {
            double s = 0;
            for (int k = 0; k < COLS; k++)
                s += (double)w[r * COLS + k] * x[t * COLS + k];
            near(y[t * NR + r], s, 1e-5, "%s y[%d][%d] = %f, want %f", name, t, r, y[t * NR + r], s);
        }
}

Test(infer_matmul, tiles_sum_like_double) {
    check_tile(lc_infer_tile_ref, "ref");
#if LC_INFER_X86
    if (lc_infer_avx2_usable())
        check_tile(lc_infer_tile_avx2, "avx2");
#endif
}

Test(infer_matmul, same_bits_for_any_thread_count_and_dtype_rows) {
    enum { ROWS = 53, COLS = 64, N = 5 };
    static uint16_t w16[ROWS * COLS];
    static float x[N * COLS], bias[ROWS], y1[N * ROWS], y3[N * ROWS];
    for (int i = 0; i < ROWS * COLS; i++)
        w16[i] = (uint16_t)((0x3000 + i * 97 % 2048) | (i % 3 ? 0 : 0x8000));   /* f16 bits */
    for (int i = 0; i < N * COLS; i++)
        x[i] = (float)((i * 5 % 17) - 8) / 16;
    for (int i = 0; i < ROWS; i++)
        bias[i] = (float)i;
    lc_model *m = lc_model_new();
    lc_tensor *t;
    lc_error err = { 0 };
    const uint64_t shape[2] = { ROWS, COLS };
    cr_assert_eq(lc_model_add_tensor(m, "w", LC_DT_F16, 2, shape, &t, &err), LC_OK);
    t->data = (const uint8_t *)w16;
    lc_infer_mat w;
    cr_assert_eq(lc_infer_mat_init(&w, t, &err), LC_OK);
    lc_infer_mm one, three;
    cr_assert_eq(lc_infer_mm_build(&one, 1, COLS, w.row_bytes, &err), LC_OK);
    cr_assert_eq(lc_infer_mm_build(&three, 3, COLS, w.row_bytes, &err), LC_OK);
    cr_assert_eq(lc_infer_matmul(&one, &w, bias, x, N, y1, &err), LC_OK);
    cr_assert_eq(lc_infer_matmul(&three, &w, bias, x, N, y3, &err), LC_OK);
    cr_assert_eq(memcmp(y1, y3, sizeof y1), 0, "1 and 3 threads give the same bits");
    /* row 50, token 2 against the bits widened by hand */
    float row[COLS];
    uint8_t raw[2 * COLS];
    cr_assert_eq(lc_infer_mat_rows(&w, 50, 1, row, raw, &err), LC_OK);
    double s = bias[50];
    for (int k = 0; k < COLS; k++)
        s += (double)row[k] * x[2 * COLS + k];
    near(y1[2 * ROWS + 50], s, 1e-4 * fabs(s) + 1e-5, "y = x w^T + b");
    lc_infer_mm_free(&one);
    lc_infer_mm_free(&three);
    lc_model_free(m);
}

/* Weights of a type quant/ can only dequantize (IQ4_NL here) are read like any other:
 * their rows are the reference dequantizer's floats. */
Test(infer_matmul, dequantize_only_weights_are_read) {
    enum { ROWS = 2, COLS = 64, BLK = 18 };
    static uint8_t q[ROWS * COLS / 32 * BLK];
    for (size_t i = 0; i < sizeof q; i++)
        q[i] = (uint8_t)(i * 37 + 5);
    for (size_t b = 0; b < sizeof q / BLK; b++)
        q[b * BLK] = 0x00, q[b * BLK + 1] = 0x3c;             /* d = 1.0 */
    lc_model *m = lc_model_new();
    lc_tensor *t;
    lc_error err = { 0 };
    const uint64_t shape[2] = { ROWS, COLS };
    cr_assert_eq(lc_model_add_tensor(m, "w", LC_DT_IQ4_NL, 2, shape, &t, &err), LC_OK);
    t->data = q;
    lc_infer_mat w;
    cr_assert_eq(lc_infer_mat_init(&w, t, &err), LC_OK, "%s", err.msg);
    float row[COLS], want[COLS];
    uint8_t raw[COLS / 32 * BLK];
    cr_assert_eq(lc_infer_mat_rows(&w, 1, 1, row, raw, &err), LC_OK);
    lc_iq4_nl_dequantize_ref(q + COLS / 32 * BLK, want, COLS);
    cr_assert_eq(memcmp(row, want, sizeof row), 0);
    cr_assert_eq(row[0], -65.0f, "byte 38 = 0x83: level 3 of kvalues_iq4nl, times d = 1");
    lc_model_free(m);
}

/* ---- a whole forward pass by hand ---- */

/* One llama layer whose projections are all zero, so the residual stream stays the
 * embedding and logits = (rmsnorm(embd[tok]) * out_norm) . embd^T (tied head). */
typedef struct tiny {
    lc_model *m;
    lc_hparams hp;
} tiny;

static const float EMBD[3 * 2] = { 3, 4, 1, 0, 0, -2 };         /* [vocab 3, embd 2] */
static const float ONES[2] = { 1, 1 }, OUT_NORM[2] = { 2, 1 };
static const float ZEROS[8 * 8] = { 0 };

static void add(tiny *t, const char *name, lc_dtype dt, uint32_t nd, uint64_t a, uint64_t b,
                const void *data) {
    const uint64_t shape[2] = { a, b };
    lc_tensor *x;
    lc_error err = { 0 };
    cr_assert_eq(lc_model_add_tensor(t->m, name, dt, nd, shape, &x, &err), LC_OK, "%s", name);
    x->data = data;
}

static tiny make_tiny(const char *skip) {
    tiny t = { lc_model_new(),
               { .block_count = 1, .embedding_length = 2, .feed_forward_length = 4,
                 .head_count = 1, .head_count_kv = 1, .head_dim = 2, .vocab_size = 3,
                 .rms_eps = 0, .rope_theta = 10000, .context_length = 16 } };
    const struct { const char *name; uint32_t nd; uint64_t a, b; const void *d; } ts[] = {
        { "token_embd.weight", 2, 3, 2, EMBD },
        { "output_norm.weight", 1, 2, 0, OUT_NORM },
        { "blk.0.attn_norm.weight", 1, 2, 0, ONES },
        { "blk.0.ffn_norm.weight", 1, 2, 0, ONES },
        { "blk.0.attn_q.weight", 2, 2, 2, ZEROS },
        { "blk.0.attn_k.weight", 2, 2, 2, ZEROS },
        { "blk.0.attn_v.weight", 2, 2, 2, ZEROS },
        { "blk.0.attn_output.weight", 2, 2, 2, ZEROS },
        { "blk.0.ffn_gate.weight", 2, 4, 2, ZEROS },
        { "blk.0.ffn_up.weight", 2, 4, 2, ZEROS },
        { "blk.0.ffn_down.weight", 2, 2, 4, ZEROS },
    };
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
        if (!skip || strcmp(skip, ts[i].name) != 0)
            add(&t, ts[i].name, LC_DT_F32, ts[i].nd, ts[i].a, ts[i].b, ts[i].d);
    return t;
}

Test(infer_forward, tied_head_by_hand) {
    tiny t = make_tiny(NULL);
    lc_infer *ctx;
    lc_error err = { 0 };
    lc_infer_opts o = { .threads = 2 };
    cr_assert_eq(lc_infer_open(t.m, lc_arch_by_name("llama"), &t.hp, LC_SPELL_GGUF, &o, &ctx,
                               &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_infer_vocab(ctx), 3);
    const int32_t tokens[2] = { 0, 2 };
    float logits[2 * 3];
    cr_assert_eq(lc_infer_forward(ctx, tokens, 2, logits, NULL, &err), LC_OK, "%s", err.msg);
    /* token 0: (3,4) / sqrt(12.5) * (2,1) = (1.6970563, 1.1313708);
     * logits = that . rows (3,4), (1,0), (0,-2) */
    near(logits[0], 3 * 1.6970563 + 4 * 1.1313708, 1e-5, "t0 v0");
    near(logits[1], 1.6970563, 1e-5, "t0 v1");
    near(logits[2], -2 * 1.1313708, 1e-5, "t0 v2");
    /* token 2: (0,-2) / sqrt(2) * (2,1) = (0, -1.4142136) */
    near(logits[3], 4 * -1.4142136, 1e-5, "t1 v0");
    near(logits[4], 0, 1e-6, "t1 v1");
    near(logits[5], 2 * 1.4142136, 1e-5, "t1 v2");
    const int32_t bad[1] = { 3 };
    cr_assert_eq(lc_infer_forward(ctx, bad, 1, logits, NULL, &err), LC_E_ARG,
                 "a token past the vocabulary");
    lc_infer_close(ctx);
    lc_model_free(t.m);
}

/* The head a few positions at a time gives forward's bits (model-verify's chunks). */
Test(infer_forward, head_in_chunks_is_forward) {
    tiny t = make_tiny(NULL);
    lc_infer *ctx;
    lc_error err = { 0 };
    cr_assert_eq(lc_infer_open(t.m, lc_arch_by_name("llama"), &t.hp, LC_SPELL_GGUF, NULL, &ctx,
                               &err), LC_OK);
    const int32_t tokens[5] = { 0, 2, 1, 1, 0 };
    float whole[5 * 3], parts[5 * 3], hidden[5 * 2];
    cr_assert_eq(lc_infer_forward(ctx, tokens, 5, whole, NULL, &err), LC_OK);
    cr_assert_eq(lc_infer_hidden(ctx, tokens, 5, hidden, NULL, &err), LC_OK);
    cr_assert_eq(lc_infer_head(ctx, hidden, 2, parts, &err), LC_OK);
    cr_assert_eq(lc_infer_head(ctx, hidden + 2 * 2, 1, parts + 2 * 3, &err), LC_OK);
    cr_assert_eq(lc_infer_head(ctx, hidden + 3 * 2, 2, parts + 3 * 3, &err), LC_OK);
    cr_assert_eq(memcmp(whole, parts, sizeof whole), 0);
    lc_infer_close(ctx);
    lc_model_free(t.m);
}

/* A narrow matrix (many short rows) is cut into jobs of more than LC_INFER_ROWS rows:
 * the same bits as row by row. */
Test(infer_matmul, narrow_rows_take_longer_jobs) {
    enum { ROWS = 5000, COLS = 2, N = 3 };
    static float w[ROWS * COLS], x[N * COLS], y[N * ROWS];
    for (int i = 0; i < ROWS * COLS; i++)
        w[i] = (float)((i * 7919) % 1000 - 500) / 256;
    for (int i = 0; i < N * COLS; i++)
        x[i] = (float)(i + 1) / 3;
    lc_model *m = lc_model_new();
    lc_tensor *t;
    lc_error err = { 0 };
    const uint64_t shape[2] = { ROWS, COLS };
    cr_assert_eq(lc_model_add_tensor(m, "w", LC_DT_F32, 2, shape, &t, &err), LC_OK);
    t->data = (const uint8_t *)w;
    lc_infer_mat mat;
    cr_assert_eq(lc_infer_mat_init(&mat, t, &err), LC_OK);
    lc_infer_mm mm;
    cr_assert_eq(lc_infer_mm_build(&mm, 2, COLS, mat.row_bytes, &err), LC_OK);
    cr_assert_eq(lc_infer_matmul(&mm, &mat, NULL, x, N, y, &err), LC_OK);
    for (int r = 0; r < ROWS; r++)
        for (int k = 0; k < N; k++) {
            float want[1];
            lc_infer_tile()(w + r * COLS, 1, x + k * COLS, 1, COLS, want, 1);
            cr_assert_eq(y[k * ROWS + r], want[0], "row %d token %d", r, k);
        }
    lc_infer_mm_free(&mm);
    lc_model_free(m);
}

static lc_code count_layers(void *user, uint32_t layer, const float *h, size_t n, size_t embd,
                            lc_error *err) {
    (void)h;
    (void)err;
    cr_assert_eq(n, 1);
    cr_assert_eq(embd, 2);
    *(uint32_t *)user += layer + 1;
    return LC_OK;
}

Test(infer_forward, hook_sees_every_layer) {
    tiny t = make_tiny(NULL);
    lc_infer *ctx;
    lc_error err = { 0 };
    cr_assert_eq(lc_infer_open(t.m, lc_arch_by_name("llama"), &t.hp, LC_SPELL_GGUF, NULL, &ctx,
                               &err), LC_OK);
    uint32_t seen = 0;
    const lc_infer_hook hook = { count_layers, &seen };
    const int32_t tok[1] = { 1 };
    float logits[3];
    cr_assert_eq(lc_infer_forward(ctx, tok, 1, logits, &hook, &err), LC_OK);
    cr_assert_eq(seen, 1, "layer 0 reported once");
    lc_infer_close(ctx);
    lc_model_free(t.m);
}

/* The tap (model-imatrix) sees every weight product's input, named by role and layer. */
typedef struct taps {
    int n;
    lc_role role[16];
    float x0[16];           /* the first input value of each */
    int stop_at;            /* a call to fail with LC_E_IO; -1: none */
} taps;

static lc_code record_tap(void *user, lc_role role, uint32_t layer, uint32_t expert,
                          const float *x, size_t n, size_t cols, lc_error *err) {
    taps *t = user;
    cr_assert_eq(n, 1);
    cr_assert(cols == 2 || cols == 4, "cols %zu", cols);
    cr_assert_eq(expert, UINT32_MAX, "a dense model");
    cr_assert_eq(layer, role == LC_ROLE_OUTPUT ? UINT32_MAX : 0u);
    cr_assert_lt(t->n, 16);
    t->role[t->n] = role;
    t->x0[t->n] = x[0];
    if (t->n++ == t->stop_at)
        return lc_fail(err, LC_E_IO, LC_NO_OFFSET, "stopped by the tap");
    return LC_OK;
}

Test(infer_forward, tap_sees_every_product) {
    tiny t = make_tiny(NULL);
    lc_infer *ctx;
    lc_error err = { 0 };
    cr_assert_eq(lc_infer_open(t.m, lc_arch_by_name("llama"), &t.hp, LC_SPELL_GGUF, NULL, &ctx,
                               &err), LC_OK);
    taps seen = { .stop_at = -1 };
    lc_infer_set_tap(ctx, record_tap, &seen);
    const int32_t tok[1] = { 0 };
    float logits[3];
    cr_assert_eq(lc_infer_forward(ctx, tok, 1, logits, NULL, &err), LC_OK, "%s", err.msg);
    const lc_role want[] = { LC_ROLE_ATTN_Q, LC_ROLE_ATTN_K, LC_ROLE_ATTN_V, LC_ROLE_ATTN_OUT,
                             LC_ROLE_FFN_GATE, LC_ROLE_FFN_UP, LC_ROLE_FFN_DOWN };
    cr_assert_eq(seen.n, 7, "the tied head is token_embd: not reported");
    for (int i = 0; i < 7; i++)
        cr_assert_eq(seen.role[i], want[i], "product %d", i);
    /* q, k, v and gate, up read rmsnorm((3, 4)) = (3, 4) / sqrt(12.5); the projections are
     * zero, so attention's output and down's input (silu(0) * 0) are 0 */
    near(seen.x0[0], 0.84852814, 1e-6, "q's input");
    near(seen.x0[4], 0.84852814, 1e-6, "gate's input");
    near(seen.x0[3], 0, 0, "attn_output's input");
    near(seen.x0[6], 0, 0, "down's input");
    seen = (taps){ .stop_at = 2 };
    cr_assert_eq(lc_infer_forward(ctx, tok, 1, logits, NULL, &err), LC_E_IO);
    cr_assert_eq(seen.n, 3, "the pass stops at the tap's error");
    lc_infer_set_tap(ctx, NULL, NULL);
    seen.n = 0;
    cr_assert_eq(lc_infer_forward(ctx, tok, 1, logits, NULL, &(lc_error){ 0 }), LC_OK);
    cr_assert_eq(seen.n, 0, "no tap, no calls");
    lc_infer_close(ctx);
    /* an output matrix of its own: its input is the final norm's output, reported once */
    add(&t, "output.weight", LC_DT_F32, 2, 3, 2, EMBD);
    cr_assert_eq(lc_infer_open(t.m, lc_arch_by_name("llama"), &t.hp, LC_SPELL_GGUF, NULL, &ctx,
                               &err), LC_OK, "%s", err.msg);
    seen = (taps){ .stop_at = -1 };
    lc_infer_set_tap(ctx, record_tap, &seen);
    cr_assert_eq(lc_infer_forward(ctx, tok, 1, logits, NULL, &err), LC_OK);
    cr_assert_eq(seen.n, 8);
    cr_assert_eq(seen.role[7], LC_ROLE_OUTPUT);
    near(seen.x0[7], 1.6970563, 1e-6, "rmsnorm((3, 4)) * 2");
    lc_infer_close(ctx);
    lc_model_free(t.m);
}

Test(infer_forward, refuses_what_it_cannot_run) {
    lc_infer *ctx = (lc_infer *)1;
    lc_error err = { 0 };
    const lc_arch *llama = lc_arch_by_name("llama");

    tiny t = make_tiny("blk.0.ffn_down.weight");
    cr_assert_eq(lc_infer_open(t.m, llama, &t.hp, LC_SPELL_GGUF, NULL, &ctx, &err),
                 LC_E_MISMATCH, "a missing tensor");
    cr_assert_null(ctx);
    cr_assert(strstr(err.msg, "ffn_down"), "%s", err.msg);
    lc_model_free(t.m);

    t = make_tiny("blk.0.ffn_down.weight");
    add(&t, "blk.0.ffn_down.weight", LC_DT_F32, 2, 4, 2, ZEROS);    /* transposed */
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_infer_open(t.m, llama, &t.hp, LC_SPELL_GGUF, NULL, &ctx, &err),
                 LC_E_MISMATCH, "a transposed tensor");
    cr_assert_str_eq(err.where, "blk.0.ffn_down.weight");
    lc_model_free(t.m);

    t = make_tiny("blk.0.ffn_up.weight");
    add(&t, "blk.0.ffn_up.weight", LC_DT_I32, 2, 4, 2, ZEROS);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_infer_open(t.m, llama, &t.hp, LC_SPELL_GGUF, NULL, &ctx, &err),
                 LC_E_UNSUPPORTED, "an integer weight");
    cr_assert_str_eq(err.where, "blk.0.ffn_up.weight");
    lc_model_free(t.m);

    t = make_tiny(NULL);
    add(&t, "blk.1.ffn_up.weight", LC_DT_F32, 2, 4, 2, ZEROS);      /* past block_count */
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_infer_open(t.m, llama, &t.hp, LC_SPELL_GGUF, NULL, &ctx, &err),
                 LC_E_MALFORMED, "a layer past block_count");
    lc_model_free(t.m);

    t = make_tiny(NULL);                  /* found by fuzz_infer: 600 GB of layers asked */
    t.hp.block_count = UINT32_MAX;
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_infer_open(t.m, llama, &t.hp, LC_SPELL_GGUF, NULL, &ctx, &err),
                 LC_E_MALFORMED, "more layers than tensors");
    cr_assert(strstr(err.msg, "block_count 4294967295"), "%s", err.msg);
    lc_model_free(t.m);

    t = make_tiny(NULL);
    t.hp.head_count_kv = 0;
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_infer_open(t.m, llama, &t.hp, LC_SPELL_GGUF, NULL, &ctx, &err),
                 LC_E_MALFORMED, "impossible hyperparameters");
    lc_model_free(t.m);

    t = make_tiny(NULL);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_infer_open(t.m, llama, &t.hp, LC_SPELL_HF, NULL, &ctx, &err),
                 LC_E_MISMATCH, "GGUF names are not transformers' names");
    lc_model_free(t.m);
}

/* Every allocation of open and forward failing in turn: LC_E_NOMEM, nothing leaked
 * (the ASan build's leak checker watches), nothing half-made handed out. */
Test(infer_forward, out_of_memory_at_every_allocation) {
    const lc_arch *llama = lc_arch_by_name("llama");
    const int32_t tokens[2] = { 0, 2 };
    float logits[2 * 3];
    bool opened = false, ran = false;
    for (long nth = 1; nth < 200 && !ran; nth++) {
        tiny t = make_tiny(NULL);
        lc_infer *ctx = NULL;
        lc_error err = { 0 };
        lc_alloc_fail_after(nth);
        lc_code rc = lc_infer_open(t.m, llama, &t.hp, LC_SPELL_GGUF, NULL, &ctx, &err);
        if (rc == LC_OK) {
            opened = true;
            rc = lc_infer_forward(ctx, tokens, 2, logits, NULL, &err);
            ran = rc == LC_OK;
        } else {
            cr_assert_null(ctx);
        }
        lc_alloc_fail_after(0);
        cr_assert(rc == LC_OK || rc == LC_E_NOMEM, "allocation %ld: %s", nth, lc_code_name(rc));
        lc_infer_close(ctx);
        lc_model_free(t.m);
    }
    cr_assert(opened && ran, "the loop reached a run with no failure");
}
