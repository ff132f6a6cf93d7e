/* hf/to_gguf.c: an HF (or Meta) folder -> a lazy GGUF model (see hf.h).
 *
 * Folder layout read (see hf.h):
 *   DIR/config.json                                   the family and hyperparameters
 *   DIR/model.safetensors.index.json + shards, or DIR/model.safetensors, or the same
 *   with pytorch_model.bin (hf/weights.h)
 *   DIR/tokenizer.model | tokenizer.json (+ tokenizer_config.json, ...)
 * What a family is (tensor names, shapes, which rows RoPE rotates, the keys and their
 * order) comes from its table in arch/; this file applies the table.
 * GGUF keys written, in this order (convert_hf_to_gguf.py's, see the differences below):
 *   general.architecture str, general.type str "model", general.sampling.{top_k i32,
 *   top_p f32, min_p f32, temp f32, penalty_last_n i32, penalty_repeat f32} from
 *   generation_config.json, general.name str, general.size_label str, the family's keys
 *   (arch/ lc_arch_write_keys: <arch>.*, general.file_type u32 at its place),
 *   general.quantization_version u32 = 2, tokenizer.ggml.add_space_prefix bool (when the
 *   family writes it, from tokenizer_config.json's add_prefix_space), tokenizer.*
 *   (hf/tokenizer.c).
 *
 * Differences from convert_hf_to_gguf.py (llama-cpp-python 0.3.36's copy), on purpose
 * or for lack of time:
 *   - general.name is the folder name in title form ("llama-spm" -> "Llama Spm"); the
 *     reference also reads README.md model cards, config "_name_or_path" and splits
 *     size labels, versions and fine-tune words out of the name (general.basename,
 *     .finetune, .version); we do none of that.
 *   - NaN payloads: bf16/f16 -> bf16 and f32 -> bf16 NaNs become sign|0x7fc0 here; the
 *     reference keeps the top payload bits and sets the quiet bit. Weights hold no NaN.
 *   - rope_freqs.weight (llama3 scaling): see arch/transformer.c on powf.
 *   - The special token keys come in hf/special.c's order (bos, eos, ...), which can
 *     differ from SpecialVocab's; values are the same.
 * Tensor order: rope_freqs.weight first (when made), then the source's order. */
#include "hf/hf.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "arch/arch.h"
#include "hf/config.h"
#include "hf/json.h"
#include "hf/meta_layout.h"
#include "hf/naming.h"
#include "hf/tokenizer.h"
#include "hf/vocab.h"
#include "hf/weights.h"
#include "libconvert/alloc.h"
#include "libconvert/convert.h"
#include "libconvert/map.h"
#include "libconvert/view.h"
#include "quant/ftype.h"
#include "quant/view.h"

