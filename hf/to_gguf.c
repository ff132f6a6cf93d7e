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
#include "hf/to_gguf_impl.h"

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
#include "libconvert/map.h"
#include "quant/ftype.h"

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

static lc_code add_keys(lc_tg *c, lc_error *err) {
    lc_model *m = c->out;
    const lc_arch *a = c->cfg.arch;
    char name[256], label[48];
    LC_TRY(lc_model_set_meta_str(m, "general.architecture", a->name, err));
    LC_TRY(lc_arch_write_early_keys(a, &c->cfg.hp, m, err));
    LC_TRY(lc_model_set_meta_str(m, "general.type", "model", err));
    LC_TRY(add_sampling(m, c->dir, err));
    lc_hf_title(c->dir, name, sizeof name);
    LC_TRY(lc_model_set_meta_str(m, "general.name", name, err));
    if (c->params > 0) {
        /* gguf-py's size_label: "8x22M" for experts (the shared parameters and one
         * expert's worth of each stack), else the total */
        const uint32_t ne = c->expert_params ? c->cfg.hp.expert_count : 0;
        char pretty[24];
        lc_hf_size_label(ne ? c->params - c->expert_params * ne + c->expert_params : c->params,
                         pretty, sizeof pretty);
        if (ne)
            snprintf(label, sizeof label, "%" PRIu32 "x%s", ne, pretty);
        else
            snprintf(label, sizeof label, "%s", pretty);
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
    LC_TRY(lc_hf_tokenizer_to_gguf(c->dir, c->cfg.hp.vocab_size, max_pad, c->o->pre, a, m, err));
    LC_TRY(add_bytelevel_defaults(c->dir, m, err));
    const lc_value *model = lc_model_find_meta(m, "tokenizer.ggml.model");
    if (a->spm_no_space_prefix && model && model->type == LC_VT_STRING &&
        strcmp(model->str.ptr, "llama") == 0)
        LC_TRY(lc_hf_json_meta_bool(m, "tokenizer.ggml.add_space_prefix", false, err));
    return LC_OK;
}

/* The first dimension of 2-D tensor NAME in m, or 0. */
static uint64_t rows_of(const lc_model *m, const char *name) {
    const lc_tensor *t = lc_model_find_tensor(m, name);
    return t && t->ndim == 2 ? t->shape[0] : 0;
}

/* Meta's layout: the tensors first (params.json lacks the FFN size), then params.json. */
static lc_code load_meta_config(lc_tg *c, lc_error *err) {
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
static lc_code own_parts(lc_tg *c, lc_error *err) {
    c->parts_owned = true;
    LC_TRY(lc_model_own(c->out, c->views, (void (*)(void *))lc_model_free, err));
    return lc_model_own(c->out, c->work, (void (*)(void *))lc_model_free, err);
}

lc_code lc_hf_to_gguf(const char *dir, const lc_hf_opts *o, lc_model **out, lc_error *err) {
    lc_tg c = { .dir = dir, .o = o, .spelling = LC_SPELL_HF, .cfg_file = "config.json" };
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
        if ((rc = lc_tg_check_tensors(&c, err)) != LC_OK) {
            /* A tensor the model lacks is in no file: the folder is what the line names
             * (a failure in one file's tensor named that file already). */
            lc_err_context(err, c.dir, NULL);
            goto done;
        }
        c.validated = true;
        if ((rc = lc_tg_add_tensors(&c, err)) != LC_OK)
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
    lc_tg_free(&c);
    if (rc != LC_OK) {
        lc_model_free(c.out);
        return rc;
    }
    *out = c.out;
    return LC_OK;
}
