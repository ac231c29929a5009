/* SPDX-License-Identifier: MIT */
/*
 * x86-64 descriptor format: 4-level (48-bit VA) and 5-level (LA57, 57-bit
 * VA) paging. Plain data manipulation, built on every host.
 *
 * Intel SDM Vol. 3A, 4.5 "4-Level Paging and 5-Level Paging": tables of
 * 512 8-byte entries at every level; bit 0 P, 1 R/W, 2 U/S, 3 PWT, 4 PCD,
 * 5 A, 6 D (leaves), 7 PS in PDPTEs/PDEs (1 GiB / 2 MiB leaves) and PAT in
 * PTEs, 8 G (leaves), 12 PAT in 1 GiB / 2 MiB leaves, 63 XD (needs
 * IA32_EFER.NXE). Addresses are bits 51:12 (Tables 4-15..4-20).
 *
 * Memory types use the power-on PAT (SDM 13.12.4: PA0 WB, PA2 UC-, PA3 UC),
 * so PAT/PCD/PWT = 000 WB, 010 UC- (MMP_MEM_NORMAL_NC), 011 UC (DEVICE).
 * Leaves carry A (and D when writable) preset: hardware then never needs a
 * locked update of a descriptor the hypervisor owns. Tables are P|RW|US|A
 * so that leaves alone decide permissions. x86 walkers are coherent with
 * stores and need no break-before-make; the engine flushes every changed
 * translation instead.
 *
 * AMD nested page tables (MMP_PT_X86_NPT) are this format with the nested
 * rules of AMD APM vol. 2, 15.25 "Nested Paging": the input is a guest-
 * physical address (no canonical form), every nested access is a user
 * access (15.25.5 "Nested Table Walk"), so U is set in every entry and
 * MMP_PROT_USER / MMP_PROT_GLOBAL are refused like on arm64 stage 2; NX
 * is honoured as the host's EFER.NXE says (mmport always sets it for
 * non-executable leaves, so the host runs with NXE = 1); PWT/PCD/PAT go
 * through the host's IA32_PAT, the power-on one assumed as above, and
 * combine with the guest's types (15.25.8 "Combining Memory Types").
 * Intel EPT (its own layout) is arch/x86/pt_ept.c, on the same geometry.
 */
#include "pt_x86.h"

#define X_P (1ull << 0)
#define X_RW (1ull << 1)
#define X_US (1ull << 2)
#define X_PWT (1ull << 3)
#define X_PCD (1ull << 4)
#define X_A (1ull << 5)
#define X_D (1ull << 6)
#define X_PS (1ull << 7)
#define X_PAT4K (1ull << 7)
#define X_G (1ull << 8)
#define X_PATLG (1ull << 12)
#define X_XD (1ull << 63)

