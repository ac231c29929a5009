/* SPDX-License-Identifier: MIT */
/*
 * Flush ranges and their order: a covering range never wraps to size 0 nor
 * crosses the x86 hole, a range merges into a pending one before it counts
 * against flush_ranges, a lazy map over a range whose flush is pending
 * emits that flush first, no flush stands for more invalidations than the
 * ceiling, and the hints (stride, global) say what changed.
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
        e->probe_va = va; /* a full flush (the ceiling) must see it invalid too */
        e->probe_size = B;
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

/* Every ranged flush in the log stands for at most `ceiling` steps of
 * its stride (the granule where it gives none), and a stride comes with
 * MMP_FLUSH_LEAF and aligns the range. */
static void check_ceiling(const struct tenv *e, uint64_t ceiling, unsigned gshift,
                          const char *ctx)
{
    for (int i = 0; i < e->nflush && i < 512; i++) {
        const struct flush_rec *r = &e->log[i];
        unsigned s = MMP_FLUSH_STRIDE(r->flags);
        if (r->flags & MMP_FLUSH_ALL) {
            ck_assert_msg(r->va == 0 && r->size == 0 && !(r->flags & ~(MMP_FLUSH_ALL | MMP_FLUSH_GLOBAL)),
                          "%s: flush %d: MMP_FLUSH_ALL with va %#llx size %#llx flags %#x", ctx,
                          i, (unsigned long long)r->va, (unsigned long long)r->size, r->flags);
            continue;
        }
        ck_assert_msg(!s || (r->flags & MMP_FLUSH_LEAF), "%s: flush %d: stride without LEAF", ctx, i);
        ck_assert_msg(!s || !((r->va | r->size) & ((1ull << s) - 1)),
                      "%s: flush %d: [%#llx, +%#llx) not aligned to its stride 2^%u", ctx, i,
                      (unsigned long long)r->va, (unsigned long long)r->size, s);
        uint64_t steps = r->size >> (s ? s : gshift);
        ck_assert_msg(r->size && steps <= ceiling,
                      "%s: flush %d: [%#llx, +%#llx) flags %#x is %llu invalidations, ceiling %llu",
                      ctx, i, (unsigned long long)r->va, (unsigned long long)r->size, r->flags,
                      (unsigned long long)steps, (unsigned long long)ceiling);
    }
}

static unsigned log2u(uint64_t x)
{
    unsigned b = 0;
    while (x > 1) {
        x >>= 1;
        b++;
    }
    return b;
}

/* The documented defaults: 33 on the x86 formats, one table's entries on arm64. */
static uint64_t default_ceiling(const struct mmp_pt_config *c)
{
    int arm = c->format == MMP_PT_ARM64_S1 || c->format == MMP_PT_ARM64_S2;
    return arm ? c->granule / 8 : 33;
}

/* Issue #17 item 2: five one-page unmaps in one lazy section, spread over
 * the input space, used to end in one covering flush of most of it
 * (arm64 stage 2, 48-bit IPA: va 0, size 0x808000000000). No flush may
 * stand for more than the ceiling's invalidations; every page is still
 * covered. Every format, default ceiling. */
