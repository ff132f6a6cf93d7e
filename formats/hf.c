/* formats/hf.c: an HF folder -> a lazy GGUF model (and the GGUF model -> HF tensors).
 *
 * Folder layout read (see hf.h):
 *   DIR/config.json                                   hyperparameters
 *   DIR/model.safetensors.index.json + shards, or DIR/model.safetensors, or the same
 *   with pytorch_model.bin (torch.save checkpoints, through formats/pth.h)
 *   DIR/tokenizer.model | tokenizer.json (+ tokenizer_config.json, ...)
 * GGUF keys written, in this order (convert_hf_to_gguf.py's, see the differences below):
 *   general.architecture str, general.type str "model", general.sampling.{top_k i32,
 *   top_p f32, min_p f32, temp f32, penalty_last_n i32, penalty_repeat f32} from
 *   generation_config.json, general.name str, general.size_label str,
 *   <arch>.* (hf_config.c), <arch>.attention.{key,value}_length u32 when config.json
 *   has head_dim, general.file_type u32, general.quantization_version u32 = 2,
 *   tokenizer.ggml.add_space_prefix bool (llama, from tokenizer_config.json's
 *   add_prefix_space), tokenizer.* (hf_tokenizer.c).
 *
 * Differences from convert_hf_to_gguf.py (llama-cpp-python 0.3.36's copy), on purpose
 * or for lack of time:
 *   - general.name is the folder name in title form ("llama-spm" -> "Llama Spm"); the
 *     reference also reads README.md model cards, config "_name_or_path" and splits
 *     size labels, versions and fine-tune words out of the name (general.basename,
 *     .finetune, .version); we do none of that.
 *   - NaN payloads: bf16/f16 -> bf16 and f32 -> bf16 NaNs become sign|0x7fc0 here; the
 *     reference keeps the top payload bits and sets the quiet bit. Weights hold no NaN.
 *   - rope_freqs.weight (llama3 scaling) uses glibc's powf where the reference uses
 *     torch's float32 pow; they disagree by an ulp for a few exponents (8 of 1248 in a
 *     sweep of common bases and head sizes), which can move a factor in the smoothing
 *     band by an ulp. Identical on the configurations tried.
 *   - The special token keys come in hf_special.c's order (bos, eos, ...), which can
 *     differ from SpecialVocab's; values are the same.
 * Tensor order: rope_freqs.weight first (when made), then the source's order. */
#include "formats/hf.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/hf_config.h"
#include "formats/hf_impl.h"
#include "formats/hf_meta_layout.h"
#include "formats/hf_tensors.h"
#include "formats/hf_tokenizer.h"
#include "formats/hf_view.h"
#include "formats/pth.h"
#include "formats/safetensors.h"
#include "libconvert/alloc.h"
#include "libconvert/convert.h"
#include "libconvert/map.h"
#include "quant/quant.h"

/* ---- source files read with pread (see hf_view.h) ---- */

typedef struct srcfile {
    struct srcfile *next;
    int fd;
    char name[];            /* file name inside the folder */
} srcfile;

static void srcfiles_close(void *p) {
    for (srcfile *f = p, *next; f; f = next) {
        next = f->next;
        if (f->fd >= 0)
            close(f->fd);
        lc_free(f);
    }
}

/* ---- building the GGUF model ---- */

