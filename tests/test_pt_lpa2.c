/* SPDX-License-Identifier: MIT */
/*
 * arm64 52-bit output addresses (FEAT_LPA2 for 4K/16K, FEAT_LPA for 64K),
 * stage-2 FWB, the leaf-size limit and mmp_pt_regs(). Expected descriptor
 * and register bits are written out here from the Arm ARM (DDI 0487)
 * field tables, independently of arch/arm64/pt_arm64.c:
 *   D8.3.1 tables D8-50..53: with DS = 1, OA/NLTA[49:48] in bits 49:48
 *     and [51:50] in bits 9:8 (no SH field); 64K with FEAT_LPA, [51:48]
 *     in bits 15:12.
 *   D8.2.8 tables D8-16/17/18, D8.2.9 D8-26/27, D8.2.10 D8-35/36: levels
 *     and block sizes.
 *   D8.6.6 table D8-101: FWB MemAttr 0b0110 WB, 0b0101 NC, 0b0001 nGnRE.
 *   D24.2.194 TCR_EL1, D24.2.195 TCR_EL2, D24.2.224 VTCR_EL2,
 *   D24.2.209 TTBR0_EL1, D24.2.225 VTTBR_EL2.
 */
#include "pt_harness.h"

#define BIT(n) (1ull << (n))

static uint64_t bits(unsigned hi, unsigned lo)
{
    return (~0ull >> (63 - hi)) & ~(BIT(lo) - 1);
}

static struct mmp_pt_config cfg(enum mmp_pt_format f, uint32_t gran, uint32_t va, uint32_t pa,
                                uint32_t flags)
{
    struct mmp_pt_config c = {f, gran, va, pa, flags, 0, 0, 0};
    return c;
}