START_TEST(flush_ceiling_spread_unmaps)
{
    static const struct mmp_pt_config s2_48 = {MMP_PT_ARM64_S2, 4096, 48, 0, 0, 0, 0, 0};
    for (size_t c = 0; c <= NCFG; c++) {
        const struct mmp_pt_config *cfg = c < NCFG ? &pt_cfgs[c].c : &s2_48;
        const char *name = c < NCFG ? pt_cfgs[c].name : "arm64-s2-4k-48";
        struct tenv *e = tenv_new(cfg);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        uint64_t G = inf.granule, top = 1ull << (inf.va_bits - 1); /* lower half on x86 */
        uint64_t vas[5] = {0, top / 64, top / 4, top / 2 + 8 * G, top - G};
        for (int i = 0; i < 5; i++)
            ck_assert_int_eq(mmp_pt_map(&e->pt, vas[i], (uint64_t)(i + 1) << 24, G, RW, 0), 0);
        e->nflush = 0;
        ck_assert_int_eq(mmp_lazy_enter(&e->pt), 0);
        for (int i = 0; i < 5; i++)
            ck_assert_int_eq(mmp_pt_unmap(&e->pt, vas[i], G), 0);
        ck_assert_int_eq(mmp_lazy_leave(&e->pt), 0);
        check_ceiling(e, default_ceiling(cfg), log2u(G), name);
        for (int i = 0; i < 5; i++) {
            int ok = 0;
            for (int k = 0; k < e->nflush; k++)
                ok |= covers(&e->log[k], vas[i]);
            ck_assert_msg(ok, "%s: va %#llx never flushed", name, (unsigned long long)vas[i]);
        }
        tenv_free(e);
    }
}
END_TEST

/* One call over more pages than the ceiling (no lazy section) flushes
 * all; at the ceiling it flushes the range, with the pages' stride. A
 * configured ceiling replaces the default. */
START_TEST(flush_ceiling_one_call)
{
    for (size_t c = 0; c < NCFG; c++) {
        for (uint32_t ceil = 0; ceil <= 8; ceil += 8) {
            struct mmp_pt_config cfg = pt_cfgs[c].c;
            cfg.flush_ceiling = ceil;
            uint64_t lim = ceil ? ceil : default_ceiling(&cfg);
            struct tenv *e = tenv_new(&cfg);
            struct mmp_pt_info inf;
            mmp_pt_info(&e->pt, &inf);
            uint64_t G = inf.granule, va = 1ull << 30;
            ck_assert_int_eq(mmp_pt_map(&e->pt, va, 1ull << 31, (lim + 1) * G, RW,
                                        MMP_MAP_NO_BLOCK | MMP_MAP_NO_CONT),
                             0);
            e->nflush = 0;
            ck_assert_int_eq(mmp_pt_protect(&e->pt, va, lim * G, RO), 0);
            ck_assert_int_eq(e->nflush, 1);
            if (pt_cfg_ctx(c)) { /* whole contexts: one full flush, whatever the size */
                ck_assert_uint_ne(e->log[0].flags & MMP_FLUSH_ALL, 0);
                tenv_free(e);
                continue;
            }
            ck_assert_msg(!(e->log[0].flags & MMP_FLUSH_ALL) && e->log[0].va == va &&
                              e->log[0].size == lim * G,
                          "%s ceiling %u: a flush of %llu pages went out as %#x [%#llx, +%#llx)",
                          pt_cfgs[c].name, ceil, (unsigned long long)lim, e->log[0].flags,
                          (unsigned long long)e->log[0].va, (unsigned long long)e->log[0].size);
            ck_assert_uint_eq(MMP_FLUSH_STRIDE(e->log[0].flags), log2u(G));
            ck_assert_uint_ne(e->log[0].flags & MMP_FLUSH_LEAF, 0);
            ck_assert_int_eq(mmp_pt_protect(&e->pt, va, lim * G, RW), 0);
            e->nflush = 0;
            ck_assert_int_eq(mmp_pt_protect(&e->pt, va, (lim + 1) * G, RO), 0);
            ck_assert_int_eq(e->nflush, 1);
            ck_assert_msg(e->log[0].flags & MMP_FLUSH_ALL, "%s ceiling %u: %llu pages flushed as a range",
                          pt_cfgs[c].name, ceil, (unsigned long long)(lim + 1));
            check_ceiling(e, lim, log2u(G), pt_cfgs[c].name);
            tenv_free(e);
        }
    }
}
END_TEST

/* A block's flush counts in blocks: unmapping one block is one
 * invalidation of the block's stride, never a full flush; a split gives
 * the block's stride (and on x86, which splits first, then the page's). */
