/* SPDX-License-Identifier: MIT */
/*
 * mmp_pt_walk_entries(): every leaf mmp_pt_walk() reports, with the same
 * descriptor, and every table entry twice (before and after its table's
 * entries, properly nested), in address order; non-zero invalid entries;
 * fn's value stops it; a corrupted table stops it with -EIO.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mmport/mmport.h>

#include "mmp_test.h"

#define OFF 0x100000000ull
#define RW (MMP_PROT_READ | MMP_PROT_WRITE)

static const struct mmp_pt_config cfgs[] = {
    {MMP_PT_X86_64, 4096, 48, 0, 0, 0, 0, 0},
    {MMP_PT_X86_64, 4096, 57, 0, 0, 0, 0, 0},
    {MMP_PT_X86_EPT, 4096, 48, 0, 0, 0, 0, 0},
    {MMP_PT_ARM64_S2, 4096, 40, 0, 0, 0, 0, 0},
    {MMP_PT_ARM64_S1, 16384, 48, 0, 0, 0, 0, 0},
    {MMP_PT_ARM64_S2, 65536, 48, 0, 0, 0, 0, 0},
    {MMP_PT_ARM64_S1, 4096, 52, 52, 0, 0, 0, 0},
};
#define NCFG (sizeof cfgs / sizeof cfgs[0])

#define MAXE 8192

struct rec {
    struct mmp_pt_entry e[MAXE];
    size_t n;
    int stop_at; /* -1: never */
};

static int rec_entry(void *arg, const struct mmp_pt_entry *x)
{
    struct rec *r = arg;
    if ((int)r->n == r->stop_at)
        return 7;
    ck_assert_uint_lt(r->n, MAXE);
    r->e[r->n++] = *x;
    return 0;
}

struct leaves {
    struct mmp_pt_leaf l[MAXE];
    size_t n;
};

static int rec_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct leaves *v = arg;
    ck_assert_uint_lt(v->n, MAXE);
    v->l[v->n++] = *l;
    return 0;
}

/* The walk's shape: TABLE / TABLE_POST nest (same slot, one level up from
 * what they enclose, which lies inside the slot), leaves are the walk's,
 * in address order. */
static void check_shape(const struct rec *r, const struct leaves *v, uint64_t tables,
                        const char *what)
{
    size_t depth = 0, nl = 0, nt = 0;
    const struct mmp_pt_entry *open[8];
    uint64_t prev = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct mmp_pt_entry *x = &r->e[i];
        if (depth) { /* inside the slot of the innermost open table entry */
            const struct mmp_pt_entry *o = open[depth - 1];
            ck_assert_msg(x->va >= o->va && x->va + x->size <= o->va + o->size,
                          "%s: entry %zu (va %#llx) outside its table's slot", what, i,
                          (unsigned long long)x->va);
        }
        switch (x->kind) {
        case MMP_ENTRY_TABLE:
            ck_assert_uint_lt(depth, 8);
            open[depth++] = x;
            nt++;
            break;
        case MMP_ENTRY_TABLE_POST:
            ck_assert_msg(depth && open[depth - 1]->va == x->va &&
                              open[depth - 1]->level == x->level &&
                              open[depth - 1]->desc == x->desc,
                          "%s: TABLE_POST %zu does not close the open table entry", what, i);
            depth--;
            break;
        case MMP_ENTRY_LEAF:
            ck_assert_msg(nl < v->n, "%s: more leaves than mmp_pt_walk's", what);
            ck_assert_msg(x->va == v->l[nl].va && x->size == v->l[nl].size &&
                              x->desc == v->l[nl].desc && x->level == (int8_t)v->l[nl].level,
                          "%s: leaf %zu: entry va %#llx desc %#llx, walk va %#llx desc %#llx",
                          what, nl, (unsigned long long)x->va, (unsigned long long)x->desc,
                          (unsigned long long)v->l[nl].va, (unsigned long long)v->l[nl].desc);
            ck_assert_msg(x->va >= prev, "%s: leaves out of order", what);
            prev = x->va;
            nl++;
            break;
        default:
            ck_assert_msg(0, "%s: an invalid entry in a table without any", what);
        }
    }
    ck_assert_uint_eq(depth, 0);
    ck_assert_uint_eq(nl, v->n);
    if (tables != ~0ull)
        ck_assert_uint_eq(nt, tables);
}

