/* SPDX-License-Identifier: MIT */
/*
 * aarch64 hooks for the page-table scenarios: stage-1 EL1&0 tables for the
 * granules and VA sizes the CPU supports, TCR_EL1/TTBR0_EL1 loading, the
 * tlb_flush hook (TLBI helpers of arch/arm64/tlb.h) and the check of one
 * VA with AT S1E1R/S1E1W/S1E0R/S1E0W + PAR_EL1 and real accesses.
 */
#include "arch.h"
#include "mmu.h"
#include "tlb.h"

/* Scratch RAM: the third GiB of guest RAM (QEMU virt -m 2G: RAM is
 * 0x40000000..0xbfffffff; the payload lives in the first GiB). */
const uint64_t pl_scratch_lo = 0x80000000ull, pl_scratch_hi = 0xc0000000ull;

#define RW (MMP_PROT_READ | MMP_PROT_WRITE)
const struct pl_ident pl_arch_ident[] = {
    { 0x09000000ull, 0x10000, RW | MMP_PROT_GLOBAL | MMP_MEM_DEVICE }, /* PL011 UART */
    { 0x80000000ull, 0x40000000ull, RW | MMP_PROT_GLOBAL },            /* scratch */
};
const unsigned pl_arch_nident = PL_ARRAY_SIZE(pl_arch_ident);

const uint32_t pl_ret_insn = 0xd65f03c0u; /* ret */
const unsigned pl_ret_insn_size = 4;

#define F_S2 1u  /* stage 2, VTTBR_EL2 */
#define F_EL2 2u /* stage 1 of the EL2 regime (MMP_PT_EL2), TTBR0_EL2 */

static void add(struct pl_target *t, int *n, int max, unsigned granule, unsigned va_bits,
                const char *name)
{
    int s2 = name[6] == 'S'; /* "arm64 S2 ..." */
    if (*n >= max)
        return;
    struct pl_target *x = &t[(*n)++];
    pl_snprintf(x->name, sizeof(x->name), "%s", name);
    x->cfg.format = s2 ? MMP_PT_ARM64_S2 : MMP_PT_ARM64_S1;
    x->cfg.granule = granule;
    x->cfg.va_bits = va_bits;
    /* The CPU's PA size (at most 48 bits here): mmp_pt_regs() derives
     * TCR_ELx.IPS / VTCR_EL2.PS from it. */
    x->cfg.pa_bits = (unsigned[]){ 32, 36, 40, 42, 44, 48 }[(pl_tcr_ips() >> 32) & 7];
    x->cfg.flags = 0;
    x->window = 0x4000000000ull; /* 256 GiB */
    x->far_va = (1ull << va_bits) - 4ull * granule;
    x->max_leaf = 1ull << 62;
    x->sparse_span = 0;
    x->prot_mask = MMP_PROT_MASK;
    x->arch_flags = 0;
    if (s2) {
        /* EL1 reaches an IPA through the boot map's 1 GiB identity blocks,
         * which cover the 39-bit VA space except 256 GiB (kept as a hole). */
        x->window = 0x2000000000ull; /* 128 GiB */
        x->far_va = 0;
        x->sparse_span = 1ull << 38;
        x->prot_mask = MMP_PROT_READ | MMP_PROT_WRITE | MMP_PROT_EXEC;
        x->arch_flags = F_S2;
    }
}

/*
 * 52-bit layouts (pa_bits = 52), when the CPU has them; otherwise a SKIP
 * line with the ID register field that says why. ID_AA64MMFR0_EL1
 * (D24.2.80): PARange [3:0] 0b0110 = 52 bits; TGran4 [31:28] 0b0001 and
 * TGran16 [23:20] 0b0010 = the granule with FEAT_LPA2; stage 2 TGran4_2
 * [43:40] / TGran16_2 [35:32] 0b0011 = with 52 bits, 0b0000 = as stage 1.
 * ID_AA64MMFR2_EL1.VARange [19:16] 0b0001 = FEAT_LVA (64K 52-bit VA).
 */
