/* SPDX-License-Identifier: MIT */
/*
 * Hooks into the hosting environment (an OS, or nothing for a bare-metal
 * hypervisor). host/linux.c implements them for the hosted library;
 * host/none.c is the freestanding default. Core never calls libc itself.
 */
#ifndef MMPORT_CORE_HOST_H
#define MMPORT_CORE_HOST_H

#include <mmport/cpu.h>

/**
 * The OS's hardware-capability words (Linux AT_HWCAP / AT_HWCAP2).
 * Returns false, leaving both 0, where there is no OS to ask: the arch code
 * then reads the ID registers itself (it runs at EL1 or above).
 */
bool mmp_host_hwcaps(uint64_t *hwcap, uint64_t *hwcap2);

/**
 * Add what only the OS knows to *f (auxv HWCAPs, sysfs cache sizes and
 * MIDR). Called once, after mmp_arch_cpu_detect(). May do nothing.
 */
void mmp_host_cpu_refine(struct mmp_cpu_features *f);

#endif
