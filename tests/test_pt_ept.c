/* SPDX-License-Identifier: MIT */
/*
 * Intel EPT and AMD NPT: descriptor bits written out from the manuals
 * (Intel SDM vol. 3C 29.3.2 Tables 29-1..29-6, 25.6.11; AMD APM vol. 2
 * 15.25), every combination the SDM calls an EPT misconfiguration refused,
 * mode-based execute control, and the control-register values of
 * mmp_pt_regs().
 */
#include "pt_harness.h"

#define EPT4 {MMP_PT_X86_EPT, 4096, 48, 0, 0, 0, 0, 0}
#define NPT4 {MMP_PT_X86_NPT, 4096, 48, 0, 0, 0, 0, 0}
#define X 0x4ull         /* EPT execute */
#define MT(t) ((uint64_t)(t) << 3)
#define IPAT (1ull << 6)
#define BIG (1ull << 7)  /* EPT "maps a page" / x86 PS */

static uint64_t leaf_desc(struct tenv *e, uint64_t va, uint64_t pa, uint64_t size, uint32_t attrs)
{
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_map(&e->pt, va, pa, size, attrs, 0), 0);
    ck_assert_int_eq(mmp_pt_lookup(&e->pt, va, &l), 0);
    ck_assert_uint_eq(l.attrs, attrs);
    ck_assert_int_eq(mmp_pt_unmap(&e->pt, va, size), 0);
    return l.desc;
}

/* The test allocator is identity (pa == va): the root's first entry. */
static uint64_t root_entry(struct tenv *e, unsigned i)
{
    return ((const uint64_t *)(uintptr_t)mmp_pt_root(&e->pt))[i];
}

START_TEST(ept_leaf_bits)
{
    const struct mmp_pt_config c = EPT4;
    struct tenv *e = tenv_new(&c);
    const uint64_t pa = 0x123456789000ull;
    /* R/W/X in bits 2:0, WB (6) in 5:3, no A/D without MMP_PT_EPT_AD. */
    ck_assert_uint_eq(leaf_desc(e, 0x1000, pa, 4096, RW), pa | 0x3 | MT(6));
    ck_assert_uint_eq(leaf_desc(e, 0x1000, pa, 4096, RO | MMP_PROT_EXEC), pa | 0x1 | X | MT(6));
    ck_assert_uint_eq(leaf_desc(e, 0x1000, pa, 4096, RO | MMP_MEM_NORMAL_NC), pa | 0x1 | MT(0));
    ck_assert_uint_eq(leaf_desc(e, 0x1000, pa, 4096, RO | MMP_MEM_DEVICE), pa | 0x1 | MT(0) | IPAT);
    ck_assert_uint_eq(leaf_desc(e, 0x1000, pa, 4096, RO | MMP_MEM_WC), pa | 0x1 | MT(1) | IPAT);
    ck_assert_uint_eq(leaf_desc(e, 0x1000, pa, 4096, RO | MMP_MEM_WT), pa | 0x1 | MT(4) | IPAT);
    ck_assert_uint_eq(leaf_desc(e, 0x1000, pa, 4096, RO | MMP_MEM_WP), pa | 0x1 | MT(5) | IPAT);
    /* 2 MiB and 1 GiB leaves: bit 7; bit 63 (suppress #VE) stays clear. */
    ck_assert_uint_eq(leaf_desc(e, 1ull << 30, 0x80200000ull, 2 << 20, RW),
                      0x80200000ull | 0x3 | MT(6) | BIG);
    ck_assert_uint_eq(leaf_desc(e, 1ull << 30, 0x80000000ull, 1 << 30, RW | MMP_PROT_EXEC),
                      0x80000000ull | 0x7 | MT(6) | BIG);
    /* Tables are RWX only: bits 7:3 of a PML4E are reserved. */
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0x1000, pa, 4096, RO, 0), 0);
    ck_assert_uint_eq(root_entry(e, 0) & 0xfff, 0x7);
    ck_assert_uint_eq(root_entry(e, 0) >> 52, 0);
    tenv_free(e);
}
END_TEST

