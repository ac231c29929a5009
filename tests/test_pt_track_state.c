/* SPDX-License-Identifier: MIT */
/*
 * Tracking state across changes of a leaf's shape (include/mmport/track.h,
 * "what the calls keep"): the accessed and dirty state the MMU records in
 * an arm64 contiguous run is the OR of its entries (it may update any one
 * of them for an access to any page of the run), so a run that is unmade -
 * by unmap, protect, a replacing map, a split or mmp_pt_track_start - gives
 * that OR to the entries that stay; a fold (a map completing a run or a
 * block, mmp_pt_track_stop) gives the folded leaf the OR of what it folds;
 * and *count is the number of bits set. The MMU is played by
 * pt_track_harness.h: its bits are set by hand in one chosen descriptor.
 */
#include "pt_track_harness.h"

static int bit(const uint64_t *bm, uint64_t i)
{
    return (int)(bm[i >> 6] >> (i & 63) & 1);
}

static uint64_t bits_set(const uint64_t *bm, uint64_t n)
{
    uint64_t c = 0;
    for (uint64_t i = 0; i < n; i++)
        c += (uint64_t)bit(bm, i);
    return c;
}

/* Harvest (young: test-clear-young) [va, va + n pages); the count must be
 * the bits set; returns the bitmap (caller frees). */
static uint64_t *pass(struct mmp_pt *pt, int young, uint64_t va, uint64_t n, uint64_t g,
                      const char *name, const char *what)
{
    uint64_t *bm = calloc(n / 64 + 2, 8), cnt = ~0ull;
    int rc = young ? mmp_pt_test_clear_young(pt, va, n * g, bm, &cnt)
                   : mmp_pt_track_harvest(pt, va, n * g, bm, &cnt);
    ck_assert_msg(rc == 0, "%s %s: %s returned %d", name, what, young ? "young" : "harvest", rc);
    ck_assert_msg(cnt == bits_set(bm, n), "%s %s: %s count %llu, %llu bits set", name, what,
                  young ? "young" : "harvest", (unsigned long long)cnt,
                  (unsigned long long)bits_set(bm, n));
    return bm;
}

/* Every page of [0, n) but `except` (~0: none) is reported. */
static void all_but(const uint64_t *bm, uint64_t n, uint64_t except, const char *name,
                    const char *what, const char *pass_name)
{
    for (uint64_t i = 0; i < n; i++)
        if (i != except)
            ck_assert_msg(bit(bm, i), "%s %s: page %llu not reported by %s", name, what,
                          (unsigned long long)i, pass_name);
}

/* A fresh table of configuration c with flags added (and the flush
 * callback flush, if not NULL), and what the tests need of it. */
struct senv {
    struct mmp_pt_config k;
    struct tenv *e;
    struct mmp_pt *pt;
    struct mmp_pt_info inf;
    struct hwbits h;
    const char *name;
    uint64_t g, blk;
    uint64_t run, brun; /* a run of pages, of blocks (0: none) */
};

static struct senv senv_flush(size_t c, uint32_t flags,
                              void (*flush)(void *ctx, uint64_t va, uint64_t size, unsigned fl))
{
    struct senv v;
    v.k = pt_cfgs[c].c;
    v.k.flags |= flags;
    v.e = calloc(1, sizeof *v.e);
    struct mmp_pt_ops o = t_ops(v.e);
    if (flush)
        o.tlb_flush = flush;
    ck_assert_int_eq(mmp_pt_init(&v.e->pt, &v.k, &o), 0);
    v.pt = &v.e->pt;
    mmp_pt_info(v.pt, &v.inf);
    v.h = hw_bits(&v.k);
    v.name = pt_cfgs[c].name;
    v.g = v.inf.granule;
    v.blk = first_block(&v.inf);
    v.run = run_bytes_for(v.inf.cont_sizes, v.g);
    v.brun = run_bytes_for(v.inf.cont_sizes, v.blk);
    return v;
}

static struct senv senv_new(size_t c, uint32_t flags)
{
    return senv_flush(c, flags, NULL);
}

/* The next harvest and the next young scan of [va, va + n pages) report
 * every page but `except`. */