int mmp_core_x86_pt_setup(struct mmp_pt_geom *g, const struct mmp_pt_config *cfg, uint64_t valid,
                          uint64_t tbl, uint64_t ign, bool physical)
{
    if (cfg->granule != 4096 || (cfg->flags & (MMP_PT_EL2 | MMP_PT_S2FWB)))
        return -MMP_EINVAL;
    if (cfg->va_bits != 48 && cfg->va_bits != 57)
        return -MMP_EINVAL;
    unsigned pa_bits = cfg->pa_bits ? cfg->pa_bits : 52;
    if (pa_bits < 32 || pa_bits > 52)
        return -MMP_EINVAL;
    unsigned nlev = cfg->va_bits == 57 ? 5 : 4;
    g->nlev = (uint8_t)nlev;
    g->first_level = (int8_t)nlev;
    g->level_step = -1;
    g->granule_shift = 12;
    g->va_bits = (uint8_t)cfg->va_bits;
    g->pa_bits = (uint8_t)pa_bits;
    g->sign_extend = !physical;
    g->bbm = 0;
    g->fmt_flags = cfg->flags & MMP_PT_X86_SIZE_BBM; /* (checked by mmp_pt_init) */
    g->valid_bit = valid;
    /* Locked entries (shared mode): bit 11, ignored in every x86-64, NPT and
     * EPT entry mmport writes (Intel SDM vol. 3A 4.5 tables 4-15..4-20,
     * vol. 3C 29.3.2 tables 29-1..29-6 "ignored"; AMD APM vol. 2 5.3.3 AVL),
     * and nothing at all is looked at with P = 0 / R = W = X = 0. */
    g->lock_bit = 1ull << 11;
    g->cont_bit = 0;
    g->ign_mask = ign;
    g->tbl_tmpl = tbl;
    g->tbl_oa_mask = mmp_core_pt_bits(51, 12);
    g->root_bytes = 4096;
    g->root_tables = 1;
    g->id_max = 0xfff; /* PCID, CR3 bits 11:0 */
    for (unsigned d = 0; d < nlev; d++) {
        unsigned level = nlev - d; /* 5/4 .. 1 */
        g->shift[d] = (uint8_t)(12 + 9 * (level - 1));
        g->nbits[d] = 9;
        g->leaf_ok[d] = level <= 3; /* PDPTE 1 GiB, PDE 2 MiB, PTE 4 KiB */
        g->cont[d] = 0;
        /* PS distinguishes a leaf from a table above level 1; a PTE is always a
         * leaf. Bit 0 is P here and EPT's R, which every EPT table has. */
        g->tbl_mask[d] = level > 1 ? (uint8_t)(X_P | X_PS) : 0;
        g->tbl_val[d] = level > 1 ? (uint8_t)X_P : 1;
        g->oa_mask[d] = mmp_core_pt_bits(51, g->shift[d]);
    }
    /* PTEs: address bits 51:MAXPHYADDR are reserved (Tables 4-20, 29-6). */
    g->leaf_rsv = mmp_core_pt_bits(51, pa_bits);
    /* mmp_pt_regs ids: a PCID of 12 bits in CR3 (SDM 3A 4.10.1); none for
     * EPT / NPT (VPID and ASID live in the VMCS / VMCB). */
    g->id_max = physical ? 0 : 0xfff;
    return 0;
}

/*
 * Tracking (core/pt_track.c): with MMP_PT_TRACK_HW the MMU's own D and A
 * (SDM 3A 4.8 "Accessed and Dirty Flags"; APM vol. 2 15.25.10 for NPT);
 * without it, software marks tracked write-protected leaves with bit 11,
 * ignored in every leaf (SDM 3A Tables 4-18..4-20; only HLAT paging, which
 * mmport does not build, gives it a meaning).
 */
#define X_TRK_SW (1ull << 11)

static int x86_track(struct mmp_pt_geom *g, const struct mmp_pt_config *cfg, int rc)
{
    g->trk_w = g->trk_w_on = X_RW;
    g->trk_a = X_A;
    g->trk_hw = (cfg->flags & MMP_PT_TRACK_HW) != 0;
    if (g->trk_hw)
        g->trk_d = X_D;
    else
        g->trk_m = X_TRK_SW;
    return rc;
}

/* Software bits: 9 and 10 (AVL) and 52..57, ignored in every x86-64 and
 * NPT leaf (Intel SDM vol. 3A 4.5 tables 4-18..4-20; AMD APM vol. 2
 * 5.3.3, 5.4.1); 11 is the lock and tracking mark, 59..62 protection
 * keys, 63 XD. */
static int x86_sw_track(struct mmp_pt_geom *g, const struct mmp_pt_config *cfg, int rc)
{
    static const uint8_t sw[] = {9, 10, 52, 53, 54, 55, 56, 57};
    mmp_core_pt_sw_bits(g, sw, sizeof sw);
    return x86_track(g, cfg, rc);
}

