/* lc-infer: test driver for infer/. Runs the reference forward pass on a model and
 * writes the logits [n, vocab] as little-endian float32 to OUT.
 *
 *   lc-infer [-t THREADS] [--repeat N] [--layers FILE] MODEL TOKENS OUT
 *
 * MODEL: a GGUF file (family and hyperparameters from its keys, GGUF tensor names), an
 * HF folder (config.json through hf/config.h, transformers' names; weights from
 * model.safetensors or the folder's sharded index) or a folder in Meta's original layout
 * (params.json + consolidated.00.pth, hf/meta_layout.h; Meta's names). TOKENS: comma-separated ids, or
 * @FILE holding them. --layers FILE: the residual stream after every layer, float32
 * [layers, n, embd]. Prints "n vocab wall cpu" on stdout: the forward call's wall time and
 * the process's CPU time during it (all threads), in seconds, of the fastest of N calls
 * with --repeat N (for scripts/bench/infer_bench.py). Exit 0 ok, 1 failure, 2 usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "arch/arch.h"
#include "formats/any.h"
#include "hf/config.h"
#include "hf/meta_layout.h"
#include "infer/infer.h"
#include "libconvert/alloc.h"
#include "libconvert/error.h"

static int usage(void) {
    fprintf(stderr, "usage: lc-infer [-t THREADS] [--repeat N] [--layers FILE] MODEL TOKENS OUT\n");
    return 2;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static int parse_tokens(const char *spec, int32_t **out, size_t *n) {
    const char *s = spec[0] == '@' ? slurp(spec + 1) : spec;
    if (!s)
        return -1;
    size_t cap = 16, k = 0;
    int32_t *v = malloc(cap * sizeof *v);
    while (v && *s) {
        char *end;
        errno = 0;
        long x = strtol(s, &end, 10);
        if (end == s || errno)
            break;
        if (k == cap && !(v = realloc(v, (cap *= 2) * sizeof *v)))
            return -1;
        v[k++] = (int32_t)x;
        s = end;
        while (*s == ',' || *s == ' ' || *s == '\n')
            s++;
    }
    if (!v || *s || k == 0) {
        free(v);
        return -1;
    }
    *out = v;
    *n = k;
    return 0;
}

static lc_code layer_out(void *user, uint32_t layer, const float *h, size_t n, size_t embd,
                         lc_error *err) {
    (void)layer;
    if (fwrite(h, sizeof(float), n * embd, user) != n * embd)
        return lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot write the hidden states");
    return LC_OK;
}

int main(int argc, char **argv) {
    int threads = 0, repeat = 1, i = 1;
    const char *layers = NULL;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
            repeat = atoi(argv[++i]);
        else if (strcmp(argv[i], "--layers") == 0 && i + 1 < argc)
            layers = argv[++i];
        else
            return usage();
    }
    if (argc - i != 3)
        return usage();
    const char *model_path = argv[i], *out_path = argv[i + 2];
    int32_t *tokens = NULL;
    size_t n = 0;
    if (parse_tokens(argv[i + 1], &tokens, &n) != 0)
        return usage();

    lc_error err = { 0 };
    lc_model *m = NULL;
    lc_infer *ctx = NULL;
    float *logits = NULL;
    FILE *lf = NULL;
    int status = 1;
    struct stat st;
    const lc_arch *arch;
    lc_hparams hp;
    lc_spelling sp;
    if (stat(model_path, &st) == 0 && S_ISDIR(st.st_mode) && lc_hf_meta_layout_is(model_path)) {
        char path[4096];
        lc_hf_config cfg;
        snprintf(path, sizeof path, "%s/params.json", model_path);
        const char *json = slurp(path);
        if (!json || lc_hf_meta_layout_load(model_path, &m, &err) != LC_OK)
            goto done;
        const lc_tensor *e = lc_model_find_tensor(m, "tok_embeddings.weight");
        const lc_tensor *w1 = lc_model_find_tensor(m, "layers.0.feed_forward.w1.weight");
        if (lc_hf_meta_layout_config(json, strlen(json), e ? e->shape[0] : 0,
                                     w1 ? w1->shape[0] : 0, &cfg, &err) != LC_OK)
            goto done;
        arch = cfg.arch;
        hp = cfg.hp;
        sp = LC_SPELL_META;
    } else if (stat(model_path, &st) == 0 && S_ISDIR(st.st_mode)) {
        lc_hf_config cfg;
        char path[4096];
        if (lc_hf_config_load(model_path, &cfg, &err) != LC_OK)
            goto done;
        arch = cfg.arch;
        hp = cfg.hp;
        sp = LC_SPELL_HF;
        snprintf(path, sizeof path, "%s/model.safetensors", model_path);
        if (lc_model_open_any(stat(path, &st) == 0 ? path : model_path, &m, NULL, &err) != LC_OK)
            goto done;
    } else {
        if (lc_model_open_any(model_path, &m, NULL, &err) != LC_OK ||
            lc_arch_read_keys(m, &arch, &hp, &err) != LC_OK)
            goto done;
        sp = LC_SPELL_GGUF;
    }
    lc_infer_opts o = { .threads = threads };
    if (lc_infer_open(m, arch, &hp, sp, &o, &ctx, &err) != LC_OK)
        goto done;
    const size_t vocab = lc_infer_vocab(ctx);
    if (!(logits = malloc(n * vocab * sizeof *logits)))
        goto done;
    if (layers && !(lf = fopen(layers, "wb")))
        goto done;
    lc_infer_hook hook = { layer_out, lf };
    double best = 0, best_cpu = 0;
    for (int r = 0; r < repeat; r++) {
        struct timespec t0, t1, c0, c1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
        if (lc_infer_forward(ctx, tokens, n, logits, lf && r == 0 ? &hook : NULL, &err) != LC_OK)
            goto done;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        const double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        const double c = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9;
        if (r == 0 || s < best) {
            best = s;
            best_cpu = c;
        }
    }
    FILE *f = fopen(out_path, "wb");
    if (!f || fwrite(logits, sizeof *logits, n * vocab, f) != n * vocab || fclose(f) != 0) {
        fprintf(stderr, "lc-infer: cannot write %s\n", out_path);
        goto done;
    }
    printf("%zu %zu %.6f %.6f\n", n, vocab, best, best_cpu);
    status = 0;
done:
    if (status && err.code != LC_OK) {
        char line[1024];
        lc_err_format(&err, line, sizeof line);
        fprintf(stderr, "lc-infer: %s (%s)\n", line, lc_code_name(err.code));
    }
    if (lf && fclose(lf) != 0)
        status = 1;
    free(logits);
    free(tokens);
    lc_infer_close(ctx);
    lc_model_free(m);
    return status;
}
