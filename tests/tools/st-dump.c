/* tests/tools/st-dump.c: test-only driver. Opens FILE with lc_model_open_any and
 * prints one JSON line of metadata, then one JSON line per tensor with its bytes in
 * hex (read through lc_tensor_read), for the oracle tests to compare with what the
 * real producer wrote. On failure prints "error CODE OFFSET" (OFFSET in decimal, or
 * "-") on stdout and exits 1, so tests can check codes, not message text. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "formats/any.h"
#include "libconvert/alloc.h"
#include "libconvert/inspect.h"
#include "libconvert/json.h"

static int dump(const lc_model *m, lc_error *err) {
    lc_json_buf b = {0};
    uint8_t *data = NULL;
    int ok = 0;
    if (lc_json_put(&b, "{\"metadata\": {", 14, err) != LC_OK)
        goto done;
    for (size_t i = 0; i < lc_model_meta_count(m); i++) {
        const lc_kv *kv = lc_model_meta(m, i);
        if ((i && lc_json_put(&b, ", ", 2, err) != LC_OK) ||
            lc_json_put_string(&b, kv->key, strlen(kv->key), err) != LC_OK ||
            lc_json_put(&b, ": ", 2, err) != LC_OK ||
            lc_inspect_value_json(&b, &kv->val, err) != LC_OK)
            goto done;
    }
    if (lc_json_put(&b, "}}\n", 3, err) != LC_OK)
        goto done;
    fwrite(b.data, 1, b.len, stdout);
    for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        b.len = 0;
        lc_free(data);
        if (!(data = lc_malloc((size_t)t->nbytes)) ||
            lc_tensor_read(t, 0, data, (size_t)t->nbytes, err) != LC_OK)
            goto done;
        if (lc_json_put(&b, "{\"name\": ", 9, err) != LC_OK ||
            lc_json_put_string(&b, t->name, strlen(t->name), err) != LC_OK ||
            lc_json_printf(&b, err, ", \"dtype\": \"%s\", \"shape\": [", lc_dtype_name(t->dtype)))
            goto done;
        for (uint32_t d = 0; d < t->ndim; d++)
            if (lc_json_printf(&b, err, d ? ", %" PRIu64 : "%" PRIu64, t->shape[d]) != LC_OK)
                goto done;
        if (lc_json_put(&b, "], \"hex\": \"", 11, err) != LC_OK)
            goto done;
        for (uint64_t k = 0; k < t->nbytes; k++)
            if (lc_json_printf(&b, err, "%02x", data[k]) != LC_OK)
                goto done;
        if (lc_json_put(&b, "\"}\n", 3, err) != LC_OK)
            goto done;
        fwrite(b.data, 1, b.len, stdout);
    }
    ok = 1;
done:
    lc_free(data);
    lc_json_buf_free(&b);
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: st-dump FILE\n");
        return 2;
    }
    lc_error err = {0};
    lc_model *m = NULL;
    if (lc_model_open_any(argv[1], &m, NULL, &err) != LC_OK || !dump(m, &err)) {
        if (err.offset == LC_NO_OFFSET)
            printf("error %s -\n", lc_code_name(err.code));
        else
            printf("error %s %" PRIu64 "\n", lc_code_name(err.code), err.offset);
        lc_model_free(m);
        return 1;
    }
    lc_model_free(m);
    return 0;
}
