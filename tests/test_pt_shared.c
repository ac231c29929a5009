/* SPDX-License-Identifier: MIT */
/*
 * Shared update mode (MMP_PT_SHARED): many writers fault pages into one
 * stage-2 table (arm64 stage 2, 4K, and Intel EPT) while readers look up
 * addresses that stay mapped the whole time.
 *
 * The guest range is 16 blocks of 2 MiB (one arm64 contiguous run of
 * blocks):
 *  - blocks 0-3, the fault region: every writer maps random pages and
 *    blocks of it (identity + PA_OFF, read-write; collisions are the
 *    point). Nothing there is ever unmapped, so at the end a page is mapped
 *    exactly when some map that covered it succeeded or said -EEXIST.
 *    Completed tables fold into blocks, completed runs get the bit.
 *  - blocks 4-15, three per writer: each writer alone protects, unmaps,
 *    remaps (also elsewhere, REPLACE) and restores pages of its blocks
 *    (splitting them; a restored block folds back), keeping an exact model.
 *    Page 0 of every block is never touched.
 * Readers check the pre-mapped pages of the fault region and page 0 of
 * every owned block: always mapped, to the right address, read-write,
 * through every split, fold and run change around them.
 * At the end the table equals the model page by page, and its table pages
 * are what was allocated minus what was freed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mmport/mmport.h>

#include "mmp_test.h"
#include "pt_int.h"

#define BLK (2ull << 20)
#define PG 4096ull
#define NBLK 16
#define FBLK 4 /* fault region: blocks [0, FBLK) */
#define WRITERS 4
#define READERS 2
#define BASE 0x40000000ull      /* IPA of block 0 (32 MiB aligned) */
#define PA_OFF 0x100000000ull   /* pa = ipa + PA_OFF ... */
#define ALT_OFF 0x140000000ull  /* ... or, remapped elsewhere, ipa + ALT_OFF */
#define RW (MMP_PROT_READ | MMP_PROT_WRITE)
#define RO MMP_PROT_READ
#define PAGES (NBLK * BLK / PG)
#define PPB (BLK / PG)

/* ---- table memory: counted, optionally failing, retired pages kept ---- */

struct mem {
    volatile AO_t allocs, frees; /* granules */
    unsigned fail_one_in; /* 0: never */
    bool own_retire;      /* retire_table hook (else the built-in epochs) */
    pthread_mutex_t lock;
    void **kept;
    size_t nkept, cap;
};

static _Thread_local unsigned seed_tl;
static _Thread_local long fail_in = -1; /* this thread's allocation #fail_in fails */
static _Thread_local long my_allocs, my_frees;

static void *m_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    struct mem *m = ctx;
    if (fail_in >= 0 && fail_in-- == 0)
        return NULL;
    if (m->fail_one_in && (unsigned)rand_r(&seed_tl) % m->fail_one_in == 0)
        return NULL;
    void *p = aligned_alloc(bytes, bytes);
    if (!p)
        return NULL;
    AO_fetch_and_add(&m->allocs, bytes / PG); /* in granules, as table_pages */
    my_allocs++;
    *pa = (uint64_t)(uintptr_t)p;
    return p;
}

static void m_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    struct mem *m = ctx;
    (void)pa;
    free(va);
    AO_fetch_and_add(&m->frees, bytes / PG);
    my_frees++;
}

/* The caller's RCU stand-in: keep every retired page until the end. */
static void m_retire(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    struct mem *m = ctx;
    (void)pa, (void)bytes;
    pthread_mutex_lock(&m->lock);
    if (m->nkept == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->kept = realloc(m->kept, m->cap * sizeof *m->kept);
    }
    ck_assert_uint_eq(bytes, PG);
    m->kept[m->nkept++] = va;
    pthread_mutex_unlock(&m->lock);
}

static void m_release_kept(struct mem *m)
{
    for (size_t i = 0; i < m->nkept; i++)
        m_free(m, m->kept[i], 0, PG);
    free(m->kept);
    m->kept = NULL;
    m->nkept = m->cap = 0;
}

/* ---- shared state ------------------------------------------------------- */

struct st {
    struct mmp_pt pt;
    struct mem mem;
    volatile AO_t stop, failed, reads, started;
    volatile AO_t faulted[PAGES]; /* fault region: a map covering it succeeded */
    volatile AO_t n_ok, n_eexist, n_eagain, n_enomem;
    unsigned ops;
    char error[256];
    /* owned blocks' models, written by their owner only */
    struct page_model {
        uint8_t mapped, alt, ro;
    } model[PAGES];
};