START_TEST(flush_stride_of_blocks)
{
    for (size_t c = 0; c < NCFG; c++) {
        struct tenv *e = tenv_new(&pt_cfgs[c].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        uint64_t B = first_block(&inf), G = inf.granule;
        ck_assert_int_eq(mmp_pt_map(&e->pt, 4 * B, 8 * B, 2 * B, RW, MMP_MAP_NO_CONT), 0);
        e->nflush = 0;
        ck_assert_int_eq(mmp_pt_unmap(&e->pt, 4 * B, B), 0);
        ck_assert_int_eq(e->nflush, 1);
        if (pt_cfg_ctx(c)) { /* whole contexts: one full flush */
            ck_assert_uint_ne(e->log[0].flags & MMP_FLUSH_ALL, 0);
            tenv_free(e);
            continue;
        }
        ck_assert_msg(!(e->log[0].flags & MMP_FLUSH_ALL) && e->log[0].size == B &&
                          MMP_FLUSH_STRIDE(e->log[0].flags) == log2u(B),
                      "%s: block unmap flushed [%#llx, +%#llx) flags %#x", pt_cfgs[c].name,
                      (unsigned long long)e->log[0].va, (unsigned long long)e->log[0].size,
                      e->log[0].flags);
        e->nflush = 0;
        ck_assert_int_eq(mmp_pt_protect(&e->pt, 5 * B + G, G, RO), 0);
        int block = 0, page = 0;
        for (int i = 0; i < e->nflush; i++) {
            unsigned s = MMP_FLUSH_STRIDE(e->log[i].flags);
            block |= s == log2u(B) && e->log[i].va == 5 * B;
            page |= s == log2u(G) && covers(&e->log[i], 5 * B + G);
            ck_assert_msg(s == log2u(B) || s == log2u(G), "%s: stride 2^%u", pt_cfgs[c].name, s);
        }
        /* (x86 splits first, then changes the page in the live table;
         * arm64 breaks the block and links a table already changed) */
        ck_assert_msg(block && page == pt_cfg_x86(c),
                      "%s: split flushes: block stride %d, page stride %d", pt_cfgs[c].name,
                      block, page);
        check_ceiling(e, default_ceiling(&pt_cfgs[c].c), log2u(G), pt_cfgs[c].name);
        tenv_free(e);
    }
}
END_TEST

/* Ranges of different strides merged into one range give no stride; a
 * range that was never global never says MMP_FLUSH_GLOBAL; once a global
 * leaf was mapped, every flush does (a CR3 reload would keep it). */
START_TEST(flush_hints_merge_and_global)
{
    struct mmp_pt_config cfg = pt_cfgs[0].c; /* x86-64 */
    cfg.flush_ceiling = 1024;
    struct tenv *e = tenv_new(&cfg);
    uint64_t B = 2ull << 20, G = 4096;
    ck_assert_int_eq(mmp_pt_map(&e->pt, 4 * B, 8 * B, B, RW, 0), 0);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 5 * B, 9 * B, G, RW, 0), 0);
    e->nflush = 0;
    ck_assert_int_eq(mmp_lazy_enter(&e->pt), 0);
    ck_assert_int_eq(mmp_pt_protect(&e->pt, 4 * B, B, RO), 0);
    ck_assert_int_eq(mmp_pt_protect(&e->pt, 5 * B, G, RO), 0); /* adjacent: merged */
    ck_assert_int_eq(mmp_lazy_leave(&e->pt), 0);
    ck_assert_int_eq(e->nflush, 1);
    ck_assert_uint_eq(MMP_FLUSH_STRIDE(e->log[0].flags), 0);
    ck_assert_uint_eq(e->log[0].flags & MMP_FLUSH_GLOBAL, 0);
    ck_assert_uint_ne(e->log[0].flags & MMP_FLUSH_LEAF, 0);
    ck_assert_uint_eq(e->log[0].size, B + G);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 64 * B, 64 * B, G, RW | MMP_PROT_GLOBAL, 0), 0);
    e->nflush = 0;
    ck_assert_int_eq(mmp_pt_unmap(&e->pt, 5 * B, G), 0);
    ck_assert_int_eq(e->nflush, 1);
    ck_assert_uint_ne(e->log[0].flags & MMP_FLUSH_GLOBAL, 0);
    tenv_free(e);
    /* stage 2 has no global entries */
    e = tenv_new(&pt_cfgs[8].c);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0, 0, G, RW, 0), 0);
    ck_assert_int_ne(mmp_pt_map(&e->pt, G, G, G, RW | MMP_PROT_GLOBAL, 0), 0);
    e->nflush = 0;
    ck_assert_int_eq(mmp_pt_unmap(&e->pt, 0, G), 0);
    ck_assert_int_eq(e->nflush, 1);
    ck_assert_uint_eq(e->log[0].flags & MMP_FLUSH_GLOBAL, 0);
    tenv_free(e);
}
END_TEST

