/* SPDX-License-Identifier: MIT */
/**
 * @file pt.h
 * Page tables: build and update x86-64 and arm64 translation tables over
 * contiguous ranges, with the largest leaves the format allows.
 *
 * Contract, for every call below:
 * - Errors are negative MMP_E* values; a call that fails changes nothing
 *   (no entry written, no table page kept, no flush issued) but the
 *   table's record of why it failed: the rule and the value that broke
 *   it, which mmp_pt_reason() and mmp_pt_why() give
 *   (include/mmport/pt_reason.h).
 * - Writers are serialised by the caller (one writer per table at a time),
 *   except for shared calls on a table created with MMP_PT_SHARED (many
 *   at once, between exclusive ones: see there and struct mmp_pt_call).
 *   Lookups and walks may run concurrently with a writer: every descriptor
 *   is written with one aligned atomic store, so a reader sees the old
 *   entry, the new one, or (inside a break-before-make window) an invalid
 *   one; never a torn descriptor.
 * - Table memory and TLB invalidation go through the caller's mmp_pt_ops.
 * - Corrupted tables (a descriptor written by a bug or a stray DMA): every
 *   call checks each descriptor it follows and each one it would read or
 *   change against the format's rules, and returns -EIO (nothing changed)
 *   at one the format reserves or the hardware would reject (x86 PS in a
 *   PML4E/PML5E, reserved address bits of a leaf; an arm64 block at a
 *   level without blocks, bits[1:0] 0b01 at level 3; an EPT
 *   misconfiguration), at a table entry that leads back to the root or to
 *   a table on its own path, and where a walk would enter more tables than
 *   the table owns (pages linked twice). No call loops or frees a page
 *   twice on such tables; a page linked twice is freed once, when the
 *   first link to it goes (the other then points at a freed page: the
 *   library cannot see every link without a walk of the whole table).
 * - Calls on storage that holds no live table (never initialised, or
 *   after mmp_pt_fini) return -EINVAL (functions without an error: 0 or
 *   nothing).
 *
 * Addresses: "va" is the input address of the table (a VA for stage 1 and
 * x86-64, an IPA for arm64 stage 2); "pa" the output address.
 */
#ifndef MMPORT_PT_H
#define MMPORT_PT_H

#include <mmport/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Descriptor format of a table. */
enum mmp_pt_format {
    MMP_PT_X86_64 = 1,   /**< x86-64 4-level (48-bit VA) or 5-level (LA57, 57-bit VA) */
    MMP_PT_ARM64_S1 = 2, /**< arm64 stage 1 (EL1&0 or EL2 regime), TTBRn_ELx */
    MMP_PT_ARM64_S2 = 3, /**< arm64 stage 2 (VTTBR_EL2), input = IPA */
    /**
     * Intel EPT (SDM vol. 3C 29.3), input = guest-physical address; 4-level
     * (va_bits 48, EPTP page-walk length 4) or 5-level (va_bits 57, length
     * 5). Leaves need MMP_PROT_READ (or MMP_PT_EPT_XO for execute-only);
     * USER and GLOBAL are rejected; user-mode execute (MMP_PROT_UEXEC)
     * with MMP_PT_EPT_MBEC. Memory types: WB (guest PAT honoured),
     * NORMAL_NC (EPT UC, guest PAT honoured), DEVICE (UC, ignore-PAT),
     * WC / WT / WP (ignore-PAT). See docs/pagetables.md.
     */
    MMP_PT_X86_EPT = 4,
    /**
     * AMD nested paging (APM vol. 2 15.25): the x86-64 layout, input =
     * guest-physical address (va_bits 48 or 57, no canonical form). U is set
     * in every entry (nested accesses are user accesses); MMP_PROT_USER and
     * MMP_PROT_GLOBAL are rejected. Memory types as x86-64 (host PAT).
     */
    MMP_PT_X86_NPT = 5,
};

