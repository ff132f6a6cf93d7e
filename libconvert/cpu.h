/* libconvert/cpu.h: the one CPU-feature probe. Every run-time choice of an ISA-specific
 * path (libconvert/convert_x86.c's F16C rows, quant/dispatch.c's kernel variants) asks
 * here, so that one answer, and one override, holds for the whole process.
 *
 * x86-64: CPUID leaves 1 and 7, and XGETBV for what the OS saves on a context switch: the
 * AVX features (AVX, AVX2, FMA, F16C) count only when the OS saves the YMM registers,
 * the AVX-512 ones only when it also saves the opmask and ZMM registers.
 * AArch64: getauxval(AT_HWCAP) on Linux; elsewhere Advanced SIMD alone (it is part of
 * every AArch64 CPU). Other targets report no feature.
 *
 * LC_CPU_DISABLE=avx2,f16c (names as lc_cpu_feature_name spells them, comma-separated)
 * hides features from the probe, for tests and bisecting; a feature whose prerequisite
 * is hidden is hidden too (AVX2, FMA, F16C need AVX; AVX-512 needs AVX2, FMA and F16C,
 * and BW, DQ, VL need F). Unknown names are ignored. Hiding a feature only ever selects
 * a slower path that writes the same bytes. */
#ifndef LC_LIBCONVERT_CPU_H
#define LC_LIBCONVERT_CPU_H

#include <stdbool.h>
#include <stdint.h>

typedef enum lc_cpu_feature {
    /* x86-64 */
    LC_CPU_AVX, LC_CPU_AVX2, LC_CPU_FMA, LC_CPU_F16C,
    LC_CPU_AVX512F, LC_CPU_AVX512BW, LC_CPU_AVX512DQ, LC_CPU_AVX512VL,
    /* AArch64 */
    LC_CPU_NEON,       /* Advanced SIMD ("asimd") */
    LC_CPU_NEON_FP16,  /* half-precision arithmetic ("asimdhp") */
    LC_CPU_DOTPROD,    /* SDOT/UDOT ("asimddp") */
    LC_CPU_FEATURE_COUNT
} lc_cpu_feature;

/* A set of features: bit f stands for lc_cpu_feature f. */
typedef uint32_t lc_cpu_set;
#define LC_CPU_BIT(f) ((lc_cpu_set)1 << (f))

/* True when this CPU and OS can run instructions of `f` and LC_CPU_DISABLE does not
 * hide it. Probed once per process on first use; thread-safe; false for values out of
 * range. */
bool lc_cpu_has(lc_cpu_feature f);

/* Every feature lc_cpu_has reports, as a set. */
lc_cpu_set lc_cpu_features(void);

/* True when every feature in `need` is present (an empty set is always present). */
static inline bool lc_cpu_has_all(lc_cpu_set need) {
    return (lc_cpu_features() & need) == need;
}

/* The feature's name as Linux's /proc/cpuinfo spells it ("avx2", "avx512bw", "asimd");
 * "?" for values out of range. */
const char *lc_cpu_feature_name(lc_cpu_feature f);

/* For tests: probes the CPU now, with `disable` in LC_CPU_DISABLE's syntax (NULL: hide
 * nothing), without touching the process-wide answer. */
lc_cpu_set lc_cpu_probe(const char *disable);

#endif