/* The CPU features each 52-bit layout needs (mmp_pt_info::features). */
START_TEST(features_52bit)
{
    static const struct {
        struct mmp_pt_config c;
        uint32_t features;
    } cases[] = {
        {{MMP_PT_ARM64_S1, 4096, 52, 52, 0, 0, 0, 0}, MMP_PT_FEAT_LPA2},
        {{MMP_PT_ARM64_S2, 16384, 40, 52, 0, 0, 0, 0}, MMP_PT_FEAT_LPA2},
        {{MMP_PT_ARM64_S1, 65536, 52, 52, 0, 0, 0, 0}, MMP_PT_FEAT_LPA | MMP_PT_FEAT_LVA},
        {{MMP_PT_ARM64_S1, 65536, 52, 48, 0, 0, 0, 0}, MMP_PT_FEAT_LVA},
        {{MMP_PT_ARM64_S2, 65536, 52, 52, 0, 0, 0, 0}, MMP_PT_FEAT_LPA},
        {{MMP_PT_ARM64_S1, 16384, 48, 0, 0, 0, 0, 0}, 0},
        /* Hardware tracking adds FEAT_HAFDBS to every layout. */
        {{MMP_PT_ARM64_S1, 4096, 52, 52, MMP_PT_TRACK_HW, 0, 0, 0},
         MMP_PT_FEAT_LPA2 | MMP_PT_FEAT_HAFDBS},
        {{MMP_PT_ARM64_S2, 16384, 40, 52, MMP_PT_TRACK_HW, 0, 0, 0},
         MMP_PT_FEAT_LPA2 | MMP_PT_FEAT_HAFDBS},
        {{MMP_PT_ARM64_S1, 65536, 52, 52, MMP_PT_TRACK_HW, 0, 0, 0},
         MMP_PT_FEAT_LPA | MMP_PT_FEAT_LVA | MMP_PT_FEAT_HAFDBS},
        {{MMP_PT_ARM64_S2, 65536, 52, 52, MMP_PT_TRACK_HW, 0, 0, 0},
         MMP_PT_FEAT_LPA | MMP_PT_FEAT_HAFDBS},
        {{MMP_PT_ARM64_S1, 65536, 52, 48, MMP_PT_TRACK_HW, 0, 0, 0},
         MMP_PT_FEAT_LVA | MMP_PT_FEAT_HAFDBS},
        {{MMP_PT_ARM64_S2, 4096, 40, 0, MMP_PT_TRACK_HW, 0, 0, 0}, MMP_PT_FEAT_HAFDBS},
        {{MMP_PT_X86_64, 4096, 57, 0, 0, 0, 0, 0}, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tenv *e = tenv_new(&cases[i].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        ck_assert_msg(inf.features == cases[i].features, "case %zu: features %#x want %#x", i,
                      inf.features, cases[i].features);
        tenv_free(e);
    }
}
END_TEST

/* Blocks each 52-bit layout adds: 4K level 0 512 GiB and 16K level 1
 * 64 GiB with DS (tables D8-17/27), 64K level 1 4 TiB with FEAT_LPA
 * (table D8-36); none of them without. */
START_TEST(block_sizes_52bit)
{
    static const struct {
        struct mmp_pt_config c;
        uint64_t blocks;
    } cases[] = {
        {{MMP_PT_ARM64_S1, 4096, 52, 52, 0, 0, 0, 0}, BIT(12) | BIT(21) | BIT(30) | BIT(39)},
        {{MMP_PT_ARM64_S1, 4096, 48, 0, 0, 0, 0, 0}, BIT(12) | BIT(21) | BIT(30)},
        {{MMP_PT_ARM64_S1, 16384, 52, 52, 0, 0, 0, 0}, BIT(14) | BIT(25) | BIT(36)},
        {{MMP_PT_ARM64_S1, 16384, 48, 0, 0, 0, 0, 0}, BIT(14) | BIT(25)},
        {{MMP_PT_ARM64_S1, 65536, 52, 52, 0, 0, 0, 0}, BIT(16) | BIT(29) | BIT(42)},
        {{MMP_PT_ARM64_S1, 65536, 52, 48, 0, 0, 0, 0}, BIT(16) | BIT(29)},
        {{MMP_PT_ARM64_S2, 4096, 52, 52, 0, 0, 0, 0}, BIT(12) | BIT(21) | BIT(30) | BIT(39)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tenv *e = tenv_new(&cases[i].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        ck_assert_msg(inf.block_sizes == cases[i].blocks, "case %zu: blocks %#llx want %#llx", i,
                      (unsigned long long)inf.block_sizes, (unsigned long long)cases[i].blocks);
        tenv_free(e);
    }
}
END_TEST

/* The descriptor bits of OA a in the 52-bit layouts, written from tables
 * D8-50..53. */
static uint64_t lpa2_oa_bits(uint64_t a)
{
    return (a & 0x0003fffffffff000ull) | ((a >> 50) & 3) << 8;
}
static uint64_t lpa_oa_bits(uint64_t a)
{
    return (a & 0x0000ffffffff0000ull) | ((a >> 48) & 0xf) << 12;
}

/* Table pages at output addresses above 2^48: pa = host address with
 * bits 51:48 = 0xc, so table descriptors carry NLTA[51:48] too. */
#define HI_TABLES (0xcull << 48)
static void *hi_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    void *p = t_alloc(ctx, bytes, pa);
    if (p)
        *pa |= HI_TABLES;
    return p;
}
static void hi_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    ck_assert_uint_eq(pa & HI_TABLES, HI_TABLES);
    t_free(ctx, va, pa & ~HI_TABLES, bytes);
}
static void *hi_p2v(void *ctx, uint64_t pa)
{
    (void)ctx;
    return (void *)(uintptr_t)(pa & ~HI_TABLES);
}

/* Walk the table by hand (as the MMU would, with the manual's bit
 * positions) and return the leaf descriptor for va, checking every table
 * descriptor's next-level address on the way. */
static uint64_t hand_walk(struct tenv *e, unsigned gs, unsigned va_bits, int lpa2, uint64_t va,
                          int *level)
{
    struct mmp_pt_info inf;
    mmp_pt_info(&e->pt, &inf);
    unsigned bpl = gs - 3;
    uint64_t tpa = mmp_pt_root(&e->pt);
    for (unsigned d = 0; d < inf.levels; d++) {
        int lvl = inf.start_level + (int)d;
        unsigned shift = gs + bpl * (unsigned)(3 - lvl);
        unsigned nb = d == 0 ? va_bits - shift : bpl;
        const uint64_t *t = hi_p2v(NULL, tpa);
        uint64_t desc = t[(va >> shift) & ((1ull << nb) - 1)];
        ck_assert_msg(desc & 1, "level %d: invalid descriptor for %#llx", lvl,
                      (unsigned long long)va);
        if (lvl == 3 || (desc & 3) == 1) {
            *level = lvl;
            return desc;
        }
        /* NLTA: bits 49:gs (4K/16K DS) with 51:50 in 9:8, or 47:16 with 51:48 in 15:12. */
        tpa = lpa2 ? (desc & bits(49, gs)) | ((desc >> 8) & 3) << 50
                   : (desc & bits(47, 16)) | ((desc >> 12) & 0xf) << 48;
        ck_assert_msg((tpa & HI_TABLES) == HI_TABLES, "level %d: NLTA %#llx lost bits 51:48", lvl,
                      (unsigned long long)tpa);
    }
    ck_abort_msg("no leaf");
    return 0;
}

START_TEST(descriptors_lpa2_and_lpa)
{
    static const struct {
        struct mmp_pt_config c;
        uint64_t va, pa, size; /* one leaf of size bytes */
        int level;
    } cases[] = {
        /* 4K DS: a page at the top of both spaces, a 2 MiB and a 512 GiB block. */
        {{MMP_PT_ARM64_S1, 4096, 52, 52, 0, 0, 0, 0}, 0xffffffffff000ull, 0xfedcba9876000ull, 4096, 3},
        {{MMP_PT_ARM64_S1, 4096, 52, 52, 0, 0, 0, 0}, 0x8000000200000ull, 0xd123456600000ull,
         BIT(21), 2},
        {{MMP_PT_ARM64_S1, 4096, 52, 52, 0, 0, 0, 0}, 0x7ff8000000000ull, 0xf008000000000ull,
         BIT(39), 0},
        {{MMP_PT_ARM64_S2, 4096, 52, 52, 0, 0, 0, 0}, 0xc000000001000ull, 0x9abc000003000ull, 4096, 3},
        /* 16K DS: a page and a 64 GiB level-1 block. */
        {{MMP_PT_ARM64_S1, 16384, 52, 52, 0, 0, 0, 0}, 0xfffffffffc000ull, 0xe555555554000ull,
         16384, 3},
        {{MMP_PT_ARM64_S1, 16384, 52, 52, 0, 0, 0, 0}, 0x4001000000000ull, 0xbff0000000000ull,
         BIT(36), 1},
        /* 64K LPA: a page, a 512 MiB and a 4 TiB level-1 block. */
        {{MMP_PT_ARM64_S1, 65536, 52, 52, 0, 0, 0, 0}, 0xfffffffff0000ull, 0xfedcba9870000ull,
         65536, 3},
        {{MMP_PT_ARM64_S2, 65536, 52, 52, 0, 0, 0, 0}, 0x0000020000000ull, 0x5000060000000ull,
         BIT(29), 2},
        {{MMP_PT_ARM64_S1, 65536, 48, 52, 0, 0, 0, 0}, 0x00c0000000000ull, 0xa040000000000ull,
         BIT(42), 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct mmp_pt_config *c = &cases[i].c;
        unsigned gs = c->granule == 4096 ? 12 : c->granule == 16384 ? 14 : 16;
        int lpa2 = gs != 16;
        struct tenv *e = calloc(1, sizeof *e);
        struct mmp_pt_ops o = {.alloc_table = hi_alloc,
                               .free_table = hi_free,
                               .phys_to_virt = hi_p2v,
                               .tlb_flush = t_flush,
                               .ctx = e};
        ck_assert_int_eq(mmp_pt_init(&e->pt, c, &o), 0);
        uint64_t va = cases[i].va, pa = cases[i].pa, sz = cases[i].size;
        ck_assert_int_eq(mmp_pt_map(&e->pt, va, pa, sz, RW, 0), 0);
        int level = 9;
        uint64_t d = hand_walk(e, gs, c->va_bits, lpa2, va, &level);
        ck_assert_msg(level == cases[i].level, "case %zu: leaf at level %d want %d", i, level,
                      cases[i].level);
        uint64_t oa = lpa2 ? lpa2_oa_bits(pa) : lpa_oa_bits(pa);
        uint64_t oa_bits = lpa2 ? (bits(49, 12) | 0x300) : bits(47, 12);
        uint64_t type = cases[i].level == 3 ? 3 : 1;
        ck_assert_msg((d & oa_bits) == oa, "case %zu: OA bits %#llx want %#llx", i,
                      (unsigned long long)(d & oa_bits), (unsigned long long)oa);
        ck_assert_msg((d & 3) == type && (d & BIT(10)), "case %zu: type/AF %#llx", i,
                      (unsigned long long)d);
        if (!lpa2) /* 64K keeps SH in 9:8: inner shareable */
            ck_assert_msg(((d >> 8) & 3) == 3, "case %zu: SH %#llx", i, (unsigned long long)d);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, va + sz - 4096, &l), 0);
        ck_assert_uint_eq(l.pa, pa);
        ck_assert_uint_eq(l.size, sz);
        ck_assert_uint_eq(l.desc, d);
        ck_assert_uint_eq(l.attrs, RW);
        /* Split it (protect one page read-only): the children keep the
         * high address bits. */
        ck_assert_int_eq(mmp_pt_protect(&e->pt, va, c->granule, RO), 0);
        uint64_t last = va + sz - c->granule;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, last, &l), 0);
        ck_assert_uint_eq(l.pa + (last - l.va), pa + sz - c->granule);
        ck_assert_uint_eq(l.attrs, sz > c->granule ? RW : RO);
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, va, &l), 0);
        ck_assert_uint_eq(l.pa, pa);
        ck_assert_uint_eq(l.attrs, RO);
        ck_assert_int_eq(mmp_pt_unmap(&e->pt, va, sz), 0);
        tenv_free(e);
    }
}
END_TEST

