/* SPDX-License-Identifier: MIT */
/*
 * Lazy-MMU batching: barrier and flush counts per call and per section,
 * nesting, pause/resume, break-before-make inside lazy mode, deferred
 * freeing of unlinked tables, and lazy == eager for the resulting tables.
 */
#include "pt_harness.h"

/* Formats for the counting tests; no folding, so single-page maps of
 * consecutive pages never need a break-before-make of their own. */
static const size_t lazy_cfgs[] = {0, 2, 4, 8};
#define NLAZY (sizeof lazy_cfgs / sizeof lazy_cfgs[0])

static struct tenv *env_nofold(size_t i)
{
    struct mmp_pt_config c = pt_cfgs[lazy_cfgs[i]].c;
    c.flags |= MMP_PT_NO_FOLD;
    c.flush_ceiling = 512; /* these count flush ranges; test_pt_flush the ceiling */
    return tenv_new(&c);
}

static uint64_t G_of(struct tenv *e)
{
    struct mmp_pt_info inf;
    mmp_pt_info(&e->pt, &inf);
    return inf.granule;
}

START_TEST(one_barrier_per_call)
{
    for (size_t i = 0; i < NLAZY; i++) {
        struct tenv *e = env_nofold(i);
        uint64_t G = G_of(e);
        struct mmp_pt_stats a, b;
        mmp_pt_stats(&e->pt, &a);
        ck_assert_int_eq(mmp_pt_map(&e->pt, 1ull << 30, 0, 512 * G, RW, MMP_MAP_NO_BLOCK), 0);
        mmp_pt_stats(&e->pt, &b);
        ck_assert_uint_eq(b.barriers - a.barriers, 1);
        ck_assert_uint_ge(b.entries_written - a.entries_written, 512);
        ck_assert_uint_eq(b.flushes - a.flushes, 0); /* invalid -> valid needs none */
        e->nflush = 0;
        ck_assert_int_eq(mmp_pt_protect(&e->pt, 1ull << 30, 512 * G, RO), 0);
        mmp_pt_stats(&e->pt, &a);
        ck_assert_uint_eq(a.barriers - b.barriers, 1);
        ck_assert_int_eq(e->nflush, 1); /* one coalesced flush for the call */
        ck_assert_uint_eq(e->log[0].va, 1ull << 30);
        ck_assert_uint_eq(e->log[0].size, 512 * G);
        ck_assert_uint_eq(e->log[0].flags & ~MMP_FLUSH_STRIDE_MASK, MMP_FLUSH_LEAF);
        ck_assert_uint_eq(1ull << MMP_FLUSH_STRIDE(e->log[0].flags), G);
        tenv_free(e);
    }
}
END_TEST

START_TEST(one_barrier_per_lazy_section)
{
    for (size_t i = 0; i < NLAZY; i++) {
        struct tenv *e = env_nofold(i);
        uint64_t G = G_of(e), va = 1ull << 30;
        /* the tables exist already: the section changes only leaves */
        ck_assert_int_eq(mmp_pt_map(&e->pt, va, 0, 512 * G, RW, MMP_MAP_NO_BLOCK), 0);
        ck_assert_int_eq(mmp_pt_unmap(&e->pt, va + G, 511 * G), 0);
        struct mmp_pt_stats a, b;
        mmp_pt_stats(&e->pt, &a);
        e->nflush = 0;
        ck_assert_int_eq(mmp_lazy_enter(&e->pt), 0);
        for (int k = 1; k < 512; k++)
            ck_assert_int_eq(mmp_pt_map(&e->pt, va + k * G, k * G, G, RW, 0), 0);
        for (int k = 1; k < 512; k++)
            ck_assert_int_eq(mmp_pt_unmap(&e->pt, va + k * G, G), 0);
        mmp_pt_stats(&e->pt, &b);
        ck_assert_uint_eq(b.barriers - a.barriers, 0);
        ck_assert_int_eq(e->nflush, 0);
        ck_assert_uint_eq(b.barriers_deferred - a.barriers_deferred, 2 * 511);
        ck_assert_int_eq(mmp_lazy_leave(&e->pt), 0);
        mmp_pt_stats(&e->pt, &b);
        ck_assert_uint_eq(b.barriers - a.barriers, 1);
        ck_assert_int_eq(e->nflush, 1); /* 511 unmap ranges coalesced into one */
        ck_assert_uint_eq(e->log[0].va, va + G);
        ck_assert_uint_eq(e->log[0].size, 511 * G);
        ck_assert_uint_eq(b.ranges_coalesced - a.ranges_coalesced, 510);
        tenv_free(e);
    }
}
END_TEST

