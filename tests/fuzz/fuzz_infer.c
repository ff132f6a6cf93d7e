/* tests/fuzz/fuzz_infer.c: libFuzzer entry for lc_infer_open (and a short forward pass)
 * on hostile hyperparameters, over the real tiny models of fixtures/hf-ref (read from
 * the repository root): llama-spm and qwen2 in f32, and llama-spm in q8_0.
 *
 * Input: byte 0 picks the model, the family it is opened as and the spelling; then
 * either (byte 1 bit 0 clear) each field of the model's own hyperparameters replaced
 * or nudged by the bytes that follow (u32 fields: kept, +-1..4, 0, a power of two,
 * UINT32_MAX; doubles: raw bits, so NaN, infinities, denormals and negatives), or (set)
 * the family's keys written as metadata of the bytes' types and values and read back by
 * lc_arch_read_keys. Then up to 4 token ids.
 *
 * Checked: lc_infer_open fails only with the codes infer.h names; when it opens, the
 * forward pass of the tokens either runs or refuses an id outside the vocabulary
 * (LC_E_ARG), and its logits fill [n, vocab]. Sanitizers catch the rest: an
 * allocation sized from a product of hostile fields, a head dimension of 0, a KV
 * grouping that does not divide. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "formats/gguf.h"
#include "infer/infer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { N_MODELS = 3 };
static lc_model *g_model[N_MODELS];
static const lc_arch *g_arch[N_MODELS];
static lc_hparams g_hp[N_MODELS];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    static const char *const paths[N_MODELS] = { "fixtures/hf-ref/llama-spm-f32.gguf",
                                                 "fixtures/hf-ref/qwen2-f32.gguf",
                                                 "fixtures/hf-ref/llama-spm-q8_0.gguf" };
    for (int i = 0; i < N_MODELS; i++) {
        lc_error err = { 0 };
        if (lc_gguf_load(paths[i], &g_model[i], &err) != LC_OK ||
            lc_arch_read_keys(g_model[i], &g_arch[i], &g_hp[i], &err) != LC_OK)
            abort();   /* run from the repository root */
    }
    return 0;
}

typedef struct cursor {
    const uint8_t *p, *end;
} cursor;

static uint8_t next(cursor *c) { return c->p < c->end ? *c->p++ : 0; }

static uint32_t hostile_u32(cursor *c, uint32_t v) {
    const uint8_t b = next(c);
    switch (b & 7) {
    case 0: case 1: return v;
    case 2: return v + 1 + (b >> 3) % 4;
    case 3: return v - 1 - (b >> 3) % 4;
    case 4: return 0;
    case 5: return 1u << (b >> 3);
    case 6: return UINT32_MAX - (b >> 3);
    default: return (uint32_t)next(c) | (uint32_t)next(c) << 8;
    }
}

static double hostile_f64(cursor *c, double v) {
    const uint8_t b = next(c);
    if ((b & 3) != 3)
        return v;
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++)
        bits |= (uint64_t)next(c) << (8 * i);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static void mutate(cursor *c, lc_hparams *hp) {
    hp->context_length = hostile_u32(c, hp->context_length);
    hp->embedding_length = hostile_u32(c, hp->embedding_length);
    hp->block_count = hostile_u32(c, hp->block_count);
    hp->feed_forward_length = hostile_u32(c, hp->feed_forward_length);
    hp->head_count = hostile_u32(c, hp->head_count);
    hp->head_count_kv = hostile_u32(c, hp->head_count_kv);
    hp->head_dim = hostile_u32(c, hp->head_dim);
    hp->vocab_size = hostile_u32(c, hp->vocab_size);
    hp->rms_eps = hostile_f64(c, hp->rms_eps);
    hp->rope_theta = hostile_f64(c, hp->rope_theta);
    const uint8_t b = next(c);
    hp->tie_word_embeddings = b & 1 ? !hp->tie_word_embeddings : hp->tie_word_embeddings;
    hp->rope_scaling = (lc_rope_scaling)(b >> 1 & 3);
    hp->rope_scaling_factor = hostile_f64(c, 4.0);
    hp->rope_scaling_orig_ctx = hostile_u32(c, 32);
    hp->rope_low_freq_factor = hostile_f64(c, 1.0);
    hp->rope_high_freq_factor = hostile_f64(c, 4.0);
}

