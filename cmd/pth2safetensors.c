/* cmd/pth2safetensors.c: PyTorch checkpoints to safetensors, without running a pickle. */
#include <stdio.h>

#include "jobs/pth2safetensors.h"
#include "jobs/pth2safetensors_print.h"
#include "libconvert/cli.h"

/* What the automatic --key choice left out: said even with -q, since it is data. */
static void print_note(void *ctx, const lc_error *note) {
    char line[1024];
    lc_err_format(note, line, sizeof line);
    fprintf(stderr, "%s: note: %s\n", ((const lc_cli *)ctx)->prog, line);
}

int main(int argc, char **argv) {
    /* --scan's lines as the scan meets each global (a pickle may name any number). */
    lc_job_pth2st_opts o = { .cast = LC_DT_INVALID, .on_ref = lc_job_pth2st_print_ref,
                             .ref_ctx = stdout };
    int mode = LC_PTH2ST_CONVERT;
    const lc_cli_opt opts[] = {
        { "key", 0, "K", "the dict holding the tensors (\"model\", \"state_dict.module\"); "
          "default: found automatically; \".\" is the whole object", .str = &o.pth.key },
        { "dedupe", 0, NULL, "drop tensors sharing storage as safetensors' convert does "
          "(recorded in __metadata__ as dropped -> kept)", .flag = &o.pth.dedupe },
        { "dtype", 0, "f32|f16|bf16", "cast every floating-point tensor to this type",
          .dtype = &o.cast },
        { "allow-expand", 0, NULL, "write views that repeat a storage (stride 0) beyond 16 "
          "times its size (refused by default)", .flag = &o.pth.allow_expand },
        { "list", 0, NULL, "print the tensors (name, dtype, shape) and exit",
          .choice = &mode, .id = LC_PTH2ST_LIST },
        { "scan", 0, NULL, "print every global the pickles name; exit 0 clean, 1 refused, "
          "2 not a readable checkpoint", .choice = &mode, .id = LC_PTH2ST_SCAN },
        { NULL },
    };
    const lc_cli_tool tool = {
        .synopsis = "[options] IN OUT\n--list [--key K] IN | --scan IN",
        .about = "IN is a torch.save checkpoint (.pth/.pt/.bin, zip or legacy) or a sharded "
                 "folder (or its pytorch_model.bin.index.json); OUT is a .safetensors file, "
                 "or for a sharded IN a folder of model-*.safetensors plus "
                 "model.safetensors.index.json. The pickle is read, never run: a global off "
                 "the allowlist stops the conversion. OUT appears only when complete.",
        .opts = opts, .common = LC_CLI_WRITER, .min_args = 1, .max_args = 2,
    };
    lc_cli cli;
    int status = lc_cli_parse(&cli, &tool, argc, argv);
    if (status >= 0)
        return status;
    if (cli.nargs != (mode == LC_PTH2ST_CONVERT ? 2 : 1))
        return lc_cli_usage(&cli);
    lc_cli_start(&cli);
    o.pth.note = print_note;
    o.pth.note_ctx = &cli;
    o.in = cli.args[0], o.out = mode ? NULL : cli.args[1];
    o.mode = (lc_job_pth2st_mode)mode, o.threads = cli.threads;
    lc_error err = { 0 };
    lc_job_pth2st_result res;
    lc_code rc = lc_job_pth2safetensors(&o, cli.progress, &res, &err);
    lc_job_pth2st_print_list(&res, stdout);     /* --list */
    lc_job_pth2st_result_free(&res);
    if (mode == LC_PTH2ST_SCAN && rc != LC_OK) {   /* 1 refused, 2 not a checkpoint */
        lc_cli_report(&cli, &err);
        lc_cli_finish(&cli);
        return rc == LC_E_FORBIDDEN ? LC_EXIT_FAIL : LC_EXIT_USAGE;
    }
    return lc_cli_end(&cli, rc, &err);
}
