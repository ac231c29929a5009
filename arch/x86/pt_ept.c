/* SPDX-License-Identifier: MIT */
/*
 * Intel EPT descriptor format (MMP_PT_X86_EPT): guest-physical to
 * host-physical, 4-level or 5-level (EPTP page-walk length 4 / 5), on the
 * x86 geometry of pt_x86.c. Plain data manipulation, built on every host.
 *
 * Intel SDM vol. 3C, 29.3.2 "EPT Translation Mechanism" (Tables 29-1..29-6):
 * bit 0 read, 1 write, 2 execute (supervisor execute with mode-based
 * execute control); leaves: 5:3 EPT memory type, 6 ignore PAT, 7 "maps a
 * page" in PDPTEs (1 GiB) and PDEs (2 MiB), 8 accessed, 9 dirty (both only
 * with EPTP bit 6, 29.3.5 "Accessed and Dirty Flags for EPT"), 10 user
 * execute (MBEC), 63 suppress #VE. An entry is present when any of bits
 * 2:0 is set. Addresses are bits N-1:12 (N = MAXPHYADDR = pa_bits).
 *
 * 29.3.3.1 "EPT Misconfigurations" — none of these can be built here:
 * - write without read (bits 1:0 = 10b): a leaf needs MMP_PROT_READ for
 *   WRITE (-EINVAL);
 * - execute-only (bits 2:0 = 100b) where IA32_VMX_EPT_VPID_CAP bit 0 is
 *   clear (SDM A.10): accepted only with MMP_PT_EPT_XO (-EINVAL otherwise);
 * - a reserved memory type (2, 3, 7): types come from a fixed table;
 * - reserved bits: bits 7:3 of PML5Es/PML4Es and 6:3 of table PDPTEs/PDEs
 *   stay 0 (tables are RWX only), 20:12 / 29:12 of large leaves (addresses
 *   are aligned by the engine), bits 51:N (-ERANGE beyond pa_bits).
 * Suppress #VE (bit 63) is left clear: it matters only with the
 * "EPT-violation #VE" control, and then clear means violations become #VE
 * in the guest for convertible entries; a hypervisor using #VE sets it
 * itself outside this library.
 *
 * Memory types (29.3.7.2 "Memory Type Used for Translated Guest-Physical
 * Addresses"; with IPAT = 0 the EPT type combines with the guest's PAT as
 * an MTRR type would, SDM 3A Table 13-7):
 *   MMP_MEM_NORMAL_WB  WB (6), IPAT 0: the guest's PAT decides, as on bare metal
 *   MMP_MEM_NORMAL_NC  UC (0), IPAT 0: uncached, a guest WC mapping stays WC
 *                      (the EPT analogue of the x86-64 format's UC-)
 *   MMP_MEM_DEVICE     UC (0), IPAT 1: uncached whatever the guest says
 *   MMP_MEM_WC/WT/WP   1 / 4 / 5, IPAT 1: exactly that type
 * Tables are R|W|X (29.3.2: access rights are the AND over the walk), plus
 * A preset with MMP_PT_EPT_AD, so leaves alone decide; leaves get A (and
 * D when writable) preset then, so the CPU never has to update an entry
 * the hypervisor owns. With A/D enabled, guest paging-structure reads
 * count as writes (29.3.5): map guest page tables writable.
 *
 * Mode-based execute control (MMP_PT_EPT_MBEC; 29.3.2 Tables 29-1..29-6,
 * the secondary processor-based VM-execution control bit 22, 25.6.2 Table
 * 25-7): bit 2 then allows fetches from supervisor-mode linear addresses
 * (MMP_PROT_EXEC), bit 10 from user-mode ones (MMP_PROT_UEXEC), and an
 * entry is present when any of bits 2:0 or bit 10 is set, so bit 10
 * joins valid_bit and the table template. The misconfiguration list
 * (29.3.3.1) names execute-only as bits 2:0 = 100b; a leaf with bit 10
 * and neither R nor W is the same "fetch but no read" case for user
 * mode, so any leaf without R that executes in either mode needs
 * MMP_PT_EPT_XO: refused otherwise, whichever way a CPU reads it.
 */
#include "pt_x86.h"

#define E_R (1ull << 0)
#define E_W (1ull << 1)
#define E_X (1ull << 2)
#define E_MT_SHIFT 3
#define E_MT (7ull << E_MT_SHIFT)
#define E_IPAT (1ull << 6)
#define E_LEAF (1ull << 7)
#define E_A (1ull << 8)
#define E_D (1ull << 9)
#define E_XU (1ull << 10)
#define E_TRK_SW (1ull << 11)

