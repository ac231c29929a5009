/* SPDX-License-Identifier: MIT */
/*
 * Per-call kinds and page sources (struct mmp_pt_call): exclusive calls of
 * any range on a table that also takes shared calls, shared unmaps that
 * give back the tables they empty, the memcache and its bound, the misuse
 * the library can see. The last tests run shared faults from several
 * threads beside exclusive range calls and tracking passes under a
 * reader-writer lock, and hold the final table to a model.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic_ops.h>
#include <mmport/mmport.h>

#include "mmp_test.h"

#define PG 4096ull
#define BLK (2ull << 20)
#define OFF 0x100000000ull /* pa = va + OFF */
#define RO MMP_PROT_READ
#define RW (MMP_PROT_READ | MMP_PROT_WRITE)
#define RBASE (5ull << 30) /* the threaded tests' region */

/* ---- table memory: counted; a freed page is scribbled on first ---------- */

struct mem {
    volatile AO_t allocs, frees; /* bytes */
    volatile AO_t calls;         /* alloc_table calls */
};

static void *m_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    struct mem *m = ctx;
    void *p = aligned_alloc(bytes, bytes);
    if (!p)
        return NULL;
    AO_fetch_and_add(&m->allocs, bytes);
    AO_fetch_and_add1(&m->calls);
    *pa = (uint64_t)(uintptr_t)p;
    return p;
}

static void m_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    struct mem *m = ctx;
    (void)pa;
    memset(va, 0xa5, bytes); /* a walk through a page freed early reads garbage */
    free(va);
    AO_fetch_and_add(&m->frees, bytes);
}

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

static struct mmp_pt_ops ops_of(struct mem *m)
{
    struct mmp_pt_ops o = {.alloc_table = m_alloc, .free_table = m_free, .ctx = m};
    return o;
}

static uint64_t pages_now(const struct mmp_pt *pt)
{
    struct mmp_pt_stats st;
    mmp_pt_stats(pt, &st);
    return st.table_pages;
}

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

/* A 4K table that takes shared calls, on m: its root's granules. */
static uint64_t shared_init(struct mmp_pt *pt, struct mem *m, enum mmp_pt_format fmt,
                            uint32_t va_bits)
{
    struct mmp_pt_config c = {.format = fmt, .granule = 4096, .va_bits = va_bits,
                              .flags = MMP_PT_SHARED};
    struct mmp_pt_ops ops = ops_of(m);
    ck_assert_int_eq(mmp_pt_init(pt, &c, &ops), 0);
    return pages_now(pt);
}

/* ---- shared maps racing the unlinking of the table they map into ------- */

/* Each thread maps and unmaps its own page, with shared calls; the pages
 * share one last-level table (two threads) or only the table above it
 * (the third), so the tables empty and go again and again while another
 * thread's map walks into them. A map that landed in a table being
 * unlinked would be lost: each thread looks its page up after every call. */
struct drop {
    struct mmp_pt pt;
    struct mem mem;
    volatile AO_t failed;
    int rounds;
};

static void *drop_thread(void *arg)
{
    struct drop *d = ((struct drop **)arg)[0];
    unsigned id = (unsigned)(uintptr_t)((void **)arg)[1];
    uint64_t va = RBASE + (id == 2 ? BLK : 0) + id * 8 * PG;
    struct mmp_pt_call call = {.flags = MMP_CALL_SHARED};
    for (int i = 0; i < d->rounds && !AO_load(&d->failed); i++) {
        for (int map = 1; map >= 0; map--) {
            int rc;
            do
                rc = map ? mmp_pt_map_call(&d->pt, &call, va, va + OFF, PG, RW, 0)
                         : mmp_pt_unmap_call(&d->pt, &call, va, PG);
            while (rc == -MMP_EAGAIN);
            struct mmp_pt_leaf l;
            int lr = mmp_pt_lookup(&d->pt, va, &l);
            if (rc || (map ? lr != 0 || l.pa != va + OFF : lr != -MMP_ENOENT)) {
                fprintf(stderr, "thread %u round %d: %s -> %d, then lookup %d\n", id, i,
                        map ? "map" : "unmap", rc, lr);
                AO_store(&d->failed, 1);
                break;
            }
        }
    }
    return NULL;
}

