/* cmd/pth2safetensors.c: PyTorch checkpoints to safetensors, without running a pickle. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>

#include "formats/pth.h"
#include "formats/safetensors.h"
#include "libconvert/alloc.h"
#include "libconvert/cli.h"
#include "libconvert/convert.h"

enum { OPT_KEY = 0x2000, OPT_DEDUPE, OPT_LIST, OPT_SCAN, OPT_DTYPE };
static lc_dtype cast = LC_DT_INVALID;

static void usage(FILE *f) {
    fprintf(f, "usage: pth2safetensors [--key K] [--dedupe] [--dtype T] [-q] IN OUT\n"
               "       pth2safetensors --list [--key K] IN | --scan IN\n"
               "  IN is a torch.save checkpoint (.pth/.pt/.bin, zip or legacy) or a sharded\n"
               "  folder (or its pytorch_model.bin.index.json); OUT is a .safetensors file,\n"
               "  or for a sharded IN a folder of model-*.safetensors plus\n"
               "  model.safetensors.index.json. The pickle is read, never run: a global off\n"
               "  the allowlist stops the conversion. OUT appears only when complete.\n"
               "  --key K    the dict holding the tensors (\"model\", \"state_dict.module\");\n"
               "             default: found automatically; \".\" is the whole object\n"
               "  --dedupe   drop tensors sharing storage as safetensors' convert does\n"
               "             (recorded in __metadata__ as dropped -> kept)\n"
               "  --dtype T  cast every floating-point tensor to T (f32, f16, bf16)\n"
               "  --list     print the tensors (name, dtype, shape) and exit\n"
               "  --scan     print every global the pickles name; exit 0 clean, 1 refused,\n"
               "             2 not a readable checkpoint\n"
               "  -t, --threads N  convert on N threads (default: one per core, at most 8)\n"
               "  -q, --quiet  no progress; --no-fsync; -h, --help; --version\n");
}

static void print_ref(void *ctx, const lc_pth_ref *r) {
    (void)ctx;
    printf("%s @ 0x%" PRIx64 ": %s.%s %s\n", r->entry, r->offset, r->module, r->name,
           r->allowed ? "allowed" : "FORBIDDEN");
}

/* As safetensors' convert script: "format": "pt" in the metadata. */
static lc_code write_one(lc_model *m, const char *path, lc_cli *cli, lc_error *err) {
    lc_st_write_opts wo = { .stringify_meta = true,    /* epoch = 5 becomes "5" */
                            .threads = cli->threads };
    LC_TRY(lc_model_set_meta_str(m, "format", "pt", err));
    if (cast != LC_DT_INVALID)
        LC_TRY(lc_model_cast(m, cast, NULL, err));     /* lazy: converts while writing */
    return lc_safetensors_write(m, path, &wo, cli->progress, err);
}

static lc_code convert(const char *in, const char *out, const lc_pth_opts *o, lc_cli *cli,
                       lc_model **keep, lc_error *err) {
    lc_code rc = lc_pth_load(in, o, keep, err);
    if (rc || !out)
        return rc;
    if (!lc_pth_is_index(in))
        return write_one(*keep, out, cli, err);
    /* Sharded: the whole index was checked above; now one output per shard. */
    char **files = NULL, path[4096], name[1024];
    size_t n = 0;
    lc_pth_index_out *ix = lc_pth_index_out_new();
    if (!ix)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (mkdir(out, 0777) != 0 && errno != EEXIST)
        rc = lc_fail(err, LC_E_IO, LC_NO_OFFSET, "cannot create folder %s", out);
    if (rc == LC_OK)
        rc = lc_pth_index_shards(in, &files, &n, err);
    for (size_t i = 0; i < n; i++) {
        lc_model *m = NULL;
        lc_pth_shard_out_name(files[i], name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", out, name);
        if (rc == LC_OK && (rc = lc_pth_load(files[i], o, &m, err)) == LC_OK &&
            (rc = write_one(m, path, cli, err)) == LC_OK)
            rc = lc_pth_index_out_add(ix, m, name, err);
        lc_model_free(m);
        lc_free(files[i]);
    }
    lc_free(files);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", out);
    if (rc == LC_OK)
        rc = lc_pth_index_out_write(ix, path, err);
    lc_pth_index_out_free(ix);
    return rc;
}

int main(int argc, char **argv) {
    static const struct option longopts[] = {
        LC_CLI_LONGOPTS, { "key", required_argument, NULL, OPT_KEY },
        { "dedupe", no_argument, NULL, OPT_DEDUPE }, { "list", no_argument, NULL, OPT_LIST },
        { "scan", no_argument, NULL, OPT_SCAN }, { "dtype", required_argument, NULL, OPT_DTYPE },
        { NULL, 0, NULL, 0 } };
    lc_cli cli;
    lc_pth_opts o = { 0 };
    int opt, mode = 0;
    lc_cli_init(&cli, argv[0]);
    while ((opt = getopt_long(argc, argv, LC_CLI_SHORTOPTS, longopts, NULL)) != -1) {
        if (opt == OPT_KEY)
            o.key = optarg;
        else if (opt == OPT_DEDUPE)
            o.dedupe = true;
        else if (opt == OPT_LIST || opt == OPT_SCAN)
            mode = opt;
        else if (opt == OPT_DTYPE) {
            if ((opt = lc_cli_float_dtype(&cli, optarg, &cast)) >= 0)
                return opt;
        } else if ((opt = lc_cli_option(&cli, opt, optarg, usage)) >= 0)
            return opt;
    }
    if (argc - optind != (mode ? 1 : 2)) {
        usage(stderr);
        return LC_EXIT_USAGE;
    }
    lc_cli_start(&cli);
    lc_error err = { 0 };
    lc_model *m = NULL;
    int status = LC_EXIT_OK;
    if (mode == OPT_SCAN) {
        lc_code rc = lc_pth_scan(argv[optind], print_ref, NULL, &err);
        if (rc != LC_OK)
            status = lc_cli_report(&cli, &err) && rc == LC_E_FORBIDDEN ? 1 : 2;
    } else if (convert(argv[optind], mode ? NULL : argv[optind + 1], &o, &cli, &m, &err)) {
        status = lc_cli_report(&cli, &err);
    } else if (mode == OPT_LIST) {
        for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
            char shape[256];
            const lc_tensor *t = lc_model_tensor(m, i);
            lc_shape_format(t, shape, sizeof shape);
            printf("%s\t%s\t%s\n", t->name, lc_dtype_name(t->dtype), shape);
        }
    }
    lc_model_free(m);
    lc_cli_finish(&cli);
    return status;
}
