/* quant/cuda/emulate.c: gpu.h's primitives on the CPU (LC_CUDA_EMULATE=1), so that the
 * CUDA back end's own code, its chunking, double buffering and stream order, runs and is
 * tested where there is no GPU.
 *
 * What it models: device memory and pinned memory are separate allocations; each stream
 * is a queue whose copies and kernels run, in order, only when the stream is
 * synchronised. So a back end that reads a result before synchronising, or refills a
 * staging buffer a queued copy still has to read, gets stale bytes and fails the
 * tests. Kernels run the item functions of block_ops.h built as the device builds them
 * (LC_CU_NANFIX: x86's NaN results rewritten from the operands), over every item in
 * order. LC_CUDA_EMULATE_MIB=N gives the device N MiB, to test running out of it.
 * What it cannot model: the GPU itself (its compiler, memory, scheduling, the driver). */
#define LC_CU_NANFIX 1

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "quant/cuda/gpu.h"

typedef void (*item_fn)(const void *src, void *dst, uint64_t i);

static const item_fn ITEMS[LC_CU_OP_COUNT] = {
#define EMU_CONVERT(name, from, to) [LC_CU_OP_##name] = lc_cu_##name##_item,
#define EMU_BLOCK(T, stem)                                                                 \
    [LC_CU_OP_##stem##_quantize] = lc_cu_##stem##_quantize_item,                           \
    [LC_CU_OP_##stem##_dequantize] = lc_cu_##stem##_dequantize_item,
    LC_CU_CONVERT_OPS(EMU_CONVERT)
    LC_QUANT_TYPES(EMU_BLOCK)
#undef EMU_CONVERT
#undef EMU_BLOCK
};

enum { QUEUE = 16 };

typedef struct cmd {
    enum { H2D, D2H, LAUNCH } kind;
    void *dst;
    const void *src;
    size_t n;                   /* bytes, or items for LAUNCH */
    lc_cu_op op;
} cmd;

typedef struct stream {
    cmd q[QUEUE];
    int n;
} stream;

typedef struct emu {
    lc_gpu base;
    uint64_t cap, used;         /* device bytes */
} emu;

static void emu_close(lc_gpu *g) { lc_free(g); }

static lc_code emu_bind(lc_gpu *g, lc_error *err) {
    (void)g, (void)err;
    return LC_OK;
}

static lc_code emu_host_alloc(lc_gpu *g, size_t n, void **p, lc_error *err) {
    (void)g;
    if (!(*p = lc_malloc(n ? n : 1)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "cannot pin %zu MiB of host memory",
                       n >> 20);
    return LC_OK;
}

static void emu_host_free(lc_gpu *g, void *p) {
    (void)g;
    lc_free(p);
}

/* Device blocks carry their size in front, to give it back to `used`. */
static lc_code emu_dev_alloc(lc_gpu *g, size_t n, uint64_t *p, lc_error *err) {
    emu *e = (emu *)g;
    *p = 0;
    if (n > e->cap - e->used)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "not enough CUDA device memory: %zu MiB "
                       "more wanted, %llu MiB free of %llu", n >> 20,
                       (unsigned long long)((e->cap - e->used) >> 20),
                       (unsigned long long)(e->cap >> 20));
    uint64_t *b = lc_malloc(n + 16);
    if (!b)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    b[0] = n;
    __atomic_add_fetch(&e->used, n, __ATOMIC_RELAXED);
    *p = (uint64_t)(uintptr_t)(b + 2);
    return LC_OK;
}

static void emu_dev_free(lc_gpu *g, uint64_t p) {
    if (!p)
        return;
    uint64_t *b = (uint64_t *)(uintptr_t)p - 2;
    __atomic_sub_fetch(&((emu *)g)->used, b[0], __ATOMIC_RELAXED);
    lc_free(b);
}

static lc_code emu_stream_new(lc_gpu *g, void **s, lc_error *err) {
    (void)g;
    if (!(*s = lc_calloc(1, sizeof(stream))))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    return LC_OK;
}

static void emu_stream_free(lc_gpu *g, void *s) {
    (void)g;
    lc_free(s);
}

static lc_code enqueue(void *s, cmd c, lc_error *err) {
    stream *st = s;
    if (st->n == QUEUE)
        return lc_fail(err, LC_E_IO, LC_NO_OFFSET, "CUDA device (emulated): more than %d "
                       "operations queued on one stream", QUEUE);
    st->q[st->n++] = c;
    return LC_OK;
}

static lc_code emu_h2d(lc_gpu *g, uint64_t dst, const void *src, size_t n, void *s,
                       lc_error *err) {
    (void)g;
    return enqueue(s, (cmd){ H2D, (void *)(uintptr_t)dst, src, n, 0 }, err);
}

static lc_code emu_d2h(lc_gpu *g, void *dst, uint64_t src, size_t n, void *s, lc_error *err) {
    (void)g;
    return enqueue(s, (cmd){ D2H, dst, (const void *)(uintptr_t)src, n, 0 }, err);
}

static lc_code emu_d2d(lc_gpu *g, uint64_t dst, uint64_t src, size_t n, void *s,
                       lc_error *err) {
    (void)g;
    return enqueue(s, (cmd){ D2H, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, 0 },
                   err);
}

static lc_code emu_launch(lc_gpu *g, lc_cu_op op, uint64_t src, uint64_t dst, uint64_t items,
                          void *s, lc_error *err) {
    (void)g;
    if ((unsigned)op >= LC_CU_OP_COUNT)
        return lc_fail(err, LC_E_IO, LC_NO_OFFSET, "CUDA device (emulated): no kernel %d", op);
    return enqueue(s, (cmd){ LAUNCH, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src,
                             (size_t)items, op }, err);
}

static lc_code emu_sync(lc_gpu *g, void *s, lc_error *err) {
    (void)g, (void)err;
    stream *st = s;
    for (int k = 0; k < st->n; k++) {
        const cmd *c = &st->q[k];
        if (c->kind == LAUNCH) {
            for (size_t i = 0; i < c->n; i++)
                ITEMS[c->op](c->src, c->dst, i);
        } else {
            memcpy(c->dst, c->src, c->n);
        }
    }
    st->n = 0;
    return LC_OK;
}

static lc_code emu_mem_info(lc_gpu *g, uint64_t *free_b, uint64_t *total_b, lc_error *err) {
    emu *e = (emu *)g;
    (void)err;
    *total_b = e->cap;
    *free_b = e->cap - e->used;
    return LC_OK;
}

static const lc_gpu_ops EMU_OPS = {
    emu_close, emu_bind, emu_host_alloc, emu_host_free, emu_dev_alloc, emu_dev_free,
    emu_stream_new, emu_stream_free, emu_h2d, emu_d2h, emu_d2d, emu_launch, emu_sync,
    emu_mem_info,
};

lc_code lc_gpu_open_emulated(unsigned index, lc_gpu **out, char *desc, size_t cap,
                             lc_error *err) {
    *out = NULL;
    if (index != 0)
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "no CUDA device: there is no "
                       "cuda:%u; the emulation (LC_CUDA_EMULATE=1) has one", index);
    emu *e = lc_calloc(1, sizeof *e);
    if (!e)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    e->base.ops = &EMU_OPS;
    const char *mib = getenv("LC_CUDA_EMULATE_MIB");
    e->cap = (mib && *mib ? strtoull(mib, NULL, 10) : 16384) << 20;
    snprintf(desc, cap, "cuda:0 emulated on the CPU (LC_CUDA_EMULATE=1, %llu MiB)",
             (unsigned long long)(e->cap >> 20));
    *out = &e->base;
    return LC_OK;
}
