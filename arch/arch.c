/* arch/arch.c: the engine every family table runs on: finding a family, the one
 * layer-index parser, the name map both ways, expected shapes, the completeness check
 * and the hyperparameter keys (see arch.h). Nothing here knows a family by name. */
#include "arch/arch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/alloc.h"

extern const lc_arch lc_arch_llama, lc_arch_qwen2, lc_arch_qwen3, lc_arch_qwen3moe,
    lc_arch_gemma3, lc_arch_phi3, lc_arch_qwen35, lc_arch_qwen35moe, lc_arch_gemma4;

static const lc_arch *const FAMILIES[] = { &lc_arch_llama, &lc_arch_qwen2, &lc_arch_qwen3,
                                           &lc_arch_qwen3moe, &lc_arch_gemma3, &lc_arch_phi3,
                                           &lc_arch_qwen35, &lc_arch_qwen35moe, &lc_arch_gemma4,
                                           NULL };

const lc_arch *const *lc_arch_all(void) { return FAMILIES; }

const lc_arch *lc_arch_by_hf_class(const char *cls) {
    for (const lc_arch *const *a = FAMILIES; cls && *a; a++)
        for (const char *const *c = (*a)->hf_classes; *c; c++)
            if (strcmp(*c, cls) == 0)
                return *a;
    return NULL;
}

const lc_arch *lc_arch_by_name(const char *name) {
    for (const lc_arch *const *a = FAMILIES; name && *a; a++)
        if (strcmp((*a)->name, name) == 0)
            return *a;
    return NULL;
}

void lc_arch_list_classes(char *buf, size_t cap) {
    size_t o = 0;
    if (cap)
        buf[0] = '\0';
    static const char MULTIMODAL[] = "ForConditionalGeneration";
    for (const lc_arch *const *a = FAMILIES; *a; a++)
        for (const char *const *c = (*a)->hf_classes; *c; c++) {
            /* a multimodal class is its CausalLM's text model: the list stays one line */
            const size_t n = strlen(*c);
            if (n > sizeof MULTIMODAL - 1 &&
                strcmp(*c + n - (sizeof MULTIMODAL - 1), MULTIMODAL) == 0)
                continue;
            int k = snprintf(buf + o, cap - o, "%s%s", o ? ", " : "", *c);
            if (k < 0 || (size_t)k >= cap - o)
                return;
            o += (size_t)k;
        }
}

/* ---- names ---- */

/* One "%u" or "%e" hole of a pattern: a plain decimal (no sign, no leading zero, at most
 * 9 digits). Returns the characters taken, 0 when there is no such number at p. */
static size_t take_number(const char *p, uint32_t *v) {
    uint32_t n = 0;
    size_t digits = 0;
    for (; p[digits] >= '0' && p[digits] <= '9'; digits++) {
        if (digits == 9)
            return 0;
        n = n * 10 + (uint32_t)(p[digits] - '0');
    }
    if (digits == 0 || (digits > 1 && p[0] == '0'))
        return 0;
    *v = n;
    return digits;
}

/* NAME against PATTERN with any of the holes "%u" (the layer) and "%e" (the expert);
 * each absent hole gives UINT32_MAX. */
static bool match_holes(const char *pattern, const char *name, uint32_t *layer,
                        uint32_t *expert) {
    *layer = *expert = UINT32_MAX;
    const char *p = pattern, *n = name;
    while (*p) {
        if (p[0] == '%' && (p[1] == 'u' || p[1] == 'e')) {
            uint32_t *slot = p[1] == 'u' ? layer : expert;
            const size_t k = take_number(n, slot);
            if (k == 0)
                return false;
            n += k;
            p += 2;
        } else if (*p++ != *n++) {
            return false;
        }
    }
    return *n == '\0';
}

bool lc_arch_match(const char *pattern, const char *name, uint32_t *layer) {
    uint32_t expert;
    return !strstr(pattern, "%e") && match_holes(pattern, name, layer, &expert);
}

static const char *spelling(const lc_arch_tensor *row, lc_spelling s) {
    return s == LC_SPELL_HF ? row->hf : s == LC_SPELL_META ? row->meta : row->gguf;
}

static const char *spelling_name(lc_spelling s) {
    return s == LC_SPELL_HF ? "Hugging Face" : s == LC_SPELL_META ? "Meta" : "GGUF";
}

const lc_arch_tensor *lc_arch_find(const lc_arch *a, lc_spelling from, const char *name,
                                   uint32_t *layer) {
    for (size_t i = 0; i < a->n_tensors; i++) {
        const char *p = spelling(&a->tensors[i], from);
        if (p && lc_arch_match(p, name, layer))
            return &a->tensors[i];
    }
    return NULL;
}

bool lc_arch_lookup(const lc_arch *a, lc_spelling from, const char *name,
                    const lc_arch_tensor *after, lc_arch_hit *hit) {
    size_t i = after ? (size_t)(after - a->tensors) + 1 : 0;
    for (; i < a->n_tensors; i++) {
        const lc_arch_tensor *row = &a->tensors[i];
        const char *p = spelling(row, from);
        hit->row = row;
        hit->fused = false;
        if (p && match_holes(p, name, &hit->layer, &hit->expert))
            return true;
        hit->fused = true;
        if (from == LC_SPELL_HF && row->hf_fused &&
            match_holes(row->hf_fused, name, &hit->layer, &hit->expert))
            return true;
    }
    hit->row = NULL;
    return false;
}

const lc_arch_tensor *lc_arch_role(const lc_arch *a, lc_role role) {
    for (size_t i = 0; i < a->n_tensors; i++)
        if (a->tensors[i].role == role)
            return &a->tensors[i];
    return NULL;
}

/* PATTERN with its "%u" and "%e" holes filled. */
static bool fill_holes(const char *p, uint32_t layer, uint32_t expert, char *buf, size_t cap) {
    size_t o = 0;
    while (*p) {
        int k;
        if (p[0] == '%' && (p[1] == 'u' || p[1] == 'e')) {
            k = snprintf(buf + o, cap - o, "%" PRIu32, p[1] == 'u' ? layer : expert);
            p += 2;
        } else {
            k = 1;
            if (o + 1 < cap)
                buf[o] = *p;
            p++;
        }
        if (k < 0 || o + (size_t)k >= cap)
            return false;
        o += (size_t)k;
    }
    buf[o] = '\0';
    return true;
}

