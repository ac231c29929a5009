/* SPDX-License-Identifier: MIT */
/*
 * Per-call kinds and page sources (struct mmp_pt_call): exclusive calls of
 * any range on a table that also takes shared calls, shared unmaps that
 * give back the tables they empty, the memcache and its bound, the misuse
 * the library can see. The threaded ones are in test_pt_call_mt.c.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pt_call_harness.h"

static void mc_fill(struct mmp_pt_memcache *mc, struct mem *m, unsigned n, size_t g)
{
    memset(mc, 0, sizeof *mc);
    for (unsigned k = 0; k < n; k++) {
        mc->page[k].va = m_alloc(m, g, &mc->page[k].pa);
        ck_assert_ptr_nonnull(mc->page[k].va);
    }
    mc->n = n;
}

static void mc_drain(struct mmp_pt_memcache *mc, struct mem *m, size_t g)
{
    while (mc->n) {
        mc->n--;
        m_free(m, mc->page[mc->n].va, mc->page[mc->n].pa, g);
    }
}
struct fmt {
    const char *name;
    struct mmp_pt_config c;
};

static const struct fmt fmts[] = {
    {"arm64-s2-4k", {MMP_PT_ARM64_S2, 4096, 40, 0, 0, 0, 0, 0}},
    {"ept", {MMP_PT_X86_EPT, 4096, 48, 0, 0, 0, 0, 0}},
    {"npt-la57", {MMP_PT_X86_NPT, 4096, 57, 0, 0, 0, 0, 0}},
    {"arm64-s2-16k", {MMP_PT_ARM64_S2, 16384, 40, 0, 0, 0, 0, 0}},
    {"arm64-s1-64k", {MMP_PT_ARM64_S1, 65536, 48, 0, 0, 0, 0, 0}},
};
#define NFMT (sizeof fmts / sizeof fmts[0])
/* ---- what the library refuses ------------------------------------------- */

START_TEST(call_misuse)
{
    struct mem m = {0};
    struct mmp_pt_ops ops = ops_of(&m);
    struct mmp_pt_config c = fmts[0].c;
    struct mmp_pt pt, sp;
    struct mmp_pt_reason r;
    ck_assert_int_eq(mmp_pt_init(&pt, &c, &ops), 0);
    c.flags = MMP_PT_SHARED;
    ck_assert_int_eq(mmp_pt_init(&sp, &c, &ops), 0);
    uint64_t va = 1ull << 30;
    struct mmp_pt_call sh = {.flags = MMP_CALL_SHARED}, ex = {.flags = MMP_CALL_EXCLUSIVE};
    struct mmp_pt_call both = {.flags = MMP_CALL_SHARED | MMP_CALL_EXCLUSIVE};
    struct mmp_pt_call unk = {.flags = 1u << 7};

    /* a shared call on a table made without MMP_PT_SHARED */
    ck_assert_int_eq(mmp_pt_map_call(&pt, &sh, va, va, PG, RW, 0), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_reason(&pt, &r), 0);
    ck_assert_uint_eq(r.rule, MMP_PT_RULE_CALL_SHARED);
    ck_assert_int_eq(mmp_pt_unmap_call(&pt, &sh, va, PG), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_protect_call(&pt, &sh, va, PG, RO), -MMP_EINVAL);
    /* both kinds, unknown bits */
    ck_assert_int_eq(mmp_pt_map_call(&sp, &both, va, va, PG, RW, 0), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_reason(&sp, &r), 0);
    ck_assert_uint_eq(r.rule, MMP_PT_RULE_FLAGS);
    ck_assert_int_eq(mmp_pt_unmap_call(&sp, &unk, va, PG), -MMP_EINVAL);
    /* a memcache claiming more than it can hold */
    struct mmp_pt_memcache mc = {.n = MMP_PT_MEMCACHE_PAGES + 1};
    struct mmp_pt_call bad = {.mc = &mc};
    ck_assert_int_eq(mmp_pt_map_call(&sp, &bad, va, va, PG, RW, 0), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_reason(&sp, &r), 0);
    ck_assert_uint_eq(r.rule, MMP_PT_RULE_MEMCACHE);
    /* a shared call of more than one slot */
    ck_assert_int_eq(mmp_pt_unmap_call(&sp, &sh, va, 2 * PG), -MMP_ENOTSUP);
    /* a shared call inside a lazy section; exclusive ones are fine there */
    ck_assert_int_eq(mmp_lazy_enter(&sp), 0);
    ck_assert_int_eq(mmp_pt_map_call(&sp, &sh, va, va, PG, RW, 0), -MMP_EBUSY);
    ck_assert_int_eq(mmp_pt_reason(&sp, &r), 0);
    ck_assert_uint_eq(r.rule, MMP_PT_RULE_CALL_LAZY);
    ck_assert_int_eq(mmp_pt_map(&sp, va, va, PG, RW, 0), -MMP_EBUSY); /* the default: shared */
    ck_assert_int_eq(mmp_pt_map_call(&sp, &ex, va, va, 4 * PG, RW, 0), 0);
    ck_assert_int_eq(mmp_lazy_leave(&sp), 0);
    ck_assert_int_eq(mmp_pt_unmap_call(&sp, &sh, va, PG), 0);
    char why[160];
    ck_assert_int_gt(mmp_pt_why(&pt, why, sizeof why), 0);
    ck_assert_ptr_nonnull(strstr(why, "MMP_PT_SHARED"));
    mmp_pt_fini(&pt);
    mmp_pt_fini(&sp);
    ck_assert_uint_eq(m.allocs, m.frees);
}
END_TEST

