/* hf/meta.c: "KEY=TYPE:VALUE" metadata overrides and the dry-run plan printer
 * (the spec syntax is in hf/meta.h). */
#include "hf/meta.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/escape.h"

static const struct { const char *name; lc_vtype t; int64_t lo; uint64_t hi; } TYPES[] = {
    { "u8", LC_VT_U8, 0, UINT8_MAX },         { "u16", LC_VT_U16, 0, UINT16_MAX },
    { "u32", LC_VT_U32, 0, UINT32_MAX },      { "u64", LC_VT_U64, 0, UINT64_MAX },
    { "i8", LC_VT_I8, INT8_MIN, INT8_MAX },   { "i16", LC_VT_I16, INT16_MIN, INT16_MAX },
    { "i32", LC_VT_I32, INT32_MIN, INT32_MAX }, { "i64", LC_VT_I64, INT64_MIN, INT64_MAX },
    { "f32", LC_VT_F32, 0, 0 },               { "f64", LC_VT_F64, 0, 0 },
    { "bool", LC_VT_BOOL, 0, 0 },             { "str", LC_VT_STRING, 0, 0 },
};

static lc_code bad(lc_error *err, const char *spec, const char *why) {
    return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "metadata override '%.60s': %s", spec, why);
}

static lc_code parse_value(const char *spec, size_t ti, const char *v, lc_value *out,
                           lc_error *err) {
    char *end = NULL;
    const lc_vtype t = TYPES[ti].t;
    errno = 0;
    if (t == LC_VT_STRING)
        return lc_value_string(out, v, strlen(v), err);
    if (t == LC_VT_BOOL) {
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            return bad(err, spec, "a bool is true or false");
        *out = lc_value_bool(v[0] == 't');
        return LC_OK;
    }
    if (t == LC_VT_F32 || t == LC_VT_F64) {
        double d = strtod(v, &end);
        if (!*v || *end || errno)
            return bad(err, spec, "the value is not a number");
        *out = lc_value_float(t, t == LC_VT_F32 ? (double)(float)d : d);
        return LC_OK;
    }
    if (TYPES[ti].lo == 0) {
        if (*v == '-')
            return bad(err, spec, "the value is negative");
        unsigned long long u = strtoull(v, &end, 0);
        if (!*v || *end || errno || u > TYPES[ti].hi)
            return bad(err, spec, "the value is not an integer that fits the type");
        *out = lc_value_uint(t, u);
        return LC_OK;
    }
    long long i = strtoll(v, &end, 0);
    if (!*v || *end || errno || i < TYPES[ti].lo || i > (long long)TYPES[ti].hi)
        return bad(err, spec, "the value is not an integer that fits the type");
    *out = lc_value_int(t, i);
    return LC_OK;
}

lc_code lc_hf_meta_override(lc_model *m, const char *spec, lc_error *err) {
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || eq - spec > 255)
        return bad(err, spec, "expected KEY=TYPE:VALUE");
    const char *colon = strchr(eq + 1, ':');
    if (!colon)
        return bad(err, spec, "expected KEY=TYPE:VALUE");
    size_t ti = 0;
    const size_t tlen = (size_t)(colon - eq - 1);
    while (ti < sizeof TYPES / sizeof *TYPES &&
           !(strlen(TYPES[ti].name) == tlen && strncmp(TYPES[ti].name, eq + 1, tlen) == 0))
        ti++;
    if (ti == sizeof TYPES / sizeof *TYPES)
        return bad(err, spec, "TYPE is not one of str bool u8 u16 u32 u64 i8 i16 i32 i64 "
                   "f32 f64");
    char key[256];
    memcpy(key, spec, (size_t)(eq - spec));
    key[eq - spec] = '\0';
    lc_value v;
    LC_TRY(parse_value(spec, ti, colon + 1, &v, err));
    return lc_model_set_meta(m, key, &v, err);
}

static void print_value(const lc_value *v, FILE *f) {
    switch (v->type) {
    case LC_VT_STRING: {    /* from config.json or the tokenizer: escaped for a terminal */
        char s[512];
        lc_escape(s, sizeof s, v->str.ptr, v->str.len > 60 ? 60 : (size_t)v->str.len);
        fprintf(f, "\"%s%s\"", s, v->str.len > 60 ? "..." : "");
        break;
    }
    case LC_VT_ARRAY:
        fprintf(f, "[%" PRIu64 " %s items]", v->arr.count, lc_vtype_name(v->arr.elem));
        break;
    case LC_VT_BOOL: fputs(v->b ? "true" : "false", f); break;
    case LC_VT_F32: case LC_VT_F64: fprintf(f, "%.9g", v->f); break;
    case LC_VT_I8: case LC_VT_I16: case LC_VT_I32: case LC_VT_I64:
        fprintf(f, "%" PRId64, v->i);
        break;
    default: fprintf(f, "%" PRIu64, v->u); break;
    }
}

void lc_hf_meta_print(const lc_model *m, FILE *f) {
    for (size_t i = 0; i < lc_model_meta_count(m); i++) {
        const lc_kv *kv = lc_model_meta(m, i);
        char key[512];
        lc_escape(key, sizeof key, kv->key, strlen(kv->key));
        fprintf(f, "key    %-44s %-6s ", key, lc_vtype_name(kv->val.type));
        print_value(&kv->val, f);
        fputc('\n', f);
    }
    uint64_t bytes = 0;
    for (size_t i = 0; i < lc_model_tensor_count(m); i++)
        bytes += lc_model_tensor(m, i)->nbytes;
    fprintf(f, "total  %zu keys, %zu tensors, %" PRIu64 " bytes of tensor data\n",
            lc_model_meta_count(m), lc_model_tensor_count(m), bytes);
}