/** Create-time flags (mmp_pt_config::flags). */
enum mmp_pt_config_flag {
    MMP_PT_NO_BLOCKS = 1u << 0, /**< never use block (huge/large) leaves */
    MMP_PT_NO_CONT = 1u << 1,   /**< never set the arm64 contiguous bit */
    MMP_PT_NO_FOLD = 1u << 2,   /**< do not fold runs completed across calls */
    /**
     * When more than mmp_pt_config::flush_ranges disjoint ranges are
     * pending, issue one MMP_FLUSH_ALL instead of one flush of the range
     * covering them all (the default).
     */
    MMP_PT_FLUSH_ALL_OVER = 1u << 3,
    /**
     * Keep tables that an unmap leaves empty (linked, for the next map),
     * as kernels keep vmalloc-area tables; without it they are freed.
     * mmp_pt_fini frees them all.
     */
    MMP_PT_KEEP_TABLES = 1u << 4,
    /**
     * arm64 stage 1 for the single-range EL2 regime (HCR_EL2.E2H = 0) or
     * EL3: AP[1] is RES1, one XN bit (54), no nG; MMP_PROT_USER and
     * MMP_PROT_GLOBAL are rejected (-EINVAL). Without it the layout is the
     * EL1&0 / EL2&0 (VHE) one. -EINVAL for other formats.
     */
    MMP_PT_EL2 = 1u << 5,
    /**
     * EPT: the CPU allows execute-only translations (IA32_VMX_EPT_VPID_CAP
     * bit 0): MMP_PROT_EXEC alone is accepted. Without it such a leaf would
     * be an EPT misconfiguration and is rejected (-EINVAL).
     */
    MMP_PT_EPT_XO = 1u << 8,
    /**
     * EPT: accessed/dirty flags enabled (EPTP bit 6, which mmp_pt_regs()
     * then sets): entries get A (bit 8) and writable leaves D (bit 9) preset.
     */
    MMP_PT_EPT_AD = 1u << 9,
    /**
     * EPT: mode-based execute control (Intel SDM vol. 3C 29.3.2; the CPU
     * has it when IA32_VMX_PROCBASED_CTLS2 allows bit 22). Execute is then
     * split by the mode of the guest's linear address: MMP_PROT_EXEC sets
     * bit 2, execute for supervisor-mode addresses, MMP_PROT_UEXEC bit 10,
     * execute for user-mode addresses; any combination, e.g. UEXEC without
     * EXEC for "user code runs, the guest kernel may not execute it".
     * Tables allow both. A leaf without MMP_PROT_READ that executes in
     * either mode is execute-only and needs MMP_PT_EPT_XO too. The
     * hypervisor sets the secondary processor-based VM-execution control
     * bit 22 "mode-based execute control for EPT" (EPTP has no bit for
     * it; mmp_pt_info() reports MMP_PT_FEAT_EPT_MBEC); without it the CPU
     * ignores bit 10 and bit 2 alone grants execute in both modes.
     */
    MMP_PT_EPT_MBEC = 1u << 10,
    /**
     * arm64 stage 2 for HCR_EL2.FWB = 1 (FEAT_S2FWB, Arm ARM D8.6.6):
     * MemAttr[2:0] 0b110 forces Normal write-back whatever stage 1 says,
     * 0b101 Normal non-cacheable, 0b001 Device-nGnRE, so a guest running
     * with its caches off still sees cached data and newly mapped memory
     * needs no clean to the point of coherency (mmp_pt_info::maint). The
     * hypervisor sets HCR_EL2.FWB (bit 46, mmp_pt_info::hcr_set); VTCR_EL2
     * has no FWB bit. -EINVAL for other formats.
     */
    MMP_PT_S2FWB = 1u << 12,
    /**
     * arm64: the caller declares that every CPU that walks the table
     * implements FEAT_BBM level 2 (ID_AA64MMFR2_EL1.BBM = 2) and raises no
     * TLB conflict abort when only the size of a translation changes (what
     * Linux gates with system_supports_bbml2_noabort(): an allow-list of
     * cores, since the level alone does not promise it). A change of block
     * size alone - a block split into a table of its own translations, a
     * contiguous run unmade or made, a table folded into a block - is then
     * written in place and flushed (Arm ARM D8.16, "Support levels for
     * changing block size"): a one-page protect or unmap inside a block
     * links the split table first, flushes, then changes the one entry, and
     * no other address of the block is ever unmapped. Without it such a
     * change breaks (invalid, flush, write) the one block or contiguous run
     * being split. A change of size together with the output address or
     * attributes breaks either way, and so does every change of size or
     * contiguity of a table with MMP_PT_TRACK_HW (until the flush the MMU
     * may record an access through the old block or run in an entry that
     * no longer stands for it: the break keeps that state exact,
     * include/mmport/track.h). -EINVAL for the x86 formats.
     */
    MMP_PT_BBML2 = 1u << 13,
    /**
     * x86-64 and NPT: every change of page size breaks first (not present,
     * flush, then the new entry), for AMD family 10h processors (erratum
     * 383, Revision Guide for AMD Family 10h Processors, 41322: a page-size
     * change of a valid entry can leave two TLB entries for one address and
     * an L1 TLB multimatch machine check; the workaround is to change page
     * sizes only after the entry was invalidated and flushed). A split then
     * takes the block being split away until its flush, as arm64 without
     * MMP_PT_BBML2 does. Without it a size-only change is one store (Intel
     * SDM vol. 3A 4.10.2.3 allows either size to be used until the flush),
     * as Linux's own page-attribute splits do. -EINVAL for other formats.
     */
    MMP_PT_X86_SIZE_BBM = 1u << 14,
    /**
     * Hardware dirty and access tracking (include/mmport/track.h): leaves
     * are mapped with the state the MMU updates left clear or clean - x86
     * and NPT A and D clear; EPT A and D clear (needs MMP_PT_EPT_AD, else
     * -EINVAL); arm64 AF clear (the CPU must run with TCR/VTCR.HA) and
     * writable leaves as DBM (bit 51) with write permission off, "clean
     * writable" (TCR/VTCR.HD; mmp_pt_regs() sets HA and HD and
     * mmp_pt_info() reports MMP_PT_FEAT_HAFDBS). Without it tracking is
     * done in software (write-protect, mmp_pt_dirty_fault()).
     */
    MMP_PT_TRACK_HW = 1u << 11,
    /**
     * The table may take shared calls besides exclusive ones (struct
     * mmp_pt_call): a shared call (MMP_CALL_SHARED) runs concurrently
     * with other shared calls and with lookups, from any number of
     * threads (the second-stage fault path of a VM with many vCPUs, as
     * KVM's shared walks under the read side of its mmu_lock); an
     * exclusive call (MMP_CALL_EXCLUSIVE) is any operation over any
     * range, lazy sections and track start / stop included, while no
     * other writer runs (under the write side); harvests and young scans
     * may run on either side (include/mmport/track.h). The caller keeps
     * them apart:
     * no exclusive call while a shared call is running (the library does
     * not detect it). Without a struct mmp_pt_call (mmp_pt_map() and the
     * other plain calls) a call on such a table is a shared call.
     *
     * A shared call changes ONE leaf slot: size is a leaf size of the
     * table (the granule, or a block size) and va (and pa) are aligned to
     * it; other ranges give -ENOTSUP. Every entry change is a compare-and-
     * swap; a change that needs break-before-make first swaps the entry to
     * a LOCKED invalid value (a software bit of the format), does barrier
     * and flush, then stores the new entry. Conflicts:
     * - a call that meets a locked entry, or loses a race it cannot
     *   resolve within a few retries, returns -EAGAIN with nothing changed
     *   (the caller re-faults, as KVM returns -EAGAIN to the vCPU);
     * - two maps of the same slot: one wins, the other returns -EEXIST
     *   (as any map over a mapping does);
     * - a lost race to install a table is resolved inside the call (the
     *   loser gives its table back and uses the winner's).
     * A failed call (-EAGAIN, -EEXIST, -ENOMEM, ...) changed no entry and
     * keeps no table page; calls are linearisable. A shared map of a
     * block over a table replaces it only if the table is empty (else
     * -ENOTSUP: an exclusive call collapses it); a shared unmap that
     * leaves a table empty unlinks it (unless MMP_PT_KEEP_TABLES), its
     * entries frozen first so that a writer that reached it fails and
     * retries. Table pages unlinked by any call on such a table (shared or
     * exclusive: lookups may be inside them) go to mmp_pt_ops::retire_table,
     * or, where that is NULL, to the built-in epoch scheme of the hosted
     * build (freed once no lookup or shared call that may be inside is
     * running; mmp_pt_reclaim() waits for that). Each shared call flushes
     * what it changed before it returns, and a shared call while a lazy
     * section is open on the table returns -EBUSY (leave it before the
     * write lock is released). mmp_pt_walk() restarts at an entry being
     * changed; mmp_pt_usage() and mmp_pt_dump() want a quiescent table.
     * The ops hooks are called from any writer thread at once. Without a
     * retire hook in a freestanding build, mmp_pt_init() returns -EINVAL.
     */
    MMP_PT_SHARED = 1u << 16,
    /**
     * For benchmarks and tests only: run the update engine's instance that
     * reads the paging depth from the table at every level, instead of the
     * one compiled for the table's depth (chosen by default). Results are
     * identical; calls cost a few percent more. `mmport bench map --depth`
     * measures that difference with it; nothing else needs it.
     */
    MMP_PT_GENERIC_DEPTH = 1u << 17,
    /**
     * The caller's TLB flushes only whole contexts (an arm64 VMM that uses
     * TLBI VMALLS12E1IS): every tlb_flush call is MMP_FLUSH_ALL, and what a
     * call or a lazy section defers goes out as one, whatever ranges were
     * changed - the number of calls is what costs. Break-before-make still
     * flushes at once where the format needs it. Always on for EPT (INVEPT
     * has no by-address form) and NPT (the ASID's flush, TLB_CONTROL), given
     * or not.
     */
    MMP_PT_FLUSH_CONTEXT = 1u << 18,
};

