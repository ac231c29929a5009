/* SPDX-License-Identifier: MIT */
/*
 * CPU feature detection, checked against sources mmport does not use for
 * the same fact: /proc/cpuinfo on x86, getauxval() and a measured DC ZVA on
 * arm64, sysfs for the LLC.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include <mmport/mmport.h>

#include "mmp_test.h"

START_TEST(errors_equal_errno)
{
    ck_assert_int_eq(MMP_ENOENT, ENOENT);
    ck_assert_int_eq(MMP_EINTR, EINTR);
    ck_assert_int_eq(MMP_ENOMEM, ENOMEM);
    ck_assert_int_eq(MMP_EACCES, EACCES);
    ck_assert_int_eq(MMP_EBUSY, EBUSY);
    ck_assert_int_eq(MMP_EEXIST, EEXIST);
    ck_assert_int_eq(MMP_EINVAL, EINVAL);
    ck_assert_int_eq(MMP_ERANGE, ERANGE);
    ck_assert_int_eq(MMP_ENOSYS, ENOSYS);
    ck_assert_int_eq(MMP_EOVERFLOW, EOVERFLOW);
    ck_assert_int_eq(MMP_ENOTSUP, EOPNOTSUPP);
    ck_assert_str_eq(mmp_strerror(-MMP_EEXIST), "already mapped");
    ck_assert_str_eq(mmp_strerror(12345), "unknown error");
    ck_assert_str_eq(mmp_version(), MMP_VERSION_STRING);
}
END_TEST

START_TEST(arch_matches_build)
{
    const struct mmp_cpu_features *f = mmp_cpu_features();
#if defined(__x86_64__)
    ck_assert_int_eq(f->arch, MMP_ARCH_X86_64);
#elif defined(__aarch64__)
    ck_assert_int_eq(f->arch, MMP_ARCH_ARM64);
#else
    ck_assert_int_eq(f->arch, MMP_ARCH_GENERIC);
#endif
    ck_assert_ptr_nonnull(f->llc_source);
    ck_assert_str_eq(mmp_cpu_flag_name(MMP_CPU_ERMS), "erms");
    ck_assert_ptr_null(mmp_cpu_flag_name(MMP_CPU_ERMS | MMP_CPU_AVX2));
}
END_TEST

static void *detect_in_thread(void *arg)
{
    (void)arg;
    return (void *)mmp_cpu_features();
}

START_TEST(detection_is_once_and_thread_safe)
{
    pthread_t t[8];
    void *got[8];
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, detect_in_thread, NULL), 0);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], &got[i]);
    for (int i = 0; i < 8; i++)
        ck_assert_ptr_eq(got[i], mmp_cpu_features());
}
END_TEST

/* Largest non-instruction cache of cpu0 according to sysfs, or 0. */
static unsigned long long sysfs_llc(void)
{
    unsigned long long best = 0;
    for (int i = 0; i < 8; i++) {
        char path[96], type[32] = "";
        unsigned long long kb = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        int got = fscanf(f, "%31s", type);
        fclose(f);
        if (got != 1 || strcmp(type, "Instruction") == 0)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = fopen(path, "r");
        if (f && fscanf(f, "%lluK", &kb) == 1 && kb * 1024 > best)
            best = kb * 1024;
        if (f)
            fclose(f);
    }
    return best;
}

START_TEST(llc_agrees_with_sysfs)
{
    unsigned long long want = sysfs_llc();
    if (!want)
        MMP_SKIP("no cache information in sysfs on this machine");
    if (mmp_test_foreign_cpu())
        MMP_SKIP(mmp_test_foreign_cpu());
    ck_assert_uint_eq(mmp_cpu_features()->llc_bytes, want);
}
END_TEST

#if defined(__x86_64__)
#define X86_ONLY()
#else
#define X86_ONLY() MMP_SKIP("x86-only check; this build is not x86_64")
#endif
#if defined(__aarch64__)
#define ARM64_ONLY()
#else
#define ARM64_ONLY() MMP_SKIP("arm64-only check; this build is not aarch64")
#endif

#if defined(__x86_64__)
/* The "flags" line of /proc/cpuinfo, with a space at each end. */
static char *cpuinfo_field(const char *key)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    static char line[8192];
    char *res = NULL;
    if (!f)
        return NULL;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, strlen(key)) == 0 && strchr(line, ':')) {
            char *v = strchr(line, ':') + 1;
            v[strcspn(v, "\n")] = ' ';
            res = v;
            break;
        }
    }
    fclose(f);
    return res;
}

static int has_flag(const char *flags, const char *name)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s ", name);
    return strstr(flags, pat) != NULL;
}
#endif

