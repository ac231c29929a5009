/* SPDX-License-Identifier: MIT */
/*
 * One-page calls (core/pt_fault.c) against the engine. A one-page map or
 * unmap either completes on its own or leaves the call to the engine; it
 * must then be indistinguishable from the engine doing the call: the same
 * return value, the same descriptors, the same counters (entries written,
 * barriers, flushes, break-before-make, table pages) and the same tables
 * freed.
 *
 * The engine is made to do the same work through calls the one-page path
 * does not take and whose effect is the same: a map with MMP_MAP_REPLACE
 * into an empty slot, and an unmap of the page together with the next one
 * when that one is not mapped. Table A takes the plain calls, table B those;
 * a random sequence (with fold-aligned output addresses, attribute sets
 * beyond the template cache's slots, attributes the format refuses, lazy
 * sections) runs on both, and the two are compared as it goes.
 *
 * Then corrupted tables through one-page calls: a cycle, a page linked
 * twice and freed through one link, a reserved table entry - each -EIO with
 * nothing changed, as the engine reports them.
 */
#include <pthread.h>

#include <atomic_ops.h>

#include "pt_harness.h"

/* ---- two tables, one sequence ------------------------------------------- */

struct leafrec {
    uint64_t va, pa, size, desc;
    uint32_t attrs;
    int kind;
};

struct leaves {
    struct leafrec *r;
    size_t n, cap;
};

static int collect(void *arg, const struct mmp_pt_leaf *l)
{
    struct leaves *x = (struct leaves *)arg;
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 256;
        x->r = realloc(x->r, x->cap * sizeof *x->r);
        ck_assert_ptr_nonnull(x->r);
    }
    x->r[x->n++] = (struct leafrec){l->va, l->pa, l->size, l->desc, l->attrs, l->kind};
    return 0;
}

/* A and B hold the same leaves (descriptors included), table pages and
 * counters. In a lazy section B's wider unmap ranges can merge or meet a
 * later map differently (a map over a pending flush syncs first), so
 * barriers, flushes and coalesced ranges are compared only without one. */
static void same_tables(struct tenv *a, struct tenv *b, uint64_t base, uint64_t bytes,
                        int flushes_too, const char *ctx)
{
    struct leaves la = {0}, lb = {0};
    ck_assert_int_eq(mmp_pt_walk(&a->pt, base, bytes, collect, &la), 0);
    ck_assert_int_eq(mmp_pt_walk(&b->pt, base, bytes, collect, &lb), 0);
    /* (if ... ck_abort: a passing ck_assert is a system call, check's mark
     * point, and these run in loops) */
    if (la.n != lb.n)
        ck_abort_msg("%s: %zu leaves against %zu", ctx, la.n, lb.n);
    for (size_t i = 0; i < la.n; i++)
        if (memcmp(&la.r[i], &lb.r[i], sizeof la.r[i]))
            ck_abort_msg(
                      "%s: leaf %zu: va %#llx desc %#llx size %#llx against va %#llx desc %#llx "
                      "size %#llx",
                      ctx, i, (unsigned long long)la.r[i].va, (unsigned long long)la.r[i].desc,
                      (unsigned long long)la.r[i].size, (unsigned long long)lb.r[i].va,
                      (unsigned long long)lb.r[i].desc, (unsigned long long)lb.r[i].size);
    free(la.r);
    free(lb.r);
    struct mmp_pt_stats sa, sb;
    mmp_pt_stats(&a->pt, &sa);
    mmp_pt_stats(&b->pt, &sb);
    if (!(sa.entries_written == sb.entries_written &&
          sa.barriers_deferred == sb.barriers_deferred && sa.bbm == sb.bbm &&
          sa.table_pages == sb.table_pages &&
          (!flushes_too || (sa.barriers == sb.barriers && sa.flushes == sb.flushes &&
                            sa.ranges_coalesced == sb.ranges_coalesced))))
        ck_abort_msg(
                  "%s: counters written %llu/%llu barriers %llu/%llu deferred %llu/%llu "
                  "flushes %llu/%llu coalesced %llu/%llu bbm %llu/%llu tables %llu/%llu",
                  ctx, (unsigned long long)sa.entries_written,
                  (unsigned long long)sb.entries_written, (unsigned long long)sa.barriers,
                  (unsigned long long)sb.barriers, (unsigned long long)sa.barriers_deferred,
                  (unsigned long long)sb.barriers_deferred, (unsigned long long)sa.flushes,
                  (unsigned long long)sb.flushes, (unsigned long long)sa.ranges_coalesced,
                  (unsigned long long)sb.ranges_coalesced, (unsigned long long)sa.bbm,
                  (unsigned long long)sb.bbm, (unsigned long long)sa.table_pages,
                  (unsigned long long)sb.table_pages);
    if (a->live != b->live || a->frees != b->frees)
        ck_abort_msg("%s: %ld/%ld pages live", ctx, a->live, b->live);
}

