/* SPDX-License-Identifier: MIT */
/*
 * arm64 VMSAv8-64 descriptor formats, stage 1 and stage 2, for the 4K, 16K
 * and 64K granules, with 48-bit output addresses or (pa_bits = 52) the
 * 52-bit layouts: FEAT_LPA2 for 4K/16K and FEAT_LPA for 64K. Plain data
 * manipulation, built on every host.
 *
 * Arm ARM (DDI 0487), D8.3 "Translation table descriptor formats":
 * bits[1:0] 0b11 = table (levels 0-2) or page (level 3), 0b01 = block
 * (levels 1-2), bit 0 clear = invalid. Lower attributes: AttrIndx[4:2]
 * (stage 1) / MemAttr[5:2] (stage 2), AP[7:6] / S2AP[7:6], SH[9:8],
 * AF[10], nG[11] (stage 1). Upper: Contiguous[52], PXN[53], UXN/XN[54]
 * (stage 2: XN[54:53], FEAT_XNX; without it bit 53 is RES0).
 *
 * D8.6.1 (the Contiguous bit): a naturally aligned run of entries, all
 * valid, contiguous in output address, with identical attributes; run
 * lengths 16 (4K, levels 2-3), 32 (16K level 2) / 128 (16K level 3),
 * 32 (64K, levels 2-3). Blocks: 4K 1 GiB (L1) and 2 MiB (L2), 16K 32 MiB
 * (L2), 64K 512 MiB (L2).
 *
 * Stage 1 assumes this MAIR_ELx layout (mmp_pt_info() reports it):
 *   Attr0 = 0xff Normal WB (inner/outer write-back, read/write-allocate)
 *   Attr1 = 0x44 Normal non-cacheable
 *   Attr2 = 0x04 Device-nGnRE
 * Every leaf is inner shareable (SH = 0b11) with AF set, so neither the
 * access-flag fault nor hardware AF updates touch descriptors mmport owns.
 * USER mappings are PXN (EL1 never executes EL0 memory) and UXN = !EXEC;
 * kernel mappings are UXN and PXN = !EXEC; nG = !MMP_PROT_GLOBAL.
 * The layout serves the EL1&0 and the EL2&0 (VHE) regimes. With
 * MMP_PT_EL2, the single-range EL2 (E2H = 0) / EL3 layout: AP[1] is RES1,
 * bit 54 is the one XN bit and bit 53 RES0, and there is no nG (no ASIDs),
 * so USER and GLOBAL cannot be expressed (as Trusted Firmware-A's
 * translation library does for those regimes).
 *
 * Stage 2 (HCR_EL2.FWB = 0): MemAttr 0b1111 Normal WB, 0b0101 Normal NC,
 * 0b0001 Device-nGnRE; S2AP[6] read, S2AP[7] write; XN = !EXEC. The
 * starting level follows D8.2 / VTCR_EL2: as few levels as allow, using up
 * to 16 concatenated tables at the start level (4 extra index bits), as
 * KVM does; e.g. a 40-bit IPA with the 4K granule starts at level 1 with
 * 2 concatenated tables (VTCR_EL2.SL0 = 1, T0SZ = 24).
 *
 * Stage 2 with HCR_EL2.FWB = 1 (MMP_PT_S2FWB, D8.6.6 tables D8-100/101):
 * MemAttr[3] RES0, MemAttr[2:0] 0b110 Normal WB whatever stage 1 says,
 * 0b101 Normal NC (Device at stage 1 stays Device), 0b001 Device-nGnRE.
 *
 * 52-bit output addresses (pa_bits = 52), D8.3.1 tables D8-50..53:
 * - FEAT_LPA2, 4K and 16K (TCR_ELx.DS / VTCR_EL2.DS = 1): OA[49:48] sit
 *   in descriptor bits 49:48 (in place) and OA[51:50] in bits 9:8, in
 *   block, page and table descriptors alike, so SH[1:0] leaves the
 *   descriptor: shareability comes from TCR_ELx.SH0 / VTCR_EL2.SH0
 *   (mmp_pt_regs sets inner shareable, what the 48-bit leaves carry).
 *   Input addresses up to 52 bits: 4K adds level -1 (IA[51:48], tables
 *   only, D8.2.8 table D8-16, T0SZ 12..15) and allows 512 GiB level-0
 *   blocks (table D8-17); 16K indexes IA[51:47] at level 0 and allows
 *   64 GiB level-1 blocks (tables D8-26/27).
 * - FEAT_LPA, 64K: OA[51:48] in descriptor bits 15:12 (tables and
 *   leaves); 4 TiB level-1 blocks (D8.2.10 tables D8-35/36). A stage-1
 *   input above 48 bits needs FEAT_LVA only (level 1 indexes IA[51:42]),
 *   a stage-2 one FEAT_LPA.
 * - TTBR0_ELx / VTTBR_EL2 then hold BADDR[51:48] in bits 5:2 (D24.2.209).
 * - Stage 2 with 4K and an IPA of 49..52 bits starts at level 0 with
 *   2..16 concatenated tables (D8.2.8.2 table D8-21), as KVM does, so the
 *   level -1 start (VTCR_EL2.SL2 = 1, SL0 = 0, table D8-19) is not used.
 */