/* EPT_AD: A (bit 8) on tables and leaves, D (bit 9) on writable leaves. */
START_TEST(ept_accessed_dirty)
{
    const struct mmp_pt_config c = {MMP_PT_X86_EPT, 4096, 57, 0, MMP_PT_EPT_AD, 0, 0, 0};
    struct tenv *e = tenv_new(&c);
    const uint64_t pa = 0x5000;
    ck_assert_uint_eq(leaf_desc(e, 0x1000, pa, 4096, RW), pa | 0x3 | MT(6) | 0x300);
    ck_assert_uint_eq(leaf_desc(e, 0x1000, pa, 4096, RO), pa | 0x1 | MT(6) | 0x100);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0x1000, pa, 4096, RO, 0), 0);
    ck_assert_uint_eq(root_entry(e, 0) & 0xfff, 0x107);
    struct mmp_pt_info inf;
    mmp_pt_info(&e->pt, &inf);
    ck_assert_uint_eq(inf.levels, 5);
    ck_assert_int_eq(inf.start_level, 5);
    ck_assert_uint_eq(inf.t0sz, 0);
    tenv_free(e);
}
END_TEST

/* A split keeps the memory type and ignore-PAT; 4K children drop bit 7. */
START_TEST(ept_split_keeps_type)
{
    const struct mmp_pt_config c = EPT4;
    struct tenv *e = tenv_new(&c);
    uint64_t va = 2 << 20, pa = 0x40000000ull;
    ck_assert_int_eq(mmp_pt_map(&e->pt, va, pa, 2 << 20, RW | MMP_MEM_WT, 0), 0);
    ck_assert_int_eq(mmp_pt_unmap(&e->pt, va + 0x5000, 4096), 0);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(&e->pt, va + 0x6000, &l), 0);
    ck_assert_uint_eq(l.size, 4096);
    ck_assert_uint_eq(l.desc, (pa + 0x6000) | 0x3 | MT(4) | IPAT);
    ck_assert_uint_eq(l.attrs, RW | MMP_MEM_WT);
    tenv_free(e);
}
END_TEST

/* Everything SDM 3C 29.3.3.1 calls a misconfiguration, and the rest the
 * format cannot express, is refused; nothing is written. */
START_TEST(ept_refused)
{
    const struct mmp_pt_config c = EPT4;
    struct tenv *e = tenv_new(&c);
    static const uint32_t bad[] = {
        MMP_PROT_WRITE,                       /* write without read */
        MMP_PROT_WRITE | MMP_PROT_EXEC,       /* write without read */
        MMP_PROT_EXEC,                        /* execute-only without XO */
        0,                                    /* not present */
        RW | MMP_PROT_USER, RW | MMP_PROT_GLOBAL,
        RW | 0x600, RW | 0x700, RW | 0xf00,   /* no such portable type */
        RW | 0x40,                            /* unknown attribute bit */
    };
    struct mmp_pt_stats a, b;
    mmp_pt_stats(&e->pt, &a);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(mmp_pt_map(&e->pt, 0x1000, 0x1000, 4096, bad[i], 0) == -MMP_EINVAL,
                      "map attrs %#x", bad[i]);
        ck_assert_int_eq(mmp_pt_map(&e->pt, 0x2000, 0x2000, 4096, RW, 0), 0);
        ck_assert_msg(mmp_pt_protect(&e->pt, 0x2000, 4096, bad[i]) == -MMP_EINVAL,
                      "protect attrs %#x", bad[i]);
        ck_assert_int_eq(mmp_pt_unmap(&e->pt, 0x2000, 4096), 0);
    }
    mmp_pt_stats(&e->pt, &b);
    ck_assert_uint_eq(b.table_pages, a.table_pages);
    /* Address bits above MAXPHYADDR are reserved: -ERANGE. */
    tenv_free(e);
    const struct mmp_pt_config c39 = {MMP_PT_X86_EPT, 4096, 48, 39, 0, 0, 0, 0};
    e = tenv_new(&c39);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0, 1ull << 39, 4096, RW, 0), -MMP_ERANGE);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0, (1ull << 39) - 4096, 4096, RW, 0), 0);
    tenv_free(e);
}
END_TEST

/* Execute-only with the capability: bits 2:0 = 100b. */
START_TEST(ept_execute_only)
{
    const struct mmp_pt_config c = {MMP_PT_X86_EPT, 4096, 48, 0, MMP_PT_EPT_XO, 0, 0, 0};
    struct tenv *e = tenv_new(&c);
    ck_assert_uint_eq(leaf_desc(e, 0x1000, 0x3000, 4096, MMP_PROT_EXEC), 0x3000 | X | MT(6));
    ck_assert_uint_eq(leaf_desc(e, 1 << 21, 1 << 21, 1 << 21, MMP_PROT_EXEC | MMP_MEM_DEVICE),
                      (1 << 21) | X | MT(0) | IPAT | BIG);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0, 0, 4096, MMP_PROT_WRITE | MMP_PROT_EXEC, 0),
                     -MMP_EINVAL);
    /* An execute-only leaf is a leaf (present), not an empty slot. */
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0x1000, 0x3000, 4096, MMP_PROT_EXEC, 0), 0);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0x1000, 0x3000, 4096, RO, 0), -MMP_EEXIST);
    struct mmp_pt_usage u;
    mmp_pt_usage(&e->pt, &u);
    ck_assert_uint_eq(u.pages, 1);
    tenv_free(e);
}
END_TEST

