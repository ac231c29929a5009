/* SPDX-License-Identifier: MIT */
/* CPUID and XGETBV, in inline asm so freestanding builds need no <cpuid.h>. */
#ifndef MMPORT_ARCH_X86_CPUID_H
#define MMPORT_ARCH_X86_CPUID_H

#include <stdint.h>

struct x86_regs {
    uint32_t a, b, c, d;
};

static inline struct x86_regs x86_cpuid(uint32_t leaf, uint32_t subleaf)
{
    struct x86_regs r;
    __asm__ volatile("cpuid"
                     : "=a"(r.a), "=b"(r.b), "=c"(r.c), "=d"(r.d)
                     : "a"(leaf), "c"(subleaf));
    return r;
}

static inline uint64_t x86_xgetbv(uint32_t index)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(index));
    return ((uint64_t)hi << 32) | lo;
}

#endif
