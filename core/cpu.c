/* SPDX-License-Identifier: MIT */
/* One-time, thread-safe CPU feature detection. */
#include "arch.h"
#include "atomic.h"
#include "host.h"

static struct mmp_cpu_features detected;
static volatile AO_t state; /* 0 = not yet, 1 = being filled, 2 = ready */

const struct mmp_cpu_features *mmp_cpu_features(void)
{
    if (AO_load_acquire(&state) == 2)
        return &detected;
    if (AO_compare_and_swap_full(&state, 0, 1)) {
        mmp_arch_cpu_detect(&detected);
        mmp_host_cpu_refine(&detected);
        if (!detected.llc_source)
            detected.llc_source = "none";
        AO_store_release(&state, 2);
    } else {
        while (AO_load_acquire(&state) != 2)
            ; /* another thread is detecting; it takes microseconds */
    }
    return &detected;
}

const char *mmp_arch_name(enum mmp_arch arch)
{
    switch (arch) {
    case MMP_ARCH_X86_64:
        return "x86_64";
    case MMP_ARCH_ARM64:
        return "aarch64";
    default:
        return "generic";
    }
}

static const struct {
    uint32_t bit;
    const char *name;
} flag_names[] = {
    {MMP_CPU_SSE2, "sse2"},       {MMP_CPU_ERMS, "erms"},
    {MMP_CPU_FSRM, "fsrm"},       {MMP_CPU_REP_GOOD, "rep_good"},
    {MMP_CPU_AVX2, "avx2"},       {MMP_CPU_AVX512F, "avx512f"},
    {MMP_CPU_CLZERO, "clzero"},   {MMP_CPU_MOVDIR64B, "movdir64b"},
    {MMP_CPU_DC_ZVA, "dc_zva"},   {MMP_CPU_MOPS, "mops"},
    {MMP_CPU_SVE, "sve"},         {MMP_CPU_ID_REGS, "cpuid"},
};

const char *mmp_cpu_flag_name(uint32_t flag)
{
    for (size_t i = 0; i < sizeof flag_names / sizeof flag_names[0]; i++)
        if (flag_names[i].bit == flag)
            return flag_names[i].name;
    return NULL;
}
