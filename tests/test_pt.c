/* SPDX-License-Identifier: MIT */
/*
 * The page-table engine over every format: round trips per leaf size, leaf
 * choice, partial unmap/protect inside blocks and contiguous runs,
 * break-before-make order, folding, fault injection, bad input.
 */
#include <atomic_ops.h>
#include <pthread.h>

#include "pt_harness.h"

static uint64_t base_for(const struct mmp_pt_info *inf, uint64_t align)
{
    /* A few aligned units up, inside every configuration's VA range. */
    uint64_t b = align * 2;
    return b < (1ull << (inf->va_bits - 1)) ? b : 0;
}

START_TEST(round_trip_each_leaf_size)
{
    for (size_t c = 0; c < NCFG; c++) {
        struct tenv *e = tenv_new(&pt_cfgs[c].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        for (unsigned b = 0; b < 64; b++) {
            uint64_t sz = 1ull << b;
            if (!(inf.block_sizes & sz) && !(inf.cont_sizes & sz))
                continue;
            if (sz > (1ull << 34) || sz * 4 > (1ull << inf.va_bits))
                continue; /* the 16G run of 64K blocks: too much memory for a test */
            uint64_t va = base_for(&inf, sz), pa = sz * 3;
            ck_assert_int_eq(mmp_pt_map(&e->pt, va, pa, sz, RW, 0), 0);
            struct mmp_pt_leaf l;
            uint64_t probe[] = {va, va + sz / 2, va + sz - inf.granule};
            for (int i = 0; i < 3; i++) {
                ck_assert_int_eq(mmp_pt_lookup(&e->pt, probe[i] + 8, &l), 0);
                uint64_t want = inf.block_sizes & sz ? sz : 0;
                if (want)
                    ck_assert_msg(l.size == sz && l.kind != MMP_LEAF_CONT, "%s size %#llx: got %#llx kind %d",
                                  pt_cfgs[c].name, (unsigned long long)sz,
                                  (unsigned long long)l.size, l.kind);
                else
                    ck_assert_msg(l.kind == MMP_LEAF_CONT, "%s run %#llx not cont",
                                  pt_cfgs[c].name, (unsigned long long)sz);
                ck_assert_uint_eq(l.pa + (probe[i] - l.va), pa + (probe[i] - va));
                ck_assert_uint_eq(l.attrs, RW);
            }
            ck_assert_int_eq(mmp_pt_lookup(&e->pt, va - inf.granule, &l), -MMP_ENOENT);
            ck_assert_int_eq(mmp_pt_lookup(&e->pt, va + sz, &l), -MMP_ENOENT);
            ck_assert_int_eq(mmp_pt_unmap(&e->pt, va, sz), 0);
            ck_assert_int_eq(mmp_pt_lookup(&e->pt, va, &l), -MMP_ENOENT);
            struct mmp_pt_usage u;
            mmp_pt_usage(&e->pt, &u);
            ck_assert_uint_eq(u.table_pages, inf.root_bytes / inf.granule);
            ck_assert_int_eq(e->live, 1);
        }
        tenv_free(e);
    }
}
END_TEST

/* Independent greedy model of the leaf choice: counts of pages, blocks, runs. */
static void expect_counts(const struct mmp_pt_info *inf, uint64_t va, uint64_t pa, uint64_t size,
                          int blocks, int cont, struct mmp_pt_usage *u)
{
    memset(u, 0, sizeof *u);
    while (size) {
        uint64_t s = inf->granule;
        for (unsigned b = 63; b > 0; b--) {
            uint64_t x = 1ull << b;
            if ((inf->block_sizes & x) && (blocks || x == inf->granule) && !(va % x) && !(pa % x) &&
                size >= x) {
                s = x;
                break;
            }
        }
        uint64_t rb = cont ? run_bytes_for(inf->cont_sizes, s) : 0;
        uint64_t n = 1;
        if (rb && !(va % rb) && !(pa % rb) && size >= rb) {
            n = rb / s;
            u->cont_runs++;
        }
        if (s == inf->granule)
            u->pages += n;
        else
            u->blocks += n;
        va += n * s;
        pa += n * s;
        size -= n * s;
    }
}

START_TEST(leaf_choice_counts)
{
    for (size_t c = 0; c < NCFG; c++) {
        for (int mode = 0; mode < 3; mode++) {
            struct mmp_pt_config cfg = pt_cfgs[c].c;
            if (mode == 1)
                cfg.flags |= MMP_PT_NO_BLOCKS;
            struct tenv *e = tenv_new(&cfg);
            struct mmp_pt_info inf;
            mmp_pt_info(&e->pt, &inf);
            /* Smallest block above the page; the region starts a few pages and a
             * run before a block boundary and ends a run and a page after one. */
            uint64_t blk = first_block(&inf);
            uint64_t run = run_bytes_for(inf.cont_sizes, inf.granule);
            uint64_t unit = run ? run : inf.granule * 16;
            uint64_t va = blk * 2 - unit * 2 - inf.granule * 3;
            uint64_t size = unit * 2 + inf.granule * 3 + blk * 2 + unit + inf.granule;
            uint64_t pa = va + blk * 8;
            uint32_t flags = mode == 2 ? MMP_MAP_NO_CONT : 0;
            ck_assert_int_eq(mmp_pt_map(&e->pt, va, pa, size, RW, flags), 0);
            struct mmp_pt_usage want, got;
            expect_counts(&inf, va, pa, size, mode != 1, mode != 2, &want);
            mmp_pt_usage(&e->pt, &got);
            ck_assert_msg(got.pages == want.pages && got.blocks == want.blocks &&
                              got.cont_runs == want.cont_runs,
                          "%s mode %d: pages %llu/%llu blocks %llu/%llu runs %llu/%llu",
                          pt_cfgs[c].name, mode, (unsigned long long)got.pages,
                          (unsigned long long)want.pages, (unsigned long long)got.blocks,
                          (unsigned long long)want.blocks, (unsigned long long)got.cont_runs,
                          (unsigned long long)want.cont_runs);
            ck_assert_uint_eq(got.mapped_bytes, size);
            /* A misaligned pa forbids blocks and runs alike. */
            ck_assert_int_eq(mmp_pt_unmap(&e->pt, va, size), 0);
            ck_assert_int_eq(mmp_pt_map(&e->pt, va, pa + inf.granule, size, RW, 0), 0);
            mmp_pt_usage(&e->pt, &got);
            ck_assert_uint_eq(got.blocks + got.cont_runs, 0);
            ck_assert_uint_eq(got.pages, size / inf.granule);
            tenv_free(e);
        }
    }
}
END_TEST

/*
 * Partial unmap and protect at every page offset (sampled for big blocks)
 * inside a block and inside a contiguous run: every other translation and
 * attribute stays, and the rules of runs hold.
 */
static void partial_in(size_t c, uint64_t unit, int protect)
{
    struct tenv *e = tenv_new(&pt_cfgs[c].c);
    struct mmp_pt_info inf;
    mmp_pt_info(&e->pt, &inf);
    uint64_t n = unit / inf.granule;
    struct mpage *m = calloc(n, sizeof *m);
    uint64_t va = unit * 2, pa = unit * 5;
    uint64_t run = run_bytes_for(inf.cont_sizes, inf.granule) / inf.granule;
    for (uint64_t off = 0; off < n; off++) {
        /* sample: every page when small, else the ends, run edges and a stride */
        if (n > (mmp_test_slow() ? 32u : 512u) &&
            !(off < 3 || off > n - 3 || (run && (off % run < 2 || off % run == run - 1) &&
                                         off % (run * 37) < run) || off % 499 == 0))
            continue;
        for (uint64_t len = 1; len <= 3 && off + len <= n; len += 2) {
            ck_assert_int_eq(mmp_pt_map(&e->pt, va, pa, unit, RW, 0), 0);
            model_set(m, 0, n, pa, inf.granule, RW, 1);
            int rc;
            if (protect) {
                rc = mmp_pt_protect(&e->pt, va + off * inf.granule, len * inf.granule, RO);
                model_set(m, off, len, pa + off * inf.granule, inf.granule, RO, 1);
            } else {
                rc = mmp_pt_unmap(&e->pt, va + off * inf.granule, len * inf.granule);
                model_set(m, off, len, 0, inf.granule, 0, 0);
            }
            ck_assert_int_eq(rc, 0);
            char ctx[96];
            snprintf(ctx, sizeof ctx, "%s unit %#llx off %llu len %llu %s", pt_cfgs[c].name,
                     (unsigned long long)unit, (unsigned long long)off, (unsigned long long)len,
                     protect ? "protect" : "unmap");
            check_model(e, m, va, n, ctx);
            ck_assert_int_eq(mmp_pt_unmap(&e->pt, va, unit), 0);
        }
    }
    free(m);
    tenv_free(e);
}

START_TEST(partial_unmap_protect_in_blocks_and_runs)
{
    for (size_t c = 0; c < NCFG; c++) {
        struct mmp_pt_info inf;
        struct tenv *e = tenv_new(&pt_cfgs[c].c);
        mmp_pt_info(&e->pt, &inf);
        tenv_free(e);
        uint64_t run = run_bytes_for(inf.cont_sizes, inf.granule);
        uint64_t blk = first_block(&inf);
        if (mmp_test_slow() && blk > (64u << 20))
            blk = 0; /* the 512M block of 64K: natively only */
        for (int p = 0; p < 2; p++) {
            if (run)
                partial_in(c, run, p);
            if (blk)
                partial_in(c, blk, p);
        }
    }
}
END_TEST

/* The BBM flush of a split or unfold sees the whole range invalid. x86
 * breaks too when the split changes attributes or frame (protect, replace:
 * Intel SDM Vol. 3A 4.10.2.3), not for an unmap split. */
START_TEST(bbm_order_seen_by_flush)
{
    for (size_t c = 0; c < NCFG; c++) {
        struct tenv *e = tenv_new(&pt_cfgs[c].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        int arm = !pt_cfg_x86(c);
        uint64_t blk = first_block(&inf);
        uint64_t run = run_bytes_for(inf.cont_sizes, inf.granule);
        uint64_t units[2] = {blk, run};
        for (int u = 0; u < 2; u++) {
            uint64_t sz = units[u];
            if (!sz)
                continue;
            for (int op = 0; op < 3; op++) {
                uint64_t va = sz * 2, pa = sz * 4, mid = va + sz / 2;
                ck_assert_int_eq(mmp_pt_map(&e->pt, va, pa, sz, RW, 0), 0);
                e->nflush = 0;
                e->inspect = 1;
                struct mmp_pt_stats st0, st1;
                mmp_pt_stats(&e->pt, &st0);
                if (op == 0)
                    ck_assert_int_eq(mmp_pt_protect(&e->pt, mid, inf.granule, RO), 0);
                else if (op == 1)
                    ck_assert_int_eq(mmp_pt_unmap(&e->pt, mid, inf.granule), 0);
                else
                    ck_assert_int_eq(mmp_pt_map(&e->pt, mid, 0, inf.granule, RW, MMP_MAP_REPLACE), 0);
                e->inspect = 0;
                mmp_pt_stats(&e->pt, &st1);
                int covered = 0, nbbm = 0;
                for (int i = 0; i < e->nflush; i++) {
                    if (e->log[i].all_invalid && e->log[i].va <= va &&
                        e->log[i].va + e->log[i].size >= va + sz)
                        covered = 1;
                    nbbm += e->log[i].all_invalid;
                }
                if (arm) {
                    ck_assert_msg(covered, "%s unit %#llx op %d: no flush saw the range invalid",
                                  pt_cfgs[c].name, (unsigned long long)sz, op);
                    ck_assert_uint_ge(st1.bbm - st0.bbm, 1);
                } else if (op != 1) {
                    /* x86 splits first (the block's own translations in
                     * one store, flushed at once), then changes the page:
                     * nothing else is ever unmapped. */
                    ck_assert_uint_eq(st1.bbm, st0.bbm);
                    ck_assert_msg(nbbm == 0, "%s op %d: a flush saw the block broken",
                                  pt_cfgs[c].name, op);
                    int whole = 0, page = 0, order = 0;
                    for (int i = 0; i < e->nflush; i++) {
                        if ((e->log[i].flags & MMP_FLUSH_ALL) ||
                            (e->log[i].va <= va && e->log[i].va + e->log[i].size >= va + sz))
                            whole = 1;
                        else if (e->log[i].va <= mid && e->log[i].va + e->log[i].size > mid)
                            page = 1, order = whole;
                    }
                    ck_assert_msg(whole, "%s op %d: the split was not flushed", pt_cfgs[c].name,
                                  op);
                    ck_assert_msg(!page || order, "%s op %d: page flushed before the split",
                                  pt_cfgs[c].name, op);
                } else {
                    ck_assert_uint_eq(st1.bbm, st0.bbm);
                    ck_assert_int_eq(nbbm, 0); /* the unmap split's flush covers live entries */
                    int flushed = 0; /* x86: the changed translation is flushed */
                    for (int i = 0; i < e->nflush; i++)
                        flushed |= (e->log[i].flags & MMP_FLUSH_ALL) ||
                                   (e->log[i].va <= mid && e->log[i].va + e->log[i].size > mid);
                    ck_assert(flushed);
                }
                /* after the call: the rest is mapped as before */
                struct mmp_pt_leaf l;
                ck_assert_int_eq(mmp_pt_lookup(&e->pt, va, &l), 0);
                ck_assert_uint_eq(l.pa, pa);
                ck_assert_int_eq(mmp_pt_lookup(&e->pt, va + sz - inf.granule, &l), 0);
                ck_assert_uint_eq(l.pa + (va + sz - inf.granule - l.va), pa + sz - inf.granule);
                ck_assert_int_eq(mmp_pt_unmap(&e->pt, va, sz), 0);
            }
        }
        tenv_free(e);
    }
}
END_TEST

/* Protect of whole runs: a permission change rewrites in place and keeps
 * the runs; a memory-type change breaks before it makes (arm64). */
START_TEST(protect_whole_runs)
{
    for (size_t c = 0; c < NCFG; c++) {
        if (pt_cfg_x86(c))
            continue;
        struct tenv *e = tenv_new(&pt_cfgs[c].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        uint64_t run = run_bytes_for(inf.cont_sizes, inf.granule), va = run * 4;
        ck_assert_int_eq(mmp_pt_map(&e->pt, va, run * 8, 2 * run, RW, 0), 0);
        struct mmp_pt_stats a, b;
        struct mmp_pt_usage u;
        mmp_pt_stats(&e->pt, &a);
        ck_assert_int_eq(mmp_pt_protect(&e->pt, va, 2 * run, RO), 0);
        mmp_pt_stats(&e->pt, &b);
        ck_assert_uint_eq(b.bbm, a.bbm);
        mmp_pt_usage(&e->pt, &u);
        ck_assert_uint_eq(u.cont_runs, 2);
        e->nflush = 0;
        e->inspect = 1;
        ck_assert_int_eq(mmp_pt_protect(&e->pt, va, 2 * run, RO | MMP_MEM_DEVICE), 0);
        e->inspect = 0;
        mmp_pt_stats(&e->pt, &a);
        ck_assert_uint_ge(a.bbm, b.bbm + 1);
        ck_assert_int_ge(e->nflush, 1);
        ck_assert(e->log[0].all_invalid);
        mmp_pt_usage(&e->pt, &u);
        ck_assert_uint_eq(u.cont_runs, 2);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, va + run, &l), 0);
        ck_assert_uint_eq(l.attrs, RO | MMP_MEM_DEVICE);
        ck_assert_uint_eq(l.pa, run * 9);
        tenv_free(e);
    }
}
END_TEST

/* Mapping a run one page per call folds it; each earlier entry goes
 * through invalid + flush first. With MMP_PT_NO_FOLD nothing folds. */
START_TEST(folding_across_calls)
{
    for (size_t c = 0; c < NCFG; c++) {
        if (pt_cfg_x86(c))
            continue;
        for (int nofold = 0; nofold < 2; nofold++) {
            struct mmp_pt_config cfg = pt_cfgs[c].c;
            if (nofold)
                cfg.flags |= MMP_PT_NO_FOLD;
            struct tenv *e = tenv_new(&cfg);
            struct mmp_pt_info inf;
            mmp_pt_info(&e->pt, &inf);
            uint64_t run = run_bytes_for(inf.cont_sizes, inf.granule), n = run / inf.granule;
            uint64_t va = run * 3, pa = run * 7;
            /* a scrambled order: odd pages first, then even, last one completes */
            for (int pass = 0; pass < 2; pass++)
                for (uint64_t i = pass ? 0 : 1; i < n; i += 2) {
                    int last = pass == 1 && i == n - 2;
                    e->nflush = 0;
                    e->inspect = last;
                    ck_assert_int_eq(mmp_pt_map(&e->pt, va + i * inf.granule, pa + i * inf.granule,
                                                inf.granule, RW, 0),
                                     0);
                    e->inspect = 0;
                    if (last && !nofold) {
                        ck_assert_int_ge(e->nflush, 1);
                        ck_assert(e->log[0].all_invalid);
                        ck_assert_uint_le(e->log[0].va, va);
                        ck_assert_uint_ge(e->log[0].va + e->log[0].size, va + run);
                    }
                }
            struct mmp_pt_usage u;
            mmp_pt_usage(&e->pt, &u);
            ck_assert_uint_eq(u.cont_runs, nofold ? 0 : 1);
            ck_assert_uint_eq(u.pages, n);
            /* A non-matching neighbour (other pa) does not fold. */
            ck_assert_int_eq(mmp_pt_map(&e->pt, va + run, pa + run + inf.granule, inf.granule, RW, 0), 0);
            ck_assert_int_eq(mmp_pt_map(&e->pt, va + run + inf.granule, pa + run + inf.granule,
                                        run - inf.granule, RW, 0),
                             0);
            mmp_pt_usage(&e->pt, &u);
            ck_assert_uint_eq(u.cont_runs, nofold ? 0 : 1);
            tenv_free(e);
        }
    }
}
END_TEST

/* Completing a block-sized region one page per call folds it into a block
 * (break-before-make of the table entry on arm64); not with NO_FOLD. */
START_TEST(folding_into_block)
{
    size_t cf[] = {0, 2, 4, 8};
    for (size_t ci = 0; ci < 4; ci++) {
        size_t c = cf[ci];
        for (int nofold = 0; nofold < 2; nofold++) {
            struct mmp_pt_config cfg = pt_cfgs[c].c;
            if (nofold)
                cfg.flags |= MMP_PT_NO_FOLD;
            struct tenv *e = tenv_new(&cfg);
            struct mmp_pt_info inf;
            mmp_pt_info(&e->pt, &inf);
            uint64_t blk = first_block(&inf), G = inf.granule, n = blk / G;
            uint64_t va = blk * 3, pa = blk * 5;
            /* a neighbour keeps the upper tables alive */
            ck_assert_int_eq(mmp_pt_map(&e->pt, va + blk, 0, G, RW, 0), 0);
            long live0 = e->live;
            for (uint64_t k = 0; k < n; k++) {
                int last = k == n - 1;
                e->nflush = 0;
                e->inspect = last;
                ck_assert_int_eq(mmp_pt_map(&e->pt, va + k * G, pa + k * G, G, RW, 0), 0);
                e->inspect = 0;
                if (last && !nofold && !pt_cfg_x86(c)) {
                    ck_assert_int_ge(e->nflush, 1);
                    int seen = 0;
                    for (int f = 0; f < e->nflush; f++)
                        seen |= e->log[f].all_invalid && e->log[f].va <= va &&
                                e->log[f].va + e->log[f].size >= va + blk;
                    ck_assert_msg(seen, "%s: no BBM flush of the block", pt_cfgs[c].name);
                }
            }
            struct mmp_pt_leaf l;
            ck_assert_int_eq(mmp_pt_lookup(&e->pt, va + blk / 2, &l), 0);
            ck_assert_uint_eq(l.pa, nofold ? pa + blk / 2 : pa);
            ck_assert_uint_eq(l.size, nofold ? G : blk);
            ck_assert_int_eq(e->live, nofold ? live0 + 1 : live0);
            tenv_free(e);
        }
    }
}
END_TEST

/* Page-granular mapping of a 32 MiB region (arm64 4K) ends as one
 * contiguous run of 16 blocks: pages fold into runs, tables into blocks,
 * blocks into a run of blocks. */
START_TEST(folding_up_to_block_runs)
{
    struct tenv *e = tenv_new(&pt_cfgs[2].c);
    uint64_t G = 4096, R = 32ull << 20, va = R * 4, pa = R * 9;
    uint64_t step = mmp_test_slow() ? 512 * G : G; /* emulated: 2M per call */
    for (uint64_t off = 0; off < R; off += step)
        ck_assert_int_eq(mmp_pt_map(&e->pt, va + off, pa + off, step, RW, 0), 0);
    struct mmp_pt_usage u;
    mmp_pt_usage(&e->pt, &u);
    ck_assert_uint_eq(u.blocks, 16);
    ck_assert_uint_eq(u.cont_runs, 1);
    ck_assert_uint_eq(u.pages, 0);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(&e->pt, va + R / 2 + G, &l), 0);
    ck_assert_int_eq(l.kind, MMP_LEAF_CONT);
    ck_assert_uint_eq(l.size, 2u << 20);
    ck_assert_uint_eq(l.pa, pa + R / 2);
    ck_assert_int_eq(e->live, 3); /* L0 root, L1, L2: every L3 table went back */
    tenv_free(e);
}
END_TEST