static void both_report_all_but(const struct senv *v, uint64_t va, uint64_t n, uint64_t except,
                                const char *what)
{
    for (int young = 0; young < 2; young++) {
        uint64_t *bm = pass(v->pt, young, va, n, v->g, v->name, what);
        all_but(bm, n, except, v->name, what, young ? "young" : "harvest");
        free(bm);
    }
}

/* ---- item: a run unmade keeps its OR ------------------------------------ */

enum { U_UNMAP, U_PROT_RO, U_PROT_X, U_REPLACE, U_START, U_NWAYS };
static const char *const uway[U_NWAYS] = {"unmap", "protect ro", "protect +x", "replace",
                                          "track start"};

/*
 * A writable run; the MMU records a write (and the access) in entry `at`
 * only; then page 3 is unmapped, re-protected, replaced or put under
 * tracking. Every page of the run other than page 3 must be reported by
 * the next harvest and the next young scan: the write may have been to
 * any page of it.
 */
static void run_unmade(size_t c, int way, uint64_t at)
{
    struct senv v = senv_new(c, MMP_PT_TRACK_HW);
    char what[64];
    snprintf(what, sizeof what, "%s, MMU state in entry %llu", uway[way],
             (unsigned long long)at);
    uint64_t g = v.g, n = v.run / g, va = 2 * v.run, p3 = va + 3 * g;
    ck_assert_int_eq(mmp_pt_map(v.pt, va, 4 * v.run, 2 * v.run, RW, 0), 0);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(v.pt, va, &l), 0);
    ck_assert_uint_eq(l.kind, MMP_LEAF_CONT);
    hw_write(v.pt, &v.h, va + at * g);
    switch (way) {
    case U_UNMAP: ck_assert_int_eq(mmp_pt_unmap(v.pt, p3, g), 0); break;
    case U_PROT_RO: ck_assert_int_eq(mmp_pt_protect(v.pt, p3, g, RO), 0); break;
    case U_PROT_X: ck_assert_int_eq(mmp_pt_protect(v.pt, p3, g, RW | MMP_PROT_EXEC), 0); break;
    case U_REPLACE:
        ck_assert_int_eq(mmp_pt_map(v.pt, p3, 64 * v.run, g, RW, MMP_MAP_REPLACE), 0);
        break;
    case U_START: ck_assert_int_eq(mmp_pt_track_start(v.pt, p3, g, NULL), 0); break;
    }
    ck_assert_int_eq(mmp_pt_lookup(v.pt, va, &l), 0);
    ck_assert_msg(l.kind != MMP_LEAF_CONT, "%s %s: the run was not unmade", v.name, what);
    both_report_all_but(&v, va, n, 3, what);
    /* the second run was not touched: nothing of it is reported */
    uint64_t *bm = pass(v.pt, 0, va + v.run, n, g, v.name, what);
    ck_assert_msg(bits_set(bm, n) == 0, "%s %s: the other run reported", v.name, what);
    free(bm);
    tenv_free(v.e);
}

START_TEST(state_run_unmade_keeps_or)
{
    for (size_t c = 0; c < NCFG; c++) {
        if (pt_cfg_x86(c))
            continue;
        for (int way = 0; way < U_NWAYS; way++) {
            run_unmade(c, way, 5); /* an entry that stays */
            run_unmade(c, way, 3); /* the entry the change removes or rewrites */
        }
    }
}
END_TEST

/*
 * A run of blocks: the MMU records a write in block 4; a page inside
 * block 1 is re-protected (the block is split, the run unmade). Every
 * other block of the run is reported whole, and the split block's other
 * pages too.
 */