static int lpa_targets(struct pl_target *t, int n, int max, uint64_t mmfr0, int s2)
{
    unsigned parange = mmfr0 & 0xf, tg4 = (mmfr0 >> 28) & 0xf, tg16 = (mmfr0 >> 20) & 0xf;
    unsigned tg64 = (mmfr0 >> 24) & 0xf;
    unsigned tg4_2 = (mmfr0 >> 40) & 0xf, tg16_2 = (mmfr0 >> 32) & 0xf;
    unsigned varange = (pl_read_sysreg(id_aa64mmfr2_el1) >> 16) & 0xf;
    int lpa2_4 = tg4 == 1 && (!s2 || tg4_2 == 3 || tg4_2 == 0);
    int lpa2_16 = tg16 == 2 && (!s2 || tg16_2 == 3 || tg16_2 == 0);
    static const struct {
        unsigned granule, s2;
        const char *name;
    } l[] = {
        { 4096, 0, "arm64 4K LPA2, 52-bit VA and PA (5 levels, from level -1)" },
        { 16384, 0, "arm64 16K LPA2, 52-bit VA and PA" },
        { 65536, 0, "arm64 64K LPA + LVA, 52-bit VA and PA" },
        { 4096, 1, "arm64 S2 4K LPA2, 52-bit IPA and PA (level 0, 16 tables)" },
        { 16384, 1, "arm64 S2 16K LPA2, 48-bit IPA, 52-bit PA" },
        { 65536, 1, "arm64 S2 64K LPA, 52-bit IPA and PA" },
    };
    for (unsigned i = 0; i < PL_ARRAY_SIZE(l); i++) {
        if (l[i].s2 != (unsigned)s2)
            continue;
        const char *why = 0;
        if (parange != 6)
            why = "ID_AA64MMFR0_EL1.PARange != 0b0110: no 52-bit physical addresses";
        else if (l[i].granule == 4096 && !lpa2_4)
            why = s2 ? "ID_AA64MMFR0_EL1.TGran4/TGran4_2: no FEAT_LPA2 at stage 2"
                     : "ID_AA64MMFR0_EL1.TGran4 != 0b0001: no FEAT_LPA2";
        else if (l[i].granule == 16384 && !lpa2_16)
            why = s2 ? "ID_AA64MMFR0_EL1.TGran16/TGran16_2: no FEAT_LPA2 at stage 2"
                     : "ID_AA64MMFR0_EL1.TGran16 != 0b0010: no FEAT_LPA2";
        else if (l[i].granule == 65536 && tg64 == 0xf)
            why = "ID_AA64MMFR0_EL1.TGran64 = 0xf: no 64K granule";
        else if (l[i].granule == 65536 && !s2 && varange != 1)
            why = "ID_AA64MMFR2_EL1.VARange != 0b0001: no FEAT_LVA";
        if (why) {
            pl_skip(why, "%s", l[i].name);
            continue;
        }
        if (n >= max) {
            pl_skip("more targets than the payload's table holds", "%s", l[i].name);
            continue;
        }
        /* Stage 2: a 52-bit IPA space, of which EL1's boot map reaches the
         * first 512 GiB, where the scenarios work (add() sets that up).
         * 16K: 48 bits (level 1, 2 tables); a 52-bit IPA starts at level 0
         * (SL0 = 3), which QEMU 7.2's stage-2 walker refuses (its
         * check_s2_mmu_setup rejects every 16K level-0 start). */
        unsigned ipa = s2 && l[i].granule == 16384 ? 48 : 52;
        add(t, &n, max, l[i].granule, ipa, l[i].name);
        t[n - 1].cfg.pa_bits = 52;
    }
    if (s2 && lpa2_16 && parange == 6)
        pl_skip("QEMU 7.2 refuses a 16K stage-2 walk starting at level 0 (VTCR_EL2.SL0 = 3, "
                "Arm ARM table D8-30 allows it with DS = 1)",
                "arm64 S2 16K LPA2, 52-bit IPA");
    return n;
}

