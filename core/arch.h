/* SPDX-License-Identifier: MIT */
/*
 * The architecture contract: every hook an arch/<name>/ directory provides.
 *
 * Core calls these directly; the build picks one arch directory. An arch
 * that provides a hook declares it in its arch_impl.h with the self-define
 * idiom (#define mmp_arch_foo mmp_arch_foo); arch/generic/ supplies the
 * portable default for every hook an arch leaves out, guarded by
 * #ifndef mmp_arch_foo. Optional hooks say so.
 *
 * Everything here is freestanding: no libc.
 */
#ifndef MMPORT_CORE_ARCH_H
#define MMPORT_CORE_ARCH_H

#include <mmport/cpu.h>

#include "arch_impl.h" /* from arch/<name>/, found through -I */

/** Fill *f with what the CPU reports about itself (CPUID, ID registers). */
void mmp_arch_cpu_detect(struct mmp_cpu_features *f);

/**
 * The function of clearing kernel `id` (enum mmp_core_clear_kid in
 * core/clear_kernels.h), or NULL if this arch does not build it. Availability
 * on the running CPU is checked by core from the kernel's feature needs
 * before it is ever called. Optional: the generic default builds none.
 */
int (*mmp_arch_clear_fn(unsigned id))(void *addr, size_t len);

/**
 * Make descriptor stores visible to the table walker before a TLB
 * invalidation or before the new mappings are relied on (arm64: dsb ishst;
 * isb). Inline; optional: the default is a compiler barrier.
 */
static inline void mmp_arch_pt_barrier(void);

/**
 * Order the stores filling a new table before the store linking it (arm64:
 * dmb ishst, as Linux's smp_wmb() in pmd_install). Inline; optional: the
 * default is a compiler barrier.
 */
static inline void mmp_arch_pt_publish(void);

#include "../arch/generic/pt_barrier.h" /* defaults of the optional inline hooks */

#endif