static void drop_race_one(enum mmp_pt_format fmt, uint32_t va_bits)
{
    static struct drop d;
    memset(&d, 0, sizeof d);
    d.rounds = mmp_test_slow() ? 3000 : 60000;
    uint64_t root = shared_init(&d.pt, &d.mem, fmt, va_bits);
    pthread_t th[3];
    void *args[3][2];
    for (unsigned t = 0; t < 3; t++) {
        args[t][0] = &d;
        args[t][1] = (void *)(uintptr_t)t;
        ck_assert_int_eq(pthread_create(&th[t], NULL, drop_thread, args[t]), 0);
    }
    for (unsigned t = 0; t < 3; t++)
        pthread_join(th[t], NULL);
    ck_assert_msg(!AO_load(&d.failed), "a shared map was lost (stderr)");
    ck_assert_int_eq(mmp_pt_reclaim(&d.pt), 0);
    ck_assert_uint_eq(pages_now(&d.pt), root);
    ck_assert_uint_eq(d.mem.allocs - d.mem.frees, root * PG);
    mmp_pt_fini(&d.pt);
    ck_assert_uint_eq(d.mem.allocs, d.mem.frees);
}

START_TEST(shared_drop_race_arm64_s2)
{
    drop_race_one(MMP_PT_ARM64_S2, 40);
}
END_TEST

START_TEST(shared_drop_race_ept)
{
    drop_race_one(MMP_PT_X86_EPT, 48);
}
END_TEST

/* ---- harvests beside shared faults ---------------------------------------- */

/*
 * Two threads make dirty faults on their tracked pages (the guest's first
 * writes), change their software bits with shared protects (a compare-and-
 * swap on the very entries a harvest re-arms), and map and unmap pages of
 * a scratch region whose tables appear and go again, all as shared calls,
 * while a third harvests the whole area again and again beside them. A
 * write is never lost: every page is reported by a harvest that ended
 * after its last write (the final one, once the writers stopped, included).
 */
#define HT 2
#define HPG 1024                 /* tracked pages: 4 MiB */
#define HSCR (16ull << 20)       /* scratch region after them: 8 tables' worth */

struct hv {
    struct mmp_pt pt;
    struct mem mem;
    volatile AO_t clock, stop, failed, faults, harvests;
    volatile AO_t wt[HPG];       /* clock before the last write of the page */
    AO_t rep[HPG];               /* clock after the last harvest reporting it */
    int sw;                      /* software tracking (no protects then) */
};