/*
 * Tracking passes over a guest of 2 MiB blocks make one flush window each:
 * start splits every block and arms the pages, stop folds them back.
 * Hardware A/D: one flush for each call; software tracking: two (the
 * permission change and the size change never share one). Whole-context
 * TLBs (EPT, NPT) and ranged ones alike.
 */
START_TEST(flush_tracking_passes)
{
    static const enum mmp_pt_format fmts[] = {MMP_PT_X86_EPT, MMP_PT_X86_NPT, MMP_PT_X86_64};
    uint64_t size = mmp_test_slow() ? 1ull << 30 : 4ull << 30;
    for (size_t f = 0; f < 3; f++)
        for (int hw = 0; hw < 2; hw++) {
            struct mmp_pt_config c = {.format = fmts[f], .granule = 4096, .va_bits = 48,
                                      .max_leaf = 2u << 20};
            c.flags = (fmts[f] == MMP_PT_X86_EPT ? MMP_PT_EPT_AD : 0) | (hw ? MMP_PT_TRACK_HW : 0);
            struct mmp_pt *pt;
            ck_assert_int_eq(mmp_pt_create(&pt, &c, NULL), 0);
            uint64_t va = 1ull << 32;
            ck_assert_int_eq(mmp_pt_map(pt, va, va, size, RW, 0), 0);
            struct mmp_pt_stats a, b, d;
            mmp_pt_stats(pt, &a);
            ck_assert_int_eq(mmp_pt_track_start(pt, va, size, NULL), 0);
            mmp_pt_stats(pt, &b);
            ck_assert_int_eq(mmp_pt_track_stop(pt, va, size), 0);
            mmp_pt_stats(pt, &d);
            uint64_t want = hw ? 1 : 2;
            ck_assert_msg(b.flushes - a.flushes == want && d.flushes - b.flushes == want,
                          "format %d hw %d: start %llu flushes, stop %llu (want %llu each)",
                          fmts[f], hw, (unsigned long long)(b.flushes - a.flushes),
                          (unsigned long long)(d.flushes - b.flushes), (unsigned long long)want);
            struct mmp_pt_usage u;
            ck_assert_int_eq(mmp_pt_usage(pt, &u), 0);
            ck_assert_uint_eq(u.blocks, size >> 21); /* folded back */
            ck_assert_uint_eq(u.pages, 0);
            ck_assert_uint_eq(u.table_pages, d.table_pages);
            mmp_pt_destroy(pt);
        }
}
END_TEST

Suite *mmp_suite_pt_flush(void)
{
    Suite *s = suite_create("pt_flush");
    MMP_ADD(s, flush_whole_space_never_size0);
    MMP_ADD(s, flush_merge_before_overflow);
    MMP_ADD(s, lazy_unmap_then_map_flushes_first);
    MMP_ADD(s, flush_ceiling_spread_unmaps);
    MMP_ADD(s, flush_ceiling_one_call);
    MMP_ADD(s, flush_stride_of_blocks);
    MMP_ADD(s, flush_hints_merge_and_global);
    MMP_ADD(s, flush_tracking_passes);
    return s;
}