lc_code lc_arch_name_expert(const lc_arch_tensor *row, lc_spelling to, uint32_t layer,
                            uint32_t expert, char *buf, size_t cap, lc_error *err) {
    const char *p = spelling(row, to);
    if (!p)
        return lc_fail(err, LC_E_NOTFOUND, LC_NO_OFFSET, "the tensor has no %s name",
                       spelling_name(to));
    if (cap == 0 || !fill_holes(p, layer, expert, buf, cap))
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "name buffer of %zu bytes is too small", cap);
    return LC_OK;
}

lc_code lc_arch_name_fused(const lc_arch_tensor *row, uint32_t layer, char *buf, size_t cap,
                           lc_error *err) {
    if (!row->hf_fused)
        return lc_fail(err, LC_E_NOTFOUND, LC_NO_OFFSET, "the tensor has no fused spelling");
    if (cap == 0 || !fill_holes(row->hf_fused, layer, 0, buf, cap))
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "name buffer of %zu bytes is too small", cap);
    return LC_OK;
}

lc_code lc_arch_name(const lc_arch_tensor *row, lc_spelling to, uint32_t layer, char *buf,
                     size_t cap, lc_error *err) {
    return lc_arch_name_expert(row, to, layer, 0, buf, cap, err);
}

lc_code lc_arch_map(const lc_arch *a, lc_spelling from, lc_spelling to, const char *name,
                    uint32_t n_layers, char *buf, size_t cap, const lc_arch_tensor **row,
                    lc_error *err) {
    uint32_t layer;
    *row = lc_arch_find(a, from, name, &layer);
    if (!*row) {
        lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "tensor %.100s has no %s name for "
                "architecture %s", name, spelling_name(to), a->name);
        lc_err_context(err, NULL, name);
        return LC_E_UNSUPPORTED;
    }
    if (layer != UINT32_MAX && n_layers && layer >= n_layers) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "tensor %.80s is in layer %" PRIu32
                " of a %" PRIu32 "-layer model", name, layer, n_layers);
        lc_err_context(err, NULL, name);
        return LC_E_MALFORMED;
    }
    if (!spelling(*row, to))
        return LC_E_NOTFOUND;       /* dropped on that side: not an error to report */
    return lc_arch_name(*row, to, layer == UINT32_MAX ? 0 : layer, buf, cap, err);
}

/* ---- the extra layers' spellings ---- */

/* The family's aliases of the extra layers over NAME (already without
 * "language_model."). */
static bool family_alias(const lc_arch *a, uint32_t n_own, const char *name, char *buf,
                         size_t cap) {
    for (size_t i = 0; i < a->n_aliases; i++) {
        const char *p = a->aliases[i].prefix, *hole = strstr(p, "%u");
        const size_t lead = hole ? (size_t)(hole - p) : strlen(p);
        uint32_t k = 0;
        if (strncmp(name, p, lead) != 0)
            continue;
        const char *rest = name + lead;
        if (hole) {
            const size_t d = take_number(rest, &k);
            if (d == 0 || strncmp(rest + d, hole + 2, strlen(hole + 2)) != 0)
                continue;
            rest += d + strlen(hole + 2);
        }
        if ((uint64_t)n_own + k > UINT32_MAX)
            continue;
        int w = snprintf(buf, cap, "model.layers.%" PRIu32 ".%s%s", n_own + k,
                         a->aliases[i].instead, rest);
        return w > 0 && (size_t)w < cap;
    }
    return false;
}

bool lc_arch_alias_in(const lc_arch *a, uint32_t n_own, const char *name, char *buf,
                      size_t cap) {
    /* a multimodal checkpoint's text model: "model.language_model.layers.0..." is the
     * text model's "model.layers.0..." (ModelBase.filter_tensors drops the word) */
    static const char LM[] = "language_model.";
    const char *lm = strstr(name, LM);
    char plain[256];
    if (lm) {
        int w = snprintf(plain, sizeof plain, "%.*s%s", (int)(lm - name), name,
                         lm + sizeof LM - 1);
        if (w < 0 || (size_t)w >= sizeof plain)
            return false;
        name = plain;
    }
    if (family_alias(a, n_own, name, buf, cap))
        return true;
    if (!lm)
        return false;
    int w = snprintf(buf, cap, "%s", name);
    return w > 0 && (size_t)w < cap;
}

bool lc_arch_multimodal(const char *name) {
    /* TextModel.filter_tensors' markers of the vision and audio towers */
    static const char *const PREFIX[] = { "mlp", "vit.", "vpm.", "siglip2.", "conformer.",
                                          "merger.", "resampler.", "sound_encoder.",
                                          "sound_projection.", "speech_embeddings." };
    static const char *const WITHIN[] = { "visual.", "vision.", "audio.", "talker.", "vision_",
                                          "audio_", "token2wav.", "code2wav.", "projector.",
                                          "pre_mm_projector_norm", "image_newline",
                                          "view_seperator", "patch_embed", "patch_embedding",
                                          "patch_merger.", "patch_merge_mlp.",
                                          "model.connector." };
    for (size_t i = 0; i < sizeof PREFIX / sizeof *PREFIX; i++)
        if (strncmp(name, PREFIX[i], strlen(PREFIX[i])) == 0)
            return true;
    for (size_t i = 0; i < sizeof WITHIN / sizeof *WITHIN; i++)
        if (strstr(name, WITHIN[i]))
            return true;
    return false;
}