static void *hv_writer(void *arg)
{
    struct hv *h = ((struct hv **)arg)[0];
    unsigned id = (unsigned)(uintptr_t)((void **)arg)[1], seed = 7 + id;
    struct mmp_pt_call sh = {.flags = MMP_CALL_SHARED};
    for (long i = 0; !AO_load(&h->stop) && !AO_load(&h->failed); i++) {
        unsigned p = ((unsigned)rand_r(&seed) % (HPG / HT)) * HT + id;
        uint64_t va = RBASE + p * PG;
        int op = rand_r(&seed) % 4, rc;
        if (op == 0 && !h->sw) {
            do
                rc = mmp_pt_protect_call(&h->pt, &sh, va, PG,
                                         RW | MMP_SW_SET | (rand_r(&seed) & 1 ? MMP_SW(1) : 0));
            while (rc == -MMP_EAGAIN);
        } else if (op == 1) {
            /* one page per thread and table: the tables empty and go often */
            uint64_t q = RBASE + HPG * PG + (uint64_t)(rand_r(&seed) % 8) * (2ull << 20) + id * PG;
            struct mmp_pt_leaf l;
            bool mapped = mmp_pt_lookup(&h->pt, q, &l) == 0; /* only this thread changes q */
            do
                rc = mapped ? mmp_pt_unmap_call(&h->pt, &sh, q, PG)
                            : mmp_pt_map_call(&h->pt, &sh, q, q + OFF, PG, RW, 0);
            while (rc == -MMP_EAGAIN);
        } else {
            /* the write's time: before the fault (a harvest running beside
             * may take its D before the fault returns) */
            AO_t ts = AO_fetch_and_add1(&h->clock) + 1;
            do
                rc = mmp_pt_dirty_fault(&h->pt, va);
            while (rc == -MMP_EAGAIN);
            if (rc == 0) {
                AO_store(&h->wt[p], ts);
                AO_fetch_and_add1(&h->faults);
            }
        }
        if (rc) {
            fprintf(stderr, "writer %u: op %d page %u -> %d\n", id, op, p, rc);
            AO_store(&h->failed, 1);
        }
        if (i % 64 == 63)
            sched_yield();
    }
    return NULL;
}

static void hv_harvest(struct hv *h)
{
    /* (the scratch region too: the walk meets its tables as they go) */
    static uint64_t bm[(HPG + HSCR / PG) / 64];
    int rc = mmp_pt_track_harvest(&h->pt, RBASE, HPG * PG + HSCR, bm, NULL);
    AO_t now = AO_fetch_and_add1(&h->clock) + 1;
    if (rc) {
        fprintf(stderr, "harvest -> %d\n", rc);
        AO_store(&h->failed, 1);
    }
    for (unsigned p = 0; p < HPG; p++)
        if (bm[p / 64] >> (p % 64) & 1)
            h->rep[p] = now;
    AO_fetch_and_add1(&h->harvests);
}

static void harvest_beside_one(const struct mmp_pt_config *cfg, int sw)
{
    static struct hv h;
    memset(&h, 0, sizeof h);
    h.sw = sw;
    struct mmp_pt_config c = *cfg;
    c.flags |= MMP_PT_SHARED | (sw ? 0 : MMP_PT_TRACK_HW) |
               (c.format == MMP_PT_X86_EPT ? MMP_PT_EPT_AD : 0);
    struct mmp_pt_ops ops = ops_of(&h.mem);
    ck_assert_int_eq(mmp_pt_init(&h.pt, &c, &ops), 0);
    struct mmp_pt_call ex = {.flags = MMP_CALL_EXCLUSIVE};
    ck_assert_int_eq(mmp_pt_map_call(&h.pt, &ex, RBASE, RBASE + OFF, HPG * PG, RW, MMP_MAP_NO_CONT), 0);
    ck_assert_int_eq(mmp_pt_track_start(&h.pt, RBASE, HPG * PG, NULL), 0);
    hv_harvest(&h); /* clean */
    pthread_t th[HT];
    void *args[HT][2];
    for (unsigned t = 0; t < HT; t++) {
        args[t][0] = &h;
        args[t][1] = (void *)(uintptr_t)t;
        ck_assert_int_eq(pthread_create(&th[t], NULL, hv_writer, args[t]), 0);
    }
    /* beside the writers (no lock keeps them out) until they made enough
     * dirty faults: they always progress */
    AO_t want = mmp_test_slow() ? 3000 : 40000;
    while (AO_load(&h.faults) < want && !AO_load(&h.failed))
        hv_harvest(&h);
    AO_store(&h.stop, 1);
    for (unsigned t = 0; t < HT; t++)
        pthread_join(th[t], NULL);
    ck_assert_msg(!AO_load(&h.failed), "a call failed (stderr)");
    hv_harvest(&h); /* the writers stopped: the rest */
    unsigned lost = 0, first = 0;
    for (unsigned p = 0; p < HPG; p++)
        if (AO_load(&h.wt[p]) && h.rep[p] <= AO_load(&h.wt[p]) && !lost++)
            first = p;
    ck_assert_msg(!lost, "%u pages written and not reported after it (first: page %u)", lost,
                  first);
    ck_assert_uint_gt(AO_load(&h.faults), 0);
    printf("harvest beside shared faults (%s, %s): %lu dirty faults, %lu harvests\n",
           c.format == MMP_PT_X86_EPT ? "ept" : "arm64-s2-4k", sw ? "software" : "hardware",
           (unsigned long)h.faults, (unsigned long)h.harvests);
    mmp_pt_fini(&h.pt);
    ck_assert_uint_eq(h.mem.allocs, h.mem.frees);
}