/* The conversion state. */
typedef struct conv {
    const char *dir;
    const lc_hf_opts *o;
    lc_hf_config cfg;
    cJSON *config;          /* config.json, for fields lc_hf_config does not keep */
    cJSON *config_extra;    /* model.safetensors.index.json when there is one */
    lc_model *in;           /* the safetensors tensors (owned by out once handed) */
    bool in_owned;          /* in was handed to out (or freed by the failed hand-over) */
    bool meta;              /* Meta's layout: params.json + consolidated.00.pth */
    lc_model *work;         /* intermediate F32 tensors feeding Q8_0 (owned by out) */
    lc_model *out;
    lc_dtype ftype;         /* the resolved out type */
    cJSON *weight_map;      /* model.safetensors.index.json's (NULL: one file) */
    srcfile *files;         /* opened source files (handed to out as one resource) */
    uint16_t *seen;         /* per layer: which required tensors came */
    bool seen_embd, seen_norm;
    uint64_t params;
} conv;

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* convert_hf_to_gguf.py's choice per tensor: F32 for 1-D, norms and anything not a
 * ".weight"; else the file type, with Q8_0 falling back to F16 when a row is not whole
 * blocks (gguf-py's QuantError). */
static lc_dtype pick_dtype(const char *gname, uint32_t ndim, const uint64_t *shape,
                           lc_dtype ftype) {
    if (ndim <= 1 || ends_with(gname, "_norm.weight") || !ends_with(gname, ".weight"))
        return LC_DT_F32;
    if (ftype == LC_DT_Q8_0 && shape[ndim - 1] % 32 != 0)
        return LC_DT_F16;
    return ftype;
}

/* Required per-layer tensors and the shape config.json implies for each. */
static const char *const LAYER_REQ[] = {
    "attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
    "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight",
    "ffn_down.weight", "attn_q.bias", "attn_k.bias", "attn_v.bias",
};
enum { N_LAYER_REQ_LLAMA = 9, N_LAYER_REQ_QWEN2 = 12 };

/* Expected shape of GGUF tensor `g` (outermost first); false when it has no rule. */
static bool expected_shape(const lc_hf_config *c, const char *g, uint32_t *nd, uint64_t sh[2],
                           int *layer_slot) {
    const uint64_t h = c->embedding_length, q = (uint64_t)c->head_count * c->head_dim,
                   kv = (uint64_t)c->head_count_kv * c->head_dim, ff = c->feed_forward_length,
                   v = c->vocab_size;
    *layer_slot = -1;
    if (strcmp(g, "token_embd.weight") == 0 || strcmp(g, "output.weight") == 0) {
        *nd = 2, sh[0] = v, sh[1] = h;
        return true;
    }
    if (strcmp(g, "output_norm.weight") == 0) {
        *nd = 1, sh[0] = h;
        return true;
    }
    const char *p = strchr(g + 4, '.');     /* "blk.N.<suffix>" */
    if (strncmp(g, "blk.", 4) != 0 || !p)
        return false;
    p++;
    const struct { uint32_t nd; uint64_t a, b; } rule[] = {
        { 1, h, 0 }, { 2, q, h }, { 2, kv, h }, { 2, kv, h }, { 2, h, q }, { 1, h, 0 },
        { 2, ff, h }, { 2, ff, h }, { 2, h, ff }, { 1, q, 0 }, { 1, kv, 0 }, { 1, kv, 0 },
    };
    for (int i = 0; i < N_LAYER_REQ_QWEN2; i++) {
        if (strcmp(p, LAYER_REQ[i]) == 0) {
            *nd = rule[i].nd, sh[0] = rule[i].a, sh[1] = rule[i].b;
            *layer_slot = i;
            return true;
        }
    }
    return false;
}

static lc_code check_shape(conv *c, const char *g, const lc_tensor *s, lc_error *err) {
    uint32_t nd;
    uint64_t sh[2];
    int slot;
    if (!expected_shape(&c->cfg, g, &nd, sh, &slot))
        return LC_OK;
    if (s->ndim != nd || s->shape[0] != sh[0] || (nd == 2 && s->shape[1] != sh[1])) {
        char have[96], want[64];
        lc_shape_format(s, have, sizeof have);
        if (nd == 2)
            snprintf(want, sizeof want, "[%" PRIu64 ", %" PRIu64 "]", sh[0], sh[1]);
        else
            snprintf(want, sizeof want, "[%" PRIu64 "]", sh[0]);
        lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "tensor %.80s has shape %s but config.json "
                "implies %s", s->name, have, want);
        lc_err_context(err, NULL, s->name);
        return LC_E_MISMATCH;
    }
    if (slot >= 0)
        c->seen[strtoul(g + 4, NULL, 10)] |= (uint16_t)(1u << slot);
    else if (strcmp(g, "token_embd.weight") == 0)
        c->seen_embd = true;
    else if (strcmp(g, "output_norm.weight") == 0)
        c->seen_norm = true;
    return LC_OK;
}

static lc_code check_complete(const conv *c, lc_error *err) {
    const int need = c->cfg.arch == LC_HF_ARCH_QWEN2 ? N_LAYER_REQ_QWEN2 : N_LAYER_REQ_LLAMA;
    if (!c->seen_embd)
        return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET,
                       "the model has no model.embed_tokens.weight");
    if (!c->seen_norm)
        return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the model has no model.norm.weight");
    for (uint32_t l = 0; l < c->cfg.block_count; l++) {
        for (int i = 0; i < need; i++) {
            if (!(c->seen[l] & (1u << i)))
                return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET,
                               "layer %u of %u has no tensor for GGUF blk.%u.%s", l,
                               c->cfg.block_count, l, LAYER_REQ[i]);
        }
    }
    return LC_OK;
}

static void plan_line(const conv *c, const char *hf, const char *g, lc_dtype from, lc_dtype to,
                      const lc_tensor *t) {
    if (!c->o->plan)
        return;
    char shape[96];
    lc_shape_format(t, shape, sizeof shape);
    fprintf(c->o->plan, "tensor %-44s -> %-26s %-4s -> %-4s %-14s %12" PRIu64 " bytes\n", hf,
            g, lc_dtype_name(from), lc_dtype_name(to), shape, t->nbytes);
}

/* The descriptor of the file holding s (opened once per file), or -1 when s is not a
 * view of a safetensors file in the folder. */
static lc_code source_fd(conv *c, const lc_tensor *s, int *fd, lc_error *err) {
    *fd = -1;
    if (!s->data || s->file_offset == LC_NO_OFFSET)
        return LC_OK;
    const char *file = "model.safetensors";
    if (c->weight_map) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(c->weight_map, s->name);
        if (!cJSON_IsString(f))
            return LC_OK;
        file = f->valuestring;
    }
    srcfile *sf = c->files;
    while (sf && strcmp(sf->name, file) != 0)
        sf = sf->next;
    if (!sf) {
        char path[4096];
        LC_TRY(lc_hf_json_path(path, sizeof path, c->dir, file, err));
        if (!(sf = lc_calloc(1, sizeof *sf + strlen(file) + 1)))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        strcpy(sf->name, file);
        sf->fd = open(path, O_RDONLY | O_CLOEXEC);
        sf->next = c->files;
        c->files = sf;
        if (sf->fd < 0) {
            lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot open %s again", file);
            lc_err_context(err, path, NULL);
            return LC_E_IO;
        }
    }
    *fd = sf->fd;
    return LC_OK;
}

