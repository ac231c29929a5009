/* SPDX-License-Identifier: MIT */
/*
 * Descriptor formats as data. A format (arch/<dir>/pt_<name>.c, built on
 * every host) fills a geometry from a configuration and encodes/decodes
 * descriptors; the engine in core/ never looks at a bit by name. Depth d
 * counts from the root (d = 0) to the last level (d = nlev - 1); the
 * architectural level of depth d is first_level + level_step * d.
 *
 * The hot path needs no call into the format: a leaf is tmpl | pa (| the
 * contiguous bit), a table is tbl_tmpl | pa, and a descriptor's kind is
 * tested with the per-depth masks below.
 */
#ifndef MMPORT_CORE_PT_FMT_H
#define MMPORT_CORE_PT_FMT_H

#include <mmport/pt.h>
#include <mmport/pt_reason.h>

#define MMP_PT_MAXLEV 5

struct mmp_pt_fmt;

struct mmp_pt_geom {
    const struct mmp_pt_fmt *fmt;
    uint8_t nlev;           /* levels walked */
    int8_t first_level;     /* architectural level of the root */
    int8_t level_step;      /* +1 arm64 (0..3), -1 x86 (5/4..1) */
    uint8_t granule_shift;  /* log2 of the table page and base page size */
    uint8_t va_bits;
    uint8_t pa_bits;
    uint8_t sign_extend;    /* x86: upper VA bits must copy bit va_bits-1 */
    uint8_t bbm;            /* an attribute change alone may need break-before-make */
    uint8_t one_range;      /* arm64 stage 1, single-range EL2/EL3 regime */
    uint8_t shift[MMP_PT_MAXLEV];   /* log2 of the bytes one entry at depth d maps */
    uint8_t nbits[MMP_PT_MAXLEV];   /* index bits at depth d (root: with concatenation) */
    uint8_t leaf_ok[MMP_PT_MAXLEV]; /* a leaf (block/page) is architecturally allowed */
    uint8_t cont[MMP_PT_MAXLEV];    /* log2 of the contiguous run length; 0 = none */
    uint8_t tbl_mask[MMP_PT_MAXLEV];/* valid e: (e & tbl_mask) == tbl_val is a table */
    uint8_t tbl_val[MMP_PT_MAXLEV];
    uint8_t start_level_enc;        /* stage 2: VTCR_EL2.SL0; else 0 */
    uint8_t root_tables;            /* concatenated root tables (stage 2), else 1 */
    uint32_t root_bytes;            /* bytes of the root allocation */
    uint64_t valid_bit;             /* a descriptor with any of these bits set is valid
                                       (one bit; EPT: R|W|X) */
    uint64_t oa_mask[MMP_PT_MAXLEV];/* output-address bits of a leaf at depth d */
    uint64_t tbl_oa_mask;           /* output-address bits of a table descriptor */
    uint64_t tbl_tmpl;              /* table descriptor without its address */
    uint64_t cont_bit;              /* the contiguous bit, 0 if the format has none */
    uint64_t ign_mask;              /* bits hardware may change (x86 A/D): ignored */
    uint32_t fmt_flags;             /* create-time capabilities the format keeps (EPT; arm64 BBML2) */
    /*
     * Output-address bits not stored in place (Arm ARM D8.3.1: FEAT_LPA2
     * keeps OA[51:50] in descriptor bits 9:8, FEAT_LPA with 64K OA[51:48]
     * in bits 15:12): oa_field are the descriptor bits holding them (also
     * in oa_mask / tbl_oa_mask), oa_field << oa_shift the address bits.
     * Both 0 where every bit is in place.
     */
    uint64_t oa_field;
    uint8_t oa_shift;
    uint8_t maint;                  /* enum mmp_pt_maint */
    uint16_t id_max;                /* largest ASID / VMID / PCID mmp_pt_regs takes */
    uint32_t features;              /* enum mmp_pt_feature */
    uint64_t hcr_set;               /* arm64 stage 2: HCR_EL2 bits the encoding needs */
    uint64_t max_leaf;              /* create-time leaf-size limit, 0 = none */
    /*
     * Dirty and access tracking (core/pt_track.c), filled by the format.
     * A leaf is writable when (e & trk_w) == trk_w_on. Dirty state is kept
     * one of two ways: trk_d != 0, a dirty bit the MMU sets (x86 D, EPT D);
     * else trk_m, a mark meaning "writable, tracked": clean = marked and
     * write-protected, dirty = marked and writable (arm64 DBM, which the
     * MMU flips itself with TCR/VTCR.HD, or a software bit flipped by
     * mmp_pt_dirty_fault). trk_a: the access flag (0: none, EPT without
     * A/D). trk_hw: MMP_PT_TRACK_HW was given.
     */
    uint64_t trk_w, trk_w_on, trk_d, trk_m, trk_a;
    uint8_t trk_hw;
    /*
     * Shared update mode (MMP_PT_SHARED): the software bit that marks an
     * entry LOCKED by a writer. A locked entry is invalid to the hardware
     * (the format's valid bits clear) and keeps the other bits of the
     * entry it replaced: (old & ~valid_bit) | lock_bit. The bit is one the
     * format ignores in invalid descriptors and mmport never sets in a
     * valid one (set by the format's setup; see pt_locked()).
     */
    uint64_t lock_bit;
    /*
     * The caller's software bits (MMP_SW(k), include/mmport/pt.h): bit k
     * of attrs bits 23:16 is the k-th lowest bit of sw_mask. Bits the
     * hardware ignores in a leaf and mmport uses for nothing else (set by
     * the format's setup).
     */
    uint64_t sw_mask;
    /*
     * The last level's reserved descriptors, as data (mmp_pt_fmt::reserved
     * for the other levels): a last-level entry e is reserved when bit
     * (e & 63) of leaf_bad is set (bits 5:0 say whether an entry is valid
     * in every format, so leaf_bad names only valid values), or when it
     * is valid and (e & leaf_rsv) != 0. The walker scans whole tables
     * with it in a few instructions per entry (a call per entry made
     * protect 5x slower).
     */
    uint64_t leaf_rsv, leaf_bad;
};

