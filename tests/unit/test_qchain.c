/* tests/unit/test_qchain.c: quant/chain.h, the one per-tensor conversion: which steps it
 * makes for each pair of types, and that the bytes are the kernels' own (quantizing the
 * widened rows, dequantizing, casting in place). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/convert.h"
#include "libconvert/model.h"
#include "quant/chain.h"
#include "quant/quant.h"

#define ROWS 4
#define COLS 64

/* The steps go into one model, named "#n"; each step's kind is recorded. */
typedef struct rec {
    lc_model      *m;
    int            n;
    lc_qchain_step kind[8];
} rec;

static int made;    /* across calls: names stay unique in a model */

static lc_code add(void *ctx, lc_qchain_step step, const lc_tensor *like, lc_dtype dt,
                   lc_tensor **t, lc_error *err) {
    rec *r = ctx;
    char name[16];
    snprintf(name, sizeof name, "#%d", made++);
    r->kind[r->n++] = step;
    return lc_model_add_tensor(r->m, name, dt, like->ndim, like->shape, t, err);
}

static float x[ROWS * COLS];

static void fill(void) {
    for (int i = 0; i < ROWS * COLS; i++)
        x[i] = sinf((float)i * 0.37f) * (1.0f + (float)(i % 7));
}

static const lc_tensor *source(lc_model *m, const char *name, lc_dtype dt, const void *data) {
    const uint64_t shape[2] = { ROWS, COLS };
    lc_tensor *t;
    cr_assert_eq(lc_model_add_tensor(m, name, dt, 2, shape, &t, NULL), LC_OK);
    t->data = data;
    return t;
}

static void read_all(const lc_tensor *t, void *buf) {
    lc_error err = { 0 };
    cr_assert_eq(lc_tensor_read(t, 0, buf, (size_t)t->nbytes, &err), LC_OK, "%s", err.msg);
}

Test(qchain, f32_to_a_block_type_is_one_quantizing_step) {
    fill();
    rec r = { .m = lc_model_new() };
    const lc_qchain c = { .add = add, .ctx = &r };
    const lc_tensor *cur = source(r.m, "src", LC_DT_F32, x);
    cr_assert_eq(lc_qchain_to(&c, &cur, LC_DT_Q8_0, NULL), LC_OK);
    cr_assert_eq(r.n, 1);
    cr_assert_eq(r.kind[0], LC_QCHAIN_OUT);
    cr_assert_eq(cur->dtype, LC_DT_Q8_0);
    uint8_t got[ROWS * COLS / 32 * 34], want[sizeof got];
    cr_assert_eq(cur->nbytes, sizeof got);
    read_all(cur, got);
    cr_assert_eq(lc_quantize_rows(LC_DT_Q8_0, x, want, ROWS, COLS, NULL), LC_OK);
    cr_assert_arr_eq(got, want, sizeof got);
    lc_model_free(r.m);
}

Test(qchain, bf16_is_widened_before_the_quantizer) {
    fill();
    uint16_t bf[ROWS * COLS];
    float wide[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++) {
        bf[i] = lc_f32_to_bf16(x[i]);
        wide[i] = lc_bf16_to_f32(bf[i]);
    }
    rec r = { .m = lc_model_new() };
    const lc_qchain c = { .add = add, .ctx = &r };
    const lc_tensor *cur = source(r.m, "src", LC_DT_BF16, bf);
    cr_assert_eq(lc_qchain_to(&c, &cur, LC_DT_Q4_0, NULL), LC_OK);
    cr_assert_eq(r.n, 2);
    cr_assert_eq(r.kind[0], LC_QCHAIN_F32);
    cr_assert_eq(r.kind[1], LC_QCHAIN_OUT);
    uint8_t got[ROWS * COLS / 32 * 18], want[sizeof got];
    read_all(cur, got);
    cr_assert_eq(lc_quantize_rows(LC_DT_Q4_0, wide, want, ROWS, COLS, NULL), LC_OK);
    cr_assert_arr_eq(got, want, sizeof got);
    lc_model_free(r.m);
}

Test(qchain, a_block_type_is_dequantized_then_cast) {
    fill();
    uint8_t q[ROWS * COLS / 32 * 34];
    float deq[ROWS * COLS];
    cr_assert_eq(lc_quantize_rows(LC_DT_Q8_0, x, q, ROWS, COLS, NULL), LC_OK);
    cr_assert_eq(lc_dequantize_rows(LC_DT_Q8_0, q, deq, ROWS, COLS, NULL), LC_OK);
    rec r = { .m = lc_model_new() };
    const lc_qchain c = { .add = add, .ctx = &r };
    const lc_tensor *cur = source(r.m, "src", LC_DT_Q8_0, q);
    cr_assert_eq(lc_qchain_to(&c, &cur, LC_DT_F32, NULL), LC_OK);
    cr_assert_eq(r.n, 1, "to F32: the dequantizer alone");
    float got[ROWS * COLS];
    read_all(cur, got);
    cr_assert_arr_eq(got, deq, sizeof got);

    cur = source(r.m, "again", LC_DT_Q8_0, q);
    r.n = 0;
    cr_assert_eq(lc_qchain_to(&c, &cur, LC_DT_BF16, NULL), LC_OK);
    cr_assert_eq(r.n, 2, "dequantized, then cast");
    uint16_t bf[ROWS * COLS];
    read_all(cur, bf);
    for (int i = 0; i < ROWS * COLS; i++)
        cr_assert_eq(bf[i], lc_f32_to_bf16(deq[i]), "value %d", i);
    lc_model_free(r.m);
}

Test(qchain, plain_types_cast_in_place_or_not_at_all) {
    fill();
    rec r = { .m = lc_model_new() };
    const lc_qchain c = { .add = add, .ctx = &r };
    const uint64_t shape[2] = { ROWS, COLS };
    lc_tensor *t;
    cr_assert_eq(lc_model_add_tensor(r.m, "mine", LC_DT_F32, 2, shape, &t, NULL), LC_OK);
    t->data = (const uint8_t *)x;
    const lc_tensor *out;
    cr_assert_eq(lc_qchain_from(&c, t, LC_DT_BF16, &out, NULL), LC_OK);
    cr_assert_eq(r.n, 0, "the caller's tensor is cast itself");
    cr_assert_eq(out, t);
    cr_assert_eq(t->dtype, LC_DT_BF16);
    uint16_t bf[ROWS * COLS];
    read_all(t, bf);
    for (int i = 0; i < ROWS * COLS; i++)
        cr_assert_eq(bf[i], lc_f32_to_bf16(x[i]));

    const lc_tensor *cur = t;
    cr_assert_eq(lc_qchain_to(&c, &cur, LC_DT_BF16, NULL), LC_OK);
    cr_assert_eq(r.n, 0, "already BF16: nothing");
    cr_assert_eq(cur, t);

    const lc_qchain via = { .add = add, .ctx = &r, .through_f32 = true };
    cr_assert_eq(lc_qchain_to(&via, &cur, LC_DT_F16, NULL), LC_OK);
    cr_assert_eq(r.n, 2, "through F32: widened, then cast");
    cr_assert_eq(r.kind[0], LC_QCHAIN_F32);
    cr_assert_eq(cur->dtype, LC_DT_F16);
    lc_model_free(r.m);
}