int pl_arch_targets(struct pl_target *t, int max)
{
    /* ID_AA64MMFR0_EL1 (Arm ARM D19.2.64): TGran4 [31:28] 0 = yes, 0xf = no;
     * TGran64 [27:24] 0 = yes, 0xf = no; TGran16 [23:20] 0 = no, 1+ = yes. */
    uint64_t mmfr0 = pl_read_sysreg(id_aa64mmfr0_el1);
    unsigned tg4 = (mmfr0 >> 28) & 0xf, tg64 = (mmfr0 >> 24) & 0xf, tg16 = (mmfr0 >> 20) & 0xf;
    int n = 0;
    if (tg4 != 0xf) {
        add(t, &n, max, 4096, 39, "arm64 4K granule, 39-bit VA (3 levels)");
        add(t, &n, max, 4096, 48, "arm64 4K granule, 48-bit VA (4 levels)");
    } else {
        pl_skip("ID_AA64MMFR0_EL1.TGran4 = 0xf: the CPU has no 4K granule", "arm64 4K granule");
    }
    if (tg16 != 0) {
        add(t, &n, max, 16384, 47, "arm64 16K granule, 47-bit VA (3 levels)");
        add(t, &n, max, 16384, 48, "arm64 16K granule, 48-bit VA (4 levels)");
    } else {
        pl_skip("ID_AA64MMFR0_EL1.TGran16 = 0: the CPU has no 16K granule",
                "arm64 16K granule");
    }
    if (tg64 != 0xf) {
        /* 64K tables have at most 3 levels below 52-bit VAs (FEAT_LVA). */
        add(t, &n, max, 65536, 42, "arm64 64K granule, 42-bit VA (2 levels)");
        add(t, &n, max, 65536, 48, "arm64 64K granule, 48-bit VA (3 levels)");
    } else {
        pl_skip("ID_AA64MMFR0_EL1.TGran64 = 0xf: the CPU has no 64K granule",
                "arm64 64K granule");
    }
    /* Create-time flags: no contiguous runs, no folding, one pending flush
     * range before a full flush (the hook's TLBI VMALLE1IS path); and no
     * blocks at all. */
    if (tg4 != 0xf && n + 2 <= max) {
        add(t, &n, max, 4096, 48, "arm64 4K 48-bit, NO_CONT|NO_FOLD|FLUSH_ALL_OVER|KEEP_TABLES");
        t[n - 1].cfg.flags =
            MMP_PT_NO_CONT | MMP_PT_NO_FOLD | MMP_PT_FLUSH_ALL_OVER | MMP_PT_KEEP_TABLES;
        t[n - 1].cfg.flush_ranges = 1;
        add(t, &n, max, 4096, 39, "arm64 4K 39-bit, NO_BLOCKS");
        t[n - 1].cfg.flags = MMP_PT_NO_BLOCKS;
    }
    /* ID_AA64MMFR1_EL1.HAFDBS [3:0] (D19.2.65): 2 = hardware AF and dirty
     * state (FEAT_HAFDBS), what MMP_PT_TRACK_HW tables need. */
    unsigned hafdbs = (unsigned)(pl_read_sysreg(id_aa64mmfr1_el1) & 0xf);
    if (hafdbs < 2)
        pl_skip(hafdbs ? "ID_AA64MMFR1_EL1.HAFDBS = 1: hardware AF only, no dirty state"
                       : "ID_AA64MMFR1_EL1.HAFDBS = 0: no hardware AF or dirty state (the "
                         "software path runs on the other targets)",
                "arm64 4K 48-bit, TRACK_HW");
    else if (tg4 != 0xf && n < max) {
        add(t, &n, max, 4096, 48, "arm64 4K 48-bit, TRACK_HW (HAFDBS: the MMU sets AF, DBM)");
        t[n - 1].cfg.flags = MMP_PT_TRACK_HW;
    }
    n = lpa_targets(t, n, max, mmfr0, 0);
    if (!pl_el2) {
        pl_printf("note: entered at EL1: no stage-2 tables\n");
        return n;
    }
    n = lpa_targets(t, n, max, mmfr0, 1);
    /* Stage 2 (VTTBR_EL2): IPA sizes with and without a concatenated root;
     * the IPA may not exceed the PA size (TCR IPS). */
    unsigned pa = (unsigned[]){ 32, 36, 40, 42, 44, 48 }[(pl_tcr_ips() >> 32) & 7];
    if (tg4 != 0xf) {
        add(t, &n, max, 4096, 40, "arm64 S2 4K granule, 40-bit IPA");
        add(t, &n, max, 4096, pa, pa == 48 ? "arm64 S2 4K granule, 48-bit IPA"
                                            : "arm64 S2 4K granule, 44-bit IPA");
    }
    if (tg16 != 0)
        add(t, &n, max, 16384, 40, "arm64 S2 16K granule, 40-bit IPA");
    if (tg64 != 0xf)
        add(t, &n, max, 65536, 40, "arm64 S2 64K granule, 40-bit IPA");
    /* EL2 (E2H = 0) stage 1: checked at EL2 with AT S1E2R/W and accesses. */
    static const struct {
        unsigned granule, va_bits, ok;
        const char *name;
    } el2[] = {
        { 4096, 48, 1, "arm64 EL2 stage 1 (MMP_PT_EL2), 4K, 48-bit VA" },
        { 65536, 42, 1, "arm64 EL2 stage 1 (MMP_PT_EL2), 64K, 42-bit VA" },
    };
    for (unsigned i = 0; i < PL_ARRAY_SIZE(el2) && n < max; i++) {
        if ((el2[i].granule == 4096 && tg4 == 0xf) || (el2[i].granule == 65536 && tg64 == 0xf))
            continue;
        add(t, &n, max, el2[i].granule, el2[i].va_bits, el2[i].name);
        t[n - 1].cfg.flags = MMP_PT_EL2;
        t[n - 1].prot_mask = MMP_PROT_READ | MMP_PROT_WRITE | MMP_PROT_EXEC;
        t[n - 1].arch_flags = F_EL2;
    }
    return n;
}

