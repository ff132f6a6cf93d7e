/* tests/tools/lc-tokenize.c: test-only driver for infer/tokenize (GGUF or HF folder in,
 * ids out).
 *
 *   lc-tokenize [-s] [-a] MODEL TEXT   prints TEXT's ids, comma-separated
 *   lc-tokenize [-s] [-a] MODEL        reads lines of hex-encoded UTF-8 (an empty line is
 *                                      the empty text) and answers each with one line:
 *                                      the ids, or "ERR <code>" when encode fails
 *   lc-tokenize -d MODEL IDS           prints the hex of the ids' pieces (special shown)
 *   lc-tokenize --default-text         prints the bundled default text
 * -s: special tokens in the text are parsed (LC_TOK_PARSE_SPECIAL); -a: BOS/EOS added.
 * MODEL is a GGUF file, or an HF folder whose tokenizer hf/ converts in memory.
 * Exit 0 ok, 1 when the tokenizer cannot be built (stderr: "code: message"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/gguf.h"
#include "hf/hf.h"
#include "infer/tokenize.h"
#include "libconvert/alloc.h"

static int fail(const lc_error *err) {
    char buf[1024];
    lc_err_format(err, buf, sizeof buf);
    fprintf(stderr, "%s: %s\n", lc_code_name(err->code), buf);
    return 1;
}

static lc_code load(const char *path, lc_model **m, lc_error *err) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        lc_hf_opts o = { .outtype = LC_DT_F32, .vocab_only = true };
        return lc_hf_to_gguf(path, &o, m, err);
    }
    return lc_gguf_load(path, m, err);
}

static void print_ids(const lc_tok *tok, const char *text, size_t len, unsigned flags) {
    lc_error err = { 0 };
    size_t n = 0;
    int32_t *ids = lc_malloc_array(len * 3 + 8, sizeof *ids);
    if (!ids || lc_tok_encode(tok, text, len, flags, ids, len * 3 + 8, &n, &err) != LC_OK) {
        printf("ERR %s\n", ids ? lc_code_name(err.code) : "nomem");
        lc_free(ids);
        return;
    }
    for (size_t i = 0; i < n; i++)
        printf(i ? ",%d" : "%d", ids[i]);
    putchar('\n');
    lc_free(ids);
}

static int hexval(int c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int main(int argc, char **argv) {
    unsigned flags = 0;
    bool decode = false;
    int i = 1;
    if (argc == 2 && strcmp(argv[1], "--default-text") == 0) {
        fputs(lc_tok_default_text(), stdout);
        return 0;
    }
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        if (strcmp(argv[i], "-s") == 0)
            flags |= LC_TOK_PARSE_SPECIAL;
        else if (strcmp(argv[i], "-a") == 0)
            flags |= LC_TOK_ADD_SPECIAL;
        else if (strcmp(argv[i], "-d") == 0)
            decode = true;
        else
            break;
    }
    if (i >= argc || argc - i > 2 || (decode && argc - i != 2)) {
        fprintf(stderr, "usage: lc-tokenize [-s] [-a] MODEL [TEXT] | -d MODEL IDS | --default-text\n");
        return 2;
    }
    lc_error err = { 0 };
    lc_model *m = NULL;
    lc_tok *tok = NULL;
    if (load(argv[i], &m, &err) != LC_OK || lc_tok_open(m, &tok, &err) != LC_OK) {
        lc_model_free(m);
        return fail(&err);
    }
    lc_model_free(m);   /* the tokenizer keeps copies */
    int rc = 0;
    if (decode) {
        int32_t *ids = NULL;
        size_t n = 0;
        if (lc_tok_parse_ids(argv[i + 1], lc_tok_n_vocab(tok), &ids, &n, &err) != LC_OK) {
            rc = fail(&err);
        } else {
            for (size_t k = 0; k < n; k++) {
                char piece[4096];
                size_t len = 0;
                if (lc_tok_decode_piece(tok, ids[k], true, piece, sizeof piece, &len, &err)) {
                    rc = fail(&err);
                    break;
                }
                for (size_t j = 0; j < len; j++)
                    printf("%02x", (unsigned char)piece[j]);
            }
            putchar('\n');
        }
        lc_free(ids);
    } else if (argc - i == 2) {
        print_ids(tok, argv[i + 1], strlen(argv[i + 1]), flags);
    } else {
        char *line = NULL;
        size_t cap = 0;
        ssize_t got;
        while ((got = getline(&line, &cap, stdin)) >= 0) {
            size_t len = 0;
            for (ssize_t k = 0; k + 1 < got || (k + 1 == got && line[k] != '\n'); k += 2) {
                int hi = hexval(line[k]), lo = k + 1 < got ? hexval(line[k + 1]) : -1;
                if (hi < 0 || lo < 0)
                    break;
                line[len++] = (char)(hi << 4 | lo);
            }
            print_ids(tok, line, len, flags);
            fflush(stdout);
        }
        free(line);
    }
    lc_tok_close(tok);
    return rc;
}