static void report(struct st *s, const char *fmt, unsigned long long a, long long b)
{
    if (AO_compare_and_swap_full(&s->failed, 0, 1))
        snprintf(s->error, sizeof s->error, fmt, a, b);
}

static bool stable(uint64_t page)
{
    return page / PPB < FBLK ? page % 16 == 7 : page % PPB == 0;
}

/* ---- readers ------------------------------------------------------------ */

static void *reader(void *arg)
{
    struct st *s = arg;
    unsigned seed = (unsigned)(uintptr_t)&seed;
    AO_fetch_and_add1(&s->started);
    while (!AO_load_acquire(&s->stop) && !AO_load(&s->failed)) {
        uint64_t page;
        do
            page = (unsigned)rand_r(&seed) % PAGES;
        while (!stable(page));
        uint64_t va = BASE + page * PG;
        struct mmp_pt_leaf l;
        int rc = mmp_pt_lookup(&s->pt, va, &l);
        if (rc) {
            report(s, "stable page %#llx not mapped (%lld)", va, rc);
            break;
        }
        if (l.pa + (va - l.va) != va + PA_OFF || (l.attrs & RW) != RW)
            report(s, "stable page %#llx maps to %#llx", va, (long long)(l.pa + (va - l.va)));
        AO_fetch_and_add1(&s->reads);
    }
    return NULL;
}

/* ---- writers ------------------------------------------------------------ */

static void count(struct st *s, int rc)
{
    if (rc == 0)
        AO_fetch_and_add1(&s->n_ok);
    else if (rc == -MMP_EEXIST)
        AO_fetch_and_add1(&s->n_eexist);
    else if (rc == -MMP_EAGAIN)
        AO_fetch_and_add1(&s->n_eagain);
    else if (rc == -MMP_ENOMEM)
        AO_fetch_and_add1(&s->n_enomem);
}

/* A fault in the fault region: one page, or (1 in 16) its whole block. */
static void fault(struct st *s, unsigned *seed)
{
    uint64_t page = (unsigned)rand_r(seed) % (FBLK * PPB), n = 1;
    if ((rand_r(seed) & 15) == 0)
        page &= ~(PPB - 1), n = PPB;
    uint64_t va = BASE + page * PG;
    int rc = mmp_pt_map(&s->pt, va, va + PA_OFF, n * PG, RW, 0);
    count(s, rc);
    if (rc == 0 || rc == -MMP_EEXIST) {
        if (rc == 0 || n == 1) /* -EEXIST for a block: some page was mapped */
            for (uint64_t k = 0; k < n; k++)
                AO_store(&s->faulted[page + k], 1);
    } else if (rc != -MMP_EAGAIN && rc != -MMP_ENOMEM) {
        report(s, "fault map of %#llx: %lld", va, rc);
    }
}

/* The owner's operation on one of its pages; returns the rc to expect. */
static int owned_op(struct st *s, uint64_t page, unsigned what, bool *retry)
{
    struct page_model *m = &s->model[page];
    uint64_t va = BASE + page * PG;
    int rc, want = 0;
    struct page_model nm = *m;
    switch (what) {
    case 0: /* protect RO / RW */
        rc = mmp_pt_protect(&s->pt, va, PG, m->ro ? RW : RO);
        if (m->mapped)
            nm.ro = !m->ro;
        break;
    case 1:
        rc = mmp_pt_unmap(&s->pt, va, PG);
        nm.mapped = 0;
        break;
    case 2: /* a fault: -EEXIST when mapped */
        rc = mmp_pt_map(&s->pt, va, va + PA_OFF, PG, RW, 0);
        if (m->mapped)
            want = -MMP_EEXIST;
        else
            nm = (struct page_model){1, 0, 0};
        break;
    case 3: /* remap elsewhere */
        rc = mmp_pt_map(&s->pt, va, va + ALT_OFF, PG, RW, MMP_MAP_REPLACE);
        nm = (struct page_model){1, 1, 0};
        break;
    default: /* restore */
        rc = mmp_pt_map(&s->pt, va, va + PA_OFF, PG, RW, MMP_MAP_REPLACE);
        nm = (struct page_model){1, 0, 0};
        break;
    }
    count(s, rc);
    *retry = rc == -MMP_EAGAIN || rc == -MMP_ENOMEM;
    if (*retry)
        return 0; /* nothing changed: the model stays */
    if (rc != want)
        report(s, "owned op on %#llx: %lld", va, rc * 100 - (long long)what);
    *m = nm;
    return rc;
}

