/* SPDX-License-Identifier: MIT */
/* x86-64: the hooks this arch provides itself (self-define idiom). */
#ifndef MMPORT_ARCH_X86_IMPL_H
#define MMPORT_ARCH_X86_IMPL_H

#define MMP_ARCH_THIS MMP_ARCH_X86_64
#define mmp_arch_cpu_detect mmp_arch_cpu_detect

/*
 * Page-table barriers: none needed. The x86 page walker is coherent with
 * ordinary stores and stores are not reordered with other stores (SDM
 * Vol. 3A 8.2.2, 4.10.4), so only the compiler must keep the order.
 */
#define mmp_arch_pt_barrier mmp_arch_pt_barrier
static inline void mmp_arch_pt_barrier(void)
{
    __asm__ __volatile__("" ::: "memory");
}
#define mmp_arch_pt_publish mmp_arch_pt_publish
static inline void mmp_arch_pt_publish(void)
{
    __asm__ __volatile__("" ::: "memory");
}

#endif