bool lc_arch_alias_out(const lc_arch *a, uint32_t n_own, const char *name, char *buf,
                       size_t cap) {
    static const char LAYERS[] = "model.layers.";
    uint32_t l;
    if (a->n_aliases == 0 || strncmp(name, LAYERS, sizeof LAYERS - 1) != 0)
        return false;
    const char *p = name + sizeof LAYERS - 1;
    const size_t d = take_number(p, &l);
    if (d == 0 || p[d] != '.' || l < n_own)
        return false;
    const char *rest = p + d + 1;
    /* the first alias whose `instead` the rest starts with, longest first by table order
     * ("" last) */
    for (size_t i = 0; i < a->n_aliases; i++) {
        const lc_arch_alias *al = &a->aliases[i];
        const char *hole = strstr(al->prefix, "%u");
        const size_t n = strlen(al->instead);
        if (strncmp(rest, al->instead, n) != 0 || (!hole && l != n_own))
            continue;
        int w = hole ? snprintf(buf, cap, "%.*s%" PRIu32 "%s%s", (int)(hole - al->prefix),
                                al->prefix, l - n_own, hole + 2, rest + n)
                     : snprintf(buf, cap, "%s%s", al->prefix, rest + n);
        return w > 0 && (size_t)w < cap;
    }
    return false;
}

bool lc_arch_vreorder(const lc_arch_tensor *row, const lc_hparams *hp, const lc_tensor *t,
                      lc_arch_swap *sw) {
    const uint64_t nk = hp->ssm_group_count, nv = hp->ssm_time_step_rank;
    if (row->vreorder == LC_VR_NONE || !nk || !nv || nk == nv || nv % nk || t->ndim == 0 ||
        t->shape[0] == 0)
        return false;
    const uint64_t row_bytes = t->nbytes / t->shape[0];
    *sw = (lc_arch_swap){ .first = 0, .outer = 1, .a = nk, .b = nv / nk,
                          .unit = hp->ssm_head_v * row_bytes };
    switch (row->vreorder) {
    case LC_VR_ROWS_AFTER_QK:
        sw->first = 2 * nk * hp->ssm_state_size * row_bytes;
        break;
    case LC_VR_HEAD_ROWS:
        sw->unit = row_bytes;
        break;
    case LC_VR_COLS:
        if (t->ndim < 2)
            return false;
        sw->outer = t->shape[0];
        sw->unit = hp->ssm_head_v * (row_bytes / t->shape[t->ndim - 1]);
        break;
    default:
        break;
    }
    return true;
}

uint32_t lc_arch_own_layers(const lc_hparams *hp) {
    return hp->nextn_layers < hp->block_count ? hp->block_count - hp->nextn_layers : 0;
}

lc_code lc_arch_hparams_finish(const lc_arch *a, lc_hparams *hp, lc_error *err) {
    if (!hp->rope_sections_given)
        memcpy(hp->rope_sections, a->default_rope_sections, sizeof hp->rope_sections);
    const uint32_t own = lc_arch_own_layers(hp);
    if (!hp->full_attn_interval)
        hp->full_attn_interval = a->default_full_attn_interval;
    if (!hp->layer_kinds_given && hp->ssm_time_step_rank && hp->full_attn_interval) {
        if (hp->block_count > LC_ARCH_MAX_LAYERS)
            return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "%" PRIu32 " layers: at most %d "
                           "are supported in a model with recurrent layers", hp->block_count,
                           LC_ARCH_MAX_LAYERS);
        for (uint32_t l = 0; l < hp->block_count; l++)
            hp->recurrent[l] = l < own && (l + 1) % hp->full_attn_interval != 0;
    }
    if (hp->ssm_head_v && hp->ssm_time_step_rank && !hp->ssm_inner_size)
        hp->ssm_inner_size = hp->ssm_head_v * hp->ssm_time_step_rank;
    if (!hp->ssm_time_step_rank)
        return LC_OK;
    if (hp->ssm_inner_size % hp->ssm_time_step_rank != 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "ssm.inner_size %" PRIu32 " is not a "
                       "multiple of ssm.time_step_rank %" PRIu32 " (the value heads, "
                       "linear_num_value_heads)", hp->ssm_inner_size, hp->ssm_time_step_rank);
    hp->ssm_head_v = hp->ssm_inner_size / hp->ssm_time_step_rank;
    if (!hp->ssm_group_count || hp->ssm_time_step_rank % hp->ssm_group_count != 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "the value heads (ssm.time_step_rank, "
                       "linear_num_value_heads %" PRIu32 ") are not a multiple of the key heads "
                       "(ssm.group_count, linear_num_key_heads %" PRIu32 ")",
                       hp->ssm_time_step_rank, hp->ssm_group_count);
    if (!hp->ssm_state_size || !hp->ssm_conv_kernel || !hp->ssm_head_v)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "the recurrent layers need a state "
                       "size, a convolution kernel and value heads (ssm.state_size, "
                       "ssm.conv_kernel, ssm.inner_size)");
    return LC_OK;
}

uint32_t lc_arch_rope_heads(const lc_arch_tensor *row, const lc_hparams *hp) {
    return row->flags & LC_AT_ROPE_Q ? hp->head_count
         : row->flags & LC_AT_ROPE_K ? hp->head_count_kv : 0;
}

/* ---- shapes and completeness ---- */

static uint64_t dim_value(lc_dim d, const lc_hparams *hp) {
    const uint64_t q = (uint64_t)hp->head_count * hp->head_dim;
    const uint64_t kv = (uint64_t)hp->head_count_kv * hp->head_dim;
    switch (d) {
    case LC_DIM_VOCAB: return hp->vocab_size;
    case LC_DIM_EMBD: return hp->embedding_length;
    case LC_DIM_FF: return hp->feed_forward_length;
    case LC_DIM_FF2: return 2 * (uint64_t)hp->feed_forward_length;
    case LC_DIM_Q: return q;
    case LC_DIM_KV: return kv;
    case LC_DIM_QKV: return q + 2 * kv;
    case LC_DIM_HEAD: return hp->head_dim;
    case LC_DIM_HALF_HEAD: return hp->head_dim / 2;
    case LC_DIM_HALF_ROPE: return (hp->rope_dim ? hp->rope_dim : hp->head_dim) / 2;
    case LC_DIM_EXPERT: return hp->expert_count;
    case LC_DIM_FF_EXP: return hp->expert_ff_length ? hp->expert_ff_length
                                                    : hp->feed_forward_length;
    case LC_DIM_Q2: return 2 * q;
    case LC_DIM_EMBD2: return 2 * (uint64_t)hp->embedding_length;
    case LC_DIM_SSM_CONV: return 2 * (uint64_t)hp->ssm_group_count * hp->ssm_state_size +
                                 hp->ssm_inner_size;
    case LC_DIM_SSM_INNER: return hp->ssm_inner_size;
    case LC_DIM_SSM_VHEADS: return hp->ssm_time_step_rank;
    case LC_DIM_SSM_HEAD_V: return hp->ssm_head_v;
    case LC_DIM_SSM_KERNEL: return hp->ssm_conv_kernel;
    case LC_DIM_FF_SHEXP: return hp->expert_shared_ff_length;
    case LC_DIM_ONE: return 1;
    case LC_DIM_NONE: break;
    }
    return 0;
}

