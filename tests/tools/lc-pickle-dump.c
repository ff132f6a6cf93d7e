/* lc-pickle-dump: test-only driver. Prints a pickle's value tree as deterministic text,
 * or with --scan every global it names with its verdict. Exit 0 ok, 1 refused or
 * broken, 2 usage.
 *
 * Text form (tests/integration/test_pickle.py builds the same from Python values):
 *   None True False 12 bigint(<two's complement bytes, LE hex>) float(%.17g | nan)
 *   "json-escaped str" b'hex' bytearray(hex) (a, b) [a, b] {k: v} OrderedDict{k: v}
 *   set{a} frozenset{a} global(mod.name) reduce(f, args) newobj/OP(cls, args[, kw])
 *   persid(pid), then ".state(s)" after a BUILD. A non-empty container reached twice
 *   is printed "#N=..." the first time and "@N" after, so shared and cyclic values
 *   print once. --scan prints one line per global: offset, opcode (hex), module, name,
 *   allowed|forbidden, tab-separated. -q loads without printing (for timing). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "formats/pickle.h"
#include "libconvert/alloc.h"
#include "libconvert/cli.h"
#include "libconvert/map.h"

typedef const lc_pickle_val pv;
static uint32_t *g_in, *g_label, g_next; /* per value id: in-degree, label */