static int x86_setup(struct mmp_pt_geom *g, const struct mmp_pt_config *cfg)
{
    return x86_sw_track(
        g, cfg, mmp_core_x86_pt_setup(g, cfg, X_P, X_P | X_RW | X_US | X_A, X_A | X_D, false));
}

static bool is_npt(const struct mmp_pt_geom *g)
{
    return g->fmt->format == MMP_PT_X86_NPT;
}

static int x86_leaf(const struct mmp_pt_geom *g, unsigned d, uint32_t attrs, uint64_t *tmpl)
{
    unsigned bad = pt_attrs_rule(attrs);
    if (bad)
        return bad;
    /* NPT: U is implied (every nested access is a user one), G meaningless. */
    if (is_npt(g) && (attrs & (MMP_PROT_USER | MMP_PROT_GLOBAL)))
        return MMP_PT_RULE_NO_USER_GLOBAL;
    /* A and D preset, unless the MMU is to set them (MMP_PT_TRACK_HW). */
    uint64_t ad = g->trk_hw ? 0 : X_A, t = X_P | ad;
    if (is_npt(g))
        t |= X_US;
    if (attrs & MMP_PROT_WRITE)
        t |= X_RW | (ad ? X_D : 0);
    if (attrs & MMP_PROT_USER)
        t |= X_US;
    if (attrs & MMP_PROT_GLOBAL)
        t |= X_G;
    if (!(attrs & MMP_PROT_EXEC))
        t |= X_XD;
    switch (attrs & MMP_MEM_MASK) {
    case MMP_MEM_NORMAL_WB: break;
    case MMP_MEM_NORMAL_NC: t |= X_PCD; break;
    case MMP_MEM_DEVICE: t |= X_PCD | X_PWT; break;
    default: return MMP_PT_RULE_MEM_TYPE;
    }
    if (d + 1 < g->nlev)
        t |= X_PS;
    *tmpl = t;
    return 0;
}

static uint32_t x86_attrs(const struct mmp_pt_geom *g, unsigned d, uint64_t e)
{
    (void)d;
    uint32_t a = MMP_PROT_READ;
    if (e & (X_RW | g->trk_m)) /* a tracked leaf is write-protected, logically writable */
        a |= MMP_PROT_WRITE;
    if ((e & X_US) && !is_npt(g))
        a |= MMP_PROT_USER;
    if (e & X_G)
        a |= MMP_PROT_GLOBAL;
    if (!(e & X_XD))
        a |= MMP_PROT_EXEC;
    if (e & X_PCD)
        a |= (e & X_PWT) ? MMP_MEM_DEVICE : MMP_MEM_NORMAL_NC;
    return a;
}

/* A 1 GiB / 2 MiB leaf split one level down: PAT moves from bit 12 to bit 7
 * when the children are PTEs, where bit 7 no longer means PS. EPT uses it
 * too: bit 12 of its large leaves is reserved, so always clear (SDM 3C 29.3.2). */
uint64_t mmp_core_x86_pt_child(const struct mmp_pt_geom *g, unsigned d, uint64_t e)
{
    uint64_t t = e & ~g->oa_mask[d];
    bool pat = (t & X_PATLG) != 0;
    t &= ~X_PATLG;
    if (d + 2 == g->nlev) {
        t &= ~X_PS;
        if (pat)
            t |= X_PAT4K;
    } else if (pat) {
        t |= X_PATLG;
    }
    return t;
}

/*
 * Reserved bits of a valid x86-64 / NPT / EPT entry above the last level
 * (depth d) that the layouts share (SDM vol. 3A 4.5 Tables 4-15..4-20, vol. 3C 29.3.2 Tables
 * 29-1..29-6): bit 7 in PML5Es and PML4Es (x86-64: PS there is reserved;
 * EPT: one of bits 7:3), and in a leaf the address bits 51:pa_bits and,
 * in a large one (bit 7 set at PDPTE / PDE), those below its size (1 GiB:
 * 29:13, 2 MiB: 20:13; bit 12 is PAT, EPT: reserved too, lo = 12).
 * Table addresses are not checked against pa_bits: they are what
 * alloc_table returned. Returns those bits of e.
 */