static unsigned gshift(const struct pl_target *t)
{
    return t->cfg.granule == 4096 ? 12 : t->cfg.granule == 16384 ? 14 : 16;
}

static int stage2_on;

/* Runs at EL2: load VTCR_EL2/VTTBR_EL2 and turn stage 2 on (or off). */
static uint64_t el2_stage2(uint64_t vtcr, uint64_t vttbr, uint64_t on)
{
    uint64_t hcr = pl_read_sysreg(hcr_el2);
    if (on) {
        pl_write_sysreg(vtcr_el2, vtcr);
        pl_write_sysreg(vttbr_el2, vttbr);
    }
    pl_write_sysreg(hcr_el2, on ? hcr | 1 : hcr & ~1ull); /* HCR_EL2.VM */
    __asm__ volatile("isb" ::: "memory");
    mmp_arch_tlbi_s12_all();
    return 0;
}

/*
 * Runs at EL2: the flush hook of a stage-2 or EL2 table. how = flags |
 * granule shift << 8 | EL2-regime bit << 16.
 */
static uint64_t el2_flush(uint64_t va, uint64_t size, uint64_t how)
{
    unsigned shift = (unsigned)(how >> 8) & 0xff;
    bool leaf = (how & MMP_FLUSH_LEAF) != 0, el2 = (how >> 16) & 1;
    if (how & MMP_FLUSH_ALL) {
        if (el2)
            mmp_arch_tlbi_el2_all();
        else
            mmp_arch_tlbi_s12_all();
    } else if (el2) {
        mmp_arch_tlbi_el2_range(va, size, shift, leaf);
    } else {
        mmp_arch_tlbi_s2_range(va, size, shift, leaf);
    }
    return 0;
}

/* Runs at EL2: AT S12E1R/W (the full EL1&0 translation, D8.14) or, for
 * the EL2 regime, AT S1E2R/W. */
static uint64_t el2_at(uint64_t va, uint64_t write, uint64_t el2)
{
    if (el2 && write)
        __asm__ volatile("at s1e2w, %0" ::"r"(va));
    else if (el2)
        __asm__ volatile("at s1e2r, %0" ::"r"(va));
    else if (write)
        __asm__ volatile("at s12e1w, %0" ::"r"(va));
    else
        __asm__ volatile("at s12e1r, %0" ::"r"(va));
    __asm__ volatile("isb" ::: "memory");
    return pl_read_sysreg(par_el1);
}

/* Runs at EL2: EL2 stage 1 on with (tcr, ttbr0, mair), or off (tcr == 0). */
static uint64_t el2_s1(uint64_t tcr, uint64_t ttbr0, uint64_t mair)
{
    uint64_t sctlr = pl_read_sysreg(sctlr_el2) & ~1ull;
    pl_write_sysreg(sctlr_el2, sctlr);
    __asm__ volatile("isb" ::: "memory");
    if (!tcr)
        return 0;
    pl_write_sysreg(mair_el2, mair);
    pl_write_sysreg(tcr_el2, tcr);
    pl_write_sysreg(ttbr0_el2, ttbr0);
    __asm__ volatile("isb\n\ttlbi alle2\n\tdsb nsh\n\tisb" ::: "memory");
    pl_write_sysreg(sctlr_el2, sctlr | 1 | (1u << 2) | (1u << 12));
    __asm__ volatile("isb" ::: "memory");
    return 0;
}

