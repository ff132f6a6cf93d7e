/* hf/naming.c: the names gguf-py gives a converted model: general.name from the folder
 * name, general.size_label from the parameter count, and the default file name. */
#include "hf/naming.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hf/hf.h"
#include "quant/ftype.h"

/* Python's str.title() for ASCII: upper after a non-letter, lower after a letter. */
static void title_word(char *w, size_t n) {
    bool prev_alpha = false;
    for (size_t i = 0; i < n; i++) {
        const char ch = w[i];
        const bool lower = ch >= 'a' && ch <= 'z', upper = ch >= 'A' && ch <= 'Z';
        if (lower && !prev_alpha)
            w[i] = (char)(ch - 'a' + 'A');
        else if (upper && prev_alpha)
            w[i] = (char)(ch - 'A' + 'a');
        prev_alpha = lower || upper;
    }
}

/* gguf-py's Metadata.id_to_title: '-' -> ' ', words split on blanks, a word that is
 * all lower case (and not a version "v1.2" or starting with a digit) title-cased. */
static void id_to_title(const char *id, char *out, size_t cap) {
    size_t o = 0;
    const char *p = id;
    while (*p) {
        while (*p == ' ' || *p == '-' || *p == '\t')
            p++;
        const char *w = p;
        while (*p && *p != ' ' && *p != '-' && *p != '\t')
            p++;
        const size_t n = (size_t)(p - w);
        if (n == 0 || o + n + 2 > cap)
            break;
        if (o)
            out[o++] = ' ';
        memcpy(out + o, w, n);
        bool has_lower = false, has_upper = false, version = w[0] >= '0' && w[0] <= '9';
        for (size_t i = 0; i < n; i++) {
            has_lower |= w[i] >= 'a' && w[i] <= 'z';
            has_upper |= w[i] >= 'A' && w[i] <= 'Z';
        }
        if (w[0] == 'v' && n > 1) {     /* v\d+(\.\d+)* */
            version = w[1] >= '0' && w[1] <= '9';
            for (size_t i = 1; version && i < n; i++)
                version = (w[i] >= '0' && w[i] <= '9') ||
                          (w[i] == '.' && i + 1 < n && w[i + 1] >= '0' && w[i + 1] <= '9');
        }
        if (has_lower && !has_upper && !version)
            title_word(out + o, n);
        o += n;
    }
    out[o] = '\0';
}

/* gguf-py's model_weight_count_rounded_notation(n, min_digits=2). */
void lc_hf_size_label(uint64_t n, char *out, size_t cap) {
    double x = (double)n;
    const char *suffix = "K";
    if (x > 1e12)
        x *= 1e-12, suffix = "T";
    else if (x > 1e9)
        x *= 1e-9, suffix = "B";
    else if (x > 1e6)
        x *= 1e-6, suffix = "M";
    else
        x *= 1e-3;
    /* Python's round() is to nearest even, like nearbyint in the default mode. */
    char digits[32];
    snprintf(digits, sizeof digits, "%.0f", nearbyint(x));
    const char *d = digits;
    while (*d == '0')
        d++;
    int fix = 2 - (int)strlen(d);
    snprintf(out, cap, "%.*f%s", fix > 0 ? fix : 0, x, suffix);
}

void lc_hf_title(const char *dir, char *out, size_t cap) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", dir);
    size_t n = strlen(tmp);
    while (n > 1 && tmp[n - 1] == '/')
        tmp[--n] = '\0';
    const char *b = strrchr(tmp, '/');
    id_to_title(b ? b + 1 : tmp, out, cap);
}

lc_code lc_hf_default_name(const lc_model *m, bool vocab_only, char *buf, size_t cap,
                           lc_error *err) {
    const lc_value *name = lc_model_find_meta(m, "general.name");
    const lc_value *label = lc_model_find_meta(m, "general.size_label");
    const lc_value *ft = lc_model_find_meta(m, "general.file_type");
    char base[256];
    snprintf(base, sizeof base, "%s",
             name && name->type == LC_VT_STRING ? name->str.ptr : "ggml-model");
    for (char *p = base; *p; p++)
        if (*p == ' ' || *p == '/')
            *p = '-';
    /* The encoding is the file type's name as llama-quantize spells it ("Q4_K_M"). */
    const lc_ftype *f = ft && ft->type == LC_VT_U32 ? lc_ftype_by_id(ft->u) : NULL;
    const char *enc = f ? f->name : "F16";
    int n;
    if (vocab_only)
        n = snprintf(buf, cap, "%s-vocab.gguf", base);
    else if (label && label->type == LC_VT_STRING)
        n = snprintf(buf, cap, "%s-%s-%s.gguf", base, label->str.ptr, enc);
    else
        n = snprintf(buf, cap, "%s-%s.gguf", base, enc);
    if (n < 0 || (size_t)n >= cap)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "file name buffer of %zu bytes is too small",
                       cap);
    return LC_OK;
}
