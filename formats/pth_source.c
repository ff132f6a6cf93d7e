/* formats/pth_source.c: the bytes of one torch tensor, contiguous and little-endian.
 *
 * A tensor is a view of a storage: element (i_0, ..., i_n) lives at storage element
 * offset + sum(i_d * stride_d). When the storage bytes are mapped (lc_pth_opts
 * zero_copy, or lc_pth_load_mem), little-endian, not negated and the view is
 * row-major contiguous, the tensor is a zero-copy view. Otherwise a lazy source
 * gathers the elements in row-major order, runs of the innermost dimension at a
 * time, then byte-swaps (byteorder "big") and negates (metadata {"neg": True}).
 *
 * Storages read with pread (stored entries, legacy data) or inflated (DEFLATE) have
 * no cheap random access. A contiguous view is read front to back into the caller's
 * buffer: linear when the writer reads in order, and the file's pages never join
 * this process's resident set. A strided view reads the span of storage it reaches
 * once, into a buffer kept until the read that ends the tensor: memory is the size
 * of that one view. */
#include "formats/pth_source_impl.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "formats/zip.h"
#include "libconvert/alloc.h"

/* What only a strided view of a storage without mapped bytes needs. */
typedef struct strided {
    pthread_mutex_t lock;          /* guards cache */
    uint8_t        *cache;         /* the span read once, until the tensor's last read */
} strided;

/* One per tensor that is not a zero-copy view, so it is kept small: a checkpoint of a
 * hundred thousand tiny tensors has as many (dims: ndim sizes, then ndim strides). */
typedef struct pth_src {
    lc_pth_storage *st;             /* shared by the views of one storage */
    lc_dtype        dtype;
    uint32_t        esize, ndim;
    bool            contiguous, swap, neg;
    uint64_t        offset;        /* elements */
    uint64_t        span_lo, span_len; /* bytes of storage the view reaches */
    strided        *sv;            /* NULL unless strided over unmapped bytes */
    uint64_t        dims[];
} pth_src;
#define SHAPE(s) ((s)->dims)
#define STRIDE(s) ((s)->dims + (s)->ndim)

static void src_free(void *ctx) {
    pth_src *s = ctx;
    if (!s)
        return;
    if (s->sv) {
        pthread_mutex_destroy(&s->sv->lock);
        lc_free(s->sv->cache);
        lc_free(s->sv);
    }
    lc_free(s);
}

