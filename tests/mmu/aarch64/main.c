/* SPDX-License-Identifier: MIT */
/* aarch64 payload: bring-up checks, then the page-table scenarios. */
#include "arch.h"
#include "mmu.h"
#include "payload.h"
#include "tlb.h"

static void bringup(void)
{
    struct pl_probe p;
    uint64_t el = pl_read_sysreg(CurrentEL) >> 2;
    pl_result(el == 1, "aarch64 boot: running at EL1 (entered at EL%u)", pl_el2 ? 2u : 1u);

    pl_boot_mmu();
    uint64_t sctlr = pl_read_sysreg(sctlr_el1);
    pl_result((sctlr & 1) != 0, "aarch64 boot: MMU on with the boot identity map");

    /* 256 GiB is outside the boot map's four 1 GiB blocks. */
    uint64_t hole = 0x4000000000ull;
    pl_probe_load(hole, &p);
    pl_result(ESR_EC(p.esr) == EC_DABT_CUR && p.far == hole && (ESR_FSC(p.esr) & 0x3c) == 4,
              "aarch64 boot: load from an unmapped VA takes a translation fault");
    uint64_t par = pl_at(0, 0, hole);
    pl_result((par & 1) && ((par >> 1) & 0x3c) == 4,
              "aarch64 boot: AT S1E1R reports the translation fault");

    static volatile uint64_t word = 0x1234;
    par = pl_at(1, 0, (uint64_t)(uintptr_t)&word);
    pl_result(!(par & 1) && (par & 0xfffffffff000ull) == ((uintptr_t)&word & ~0xfffull) &&
                  (par >> 56) == 0xff,
              "aarch64 boot: AT S1E1W on RAM gives the identity PA and Normal WB");
    pl_probe_store((uint64_t)(uintptr_t)&word, 0x5678, &p);
    pl_result(p.esr == 0 && word == 0x5678, "aarch64 boot: store through the boot map");

    /* The scratch GiB at 0x80000000 is mapped read-write. */
    uint64_t scratch = 0x80000000ull;
    par = pl_at(1, 0, scratch);
    pl_probe_store(scratch, 0xabcd, &p);
    pl_result(!(par & 1) && p.esr == 0, "aarch64 boot: scratch RAM block is writable");
}

/*
 * The TLB helpers: make the scratch block read-only behind the TLB's back,
 * then each helper must make the store fault; restoring it read-write and
 * flushing again must make the store work.
 */
static void flush_scratch(int how, uint64_t va)
{
    switch (how) {
    case 0: mmp_arch_tlbi_el1_va(va, 0, true); break;
    case 1: mmp_arch_tlbi_el1_va(va, 0, false); break;
    case 2: mmp_arch_tlbi_el1_range(va, 1u << 30, 12, 0, true); break; /* > max ops: all */
    case 3: mmp_arch_tlbi_el1_range(va - 0x3000, 0x8000, 12, 0, false); break;
    case 4: mmp_arch_tlbi_el1_asid(0); break;
    default: mmp_arch_tlbi_el1_all(); break;
    }
}

static void tlb_helpers(void)
{
    static const char *const names[] = {
        "VALE1IS", "VAE1IS", "range -> VMALLE1IS", "range VAE1IS", "ASIDE1IS", "VMALLE1IS",
    };
    uint64_t scratch = 0x80000000ull;
    struct pl_probe p;
    unsigned stale = 0;
    for (int how = 0; how < 6; how++) {
        uint64_t va = scratch + 0x10000 * (how + 1);
        int ok = pl_probe_store(va, 1, &p) == 0;
        boot_l1[2] |= 1u << 7; /* AP[2]: read-only */
        __asm__ volatile("dsb ishst" ::: "memory");
        stale += pl_probe_store(va, 2, &p) == 0; /* may hit the old TLB entry */
        flush_scratch(how, va);
        ok = ok && pl_probe_store(va, 3, &p) < 0 && ESR_EC(p.esr) == EC_DABT_CUR &&
             (ESR_FSC(p.esr) & 0x3c) == 0xc && (p.esr & ESR_WNR);
        boot_l1[2] &= ~(1ull << 7);
        flush_scratch(how, va);
        ok = ok && pl_probe_store(va, 4, &p) == 0;
        pl_result(ok, "aarch64 TLB helper: TLBI %s", names[how]);
    }
    pl_printf("note: %u of 6 stores hit a stale TLB entry before the TLBI\n", stale);
}

