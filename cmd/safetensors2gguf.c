/* cmd/safetensors2gguf.c: a Hugging Face model folder (config.json beside the weights)
 * into a GGUF that llama.cpp runs; or a bare .safetensors file into a GGUF container
 * (same tensors, dtypes GGUF lacks widened losslessly, no architecture), which
 * gguf2safetensors reverses. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/gguf.h"
#include "formats/gguf_bare.h"
#include "hf/hf.h"
#include "hf/meta.h"
#include "formats/safetensors.h"
#include "libconvert/cli.h"

enum { OPT_OUTTYPE = 0x2000, OPT_VOCAB_ONLY, OPT_DRY_RUN, OPT_METADATA, OPT_PRE };
#define MAX_OVERRIDES 64

static void usage(FILE *f) {
    fprintf(f, "usage: safetensors2gguf [options] DIR [OUT.gguf]\n"
               "       safetensors2gguf [-q] IN.safetensors OUT.gguf\n"
               "  DIR is a Hugging Face folder (config.json, model.safetensors or an index,\n"
               "  tokenizer.model or tokenizer.json): writes a GGUF llama.cpp runs, as its\n"
               "  convert_hf_to_gguf.py does. OUT defaults to DIR/Name-SizeLabel-TYPE.gguf\n"
               "  (or that name inside OUT when OUT is a folder). DIR may also be Meta's\n"
               "  layout (params.json + consolidated.00.pth + tokenizer.model).\n"
               "  --outtype f32|f16|bf16|q8_0|auto  weights type (auto: the source's 16-bit\n"
               "                     type); 1-D tensors and norms are always f32\n"
               "  --vocab-only       metadata and tokenizer only, no tensors\n"
               "  --dry-run          print the keys and tensor plan, write nothing\n"
               "  --metadata KEY=TYPE:VALUE  set a key (TYPE str bool u8..u64 i8..i64 f32\n"
               "                     f64); repeatable\n"
               "  --pre NAME         tokenizer.ggml.pre for a BPE tokenizer we do not know\n"
               "  A bare IN.safetensors becomes a GGUF container: its tensors and\n"
               "  __metadata__, dtypes GGUF lacks widened and recorded, no architecture.\n"
               "  -t, --threads N    convert on N threads (default: one per core, at most 8)\n"
               "  -q, --quiet  no progress; --no-fsync; -h, --help; --version\n");
}

static int parse_outtype(const char *s, lc_dtype *t) {
    static const struct { const char *n; lc_dtype t; } T[] = {
        { "f32", LC_DT_F32 }, { "f16", LC_DT_F16 }, { "bf16", LC_DT_BF16 },
        { "q8_0", LC_DT_Q8_0 }, { "auto", LC_DT_INVALID },
    };
    for (size_t i = 0; i < sizeof T / sizeof *T; i++)
        if (strcmp(s, T[i].n) == 0)
            return *t = T[i].t, 0;
    return -1;
}

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The HF folder path: build, override, then print or write. */
static lc_code run_hf(lc_cli *cli, const char *dir, const char *out, const lc_hf_opts *o,
                      bool dry, const char **ov, int n_ov, lc_error *err) {
    lc_model *m = NULL;
    char name[512], path[4096];
    lc_code rc = lc_hf_to_gguf(dir, o, &m, err);
    for (int i = 0; rc == LC_OK && i < n_ov; i++)
        rc = lc_hf_meta_override(m, ov[i], err);
    if (rc == LC_OK && (!out || is_dir(out))) {
        rc = lc_hf_default_name(m, o->vocab_only, name, sizeof name, err);
        snprintf(path, sizeof path, "%s/%s", out ? out : dir, name);
        out = path;
    }
    if (rc == LC_OK && dry) {
        lc_hf_meta_print(m, stdout);
        printf("output %s (not written: --dry-run)\n", out);
    } else if (rc == LC_OK) {
        const lc_gguf_write_opts wo = { .threads = cli->threads };
        rc = lc_gguf_write(m, out, &wo, cli->progress, err);
        if (rc != LC_OK)
            lc_err_context(err, dir, NULL);   /* a failed source read: the input */
    }
    lc_model_free(m);
    return rc;
}

int main(int argc, char **argv) {
    static const struct option longopts[] = {
        LC_CLI_LONGOPTS,
        { "outtype", required_argument, NULL, OPT_OUTTYPE },
        { "vocab-only", no_argument, NULL, OPT_VOCAB_ONLY },
        { "dry-run", no_argument, NULL, OPT_DRY_RUN },
        { "metadata", required_argument, NULL, OPT_METADATA },
        { "pre", required_argument, NULL, OPT_PRE },
        { NULL, 0, NULL, 0 },
    };
    lc_cli cli;
    lc_cli_init(&cli, argv[0]);
    lc_hf_opts o = { .outtype = LC_DT_INVALID };
    const char *ov[MAX_OVERRIDES];
    int n_ov = 0, opt;
    bool dry = false, hf_opts = false;
    while ((opt = getopt_long(argc, argv, LC_CLI_SHORTOPTS, longopts, NULL)) != -1) {
        hf_opts |= opt >= OPT_OUTTYPE;
        if (opt == OPT_OUTTYPE && parse_outtype(optarg, &o.outtype) != 0) {
            fprintf(stderr, "%s: --outtype must be f32, f16, bf16, q8_0 or auto\n", cli.prog);
            return LC_EXIT_USAGE;
        } else if (opt == OPT_VOCAB_ONLY) {
            o.vocab_only = true;
        } else if (opt == OPT_DRY_RUN) {
            dry = true;
            o.plan = stdout;
        } else if (opt == OPT_METADATA && n_ov < MAX_OVERRIDES) {
            ov[n_ov++] = optarg;
        } else if (opt == OPT_PRE) {
            o.pre = optarg;
        } else if (opt < OPT_OUTTYPE) {
            int rc = lc_cli_option(&cli, opt, optarg, usage);
            if (rc >= 0)
                return rc;
        }
    }
    const int nargs = argc - optind;
    const bool folder = nargs >= 1 && is_dir(argv[optind]);
    if (nargs < 1 || nargs > 2 || (!folder && (nargs != 2 || hf_opts))) {
        usage(stderr);
        return LC_EXIT_USAGE;
    }
    lc_cli_start(&cli);
    lc_error err = { 0 };
    lc_model *m = NULL;
    int status = LC_EXIT_OK;
    if (folder) {
        if (run_hf(&cli, argv[optind], nargs == 2 ? argv[optind + 1] : NULL, &o, dry, ov, n_ov,
                   &err) != LC_OK)
            status = lc_cli_report(&cli, &err);
    } else if (lc_safetensors_load(argv[optind], &m, &err) != LC_OK ||
               lc_gguf_bare_encode(m, &err) != LC_OK ||
               lc_gguf_write(m, argv[optind + 1], &(lc_gguf_write_opts){ .threads = cli.threads },
                             cli.progress, &err) != LC_OK) {
        lc_err_context(&err, argv[optind], NULL); /* a failed source read: the input */
        status = lc_cli_report(&cli, &err);
    }
    lc_model_free(m);
    lc_cli_finish(&cli);
    return status;
}
