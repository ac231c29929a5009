/* SPDX-License-Identifier: MIT */
/*
 * Software bits (MMP_SW(k)): where each format keeps them (the descriptor
 * bits pt.h names, checked in the raw descriptor against this file's own
 * table), that map sets them, protect keeps them unless MMP_SW_SET, splits,
 * folds and tracking passes keep them, leaves with different bits never
 * fold together, and lookup and walk report them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mmport/mmport.h>

#include "mmp_test.h"

#define OFF 0x100000000ull
#define RW (MMP_PROT_READ | MMP_PROT_WRITE)
#define RO MMP_PROT_READ

struct swfmt {
    const char *name;
    struct mmp_pt_config c;
    unsigned n;          /* software bits */
    uint8_t pos[8];      /* their descriptor bits, as pt.h names them */
};

static const struct swfmt fmts[] = {
    {"x86-64", {MMP_PT_X86_64, 4096, 48, 0, 0, 0, 0, 0}, 8, {9, 10, 52, 53, 54, 55, 56, 57}},
    {"npt", {MMP_PT_X86_NPT, 4096, 48, 0, 0, 0, 0, 0}, 8, {9, 10, 52, 53, 54, 55, 56, 57}},
    {"ept", {MMP_PT_X86_EPT, 4096, 48, 0, MMP_PT_EPT_AD, 0, 0, 0}, 7, {52, 53, 54, 55, 56, 59, 62}},
    {"arm64-s1-4k", {MMP_PT_ARM64_S1, 4096, 48, 0, 0, 0, 0, 0}, 2, {56, 57}},
    {"arm64-s2-4k", {MMP_PT_ARM64_S2, 4096, 40, 0, 0, 0, 0, 0}, 2, {56, 57}},
    {"arm64-s2-16k", {MMP_PT_ARM64_S2, 16384, 40, 0, 0, 0, 0, 0}, 2, {56, 57}},
    {"arm64-s2-64k-lpa", {MMP_PT_ARM64_S2, 65536, 48, 52, 0, 0, 0, 0}, 2, {56, 57}},
};
#define NFMT (sizeof fmts / sizeof fmts[0])

/* The descriptor bits a set of software bits should occupy. */
static uint64_t desc_bits(const struct swfmt *f, uint32_t attrs)
{
    uint64_t d = 0;
    for (unsigned k = 0; k < f->n; k++)
        if (attrs & MMP_SW(k))
            d |= 1ull << f->pos[k];
    return d;
}

static uint64_t all_pos(const struct swfmt *f)
{
    return desc_bits(f, MMP_SW_MASK);
}

/* Lookup of va: mapped, its software bits sw, and in the descriptor
 * exactly the bits of sw. */
static void expect(struct mmp_pt *pt, const struct swfmt *f, uint64_t va, uint32_t sw,
                   uint32_t prot, const char *what)
{
    struct mmp_pt_leaf l;
    int rc = mmp_pt_lookup(pt, va, &l);
    ck_assert_msg(rc == 0, "%s: %s: lookup %#llx: %d", f->name, what, (unsigned long long)va, rc);
    ck_assert_msg((l.attrs & MMP_SW_MASK) == sw && (l.desc & all_pos(f)) == desc_bits(f, sw) &&
                      (l.attrs & MMP_PROT_MASK) == prot,
                  "%s: %s: va %#llx attrs %#x (want sw %#x prot %#x), desc %#llx", f->name, what,
                  (unsigned long long)va, l.attrs, sw, prot, (unsigned long long)l.desc);
}

struct count {
    uint64_t leaves, with;
    uint32_t sw;
};

static int count_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct count *c = arg;
    c->leaves++;
    c->with += (l->attrs & MMP_SW_MASK) == c->sw;
    return 0;
}