#include "pt_fmt.h"

#define A_VALID (1ull << 0)
#define A_TABLE (1ull << 1) /* table (L0-2) or page (L3) */
#define A_AP1 (1ull << 6)   /* EL0 access / S2AP read */
#define A_AP2 (1ull << 7)   /* read-only / S2AP write */
#define A_SH_IS (3ull << 8)
#define A_AF (1ull << 10)
#define A_NG (1ull << 11)
#define A_DBM (1ull << 51) /* dirty bit modifier (FEAT_HAFDBS) */
#define A_CONT (1ull << 52)
#define A_PXN (1ull << 53)
#define A_UXN (1ull << 54) /* XN for stage 2 */
#define A_TRK_SW (1ull << 55) /* software tracking mark: bits 58:55 are for software */

#define HCR_FWB (1ull << 46) /* HCR_EL2.FWB (D24.2.72) */

static int arm64_geom(struct mmp_pt_geom *g, const struct mmp_pt_config *cfg, bool s2)
{
    unsigned gs;
    switch (cfg->granule) {
    case 4096: gs = 12; break;
    case 16384: gs = 14; break;
    case 65536: gs = 16; break;
    default: return -MMP_EINVAL;
    }
    unsigned bpl = gs - 3, va = cfg->va_bits;
    unsigned pa = cfg->pa_bits ? cfg->pa_bits : 48;
    if (pa < 32 || (pa > 48 && pa != 52))
        return -MMP_EINVAL;
    bool pa52 = pa == 52, ds = pa52 && gs != 16; /* FEAT_LPA2; 64K: FEAT_LPA */
    /* Widest input (D8.1.8-D8.1.10): 52 bits with DS; 64K stage 1 with
     * FEAT_LVA (any output size); 64K stage 2 with FEAT_LPA (IPA <= PA). */
    unsigned va_max = ds || (gs == 16 && (!s2 || pa52)) ? 52 : 48;
    if (s2 ? (va < 32 || va > va_max) : (va < 25 || va > va_max))
        return -MMP_EINVAL;
    if (s2 && (cfg->flags & MMP_PT_EL2))
        return -MMP_EINVAL;
    if (!s2 && (cfg->flags & MMP_PT_S2FWB))
        return -MMP_EINVAL;
    /* Levels: stage 2 may resolve up to 4 more bits at the start level by
     * concatenating up to 16 tables. */
    unsigned extra = s2 ? 4 : 0;
    unsigned levels = (va - extra - gs + bpl - 1) / bpl;
    if (s2 && levels < 2)
        levels = 2; /* 64K IPA 32/33: start at level 2, small root (as KVM) */
    /* Level -1 exists for 4K with DS only; 64K never has a level 0. */
    unsigned max_levels = gs == 16 ? 3 : ds && gs == 12 ? 5 : 4;
    if (levels < 2 || levels > max_levels)
        return -MMP_ENOTSUP; /* too few bits for two levels */
    int start = 4 - (int)levels;
    unsigned oa_top = ds ? 49 : 47; /* highest OA bit held in place */
    g->nlev = (uint8_t)levels;
    g->first_level = (int8_t)start;
    g->level_step = 1;
    g->granule_shift = (uint8_t)gs;
    g->va_bits = (uint8_t)va;
    g->pa_bits = (uint8_t)pa;
    g->sign_extend = 0;
    g->bbm = 1;
    g->one_range = (cfg->flags & MMP_PT_EL2) != 0;
    g->fmt_flags = cfg->flags & MMP_PT_BBML2; /* arm64_needs_bbm() */
    g->valid_bit = A_VALID;
    /* Locked entries (shared mode): bit 58, one of bits [58:55] that valid
     * descriptors reserve for software, and ignored with bit 0 clear (Arm
     * ARM D8.3.1: an invalid descriptor's bits [63:1] are ignored). */
    g->lock_bit = 1ull << 58;
    /* Software bits: 56 and 57, the two of bits [58:55] (reserved for
     * software in block and page descriptors, D8.3.1) that mmport leaves
     * to the caller (55 marks software-tracked leaves, 58 locks). */
    static const uint8_t sw[] = {56, 57};
    mmp_core_pt_sw_bits(g, sw, sizeof sw);
    g->cont_bit = A_CONT;
    /*
     * Tracking (core/pt_track.c). Bit 7 is the write permission both ways
     * round: AP[2] set = read-only (stage 1), S2AP[1] set = writable
     * (stage 2). With MMP_PT_TRACK_HW (FEAT_HAFDBS, D8.4.6 / D8.4.7 in DDI
     * 0487 K.a "Hardware management of the Access flag / dirty state") the
     * MMU sets AF and makes DBM leaves writable on a write, so those bits
     * are ones the hardware changes; otherwise software marks tracked,
     * write-protected leaves with bit 55. AF is state, never an attribute,
     * either way (test_clear_young clears it, the fault calls set it).
     */
    g->trk_w = A_AP2;
    g->trk_w_on = s2 ? A_AP2 : 0;
    g->trk_a = A_AF;
    g->trk_hw = (cfg->flags & MMP_PT_TRACK_HW) != 0;
    g->trk_m = g->trk_hw ? A_DBM : A_TRK_SW;
    g->ign_mask = A_AF;
    if (g->trk_hw) {
        g->ign_mask = A_AF | A_AP2;
        g->features |= MMP_PT_FEAT_HAFDBS;
    }
    if (ds) {
        g->oa_field = mmp_core_pt_bits(9, 8);
        g->oa_shift = 50 - 8;
        g->features |= MMP_PT_FEAT_LPA2;
    } else if (pa52) {
        g->oa_field = mmp_core_pt_bits(15, 12);
        g->oa_shift = 48 - 12;
        g->features |= MMP_PT_FEAT_LPA;
    }
    if (gs == 16 && !s2 && va > 48)
        g->features |= MMP_PT_FEAT_LVA;
    g->tbl_tmpl = A_VALID | A_TABLE; /* no APTable/XNTable limits: leaves decide */
    g->tbl_oa_mask = mmp_core_pt_bits(oa_top, gs) | g->oa_field;
    for (unsigned d = 0; d < levels; d++) {
        int level = start + (int)d;
        g->shift[d] = (uint8_t)(gs + bpl * (unsigned)(3 - level));
        g->nbits[d] = (uint8_t)bpl;
        /* Blocks: 4K L1/L2 (+ L0 with DS), 16K L2 (+ L1 with DS), 64K L2
         * (+ L1 with FEAT_LPA); tables D8-17, D8-27, D8-36. */
        g->leaf_ok[d] = level == 3 || level == 2 || (level == 1 && (gs == 12 || pa52)) ||
                        (level == 0 && ds && gs == 12);
        g->cont[d] = 0;
        if (level == 3)
            g->cont[d] = gs == 12 ? 4 : gs == 14 ? 7 : 5;
        if (level == 2)
            g->cont[d] = gs == 12 ? 4 : 5;
        g->tbl_mask[d] = level < 3 ? 3 : 0;
        g->tbl_val[d] = level < 3 ? 3 : 1;
        g->oa_mask[d] = mmp_core_pt_bits(oa_top, g->shift[d]) | g->oa_field;
    }
    /* Level 3: bits[1:0] 0b01 is reserved (arm64_reserved); a page's
     * output address at or above 2^pa_bits is an address size fault. */
    g->leaf_bad = 0x2222222222222222ull; /* bits[1:0] = 0b01 */
    g->leaf_rsv = pa < 48 ? mmp_core_pt_bits(47, pa) : 0;
    unsigned root_bits = va - g->shift[0];
    if (root_bits > bpl + extra)
        return -MMP_ENOTSUP;
    g->nbits[0] = (uint8_t)root_bits;
    g->root_tables = (uint8_t)(root_bits > bpl ? 1u << (root_bits - bpl) : 1);
    g->root_bytes = (uint32_t)(root_bits > bpl ? 8u << root_bits : 1u << gs);
    /* VTCR_EL2.SL0: 4K counts down from level 2 (0 = L2, 1 = L1, 2 = L0),
     * 16K and 64K from level 3 (0 = L3, 1 = L2, 2 = L1, 16K 3 = L0);
     * D8.2.8.2 table D8-19, D8.2.9.2 table D8-29. */
    g->start_level_enc = (uint8_t)(s2 ? (gs == 12 ? 2 - start : 3 - start) : 0);
    g->id_max = g->one_range ? 0 : 0xffff; /* the EL2 regime has no ASIDs */
    if (s2) {
        g->hcr_set = (cfg->flags & MMP_PT_S2FWB) ? HCR_FWB : 0;
        g->maint = (uint8_t)(MMP_PT_MAINT_ICACHE_INVAL |
                             (g->hcr_set ? 0 : MMP_PT_MAINT_DCACHE_CLEAN));
    }
    return 0;
}