/* The conversion state. */
typedef struct conv {
    const char *dir;
    const lc_hf_opts *o;
    lc_hf_config cfg;
    lc_spelling spelling;   /* the source's names: transformers' or Meta's */
    const char *cfg_file;   /* "config.json" or "params.json", for messages */
    lc_model *in;           /* the source tensors (owned by out once handed) */
    bool in_owned;
    lc_hf_weights *weights; /* the HF folder's files (owned by out once handed) */
    lc_model *views;        /* pread / map views of sources, named as the sources */
    lc_model *work;         /* F32 intermediates feeding quantizers, named as in GGUF */
    bool parts_owned;       /* views and work were handed to out */
    lc_model *out;
    lc_dtype ftype;         /* the resolved out type */
    lc_arch_seen seen;
    bool validated;         /* the tensors confirmed the config's sizes */
    uint64_t params;
} conv;

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* convert_hf_to_gguf.py's choice per tensor: F32 for 1-D, norms and anything not a
 * ".weight"; else the file type, falling back to F16 when a row is not whole blocks
 * (gguf-py's QuantError). */
static lc_dtype pick_dtype(const char *gname, uint32_t ndim, const uint64_t *shape,
                           lc_dtype ftype) {
    if (ndim <= 1 || ends_with(gname, "_norm.weight") || !ends_with(gname, ".weight"))
        return LC_DT_F32;
    if (shape[ndim - 1] % lc_dtype_get(ftype)->block_size != 0)
        return LC_DT_F16;
    return ftype;
}

static lc_code check_shape(conv *c, const lc_arch_tensor *row, uint32_t layer,
                           const lc_tensor *s, lc_error *err) {
    char want[96];
    if (!lc_arch_shape_is(row, &c->cfg.hp, s, want, sizeof want)) {
        char have[96];
        lc_shape_format(s, have, sizeof have);
        lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "tensor %.80s has shape %s but %s implies "
                "%s", s->name, have, c->cfg_file, want);
        lc_err_context(err, NULL, s->name);
        return LC_E_MISMATCH;
    }
    lc_arch_seen_mark(&c->seen, row, layer);
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

/* Adds GGUF tensor g reading source s (its rows permuted when the family's RoPE style
 * differs from the source's), in dtype `to`. */
static lc_code add_tensor(conv *c, const lc_tensor *s, const lc_arch_tensor *row, const char *g,
                          lc_dtype to, lc_error *err) {
    /* transformers stores Q/K rows half-split (NEOX order); Meta stores them as GGUF's
     * NORM-RoPE families want them. */
    const bool permute = c->spelling == LC_SPELL_HF && c->cfg.arch->rope == LC_ROPE_NORM;
    const uint32_t heads = permute ? lc_arch_rope_heads(row, &c->cfg.hp) : 0;
    const bool quant = lc_dtype_is_quant(to);
    /* On a device: the same conversion, the same bytes (quant/device.h). */
    const bool dev = c->o->device && lc_qdev_supports(c->o->device, s->dtype, to);
    lc_tensor *t, *w = NULL;
    const lc_tensor *from = s;
    if (c->weights)
        LC_TRY(lc_hf_weights_view(c->weights, c->views, s, &from, err));
    LC_TRY(lc_model_add_tensor(quant || dev ? c->work : c->out, g, s->dtype, s->ndim, s->shape,
                               &t, err));
    /* bf16 -> bf16 and f16 -> f16 are copies: no cast is added below. */
    if (heads)
        LC_TRY(lc_view_heads(t, from, heads, false, err));
    else
        LC_TRY(lc_view_forward(t, from, err));
    if (dev) {
        w = t;
        LC_TRY(lc_model_add_tensor(c->out, g, to, s->ndim, s->shape, &t, err));
        LC_TRY(lc_qdev_view(t, w, c->o->device, err));
    } else if (!quant) {
        LC_TRY(lc_tensor_cast(t, to, err));
    } else {
        LC_TRY(lc_tensor_cast(t, LC_DT_F32, err));
        w = t;
        LC_TRY(lc_model_add_tensor(c->out, g, to, s->ndim, s->shape, &t, err));
        LC_TRY(lc_quant_view(t, w, to, true, err));
    }
    uint64_t numel = 0;
    lc_tensor_numel(t, &numel);
    c->params += numel;
    plan_line(c, s->name, g, s->dtype, to, t);
    return LC_OK;
}

/* The family's computed rope_freqs.weight for llama3 rope scaling. */
static lc_code add_rope_freqs(conv *c, lc_error *err) {
    const lc_arch *a = c->cfg.arch;
    const lc_arch_tensor *row = lc_arch_role(a, LC_ROLE_ROPE_FREQS);
    if (!row || !a->hooks.rope_freqs)
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "llama3 rope scaling is not "
                       "supported for %s", a->name);
    const uint64_t n = c->cfg.hp.head_dim / 2;
    float *v = lc_malloc((size_t)n * sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    a->hooks.rope_freqs(&c->cfg.hp, v, n);
    lc_code rc = lc_model_own(c->out, v, lc_free, err);
    lc_tensor *t;
    const uint64_t shape[1] = { n };
    if (rc == LC_OK)
        rc = lc_model_add_tensor(c->out, row->gguf, LC_DT_F32, 1, shape, &t, err);
    if (rc == LC_OK) {
        t->data = (const uint8_t *)v;
        c->params += n;
        if (c->o->plan)
            fprintf(c->o->plan, "tensor %-44s -> %-26s %-4s -> %-4s [%" PRIu64 "]\n",
                    "(computed: llama3 rope factors)", row->gguf, "F32", "F32", n);
    }
    return rc;
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

/* The row and GGUF name of source tensor s; *row NULL when it is not written (dropped,
 * or made by a hook). */
static lc_code map_tensor(conv *c, const lc_tensor *s, const lc_arch_tensor **row,
                          uint32_t *layer, char *g, size_t cap, lc_error *err) {
    const lc_arch *a = c->cfg.arch;
    const uint32_t n_layers = c->cfg.hp.block_count;
    *row = lc_arch_find(a, c->spelling, s->name, layer);
    if (!*row) {
        lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "tensor %.100s has no GGUF name for "
                "architecture %s", s->name, a->name);
        lc_err_context(err, NULL, s->name);
        return LC_E_UNSUPPORTED;
    }
    if (*layer != UINT32_MAX && *layer >= n_layers) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "tensor %.80s is in layer %" PRIu32
                " but %s has %s %" PRIu32, s->name, *layer, c->cfg_file,
                c->spelling == LC_SPELL_META ? "n_layers" : "num_hidden_layers", n_layers);
        lc_err_context(err, NULL, s->name);
        return LC_E_MALFORMED;
    }
    /* Dropped (transformers' cached inverse frequencies) or made by a hook. */
    if (!(*row)->gguf || ((*row)->flags & LC_AT_COMPUTED)) {
        *row = NULL;
        return LC_OK;
    }
    return lc_arch_name(*row, LC_SPELL_GGUF, *layer, g, cap, err);
}

