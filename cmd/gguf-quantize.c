/* cmd/gguf-quantize.c: a GGUF model (or a Hugging Face folder) into the file llama.cpp's
 * llama-quantize writes for TYPE, byte for byte (jobs/gguf_quantize.h). */
#include <stdio.h>
#include <stdlib.h>

#include "jobs/gguf_quantize.h"
#include "jobs/gguf_quantize_print.h"
#include "libconvert/cli.h"

int main(int argc, char **argv) {
    lc_job_quantize_opts o = { 0 };
    lc_cli_list tensor_types = { .n = 0 }, overrides = { .n = 0 }, include = { .n = 0 },
                exclude = { .n = 0 };
    lc_gguf_split_args split = { 0 };
    char types[512], with_im[256] = "";
    lc_ftype_names(0, true, false, " ", types, sizeof types);
    for (size_t i = 0, len = 0; i < lc_ftype_count(); i++) {     /* the ones --imatrix adds */
        const lc_ftype *f = lc_ftype_at(i);
        if (lc_ftype_available_imatrix(f) && !lc_ftype_available(f) && len + 16 < sizeof with_im)
            len += (size_t)snprintf(with_im + len, sizeof with_im - len, " %s", f->name);
    }
    char about[1536];
    snprintf(about, sizeof about,
             "Writes what llama.cpp's llama-quantize writes for TYPE (with the same "
             "--imatrix, or without one), byte for byte: the same tensor types (the mixes' per-tensor rules, "
             "the fallbacks for rows that are not whole blocks), order, metadata and "
             "alignment. IN is a GGUF model (the first part of a split one) or a Hugging Face folder (converted as "
             "safetensors2gguf does, in the same pass). OUT defaults to "
             "ggml-model-TYPE.gguf beside IN; NTHREADS is -t.\n"
             "TYPE (case-insensitive, or llama.cpp's numeric id): %s; Q3_K, Q4_K, Q5_K are the _M mixes; "
             "with --imatrix also:%s.", types, with_im);
    const lc_cli_opt opts[] = {
        { "pure", 0, NULL, "no per-tensor rules: every quantized tensor gets TYPE's base type",
          .flag = &o.pure },
        { "leave-output-tensor", 0, NULL, "copy output.weight as it is", .flag = &o.leave_output },
        { "output-tensor-type", 0, "T", "the type of output.weight (a ggml type name)",
          .str = &o.output_type },
        { "token-embedding-type", 0, "T", "the type of token_embd.weight",
          .str = &o.token_embd_type },
        { "tensor-type", 0, "PATTERN=T", "tensors whose name contains a match of PATTERN get "
          "type T (first match wins); repeatable. PATTERN is lower-cased and read as "
          "llama-quantize's ECMAScript regex: ^ $ . [a-z] [^...] ( ) | * + ? {m,n} \\d \\w "
          "\\s \\b \\. ...; no back-references or lookaround; at most 4096 NFA states; "
          "matched in time linear in the name", .list = &tensor_types },
        { "allow-requantize", 0, NULL, "quantize tensors that are quantized already",
          .flag = &o.allow_requantize },
        { "override-kv", 0, "KEY=TYPE:VALUE", "set a key in OUT (TYPE int, float, bool, str); "
          "repeatable", .list = &overrides },
        { "imatrix", 0, "FILE", "weigh each quantized tensor by llama-imatrix's importance "
          "matrix FILE (GGUF or legacy .dat); needed by IQ1_*, IQ2_*, IQ3_XXS and Q2_K_S",
          .str = &o.imatrix },
        { "include-weights", 0, "NAME", "use only the --imatrix entries whose name contains "
          "NAME; repeatable", .list = &include },
        { "exclude-weights", 0, "NAME", "ignore the --imatrix entries whose name contains "
          "NAME; repeatable", .list = &exclude },
        { "keep-split", 0, NULL, "a split IN (give its first part) gives OUT split the same "
          "way: OUT-00001-of-0000N.gguf ... (OUT without .gguf), written as a set",
          .flag = &o.keep_split },
        { "split-max-size", 0, "N(M|G)", "OUT as parts of at most N megabytes (10^6) or "
          "gigabytes of tensor data, split as llama.cpp's gguf-split would split it",
          .str = &split.max_size },
        { "split-max-tensors", 0, "N", "OUT as parts of at most N tensors (gguf-split's)",
          .str = &split.max_tensors },
        { "no-tensor-first-split", 0, NULL, "split, the first part holding the metadata "
          "alone", .flag = &split.no_tensor_first },
        { "part", 0, "K/N", "write only part K of the N parts of the whole run, byte for "
          "byte (one job of many)", .str = &split.part },
        { "skip-existing", 0, NULL, "keep an output already written whole by the same run "
          "(its header and size checked); refuse another run's", .flag = &split.skip_existing },
        { "dry-run", 0, NULL, "print each tensor's type and size and the totals; write nothing",
          .flag = &o.dry_run },
        { "device", 0, "DEV", "convert on DEV: " LC_QDEV_SPECS " (a CUDA=1 build); the same "
          "bytes as cpu, the default", .str = &o.device },
        { NULL },
    };
    const lc_cli_tool tool = {
        .synopsis = "[options] IN [OUT] TYPE [NTHREADS]",
        .about = about, .opts = opts, .common = LC_CLI_WRITER | LC_CLI_JSON,
        .min_args = 2, .max_args = 4,
    };
    lc_cli cli;
    int status = lc_cli_parse(&cli, &tool, argc, argv);
    if (status >= 0)
        return status;
    /* IN TYPE [N] or IN OUT TYPE [N]: the second operand is TYPE when it names one. */
    int k = 1;
    o.in = cli.args[0];
    if (!lc_job_quantize_type(cli.args[1]) && cli.nargs >= 3)
        o.out = cli.args[k++];
    o.ftype = lc_job_quantize_type(cli.args[k]);
    o.threads = cli.threads;
    char *end = NULL;
    if (cli.nargs > k + 1)
        o.threads = (int)strtol(cli.args[k + 1], &end, 10);
    o.tensor_types = tensor_types.items, o.n_tensor_types = tensor_types.n;
    o.overrides = overrides.items, o.n_overrides = overrides.n;
    o.include_weights = include.items, o.n_include = include.n;
    o.exclude_weights = exclude.items, o.n_exclude = exclude.n;
    lc_error err = { 0 };
    if (!o.ftype || cli.nargs > k + 2 || (end && (*end || o.threads < 0 || o.threads > 1024))) {
        fprintf(stderr, "%s: %s '%s' (see --help)\n", cli.prog, !o.ftype ? "unknown TYPE" :
                "bad NTHREADS", !o.ftype ? cli.args[k] : cli.args[cli.nargs - 1]);
        return LC_EXIT_USAGE;
    }
    if (lc_gguf_split_parse(&split, o.keep_split, &o.split, &err) != LC_OK ||
        lc_job_gguf_quantize_check(&o, &err) != LC_OK) {
        lc_cli_report(&cli, &err);
        return LC_EXIT_USAGE;
    }
    lc_cli_start(&cli);
    lc_job_quantize_result res;
    lc_code rc = lc_job_gguf_quantize(&o, cli.progress, &res, &err);
    /* The plan (dry run) or the JSON on stdout; a run's summary line on stderr. */
    if (rc == LC_OK)
        rc = lc_job_quantize_print(&res, cli.json, stdout,
                                   cli.quiet || cli.json ? NULL : stderr, &err);
    lc_job_quantize_result_free(&res);
    return lc_cli_end(&cli, rc, &err);
}