static void owned(struct st *s, unsigned w, unsigned *seed)
{
    uint64_t blk = FBLK + w * 3 + (unsigned)rand_r(seed) % 3;
    bool retry;
    if ((unsigned)rand_r(seed) % 64 == 0) {
        /* Restore the whole block: the last page folds it back. */
        for (uint64_t p = 1; p < PPB; p++) {
            struct page_model *m = &s->model[blk * PPB + p];
            if (m->mapped && !m->alt && !m->ro)
                continue;
            do
                owned_op(s, blk * PPB + p, 4, &retry);
            while (retry && !AO_load(&s->failed));
        }
        return;
    }
    uint64_t page = blk * PPB + 1 + (unsigned)rand_r(seed) % (PPB - 1);
    unsigned what = (unsigned)rand_r(seed) % 5;
    do
        owned_op(s, page, what, &retry);
    while (retry && !AO_load(&s->failed) && (sched_yield(), 1));
}

struct warg {
    struct st *s;
    unsigned w;
};

static void *writer(void *arg)
{
    struct warg *a = arg;
    struct st *s = a->s;
    unsigned seed = 977u * (a->w + 1);
    seed_tl = seed ^ 0x5555;
    for (unsigned i = 0; i < s->ops && !AO_load(&s->failed); i++) {
        if (rand_r(&seed) & 1)
            fault(s, &seed);
        else
            owned(s, a->w, &seed);
    }
    return NULL;
}

/* ---- the run ------------------------------------------------------------ */

static unsigned ops_per_writer(void)
{
#ifdef __SANITIZE_THREAD__
    return 3000;
#else
    return mmp_test_slow() ? 3000 : 30000;
#endif
}

static void check_final(struct st *s)
{
    for (uint64_t page = 0; page < PAGES; page++) {
        uint64_t va = BASE + page * PG;
        struct mmp_pt_leaf l;
        int rc = mmp_pt_lookup(&s->pt, va, &l);
        bool want;
        uint64_t pa = va + PA_OFF;
        uint32_t at = RW;
        if (page / PPB < FBLK) {
            want = AO_load(&s->faulted[page]) != 0;
        } else {
            struct page_model *m = &s->model[page];
            want = m->mapped;
            pa = va + (m->alt ? ALT_OFF : PA_OFF);
            at = m->ro ? RO : RW;
        }
        ck_assert_msg((rc == 0) == want, "page %#llx: lookup %d, model %d",
                      (unsigned long long)va, rc, want);
        if (!want)
            continue;
        ck_assert_msg(l.pa + (va - l.va) == pa && (l.attrs & (RW | MMP_PROT_EXEC)) == at,
                      "page %#llx maps %#llx attrs %#x, model %#llx %#x",
                      (unsigned long long)va, (unsigned long long)(l.pa + (va - l.va)),
                      l.attrs, (unsigned long long)pa, at);
    }
}

