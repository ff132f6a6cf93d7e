/* formats/hf_tensors.c: the HF -> GGUF tensor-name table and the lazy Q/K permutation
 * (see hf_tensors.h for the map and the row formula). */
#include "formats/hf_tensors.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/alloc.h"

static const struct {
    const char *hf, *gguf;
    lc_hf_role role;
} LAYER[] = {
    { "input_layernorm.weight", "attn_norm.weight", LC_HF_ROLE_PLAIN },
    { "self_attn.q_proj.weight", "attn_q.weight", LC_HF_ROLE_Q },
    { "self_attn.q_proj.bias", "attn_q.bias", LC_HF_ROLE_Q },
    { "self_attn.k_proj.weight", "attn_k.weight", LC_HF_ROLE_K },
    { "self_attn.k_proj.bias", "attn_k.bias", LC_HF_ROLE_K },
    { "self_attn.v_proj.weight", "attn_v.weight", LC_HF_ROLE_PLAIN },
    { "self_attn.v_proj.bias", "attn_v.bias", LC_HF_ROLE_PLAIN },
    { "self_attn.o_proj.weight", "attn_output.weight", LC_HF_ROLE_PLAIN },
    { "post_attention_layernorm.weight", "ffn_norm.weight", LC_HF_ROLE_PLAIN },
    { "mlp.gate_proj.weight", "ffn_gate.weight", LC_HF_ROLE_PLAIN },
    { "mlp.up_proj.weight", "ffn_up.weight", LC_HF_ROLE_PLAIN },
    { "mlp.down_proj.weight", "ffn_down.weight", LC_HF_ROLE_PLAIN },
    { "self_attn.rotary_emb.inv_freq", NULL, LC_HF_ROLE_DROP },
}, TOP[] = {
    { "model.embed_tokens.weight", "token_embd.weight", LC_HF_ROLE_PLAIN },
    { "model.norm.weight", "output_norm.weight", LC_HF_ROLE_PLAIN },
    { "lm_head.weight", "output.weight", LC_HF_ROLE_PLAIN },
};

static lc_code put(char *buf, size_t cap, const char *s, lc_error *err) {
    if (strlen(s) >= cap)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "name buffer of %zu bytes is too small", cap);
    memcpy(buf, s, strlen(s) + 1);
    return LC_OK;
}

lc_code lc_hf_tensors_name(const char *hf, uint32_t n_layers, char *buf, size_t cap,
                          lc_hf_role *role, lc_error *err) {
    for (size_t i = 0; i < sizeof TOP / sizeof *TOP; i++) {
        if (strcmp(hf, TOP[i].hf) == 0) {
            *role = TOP[i].role;
            return put(buf, cap, TOP[i].gguf, err);
        }
    }
    static const char prefix[] = "model.layers.";
    if (strncmp(hf, prefix, sizeof prefix - 1) == 0) {
        const char *p = hf + sizeof prefix - 1;
        uint64_t n = 0;
        size_t digits = 0;
        /* Plain decimal, no sign, no leading zeros, at most 9 digits (no overflow). */
        for (; *p >= '0' && *p <= '9' && digits < 10; p++, digits++)
            n = n * 10 + (uint64_t)(*p - '0');
        const char *first = hf + sizeof prefix - 1;
        bool ok = digits >= 1 && digits <= 9 && *p == '.' && !(digits > 1 && *first == '0');
        for (size_t i = 0; ok && i < sizeof LAYER / sizeof *LAYER; i++) {
            if (strcmp(p + 1, LAYER[i].hf) != 0)
                continue;
            if (n_layers && n >= n_layers)
                return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                               "tensor %.80s is in layer %" PRIu64 " of a %u-layer model", hf, n,
                               n_layers);
            *role = LAYER[i].role;
            if (!LAYER[i].gguf)
                return LC_OK;
            char name[128];
            snprintf(name, sizeof name, "blk.%" PRIu64 ".%s", n, LAYER[i].gguf);
            return put(buf, cap, name, err);
        }
    }
    return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                   "tensor %.100s has no GGUF name for this architecture", hf);
}

uint64_t lc_hf_tensors_permute_row(uint64_t row, uint64_t rows, uint32_t heads, bool inverse) {
    const uint64_t per = rows / heads, half = per / 2;
    const uint64_t h = row / per, r = row % per;
    if (!inverse)    /* GGUF row h*per + 2i + j  <-  HF row h*per + j*half + i */
        return h * per + (r % 2) * half + r / 2;
    return h * per + (r % half) * 2 + r / half;   /* HF row h*per + j*half + i <- 2i + j */
}

/* ---- lazy sources ---- */

typedef struct view {
    const lc_tensor *src;
    uint64_t rows, row_bytes;
    uint32_t heads;       /* 0: forward unchanged */
    bool inverse;
} view;

static lc_code view_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                         lc_error *err) {
    const view *v = ctx;
    (void)t;
    if (v->heads == 0)
        return lc_tensor_read(v->src, off, dst, len, err);
    uint8_t *out = dst;
    while (len) {
        /* One contiguous piece of one output row per step. */
        const uint64_t row = off / v->row_bytes, in = off % v->row_bytes;
        const uint64_t take = v->row_bytes - in < len ? v->row_bytes - in : len;
        const uint64_t from = lc_hf_tensors_permute_row(row, v->rows, v->heads, v->inverse);
        LC_TRY(lc_tensor_read(v->src, from * v->row_bytes + in, out, (size_t)take, err));
        out += take;
        off += take;
        len -= (size_t)take;
    }
    return LC_OK;
}

static void view_free(void *ctx) { lc_free(ctx); }

/* A forwarded (unpermuted) tensor is wherever its source is. */
static bool view_file_range(void *ctx, const lc_tensor *t, int *fd, uint64_t *off) {
    const view *v = ctx;
    (void)t;
    return v->heads == 0 && lc_tensor_file_range(v->src, fd, off);
}

static const lc_source_ops VIEW_OPS = { view_read, view_free, view_file_range };

static lc_code attach(lc_tensor *dst, const lc_tensor *src, uint32_t heads, bool inverse,
                      lc_error *err) {
    if (dst->dtype != src->dtype || dst->ndim != src->ndim || dst->nbytes != src->nbytes ||
        memcmp(dst->shape, src->shape, sizeof dst->shape[0] * src->ndim) != 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.80s: view and source differ in "
                       "dtype or shape", dst->name);
    view *v = lc_calloc(1, sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    v->src = src;
    v->heads = heads;
    v->inverse = inverse;
    v->rows = src->ndim ? src->shape[0] : 1;
    v->row_bytes = v->rows ? src->nbytes / v->rows : 0;
    dst->data = NULL;
    dst->ops = &VIEW_OPS;
    dst->ctx = v;
    return LC_OK;
}

lc_code lc_hf_tensors_permute(lc_tensor *dst, const lc_tensor *src, uint32_t heads, bool inverse,
                             lc_error *err) {
    if (src->ndim < 1 || heads == 0 || src->shape[0] % ((uint64_t)heads * 2) != 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                       "tensor %.80s: %" PRIu64 " rows do not split into %u heads of pairs",
                       src->name, src->ndim ? src->shape[0] : 0, heads);
    return attach(dst, src, heads, inverse, err);
}

lc_code lc_hf_tensors_forward(lc_tensor *dst, const lc_tensor *src, lc_error *err) {
    return attach(dst, src, 0, false, err);
}
