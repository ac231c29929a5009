/* SPDX-License-Identifier: MIT */
/*
 * MMP_MAP_REPLACE of translations already in place (include/mmport/pt.h):
 * a replace that asks for what a block, a contiguous run or a page already
 * translates changes nothing - no store, no flush, no break-before-make,
 * the leaf keeps its size; a replace that makes a split region uniform
 * again folds it back. Every format, exclusive and shared
 * (MMP_PT_SHARED) tables.
 */
#include "pt_track_harness.h"

struct snap {
    struct mmp_pt_stats st;
    int nflush;
    long live;
};

static struct snap snap_of(struct tenv *e)
{
    struct snap s;
    mmp_pt_stats(&e->pt, &s.st);
    s.nflush = e->nflush;
    s.live = e->live;
    return s;
}

/* Nothing was written, flushed, broken or allocated since s. A shared
 * table counts its stores per call only (pt.h). */
static void assert_unchanged(struct tenv *e, const struct snap *s, int shared,
                             const char *what)
{
    struct snap n = snap_of(e);
    ck_assert_msg(shared || n.st.entries_written == s->st.entries_written,
                  "%s: %llu entries written", what,
                  (unsigned long long)(n.st.entries_written - s->st.entries_written));
    ck_assert_msg(n.nflush == s->nflush && n.st.flushes == s->st.flushes,
                  "%s: %d flushes", what, n.nflush - s->nflush);
    ck_assert_msg(n.st.bbm == s->st.bbm, "%s: %llu breaks", what,
                  (unsigned long long)(n.st.bbm - s->st.bbm));
    ck_assert_msg(n.live == s->live && n.st.table_pages == s->st.table_pages,
                  "%s: %ld table pages allocated", what, n.live - s->live);
}

static void assert_leaf(struct tenv *e, uint64_t va, uint64_t pa, uint64_t size,
                        unsigned kind, const char *what)
{
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(&e->pt, va, &l), 0);
    ck_assert_msg(
        l.size == size && l.kind == kind && l.pa + (va - l.va) == pa,
        "%s: leaf at %#llx size %#llx kind %u pa %#llx, want size %#llx kind %u pa "
        "%#llx",
        what, (unsigned long long)va, (unsigned long long)l.size, l.kind,
        (unsigned long long)(l.pa + (va - l.va)), (unsigned long long)size, kind,
        (unsigned long long)pa);
}

/* One test body, run on a table of every configuration of the list. */
typedef void (*cfg_fn)(struct tenv *e, const struct mmp_pt_info *inf, const char *name,
                       int shared);

static void each_cfg(uint32_t flags, cfg_fn fn)
{
    for (size_t c = 0; c < NCFG; c++) {
        struct mmp_pt_config k = pt_cfgs[c].c;
        k.flags |= flags;
        struct tenv *e = tenv_new(&k);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        fn(e, &inf, pt_cfgs[c].name, (flags & MMP_PT_SHARED) != 0);
        tenv_free(e);
    }
}

