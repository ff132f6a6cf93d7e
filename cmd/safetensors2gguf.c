/* cmd/safetensors2gguf.c: a Hugging Face model folder (config.json beside the weights)
 * into a GGUF that llama.cpp runs; or a bare .safetensors file into a GGUF container
 * (jobs/safetensors2gguf.h). */
#include <stdio.h>

#include "jobs/safetensors2gguf.h"
#include "jobs/safetensors2gguf_print.h"
#include "libconvert/cli.h"

int main(int argc, char **argv) {
    lc_job_st2gguf_opts o = { .hf.outtype = LC_DT_INVALID };
    lc_cli_list overrides = { .n = 0 };
    lc_gguf_split_args split = { 0 };
    char types[512], help[768];  /* "f32|f16|bf16|q4_0|...|q6_k|auto" */
    const char *outtype = NULL;
    lc_job_st2gguf_outtypes(types, sizeof types);
    snprintf(help, sizeof help, "weights type: f32, f16, bf16, q8_0 as convert_hf_to_gguf.py "
             "writes them (1-D tensors and norms f32); any other TYPE as converting then "
             "llama-quantize, in one pass; auto (default): the source's 16-bit type. TYPE: %s",
             types);
    const lc_cli_opt opts[] = {   /* all of them for a folder only */
        { "outtype", 0, "TYPE", help, .str = &outtype },
        { "vocab-only", 0, NULL, "metadata and tokenizer only, no tensors",
          .flag = &o.hf.vocab_only },
        { "dry-run", 0, NULL, "print the keys and tensor plan, write nothing",
          .flag = &o.dry_run },
        { "metadata", 0, "KEY=TYPE:VALUE", "set a key (TYPE str bool u8..u64 i8..i64 f32 "
          "f64); repeatable", .list = &overrides },
        { "pre", 0, "NAME", "tokenizer.ggml.pre for a BPE tokenizer we do not know",
          .str = &o.hf.pre },
        { "device", 0, "DEV", "convert on DEV: " LC_QDEV_SPECS " (a CUDA=1 build); the same "
          "bytes as cpu, the default", .str = &o.device },
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
        { NULL },
    };
    const lc_cli_tool tool = {
        .synopsis = "[options] DIR [OUT.gguf]\n[-q] IN.safetensors OUT.gguf",
        .about = "DIR is a Hugging Face folder (config.json, model.safetensors or an index, "
                 "tokenizer.model or tokenizer.json): writes a GGUF llama.cpp runs, as its "
                 "convert_hf_to_gguf.py does. OUT defaults to DIR/Name-SizeLabel-TYPE.gguf "
                 "(or that name inside OUT when OUT is a folder). DIR may also be Meta's "
                 "layout (params.json + consolidated.00.pth + tokenizer.model).\n"
                 "A bare IN.safetensors becomes a GGUF container: its tensors and "
                 "__metadata__, dtypes GGUF lacks widened and recorded, no architecture.",
        .opts = opts, .common = LC_CLI_WRITER, .min_args = 1, .max_args = 2,
    };
    lc_cli cli;
    int status = lc_cli_parse(&cli, &tool, argc, argv);
    if (status >= 0)
        return status;
    o.in = cli.args[0], o.out = cli.nargs == 2 ? cli.args[1] : NULL;
    o.overrides = overrides.items, o.n_overrides = overrides.n;
    /* The first six rows are a folder's; the split options fit a bare file too. */
    o.folder_options = (cli.given & 0x3f) != 0, o.threads = cli.threads;
    lc_error err = { 0 };
    if (outtype && lc_job_st2gguf_outtype(outtype, &o, &err) != LC_OK) {
        lc_cli_report(&cli, &err);
        return LC_EXIT_USAGE;
    }
    if (lc_gguf_split_parse(&split, false, &o.split, &err) != LC_OK ||
        (o.device && lc_qdev_parse(o.device, &err) != LC_OK)) {
        lc_cli_report(&cli, &err);
        return LC_EXIT_USAGE;
    }
    if (lc_job_safetensors2gguf_check(&o, &err) != LC_OK)
        return lc_cli_usage(&cli);
    lc_cli_start(&cli);
    lc_job_st2gguf_result res;
    const lc_code rc = lc_job_safetensors2gguf(&o, cli.progress, &res, &err);
    if (o.dry_run)      /* after a failure too: what was planned before it */
        lc_job_st2gguf_print(&res, stdout);
    lc_job_st2gguf_result_free(&res);
    return lc_cli_end(&cli, rc, &err);
}
