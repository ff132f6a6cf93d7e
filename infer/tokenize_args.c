/* infer/tokenize_args.c: what model-verify's token options need -- "--tokens 1,2,3",
 * "--file F" -- and the bundled default text. */
#include <string.h>
#include <unistd.h>

#include "infer/tokenize.h"
#include "libconvert/alloc.h"
#include "libconvert/input.h"
#include "libconvert/map.h"

lc_code lc_tok_parse_ids(const char *s, uint32_t n_vocab, int32_t **ids, size_t *n,
                         lc_error *err) {
    *ids = NULL;
    *n = 0;
    size_t count = 1;
    for (const char *p = s; *p; p++)
        count += *p == ',';
    int32_t *v = lc_malloc_array(count, sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu ids", count);
    size_t k = 0;
    const char *p = s;
    for (;;) {
        while (*p == ' ')
            p++;
        size_t at = (size_t)(p - s);
        if (*p < '0' || *p > '9') {
            lc_free(v);
            return lc_fail(err, LC_E_ARG, at, *p == ',' || *p == '\0'
                           ? "token %zu of the list is empty"
                           : "token %zu of the list is not a decimal number", k + 1);
        }
        uint64_t x = 0;
        while (*p >= '0' && *p <= '9') {
            x = x * 10 + (uint64_t)(*p++ - '0');
            if (x > INT32_MAX || (n_vocab && x >= n_vocab)) {
                lc_free(v);
                if (n_vocab)
                    return lc_fail(err, LC_E_ARG, at, "token %zu of the list is past the "
                                   "vocabulary (%u tokens)", k + 1, n_vocab);
                return lc_fail(err, LC_E_ARG, at, "token %zu of the list is past 2^31-1", k + 1);
            }
        }
        v[k++] = (int32_t)x;
        while (*p == ' ')
            p++;
        if (*p == '\0')
            break;
        if (*p != ',') {
            lc_free(v);
            return lc_fail(err, LC_E_ARG, (size_t)(p - s),
                           "token %zu of the list is not a decimal number", k);
        }
        p++;
    }
    *ids = v;
    *n = k;
    return LC_OK;
}

lc_code lc_tok_read_file(const char *path, size_t limit, char **text, size_t *len,
                         lc_error *err) {
    lc_code rc = LC_OK;
    char *buf = NULL;
    *text = NULL;
    *len = 0;
    /* an input like any other: a FIFO refused without blocking, and an output over the
     * text refused (model-imatrix -f X MODEL X) */
    int fd = -1;
    uint64_t fsize = 0;
    if ((rc = lc_input_open(path, &fd, &fsize, err)) != LC_OK)
        goto done;
    if (fsize > limit) {
        rc = lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "the file is %llu bytes, more than "
                     "the %zu a text may have", (unsigned long long)fsize, limit);
        goto done;
    }
    size_t size = (size_t)fsize;
    if (!(buf = lc_malloc(size + 1))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu bytes", size);
        goto done;
    }
    if ((rc = lc_pread_all(fd, 0, buf, size, err)) != LC_OK)
        goto done;
    buf[size] = '\0';
    *text = buf;
    *len = size;
    buf = NULL;
done:
    if (fd >= 0)
        close(fd);
    lc_free(buf);
    if (rc != LC_OK)
        lc_err_context(err, path, NULL);
    return rc;
}

/* Herman Melville, Moby-Dick; or, The Whale (1851), chapter 1, "Loomings", its first
 * paragraphs; public domain (text as in Project Gutenberg's edition). */
static const char DEFAULT_TEXT[] =
    "Call me Ishmael. Some years ago\xe2\x80\x94never mind how long precisely\xe2\x80\x94"
    "having little or no money in my purse, and nothing particular to interest me on "
    "shore, I thought I would sail about a little and see the watery part of the world. "
    "It is a way I have of driving off the spleen and regulating the circulation. "
    "Whenever I find myself growing grim about the mouth; whenever it is a damp, drizzly "
    "November in my soul; whenever I find myself involuntarily pausing before coffin "
    "warehouses, and bringing up the rear of every funeral I meet; and especially "
    "whenever my hypos get such an upper hand of me, that it requires a strong moral "
    "principle to prevent me from deliberately stepping into the street, and "
    "methodically knocking people\xe2\x80\x99s hats off\xe2\x80\x94then, I account it high "
    "time to get to sea as soon as I can. This is my substitute for pistol and ball. With "
    "a philosophical flourish Cato throws himself upon his sword; I quietly take to the "
    "ship. There is nothing surprising in this. If they but knew it, almost all men in "
    "their degree, some time or other, cherish very nearly the same feelings towards the "
    "ocean with me.\n"
    "\n"
    "There now is your insular city of the Manhattoes, belted round by wharves as Indian "
    "isles by coral reefs\xe2\x80\x94" "commerce surrounds it with her surf. Right and left, "
    "the streets take you waterward. Its extreme downtown is the battery, where that "
    "noble mole is washed by waves, and cooled by breezes, which a few hours previous "
    "were out of sight of land. Look at the crowds of water-gazers there.\n";

const char *lc_tok_default_text(void) { return DEFAULT_TEXT; }