/* The last pages below 2^52 map; a byte beyond is -ERANGE; a 48-bit
 * table refuses output addresses at 2^48. */
START_TEST(pa_near_2_52)
{
    struct mmp_pt_config c = cfg(MMP_PT_ARM64_S1, 4096, 48, 52, 0);
    struct tenv *e = tenv_new(&c);
    uint64_t top = BIT(52) - 16 * 4096;
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0x10000, top, 16 * 4096, RW, 0), 0);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(&e->pt, 0x1f000, &l), 0);
    ck_assert_uint_eq(l.pa, BIT(52) - 4096);
    ck_assert_uint_eq(l.kind, MMP_LEAF_CONT); /* 16 pages, 64 KiB aligned */
    ck_assert_uint_eq(l.desc & 0x300, 0x300); /* OA[51:50] = 0b11 */
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0x40000, top, 17 * 4096, RW, 0), -MMP_ERANGE);
    tenv_free(e);
    c = cfg(MMP_PT_ARM64_S1, 4096, 48, 0, 0);
    e = tenv_new(&c);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0x10000, BIT(48), 4096, RW, 0), -MMP_ERANGE);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0x10000, BIT(48) - 4096, 4096, RW, 0), 0);
    tenv_free(e);
}
END_TEST

/* FWB (D8.6.6): MemAttr[3:0] 0b0110 WB, 0b0101 NC, 0b0001 nGnRE; maint
 * and HCR_EL2 bits reported; without FWB the D8.6.5 values. */