/* Attribute sets: more than the template cache holds, one every format
 * refuses (WRITE without READ). */
static const uint32_t attr_pool[] = {
    RW,
    RO,
    MMP_PROT_READ | MMP_PROT_EXEC,
    RW | MMP_MEM_NORMAL_NC,
    MMP_PROT_READ | MMP_MEM_DEVICE,
    RW | MMP_PROT_EXEC,
    MMP_PROT_WRITE,
};
#define NATTR (sizeof attr_pool / sizeof attr_pool[0])

static void differential(const struct mmp_pt_config *c0, const char *name, uint32_t extra,
                         int lazy)
{
    struct mmp_pt_config c = *c0;
    c.flags |= extra;
    struct tenv *a = tenv_new(&c), *b = tenv_new(&c);
    struct mmp_pt_info inf;
    mmp_pt_info(&a->pt, &inf);
    uint64_t G = inf.granule, blk = first_block(&inf);
    uint64_t npg = 2 * blk / G > 4096 ? 4096 : 2 * blk / G, base = 16 * blk;
    struct mpage *m = calloc(npg, sizeof *m);
    uint64_t seed = 0x243f6a8885a308d3ull ^ (uint64_t)c.format << 32 ^ c.granule ^ extra;
    int shared = (c.flags & MMP_PT_SHARED) != 0;
    long ops = mmp_test_slow() ? 400 : 3000;
    char ctx[160];
    /* the first block's pages in random order, fold-aligned: runs and the
     * block fold on the way */
    uint64_t first = blk / G < npg ? blk / G : npg;
    uint64_t *perm = malloc(first * sizeof *perm);
    for (uint64_t i = 0; i < first; i++)
        perm[i] = i;
    for (uint64_t i = first; i > 1; i--) {
        uint64_t j = rnd64(&seed) % i, x = perm[i - 1];
        perm[i - 1] = perm[j], perm[j] = x;
    }
    for (long step = 0; step < (long)first + ops; step++) {
        int in_lazy = lazy && (step / 64) % 2 == 1;
        if (lazy && step % 64 == 0 && step) {
            if (in_lazy) {
                ck_assert_int_eq(mmp_lazy_enter(&a->pt), 0);
                ck_assert_int_eq(mmp_lazy_enter(&b->pt), 0);
            } else {
                ck_assert_int_eq(mmp_lazy_leave(&a->pt), 0);
                ck_assert_int_eq(mmp_lazy_leave(&b->pt), 0);
            }
        }
        uint64_t p = step < (long)first ? perm[step] : rnd64(&seed) % npg;
        uint64_t va = base + p * G;
        uint32_t attrs = step < (long)first ? RW : attr_pool[rnd64(&seed) % NATTR];
        int unmap = step >= (long)first && rnd64(&seed) % 5 < 2;
        uint64_t pa = step < (long)first || rnd64(&seed) % 2 ? va + 8 * blk
                                                             : (rnd64(&seed) % 65536 + 1) * G;
        int ra, rb;
        snprintf(ctx, sizeof ctx, "%s%s%s%s step %ld %s page %llu pa %#llx attrs %#x", name,
                 shared ? " shared" : "", lazy ? " lazy" : "", extra ? " +flag" : "", step,
                 unmap ? "unmap" : "map", (unsigned long long)p, (unsigned long long)pa, attrs);
        if (unmap) {
            ra = mmp_pt_unmap(&a->pt, va, G);
            if (!shared && m[p].valid && p + 1 < npg && !m[p + 1].valid)
                rb = mmp_pt_unmap(&b->pt, va, 2 * G); /* the engine's */
            else
                rb = mmp_pt_unmap(&b->pt, va, G);
        } else {
            ra = mmp_pt_map(&a->pt, va, pa, G, attrs, 0);
            rb = mmp_pt_map(&b->pt, va, pa, G, attrs, m[p].valid ? 0 : MMP_MAP_REPLACE);
        }
        if (ra != rb)
            ck_abort_msg("%s: %d against %d", ctx, ra, rb);
        if (!unmap && ra == 0)
            model_set(m, p, 1, pa, G, attrs, 1);
        else if (unmap && ra == 0)
            model_set(m, p, 1, 0, G, 0, 0);
        else if (unmap || ra != (attrs == MMP_PROT_WRITE ? -MMP_EINVAL : -MMP_EEXIST))
            ck_abort_msg("%s: %d", ctx, ra);
        if (step % 61 == 0 || step + 1 == (long)first + ops) {
            same_tables(a, b, base, npg * G, !lazy, ctx);
            if (shared) /* tables a fold retired: freed after the grace period */
                mmp_pt_reclaim(&a->pt);
            check_model(a, m, base, npg, ctx);
        }
    }
    if (lazy && ((first + ops - 1) / 64) % 2 == 1) {
        ck_assert_int_eq(mmp_lazy_leave(&a->pt), 0);
        ck_assert_int_eq(mmp_lazy_leave(&b->pt), 0);
    }
    same_tables(a, b, base, npg * G, !lazy, ctx);
    free(perm);
    free(m);
    tenv_free(a);
    tenv_free(b);
}