START_TEST(nesting_and_pause)
{
    struct tenv *e = env_nofold(1);
    uint64_t G = G_of(e), va = 1ull << 30;
    struct mmp_pt_stats a, b;
    ck_assert_int_eq(mmp_lazy_leave(&e->pt), -MMP_EINVAL); /* leave without enter */
    ck_assert_int_eq(mmp_lazy_resume(&e->pt), -MMP_EINVAL);
    ck_assert_int_eq(mmp_lazy_flush(&e->pt), -MMP_EINVAL);
    ck_assert_int_eq(mmp_lazy_pause(&e->pt), -MMP_EINVAL);
    mmp_pt_stats(&e->pt, &a);
    for (int d = 0; d < 3; d++) {
        ck_assert_int_eq(mmp_lazy_enter(&e->pt), 0);
        ck_assert_int_eq(mmp_pt_map(&e->pt, va + d * G, 0, G, RW, 0), 0);
    }
    ck_assert_uint_eq(mmp_lazy_depth(&e->pt), 3);
    for (int d = 0; d < 2; d++) {
        ck_assert_int_eq(mmp_lazy_leave(&e->pt), 0);
        mmp_pt_stats(&e->pt, &b);
        ck_assert_uint_eq(b.barriers, a.barriers); /* inner leaves emit nothing */
    }
    ck_assert_int_eq(mmp_lazy_leave(&e->pt), 0);
    mmp_pt_stats(&e->pt, &b);
    ck_assert_uint_eq(b.barriers - a.barriers, 1);
    ck_assert_int_eq(mmp_lazy_leave(&e->pt), -MMP_EINVAL);

    /* pause emits what is pending; paused calls run eagerly */
    a = b;
    ck_assert_int_eq(mmp_lazy_enter(&e->pt), 0);
    ck_assert_int_eq(mmp_pt_unmap(&e->pt, va, G), 0);
    e->nflush = 0;
    ck_assert_int_eq(mmp_lazy_pause(&e->pt), 0);
    mmp_pt_stats(&e->pt, &b);
    ck_assert_uint_eq(b.barriers - a.barriers, 1);
    ck_assert_int_eq(e->nflush, 1);
    ck_assert_int_eq(mmp_pt_unmap(&e->pt, va + G, G), 0);
    mmp_pt_stats(&e->pt, &b);
    ck_assert_uint_eq(b.barriers - a.barriers, 2);
    ck_assert_int_eq(e->nflush, 2);
    ck_assert_int_eq(mmp_lazy_leave(&e->pt), -MMP_EBUSY);
    ck_assert_int_eq(mmp_lazy_resume(&e->pt), 0);
    ck_assert_int_eq(mmp_pt_unmap(&e->pt, va + 2 * G, G), 0);
    ck_assert_int_eq(e->nflush, 2);
    /* an early flush inside the section */
    ck_assert_int_eq(mmp_lazy_flush(&e->pt), 0);
    ck_assert_int_eq(e->nflush, 3);
    ck_assert_uint_eq(mmp_lazy_depth(&e->pt), 1);
    ck_assert_int_eq(mmp_lazy_leave(&e->pt), 0);
    ck_assert_int_eq(e->nflush, 3); /* nothing left to do */
    ck_assert_int_eq(mmp_lazy_enter(NULL), -MMP_EINVAL);
    tenv_free(e);
}
END_TEST