/** What a table looks like; fixed at creation. */
struct mmp_pt_config {
    enum mmp_pt_format format;
    /** Translation granule in bytes: x86-64 4096; arm64 4096, 16384 or 65536. */
    uint32_t granule;
    /**
     * Input-address bits. x86-64: 48 (4-level) or 57 (5-level). arm64 stage 1:
     * 25..48 (T0SZ = 64 - va_bits), of which the engine supports those that
     * need at least two levels: 4K 25..48, 16K 26..48, 64K 30..48 (16K 25
     * and 64K 25..29 give -ENOTSUP); up to 52 with 4K/16K and pa_bits = 52
     * (FEAT_LPA2; 4K above 48 starts at level -1) and with 64K (FEAT_LVA,
     * any pa_bits). Stage 2: the IPA size, 32..48, every granule; up to 52
     * with pa_bits = 52 (the IPA may not be wider than the PA); the
     * starting level and root concatenation follow VTCR_EL2 rules (64K
     * with IPA 32/33 starts at level 2 with an 8/16-entry root; 4K with a
     * 49..52-bit IPA at level 0 with 2..16 concatenated tables, Arm ARM
     * D8.2.8.2 table D8-21, as KVM does, never at level -1).
     */
    uint32_t va_bits;
    /**
     * Output-address bits; 0 = the format's maximum (52 x86-64, 48 arm64).
     * arm64: 32..48, or 52, which selects the 52-bit descriptor layouts
     * (Arm ARM D8.3.1): FEAT_LPA2 for 4K and 16K (TCR_ELx.DS /
     * VTCR_EL2.DS = 1: OA[51:50] in descriptor bits 9:8, shareability from
     * TCR/VTCR SH0; 4K level-0 512 GiB and 16K level-1 64 GiB blocks) and
     * FEAT_LPA for 64K (OA[51:48] in bits 15:12; 4 TiB level-1 blocks).
     * Other values: -EINVAL.
     */
    uint32_t pa_bits;
    uint32_t flags; /**< enum mmp_pt_config_flag */
    /**
     * Most disjoint flush ranges kept pending before they are merged into
     * one covering range (or a full flush, MMP_PT_FLUSH_ALL_OVER);
     * 0 = the default, 4; at most 8.
     */
    uint32_t flush_ranges;
    /**
     * Largest leaf the table uses, in bytes: 0 = no limit; otherwise a
     * power of two >= the granule (else -EINVAL). Blocks larger than it
     * are not used, nor contiguous runs whose total size is larger (16 x
     * 2 MiB = 32 MiB counts as larger than a 2 MiB limit: one TLB entry
     * would cover it). E.g. 2 MiB for a vCPU model with 2 MiB but no 1 GiB
     * pages (QEMU's qemu64), where MMP_PT_NO_BLOCKS would drop both.
     */
    uint64_t max_leaf;
    /**
     * Flush ceiling: the most invalidations one ranged tlb_flush call may
     * stand for - its size divided by its stride (MMP_FLUSH_STRIDE(), or
     * the granule where the flush gives none), i.e. pages for a flush of
     * pages. A range beyond it, whether one call's, a pending one in a
     * lazy section, or one covering several (flush_ranges), goes out as
     * one MMP_FLUSH_ALL: a hook that invalidates step by step would take
     * longer than flushing everything (Linux: x86
     * tlb_single_page_flush_ceiling, 33; arm64 MAX_TLBI_OPS, one table's
     * entries). 0 = the default: 33 for x86-64, EPT and NPT; granule / 8
     * for arm64 (512, 2048 or 8192: one table's entries). Any other value
     * is taken as given.
     */
    uint32_t flush_ceiling;
};

/** Permissions (low bits of an attribute word). */
#define MMP_PROT_READ 0x1u   /**< read; every leaf needs it (EPT: or MMP_PT_EPT_XO) */
#define MMP_PROT_WRITE 0x2u  /**< requires MMP_PROT_READ */
#define MMP_PROT_EXEC 0x4u   /**< execute (EPT with MMP_PT_EPT_MBEC: supervisor-mode) */
#define MMP_PROT_USER 0x8u   /**< EL0 / CPL3 access (stage 1 and x86-64 only) */
#define MMP_PROT_GLOBAL 0x10u /**< x86 G bit; arm64 stage 1: nG clear */
#define MMP_PROT_MASK 0x1fu /**< the permission bits every format knows */
/**
 * Execute for user-mode (CPL 3) guest linear addresses: EPT tables made
 * with MMP_PT_EPT_MBEC only (bit 10), where MMP_PROT_EXEC then means
 * supervisor-mode execute. Outside MMP_PROT_MASK; other tables: -EINVAL.
 */
#define MMP_PROT_UEXEC 0x20u

/** Memory type (bits 8..11 of an attribute word). */
#define MMP_MEM_NORMAL_WB 0x000u /**< normal write-back cacheable (default) */
#define MMP_MEM_NORMAL_NC 0x100u /**< normal non-cacheable (x86: UC-; arm64 Normal-NC) */
#define MMP_MEM_DEVICE 0x200u    /**< device nGnRE (x86: UC) */
#define MMP_MEM_WC 0x300u /**< write-combining (EPT only; other formats: -EINVAL) */
#define MMP_MEM_WT 0x400u /**< write-through (EPT only; other formats: -EINVAL) */
#define MMP_MEM_WP 0x500u /**< write-protected (EPT only; other formats: -EINVAL) */
#define MMP_MEM_MASK 0xf00u /**< the memory-type field */

