/* tests/fuzz/fuzz_mix.c: libFuzzer entry for the quantize mix planner (quant/mix.h)
 * over hostile hyperparameters and tensor names, for every file type llama.cpp
 * defines.
 *
 * Input: 8 bytes of model and options, then lines, one tensor each: byte 0 of a line
 * picks the number of dimensions and byte 1 the sizes (from a list of row lengths that
 * are and are not whole blocks), the rest is the name. Byte 1 of the header also adds
 * the family's usual tensors for the first 8 layers, so that the rules that count
 * tensors of a kind see real models; byte 7 gives a --tensor-type pattern (the last
 * line) to the planner.
 *
 * Checked, for every file type: lc_mix_new and lc_mix_pick fail only with the codes
 * mix.h names; a choice is a real type, "kept" keeps the input's type, and a block type
 * chosen without error holds the tensor's rows (whole blocks). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/model.h"
#include "quant/ftype.h"
#include "quant/mix.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_TENSORS 96

static const uint64_t SIZES[] = { 1, 2, 3, 31, 32, 33, 64, 96, 128, 255, 256, 257, 288, 512,
                                  4096, 11008, 1u << 20, UINT64_C(1) << 33 };
#define NSIZES (sizeof SIZES / sizeof *SIZES)

static const char *const USUAL[] = { "attn_q", "attn_k", "attn_v", "attn_output", "attn_qkv",
                                     "ffn_gate", "ffn_up", "ffn_down", "attn_norm",
                                     "ffn_norm" };

static int by_order(const void *a, const void *b) {
    return lc_mix_order((*(lc_tensor *const *)a)->name, (*(lc_tensor *const *)b)->name);
}

static void plan(const lc_mix_opts *o, const lc_mix_model *mm, lc_model *m) {
    const size_t n = lc_model_tensor_count(m);
    const char *names[MAX_TENSORS + 8 * 10 + 3];
    lc_tensor *ts[MAX_TENSORS + 8 * 10 + 3];
    for (size_t i = 0; i < n; i++) {
        ts[i] = lc_model_tensor(m, i);
        names[i] = ts[i]->name;
    }
    qsort(ts, n, sizeof *ts, by_order);
    lc_mix *mix = NULL;
    lc_error err = { 0 };
    lc_code rc = lc_mix_new(o, mm, names, n, &mix, &err);
    if (rc != LC_OK) {
        if ((rc != LC_E_ARG && rc != LC_E_UNSUPPORTED && rc != LC_E_OVERFLOW &&
             rc != LC_E_NOMEM) || mix)
            abort();
        return;
    }
    for (size_t i = 0; i < n; i++) {
        lc_mix_choice c;
        memset(&c, 0xa5, sizeof c);
        lc_error e = { 0 };
        rc = lc_mix_pick(mix, ts[i], &c, &e);
        if (rc == LC_E_ARG || rc == LC_E_UNSUPPORTED || rc == LC_E_MALFORMED)
            continue;
        if (rc != LC_OK || c.type <= LC_DT_INVALID || c.type >= LC_DT_COUNT ||
            c.wanted <= LC_DT_INVALID || c.wanted >= LC_DT_COUNT || c.why > LC_MIX_OPTION)
            abort();
        if (c.why == LC_MIX_KEPT && c.type != ts[i]->dtype)
            abort();
        const uint64_t ncols = ts[i]->ndim ? ts[i]->shape[ts[i]->ndim - 1] : 1;
        const uint32_t bs = lc_dtype_get(c.type)->block_size;
        if (c.type != ts[i]->dtype && bs > 1 && ncols % bs != 0)
            abort();              /* a block type that does not hold the rows */
    }
    lc_mix_free(mix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 8)
        return 0;
    const lc_arch *const *all = lc_arch_all();
    size_t n_arch = 0;
    while (all[n_arch])
        n_arch++;
    lc_mix_model mm = { .arch = all[data[0] % n_arch], .n_layer = data[2],
                        .n_head = data[3], .n_head_kv = data[4], .n_expert = data[5] % 3 };
    const uint8_t flags = data[1];
    lc_model *m = lc_model_new();
    if (!m)
        return 0;
    /* The tensors: lines of the input. */
    const uint8_t *p = data + 8, *end = data + size;
    char pattern[256] = "";
    while (p < end && lc_model_tensor_count(m) < MAX_TENSORS) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        const uint8_t *le = nl ? nl : end;
        if (!nl && (data[7] & 1)) {                  /* the last line is a pattern */
            const size_t k = (size_t)(le - p) < sizeof pattern - 1 ? (size_t)(le - p)
                                                                   : sizeof pattern - 1;
            memcpy(pattern, p, k);
            pattern[k] = '\0';
            break;
        }
        if (le - p >= 3) {
            char name[200];
            const size_t k = (size_t)(le - p - 2) < sizeof name - 1 ? (size_t)(le - p - 2)
                                                                   : sizeof name - 1;
            memcpy(name, p + 2, k);
            name[k] = '\0';
            const uint32_t nd = 1 + p[0] % 3;
            uint64_t shape[3] = { SIZES[p[1] % NSIZES], SIZES[(p[1] / 3) % NSIZES],
                                  SIZES[p[0] / 4 % NSIZES] };
            lc_tensor *t;
            lc_error e = { 0 };
            const lc_dtype dt = (p[0] & 0x80) ? LC_DT_F16 : LC_DT_F32;
            if (strlen(name) == k)                   /* no NUL inside */
                (void)lc_model_add_tensor(m, name, dt, nd, shape, &t, &e);
        }
        p = nl ? nl + 1 : end;
    }
    if (flags & 1) {                                  /* the usual tensors of 8 layers */
        static const char *const top[] = { "token_embd.weight", "output_norm.weight",
                                           "output.weight" };
        const uint64_t embd = SIZES[data[6] % NSIZES] > 65536 ? 256 : SIZES[data[6] % NSIZES];
        for (size_t i = 0; i < 3; i++) {
            uint64_t shape[2] = { 32000, embd };
            lc_tensor *t;
            (void)lc_model_add_tensor(m, top[i], LC_DT_F32, i == 1 ? 1 : 2,
                                      i == 1 ? shape + 1 : shape, &t, NULL);
        }
        for (uint32_t l = 0; l < 8 && l < mm.n_layer + 1u; l++)
            for (size_t r = 0; r < sizeof USUAL / sizeof *USUAL; r++) {
                char name[64];
                snprintf(name, sizeof name, "blk.%u.%s.weight", l, USUAL[r]);
                const bool norm = strstr(USUAL[r], "norm") != NULL;
                uint64_t shape[2] = { embd * (r == 7 ? 1 : 2), embd * (r == 7 ? 3 : 1) };
                lc_tensor *t;
                (void)lc_model_add_tensor(m, name, LC_DT_F16, norm ? 1 : 2,
                                          norm ? shape + 1 : shape, &t, NULL);
            }
    }
    lc_mix_pattern pat = { pattern, (lc_dtype)(1 + data[7] / 2 % (LC_DT_COUNT - 1)) };
    for (size_t i = 0; i < lc_ftype_count(); i++) {
        const lc_ftype *f = lc_ftype_at(i);
        lc_mix_opts o = { .ftype = f->id, .base = f->base, .pure = flags & 2,
                          .leave_output = flags & 4,
                          .output_type = (flags & 8) ? (lc_dtype)(1 + data[6] % (LC_DT_COUNT - 1))
                                                     : LC_DT_INVALID,
                          .token_embd_type = (flags & 16) ? LC_DT_Q8_0 : LC_DT_INVALID,
                          .patterns = &pat, .n_patterns = pattern[0] ? 1 : 0 };
        (void)lc_mix_ftype_writable(f->id, f->base);
        plan(&o, &mm, m);
    }
    lc_model_free(m);
    return 0;
}