/* A block split inside lazy mode still breaks before it makes. */
START_TEST(bbm_not_deferred)
{
    for (size_t i = 1; i < NLAZY; i++) {
        struct tenv *e = tenv_new(&pt_cfgs[lazy_cfgs[i]].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        uint64_t blk = first_block(&inf);
        uint64_t va = blk * 2;
        ck_assert_int_eq(mmp_pt_map(&e->pt, va, blk * 8, blk, RW, 0), 0);
        ck_assert_int_eq(mmp_lazy_enter(&e->pt), 0);
        e->nflush = 0;
        e->inspect = 1;
        ck_assert_int_eq(mmp_pt_protect(&e->pt, va + blk / 2, inf.granule, RO), 0);
        e->inspect = 0;
        /* the split's flush happened inside the call, with the block invalid */
        ck_assert_int_ge(e->nflush, 1);
        ck_assert(e->log[0].all_invalid);
        ck_assert_uint_le(e->log[0].va, va);
        ck_assert_uint_ge(e->log[0].va + e->log[0].size, va + blk);
        /* The change was made in the private split table, so the split's
         * flush covered it; the leave emits the barrier for the link only. */
        int before = e->nflush;
        struct mmp_pt_stats a, b;
        mmp_pt_stats(&e->pt, &a);
        ck_assert_int_eq(mmp_lazy_leave(&e->pt), 0);
        mmp_pt_stats(&e->pt, &b);
        ck_assert_int_eq(e->nflush, before);
        ck_assert_uint_eq(b.barriers - a.barriers, 1);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, va + blk / 2, &l), 0);
        ck_assert_uint_eq(l.attrs, RO);
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, va, &l), 0);
        ck_assert_uint_eq(l.attrs, RW);
        tenv_free(e);
    }
}
END_TEST

/* Tables unlinked inside a section are freed only after a covering flush. */
START_TEST(deferred_free_after_flush)
{
    for (size_t i = 0; i < NLAZY; i++) {
        struct tenv *e = env_nofold(i);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        uint64_t G = inf.granule, span = G / 8 * G; /* one last-level table */
        uint64_t va = span * 8;
        for (int k = 0; k < 4; k++)
            ck_assert_int_eq(mmp_pt_map(&e->pt, va + k * span + G, 0, 3 * G, RW, 0), 0);
        long live = e->live;
        e->nflush = 0;
        e->nfree = 0;
        ck_assert_int_eq(mmp_lazy_enter(&e->pt), 0);
        for (int k = 0; k < 4; k++)
            ck_assert_int_eq(mmp_pt_unmap(&e->pt, va + k * span + G, 3 * G), 0);
        ck_assert_int_eq(e->nfree, 0);
        ck_assert_int_eq(e->live, live);
        ck_assert_int_eq(mmp_lazy_leave(&e->pt), 0);
        ck_assert_int_ge(e->nfree, 4);
        ck_assert_int_eq(e->live, live - e->nfree);
        for (int f = 0; f < e->nfree; f++)
            ck_assert_int_ge(e->free_flushes[f], 1);
        /* the flushes before the frees cover every unmapped table's span */
        for (int k = 0; k < 4; k++) {
            int covered = 0;
            for (int f = 0; f < e->free_flushes[0]; f++)
                covered |= (e->log[f].flags & MMP_FLUSH_ALL) ||
                           (e->log[f].va <= va + k * span &&
                            e->log[f].va + e->log[f].size >= va + (k + 1) * span &&
                            !(e->log[f].flags & MMP_FLUSH_LEAF));
            ck_assert_msg(covered, "%s: table %d not covered", pt_cfgs[lazy_cfgs[i]].name, k);
        }
        tenv_free(e);
    }
}
END_TEST

struct desc_list {
    int n;
    uint64_t va[8192], desc[8192];
};

static int list_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct desc_list *d = (struct desc_list *)arg;
    if (d->n < 8192) {
        d->va[d->n] = l->va;
        d->desc[d->n] = l->desc;
    }
    d->n++;
    return 0;
}

/* The same random sequence, eager and in lazy sections (with pauses and
 * early flushes mixed in), leaves identical tables. */