#define MMP_SW_SHIFT 16 /**< bit position of MMP_SW(0) in an attribute word */
#define MMP_SW_MASK 0xff0000u /**< the software bits of an attribute word */
/**
 * Software bit k (0..7; bits 16..23 of an attribute word): the caller's
 * bit k, kept in a descriptor bit the hardware ignores in a leaf
 * and mmport uses for nothing else - for the hypervisor's own state of a
 * page (Xen's p2m types, pKVM's ownership states). k < the format's count:
 * - x86-64 and NPT: 8, descriptor bits 9, 10, 52, 53, 54, 55, 56, 57
 *   (MMP_SW(0) is bit 9, ..., MMP_SW(7) bit 57);
 * - EPT: 7, bits 52, 53, 54, 55, 56, 59, 62 (those ignored whatever the
 *   VM-execution controls enable);
 * - arm64 stage 1 and stage 2: 2, bits 56 and 57 (of [58:55], reserved
 *   for software; mmport uses 55 and 58).
 * A bit beyond the count: -EINVAL (MMP_PT_RULE_SW_BITS). mmp_pt_map()
 * sets them in every leaf it writes, splits and folds keep them (leaves
 * with different bits never fold together), mmp_pt_protect() keeps each
 * leaf's bits unless MMP_SW_SET is given, and mmp_pt_lookup() and
 * mmp_pt_walk() report them in mmp_pt_leaf::attrs.
 */
#define MMP_SW(k) (1u << (MMP_SW_SHIFT + (k)))
/** mmp_pt_protect(): set the leaves' software bits to those of attrs
 * (without it each leaf keeps its own). Ignored by mmp_pt_map(). */
#define MMP_SW_SET 0x1000000u

/** Per-call flags of mmp_pt_map(). */
enum mmp_pt_map_flag {
    /** replace existing mappings instead of -EEXIST; where a leaf of any
     * size (block, contiguous run, page) already translates as asked,
     * it stays as it is (no store, no flush; a block is not split; the
     * accessed / dirty state the MMU recorded in it is kept, and a leaf
     * the MMU wrote still counts as writable, not as read-only); a
     * region the replace completes is folded as by any map */
    MMP_MAP_REPLACE = 1u << 0,
    MMP_MAP_NO_BLOCK = 1u << 1, /**< this call uses no block leaves */
    MMP_MAP_NO_CONT = 1u << 2,  /**< this call sets no contiguous bit */
};

/**
 * tlb_flush hints (the flags argument). Besides these bits, flags carries
 * the stride of the changed entries (MMP_FLUSH_STRIDE()).
 */
enum mmp_pt_flush_flag {
    /** Only leaf entries changed (no table entry changed or unlinked):
     * walk caches need no invalidation (arm64 TLBI VALE / IPAS2LE). */
    MMP_FLUSH_LEAF = 1u << 0,
    /**
     * Flush the whole address space of the table; va and size are 0 and
     * ignored. Sent instead of a range for any flush of more than
     * mmp_pt_config::flush_ceiling invalidations, and for every range
     * pending when more than flush_ranges were and MMP_PT_FLUSH_ALL_OVER
     * is set. Only MMP_FLUSH_GLOBAL may accompany it.
     */
    MMP_FLUSH_ALL = 1u << 1,
    /**
     * Global translations may be among those flushed (x86-64 G bit,
     * arm64 stage 1 nG clear): a flush by PCID/ASID alone, or an x86 CR3
     * reload, does not drop them (Intel SDM vol. 3A 4.10.4.1: toggle
     * CR4.PGE or INVPCID type 2; arm64: TLBI VAAE1 / VMALLE1 rather than
     * the by-ASID forms). Set on every flush of a table once a map or
     * protect with MMP_PROT_GLOBAL has been called on it (a superset: the
     * library does not track which addresses still hold global leaves).
     * Never set for stage 2, EPT, NPT or MMP_PT_EL2 tables.
     */
    MMP_FLUSH_GLOBAL = 1u << 2,
};

/** Bit position of the stride field in tlb_flush flags (bits 8..13). */
#define MMP_FLUSH_STRIDE_SHIFT 8
/** The stride field in tlb_flush flags. */
#define MMP_FLUSH_STRIDE_MASK 0x3f00u
/**
 * Stride of a tlb_flush call: log2 of the size every changed entry in
 * the range maps (12 for 4 KiB pages, 21 for 2 MiB blocks, ...), or 0
 * when it is not uniform or not known. Given only with MMP_FLUSH_LEAF:
 * every translation that changed is then a leaf of exactly that size
 * (contiguous-bit runs count by their entries), so one invalidation per
 * stride step covers the range (x86 INVLPG per 2 MiB, arm64 range TLBI
 * with that stride), and it gives the arm64 level hint of the TLBI
 * instructions (FEAT_TTL, the TTL field): the leaf level is
 * 3 - (stride - g) / (g - 3) for a granule of 2^g bytes.
 */
#define MMP_FLUSH_STRIDE(flags) (((flags) >> MMP_FLUSH_STRIDE_SHIFT) & 0x3fu)

