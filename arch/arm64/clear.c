/* SPDX-License-Identifier: MIT */
/*
 * arm64 clearing kernels. Every kernel gets addr and len as multiples of 64
 * bytes, len > 0, and ends with one DMB ISHST so its zeroes are ordered
 * before any later store of the caller (DC ZVA counts as a store for
 * ordering, Arm ARM B2.3; STNP only hints non-temporality).
 */
#include <stdint.h>

#include "arch.h"
#include "clear_kernels.h"

static inline void store_fence(void)
{
    __asm__ volatile("dmb ishst" ::: "memory");
}

/* 64 bytes per iteration with STP xzr pairs. */
static inline void stp_loop(char *p, size_t len)
{
    __asm__ volatile("1:\n\t"
                     "stp xzr, xzr, [%0]\n\t"
                     "stp xzr, xzr, [%0, #16]\n\t"
                     "stp xzr, xzr, [%0, #32]\n\t"
                     "stp xzr, xzr, [%0, #48]\n\t"
                     "add %0, %0, #64\n\t"
                     "subs %1, %1, #64\n\t"
                     "b.ne 1b"
                     : "+r"(p), "+r"(len)
                     :
                     : "memory", "cc");
}

static int k_stp(void *addr, size_t len)
{
    stp_loop(addr, len);
    store_fence();
    return 0;
}

/* STNP: the fallback when DC ZVA is prohibited (DCZID_EL0.DZP). */
static int k_stnp(void *addr, size_t len)
{
    char *p = addr;
    __asm__ volatile("1:\n\t"
                     "stnp xzr, xzr, [%0]\n\t"
                     "stnp xzr, xzr, [%0, #16]\n\t"
                     "stnp xzr, xzr, [%0, #32]\n\t"
                     "stnp xzr, xzr, [%0, #48]\n\t"
                     "add %0, %0, #64\n\t"
                     "subs %1, %1, #64\n\t"
                     "b.ne 1b"
                     : "+r"(p), "+r"(len)
                     :
                     : "memory", "cc");
    store_fence();
    return 0;
}

/*
 * DC ZVA zeroes one naturally aligned block of 4 << DCZID_EL0.BS bytes
 * (Arm ARM D7.4.12 / C5.3.x "DC ZVA"). Works for any block size and any
 * 64-byte-aligned start and end: the parts outside whole blocks take STP.
 */
static int k_dc_zva(void *addr, size_t len)
{
    uintptr_t bs = mmp_cpu_features()->zva_block;
    char *p = addr, *end = p + len;
    if (bs && len >= bs) {
        char *first = (char *)(((uintptr_t)p + bs - 1) & ~(bs - 1));
        char *last = (char *)((uintptr_t)end & ~(bs - 1));
        if (first < last) {
            if (first > p)
                stp_loop(p, (size_t)(first - p));
            for (p = first; p < last; p += bs)
                __asm__ volatile("dc zva, %0" ::"r"(p) : "memory");
        }
    }
    if (p < end)
        stp_loop(p, (size_t)(end - p));
    store_fence();
    return 0;
}

/*
 * FEAT_MOPS: SETP/SETM/SETE [x0]!, x1!, x2 (prologue, main, epilogue; Arm
 * ARM C6.2 "SETP, SETM, SETE"), emitted with .inst for assemblers without
 * +mops. The three must run back to back on these registers.
 */
static int k_mops(void *addr, size_t len)
{
    register char *x0 __asm__("x0") = addr;
    register size_t x1 __asm__("x1") = len;
    register uint64_t x2 __asm__("x2") = 0;
    __asm__ volatile(".inst 0x19c20420\n\t" /* setp [x0]!, x1!, x2 */
                     ".inst 0x19c24420\n\t" /* setm [x0]!, x1!, x2 */
                     ".inst 0x19c28420"     /* sete [x0]!, x1!, x2 */
                     : "+r"(x0), "+r"(x1)
                     : "r"(x2)
                     : "memory", "cc");
    store_fence();
    return 0;
}

int (*mmp_arch_clear_fn(unsigned id))(void *addr, size_t len)
{
    switch (id) {
    case MMP_K_DC_ZVA: return k_dc_zva;
    case MMP_K_STNP: return k_stnp;
    case MMP_K_STP: return k_stp;
    case MMP_K_MOPS: return k_mops;
    default: return NULL;
    }
}