START_TEST(one_page_calls_match_the_engine)
{
    for (size_t i = 0; i < NCFG; i++) {
        differential(&pt_cfgs[i].c, pt_cfgs[i].name, 0, 0);
        differential(&pt_cfgs[i].c, pt_cfgs[i].name, 0, 1);
    }
}
END_TEST

START_TEST(one_page_calls_match_the_engine_flags)
{
    static const uint32_t flags[] = {MMP_PT_KEEP_TABLES, MMP_PT_NO_FOLD, MMP_PT_NO_CONT,
                                     MMP_PT_NO_BLOCKS, MMP_PT_GENERIC_DEPTH};
    for (size_t i = 0; i < NCFG; i += 2)
        for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++)
            differential(&pt_cfgs[i].c, pt_cfgs[i].name, flags[f], 0);
    /* arm64 with FEAT_BBM level 2: runs are unmade in place */
    for (size_t i = 0; i < NCFG; i++)
        if (!pt_cfg_x86(i))
            differential(&pt_cfgs[i].c, pt_cfgs[i].name, MMP_PT_BBML2, 0);
}
END_TEST

START_TEST(one_page_calls_match_the_engine_shared)
{
    for (size_t i = 0; i < NCFG; i++)
        differential(&pt_cfgs[i].c, pt_cfgs[i].name, MMP_PT_SHARED, 0);
}
END_TEST

/* ---- counters and flushes of one call ------------------------------------ */

/* A one-page map into an existing table stores one entry and emits one
 * barrier; an unmap also flushes exactly its page, as a leaf of the
 * granule's stride (EPT, NPT: one full flush); in a lazy section both
 * wait for the leave. */