/* Adds GGUF tensor g reading source s (permuted for Q/K roles of llama), in dtype `to`. */
static lc_code add_tensor(conv *c, const lc_tensor *s, const char *g, lc_hf_role role,
                          lc_dtype to, lc_error *err) {
    const uint32_t heads = role == LC_HF_ROLE_Q ? c->cfg.head_count
                         : role == LC_HF_ROLE_K ? c->cfg.head_count_kv : 0;
    const bool permute = heads && c->cfg.arch == LC_HF_ARCH_LLAMA;
    const bool quant = lc_dtype_is_quant(to);
    lc_tensor *t, *w = NULL;
    const lc_tensor *from;
    char dname[160];
    snprintf(dname, sizeof dname, "%s#map", g);
    /* pread from the file rather than copy out of the map: the map's pages would count
     * in the RSS of every thread that touched them, and a plain copy becomes a kernel
     * copy (file_range). The map is the fallback when the file cannot be named. */
    int fd = -1;
    LC_TRY(source_fd(c, s, &fd, err));
    if (fd >= 0)
        LC_TRY(lc_hf_view_file(c->work, dname, s, fd, &from, err));
    else
        LC_TRY(lc_hf_view_map(c->work, dname, s, &from, err));
    LC_TRY(lc_model_add_tensor(quant ? c->work : c->out, g, s->dtype, s->ndim, s->shape, &t,
                               err));
    /* bf16 -> bf16 and f16 -> f16 are copies: no cast is added below. */
    if (permute)
        LC_TRY(lc_hf_tensors_permute(t, from, heads, false, err));
    else
        LC_TRY(lc_hf_tensors_forward(t, from, err));
    if (!quant) {
        LC_TRY(lc_tensor_cast(t, to, err));
    } else {
        LC_TRY(lc_tensor_cast(t, LC_DT_F32, err));
        w = t;
        LC_TRY(lc_model_add_tensor(c->out, g, to, s->ndim, s->shape, &t, err));
        LC_TRY(lc_hf_view_quant(t, w, to, true, err));
    }
    uint64_t numel = 0;
    lc_tensor_numel(t, &numel);
    c->params += numel;
    plan_line(c, s->name, g, s->dtype, to, t);
    return LC_OK;
}

/* rope_freqs.weight for rope_scaling type llama3, as convert_hf_to_gguf.py computes it
 * (in float32, as its torch tensors are; one factor per pair). */