static int s1_setup(struct mmp_pt_geom *g, const struct mmp_pt_config *cfg)
{
    return arm64_geom(g, cfg, false);
}

static int s2_setup(struct mmp_pt_geom *g, const struct mmp_pt_config *cfg)
{
    return arm64_geom(g, cfg, true);
}

static uint64_t type_bits(const struct mmp_pt_geom *g, unsigned d)
{
    return d + 1 == g->nlev ? A_VALID | A_TABLE : A_VALID; /* page 0b11, block 0b01 */
}

/* Type, AF (unless the MMU sets it) and (unless FEAT_LPA2 moved OA[51:50]
 * there) SH = inner. */
static uint64_t leaf_base(const struct mmp_pt_geom *g, unsigned d)
{
    return type_bits(g, d) | (g->trk_hw ? 0 : A_AF) |
           ((g->features & MMP_PT_FEAT_LPA2) ? 0 : A_SH_IS);
}

static int s1_leaf(const struct mmp_pt_geom *g, unsigned d, uint32_t attrs, uint64_t *tmpl)
{
    unsigned bad = pt_attrs_rule(attrs);
    if (bad)
        return bad;
    uint64_t t = leaf_base(g, d);
    switch (attrs & MMP_MEM_MASK) {
    case MMP_MEM_NORMAL_WB: t |= 0ull << 2; break;
    case MMP_MEM_NORMAL_NC: t |= 1ull << 2; break;
    case MMP_MEM_DEVICE: t |= 2ull << 2; break;
    default: return MMP_PT_RULE_MEM_TYPE;
    }
    if (!(attrs & MMP_PROT_WRITE))
        t |= A_AP2;
    else if (g->trk_hw)
        t |= A_AP2 | A_DBM; /* clean: the MMU clears AP[2] on the first write */
    if (g->one_range) {
        if (attrs & (MMP_PROT_USER | MMP_PROT_GLOBAL))
            return MMP_PT_RULE_NO_USER_GLOBAL;
        *tmpl = t | A_AP1 | ((attrs & MMP_PROT_EXEC) ? 0 : A_UXN); /* AP[1] RES1; XN */
        return 0;
    }
    if (attrs & MMP_PROT_USER)
        t |= A_AP1 | A_PXN | ((attrs & MMP_PROT_EXEC) ? 0 : A_UXN);
    else
        t |= A_UXN | ((attrs & MMP_PROT_EXEC) ? 0 : A_PXN);
    if (!(attrs & MMP_PROT_GLOBAL))
        t |= A_NG;
    *tmpl = t;
    return 0;
}