static size_t kids(pv *v, pv **out) { /* children in the loader's canonical order */
    size_t n = 0, k;
    lc_pickle_kind kind = lc_pickle_kind_of(v);
    pv *const *it = lc_pickle_items(v, kind, &k);
    if (it)
        for (size_t i = 0; i < k; i++)
            out[n++] = it[i];
    for (size_t i = 0; i < lc_pickle_dict_len(v); i++) {
        out[n++] = lc_pickle_dict_key(v, i);
        out[n++] = lc_pickle_dict_value(v, i);
    }
    pv *extra[] = { lc_pickle_callable(v), lc_pickle_args(v), lc_pickle_kwargs(v),
                    lc_pickle_state(v), lc_pickle_persid(v) };
    for (size_t i = 0; i < 5; i++)
        if (extra[i])
            out[n++] = extra[i];
    return n;
}
static size_t nkids(pv *v) {
    size_t k = 0;
    lc_pickle_items(v, lc_pickle_kind_of(v), &k);
    return k + 2 * lc_pickle_dict_len(v) + 5;
}
static bool labelable(pv *v) {
    lc_pickle_kind k = lc_pickle_kind_of(v);
    size_t n = 0;
    if (k == LC_PICKLE_TUPLE || k == LC_PICKLE_FROZENSET)
        return lc_pickle_items(v, k, &n) && n > 0;
    return k == LC_PICKLE_LIST || k == LC_PICKLE_DICT || k == LC_PICKLE_SET ||
           k == LC_PICKLE_REDUCE || k == LC_PICKLE_NEWOBJ || k == LC_PICKLE_PERSID;
}
static void count(pv *v) {
    if (g_in[lc_pickle_id(v)]++ || !labelable(v))
        return;
    pv **c = lc_malloc_array(nkids(v), sizeof *c);
    size_t n = kids(v, c);
    for (size_t i = 0; i < n; i++)
        count(c[i]);
    lc_free(c);
}
static void hex(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        printf("%02x", p[i]);
}
static void dump(pv *v) {
    size_t id = lc_pickle_id(v), n, i;
    if (labelable(v) && g_in[id] > 1) {
        if (g_label[id]) {
            printf("@%u", g_label[id]);
            return;
        }
        printf("#%u=", g_label[id] = ++g_next);
    }
    bool b; int64_t x; double f; const char *s, *m; const uint8_t *p;
    lc_pickle_kind k = lc_pickle_kind_of(v);
    pv *const *it = lc_pickle_items(v, k, &n);
    static const char *open[] = {[LC_PICKLE_TUPLE] = "(", [LC_PICKLE_LIST] = "[",
                                 [LC_PICKLE_SET] = "set{", [LC_PICKLE_FROZENSET] = "frozenset{"};
    static const char *close[] = {[LC_PICKLE_TUPLE] = ")", [LC_PICKLE_LIST] = "]",
                                  [LC_PICKLE_SET] = "}", [LC_PICKLE_FROZENSET] = "}"};
    if (k == LC_PICKLE_NONE) printf("None");
    else if (lc_pickle_get_bool(v, &b)) printf(b ? "True" : "False");
    else if (lc_pickle_get_int(v, &x)) printf("%" PRId64, x);
    else if ((p = lc_pickle_bigint(v, &n))) { printf("bigint("); hex(p, n); printf(")"); }
    else if (lc_pickle_get_float(v, &f)) f != f ? printf("float(nan)") : printf("float(%.17g)", f);
    else if ((s = lc_pickle_str(v, &n))) {
        putchar('"');
        for (i = 0; i < n; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c == '"' || c == '\\') printf("\\%c", c);
            else if (c < 0x20 || c == 0x7f) printf("\\u%04x", c);
            else putchar(c);
        }
        putchar('"');
    } else if ((p = lc_pickle_bytes(v, &n))) {
        printf(k == LC_PICKLE_BYTES ? "b'" : "bytearray(");
        hex(p, n);
        printf(k == LC_PICKLE_BYTES ? "'" : ")");
    } else if (it) {
        printf("%s", open[k]);
        for (i = 0; i < n; i++) { printf(i ? ", " : ""); dump(it[i]); }
        printf("%s", close[k]);
    } else if (k == LC_PICKLE_DICT) {
        printf(lc_pickle_dict_ordered(v) ? "OrderedDict{" : "{");
        for (i = 0; i < lc_pickle_dict_len(v); i++) {
            printf(i ? ", " : "");
            dump(lc_pickle_dict_key(v, i));
            printf(": ");
            dump(lc_pickle_dict_value(v, i));
        }
        printf("}");
    } else if (lc_pickle_global(v, &m, &s)) printf("global(%s.%s)", m, s);
    else if (k == LC_PICKLE_PERSID) { printf("persid("); dump(lc_pickle_persid(v)); printf(")"); }
    else {
        uint8_t op = lc_pickle_newobj_opcode(v);
        op ? printf("newobj/%02x(", op) : printf("reduce(");
        dump(lc_pickle_callable(v));
        printf(", ");
        dump(lc_pickle_args(v));
        if (lc_pickle_kwargs(v)) { printf(", "); dump(lc_pickle_kwargs(v)); }
        printf(")");
    }
    if (lc_pickle_state(v)) { printf(".state("); dump(lc_pickle_state(v)); printf(")"); }
}
static void on_ref(void *ctx, const lc_pickle_ref *r) {
    (void)ctx;
    printf("0x%" PRIx64 "\t%02x\t%s\t%s\t%s\n", r->offset, r->opcode, r->module, r->name,
           r->allowed ? "allowed" : "forbidden");
}
int main(int argc, char **argv) {
    bool scan = false;
    const lc_cli_opt opts[] = {
        { "scan", 0, NULL, "list the globals the pickle names", .flag = &scan }, { NULL } };
    const lc_cli_tool tool = { .synopsis = "[-q] [--scan] FILE", .opts = opts,
                               .common = LC_CLI_QUIET, .min_args = 1, .max_args = 1 };
    lc_cli cli;
    int rc = lc_cli_parse(&cli, &tool, argc, argv);
    if (rc >= 0) return rc;
    lc_cli_start(&cli);
    lc_error err = {0};
    lc_map *map = NULL;
    lc_pickle *p = NULL;
    if (lc_map_open(cli.args[0], &map, &err) == LC_OK) {
        if (scan) lc_pickle_scan(map->data, map->size, NULL, on_ref, NULL, &err);
        else if (lc_pickle_load(map->data, map->size, NULL, &p, &err) == LC_OK) {
            g_in = lc_calloc(lc_pickle_count(p), sizeof *g_in);
            g_label = lc_calloc(lc_pickle_count(p), sizeof *g_label);
            g_in[0] = 0; /* singletons share id 0 and are never labelled */
            count(lc_pickle_root(p));
            if (!cli.quiet) { /* -q: load only, for timing */
                dump(lc_pickle_root(p));
                putchar('\n');
            }
            lc_free(g_in);
            lc_free(g_label);
        }
    }
    lc_pickle_free(p);
    lc_map_close(map);
    lc_err_context(&err, cli.args[0], NULL);
    rc = err.code == LC_OK ? LC_EXIT_OK : lc_cli_report(&cli, &err);
    lc_cli_finish(&cli);
    return rc;
}