START_TEST(harvest_beside_shared_faults)
{
    static const struct mmp_pt_config cfgs[] = {
        {MMP_PT_X86_EPT, 4096, 48, 0, 0, 0, 0, 0},
        {MMP_PT_ARM64_S2, 4096, 40, 0, 0, 0, 0, 0},
    };
    for (size_t k = 0; k < 2; k++)
        for (int sw = 0; sw < 2; sw++)
            harvest_beside_one(&cfgs[k], sw);
}
END_TEST

/* ---- shared faults beside exclusive range calls, under a rwlock -------- */

#define NT 3                   /* shared writers */
#define NPG 2048               /* pages of the region (8 MiB of 4K pages) */

struct mix {
    struct mmp_pt pt;
    struct mem mem;
    pthread_rwlock_t lock;
    uint8_t model[NPG]; /* 0 unmapped, else the attrs (pa = va + OFF) */
    volatile AO_t failed, eagain, ops, xops, stop;
    int rounds; /* exclusive calls; the shared writers run until they end */
    bool tracking;
};

static void model_check(struct mix *x, const char *who)
{
    for (unsigned p = 0; p < NPG; p++) {
        struct mmp_pt_leaf l;
        uint64_t va = RBASE + p * PG;
        int rc = mmp_pt_lookup(&x->pt, va, &l);
        bool ok = x->model[p] ? rc == 0 && l.pa + (va - l.va) == va + OFF &&
                                    (l.attrs & MMP_PROT_MASK) == x->model[p]
                              : rc == -MMP_ENOENT;
        if (!ok) {
            fprintf(stderr, "%s: page %u: model %u, lookup %d pa %#llx attrs %#x\n", who, p,
                    x->model[p], rc, (unsigned long long)(l.pa + (va - l.va)), l.attrs);
            AO_store(&x->failed, 1);
            return;
        }
    }
}

