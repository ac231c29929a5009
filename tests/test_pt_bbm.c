/* SPDX-License-Identifier: MIT */
/*
 * Break-before-make where the formats demand it: arm64 nG 1 -> 0, x86 page-size
 * changes with a new frame or attributes, and an x86 fold that leaves the old
 * table intact for stale walk caches until the flush.
 */
#include "pt_harness.h"

static inline int covers(const struct flush_rec *r, uint64_t va)
{
    return (r->flags & MMP_FLUSH_ALL) || (r->va <= va && va - r->va < r->size);
}

static inline uint64_t G_of(struct tenv *e)
{
    struct mmp_pt_info inf;
    mmp_pt_info(&e->pt, &inf);
    return inf.granule;
}

/* arm64 stage 1, non-global -> global (nG 1 -> 0) on a live
 * page breaks before it makes; global -> non-global stays in place. */
START_TEST(arm64_global_needs_bbm)
{
    static const size_t cfgs[] = {2, 4, 6};
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        struct tenv *e = tenv_new(&pt_cfgs[cfgs[c]].c);
        uint64_t G = G_of(e), va = 64 * G;
        ck_assert_int_eq(mmp_pt_map(&e->pt, va, 128 * G, G, RW, 0), 0);
        struct mmp_pt_stats a, b;
        mmp_pt_stats(&e->pt, &a);
        e->nflush = 0;
        e->inspect = 1;
        ck_assert_int_eq(mmp_pt_protect(&e->pt, va, G, RW | MMP_PROT_GLOBAL), 0);
        e->inspect = 0;
        mmp_pt_stats(&e->pt, &b);
        ck_assert_uint_ge(b.bbm, a.bbm + 1);
        int seen = 0;
        for (int i = 0; i < e->nflush; i++)
            seen |= e->log[i].all_invalid && covers(&e->log[i], va);
        ck_assert_msg(seen, "%s: no flush while the page was invalid", pt_cfgs[cfgs[c]].name);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, va, &l), 0);
        ck_assert_uint_eq(l.attrs & MMP_PROT_GLOBAL, MMP_PROT_GLOBAL);
        ck_assert_int_eq(mmp_pt_protect(&e->pt, va, G, RW), 0);
        mmp_pt_stats(&e->pt, &a);
        ck_assert_uint_eq(a.bbm, b.bbm);
        tenv_free(e);
    }
}
END_TEST

/* x86 table -> block under MMP_MAP_REPLACE (page size and frame
 * change) goes not-present, flush, write; a protect of part of a block
 * that changes nothing only splits (size-only change, no break). */
START_TEST(x86_size_change_breaks_first)
{
    for (size_t c = 0; c < 2; c++) {
        struct tenv *e = tenv_new(&pt_cfgs[c].c);
        uint64_t G = 4096, B = 2ull << 20, va = 4 * B;
        ck_assert_int_eq(mmp_pt_map(&e->pt, va, 16 * B, 8 * G, RW, 0), 0);
        struct mmp_pt_stats a, b;
        mmp_pt_stats(&e->pt, &a);
        e->nflush = 0;
        e->inspect = 1;
        e->probe_va = va; /* (a 2 MiB non-leaf flush is over the ceiling: a full flush) */
        e->probe_size = B;
        ck_assert_int_eq(mmp_pt_map(&e->pt, va, 32 * B, B, RW, MMP_MAP_REPLACE), 0);
        e->inspect = 0;
        mmp_pt_stats(&e->pt, &b);
        ck_assert_uint_ge(b.bbm, a.bbm + 1);
        int seen = 0;
        for (int i = 0; i < e->nflush; i++)
            seen |= e->log[i].all_invalid && covers(&e->log[i], va);
        ck_assert_msg(seen, "%s: table replaced by a block without a break", pt_cfgs[c].name);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, va + G, &l), 0);
        ck_assert_uint_eq(l.size, B);
        ck_assert_uint_eq(l.pa, 32 * B);
        /* Same attributes on part of the block: a split with identical
         * translations, which Intel allows in one store. */
        ck_assert_int_eq(mmp_pt_protect(&e->pt, va, G, RW), 0);
        mmp_pt_stats(&e->pt, &a);
        ck_assert_uint_eq(a.bbm, b.bbm);
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, va + G, &l), 0);
        ck_assert_uint_eq(l.pa, 32 * B + G);
        tenv_free(e);
    }
}
END_TEST