/* Runs at EL2: one probe (0 load, 1 store of p->value, 2 exec) at EL2. */
static uint64_t el2_probe(uint64_t kind, uint64_t va, uint64_t pp)
{
    struct pl_probe *p = (struct pl_probe *)(uintptr_t)pp;
    return (uint64_t)(kind == 0   ? pl_probe_load(va, p)
                      : kind == 1 ? pl_probe_store(va, p->value, p)
                                  : pl_probe_exec(va, p));
}

static int el2_s1_on;

int pl_arch_activate(const struct pl_target *t, const struct mmp_pt *pt)
{
    struct mmp_pt_info info;
    struct mmp_pt_regs r;
    if (mmp_pt_info(pt, &info) || mmp_pt_regs(pt, 0, &r))
        return -1;
    if (info.t0sz != 64 - t->cfg.va_bits || (r.tcr & 0x3f) != info.t0sz) {
        pl_printf("  mmp_pt_info / regs: T0SZ %u / %lu, want %u\n", info.t0sz, r.tcr & 0x3f,
                  64 - t->cfg.va_bits);
        return -1;
    }
    /* Stage 1: the AttrIndx values the encoder writes assume this MAIR;
     * the payload's own checks (PAR.ATTR) use the same layout. */
    if (!(t->arch_flags & F_S2) && (info.mair != pl_mair || r.mair != pl_mair)) {
        pl_printf("  mmp_pt_info/regs: MAIR %lx / %lx, the payload expects %lx\n", info.mair,
                  r.mair, pl_mair);
        return -1;
    }
    /* TCR_EL2 / VTCR_EL2 / TCR_EL1 and TTBR from mmp_pt_regs() (their
     * fields are unit-tested against the Arm ARM in tests/test_pt_lpa2.c). */
    if (t->arch_flags & F_EL2) {
        pl_el2_call(el2_s1, r.tcr, r.root, r.mair);
        el2_s1_on = 1;
        return 0;
    }
    if (t->arch_flags & F_S2) {
        pl_el2_call(el2_stage2, r.tcr, r.root, 1);
        stage2_on = 1;
        return 0;
    }
    pl_mmu_switch(r.mair, r.tcr, r.root, pl_boot_sctlr);
    return 0;
}

void pl_arch_deactivate(void)
{
    if (stage2_on)
        pl_el2_call(el2_stage2, 0, 0, 0);
    if (el2_s1_on)
        pl_el2_call(el2_s1, 0, 0, 0);
    stage2_on = el2_s1_on = 0;
    pl_boot_mmu_restore();
}

void pl_arch_tlb_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    const struct pl_target *t = ctx;
    /* One TLBI per step of the changed leaves' size where the engine gives
     * it (as a hypervisor's hook does: a wrong stride then misses), else
     * per granule. how carries it where flags has its stride field. */
    unsigned stride = MMP_FLUSH_STRIDE(flags);
    unsigned shift = (flags & MMP_FLUSH_LEAF) && stride ? stride : gshift(t);
    if (t->arch_flags & (F_S2 | F_EL2))
        pl_el2_call(el2_flush, va, size,
                    (flags & ~MMP_FLUSH_STRIDE_MASK) | (uint64_t)shift << 8 |
                        (uint64_t)!!(t->arch_flags & F_EL2) << 16);
    else if (flags & MMP_FLUSH_ALL)
        mmp_arch_tlbi_el1_all();
    else
        mmp_arch_tlbi_el1_range(va, size, shift, 0, (flags & MMP_FLUSH_LEAF) != 0);
}

/* PAR_EL1 (D24.2.142): F [0]; on fault FST [6:1]; else SH [8:7],
 * PA [47:12] and, with FEAT_LPA, PA[51:48] in [51:48], ATTR [63:56]. Fault status codes: 0b0001LL translation,
 * 0b0010LL access flag, 0b0011LL permission. */
#define PAR_F 1ull
/* The fault class of a status code: 0b0001LL etc., or, for the level -1
 * of FEAT_LPA2, 0b101011 translation fault (ESR_ELx ISS, D24.2.45), which
 * counts as FS_TRANS here. */