/* ---- exclusive calls of any range on a table that takes shared calls ---- */

static void exclusive_ranges_one(const struct fmt *f)
{
    struct mem m = {0};
    struct mmp_pt_ops ops = ops_of(&m);
    struct mmp_pt_config c = f->c;
    c.flags |= MMP_PT_SHARED;
    struct mmp_pt pt;
    ck_assert_int_eq(mmp_pt_init(&pt, &c, &ops), 0);
    uint64_t G = c.granule, root = pages_now(&pt), base = 1ull << 32;
    uint64_t step = G * (G / 8), span = 64 * step; /* 64 last-level tables' worth */
    struct mmp_pt_call sh = {.flags = MMP_CALL_SHARED}, ex = {.flags = MMP_CALL_EXCLUSIVE};
    /* shared faults: one page in every last-level table of the span */
    for (uint64_t va = base; va < base + span; va += step)
        ck_assert_int_eq(mmp_pt_map_call(&pt, &sh, va, va + OFF, G, RW, 0), 0);
    /* the plain calls stay shared on this table: a range is refused */
    ck_assert_int_eq(mmp_pt_unmap(&pt, base, span), -MMP_ENOTSUP);
    ck_assert_int_eq(mmp_pt_protect(&pt, base, span, RO), -MMP_ENOTSUP);
    /* exclusive: protect the whole span, then map a block over a table
     * (collapse), in a lazy section that batches the flushes */
    struct mmp_pt_stats s0, s1;
    mmp_pt_stats(&pt, &s0);
    ck_assert_int_eq(mmp_lazy_enter(&pt), 0);
    ck_assert_int_eq(mmp_pt_protect_call(&pt, &ex, base, span, RO), 0);
    ck_assert_int_eq(mmp_pt_map_call(&pt, &ex, base, base + OFF, step, RO, MMP_MAP_REPLACE), 0);
    ck_assert_int_eq(mmp_lazy_leave(&pt), 0);
    mmp_pt_stats(&pt, &s1);
    ck_assert_uint_le(s1.flushes - s0.flushes, 1 + s1.bbm - s0.bbm);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(&pt, base + step / 2, &l), 0);
    ck_assert_uint_eq(l.attrs & MMP_PROT_MASK, RO);
    ck_assert_uint_eq(l.size, step); /* the block */
    ck_assert_uint_eq(l.pa, l.va + OFF);
    ck_assert_int_eq(mmp_pt_lookup(&pt, base + 5 * step, &l), 0);
    ck_assert_uint_eq(l.attrs & MMP_PROT_MASK, RO);
    /* exclusive unmap of the span: every table under it goes (retired:
     * lookups may be inside), none is left empty */
    ck_assert_int_eq(mmp_pt_unmap_call(&pt, &ex, base, span), 0);
    ck_assert_int_eq(mmp_pt_reclaim(&pt), 0);
    struct mmp_pt_usage u;
    ck_assert_int_eq(mmp_pt_usage(&pt, &u), 0);
    ck_assert_uint_eq(u.mapped_bytes, 0);
    ck_assert_uint_eq(u.empty_tables, 0);
    ck_assert_uint_eq(u.table_pages, root);
    ck_assert_uint_eq(pages_now(&pt), root);
    ck_assert_uint_eq(m.allocs - m.frees, root * G);
    mmp_pt_fini(&pt);
    ck_assert_uint_eq(m.allocs, m.frees);
}

START_TEST(exclusive_ranges_on_shared_table)
{
    for (size_t k = 0; k < NFMT; k++)
        exclusive_ranges_one(&fmts[k]);
}
END_TEST

/* ---- shared unmaps give back what they empty --------------------------- */