START_TEST(stage2_fwb)
{
    static const struct {
        uint32_t mem;
        unsigned fwb, nofwb;
    } m[] = {{MMP_MEM_NORMAL_WB, 0x6, 0xf}, {MMP_MEM_NORMAL_NC, 0x5, 0x5}, {MMP_MEM_DEVICE, 0x1, 0x1}};
    for (int f = 0; f < 2; f++) {
        struct mmp_pt_config c = cfg(MMP_PT_ARM64_S2, 4096, 40, 0, f ? MMP_PT_S2FWB : 0);
        struct tenv *e = tenv_new(&c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        ck_assert_uint_eq(inf.hcr_set, f ? BIT(46) : 0);
        ck_assert_uint_eq(inf.maint, f ? MMP_PT_MAINT_ICACHE_INVAL
                                       : MMP_PT_MAINT_ICACHE_INVAL | MMP_PT_MAINT_DCACHE_CLEAN);
        for (unsigned i = 0; i < 3; i++) {
            uint64_t va = 0x100000 + i * 4096;
            ck_assert_int_eq(mmp_pt_map(&e->pt, va, va, 4096, RW | m[i].mem, 0), 0);
            struct mmp_pt_leaf l;
            ck_assert_int_eq(mmp_pt_lookup(&e->pt, va, &l), 0);
            ck_assert_uint_eq((l.desc >> 2) & 0xf, f ? m[i].fwb : m[i].nofwb);
            ck_assert_uint_eq(l.attrs, RW | m[i].mem);
        }
        /* A memory-type change through protect decodes the FWB values too. */
        ck_assert_int_eq(mmp_pt_protect(&e->pt, 0x100000, 3 * 4096, RO | MMP_MEM_NORMAL_NC), 0);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, 0x100000, &l), 0);
        ck_assert_uint_eq(l.attrs, RO | MMP_MEM_NORMAL_NC);
        tenv_free(e);
    }
    /* Stage 1 and x86 tables owe no cache maintenance. */
    struct mmp_pt_config c = cfg(MMP_PT_ARM64_S1, 4096, 48, 0, 0);
    struct tenv *e = tenv_new(&c);
    struct mmp_pt_info inf;
    mmp_pt_info(&e->pt, &inf);
    ck_assert_uint_eq(inf.maint, 0);
    ck_assert_uint_eq(inf.hcr_set, 0);
    tenv_free(e);
}
END_TEST