struct snap {
    int n;
    struct mmp_pt_leaf l[4096];
};

static int snap_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct snap *s = (struct snap *)arg;
    if (s->n < 4096)
        s->l[s->n] = *l;
    s->n++;
    return 0;
}

static void take_snap(struct tenv *e, uint64_t va, uint64_t size, struct snap *s)
{
    s->n = 0;
    memset(s->l, 0, sizeof s->l);
    ck_assert_int_eq(mmp_pt_walk(&e->pt, va, size, snap_leaf, s), 0);
}

/*
 * The allocator fails at the 1st, 2nd, ... allocation of a call: every
 * time the call returns -ENOMEM, the tables are as before (same leaves,
 * same descriptors), nothing leaked and no flush was issued.
 */
START_TEST(fault_injection_every_allocation)
{
    static struct snap before, after;
    for (size_t c = 0; c < NCFG; c++) {
        struct tenv *e = tenv_new(&pt_cfgs[c].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        uint64_t blk = first_block(&inf);
        /* state: a block and a few pages; window: 4 blocks */
        uint64_t W = blk * 4, va0 = blk * 4;
        ck_assert_int_eq(mmp_pt_map(&e->pt, va0 + blk, blk * 9, blk, RW, 0), 0);
        ck_assert_int_eq(mmp_pt_map(&e->pt, va0 + 3 * blk, 0, inf.granule * 5, RW, 0), 0);
        for (int op = 0; op < 4; op++) {
            for (long k = 1;; k++) {
                take_snap(e, va0 - blk, W + 2 * blk, &before);
                long live = e->live;
                struct mmp_pt_stats st0, st1;
                mmp_pt_stats(&e->pt, &st0);
                e->nflush = 0;
                e->nalloc = 0;
                e->fail_at = k;
                int rc = 0;
                switch (op) {
                case 0: /* new tables at several levels, around the block */
                    rc = mmp_pt_map(&e->pt, va0 - blk + inf.granule, inf.granule,
                                    blk * 2 - 2 * inf.granule, RW, 0);
                    break;
                case 1: /* split the block twice (protect inside) */
                    rc = mmp_pt_protect(&e->pt, va0 + blk + inf.granule, blk - 2 * inf.granule, RO);
                    break;
                case 2: /* replace across block and pages */
                    rc = mmp_pt_map(&e->pt, va0 + blk + blk / 2 + inf.granule, 0, blk * 2, RW,
                                    MMP_MAP_REPLACE);
                    break;
                default: /* unmap splitting what is left */
                    rc = mmp_pt_unmap(&e->pt, va0 + inf.granule, W - 2 * inf.granule);
                    break;
                }
                e->fail_at = 0;
                if (rc == 0)
                    break;
                ck_assert_msg(rc == -MMP_ENOMEM, "%s op %d k %ld: rc %d", pt_cfgs[c].name, op, k, rc);
                ck_assert_int_eq(e->live, live);
                ck_assert_int_eq(e->nflush, 0);
                mmp_pt_stats(&e->pt, &st1);
                ck_assert_uint_eq(st1.entries_written, st0.entries_written);
                ck_assert_uint_eq(st1.table_pages, st0.table_pages);
                take_snap(e, va0 - blk, W + 2 * blk, &after);
                ck_assert_int_eq(before.n, after.n);
                for (int i = 0; i < before.n && i < 4096; i++)
                    ck_assert_msg(before.l[i].va == after.l[i].va && before.l[i].desc == after.l[i].desc &&
                                      before.l[i].size == after.l[i].size,
                                  "%s op %d k %ld: leaf %d changed", pt_cfgs[c].name, op, k, i);
                ck_assert_int_lt(k, 64);
            }
            /* The successful call used exactly the pages it counted. */
            struct mmp_pt_usage u;
            mmp_pt_usage(&e->pt, &u);
            ck_assert_int_eq((long)u.table_pages, e->live - 1 + (long)(inf.root_bytes / inf.granule));
        }
        tenv_free(e);
    }
}
END_TEST

/* Every documented error, and nothing changes on any of them. */
START_TEST(bad_input_table)
{
    for (size_t c = 0; c < NCFG; c++) {
        struct tenv *e = tenv_new(&pt_cfgs[c].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        uint64_t G = inf.granule, top = 1ull << inf.va_bits;
        int x86 = pt_cfgs[c].c.format == MMP_PT_X86_64;
        uint64_t hi_va = x86 ? (1ull << (inf.va_bits - 1)) : top; /* first bad address */
        ck_assert_int_eq(mmp_pt_map(&e->pt, G, G, G, RW, 0), 0);
        struct mmp_pt_stats st0, st1;
        mmp_pt_stats(&e->pt, &st0);
        long live = e->live;
        struct {
            int rc;
            int call; /* 0 map, 1 unmap, 2 protect */
            uint64_t va, pa, size;
            uint32_t attrs, flags;
        } bad[] = {
            {-MMP_EINVAL, 0, G + 512, 0, G, RW, 0},
            {-MMP_EINVAL, 0, 4 * G, 512, G, RW, 0},
            {-MMP_EINVAL, 0, 4 * G, 0, G + 512, RW, 0},
            {-MMP_EINVAL, 0, 4 * G, 0, 0, RW, 0},
            {-MMP_EINVAL, 0, 4 * G, 0, G, 0x40, 0},
            {-MMP_EINVAL, 0, 4 * G, 0, G, MMP_PROT_WRITE, 0},
            {-MMP_EINVAL, 0, 4 * G, 0, G, RW | 0x600, 0}, /* no such memory type */
            {-MMP_EINVAL, 0, 4 * G, 0, G, RW, 0x80},
            {-MMP_EOVERFLOW, 0, -G, 0, 2 * G, RW, 0},
            {-MMP_EOVERFLOW, 0, 4 * G, -G, 2 * G, RW, 0},
            {-MMP_ERANGE, 0, hi_va, 0, G, RW, 0},
            {-MMP_ERANGE, 0, hi_va - G, 0, 2 * G, RW, 0},
            {-MMP_ERANGE, 0, 4 * G, 1ull << 52, G, RW, 0},
            {-MMP_ERANGE, 0, 4 * G, (1ull << inf.pa_bits) - G, 2 * G, RW, 0},
            {-MMP_EEXIST, 0, 0, 0, 2 * G, RW, 0},
            {-MMP_EINVAL, 1, G + 512, 0, G, 0, 0},
            {-MMP_EINVAL, 1, G, 0, 0, 0, 0},
            {-MMP_EOVERFLOW, 1, -G, 0, 2 * G, 0, 0},
            {-MMP_ERANGE, 1, hi_va, 0, G, 0, 0},
            {-MMP_EINVAL, 2, G, 0, G, MMP_PROT_WRITE, 0},
            {-MMP_EINVAL, 2, G, 0, G, RW | 0x1000, 0},
            {-MMP_EINVAL, 2, G, 0, G + 8, RW, 0},
            {-MMP_ERANGE, 2, hi_va, 0, G, RW, 0},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            int rc = bad[i].call == 0   ? mmp_pt_map(&e->pt, bad[i].va, bad[i].pa, bad[i].size,
                                                     bad[i].attrs, bad[i].flags)
                     : bad[i].call == 1 ? mmp_pt_unmap(&e->pt, bad[i].va, bad[i].size)
                                        : mmp_pt_protect(&e->pt, bad[i].va, bad[i].size, bad[i].attrs);
            ck_assert_msg(rc == bad[i].rc, "%s case %zu: rc %d want %d", pt_cfgs[c].name, i, rc,
                          bad[i].rc);
        }
        if (x86) { /* non-canonical in the middle; the upper half is fine */
            ck_assert_int_eq(mmp_pt_map(&e->pt, 1ull << 62, 0, G, RW, 0), -MMP_ERANGE);
            ck_assert_int_eq(mmp_pt_map(&e->pt, -(1ull << (inf.va_bits - 1)) - G, 0, 2 * G, RW, 0),
                             -MMP_ERANGE);
        }
        mmp_pt_stats(&e->pt, &st1);
        ck_assert_uint_eq(st1.entries_written, st0.entries_written);
        ck_assert_uint_eq(st1.flushes, st0.flushes);
        ck_assert_int_eq(e->live, live);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, top, &l), x86 ? -MMP_ERANGE : -MMP_ERANGE);
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, G, &l), 0);
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, 2 * G, &l), -MMP_ENOENT);
        if (x86) { /* the top page of the upper half maps (va+size wraps to 0 but last does not) */
            ck_assert_int_eq(mmp_pt_map(&e->pt, -G, 0, G, RW, 0), 0);
            ck_assert_int_eq(mmp_pt_lookup(&e->pt, -G, &l), 0);
        }
        /* holes inside unmap/protect ranges are skipped */
        ck_assert_int_eq(mmp_pt_protect(&e->pt, 0, 8 * G, RO), 0);
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, G, &l), 0);
        ck_assert_uint_eq(l.attrs, RO);
        ck_assert_int_eq(mmp_pt_unmap(&e->pt, 0, 8 * G), 0);
        ck_assert_int_eq(mmp_pt_unmap(&e->pt, 0, 8 * G), 0);
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, G, &l), -MMP_ENOENT);
        tenv_free(e);
    }
    ck_assert_int_eq(mmp_pt_map(NULL, 0, 0, 4096, RW, 0), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_unmap(NULL, 0, 4096), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_init(NULL, &pt_cfgs[0].c, NULL), -MMP_EINVAL);
}
END_TEST

