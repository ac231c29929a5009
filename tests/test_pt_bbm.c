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

/*
 * arm64 FEAT_BBM level 2 (MMP_PT_BBML2, Arm ARM D8.16 "Support levels for
 * changing block size"): a change of size alone goes in place. Each case
 * changes one page inside a block or a contiguous run and counts the
 * breaks; with the flag there are none (a memory-type change breaks its
 * one page), and at every flush no other page of the block was unmapped.
 * Without it the block or run being split is broken (once). x86 formats
 * refuse the flag.
 */
struct watch {
    struct tenv *e;
    uint64_t lo, size, page, G; /* the block [lo, lo + size), the changed page */
    int outages, flushes;
};
static struct watch wt;

static void watch_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    struct mmp_pt_leaf l;
    wt.flushes++;
    for (uint64_t o = 0; o < wt.size; o += wt.size / 64 > wt.G ? wt.size / 64 : wt.G) {
        uint64_t x = wt.lo + o == wt.page ? wt.lo + o + wt.G : wt.lo + o;
        if (x < wt.lo + wt.size && mmp_pt_lookup(&wt.e->pt, x, &l) != 0)
            wt.outages++;
    }
    t_flush(ctx, va, size, flags);
}

/* bbm count of one change of the page at lo + off in [lo, lo + size)
 * mapped with `how` first (0: one map; 1: with contiguous runs kept). */
static uint64_t bbml2_case(uint32_t flags, uint64_t lo, uint64_t size, uint64_t off, int op,
                           int *outages)
{
    struct mmp_pt_config c = {MMP_PT_ARM64_S2, 4096, 40, 0, flags, 0, 0, 0};
    struct tenv *e = calloc(1, sizeof *e);
    struct mmp_pt_ops o = t_ops(e);
    o.tlb_flush = watch_flush;
    ck_assert_int_eq(mmp_pt_init(&e->pt, &c, &o), 0);
    ck_assert_int_eq(mmp_pt_map(&e->pt, lo, lo + (1ull << 32), size, RW, 0), 0);
    wt = (struct watch){e, lo, size, lo + off, 4096, 0, 0};
    struct mmp_pt_stats a, b;
    mmp_pt_stats(&e->pt, &a);
    int rc = op == 0   ? mmp_pt_protect(&e->pt, lo + off, 4096, RO)
             : op == 1 ? mmp_pt_unmap(&e->pt, lo + off, 4096)
                       : mmp_pt_protect(&e->pt, lo + off, 4096, RW | MMP_MEM_DEVICE);
    ck_assert_int_eq(rc, 0);
    mmp_pt_stats(&e->pt, &b);
    struct mmp_pt_leaf l;
    /* the rest still maps what it did, the page what it should */
    ck_assert_int_eq(mmp_pt_lookup(&e->pt, lo + off + 4096, &l), 0);
    ck_assert_uint_eq(l.pa + (lo + off + 4096 - l.va), lo + off + 4096 + (1ull << 32));
    ck_assert_uint_eq(l.attrs, RW);
    rc = mmp_pt_lookup(&e->pt, lo + off, &l);
    ck_assert_int_eq(rc, op == 1 ? -MMP_ENOENT : 0);
    if (op != 1)
        ck_assert_uint_eq(l.attrs, op == 0 ? RO : RW | MMP_MEM_DEVICE);
    *outages = wt.outages;
    tenv_free(e);
    return b.bbm - a.bbm;
}

START_TEST(arm64_bbml2_splits_in_place)
{
    static const struct {
        const char *what;
        uint64_t lo, size, off;
    } cases[] = {
        {"1 GiB block", 1ull << 30, 1ull << 30, 300ull << 20},
        {"2 MiB block in a contiguous run", 64ull << 20, 32ull << 20, (6ull << 20) + 8192},
        {"page in a contiguous run", 1ull << 20, 64ull << 10, 20480},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (int op = 0; op < 3; op++) {
            int out_without, out_with;
            uint64_t without = bbml2_case(0, cases[k].lo, cases[k].size, cases[k].off, op,
                                          &out_without);
            uint64_t with = bbml2_case(MMP_PT_BBML2, cases[k].lo, cases[k].size, cases[k].off,
                                       op, &out_with);
            printf("bbml2: %s, %s: %llu breaks without the flag (%d unmapped at flushes), "
                   "%llu with it (%d)\n",
                   cases[k].what, op == 0 ? "protect" : op == 1 ? "unmap" : "memory type",
                   (unsigned long long)without, out_without, (unsigned long long)with, out_with);
            ck_assert_uint_eq(without, 1);
            ck_assert_uint_eq(with, op == 2 ? 1 : 0);
            ck_assert_int_eq(out_with, 0);
            ck_assert_int_gt(out_without, 0);
        }
    }
    struct mmp_pt pt;
    for (int f = MMP_PT_X86_64; f <= MMP_PT_X86_NPT; f++) {
        if (f == MMP_PT_ARM64_S1 || f == MMP_PT_ARM64_S2)
            continue;
        struct mmp_pt_config c = {(enum mmp_pt_format)f, 4096, 48, 0, MMP_PT_BBML2, 0, 0, 0};
        ck_assert_int_eq(mmp_pt_init(&pt, &c, NULL), -MMP_EINVAL);
    }
}
END_TEST