/* A test for exclusive tables (name) and one for shared ones (name_shared). */
#define BOTH_MODES(name, fn)                                                             \
    START_TEST(name)                                                                     \
    {                                                                                    \
        each_cfg(0, fn);                                                                 \
    }                                                                                    \
    END_TEST                                                                             \
    START_TEST(name##_shared)                                                            \
    {                                                                                    \
        each_cfg(MMP_PT_SHARED, fn);                                                     \
    }                                                                                    \
    END_TEST

/* Every block size: map one block, replace one page (and, exclusive
 * tables, a few pages at its end) inside it with the same translation. */
static void identical_in_blocks(struct tenv *e, const struct mmp_pt_info *inf,
                                const char *name, int shared)
{
    uint64_t g = inf->granule;
    for (unsigned b = 0; b < 40; b++) {
        uint64_t blk = 1ull << b;
        if (!(inf->block_sizes >> b & 1) || blk <= g)
            continue;
        uint64_t va = 2 * blk, pa = 5 * blk;
        char what[96];
        snprintf(what, sizeof what, "%s%s block %#llx", name, shared ? " shared" : "",
                 (unsigned long long)blk);
        ck_assert_int_eq(mmp_pt_map(&e->pt, va, pa, blk, RW, 0), 0);
        struct snap s = snap_of(e);
        ck_assert_int_eq(mmp_pt_map(&e->pt, va + g, pa + g, g, RW, MMP_MAP_REPLACE), 0);
        assert_unchanged(e, &s, shared, what);
        if (!shared) {
            ck_assert_int_eq(mmp_pt_map(&e->pt, va + blk - 3 * g, pa + blk - 3 * g, 3 * g,
                                        RW, MMP_MAP_REPLACE),
                             0);
            /* the whole block, and the call's per-call flags */
            ck_assert_int_eq(mmp_pt_map(&e->pt, va, pa, blk, RW, MMP_MAP_REPLACE), 0);
            ck_assert_int_eq(mmp_pt_map(&e->pt, va + g, pa + g, g, RW,
                                        MMP_MAP_REPLACE | MMP_MAP_NO_CONT),
                             0);
            assert_unchanged(e, &s, shared, what);
        }
        assert_leaf(e, va, pa, blk, MMP_LEAF_BLOCK, what);
        assert_leaf(e, va + blk - g, pa + blk - g, blk, MMP_LEAF_BLOCK, what);
        ck_assert_int_eq(mmp_pt_unmap(&e->pt, va, blk), 0);
    }
}

BOTH_MODES(identical_replace_in_block, identical_in_blocks)

/* Contiguous runs (arm64): of pages, and of blocks (4K: 16 x 2 MiB). A
 * page inside either keeps its run. */
static void identical_in_runs(struct tenv *e, const struct mmp_pt_info *inf,
                              const char *name, int shared)
{
    uint64_t g = inf->granule;
    for (unsigned b = 0; b < 40; b++) {
        uint64_t run = 1ull << b;
        if (!(inf->cont_sizes >> b & 1))
            continue;
        /* the leaf size of the run: the largest leaf below it */
        uint64_t leaf = g;
        for (unsigned x = 0; x < b; x++)
            if (inf->block_sizes >> x & 1)
                leaf = 1ull << x;
        uint64_t va = 2 * run, pa = 3 * run;
        char what[96];
        snprintf(what, sizeof what, "%s%s run %#llx", name, shared ? " shared" : "",
                 (unsigned long long)run);
        /* shared: a call maps one leaf, the run folds at the last */
        for (uint64_t o = 0; o < run; o += shared ? leaf : run)
            ck_assert_int_eq(
                mmp_pt_map(&e->pt, va + o, pa + o, shared ? leaf : run, RW, 0), 0);
        assert_leaf(e, va, pa, leaf, MMP_LEAF_CONT, what);
        struct snap s = snap_of(e);
        ck_assert_int_eq(
            mmp_pt_map(&e->pt, va + leaf + g, pa + leaf + g, g, RW, MMP_MAP_REPLACE), 0);
        if (!shared)
            ck_assert_int_eq(
                mmp_pt_map(&e->pt, va + leaf, pa + leaf, leaf, RW, MMP_MAP_REPLACE), 0);
        assert_unchanged(e, &s, shared, what);
        assert_leaf(e, va + leaf + g, pa + leaf + g, leaf, MMP_LEAF_CONT, what);
        for (uint64_t o = 0; o < run; o += shared ? leaf : run)
            ck_assert_int_eq(mmp_pt_unmap(&e->pt, va + o, shared ? leaf : run), 0);
    }
}

BOTH_MODES(identical_replace_in_run, identical_in_runs)

/* A block split by a protect, or by a replace elsewhere, folds back when
 * a replace restores its one translation. */
static void restore_folds(struct tenv *e, const struct mmp_pt_info *inf, const char *name,
                          int shared)
{
    uint64_t g = inf->granule, blk = first_block(inf);
    uint64_t va = 4 * blk, pa = 7 * blk;
    char what[96];
    snprintf(what, sizeof what, "%s%s", name, shared ? " shared" : "");
    ck_assert_int_eq(mmp_pt_map(&e->pt, va, pa, blk, RW, 0), 0);
    ck_assert_int_eq(mmp_pt_protect(&e->pt, va + 5 * g, g, RO), 0);
    assert_leaf(e, va + 5 * g, pa + 5 * g, g, MMP_LEAF_PAGE, what);
    ck_assert_int_eq(mmp_pt_map(&e->pt, va + 5 * g, pa + 5 * g, g, RW, MMP_MAP_REPLACE),
                     0);
    assert_leaf(e, va, pa, blk, MMP_LEAF_BLOCK, what);
    ck_assert_int_eq(mmp_pt_map(&e->pt, va + 9 * g, pa, g, RW, MMP_MAP_REPLACE), 0);
    assert_leaf(e, va + 9 * g, pa, g, MMP_LEAF_PAGE, what);
    ck_assert_int_eq(mmp_pt_map(&e->pt, va + 9 * g, pa + 9 * g, g, RW, MMP_MAP_REPLACE),
                     0);
    assert_leaf(e, va + 9 * g, pa + 9 * g, blk, MMP_LEAF_BLOCK, what);
    ck_assert_int_eq(mmp_pt_unmap(&e->pt, va, blk), 0);
}

BOTH_MODES(replace_restoring_a_block_folds, restore_folds)

/*
 * Bits the MMU sets are not the translation asked for: over a block the
 * MMU wrote (MMP_PT_TRACK_HW: x86 D, EPT D, arm64 AP[2] cleared under DBM
 * at stage 1, S2AP[1] set at stage 2), a writable replace changes nothing
 * and keeps the written state, a read-only one is a change (the page
 * becomes read-only, the rest of the block stays writable).
 */
static void written_block(uint32_t flags)
{
    for (size_t c = 0; c < NCFG; c++) {
        struct mmp_pt_config k = pt_cfgs[c].c;
        if (!cfg_hw_ok(&k))
            continue;
        k.flags |= flags | MMP_PT_TRACK_HW;
        struct tenv *e = tenv_new(&k);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        struct hwbits h = hw_bits(&k);
        int shared = (flags & MMP_PT_SHARED) != 0;
        uint64_t g = inf.granule, blk = first_block(&inf), va = 4 * blk, pa = 7 * blk;
        char what[96];
        snprintf(what, sizeof what, "%s%s", pt_cfgs[c].name, shared ? " shared" : "");
        ck_assert_int_eq(mmp_pt_map(&e->pt, va, pa, blk, RW, 0), 0);
        hw_write(&e->pt, &h, va + 3 * g);
        uint64_t written = *desc_ptr(&e->pt, va);
        struct snap s = snap_of(e);
        ck_assert_int_eq(mmp_pt_map(&e->pt, va + g, pa + g, g, RW, MMP_MAP_REPLACE), 0);
        assert_unchanged(e, &s, shared, what);
        ck_assert_msg(*desc_ptr(&e->pt, va) == written, "%s: written block %#llx now %#llx",
                      what, (unsigned long long)written,
                      (unsigned long long)*desc_ptr(&e->pt, va));
        ck_assert_int_eq(mmp_pt_map(&e->pt, va + g, pa + g, g, RO, MMP_MAP_REPLACE), 0);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, va + g, &l), 0);
        ck_assert_msg(!(l.attrs & MMP_PROT_WRITE) && l.pa == pa + g,
                      "%s: read-only replace over a written block left attrs %#x pa %#llx",
                      what, l.attrs, (unsigned long long)l.pa);
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, va + 3 * g, &l), 0);
        ck_assert_msg(l.attrs & MMP_PROT_WRITE, "%s: the rest lost write", what);
        tenv_free(e);
    }
}

START_TEST(replace_over_written_block)
{
    written_block(0);
}
END_TEST

START_TEST(replace_over_written_block_shared)
{
    written_block(MMP_PT_SHARED);
}
END_TEST

Suite *mmp_suite_pt_replace(void)
{
    Suite *s = suite_create("pt_replace");
    MMP_ADD(s, identical_replace_in_block);
    MMP_ADD(s, identical_replace_in_block_shared);
    MMP_ADD(s, identical_replace_in_run);
    MMP_ADD(s, identical_replace_in_run_shared);
    MMP_ADD(s, replace_restoring_a_block_folds);
    MMP_ADD(s, replace_restoring_a_block_folds_shared);
    MMP_ADD(s, replace_over_written_block);
    MMP_ADD(s, replace_over_written_block_shared);
    return s;
}