/* An alloc_table that breaks its contract (a table not aligned to its size)
 * is refused with -EINVAL and nothing is built on it or kept. */
struct misal {
    long live, n, bad_from;
};

static void *misal_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    struct misal *m = (struct misal *)ctx;
    void *p = aligned_alloc(bytes, bytes);
    if (!p)
        return NULL;
    m->live++;
    *pa = (uint64_t)(uintptr_t)p + (++m->n >= m->bad_from ? bytes / 2 : 0);
    return p;
}

static void misal_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)pa;
    (void)bytes;
    ((struct misal *)ctx)->live--;
    free(va);
}

START_TEST(misaligned_table_refused)
{
    for (size_t c = 0; c < NCFG; c++) {
        struct misal m = {0, 0, 1};
        struct mmp_pt_ops ops = {.alloc_table = misal_alloc, .free_table = misal_free, .ctx = &m};
        struct mmp_pt pt;
        ck_assert_int_eq(mmp_pt_init(&pt, &pt_cfgs[c].c, &ops), -MMP_EINVAL);
        ck_assert_int_eq(m.live, 0);
        m = (struct misal){0, 0, 2};
        ck_assert_int_eq(mmp_pt_init(&pt, &pt_cfgs[c].c, &ops), 0);
        struct mmp_pt_info inf;
        mmp_pt_info(&pt, &inf);
        ck_assert_int_eq(mmp_pt_map(&pt, 0, 0, inf.granule, RW, 0), -MMP_EINVAL);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&pt, 0, &l), -MMP_ENOENT);
        ck_assert_int_eq(m.live, 1); /* the root only */
        mmp_pt_fini(&pt);
        ck_assert_int_eq(m.live, 0);
    }
}
END_TEST