static void one_format(const struct swfmt *f, uint32_t extra_flags)
{
    struct mmp_pt_config c = f->c;
    c.flags |= extra_flags;
    struct mmp_pt *pt;
    ck_assert_int_eq(mmp_pt_create(&pt, &c, NULL), 0);
    struct mmp_pt_info in;
    ck_assert_int_eq(mmp_pt_info(pt, &in), 0);
    uint64_t G = c.granule, va = 1ull << 32, top = MMP_SW(f->n - 1), s0 = MMP_SW(0);
    /* a bit beyond the format's count */
    if (f->n < 8) {
        struct mmp_pt_reason r;
        ck_assert_int_eq(mmp_pt_map(pt, va, va + OFF, G, RW | MMP_SW(f->n), 0), -MMP_EINVAL);
        ck_assert_int_eq(mmp_pt_reason(pt, &r), 0);
        ck_assert_uint_eq(r.rule, MMP_PT_RULE_SW_BITS);
        ck_assert_uint_eq(r.limit, f->n);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(pt, va, &l), -MMP_ENOENT);
    }
    /* every bit alone, then all of them, one page each */
    for (unsigned k = 0; k <= f->n; k++) {
        uint32_t sw = k < f->n ? MMP_SW(k) : (uint32_t)((1u << f->n) - 1) << MMP_SW_SHIFT;
        uint64_t a = va + k * G;
        ck_assert_int_eq(mmp_pt_map(pt, a, a + OFF, G, RW | sw, 0), 0);
        expect(pt, f, a, sw, RW, "map");
        /* protect keeps them; with MMP_SW_SET it sets them */
        ck_assert_int_eq(mmp_pt_protect(pt, a, G, RO), 0);
        expect(pt, f, a, sw, RO, "protect");
        ck_assert_int_eq(mmp_pt_protect(pt, a, G, RW | MMP_SW_SET | s0), 0);
        expect(pt, f, a, s0, RW, "protect MMP_SW_SET");
        ck_assert_int_eq(mmp_pt_protect(pt, a, G, RW | MMP_SW_SET | sw), 0);
        expect(pt, f, a, sw, RW, "protect MMP_SW_SET back");
        /* a replacing map with other bits changes them */
        ck_assert_int_eq(mmp_pt_map(pt, a, a + OFF, G, RW | top, MMP_MAP_REPLACE), 0);
        expect(pt, f, a, top, RW, "replace");
        ck_assert_int_eq(mmp_pt_unmap(pt, a, G), 0);
    }
    /* the largest block up to 1 GiB: split by a protect inside it, every
     * page keeps the block's bits; folded back by a protect of all of it */
    uint64_t bs = 0; /* the smallest block: one table of pages below it */
    for (unsigned b = 13; b < 40 && !bs; b++)
        if ((in.block_sizes >> b & 1) && (1ull << b) > G)
            bs = 1ull << b;
    uint64_t bva = 64ull << 30;
    uint32_t sw = top | s0;
    ck_assert_int_eq(mmp_pt_map(pt, bva, bva + OFF, bs, RW | sw, 0), 0);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(pt, bva, &l), 0);
    ck_assert_uint_eq(l.size, bs);
    expect(pt, f, bva + bs / 2, sw, RW, "block");
    ck_assert_int_eq(mmp_pt_protect(pt, bva + bs / 2, G, RO), 0);
    expect(pt, f, bva + bs / 2, sw, RO, "split page");
    expect(pt, f, bva, sw, RW, "split neighbour");
    expect(pt, f, bva + bs - G, sw, RW, "split last");
    struct count cnt = {0, 0, sw};
    ck_assert_int_eq(mmp_pt_walk(pt, bva, bs, count_leaf, &cnt), 0);
    ck_assert_uint_gt(cnt.leaves, 1);
    ck_assert_uint_eq(cnt.with, cnt.leaves);
    /* a replacing map of the page with the block's attributes completes it */
    ck_assert_int_eq(mmp_pt_map(pt, bva + bs / 2, bva + bs / 2 + OFF, G, RW | sw, MMP_MAP_REPLACE), 0);
    ck_assert_int_eq(mmp_pt_lookup(pt, bva, &l), 0);
    if (!(c.flags & MMP_PT_TRACK_HW))
        ck_assert_msg(l.size == bs, "%s: not folded back (%llu)", f->name,
                      (unsigned long long)l.size);
    expect(pt, f, bva + bs / 2, sw, RW, "folded");
    /* pages that differ only in their software bits never fold together:
     * a block-sized region filled page by page, every other page with a
     * bit, stays pages; once they agree, it folds */
    uint64_t fva = 128ull << 30, n = in.block_sizes >> 21 & 1 ? (2ull << 20) / G : 0;
    if (G == 4096 && n) {
        for (uint64_t i = 0; i < n; i++)
            ck_assert_int_eq(mmp_pt_map(pt, fva + i * G, fva + OFF + i * G, G,
                                        RW | (i & 1 ? s0 : 0), 0),
                             0);
        ck_assert_int_eq(mmp_pt_lookup(pt, fva, &l), 0);
        ck_assert_uint_eq(l.size, G);
        ck_assert_uint_eq(l.kind, MMP_LEAF_PAGE);
        expect(pt, f, fva + G, s0, RW, "odd page");
        expect(pt, f, fva, 0, RW, "even page");
        for (uint64_t i = 1; i < n; i += 2)
            ck_assert_int_eq(mmp_pt_map(pt, fva + i * G, fva + OFF + i * G, G, RW, MMP_MAP_REPLACE),
                             0);
        ck_assert_int_eq(mmp_pt_lookup(pt, fva, &l), 0);
        ck_assert_msg(l.size == 2ull << 20 || (c.flags & MMP_PT_TRACK_HW),
                      "%s: equal bits, not folded (%llu)", f->name, (unsigned long long)l.size);
    }
    /* tracking passes keep them (start splits and arms, stop folds back) */
    if (!(c.flags & MMP_PT_TRACK_HW) || f->c.format != MMP_PT_X86_EPT || (c.flags & MMP_PT_EPT_AD)) {
        ck_assert_int_eq(mmp_pt_track_start(pt, bva, bs, NULL), 0);
        expect(pt, f, bva + G, sw, RW, "tracked");
        ck_assert_int_eq(mmp_pt_dirty_fault(pt, bva + G), 0);
        expect(pt, f, bva + G, sw, RW, "dirtied");
        ck_assert_int_eq(mmp_pt_track_stop(pt, bva, bs), 0);
        expect(pt, f, bva + G, sw, RW, "after stop");
    }
    mmp_pt_destroy(pt);
}