START_TEST(one_page_counters_and_flush)
{
    for (size_t i = 0; i < NCFG; i++) {
        struct tenv *e = tenv_new(&pt_cfgs[i].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        uint64_t G = inf.granule, va = 64 * G, pa = (1ull << 30) + G;
        struct mmp_pt_stats s0, s1;
        ck_assert_int_eq(mmp_pt_map(&e->pt, 0, pa, G, RW, 0), 0); /* the tables */
        mmp_pt_stats(&e->pt, &s0);
        int nf = e->nflush;
        ck_assert_int_eq(mmp_pt_map(&e->pt, va, pa + va, G, RW, 0), 0);
        mmp_pt_stats(&e->pt, &s1);
        ck_assert_uint_eq(s1.entries_written - s0.entries_written, 1);
        ck_assert_uint_eq(s1.barriers - s0.barriers, 1);
        ck_assert_uint_eq(s1.flushes - s0.flushes, 0);
        ck_assert_int_eq(e->nflush, nf);
        ck_assert_int_eq(mmp_pt_unmap(&e->pt, va, G), 0);
        mmp_pt_stats(&e->pt, &s0);
        ck_assert_uint_eq(s0.entries_written - s1.entries_written, 1);
        ck_assert_uint_eq(s0.barriers - s1.barriers, 1);
        ck_assert_uint_eq(s0.flushes - s1.flushes, 1);
        ck_assert_int_eq(e->nflush, nf + 1);
        if (pt_cfg_ctx(i)) { /* whole contexts only */
            ck_assert_uint_eq(e->log[nf].flags & ~MMP_FLUSH_GLOBAL, MMP_FLUSH_ALL);
        } else {
            ck_assert_uint_eq(e->log[nf].va, va);
            ck_assert_uint_eq(e->log[nf].size, G);
            ck_assert_uint_eq(e->log[nf].flags, MMP_FLUSH_LEAF | (unsigned)__builtin_ctzll(G)
                                                                     << MMP_FLUSH_STRIDE_SHIFT);
        }
        /* lazy: no barrier, no flush until the leave, then one of each */
        ck_assert_int_eq(mmp_lazy_enter(&e->pt), 0);
        for (uint64_t k = 1; k <= 8; k++)
            ck_assert_int_eq(mmp_pt_map(&e->pt, va + k * G, pa + va + k * G, G, RW, 0), 0);
        for (uint64_t k = 1; k <= 8; k++)
            ck_assert_int_eq(mmp_pt_unmap(&e->pt, va + k * G, G), 0);
        mmp_pt_stats(&e->pt, &s1);
        ck_assert_uint_eq(s1.barriers, s0.barriers);
        ck_assert_uint_eq(s1.barriers_deferred - s0.barriers_deferred, 16);
        ck_assert_int_eq(e->nflush, nf + 1);
        ck_assert_int_eq(mmp_lazy_leave(&e->pt), 0);
        mmp_pt_stats(&e->pt, &s1);
        ck_assert_uint_eq(s1.barriers - s0.barriers, 1);
        ck_assert_int_eq(e->nflush, nf + 2);
        if (pt_cfg_ctx(i)) {
            ck_assert_uint_ne(e->log[nf + 1].flags & MMP_FLUSH_ALL, 0);
        } else {
            ck_assert_uint_eq(e->log[nf + 1].va, va + G);
            ck_assert_uint_eq(e->log[nf + 1].size, 8 * G);
        }
        tenv_free(e);
    }
}
END_TEST

/* ---- corrupted tables ----------------------------------------------------- */

/* Pages are never reused, so a corrupted table may still point at a freed
 * one; each is counted. */
struct cenv {
    struct mmp_pt pt;
    void *pg[64];
    int npg, live;
};

static void *c_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    struct cenv *e = (struct cenv *)ctx;
    if (e->npg == 64)
        return NULL;
    void *p = aligned_alloc(bytes, bytes);
    if (!p)
        return NULL;
    memset(p, 0, bytes);
    e->pg[e->npg++] = p;
    e->live++;
    *pa = (uint64_t)(uintptr_t)p;
    return p;
}

static void c_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)va, (void)pa, (void)bytes;
    ((struct cenv *)ctx)->live--;
}

#define PD_SHIFT 21
#define X86_TBL 0x27ull
#define X86_ADDR 0x000ffffffffff000ull

/* The x86-64 page directory entry for va (its tables exist). */
static uint64_t *pde_of(struct cenv *e, uint64_t va)
{
    uint64_t *t = (uint64_t *)(uintptr_t)mmp_pt_root(&e->pt);
    for (unsigned sh = 39; sh > PD_SHIFT; sh -= 9)
        t = (uint64_t *)(uintptr_t)(t[(va >> sh) & 511] & X86_ADDR);
    return &t[(va >> PD_SHIFT) & 511];
}

/* One-page map and unmap of va fail with -EIO and change no byte of any
 * table page, no counter. */
static void one_page_eio(struct cenv *e, uint64_t va, const char *what)
{
    struct mmp_pt_stats s0, s1;
    unsigned char *copy = malloc((size_t)e->npg * 4096);
    for (int i = 0; i < e->npg; i++)
        memcpy(copy + i * 4096, e->pg[i], 4096);
    mmp_pt_stats(&e->pt, &s0);
    ck_assert_msg(mmp_pt_map(&e->pt, va, 0x80000000, 4096, RW, 0) == -MMP_EIO, "%s: map", what);
    ck_assert_msg(mmp_pt_unmap(&e->pt, va, 4096) == -MMP_EIO, "%s: unmap", what);
    mmp_pt_stats(&e->pt, &s1);
    ck_assert_msg(!memcmp(&s0, &s1, sizeof s0), "%s: counters changed", what);
    for (int i = 0; i < e->npg; i++)
        ck_assert_msg(!memcmp(copy + i * 4096, e->pg[i], 4096), "%s: page %d changed", what, i);
    free(copy);
}