/*
 * EL2 regime (only when QEMU started us at EL2): turn the EL2 stage-1 MMU
 * on with the boot table and run the same read-only-behind-the-TLB check
 * with the EL2 helpers. These functions run at EL2 through pl_el2_call().
 */
static uint64_t el2_mmu(uint64_t on, uint64_t b, uint64_t c)
{
    (void)b;
    (void)c;
    uint64_t sctlr = pl_read_sysreg(sctlr_el2);
    if (!on) {
        pl_write_sysreg(sctlr_el2, sctlr & ~1ull);
        __asm__ volatile("isb");
        return 0;
    }
    /* TCR_EL2 (non-VHE, D19.2.140): T0SZ 25, IRGN0/ORGN0 WBWA, SH0 inner,
     * TG0 4K, PS [18:16], RES1 bits 31 and 23. */
    uint64_t ps = (pl_tcr_ips() >> 32) & 7;
    pl_write_sysreg(mair_el2, pl_mair);
    pl_write_sysreg(tcr_el2, 25 | (1u << 8) | (1u << 10) | (3u << 12) | (ps << 16) |
                                 (1ull << 23) | (1ull << 31));
    pl_write_sysreg(ttbr0_el2, (uint64_t)(uintptr_t)boot_l1);
    __asm__ volatile("isb\n\ttlbi alle2\n\tdsb nsh\n\tisb" ::: "memory");
    pl_write_sysreg(sctlr_el2, sctlr | 1 | (1u << 2) | (1u << 12));
    __asm__ volatile("isb");
    return 0;
}

static void el2_flush(uint64_t how, uint64_t va)
{
    switch (how) {
    case 0: mmp_arch_tlbi_el2_va(va, true); break;
    case 1: mmp_arch_tlbi_el2_va(va, false); break;
    case 2: mmp_arch_tlbi_el2_range(va - 0x3000, 0x8000, 12, false); break;
    default: mmp_arch_tlbi_el2_all(); break;
    }
}

static uint64_t el2_tlb_case(uint64_t how, uint64_t va, uint64_t c)
{
    (void)c;
    struct pl_probe p;
    int ok = pl_probe_store(va, 1, &p) == 0;
    boot_l1[2] |= 1u << 7;
    __asm__ volatile("dsb ishst" ::: "memory");
    uint64_t stale = pl_probe_store(va, 2, &p) == 0;
    el2_flush(how, va);
    ok = ok && pl_probe_store(va, 3, &p) < 0 && ESR_EC(p.esr) == EC_DABT_CUR &&
         (ESR_FSC(p.esr) & 0x3c) == 0xc;
    boot_l1[2] &= ~(1ull << 7);
    el2_flush(how, va);
    ok = ok && pl_probe_store(va, 4, &p) == 0;
    return (uint64_t)ok | stale << 1;
}

static void el2_tlb_helpers(void)
{
    static const char *const names[] = { "VALE2IS", "VAE2IS", "range VAE2IS", "ALLE2IS" };
    if (!pl_el2) {
        pl_printf("note: entered at EL1: EL2 TLB helpers and stage 2 need "
                  "-M virt,virtualization=on\n");
        return;
    }
    pl_el2_call(el2_mmu, 1, 0, 0);
    unsigned stale = 0;
    for (unsigned how = 0; how < 4; how++) {
        uint64_t r = pl_el2_call(el2_tlb_case, how, 0x80000000ull + 0x10000 * (how + 8), 0);
        stale += (unsigned)(r >> 1);
        pl_result(r & 1, "aarch64 TLB helper at EL2: TLBI %s", names[how]);
    }
    pl_el2_call(el2_mmu, 0, 0, 0);
    pl_printf("note: %u of 4 EL2 stores hit a stale TLB entry before the TLBI\n", stale);
}

int pl_main(void);
int pl_main(void)
{
    pl_printf("mmport real-MMU payload (aarch64), MIDR %lx, ID_AA64MMFR0 %lx\n",
              pl_read_sysreg(midr_el1), pl_read_sysreg(id_aa64mmfr0_el1));
    bringup();
#ifdef PL_SMP_ONLY /* PL_EXTRA=-DPL_SMP_ONLY: only the SMP scenario */
    if (0)
#endif
    {
        tlb_helpers();
        el2_tlb_helpers();
        pl_run_scenarios();
    }
    pl_run_smp();
    pl_finish();
}