static unsigned fs_class(unsigned fsc)
{
    return fsc == 0x2b ? 0x04 : fsc & 0x3c;
}
#define PAR_FST(p) fs_class((unsigned)((p) >> 1) & 0x3f)
#define FS_TRANS 0x04
#define FS_PERM 0x0c
#define PA_BITS 0x000ffffffffff000ull

static const uint8_t mair_of_mem[3] = { 0xff, 0x44, 0x04 };

static int bad(uint64_t va, const char *what, uint64_t want, uint64_t got)
{
    pl_printf("  mismatch at %lx: MMU: %s: want %lx, got %lx\n", va, what, want, got);
    return 1;
}

static uint64_t token_seq;

#define PAR_S (1ull << 9) /* the fault is a stage-2 fault */

/* An abort of a probe: class, fault status (level ignored), address. */
/* AT for the target's regime: S1E1*, S12E1* (stage 2) or S1E2* (EL2). */
static uint64_t at(const struct pl_target *t, int write, int el0, uint64_t va)
{
    if (t->arch_flags & (F_S2 | F_EL2))
        return pl_el2_call(el2_at, va, (uint64_t)write, (t->arch_flags & F_EL2) != 0);
    return pl_at(write, el0, va);
}

/* Probes run where the regime is: at EL1, or at EL2 for the EL2 regime. */
static int probe(const struct pl_target *t, int kind, uint64_t va, uint64_t value,
                 struct pl_probe *p)
{
    if (t->arch_flags & F_EL2) {
        p->value = value;
        return (int)pl_el2_call(el2_probe, (uint64_t)kind, va, (uint64_t)(uintptr_t)p);
    }
    return kind == 0 ? pl_probe_load(va, p)
           : kind == 1 ? pl_probe_store(va, value, p)
                       : pl_probe_exec(va, p);
}

static int abort_is(const struct pl_probe *p, unsigned ec, unsigned fs, uint64_t far)
{
    return ESR_EC(p->esr) == ec && fs_class(ESR_FSC(p->esr)) == fs && p->far == far;
}