START_TEST(one_page_corrupted_tables_are_eio)
{
    static const struct mmp_pt_config c = {MMP_PT_X86_64, 4096, 48, 0, 0, 0, 0, 0};
    struct cenv *e = calloc(1, sizeof *e);
    struct mmp_pt_ops o = {.alloc_table = c_alloc, .free_table = c_free, .ctx = e};
    ck_assert_int_eq(mmp_pt_init(&e->pt, &c, &o), 0);
    uint64_t M2 = 1ull << PD_SHIFT;
    /* page tables under PDE 0, 1 and 2, one page each */
    for (uint64_t k = 0; k < 3; k++)
        ck_assert_int_eq(mmp_pt_map(&e->pt, k * M2, 0x40000000 + k * M2, 4096, RW, 0), 0);
    uint64_t *pde0 = pde_of(e, 0), *pde1 = pde_of(e, M2), *pde2 = pde_of(e, 2 * M2);
    uint64_t keep1 = *pde1;
    uint64_t pd = (uint64_t)(uintptr_t)pde0 & ~4095ull;
    /* a cycle: PDE 1 leads back to the page directory */
    *pde1 = pd | X86_TBL;
    one_page_eio(e, M2 + 5 * 4096, "cycle to the page directory");
    *pde1 = (uint64_t)mmp_pt_root(&e->pt) | X86_TBL;
    one_page_eio(e, M2 + 5 * 4096, "cycle to the root");
    /* a reserved bit in a table entry (PS in a PML4E) */
    *pde1 = keep1;
    uint64_t *pml4e = (uint64_t *)(uintptr_t)mmp_pt_root(&e->pt);
    uint64_t keep4 = *pml4e;
    *pml4e |= 0x80;
    one_page_eio(e, M2 + 5 * 4096, "PS in a PML4E");
    *pml4e = keep4;
    /* PDE 2 links PDE 0's page table too; emptied through PDE 0, the page
     * is freed: reached through PDE 2 it is -EIO */
    uint64_t keep2 = *pde2;
    *pde2 = *pde0;
    ck_assert_int_eq(mmp_pt_unmap(&e->pt, 0, 4096), 0);
    ck_assert_uint_eq(*pde0, 0);
    one_page_eio(e, 2 * M2 + 7 * 4096, "a page table freed through its other link");
    *pde2 = keep2;
    mmp_pt_fini(&e->pt);
    ck_assert_int_eq(e->live, 0);
    for (int i = 0; i < e->npg; i++)
        free(e->pg[i]);
    free(e);
}
END_TEST

/* ---- shared tables: one-page calls from several threads at once ---------- */

/*
 * Writers fault and unmap pages of one shared table at once (the output
 * address one page off, so every call the one-page path can take goes
 * there), in four page tables, with four attribute sets (the template
 * cache filled by racing writers); a reader looks up pages mapped before
 * and never unmapped. Every call returns what the shared mode allows, the
 * reader never misses, and at the end every translation is right and the
 * table pages are what the allocator handed out.
 */
#define SW_WRITERS 3
#define SW_BASE 0x40000000ull
#define SW_PAGES 2048u
#define SW_OFF (0x100000000ull + 4096)

struct sw {
    struct mmp_pt pt;
    volatile AO_t allocs, frees, stop, bad;
    long ops;
    char why[160];
};

static const uint32_t sw_attrs[] = {RW, RO, MMP_PROT_READ | MMP_PROT_EXEC, RW | MMP_PROT_EXEC};

static void *sw_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    void *p = aligned_alloc(bytes, bytes);
    if (!p)
        return NULL;
    AO_fetch_and_add(&((struct sw *)ctx)->allocs, bytes / 4096); /* granules */
    *pa = (uint64_t)(uintptr_t)p;
    return p;
}

static void sw_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)pa, (void)bytes;
    free(va);
    AO_fetch_and_add(&((struct sw *)ctx)->frees, bytes / 4096);
}

static int sw_stable(unsigned p)
{
    return p % 64 == 0;
}

static void sw_fail(struct sw *s, const char *what, unsigned p, int rc)
{
    if (AO_compare_and_swap_full(&s->bad, 0, 1))
        snprintf(s->why, sizeof s->why, "%s page %u: %d", what, p, rc);
}

