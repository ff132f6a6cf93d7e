/* jobs/gguf_quantize.c: GGUF (or HF folder) -> the GGUF llama-quantize writes (see
 * gguf_quantize.h). The options and the metadata are here; which type each tensor gets
 * is quant/mix.c's, and the lazy sources that read, check and convert each tensor are
 * built in gguf_quantize_plan.c. */
#include "jobs/gguf_quantize.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arch/arch.h"
#include "formats/gguf.h"
#include "formats/gguf_split.h"
#include "hf/hf.h"
#include "jobs/gguf_quantize_impl.h"
#include "libconvert/alloc.h"
#include "libconvert/regex.h"

const lc_ftype *lc_job_quantize_type(const char *arg) {
    const lc_ftype *f = lc_ftype_by_name(arg);
    if (f || !arg || !*arg)
        return f;
    char *end;
    errno = 0;
    const long id = strtol(arg, &end, 10);
    return *end == '\0' && errno == 0 && id >= 0 && id <= UINT32_MAX ?
           lc_ftype_by_id((uint32_t)id) : NULL;
}

/* A type an option names: any ggml type name (case-insensitive), if libconvert writes it. */
static lc_code option_type(const char *opt, const char *name, lc_dtype *t, lc_error *err) {
    *t = lc_dtype_from_name(name);
    if (*t == LC_DT_INVALID || lc_dtype_get(*t)->gguf_id < 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%s: %.40s is not a ggml type", opt, name);
    if (!lc_job_quantize_writable(*t))
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%s: libconvert cannot write %s yet",
                       opt, lc_dtype_name(*t));
    return LC_OK;
}

/* --tensor-type PATTERN=TYPE, split at the first '=' as llama-quantize does. */
static lc_code parse_tensor_type(const char *arg, lc_mix_pattern *p, char **pattern,
                                 lc_error *err) {
    const char *sep = strchr(arg, '=');
    if (!sep || sep == arg || sep[1] == '\0')
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--tensor-type %.80s: want PATTERN=TYPE",
                       arg);
    LC_TRY(option_type("--tensor-type", sep + 1, &p->type, err));
    if (pattern) {
        if (!(*pattern = lc_malloc((size_t)(sep - arg) + 1)))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        memcpy(*pattern, arg, (size_t)(sep - arg));
        (*pattern)[sep - arg] = '\0';
        p->pattern = *pattern;
    }
    return LC_OK;
}

/* --override-kv KEY=TYPE:VALUE, as llama.cpp's string_parse_kv_override reads it, into
 * the value llama_model_quantize writes: int -> u32 of |value|, float -> f32. */
lc_code lc_job_quantize_override(const char *arg, char *key, size_t cap, lc_value *v,
                                 lc_error *err) {
    const char *sep = strchr(arg, '=');
    if (!sep || sep == arg || (size_t)(sep - arg) >= 128 || (size_t)(sep - arg) >= cap)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--override-kv %.80s: want KEY=TYPE:VALUE "
                       "with a key shorter than 128 bytes", arg);
    memcpy(key, arg, (size_t)(sep - arg));
    key[sep - arg] = '\0';
    const char *val = strchr(sep, ':');
    const size_t tlen = val ? (size_t)(val - sep - 1) : 0;
    char *end = NULL;
    errno = 0;
    if (val && tlen == 3 && strncmp(sep + 1, "int", 3) == 0) {
        const long long i = strtoll(val + 1, &end, 10);
        if (val[1] && !*end && !errno) {
            *v = lc_value_uint(LC_VT_U32, (uint32_t)(i < 0 ? -(unsigned long long)i :
                                                    (unsigned long long)i));
            return LC_OK;
        }
    } else if (val && tlen == 5 && strncmp(sep + 1, "float", 5) == 0) {
        const double f = strtod(val + 1, &end);
        if (val[1] && !*end) {
            *v = lc_value_float(LC_VT_F32, (double)(float)f);
            return LC_OK;
        }
    } else if (val && tlen == 4 && strncmp(sep + 1, "bool", 4) == 0) {
        if (strcmp(val + 1, "true") == 0 || strcmp(val + 1, "false") == 0) {
            *v = lc_value_bool(val[1] == 't');
            return LC_OK;
        }
    } else if (val && tlen == 3 && strncmp(sep + 1, "str", 3) == 0 && strlen(val + 1) <= 127) {
        return lc_value_string(v, val + 1, strlen(val + 1), err);
    }
    return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--override-kv %.80s: want KEY=int:N, "
                   "KEY=float:X, KEY=bool:true|false or KEY=str:TEXT (at most 127 bytes)", arg);
}