bool lc_arch_shape(const lc_arch_tensor *row, const lc_hparams *hp, uint32_t *nd,
                   uint64_t shape[3]) {
    if (row->ndim == 0)
        return false;
    *nd = row->ndim;
    for (uint32_t i = 0; i < 3; i++)
        shape[i] = i < row->ndim ? dim_value(row->shape[i], hp) : 0;
    return true;
}

bool lc_arch_shape_is(const lc_arch_tensor *row, const lc_hparams *hp, const lc_tensor *t,
                      char *want, size_t cap) {
    uint32_t nd;
    uint64_t sh[3];
    if (!lc_arch_shape(row, hp, &nd, sh))
        return true;
    bool ok = t->ndim == nd;
    for (uint32_t i = 0; ok && i < nd; i++)
        ok = t->shape[i] == sh[i];
    if (!ok && cap) {
        size_t o = 0;
        want[0] = '\0';
        for (uint32_t i = 0; i < nd && o < cap; i++) {
            int k = snprintf(want + o, cap - o, "%s%" PRIu64, i ? ", " : "[", sh[i]);
            o += k > 0 ? (size_t)k : 0;
        }
        if (o < cap)
            snprintf(want + o, cap - o, "]");
    }
    return ok;
}

bool lc_arch_hit_shape_is(const lc_arch_hit *h, const lc_hparams *hp, const lc_tensor *t,
                          char *want, size_t cap) {
    uint32_t nd;
    uint64_t sh[3];
    if (!lc_arch_shape(h->row, hp, &nd, sh))
        return true;
    if (h->expert != UINT32_MAX) {              /* one expert's: no expert dimension */
        memmove(sh, sh + 1, 2 * sizeof sh[0]);
        nd--;
    } else if (h->fused && nd >= 2) {           /* parts side by side along dimension 1 */
        sh[1] *= h->row->parts ? h->row->parts : 1;
    }
    lc_tensor squeezed;
    if ((h->row->flags & LC_AT_SQUEEZE) && t->ndim > nd) {
        /* transformers' [channels, 1, kernel]: its dimensions of 1 dropped */
        squeezed = *t;
        squeezed.ndim = 0;
        for (uint32_t i = 0; i < t->ndim; i++)
            if (t->shape[i] != 1)
                squeezed.shape[squeezed.ndim++] = t->shape[i];
        t = &squeezed;
    }
    bool ok = t->ndim == nd;
    for (uint32_t i = 0; ok && i < nd; i++)
        ok = t->shape[i] == sh[i] ||
             /* gemma's embedding may have rows past the vocabulary: they are cut */
             (i == 0 && (h->row->flags & LC_AT_VOCAB_ROWS) && t->shape[0] > sh[0]);
    if (!ok && cap) {
        size_t o = 0;
        want[0] = '\0';
        for (uint32_t i = 0; i < nd && o < cap; i++) {
            int k = snprintf(want + o, cap - o, "%s%" PRIu64, i ? ", " : "[", sh[i]);
            o += k > 0 ? (size_t)k : 0;
        }
        if (o < cap)
            snprintf(want + o, cap - o, "]");
    }
    return ok;
}

lc_code lc_arch_seen_init(lc_arch_seen *s, const lc_arch *a, uint32_t n_layers, lc_error *err) {
    memset(s, 0, sizeof *s);
    if (a->n_tensors > 64)      /* one bit per row */
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "architecture %s has %zu tensor rows; "
                       "at most 64 are tracked", a->name, a->n_tensors);
    s->arch = a;
    s->n_layers = n_layers;
    if (n_layers && !(s->layer = lc_calloc(n_layers, sizeof *s->layer)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu32 " layers",
                       n_layers);
    return LC_OK;
}

void lc_arch_seen_free(lc_arch_seen *s) {
    lc_free(s->layer);
    s->layer = NULL;
}

void lc_arch_seen_mark(lc_arch_seen *s, const lc_arch_tensor *row, uint32_t layer) {
    const uint64_t bit = 1ull << (size_t)(row - s->arch->tensors);
    if (layer == UINT32_MAX)
        s->top |= bit;
    else if (layer < s->n_layers)
        s->layer[layer] |= bit;
}

lc_code lc_arch_seen_check(const lc_arch_seen *s, lc_spelling sp, lc_error *err) {
    const lc_arch *a = s->arch;
    char name[160], gguf[160];
    for (size_t i = 0; i < a->n_tensors; i++) {
        const lc_arch_tensor *row = &a->tensors[i];
        const bool required = (row->flags & LC_AT_REQUIRED) ||
                              (row->flags & (s->moe ? LC_AT_MOE : LC_AT_DENSE));
        const uint16_t kinds = row->flags & (LC_AT_RECURRENT | LC_AT_ATTENTION);
        if (!required && !kinds)
            continue;
        const bool per_layer = strstr(row->gguf, "%u") != NULL;
        for (uint32_t l = 0; l < (per_layer ? s->n_layers : 1); l++) {
            const bool rec = s->recurrent && per_layer && s->recurrent[l];
            if (kinds && !(kinds & (rec ? LC_AT_RECURRENT : LC_AT_ATTENTION)))
                continue;   /* a row of the other kind of layer */
            const uint64_t have = per_layer ? s->layer[l] : s->top;
            if (have & (1ull << i))
                continue;
            lc_arch_name(row, LC_SPELL_GGUF, l, gguf, sizeof gguf, NULL);
            if (!spelling(row, sp) || lc_arch_name(row, sp, l, name, sizeof name, NULL) != LC_OK)
                snprintf(name, sizeof name, "%s", gguf);
            if (per_layer)
                return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "layer %" PRIu32 " of %" PRIu32
                               " has no %.80s (GGUF %.80s)%s", l, s->n_layers, name, gguf,
                               !kinds ? "" : rec ? ", which a recurrent layer needs"
                                                 : ", which an attention layer needs");
            return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the model has no %.80s", name);
        }
    }
    return LC_OK;
}