static lc_code add_rope_freqs(conv *c, const cJSON *rs, lc_error *err) {
    const uint32_t dim = c->cfg.head_dim;
    const uint64_t n = dim / 2;
    const cJSON *j;
    double factor = 8.0, lo_f = 1.0, hi_f = 4.0, old_ctx = 8192;
    if ((j = cJSON_GetObjectItemCaseSensitive(rs, "factor")) && cJSON_IsNumber(j))
        factor = j->valuedouble;
    if ((j = cJSON_GetObjectItemCaseSensitive(rs, "low_freq_factor")) && cJSON_IsNumber(j))
        lo_f = j->valuedouble;
    if ((j = cJSON_GetObjectItemCaseSensitive(rs, "high_freq_factor")) && cJSON_IsNumber(j))
        hi_f = j->valuedouble;
    j = cJSON_GetObjectItemCaseSensitive(rs, "original_max_position_embeddings");
    if (j && cJSON_IsNumber(j))
        old_ctx = j->valuedouble;
    float *v = lc_malloc((size_t)n * sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    /* The wavelength limits are Python floats; everything after freq is a float32
     * tensor op in torch, with the Python scalars rounded to float32 first. */
    const double lo_wl = old_ctx / lo_f, hi_wl = old_ctx / hi_f;
    const float base = (float)c->cfg.rope_theta;
    for (uint64_t i = 0; i < n; i++) {
        /* torch: base ** (arange(0, dim, 2, float32) / dim), all in float32 */
        const float e = (float)(2 * i) / (float)dim;
        const float freq = 1.0f / powf(base, e);
        const float wl = (float)(2 * 3.141592653589793) / freq;   /* 2 * math.pi / freq */
        float r;
        if (wl < (float)hi_wl)
            r = 1;
        else if (wl > (float)lo_wl)
            r = (float)factor;
        else {
            const float smooth = ((float)old_ctx / wl - (float)lo_f) / (float)(hi_f - lo_f);
            r = 1.0f / ((1.0f - smooth) / (float)factor + smooth);
        }
        v[i] = r;
    }
    lc_code rc = lc_model_own(c->out, v, lc_free, err);
    lc_tensor *t;
    const uint64_t shape[1] = { n };
    if (rc == LC_OK)
        rc = lc_model_add_tensor(c->out, "rope_freqs.weight", LC_DT_F32, 1, shape, &t, err);
    if (rc == LC_OK) {
        t->data = (const uint8_t *)v;
        c->params += n;
        if (c->o->plan)
            fprintf(c->o->plan, "tensor %-44s -> %-26s %-4s -> %-4s [%" PRIu64 "]\n",
                    "(computed: llama3 rope factors)", "rope_freqs.weight", "F32", "F32", n);
    }
    return rc;
}

static lc_code load_tensors(conv *c, lc_error *err) {
    if (lc_hf_json_exists(c->dir, "model.safetensors.index.json")) {
        LC_TRY(lc_safetensors_load_index(c->dir, &c->in, err));
        cJSON *idx;   /* already validated by the loader; kept for the file names */
        LC_TRY(lc_hf_json_load(c->dir, "model.safetensors.index.json", false, &idx, err));
        c->config_extra = idx;
        c->weight_map = cJSON_GetObjectItemCaseSensitive(idx, "weight_map");
        return LC_OK;
    }
    char path[4096];
    LC_TRY(lc_hf_json_path(path, sizeof path, c->dir, "model.safetensors", err));
    if (lc_hf_json_exists(c->dir, "model.safetensors"))
        return lc_safetensors_load(path, &c->in, err);
    /* Older transformers checkpoints: torch.save files, read by the pth reader (lazy
     * sources, so the views below read through it). */
    if (lc_hf_json_exists(c->dir, "pytorch_model.bin.index.json"))
        return lc_pth_load(c->dir, NULL, &c->in, err);
    LC_TRY(lc_hf_json_path(path, sizeof path, c->dir, "pytorch_model.bin", err));
    if (lc_hf_json_exists(c->dir, "pytorch_model.bin"))
        return lc_pth_load(path, NULL, &c->in, err);
    lc_fail(err, LC_E_NOTFOUND, LC_NO_OFFSET, "the folder has no model.safetensors, "
            "pytorch_model.bin or an index of either");
    lc_err_context(err, c->dir, NULL);
    return LC_E_NOTFOUND;
}

static lc_dtype auto_type(const lc_model *in) {
    for (size_t i = 0; i < lc_model_tensor_count(in); i++) {
        const lc_tensor *t = lc_model_tensor(in, i);
        if (t->ndim < 2)
            continue;
        if (t->dtype == LC_DT_BF16)
            return LC_DT_BF16;
        if (t->dtype == LC_DT_F16)
            return LC_DT_F16;
        break;
    }
    return LC_DT_F16;
}

static lc_code add_tensors(conv *c, lc_error *err) {
    char g[128];
    for (size_t i = 0; i < lc_model_tensor_count(c->in); i++) {
        const lc_tensor *s = lc_model_tensor(c->in, i);
        lc_hf_role role;
        if (c->meta)
            LC_TRY(lc_hf_meta_layout_name(s->name, c->cfg.block_count, g, sizeof g, &role,
                                          err));
        else
            LC_TRY(lc_hf_tensors_name(s->name, c->cfg.block_count, g, sizeof g, &role, err));
        if (role == LC_HF_ROLE_DROP)
            continue;
        if (lc_dtype_is_quant(s->dtype) || !lc_convert_supported(s->dtype, LC_DT_F32)) {
            lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "tensor %.80s has dtype %s, which "
                    "does not convert to a float", s->name, lc_dtype_name(s->dtype));
            lc_err_context(err, NULL, s->name);
            return LC_E_UNSUPPORTED;
        }
        LC_TRY(check_shape(c, g, s, err));
        LC_TRY(add_tensor(c, s, g, role, pick_dtype(g, s->ndim, s->shape, c->ftype), err));
    }
    return check_complete(c, err);
}

/* general.sampling.* from generation_config.json, with gguf-py's types. */
static lc_code add_sampling(lc_model *m, const char *dir, lc_error *err) {
    static const struct { const char *json, *key; bool is_int; } S[] = {
        { "top_k", "general.sampling.top_k", true },
        { "top_p", "general.sampling.top_p", false },
        { "min_p", "general.sampling.min_p", false },
        { "xtc_probability", "general.sampling.xtc_probability", false },
        { "xtc_threshold", "general.sampling.xtc_threshold", false },
        { "temperature", "general.sampling.temp", false },
        { "penalty_last_n", "general.sampling.penalty_last_n", true },
        { "repetition_penalty", "general.sampling.penalty_repeat", false },
        { "mirostat", "general.sampling.mirostat", true },
        { "mirostat_tau", "general.sampling.mirostat_tau", false },
        { "mirostat_eta", "general.sampling.mirostat_eta", false },
    };
    cJSON *gc;
    LC_TRY(lc_hf_json_load(dir, "generation_config.json", true, &gc, err));
    lc_code rc = LC_OK;
    for (size_t i = 0; gc && rc == LC_OK && i < sizeof S / sizeof *S; i++) {
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(gc, S[i].json);
        if (!cJSON_IsNumber(j))
            continue;
        if (S[i].is_int) {
            int64_t v;
            rc = lc_hf_json_int(j, S[i].json, INT32_MIN, INT32_MAX, &v, err);
            lc_value val = lc_value_int(LC_VT_I32, v);
            if (rc == LC_OK)
                rc = lc_model_set_meta(m, S[i].key, &val, err);
        } else {
            rc = lc_hf_json_meta_f32(m, S[i].key, j->valuedouble, err);
        }
    }
    cJSON_Delete(gc);
    return rc;
}

/* Python's str.title() for ASCII: upper after a non-letter, lower after a letter. */
static void title_word(char *w, size_t n) {
    bool prev_alpha = false;
    for (size_t i = 0; i < n; i++) {
        const char ch = w[i];
        const bool lower = ch >= 'a' && ch <= 'z', upper = ch >= 'A' && ch <= 'Z';
        if (lower && !prev_alpha)
            w[i] = (char)(ch - 'a' + 'A');
        else if (upper && prev_alpha)
            w[i] = (char)(ch - 'A' + 'a');
        prev_alpha = lower || upper;
    }
}

