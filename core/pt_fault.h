/* SPDX-License-Identifier: MIT */
/*
 * One-page calls (core/pt_fault.c): mmp_pt_map() and mmp_pt_unmap() of one
 * granule try these first. Each does the whole call and returns its result
 * (0 or a negative MMP_E*), or returns PT_SLOT_ENGINE having changed
 * nothing: then the engine does the call (or PT_SLOT_FOLD, below).
 */
#ifndef MMPORT_CORE_PT_FAULT_H
#define MMPORT_CORE_PT_FAULT_H

#include "pt_int.h"

#define PT_SLOT_ENGINE 1
/* Shared tables: the map is made and completed a contiguous run or a
 * table; the caller runs the engine's folds of it (OPF_FOLD), whose own
 * checks and locks decide, in its frame (no deeper stack). */
#define PT_SLOT_FOLD 2

/* va, pa: one granule, checked by the caller; flags: MMP_MAP_*; shared:
 * the call is a shared one (MMP_CALL_SHARED), else exclusive. */
int mmp_core_pt_slot_map(struct pt *pt, uint64_t va, uint64_t pa, uint32_t attrs,
                         uint32_t flags, bool shared);
int mmp_core_pt_slot_unmap(struct pt *pt, uint64_t va, bool shared);

#endif