/* ---- max_leaf: every format -------------------------------------------- */

struct limit {
    uint64_t lim, cont_sizes; /* run sizes of the unlimited table */
};

/* A leaf, or the whole run a contiguous leaf belongs to, above the limit? */
static int leaf_le(void *arg, const struct mmp_pt_leaf *l)
{
    const struct limit *w = (const struct limit *)arg;
    uint64_t sz = l->size;
    if (l->kind == MMP_LEAF_CONT)
        sz = run_bytes_for(w->cont_sizes, l->size);
    return !sz || sz > w->lim ? 1 : 0;
}

START_TEST(max_leaf_every_format)
{
    for (size_t c = 0; c < NCFG; c++) {
        for (unsigned b = 12; b <= 31; b++) {
            struct mmp_pt_config cf = pt_cfgs[c].c;
            cf.max_leaf = BIT(b);
            struct tenv *e = calloc(1, sizeof *e);
            struct mmp_pt_ops o = t_ops(e);
            int rc = mmp_pt_init(&e->pt, &cf, &o);
            if (BIT(b) < cf.granule) {
                ck_assert_int_eq(rc, -MMP_EINVAL);
                free(e);
                continue;
            }
            ck_assert_msg(rc == 0, "%s max_leaf 2^%u: rc %d", pt_cfgs[c].name, b, rc);
            struct mmp_pt_info inf;
            mmp_pt_info(&e->pt, &inf);
            ck_assert_uint_eq(inf.max_leaf, BIT(b));
            ck_assert_msg(inf.block_sizes && !(inf.block_sizes >> (b + 1)) &&
                              !(inf.cont_sizes >> (b + 1)),
                          "%s max_leaf 2^%u: blocks %#llx runs %#llx", pt_cfgs[c].name, b,
                          (unsigned long long)inf.block_sizes,
                          (unsigned long long)inf.cont_sizes);
            /* Unlimited, the table has everything below the limit. */
            struct tenv *u = tenv_new(&pt_cfgs[c].c);
            struct mmp_pt_info ui;
            mmp_pt_info(&u->pt, &ui);
            uint64_t below = (BIT(b) << 1) - 1;
            ck_assert_uint_eq(inf.block_sizes, ui.block_sizes & below);
            ck_assert_uint_eq(inf.cont_sizes, ui.cont_sizes & below);
            tenv_free(u);
            /* A 1 GiB aligned mapping (2 GiB with 64K) uses no larger leaf
             * or run, and the largest one the limit allows. */
            uint64_t sz = cf.granule == 65536 ? BIT(31) : BIT(30);
            ck_assert_int_eq(mmp_pt_map(&e->pt, sz, sz, sz, RW, 0), 0);
            struct limit w = {BIT(b), ui.cont_sizes};
            ck_assert_int_eq(mmp_pt_walk(&e->pt, sz, sz, leaf_le, &w), 0);
            struct mmp_pt_leaf l;
            ck_assert_int_eq(mmp_pt_lookup(&e->pt, sz, &l), 0);
            uint64_t best = 0;
            for (unsigned k = 0; k <= b; k++)
                if (inf.block_sizes >> k & 1)
                    best = BIT(k);
            ck_assert_msg(l.size == best, "%s max_leaf 2^%u: leaf %#llx want %#llx",
                          pt_cfgs[c].name, b, (unsigned long long)l.size,
                          (unsigned long long)best);
            tenv_free(e);
        }
        /* Not a power of two, or below the granule: -EINVAL. */
        struct mmp_pt_config cf = pt_cfgs[c].c;
        struct tenv *e = calloc(1, sizeof *e);
        struct mmp_pt_ops o = t_ops(e);
        cf.max_leaf = 3ull << 20;
        ck_assert_int_eq(mmp_pt_init(&e->pt, &cf, &o), -MMP_EINVAL);
        cf.max_leaf = cf.granule / 2;
        ck_assert_int_eq(mmp_pt_init(&e->pt, &cf, &o), -MMP_EINVAL);
        ck_assert_int_eq(e->live, 0);
        free(e);
    }
}
END_TEST