START_TEST(shared_unmap_gives_back_tables)
{
    for (size_t k = 0; k < NFMT; k++) {
        for (int keep = 0; keep < 2; keep++) {
            struct mem m = {0};
            struct mmp_pt_ops ops = ops_of(&m);
            struct mmp_pt_config c = fmts[k].c;
            c.flags |= MMP_PT_SHARED | (keep ? MMP_PT_KEEP_TABLES : 0);
            struct mmp_pt pt;
            ck_assert_int_eq(mmp_pt_init(&pt, &c, &ops), 0);
            uint64_t G = c.granule, root = pages_now(&pt), base = 1ull << 32;
            /* pages scattered over several tables of every level */
            for (uint64_t i = 0; i < 64; i++)
                ck_assert_int_eq(mmp_pt_map(&pt, base + i * 37 * 512 * G + i * G,
                                            base + OFF + i * 37 * 512 * G + i * G, G, RW, 0),
                                 0);
            uint64_t full = pages_now(&pt);
            for (uint64_t i = 0; i < 64; i++)
                ck_assert_int_eq(mmp_pt_unmap(&pt, base + i * 37 * 512 * G + i * G, G), 0);
            ck_assert_int_eq(mmp_pt_reclaim(&pt), 0);
            struct mmp_pt_usage u;
            ck_assert_int_eq(mmp_pt_usage(&pt, &u), 0);
            ck_assert_uint_eq(u.mapped_bytes, 0);
            if (keep) {
                ck_assert_uint_eq(u.table_pages, full);
            } else {
                ck_assert_msg(u.table_pages == root && u.empty_tables == 0,
                              "%s: %llu table pages (root %llu), %llu empty", fmts[k].name,
                              (unsigned long long)u.table_pages, (unsigned long long)root,
                              (unsigned long long)u.empty_tables);
                ck_assert_uint_eq(m.allocs - m.frees, root * G);
            }
            ck_assert_uint_eq(pages_now(&pt), u.table_pages);
            mmp_pt_fini(&pt);
            ck_assert_uint_eq(m.allocs, m.frees);
        }
    }
}
END_TEST

/* ---- the memcache and its bound ----------------------------------------- */

static void memcache_one(const struct fmt *f, bool shared)
{
    struct mem m = {0};
    struct mmp_pt_ops ops = ops_of(&m);
    struct mmp_pt_config c = f->c;
    c.flags |= shared ? MMP_PT_SHARED : 0;
    struct mmp_pt pt;
    ck_assert_int_eq(mmp_pt_init(&pt, &c, &ops), 0);
    struct mmp_pt_info in;
    ck_assert_int_eq(mmp_pt_info(&pt, &in), 0);
    uint64_t G = c.granule, bound = mmp_pt_call_pages(&pt, G), va = 3ull << 30;
    ck_assert_uint_eq(bound, in.levels - 1);
    ck_assert_uint_le(bound, MMP_PT_MEMCACHE_PAGES);
    struct mmp_pt_memcache mc;
    struct mmp_pt_call call = {.flags = shared ? MMP_CALL_SHARED : MMP_CALL_EXCLUSIVE, .mc = &mc};
    struct mmp_pt_reason r;
    /* one page short: -ENOMEM, the cache and the table as they were */
    mc_fill(&mc, &m, (unsigned)bound - 1, G);
    struct mmp_pt_memcache before = mc;
    uint64_t a0 = m.calls, t0 = pages_now(&pt);
    ck_assert_int_eq(mmp_pt_map_call(&pt, &call, va, va + OFF, G, RW, 0), -MMP_ENOMEM);
    ck_assert_int_eq(mmp_pt_reason(&pt, &r), 0);
    ck_assert_uint_eq(r.rule, MMP_PT_RULE_MEMCACHE_DRY);
    ck_assert_uint_eq(mc.n, before.n);
    for (unsigned k = 0; k < mc.n; k++) { /* the same pages (any order) */
        bool found = false;
        for (unsigned j = 0; j < before.n; j++)
            found |= mc.page[k].va == before.page[j].va && mc.page[k].pa == before.page[j].pa;
        ck_assert(found);
    }
    ck_assert_uint_eq(m.calls, a0);
    ck_assert_uint_eq(pages_now(&pt), t0);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(&pt, va, &l), -MMP_ENOENT);
    mc_drain(&mc, &m, G);
    /* a misaligned page: -EINVAL, found when taken, nothing changed */
    mc_fill(&mc, &m, (unsigned)bound, G);
    before = mc;
    uint64_t p0 = mc.page[mc.n - 1].pa;
    mc.page[mc.n - 1].pa = p0 + 8;
    ck_assert_int_eq(mmp_pt_map_call(&pt, &call, va, va + OFF, G, RW, 0), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_reason(&pt, &r), 0);
    ck_assert_uint_eq(r.rule, MMP_PT_RULE_MEMCACHE);
    ck_assert_uint_eq(r.value, p0 + 8);
    ck_assert_uint_eq(mc.n, before.n);
    ck_assert_uint_eq(pages_now(&pt), t0);
    for (unsigned k = 0; k < mc.n; k++)
        if (mc.page[k].va == before.page[before.n - 1].va)
            mc.page[k].pa = p0;
    mc_drain(&mc, &m, G);
    /* exactly the bound: the map takes every page and never alloc_table */
    mc_fill(&mc, &m, (unsigned)bound, G);
    a0 = m.calls;
    ck_assert_int_eq(mmp_pt_map_call(&pt, &call, va, va + OFF, G, RW, 0), 0);
    ck_assert_uint_eq(m.calls, a0);
    ck_assert_uint_eq(mc.n, 0);
    ck_assert_uint_eq(pages_now(&pt), t0 + bound);
    ck_assert_int_eq(mmp_pt_lookup(&pt, va, &l), 0);
    ck_assert_uint_eq(l.pa, va + OFF);
    /* a block slot over it splits on a one-page unmap: within the bound too */
    uint64_t bs = 0;
    for (unsigned b = 63; b > 0 && !bs; b--)
        if ((in.block_sizes >> b & 1) && (1ull << b) > G && (1ull << b) <= (1ull << 30))
            bs = 1ull << b;
    if (bs && !shared) {
        uint64_t bva = 64ull << 30;
        ck_assert_int_eq(mmp_pt_map(&pt, bva, bva + OFF, bs, RW, 0), 0);
        mc_fill(&mc, &m, (unsigned)bound, G);
        a0 = m.calls;
        ck_assert_int_eq(mmp_pt_unmap_call(&pt, &call, bva + bs / 2, G), 0);
        ck_assert_uint_eq(m.calls, a0);
        ck_assert_uint_lt(mc.n, bound); /* the split's tables came from it */
        ck_assert_int_eq(mmp_pt_lookup(&pt, bva + bs / 2, &l), -MMP_ENOENT);
        ck_assert_int_eq(mmp_pt_lookup(&pt, bva, &l), 0);
        mc_drain(&mc, &m, G);
    }
    mmp_pt_fini(&pt);
    ck_assert_uint_eq(m.allocs, m.frees);
}

