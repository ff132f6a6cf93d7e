/* libconvert/cpu.c: the CPU-feature probe (see cpu.h). */
#include "libconvert/cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

static const char *const NAMES[LC_CPU_FEATURE_COUNT] = {
    [LC_CPU_AVX] = "avx",           [LC_CPU_AVX2] = "avx2",
    [LC_CPU_FMA] = "fma",           [LC_CPU_F16C] = "f16c",
    [LC_CPU_AVX512F] = "avx512f",   [LC_CPU_AVX512BW] = "avx512bw",
    [LC_CPU_AVX512DQ] = "avx512dq", [LC_CPU_AVX512VL] = "avx512vl",
    [LC_CPU_NEON] = "asimd",        [LC_CPU_NEON_FP16] = "asimdhp",
    [LC_CPU_DOTPROD] = "asimddp",
};

/* What each feature needs besides itself; hiding a prerequisite hides the feature. */
#define AVX_LEVEL (LC_CPU_BIT(LC_CPU_AVX2) | LC_CPU_BIT(LC_CPU_FMA) | LC_CPU_BIT(LC_CPU_F16C))
static const lc_cpu_set NEEDS[LC_CPU_FEATURE_COUNT] = {
    [LC_CPU_AVX2] = LC_CPU_BIT(LC_CPU_AVX),
    [LC_CPU_FMA] = LC_CPU_BIT(LC_CPU_AVX),
    [LC_CPU_F16C] = LC_CPU_BIT(LC_CPU_AVX),
    [LC_CPU_AVX512F] = AVX_LEVEL,
    [LC_CPU_AVX512BW] = LC_CPU_BIT(LC_CPU_AVX512F),
    [LC_CPU_AVX512DQ] = LC_CPU_BIT(LC_CPU_AVX512F),
    [LC_CPU_AVX512VL] = LC_CPU_BIT(LC_CPU_AVX512F),
    [LC_CPU_NEON_FP16] = LC_CPU_BIT(LC_CPU_NEON),
    [LC_CPU_DOTPROD] = LC_CPU_BIT(LC_CPU_NEON),
};

#if defined(__x86_64__) || defined(__i386__)
/* XCR0: the register states the OS saves (Intel SDM vol. 1, 13.3). Read only after
 * CPUID says OSXSAVE, or XGETBV faults. Spelled as asm so no file needs -mxsave. */
static uint64_t xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

static lc_cpu_set probe_hw(void) {
    unsigned a, b, c, d;
    lc_cpu_set s = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    /* leaf 1 ECX: bit 12 FMA, 27 OSXSAVE, 28 AVX, 29 F16C */
    const bool osxsave = c & (1u << 27);
    const uint64_t xcr = osxsave ? xcr0() : 0;
    const bool ymm = (xcr & 0x6) == 0x6;              /* SSE + AVX state */
    const bool zmm = (xcr & 0xe6) == 0xe6;            /* + opmask, ZMM0-15 hi, ZMM16-31 */
    if (!ymm)
        return 0;
    if (c & (1u << 28)) s |= LC_CPU_BIT(LC_CPU_AVX);
    if (c & (1u << 12)) s |= LC_CPU_BIT(LC_CPU_FMA);
    if (c & (1u << 29)) s |= LC_CPU_BIT(LC_CPU_F16C);
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return s;
    /* leaf 7.0 EBX: bit 5 AVX2, 16 AVX512F, 17 AVX512DQ, 30 AVX512BW, 31 AVX512VL */
    if (b & (1u << 5)) s |= LC_CPU_BIT(LC_CPU_AVX2);
    if (zmm) {
        if (b & (1u << 16)) s |= LC_CPU_BIT(LC_CPU_AVX512F);
        if (b & (1u << 17)) s |= LC_CPU_BIT(LC_CPU_AVX512DQ);
        if (b & (1u << 30)) s |= LC_CPU_BIT(LC_CPU_AVX512BW);
        if (b & (1u << 31)) s |= LC_CPU_BIT(LC_CPU_AVX512VL);
    }
    return s;
}
#elif defined(__aarch64__) && defined(__linux__)
static lc_cpu_set probe_hw(void) {
    /* arch/arm64/include/uapi/asm/hwcap.h */
    const unsigned long hw = getauxval(AT_HWCAP);
    lc_cpu_set s = 0;
    if (hw & (1ul << 1))  s |= LC_CPU_BIT(LC_CPU_NEON);       /* HWCAP_ASIMD */
    if (hw & (1ul << 10)) s |= LC_CPU_BIT(LC_CPU_NEON_FP16);  /* HWCAP_ASIMDHP */
    if (hw & (1ul << 20)) s |= LC_CPU_BIT(LC_CPU_DOTPROD);    /* HWCAP_ASIMDDP */
    return s;
}
#elif defined(__aarch64__)
static lc_cpu_set probe_hw(void) { return LC_CPU_BIT(LC_CPU_NEON); }
#else
static lc_cpu_set probe_hw(void) { return 0; }
#endif

/* The features named in `list` ("avx2, f16c"): comma-separated, case-insensitive,
 * blanks around a name ignored. */
static lc_cpu_set parse_names(const char *list) {
    lc_cpu_set s = 0;
    while (list && *list) {
        size_t n = strcspn(list, ",");
        const char *next = list + n + (list[n] == ',');
        while (n > 0 && (*list == ' ' || *list == '\t'))
            list++, n--;
        while (n > 0 && (list[n - 1] == ' ' || list[n - 1] == '\t'))
            n--;
        for (int f = 0; f < LC_CPU_FEATURE_COUNT; f++)
            if (strlen(NAMES[f]) == n && strncasecmp(NAMES[f], list, n) == 0)
                s |= LC_CPU_BIT(f);
        list = next;
    }
    return s;
}

lc_cpu_set lc_cpu_probe(const char *disable) {
    lc_cpu_set s = probe_hw() & ~parse_names(disable);
    /* Drop what lost a prerequisite, until nothing changes (chains are 2 deep). */
    for (bool changed = true; changed;) {
        changed = false;
        for (int f = 0; f < LC_CPU_FEATURE_COUNT; f++)
            if ((s & LC_CPU_BIT(f)) && (s & NEEDS[f]) != NEEDS[f]) {
                s &= ~LC_CPU_BIT(f);
                changed = true;
            }
    }
    return s;
}

static lc_cpu_set g_features;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void probe_once(void) { g_features = lc_cpu_probe(getenv("LC_CPU_DISABLE")); }

lc_cpu_set lc_cpu_features(void) {
    pthread_once(&g_once, probe_once);
    return g_features;
}

bool lc_cpu_has(lc_cpu_feature f) {
    return (unsigned)f < LC_CPU_FEATURE_COUNT && (lc_cpu_features() & LC_CPU_BIT(f));
}

const char *lc_cpu_feature_name(lc_cpu_feature f) {
    return (unsigned)f < LC_CPU_FEATURE_COUNT ? NAMES[f] : "?";
}