START_TEST(default_ops_and_create)
{
    struct mmp_pt *pt = NULL;
    ck_assert_int_eq(mmp_pt_create(&pt, &pt_cfgs[2].c, NULL), 0);
    ck_assert_int_eq(mmp_pt_map(pt, 1ull << 30, 1ull << 30, 1ull << 30, RW, 0), 0);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(pt, (1ull << 30) + 5, &l), 0);
    ck_assert_uint_eq(l.size, 1ull << 30);
    ck_assert_uint_eq(mmp_pt_root(pt) & 4095, 0);
    mmp_pt_destroy(pt);
    mmp_pt_destroy(NULL);
}
END_TEST

/* MMP_PT_KEEP_TABLES: unmap leaves emptied tables linked; the next map
 * reuses them; fini frees everything. */
START_TEST(keep_tables)
{
    struct mmp_pt_config c = pt_cfgs[2].c;
    c.flags |= MMP_PT_KEEP_TABLES;
    struct tenv *e = tenv_new(&c);
    uint64_t va = 1ull << 30;
    ck_assert_int_eq(mmp_pt_map(&e->pt, va, 0, 8 << 20, RW, MMP_MAP_NO_BLOCK), 0);
    long live = e->live;
    ck_assert_int_eq(mmp_pt_unmap(&e->pt, va, 8 << 20), 0);
    ck_assert_int_eq(e->live, live);
    struct mmp_pt_usage u;
    mmp_pt_usage(&e->pt, &u);
    ck_assert_uint_eq(u.mapped_bytes, 0);
    ck_assert_uint_eq(u.empty_tables, 4); /* the 4 L3 tables, still linked */
    e->nalloc = 0;
    ck_assert_int_eq(mmp_pt_map(&e->pt, va + 4096, 0, 4096, RW, 0), 0);
    ck_assert_int_eq(e->nalloc, 0);
    tenv_free(e);
}
END_TEST