static void *sw_writer(void *arg)
{
    struct sw *s = (struct sw *)arg;
    uint64_t seed = (uint64_t)(uintptr_t)&seed ^ 0x9e3779b97f4a7c15ull;
    for (long n = 0; n < s->ops && !AO_load(&s->bad); n++) {
        unsigned p = (unsigned)(rnd64(&seed) % SW_PAGES);
        uint64_t va = SW_BASE + (uint64_t)p * 4096;
        if (!sw_stable(p) && rnd64(&seed) % 5 < 2) {
            int rc = mmp_pt_unmap(&s->pt, va, 4096);
            if (rc && rc != -MMP_EAGAIN)
                sw_fail(s, "unmap", p, rc);
        } else {
            uint32_t a = sw_stable(p) ? RW : sw_attrs[rnd64(&seed) % 4];
            int rc = mmp_pt_map(&s->pt, va, va + SW_OFF, 4096, a, 0);
            if (rc && rc != -MMP_EEXIST && rc != -MMP_EAGAIN)
                sw_fail(s, "map", p, rc);
        }
    }
    return NULL;
}

static void *sw_reader(void *arg)
{
    struct sw *s = (struct sw *)arg;
    unsigned p = 0;
    while (!AO_load(&s->stop) && !AO_load(&s->bad)) {
        struct mmp_pt_leaf l;
        uint64_t va = SW_BASE + (uint64_t)p * 4096;
        int rc = mmp_pt_lookup(&s->pt, va, &l);
        if (rc || l.pa + (va - l.va) != va + SW_OFF || l.attrs != RW)
            sw_fail(s, "lookup of a page never unmapped", p, rc);
        p = (p + 64) % SW_PAGES;
    }
    return NULL;
}

static int sw_check_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct sw *s = (struct sw *)arg;
    int known = 0;
    for (unsigned k = 0; k < 4; k++)
        known |= l->attrs == sw_attrs[k];
    if (l->pa != l->va + SW_OFF || !known || l->size != 4096)
        sw_fail(s, "final leaf", (unsigned)((l->va - SW_BASE) / 4096), (int)l->attrs);
    return 0;
}

START_TEST(one_page_shared_writers_race)
{
    static const struct mmp_pt_config cfgs[] = {{MMP_PT_ARM64_S2, 4096, 40, 0, MMP_PT_SHARED, 0, 0, 0},
                                                {MMP_PT_X86_EPT, 4096, 48, 0, MMP_PT_SHARED, 0, 0, 0}};
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        struct sw *s = calloc(1, sizeof *s);
        struct mmp_pt_ops o = {.alloc_table = sw_alloc, .free_table = sw_free, .ctx = s};
        ck_assert_int_eq(mmp_pt_init(&s->pt, &cfgs[c], &o), 0);
        s->ops = mmp_test_slow() ? 3000 : 40000;
        for (unsigned p = 0; p < SW_PAGES; p += 64)
            ck_assert_int_eq(mmp_pt_map(&s->pt, SW_BASE + p * 4096ull,
                                        SW_BASE + p * 4096ull + SW_OFF, 4096, RW, 0),
                             0);
        pthread_t w[SW_WRITERS], r;
        for (int i = 0; i < SW_WRITERS; i++)
            ck_assert_int_eq(pthread_create(&w[i], NULL, sw_writer, s), 0);
        ck_assert_int_eq(pthread_create(&r, NULL, sw_reader, s), 0);
        for (int i = 0; i < SW_WRITERS; i++)
            pthread_join(w[i], NULL);
        AO_store(&s->stop, 1);
        pthread_join(r, NULL);
        ck_assert_msg(!s->bad, "%s", s->why);
        ck_assert_int_eq(mmp_pt_walk(&s->pt, SW_BASE, SW_PAGES * 4096ull, sw_check_leaf, s), 0);
        ck_assert_msg(!s->bad, "%s", s->why);
        mmp_pt_reclaim(&s->pt);
        struct mmp_pt_usage u;
        struct mmp_pt_stats st;
        ck_assert_int_eq(mmp_pt_usage(&s->pt, &u), 0);
        mmp_pt_stats(&s->pt, &st);
        ck_assert_uint_eq(u.table_pages, st.table_pages);
        ck_assert_uint_eq(u.table_pages, AO_load(&s->allocs) - AO_load(&s->frees));
        mmp_pt_fini(&s->pt);
        ck_assert_uint_eq(AO_load(&s->allocs), AO_load(&s->frees));
        free(s);
    }
}
END_TEST

Suite *mmp_suite_pt_fault(void)
{
    Suite *s = suite_create("pt_fault");
    MMP_ADD(s, one_page_calls_match_the_engine);
    MMP_ADD(s, one_page_calls_match_the_engine_flags);
    MMP_ADD(s, one_page_calls_match_the_engine_shared);
    MMP_ADD(s, one_page_counters_and_flush);
    MMP_ADD(s, one_page_corrupted_tables_are_eio);
    MMP_ADD(s, one_page_shared_writers_race);
    return s;
}