START_TEST(x86_flags_match_proc_cpuinfo)
{
    X86_ONLY();
#if defined(__x86_64__)
    if (mmp_test_foreign_cpu())
        MMP_SKIP(mmp_test_foreign_cpu());
    char *flags = cpuinfo_field("flags");
    if (!flags)
        MMP_SKIP("/proc/cpuinfo has no flags line");
    flags = strdup(flags);
    const struct mmp_cpu_features *f = mmp_cpu_features();
    static const struct {
        uint32_t bit;
        const char *name;
    } cmp[] = {{MMP_CPU_ERMS, "erms"},         {MMP_CPU_AVX2, "avx2"},
               {MMP_CPU_AVX512F, "avx512f"},   {MMP_CPU_CLZERO, "clzero"},
               {MMP_CPU_FSRM, "fsrm"},         {MMP_CPU_MOVDIR64B, "movdir64b"},
               {MMP_CPU_SSE2, "sse2"}};
    for (size_t i = 0; i < sizeof cmp / sizeof cmp[0]; i++) {
        int want = has_flag(flags, cmp[i].name), got = (f->flags & cmp[i].bit) != 0;
        ck_assert_msg(want == got, "%s: cpuinfo %d, mmport %d", cmp[i].name, want, got);
    }
    if (has_flag(flags, "rep_good"))
        ck_assert(f->flags & MMP_CPU_REP_GOOD);
    free(flags);
#endif
}
END_TEST

START_TEST(x86_identity_matches_proc_cpuinfo)
{
    X86_ONLY();
#if defined(__x86_64__)
    if (mmp_test_foreign_cpu())
        MMP_SKIP(mmp_test_foreign_cpu());
    const struct mmp_cpu_features *f = mmp_cpu_features();
    char *v = cpuinfo_field("vendor_id");
    if (!v)
        MMP_SKIP("/proc/cpuinfo has no vendor_id");
    char vendor[32];
    ck_assert_int_eq(sscanf(v, "%31s", vendor), 1);
    ck_assert_str_eq(f->vendor, vendor);
    ck_assert_uint_eq(f->family, strtoul(cpuinfo_field("cpu family"), NULL, 10));
    ck_assert_uint_eq(f->model, strtoul(cpuinfo_field("model\t"), NULL, 10));
    ck_assert_uint_eq(f->stepping, strtoul(cpuinfo_field("stepping"), NULL, 10));
#endif
}
END_TEST

START_TEST(arm64_hwcaps_match_auxv)
{
    ARM64_ONLY();
#if defined(__aarch64__)
    const struct mmp_cpu_features *f = mmp_cpu_features();
    ck_assert_uint_eq(f->hwcap, getauxval(AT_HWCAP));
    ck_assert_uint_eq(f->hwcap2, getauxval(AT_HWCAP2));
    ck_assert_int_eq(!!(f->flags & MMP_CPU_SVE), !!(getauxval(AT_HWCAP) & (1ul << 22)));
    if (getauxval(AT_HWCAP) & (1ul << 11))
        ck_assert_msg(f->midr != 0, "HWCAP_CPUID set but MIDR not read");
#endif
}
END_TEST

/* Zeroes one DC ZVA block inside a poisoned buffer and counts the zeroes. */
START_TEST(arm64_zva_block_measured)
{
    ARM64_ONLY();
#if defined(__aarch64__)
    const struct mmp_cpu_features *f = mmp_cpu_features();
    if (f->zva_prohibited)
        MMP_SKIP("DC ZVA is prohibited on this CPU (DCZID_EL0.DZP)");
    static unsigned char buf[8192] __attribute__((aligned(4096)));
    memset(buf, 0xa5, sizeof buf);
    __asm__ volatile("dc zva, %0" ::"r"(buf + 4096 + 8) : "memory");
    unsigned zeroes = 0;
    for (size_t i = 0; i < sizeof buf; i++)
        zeroes += buf[i] == 0;
    ck_assert_uint_eq(zeroes, f->zva_block);
    const char *cpu = getenv("QEMU_CPU");
    if (cpu && strcmp(cpu, "max") == 0)
        ck_assert_uint_eq(f->zva_block, 512);
    if (cpu && strcmp(cpu, "cortex-a57") == 0)
        ck_assert_uint_eq(f->zva_block, 64);
#endif
}
END_TEST

Suite *mmp_suite_cpu(void)
{
    Suite *s = suite_create("cpu");
    MMP_ADD(s, errors_equal_errno);
    MMP_ADD(s, arch_matches_build);
    MMP_ADD(s, detection_is_once_and_thread_safe);
    MMP_ADD(s, llc_agrees_with_sysfs);
    MMP_ADD(s, x86_flags_match_proc_cpuinfo);
    MMP_ADD(s, x86_identity_matches_proc_cpuinfo);
    MMP_ADD(s, arm64_hwcaps_match_auxv);
    MMP_ADD(s, arm64_zva_block_measured);
    return s;
}