/** Hooks supplied by the hypervisor. */
struct mmp_pt_ops {
    /**
     * Allocate one table page of @p bytes (the granule, or the concatenated
     * stage-2 root), aligned to its size. Return its address in the
     * caller's mapping and its physical address in *pa; NULL on failure.
     * The memory need not be zeroed. A table whose physical address is not
     * aligned to its size is given back with free_table and the call that
     * asked for it fails with -EINVAL, changing nothing. mmp_pt_track_stop()
     * also asks for a few pages of the granule's size as scratch (its list
     * of folded tables), given back to free_table before it returns.
     */
    void *(*alloc_table)(void *ctx, size_t bytes, uint64_t *pa);
    /** Give back a table page from alloc_table. */
    void (*free_table)(void *ctx, void *va, uint64_t pa, size_t bytes);
    /** Address through which the caller reaches the table at @p pa; NULL = identity. */
    void *(*phys_to_virt)(void *ctx, uint64_t pa);
    /**
     * Invalidate TLB entries for [va, va+size) (enum mmp_pt_flush_flag:
     * MMP_FLUSH_ALL for everything, MMP_FLUSH_LEAF, MMP_FLUSH_GLOBAL, and
     * the stride MMP_FLUSH_STRIDE(flags)). Called after the entries were
     * changed (after being made invalid, for break-before-make) and before
     * any new entry for the range is written; a ranged call never stands
     * for more than mmp_pt_config::flush_ceiling invalidations. Must
     * return with the invalidation complete (arm64: TLBI; DSB ISH). May be
     * NULL (no-op).
     */
    void (*tlb_flush)(void *ctx, uint64_t va, uint64_t size, unsigned flags);
    void *ctx; /**< passed as the first argument of every hook */
    /**
     * MMP_PT_SHARED tables: a table page a call unlinked (and flushed).
     * Lookups and shared calls that started before may still be reading
     * it: give it to free_table (or reuse it) only after they have
     * ended, e.g. with call_rcu() when every lookup, shared call and
     * mmp_pt_dirty_fault() / mmp_pt_young_fault() runs inside
     * rcu_read_lock(). NULL: the built-in epoch scheme (hosted
     * build), which brackets those calls itself. Unused by other tables.
     */
    void (*retire_table)(void *ctx, void *va, uint64_t pa, size_t bytes);
    /**
     * Clean and invalidate [pa, pa+size) of the data caches to the point
     * of coherency (arm64: DC CIVAC per line, then DSB ISH), and return
     * with it complete. Called only for tables whose mmp_pt_info::maint
     * has MMP_PT_MAINT_DCACHE_CLEAN (arm64 stage 2 without MMP_PT_S2FWB),
     * by mmp_pt_map() for MMP_MEM_NORMAL_WB mappings: once per call, for
     * the call's whole output range (one range, whatever leaves it is
     * built from), after the call can no longer fail and BEFORE its first
     * descriptor store (MMP_PT_SHARED: before its publication; see
     * mmp_pt_map() for the one way it can still fail). The order is that of the maintenance to its use:
     * a guest with its caches off makes non-cacheable accesses, which
     * bypass dirty lines the hypervisor left (Arm ARM D8.6.5.1), and it
     * may access the memory as soon as a vCPU's walk sees the new
     * descriptor; a clean completed before the store (its DSB orders it
     * before the store: Arm ARM, "Ordering and completion of data and
     * instruction cache instructions") leaves no such window. KVM orders it the same way. Lazy sections do not defer
     * it (they defer flushes of translations the caller accepted as
     * stale, never memory contents). NULL: the caller does it itself.
     */
    void (*dcache_clean_poc)(void *ctx, uint64_t pa, uint64_t size);
    /**
     * Invalidate [pa, pa+size) of the instruction caches to the point of
     * unification (arm64: IC IVAU per line, DSB ISH, unless CTR_EL0.DIC
     * is 1), and return with it complete. Called only for tables whose
     * mmp_pt_info::maint has MMP_PT_MAINT_ICACHE_INVAL (arm64 stage 2,
     * FWB or not), by mmp_pt_map() for mappings with MMP_PROT_EXEC, once
     * per call like dcache_clean_poc and after it. With MMP_PT_S2FWB no
     * clean comes first: where CTR_EL0.IDC is 0 the hook cleans the data
     * cache to the point of unification (DC CVAU, DSB ISH) before it
     * invalidates. mmp_pt_protect() with MMP_PROT_EXEC calls it too,
     * before any entry changes, once per output range (coalesced) of the
     * leaves in its range that were not executable. NULL: the caller
     * does it itself.
     */
    void (*icache_inval_pou)(void *ctx, uint64_t pa, uint64_t size);
};

/** One leaf translation, as lookup and walk report it. */
struct mmp_pt_leaf {
    uint64_t va;   /**< input address of the leaf's start */
    uint64_t pa;   /**< output address of the leaf's start */
    uint64_t size; /**< bytes the leaf maps (granule or block size) */
    uint32_t attrs; /**< MMP_PROT_* | MMP_MEM_* | MMP_SW(k) */
    uint8_t level;  /**< architectural level of the leaf (x86: 1 = PT .. 5 = PML5) */
    uint8_t kind;   /**< enum mmp_pt_leaf_kind */
    uint64_t desc;  /**< the raw descriptor */
};

/** What a leaf is (mmp_pt_leaf::kind). */
enum mmp_pt_leaf_kind {
    MMP_LEAF_PAGE = 0,  /**< last-level page */
    MMP_LEAF_BLOCK = 1, /**< block / huge page */
    MMP_LEAF_CONT = 2,  /**< page or block inside a contiguous-bit run */
};

/** Counters kept per table. Shared calls (MMP_PT_SHARED) count only in
 * table_pages, flushes and bbm, not in the per-entry ones
 * (entries_written, barriers, ranges_coalesced): a shared counter written
 * by every fault would be the first thing to stop them scaling. Exclusive
 * calls count in all. */
struct mmp_pt_stats {
    uint64_t entries_written;   /**< descriptor stores */
    uint64_t barriers;          /**< barriers emitted (arm64 dsb ishst; isb) */
    uint64_t barriers_deferred; /**< barriers recorded as pending in lazy mode */
    uint64_t flushes;           /**< tlb_flush calls */
    uint64_t ranges_coalesced;  /**< flush ranges merged into another */
    uint64_t table_pages;       /**< table pages in use now (root included, in granules) */
    uint64_t bbm;               /**< break-before-make sequences (each: barrier + flush) */
    /** flushes issued at once by a split-first (the block's own translations
     *  linked, flushed before entries inside it change; x86) */
    uint64_t split_flushes;
};

/**
 * A page table. The caller owns the storage (embed it in a VM structure);
 * its contents are private. mmp_pt_create() allocates one for hosted use.
 * It may hold anything before mmp_pt_init (zeroed or stack garbage: init
 * tells a live table from garbage by a 64-bit state keyed to the
 * storage's own address). A live table must not be moved or copied: a
 * copy is no live table (-EINVAL). Storage of a table abandoned without
 * mmp_pt_fini is still a live table to init (-EBUSY): zero it to reuse it.
 * Besides the table it holds the reason of the last failed call (and
 * after a failed mmp_pt_init, that init's: mmp_pt_reason()).
 */
struct mmp_pt {
    uint64_t opaque[96]; /**< private state; no field of it is API */
};

/**
 * Initialise @p pt and allocate its root table.
 * @p ops NULL means the built-in allocator (hosted builds only: heap pages,
 * pa == va, no-op flush); a freestanding build returns -EINVAL for NULL.
 * Errors: -EINVAL (NULL pt/cfg, unknown format or config flag, an EPT
 * flag on another format, MMP_PT_BBML2 on an x86 format,
 * MMP_PT_X86_SIZE_BBM on EPT or arm64, bad granule, va_bits or pa_bits out of the
 * format's range or a 52-bit combination the architecture lacks,
 * flush_ranges > 8, max_leaf not a power of two >= the granule, ops
 * without alloc_table/free_table); -ENOTSUP (granule and level
 * combination the format lacks); -ENOMEM (root
 * allocation failed); -EBUSY (@p pt is a live table: mmp_pt_fini it
 * first; initialising it again would leak every page of it).
 * On failure @p pt holds no table but the reason (mmp_pt_reason(); for
 * -EBUSY, in the live table); mmp_pt_config_check() gives the same
 * reason without storage.
 */
MMP_API int mmp_pt_init(struct mmp_pt *pt, const struct mmp_pt_config *cfg,
                        const struct mmp_pt_ops *ops);

/** Free every table page of @p pt. The table must not be in use by an MMU
 * (nor by another thread). A MMP_PT_SHARED table first waits for its
 * retired pages as mmp_pt_reclaim() does. Does nothing for storage that
 * holds no live table (finished already, never initialised). In a
 * corrupted table it frees each page it reaches once, and leaks what a
 * corrupted descriptor hides. */
