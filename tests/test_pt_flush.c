/* SPDX-License-Identifier: MIT */
/*
 * Flush ranges and their order: a covering range never wraps to size 0 nor
 * crosses the x86 hole, a range merges into a pending one before it counts
 * against flush_ranges, and a lazy map over a range whose flush is pending
 * emits that flush first.
 */
#include "pt_harness.h"

static inline int covers(const struct flush_rec *r, uint64_t va)
{
    return (r->flags & MMP_FLUSH_ALL) || (r->va <= va && va - r->va < r->size);
}

/* a lazy section touching va 0 and the last page of x86-64
 * (both canonical halves) must never report a range of size 0 (a wrapped
 * [0, 2^64-1]) nor one crossing the non-canonical hole, and the unlinked
 * tables are freed only after a flush. */
START_TEST(flush_whole_space_never_size0)
{
    static const uint64_t vas[2][5] = {
        {0x0, 0x10000000000ull, 0x30000000000ull, 0xfffffffffffff000ull, 0xffff800000000000ull},
        {0x0, 0x10000000000ull, 0x30000000000ull, 0xffff800000000000ull, 0xfffffffffffff000ull},
    };
    for (int order = 0; order < 2; order++) {
        struct tenv *e = tenv_new(&pt_cfgs[0].c);
        for (int i = 0; i < 5; i++)
            ck_assert_int_eq(mmp_pt_map(&e->pt, vas[order][i], 0x100000 + i * 0x1000, 4096, RW, 0), 0);
        e->nflush = 0;
        e->nfree = 0;
        ck_assert_int_eq(mmp_lazy_enter(&e->pt), 0);
        for (int i = 0; i < 5; i++)
            ck_assert_int_eq(mmp_pt_unmap(&e->pt, vas[order][i], 4096), 0);
        ck_assert_int_eq(mmp_lazy_leave(&e->pt), 0);
        ck_assert_int_ge(e->nflush, 1);
        for (int i = 0; i < e->nflush; i++) {
            const struct flush_rec *r = &e->log[i];
            if (r->flags & MMP_FLUSH_ALL)
                continue;
            ck_assert_msg(r->size != 0, "order %d: flush %d has size 0", order, i);
            ck_assert_msg(!((r->va ^ (r->va + r->size - 1)) >> 63),
                          "order %d: flush [%#llx, +%#llx) crosses the hole", order,
                          (unsigned long long)r->va, (unsigned long long)r->size);
        }
        for (int i = 0; i < 5; i++) {
            int ok = 0;
            for (int k = 0; k < e->nflush; k++)
                ok |= covers(&e->log[k], vas[order][i]);
            ck_assert_msg(ok, "order %d: va %#llx never flushed", order,
                          (unsigned long long)vas[order][i]);
        }
        ck_assert_int_ge(e->nfree, 1);
        for (int i = 0; i < e->nfree && i < 256; i++)
            ck_assert_int_ge(e->free_flushes[i], 1);
        tenv_free(e);
    }
}
END_TEST

/* a range inside a pending one merges first and does not push
 * the disjoint ranges into one covering range. */
START_TEST(flush_merge_before_overflow)
{
    struct tenv *e = tenv_new(&pt_cfgs[2].c); /* arm64 4K, flush_ranges 4 */
    uint64_t G = 4096;
    for (uint64_t i = 1; i <= 4; i++)
        ck_assert_int_eq(mmp_pt_map(&e->pt, i << 30, i << 30, G, RW, 0), 0);
    e->nflush = 0;
    ck_assert_int_eq(mmp_lazy_enter(&e->pt), 0);
    for (uint64_t i = 1; i <= 4; i++)
        ck_assert_int_eq(mmp_pt_protect(&e->pt, i << 30, G, RO), 0);
    ck_assert_int_eq(mmp_pt_protect(&e->pt, 1ull << 30, G, RW), 0); /* the same page again */
    ck_assert_int_eq(mmp_lazy_leave(&e->pt), 0);
    ck_assert_int_eq(e->nflush, 4);
    for (int i = 0; i < 4; i++) {
        ck_assert_uint_eq(e->log[i].size, G);
        ck_assert_uint_eq(e->log[i].va & (G - 1), 0);
    }
    tenv_free(e);
}
END_TEST

/* in a lazy section, unmap a block and map a page into it: the
 * block's flush must come before the page is written (the flush sees the
 * range invalid), not at the leave. */
START_TEST(lazy_unmap_then_map_flushes_first)
{
    static const size_t cfgs[] = {0, 2, 4, 8};
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        struct tenv *e = tenv_new(&pt_cfgs[cfgs[c]].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        uint64_t B = first_block(&inf), G = inf.granule, va = 2 * B;
        ck_assert_int_eq(mmp_pt_map(&e->pt, va, 4 * B, B, RW, 0), 0);
        ck_assert_int_eq(mmp_lazy_enter(&e->pt), 0);
        ck_assert_int_eq(mmp_pt_unmap(&e->pt, va, B), 0);
        e->nflush = 0;
        e->inspect = 1;
        ck_assert_int_eq(mmp_pt_map(&e->pt, va, 8 * B, G, RW, 0), 0);
        int before = e->nflush;
        ck_assert_int_eq(mmp_lazy_leave(&e->pt), 0);
        e->inspect = 0;
        int seen = 0;
        for (int i = 0; i < before; i++)
            seen |= e->log[i].all_invalid && covers(&e->log[i], va);
        ck_assert_msg(seen, "%s: the old block was not flushed before the new page",
                      pt_cfgs[cfgs[c]].name);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, va, &l), 0);
        ck_assert_uint_eq(l.pa, 8 * B);
        ck_assert_uint_eq(l.size, G);
        tenv_free(e);
    }
}
END_TEST

Suite *mmp_suite_pt_flush(void)
{
    Suite *s = suite_create("pt_flush");
    MMP_ADD(s, flush_whole_space_never_size0);
    MMP_ADD(s, flush_merge_before_overflow);
    MMP_ADD(s, lazy_unmap_then_map_flushes_first);
    return s;
}
