/* tests/fuzz/fuzz_split.c: libFuzzer entry for the split-GGUF reader
 * (formats/gguf_split.h): the input is cut into parts, written as
 * m-0000K-of-0000N.gguf in a temporary folder, and the first part is opened as
 * lc_gguf_split_load opens it (the other parts found by the naming rule).
 *
 * Input: byte 0 says how many parts the names claim (1..8, or a count one off from the
 * number written), byte 1 which name is left out or made a folder; the rest is the parts,
 * separated by the 8 bytes "LCSPLIT!" (a seed is a real split set, joined so).
 *
 * Checked: a refusal is one of the codes gguf_split.h names and leaves no model; a model
 * that loads has, for every tensor, the part it came from (a part that exists), and its
 * bytes read back in full from that part. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/gguf_split.h"
#include "libconvert/tensor.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PARTS 8
static char g_dir[] = "/tmp/lc-fuzz-split-XXXXXX";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (!mkdtemp(g_dir))
        abort();
    return 0;
}

static void part_path(char *buf, size_t cap, unsigned k, unsigned n) {
    snprintf(buf, cap, "%s/m-%05u-of-%05u.gguf", g_dir, k, n);
}

/* Removes what the last input left: every name it may have used. */
static void clean(void) {
    char p[128];
    for (unsigned n = 1; n <= MAX_PARTS + 1; n++)
        for (unsigned k = 1; k <= n; k++) {
            part_path(p, sizeof p, k, n);
            if (unlink(p) != 0)
                rmdir(p);
        }
}

static const uint8_t *find(const uint8_t *p, const uint8_t *end) {
    static const char sep[] = "LCSPLIT!";
    for (; p + 8 <= end; p++)
        if (memcmp(p, sep, 8) == 0)
            return p;
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2)
        return 0;
    clean();
    const uint8_t *parts[MAX_PARTS], *ends[MAX_PARTS];
    unsigned n = 0;
    const uint8_t *p = data + 2, *end = data + size;
    while (n < MAX_PARTS) {
        const uint8_t *s = find(p, end);
        parts[n] = p;
        ends[n++] = s ? s : end;
        if (!s)
            break;
        p = s + 8;
    }
    const unsigned claim = data[0] & 0x80 ? 1 + data[0] % (MAX_PARTS + 1) : n;
    const unsigned gone = data[1] & 0x80 ? 1 + data[1] % n : 0;
    for (unsigned k = 1; k <= n && k <= claim; k++) {
        char path[128];
        part_path(path, sizeof path, k, claim);
        if (k == gone) {
            if (data[1] & 0x40)
                mkdir(path, 0700);              /* a folder where a part should be */
            continue;
        }
        FILE *f = fopen(path, "wb");
        if (!f)
            abort();
        const size_t len = (size_t)(ends[k - 1] - parts[k - 1]);
        if (fwrite(parts[k - 1], 1, len, f) != len)
            abort();
        fclose(f);
    }
    char first[128];
    part_path(first, sizeof first, 1, claim);
    lc_model *m = (lc_model *)1;
    lc_gguf_split *split = (lc_gguf_split *)1;
    lc_error err = { 0 };
    const lc_code rc = lc_gguf_split_load(first, &m, &split, &err);
    if (rc != LC_OK) {
        if (m || split)
            abort();
        if (rc != LC_E_ARG && rc != LC_E_NOTFOUND && rc != LC_E_MALFORMED &&
            rc != LC_E_TRUNCATED && rc != LC_E_OVERFLOW && rc != LC_E_UNSUPPORTED &&
            rc != LC_E_IO && rc != LC_E_NOMEM)
            abort();
        return 0;
    }
    if (split->n_tensors != lc_model_tensor_count(m) || split->count < 1)
        abort();
    uint8_t buf[4096];
    for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        if (split->part[i] >= split->count)
            abort();
        for (uint64_t off = 0; off < t->nbytes; off += sizeof buf) {
            const size_t k = t->nbytes - off < sizeof buf ? (size_t)(t->nbytes - off)
                                                          : sizeof buf;
            if (lc_tensor_read(t, off, buf, k, &err) != LC_OK)
                abort();   /* a part that loaded holds its tensors' bytes */
        }
    }
    lc_gguf_split_free(split);
    lc_model_free(m);
    return 0;
}