START_TEST(state_block_run_split_keeps_or)
{
    for (size_t c = 0; c < NCFG; c++) {
        if (pt_cfg_x86(c))
            continue;
        struct senv v = senv_new(c, MMP_PT_TRACK_HW);
        if (v.brun) {
            uint64_t n = v.brun / v.g, va = v.brun, p = va + v.blk + 2 * v.g;
            ck_assert_int_eq(mmp_pt_map(v.pt, va, 2 * v.brun, v.brun, RW, 0), 0);
            struct mmp_pt_leaf l;
            ck_assert_int_eq(mmp_pt_lookup(v.pt, va, &l), 0);
            ck_assert_uint_eq(l.kind, MMP_LEAF_CONT);
            ck_assert_uint_eq(l.size, v.blk);
            hw_write(v.pt, &v.h, va + 4 * v.blk);
            ck_assert_int_eq(mmp_pt_protect(v.pt, p, v.g, RO), 0);
            both_report_all_but(&v, va, n, (p - va) / v.g, "block run split");
        }
        tenv_free(v.e);
    }
}
END_TEST

/* ---- item: a fold carries the OR of what it folds ----------------------- */

/*
 * The pages of a run (or of a block-sized region, every format) are
 * mapped one call each but the last; the MMU records a write in page
 * `at`; the last map completes the run or region (a fold). The run or
 * block is dirty and young: every page of it is reported.
 */
static void fold_one(size_t c, int block, uint64_t at)
{
    struct senv v = senv_new(c, MMP_PT_TRACK_HW);
    const char *what = block ? "block fold" : "run fold";
    uint64_t g = v.g, sz = block ? v.blk : v.run, n = sz / g, va = 2 * sz, pa = 4 * sz;
    for (uint64_t i = 0; i + 1 < n; i++)
        ck_assert_int_eq(mmp_pt_map(v.pt, va + i * g, pa + i * g, g, RW, 0), 0);
    hw_write(v.pt, &v.h, va + at * g);
    ck_assert_int_eq(mmp_pt_map(v.pt, va + (n - 1) * g, pa + (n - 1) * g, g, RW, 0), 0);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(v.pt, va, &l), 0);
    ck_assert_msg(block ? l.size == sz : l.kind == MMP_LEAF_CONT, "%s: %s did not happen", v.name,
                  what);
    both_report_all_but(&v, va, n, ~0ull, what);
    tenv_free(v.e);
}

START_TEST(state_run_fold_keeps_or)
{
    for (size_t c = 0; c < NCFG; c++)
        if (!pt_cfg_x86(c))
            fold_one(c, 0, 3);
}
END_TEST

START_TEST(state_block_fold_keeps_or)
{
    for (size_t c = 0; c < NCFG; c++)
        if (cfg_hw_ok(&pt_cfgs[c].c)) {
            fold_one(c, 1, 0);
            fold_one(c, 1, 7);
        }
}
END_TEST

/* ---- item: stop keeps the state ----------------------------------------- */

/*
 * Hardware tracking, every format: map a block, start (it splits), the MMU
 * writes page `at`, stop (it folds back). The write is reported by the next
 * harvest (the block: every page) and the access by the next young scan.
 * With final = 1 the migration's sequence: a final harvest first (it
 * reports the write), then stop: nothing is reported again after it.
 */
static void stop_keeps(size_t c, uint64_t at, int final)
{
    struct senv v = senv_new(c, MMP_PT_TRACK_HW);
    char what[64];
    snprintf(what, sizeof what, "stop, page %llu written%s", (unsigned long long)at,
             final ? ", final harvest" : "");
    uint64_t g = v.g, n = v.blk / g, va = 2 * v.blk;
    ck_assert_int_eq(mmp_pt_map(v.pt, va, 4 * v.blk, v.blk, RW, 0), 0);
    ck_assert_int_eq(mmp_pt_track_start(v.pt, va, v.blk, NULL), 0);
    hw_write(v.pt, &v.h, va + at * g);
    uint64_t *bm;
    if (final) {
        bm = pass(v.pt, 0, va, n, g, v.name, what);
        ck_assert_msg(bits_set(bm, n) == 1 && bit(bm, at), "%s %s: final harvest", v.name, what);
        free(bm);
    }
    ck_assert_int_eq(mmp_pt_track_stop(v.pt, va, v.blk), 0);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(v.pt, va, &l), 0);
    ck_assert_msg(l.size == v.blk, "%s %s: not folded back", v.name, what);
    if (final) {
        bm = pass(v.pt, 0, va, n, g, v.name, what);
        ck_assert_msg(bits_set(bm, n) == 0, "%s %s: reported again after stop", v.name, what);
        free(bm);
        bm = pass(v.pt, 1, va, n, g, v.name, what);
        all_but(bm, n, ~0ull, v.name, what, "young");
        free(bm);
    } else {
        both_report_all_but(&v, va, n, ~0ull, what);
    }
    tenv_free(v.e);
}

