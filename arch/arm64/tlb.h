/* SPDX-License-Identifier: MIT */
/*
 * arm64 TLB invalidation for freestanding use (a hypervisor or the
 * tests/mmu payloads). These are privileged: the EL1 variants must run at
 * EL1 or above, the stage-2 and EL2 variants at EL2. A hosted program
 * (Linux EL0) must never call them. Nothing in core calls them either: a
 * caller wires them into its mmp_pt_ops::tlb_flush hook.
 *
 * Every call is complete on its own (Arm ARM D8.13 / K11 "TLB maintenance
 * requirements"): DSB ISHST first, so the descriptor writes that made the
 * entries invalid are visible to the table walkers of all PEs in the
 * Inner Shareable domain before the invalidation; then the TLBI(s); then
 * DSB ISH, which waits until every PE has completed them; then ISB, so
 * this PE's later instructions are fetched and translated afresh.
 * Range helpers issue one DSB ISHST, one TLBI per granule, one DSB ISH +
 * ISB, and fall back to a whole-context invalidation above
 * MMP_ARCH_TLBI_MAX_OPS operations.
 *
 * "last_level" selects the leaf-only forms (VALE1IS, VALE2IS, IPAS2LE1IS):
 * allowed when only leaf entries changed; after a table entry was
 * unlinked, pass false so walk caches are invalidated too.
 */
#ifndef MMPORT_ARCH_ARM64_TLB_H
#define MMPORT_ARCH_ARM64_TLB_H

#include <stdbool.h>
#include <stdint.h>

/** Above this many per-granule TLBIs, a range helper invalidates the whole context. */
#define MMP_ARCH_TLBI_MAX_OPS 512u

/* ---- EL1&0 regime, stage 1 (run at EL1, or at EL2 for the guest's regime) ---- */

/** TLBI VAE1IS / VALE1IS: one VA, entries tagged @p asid and global ones. */
void mmp_arch_tlbi_el1_va(uint64_t va, uint16_t asid, bool last_level);
/** The same for [va, va+size) in steps of 1 << granule_shift (12, 14 or 16). */
void mmp_arch_tlbi_el1_range(uint64_t va, uint64_t size, unsigned granule_shift,
                             uint16_t asid, bool last_level);
/** TLBI ASIDE1IS: every non-global entry of one ASID. */
void mmp_arch_tlbi_el1_asid(uint16_t asid);
/** TLBI VMALLE1IS: every EL1&0 stage-1 entry of the current VMID. */
void mmp_arch_tlbi_el1_all(void);

/* ---- stage 2 (run at EL2; acts on the VMID in VTTBR_EL2) ---- */

/**
 * TLBI IPAS2E1IS / IPAS2LE1IS for one IPA, then TLBI VMALLE1IS: entries
 * that combine stage 1 and stage 2 are tagged by VA, not IPA, so they can
 * only be removed by the stage-1 invalidation (Arm ARM D8.13.5).
 */
void mmp_arch_tlbi_s2_ipa(uint64_t ipa, bool last_level);
/** The same for [ipa, ipa+size). */
void mmp_arch_tlbi_s2_range(uint64_t ipa, uint64_t size, unsigned granule_shift,
                            bool last_level);
/** TLBI VMALLS12E1IS: every stage-1 and stage-2 entry of the current VMID. */
void mmp_arch_tlbi_s12_all(void);

/* ---- EL2 regime (run at EL2) ---- */

/** TLBI VAE2IS / VALE2IS: one VA of the EL2 translation regime. */
void mmp_arch_tlbi_el2_va(uint64_t va, bool last_level);
/** The same for [va, va+size). */
void mmp_arch_tlbi_el2_range(uint64_t va, uint64_t size, unsigned granule_shift,
                             bool last_level);
/** TLBI ALLE2IS: every EL2 entry. */
void mmp_arch_tlbi_el2_all(void);

#endif