MMP_API void mmp_pt_fini(struct mmp_pt *pt);

/**
 * MMP_PT_SHARED tables with the built-in epoch scheme: wait until every
 * lookup and shared call running on any table when it was called has
 * ended, then free the table pages such calls retired. Must not be called
 * by a thread inside such a call (a tlb_flush hook). Does nothing for
 * other tables or with mmp_pt_ops::retire_table.
 * Errors: -EINVAL (NULL or uninitialised table).
 */
MMP_API int mmp_pt_reclaim(struct mmp_pt *pt);

/** mmp_pt_init() on heap storage. Errors as init; -ENOMEM; -ENOSYS in a
 * freestanding build (no heap: embed struct mmp_pt and call mmp_pt_init).
 * A failed create keeps no storage: mmp_pt_config_check() tells why. */
MMP_API int mmp_pt_create(struct mmp_pt **pt, const struct mmp_pt_config *cfg,
                          const struct mmp_pt_ops *ops);
/** mmp_pt_fini() and free the storage from mmp_pt_create(). NULL is a no-op. */
MMP_API void mmp_pt_destroy(struct mmp_pt *pt);

/**
 * Map [va, va+size) to [pa, pa+size) with @p attrs (MMP_PROT_* | MMP_MEM_*),
 * using the largest leaves alignment allows (block, contiguous run, page);
 * a run or block-sized region it completes together with earlier calls'
 * mappings is folded (unless MMP_PT_NO_FOLD). Where the table needs cache
 * maintenance (mmp_pt_info::maint), the ops hooks dcache_clean_poc and
 * icache_inval_pou are called for [pa, pa+size) before the first entry
 * is written; a call that fails calls neither (a shared call calls
 * them just before its publication, the first store a walk can see: one
 * that then loses it to another writer and fails - -EEXIST, -EAGAIN, or
 * any error of its walk again - may have called them, for nothing but
 * time). Every format needs
 * MMP_PROT_READ; stage 2 and MMP_PT_EL2 reject USER and GLOBAL.
 * Errors: -EINVAL (va, pa or size not granule-aligned, size 0, unknown attrs
 * or flags, WRITE without READ, attrs the format cannot express); -EOVERFLOW (va+size or pa+size wraps);
 * -ERANGE (beyond va_bits / non-canonical x86 address, or beyond pa_bits);
 * -EEXIST (something is mapped in the range and MMP_MAP_REPLACE is not
 * given; a shared call also: another thread mapped it first);
 * -ENOMEM (a table allocation failed); -ENOTSUP (a shared call, the
 * default on a MMP_PT_SHARED table: the range is not one leaf slot, or
 * it is a block-sized slot over a table that holds entries); -EAGAIN (a
 * shared call: an entry on the way is being changed by another writer;
 * nothing changed, retry); -EIO
 * (the table is corrupted: an entry on the way, or one the call would
 * replace, is reserved, or a table entry makes a cycle; nothing changed).
 */
MMP_API int mmp_pt_map(struct mmp_pt *pt, uint64_t va, uint64_t pa, uint64_t size,
                       uint32_t attrs, uint32_t flags);

/**
 * Unmap [va, va+size); blocks and contiguous runs that straddle the ends
 * are split so the rest stays mapped. Holes inside the range are skipped.
 * Tables left empty are freed after the flush that covers them (kept
 * linked with MMP_PT_KEEP_TABLES). The data pages the call unmapped may be
 * reused or freed once the call has returned, outside a lazy section; in
 * one, once mmp_lazy_leave() (or mmp_lazy_flush()) has returned - until
 * the flush, a TLB may still translate to them (include/mmport/lazy.h).
 * Errors: -EINVAL, -EOVERFLOW, -ERANGE as for map; -ENOMEM (a split needed
 * a table and none could be allocated); -ENOTSUP, -EAGAIN (a shared
 * call) as for map; -EIO (the table is corrupted: an entry in the range
 * or on the way to it is reserved, or a table entry makes a cycle or
 * leads to the root; nothing changed).
 */
MMP_API int mmp_pt_unmap(struct mmp_pt *pt, uint64_t va, uint64_t size);

/**
 * Change the attributes of every mapping in [va, va+size), splitting
 * blocks and unfolding contiguous runs at the ends. Holes are skipped.
 * Software bits (MMP_SW()) stay as each leaf has them unless attrs has
 * MMP_SW_SET, which sets them to those of attrs.
 * Errors: as unmap, plus -EINVAL for unknown attrs; -EIO (an entry in the
 * range, or on the way to it, is reserved: nothing changed - every leaf
 * the call would change is read before the first store).
 */
MMP_API int mmp_pt_protect(struct mmp_pt *pt, uint64_t va, uint64_t size, uint32_t attrs);

/** Kind of a call (mmp_pt_call::flags). */
enum mmp_pt_call_flag {
    /**
     * A shared call: one leaf slot, concurrent with other shared calls and
     * lookups (MMP_PT_SHARED). On a table made without MMP_PT_SHARED:
     * -EINVAL.
     */
    MMP_CALL_SHARED = 1u << 0,
    /**
     * An exclusive call: any range, any operation; no other writer may run
     * meanwhile. Every table takes them.
     */
    MMP_CALL_EXCLUSIVE = 1u << 1,
};

/** Most pages a struct mmp_pt_memcache holds. */
#define MMP_PT_MEMCACHE_PAGES 32

/** One table page held by a struct mmp_pt_memcache. */
struct mmp_pt_cache_page {
    void *va;    /**< the page in the caller's mapping (as alloc_table returns it) */
    uint64_t pa; /**< its physical address, aligned to the granule */
};

/**
 * Table pages a caller sets aside for its own calls (KVM's
 * kvm_mmu_memory_cache, Hafnium's mpool): a vCPU tops it up outside its
 * lock, with pages of the table's granule from the allocator it would
 * give mmp_pt_ops::alloc_table, then passes it to its fault-path calls,
 * which take pages from it and never call alloc_table. A call takes
 * pages from page[n - 1] downwards and lowers n; a call that fails
 * (-ENOMEM when the cache runs dry included) leaves it as it found it.
 * The pages a call took belong to the table from then on (free_table or
 * retire_table gives them back when they go). Owned by one caller at a
 * time: two calls running at once need two caches.
 */
struct mmp_pt_memcache {
    uint32_t n; /**< pages held: page[0 .. n); at most MMP_PT_MEMCACHE_PAGES */
    struct mmp_pt_cache_page page[MMP_PT_MEMCACHE_PAGES]; /**< the pages held */
};