lc_code lc_job_gguf_quantize_check(const lc_job_quantize_opts *o, lc_error *err) {
    if (!o->ftype)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "no TYPE");
    if (!o->dry_run && !(o->imatrix ? lc_ftype_available_imatrix(o->ftype) :
                                      lc_ftype_available(o->ftype)))
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "TYPE %s is not available yet: libconvert "
                       "lacks a kernel%s", o->ftype->name, o->imatrix ? " it needs" :
                       " or an importance matrix it needs (--imatrix)");
    lc_dtype t;
    if (o->output_type)
        LC_TRY(option_type("--output-tensor-type", o->output_type, &t, err));
    if (o->token_embd_type)
        LC_TRY(option_type("--token-embedding-type", o->token_embd_type, &t, err));
    for (size_t i = 0; i < o->n_tensor_types; i++) {
        lc_mix_pattern p;
        LC_TRY(parse_tensor_type(o->tensor_types[i], &p, NULL, err));
        lc_re *re;             /* a pattern the plan would refuse is a usage error */
        LC_TRY(lc_mix_pattern_compile(o->tensor_types[i], (size_t)(strchr(o->tensor_types[i],
                                      '=') - o->tensor_types[i]), &re, err));
        lc_re_free(re);
    }
    for (size_t i = 0; i < o->n_overrides; i++) {
        char key[128];
        lc_value v = { 0 };
        LC_TRY(lc_job_quantize_override(o->overrides[i], key, sizeof key, &v, err));
        lc_value_clear(&v);
    }
    if (o->device && !o->dev)
        LC_TRY(lc_qdev_parse(o->device, err));
    if (o->keep_split && o->split.split)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--keep-split keeps the input's parts: "
                       "no --split-max-size, --split-max-tensors or --no-tensor-first-split");
    if (o->split.part && !o->split.split && !o->keep_split)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--part: with --split-max-size, "
                       "--split-max-tensors or --keep-split");
    return LC_OK;
}

/* ---- metadata ---- */

/* One key of the output, in order; llama.cpp's gguf_set_* remove a key and append it. */
typedef struct kv {
    char key[128];
    const char *name;       /* key, or the input's own spelling */
    const lc_value *val;    /* the input's value, or &own */
    lc_value own;
    bool gone;
} kv;

static void set_key(kv *list, size_t *n, const char *key, lc_value *v) {
    for (size_t i = 0; i < *n; i++)
        if (!list[i].gone && strcmp(list[i].name, key) == 0)
            list[i].gone = true;
    kv *k = &list[(*n)++];
    snprintf(k->key, sizeof k->key, "%s", key);
    k->name = k->key;
    k->own = *v;
    *v = (lc_value){ 0 };
    k->val = &k->own;
}

/* The input's keys, then general.quantization_version and general.file_type, without
 * the split keys, then the overrides: llama_model_quantize_impl's order. */
static lc_code copy_meta(job *j, lc_error *err) {
    const lc_model *in = j->in;
    const size_t n_in = lc_model_meta_count(in), cap = n_in + 9 + j->o->n_overrides;
    kv *list = lc_calloc(cap ? cap : 1, sizeof *list);
    if (!list)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    size_t n = 0;
    lc_code rc = LC_OK;
    for (size_t i = 0; i < n_in; i++) {
        const lc_kv *m = lc_model_meta(in, i);
        list[n].name = m->key;
        list[n++].val = &m->val;
    }
    lc_value v = lc_value_uint(LC_VT_U32, 2);   /* GGML_QNT_VERSION */
    set_key(list, &n, "general.quantization_version", &v);
    v = lc_value_uint(LC_VT_U32, j->o->ftype->id);
    set_key(list, &n, "general.file_type", &v);
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i].name, "split.no") == 0 || strcmp(list[i].name, "split.count") == 0 ||
            strcmp(list[i].name, "split.tensors.count") == 0)
            list[i].gone = true;
    for (size_t i = 0; rc == LC_OK && i < j->o->n_overrides; i++) {
        char key[128];
        if ((rc = lc_job_quantize_override(j->o->overrides[i], key, sizeof key, &v, err)) == LC_OK)
            set_key(list, &n, key, &v);
    }
    /* --imatrix: llama-quantize appends its keys to the overrides. */
    const char *ikeys[4];
    lc_value ivals[4];
    size_t ni = 0;
    if (rc == LC_OK)
        rc = lc_job_quantize_imatrix_meta(j, ikeys, ivals, &ni, err);
    for (size_t i = 0; i < ni; i++)
        set_key(list, &n, ikeys[i], &ivals[i]);
    if (rc == LC_OK && j->n_parts > 1) {    /* keep_split: after everything else */
        v = lc_value_uint(LC_VT_U16, 0);
        set_key(list, &n, LC_GGUF_SPLIT_NO, &v);
        v = lc_value_uint(LC_VT_U16, j->n_parts);
        set_key(list, &n, LC_GGUF_SPLIT_COUNT, &v);
        v = lc_value_int(LC_VT_I32, (int64_t)lc_model_tensor_count(j->in));
        set_key(list, &n, LC_GGUF_SPLIT_TENSORS, &v);
    }
    for (size_t i = 0; rc == LC_OK && i < n; i++) {
        if (list[i].gone)
            continue;
        lc_value copy;
        if ((rc = lc_value_copy(&copy, list[i].val, err)) == LC_OK)
            rc = lc_model_add_meta(j->out, list[i].name, &copy, err);
    }
    for (size_t i = 0; i < n; i++)
        lc_value_clear(&list[i].own);
    lc_free(list);
    return rc;
}