uint64_t mmp_core_x86_pt_rsv(const struct mmp_pt_geom *g, unsigned d, uint64_t e, unsigned lo)
{
    unsigned level = g->nlev - d;
    if (level >= 4)
        return e & X_PS;
    if (!(e & X_PS))
        return 0;
    return e & (g->leaf_rsv | mmp_core_pt_bits(g->shift[d] - 1u, lo));
}

/* x86-64 and NPT: a set reserved bit is a reserved-bit page fault
 * (SDM vol. 3A 4.7, PFEC.RSVD; APM vol. 2 5.3.3). NXE = 1 is assumed
 * (XD is not reserved). */
static bool x86_reserved(const struct mmp_pt_geom *g, unsigned d, uint64_t e)
{
    return mmp_core_x86_pt_rsv(g, d, e, 13) != 0;
}

/*
 * x86 walkers are coherent with stores and there is no architectural
 * break-before-make, but a change of page size that also changes the frame
 * or the attributes must go not-present, flush, write (Intel SDM vol. 3A
 * 4.10.2.3, TLB note 317080): otherwise both translations could be cached
 * at once. A size-only change (split or fold keeping every translation)
 * may be one store with a later flush - except on AMD family 10h parts,
 * where it may form two TLB entries for one address and machine-check
 * (erratum 383, Revision Guide for AMD Family 10h Processors 41322: change
 * page sizes only after invalidating and flushing the entry): the caller
 * says so with MMP_PT_X86_SIZE_BBM.
 */
bool mmp_core_x86_pt_needs_bbm(const struct mmp_pt_geom *g, unsigned d, uint64_t old, uint64_t nw,
                               unsigned chg)
{
    (void)d;
    (void)old;
    (void)nw;
    if (g->fmt_flags & MMP_PT_X86_SIZE_BBM)
        return (chg & PT_CHG_SIZE) != 0;
    return (chg & PT_CHG_SIZE) && (chg & (PT_CHG_OA | PT_CHG_ATTR));
}

/* CR3 (SDM 3A 4.5, Table 4-12/4-13: PCID in bits 11:0 with CR4.PCIDE);
 * nCR3 (APM vol. 2, 15.25.4: the nested table's root, no PCID). */
static void x86_regs(const struct mmp_pt_geom *g, uint64_t root_pa, uint16_t id,
                     struct mmp_pt_regs *out)
{
    out->root = root_pa | (is_npt(g) ? 0 : id);
}

/* NPT input addresses are guest-physical: no canonical form. */
static int npt_setup(struct mmp_pt_geom *g, const struct mmp_pt_config *cfg)
{
    return x86_sw_track(
        g, cfg, mmp_core_x86_pt_setup(g, cfg, X_P, X_P | X_RW | X_US | X_A, X_A | X_D, true));
}

const struct mmp_pt_fmt mmp_core_pt_fmt_x86_64 = {
    .format = MMP_PT_X86_64,
    .setup = x86_setup,
    .leaf = x86_leaf,
    .attrs = x86_attrs,
    .child = mmp_core_x86_pt_child,
    .needs_bbm = mmp_core_x86_pt_needs_bbm,
    .reserved = x86_reserved,
    .regs = x86_regs,
};

const struct mmp_pt_fmt mmp_core_pt_fmt_x86_npt = {
    .format = MMP_PT_X86_NPT,
    .setup = npt_setup,
    .leaf = x86_leaf,
    .attrs = x86_attrs,
    .child = mmp_core_x86_pt_child,
    .needs_bbm = mmp_core_x86_pt_needs_bbm,
    .reserved = x86_reserved,
    .regs = x86_regs,
};