START_TEST(memcache_single_slot)
{
    for (size_t k = 0; k < NFMT; k++) {
        memcache_one(&fmts[k], false);
        memcache_one(&fmts[k], true);
    }
}
END_TEST

/* mmp_pt_call_pages() bounds what any call takes: random maps, unmaps and
 * protects (splitting blocks at both ends) on random tables, each call's
 * allocations counted against the bound for its size. */
START_TEST(call_pages_bound_holds)
{
    unsigned seed = 7;
    int rounds = mmp_test_slow() ? 150 : 1500;
    for (size_t k = 0; k < NFMT; k++) {
        struct mem m = {0};
        struct mmp_pt_ops ops = ops_of(&m);
        struct mmp_pt pt;
        ck_assert_int_eq(mmp_pt_init(&pt, &fmts[k].c, &ops), 0);
        uint64_t G = fmts[k].c.granule, base = 1ull << 34, win = 8192 * G, most = 0;
        for (int i = 0; i < rounds; i++) {
            uint64_t n = 1 + (uint64_t)rand_r(&seed) % (rand_r(&seed) % 4 == 0 ? 4096 : 8);
            uint64_t va = base + (uint64_t)rand_r(&seed) % (win / G) * G, size = n * G;
            int op = rand_r(&seed) % 3;
            uint64_t a0 = m.calls, bound = mmp_pt_call_pages(&pt, size);
            int rc = op == 0   ? mmp_pt_map(&pt, va, va + OFF, size, RW, MMP_MAP_REPLACE)
                     : op == 1 ? mmp_pt_unmap(&pt, va, size)
                               : mmp_pt_protect(&pt, va, size, rand_r(&seed) & 1 ? RO : RW);
            ck_assert_int_eq(rc, 0);
            ck_assert_msg(m.calls - a0 <= bound, "%s: op %d of %llu pages took %llu > %llu",
                          fmts[k].name, op, (unsigned long long)n,
                          (unsigned long long)(m.calls - a0), (unsigned long long)bound);
            if (m.calls - a0 > most)
                most = m.calls - a0;
        }
        ck_assert_uint_gt(most, 0);
        ck_assert_uint_eq(mmp_pt_call_pages(&pt, 0), 0);
        mmp_pt_fini(&pt);
        ck_assert_uint_eq(m.allocs, m.frees);
    }
}
END_TEST

Suite *mmp_suite_pt_call(void)
{
    Suite *s = suite_create("pt_call");
    MMP_ADD(s, call_misuse);
    MMP_ADD(s, exclusive_ranges_on_shared_table);
    MMP_ADD(s, shared_unmap_gives_back_tables);
    MMP_ADD(s, memcache_single_slot);
    MMP_ADD(s, call_pages_bound_holds);
    return s;
}
