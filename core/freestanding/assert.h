/* SPDX-License-Identifier: MIT */
/*
 * Stand-in <assert.h> for freestanding builds: atomic_ops.h includes it,
 * and a hypervisor build has no libc to supply it. Core does not assert.
 */
#ifndef MMPORT_FREESTANDING_ASSERT_H
#define MMPORT_FREESTANDING_ASSERT_H
#define assert(e) ((void)0)
#endif