static void *shared_writer(void *arg)
{
    struct mix *x = ((struct mix **)arg)[0];
    unsigned id = (unsigned)(uintptr_t)((void **)arg)[1], seed = 100 + id;
    struct mmp_pt_call call = {.flags = MMP_CALL_SHARED};
    /* until the exclusive thread is done (a bound in case it starves) */
    for (long i = 0; !AO_load(&x->stop) && !AO_load(&x->failed) && i < 400l * x->rounds; i++) {
        if (i % 64 == 63)
            sched_yield(); /* let the exclusive thread's turn come */
        /* page p is this thread's when p % NT == id: neighbours are others' */
        unsigned p = ((unsigned)rand_r(&seed) % (NPG / NT)) * NT + id;
        uint64_t va = RBASE + p * PG;
        int op = rand_r(&seed) % 8, rc;
        uint8_t attrs = rand_r(&seed) & 1 ? RO : RW;
        pthread_rwlock_rdlock(&x->lock);
        unsigned tries = 0;
        do {
            if (op < 4)
                rc = x->model[p] ? mmp_pt_unmap_call(&x->pt, &call, va, PG)
                                 : mmp_pt_map_call(&x->pt, &call, va, va + OFF, PG, attrs, 0);
            else if (op < 6)
                rc = mmp_pt_protect_call(&x->pt, &call, va, PG, attrs);
            else if (op < 7)
                rc = mmp_pt_dirty_fault(&x->pt, va);
            else
                rc = mmp_pt_map_call(&x->pt, &call, va, va + OFF, PG, attrs, MMP_MAP_REPLACE);
            if (rc == -MMP_EAGAIN)
                AO_fetch_and_add1(&x->eagain);
        } while (rc == -MMP_EAGAIN && ++tries < 100000);
        bool ok;
        if (op < 4) {
            ok = rc == 0;
            if (ok)
                x->model[p] = x->model[p] ? 0 : attrs;
        } else if (op < 6) {
            ok = rc == 0;
            if (x->model[p])
                x->model[p] = attrs;
        } else if (op < 7) {
            ok = x->model[p] == 0 ? rc == -MMP_ENOENT
                 : x->model[p] == RO ? rc == -MMP_EACCES
                                     : rc == 0;
        } else {
            ok = rc == 0;
            x->model[p] = attrs;
        }
        if (!ok) {
            fprintf(stderr, "writer %u: op %d on page %u (model %u) -> %d\n", id, op, p,
                    x->model[p], rc);
            AO_store(&x->failed, 1);
        }
        AO_fetch_and_add1(&x->ops);
        pthread_rwlock_unlock(&x->lock);
    }
    return NULL;
}

/* Exclusive calls under the write lock: ranges over every writer's pages,
 * lazy sections, tracking passes; the model is checked at each. */
static void *exclusive_writer(void *arg)
{
    struct mix *x = arg;
    unsigned seed = 99;
    struct mmp_pt_call call = {.flags = MMP_CALL_EXCLUSIVE};
    static uint64_t bm[NPG / 64];
    for (int i = 0; i < x->rounds && !AO_load(&x->failed); i++) {
        unsigned lo = (unsigned)rand_r(&seed) % NPG;
        unsigned n = 1 + (unsigned)rand_r(&seed) % (rand_r(&seed) & 1 ? 16 : NPG - lo);
        if (lo + n > NPG)
            n = NPG - lo;
        uint64_t va = RBASE + lo * PG, size = n * PG;
        uint8_t attrs = rand_r(&seed) & 1 ? RO : RW;
        int op = rand_r(&seed) % 6, rc = 0;
        pthread_rwlock_wrlock(&x->lock);
        bool lazy = rand_r(&seed) & 1;
        if (lazy)
            ck_assert_int_eq(mmp_lazy_enter(&x->pt), 0);
        switch (op) {
        case 0:
            rc = mmp_pt_unmap_call(&x->pt, &call, va, size);
            memset(&x->model[lo], 0, n);
            break;
        case 1:
            rc = mmp_pt_protect_call(&x->pt, &call, va, size, attrs);
            for (unsigned p = lo; p < lo + n; p++)
                x->model[p] = x->model[p] ? attrs : 0;
            break;
        case 2:
            rc = mmp_pt_map_call(&x->pt, &call, va, va + OFF, size, attrs, MMP_MAP_REPLACE);
            memset(&x->model[lo], attrs, n);
            break;
        case 3:
            rc = mmp_pt_track_start(&x->pt, RBASE, NPG * PG, NULL);
            x->tracking = true;
            break;
        case 4:
            rc = mmp_pt_track_harvest(&x->pt, RBASE, NPG * PG, bm, NULL);
            break;
        default:
            rc = mmp_pt_track_stop(&x->pt, RBASE, NPG * PG);
            x->tracking = false;
            break;
        }
        if (lazy)
            ck_assert_int_eq(mmp_lazy_leave(&x->pt), 0);
        if (rc) {
            fprintf(stderr, "exclusive op %d [%u, +%u) -> %d\n", op, lo, n, rc);
            AO_store(&x->failed, 1);
        }
        if (i % 8 == 0)
            model_check(x, "exclusive");
        AO_fetch_and_add1(&x->xops);
        pthread_rwlock_unlock(&x->lock);
    }
    AO_store(&x->stop, 1);
    return NULL;
}

