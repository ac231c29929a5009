/* SPDX-License-Identifier: MIT */
/*
 * The one table of clearing kernels, every arch's in one list, and the
 * portable kernel. Which of them this build and CPU can run is decided here
 * from data, so a kernel the CPU lacks is never executed.
 */
#include "arch.h"
#include "atomic.h"
#include "clear_kernels.h"
#include "clear_text.h"

#define X86 MMP_ARCH_X86_64
#define ARM MMP_ARCH_ARM64

const struct mmp_core_clear_kdesc mmp_core_clear_kdesc[MMP_K_COUNT] = {
    [MMP_K_MEMSET] = {"memset", MMP_ARCH_GENERIC, 0, false, false, NULL,
                      "portable C store loop (a memset call where the compiler makes one)"},
    [MMP_K_REP_STOSB] = {"rep_stosb", X86, 0, false, false, NULL,
                         "every x86-64 runs it; fast with ERMS"},
    [MMP_K_REP_STOSQ] = {"rep_stosq", X86, 0, false, false, NULL,
                         "every x86-64 runs it; fast with REP_GOOD"},
    [MMP_K_UNROLLED] = {"unrolled", X86, 0, false, false, NULL, "plain 64-bit stores, any x86-64"},
    [MMP_K_MOVNTI] = {"movnti", X86, MMP_CPU_SSE2, true, false, "CPU lacks SSE2", "CPU has SSE2"},
    [MMP_K_AVX2_NT] = {"avx2_nt", X86, MMP_CPU_AVX2, true, true,
                       "CPU lacks AVX2 (or the OS does not save YMM state)",
                       "CPU has AVX2 and the OS saves YMM state"},
    [MMP_K_AVX512_NT] = {"avx512_nt", X86, MMP_CPU_AVX512F, true, true,
                         "CPU lacks AVX-512F (or the OS does not save ZMM state)",
                         "CPU has AVX-512F and the OS saves ZMM state"},
    [MMP_K_CLZERO] = {"clzero", X86, MMP_CPU_CLZERO, true, false, "CPU lacks CLZERO (AMD only)",
                      "CPU has CLZERO"},
    [MMP_K_DC_ZVA] = {"dc_zva", ARM, MMP_CPU_DC_ZVA, true, false,
                      "DC ZVA prohibited (DCZID_EL0.DZP) or not reported",
                      "DCZID_EL0 allows DC ZVA"},
    [MMP_K_STNP] = {"stnp", ARM, 0, true, false, NULL, "every arm64 runs it"},
    [MMP_K_STP] = {"stp", ARM, 0, false, false, NULL, "every arm64 runs it"},
    [MMP_K_MOPS] = {"mops", ARM, MMP_CPU_MOPS, false, false, "CPU lacks FEAT_MOPS (HWCAP2_MOPS)",
                    "CPU has FEAT_MOPS"},
};

/*
 * Plain stores; the compiler may turn the loop into a memset call, which
 * every freestanding environment provides (and glibc's when hosted). The
 * store-store barrier (a compiler barrier on x86, DMB ISHST on arm64) keeps
 * the kernel contract: zeroes ordered before the caller's later stores.
 */
int mmp_core_clear_memset(void *addr, size_t len)
{
    uint64_t *p = addr;
    for (size_t i = 0; i < len / 8; i++)
        p[i] = 0;
    AO_nop_write();
    return 0;
}

bool mmp_core_clear_supported(const struct mmp_cpu_features *f, unsigned k)
{
    if (k >= MMP_K_COUNT)
        return false;
    const struct mmp_core_clear_kdesc *d = &mmp_core_clear_kdesc[k];
    if (d->arch != MMP_ARCH_GENERIC && d->arch != f->arch)
        return false;
    return (f->flags & d->needs) == d->needs;
}

int mmp_core_clear_lookup(const char *name)
{
    for (unsigned k = 0; k < MMP_K_COUNT; k++)
        if (mmp_core_streq(name, mmp_core_clear_kdesc[k].name))
            return (int)k;
    return -1;
}

static mmp_core_clear_fn built_fn(unsigned k)
{
    if (k == MMP_K_MEMSET)
        return mmp_core_clear_memset;
    /* Kernels of another arch are never asked of this arch's hook. */
    if (k >= MMP_K_COUNT || mmp_core_clear_kdesc[k].arch != MMP_ARCH_THIS)
        return NULL;
    return mmp_arch_clear_fn(k);
}

bool mmp_core_clear_left_out(unsigned k)
{
    return k < MMP_K_COUNT && mmp_core_clear_kdesc[k].arch == MMP_ARCH_THIS && !built_fn(k);
}

mmp_core_clear_fn mmp_core_clear_fn_of(unsigned k)
{
    return mmp_core_clear_supported(mmp_cpu_features(), k) ? built_fn(k) : NULL;
}

uint32_t mmp_core_clear_usable(void)
{
    uint32_t usable = 0;
    for (unsigned k = 0; k < MMP_K_COUNT; k++)
        usable |= mmp_core_clear_fn_of(k) ? MMP_KBIT(k) : 0;
    return usable;
}

static const char *why(const struct mmp_cpu_features *f, unsigned k, bool built)
{
    const struct mmp_core_clear_kdesc *d = &mmp_core_clear_kdesc[k];
    if (d->arch != MMP_ARCH_GENERIC && d->arch != f->arch)
        return d->arch == X86 ? "x86-64 kernel; this is not an x86-64 CPU"
                              : "arm64 kernel; this is not an arm64 CPU";
    if ((f->flags & d->needs) != d->needs)
        return d->needs_why;
    if (!built)
        return d->vector ? "left out: general-register build (-mgeneral-regs-only)"
                         : "not built into this library";
    return d->ok_why;
}

void mmp_core_clear_describe(struct mmp_clear_kernel *list)
{
    const struct mmp_cpu_features *f = mmp_cpu_features();
    for (unsigned k = 0; k < MMP_K_COUNT; k++) {
        bool built = mmp_core_clear_fn_of(k) != NULL;
        list[k].name = mmp_core_clear_kdesc[k].name;
        list[k].arch = mmp_core_clear_kdesc[k].arch;
        list[k].available = built;
        list[k].cold = mmp_core_clear_kdesc[k].cold;
        list[k].why = why(f, k, built);
    }
}
