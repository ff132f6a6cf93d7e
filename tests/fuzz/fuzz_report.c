/* tests/fuzz/fuzz_report.c: a property harness for the report writers: model-verify's
 * text report, JSON and HTML page (lc_job_model_verify), and model-inspect's text and
 * JSON (lc_inspect_print_text/_json), over files with hostile names, keys and values.
 *
 * Input: byte 0 picks the modes (text or JSON, --layers, the HTML page); then edits,
 * each [u16 offset][u8 length][bytes], applied to a copy of fixtures/hf-ref/
 * llama-spm-q8_0.gguf: in its header (offset below the data section: names, keys,
 * strings, counts) or, with the offset's top bit, in its tensor data. The edited file is
 * DST; SRC is fixtures/hf-ref/llama-spm-f32.gguf; the tokens are fixed.
 *
 * The properties (issue 19's one terminal-output rule): no byte below 0x20 but the
 * newline, no DEL, no C1 control (U+0080..U+009F), no bidirectional control and no
 * invalid UTF-8 in any text, JSON or HTML output; the JSON parses; every '<' of the
 * page opens one of the writer's own tags (a '<' from the file must be &lt;). */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "jobs/model_verify.h"
#include "jobs/model_verify_print.h"
#include "libconvert/escape.h"
#include "libconvert/inspect.h"
#include "libconvert/map.h"
#include "libconvert/outfile.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *g_tmpl, *g_buf;
static size_t g_size;
static uint64_t g_header;
static char g_dir[] = "/tmp/lc-fuzz-report-XXXXXX", g_dst[64], g_html[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    lc_map *map = NULL;
    lc_model *m = NULL;
    lc_gguf_info info;
    lc_error err = { 0 };
    if (lc_map_open("fixtures/hf-ref/llama-spm-q8_0.gguf", &map, &err) != LC_OK ||
        lc_gguf_open_mem(map->data, map->size, 0, &m, &info, &err) != LC_OK || !mkdtemp(g_dir))
        abort();   /* run from the repository root */
    g_size = map->size;
    g_header = info.data_offset;
    g_tmpl = malloc(g_size);
    g_buf = malloc(g_size);
    if (!g_tmpl || !g_buf)
        abort();
    memcpy(g_tmpl, map->data, g_size);
    lc_model_free(m);
    lc_map_close(map);
    snprintf(g_dst, sizeof g_dst, "%s/dst.gguf", g_dir);
    snprintf(g_html, sizeof g_html, "%s/r.html", g_dir);
    lc_outfile_set_durable(false);
    return 0;
}

/* Text that may reach a terminal: lc_escape_one has nothing to escape in it. */
static void terminal_safe(const char *s, size_t n, bool newlines) {
    for (size_t i = 0; i < n;) {
        char e[8];
        size_t step;
        if (newlines && s[i] == '\n') {
            i++;
            continue;
        }
        if (lc_escape_one((const uint8_t *)s + i, n - i, false, &step, e) != 0)
            abort();
        i += step;
    }
}

static const char *const TAGS[] = { "!DOCTYPE", "b", "body", "code", "h1", "h2", "head",
                                    "html", "p", "rect", "small", "span", "style", "sub",
                                    "svg", "table", "td", "text", "th", "title", "tr",
                                    "circle", "line", "meta", "polyline" };

static void html_safe(const char *s, size_t n) {
    terminal_safe(s, n, true);
    for (const char *p = memchr(s, '<', n); p; p = memchr(p + 1, '<', n - (size_t)(p + 1 - s))) {
        const char *t = p + 1 + (p + 1 < s + n && p[1] == '/');
        bool ok = false;
        for (size_t k = 0; k < sizeof TAGS / sizeof *TAGS && !ok; k++) {
            const size_t len = strlen(TAGS[k]);
            ok = (size_t)(s + n - t) > len && memcmp(t, TAGS[k], len) == 0 &&
                 (t[len] == ' ' || t[len] == '>' || t[len] == '/');
        }
        if (!ok)
            abort();   /* a '<' that opens none of the writer's tags: from the file */
    }
}

static void json_safe(const char *s, size_t n) {
    terminal_safe(s, n, true);
    cJSON *j = cJSON_ParseWithLength(s, n);
    if (!j)
        abort();
    cJSON_Delete(j);
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *b = NULL;
    *n = 0;
    size_t cap = 0;
    for (;;) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 65536;
            char *nb = realloc(b, cap);
            if (!nb)
                abort();
            b = nb;
        }
        const size_t k = fread(b + *n, 1, cap - *n, f);
        if (!k)
            break;
        *n += k;
    }
    fclose(f);
    return b;
}

static void inspect(void) {
    lc_model *m = NULL;
    lc_error err = { 0 };
    if (lc_gguf_open_mem(g_buf, g_size, LC_GGUF_LENIENT, &m, NULL, &err) != LC_OK) {
        char line[1024];
        lc_err_format(&err, line, sizeof line);
        terminal_safe(line, strlen(line), false);
        return;
    }
    const lc_inspect_info info = { .path = g_dst, .format = "gguf", .file_size = g_size };
    for (int json = 0; json < 2; json++) {
        char *out = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&out, &n);
        if (!f)
            abort();
        const lc_code rc = json ? lc_inspect_print_json(f, m, &info, &err)
                                : lc_inspect_print_text(f, m, &info, &err);
        fclose(f);
        if (rc == LC_OK) {
            if (json)
                json_safe(out, n);
            else
                terminal_safe(out, n, true);
        }
        free(out);
    }
    lc_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    const uint8_t modes = data[0];
    memcpy(g_buf, g_tmpl, g_size);
    for (size_t i = 1; i + 3 <= size;) {
        const uint16_t off = (uint16_t)(data[i] | data[i + 1] << 8);
        size_t len = data[i + 2] % 33;
        i += 3;
        if (len > size - i)
            len = size - i;
        const uint64_t at = off & 0x8000 ? g_header + (off & 0x7fff) * 4u : off % g_header;
        if (at + len <= g_size)
            memcpy(g_buf + at, data + i, len);
        i += len;
    }
    inspect();
    const int fd = open(g_dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, g_buf, g_size) != (ssize_t)g_size)
        abort();
    close(fd);
    unlink(g_html);
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    if (!f)
        abort();
    const lc_job_verify_opts o = { .src = "fixtures/hf-ref/llama-spm-f32.gguf", .dst = g_dst,
                                   .tokens = "1,15,29,300,7", .layers = modes & 1,
                                   .report = modes & 4 ? g_html : NULL, .threads = 1 };
    const bool json = modes & 2;
    lc_error err = { 0 };
    lc_job_verify_result res;
    lc_code rc = lc_job_model_verify(&o, NULL, &res, &err);
    if (rc == LC_OK)
        rc = json ? lc_job_verify_print_json(&res, f, &err)
                  : lc_job_verify_print_text(&res, f, &err);
    lc_job_verify_result_free(&res);
    fclose(f);
    if (rc == LC_OK) {
        if (json)
            json_safe(out, n);
        else
            terminal_safe(out, n, true);
        if (o.report) {
            size_t hn;
            char *html = slurp(g_html, &hn);
            if (!html)
                abort();
            html_safe(html, hn);
            free(html);
        }
    } else {
        char line[1024];
        lc_err_format(&err, line, sizeof line);
        terminal_safe(line, strlen(line), false);
    }
    free(out);
    return 0;
}
