/* quant/cuda/backend.c: the CUDA back end of quant/device.h (lc_qdev_cuda): which
 * kernels a conversion runs, and how the bytes get through the device.
 *
 * A conversion from -> to runs one kernel when one side is F32 or both are F16/BF16,
 * and two otherwise, through an F32 buffer on the device: widen or dequantize, then
 * narrow or quantize, the CPU path's two steps (quant/device.h).
 *
 * Memory is bounded: the device holds at most SLOTS slots, each of two lanes, each lane
 * LANE_ELEMS elements wide: a pinned staging buffer for the source bytes and one for
 * the result (4 bytes an element each at most), and on the device the source, the F32
 * intermediate and the result (12 bytes an element): 32 MiB pinned and 48 MiB of device
 * memory a lane, 256 MiB and 384 MiB for all of them. The first slot is made when the
 * device opens, so that a device without room fails before any work; the others when
 * calls overlap, as far as memory allows.
 *
 * Overlap: a call (one writer thread's read, lc_qdev_convert) takes a slot and walks
 * its job a lane's width at a time, alternating lanes: while lane A's copy in, kernels
 * and copy out run on A's stream, the CPU reads the next piece of the source into lane
 * B's pinned buffer and queues B; A's result is delivered once A is synchronised,
 * just before A is refilled. Several writer threads hold several slots, so their
 * copies and kernels overlap too (every lane has a stream of its own). */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/dtype.h"
#include "quant/cuda/gpu.h"
#include "quant/device_impl.h"

enum { SLOTS = 4, LANE_ELEMS = 4 << 20 };

/* LC_CUDA_LANE_ELEMS=N narrows the lanes (a multiple of 256, at most LANE_ELEMS), so that
 * tests walk many pieces through both lanes with little data. */
static uint64_t lane_elems(void) {
    const char *env = getenv("LC_CUDA_LANE_ELEMS");
    const uint64_t n = env && *env ? strtoull(env, NULL, 10) / 256 * 256 : LANE_ELEMS;
    return n >= 256 && n <= LANE_ELEMS ? n : LANE_ELEMS;
}

/* ---- which kernels ---- */

/* The kernel that turns `t` into F32, and the one that turns F32 into `t`. */
static bool to_f32(lc_dtype t, lc_cu_op *op) {
    switch (t) {
    case LC_DT_F16: *op = LC_CU_OP_f16_f32; return true;
    case LC_DT_BF16: *op = LC_CU_OP_bf16_f32; return true;
#define TO_F32(T, stem) case LC_DT_##T: *op = LC_CU_OP_##stem##_dequantize; return true;
    LC_QUANT_TYPES(TO_F32)
#undef TO_F32
    default: return false;
    }
}

static bool from_f32(lc_dtype t, lc_cu_op *op) {
    switch (t) {
    case LC_DT_F16: *op = LC_CU_OP_f32_f16; return true;
    case LC_DT_BF16: *op = LC_CU_OP_f32_bf16; return true;
#define FROM_F32(T, stem) case LC_DT_##T: *op = LC_CU_OP_##stem##_quantize; return true;
    LC_QUANT_TYPES(FROM_F32)
#undef FROM_F32
    default: return false;
    }
}

/* The kernels of from -> to: ops[0], then ops[1] when *n is 2. */
static bool plan(lc_dtype from, lc_dtype to, lc_cu_op ops[2], int *n) {
    *n = 1;
    if (from == to)
        return false;
    if (from == LC_DT_F16 && to == LC_DT_BF16) {
        ops[0] = LC_CU_OP_f16_bf16;
        return true;
    }
    if (from == LC_DT_BF16 && to == LC_DT_F16) {
        ops[0] = LC_CU_OP_bf16_f16;     /* NaN -> sign|0x7e00, not through f32_f16 */
        return true;
    }
    if (from == LC_DT_F32)
        return from_f32(to, &ops[0]);
    if (to == LC_DT_F32)
        return to_f32(from, &ops[0]);
    *n = 2;
    return to_f32(from, &ops[0]) && from_f32(to, &ops[1]);
}

static bool cuda_supports(lc_dtype from, lc_dtype to) {
    lc_cu_op ops[2];
    int n;
    return plan(from, to, ops, &n);
}

/* Items of a kernel over `elems` elements: blocks of a block type, else elements. */
static uint64_t items_of(lc_dtype block_side, uint64_t elems) {
    return elems / lc_dtype_get(block_side)->block_size;
}