static uint32_t s1_attrs(const struct mmp_pt_geom *g, unsigned d, uint64_t e)
{
    (void)d;
    static const uint32_t mem[8] = {MMP_MEM_NORMAL_WB, MMP_MEM_NORMAL_NC, MMP_MEM_DEVICE,
                                    MMP_MEM_DEVICE,    MMP_MEM_DEVICE,    MMP_MEM_DEVICE,
                                    MMP_MEM_DEVICE,    MMP_MEM_DEVICE};
    uint32_t a = MMP_PROT_READ | mem[(e >> 2) & 7];
    if (!(e & A_AP2) || (e & g->trk_m)) /* tracked: logically writable */
        a |= MMP_PROT_WRITE;
    if (g->one_range)
        return a | ((e & A_UXN) ? 0 : MMP_PROT_EXEC);
    if (e & A_AP1)
        a |= MMP_PROT_USER | ((e & A_UXN) ? 0 : MMP_PROT_EXEC);
    else
        a |= (e & A_PXN) ? 0 : MMP_PROT_EXEC;
    if (!(e & A_NG))
        a |= MMP_PROT_GLOBAL;
    return a;
}

static int s2_leaf(const struct mmp_pt_geom *g, unsigned d, uint32_t attrs, uint64_t *tmpl)
{
    unsigned bad = pt_attrs_rule(attrs);
    if (bad)
        return bad;
    if (attrs & (MMP_PROT_USER | MMP_PROT_GLOBAL))
        return MMP_PT_RULE_NO_USER_GLOBAL; /* no EL0/global distinction at stage 2 */
    uint64_t t = leaf_base(g, d) | A_AP1;
    bool fwb = (g->hcr_set & HCR_FWB) != 0;
    switch (attrs & MMP_MEM_MASK) {
    case MMP_MEM_NORMAL_WB: t |= (fwb ? 0x6ull : 0xfull) << 2; break;
    case MMP_MEM_NORMAL_NC: t |= 0x5ull << 2; break; /* the same value either way */
    case MMP_MEM_DEVICE: t |= 0x1ull << 2; break;
    default: return MMP_PT_RULE_MEM_TYPE;
    }
    if (attrs & MMP_PROT_WRITE) /* TRACK_HW: clean, the MMU sets S2AP[1] */
        t |= g->trk_hw ? A_DBM : A_AP2;
    if (!(attrs & MMP_PROT_EXEC))
        t |= A_UXN;
    *tmpl = t;
    return 0;
}