int pl_arch_check(const struct pl_target *t, uint64_t va, const struct pl_expect *e, int real)
{
    struct pl_probe p;
    int s2 = (t->arch_flags & F_S2) != 0;
    /* Stage 2: the full translation at EL2; aborts are taken to EL2 ("lower EL"). */
    int one_el = (t->arch_flags & (F_S2 | F_EL2)) != 0; /* no EL0 side to check */
    uint64_t par = at(t, 0, 0, va);
    unsigned dabt = s2 ? EC_DABT_LOW : EC_DABT_CUR, iabt = s2 ? EC_IABT_LOW : EC_IABT_CUR;
    uint64_t s_bit = s2 ? PAR_S : 0;
    if (!e->mapped) {
        if (!(par & PAR_F) || PAR_FST(par) != FS_TRANS || (par & PAR_S) != s_bit)
            return bad(va, "AT of an unmapped VA (PAR)", FS_TRANS | s_bit, par);
        if (real) {
            probe(t, 0, va & ~7ull, 0, &p);
            if (!abort_is(&p, dabt, FS_TRANS, va & ~7ull))
                return bad(va, "load from an unmapped VA (ESR)", FS_TRANS, p.esr);
            if (s2 && p.hpfar != ((va >> 12) << 4))
                return bad(va, "load from an unmapped IPA (HPFAR_EL2)", (va >> 12) << 4, p.hpfar);
        }
        return 0;
    }
    uint32_t a = e->attrs;
    unsigned mem = (a & MMP_MEM_MASK) >> 8;
    if (par & PAR_F)
        return bad(va, "AT of a mapped VA (PAR)", e->pa & PA_BITS, par);
    if ((par & PA_BITS) != (e->pa & PA_BITS))
        return bad(va, "AT output address", e->pa & PA_BITS, par & PA_BITS);
    /* Stage 1 of the boot map is Normal WB, so stage 2 decides the type. */
    if ((par >> 56) != mair_of_mem[mem])
        return bad(va, "AT memory attributes (PAR.ATTR)", mair_of_mem[mem], par >> 56);
    if (mem == 0 && ((par >> 7) & 3) != 3)
        return bad(va, "AT shareability (PAR.SH)", 3, (par >> 7) & 3);
    /* Permission checks: write; stage 1 also EL0 read and EL0 write. */
    const struct {
        int write, el0, allowed;
        const char *what;
    } ats[] = {
        { 1, 0, (a & MMP_PROT_WRITE) != 0, "AT S1E1W / S12E1W / S1E2W (PAR)" },
        { 0, 1, (a & MMP_PROT_USER) != 0, "AT S1E0R (PAR)" },
        { 1, 1, (a & MMP_PROT_USER) && (a & MMP_PROT_WRITE), "AT S1E0W (PAR)" },
    };
    for (unsigned i = 0; i < (one_el ? 1u : PL_ARRAY_SIZE(ats)); i++) {
        par = at(t, ats[i].write, ats[i].el0, va);
        if (ats[i].allowed ? (par & PAR_F) != 0
                           : (!(par & PAR_F) || PAR_FST(par) != FS_PERM || (par & PAR_S) != s_bit))
            return bad(va, ats[i].what, ats[i].allowed ? 0 : FS_PERM | s_bit, par);
    }
    if (!real)
        return 0;

    /* Real accesses: stamp the frame through the identity map, read it
     * through va; write through va and read through the identity map. */
    uint64_t v8 = va & ~7ull, pa8 = e->pa & ~7ull;
    volatile uint64_t *phys = (volatile uint64_t *)(uintptr_t)pa8;
    uint64_t tok = 0x6d6d750000000000ull ^ (++token_seq << 8) ^ va;
    *phys = tok;
    if (probe(t, 0, v8, 0, &p) || p.value != tok)
        return bad(va, "load through the mapping (ESR or value)", tok, p.esr ? p.esr : p.value);
    if (a & MMP_PROT_WRITE) {
        if (probe(t, 1, v8, ~tok, &p) || *phys != ~tok)
            return bad(va, "store through the mapping (ESR or value)", ~tok,
                       p.esr ? p.esr : *phys);
    } else {
        probe(t, 1, v8, ~tok, &p);
        if (!abort_is(&p, dabt, FS_PERM, v8) || !(p.esr & ESR_WNR) || *phys != tok)
            return bad(va, "store to a read-only VA (ESR)", FS_PERM, p.esr);
    }
    if (mem != 0)
        return 0; /* instruction fetch only from Normal WB memory */
    uint64_t v4 = va & ~3ull;
    *(volatile uint32_t *)(uintptr_t)(e->pa & ~3ull) = pl_ret_insn;
    probe(t, 2, v4, 0, &p);
    /* EL1 executes what is EXEC and, at stage 1, not EL0-accessible (USER is PXN). */
    if ((a & MMP_PROT_EXEC) && !(a & MMP_PROT_USER)) {
        if (p.esr)
            return bad(va, "execute from an executable VA (ESR)", 0, p.esr);
    } else if (!abort_is(&p, iabt, FS_PERM, v4)) {
        return bad(va, "execute from a non-executable VA (ESR)", FS_PERM, p.esr);
    }
    return 0;
}

uint64_t *pl_arch_desc_ptr(const struct pl_target *t, const struct mmp_pt *pt, uint64_t va)
{
    unsigned gs = gshift(t), bpl = gs - 3;
    struct mmp_pt_info info;
    /* Levels as the MMU walks them (a stage-2 root may be concatenated,
     * which the AT checks confirm). */
    if (mmp_pt_info(pt, &info))
        return 0;
    unsigned levels = info.levels;
    uint64_t *tbl = (uint64_t *)(uintptr_t)mmp_pt_root(pt);
    for (unsigned d = 0; d < levels; d++) {
        unsigned shift = gs + bpl * (levels - 1 - d);
        unsigned bits = d == 0 ? t->cfg.va_bits - shift : bpl;
        uint64_t *ent = &tbl[(va >> shift) & ((1ull << bits) - 1)];
        if (!(*ent & 1))
            return 0;
        if (d + 1 == levels || (*ent & 3) == 1)
            return ent;
        tbl = (uint64_t *)(uintptr_t)(*ent & PA_BITS & ~((1ull << gs) - 1));
    }
    return 0;
}

/* Clear AF (bit 10): mmp_pt_lookup does not decode it, the MMU faults. */
void pl_arch_flip(const struct pl_target *t, uint64_t *desc)
{
    (void)t;
    *desc &= ~(1ull << 10);
    mmp_arch_tlbi_el1_all();
}

uint64_t pl_arch_now_us(void)
{
    uint64_t f = pl_read_sysreg(cntfrq_el0);
    return f ? pl_read_sysreg(cntvct_el0) * 1000000 / f : 0;
}

