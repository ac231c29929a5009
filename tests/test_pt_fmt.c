/* SPDX-License-Identifier: MIT */
/*
 * Descriptor formats: geometry per configuration and the raw bits of the
 * descriptors, checked against the architecture manuals' bit positions
 * (written out here independently of the format code).
 */
#include "pt_harness.h"

START_TEST(geometry_per_config)
{
    static const struct {
        struct mmp_pt_config c;
        int rc;
        unsigned levels;
        int start;
        unsigned root_tables, sl0;
    } cases[] = {
        {{MMP_PT_X86_64, 4096, 48, 0, 0, 0, 0, 0}, 0, 4, 4, 1, 0},
        {{MMP_PT_X86_64, 4096, 57, 0, 0, 0, 0, 0}, 0, 5, 5, 1, 0},
        {{MMP_PT_ARM64_S1, 4096, 48, 0, 0, 0, 0, 0}, 0, 4, 0, 1, 0},
        {{MMP_PT_ARM64_S1, 4096, 39, 0, 0, 0, 0, 0}, 0, 3, 1, 1, 0},
        {{MMP_PT_ARM64_S1, 4096, 30, 0, 0, 0, 0, 0}, 0, 2, 2, 1, 0},
        {{MMP_PT_ARM64_S1, 16384, 47, 0, 0, 0, 0, 0}, 0, 3, 1, 1, 0},
        {{MMP_PT_ARM64_S1, 16384, 48, 0, 0, 0, 0, 0}, 0, 4, 0, 1, 0},
        {{MMP_PT_ARM64_S1, 65536, 42, 0, 0, 0, 0, 0}, 0, 2, 2, 1, 0},
        {{MMP_PT_ARM64_S1, 65536, 48, 0, 0, 0, 0, 0}, 0, 3, 1, 1, 0},
        /* Stage 2 (Arm ARM D8.2, VTCR_EL2): 40-bit IPA, 4K: level 1, 2 tables, SL0 = 1. */
        {{MMP_PT_ARM64_S2, 4096, 40, 0, 0, 0, 0, 0}, 0, 3, 1, 2, 1},
        {{MMP_PT_ARM64_S2, 4096, 48, 0, 0, 0, 0, 0}, 0, 4, 0, 1, 2},
        {{MMP_PT_ARM64_S2, 4096, 32, 0, 0, 0, 0, 0}, 0, 2, 2, 4, 0},
        {{MMP_PT_ARM64_S2, 4096, 42, 0, 0, 0, 0, 0}, 0, 3, 1, 8, 1},
        {{MMP_PT_ARM64_S2, 16384, 48, 0, 0, 0, 0, 0}, 0, 3, 1, 2, 2},
        {{MMP_PT_ARM64_S2, 16384, 40, 0, 0, 0, 0, 0}, 0, 2, 2, 16, 1},
        {{MMP_PT_ARM64_S2, 65536, 48, 0, 0, 0, 0, 0}, 0, 3, 1, 1, 2},
        {{MMP_PT_ARM64_S2, 65536, 42, 0, 0, 0, 0, 0}, 0, 2, 2, 1, 1},
        /* 52-bit layouts (Arm ARM D8.2.8-D8.2.10) */
        /* Stage 1, 4K + DS: level -1 for 49..52-bit VAs (table D8-18). */
        {{MMP_PT_ARM64_S1, 4096, 52, 52, 0, 0, 0, 0}, 0, 5, -1, 1, 0},
        {{MMP_PT_ARM64_S1, 4096, 49, 52, 0, 0, 0, 0}, 0, 5, -1, 1, 0},
        {{MMP_PT_ARM64_S1, 4096, 48, 52, 0, 0, 0, 0}, 0, 4, 0, 1, 0},
        {{MMP_PT_ARM64_S1, 4096, 39, 52, 0, 0, 0, 0}, 0, 3, 1, 1, 0},
        /* 16K + DS: level 0 indexes IA[51:47] (table D8-26). */
        {{MMP_PT_ARM64_S1, 16384, 52, 52, 0, 0, 0, 0}, 0, 4, 0, 1, 0},
        /* 64K: 52-bit VA with FEAT_LVA, any PA size; level 1 IA[51:42]. */
        {{MMP_PT_ARM64_S1, 65536, 52, 52, 0, 0, 0, 0}, 0, 3, 1, 1, 0},
        {{MMP_PT_ARM64_S1, 65536, 52, 48, 0, 0, 0, 0}, 0, 3, 1, 1, 0},
        {{MMP_PT_ARM64_S1, 65536, 48, 52, 0, 0, 0, 0}, 0, 3, 1, 1, 0},
        {{MMP_PT_ARM64_S1, 4096, 52, 52, MMP_PT_EL2, 0, 0, 0}, 0, 5, -1, 1, 0},
        /* Stage 2, 4K 52-bit IPA: level 0 with 16 tables, SL0 = 2 (table D8-21). */
        {{MMP_PT_ARM64_S2, 4096, 52, 52, 0, 0, 0, 0}, 0, 4, 0, 16, 2},
        {{MMP_PT_ARM64_S2, 4096, 49, 52, 0, 0, 0, 0}, 0, 4, 0, 2, 2},
        /* 16K 52-bit IPA: level 0, 32 entries, SL0 = 3 (tables D8-29/30). */
        {{MMP_PT_ARM64_S2, 16384, 52, 52, 0, 0, 0, 0}, 0, 4, 0, 1, 3},
        /* 64K 52-bit IPA: level 1, 1024 entries, SL0 = 2. */
        {{MMP_PT_ARM64_S2, 65536, 52, 52, 0, 0, 0, 0}, 0, 3, 1, 1, 2},
        /* Refused: no 52-bit VA without DS on 4K/16K, no 49-51 PA sizes,
         * no IPA wider than 48 bits without a 52-bit PA, no 52-bit
         * stage-2 IPA on 64K without FEAT_LPA. */
        {{MMP_PT_ARM64_S1, 4096, 52, 48, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_ARM64_S1, 16384, 49, 0, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_ARM64_S1, 4096, 53, 52, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_ARM64_S1, 4096, 48, 51, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_ARM64_S1, 65536, 48, 49, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_ARM64_S2, 4096, 49, 48, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_ARM64_S2, 65536, 52, 48, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_ARM64_S2, 65536, 52, 0, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        /* FWB is a stage-2 flag. */
        {{MMP_PT_ARM64_S1, 4096, 48, 0, MMP_PT_S2FWB, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_X86_64, 4096, 48, 0, MMP_PT_S2FWB, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        /* bad configurations */
        {{MMP_PT_X86_64, 4096, 52, 0, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_X86_64, 16384, 48, 0, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_ARM64_S1, 8192, 48, 0, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_ARM64_S1, 4096, 49, 0, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_ARM64_S1, 4096, 48, 50, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_ARM64_S1, 16384, 25, 0, 0, 0, 0, 0}, -MMP_ENOTSUP, 0, 0, 0, 0},
        {{MMP_PT_ARM64_S2, 4096, 31, 0, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{(enum mmp_pt_format)9, 4096, 48, 0, 0, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_X86_64, 4096, 48, 0, 0x100, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_X86_64, 4096, 48, 0, 0, 9, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_X86_64, 4096, 48, 0, MMP_PT_EL2, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
        {{MMP_PT_ARM64_S2, 4096, 40, 0, MMP_PT_EL2, 0, 0, 0}, -MMP_EINVAL, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tenv *e = calloc(1, sizeof *e);
        struct mmp_pt_ops o = t_ops(e);
        int rc = mmp_pt_init(&e->pt, &cases[i].c, &o);
        ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d want %d", i, rc, cases[i].rc);
        if (rc) {
            ck_assert_int_eq(e->live, 0);
            free(e);
            continue;
        }
        struct mmp_pt_info inf;
        ck_assert_int_eq(mmp_pt_info(&e->pt, &inf), 0);
        ck_assert_msg(inf.levels == cases[i].levels && inf.start_level == cases[i].start &&
                          inf.root_tables == cases[i].root_tables && inf.sl0 == cases[i].sl0,
                      "case %zu: levels %u start %d root %u sl0 %u", i, inf.levels,
                      inf.start_level, inf.root_tables, inf.sl0);
        ck_assert_uint_eq(inf.root_bytes, cases[i].root_tables * cases[i].c.granule);
        ck_assert_uint_eq(mmp_pt_root(&e->pt) & (inf.root_bytes - 1), 0);
        tenv_free(e);
    }
}
END_TEST

/* The root allocation failing leaves nothing behind. */
START_TEST(init_root_allocation_fails)
{
    for (size_t c = 0; c < NCFG; c++) {
        struct tenv *e = calloc(1, sizeof *e);
        struct mmp_pt_ops o = t_ops(e);
        e->fail_at = 1;
        ck_assert_int_eq(mmp_pt_init(&e->pt, &pt_cfgs[c].c, &o), -MMP_ENOMEM);
        ck_assert_int_eq(e->live, 0);
        ck_assert_uint_eq(mmp_pt_root(&e->pt), 0);
        mmp_pt_fini(&e->pt); /* harmless on a failed init */
        free(e);
    }
}
END_TEST

/* Leaf and block sizes, contiguous runs (Arm ARM D8.6.1; SDM 4.5). */
START_TEST(leaf_and_run_sizes)
{
    static const struct {
        struct mmp_pt_config c;
        uint64_t blocks, conts;
    } cases[] = {
        {{MMP_PT_X86_64, 4096, 48, 0, 0, 0, 0, 0}, (1ull << 12) | (1ull << 21) | (1ull << 30), 0},
        {{MMP_PT_ARM64_S1, 4096, 48, 0, 0, 0, 0, 0}, (1ull << 12) | (1ull << 21) | (1ull << 30),
         (1ull << 16) | (1ull << 25)},
        {{MMP_PT_ARM64_S1, 16384, 48, 0, 0, 0, 0, 0}, (1ull << 14) | (1ull << 25),
         (1ull << 21) | (1ull << 30)},
        {{MMP_PT_ARM64_S1, 65536, 48, 0, 0, 0, 0, 0}, (1ull << 16) | (1ull << 29),
         (1ull << 21) | (1ull << 34)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tenv *e = tenv_new(&cases[i].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        ck_assert_uint_eq(inf.block_sizes, cases[i].blocks);
        ck_assert_uint_eq(inf.cont_sizes, cases[i].conts);
        tenv_free(e);
    }
}
END_TEST

static uint64_t desc_of(struct tenv *e, uint64_t va, uint64_t pa, uint64_t size, uint32_t attrs)
{
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_map(&e->pt, va, pa, size, attrs, MMP_MAP_NO_CONT), 0);
    ck_assert_int_eq(mmp_pt_lookup(&e->pt, va, &l), 0);
    ck_assert_uint_eq(mmp_pt_unmap(&e->pt, va, size), 0);
    return l.desc;
}

START_TEST(x86_descriptor_bits)
{
    struct tenv *e = tenv_new(&pt_cfgs[0].c);
    uint64_t pa = 0x123456789000ull;
    /* 4K PTE: P|RW|A|D, NX (bit 63), address bits 51:12. */
    uint64_t d = desc_of(e, 0x1000, pa, 4096, RW);
    ck_assert_uint_eq(d, pa | 0x1 | 0x2 | 0x20 | 0x40 | (1ull << 63));
    d = desc_of(e, 0x1000, pa, 4096, RO | MMP_PROT_EXEC | MMP_PROT_USER | MMP_PROT_GLOBAL);
    ck_assert_uint_eq(d, pa | 0x1 | 0x4 | 0x20 | 0x100);
    d = desc_of(e, 0x1000, pa, 4096, RO | MMP_MEM_DEVICE);
    ck_assert_uint_eq(d & 0x18, 0x18); /* PCD|PWT: PAT entry 3, UC */
    d = desc_of(e, 0x1000, pa, 4096, RO | MMP_MEM_NORMAL_NC);
    ck_assert_uint_eq(d & 0x18, 0x10); /* PCD: PAT entry 2, UC- */
    /* 2M PDE and 1G PDPTE: PS (bit 7). */
    d = desc_of(e, 1ull << 30, 0x40000000ull + (2 << 20), 2 << 20, RW);
    ck_assert_uint_eq(d & 0x80, 0x80);
    ck_assert_uint_eq(d & ~0xfffull & ~(1ull << 63), 0x40000000ull + (2 << 20));
    d = desc_of(e, 1ull << 30, 3ull << 30, 1ull << 30, RW);
    ck_assert_uint_eq(d & 0x80, 0x80);
    tenv_free(e);
}
END_TEST

START_TEST(arm64_descriptor_bits)
{
    struct tenv *e = tenv_new(&pt_cfgs[2].c); /* stage 1, 4K */
    uint64_t pa = 0x812345000ull;
    /* Page: 0b11, AttrIndx 0, SH 0b11, AF, nG, UXN (kernel RW no exec -> PXN too). */
    uint64_t d = desc_of(e, 0x1000, pa, 4096, RW);
    ck_assert_uint_eq(d, pa | 3 | (3u << 8) | (1u << 10) | (1u << 11) | (1ull << 53) | (1ull << 54));
    /* User read-only executable global: AP = 0b11, PXN, !UXN, nG clear. */
    d = desc_of(e, 0x1000, pa, 4096, RO | MMP_PROT_USER | MMP_PROT_EXEC | MMP_PROT_GLOBAL);
    ck_assert_uint_eq(d, pa | 3 | (3u << 6) | (3u << 8) | (1u << 10) | (1ull << 53));
    d = desc_of(e, 0x1000, pa, 4096, RW | MMP_MEM_DEVICE);
    ck_assert_uint_eq((d >> 2) & 7, 2);
    d = desc_of(e, 0x1000, pa, 4096, RW | MMP_MEM_NORMAL_NC);
    ck_assert_uint_eq((d >> 2) & 7, 1);
    /* Block at level 2: 0b01. */
    d = desc_of(e, 2 << 20, 0x40000000ull, 2 << 20, RW);
    ck_assert_uint_eq(d & 3, 1);
    ck_assert_uint_eq(d & 0xffffffe00000ull, 0x40000000ull);
    /* Contiguous run of 16 pages: bit 52 on every entry. */
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0x10000, 0x80000000ull, 0x10000, RW, 0), 0);
    for (int i = 0; i < 16; i++) {
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, 0x10000 + i * 4096, &l), 0);
        ck_assert_uint_eq(l.desc >> 52 & 1, 1);
        ck_assert_int_eq(l.kind, MMP_LEAF_CONT);
    }
    tenv_free(e);

    e = tenv_new(&pt_cfgs[8].c); /* stage 2, 4K, 40-bit IPA */
    d = desc_of(e, 0x1000, pa, 4096, RW);
    /* MemAttr 0b1111, S2AP 0b11, SH 0b11, AF, XN (bit 54). */
    ck_assert_uint_eq(d, pa | 3 | (0xfu << 2) | (3u << 6) | (3u << 8) | (1u << 10) | (1ull << 54));
    d = desc_of(e, 0x1000, pa, 4096, RO | MMP_PROT_EXEC | MMP_MEM_DEVICE);
    ck_assert_uint_eq(d, pa | 3 | (0x1u << 2) | (1u << 6) | (3u << 8) | (1u << 10));
    d = desc_of(e, 0x1000, pa, 4096, RO | MMP_MEM_NORMAL_NC);
    ck_assert_uint_eq((d >> 2) & 0xf, 5);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0x1000, pa, 4096, RW | MMP_PROT_USER, 0), -MMP_EINVAL);
    tenv_free(e);

    /* Single-range EL2 regime: AP[1] RES1, XN in bit 54, no nG, no PXN. */
    struct mmp_pt_config el2 = {MMP_PT_ARM64_S1, 4096, 48, 0, MMP_PT_EL2, 0, 0, 0};
    e = tenv_new(&el2);
    d = desc_of(e, 0x1000, pa, 4096, RW);
    ck_assert_uint_eq(d, pa | 3 | (1u << 6) | (3u << 8) | (1u << 10) | (1ull << 54));
    d = desc_of(e, 0x1000, pa, 4096, RO | MMP_PROT_EXEC);
    ck_assert_uint_eq(d, pa | 3 | (3u << 6) | (3u << 8) | (1u << 10));
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0x1000, pa, 4096, RW | MMP_PROT_GLOBAL, 0), -MMP_EINVAL);
    tenv_free(e);
}
END_TEST

/* Attributes survive encode + decode in every format and leaf size. */
START_TEST(attrs_round_trip)
{
    static const uint32_t mems[] = {MMP_MEM_NORMAL_WB, MMP_MEM_NORMAL_NC, MMP_MEM_DEVICE,
                                    MMP_MEM_WC,        MMP_MEM_WT,        MMP_MEM_WP,
                                    0x600,             0xf00};
    for (size_t c = 0; c < NCFG; c++) {
        struct tenv *e = tenv_new(&pt_cfgs[c].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        int s2 = pt_cfg_no_user(c), ept = pt_cfgs[c].c.format == MMP_PT_X86_EPT;
        int xo = ept && (pt_cfgs[c].c.flags & MMP_PT_EPT_XO);
        for (uint32_t p = 0; p <= MMP_PROT_MASK; p++) {
            for (size_t m = 0; m < sizeof mems / sizeof mems[0]; m++) {
                uint32_t a = p | mems[m];
                /* WC/WT/WP: EPT only; 0x600 and 0xf00: no format */
                int mem_ok = m < 3 || (ept && m < 6);
                int ok = ((p & MMP_PROT_READ) || (xo && p == MMP_PROT_EXEC)) &&
                         !(s2 && (p & (MMP_PROT_USER | MMP_PROT_GLOBAL))) && mem_ok;
                int rc = mmp_pt_map(&e->pt, 0, 0, inf.granule, a, 0);
                ck_assert_msg(rc == (ok ? 0 : -MMP_EINVAL), "%s attrs %#x rc %d",
                              pt_cfgs[c].name, a, rc);
                if (!ok)
                    continue;
                struct mmp_pt_leaf l;
                ck_assert_int_eq(mmp_pt_lookup(&e->pt, 0, &l), 0);
                ck_assert_msg(l.attrs == a, "%s: %#x came back %#x", pt_cfgs[c].name, a, l.attrs);
                ck_assert_int_eq(mmp_pt_unmap(&e->pt, 0, inf.granule), 0);
            }
        }
        tenv_free(e);
    }
}
END_TEST

Suite *mmp_suite_pt_fmt(void)
{
    Suite *s = suite_create("pt_fmt");
    MMP_ADD(s, geometry_per_config);
    MMP_ADD(s, init_root_allocation_fails);
    MMP_ADD(s, leaf_and_run_sizes);
    MMP_ADD(s, x86_descriptor_bits);
    MMP_ADD(s, arm64_descriptor_bits);
    MMP_ADD(s, attrs_round_trip);
    return s;
}