/* ---- hyperparameter keys ---- */

static double hp_get(const lc_hparams *hp, lc_hp f, uint32_t file_type) {
    switch (f) {
    case LC_HP_CONTEXT_LENGTH: return hp->context_length;
    case LC_HP_EMBEDDING_LENGTH: return hp->embedding_length;
    case LC_HP_BLOCK_COUNT: return hp->block_count;
    case LC_HP_FEED_FORWARD_LENGTH: return hp->feed_forward_length;
    case LC_HP_HEAD_COUNT: return hp->head_count;
    case LC_HP_HEAD_COUNT_KV: return hp->head_count_kv;
    case LC_HP_HEAD_DIM: case LC_HP_VALUE_DIM: return hp->head_dim;
    case LC_HP_ROPE_DIM: return hp->rope_dim ? hp->rope_dim : hp->head_dim;
    case LC_HP_VOCAB_SIZE: return hp->vocab_size;
    case LC_HP_RMS_EPS: return hp->rms_eps;
    case LC_HP_ROPE_THETA: return hp->rope_theta;
    case LC_HP_ROPE_THETA_SWA: return hp->rope_theta_swa;
    case LC_HP_TIE_WORD_EMBEDDINGS: return hp->tie_word_embeddings;
    case LC_HP_ROPE_SCALING_FACTOR: return hp->rope_scaling_factor;
    case LC_HP_ROPE_SCALING_ORIG_CTX: return hp->rope_scaling_orig_ctx;
    case LC_HP_ROPE_ATTN_FACTOR: return hp->rope_attn_factor;
    case LC_HP_EXPERT_COUNT: return hp->expert_count;
    case LC_HP_EXPERT_USED_COUNT: return hp->expert_used_count;
    case LC_HP_EXPERT_FF_LENGTH: return hp->expert_ff_length;
    case LC_HP_EXPERT_NORM_TOPK: return hp->expert_norm_topk;
    case LC_HP_SLIDING_WINDOW: return hp->sliding_window;
    case LC_HP_SWA_PATTERN: return hp->swa_pattern;
    case LC_HP_ATTN_SCALE: return hp->attn_scale;
    case LC_HP_FINAL_SOFTCAP: return hp->final_softcap;
    case LC_HP_FILE_TYPE: return file_type;
    case LC_HP_EXPERT_SHARED_FF_LENGTH: return hp->expert_shared_ff_length;
    case LC_HP_NEXTN_LAYERS: return hp->nextn_layers;
    case LC_HP_FULL_ATTN_INTERVAL: return hp->full_attn_interval;
    case LC_HP_SSM_CONV_KERNEL: return hp->ssm_conv_kernel;
    case LC_HP_SSM_STATE_SIZE: return hp->ssm_state_size;
    case LC_HP_SSM_GROUP_COUNT: return hp->ssm_group_count;
    case LC_HP_SSM_TIME_STEP_RANK: return hp->ssm_time_step_rank;
    case LC_HP_SSM_INNER_SIZE: return hp->ssm_inner_size;
    case LC_HP_SSM_HEAD_V: return hp->ssm_head_v;
    case LC_HP_HEAD_DIM_SWA: return hp->head_dim_swa;
    case LC_HP_ROPE_DIM_SWA: return hp->rope_dim_swa;
    case LC_HP_SHARED_KV_LAYERS: return hp->shared_kv_layers;
    case LC_HP_EMBD_PER_LAYER_INPUT: return hp->embd_per_layer_input;
    case LC_HP_ROPE_SCALING_TYPE: case LC_HP_RECURRENT_LAYERS: case LC_HP_ROPE_SECTIONS:
    case LC_HP_LAYER_TYPES: case LC_HP_HEAD_COUNT_KV_LAYERS: case LC_HP_SWA_LAYERS: break;
    }
    return 0;
}