/* gguf-py's Metadata.id_to_title: '-' -> ' ', words split on blanks, a word that is
 * all lower case (and not a version "v1.2" or starting with a digit) title-cased. */
static void id_to_title(const char *id, char *out, size_t cap) {
    size_t o = 0;
    const char *p = id;
    while (*p) {
        while (*p == ' ' || *p == '-' || *p == '\t')
            p++;
        const char *w = p;
        while (*p && *p != ' ' && *p != '-' && *p != '\t')
            p++;
        const size_t n = (size_t)(p - w);
        if (n == 0 || o + n + 2 > cap)
            break;
        if (o)
            out[o++] = ' ';
        memcpy(out + o, w, n);
        bool has_lower = false, has_upper = false, version = w[0] >= '0' && w[0] <= '9';
        for (size_t i = 0; i < n; i++) {
            has_lower |= w[i] >= 'a' && w[i] <= 'z';
            has_upper |= w[i] >= 'A' && w[i] <= 'Z';
        }
        if (w[0] == 'v' && n > 1) {     /* v\d+(\.\d+)* */
            version = w[1] >= '0' && w[1] <= '9';
            for (size_t i = 1; version && i < n; i++)
                version = (w[i] >= '0' && w[i] <= '9') ||
                          (w[i] == '.' && i + 1 < n && w[i + 1] >= '0' && w[i + 1] <= '9');
        }
        if (has_lower && !has_upper && !version)
            title_word(out + o, n);
        o += n;
    }
    out[o] = '\0';
}

/* gguf-py's model_weight_count_rounded_notation(n, min_digits=2). */
static void size_label(uint64_t n, char *out, size_t cap) {
    double x = (double)n;
    const char *suffix = "K";
    if (x > 1e12)
        x *= 1e-12, suffix = "T";
    else if (x > 1e9)
        x *= 1e-9, suffix = "B";
    else if (x > 1e6)
        x *= 1e-6, suffix = "M";
    else
        x *= 1e-3;
    /* Python's round() is to nearest even, like nearbyint in the default mode. */
    char digits[32];
    snprintf(digits, sizeof digits, "%.0f", nearbyint(x));
    const char *d = digits;
    while (*d == '0')
        d++;
    int fix = 2 - (int)strlen(d);
    snprintf(out, cap, "%.*f%s", fix > 0 ? fix : 0, x, suffix);
}

static lc_code base_name(const char *dir, char *out, size_t cap) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", dir);
    size_t n = strlen(tmp);
    while (n > 1 && tmp[n - 1] == '/')
        tmp[--n] = '\0';
    const char *b = strrchr(tmp, '/');
    id_to_title(b ? b + 1 : tmp, out, cap);
    return LC_OK;
}

static uint32_t ftype_id(lc_dtype t) {
    switch (t) {
    case LC_DT_F32: return LC_HF_FTYPE_F32;
    case LC_DT_F16: return LC_HF_FTYPE_F16;
    case LC_DT_Q8_0: return LC_HF_FTYPE_Q8_0;
    default: return LC_HF_FTYPE_BF16;
    }
}

/* lc_hf_config_to_gguf's keys, less the two only convert_hf_to_gguf.py's LlamaModel
 * writes (vocab_size, rope.dimension_count) when the architecture is qwen2. */
static lc_code add_config_keys(const conv *c, lc_model *m, lc_error *err) {
    lc_model *tmp = lc_model_new();
    if (!tmp)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_code rc = lc_hf_config_to_gguf(&c->cfg, NULL, tmp, err);
    for (size_t i = 0; rc == LC_OK && i < lc_model_meta_count(tmp); i++) {
        const lc_kv *kv = lc_model_meta(tmp, i);
        if (c->cfg.arch == LC_HF_ARCH_QWEN2 && (ends_with(kv->key, ".vocab_size") ||
                                                ends_with(kv->key, ".rope.dimension_count")))
            continue;
        lc_value v;
        rc = lc_value_copy(&v, &kv->val, err);
        if (rc == LC_OK)
            rc = lc_model_set_meta(m, kv->key, &v, err);
    }
    lc_model_free(tmp);
    return rc;
}

/* gguf-py's SpecialVocab: a ByteLevel post-processor in tokenizer.json sets add_bos and
 * add_eos to false unless something set them (hf_special.c lacks this rule; it belongs
 * there, and this goes away when it has it). */
static lc_code add_bytelevel_defaults(const char *dir, lc_model *m, lc_error *err) {
    cJSON *tj;
    LC_TRY(lc_hf_json_load(dir, "tokenizer.json", true, &tj, err));
    const cJSON *pp = cJSON_GetObjectItemCaseSensitive(tj, "post_processor");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(pp, "processors");
    bool bytelevel = false;
    for (const cJSON *one = cJSON_IsArray(list) ? list->child : pp; one;
         one = cJSON_IsArray(list) ? one->next : NULL) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(one, "type");
        bytelevel |= cJSON_IsString(type) && strcmp(type->valuestring, "ByteLevel") == 0;
    }
    cJSON_Delete(tj);
    static const char *const keys[] = { "tokenizer.ggml.add_bos_token",
                                        "tokenizer.ggml.add_eos_token" };
    for (size_t i = 0; bytelevel && i < 2; i++)
        if (!lc_model_find_meta(m, keys[i]))
            LC_TRY(lc_hf_json_meta_bool(m, keys[i], false, err));
    return LC_OK;
}