/** How one map, unmap or protect runs (mmp_pt_map_call() and its siblings). */
struct mmp_pt_call {
    /**
     * enum mmp_pt_call_flag: MMP_CALL_SHARED or MMP_CALL_EXCLUSIVE (at most
     * one); neither = the table's default (shared on a table made with
     * MMP_PT_SHARED, else exclusive).
     */
    uint32_t flags;
    /**
     * Where the call's table pages come from: NULL = mmp_pt_ops::alloc_table;
     * else only this cache (-ENOMEM with nothing changed when it holds
     * too few; mmp_pt_call_pages() gives how many a call may need).
     */
    struct mmp_pt_memcache *mc;
};

/**
 * The most table pages one map, unmap or protect of @p size bytes can
 * take from a memcache or alloc_table on @p pt, whatever the range's
 * alignment and the table's contents: a new table per level for every
 * table-sized part of the range and its two ends, the splits at both ends
 * included. A single-slot call (a shared call, or any call of one leaf
 * size) takes at most mmp_pt_info::levels - 1 pages, the value for size
 * = the granule. 0 for storage that holds no live table or size 0.
 */
MMP_API uint64_t mmp_pt_call_pages(const struct mmp_pt *pt, uint64_t size);

/**
 * mmp_pt_map() as @p call says (NULL: as mmp_pt_map()).
 * Errors: those of mmp_pt_map(); -EINVAL also for unknown call flags or
 * both kinds at once, a shared call on a table made without
 * MMP_PT_SHARED, or a memcache with n > MMP_PT_MEMCACHE_PAGES or a page
 * of it not aligned to the granule (found when taken: nothing changed);
 * -EBUSY (a shared call while a lazy section is open on the table);
 * -ENOMEM also when the memcache holds fewer pages than the call needs
 * (nothing taken).
 */
MMP_API int mmp_pt_map_call(struct mmp_pt *pt, const struct mmp_pt_call *call, uint64_t va,
                            uint64_t pa, uint64_t size, uint32_t attrs, uint32_t flags);

/** mmp_pt_unmap() as @p call says. Errors: those of mmp_pt_unmap(), and
 * those mmp_pt_map_call() adds. */
MMP_API int mmp_pt_unmap_call(struct mmp_pt *pt, const struct mmp_pt_call *call, uint64_t va,
                              uint64_t size);

/** mmp_pt_protect() as @p call says. Errors: those of mmp_pt_protect(), and
 * those mmp_pt_map_call() adds. */
MMP_API int mmp_pt_protect_call(struct mmp_pt *pt, const struct mmp_pt_call *call, uint64_t va,
                                uint64_t size, uint32_t attrs);

/** The leaf translating @p va (any address inside a page). In a
 * MMP_PT_SHARED table it waits out an entry another thread holds locked
 * (one barrier + flush) and reports the translation after it.
 * Errors: -ENOENT (unmapped), -EINVAL (NULL argument, no live table),
 * -ERANGE (beyond va_bits, non-canonical), -EIO (a descriptor on the way
 * is reserved, or the walk meets a cycle: the table is corrupted). */
MMP_API int mmp_pt_lookup(const struct mmp_pt *pt, uint64_t va, struct mmp_pt_leaf *out);

/** Called for each leaf; a non-zero return stops the walk and is returned. */
typedef int (*mmp_pt_walk_fn)(void *arg, const struct mmp_pt_leaf *leaf);

/**
 * Visit every leaf overlapping [va, va+size) in address order.
 * Errors: -EINVAL, -EOVERFLOW, -ERANGE as for map; -EIO (corrupted table,
 * as mmp_pt_lookup; fn may have seen the leaves before the fault); else
 * fn's non-zero value.
 */
MMP_API int mmp_pt_walk(const struct mmp_pt *pt, uint64_t va, uint64_t size,
                        mmp_pt_walk_fn fn, void *arg);

/** What an entry is (mmp_pt_entry::kind). */
enum mmp_pt_entry_kind {
    MMP_ENTRY_LEAF = 0,  /**< a valid leaf: page or block, in a contiguous run or not */
    MMP_ENTRY_TABLE = 1, /**< a table entry, before the entries of its table */
    MMP_ENTRY_TABLE_POST = 2, /**< the same table entry again, after them */
    /**
     * An invalid entry that is not 0: one a shared call holds locked
     * (MMP_PT_SHARED), or bits a caller stored itself. Entries that are 0
     * are not reported.
     */
    MMP_ENTRY_INVALID = 3,
};

/** One descriptor, as mmp_pt_walk_entries() shows it. */
struct mmp_pt_entry {
    uint64_t va;   /**< input address where the entry's slot starts */
    uint64_t size; /**< bytes the slot spans (a leaf's size; a table's reach) */
    uint64_t desc; /**< the raw descriptor, as read */
    int8_t level;  /**< architectural level (arm64 -1..3, x86 5/4..1) */
    uint8_t kind;  /**< enum mmp_pt_entry_kind */
};

/** Called for each entry; a non-zero return stops the walk and is returned. */
typedef int (*mmp_pt_entry_fn)(void *arg, const struct mmp_pt_entry *e);

/**
 * Visit every non-zero descriptor whose slot overlaps [va, va+size), in
 * address order, table entries before (MMP_ENTRY_TABLE) and after
 * (MMP_ENTRY_TABLE_POST) the entries of their table, as KVM's page-table
 * walker visits them: for read-only inspection of what mmp_pt_walk()
 * leaves out (table entries, invalid entries with bits, the raw bits of
 * every leaf). Bounded like every walk: a corrupted table stops it with
 * -EIO. Wants no writer running meanwhile; on a MMP_PT_SHARED table it may
 * run beside shared calls (each entry is reported as it is when read).
 * Errors: -EINVAL, -EOVERFLOW, -ERANGE as for mmp_pt_walk(); -EIO (a
 * corrupted table; fn may have seen the entries before the fault); else
 * fn's non-zero value.
 */
MMP_API int mmp_pt_walk_entries(const struct mmp_pt *pt, uint64_t va, uint64_t size,
                                mmp_pt_entry_fn fn, void *arg);

/** Physical address of the root table (for CR3, TTBRn_ELx, VTTBR_EL2); 0
 * without a live table. */
MMP_API uint64_t mmp_pt_root(const struct mmp_pt *pt);

