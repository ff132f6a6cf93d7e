/* quant/device.h: accelerators behind quant/'s CPU kernels (`--device cuda[:N]`).
 *
 * A device converts between F32, F16, BF16 and the block types of LC_QUANT_TYPES the way
 * the CPU path does, in two steps: the source widened or dequantized to F32 (lc_convert,
 * lc_<type>_dequantize_ref), then narrowed or quantized (lc_convert, the _ref
 * quantizers), and writes exactly the CPU path's bytes (quant/cuda/block_ops.h says
 * why, and the one case it does not: a block holding NaNs of different bits, which the
 * tools refuse as input anyway). Between F16 and BF16 it converts as lc_convert does.
 *
 * Back ends (quant/device_impl.h): "cuda", in builds made with `make CUDA=1`
 * (quant/cuda/), which loads the NVIDIA driver (libcuda.so.1) at run time, so a CUDA=1
 * binary runs everywhere and says "no CUDA device" where there is none. Another
 * accelerator (Metal) is one more table of four functions.
 *
 * Test hooks, as LC_QUANT is for the CPU variants: LC_CUDA_EMULATE=1 makes "cuda" open
 * an emulated device that runs the device's arithmetic, the back end's chunking and its
 * streams (queued, run at each synchronisation) on the CPU; LC_CUDA_LIBRARY=PATH loads
 * PATH instead of libcuda.so.1. */
#ifndef LC_QUANT_DEVICE_H
#define LC_QUANT_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "libconvert/dtype.h"
#include "libconvert/error.h"
#include "libconvert/tensor.h"
#include "quant/quant.h"

typedef struct lc_qdev lc_qdev;

/* What `--device` takes, for help texts. */
#define LC_QDEV_SPECS "cpu, cuda or cuda:N"

/* The read size a writer should use for tensors converted on a device (its chunk):
 * each read is one call, and a call needs thousands of blocks to keep a GPU busy. */
#define LC_QDEV_CHUNK_BYTES ((size_t)4 << 20)

/* Checks SPEC's form: "cpu", or a back-end name with an optional ":N" (a device index,
 * 0..255). LC_E_ARG naming SPEC otherwise; no device is opened (a usage check). */
lc_code lc_qdev_parse(const char *spec, lc_error *err);

/* Opens the device SPEC names: its driver, the device, its kernels and its first set of
 * buffers, so that every failure comes before any work. SPEC "cpu" or NULL: *out = NULL,
 * LC_OK (the CPU kernels). LC_E_UNSUPPORTED with one sentence saying why there is none
 * ("no CUDA device: ..."): no back end in this build, no driver, no device, no kernel
 * for it; LC_E_NOMEM when the device or pinned host memory cannot hold the buffers;
 * LC_E_ARG for a malformed SPEC. Thread-safe. */
lc_code lc_qdev_open(const char *spec, lc_qdev **out, lc_error *err);

/* Releases everything lc_qdev_open made; NULL-safe. No conversion may be running. */
void lc_qdev_close(lc_qdev *d);

/* "cuda:0 NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB, driver 13.0)"; valid until close. */
const char *lc_qdev_describe(const lc_qdev *d);

/* True when d converts `from` into `to`: each of F32, F16, BF16 and the types of
 * LC_QUANT_TYPES into each other, except a type into itself. */
bool lc_qdev_supports(const lc_qdev *d, lc_dtype from, lc_dtype to);

/* Converts n elements (a multiple of both types' block sizes, else LC_E_ARG) from src
 * (`from`) into dst (`to`), host memory both, any alignment. Blocking; thread-safe:
 * calls from several threads run on the device at once (each on streams of its own).
 * LC_E_UNSUPPORTED for a pair the device lacks, LC_E_IO when the device fails (the
 * message names the CUDA error). */
lc_code lc_qdev_convert(lc_qdev *d, lc_dtype from, const void *src, lc_dtype to, void *dst,
                        uint64_t n, lc_error *err);

/* Makes dst (its dtype, the target, and shape set) read src through the device, any
 * byte range at a time: the lazy source quant/view.h gives for the CPU, for a whole
 * from -> to conversion. d and src are borrowed and must outlive dst's model.
 * LC_E_UNSUPPORTED for a pair the device lacks, LC_E_ARG when the rows are not whole
 * blocks of both types, LC_E_NOMEM. Reads report lc_qdev_convert's codes and src's. */
lc_code lc_qdev_view(lc_tensor *dst, const lc_tensor *src, lc_qdev *d, lc_error *err);

/* A kernel table whose quantize and dequantize entries (every type of LC_QUANT_TYPES)
 * run on the first CUDA device (SPEC "cuda"), opened once for the process: the variant
 * tests hold it against the reference (tests/unit/test_quant_variants.c). NULL when it
 * does not open, and for any other SPEC. The kernel contract (quant/quant.h) cannot
 * fail; when the device does, the entry fills its output with 0xff bytes and
 * lc_qdev_kernels_error says why. Not offered by lc_qkernels_get or LC_QUANT: a device
 * is chosen with --device. */
const lc_qkernels *lc_qdev_kernels(const char *spec);
const char *lc_qdev_kernels_error(void);

#endif
