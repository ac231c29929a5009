/* SPDX-License-Identifier: MIT */
/* x86-64: the hooks this arch provides itself (self-define idiom). */
#ifndef MMPORT_ARCH_X86_IMPL_H
#define MMPORT_ARCH_X86_IMPL_H

#define MMP_ARCH_THIS MMP_ARCH_X86_64
#define mmp_arch_cpu_detect mmp_arch_cpu_detect
#define mmp_arch_clear_fn mmp_arch_clear_fn

/* Page-table barriers: the generic defaults (compiler barriers) are right
 * here: the x86 page walker is coherent with ordinary stores, and stores
 * are not reordered with other stores (SDM vol. 3A 8.2.2, 4.10.4). */

#endif