/* x86-64 with a 2 MiB limit (qemu64): 1 GiB becomes 512 blocks of 2 MiB;
 * arm64 4K with 2 MiB: blocks but no 32 MiB contiguous block runs. */
START_TEST(max_leaf_2mib)
{
    struct mmp_pt_config c = pt_cfgs[0].c;
    c.max_leaf = BIT(21);
    struct tenv *e = tenv_new(&c);
    ck_assert_int_eq(mmp_pt_map(&e->pt, BIT(30), BIT(30), BIT(30), RW, 0), 0);
    struct mmp_pt_usage u;
    ck_assert_int_eq(mmp_pt_usage(&e->pt, &u), 0);
    ck_assert_uint_eq(u.blocks, 512);
    tenv_free(e);
    c = cfg(MMP_PT_ARM64_S1, 4096, 48, 0, 0);
    c.max_leaf = BIT(21);
    e = tenv_new(&c);
    ck_assert_int_eq(mmp_pt_map(&e->pt, BIT(30), BIT(30), BIT(25), RW, 0), 0);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(&e->pt, BIT(30), &l), 0);
    ck_assert_uint_eq(l.kind, MMP_LEAF_BLOCK);
    ck_assert_uint_eq(l.size, BIT(21));
    /* 64 KiB runs of pages are still used under a 2 MiB limit. */
    ck_assert_int_eq(mmp_pt_map(&e->pt, BIT(31), BIT(31), BIT(16), RW, 0), 0);
    ck_assert_int_eq(mmp_pt_lookup(&e->pt, BIT(31), &l), 0);
    ck_assert_uint_eq(l.kind, MMP_LEAF_CONT);
    tenv_free(e);
}
END_TEST

/* ---- mmp_pt_regs ------------------------------------------------------ */

struct want_regs {
    const char *name;
    struct mmp_pt_config c;
    uint16_t id;
    uint64_t tcr, mair;
};

/* Field builders, from the register descriptions. */
#define T0SZ(n) ((uint64_t)(n))
#define WALK_WBWA_IS (BIT(8) | BIT(10) | (3ull << 12)) /* IRGN0, ORGN0 = 0b01; SH0 = 0b11 */
#define TG0(g) ((uint64_t)((g) == 4096 ? 0 : (g) == 65536 ? 1 : 2) << 14)
/* TCR_EL1 */
#define T1SZ(n) ((uint64_t)(n) << 16)
#define EPD1 BIT(23)
#define TG1(g) ((uint64_t)((g) == 4096 ? 2 : (g) == 16384 ? 1 : 3) << 30)
#define IPS(v) ((uint64_t)(v) << 32)
#define AS BIT(36)
#define DS1 BIT(59)
/* TCR_EL2 (E2H = 0) and VTCR_EL2 */
#define PS(v) ((uint64_t)(v) << 16)
#define RES1_EL2 (BIT(23) | BIT(31))
#define DS2 BIT(32)
#define SL0(v) ((uint64_t)(v) << 6)
#define VS BIT(19)
#define MAIR_LAYOUT 0x0444ffull

