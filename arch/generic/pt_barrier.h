/* SPDX-License-Identifier: MIT */
/*
 * Portable defaults of the page-table barrier hooks (core/arch.h): a
 * compiler barrier, which is all a walker coherent with ordinary, ordered
 * stores needs (x86: SDM vol. 3A 4.10.4, 8.2.2). Inline, because they sit
 * on the update path.
 */
#ifndef MMPORT_ARCH_GENERIC_PT_BARRIER_H
#define MMPORT_ARCH_GENERIC_PT_BARRIER_H

#ifndef mmp_arch_pt_barrier
static inline void mmp_arch_pt_barrier(void)
{
    __asm__ __volatile__("" ::: "memory");
}
#endif

#ifndef mmp_arch_pt_publish
static inline void mmp_arch_pt_publish(void)
{
    __asm__ __volatile__("" ::: "memory");
}
#endif

#endif