/* EPT memory types (SDM 3C 29.3.7, 3A 13.3 Table 13-1). */
enum { MT_UC = 0, MT_WC = 1, MT_WT = 4, MT_WP = 5, MT_WB = 6 };

static const struct {
    uint32_t mem;
    uint8_t mt, ipat;
} ept_types[] = {
    {MMP_MEM_NORMAL_WB, MT_WB, 0}, {MMP_MEM_NORMAL_NC, MT_UC, 0}, {MMP_MEM_DEVICE, MT_UC, 1},
    {MMP_MEM_WC, MT_WC, 1},        {MMP_MEM_WT, MT_WT, 1},        {MMP_MEM_WP, MT_WP, 1},
};
#define N_TYPES (sizeof ept_types / sizeof ept_types[0])

/* Bits 5:0 (R, W, X, memory type) of a valid leaf that make it an EPT
 * misconfiguration (29.3.3.1): write without read, execute-only without
 * the capability, memory type 2, 3 or 7. */
static bool ept_bad_low(const struct mmp_pt_geom *g, uint64_t e)
{
    uint64_t rwx = e & (E_R | E_W | E_X);
    unsigned mt = (unsigned)((e & E_MT) >> E_MT_SHIFT);
    if (!rwx)
        return false; /* not present */
    return rwx == E_W || rwx == (E_W | E_X) ||
           (rwx == E_X && !(g->fmt_flags & MMP_PT_EPT_XO)) || mt == 2 || mt == 3 || mt == 7;
}

static int ept_setup(struct mmp_pt_geom *g, const struct mmp_pt_config *cfg)
{
    bool ad = (cfg->flags & MMP_PT_EPT_AD) != 0;
    uint64_t rwx = E_R | E_W | E_X | (cfg->flags & MMP_PT_EPT_MBEC ? E_XU : 0);
    int rc = mmp_core_x86_pt_setup(g, cfg, rwx, rwx | (ad ? E_A : 0), ad ? E_A | E_D : 0, true);
    g->fmt_flags = cfg->flags & (MMP_PT_EPT_XO | MMP_PT_EPT_AD | MMP_PT_EPT_MBEC);
    g->features = cfg->flags & MMP_PT_EPT_MBEC ? MMP_PT_FEAT_EPT_MBEC : 0;
    /* PTE misconfigurations are a matter of bits 5:0 (ept_bad_low). */
    for (unsigned i = 0; i < 64; i++)
        if (ept_bad_low(g, i))
            g->leaf_bad |= 1ull << i;
    /* Tracking (core/pt_track.c): hardware A/D (29.3.5) need EPTP bit 6;
     * software marks tracked leaves with bit 11, ignored in every EPT
     * entry (Tables 29-1..29-6). */
    g->trk_w = g->trk_w_on = E_W;
    /* Software bits: 52..56, 59 and 62, ignored in every EPT leaf whatever
     * the VM-execution controls (SDM vol. 3C 29.3.2 tables 29-4..29-6; 57,
     * 58, 60, 61 and 63 take a meaning with guest-paging verification,
     * shadow stacks, sub-page permissions or #VE; 10 with MBEC). */
    static const uint8_t sw[] = {52, 53, 54, 55, 56, 59, 62};
    mmp_core_pt_sw_bits(g, sw, sizeof sw);
    g->trk_hw = (cfg->flags & MMP_PT_TRACK_HW) != 0;
    if (g->trk_hw && !ad)
        return -MMP_EINVAL;
    g->trk_a = ad ? E_A : 0;
    if (g->trk_hw)
        g->trk_d = E_D;
    else
        g->trk_m = E_TRK_SW;
    return rc;
}