/* What a change of a live entry does (mmp_pt_fmt::needs_bbm). */
#define PT_CHG_SIZE 1u /* leaf size changes: block split or folded, table replaced by a leaf */
#define PT_CHG_CONT 2u /* a contiguous run is made or unmade */
#define PT_CHG_OA 4u   /* the output address may change (a replacing map) */
#define PT_CHG_ATTR 8u /* the attributes change */

struct mmp_pt_fmt {
    enum mmp_pt_format format;
    /* Validate cfg and fill g (fmt excepted). -EINVAL / -ENOTSUP. */
    int (*setup)(struct mmp_pt_geom *g, const struct mmp_pt_config *cfg);
    /* Leaf descriptor at depth d for attrs, without address and contiguous
     * bit, in *tmpl: 0, or the enum mmp_pt_rule attrs break (the call
     * then fails with -EINVAL). */
    int (*leaf)(const struct mmp_pt_geom *g, unsigned d, uint32_t attrs, uint64_t *tmpl);
    /* MMP_PROT_* | MMP_MEM_* of a valid leaf at depth d. */
    uint32_t (*attrs)(const struct mmp_pt_geom *g, unsigned d, uint64_t desc);
    /* Template (no address, no contiguous bit) of the depth d+1 leaves that
     * map what the leaf desc at depth d maps, keeping bits attrs lack. */
    uint64_t (*child)(const struct mmp_pt_geom *g, unsigned d, uint64_t desc);
    /*
     * The format's break-before-make rule: does changing the live entry
     * old at depth d into nw need invalid -> barrier -> flush -> write
     * (true), or may it be written in place with the flush after (false)?
     * chg says what the change does (PT_CHG_*); with PT_CHG_ATTR alone,
     * old and nw are valid leaf descriptors. The engine's one primitive
     * (pt_break in core/pt_engine.c) asks this and nothing else.
     */
    bool (*needs_bbm)(const struct mmp_pt_geom *g, unsigned d, uint64_t old, uint64_t nw,
                      unsigned chg);
    /*
     * The valid descriptor e at depth d < nlev - 1 is one the format
     * reserves or the hardware would reject (reserved bits or encodings,
     * a leaf where the level has none, an EPT misconfiguration): the
     * walker (core/pt_walk.h) reports -EIO instead of decoding it. The
     * last level's rule is data: leaf_rsv / leaf_bad.
     */
    bool (*reserved)(const struct mmp_pt_geom *g, unsigned d, uint64_t e);
    /* Control-register values for a table rooted at root_pa; id was
     * checked against g->id_max. */
    void (*regs)(const struct mmp_pt_geom *g, uint64_t root_pa, uint16_t id,
                 struct mmp_pt_regs *out);
};

/* The rule (enum mmp_pt_rule) attrs break in a format without
 * MMP_PROT_UEXEC: unknown bits, UEXEC, no READ; 0 for none. */