START_TEST(state_stop_hw_keeps)
{
    for (size_t c = 0; c < NCFG; c++)
        if (cfg_hw_ok(&pt_cfgs[c].c))
            for (int final = 0; final < 2; final++) {
                stop_keeps(c, 0, final); /* the first page, the one a fold re-maps */
                stop_keeps(c, 7, final);
            }
}
END_TEST

enum { S_YOUNG_RO, S_YOUNG_RW, S_PROTECT, S_PROTECT_BACK, S_PROTECT_YOUNG, S_NWAYS };
static const char *const sway[S_NWAYS] = {
    "young scan of a read-only block", "young scan, one page touched", "protect of a page",
    "protect of a page and back", "protect of a page (its tracking ends), then a young scan"};

/* Software tracking: whatever happened in the block while tracked, stop
 * folds it back (the translation and attributes are the block's again). */
static void stop_folds(size_t c, int way)
{
    struct senv v = senv_new(c, 0);
    uint64_t g = v.g, n = v.blk / g, va = 2 * v.blk, *bm;
    int young = v.inf.format != MMP_PT_X86_EPT || (v.k.flags & MMP_PT_EPT_AD);
    ck_assert_int_eq(mmp_pt_map(v.pt, va, 4 * v.blk, v.blk, way == S_YOUNG_RO ? RO : RW, 0), 0);
    ck_assert_int_eq(mmp_pt_track_start(v.pt, va, v.blk, NULL), 0);
    switch (way) {
    case S_YOUNG_RO:
    case S_YOUNG_RW:
        if (!young)
            break;
        bm = pass(v.pt, 1, va, n, g, v.name, sway[way]);
        ck_assert_uint_eq(bits_set(bm, n), n); /* preset at map time */
        free(bm);
        if (way == S_YOUNG_RW)
            ck_assert_int_eq(mmp_pt_young_fault(v.pt, va + 2 * g), 0);
        break;
    case S_PROTECT: ck_assert_int_eq(mmp_pt_protect(v.pt, va + 3 * g, g, RW), 0); break;
    case S_PROTECT_BACK:
        ck_assert_int_eq(mmp_pt_protect(v.pt, va + 3 * g, g, RO), 0);
        ck_assert_int_eq(mmp_pt_protect(v.pt, va + 3 * g, g, RW), 0);
        break;
    case S_PROTECT_YOUNG:
        ck_assert_int_eq(mmp_pt_protect(v.pt, va + 3 * g, g, RW), 0);
        if (young)
            free(pass(v.pt, 1, va, n, g, v.name, sway[way]));
        break;
    }
    ck_assert_int_eq(mmp_pt_track_stop(v.pt, va, v.blk), 0);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(v.pt, va, &l), 0);
    ck_assert_msg(l.size == v.blk, "%s: %s, stop left the block split", v.name, sway[way]);
    if (young && way == S_YOUNG_RW) {
        /* the block's access flag is the OR of its pages' */
        bm = pass(v.pt, 1, va, n, g, v.name, sway[way]);
        ck_assert_msg(bits_set(bm, n) == n, "%s: %s, young after stop: %llu of %llu", v.name,
                      sway[way], (unsigned long long)bits_set(bm, n), (unsigned long long)n);
        free(bm);
    }
    tenv_free(v.e);
}

START_TEST(state_stop_sw_folds)
{
    for (size_t c = 0; c < NCFG; c++)
        for (int way = 0; way < S_NWAYS; way++)
            stop_folds(c, way);
}
END_TEST

/*
 * x86 with hardware D: a write through a TLB entry that still holds a
 * block until the flush of its split sets D in the block's old slot, a
 * table entry by then (the flush callback plays it). Every page of the
 * block is reported after the split (here by protecting one page).
 */