void lc_arch_hparam_set(lc_hparams *hp, lc_hp f, double d) {
    const uint32_t u = d > 0 && d <= UINT32_MAX ? (uint32_t)d : 0;
    switch (f) {
    case LC_HP_CONTEXT_LENGTH: hp->context_length = u; break;
    case LC_HP_EMBEDDING_LENGTH: hp->embedding_length = u; break;
    case LC_HP_BLOCK_COUNT: hp->block_count = u; break;
    case LC_HP_FEED_FORWARD_LENGTH: hp->feed_forward_length = u; break;
    case LC_HP_HEAD_COUNT: hp->head_count = u; break;
    case LC_HP_HEAD_COUNT_KV: hp->head_count_kv = u; break;
    case LC_HP_HEAD_DIM: hp->head_dim = u; break;
    case LC_HP_ROPE_DIM: hp->rope_dim = u; break;
    case LC_HP_VOCAB_SIZE: hp->vocab_size = u; break;
    case LC_HP_RMS_EPS: hp->rms_eps = d; break;
    case LC_HP_ROPE_THETA: hp->rope_theta = d; break;
    case LC_HP_ROPE_THETA_SWA: hp->rope_theta_swa = d; break;
    case LC_HP_ROPE_SCALING_FACTOR: hp->rope_scaling_factor = d; break;
    case LC_HP_ROPE_SCALING_ORIG_CTX: hp->rope_scaling_orig_ctx = u; break;
    case LC_HP_ROPE_ATTN_FACTOR: hp->rope_attn_factor = d; break;
    case LC_HP_EXPERT_COUNT: hp->expert_count = u; break;
    case LC_HP_EXPERT_USED_COUNT: hp->expert_used_count = u; break;
    case LC_HP_EXPERT_FF_LENGTH: hp->expert_ff_length = u; break;
    case LC_HP_EXPERT_NORM_TOPK: hp->expert_norm_topk = d != 0; break;
    case LC_HP_SLIDING_WINDOW: hp->sliding_window = u; break;
    case LC_HP_SWA_PATTERN: hp->swa_pattern = u; break;
    case LC_HP_ATTN_SCALE: hp->attn_scale = d; break;
    case LC_HP_FINAL_SOFTCAP: hp->final_softcap = d; break;
    case LC_HP_TIE_WORD_EMBEDDINGS: hp->tie_word_embeddings = d != 0; break;
    case LC_HP_EXPERT_SHARED_FF_LENGTH: hp->expert_shared_ff_length = u; break;
    case LC_HP_NEXTN_LAYERS: hp->nextn_layers = u; break;
    case LC_HP_FULL_ATTN_INTERVAL: hp->full_attn_interval = u; break;
    case LC_HP_SSM_CONV_KERNEL: hp->ssm_conv_kernel = u; break;
    case LC_HP_SSM_STATE_SIZE: hp->ssm_state_size = u; break;
    case LC_HP_SSM_GROUP_COUNT: hp->ssm_group_count = u; break;
    case LC_HP_SSM_TIME_STEP_RANK: hp->ssm_time_step_rank = u; break;
    case LC_HP_SSM_INNER_SIZE: hp->ssm_inner_size = u; break;
    case LC_HP_SSM_HEAD_V: hp->ssm_head_v = u; break;
    case LC_HP_HEAD_DIM_SWA: hp->head_dim_swa = u; break;
    case LC_HP_ROPE_DIM_SWA: hp->rope_dim_swa = u; break;
    case LC_HP_SHARED_KV_LAYERS: hp->shared_kv_layers = u; break;
    case LC_HP_EMBD_PER_LAYER_INPUT: hp->embd_per_layer_input = u; break;
    case LC_HP_FILE_TYPE: case LC_HP_ROPE_SCALING_TYPE: case LC_HP_VALUE_DIM:
    case LC_HP_RECURRENT_LAYERS: case LC_HP_ROPE_SECTIONS: case LC_HP_LAYER_TYPES:
    case LC_HP_HEAD_COUNT_KV_LAYERS: case LC_HP_SWA_LAYERS: break;
    }
}

double lc_arch_hparam_get(const lc_hparams *hp, lc_hp f) { return hp_get(hp, f, 0); }

static bool key_applies(const lc_arch_key *k, const lc_hparams *hp) {
    const bool scaled = hp->rope_scaling == LC_ROPE_SCALING_LINEAR ||
                        hp->rope_scaling == LC_ROPE_SCALING_YARN;
    switch (k->when) {
    case LC_KEY_IF_SCALED: return scaled;
    case LC_KEY_IF_ORIG_CTX: return scaled && hp->rope_scaling_orig_ctx;
    case LC_KEY_IF_HEAD_DIM: return hp->head_dim_given;
    case LC_KEY_IF_SET: return hp_get(hp, k->hp, 0) != 0;
    case LC_KEY_IF_LONGROPE: return hp->rope_scaling == LC_ROPE_SCALING_LONGROPE;
    case LC_KEY_IF_GIVEN: return k->hp == LC_HP_ROPE_SECTIONS ? hp->rope_sections_given
                                                               : hp->layer_kinds_given;
    case LC_KEY_IF_NOT_GIVEN: return k->hp == LC_HP_ROPE_SECTIONS ? !hp->rope_sections_given
                                                                   : !hp->layer_kinds_given;
    default: return true;
    }
}

static void key_name(const lc_arch *a, const lc_arch_key *k, char *buf, size_t cap) {
    const char *hole = strstr(k->key, "%s");
    if (hole)
        snprintf(buf, cap, "%.*s%s%s", (int)(hole - k->key), k->key, a->name, hole + 2);
    else
        snprintf(buf, cap, "%s", k->key);
}

/* A per-layer array (KEY, spelled with the family's name) whose length is not the
 * layer count: one error naming the key. */
static lc_code per_layer_length_error(const lc_arch *a, const char *key_fmt, lc_hp hp,
                                      uint32_t n, uint32_t block_count, lc_error *err) {
    char key[96];
    const lc_arch_key k = { key_fmt, hp, LC_KEY_ARR, 0 };
    key_name(a, &k, key, sizeof key);
    lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s has %" PRIu32 " entries for %" PRIu32
            " layers (block_count)", key, n, block_count);
    lc_err_context(err, NULL, key);
    return LC_E_MALFORMED;
}

static const char *scaling_name(lc_rope_scaling r) {
    return r == LC_ROPE_SCALING_YARN ? "yarn" : r == LC_ROPE_SCALING_LONGROPE ? "longrope"
                                                                              : "linear";
}

/* KV heads per layer as gguf-py writes a list of ints (int32); one count when the
 * source gave no list. */
static lc_code write_kv_layers(lc_model *m, const char *key, const lc_hparams *hp,
                               lc_error *err) {
    const uint32_t n = hp->n_head_count_kv_layers;
    if (!n) {
        lc_value one = lc_value_uint(LC_VT_U32, hp->head_count_kv);
        return lc_model_set_meta(m, key, &one, err);
    }
    lc_value v;
    LC_TRY(lc_value_array(&v, LC_VT_I32, n, err));
    lc_code rc = LC_OK;
    for (uint32_t i = 0; i < n && rc == LC_OK; i++)
        rc = lc_value_arr_set(&v, i, lc_value_int(LC_VT_I32, hp->head_count_kv_layers[i]), err);
    if (rc == LC_OK)
        rc = lc_model_set_meta(m, key, &v, err);
    lc_value_clear(&v);
    return rc;
}