START_TEST(regs_arm64)
{
    static const struct want_regs w[] = {
        {"s1 4K 48", {MMP_PT_ARM64_S1, 4096, 48, 0, 0, 0, 0, 0}, 7,
         T0SZ(16) | WALK_WBWA_IS | TG0(4096) | T1SZ(16) | EPD1 | TG1(4096) | IPS(5),
         MAIR_LAYOUT},
        {"s1 4K 39 pa40, ASID 0x1234", {MMP_PT_ARM64_S1, 4096, 39, 40, 0, 0, 0, 0}, 0x1234,
         T0SZ(25) | WALK_WBWA_IS | TG0(4096) | T1SZ(25) | EPD1 | TG1(4096) | IPS(2) | AS,
         MAIR_LAYOUT},
        {"s1 16K 47 pa39", {MMP_PT_ARM64_S1, 16384, 47, 39, 0, 0, 0, 0}, 0,
         T0SZ(17) | WALK_WBWA_IS | TG0(16384) | T1SZ(17) | EPD1 | TG1(16384) | IPS(2),
         MAIR_LAYOUT},
        {"s1 4K LPA2 52", {MMP_PT_ARM64_S1, 4096, 52, 52, 0, 0, 0, 0}, 255,
         T0SZ(12) | WALK_WBWA_IS | TG0(4096) | T1SZ(12) | EPD1 | TG1(4096) | IPS(6) | DS1,
         MAIR_LAYOUT},
        {"s1 16K LPA2 52", {MMP_PT_ARM64_S1, 16384, 52, 52, 0, 0, 0, 0}, 256,
         T0SZ(12) | WALK_WBWA_IS | TG0(16384) | T1SZ(12) | EPD1 | TG1(16384) | IPS(6) | AS |
             DS1,
         MAIR_LAYOUT},
        {"s1 64K LPA+LVA 52", {MMP_PT_ARM64_S1, 65536, 52, 52, 0, 0, 0, 0}, 1,
         T0SZ(12) | WALK_WBWA_IS | TG0(65536) | T1SZ(12) | EPD1 | TG1(65536) | IPS(6),
         MAIR_LAYOUT},
        {"EL2 4K 48", {MMP_PT_ARM64_S1, 4096, 48, 0, MMP_PT_EL2, 0, 0, 0}, 0,
         T0SZ(16) | WALK_WBWA_IS | TG0(4096) | PS(5) | RES1_EL2, MAIR_LAYOUT},
        {"EL2 4K LPA2 52", {MMP_PT_ARM64_S1, 4096, 52, 52, MMP_PT_EL2, 0, 0, 0}, 0,
         T0SZ(12) | WALK_WBWA_IS | TG0(4096) | PS(6) | RES1_EL2 | DS2, MAIR_LAYOUT},
        {"EL2 64K 42 pa44", {MMP_PT_ARM64_S1, 65536, 42, 44, MMP_PT_EL2, 0, 0, 0}, 0,
         T0SZ(22) | WALK_WBWA_IS | TG0(65536) | PS(4) | RES1_EL2, MAIR_LAYOUT},
        /* Stage 2: SL0 per tables D8-19/29 (4K: 1 = L1; 16K/64K: 2 = L1, 3 = L0). */
        {"s2 4K 40", {MMP_PT_ARM64_S2, 4096, 40, 0, 0, 0, 0, 0}, 9,
         T0SZ(24) | SL0(1) | WALK_WBWA_IS | TG0(4096) | PS(5) | BIT(31), 0},
        {"s2 4K 32 pa36, VMID 0x1ff", {MMP_PT_ARM64_S2, 4096, 32, 36, 0, 0, 0, 0}, 0x1ff,
         T0SZ(32) | SL0(0) | WALK_WBWA_IS | TG0(4096) | PS(1) | VS | BIT(31), 0},
        {"s2 4K LPA2 52", {MMP_PT_ARM64_S2, 4096, 52, 52, 0, 0, 0, 0}, 0xffff,
         T0SZ(12) | SL0(2) | WALK_WBWA_IS | TG0(4096) | PS(6) | VS | BIT(31) | DS2, 0},
        {"s2 16K LPA2 52", {MMP_PT_ARM64_S2, 16384, 52, 52, 0, 0, 0, 0}, 1,
         T0SZ(12) | SL0(3) | WALK_WBWA_IS | TG0(16384) | PS(6) | BIT(31) | DS2, 0},
        {"s2 64K LPA 52 FWB", {MMP_PT_ARM64_S2, 65536, 52, 52, MMP_PT_S2FWB, 0, 0, 0}, 1,
         T0SZ(12) | SL0(2) | WALK_WBWA_IS | TG0(65536) | PS(6) | BIT(31), 0},
        {"s2 64K 42", {MMP_PT_ARM64_S2, 65536, 42, 0, 0, 0, 0, 0}, 0,
         T0SZ(22) | SL0(1) | WALK_WBWA_IS | TG0(65536) | PS(5) | BIT(31), 0},
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        for (int hi = 0; hi < 2; hi++) {
            /* The root at an address with bits 51:48 set (52-bit layouts). */
            if (hi && w[i].c.pa_bits != 52)
                continue;
            struct tenv *e = calloc(1, sizeof *e);
            struct mmp_pt_ops o = {.alloc_table = hi ? hi_alloc : t_alloc,
                                   .free_table = hi ? hi_free : t_free,
                                   .phys_to_virt = hi ? hi_p2v : NULL,
                                   .tlb_flush = t_flush,
                                   .ctx = e};
            ck_assert_int_eq(mmp_pt_init(&e->pt, &w[i].c, &o), 0);
            struct mmp_pt_regs r;
            ck_assert_int_eq(mmp_pt_regs(&e->pt, w[i].id, &r), 0);
            ck_assert_msg(r.tcr == w[i].tcr, "%s: TCR %#llx want %#llx (xor %#llx)", w[i].name,
                          (unsigned long long)r.tcr, (unsigned long long)w[i].tcr,
                          (unsigned long long)(r.tcr ^ w[i].tcr));
            ck_assert_uint_eq(r.mair, w[i].mair);
            uint64_t root = mmp_pt_root(&e->pt);
            /* BADDR[51:48] in bits 5:2 for 52-bit addresses (D24.2.209). */
            uint64_t baddr = w[i].c.pa_bits == 52
                                 ? (root & 0x0000ffffffffffc0ull) | ((root >> 48) & 0xf) << 2
                                 : root;
            ck_assert_msg(r.root == (baddr | (uint64_t)w[i].id << 48),
                          "%s: TTBR %#llx root %#llx id %#x", w[i].name,
                          (unsigned long long)r.root, (unsigned long long)root, w[i].id);
            if (hi)
                ck_assert_uint_eq((r.root >> 2) & 0xf, 0xc);
            tenv_free(e);
        }
    }
}
END_TEST