/* Every source tensor against the table and config before anything is built from the
 * config's numbers: names, dtypes, shapes, and no required tensor missing. So a
 * config.json that declares huge sizes fails here, on the tensors that are there. */
static lc_code check_tensors(conv *c, lc_error *err) {
    const lc_arch *a = c->cfg.arch;
    const uint32_t n_layers = c->cfg.hp.block_count;
    char g[160];
    /* A layer is at least one tensor: more layers than tensors cannot be. */
    if (n_layers > lc_model_tensor_count(c->in))
        return lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "%s declares %" PRIu32 " layers but "
                       "the checkpoint has %zu tensors", c->cfg_file, n_layers,
                       lc_model_tensor_count(c->in));
    LC_TRY(lc_arch_seen_init(&c->seen, a, n_layers, err));
    for (size_t i = 0; i < lc_model_tensor_count(c->in); i++) {
        const lc_tensor *s = lc_model_tensor(c->in, i);
        const lc_arch_tensor *row;
        uint32_t layer;
        LC_TRY(map_tensor(c, s, &row, &layer, g, sizeof g, err));
        if (!row)
            continue;
        if (lc_dtype_is_quant(s->dtype) || !lc_convert_supported(s->dtype, LC_DT_F32)) {
            lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "tensor %.80s has dtype %s, which "
                    "does not convert to a float", s->name, lc_dtype_name(s->dtype));
            lc_err_context(err, NULL, s->name);
            return LC_E_UNSUPPORTED;
        }
        LC_TRY(check_shape(c, row, layer, s, err));
    }
    return lc_arch_seen_check(&c->seen, c->spelling, err);
}