/* an x86 fold must not overwrite the old page table (which a
 * stale PDE cache may still walk) before its flush. The allocator tracks
 * the pages; the flush callback checks the old table still maps. */
struct fold_env {
    struct tenv *e;
    void *pages[64];
    uint64_t pa2; /* the old table's entry 2 maps this */
    int checked, bad;
};

static void *fold_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    struct fold_env *f = (struct fold_env *)ctx;
    void *p = t_alloc(f->e, bytes, pa);
    for (int i = 0; p && i < 64; i++)
        if (!f->pages[i]) {
            f->pages[i] = p;
            break;
        }
    return p;
}

static void fold_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    struct fold_env *f = (struct fold_env *)ctx;
    for (int i = 0; i < 64; i++)
        if (f->pages[i] == va)
            f->pages[i] = NULL;
    t_free(f->e, va, pa, bytes);
}

static void fold_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    struct fold_env *f = (struct fold_env *)ctx;
    for (int i = 0; i < 64; i++) {
        const uint64_t *q = (const uint64_t *)f->pages[i];
        if (!q || (q[2] & 1) == 0 || (q[2] & 0x000ffffffffff000ull) != f->pa2)
            continue;
        f->checked++;
        if (!(q[0] & 1) || !(q[1] & 1))
            f->bad++;
    }
    t_flush(f->e, va, size, flags);
}

START_TEST(x86_fold_table_intact_until_flush)
{
    struct fold_env f = {0};
    f.e = calloc(1, sizeof *f.e);
    struct mmp_pt_ops ops = {.alloc_table = fold_alloc,
                             .free_table = fold_free,
                             .phys_to_virt = NULL,
                             .tlb_flush = fold_flush,
                             .ctx = &f};
    ck_assert_int_eq(mmp_pt_init(&f.e->pt, &pt_cfgs[0].c, &ops), 0);
    uint64_t G = 4096, B = 2ull << 20, va = B, pa = 1ull << 30;
    f.pa2 = pa + 2 * G;
    ck_assert_int_eq(mmp_pt_map(&f.e->pt, va, pa, B - G, RW, 0), 0);
    ck_assert_int_eq(mmp_lazy_enter(&f.e->pt), 0);
    ck_assert_int_eq(mmp_pt_map(&f.e->pt, va + B - G, pa + B - G, G, RW, 0), 0);
    ck_assert_int_eq(mmp_lazy_leave(&f.e->pt), 0);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(&f.e->pt, va, &l), 0);
    ck_assert_uint_eq(l.size, B); /* folded */
    ck_assert_int_ge(f.checked, 1);
    ck_assert_int_eq(f.bad, 0);
    tenv_free(f.e);

    /* More folds in one section than the out-of-band slots: every old
     * table is still freed only after a flush, and none leaks. */
    struct tenv *e = tenv_new(&pt_cfgs[0].c);
    for (uint64_t r = 0; r < 7; r++)
        ck_assert_int_eq(mmp_pt_map(&e->pt, (r + 1) * B, pa + r * B, B - G, RW, 0), 0);
    e->nflush = 0;
    e->nfree = 0;
    ck_assert_int_eq(mmp_lazy_enter(&e->pt), 0);
    for (uint64_t r = 0; r < 7; r++)
        ck_assert_int_eq(mmp_pt_map(&e->pt, (r + 2) * B - G, pa + (r + 1) * B - G, G, RW, 0), 0);
    ck_assert_int_eq(mmp_lazy_leave(&e->pt), 0);
    ck_assert_int_eq(e->nfree, 7);
    for (int i = 0; i < e->nfree; i++)
        ck_assert_int_ge(e->free_flushes[i], 1);
    for (uint64_t r = 0; r < 7; r++) {
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, (r + 1) * B, &l), 0);
        ck_assert_uint_eq(l.size, B);
    }
    tenv_free(e);
}
END_TEST

Suite *mmp_suite_pt_bbm(void)
{
    Suite *s = suite_create("pt_bbm");
    MMP_ADD(s, arm64_global_needs_bbm);
    MMP_ADD(s, x86_size_change_breaks_first);
    MMP_ADD(s, x86_fold_table_intact_until_flush);
    return s;
}