/* What the rules read: the family and its hyperparameters, from the output's keys (so
 * an override counts, as it does for llama.cpp's loader). */
static lc_code read_model(job *j, lc_mix_model *mm, lc_error *err) {
    const lc_arch *a;
    lc_hparams hp;
    LC_TRY(lc_arch_read_keys(j->out, &a, &hp, err));
    char key[96];
    snprintf(key, sizeof key, "%s.expert_count", a->name);
    const lc_value *e = lc_model_find_meta(j->out, key);
    *mm = (lc_mix_model){ .arch = a, .n_layer = hp.block_count, .n_head = hp.head_count,
                          .n_head_kv = hp.head_count_kv,
                          .n_expert = e && e->type == LC_VT_U32 ? (uint32_t)e->u : 0 };
    return LC_OK;
}

/* ---- the job ---- */

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* llama-quantize's name when OUT is not given: ggml-model-<TYPE>.gguf in IN's folder
 * (without ".gguf" with --keep-split: the parts' prefix). */
static void default_out(const lc_job_quantize_opts *o, char *buf, size_t cap) {
    const char *ext = o->keep_split ? "" : ".gguf";
    if (is_dir(o->in)) {
        snprintf(buf, cap, "%s/ggml-model-%s%s", o->in, o->ftype->name, ext);
        return;
    }
    const char *slash = strrchr(o->in, '/');
    snprintf(buf, cap, "%.*sggml-model-%s%s", slash ? (int)(slash - o->in + 1) : 0, o->in,
             o->ftype->name, ext);
}

/* A GGUF is parsed from its map, and its tensors are read with pread (QJ_SOURCE): pages
 * read through a map stay in the process's RSS when threads read ahead of each other. */
static lc_code load_input(job *j, lc_error *err) {
    if (j->in)          /* the caller's model (lc_job_quantize_opts.model) */
        return LC_OK;
    if (is_dir(j->o->in)) {
        const lc_hf_opts ho = { .outtype = LC_DT_INVALID };     /* safetensors2gguf's auto */
        return lc_hf_to_gguf(j->o->in, &ho, &j->in, err);
    }
    LC_TRY(lc_gguf_split_load(j->o->in, &j->in, &j->split, err));
    if (j->split->count > 1)
        return LC_OK;       /* each part is read through its own map's descriptor */
    if ((j->fd = open(j->o->in, O_RDONLY | O_CLOEXEC)) < 0)
        return lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot open it again: %s",
                       strerror(errno));
    return LC_OK;
}

static void free_job(job *j) {
    lc_gguf_split_set_free(j->set);     /* first: its parts read out's tensors */
    for (uint32_t k = 1; j->parts && k < j->n_parts; k++)
        lc_model_free(j->parts[k]); /* their views read the stages out owns */
    lc_free(j->parts);
    for (uint32_t k = 0; j->part_paths && k < j->n_parts; k++)
        lc_free(j->part_paths[k]);
    lc_free(j->part_paths);
    lc_model_free(j->out);          /* owns in and the stages once handed */
    if (j->own_dev)
        lc_qdev_close(j->dev);      /* after the views that use it */
    if (!j->handed) {
        for (size_t i = 0; i < LC_QJ_STAGES; i++)
            lc_model_free(j->stage[i]);
        lc_model_free(j->in);
    }
    if (j->fd >= 0)
        close(j->fd);
    lc_gguf_split_free(j->split);
    lc_imatrix_free(j->im);         /* after the views that read it */
    lc_free(j->im_kept);
    for (size_t i = 0; i < j->n_patterns; i++)
        lc_free(j->pattern_text[i]);
    lc_free(j->pattern_text);
    lc_free(j->patterns);
    lc_free(j->rows);
}