struct race {
    struct mmp_pt *pt;
    uint64_t va, pa, n, G;
    AO_t stop, lookups;
    long bad;
};

static void *reader(void *arg)
{
    struct race *r = (struct race *)arg;
    uint64_t i = 0;
    while (!AO_load_acquire(&r->stop)) {
        struct mmp_pt_leaf l;
        uint64_t va = r->va + (i++ % r->n) * r->G;
        int rc = mmp_pt_lookup(r->pt, va, &l);
        if (rc || l.pa + (va - l.va) != r->pa + (va - r->va) || (l.attrs != RW && l.attrs != RO))
            r->bad++;
        AO_store_release(&r->lookups, AO_load(&r->lookups) + 1);
    }
    return NULL;
}

/* A walker running beside the writer: permission changes of live runs
 * (no break-before-make needed) and map/unmap churn next door never show
 * it a missing, torn or foreign translation. The writer goes on past its
 * rounds until the walker has made lookups of its own: a thread started
 * late may otherwise see only the end state. */
START_TEST(concurrent_reader_sees_no_torn_entries)
{
    for (size_t c = 0; c < 3; c += 2) { /* x86-64, arm64-4k */
        struct mmp_pt *pt;
        ck_assert_int_eq(mmp_pt_create(&pt, &pt_cfgs[c].c, NULL), 0);
        struct race r = {pt, 1ull << 30, 1ull << 32, 64, 4096, 0, 0, 0};
        ck_assert_int_eq(mmp_pt_map(pt, r.va, r.pa, r.n * r.G, RW, 0), 0);
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, reader, &r), 0);
        int rounds = mmp_test_slow() ? 300 : 3000;
        for (int k = 0; k < rounds || AO_load_acquire(&r.lookups) < 1000; k++) {
            ck_assert_int_eq(mmp_pt_protect(pt, r.va, r.n * r.G, k & 1 ? RW : RO), 0);
            uint64_t other = r.va + (2ull << 20) * (1 + k % 4);
            ck_assert_int_eq(mmp_pt_map(pt, other, 0, 32 * r.G, RW, 0), 0);
            ck_assert_int_eq(mmp_pt_unmap(pt, other, 32 * r.G), 0);
        }
        AO_store_release(&r.stop, 1);
        pthread_join(th, NULL);
        ck_assert_uint_ge(AO_load(&r.lookups), 1000);
        ck_assert_int_eq(r.bad, 0);
        mmp_pt_destroy(pt);
    }
}
END_TEST