/* ---- slots ---- */

typedef struct lane {
    void *stream;
    uint8_t *h_in, *h_out;              /* pinned */
    uint64_t d_in, d_f32, d_out;        /* device */
    bool busy;                          /* queued, not yet delivered */
    uint64_t first, count;              /* granules queued, counted from the job's first */
} lane;

typedef struct slot {
    lane lane[2];
    bool made, in_use;
} slot;

typedef struct cuda_dev {
    lc_gpu *gpu;
    uint64_t lane;                      /* elements a lane holds */
    pthread_mutex_t lock;
    pthread_cond_t freed;
    slot slots[SLOTS];
    int made, max;                      /* slots made; most that will be tried */
} cuda_dev;

static void free_slot(lc_gpu *g, slot *s) {
    for (int i = 0; i < 2; i++) {
        lane *l = &s->lane[i];
        g->ops->stream_free(g, l->stream);
        g->ops->host_free(g, l->h_in);
        g->ops->host_free(g, l->h_out);
        g->ops->dev_free(g, l->d_in);
        g->ops->dev_free(g, l->d_f32);
        g->ops->dev_free(g, l->d_out);
    }
    *s = (slot){ 0 };
}

static lc_code make_slot(lc_gpu *g, uint64_t elems, slot *s, lc_error *err) {
    const size_t bytes = (size_t)elems * 4;
    lc_code rc = LC_OK;
    for (int i = 0; i < 2 && rc == LC_OK; i++) {
        lane *l = &s->lane[i];
        if ((rc = g->ops->stream_new(g, &l->stream, err)) == LC_OK &&
            (rc = g->ops->host_alloc(g, bytes, (void **)&l->h_in, err)) == LC_OK &&
            (rc = g->ops->host_alloc(g, bytes, (void **)&l->h_out, err)) == LC_OK &&
            (rc = g->ops->dev_alloc(g, bytes, &l->d_in, err)) == LC_OK &&
            (rc = g->ops->dev_alloc(g, bytes, &l->d_f32, err)) == LC_OK)
            rc = g->ops->dev_alloc(g, bytes, &l->d_out, err);
    }
    if (rc != LC_OK)
        free_slot(g, s);
    else
        s->made = true;
    return rc;
}

/* A free slot, made if need be; waits while every slot is in use. */
static slot *take_slot(cuda_dev *c) {
    pthread_mutex_lock(&c->lock);
    slot *got = NULL;
    while (!got) {
        for (int i = 0; i < c->made && !got; i++)
            if (!c->slots[i].in_use)
                got = &c->slots[i];
        if (!got && c->made < c->max) {
            if (make_slot(c->gpu, c->lane, &c->slots[c->made], NULL) == LC_OK)
                got = &c->slots[c->made++];
            else
                c->max = c->made;       /* no room for more: share the ones there are */
        }
        if (!got)
            pthread_cond_wait(&c->freed, &c->lock);
    }
    got->in_use = true;
    pthread_mutex_unlock(&c->lock);
    return got;
}

static void give_slot(cuda_dev *c, slot *s) {
    pthread_mutex_lock(&c->lock);
    s->in_use = false;
    pthread_cond_signal(&c->freed);
    pthread_mutex_unlock(&c->lock);
}

/* ---- a job ---- */

typedef struct run {
    const lc_qdev_job *job;
    lc_gpu *g;
    lc_cu_op ops[2];
    int nops;
    uint64_t src_g, dst_g;              /* bytes of a granule on each side */
} run;

static uint64_t granule_bytes(lc_dtype t, uint64_t granule) {
    const lc_dtype_info *i = lc_dtype_get(t);
    return granule / i->block_size * i->type_size;
}

/* Queues granules [first, first + count) of the job on lane l (whose pinned input the
 * caller may overwrite: l is idle). */