static lc_code add_keys(conv *c, lc_error *err) {
    lc_model *m = c->out;
    char name[256], label[32], key[96];
    LC_TRY(lc_model_set_meta_str(m, "general.architecture", c->cfg.arch_name, err));
    LC_TRY(lc_model_set_meta_str(m, "general.type", "model", err));
    LC_TRY(add_sampling(m, c->dir, err));
    base_name(c->dir, name, sizeof name);
    LC_TRY(lc_model_set_meta_str(m, "general.name", name, err));
    if (c->params > 0) {
        size_label(c->params, label, sizeof label);
        LC_TRY(lc_model_set_meta_str(m, "general.size_label", label, err));
    }
    /* Placeholders fix the reference's order (a key keeps its first position when
     * lc_hf_config_to_gguf sets it): rope scaling before freq_base, head_dim's keys and
     * file_type before vocab_size and rope.dimension_count. */
    const char *const order[] = {
        "block_count", "context_length", "embedding_length", "feed_forward_length",
        "attention.head_count", "attention.head_count_kv",
        c->cfg.rope_scaling ? "rope.scaling.type" : NULL,
        c->cfg.rope_scaling ? "rope.scaling.factor" : NULL,
        c->cfg.rope_scaling_orig_ctx ? "rope.scaling.original_context_length" : NULL,
        "rope.freq_base", "attention.layer_norm_rms_epsilon",
    };
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        if (!order[i])
            continue;
        snprintf(key, sizeof key, "%s.%s", c->cfg.arch_name, order[i]);
        LC_TRY(lc_hf_json_meta_u32(m, key, 0, err));
    }
    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(c->config, "head_dim");
    if (hd && !cJSON_IsNull(hd)) {
        snprintf(key, sizeof key, "%s.attention.key_length", c->cfg.arch_name);
        LC_TRY(lc_hf_json_meta_u32(m, key, c->cfg.head_dim, err));
        snprintf(key, sizeof key, "%s.attention.value_length", c->cfg.arch_name);
        LC_TRY(lc_hf_json_meta_u32(m, key, c->cfg.head_dim, err));
    }
    LC_TRY(lc_hf_json_meta_u32(m, "general.file_type", ftype_id(c->ftype), err));
    LC_TRY(add_config_keys(c, m, err));
    LC_TRY(lc_hf_json_meta_u32(m, "general.quantization_version", 2, err));
    if (c->cfg.arch == LC_HF_ARCH_LLAMA) {
        cJSON *tc;
        LC_TRY(lc_hf_json_load(c->dir, "tokenizer_config.json", true, &tc, err));
        const cJSON *ap = cJSON_GetObjectItemCaseSensitive(tc, "add_prefix_space");
        lc_code rc = cJSON_IsBool(ap) ? lc_hf_json_meta_bool(m, "tokenizer.ggml.add_space_prefix",
                                                             cJSON_IsTrue(ap), err) : LC_OK;
        cJSON_Delete(tc);
        LC_TRY(rc);
    }
    LC_TRY(lc_hf_tokenizer_to_gguf(c->dir, &c->cfg, c->o->pre, m, err));
    return add_bytelevel_defaults(c->dir, m, err);
}

/* The first dimension of 2-D tensor NAME in m, or 0. */
static uint64_t rows_of(const lc_model *m, const char *name) {
    const lc_tensor *t = lc_model_find_tensor(m, name);
    return t && t->ndim == 2 ? t->shape[0] : 0;
}

/* Meta's layout: the tensors first (params.json lacks the FFN size), then params.json. */
static lc_code load_meta_config(conv *c, lc_error *err) {
    char path[4096];
    lc_map *map = NULL;
    LC_TRY(lc_hf_meta_layout_load(c->dir, &c->in, err));
    LC_TRY(lc_hf_json_path(path, sizeof path, c->dir, "params.json", err));
    lc_code rc = lc_map_open(path, &map, err);
    if (rc == LC_OK)
        rc = lc_hf_meta_layout_config((const char *)map->data, (size_t)map->size,
                                      rows_of(c->in, "tok_embeddings.weight"),
                                      rows_of(c->in, "layers.0.feed_forward.w1.weight"),
                                      &c->cfg, err);
    lc_map_close(map);
    lc_err_context(err, path, NULL);
    return rc;
}

/* Reads config.json; a llama3 rope_scaling (which lc_hf_config refuses because it
 * needs a tensor) is taken out before parsing and returned in *llama3 (owned by
 * c->config). */
static lc_code load_config(conv *c, const cJSON **llama3, lc_error *err) {
    char path[4096];
    *llama3 = NULL;
    LC_TRY(lc_hf_json_load(c->dir, "config.json", false, &c->config, err));
    LC_TRY(lc_hf_json_path(path, sizeof path, c->dir, "config.json", err));
    cJSON *rs = cJSON_GetObjectItemCaseSensitive(c->config, "rope_scaling");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!cJSON_IsString(t))
        t = cJSON_GetObjectItemCaseSensitive(rs, "type");
    cJSON *copy = c->config;
    if (cJSON_IsString(t) && strcmp(t->valuestring, "llama3") == 0) {
        copy = cJSON_Duplicate(c->config, true);
        if (!copy)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        cJSON_ReplaceItemInObjectCaseSensitive(copy, "rope_scaling", cJSON_CreateNull());
        *llama3 = rs;
    }
    char *text = cJSON_PrintUnformatted(copy);
    if (copy != c->config)
        cJSON_Delete(copy);
    if (!text)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_code rc = lc_hf_config_parse(text, strlen(text), &c->cfg, err);
    cJSON_free(text);
    lc_err_context(err, path, NULL);
    return rc;
}

