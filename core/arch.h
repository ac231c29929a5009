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

#endif