/* KV heads per layer: a list of positive counts, or one count (llama.cpp reads either). */
static lc_code read_kv_layers(const lc_value *v, const char *key, lc_hparams *hp,
                              lc_error *err) {
    if (v->type == LC_VT_U32 || v->type == LC_VT_I32) {
        const uint64_t x = v->type == LC_VT_U32 ? v->u : (uint64_t)(v->i > 0 ? v->i : 0);
        hp->head_count_kv = x <= UINT32_MAX ? (uint32_t)x : 0;
        return LC_OK;
    }
    const bool ok = v->type == LC_VT_ARRAY && v->arr.count >= 1 &&
                    v->arr.count <= LC_ARCH_MAX_LAYERS &&
                    (v->arr.elem == LC_VT_I32 || v->arr.elem == LC_VT_U32);
    for (uint64_t i = 0; ok && i < v->arr.count; i++) {
        const lc_value e = lc_value_arr_get(v, i);
        const int64_t x = e.type == LC_VT_I32 ? e.i : (int64_t)e.u;
        if (x <= 0 || x > UINT32_MAX) {
            lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s[%" PRIu64 "] = %" PRId64 " is not a "
                    "positive count", key, i, x);
            lc_err_context(err, NULL, key);
            return LC_E_MALFORMED;
        }
        hp->head_count_kv_layers[i] = (uint32_t)x;
    }
    if (!ok) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s is not a count or an array of counts, "
                "one per layer", key);
        lc_err_context(err, NULL, key);
        return LC_E_MALFORMED;
    }
    hp->n_head_count_kv_layers = (uint32_t)v->arr.count;
    hp->head_count_kv = hp->head_count_kv_layers[0];
    return LC_OK;
}

/* The per-layer list (bools) or the rope sections (four int32), gguf-py's types. */
static lc_code write_array(lc_model *m, const char *key, lc_hp f, const lc_hparams *hp,
                           lc_error *err) {
    if (f == LC_HP_HEAD_COUNT_KV_LAYERS)
        return write_kv_layers(m, key, hp, err);
    const bool layers = f == LC_HP_RECURRENT_LAYERS || f == LC_HP_SWA_LAYERS;
    const bool *flag = f == LC_HP_SWA_LAYERS ? hp->swa_layers : hp->recurrent;
    const uint64_t n = layers ? hp->block_count : 4;
    if (layers && n > LC_ARCH_MAX_LAYERS)
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "%s: %" PRIu64 " layers is more than "
                       "%d", key, n, LC_ARCH_MAX_LAYERS);
    lc_value v;
    LC_TRY(lc_value_array(&v, layers ? LC_VT_BOOL : LC_VT_I32, n, err));
    lc_code rc = LC_OK;
    for (uint64_t i = 0; i < n && rc == LC_OK; i++)
        rc = lc_value_arr_set(&v, i, layers ? lc_value_bool(flag[i])
                                            : lc_value_int(LC_VT_I32, hp->rope_sections[i]),
                              err);
    if (rc == LC_OK)
        rc = lc_model_set_meta(m, key, &v, err);
    lc_value_clear(&v);
    return rc;
}

static lc_code write_key_list(const lc_arch *a, const lc_arch_key *keys, size_t n,
                              const lc_hparams *hp, uint32_t file_type, lc_model *m,
                              lc_error *err) {
    char key[128];
    for (size_t i = 0; i < n; i++) {
        const lc_arch_key *k = &keys[i];
        if (!key_applies(k, hp) || (k->hp == LC_HP_FILE_TYPE && file_type == LC_ARCH_NO_FILE_TYPE))
            continue;
        key_name(a, k, key, sizeof key);
        lc_value v;
        if (k->type == LC_KEY_ARR) {
            LC_TRY(write_array(m, key, k->hp, hp, err));
            continue;
        }
        if (k->type == LC_KEY_STR) {
            LC_TRY(lc_model_set_meta_str(m, key, scaling_name(hp->rope_scaling), err));
            continue;
        }
        if (k->type == LC_KEY_F32)
            v = lc_value_float(LC_VT_F32, (double)(float)hp_get(hp, k->hp, file_type));
        else if (k->type == LC_KEY_BOOL)
            v = lc_value_bool(hp_get(hp, k->hp, file_type) != 0);
        else
            v = lc_value_uint(LC_VT_U32, (uint64_t)hp_get(hp, k->hp, file_type));
        LC_TRY(lc_model_set_meta(m, key, &v, err));
    }
    return LC_OK;
}

lc_code lc_arch_write_keys(const lc_arch *a, const lc_hparams *hp, uint32_t file_type,
                           lc_model *m, lc_error *err) {
    return write_key_list(a, a->keys, a->n_keys, hp, file_type, m, err);
}

lc_code lc_arch_write_early_keys(const lc_arch *a, const lc_hparams *hp, lc_model *m,
                                 lc_error *err) {
    return write_key_list(a, a->early_keys, a->n_early_keys, hp, LC_ARCH_NO_FILE_TYPE, m, err);
}

/* An array key (write_array's) into hp; its length is checked once block_count is known
 * (lc_arch_read_keys). */
static lc_code read_array(const lc_value *v, const char *key, lc_hp f, lc_hparams *hp,
                          lc_error *err) {
    if (f == LC_HP_HEAD_COUNT_KV_LAYERS)
        return read_kv_layers(v, key, hp, err);
    const bool layers = f == LC_HP_RECURRENT_LAYERS || f == LC_HP_SWA_LAYERS;
    bool *flag = f == LC_HP_SWA_LAYERS ? hp->swa_layers : hp->recurrent;
    const bool ok = v->type == LC_VT_ARRAY &&
                    (layers ? v->arr.elem == LC_VT_BOOL
                            : v->arr.elem == LC_VT_I32 || v->arr.elem == LC_VT_U32) &&
                    (layers ? v->arr.count <= LC_ARCH_MAX_LAYERS : v->arr.count <= 4);
    if (!ok) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s is not %s", key,
                layers ? "an array of bools, one per layer" : "an array of 4 integers");
        lc_err_context(err, NULL, key);
        return LC_E_MALFORMED;
    }
    for (uint64_t i = 0; i < v->arr.count; i++) {
        const lc_value e = lc_value_arr_get(v, i);
        if (layers)
            flag[i] = e.b;
        else
            hp->rope_sections[i] = e.type == LC_VT_I32 ? (uint32_t)e.i : (uint32_t)e.u;
    }
    if (f == LC_HP_SWA_LAYERS) {
        hp->swa_layers_given = true;
        hp->n_swa_layers = (uint32_t)v->arr.count;
    } else if (layers) {
        hp->layer_kinds_given = true;
        hp->n_layer_kinds = (uint32_t)v->arr.count;
    } else {
        hp->rope_sections_given = true;
    }
    return LC_OK;
}

