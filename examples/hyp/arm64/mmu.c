/* SPDX-License-Identifier: MIT */
/*
 * The hypervisor's own translation (EL2 stage 1, built with mmport) and
 * the hooks of the guest's stage-2 table: TLB invalidation and the cache
 * maintenance newly mapped guest memory needs (mmp_pt_info::maint).
 */
#include <tlb.h>

#include "arch.h"

/* Table pages: one arena per table, so teardown can count each. */
extern uint8_t __arena_start[], __arena_end[];
static struct hyp_arena el2_arena;
struct hyp_arena hyp_s2_arena;
static struct mmp_pt el2_pt;
static struct mmp_pt_regs el2_regs;

/* ---- cache maintenance by line (CTR_EL0: DminLine [19:16], IminLine [3:0]) ---- */

static void dcache_clean_poc(void *ctx, uint64_t pa, uint64_t size)
{
    (void)ctx;
    uint64_t line = 4ull << ((read_sysreg(ctr_el0) >> 16) & 0xf);
    for (uint64_t a = pa & ~(line - 1); a < pa + size; a += line)
        __asm__ volatile("dc civac, %0" ::"r"(a) : "memory");
    __asm__ volatile("dsb ish" ::: "memory");
}

static void icache_inval_pou(void *ctx, uint64_t pa, uint64_t size)
{
    (void)ctx;
    uint64_t ctr = read_sysreg(ctr_el0);
    if (ctr & (1ull << 29)) /* DIC: no invalidation needed for coherence */
        return;
    uint64_t line = 4ull << (ctr & 0xf);
    for (uint64_t a = pa & ~(line - 1); a < pa + size; a += line)
        __asm__ volatile("ic ivau, %0" ::"r"(a) : "memory");
    __asm__ volatile("dsb ish\n\tisb" ::: "memory");
}

static unsigned granule_shift(uint64_t flags, unsigned g)
{
    unsigned s = MMP_FLUSH_STRIDE(flags);
    return s ? s : g;
}

/* Stage 2: IPAS2(L)E1IS over the range (then VMALLE1IS: combined entries
 * are tagged by VA), or VMALLS12E1IS; broadcast, so both vCPUs see it. */
static void s2_flush(void *ctx, uint64_t ipa, uint64_t size, unsigned flags)
{
    (void)ctx; /* the arena: the allocator's */
    unsigned g = hyp_gmm.granule == 65536 ? 16 : hyp_gmm.granule == 16384 ? 14 : 12;
    if (flags & MMP_FLUSH_ALL)
        mmp_arch_tlbi_s12_all();
    else
        mmp_arch_tlbi_s2_range(ipa, size, granule_shift(flags, g),
                               (flags & MMP_FLUSH_LEAF) != 0);
}

static void el2_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    (void)ctx;
    if (flags & MMP_FLUSH_ALL)
        mmp_arch_tlbi_el2_all();
    else
        mmp_arch_tlbi_el2_range(va, size, granule_shift(flags, 12),
                                (flags & MMP_FLUSH_LEAF) != 0);
}

const struct mmp_pt_ops hyp_s2_ops = {
    .alloc_table = hyp_arena_alloc,
    .free_table = hyp_arena_free,
    .phys_to_virt = hyp_arena_phys_to_virt,
    .tlb_flush = s2_flush,
    .ctx = &hyp_s2_arena,
    .dcache_clean_poc = dcache_clean_poc,
    .icache_inval_pou = icache_inval_pou,
};

/* After a dirty or access-flag fault was fixed: the TLB of this CPU may
 * still hold the entry that faulted (Arm ARM D8.16.2), so drop it here
 * (no broadcast: other CPUs fault and fix their own). */
void hyp_tlbi_ipa_local(uint64_t ipa)
{
    __asm__ volatile(
        "dsb ishst\n\ttlbi ipas2e1, %0\n\tdsb nsh\n\ttlbi vmalle1\n\tdsb nsh\n\tisb" ::
            "r"(ipa >> 12)
        : "memory");
}