/* The model's pieces, handed to out so that out's lifetime covers every view. */
static lc_code new_models(job *j, lc_error *err) {
    if (!(j->out = lc_model_new()))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (size_t i = 0; i < LC_QJ_STAGES; i++)
        if (!(j->stage[i] = lc_model_new()))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    j->handed = true;
    lc_code rc = lc_model_own(j->out, j->in, (void (*)(void *))lc_model_free, err);
    for (size_t i = 0; i < LC_QJ_STAGES; i++) {   /* freed in reverse: last stage first */
        const lc_code r = lc_model_own(j->out, j->stage[i], (void (*)(void *))lc_model_free,
                                       err);
        rc = rc != LC_OK ? rc : r;
    }
    if (rc != LC_OK || !j->o->keep_split)
        return rc;
    if (!(j->parts = lc_calloc(j->n_parts, sizeof *j->parts)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    j->parts[0] = j->out;
    /* The other parts hold the split keys only, as llama_model_quantize's new contexts. */
    for (uint32_t k = 1; rc == LC_OK && k < j->n_parts; k++) {
        if (!(j->parts[k] = lc_model_new()))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        lc_value v = lc_value_uint(LC_VT_U16, k);
        if ((rc = lc_model_add_meta(j->parts[k], LC_GGUF_SPLIT_NO, &v, err)) != LC_OK)
            break;
        v = lc_value_uint(LC_VT_U16, j->n_parts);
        if ((rc = lc_model_add_meta(j->parts[k], LC_GGUF_SPLIT_COUNT, &v, err)) != LC_OK)
            break;
        v = lc_value_int(LC_VT_I32, (int64_t)lc_model_tensor_count(j->in));
        rc = lc_model_add_meta(j->parts[k], LC_GGUF_SPLIT_TENSORS, &v, err);
    }
    return rc;
}

/* keep_split: as many output parts as the last input part with tensors (llama-quantize's
 * n_split), named from OUT's prefix. A part before it without tensors is refused:
 * llama_model_quantize would dereference a context it never made. */
static lc_code plan_parts(job *j, const char *out, lc_error *err) {
    j->n_parts = 1;
    if (!j->o->keep_split)
        return LC_OK;
    const uint32_t count = j->split ? j->split->count : 1;
    bool *used = lc_calloc(count, sizeof *used);
    if (!used)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (size_t i = 0; j->split && i < j->split->n_tensors; i++) {
        used[j->split->part[i]] = true;
        if (j->split->part[i] + 1 > j->n_parts)
            j->n_parts = j->split->part[i] + 1;
    }
    lc_code rc = LC_OK;
    for (uint32_t k = 1; rc == LC_OK && k < j->n_parts; k++)
        if (!used[k])
            rc = lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "--keep-split: part %" PRIu32
                         " of %" PRIu32 " holds no tensors, and a later part does (%.200s)",
                         k + 1, count, j->split->paths[k]);
    lc_free(used);
    if (rc != LC_OK)
        return rc;
    /* OUT without a trailing ".gguf" is the prefix (llama-quantize's main strips it). */
    const size_t len = strlen(out);
    const size_t pre = len > 5 && strcmp(out + len - 5, ".gguf") == 0 ? len - 5 : len;
    char *prefix = lc_strndup(out, pre);
    if (!prefix || !(j->part_paths = lc_calloc(j->n_parts, sizeof *j->part_paths)))
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (uint32_t k = 0; rc == LC_OK && k < j->n_parts; k++) {
        char path[4096];
        if ((rc = lc_gguf_split_path(prefix, k, j->n_parts, path, sizeof path, err)) == LC_OK &&
            !(j->part_paths[k] = lc_strdup(path)))
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    lc_free(prefix);
    return rc;
}

/* --split-max-*: the parts gguf-split makes of the one output file, named from OUT less
 * ".gguf"; the report shows them as keep_split's (part_paths, each row's part). */
static lc_code split_parts(job *j, const char *out, lc_error *err) {
    char prefix[4096];
    LC_TRY(lc_gguf_split_prefix_of(out, prefix, sizeof prefix, err));
    LC_TRY(lc_gguf_split_set_new(j->out, prefix, &j->o->split, &j->set, err));
    j->n_parts = j->set->count;
    j->part_paths = j->set->paths;      /* handed over: free_job frees them */
    j->set->paths = NULL;
    for (size_t i = 0; i < j->n_rows; i++)
        j->rows[i].part = j->set->part[i];
    return LC_OK;
}

static lc_code options(job *j, lc_error *err) {
    const lc_job_quantize_opts *o = j->o;
    j->mo = (lc_mix_opts){ .ftype = o->ftype->id, .base = o->ftype->base, .pure = o->pure,
                           .leave_output = o->leave_output, .output_type = LC_DT_INVALID,
                           .token_embd_type = LC_DT_INVALID };
    if (o->output_type)
        LC_TRY(option_type("--output-tensor-type", o->output_type, &j->mo.output_type, err));
    if (o->token_embd_type)
        LC_TRY(option_type("--token-embedding-type", o->token_embd_type,
                           &j->mo.token_embd_type, err));
    if (o->n_tensor_types) {
        j->patterns = lc_calloc(o->n_tensor_types, sizeof *j->patterns);
        j->pattern_text = lc_calloc(o->n_tensor_types, sizeof *j->pattern_text);
        if (!j->patterns || !j->pattern_text)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    for (; j->n_patterns < o->n_tensor_types; j->n_patterns++)
        LC_TRY(parse_tensor_type(o->tensor_types[j->n_patterns], &j->patterns[j->n_patterns],
                                 &j->pattern_text[j->n_patterns], err));
    j->mo.patterns = j->patterns;
    j->mo.n_patterns = j->n_patterns;
    return LC_OK;
}

lc_code lc_job_gguf_quantize(const lc_job_quantize_opts *o, lc_progress *p,
                             lc_job_quantize_result *res, lc_error *err) {
    job j = { .o = o, .fd = -1 };
    if (res)
        memset(res, 0, sizeof *res);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    j.started = (double)t0.tv_sec + (double)t0.tv_nsec * 1e-9;
    char path[4096];
    const char *out = o->out;
    lc_mix_model mm;
    lc_code rc = lc_job_gguf_quantize_check(o, err);
    if (rc != LC_OK) {
        lc_model_free(o->model);        /* taken over, even on failure */
        return rc;
    }
    if (!out) {
        default_out(o, path, sizeof path);
        out = path;
    }
    struct stat a, b;
    if (!o->dry_run && stat(o->in, &a) == 0 && stat(out, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino) {
        lc_model_free(o->model);
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "OUT %.200s is IN", out);
    }
    j.in = o->model;    /* ours from here: free_job frees it */
    j.dev = o->dev;
    if (!j.dev && (rc = lc_qdev_open(o->device, &j.dev, err)) != LC_OK) {
        free_job(&j);
        return rc;
    }
    j.own_dev = !o->dev;
    rc = options(&j, err);
    if (rc == LC_OK && o->imatrix)
        rc = lc_job_quantize_imatrix_load(&j, err);
    if (rc == LC_OK && (rc = load_input(&j, err)) != LC_OK)
        lc_err_context(err, o->in, NULL);
    if (rc == LC_OK && (rc = plan_parts(&j, out, err)) != LC_OK)
        lc_err_context(err, o->in, NULL);
    if (rc == LC_OK)
        rc = new_models(&j, err);
    if (rc == LC_OK)
        rc = copy_meta(&j, err);
    if (rc == LC_OK && (rc = read_model(&j, &mm, err)) != LC_OK)
        lc_err_context(err, o->in, NULL);
    if (rc == LC_OK && (rc = lc_job_quantize_plan(&j, &mm, err)) != LC_OK)
        lc_err_context(err, o->in, NULL);
    if (rc == LC_OK && o->split.split && (rc = split_parts(&j, out, err)) != LC_OK)
        lc_err_context(err, o->in, NULL);
    if (rc == LC_OK && !o->dry_run) {
        /* A device gets reads large enough to fill it (quant/device.h). */
        const lc_gguf_write_opts wo = { .threads = o->threads,
                                        .chunk_bytes = j.dev ? LC_QDEV_CHUNK_BYTES : 0 };
        if (o->keep_split || j.set)
            rc = lc_gguf_write_parts(j.set ? (const lc_model *const *)j.set->models :
                                     (const lc_model *const *)j.parts,
                                     (const char *const *)j.part_paths, j.n_parts, &o->split,
                                     &wo, p, &j.kept, err);
        else
            rc = lc_gguf_split_write(j.out, out, &o->split, &wo, p, &j.kept, err);
        if (rc != LC_OK)
            lc_err_context(err, o->in, NULL);   /* a failed read or check: the input */
    }
    if (rc == LC_OK && res)
        rc = lc_job_quantize_result_fill(&j, out, res, err);
    free_job(&j);
    return rc;
}