START_TEST(regs_errors_and_x86)
{
    struct mmp_pt_regs r;
    ck_assert_int_eq(mmp_pt_regs(NULL, 0, &r), -MMP_EINVAL);
    struct mmp_pt blank;
    memset(&blank, 0, sizeof blank);
    ck_assert_int_eq(mmp_pt_regs(&blank, 0, &r), -MMP_EINVAL);
    /* x86-64: CR3 = root | PCID, PCID at most 12 bits (SDM Vol. 3A 4.5.2). */
    struct tenv *e = tenv_new(&pt_cfgs[0].c);
    ck_assert_int_eq(mmp_pt_regs(&e->pt, 0, NULL), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_regs(&e->pt, 0xabc, &r), 0);
    ck_assert_uint_eq(r.root, mmp_pt_root(&e->pt) | 0xabc);
    ck_assert_uint_eq(r.tcr, 0);
    ck_assert_uint_eq(r.mair, 0);
    ck_assert_int_eq(mmp_pt_regs(&e->pt, 0x1000, &r), -MMP_EINVAL);
    tenv_free(e);
    /* The single-range EL2 regime has no ASID. */
    struct mmp_pt_config c = cfg(MMP_PT_ARM64_S1, 4096, 48, 0, MMP_PT_EL2);
    e = tenv_new(&c);
    ck_assert_int_eq(mmp_pt_regs(&e->pt, 1, &r), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_regs(&e->pt, 0, &r), 0);
    ck_assert_uint_eq(r.root, mmp_pt_root(&e->pt));
    tenv_free(e);
}
END_TEST

Suite *mmp_suite_pt_lpa2(void)
{
    Suite *s = suite_create("pt_lpa2");
    MMP_ADD(s, features_52bit);
    MMP_ADD(s, block_sizes_52bit);
    MMP_ADD(s, descriptors_lpa2_and_lpa);
    MMP_ADD(s, pa_near_2_52);
    MMP_ADD(s, stage2_fwb);
    MMP_ADD(s, max_leaf_every_format);
    MMP_ADD(s, max_leaf_2mib);
    MMP_ADD(s, regs_arm64);
    MMP_ADD(s, regs_errors_and_x86);
    return s;
}
