/* cmd/gguf-split.c: llama.cpp's gguf-split, same interface and bytes: a GGUF into parts
 * by tensor count or size, or the parts back into one file (jobs/gguf_split.h). */
#include <stdio.h>

#include "jobs/gguf_split.h"
#include "jobs/gguf_split_print.h"
#include "libconvert/cli.h"

enum { SPLIT, MERGE };

int main(int argc, char **argv) {
    lc_job_gguf_split_opts o = { 0 };
    lc_gguf_split_args a = { 0 };
    int mode = SPLIT;
    const lc_cli_opt opts[] = {
        { "split", 0, NULL, "split IN into OUT-00001-of-0000N.gguf, ... (the default)",
          .choice = &mode, .id = SPLIT },
        { "merge", 0, NULL, "IN is the first part of a split model: merge its parts into "
          "the file OUT (which must not exist)", .choice = &mode, .id = MERGE },
        { "split-max-tensors", 0, "N", "at most N tensors a part (default: 128)",
          .str = &a.max_tensors },
        { "split-max-size", 0, "N(M|G)", "at most N megabytes (10^6) or gigabytes (10^9) of "
          "tensor data a part", .str = &a.max_size },
        { "no-tensor-first-split", 0, NULL, "the first part holds the metadata alone",
          .flag = &a.no_tensor_first },
        { "dry-run", 0, NULL, "print the plan (and check a merge's parts); write nothing",
          .flag = &o.dry_run },
        { "part", 0, "K/N", "write part K of the N the plan gives, only", .str = &a.part },
        { "skip-existing", 0, NULL, "keep a part already written whole by the same split "
          "(its header and size checked)", .flag = &a.skip_existing },
        { NULL },
    };
    const lc_cli_tool tool = {
        .synopsis = "[options] IN OUT",
        .about = "Splits the GGUF IN into parts OUT-00001-of-0000N.gguf, ... (a part starts "
                 "every --split-max-tensors tensors, or before a tensor that would take its "
                 "tensor data past --split-max-size; the first part holds the metadata), or "
                 "with --merge joins the parts of a split model (IN its first part) into "
                 "OUT: the files llama.cpp's gguf-split writes, byte for byte. The parts "
                 "appear as a set, or none of them.",
        .opts = opts, .common = LC_CLI_WRITER, .min_args = 2, .max_args = 2,
    };
    lc_cli cli;
    int status = lc_cli_parse(&cli, &tool, argc, argv);
    if (status >= 0)
        return status;
    lc_error err = { 0 };
    if (lc_gguf_split_parse(&a, true, &o.split, &err) != LC_OK) {
        lc_cli_report(&cli, &err);
        return LC_EXIT_USAGE;
    }
    if (mode == MERGE && (a.max_size || a.max_tensors || a.no_tensor_first || a.part ||
                          a.skip_existing)) {
        fprintf(stderr, "%s: --merge takes no split option (see --help)\n", cli.prog);
        return LC_EXIT_USAGE;
    }
    o.in = cli.args[0], o.out = cli.args[1], o.threads = cli.threads;
    o.merge = mode == MERGE;
    lc_cli_start(&cli);
    lc_job_gguf_split_result res;
    const lc_code rc = lc_job_gguf_split(&o, cli.progress, &res, &err);
    /* The plan on stdout (also when writing failed: gguf-split prints it first), the
     * summary line on stderr. */
    lc_job_gguf_split_print_plan(&res, stdout);
    if (rc == LC_OK && !cli.quiet)
        lc_job_gguf_split_print_summary(&res, stderr);
    lc_job_gguf_split_result_free(&res);
    return lc_cli_end(&cli, rc, &err);
}