static void mixed_one(enum mmp_pt_format fmt, uint32_t va_bits)
{
    static struct mix x; /* the model: 2 KiB, and no stack of its own */
    memset(&x, 0, sizeof x);
    /* writer-preferring: the exclusive calls get in between shared ones */
    pthread_rwlockattr_t la;
    pthread_rwlockattr_init(&la);
    pthread_rwlockattr_setkind_np(&la, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&x.lock, &la);
    pthread_rwlockattr_destroy(&la);
    x.rounds = mmp_test_slow() ? 100 : 750;
    uint64_t root = shared_init(&x.pt, &x.mem, fmt, va_bits);
    pthread_t th[NT + 1];
    void *args[NT][2];
    for (unsigned t = 0; t < NT; t++) {
        args[t][0] = &x;
        args[t][1] = (void *)(uintptr_t)t;
        ck_assert_int_eq(pthread_create(&th[t], NULL, shared_writer, args[t]), 0);
    }
    ck_assert_int_eq(pthread_create(&th[NT], NULL, exclusive_writer, &x), 0);
    for (unsigned t = 0; t <= NT; t++)
        pthread_join(th[t], NULL);
    ck_assert_msg(!AO_load(&x.failed), "a call disagreed with the model (stderr)");
    model_check(&x, "final");
    ck_assert(!AO_load(&x.failed));
    /* every page the model holds, and nothing else; then no table leaked
     * and none freed early (a freed page is scribbled on: the walks above
     * would have met it) */
    struct mmp_pt_usage u;
    ck_assert_int_eq(mmp_pt_reclaim(&x.pt), 0);
    ck_assert_int_eq(mmp_pt_usage(&x.pt, &u), 0);
    ck_assert_uint_eq(u.table_pages, pages_now(&x.pt));
    ck_assert_uint_eq(x.mem.allocs - x.mem.frees, u.table_pages * PG);
    uint64_t mapped = 0;
    for (unsigned p = 0; p < NPG; p++)
        mapped += x.model[p] != 0;
    ck_assert_uint_eq(u.mapped_bytes, mapped * PG);
    ck_assert_int_eq(mmp_pt_unmap_call(&x.pt, &(struct mmp_pt_call){.flags = MMP_CALL_EXCLUSIVE},
                                       RBASE, NPG * PG),
                     0);
    ck_assert_int_eq(mmp_pt_reclaim(&x.pt), 0);
    ck_assert_uint_eq(pages_now(&x.pt), root);
    ck_assert_uint_eq(x.mem.allocs - x.mem.frees, root * PG);
    printf("mixed %s: %lu shared calls (%lu -EAGAIN retries) around %lu exclusive ones\n",
           fmt == MMP_PT_X86_EPT ? "ept" : "arm64-s2-4k", (unsigned long)x.ops,
           (unsigned long)x.eagain, (unsigned long)x.xops);
    mmp_pt_fini(&x.pt);
    ck_assert_uint_eq(x.mem.allocs, x.mem.frees);
    pthread_rwlock_destroy(&x.lock);
}

START_TEST(mixed_writers_arm64_s2)
{
    mixed_one(MMP_PT_ARM64_S2, 40);
}
END_TEST

START_TEST(mixed_writers_ept)
{
    mixed_one(MMP_PT_X86_EPT, 48);
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
    MMP_ADD(s, shared_drop_race_arm64_s2);
    MMP_ADD(s, shared_drop_race_ept);
    MMP_ADD(s, harvest_beside_shared_faults);
    MMP_ADD(s, mixed_writers_arm64_s2);
    MMP_ADD(s, mixed_writers_ept);
    return s;
}