static lc_code queue(const run *r, lane *l, uint64_t first, uint64_t count, lc_error *err) {
    const lc_qdev_job *j = r->job;
    lc_gpu *g = r->g;
    const uint64_t in = count * r->src_g, out = count * r->dst_g, elems = count * j->granule;
    LC_TRY(j->read(j->read_ctx, j->src_off + first * r->src_g, l->h_in, (size_t)in, err));
    LC_TRY(g->ops->h2d(g, l->d_in, l->h_in, (size_t)in, l->stream, err));
    l->busy = true;                     /* from here the lane's buffers are in use */
    l->first = first;
    l->count = count;
    if (r->nops == 1) {
        const lc_dtype side = j->from == LC_DT_F32 ? j->to : j->from;
        LC_TRY(g->ops->launch(g, r->ops[0], l->d_in, l->d_out, items_of(side, elems),
                              l->stream, err));
    } else {
        LC_TRY(g->ops->launch(g, r->ops[0], l->d_in, l->d_f32, items_of(j->from, elems),
                              l->stream, err));
        LC_TRY(g->ops->launch(g, r->ops[1], l->d_f32, l->d_out, items_of(j->to, elems),
                              l->stream, err));
    }
    return g->ops->d2h(g, l->h_out, l->d_out, (size_t)out, l->stream, err);
}

/* Waits for lane l and copies the part of its result the job asked for. */
static lc_code deliver(const run *r, lane *l, lc_error *err) {
    const lc_qdev_job *j = r->job;
    l->busy = false;
    LC_TRY(r->g->ops->sync(r->g, l->stream, err));
    const uint64_t lo = l->first * r->dst_g, hi = (l->first + l->count) * r->dst_g;
    const uint64_t from = lo > j->skip ? lo : j->skip;
    const uint64_t to = hi < j->skip + j->len ? hi : j->skip + j->len;
    if (from < to)
        memcpy(j->dst + (from - j->skip), l->h_out + (from - lo), (size_t)(to - from));
    return LC_OK;
}

static lc_code cuda_convert(void *ctx, const lc_qdev_job *job, lc_error *err) {
    cuda_dev *c = ctx;
    run r = { .job = job, .g = c->gpu };
    if (!plan(job->from, job->to, r.ops, &r.nops))
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "the CUDA back end does not convert "
                       "%s to %s", lc_dtype_name(job->from), lc_dtype_name(job->to));
    r.src_g = granule_bytes(job->from, job->granule);
    r.dst_g = granule_bytes(job->to, job->granule);
    const uint64_t width = c->lane / job->granule;        /* granules a lane holds */
    slot *s = take_slot(c);
    lc_code rc = c->gpu->ops->bind(c->gpu, err);
    uint64_t done = 0;
    for (int k = 0; rc == LC_OK && done < job->granules; k ^= 1) {
        lane *l = &s->lane[k];
        if (l->busy && (rc = deliver(&r, l, err)) != LC_OK)
            break;
        const uint64_t n = job->granules - done < width ? job->granules - done : width;
        rc = queue(&r, l, done, n, err);
        done += n;
    }
    /* After a failure, still wait for what is queued (it uses the slot's buffers),
     * keeping the first error. */
    for (int i = 0; i < 2; i++) {
        lane *l = &s->lane[i];
        if (!l->busy)
            continue;
        if (rc == LC_OK)
            rc = deliver(&r, l, err);
        else
            l->busy = false, c->gpu->ops->sync(c->gpu, l->stream, NULL);
    }
    give_slot(c, s);
    return rc;
}

/* ---- open and close ---- */

static void cuda_close(void *ctx) {
    cuda_dev *c = ctx;
    if (!c)
        return;
    if (c->gpu) {
        c->gpu->ops->bind(c->gpu, NULL);
        for (int i = 0; i < c->made; i++)
            free_slot(c->gpu, &c->slots[i]);
        c->gpu->ops->close(c->gpu);
    }
    pthread_cond_destroy(&c->freed);
    pthread_mutex_destroy(&c->lock);
    lc_free(c);
}

static lc_code cuda_open(unsigned index, void **ctx, char *desc, size_t cap, lc_error *err) {
    *ctx = NULL;
    cuda_dev *c = lc_calloc(1, sizeof *c);
    if (!c)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->freed, NULL);
    c->max = SLOTS;
    c->lane = lane_elems();
    const char *emulate = getenv("LC_CUDA_EMULATE");
    lc_code rc = emulate && strcmp(emulate, "1") == 0 ?
                 lc_gpu_open_emulated(index, &c->gpu, desc, cap, err) :
                 lc_gpu_open_driver(index, &c->gpu, desc, cap, err);
    if (rc == LC_OK && (rc = make_slot(c->gpu, c->lane, &c->slots[0], err)) == LC_OK)
        c->made = 1;
    if (rc != LC_OK) {
        cuda_close(c);
        return rc;
    }
    *ctx = c;
    return LC_OK;
}

const lc_qdev_backend lc_qdev_cuda = {
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .supports = cuda_supports,
    .convert = cuda_convert,
};