static void run(enum mmp_pt_format f, uint32_t va_bits, bool own_retire, unsigned fail_one_in)
{
    static struct st s;
    memset(&s, 0, sizeof s);
    s.mem.lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    s.mem.own_retire = own_retire;
    s.ops = ops_per_writer();
    struct mmp_pt_config c = {.format = f, .granule = 4096, .va_bits = va_bits,
                              .flags = MMP_PT_SHARED};
    struct mmp_pt_ops ops = {.alloc_table = m_alloc, .free_table = m_free,
                             .retire_table = own_retire ? m_retire : NULL, .ctx = &s.mem};
    ck_assert_int_eq(mmp_pt_init(&s.pt, &c, &ops), 0);
    /* Multi-page calls are not shared-mode calls. */
    ck_assert_int_eq(mmp_pt_map(&s.pt, BASE, BASE + PA_OFF, 2 * PG, RW, 0), -MMP_ENOTSUP);
    /* The stable pages, and the owned blocks as blocks. */
    for (uint64_t page = 0; page < FBLK * PPB; page++)
        if (stable(page)) {
            uint64_t va = BASE + page * PG;
            ck_assert_int_eq(mmp_pt_map(&s.pt, va, va + PA_OFF, PG, RW, 0), 0);
            s.faulted[page] = 1;
        }
    for (uint64_t b = FBLK; b < NBLK; b++) {
        uint64_t va = BASE + b * BLK;
        ck_assert_int_eq(mmp_pt_map(&s.pt, va, va + PA_OFF, BLK, RW, 0), 0);
        for (uint64_t p = 0; p < PPB; p++)
            s.model[b * PPB + p] = (struct page_model){1, 0, 0};
    }
    s.mem.fail_one_in = fail_one_in;

    pthread_t r[READERS], w[WRITERS];
    struct warg wa[WRITERS];
    for (int i = 0; i < READERS; i++)
        ck_assert_int_eq(pthread_create(&r[i], NULL, reader, &s), 0);
    for (unsigned i = 0; i < WRITERS; i++) {
        wa[i] = (struct warg){&s, i};
        ck_assert_int_eq(pthread_create(&w[i], NULL, writer, &wa[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i], NULL);
    AO_store_release(&s.stop, 1);
    for (int i = 0; i < READERS; i++)
        pthread_join(r[i], NULL);
    ck_assert_msg(!s.failed, "%s", s.error);
    s.mem.fail_one_in = 0;
    check_final(&s);

    struct mmp_pt_stats st;
    struct mmp_pt_usage u;
    ck_assert_int_eq(mmp_pt_reclaim(&s.pt), 0);
    mmp_pt_stats(&s.pt, &st);
    ck_assert_int_eq(mmp_pt_usage(&s.pt, &u), 0);
    ck_assert_uint_eq(u.table_pages, st.table_pages);
    ck_assert_uint_eq(st.table_pages + s.mem.nkept, s.mem.allocs - s.mem.frees);
    printf("shared %s%s%s: %u writers x %u ops: %lu ok, %lu eexist, %lu eagain, %lu enomem; "
           "%lu reads; %llu table pages, %zu retired, bbm %llu\n",
           f == MMP_PT_X86_EPT ? "ept" : "arm64-s2-4k", own_retire ? " (retire hook)" : "",
           fail_one_in ? " (failing allocations)" : "", WRITERS, s.ops, (unsigned long)s.n_ok,
           (unsigned long)s.n_eexist, (unsigned long)s.n_eagain, (unsigned long)s.n_enomem,
           (unsigned long)s.reads, (unsigned long long)st.table_pages, s.mem.nkept,
           (unsigned long long)st.bbm);
    mmp_pt_fini(&s.pt);
    m_release_kept(&s.mem);
    ck_assert_uint_eq(s.mem.allocs, s.mem.frees);
}

START_TEST(shared_stress_arm64_s2)
{
    run(MMP_PT_ARM64_S2, 40, false, 0);
}
END_TEST

START_TEST(shared_stress_ept)
{
    run(MMP_PT_X86_EPT, 48, true, 0);
}
END_TEST

START_TEST(shared_stress_failing_allocations_arm64_s2)
{
    run(MMP_PT_ARM64_S2, 40, true, 7);
}
END_TEST

START_TEST(shared_stress_failing_allocations_ept)
{
    run(MMP_PT_X86_EPT, 48, false, 7);
}
END_TEST

/* ---- allocation failure at each point, with concurrent writers ---------- */

struct leaves {
    struct mmp_pt_leaf l[64];
    unsigned n;
};

static int collect(void *arg, const struct mmp_pt_leaf *l)
{
    struct leaves *v = arg;
    if (v->n < 64)
        v->l[v->n] = *l;
    v->n++;
    return 0;
}

/* Field by field: a copied struct's padding is not part of the leaf. */
static bool leaves_equal(const struct leaves *a, const struct leaves *b)
{
    if (a->n != b->n)
        return false;
    for (unsigned i = 0; i < a->n && i < 64; i++) {
        const struct mmp_pt_leaf *x = &a->l[i], *y = &b->l[i];
        if (x->va != y->va || x->pa != y->pa || x->size != y->size || x->attrs != y->attrs ||
            x->level != y->level || x->kind != y->kind || x->desc != y->desc)
            return false;
    }
    return true;
}

static void snapshot(struct mmp_pt *pt, uint64_t va, uint64_t size, struct leaves *v)
{
    memset(v, 0, sizeof *v);
    ck_assert_int_eq(mmp_pt_walk(pt, va, size, collect, v), 0);
}

static void *background(void *arg)
{
    struct st *s = arg;
    unsigned seed = (unsigned)(uintptr_t)&seed;
    while (!AO_load_acquire(&s->stop))
        fault(s, &seed);
    return NULL;
}

/* Each scenario is run with this thread's allocation #k failing for
 * k = 0, 1, ... until it succeeds: every failure must leave its range as
 * it was and give back every page it took. */
static void enomem_each_point(enum mmp_pt_format f, uint32_t va_bits, uint64_t far)
{
    static struct st s;
    memset(&s, 0, sizeof s);
    struct mmp_pt_config c = {.format = f, .granule = 4096, .va_bits = va_bits,
                              .flags = MMP_PT_SHARED};
    struct mmp_pt_ops ops = {.alloc_table = m_alloc, .free_table = m_free, .ctx = &s.mem};
    ck_assert_int_eq(mmp_pt_init(&s.pt, &c, &ops), 0);
    uint64_t blk = BASE + 8 * BLK;
    ck_assert_int_eq(mmp_pt_map(&s.pt, blk, blk + PA_OFF, BLK, RW, 0), 0);
    pthread_t bg[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&bg[i], NULL, background, &s), 0);
    struct {
        int kind; /* 0 map, 1 protect, 2 unmap, 3 map replace */
        uint64_t va;
        long allocs; /* allocations it needs */
    } sc[] = {
        {0, far, (long)(c.format == MMP_PT_X86_EPT ? 3 : 2)}, /* new tables down to the page */
        {1, blk + 5 * PG, 1},                                   /* split the block */
        {2, blk + 9 * PG, 0},                                   /* in the split table now */
        {3, blk + 4 * BLK / 2 + 0, 0},
    };
    sc[3].va = blk + 7 * PG;
    for (unsigned i = 0; i < sizeof sc / sizeof sc[0]; i++) {
        struct leaves before, after;
        uint64_t lo = sc[i].va & ~(BLK - 1);
        for (long k = 0;; k++) {
            snapshot(&s.pt, lo, BLK, &before);
            long a0 = my_allocs, f0 = my_frees;
            fail_in = k;
            int rc;
            switch (sc[i].kind) {
            case 0: rc = mmp_pt_map(&s.pt, sc[i].va, sc[i].va + PA_OFF, PG, RW, 0); break;
            case 1: rc = mmp_pt_protect(&s.pt, sc[i].va, PG, RO); break;
            case 2: rc = mmp_pt_unmap(&s.pt, sc[i].va, PG); break;
            default:
                rc = mmp_pt_map(&s.pt, sc[i].va, sc[i].va + ALT_OFF, PG, RW, MMP_MAP_REPLACE);
                break;
            }
            fail_in = -1;
            if (rc == 0) {
                ck_assert_int_eq(k, sc[i].allocs);
                break;
            }
            ck_assert_int_eq(rc, -MMP_ENOMEM);
            ck_assert_int_lt(k, sc[i].allocs);
            ck_assert_int_eq(my_allocs - a0, my_frees - f0); /* nothing kept */
            snapshot(&s.pt, lo, BLK, &after);
            ck_assert_uint_eq(before.n, after.n);
            ck_assert(leaves_equal(&before, &after));
        }
    }
    AO_store_release(&s.stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(bg[i], NULL);
    struct mmp_pt_usage u;
    ck_assert_int_eq(mmp_pt_usage(&s.pt, &u), 0);
    ck_assert_uint_eq(u.empty_tables, 0);
    mmp_pt_fini(&s.pt);
    ck_assert_uint_eq(s.mem.allocs, s.mem.frees);
}

START_TEST(shared_enomem_each_point_arm64_s2)
{
    enomem_each_point(MMP_PT_ARM64_S2, 40, 0x8000000000ull - 0x40000000ull);
}
END_TEST

START_TEST(shared_enomem_each_point_ept)
{
    enomem_each_point(MMP_PT_X86_EPT, 48, 0x7f8000000000ull);
}
END_TEST

/* ---- a locked entry ----------------------------------------------------- */

/* The entry translating va at depth d (the table is the test's own). */
static uint64_t *entry_at(struct mmp_pt *p, uint64_t va, unsigned depth)
{
    struct pt *pt = pt_of(p);
    uint64_t *t = pt->root;
    for (unsigned d = 0;; d++) {
        uint64_t *e = &t[pt_idx(&pt->g, d, va)];
        if (d == depth)
            return e;
        t = pt_child(pt, pt_ld(e));
    }
}

struct waiter {
    struct mmp_pt *pt;
    uint64_t va;
    volatile AO_t done;
    int rc;
    struct mmp_pt_leaf l;
};

static void *lookup_thread(void *arg)
{
    struct waiter *w = arg;
    w->rc = mmp_pt_lookup(w->pt, w->va, &w->l);
    AO_store_release(&w->done, 1);
    return NULL;
}

/* A writer meeting a locked entry gets -EAGAIN and changes nothing; a
 * lookup waits for the entry's release and then sees the new value. */
static void locked_entry(enum mmp_pt_format f, uint32_t va_bits)
{
    struct mmp_pt_config c = {.format = f, .granule = 4096, .va_bits = va_bits,
                              .flags = MMP_PT_SHARED};
    struct mmp_pt *p;
    ck_assert_int_eq(mmp_pt_create(&p, &c, NULL), 0);
    uint64_t va = BASE;
    ck_assert_int_eq(mmp_pt_map(p, va, va + PA_OFF, BLK, RW, 0), 0);
    struct pt *pt = pt_of(p);
    unsigned d = pt->g.nlev - 2; /* the 2 MiB block */
    uint64_t *e = entry_at(p, va, d), old = pt_ld(e);
    pt_st(e, pt_lockval(&pt->g, old));
    ck_assert_int_eq(mmp_pt_protect(p, va + PG, PG, RO), -MMP_EAGAIN);
    ck_assert_int_eq(mmp_pt_unmap(p, va, BLK), -MMP_EAGAIN);
    ck_assert_int_eq(mmp_pt_map(p, va + 3 * PG, va + ALT_OFF, PG, RW, MMP_MAP_REPLACE),
                     -MMP_EAGAIN);
    ck_assert_int_eq(mmp_pt_map(p, va + BLK, va + BLK + PA_OFF, BLK, RW, 0), 0);
    ck_assert_uint_eq(pt_ld(e), pt_lockval(&pt->g, old)); /* untouched */
    struct waiter w = {.pt = p, .va = va + 5 * PG};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, lookup_thread, &w), 0);
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    ck_assert_uint_eq(AO_load_acquire(&w.done), 0); /* still waiting */
    pt_st_release(e, old);
    pthread_join(th, NULL);
    ck_assert_int_eq(w.rc, 0);
    ck_assert_uint_eq(w.l.pa + (w.va - w.l.va), w.va + PA_OFF);
    ck_assert_int_eq(mmp_pt_protect(p, va + PG, PG, RO), 0);
    mmp_pt_destroy(p);
}