/*
 * Mode-based execute control (SDM 3C 29.3.2): bit 2 supervisor-mode and
 * bit 10 user-mode execute, in every combination with R/W; tables allow
 * both; an entry with bit 10 alone is present; without R, executing in
 * either mode is execute-only (29.3.3.1) and needs MMP_PT_EPT_XO.
 */
#define XU (1ull << 10)
START_TEST(ept_mode_based_execute)
{
    for (int xo = 0; xo < 2; xo++) {
        const struct mmp_pt_config c = {
            MMP_PT_X86_EPT, 4096, 48, 0, MMP_PT_EPT_MBEC | (xo ? MMP_PT_EPT_XO : 0), 0, 0, 0};
        struct tenv *e = tenv_new(&c);
        const uint64_t pa = 0x7654321000ull;
        for (uint32_t p = 0; p < 16; p++) {
            uint32_t a = (p & 7) | (p & 8 ? MMP_PROT_UEXEC : 0);
            int exec = (p & 4) || (p & 8);
            int ok = (a & MMP_PROT_READ) || (xo && exec && !(a & MMP_PROT_WRITE));
            int rc = mmp_pt_map(&e->pt, 0x1000, pa, 4096, a, 0);
            ck_assert_msg(rc == (ok ? 0 : -MMP_EINVAL), "xo %d attrs %#x rc %d", xo, a, rc);
            if (!ok)
                continue;
            struct mmp_pt_leaf l;
            ck_assert_int_eq(mmp_pt_lookup(&e->pt, 0x1000, &l), 0);
            ck_assert_uint_eq(l.attrs, a);
            ck_assert_uint_eq(l.desc, pa | (p & 7) | (p & 8 ? XU : 0) | MT(6));
            /* Present, whatever bits: a second map finds it. */
            ck_assert_int_eq(mmp_pt_map(&e->pt, 0x1000, pa, 4096, RO, 0), -MMP_EEXIST);
            ck_assert_int_eq(mmp_pt_unmap(&e->pt, 0x1000, 4096), 0);
        }
        /* Tables: R|W|X|XU (access is the AND over the walk). */
        ck_assert_int_eq(mmp_pt_map(&e->pt, 0x1000, pa, 4096, RO, 0), 0);
        ck_assert_uint_eq(root_entry(e, 0) & 0xfff, 0x407);
        /* Blocks carry bit 10, splits keep it, protect moves it. */
        ck_assert_uint_eq(leaf_desc(e, 1 << 21, 1 << 21, 1 << 21, RO | MMP_PROT_UEXEC),
                          (1 << 21) | 0x1 | XU | MT(6) | BIG);
        ck_assert_int_eq(mmp_pt_map(&e->pt, 1 << 21, 1 << 21, 1 << 21, RO | MMP_PROT_UEXEC, 0),
                         0);
        ck_assert_int_eq(mmp_pt_protect(&e->pt, 1 << 21, 4096, RO | MMP_PROT_EXEC), 0);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, (1 << 21) + 4096, &l), 0);
        ck_assert_uint_eq(l.desc, ((1 << 21) + 4096) | 0x1 | XU | MT(6));
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, 1 << 21, &l), 0);
        ck_assert_uint_eq(l.desc, (1 << 21) | 0x1 | X | MT(6));
        ck_assert_uint_eq(l.attrs, RO | MMP_PROT_EXEC);
        /* USER / GLOBAL stay refused; EPTP has no MBEC bit, info names it. */
        ck_assert_int_eq(mmp_pt_map(&e->pt, 0, 0, 4096, RO | MMP_PROT_USER, 0), -MMP_EINVAL);
        struct mmp_pt_info inf;
        struct mmp_pt_regs r;
        ck_assert_int_eq(mmp_pt_info(&e->pt, &inf), 0);
        ck_assert_uint_eq(inf.features, MMP_PT_FEAT_EPT_MBEC);
        ck_assert_int_eq(mmp_pt_regs(&e->pt, 0, &r), 0);
        ck_assert_uint_eq(r.root, mmp_pt_root(&e->pt) | 6 | 3 << 3);
        tenv_free(e);
    }
    /* Without MBEC bit 10 is never written: UEXEC is refused, tables RWX. */
    static const struct mmp_pt_config others[] = {
        EPT4, {MMP_PT_X86_EPT, 4096, 48, 0, MMP_PT_EPT_XO, 0, 0, 0}, NPT4,
        {MMP_PT_X86_64, 4096, 48, 0, 0, 0, 0, 0}, {MMP_PT_ARM64_S1, 4096, 48, 0, 0, 0, 0, 0},
        {MMP_PT_ARM64_S2, 4096, 40, 0, 0, 0, 0, 0}};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        struct tenv *e = tenv_new(&others[i]);
        ck_assert_int_eq(mmp_pt_map(&e->pt, 0, 0, 4096, RO | MMP_PROT_UEXEC, 0), -MMP_EINVAL);
        ck_assert_int_eq(
            mmp_pt_map(&e->pt, 0, 0, 4096, RO | MMP_PROT_EXEC | MMP_PROT_UEXEC, 0), -MMP_EINVAL);
        ck_assert_int_eq(mmp_pt_map(&e->pt, 0, 0, 4096, MMP_PROT_UEXEC, 0), -MMP_EINVAL);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        ck_assert_uint_eq(inf.features & MMP_PT_FEAT_EPT_MBEC, 0);
        tenv_free(e);
    }
}
END_TEST