static inline unsigned pt_attrs_rule(uint32_t attrs)
{
    if (attrs & ~(uint32_t)(MMP_PROT_MASK | MMP_PROT_UEXEC | MMP_MEM_MASK))
        return MMP_PT_RULE_ATTRS_UNKNOWN;
    if (attrs & MMP_PROT_UEXEC)
        return MMP_PT_RULE_UEXEC;
    return attrs & MMP_PROT_READ ? 0 : MMP_PT_RULE_READ_NEEDED;
}

/* The formats (arch/x86/pt_x86.c, pt_ept.c, arch/arm64/pt_arm64.c). */
extern const struct mmp_pt_fmt mmp_core_pt_fmt_x86_64;
extern const struct mmp_pt_fmt mmp_core_pt_fmt_x86_ept;
extern const struct mmp_pt_fmt mmp_core_pt_fmt_x86_npt;
extern const struct mmp_pt_fmt mmp_core_pt_fmt_arm64_s1;
extern const struct mmp_pt_fmt mmp_core_pt_fmt_arm64_s2;

/* Fill g for cfg with the right format. -EINVAL / -ENOTSUP. */
/* Fill g from cfg: 0, or an error with *rule the enum mmp_pt_rule broken
 * (FORMAT, GEOMETRY from the format's setup, MAX_LEAF). */
int mmp_core_pt_geom(struct mmp_pt_geom *g, const struct mmp_pt_config *cfg, unsigned *rule);

static inline uint64_t mmp_core_pt_bits(unsigned hi, unsigned lo)
{
    return ((~0ull) >> (63 - hi)) & ~((1ull << lo) - 1);
}

/* Descriptor bits of output address pa (a leaf's or a table's). */
static inline uint64_t mmp_core_pt_oa_enc(const struct mmp_pt_geom *g, uint64_t pa)
{
    return (pa & ~(g->oa_field << g->oa_shift)) | ((pa >> g->oa_shift) & g->oa_field);
}

/* Output address held in descriptor e, whose address bits are mask. */
static inline uint64_t mmp_core_pt_oa_dec(const struct mmp_pt_geom *g, uint64_t e, uint64_t mask)
{
    return (e & mask & ~g->oa_field) | ((e & g->oa_field) << g->oa_shift);
}

/* Set the software bits of g (a format's setup): descriptor bits pos[0..n),
 * ascending. */
static inline void mmp_core_pt_sw_bits(struct mmp_pt_geom *g, const uint8_t *pos, unsigned n)
{
    g->sw_mask = 0;
    for (unsigned k = 0; k < n; k++)
        g->sw_mask |= 1ull << pos[k];
}

/* How many software bits the format has. */
static inline unsigned pt_sw_count(const struct mmp_pt_geom *g)
{
    unsigned n = 0; /* (no popcount builtin: it is a libgcc call freestanding) */
    for (uint64_t m = g->sw_mask; m; m &= m - 1)
        n++;
    return n;
}

/* The leaf template for attrs at depth d: the format's, with the
 * software bits of attrs in their descriptor bits (MMP_SW_SET, protect's
 * flag, is no attribute). 0, or the rule attrs break. */
static inline int mmp_core_pt_leaf(const struct mmp_pt_geom *g, unsigned d, uint32_t attrs,
                                   uint64_t *tmpl)
{
    uint32_t sw = (attrs & MMP_SW_MASK) >> MMP_SW_SHIFT;
    if (sw >> pt_sw_count(g))
        return MMP_PT_RULE_SW_BITS;
    int rule = g->fmt->leaf(g, d, attrs & ~(uint32_t)(MMP_SW_MASK | MMP_SW_SET), tmpl);
    if (rule)
        return rule;
    for (uint64_t m = g->sw_mask; sw; sw >>= 1, m &= m - 1)
        if (sw & 1)
            *tmpl |= m & (0 - m);
    return 0;
}

/* MMP_PROT_* | MMP_MEM_* | MMP_SW(k) of the valid leaf e at depth d. */
static inline uint32_t mmp_core_pt_attrs(const struct mmp_pt_geom *g, unsigned d, uint64_t e)
{
    uint32_t a = g->fmt->attrs(g, d, e);
    if (e & g->sw_mask) {
        unsigned k = 0;
        for (uint64_t m = g->sw_mask; m; m &= m - 1, k++)
            if (e & m & (0 - m))
                a |= MMP_SW(k);
    }
    return a;
}

#endif
