/* Unit tests for where errors point (issue 11, items 15 and 16): every failure of the
 * GGUF and safetensors readers names the file, out of memory included, and a read
 * through a file view names the input, its offset and the tensor. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "libconvert/alloc.h"
#include "libconvert/model.h"
#include "libconvert/view.h"

static const char *fixture(const char *rel) {
    static char path[512];
    const char *dir = getenv("LC_FIXTURES");
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "fixtures", rel);
    return path;
}

typedef lc_code (*loader)(const char *path, lc_model **out, lc_error *err);

static lc_code gguf_lenient(const char *path, lc_model **out, lc_error *err) {
    return lc_gguf_open(path, LC_GGUF_LENIENT, out, NULL, err);
}

/* Fails every allocation in turn: each failure must name `want` (a file under it for
 * an index) and leave *out NULL; returns how many failures there were. */
static int oom_sweep(loader load, const char *path, const char *want) {
    int failures = 0;
    for (long n = 1;; n++) {
        lc_model *m = (lc_model *)1;
        lc_error err = { 0 };
        lc_alloc_fail_after(n);
        lc_code rc = load(path, &m, &err);
        lc_alloc_fail_after(0);
        if (rc == LC_OK) {
            lc_model_free(m);
            return failures;
        }
        cr_assert_eq(rc, LC_E_NOMEM, "allocation %ld: %s", n, err.msg);
        cr_assert_null(m);
        cr_assert(strncmp(err.path, want, strlen(want)) == 0,
                  "allocation %ld: the error names \"%s\", not %s (%s)", n, err.path, want,
                  err.msg);
        failures++;
    }
}

Test(locations, out_of_memory_names_the_gguf) {
    char path[512];
    snprintf(path, sizeof path, "%s", fixture("gguf/tensors.gguf"));
    cr_assert_gt(oom_sweep(lc_gguf_load, path, path), 20);
    cr_assert_gt(oom_sweep(gguf_lenient, path, path), 20);
}

Test(locations, out_of_memory_names_the_safetensors_file) {
    char path[512];
    snprintf(path, sizeof path, "%s", fixture("safetensors/tiny_llama.safetensors"));
    cr_assert_gt(oom_sweep(lc_safetensors_load, path, path), 5);
    char dir[512];
    snprintf(dir, sizeof dir, "%s", fixture("safetensors/sharded"));
    cr_assert_gt(oom_sweep(lc_safetensors_load_index, dir, dir), 5);
}

/* An index without a weight_map, or that is not JSON at all, still points somewhere. */
Test(locations, index_errors_have_an_offset) {
    static const char *const texts[] = { "{\"metadata\": {}}", "", "{\"weight_map\": " };
    static const uint64_t want[] = { 0, 0, 15 };   /* at most: cJSON says where it stopped */
    for (size_t i = 0; i < 3; i++) {
        char dir[] = "/tmp/lc-locations-XXXXXX", path[64];
        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        FILE *f = fopen(path, "w");
        fputs(texts[i], f);
        fclose(f);
        lc_model *m;
        lc_error err = { 0 };
        cr_assert_eq(lc_safetensors_load_index(dir, &m, &err), LC_E_MALFORMED, "%s", err.msg);
        cr_assert_leq(err.offset, want[i], "case %zu: %#llx (%s)", i,
                      (unsigned long long)err.offset, err.msg);
        cr_assert_str_eq(err.path, path);
        unlink(path);
        rmdir(dir);
    }
}

/* The file view reads an input with pread; when the input has shrunk, the error gives
 * the input, the offset in it and the tensor (and no internal work name). */
Test(locations, file_view_error_names_the_input) {
    char path[] = "/tmp/lc-locations-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, "0123456789", 10), 10);
    unlink(path);
    lc_model *work = lc_model_new();
    lc_error err = { 0 };
    const uint64_t shape[] = { 4 };
    lc_tensor *v;
    cr_assert_eq(lc_model_add_tensor(work, "blk.0.attn_q.weight", LC_DT_F32, 1, shape, &v, &err),
                 LC_OK);
    cr_assert_eq(lc_view_file(v, fd, 8, "in.gguf", &err), LC_OK);  /* 16 bytes from 8 of 10 */
    uint8_t buf[16];
    cr_assert_eq(lc_tensor_read(v, 0, buf, sizeof buf, &err), LC_E_TRUNCATED);
    cr_assert_eq(err.offset, 10);
    cr_assert_str_eq(err.path, "in.gguf");
    cr_assert_str_eq(err.where, "blk.0.attn_q.weight");
    cr_assert_null(strchr(err.msg, '#'), "%s", err.msg);
    lc_model_free(work);
    close(fd);
}