lc_code lc_hf_to_gguf(const char *dir, const lc_hf_opts *o, lc_model **out, lc_error *err) {
    conv c = { .dir = dir, .o = o };
    const cJSON *llama3 = NULL;
    lc_code rc;
    *out = NULL;
    c.meta = lc_hf_meta_layout_is(dir);
    if ((rc = c.meta ? load_meta_config(&c, err) : load_config(&c, &llama3, err)) != LC_OK)
        goto done;
    if (!(c.out = lc_model_new()) || !(c.work = lc_model_new()) ||
        !(c.seen = lc_calloc(c.cfg.block_count, sizeof *c.seen))) {
        lc_model_free(c.work);
        c.work = NULL;
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    /* The intermediates and the source model live as long as out (its tensors read
     * them); nothing here dereferences another model's tensors when freeing. */
    rc = lc_model_own(c.out, c.work, (void (*)(void *))lc_model_free, err);
    if (rc == LC_OK && !c.meta && (!o->vocab_only || o->outtype == LC_DT_INVALID))
        rc = load_tensors(&c, err);
    if (rc == LC_OK && c.in) {
        c.in_owned = true;
        rc = lc_model_own(c.out, c.in, (void (*)(void *))lc_model_free, err);
    }
    if (rc != LC_OK)
        goto done;
    lc_model *in = c.in;       /* borrowed from here on */
    c.ftype = o->outtype != LC_DT_INVALID ? o->outtype : in ? auto_type(in) : LC_DT_F16;
    if (!o->vocab_only) {
        if (llama3 && (rc = add_rope_freqs(&c, llama3, err)) != LC_OK)
            goto done;
        if ((rc = add_tensors(&c, err)) != LC_OK)
            goto done;
    }
    rc = add_keys(&c, err);
done:
    if (c.files && lc_model_own(c.out, c.files, srcfiles_close, err) != LC_OK && rc == LC_OK)
        rc = err ? err->code : LC_E_NOMEM;  /* (out is freed below; own closed the files) */
    if (!c.in_owned)
        lc_model_free(c.in);
    cJSON_Delete(c.config);
    cJSON_Delete(c.config_extra);
    lc_free(c.seen);
    if (rc != LC_OK) {
        lc_model_free(c.out);
        return rc;
    }
    *out = c.out;
    return LC_OK;
}

/* ---- naming ---- */

lc_code lc_hf_default_name(const lc_model *m, bool vocab_only, char *buf, size_t cap,
                           lc_error *err) {
    const lc_value *name = lc_model_find_meta(m, "general.name");
    const lc_value *label = lc_model_find_meta(m, "general.size_label");
    const lc_value *ft = lc_model_find_meta(m, "general.file_type");
    char base[256];
    snprintf(base, sizeof base, "%s",
             name && name->type == LC_VT_STRING ? name->str.ptr : "ggml-model");
    for (char *p = base; *p; p++)
        if (*p == ' ' || *p == '/')
            *p = '-';
    const char *enc = "F16";
    if (ft && ft->type == LC_VT_U32)
        enc = ft->u == LC_HF_FTYPE_F32 ? "F32" : ft->u == LC_HF_FTYPE_Q8_0 ? "Q8_0"
            : ft->u == LC_HF_FTYPE_BF16 ? "BF16" : "F16";
    int n;
    if (vocab_only)
        n = snprintf(buf, cap, "%s-vocab.gguf", base);
    else if (label && label->type == LC_VT_STRING)
        n = snprintf(buf, cap, "%s-%s-%s.gguf", base, label->str.ptr, enc);
    else
        n = snprintf(buf, cap, "%s-%s.gguf", base, enc);
    if (n < 0 || (size_t)n >= cap)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "file name buffer of %zu bytes is too small",
                       cap);
    return LC_OK;
}

/* ---- the way back ---- */

static const struct { const char *gguf, *hf; lc_hf_role role; } BACK[] = {
    { "attn_norm.weight", "input_layernorm.weight", LC_HF_ROLE_PLAIN },
    { "attn_q.weight", "self_attn.q_proj.weight", LC_HF_ROLE_Q },
    { "attn_q.bias", "self_attn.q_proj.bias", LC_HF_ROLE_Q },
    { "attn_k.weight", "self_attn.k_proj.weight", LC_HF_ROLE_K },
    { "attn_k.bias", "self_attn.k_proj.bias", LC_HF_ROLE_K },
    { "attn_v.weight", "self_attn.v_proj.weight", LC_HF_ROLE_PLAIN },
    { "attn_v.bias", "self_attn.v_proj.bias", LC_HF_ROLE_PLAIN },
    { "attn_output.weight", "self_attn.o_proj.weight", LC_HF_ROLE_PLAIN },
    { "ffn_norm.weight", "post_attention_layernorm.weight", LC_HF_ROLE_PLAIN },
    { "ffn_gate.weight", "mlp.gate_proj.weight", LC_HF_ROLE_PLAIN },
    { "ffn_up.weight", "mlp.up_proj.weight", LC_HF_ROLE_PLAIN },
    { "ffn_down.weight", "mlp.down_proj.weight", LC_HF_ROLE_PLAIN },
}, BACK_TOP[] = {
    { "token_embd.weight", "model.embed_tokens.weight", LC_HF_ROLE_PLAIN },
    { "output_norm.weight", "model.norm.weight", LC_HF_ROLE_PLAIN },
    { "output.weight", "lm_head.weight", LC_HF_ROLE_PLAIN },
    { "rope_freqs.weight", NULL, LC_HF_ROLE_DROP },
};

