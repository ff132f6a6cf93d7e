/* quant/cuda/driver.c: gpu.h's primitives on the NVIDIA driver API, loaded at run time.
 *
 * Nothing links against CUDA: libcuda.so.1 (installed with the driver, not the toolkit)
 * is opened with dlopen on the first --device cuda, and the kernels come from the fatbin
 * fatbin.c embeds (sm_80, sm_90, the newest SASS nvcc knew, compute_80 PTX that the
 * driver compiles for anything newer). So a CUDA=1 binary starts everywhere, and each
 * way of having no usable GPU is one sentence beginning "no CUDA device": no driver
 * library, the toolkit's stub library in its place, a driver older than the kernels,
 * no device, an index past the last one, a GPU older than sm_80.
 * <cuda.h> gives the types and the versioned entry points (cuMemAlloc is cuMemAlloc_v2
 * there, and that is the symbol looked up). LC_CUDA_LIBRARY=PATH loads PATH instead. */
#include <cuda.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "quant/cuda/gpu.h"

#define LC_CU_FNS(X)                                                                        \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)  \
    X(cuDeviceTotalMem) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain)                \
    X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuModuleLoadData) X(cuModuleUnload)  \
    X(cuModuleGetFunction) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)   \
    X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuStreamCreate)       \
    X(cuStreamDestroy) X(cuStreamSynchronize) X(cuLaunchKernel) X(cuGetErrorName)          \
    X(cuGetErrorString) X(cuMemGetInfo)

/* The symbol name after <cuda.h>'s renames: LC_CU_SYM(cuMemAlloc) is "cuMemAlloc_v2". */
#define LC_CU_STR_(x) #x
#define LC_CU_SYM(x) LC_CU_STR_(x)

static struct {
#define LC_CU_MEMBER(f) __typeof__(&f) f;
    LC_CU_FNS(LC_CU_MEMBER)
#undef LC_CU_MEMBER
} cu;

static pthread_once_t g_load_once = PTHREAD_ONCE_INIT;
static char g_load_error[200];          /* empty when loaded */
static const char *g_lib_path;

static void load(void) {
    const char *env = getenv("LC_CUDA_LIBRARY");
    g_lib_path = env && *env ? env : "libcuda.so.1";
    void *lib = dlopen(g_lib_path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(g_load_error, sizeof g_load_error, "the NVIDIA driver is not installed (%.150s)",
                 why ? why : g_lib_path);
        return;
    }
#define LC_CU_LOAD(f)                                                                       \
    if (!(*(void **)&cu.f = dlsym(lib, LC_CU_SYM(f)))) {                                    \
        snprintf(g_load_error, sizeof g_load_error, "%.80s has no %s: the driver is too old", \
                 g_lib_path, LC_CU_SYM(f));                                                 \
        return;                                                                             \
    }
    LC_CU_FNS(LC_CU_LOAD)
#undef LC_CU_LOAD
}

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for r. */
static void describe(CUresult r, char *buf, size_t cap) {
    const char *name = NULL, *text = NULL;
    if (cu.cuGetErrorName)
        cu.cuGetErrorName(r, &name);
    if (cu.cuGetErrorString)
        cu.cuGetErrorString(r, &text);
    if (name)
        snprintf(buf, cap, "%s (%.80s)", name, text ? text : "");
    else
        snprintf(buf, cap, "CUDA error %d", (int)r);
}

static lc_code cu_fail(CUresult r, lc_code code, const char *what, lc_error *err) {
    char why[160];
    describe(r, why, sizeof why);
    return lc_fail(err, code, LC_NO_OFFSET, "CUDA device: %s: %s", what, why);
}

typedef struct drv {
    lc_gpu base;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn[LC_CU_OP_COUNT];
    bool retained;
} drv;

static void drv_close(lc_gpu *g) {
    drv *d = (drv *)g;
    if (!d)
        return;
    if (d->mod) {
        cu.cuCtxSetCurrent(d->ctx);
        cu.cuModuleUnload(d->mod);
    }
    if (d->retained)
        cu.cuDevicePrimaryCtxRelease(d->dev);
    lc_free(d);
}

static lc_code drv_bind(lc_gpu *g, lc_error *err) {
    const CUresult r = cu.cuCtxSetCurrent(((drv *)g)->ctx);
    return r == CUDA_SUCCESS ? LC_OK : cu_fail(r, LC_E_IO, "cannot use its context", err);
}

static lc_code drv_host_alloc(lc_gpu *g, size_t n, void **p, lc_error *err) {
    (void)g;
    const CUresult r = cu.cuMemHostAlloc(p, n, 0);
    if (r == CUDA_SUCCESS)
        return LC_OK;
    *p = NULL;
    char what[96];
    snprintf(what, sizeof what, "cannot pin %zu MiB of host memory", n >> 20);
    return cu_fail(r, LC_E_NOMEM, what, err);
}