static int collect(void *arg, const char *line)
{
    char *buf = (char *)arg;
    strcat(buf, line);
    strcat(buf, "\n");
    return 0;
}

START_TEST(dump_lines)
{
    struct tenv *e = tenv_new(&pt_cfgs[2].c);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0x200000, 0x40200000, 0x400000, RW, 0), 0);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0x600000, 0x40600000, 0x11000, RO | MMP_PROT_EXEC, 0), 0);
    static char buf[4096];
    buf[0] = 0;
    ck_assert_int_eq(mmp_pt_dump(&e->pt, 0, 1ull << 30, collect, buf), 0);
    ck_assert_msg(strstr(buf, "0x0000000000200000-0x00000000005fffff -> 0x0000040200000 4M block(2M L2) rw--- normal-wb") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "0x0000000000600000-0x000000000060ffff -> 0x0000040600000 64K cont(4K L3) r-x-- normal-wb") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "0x0000000000610000-0x0000000000610fff -> 0x0000040610000 4K page(4K L3) r-x-- normal-wb") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "total: 4164K mapped, 17 pages, 1 contiguous runs, 2 blocks, 4 table pages") != NULL, "%s", buf);
    tenv_free(e);
}
END_TEST

Suite *mmp_suite_pt(void)
{
    Suite *s = suite_create("pt");
    MMP_ADD(s, round_trip_each_leaf_size);
    MMP_ADD(s, leaf_choice_counts);
    MMP_ADD(s, partial_unmap_protect_in_blocks_and_runs);
    MMP_ADD(s, bbm_order_seen_by_flush);
    MMP_ADD(s, protect_whole_runs);
    MMP_ADD(s, folding_across_calls);
    MMP_ADD(s, folding_into_block);
    MMP_ADD(s, folding_up_to_block_runs);
    MMP_ADD(s, fault_injection_every_allocation);
    MMP_ADD(s, bad_input_table);
    MMP_ADD(s, misaligned_table_refused);
    MMP_ADD(s, default_ops_and_create);
    MMP_ADD(s, dump_lines);
    MMP_ADD(s, keep_tables);
    MMP_ADD(s, concurrent_reader_sees_no_torn_entries);
    return s;
}
