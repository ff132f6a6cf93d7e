/* Unit tests for libconvert/cpu.c: the probe agrees with the kernel's view of the CPU
 * (/proc/cpuinfo, which lists only what both the CPU and the OS support), the
 * LC_CPU_DISABLE syntax and its prerequisites, and the two users of the probe
 * (convert_x86's F16C rows, quant/'s kernel variants) follow its answer. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/convert.h"
#include "libconvert/convert_impl.h"
#include "libconvert/cpu.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

#define BIT LC_CPU_BIT

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
/* The features of this architecture, and the /proc/cpuinfo line that lists them. */
#if defined(__x86_64__)
static const lc_cpu_feature ARCH[] = {
    LC_CPU_AVX, LC_CPU_AVX2, LC_CPU_FMA, LC_CPU_F16C,
    LC_CPU_AVX512F, LC_CPU_AVX512BW, LC_CPU_AVX512DQ, LC_CPU_AVX512VL,
};
static const char FLAGS_KEY[] = "flags";
#elif defined(__aarch64__)
static const lc_cpu_feature ARCH[] = { LC_CPU_NEON, LC_CPU_NEON_FP16, LC_CPU_DOTPROD };
static const char FLAGS_KEY[] = "Features";
#endif

/* The first "flags : a b c" line of /proc/cpuinfo, with a blank on each side of every
 * word, so that " avx2 " can be searched for. */
static void cpuinfo_flags(char *out, size_t cap) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        cr_skip_test("no /proc/cpuinfo");
    static char line[16384];
    out[0] = '\0';
    while (fgets(line, sizeof line, f))
        if (strncmp(line, FLAGS_KEY, strlen(FLAGS_KEY)) == 0 && strchr(line, ':')) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, cap, " %s ", strchr(line, ':') + 1);
            break;
        }
    fclose(f);
    cr_assert_neq(out[0], '\0', "no %s line in /proc/cpuinfo", FLAGS_KEY);
}

Test(cpu, probe_agrees_with_proc_cpuinfo) {
    static char flags[16384 + 4];
    cpuinfo_flags(flags, sizeof flags);
    const lc_cpu_set s = lc_cpu_probe(NULL);
    for (size_t i = 0; i < sizeof ARCH / sizeof ARCH[0]; i++) {
        char word[32];
        snprintf(word, sizeof word, " %s ", lc_cpu_feature_name(ARCH[i]));
        const bool listed = strstr(flags, word) != NULL;
        cr_assert_eq(!!(s & BIT(ARCH[i])), listed, "%s: probe says %d, /proc/cpuinfo %d",
                     lc_cpu_feature_name(ARCH[i]), !!(s & BIT(ARCH[i])), listed);
    }
}
#else
Test(cpu, probe_agrees_with_proc_cpuinfo) {
    cr_skip_test("/proc/cpuinfo is compared on Linux x86-64 and AArch64 only");
}
#endif

Test(cpu, has_is_the_probe_under_the_environment) {
    const lc_cpu_set s = lc_cpu_probe(getenv("LC_CPU_DISABLE"));
    cr_assert_eq(lc_cpu_features(), s);
    for (int f = 0; f < LC_CPU_FEATURE_COUNT; f++)
        cr_assert_eq(lc_cpu_has((lc_cpu_feature)f), !!(s & BIT(f)), "%s",
                     lc_cpu_feature_name((lc_cpu_feature)f));
    cr_assert_not(lc_cpu_has(LC_CPU_FEATURE_COUNT));
    cr_assert_not(lc_cpu_has((lc_cpu_feature)-1));
    cr_assert(lc_cpu_has_all(0));
    cr_assert_str_eq(lc_cpu_feature_name(LC_CPU_AVX512BW), "avx512bw");
    cr_assert_str_eq(lc_cpu_feature_name(LC_CPU_NEON), "asimd");
    cr_assert_str_eq(lc_cpu_feature_name(LC_CPU_FEATURE_COUNT), "?");
}

Test(cpu, disable_hides_named_features_and_what_needs_them) {
    const lc_cpu_set all = lc_cpu_probe(NULL);
    cr_assert_eq(lc_cpu_probe(""), all);
    cr_assert_eq(lc_cpu_probe("bogus,,neon"), all);   /* unknown names are ignored */
    const lc_cpu_set avx512 = BIT(LC_CPU_AVX512F) | BIT(LC_CPU_AVX512BW) |
                              BIT(LC_CPU_AVX512DQ) | BIT(LC_CPU_AVX512VL);
    /* F16C alone: AVX-512 needs it, the others stay. */
    cr_assert_eq(lc_cpu_probe(" F16C "), all & ~(BIT(LC_CPU_F16C) | avx512));
    cr_assert_eq(lc_cpu_probe("avx512bw"), all & ~BIT(LC_CPU_AVX512BW));
    cr_assert_eq(lc_cpu_probe("avx512f"), all & ~avx512);
    cr_assert_eq(lc_cpu_probe("avx"), all & ~(BIT(LC_CPU_AVX) | BIT(LC_CPU_AVX2) |
                                               BIT(LC_CPU_FMA) | BIT(LC_CPU_F16C) | avx512));
    cr_assert_eq(lc_cpu_probe("asimd"), all & ~(BIT(LC_CPU_NEON) | BIT(LC_CPU_NEON_FP16) |
                                                 BIT(LC_CPU_DOTPROD)));
    cr_assert_eq(lc_cpu_probe("avx2,fma"),
                 all & ~(BIT(LC_CPU_AVX2) | BIT(LC_CPU_FMA) | avx512));
    if (all == 0)
        cr_skip_test("no feature here: the sets above were all equal");
}

/* convert_x86 and quant/dispatch ask the probe, not cpuid of their own. */
Test(cpu, users_follow_the_probe) {
#if LC_CONVERT_X86
    lc_convert_use_simd(true);
    cr_assert_eq(lc_convert_simd_active(), lc_cpu_has(LC_CPU_AVX2) && lc_cpu_has(LC_CPU_F16C));
#endif
#ifdef LC_HAVE_AVX2
    cr_assert_eq(lc_qkernels_get("avx2") != NULL, lc_cpu_has_all(LC_QK_AVX2_NEEDS));
    cr_assert_eq(LC_QK_AVX2_NEEDS, BIT(LC_CPU_AVX2) | BIT(LC_CPU_FMA) | BIT(LC_CPU_F16C));
    if (!getenv("LC_QUANT")) {          /* the fastest variant the probe allows */
        const lc_qkernels *want = lc_cpu_has_all(LC_QK_AVX2_NEEDS) ? &lc_qk_avx2 : &lc_qk_ref;
#ifdef LC_HAVE_AVX512
        if (lc_cpu_has_all(LC_QK_AVX512_NEEDS))
            want = &lc_qk_avx512;
#endif
        cr_assert_eq(lc_qkernels_best(), want, "best %s", lc_qkernels_best()->name);
    }
#endif
#ifdef LC_HAVE_AVX512
    cr_assert_eq(lc_qkernels_get("avx512") != NULL, lc_cpu_has_all(LC_QK_AVX512_NEEDS));
#endif
    cr_assert_not_null(lc_qkernels_get("ref"));
}