static uint32_t s2_attrs(const struct mmp_pt_geom *g, unsigned d, uint64_t e)
{
    (void)d;
    unsigned ma = (unsigned)(e >> 2) & 0xf, wb = (g->hcr_set & HCR_FWB) ? 0x6 : 0xf;
    uint32_t a = ma == wb ? MMP_MEM_NORMAL_WB : ma == 0x5 ? MMP_MEM_NORMAL_NC : MMP_MEM_DEVICE;
    if (e & A_AP1)
        a |= MMP_PROT_READ;
    if (e & (A_AP2 | g->trk_m))
        a |= MMP_PROT_WRITE;
    if (!(e & A_UXN))
        a |= MMP_PROT_EXEC;
    return a;
}

/*
 * Descriptors above level 3 the walk would fault on (Arm ARM D8.3.1;
 * level 3 is leaf_rsv / leaf_bad): bits[1:0] 0b01 at a level without
 * block descriptors for the granule and output size (blocks: 4K L1/L2
 * and L0 with FEAT_LPA2, 16K and 64K L2 and L1 with 52-bit output; tables
 * D8-17, D8-27, D8-36; the architecture's rule, not the table's max_leaf
 * / NO_BLOCKS policy): a translation fault; and a block's output address
 * at or above 2^pa_bits: an address size fault (table addresses are what
 * alloc_table gave).
 */
static bool arm64_reserved(const struct mmp_pt_geom *g, unsigned d, uint64_t e)
{
    int level = g->first_level + (int)d;
    unsigned gs = g->granule_shift;
    bool pa52 = g->pa_bits == 52, ds = (g->features & MMP_PT_FEAT_LPA2) != 0;
    if ((e & 3) != 1)
        return false; /* a table: its address is what alloc_table gave */
    bool block = level == 2 || (level == 1 && (gs == 12 || pa52)) ||
                 (level == 0 && ds && gs == 12);
    return !block || (mmp_core_pt_oa_dec(g, e, g->oa_mask[d]) >> g->pa_bits) != 0;
}

