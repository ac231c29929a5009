/* SPDX-License-Identifier: MIT */
/* arm64: the hooks this arch provides itself (self-define idiom). */
#ifndef MMPORT_ARCH_ARM64_IMPL_H
#define MMPORT_ARCH_ARM64_IMPL_H

#define MMP_ARCH_THIS MMP_ARCH_ARM64
#define mmp_arch_cpu_detect mmp_arch_cpu_detect

/*
 * Page-table barriers (used by core/pt_batch.c, defaults in core/pt_int.h).
 * After descriptor stores: dsb ishst makes them visible to the table walker
 * (and orders them before a following TLBI), isb stops instructions
 * already fetched from using the old translations (Arm ARM D8.16, Linux's
 * __set_pte / emit_pte_barriers). Before linking a new table: dmb ishst, so
 * the walker never sees the link before the table's contents.
 */
#define mmp_arch_pt_barrier mmp_arch_pt_barrier
static inline void mmp_arch_pt_barrier(void)
{
    __asm__ __volatile__("dsb ishst\n\tisb" ::: "memory");
}
#define mmp_arch_pt_publish mmp_arch_pt_publish
static inline void mmp_arch_pt_publish(void)
{
    __asm__ __volatile__("dmb ishst" ::: "memory");
}

#endif