static lc_code back_name(const char *g, char *buf, size_t cap, lc_hf_role *role, lc_error *err) {
    for (size_t i = 0; i < sizeof BACK_TOP / sizeof *BACK_TOP; i++) {
        if (strcmp(g, BACK_TOP[i].gguf) == 0) {
            *role = BACK_TOP[i].role;
            if (BACK_TOP[i].hf)
                snprintf(buf, cap, "%s", BACK_TOP[i].hf);
            return LC_OK;
        }
    }
    unsigned long n;
    int used = 0;
    if (sscanf(g, "blk.%lu.%n", &n, &used) == 1 && used > 0 && n < 1000000000ul) {
        for (size_t i = 0; i < sizeof BACK / sizeof *BACK; i++) {
            if (strcmp(g + used, BACK[i].gguf) == 0) {
                *role = BACK[i].role;
                snprintf(buf, cap, "model.layers.%lu.%s", n, BACK[i].hf);
                return LC_OK;
            }
        }
    }
    lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "tensor %.80s has no Hugging Face name", g);
    lc_err_context(err, NULL, g);
    return LC_E_UNSUPPORTED;
}

static lc_code meta_u32(const lc_model *m, const char *arch, const char *suffix, uint32_t *v,
                        lc_error *err) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    const lc_value *x = lc_model_find_meta(m, key);
    if (!x || x->type != LC_VT_U32 || x->u == 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s is missing or not a positive u32",
                       key);
    *v = (uint32_t)x->u;
    return LC_OK;
}

static lc_code back_tensor(lc_model *out, lc_model *work, const lc_tensor *s, const char *hf,
                           uint32_t heads, lc_dtype dtype, lc_error *err) {
    const bool quant = lc_dtype_is_quant(s->dtype);
    lc_tensor *t;
    /* A tensor of a mapped file is read with pread (and copied in the kernel when
     * nothing changes it), so the map's pages never count in our RSS. No drop view
     * otherwise: `in` may live in plain memory (lc_gguf_load_mem), which
     * MADV_DONTNEED would zero (hf_view.h). */
    const lc_tensor *from = s;
    int fd;
    uint64_t at;
    if (s->data && lc_tensor_file_range(s, &fd, &at)) {
        char dname[160];
        snprintf(dname, sizeof dname, "%.150s#file", hf);
        LC_TRY(lc_hf_view_file(work, dname, s, fd, &from, err));
    }
    LC_TRY(lc_model_add_tensor(quant ? work : out, hf, s->dtype, s->ndim, s->shape, &t, err));
    if (heads)
        LC_TRY(lc_hf_tensors_permute(t, from, heads, true, err));
    else
        LC_TRY(lc_hf_tensors_forward(t, from, err));
    if (quant) {
        if (!lc_quant_supported(s->dtype))
            return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "tensor %.80s: no dequantizer "
                           "for %s", s->name, lc_dtype_name(s->dtype));
        const lc_tensor *w = t;
        LC_TRY(lc_model_add_tensor(out, hf, LC_DT_F32, s->ndim, s->shape, &t, err));
        LC_TRY(lc_hf_view_quant(t, w, s->dtype, false, err));
    }
    const lc_dtype to = dtype != LC_DT_INVALID ? dtype : t->dtype;
    return lc_tensor_cast(t, to, err);
}

lc_code lc_hf_from_gguf(lc_model *in, lc_dtype dtype, lc_model **out, lc_error *err) {
    lc_model *m = NULL, *work = NULL;
    lc_code rc = LC_OK;
    *out = NULL;
    const lc_value *a = lc_model_find_meta(in, "general.architecture");
    const char *arch = a && a->type == LC_VT_STRING ? a->str.ptr : "";
    const bool llama = strcmp(arch, "llama") == 0;
    uint32_t heads = 0, heads_kv = 0;
    if (!llama && strcmp(arch, "qwen2") != 0) {
        rc = lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "general.architecture %.40s is not "
                     "llama or qwen2", a && a->type == LC_VT_STRING ? arch : "(missing)");
        goto fail_in;
    }
    if (llama && ((rc = meta_u32(in, arch, "attention.head_count", &heads, err)) != LC_OK ||
                  (rc = meta_u32(in, arch, "attention.head_count_kv", &heads_kv, err)) != LC_OK))
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
        char hf[160];
        lc_hf_role role;
        if ((rc = back_name(s->name, hf, sizeof hf, &role, err)) != LC_OK)
            break;
        if (role == LC_HF_ROLE_DROP)
            continue;
        const uint32_t h = !llama ? 0 : role == LC_HF_ROLE_Q ? heads
                         : role == LC_HF_ROLE_K ? heads_kv : 0;
        rc = back_tensor(m, work, s, hf, h, dtype, err);
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