START_TEST(ept_npt_config_flags)
{
    struct {
        struct mmp_pt_config c;
        int rc;
    } cases[] = {
        {{MMP_PT_X86_EPT, 4096, 48, 0, MMP_PT_EPT_MBEC, 0, 0, 0}, 0},
        {{MMP_PT_X86_NPT, 4096, 48, 0, MMP_PT_EPT_MBEC, 0, 0, 0}, -MMP_EINVAL},
        {{MMP_PT_X86_EPT, 4096, 52, 0, 0, 0, 0, 0}, -MMP_EINVAL},
        {{MMP_PT_X86_EPT, 16384, 48, 0, 0, 0, 0, 0}, -MMP_EINVAL},
        {{MMP_PT_X86_EPT, 4096, 48, 0, MMP_PT_EL2, 0, 0, 0}, -MMP_EINVAL},
        {{MMP_PT_X86_64, 4096, 48, 0, MMP_PT_EPT_XO, 0, 0, 0}, -MMP_EINVAL},
        {{MMP_PT_X86_NPT, 4096, 48, 0, MMP_PT_EPT_AD, 0, 0, 0}, -MMP_EINVAL},
        {{MMP_PT_ARM64_S2, 4096, 40, 0, MMP_PT_EPT_XO, 0, 0, 0}, -MMP_EINVAL},
        {{MMP_PT_ARM64_S1, 4096, 48, 0, MMP_PT_EPT_AD, 0, 0, 0}, -MMP_EINVAL},
        {{MMP_PT_X86_NPT, 4096, 57, 0, 0, 0, 0, 0}, 0},
        {{MMP_PT_X86_EPT, 4096, 57, 40, MMP_PT_EPT_XO | MMP_PT_EPT_AD, 0, 0, 0}, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tenv *e = calloc(1, sizeof *e);
        struct mmp_pt_ops o = t_ops(e);
        int rc = mmp_pt_init(&e->pt, &cases[i].c, &o);
        ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d want %d", i, rc, cases[i].rc);
        if (rc == 0)
            mmp_pt_fini(&e->pt);
        ck_assert_int_eq(e->live, 0);
        free(e);
    }
}
END_TEST

/* NPT: U on every entry (APM 15.25.5), USER/GLOBAL refused, NX as x86-64,
 * guest-physical input without a canonical form. */
START_TEST(npt_bits)
{
    const struct mmp_pt_config c = NPT4;
    struct tenv *e = tenv_new(&c);
    const uint64_t pa = 0x123456789000ull, NX = 1ull << 63;
    /* P|RW|US|A|D, NX */
    ck_assert_uint_eq(leaf_desc(e, 0x1000, pa, 4096, RW), pa | 0x67 | NX);
    ck_assert_uint_eq(leaf_desc(e, 0x1000, pa, 4096, RO | MMP_PROT_EXEC), pa | 0x25);
    ck_assert_uint_eq(leaf_desc(e, 0x1000, pa, 4096, RO | MMP_MEM_DEVICE), pa | 0x3d | NX);
    ck_assert_uint_eq(leaf_desc(e, 1 << 21, 1 << 21, 1 << 21, RW), (1 << 21) | 0xe7 | NX);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0, 0, 4096, RW | MMP_PROT_USER, 0), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0, 0, 4096, RW | MMP_PROT_GLOBAL, 0), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0, 0, 4096, RW | MMP_MEM_WC, 0), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0, 0, 4096, MMP_PROT_EXEC, 0), -MMP_EINVAL);
    /* 2^47 is non-canonical as a VA, a plain guest-physical address here. */
    ck_assert_int_eq(mmp_pt_map(&e->pt, 1ull << 47, 0, 4096, RW, 0), 0);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 1ull << 48, 0, 4096, RW, 0), -MMP_ERANGE);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0, 0, 4096, RO, 0), 0);
    ck_assert_uint_eq(root_entry(e, 0) & 0xfff, 0x27); /* P|RW|US|A */
    ck_assert_uint_eq(root_entry(e, 256) & 0xfff, 0x27);
    tenv_free(e);
}
END_TEST