int pl_arch_access(uint64_t va, int store, uint64_t value)
{
    struct pl_probe p;
    return (store ? pl_probe_store(va, value, &p) : pl_probe_load(va, &p)) != 0;
}

/* ---- a second CPU (common/smp.c) ---- */

/* The SMP scenario's table: EL1&0 stage 1, 4K granule, 48-bit VA (the
 * same regime on both CPUs, so EL1's AT and loads observe it on each). */
int pl_arch_smp_target(struct pl_target *t, const char **why)
{
    unsigned tg4 = (unsigned)(pl_read_sysreg(id_aa64mmfr0_el1) >> 28) & 0xf;
    int n = 0;
    if (tg4 == 0xf) {
        *why = "ID_AA64MMFR0_EL1.TGran4 = 0xf: no 4K granule";
        return -1;
    }
    add(t, &n, 1, 4096, 48, "arm64 4K 48-bit, SHARED");
    return 0;
}

static struct pl_cpu_boot cpu1_boot;
static uint8_t cpu1_stack[32768] __attribute__((aligned(16)));
static uint8_t cpu1_stack_el2[8192] __attribute__((aligned(16)));

int pl_arch_smp_start(const struct pl_target *t, const struct mmp_pt *pt, void (*fn)(void *),
                      void *arg, const char **why)
{
    (void)t;
    struct mmp_pt_regs r;
    static char msg[96];
    if (mmp_pt_regs(pt, 0, &r)) {
        *why = "mmp_pt_regs failed";
        return -1;
    }
    struct pl_cpu_boot *b = &cpu1_boot;
    b->cpu = 1;
    b->sp = (uint64_t)(uintptr_t)(cpu1_stack + sizeof(cpu1_stack));
    b->sp_el2 = (uint64_t)(uintptr_t)(cpu1_stack_el2 + sizeof(cpu1_stack_el2));
    b->mair = r.mair;
    b->tcr = r.tcr;
    b->ttbr0 = r.root;
    b->sctlr = pl_boot_sctlr;
    b->fn = fn;
    b->arg = arg;
    b->state = 0;
    /* CPU 1 reads the block with its MMU off (Device memory, no cache):
     * clean it to the point of coherency first (Arm ARM D7.5.9). */
    for (uintptr_t a = (uintptr_t)b & ~63ul; a < (uintptr_t)(b + 1); a += 64)
        __asm__ volatile("dc cvac, %0" ::"r"(a) : "memory");
    __asm__ volatile("dsb sy" ::: "memory");
    /* MPIDR affinity 1: QEMU virt numbers its CPUs in Aff0 (8 per cluster). */
    int64_t rc = pl_psci(PSCI_CPU_ON_64, 1, (uint64_t)(uintptr_t)pl_secondary_entry,
                         (uint64_t)(uintptr_t)b);
    if (rc) {
        pl_snprintf(msg, sizeof(msg), "PSCI CPU_ON (%s) of CPU 1 returned %ld%s",
                    pl_el2 ? "SMC" : "HVC", (long)rc,
                    rc == -2 ? " (INVALID_PARAMETERS: one CPU, QEMU without -smp 2)" : "");
        *why = msg;
        return -1;
    }
    if (pl_wait_for(&b->state, 1, 20000000)) {
        *why = "CPU 1 did not come up on the table within 20 s";
        return -1;
    }
    return 0;
}

int pl_arch_smp_join(uint64_t us)
{
    return pl_wait_for(&cpu1_boot.state, 2, us);
}

unsigned pl_arch_cpu(void)
{
    return pl_cpu();
}

int pl_arch_translate(const struct pl_target *t, uint64_t va, int write, uint64_t *pa)
{
    uint64_t par = at(t, write, 0, va);
    if (par & PAR_F)
        return PAR_FST(par) == FS_TRANS ? PL_FAULT_TRANS
               : PAR_FST(par) == FS_PERM ? PL_FAULT_PERM
                                         : PL_FAULT_OTHER;
    *pa = (par & PA_BITS) | (va & 0xfff);
    return 0;
}

int pl_arch_load(uint64_t va, uint64_t *v)
{
    struct pl_probe p;
    int rc = pl_probe_load(va, &p);
    *v = p.value;
    return rc != 0;
}