START_TEST(lazy_equals_eager)
{
    static struct desc_list da, db;
    for (size_t c = 0; c < NCFG; c++) {
        struct tenv *ea = tenv_new(&pt_cfgs[c].c), *eb = tenv_new(&pt_cfgs[c].c);
        uint64_t G = G_of(ea), seed = 0x51ed2701ull + c, W = 2048 * G, base = 1ull << 30;
        int steps = mmp_test_slow() ? 200 : 1000;
        for (int s = 0; s < steps; s++) {
            if (s % 17 == 0)
                mmp_lazy_enter(&eb->pt);
            uint64_t pages = 1 + rnd64(&seed) % 64, first = rnd64(&seed) % (W / G - pages);
            if (rnd64(&seed) % 4 == 0)
                pages = 16 * (1 + rnd64(&seed) % 8), first &= ~15ull;
            if (first + pages > W / G)
                first = W / G - pages;
            uint64_t va = base + first * G, pa = (rnd64(&seed) % 2) ? va : first * G * 3;
            int op = (int)(rnd64(&seed) % 4), ra, rb;
            if (op < 2) {
                uint32_t fl = op ? MMP_MAP_REPLACE : 0;
                ra = mmp_pt_map(&ea->pt, va, pa, pages * G, RW, fl);
                rb = mmp_pt_map(&eb->pt, va, pa, pages * G, RW, fl);
            } else if (op == 2) {
                ra = mmp_pt_unmap(&ea->pt, va, pages * G);
                rb = mmp_pt_unmap(&eb->pt, va, pages * G);
            } else {
                ra = mmp_pt_protect(&ea->pt, va, pages * G, RO);
                rb = mmp_pt_protect(&eb->pt, va, pages * G, RO);
            }
            ck_assert_int_eq(ra, rb);
            if (s % 23 == 5 && mmp_lazy_depth(&eb->pt)) {
                mmp_lazy_pause(&eb->pt);
                mmp_pt_unmap(&ea->pt, va, G);
                mmp_pt_unmap(&eb->pt, va, G);
                mmp_lazy_resume(&eb->pt);
            }
            if (s % 29 == 7 && mmp_lazy_depth(&eb->pt))
                mmp_lazy_flush(&eb->pt);
            if (s % 17 == 16)
                mmp_lazy_leave(&eb->pt);
        }
        while (mmp_lazy_depth(&eb->pt))
            mmp_lazy_leave(&eb->pt);
        da.n = db.n = 0;
        ck_assert_int_eq(mmp_pt_walk(&ea->pt, base, W, list_leaf, &da), 0);
        ck_assert_int_eq(mmp_pt_walk(&eb->pt, base, W, list_leaf, &db), 0);
        ck_assert_int_eq(da.n, db.n);
        for (int k = 0; k < da.n && k < 8192; k++)
            ck_assert_msg(da.va[k] == db.va[k] && da.desc[k] == db.desc[k],
                          "%s: leaf %d differs", pt_cfgs[c].name, k);
        struct mmp_pt_stats sa, sb;
        mmp_pt_stats(&ea->pt, &sa);
        mmp_pt_stats(&eb->pt, &sb);
        ck_assert_uint_eq(sa.table_pages, sb.table_pages);
        ck_assert_int_eq(ea->live, eb->live);
        ck_assert_uint_lt(sb.barriers, sa.barriers);
        tenv_free(ea);
        tenv_free(eb);
    }
}
END_TEST

/* More disjoint ranges than the table keeps: one covering range, or one
 * full flush with MMP_PT_FLUSH_ALL_OVER. */
START_TEST(flush_range_overflow)
{
    for (int all = 0; all < 2; all++) {
        struct mmp_pt_config c = pt_cfgs[2].c;
        c.flush_ranges = 2;
        if (all)
            c.flags |= MMP_PT_FLUSH_ALL_OVER;
        struct tenv *e = tenv_new(&c);
        uint64_t G = 4096, va = 1ull << 30;
        ck_assert_int_eq(mmp_pt_map(&e->pt, va, 0, 64 * G, RW, MMP_MAP_NO_CONT), 0);
        e->nflush = 0;
        mmp_lazy_enter(&e->pt);
        for (int k = 0; k < 3; k++)
            ck_assert_int_eq(mmp_pt_protect(&e->pt, va + k * 20 * G, G, RO), 0);
        mmp_lazy_leave(&e->pt);
        ck_assert_int_eq(e->nflush, 1);
        if (all) {
            ck_assert_uint_eq(e->log[0].flags & MMP_FLUSH_ALL, MMP_FLUSH_ALL);
        } else {
            ck_assert_uint_eq(e->log[0].va, va);
            ck_assert_uint_eq(e->log[0].size, 41 * G);
        }
        tenv_free(e);
    }
}
END_TEST

Suite *mmp_suite_lazy(void)
{
    Suite *s = suite_create("lazy");
    MMP_ADD(s, one_barrier_per_call);
    MMP_ADD(s, one_barrier_per_lazy_section);
    MMP_ADD(s, nesting_and_pause);
    MMP_ADD(s, bbm_not_deferred);
    MMP_ADD(s, deferred_free_after_flush);
    MMP_ADD(s, lazy_equals_eager);
    MMP_ADD(s, flush_range_overflow);
    return s;
}
