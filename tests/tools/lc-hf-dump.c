/* tests/tools/lc-hf-dump.c: test-only driver for hf/ and the arch/ tables.
 *
 *   lc-hf-dump [--pre NAME] DIR   config + tokenizer metadata of an HF folder as JSON:
 *                                 {"key": {"type": "u32", "value": ...}, ...}
 *   lc-hf-dump --names N [ARCH]   maps the HF tensor names on stdin (N layers) through
 *                                 ARCH's table (default llama), one "hf<TAB>gguf<TAB>role"
 *                                 line each ("-" when dropped; role q, k, plain or drop)
 *   lc-hf-dump --permute ROWS ROWBYTES HEADS IN OUT [inverse]
 *                                 reads IN (ROWS rows), writes the permuted rows to OUT
 *                                 through the lazy view, in odd-sized chunks
 * Exit 0 ok, 1 on a library error (printed to stderr as "code: message"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hf/config.h"
#include "arch/arch.h"
#include "hf/tokenizer.h"
#include "libconvert/alloc.h"
#include "libconvert/model.h"
#include "libconvert/view.h"

static void put_str(const char *s, uint64_t len) {
    putchar('"');
    for (uint64_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void put_value(const lc_value *v) {
    switch (v->type) {
    case LC_VT_STRING: put_str(v->str.ptr, v->str.len); break;
    case LC_VT_BOOL:   fputs(v->b ? "true" : "false", stdout); break;
    case LC_VT_F32:    printf("%.17g", v->f); break;  /* exact: f holds a float */
    case LC_VT_F64:    printf("%.17g", v->f); break;
    case LC_VT_I8: case LC_VT_I16: case LC_VT_I32: case LC_VT_I64:
        printf("%lld", (long long)v->i);
        break;
    case LC_VT_ARRAY:
        putchar('[');
        for (uint64_t i = 0; i < v->arr.count; i++) {
            if (i)
                putchar(',');
            const lc_value item = lc_value_arr_get(v, i);
            put_value(&item);
        }
        putchar(']');
        break;
    default: printf("%llu", (unsigned long long)v->u); break;
    }
}

static int fail(const lc_error *err) {
    char buf[1024];
    lc_err_format(err, buf, sizeof buf);
    fprintf(stderr, "%s: %s\n", lc_code_name(err->code), buf);
    return 1;
}

static int dump(const char *dir, const char *pre) {
    lc_error err = { 0 };
    lc_hf_config cfg;
    lc_model *m = lc_model_new();
    if (!m || lc_hf_config_load(dir, &cfg, &err) != LC_OK ||
        lc_hf_config_to_gguf(&cfg, "tiny", m, &err) != LC_OK ||
        lc_hf_tokenizer_to_gguf(dir, cfg.hp.vocab_size, UINT64_MAX, pre, cfg.arch, m, &err) != LC_OK) {
        lc_model_free(m);
        return fail(&err);
    }
    printf("{\n");
    for (size_t i = 0; i < lc_model_meta_count(m); i++) {
        const lc_kv *kv = lc_model_meta(m, i);
        const lc_value *v = &kv->val;
        printf("%s", i ? ",\n" : "");
        put_str(kv->key, strlen(kv->key));
        printf(": {\"type\": \"%s", lc_vtype_name(v->type));
        if (v->type == LC_VT_ARRAY)
            printf("[%s]", lc_vtype_name(v->arr.elem));
        printf("\", \"value\": ");
        put_value(v);
        putchar('}');
    }
    printf("\n}\n");
    lc_model_free(m);
    return 0;
}

static int names(unsigned n_layers, const char *arch) {
    const lc_arch *a = lc_arch_by_name(arch);
    char line[512];
    if (!a) {
        fprintf(stderr, "no architecture %s\n", arch);
        return 2;
    }
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        char out[128];
        const lc_arch_tensor *row;
        lc_error err = { 0 };
        lc_code rc = lc_arch_map(a, LC_SPELL_HF, LC_SPELL_GGUF, line, n_layers, out, sizeof out,
                                 &row, &err);
        if (rc == LC_E_NOTFOUND) {
            printf("%s\t-\tdrop\n", line);
            continue;
        }
        if (rc != LC_OK)
            return fail(&err);
        const char *role = row->flags & LC_AT_ROPE_Q ? "q" : row->flags & LC_AT_ROPE_K ? "k"
                                                                                        : "plain";
        printf("%s\t%s\t%s\n", line, out, role);
    }
    return 0;
}

static int permute(char **argv, bool inverse) {
    uint64_t rows = strtoull(argv[0], NULL, 10), rb = strtoull(argv[1], NULL, 10);
    uint32_t heads = (uint32_t)strtoul(argv[2], NULL, 10);
    size_t n = (size_t)(rows * rb);
    uint8_t *in = lc_malloc(n + 1), *out = lc_malloc(n + 1);
    FILE *f = fopen(argv[3], "rb");
    if (!in || !out || !f || fread(in, 1, n, f) != n) {
        fprintf(stderr, "cannot read %s\n", argv[3]);
        return 1;
    }
    fclose(f);
    /* A U8 tensor [rows, rb] over the buffer, and its permuted view. */
    uint64_t shape[2] = { rows, rb };
    lc_model *m = lc_model_new();
    lc_tensor *src, *dst;
    lc_error err = { 0 };
    if (lc_model_add_tensor(m, "src", LC_DT_U8, 2, shape, &src, &err) != LC_OK ||
        lc_model_add_tensor(m, "dst", LC_DT_U8, 2, shape, &dst, &err) != LC_OK)
        return fail(&err);
    src->data = in;
    if (lc_view_heads(dst, src, heads, inverse, &err) != LC_OK)
        return fail(&err);
    /* Chunks of 7 bytes cross row boundaries at every offset. */
    for (size_t off = 0; off < n; off += 7)
        if (lc_tensor_read(dst, off, out + off, n - off < 7 ? n - off : 7, &err) != LC_OK)
            return fail(&err);
    f = fopen(argv[4], "wb");
    if (!f || fwrite(out, 1, n, f) != n || fclose(f) != 0)
        return 1;
    lc_model_free(m);
    lc_free(in);
    lc_free(out);
    return 0;
}

int main(int argc, char **argv) {
    if ((argc == 3 || argc == 4) && strcmp(argv[1], "--names") == 0)
        return names((unsigned)strtoul(argv[2], NULL, 10), argc == 4 ? argv[3] : "llama");
    if ((argc == 7 || argc == 8) && strcmp(argv[1], "--permute") == 0)
        return permute(argv + 2, argc == 8);
    if (argc == 4 && strcmp(argv[1], "--pre") == 0)
        return dump(argv[3], argv[2]);
    if (argc == 2)
        return dump(argv[1], NULL);
    fprintf(stderr, "usage: lc-hf-dump [--pre NAME] DIR | --names N | --permute ROWS "
                    "ROWBYTES HEADS IN OUT [inverse]\n");
    return 2;
}
