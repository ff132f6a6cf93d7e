/* tests/tools/lc-gguf-copy.c: test-only driver: reads IN with lc_gguf_load and writes
 * it back with lc_gguf_write, so the oracle tests can check both against gguf-py.
 *   lc-gguf-copy [--chunk BYTES] IN OUT
 * --chunk sets the writer's copy buffer (small values exercise chunked streaming).
 * Exit 0 ok, 1 failure (the error printed as one line), 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "libconvert/cli.h"

int main(int argc, char **argv) {
    lc_gguf_write_opts o = { 0 };
    int i = 1;
    if (argc == 5 && strcmp(argv[1], "--chunk") == 0) {
        o.chunk_bytes = (size_t)strtoull(argv[2], NULL, 10);
        i = 3;
    }
    if (argc - i != 2) {
        fprintf(stderr, "usage: lc-gguf-copy [--chunk BYTES] IN OUT\n");
        return LC_EXIT_USAGE;
    }
    lc_error err = { 0 };
    lc_model *m = NULL;
    char line[1024];
    if (lc_gguf_load(argv[i], &m, &err) != LC_OK ||
        lc_gguf_write(m, argv[i + 1], &o, NULL, &err) != LC_OK) {
        lc_err_context(&err, argv[i], NULL);
        lc_err_format(&err, line, sizeof line);
        fprintf(stderr, "lc-gguf-copy: %s: %s\n", lc_code_name(err.code), line);
        lc_model_free(m);
        return LC_EXIT_FAIL;
    }
    lc_model_free(m);
    return LC_EXIT_OK;
}