START_TEST(entries_match_walk)
{
    static struct rec r;
    static struct leaves v;
    for (size_t k = 0; k < NCFG; k++) {
        struct mmp_pt *pt;
        ck_assert_int_eq(mmp_pt_create(&pt, &cfgs[k], NULL), 0);
        struct mmp_pt_info in;
        ck_assert_int_eq(mmp_pt_info(pt, &in), 0);
        uint64_t G = in.granule, base = 1ull << 36, bs = 0;
        for (unsigned b = 13; b < 40 && !bs; b++)
            if ((in.block_sizes >> b & 1) && (1ull << b) > G)
                bs = 1ull << b;
        /* a block, a run-sized range, scattered pages with a software bit */
        ck_assert_int_eq(mmp_pt_map(pt, base, base + OFF, bs, RW, 0), 0);
        ck_assert_int_eq(mmp_pt_map(pt, base + bs, base + bs + OFF, 32 * G, RW, 0), 0);
        for (uint64_t i = 0; i < 40; i++) {
            uint64_t a = base + 4 * bs + i * 37 * G + (i % 3) * bs;
            ck_assert_int_eq(mmp_pt_map(pt, a, a + OFF, G, RW | MMP_SW(0), MMP_MAP_REPLACE), 0);
        }
        struct mmp_pt_usage u;
        ck_assert_int_eq(mmp_pt_usage(pt, &u), 0);
        uint64_t all = in.va_bits >= 64 ? ~0ull : (1ull << in.va_bits) - 1;
        if (in.format == MMP_PT_X86_64)
            all = (1ull << (in.va_bits - 1)) - 1; /* the lower canonical half */
        memset(&r, 0, sizeof r);
        r.stop_at = -1;
        v.n = 0;
        ck_assert_int_eq(mmp_pt_walk_entries(pt, 0, all + 1, rec_entry, &r), 0);
        ck_assert_int_eq(mmp_pt_walk(pt, 0, all + 1, rec_leaf, &v), 0);
        check_shape(&r, &v, u.table_pages - in.root_bytes / G, "whole table");
        /* software bits in the raw descriptors */
        size_t with = 0;
        for (size_t i = 0; i < r.n; i++)
            if (r.e[i].kind == MMP_ENTRY_LEAF) {
                struct mmp_pt_leaf l;
                ck_assert_int_eq(mmp_pt_lookup(pt, r.e[i].va, &l), 0);
                with += (l.attrs & MMP_SW(0)) != 0;
            }
        ck_assert_uint_eq(with, 40);
        /* one page: the table entries on its path, then the leaf */
        uint64_t a = base + 4 * bs;
        memset(&r, 0, sizeof r);
        r.stop_at = -1;
        v.n = 0;
        ck_assert_int_eq(mmp_pt_walk_entries(pt, a, G, rec_entry, &r), 0);
        ck_assert_int_eq(mmp_pt_walk(pt, a, G, rec_leaf, &v), 0);
        check_shape(&r, &v, in.levels - 1, "one page");
        ck_assert_uint_eq(r.n, 2 * (in.levels - 1) + 1);
        /* fn's value stops it */
        memset(&r, 0, sizeof r);
        r.stop_at = 3;
        ck_assert_int_eq(mmp_pt_walk_entries(pt, 0, all + 1, rec_entry, &r), 7);
        ck_assert_uint_eq(r.n, 3);
        /* arguments */
        ck_assert_int_eq(mmp_pt_walk_entries(pt, 0, G, NULL, NULL), -MMP_EINVAL);
        ck_assert_int_eq(mmp_pt_walk_entries(pt, 1, G, rec_entry, &r), -MMP_EINVAL);
        ck_assert_int_eq(mmp_pt_walk_entries(pt, 0, 0, rec_entry, &r), -MMP_EINVAL);
        mmp_pt_destroy(pt);
    }
}
END_TEST

/* Invalid entries that hold bits are shown; a cycle stops the walk. The
 * built-in allocator gives pa == va, so the test reaches entries itself. */
START_TEST(entries_invalid_and_corrupted)
{
    struct mmp_pt_config c = {MMP_PT_X86_64, 4096, 48, 0, 0, 0, 0, 0};
    struct mmp_pt *pt;
    ck_assert_int_eq(mmp_pt_create(&pt, &c, NULL), 0);
    uint64_t G = 4096, va = 1ull << 30;
    ck_assert_int_eq(mmp_pt_map(pt, va, va + OFF, G, RW, 0), 0);
    static struct rec r;
    memset(&r, 0, sizeof r);
    r.stop_at = -1;
    ck_assert_int_eq(mmp_pt_walk_entries(pt, va, G, rec_entry, &r), 0);
    ck_assert_uint_eq(r.n, 7); /* PML4E, PDPTE, PDE, the PTE, three POSTs */
    uint64_t addr = 0x000ffffffffff000ull;
    uint64_t *pte_table = (uint64_t *)(uintptr_t)(r.e[2].desc & addr); /* the PDE's table */
    /* an invalid PTE holding bits (the caller's, or a lock) next to the leaf */
    pte_table[1] = 0x5ull << 52;
    memset(&r, 0, sizeof r);
    r.stop_at = -1;
    ck_assert_int_eq(mmp_pt_walk_entries(pt, va, 2 * G, rec_entry, &r), 0);
    ck_assert_uint_eq(r.n, 8);
    ck_assert_uint_eq(r.e[4].kind, MMP_ENTRY_INVALID);
    ck_assert_uint_eq(r.e[4].va, va + G);
    ck_assert_uint_eq(r.e[4].desc, 0x5ull << 52);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(pt, va + G, &l), -MMP_ENOENT);
    pte_table[1] = 0;
    /* a PDE that leads back to the root: -EIO, not a loop */
    uint64_t *pd = (uint64_t *)(uintptr_t)(r.e[1].desc & addr); /* the PDPTE's table */
    pd[1] = (r.e[2].desc & ~addr) | mmp_pt_root(pt);
    memset(&r, 0, sizeof r);
    r.stop_at = -1;
    ck_assert_int_eq(mmp_pt_walk_entries(pt, va, 4ull << 20, rec_entry, &r), -MMP_EIO);
    struct mmp_pt_reason why;
    ck_assert_int_eq(mmp_pt_reason(pt, &why), 0);
    ck_assert_uint_eq(why.rule, MMP_PT_RULE_CORRUPT);
    pd[1] = 0;
    mmp_pt_destroy(pt);
}
END_TEST

Suite *mmp_suite_pt_entries(void)
{
    Suite *s = suite_create("pt_entries");
    MMP_ADD(s, entries_match_walk);
    MMP_ADD(s, entries_invalid_and_corrupted);
    return s;
}