START_TEST(regs_values)
{
    struct mmp_pt_regs r;
    struct mmp_pt_config x86 = {MMP_PT_X86_64, 4096, 48, 0, 0, 0, 0, 0};
    struct tenv *e = tenv_new(&x86);
    uint64_t root = mmp_pt_root(&e->pt);
    memset(&r, 0xff, sizeof r);
    ck_assert_int_eq(mmp_pt_regs(&e->pt, 0x123, &r), 0);
    ck_assert_uint_eq(r.root, root | 0x123); /* CR3: PCID in 11:0 */
    ck_assert_uint_eq(r.tcr, 0);
    ck_assert_uint_eq(r.mair, 0);
    ck_assert_int_eq(mmp_pt_regs(&e->pt, 0xfff, &r), 0);
    ck_assert_int_eq(mmp_pt_regs(&e->pt, 0x1000, &r), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_regs(&e->pt, 0, NULL), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_regs(NULL, 0, &r), -MMP_EINVAL);
    tenv_free(e);

    struct mmp_pt blank;
    memset(&blank, 0, sizeof blank);
    ck_assert_int_eq(mmp_pt_regs(&blank, 0, &r), -MMP_EINVAL);

    /* EPTP (SDM 3C 25.6.11): WB (6) in 2:0, walk length - 1 in 5:3, A/D bit 6. */
    static const struct {
        struct mmp_pt_config c;
        uint64_t low;
    } ept[] = {
        {EPT4, 6 | 3 << 3},
        {{MMP_PT_X86_EPT, 4096, 57, 0, 0, 0, 0, 0}, 6 | 4 << 3},
        {{MMP_PT_X86_EPT, 4096, 48, 0, MMP_PT_EPT_AD, 0, 0, 0}, 6 | 3 << 3 | 1 << 6},
        {{MMP_PT_X86_EPT, 4096, 57, 0, MMP_PT_EPT_AD | MMP_PT_EPT_XO, 0, 0, 0}, 6 | 4 << 3 | 1 << 6},
        {NPT4, 0}, /* nCR3: the root alone */
        {{MMP_PT_X86_NPT, 4096, 57, 0, 0, 0, 0, 0}, 0},
    };
    for (size_t i = 0; i < sizeof ept / sizeof ept[0]; i++) {
        e = tenv_new(&ept[i].c);
        root = mmp_pt_root(&e->pt);
        ck_assert_int_eq(mmp_pt_regs(&e->pt, 0, &r), 0);
        ck_assert_msg(r.root == (root | ept[i].low), "case %zu: %#llx", i,
                      (unsigned long long)r.root);
        ck_assert_uint_eq(r.tcr | r.mair, 0);
        ck_assert_int_eq(mmp_pt_regs(&e->pt, 1, &r), -MMP_EINVAL); /* no id in EPTP / nCR3 */
        tenv_free(e);
    }
}
END_TEST

Suite *mmp_suite_pt_ept(void)
{
    Suite *s = suite_create("pt_ept");
    MMP_ADD(s, ept_leaf_bits);
    MMP_ADD(s, ept_accessed_dirty);
    MMP_ADD(s, ept_split_keeps_type);
    MMP_ADD(s, ept_refused);
    MMP_ADD(s, ept_execute_only);
    MMP_ADD(s, ept_mode_based_execute);
    MMP_ADD(s, ept_npt_config_flags);
    MMP_ADD(s, npt_bits);
    MMP_ADD(s, regs_values);
    return s;
}