static struct {
    uint64_t *slot, bit, va; /* set bit in *slot at the first flush covering va */
} stale;

static int no_yield(void *arg, uint64_t done, uint64_t total)
{
    (void)arg, (void)done, (void)total;
    return 0;
}

static void stale_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    t_flush(ctx, va, size, flags);
    if (stale.slot && ((flags & MMP_FLUSH_ALL) || stale.va - va < size)) {
        AO_or((volatile AO_t *)stale.slot, (AO_t)stale.bit);
        stale.slot = NULL;
    }
}

START_TEST(state_split_stale_d)
{
    for (size_t c = 0; c < NCFG; c++) {
        if (!pt_cfg_x86(c) || !cfg_hw_ok(&pt_cfgs[c].c))
            continue;
        struct senv v = senv_flush(c, MMP_PT_TRACK_HW, stale_flush);
        uint64_t n = v.blk / v.g, va = 2 * v.blk;
        ck_assert_int_eq(mmp_pt_map(v.pt, va, 4 * v.blk, v.blk, RW, 0), 0);
        hw_young(v.pt, &v.h, va); /* (a TLB holds only translations it accessed) */
        stale.slot = desc_ptr(v.pt, va);
        stale.bit = v.h.dirty_set;
        stale.va = va;
        ck_assert_int_eq(mmp_pt_protect(v.pt, va + 3 * v.g, v.g, RO), 0);
        ck_assert_msg(!stale.slot, "%s: the split did not flush the block", v.name);
        both_report_all_but(&v, va, n, ~0ull, "D set through a stale TLB entry during a split");
        tenv_free(v.e);
    }
}
END_TEST

/*
 * The same through mmp_pt_track_start, whose splits are linked in place
 * and flushed with the arm (one flush for the call): D set in the old
 * block slot at that flush reaches every page of the block.
 */
START_TEST(state_start_stale_d)
{
    for (size_t c = 0; c < NCFG; c++) {
        if (!pt_cfg_x86(c) || !cfg_hw_ok(&pt_cfgs[c].c))
            continue;
        for (int yield = 0; yield < 2; yield++) {
            struct senv v = senv_flush(c, MMP_PT_TRACK_HW, stale_flush);
            uint64_t n = v.blk / v.g, va = 2 * v.blk;
            ck_assert_int_eq(mmp_pt_map(v.pt, va, 4 * v.blk, v.blk, RW, 0), 0);
            hw_young(v.pt, &v.h, va);
            stale.slot = desc_ptr(v.pt, va);
            stale.bit = v.h.dirty_set;
            stale.va = va;
            struct mmp_pt_stats a, b;
            mmp_pt_stats(v.pt, &a);
            struct mmp_track_opts o = {.yield = yield ? no_yield : NULL};
            ck_assert_int_eq(mmp_pt_track_start(v.pt, va, v.blk, &o), 0);
            mmp_pt_stats(v.pt, &b);
            ck_assert_msg(!stale.slot, "%s: the split was not flushed", v.name);
            ck_assert_uint_eq(b.split_flushes - a.split_flushes, 0);
            ck_assert_msg(b.flushes - a.flushes == 1, "%s: track_start made %llu flushes", v.name,
                          (unsigned long long)(b.flushes - a.flushes));
            both_report_all_but(&v, va, n, ~0ull, "D set through a stale TLB entry during start");
            tenv_free(v.e);
        }
    }
}
END_TEST

/*
 * mmp_pt_track_stop folds every block back in one flush window; on x86 the
 * folded tables are kept until that flush, and the MMU may record D in
 * them through a stale walk until it (the flush callback plays it, in the
 * table of the first block): the block gets it, and the whole block is
 * reported.
 */