static void drv_host_free(lc_gpu *g, void *p) {
    (void)g;
    if (p)
        cu.cuMemFreeHost(p);
}

static lc_code drv_dev_alloc(lc_gpu *g, size_t n, uint64_t *p, lc_error *err) {
    CUdeviceptr a = 0;
    const CUresult r = cu.cuMemAlloc(&a, n);
    *p = a;
    if (r == CUDA_SUCCESS)
        return LC_OK;
    size_t free_b = 0, total_b = 0;
    cu.cuMemGetInfo(&free_b, &total_b);
    (void)g;
    return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "not enough CUDA device memory: %zu MiB "
                   "more wanted, %zu MiB free of %zu", n >> 20, free_b >> 20, total_b >> 20);
}

static void drv_dev_free(lc_gpu *g, uint64_t p) {
    (void)g;
    if (p)
        cu.cuMemFree((CUdeviceptr)p);
}

static lc_code drv_stream_new(lc_gpu *g, void **s, lc_error *err) {
    (void)g;
    CUstream st = NULL;
    const CUresult r = cu.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
    *s = st;
    return r == CUDA_SUCCESS ? LC_OK : cu_fail(r, LC_E_IO, "cannot create a stream", err);
}

static void drv_stream_free(lc_gpu *g, void *s) {
    (void)g;
    if (s)
        cu.cuStreamDestroy((CUstream)s);
}

static lc_code drv_h2d(lc_gpu *g, uint64_t dst, const void *src, size_t n, void *s,
                       lc_error *err) {
    (void)g;
    const CUresult r = cu.cuMemcpyHtoDAsync((CUdeviceptr)dst, src, n, (CUstream)s);
    return r == CUDA_SUCCESS ? LC_OK : cu_fail(r, LC_E_IO, "copy to the device failed", err);
}

static lc_code drv_d2h(lc_gpu *g, void *dst, uint64_t src, size_t n, void *s, lc_error *err) {
    (void)g;
    const CUresult r = cu.cuMemcpyDtoHAsync(dst, (CUdeviceptr)src, n, (CUstream)s);
    return r == CUDA_SUCCESS ? LC_OK : cu_fail(r, LC_E_IO, "copy from the device failed", err);
}

static lc_code drv_d2d(lc_gpu *g, uint64_t dst, uint64_t src, size_t n, void *s,
                       lc_error *err) {
    (void)g;
    const CUresult r = cu.cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, n, (CUstream)s);
    return r == CUDA_SUCCESS ? LC_OK : cu_fail(r, LC_E_IO, "copy on the device failed", err);
}

enum { THREADS = 128 };     /* kernels.cu's __launch_bounds__ */

static lc_code drv_launch(lc_gpu *g, lc_cu_op op, uint64_t src, uint64_t dst, uint64_t items,
                          void *s, lc_error *err) {
    drv *d = (drv *)g;
    if (items == 0)
        return LC_OK;
    CUdeviceptr a = (CUdeviceptr)src, b = (CUdeviceptr)dst;
    unsigned long long n = items;
    void *args[] = { &a, &b, &n };
    const uint64_t want = (items + THREADS - 1) / THREADS;
    const unsigned grid = (unsigned)(want < 65536 ? want : 65536);   /* the rest: grid stride */
    const CUresult r = cu.cuLaunchKernel(d->fn[op], grid, 1, 1, THREADS, 1, 1, 0, (CUstream)s,
                                         args, NULL);
    if (r == CUDA_SUCCESS)
        return LC_OK;
    char what[96];
    snprintf(what, sizeof what, "cannot launch lc_k_%s", lc_cu_op_name(op));
    return cu_fail(r, LC_E_IO, what, err);
}

static lc_code drv_sync(lc_gpu *g, void *s, lc_error *err) {
    (void)g;
    const CUresult r = cu.cuStreamSynchronize((CUstream)s);
    return r == CUDA_SUCCESS ? LC_OK : cu_fail(r, LC_E_IO, "a copy or kernel failed", err);
}

static lc_code drv_mem_info(lc_gpu *g, uint64_t *free_b, uint64_t *total_b, lc_error *err) {
    (void)g;
    size_t f = 0, t = 0;
    const CUresult r = cu.cuMemGetInfo(&f, &t);
    *free_b = f, *total_b = t;
    return r == CUDA_SUCCESS ? LC_OK : cu_fail(r, LC_E_IO, "cannot read its memory size", err);
}