START_TEST(shared_locked_entry_arm64_s2)
{
    locked_entry(MMP_PT_ARM64_S2, 40);
}
END_TEST

START_TEST(shared_locked_entry_ept)
{
    locked_entry(MMP_PT_X86_EPT, 48);
}
END_TEST

/* ---- a commit that meets a changed tree --------------------------------- */

/* While a map walks (inside its table allocation) another writer unlinks
 * the table its path went through (a shared unmap of the last page under
 * it empties it): the map's publication meets that table's frozen entry,
 * returns -EAGAIN with nothing changed and gives its new table back; the
 * retry maps. Nothing leaks. */
static struct mmp_pt *hook_pt;
static uint64_t hook_unmap_va, hook_unmap_size;
static int hook_rc = 1;

static void *hook_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    if (hook_pt) {
        struct mmp_pt *p = hook_pt;
        hook_pt = NULL;
        hook_rc = mmp_pt_unmap(p, hook_unmap_va, hook_unmap_size);
    }
    return m_alloc(ctx, bytes, pa);
}

START_TEST(shared_commit_meets_changed_tree)
{
    static struct mem mem;
    memset(&mem, 0, sizeof mem);
    struct mmp_pt_config c = {.format = MMP_PT_ARM64_S2, .granule = 4096, .va_bits = 40,
                              .flags = MMP_PT_SHARED};
    struct mmp_pt_ops ops = {.alloc_table = hook_alloc, .free_table = m_free, .ctx = &mem};
    struct mmp_pt pt;
    ck_assert_int_eq(mmp_pt_init(&pt, &c, &ops), 0);
    uint64_t gb = 1ull << 30, x = 3 * gb + 5 * BLK, y = 3 * gb + 9 * BLK;
    struct mmp_pt_usage u;
    struct mmp_pt_stats st;
    ck_assert_int_eq(mmp_pt_usage(&pt, &u), 0);
    uint64_t root = u.table_pages; /* granules: a concatenated root has more */
    ck_assert_int_eq(mmp_pt_map(&pt, x, x + PA_OFF, PG, RW, 0), 0);
    ck_assert_int_eq(mmp_pt_unmap(&pt, x, PG), 0); /* both tables under it go */
    ck_assert_int_eq(mmp_pt_reclaim(&pt), 0);
    mmp_pt_stats(&pt, &st);
    ck_assert_int_eq(mmp_pt_usage(&pt, &u), 0);
    ck_assert_uint_eq(u.table_pages, root);
    ck_assert_uint_eq(st.table_pages, root);
    ck_assert_uint_eq(mem.allocs - mem.frees, root);
    ck_assert_int_eq(mmp_pt_map(&pt, x, x + PA_OFF, PG, RW, 0), 0);
    hook_pt = &pt; /* y's walk passes the 1 GiB slot's table, then allocates */
    hook_unmap_va = x;
    hook_unmap_size = PG;
    ck_assert_int_eq(mmp_pt_map(&pt, y, y + PA_OFF, PG, RW, 0), -MMP_EAGAIN);
    ck_assert_int_eq(hook_rc, 0);
    ck_assert_int_eq(mmp_pt_reclaim(&pt), 0);
    mmp_pt_stats(&pt, &st);
    ck_assert_int_eq(mmp_pt_usage(&pt, &u), 0);
    ck_assert_uint_eq(u.empty_tables, 0);
    ck_assert_uint_eq(u.table_pages, st.table_pages);
    ck_assert_uint_eq(u.mapped_bytes, 0);
    ck_assert_uint_eq(st.table_pages, mem.allocs - mem.frees);
    ck_assert_int_eq(mmp_pt_map(&pt, y, y + PA_OFF, PG, RW, 0), 0);
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(&pt, y, &l), 0);
    ck_assert_uint_eq(l.pa, y + PA_OFF);
    ck_assert_int_eq(mmp_pt_reclaim(&pt), 0);
    mmp_pt_stats(&pt, &st);
    ck_assert_int_eq(mmp_pt_usage(&pt, &u), 0);
    ck_assert_uint_eq(u.table_pages, st.table_pages);
    ck_assert_uint_eq(st.table_pages, mem.allocs - mem.frees);
    mmp_pt_fini(&pt);
    ck_assert_uint_eq(mem.allocs, mem.frees);
}
END_TEST