/* Reads key k into hp; absent keys leave hp alone. */
static lc_code read_key(const lc_model *m, const lc_arch *a, const lc_arch_key *k,
                        lc_hparams *hp, bool *present, lc_error *err) {
    char key[128];
    key_name(a, k, key, sizeof key);
    const lc_value *v = lc_model_find_meta(m, key);
    *present = v != NULL;
    if (!v || k->hp == LC_HP_FILE_TYPE)
        return LC_OK;
    if (k->type == LC_KEY_ARR)
        return read_array(v, key, k->hp, hp, err);
    const bool ok = k->type == LC_KEY_STR ? v->type == LC_VT_STRING
                  : k->type == LC_KEY_F32 ? v->type == LC_VT_F32 || v->type == LC_VT_F64
                  : k->type == LC_KEY_BOOL ? v->type == LC_VT_BOOL
                  : v->type == LC_VT_U32 || v->type == LC_VT_I32 || v->type == LC_VT_U64;
    if (!ok) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s has type %s", key,
                lc_vtype_name(v->type));
        lc_err_context(err, NULL, key);
        return LC_E_MALFORMED;
    }
    if (k->type == LC_KEY_STR) {
        hp->rope_scaling = strcmp(v->str.ptr, "yarn") == 0 ? LC_ROPE_SCALING_YARN
                         : strcmp(v->str.ptr, "linear") == 0 ? LC_ROPE_SCALING_LINEAR
                         : strcmp(v->str.ptr, "longrope") == 0 ? LC_ROPE_SCALING_LONGROPE
                         : LC_ROPE_SCALING_NONE;
        return LC_OK;
    }
    const double d = k->type == LC_KEY_F32 ? v->f : k->type == LC_KEY_BOOL ? (double)v->b
                   : v->type == LC_VT_I32 ? (double)v->i : (double)v->u;
    /* Counts must be positive, except those whose 0 means "none". */
    if (k->type == LC_KEY_U32 && !(d > 0 && d <= UINT32_MAX) &&
        !(d == 0 && (k->when == LC_KEY_IF_SET || k->when == LC_KEY_ALWAYS_0_OK))) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s is not a positive 32-bit count", key);
        lc_err_context(err, NULL, key);
        return LC_E_MALFORMED;
    }
    lc_arch_hparam_set(hp, k->hp, d);
    return LC_OK;
}

lc_code lc_arch_read_keys(const lc_model *m, const lc_arch **out, lc_hparams *hp,
                          lc_error *err) {
    const lc_value *name = lc_model_find_meta(m, "general.architecture");
    const lc_arch *a = name && name->type == LC_VT_STRING ? lc_arch_by_name(name->str.ptr) : NULL;
    if (!a) {
        char list[256] = "";
        for (const lc_arch *const *f = FAMILIES; *f; f++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", *list ? ", " : "",
                     (*f)->name);
        lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "general.architecture %.40s is not one of "
                "%s", name && name->type == LC_VT_STRING ? name->str.ptr : "(missing)", list);
        lc_err_context(err, NULL, "general.architecture");
        return LC_E_UNSUPPORTED;
    }
    lc_hparams h = { .rope_theta = 10000.0, .swa_pattern = a->default_swa_pattern,
                     .expert_norm_topk = a->recipe.moe_norm_topk };
    bool have_heads = false;
    for (size_t i = 0; i < a->n_early_keys + a->n_keys; i++) {
        const lc_arch_key *k = i < a->n_early_keys ? &a->early_keys[i]
                                                   : &a->keys[i - a->n_early_keys];
        bool present;
        LC_TRY(read_key(m, a, k, &h, &present, err));
        have_heads |= present && k->hp == LC_HP_HEAD_COUNT;
    }
    /* What no model runs without; the rest has llama.cpp's defaults. */
    static const char *const required[] = { "%s.attention.head_count", "%s.block_count",
                                            "%s.embedding_length" };
    const bool have[] = { have_heads, h.block_count != 0, h.embedding_length != 0 };
    for (size_t i = 0; i < sizeof have / sizeof *have; i++) {
        if (have[i])
            continue;
        char key[96];
        const lc_arch_key k = { required[i], LC_HP_BLOCK_COUNT, LC_KEY_U32, 0 };
        key_name(a, &k, key, sizeof key);
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s is missing", key);
        lc_err_context(err, NULL, key);
        return LC_E_MALFORMED;
    }
    if (!h.head_count_kv)
        h.head_count_kv = h.head_count;
    if (!h.head_dim)
        h.head_dim = h.embedding_length / h.head_count;
    if (!h.rope_dim)
        h.rope_dim = h.head_dim;
    if (h.n_head_count_kv_layers && h.n_head_count_kv_layers != h.block_count)
        return per_layer_length_error(a, "%s.attention.head_count_kv",
                                      LC_HP_HEAD_COUNT_KV_LAYERS, h.n_head_count_kv_layers,
                                      h.block_count, err);
    if (h.layer_kinds_given && h.n_layer_kinds != h.block_count)
        return per_layer_length_error(a, "%s.attention.recurrent_layers",
                                      LC_HP_RECURRENT_LAYERS, h.n_layer_kinds, h.block_count,
                                      err);
    if (h.swa_layers_given && h.n_swa_layers != h.block_count)
        return per_layer_length_error(a, "%s.attention.sliding_window_pattern",
                                      LC_HP_SWA_LAYERS, h.n_swa_layers, h.block_count, err);
    LC_TRY(lc_arch_hparams_finish(a, &h, err));
    *out = a;
    *hp = h;
    return LC_OK;
}