static const lc_gpu_ops DRV_OPS = {
    drv_close, drv_bind, drv_host_alloc, drv_host_free, drv_dev_alloc, drv_dev_free,
    drv_stream_new, drv_stream_free, drv_h2d, drv_d2h, drv_d2d, drv_launch, drv_sync,
    drv_mem_info,
};

/* "no CUDA device: ..." */
static lc_code none(lc_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static lc_code none(lc_error *err, const char *fmt, ...) {
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "no CUDA device: %s", why);
}

/* What cuInit's failure means for a person. */
static lc_code init_failed(CUresult r, int driver, lc_error *err) {
    char why[160];
    describe(r, why, sizeof why);
    switch (r) {
    case CUDA_ERROR_NO_DEVICE:
        return none(err, "the NVIDIA driver sees none");
    case CUDA_ERROR_STUB_LIBRARY:
        return none(err, "%.80s is the CUDA toolkit's stub library, not a driver", g_lib_path);
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
        return none(err, "the NVIDIA driver (CUDA %d.%d) is too old for this GPU",
                    driver / 1000, driver % 1000 / 10);
    default:
        return none(err, "the NVIDIA driver does not start: %s", why);
    }
}

lc_code lc_gpu_open_driver(unsigned index, lc_gpu **out, char *desc, size_t cap,
                           lc_error *err) {
    *out = NULL;
    pthread_once(&g_load_once, load);
    if (g_load_error[0])
        return none(err, "%s", g_load_error);
    int driver = 0, count = 0;
    cu.cuDriverGetVersion(&driver);
    CUresult r = cu.cuInit(0);
    if (r != CUDA_SUCCESS)
        return init_failed(r, driver, err);
    if ((r = cu.cuDeviceGetCount(&count)) != CUDA_SUCCESS)
        return init_failed(r, driver, err);
    if (count == 0)
        return none(err, "the NVIDIA driver sees none");
    if (index >= (unsigned)count)
        return none(err, "there is no cuda:%u; the NVIDIA driver sees %d", index, count);
    drv *d = lc_calloc(1, sizeof *d);
    if (!d)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    d->base.ops = &DRV_OPS;
    lc_code rc = LC_OK;
    char name[128] = "";
    int major = 0, minor = 0;
    size_t total = 0;
    if ((r = cu.cuDeviceGet(&d->dev, (int)index)) != CUDA_SUCCESS ||
        (r = cu.cuDeviceGetName(name, sizeof name, d->dev)) != CUDA_SUCCESS ||
        (r = cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                     d->dev)) != CUDA_SUCCESS ||
        (r = cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                     d->dev)) != CUDA_SUCCESS ||
        (r = cu.cuDeviceTotalMem(&total, d->dev)) != CUDA_SUCCESS) {
        rc = cu_fail(r, LC_E_UNSUPPORTED, "cannot query it", err);
        goto done;
    }
    snprintf(desc, cap, "cuda:%u %.80s (sm_%d%d, %.1f GiB, driver %d.%d)", index, name, major,
             minor, (double)total / (1 << 30), driver / 1000, driver % 1000 / 10);
    if (major < 8) {
        rc = none(err, "%.80s is sm_%d%d; the kernels of this build need sm_80 or newer",
                  name, major, minor);
        goto done;
    }
    if ((r = cu.cuDevicePrimaryCtxRetain(&d->ctx, d->dev)) != CUDA_SUCCESS) {
        rc = cu_fail(r, LC_E_UNSUPPORTED, "cannot create its context", err);
        goto done;
    }
    d->retained = true;
    if ((r = cu.cuCtxSetCurrent(d->ctx)) != CUDA_SUCCESS) {
        rc = cu_fail(r, LC_E_UNSUPPORTED, "cannot use its context", err);
        goto done;
    }
    if ((r = cu.cuModuleLoadData(&d->mod, lc_cuda_fatbin)) != CUDA_SUCCESS) {
        char why[160];
        describe(r, why, sizeof why);
        rc = lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "no CUDA device: cannot load this "
                     "build's kernels (CUDA %d.%d) on %.60s, sm_%d%d, driver CUDA %d.%d: %s",
                     CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10, name, major, minor,
                     driver / 1000, driver % 1000 / 10, why);
        d->mod = NULL;
        goto done;
    }
    for (int op = 0; op < LC_CU_OP_COUNT; op++) {
        char kname[64];
        snprintf(kname, sizeof kname, "lc_k_%s", lc_cu_op_name((lc_cu_op)op));
        if ((r = cu.cuModuleGetFunction(&d->fn[op], d->mod, kname)) != CUDA_SUCCESS) {
            rc = cu_fail(r, LC_E_UNSUPPORTED, kname, err);
            goto done;
        }
    }
    *out = &d->base;
    d = NULL;
done:
    drv_close(d ? &d->base : NULL);
    return rc;
}