/* Blocks become pages (0b01 -> 0b11) or smaller blocks; the contiguous bit
 * is the engine's to decide. */
static uint64_t arm64_child(const struct mmp_pt_geom *g, unsigned d, uint64_t e)
{
    uint64_t t = e & ~g->oa_mask[d] & ~A_CONT & ~(A_VALID | A_TABLE);
    return t | type_bits(g, d + 1);
}

/*
 * Arm ARM D8.16.1: a change of block size (split, fold), of contiguity or
 * of the output address of a valid entry needs break-before-make, and so
 * does a change of memory type or cacheability; permission changes do
 * not. Non-global to global (nG 1 -> 0) needs it too: the old ASID-tagged
 * entry and the new global one could both hit in a TLB, a conflict
 * (Linux's pgattr_change_is_safe() refuses that transition as well).
 * Global to non-global is safe.
 * With FEAT_BBM level 2 and no conflict aborts (MMP_PT_BBML2, D8.16
 * "Support levels for changing block size"), a change of block size or
 * contiguity alone, every translation kept, needs no break; with the
 * output address or attributes changing too it still does. Not with the
 * hardware updating AF and the dirty state (MMP_PT_TRACK_HW): until the
 * flush a TLB may still hold the old block or run and the MMU record an
 * access through it in the descriptor that is now a table, or in any one
 * entry of the run that now maps one page only (D8.4.6/7, D8.6.1): written
 * in place, that state would be lost or given to the wrong page. Broken,
 * the entries keep their state (core/pt_state.h) for the new ones.
 */
static bool arm64_needs_bbm(const struct mmp_pt_geom *g, unsigned d, uint64_t old, uint64_t nw,
                            unsigned chg)
{
    if (chg & (PT_CHG_SIZE | PT_CHG_CONT | PT_CHG_OA))
        return !(g->fmt_flags & MMP_PT_BBML2) || g->trk_hw || (chg & (PT_CHG_OA | PT_CHG_ATTR));
    uint32_t a = g->fmt->attrs(g, d, old), b = g->fmt->attrs(g, d, nw);
    return ((a ^ b) & MMP_MEM_MASK) != 0 || (b & ~a & MMP_PROT_GLOBAL) != 0;
}

/*
 * Control registers (Arm ARM D24.2). Walks are inner shareable, inner and
 * outer write-back write-allocate cacheable (IRGN0 = ORGN0 = 0b01,
 * SH0 = 0b11), matching the leaves (Attr0 / MemAttr WB, SH inner; with DS
 * the leaves take SH from SH0).
 */
#define TCR_WALK ((1ull << 8) | (1ull << 10) | (3ull << 12)) /* IRGN0, ORGN0, SH0 */

/* TCR_ELx.IPS / TCR_EL2.PS / VTCR_EL2.PS: the smallest size >= pa_bits. */
static uint64_t ps_field(unsigned pa)
{
    static const uint8_t bits[] = {32, 36, 40, 42, 44, 48, 52};
    uint64_t v = 0;
    while (bits[v] < pa)
        v++;
    return v;
}

/* TG0 (TCR_ELx and VTCR_EL2): 4K 0b00, 64K 0b01, 16K 0b10. */
static uint64_t tg0_field(const struct mmp_pt_geom *g)
{
    return g->granule_shift == 12 ? 0 : g->granule_shift == 16 ? 1 : 2;
}

/* TTBR0_ELx / VTTBR_EL2: BADDR, with BADDR[51:48] in bits 5:2 when it is
 * a 52-bit address (IPS = 52 bits or DS = 1, D24.2.209); ASID / VMID in
 * 63:48; CnP (bit 0) 0. */
static uint64_t ttbr(const struct mmp_pt_geom *g, uint64_t root_pa, uint16_t id)
{
    uint64_t b = root_pa;
    if (g->pa_bits == 52)
        b = (root_pa & mmp_core_pt_bits(47, 6)) | ((root_pa >> 46) & mmp_core_pt_bits(5, 2));
    return b | (uint64_t)id << 48;
}

