/* SPDX-License-Identifier: MIT */
/* x86-64 TLB invalidation helpers (see tlb.h for who may call them). */
#include "tlb.h"

#define CR4_PGE (1ull << 7)

void mmp_arch_invlpg(uint64_t va)
{
    __asm__ volatile("invlpg (%0)" ::"r"(va) : "memory");
}

void mmp_arch_tlb_flush_cr3(void)
{
    uint64_t cr3;
    __asm__ volatile("mov %%cr3, %0\n\tmov %0, %%cr3" : "=r"(cr3)::"memory");
}

void mmp_arch_tlb_flush_global(void)
{
    uint64_t cr4;
    __asm__ volatile("mov %%cr4, %0" : "=r"(cr4));
    if (!(cr4 & CR4_PGE)) {
        mmp_arch_tlb_flush_cr3();
        return;
    }
    __asm__ volatile("mov %0, %%cr4\n\tmov %1, %%cr4" ::"r"(cr4 & ~CR4_PGE), "r"(cr4)
                     : "memory");
}

void mmp_arch_tlb_flush_range(uint64_t va, uint64_t size, bool global)
{
    uint64_t first = va & ~0xfffull, end = va + size;
    if (size == 0)
        return;
    if (end < va || ((end - first + 0xfff) >> 12) > MMP_ARCH_INVLPG_MAX_PAGES) {
        if (global)
            mmp_arch_tlb_flush_global();
        else
            mmp_arch_tlb_flush_cr3();
        return;
    }
    for (uint64_t a = first; a < end; a += 0x1000)
        mmp_arch_invlpg(a);
}