static int ept_leaf(const struct mmp_pt_geom *g, unsigned d, uint32_t attrs, uint64_t *tmpl)
{
    uint32_t x = MMP_PROT_EXEC | (g->fmt_flags & MMP_PT_EPT_MBEC ? MMP_PROT_UEXEC : 0);
    uint32_t p = attrs & (MMP_PROT_READ | MMP_PROT_WRITE | x);
    /* USER and GLOBAL mean nothing at the second stage; UEXEC only with MBEC. */
    if (attrs & ~(p | MMP_MEM_MASK))
        return attrs & ~(MMP_PROT_MASK | MMP_PROT_UEXEC | MMP_MEM_MASK) ? MMP_PT_RULE_ATTRS_UNKNOWN
               : attrs & (MMP_PROT_USER | MMP_PROT_GLOBAL) ? MMP_PT_RULE_NO_USER_GLOBAL
                                                            : MMP_PT_RULE_UEXEC;
    /* Misconfigurations (29.3.3.1): W without R; execute without R (in
     * either mode) without the execute-only capability. Nothing at all
     * would be "not present". */
    if (!(p & MMP_PROT_READ) && (p & MMP_PROT_WRITE))
        return MMP_PT_RULE_EPT_WRITE_NEEDS_READ;
    if (!(p & MMP_PROT_READ) && !(p & x))
        return MMP_PT_RULE_READ_NEEDED;
    if (!(p & MMP_PROT_READ) && !(g->fmt_flags & MMP_PT_EPT_XO))
        return MMP_PT_RULE_EPT_EXEC_ONLY;
    uint64_t t = (p & MMP_PROT_READ ? E_R : 0) | (p & MMP_PROT_WRITE ? E_W : 0) |
                 (p & MMP_PROT_EXEC ? E_X : 0) | (p & MMP_PROT_UEXEC ? E_XU : 0);
    size_t i = 0;
    while (i < N_TYPES && ept_types[i].mem != (attrs & MMP_MEM_MASK))
        i++;
    if (i == N_TYPES)
        return MMP_PT_RULE_MEM_TYPE;
    t |= (uint64_t)ept_types[i].mt << E_MT_SHIFT | (ept_types[i].ipat ? E_IPAT : 0);
    if ((g->fmt_flags & MMP_PT_EPT_AD) && !g->trk_hw) /* TRACK_HW: the CPU sets them */
        t |= E_A | (p & MMP_PROT_WRITE ? E_D : 0);
    if (d + 1 < g->nlev)
        t |= E_LEAF;
    *tmpl = t;
    return 0;
}

static uint32_t ept_attrs(const struct mmp_pt_geom *g, unsigned d, uint64_t e)
{
    (void)d;
    uint32_t a = (e & E_R ? MMP_PROT_READ : 0) | (e & (E_W | g->trk_m) ? MMP_PROT_WRITE : 0) |
                 (e & E_X ? MMP_PROT_EXEC : 0) |
                 (e & E_XU && g->fmt_flags & MMP_PT_EPT_MBEC ? MMP_PROT_UEXEC : 0);
    unsigned mt = (unsigned)((e & E_MT) >> E_MT_SHIFT), ipat = (e & E_IPAT) != 0;
    for (size_t i = 0; i < N_TYPES; i++)
        if (ept_types[i].mt == mt && ept_types[i].ipat == ipat)
            return a | ept_types[i].mem;
    return a | MMP_MEM_DEVICE; /* not produced by ept_leaf */
}

/*
 * A valid entry above the last level that is an EPT misconfiguration
 * (29.3.3.1): as ept_bad_low, or reserved bits (bits 7:3 of PML5Es and
 * PML4Es, 6:3 of tables, 29:12 / 20:12 of large leaves, 51:N). A table
 * without read access is refused too: mmport's tables are R|W|X and its
 * decoder tells tables by R (bit 0), so it would read one as a leaf.
 */
static bool ept_reserved(const struct mmp_pt_geom *g, unsigned d, uint64_t e)
{
    unsigned level = g->nlev - d;
    if (level >= 4 || !(e & E_LEAF)) { /* a table */
        uint64_t rsv = level >= 4 ? mmp_core_pt_bits(7, 3) : mmp_core_pt_bits(6, 3);
        return !(e & E_R) || (e & rsv) || ept_bad_low(g, e);
    }
    return ept_bad_low(g, e) || mmp_core_x86_pt_rsv(g, d, e, 12);
}

/* EPTP (SDM 3C 25.6.11, Table 25-9): bits 2:0 the memory type of the walk
 * (WB), 5:3 page-walk length - 1, 6 A/D enable, address bits N-1:12.
 * MBEC is a VM-execution control, not an EPTP bit (mmp_pt_info features). */
static void ept_regs(const struct mmp_pt_geom *g, uint64_t root_pa, uint16_t id,
                     struct mmp_pt_regs *out)
{
    (void)id;
    out->root = root_pa | MT_WB | (uint64_t)(g->nlev - 1) << 3 |
                (g->fmt_flags & MMP_PT_EPT_AD ? 1ull << 6 : 0);
}

const struct mmp_pt_fmt mmp_core_pt_fmt_x86_ept = {
    .format = MMP_PT_X86_EPT,
    .setup = ept_setup,
    .leaf = ept_leaf,
    .attrs = ept_attrs,
    .child = mmp_core_x86_pt_child,
    .needs_bbm = mmp_core_x86_pt_needs_bbm,
    .reserved = ept_reserved,
    .regs = ept_regs,
};
