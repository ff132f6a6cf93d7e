/* tests/fuzz/fuzz_gguf.c: libFuzzer entry for the GGUF reader. A file that parses is
 * also written back and re-read, so the writer sees every shape of metadata the reader
 * accepts, and the copy must parse to the same counts. The lenient open model-inspect
 * uses must agree with the strict one (it fails only where the strict one does, and
 * records a refusal exactly when the strict one fails), and the error line and the
 * report must carry no raw control byte whatever the file holds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "libconvert/inspect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            abort();   /* a byte from the file reached the terminal raw */
}

static FILE *g_null;

static void check_lenient(const uint8_t *data, size_t size, lc_code strict) {
    lc_model *m = NULL;
    lc_error err = { 0 };
    lc_code rc = lc_gguf_open_mem(data, size, LC_GGUF_LENIENT, &m, NULL, &err);
    if (rc != LC_OK) {
        if (strict == LC_OK)
            abort();   /* lenient refused what strict took */
        return;
    }
    if ((strict == LC_OK) != (lc_model_first_refusal(m) == NULL))
        abort();       /* a refusal recorded exactly when strict fails */
    char line[1024];
    for (size_t i = 0; i < lc_model_warning_count(m); i++) {
        lc_err_format(&lc_model_warning(m, i)->e, line, sizeof line);
        check_line(line);
    }
    if (!g_null)
        g_null = fopen("/dev/null", "w");
    lc_inspect_info info = { "fuzz.gguf", "gguf", size, 0 };
    lc_error e2 = { 0 };
    if (g_null && (lc_inspect_print_text(g_null, m, &info, &e2) != LC_OK ||
                   lc_inspect_print_json(g_null, m, &info, &e2) != LC_OK))
        abort();
    lc_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lc_model *m = NULL;
    lc_error err = { 0 };
    lc_code strict = lc_gguf_load_mem(data, size, &m, &err);
    check_lenient(data, size, strict);
    if (strict != LC_OK) {
        char line[1024];
        lc_err_format(&err, line, sizeof line);
        check_line(line);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/tmp/lc-fuzz-gguf-%ld.gguf", (long)getpid());
    if (lc_gguf_write(m, path, NULL, NULL, &err) == LC_OK) {
        lc_model *back = NULL;
        lc_error e2 = { 0 };
        if (lc_gguf_load(path, &back, &e2) != LC_OK ||
            lc_model_tensor_count(back) != lc_model_tensor_count(m) ||
            lc_model_meta_count(back) != lc_model_meta_count(m))
            abort();   /* what we write must read back */
        lc_model_free(back);
        unlink(path);
    }
    lc_model_free(m);
    return 0;
}