/* PARange -> bits (ID_AA64MMFR0_EL1 [3:0]), at most 48 (no 52-bit layouts here). */
static uint32_t pa_bits(void)
{
    static const uint8_t bits[] = {32, 36, 40, 42, 44, 48, 48};
    uint64_t r = read_sysreg(id_aa64mmfr0_el1) & 0xf;
    return r < sizeof(bits) ? bits[r] : 48;
}

/*
 * EL2 stage 1 (MMP_PT_EL2: the single-range EL2 regime, HCR_EL2.E2H = 0),
 * identity: the hypervisor's text read-only and executable, the rest of
 * host RAM read-write and never executable, the UART a device. The stage-2
 * table's arena is carved from the same region.
 */
int hyp_el2_mmu_init(void)
{
    size_t half = (size_t)(__arena_end - __arena_start) / 2;
    hyp_arena_init(&el2_arena, __arena_start, (uint64_t)(uintptr_t)__arena_start, half);
    hyp_arena_init(&hyp_s2_arena, __arena_start + half,
                   (uint64_t)(uintptr_t)(__arena_start + half), half);
    struct mmp_pt_config cfg = {
        .format = MMP_PT_ARM64_S1,
        .granule = 4096,
        .va_bits = 40,
        .pa_bits = pa_bits(),
        .flags = MMP_PT_EL2,
    };
    static const struct mmp_pt_ops ops = {
        .alloc_table = hyp_arena_alloc,
        .free_table = hyp_arena_free,
        .phys_to_virt = hyp_arena_phys_to_virt,
        .tlb_flush = el2_flush,
        .ctx = &el2_arena,
    };
    const struct hyp_layout *l = &hyp_layout;
    uint64_t t0 = (uint64_t)(uintptr_t)__text_start, t1 = (uint64_t)(uintptr_t)__text_end;
    uint32_t rw = MMP_PROT_READ | MMP_PROT_WRITE | MMP_MEM_NORMAL_WB;
    int rc = mmp_pt_init(&el2_pt, &cfg, &ops);
    if (!rc)
        rc = mmp_pt_map(&el2_pt, l->ram_base, l->ram_base, t0 - l->ram_base, rw, 0);
    if (!rc)
        rc = mmp_pt_map(&el2_pt, t0, t0, t1 - t0, MMP_PROT_READ | MMP_PROT_EXEC, 0);
    if (!rc)
        rc = mmp_pt_map(&el2_pt, t1, t1, l->ram_base + l->ram_size - t1, rw, 0);
    if (!rc)
        rc = mmp_pt_map(&el2_pt, hyp_uart & ~0xfffull, hyp_uart & ~0xfffull, 4096,
                        MMP_PROT_READ | MMP_PROT_WRITE | MMP_MEM_DEVICE, 0);
    if (!rc)
        rc = mmp_pt_regs(&el2_pt, 0, &el2_regs);
    return rc;
}

/* Turn this CPU's EL2 MMU on with the table (each CPU, at its start). */
void hyp_el2_mmu_on(void)
{
    write_sysreg(mair_el2, el2_regs.mair);
    write_sysreg(tcr_el2, el2_regs.tcr);
    write_sysreg(ttbr0_el2, el2_regs.root);
    __asm__ volatile("isb\n\ttlbi alle2\n\tdsb nsh\n\tisb" ::: "memory");
    /* SCTLR_EL2: M, C, I; RES1 bits (D19.2.118, E2H = 0). */
    write_sysreg(sctlr_el2, 0x30c50830ull | 1 | (1u << 2) | (1u << 12));
    isb();
}

/* At the end: MMU off (identity, so execution goes on), then every page
 * of the table back. Returns the bytes of both arenas still out. */
uint64_t hyp_el2_mmu_teardown(void)
{
    write_sysreg(sctlr_el2, read_sysreg(sctlr_el2) & ~1ull);
    isb();
    mmp_pt_fini(&el2_pt);
    return el2_arena.out_bytes + hyp_s2_arena.out_bytes;
}