START_TEST(state_stop_stale_d)
{
    for (size_t c = 0; c < NCFG; c++) {
        if (!pt_cfg_x86(c) || !cfg_hw_ok(&pt_cfgs[c].c))
            continue;
        struct senv v = senv_flush(c, MMP_PT_TRACK_HW, stale_flush);
        uint64_t n = v.blk / v.g, va = 2 * v.blk, nb = 8;
        ck_assert_int_eq(mmp_pt_map(v.pt, va, 4 * v.blk, nb * v.blk, RW, 0), 0);
        ck_assert_int_eq(mmp_pt_track_start(v.pt, va, nb * v.blk, NULL), 0);
        for (int young = 0; young < 2; young++) /* everything clean and old */
            free(pass(v.pt, young, va, nb * n, v.g, v.name, "after start"));
        stale.slot = desc_ptr(v.pt, va + 5 * v.g); /* a page of the first block's table */
        stale.bit = v.h.dirty_set | v.h.young; /* a write: D and A */
        stale.va = va;
        struct mmp_pt_stats a, b;
        mmp_pt_stats(v.pt, &a);
        ck_assert_int_eq(mmp_pt_track_stop(v.pt, va, nb * v.blk), 0);
        mmp_pt_stats(v.pt, &b);
        ck_assert_msg(!stale.slot, "%s: stop did not flush", v.name);
        ck_assert_msg(b.flushes - a.flushes == 1, "%s: track_stop made %llu flushes", v.name,
                      (unsigned long long)(b.flushes - a.flushes));
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(v.pt, va + 5 * v.g, &l), 0);
        ck_assert_uint_eq(l.size, v.blk); /* folded */
        both_report_all_but(&v, va, n, ~0ull, "D set in a folded table through a stale walk");
        tenv_free(v.e);
    }
}
END_TEST

/*
 * A pass over part of a block: the MMU's record in the block may be for a
 * page outside the range, so the block is reported there but not re-armed;
 * a pass over the whole block reports every page, then re-arms it.
 */
START_TEST(state_partial_block_pass)
{
    for (size_t c = 0; c < NCFG; c++) {
        if (!cfg_hw_ok(&pt_cfgs[c].c))
            continue;
        struct senv v = senv_new(c, MMP_PT_TRACK_HW);
        uint64_t n = v.blk / v.g, va = 2 * v.blk, *bm;
        ck_assert_int_eq(mmp_pt_map(v.pt, va, 4 * v.blk, v.blk, RW, 0), 0);
        hw_write(v.pt, &v.h, va + 7 * v.g);
        for (int young = 0; young < 2; young++) {
            bm = pass(v.pt, young, va, 4, v.g, v.name, "first pages of a block");
            ck_assert_uint_eq(bits_set(bm, 4), 4);
            free(bm);
        }
        both_report_all_but(&v, va, n, ~0ull, "a block after a pass over part of it");
        for (int young = 0; young < 2; young++) {
            bm = pass(v.pt, young, va, n, v.g, v.name, "a block passed whole");
            ck_assert_uint_eq(bits_set(bm, n), 0);
            free(bm);
        }
        tenv_free(v.e);
    }
}
END_TEST

/* ---- item: *count over runs --------------------------------------------- */

/*
 * A run of blocks; the MMU marks block `at`: the whole run is reported,
 * and *count is the number of bits set (every arm64 mode; software
 * tracking marks through the fault calls).
 */
static void run_count(size_t c, int hw, uint64_t at)
{
    struct senv v = senv_new(c, hw ? MMP_PT_TRACK_HW : 0);
    if (v.brun) {
        uint64_t n = v.brun / v.g, va = v.brun, a = va + at * v.blk, *bm;
        ck_assert_int_eq(mmp_pt_map(v.pt, va, 2 * v.brun, v.brun, RW, 0), 0);
        if (hw) {
            hw_write(v.pt, &v.h, a);
            bm = pass(v.pt, 0, va, n, v.g, v.name, "run of blocks");
            ck_assert_uint_eq(bits_set(bm, n), n);
            free(bm);
            hw_young(v.pt, &v.h, a);
        } else { /* preset: a first scan reports every page */
            free(pass(v.pt, 1, va, n, v.g, v.name, "run of blocks"));
            ck_assert_int_eq(mmp_pt_young_fault(v.pt, a), 0);
        }
        bm = pass(v.pt, 1, va, n, v.g, v.name, "run of blocks");
        ck_assert_uint_eq(bits_set(bm, n), n);
        free(bm);
    }
    tenv_free(v.e);
}