static lc_code add_tensors(conv *c, lc_error *err) {
    char g[160];
    for (size_t i = 0; i < lc_model_tensor_count(c->in); i++) {
        const lc_tensor *s = lc_model_tensor(c->in, i);
        const lc_arch_tensor *row;
        uint32_t layer;
        LC_TRY(map_tensor(c, s, &row, &layer, g, sizeof g, err));
        if (row)
            LC_TRY(add_tensor(c, s, row, g, pick_dtype(g, s->ndim, s->shape, c->ftype), err));
    }
    return LC_OK;
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

/* gguf-py's SpecialVocab: a ByteLevel post-processor in tokenizer.json sets add_bos and
 * add_eos to false unless something set them (hf/special.c lacks this rule; it belongs
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
    const lc_arch *a = c->cfg.arch;
    char name[256], label[32];
    LC_TRY(lc_model_set_meta_str(m, "general.architecture", a->name, err));
    LC_TRY(lc_model_set_meta_str(m, "general.type", "model", err));
    LC_TRY(add_sampling(m, c->dir, err));
    lc_hf_title(c->dir, name, sizeof name);
    LC_TRY(lc_model_set_meta_str(m, "general.name", name, err));
    if (c->params > 0) {
        lc_hf_size_label(c->params, label, sizeof label);
        LC_TRY(lc_model_set_meta_str(m, "general.size_label", label, err));
    }
    /* llama.cpp's LlamaFileType for the out type (quant/ftype.c holds them all). */
    LC_TRY(lc_arch_write_keys(a, &c->cfg.hp, lc_ftype_for_dtype(c->ftype)->id, m, err));
    LC_TRY(lc_hf_json_meta_u32(m, "general.quantization_version", 2, err));
    if (a->writes_add_space_prefix) {
        cJSON *tc;
        LC_TRY(lc_hf_json_load(c->dir, "tokenizer_config.json", true, &tc, err));
        const cJSON *ap = cJSON_GetObjectItemCaseSensitive(tc, "add_prefix_space");
        lc_code rc = cJSON_IsBool(ap) ? lc_hf_json_meta_bool(m, "tokenizer.ggml.add_space_prefix",
                                                             cJSON_IsTrue(ap), err) : LC_OK;
        cJSON_Delete(tc);
        LC_TRY(rc);
    }
    /* vocab_size pads the vocabulary with [PAD<i>] tokens, as llama.cpp does. The
     * embedding's rows justify any padding; without tensors (--vocab-only) the padding
     * is bounded by the tokenizer's own size, so a tiny config.json cannot make a huge
     * vocabulary. */
    const uint64_t max_pad = c->validated ? UINT64_MAX : LC_HF_VOCAB_PAD_UNCHECKED;
    LC_TRY(lc_hf_tokenizer_to_gguf(c->dir, c->cfg.hp.vocab_size, max_pad, c->o->pre, m, err));
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

static void free_weights(void *w) { lc_hf_weights_free(w); }

/* Hands the intermediates to out, which then lives as long as what reads them (out
 * takes them even when handing fails). */
static lc_code own_parts(conv *c, lc_error *err) {
    c->parts_owned = true;
    LC_TRY(lc_model_own(c->out, c->views, (void (*)(void *))lc_model_free, err));
    return lc_model_own(c->out, c->work, (void (*)(void *))lc_model_free, err);
}

lc_code lc_hf_to_gguf(const char *dir, const lc_hf_opts *o, lc_model **out, lc_error *err) {
    conv c = { .dir = dir, .o = o, .spelling = LC_SPELL_HF, .cfg_file = "config.json" };
    lc_code rc;
    *out = NULL;
    if (lc_hf_meta_layout_is(dir)) {
        c.spelling = LC_SPELL_META;
        c.cfg_file = "params.json";
        rc = load_meta_config(&c, err);
    } else {
        rc = lc_hf_config_load(dir, &c.cfg, err);
    }
    if (rc != LC_OK)
        goto done;
    if (!(c.out = lc_model_new()) || !(c.work = lc_model_new()) || !(c.views = lc_model_new())) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    /* The intermediates and the sources live as long as out (its tensors read them);
     * out frees them in reverse order: views and work, then in, then the files. */
    if (c.spelling == LC_SPELL_HF && (!o->vocab_only || o->outtype == LC_DT_INVALID)) {
        if ((rc = lc_hf_weights_open(dir, &c.in, &c.weights, err)) != LC_OK)
            goto done;
        lc_hf_weights *w = c.weights;
        c.weights = NULL;   /* out frees it even when handing it over fails */
        if ((rc = lc_model_own(c.out, w, free_weights, err)) != LC_OK)
            goto done;
        c.weights = w;
    }
    if (c.in) {
        c.in_owned = true;
        if ((rc = lc_model_own(c.out, c.in, (void (*)(void *))lc_model_free, err)) != LC_OK)
            goto done;
    }
    if ((rc = own_parts(&c, err)) != LC_OK)
        goto done;
    c.ftype = o->outtype != LC_DT_INVALID ? o->outtype : c.in ? auto_type(c.in) : LC_DT_F16;
    if (!o->vocab_only) {
        if ((rc = check_tensors(&c, err)) != LC_OK)
            goto done;
        c.validated = true;
        if (c.cfg.hp.rope_scaling == LC_ROPE_SCALING_LLAMA3 && (rc = add_rope_freqs(&c, err)))
            goto done;
        if ((rc = add_tensors(&c, err)) != LC_OK)
            goto done;
    }
    rc = add_keys(&c, err);
done:
    if (!c.in_owned)
        lc_model_free(c.in);
    if (!c.parts_owned) {
        lc_model_free(c.views);
        lc_model_free(c.work);
    }
    lc_arch_seen_free(&c.seen);
    if (rc != LC_OK) {
        lc_model_free(c.out);
        return rc;
    }
    *out = c.out;
    return LC_OK;
}
