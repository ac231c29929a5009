/* SPDX-License-Identifier: MIT */
/*
 * x86-64 TLB invalidation for freestanding use (a hypervisor or the
 * tests/mmu payloads). Privileged: CPL 0 only; a hosted program must never
 * call them. Core does not call them: a caller wires them into its
 * mmp_pt_ops::tlb_flush hook.
 *
 * Facts (Intel SDM vol. 3A, 4.10.4): INVLPG removes the TLB entries for the
 * page holding the address whatever its size (4K, 2M, 1G), global ones
 * included, and every paging-structure-cache entry of the current PCID, so
 * it also covers an unlinked table. A MOV to CR3 drops every non-global
 * entry of the current PCID; toggling CR4.PGE drops everything, global
 * entries included. x86 walks need no barrier after a descriptor store
 * (stores are seen in order by the page walker of the same CPU); other
 * CPUs need an IPI shootdown, which is the caller's business.
 */
#ifndef MMPORT_ARCH_X86_TLB_H
#define MMPORT_ARCH_X86_TLB_H

#include <stdbool.h>
#include <stdint.h>

/** Above this many pages, mmp_arch_tlb_flush_range() flushes everything
 *  (Linux uses a similar ceiling, tlb_single_page_flush_ceiling = 33). */
#define MMP_ARCH_INVLPG_MAX_PAGES 32u

/** INVLPG: the page containing @p va, any size, global or not. */
void mmp_arch_invlpg(uint64_t va);
/** INVLPG every 4 KiB page of [va, va+size), or a full flush above the ceiling
 *  (including global entries when @p global). */
void mmp_arch_tlb_flush_range(uint64_t va, uint64_t size, bool global);
/** Reload CR3 with itself: every non-global entry of the current PCID. */
void mmp_arch_tlb_flush_cr3(void);
/** Toggle CR4.PGE (or reload CR3 when PGE is off): every entry. */
void mmp_arch_tlb_flush_global(void);

#endif
