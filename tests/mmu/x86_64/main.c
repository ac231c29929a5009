/* SPDX-License-Identifier: MIT */
/* x86-64 payload: bring-up checks, then the page-table scenarios. */
#include "arch.h"
#include "mmu.h"
#include "payload.h"
#include "tlb.h"

static void bringup(void)
{
    struct pl_probe p;
    pl_result((pl_rdmsr(MSR_EFER) & 0x500) == 0x500, "x86_64 boot: long mode active");

    /* 256 GiB is outside the boot map (first 4 GiB). */
    uint64_t hole = 0x4000000000ull;
    pl_probe_load(hole, &p);
    pl_result(p.vec == 14 && p.cr2 == hole && p.err == 0,
              "x86_64 boot: load from an unmapped VA raises #PF (CR2, error 0)");
    pl_probe_store(hole + 8, 1, &p);
    pl_result(p.vec == 14 && p.cr2 == hole + 8 && p.err == PF_W,
              "x86_64 boot: store to an unmapped VA raises #PF (error W)");

    static volatile uint64_t word = 0x1234;
    pl_probe_store((uint64_t)(uintptr_t)&word, 0x5678, &p);
    pl_result(p.vec == 0 && word == 0x5678, "x86_64 boot: store through the boot map");

    /* The scratch RAM at 1 GiB is mapped read-write. */
    uint64_t scratch = 0x40000000ull;
    pl_probe_store(scratch, 0xabcd, &p);
    pl_result(p.vec == 0, "x86_64 boot: scratch RAM is writable");
}

/* 5-level paging: a PML5 whose first entry is the boot PML4 maps the same. */
static void bringup_la57(int have)
{
    static uint64_t pml5[512] __attribute__((aligned(4096)));
    if (!have) {
        pl_skip("CPUID.7.0:ECX.LA57 clear on this CPU model", "x86_64 boot: 5-level paging");
        return;
    }
    pml5[0] = (uint64_t)(uintptr_t)boot_pml4 | 3;
    pl_x86_set_paging((uint64_t)(uintptr_t)pml5, 1);
    static volatile uint64_t word = 1;
    struct pl_probe p;
    pl_probe_store((uint64_t)(uintptr_t)&word, 2, &p);
    int ok = (pl_read_cr(4) & CR4_LA57) && p.vec == 0 && word == 2;
    uint64_t high = 1ull << 48; /* canonical only with 57-bit VAs; PML5[1] is empty */
    pl_probe_load(high, &p);
    ok = ok && p.vec == 14 && p.cr2 == high;
    pl_boot_paging_restore();
    ok = ok && !(pl_read_cr(4) & CR4_LA57);
    pl_result(ok, "x86_64 boot: switch to 5-level paging and back");
}

/*
 * The TLB helpers: make a scratch 2 MiB page read-only behind the TLB's
 * back; after each helper the store must fault (#PF, error P|W), and after
 * restoring read-write and flushing again it must work.
 */
static void flush_scratch(int how, uint64_t va)
{
    switch (how) {
    case 0: case 1: mmp_arch_invlpg(va); break;
    case 2: mmp_arch_tlb_flush_range(va - 0x3000, 0x8000, false); break;
    case 3: mmp_arch_tlb_flush_range(va, 1u << 21, false); break; /* > ceiling: CR3 */
    case 4: mmp_arch_tlb_flush_cr3(); break;
    default: mmp_arch_tlb_flush_global(); break;
    }
}

static void tlb_helpers(void)
{
    static const char *const names[] = {
        "INVLPG", "INVLPG (global entry)", "range INVLPG", "range -> CR3 reload",
        "CR3 reload", "CR4.PGE toggle (global entry)",
    };
    uint64_t scratch = 0x40000000ull + (2u << 21);
    uint64_t *pde = &boot_pd[scratch >> 21];
    struct pl_probe p;
    unsigned stale = 0;
    for (int how = 0; how < 6; how++) {
        uint64_t g = (how == 1 || how == 5) ? 0x100 : 0; /* G bit */
        uint64_t va = scratch + 0x10000 * (how + 1);
        *pde |= g;
        mmp_arch_tlb_flush_global();
        int ok = pl_probe_store(va, 1, &p) == 0;
        *pde &= ~2ull; /* R/W clear: read-only */
        stale += pl_probe_store(va, 2, &p) == 0; /* may hit the old TLB entry */
        flush_scratch(how, va);
        ok = ok && pl_probe_store(va, 3, &p) < 0 && p.cr2 == va && p.err == (PF_P | PF_W);
        *pde |= 2;
        flush_scratch(how, va);
        ok = ok && pl_probe_store(va, 4, &p) == 0;
        *pde &= ~g;
        pl_result(ok, "x86_64 TLB helper: %s", names[how]);
    }
    mmp_arch_tlb_flush_global();
    pl_printf("note: %u of 6 stores hit a stale TLB entry before the flush\n", stale);
}

int pl_main(void);
int pl_main(void)
{
    uint32_t r[4];
    pl_idt_init();
    pl_cpuid(0, 0, r);
    char vendor[13];
    memcpy(vendor, &r[1], 4);
    memcpy(vendor + 4, &r[3], 4);
    memcpy(vendor + 8, &r[2], 4);
    vendor[12] = 0;
    pl_cpuid(7, 0, r);
    pl_printf("mmport real-MMU payload (x86_64), %s, LA57 %s, TSC %u MHz\n", vendor,
              (r[2] >> 16) & 1 ? "yes" : "no", pl_x86_tsc_calibrate());
    bringup();
#ifdef PL_SMP_ONLY /* PL_EXTRA=-DPL_SMP_ONLY: only the SMP scenario */
    if (0)
#endif
    {
        tlb_helpers();
        pl_run_scenarios();
        extern uint64_t pl_npt_compared, pl_ept_compared;
        pl_printf("translations compared: NPT %lu, EPT %lu (guest-physical addresses a guest "
                  "accessed, each checked against mmport's model)\n", pl_npt_compared,
                  pl_ept_compared);
        bringup_la57((r[2] >> 16) & 1);
    }
    pl_run_smp();
    pl_finish();
}