/* A shared map that completes a contiguous run folds it, wherever the run
 * sits in its table: every run of one last-level table (the second one,
 * at index 16, used to be compared against the wrong entry and left
 * unfolded). */
START_TEST(shared_fold_every_run)
{
    struct mmp_pt_config c = {MMP_PT_ARM64_S2, 4096, 40, 0, MMP_PT_SHARED, 0, 0, 0};
    struct mmp_pt *p;
    ck_assert_int_eq(mmp_pt_create(&p, &c, NULL), 0);
    uint64_t va = 1ull << 30, G = 4096;
    for (uint64_t k = 0; k < 64; k++)
        ck_assert_int_eq(mmp_pt_map(p, va + k * G, va + k * G, G, MMP_PROT_READ, 0), 0);
    for (uint64_t r = 0; r < 4; r++) {
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(p, va + r * 16 * G, &l), 0);
        ck_assert_msg(l.kind == MMP_LEAF_CONT, "run %llu (slots %llu..%llu) not folded",
                      (unsigned long long)r, (unsigned long long)r * 16,
                      (unsigned long long)r * 16 + 15);
    }
    mmp_pt_destroy(p);
}
END_TEST

Suite *mmp_suite_pt_shared(void)
{
    Suite *s = suite_create("pt_shared");
    MMP_ADD(s, shared_locked_entry_arm64_s2);
    MMP_ADD(s, shared_locked_entry_ept);
    MMP_ADD(s, shared_commit_meets_changed_tree);
    MMP_ADD(s, shared_fold_every_run);
    MMP_ADD(s, shared_enomem_each_point_arm64_s2);
    MMP_ADD(s, shared_enomem_each_point_ept);
    MMP_ADD(s, shared_stress_arm64_s2);
    MMP_ADD(s, shared_stress_ept);
    MMP_ADD(s, shared_stress_failing_allocations_arm64_s2);
    MMP_ADD(s, shared_stress_failing_allocations_ept);
    return s;
}
