/* SPDX-License-Identifier: MIT */
/* The x86 formats' shared parts: x86-64 and NPT (pt_x86.c), EPT (pt_ept.c). */
#ifndef MMPORT_ARCH_X86_PT_X86_H
#define MMPORT_ARCH_X86_PT_X86_H

#include "pt_fmt.h"

/*
 * The 4K-granule, 512-entry, 4- or 5-level geometry every x86 format has,
 * with bit 7 marking large leaves at levels 2 and 3: @p valid the bits of
 * which one makes an entry present, @p tbl the table template, @p ign the
 * bits hardware sets, @p physical for guest-physical input (no sign
 * extension). -EINVAL for a configuration x86 lacks.
 */
int mmp_core_x86_pt_setup(struct mmp_pt_geom *g, const struct mmp_pt_config *cfg, uint64_t valid,
                          uint64_t tbl, uint64_t ign, bool physical);
uint64_t mmp_core_x86_pt_child(const struct mmp_pt_geom *g, unsigned d, uint64_t e);
/* The reserved bits set in the valid entry e at depth d (address bits
 * 51:pa_bits, bit 7 at PML4/PML5, a large leaf's address bits from lo up
 * to its size). */
uint64_t mmp_core_x86_pt_rsv(const struct mmp_pt_geom *g, unsigned d, uint64_t e, unsigned lo);
bool mmp_core_x86_pt_needs_bbm(const struct mmp_pt_geom *g, unsigned d, uint64_t old, uint64_t nw,
                               unsigned chg);

#endif