START_TEST(state_count_block_run)
{
    for (size_t c = 0; c < NCFG; c++)
        if (!pt_cfg_x86(c))
            for (int hw = 0; hw < 2; hw++) {
                run_count(c, hw, 3);
                run_count(c, hw, 0);
            }
}
END_TEST

/* ---- shared mode ------------------------------------------------------- */

/*
 * Shared mode (one leaf slot per call), hardware tracking, arm64: a run
 * made by single-page maps, the MMU's state in entry `at`; a page of the
 * run re-protected or unmapped (the call must succeed though the entries
 * differ in their state); a block-sized region folded by its last page's
 * map; a run of blocks one of whose blocks a page protect splits.
 */
static void shared_one(size_t c, int way, uint64_t at)
{
    struct senv v = senv_new(c, MMP_PT_TRACK_HW | MMP_PT_SHARED);
    static const char *const ways[] = {"protect", "unmap", "block fold", "block run split"};
    char what[64];
    snprintf(what, sizeof what, "shared, %s, state in entry %llu", ways[way],
             (unsigned long long)at);
    uint64_t g = v.g, sz = way <= 1 ? v.run : way == 2 ? v.blk : v.brun, n = sz / g;
    uint64_t unit = way == 3 ? v.blk : g, va = 2 * sz, except = ~0ull;
    struct mmp_pt_leaf l;
    int rc = 0;
    if (!sz) {
        tenv_free(v.e);
        return;
    }
    for (uint64_t i = 0; i < sz / unit - (way == 2); i++)
        ck_assert_int_eq(mmp_pt_map(v.pt, va + i * unit, 2 * va + i * unit, unit, RW, 0), 0);
    ck_assert_int_eq(mmp_pt_lookup(v.pt, va, &l), 0);
    ck_assert_msg(way == 2 || l.kind == MMP_LEAF_CONT, "%s %s: the maps made no run", v.name,
                  what);
    hw_write(v.pt, &v.h, va + at * unit);
    switch (way) {
    case 0: rc = mmp_pt_protect(v.pt, va + 3 * g, g, RO), except = 3; break;
    case 1: rc = mmp_pt_unmap(v.pt, va + 3 * g, g), except = 3; break;
    case 2: rc = mmp_pt_map(v.pt, va + sz - g, 2 * va + sz - g, g, RW, 0); break;
    default:
        rc = mmp_pt_protect(v.pt, va + v.blk + 2 * g, g, RO), except = (v.blk + 2 * g) / g;
        break;
    }
    ck_assert_msg(rc == 0, "%s %s: returned %d", v.name, what, rc);
    ck_assert_int_eq(mmp_pt_lookup(v.pt, va + sz - g, &l), 0);
    ck_assert_msg(way != 2 || l.size == v.blk, "%s %s: no fold", v.name, what);
    both_report_all_but(&v, va, n, except, what);
    tenv_free(v.e);
}

START_TEST(state_shared_keeps_or)
{
    for (size_t c = 0; c < NCFG; c++) {
        if (pt_cfg_x86(c))
            continue;
        for (int way = 0; way < 4; way++) {
            shared_one(c, way, 5);
            shared_one(c, way, 1);
        }
    }
}
END_TEST

Suite *mmp_suite_pt_track_state(void)
{
    Suite *s = suite_create("pt_track_state");
    MMP_ADD(s, state_run_unmade_keeps_or);
    MMP_ADD(s, state_block_run_split_keeps_or);
    MMP_ADD(s, state_run_fold_keeps_or);
    MMP_ADD(s, state_block_fold_keeps_or);
    MMP_ADD(s, state_stop_hw_keeps);
    MMP_ADD(s, state_stop_sw_folds);
    MMP_ADD(s, state_split_stale_d);
    MMP_ADD(s, state_start_stale_d);
    MMP_ADD(s, state_stop_stale_d);
    MMP_ADD(s, state_partial_block_pass);
    MMP_ADD(s, state_count_block_run);
    MMP_ADD(s, state_shared_keeps_or);
    return s;
}