/*
 * AMD family 10h erratum 383 (MMP_PT_X86_SIZE_BBM): with the flag every
 * page-size change of x86-64 and NPT breaks first - a split (the block is
 * seen invalid at a flush) and a fold; without it both are one store.
 * EPT (Intel) and arm64 refuse the flag.
 */
START_TEST(x86_size_bbm_for_amd_erratum_383)
{
    static const enum mmp_pt_format fmts[] = {MMP_PT_X86_64, MMP_PT_X86_NPT};
    for (size_t f = 0; f < 2; f++) {
        for (int flag = 0; flag < 2; flag++) {
            struct mmp_pt_config c = {fmts[f], 4096, 48, 0, flag ? MMP_PT_X86_SIZE_BBM : 0, 0, 0, 0};
            struct tenv *e = tenv_new(&c);
            uint64_t G = 4096, B = 2ull << 20, va = 1ull << 30;
            ck_assert_int_eq(mmp_pt_map(&e->pt, va, va, 1ull << 30, RW, 0), 0);
            struct mmp_pt_stats a, b;
            mmp_pt_stats(&e->pt, &a);
            e->nflush = 0;
            e->inspect = 1;
            e->probe_va = va; /* what an NPT flush (always all) is checked over */
            e->probe_size = G;
            ck_assert_int_eq(mmp_pt_protect(&e->pt, va + 7 * B + G, G, RO), 0);
            e->inspect = 0;
            mmp_pt_stats(&e->pt, &b);
            int seen = 0;
            for (int i = 0; i < e->nflush; i++)
                seen |= e->log[i].all_invalid && covers(&e->log[i], va);
            ck_assert_uint_eq(b.bbm - a.bbm, flag ? 1 : 0);
            ck_assert_uint_eq(b.split_flushes - a.split_flushes, flag ? 0 : 2); /* 1G, then 2M */
            ck_assert_int_eq(seen, flag);
            /* fold back: the 2 MiB table becomes a block again */
            ck_assert_int_eq(mmp_pt_protect(&e->pt, va + 7 * B + G, G, RW), 0);
            mmp_pt_stats(&e->pt, &a);
            ck_assert_int_eq(mmp_pt_map(&e->pt, va + 7 * B + G, va + 7 * B + G, G, RW,
                                        MMP_MAP_REPLACE), 0);
            mmp_pt_stats(&e->pt, &b);
            struct mmp_pt_leaf l;
            ck_assert_int_eq(mmp_pt_lookup(&e->pt, va + 7 * B + G, &l), 0);
            ck_assert_uint_ge(l.size, B);
            ck_assert_uint_eq(b.bbm - a.bbm, flag ? 2 : 0); /* 4K -> 2M, 2M -> 1G */
            tenv_free(e);
        }
    }
    struct mmp_pt pt;
    static const struct mmp_pt_config bad[] = {
        {MMP_PT_X86_EPT, 4096, 48, 0, MMP_PT_X86_SIZE_BBM, 0, 0, 0},
        {MMP_PT_ARM64_S2, 4096, 40, 0, MMP_PT_X86_SIZE_BBM, 0, 0, 0},
    };
    for (size_t k = 0; k < 2; k++)
        ck_assert_int_eq(mmp_pt_init(&pt, &bad[k], NULL), -MMP_EINVAL);
}
END_TEST

Suite *mmp_suite_pt_bbm(void)
{
    Suite *s = suite_create("pt_bbm");
    MMP_ADD(s, arm64_global_needs_bbm);
    MMP_ADD(s, x86_size_change_breaks_first);
    MMP_ADD(s, x86_fold_table_intact_until_flush);
    MMP_ADD(s, arm64_bbml2_splits_in_place);
    MMP_ADD(s, x86_size_bbm_for_amd_erratum_383);
    return s;
}