START_TEST(swbits_every_format)
{
    for (size_t k = 0; k < NFMT; k++) {
        one_format(&fmts[k], 0);
        one_format(&fmts[k], MMP_PT_TRACK_HW);
    }
}
END_TEST

/* Shared calls set and keep them too. */
START_TEST(swbits_shared_calls)
{
    for (size_t k = 0; k < NFMT; k++) {
        const struct swfmt *f = &fmts[k];
        struct mmp_pt_config c = f->c;
        c.flags |= MMP_PT_SHARED;
        struct mmp_pt *pt;
        ck_assert_int_eq(mmp_pt_create(&pt, &c, NULL), 0);
        uint64_t G = c.granule, va = 3ull << 30;
        uint32_t sw = MMP_SW(f->n - 1);
        struct mmp_pt_call sh = {.flags = MMP_CALL_SHARED};
        for (uint64_t i = 0; i < 64; i++) {
            int rc = mmp_pt_map_call(pt, &sh, va + i * G, va + OFF + i * G, G, RW | sw, 0);
            char why[160] = "";
            if (rc)
                mmp_pt_why(pt, why, sizeof why);
            ck_assert_msg(rc == 0, "%s: shared map of page %llu: %d (%s)", f->name,
                          (unsigned long long)i, rc, why);
        }
        expect(pt, f, va + 5 * G, sw, RW, "shared map");
        ck_assert_int_eq(mmp_pt_protect_call(pt, &sh, va + 5 * G, G, RO), 0);
        expect(pt, f, va + 5 * G, sw, RO, "shared protect");
        ck_assert_int_eq(mmp_pt_protect_call(pt, &sh, va + 5 * G, G, RO | MMP_SW_SET), 0);
        expect(pt, f, va + 5 * G, 0, RO, "shared protect MMP_SW_SET");
        mmp_pt_destroy(pt);
    }
}
END_TEST

Suite *mmp_suite_pt_swbits(void)
{
    Suite *s = suite_create("pt_swbits");
    MMP_ADD(s, swbits_every_format);
    MMP_ADD(s, swbits_shared_calls);
    return s;
}