/*
 * Stage 1. EL1&0 / EL2&0 (VHE) layout (TCR_EL1, D24.2.194): T0SZ [5:0],
 * walk attributes, TG0 [15:14], T1SZ [21:16] = T0SZ and TG1 [31:30] of
 * the same granule (4K 0b10, 16K 0b01, 64K 0b11) with EPD1 [23] set, so
 * nothing walks TTBR1; IPS [34:32]; AS [36] for an ASID above 255
 * (16-bit ASIDs, ID_AA64MMFR0_EL1.ASIDBits = 0b0010); DS [59].
 * MMP_PT_EL2 (TCR_EL2 with E2H = 0, D24.2.195): T0SZ, walk attributes,
 * TG0, PS [18:16], RES1 bits 23 and 31, DS [32]; no ASID.
 */
static void s1_regs(const struct mmp_pt_geom *g, uint64_t root_pa, uint16_t id,
                    struct mmp_pt_regs *out)
{
    uint64_t t0sz = 64u - g->va_bits, ds = (g->features & MMP_PT_FEAT_LPA2) != 0;
    uint64_t tcr = t0sz | TCR_WALK | tg0_field(g) << 14;
    uint64_t hw = g->trk_hw ? 3 : 0; /* HA and HD, adjacent in every TCR */
    if (g->one_range) {
        tcr |= ps_field(g->pa_bits) << 16 | hw << 21 | 1ull << 23 | 1ull << 31 | ds << 32;
    } else {
        uint64_t tg1 = g->granule_shift == 12 ? 2 : g->granule_shift == 14 ? 1 : 3;
        tcr |= t0sz << 16 | 1ull << 23 | tg1 << 30 | ps_field(g->pa_bits) << 32 |
               (uint64_t)(id > 0xff) << 36 | hw << 39 | ds << 59;
    }
    out->root = ttbr(g, root_pa, id);
    out->tcr = tcr;
    out->mair = 0x0444ffull; /* Attr0 0xff WB, Attr1 0x44 NC, Attr2 0x04 nGnRE */
}

/*
 * Stage 2 (VTCR_EL2, D24.2.224): T0SZ [5:0], SL0 [7:6], walk attributes,
 * TG0 [15:14], PS [18:16], VS [19] for a VMID above 255 (16-bit VMIDs,
 * ID_AA64MMFR1_EL1.VMIDBits = 0b0010), RES1 bit 31, DS [32], SL2 [33]
 * (always 0: see the level-0 concatenation above). VTTBR_EL2 (D24.2.225)
 * takes the VMID in 63:48.
 */
static void s2_regs(const struct mmp_pt_geom *g, uint64_t root_pa, uint16_t id,
                    struct mmp_pt_regs *out)
{
    uint64_t ds = (g->features & MMP_PT_FEAT_LPA2) != 0;
    out->root = ttbr(g, root_pa, id);
    out->tcr = (64u - g->va_bits) | (uint64_t)g->start_level_enc << 6 | TCR_WALK |
               tg0_field(g) << 14 | ps_field(g->pa_bits) << 16 | (uint64_t)(id > 0xff) << 19 |
               (g->trk_hw ? 3ull << 21 : 0) | 1ull << 31 | ds << 32;
    out->mair = 0;
}

const struct mmp_pt_fmt mmp_core_pt_fmt_arm64_s1 = {
    .format = MMP_PT_ARM64_S1,
    .setup = s1_setup,
    .leaf = s1_leaf,
    .attrs = s1_attrs,
    .child = arm64_child,
    .needs_bbm = arm64_needs_bbm,
    .reserved = arm64_reserved,
    .regs = s1_regs,
};

const struct mmp_pt_fmt mmp_core_pt_fmt_arm64_s2 = {
    .format = MMP_PT_ARM64_S2,
    .setup = s2_setup,
    .leaf = s2_leaf,
    .attrs = s2_attrs,
    .child = arm64_child,
    .needs_bbm = arm64_needs_bbm,
    .reserved = arm64_reserved,
    .regs = s2_regs,
};