/* Storage bytes [off, off + len) into dst. */
static lc_code storage_read(const lc_pth_storage *st, uint64_t off, void *dst, size_t len,
                            lc_error *err) {
    if (st->bytes) {
        memcpy(dst, st->bytes + off, len);
        return LC_OK;
    }
    if (st->fd < 0)
        return lc_zip_entry_pread(st->zip, st->entry, off, dst, len, err);
    uint8_t *p = dst;
    for (size_t done = 0; done < len;) {
        ssize_t n = pread(st->fd, p + done, len - done, (off_t)(st->file_offset + off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return lc_fail(err, LC_E_IO, st->file_offset + off + done, "cannot read: %s",
                           strerror(errno));
        if (n == 0)
            return lc_fail(err, LC_E_TRUNCATED, st->file_offset + off + done,
                           "the file ended while reading storage %s (changed on disk?)",
                           st->key);
        done += (size_t)n;
    }
    return LC_OK;
}

static void fix_elements(const pth_src *s, uint8_t *p, uint64_t count) {
    const uint32_t e = s->esize;
    if (s->swap && e > 1)
        for (uint64_t i = 0; i < count; i++) {
            uint8_t *x = p + i * e;
            for (uint32_t a = 0, b = e - 1; a < b; a++, b--) {
                uint8_t tmp = x[a];
                x[a] = x[b];
                x[b] = tmp;
            }
        }
    if (!s->neg)
        return;
    if (lc_dtype_get(s->dtype)->is_float) {
        for (uint64_t i = 0; i < count; i++)
            p[i * e + e - 1] ^= 0x80;   /* IEEE negation flips the sign bit, NaN too */
        return;
    }
    for (uint64_t i = 0; i < count; i++) {   /* two's complement: ~x + 1 */
        uint8_t *x = p + i * e;
        unsigned carry = 1;
        for (uint32_t b = 0; b < e; b++) {
            unsigned v = (uint8_t)~x[b] + carry;
            x[b] = (uint8_t)v;
            carry = v >> 8;
        }
    }
}

/* Row-major elements [first, first + count) of a strided view, from `base`, which
 * holds the storage bytes starting at storage byte `base_off`. */
static void gather_strided(const pth_src *s, const uint8_t *base, uint64_t base_off,
                           uint64_t first, uint64_t count, uint8_t *dst) {
    uint64_t idx[LC_MAX_DIMS] = { 0 }, rest = first;
    for (uint32_t d = s->ndim; d-- > 0;) {
        idx[d] = rest % SHAPE(s)[d];
        rest /= SHAPE(s)[d];
    }
    const uint32_t e = s->esize, in = s->ndim ? s->ndim - 1 : 0;
    while (count) {
        uint64_t pos = s->offset;
        for (uint32_t d = 0; d < s->ndim; d++)
            pos += idx[d] * STRIDE(s)[d];
        uint64_t run = s->ndim ? SHAPE(s)[in] - idx[in] : 1;
        if (run > count)
            run = count;
        const uint64_t st = s->ndim ? STRIDE(s)[in] : 1;
        const uint8_t *src = base + (pos * e - base_off);
        if (st == 1) {
            memcpy(dst, src, run * e);
        } else {
            for (uint64_t k = 0; k < run; k++)
                memcpy(dst + k * e, src + k * st * e, e);
        }
        dst += run * e;
        count -= run;
        /* Advance the multi-index by `run` (which ends at most at the row's end). */
        if (!s->ndim)
            break;
        idx[in] += run;
        for (uint32_t d = in; d > 0 && idx[d] == SHAPE(s)[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

/* Whole elements [first, first + count) into dst, fixed up. */
static lc_code gather(pth_src *s, uint64_t first, uint64_t count, uint8_t *dst, bool last,
                      lc_error *err) {
    const uint32_t e = s->esize;
    lc_code rc = LC_OK;
    if (count == 0)
        return LC_OK;
    if (s->contiguous) {
        LC_TRY(storage_read(s->st, (s->offset + first) * e, dst, count * e, err));
    } else if (s->st->bytes) {
        gather_strided(s, s->st->bytes, 0, first, count, dst);
    } else {
        strided *sv = s->sv;
        pthread_mutex_lock(&sv->lock);
        if (!sv->cache) {
            if (!(sv->cache = lc_malloc(s->span_len ? s->span_len : 1)))
                rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET,
                             "out of memory for a %llu-byte strided view",
                             (unsigned long long)s->span_len);
            else if ((rc = storage_read(s->st, s->span_lo, sv->cache, s->span_len, err))) {
                lc_free(sv->cache);
                sv->cache = NULL;
            }
        }
        if (rc == LC_OK)
            gather_strided(s, sv->cache, s->span_lo, first, count, dst);
        if (last) {  /* the tensor's final bytes: the span is not needed again */
            lc_free(sv->cache);
            sv->cache = NULL;
        }
        pthread_mutex_unlock(&sv->lock);
        LC_TRY(rc);
    }
    fix_elements(s, dst, count);
    return LC_OK;
}

/* A stored entry's CRC-32, checked once per storage before any of its bytes are used,
 * as torch's reader checks it when it loads a storage. The pread and kernel-copy
 * (copy_file_range) paths never look at the bytes otherwise, so flipped data would
 * convert without a word; DEFLATE entries are checked as they inflate. The check is one
 * more pread pass over the entry; a storage many views share is checked once (two
 * threads may both check it the first time: same answer). */
static lc_code storage_check(lc_pth_storage *st, lc_error *err) {
    if (!st->zip || !st->entry || st->entry->method != LC_ZIP_STORED ||
        __atomic_load_n(&st->crc_ok, __ATOMIC_ACQUIRE))
        return LC_OK;
    LC_TRY(lc_zip_entry_verify_crc(st->zip, st->entry, err));
    __atomic_store_n(&st->crc_ok, true, __ATOMIC_RELEASE);
    return LC_OK;
}

static lc_code read_view(pth_src *s, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                         lc_error *err) {
    const uint32_t e = s->esize;
    LC_TRY(storage_check(s->st, err));
    uint8_t *out = dst, tmp[16];
    const bool last = off + len == t->nbytes;
    uint64_t first = off / e;
    const uint64_t head = off % e;
    if (head) {   /* a read that starts inside an element */
        size_t n = e - head < len ? e - head : len;
        LC_TRY(gather(s, first, 1, tmp, last && n == len, err));
        memcpy(out, tmp + head, n);
        out += n;
        len -= n;
        first++;
    }
    const uint64_t whole = len / e;
    LC_TRY(gather(s, first, whole, out, last && len % e == 0, err));
    out += whole * e;
    len -= whole * e;
    if (len) {
        LC_TRY(gather(s, first + whole, 1, tmp, last, err));
        memcpy(out, tmp, len);
    }
    return LC_OK;
}

/* Contiguous, native-order, un-negated views of a storage read with pread are a plain
 * range of the checkpoint file: writers can copy them in the kernel. */
/* Reads run while a writer works on its own file: whatever goes wrong here (a bad CRC,
 * a file cut short, no memory for a strided view) names the checkpoint, whose offset
 * it is, before the writer can put its output's name on it. */
static lc_code src_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                        lc_error *err) {
    pth_src *s = ctx;
    lc_code rc = read_view(s, t, off, dst, len, err);
    if (rc)
        lc_err_context(err, s->st->path, NULL);
    return rc;
}

/* A storage whose CRC fails is no file range: the writer then reads it, and the read
 * reports the failure. */
static bool src_file_range(void *ctx, const lc_tensor *t, int *fd, uint64_t *off) {
    const pth_src *s = ctx;
    (void)t;
    if (!s->contiguous || s->swap || s->neg || s->st->bytes || s->st->fd < 0 ||
        s->st->file_offset == LC_NO_OFFSET || storage_check(s->st, NULL) != LC_OK)
        return false;
    *fd = s->st->fd;
    *off = s->st->file_offset + s->offset * s->esize;
    return true;
}

static const lc_source_ops pth_ops = { src_read, src_free, src_file_range };

lc_code lc_pth_source_attach(lc_tensor *t, const lc_pth_tensor *pt, lc_error *err) {
    const uint32_t e = lc_dtype_get(pt->dtype)->type_size;
    bool contiguous = true;
    uint64_t want = 1, numel = 1, last = pt->offset;
    for (uint32_t d = pt->ndim; d-- > 0;) {
        if (pt->shape[d] != 1 && pt->stride[d] != want)
            contiguous = false;
        want *= pt->shape[d];
        numel *= pt->shape[d];
        last += (pt->shape[d] ? pt->shape[d] - 1 : 0) * pt->stride[d];
    }
    if (numel == 0)
        contiguous = true;
    const bool swap = pt->st->big_endian && e > 1;
    if (contiguous && !swap && !pt->neg && pt->st->bytes && numel > 0) {
        t->data = pt->st->bytes + pt->offset * e;
        t->file_offset = pt->st->file_offset + pt->offset * e;
        return LC_OK;
    }
    pth_src *s = lc_calloc(1, sizeof *s + 2 * (size_t)pt->ndim * sizeof *s->dims);
    if (!s)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    if (!contiguous && !pt->st->bytes) {
        if (!(s->sv = lc_calloc(1, sizeof *s->sv))) {
            lc_free(s);
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        }
        if (pthread_mutex_init(&s->sv->lock, NULL) != 0) {
            lc_free(s->sv);
            lc_free(s);
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "cannot create a mutex");
        }
    }
    s->st = pt->st;
    s->dtype = pt->dtype;
    s->esize = e;
    s->ndim = pt->ndim;
    memcpy(SHAPE(s), pt->shape, pt->ndim * sizeof *s->dims);
    memcpy(STRIDE(s), pt->stride, pt->ndim * sizeof *s->dims);
    s->offset = pt->offset;
    s->contiguous = contiguous;
    s->swap = swap;
    s->neg = pt->neg;
    s->span_lo = pt->offset * e;
    s->span_len = numel ? (last + 1) * e - s->span_lo : 0;
    t->ops = &pth_ops;
    t->ctx = s;
    /* Where the bytes lie in the file, when they lie there as they are. */
    t->file_offset = contiguous && !swap && !pt->neg && pt->st->file_offset != LC_NO_OFFSET
                   ? pt->st->file_offset + pt->offset * e : LC_NO_OFFSET;
    return LC_OK;
}