/* The family's keys as metadata of hostile types and values, read back. */
static bool from_keys(cursor *c, const lc_arch *a, lc_hparams *hp) {
    static const char *const keys[] = { "block_count", "context_length", "embedding_length",
                                        "feed_forward_length", "attention.head_count",
                                        "attention.head_count_kv", "rope.dimension_count",
                                        "attention.layer_norm_rms_epsilon", "rope.freq_base",
                                        "vocab_size", "rope.scaling.type",
                                        "rope.scaling.factor",
                                        "rope.scaling.original_context_length" };
    lc_model *m = lc_model_new();
    if (!m)
        return false;
    (void)lc_model_set_meta_str(m, "general.architecture", a->name, NULL);
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        char k[96];
        snprintf(k, sizeof k, "%s.%s", a->name, keys[i]);
        const uint8_t t = next(c);
        lc_value v;
        if (t % 5 == 0)
            continue;                                  /* absent */
        else if (t % 5 == 1)
            v = lc_value_uint(LC_VT_U32, hostile_u32(c, 64));
        else if (t % 5 == 2)
            v = lc_value_float(LC_VT_F32, hostile_f64(c, 1e-5));
        else if (t % 5 == 3)
            v = lc_value_int(LC_VT_I64, (int64_t)hostile_u32(c, 4) - (t >> 7 ? 1 << 20 : 0));
        else {
            if (lc_value_string(&v, "yarn", 4, NULL) != LC_OK)
                continue;
        }
        (void)lc_model_set_meta(m, k, &v, NULL);
    }
    const lc_arch *got = NULL;
    const bool ok = lc_arch_read_keys(m, &got, hp, NULL) == LC_OK;
    lc_model_free(m);
    return ok && got == a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2)
        return 0;
    cursor c = { data + 2, data + size };
    const int mi = data[0] % N_MODELS;
    const lc_arch *const *all = lc_arch_all();
    size_t n_arch = 0;
    while (all[n_arch])
        n_arch++;
    const lc_arch *a = (data[0] >> 2) % 4 == 0 ? all[(data[0] >> 4) % n_arch] : g_arch[mi];
    const lc_spelling sp = (data[0] >> 6) == 3 ? LC_SPELL_HF : LC_SPELL_GGUF;
    lc_hparams hp = g_hp[mi];
    if (data[1] & 1) {
        if (!from_keys(&c, a, &hp))
            return 0;
    } else {
        mutate(&c, &hp);
    }
    lc_infer *ctx = NULL;
    lc_error err = { 0 };
    const lc_infer_opts o = { .threads = 1 };
    lc_code rc = lc_infer_open(g_model[mi], a, &hp, sp, &o, &ctx, &err);
    if (rc != LC_OK) {
        if ((rc != LC_E_MISMATCH && rc != LC_E_MALFORMED && rc != LC_E_UNSUPPORTED &&
             rc != LC_E_NOMEM && rc != LC_E_OVERFLOW && rc != LC_E_ARG) || ctx)
            abort();
        return 0;
    }
    const size_t vocab = lc_infer_vocab(ctx);
    int32_t tokens[4];
    size_t n = 1 + (data[1] >> 1) % 4;
    for (size_t i = 0; i < n; i++)
        tokens[i] = (int32_t)(next(&c) | next(&c) << 8) - (data[1] & 0x80 ? 3 : 0);
    float *logits = vocab && vocab <= (1u << 16) ? malloc(n * vocab * sizeof *logits) : NULL;
    if (logits) {
        rc = lc_infer_forward(ctx, tokens, n, logits, NULL, &err);
        if (rc != LC_OK && rc != LC_E_ARG && rc != LC_E_NOMEM && rc != LC_E_OVERFLOW)
            abort();
        free(logits);
    }
    lc_infer_close(ctx);
    return 0;
}