/** Values a hypervisor or kernel writes to use a table (mmp_pt_regs()). */
struct mmp_pt_regs {
    uint64_t root; /**< CR3 / nCR3 / EPTP / TTBR0_ELx / VTTBR_EL2 */
    uint64_t tcr;  /**< TCR_ELx (stage 1) or VTCR_EL2 (stage 2); 0 on x86 */
    uint64_t mair; /**< MAIR_ELx (arm64 stage 1); 0 otherwise */
};
/**
 * Fill @p out with the register values for @p pt. @p id is the ASID
 * (arm64 stage 1, TTBR bits 63:48), the VMID (stage 2, VTTBR bits 63:48)
 * or the PCID (x86-64 CR3 bits 11:0; 0 for EPT and NPT).
 * Errors: -EINVAL (NULL pt or out, table not initialised, id too wide).
 */
MMP_API int mmp_pt_regs(const struct mmp_pt *pt, uint16_t id, struct mmp_pt_regs *out);

/** Copy the counters of @p pt into *out (zeros without a live table). */
MMP_API void mmp_pt_stats(const struct mmp_pt *pt, struct mmp_pt_stats *out);

/** Geometry of a table, with the control-register values it assumes. */
struct mmp_pt_info {
    enum mmp_pt_format format;
    uint32_t granule;     /**< translation granule in bytes */
    /** Input- and output-address bits (pa_bits resolved: never 0). */
    uint32_t va_bits, pa_bits;
    uint32_t levels;      /**< levels walked */
    int32_t start_level;  /**< architectural level of the root (x86: 4 or 5) */
    uint32_t root_tables; /**< concatenated root tables (arm64 stage 2), else 1 */
    uint32_t root_bytes;  /**< size of the root allocation */
    uint32_t t0sz;        /**< arm64: TCR_ELx.T0SZ / VTCR_EL2.T0SZ = 64 - va_bits */
    uint32_t sl0;         /**< arm64 stage 2: VTCR_EL2.SL0 */
    uint64_t mair;        /**< arm64 stage 1: the MAIR_ELx the AttrIndx values assume */
    uint64_t block_sizes; /**< bit n set: a leaf of 2^n bytes exists (pages included) */
    uint64_t cont_sizes;  /**< bit n set: a contiguous run of 2^n bytes exists */
    /**
     * Cache maintenance newly mapped memory needs before the guest can use
     * it (enum mmp_pt_maint), as KVM's dcache_clean_inval_poc /
     * icache_inval_pou do: mmp_pt_map() asks the hooks
     * mmp_pt_ops::dcache_clean_poc / icache_inval_pou for it; where a hook
     * is NULL the caller owes it. Only arm64 stage 2 needs any.
     */
    uint32_t maint;
    /** CPU features the layout needs (enum mmp_pt_feature); 0 = none. */
    uint32_t features;
    /** arm64 stage 2: HCR_EL2 bits that must be set (FWB, bit 46, with MMP_PT_S2FWB). */
    uint64_t hcr_set;
    /** mmp_pt_config::max_leaf (0 = no limit). */
    uint64_t max_leaf;
};

/** mmp_pt_info::maint bits. */
enum mmp_pt_maint {
    /**
     * Clean and invalidate newly mapped Normal cacheable memory to the
     * point of coherency before the guest can use it: a guest running with
     * its stage-1 MMU or caches off reads memory, not the caches (Arm ARM
     * D8.6.5.1, stage 2 without FWB; not needed with MMP_PT_S2FWB).
     */
    MMP_PT_MAINT_DCACHE_CLEAN = 1u << 0,
    /**
     * Invalidate the instruction cache to the point of unification for
     * newly mapped executable memory (unless CTR_EL0.DIC = 1), with or
     * without FWB.
     */
    MMP_PT_MAINT_ICACHE_INVAL = 1u << 1,
};

/** mmp_pt_info::features bits: what the CPU must implement for the table. */
enum mmp_pt_feature {
    /** FEAT_LPA2: ID_AA64MMFR0_EL1.TGran4 = 0b0001 / TGran16 = 0b0010 (stage 2:
     * TGran4_2 / TGran16_2 = 0b0011) and PARange = 0b0110 (52 bits). */
    MMP_PT_FEAT_LPA2 = 1u << 0,
    /** FEAT_LPA: ID_AA64MMFR0_EL1.PARange = 0b0110 with the 64K granule. */
    MMP_PT_FEAT_LPA = 1u << 1,
    /** FEAT_LVA: ID_AA64MMFR2_EL1.VARange = 0b0001 (64K stage 1, va_bits > 48). */
    MMP_PT_FEAT_LVA = 1u << 2,
    /** FEAT_HAFDBS: ID_AA64MMFR1_EL1.HAFDBS = 0b0010 (hardware AF and dirty
     * state), for arm64 tables made with MMP_PT_TRACK_HW. */
    MMP_PT_FEAT_HAFDBS = 1u << 3,
    /** EPT mode-based execute control (MMP_PT_EPT_MBEC): the CPU allows bit
     * 22 of the secondary processor-based VM-execution controls
     * (IA32_VMX_PROCBASED_CTLS2 bit 54), and the hypervisor sets it. */
    MMP_PT_FEAT_EPT_MBEC = 1u << 4,
};

/** Describe @p pt. Errors: -EINVAL (NULL argument, no live table). */
MMP_API int mmp_pt_info(const struct mmp_pt *pt, struct mmp_pt_info *out);

/** What a walk of the whole table finds. */
struct mmp_pt_usage {
    uint64_t pages;        /**< last-level leaves */
    uint64_t blocks;       /**< block leaves */
    uint64_t cont_runs;    /**< contiguous-bit runs (each counted once) */
    uint64_t mapped_bytes; /**< bytes translated */
    uint64_t table_pages;  /**< table pages reachable from the root, root included */
    uint64_t empty_tables; /**< reachable non-root tables without a valid entry (0 normally) */
};

/** Count leaves and table pages by walking the whole table. Errors:
 * -EINVAL; -EIO (corrupted table, as mmp_pt_lookup; *out then holds
 * partial counts). */
MMP_API int mmp_pt_usage(const struct mmp_pt *pt, struct mmp_pt_usage *out);

/**
 * Text dump of [va, va+size): one line per region of consecutive leaves
 * that are contiguous in output address with identical attributes and
 * leaf kind, "va-range pa size kind attrs", then one totals line (pages,
 * contiguous runs, blocks, table pages) of the WHOLE table, as
 * mmp_pt_usage() counts them, not of the range dumped. Each line, without newline, goes
 * to @p out; a non-zero return from it stops the dump and is returned.
 * Works freestanding (no libc). Errors: as mmp_pt_walk() (-EIO also for
 * a corrupted table outside the range: the totals need all of it).
 */
MMP_API int mmp_pt_dump(const struct mmp_pt *pt, uint64_t va, uint64_t size,
                        int (*out)(void *arg, const char *line), void *arg);

#ifdef __cplusplus
}
#endif

#endif
