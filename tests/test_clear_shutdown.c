/* SPDX-License-Identifier: MIT */
/*
 * mmp_shutdown() and the epoch state of MMP_PT_SHARED tables: the retired
 * table pages go to free_table, every thread's record is freed, shared
 * calls keep working after it, and it refuses (-EBUSY, nothing released)
 * while a thread is inside a lookup. The pool's side is in test_clear.c.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mmport/mmport.h>

#include "atomic.h"
#include "mmp_test.h"

#define PG 4096u
#define BLK (2u << 20)
#define BASE 0x40000000ull
#define PA_OFF 0x100000000ull

struct mem {
    volatile AO_t allocs, frees;
};

static void *m_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    struct mem *m = ctx;
    void *p = aligned_alloc(bytes, bytes);
    if (!p)
        return NULL;
    memset(p, 0, bytes);
    *pa = (uintptr_t)p;
    AO_fetch_and_add1(&m->allocs);
    return p;
}

static void m_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    struct mem *m = ctx;
    (void)pa, (void)bytes;
    free(va);
    AO_fetch_and_add1(&m->frees);
}

static void shared_table(struct mmp_pt *pt, struct mem *m)
{
    struct mmp_pt_config c = {.format = MMP_PT_X86_64, .granule = PG, .va_bits = 48,
                              .flags = MMP_PT_SHARED};
    struct mmp_pt_ops ops = {.alloc_table = m_alloc, .free_table = m_free, .ctx = m};
    ck_assert_int_eq(mmp_pt_init(pt, &c, &ops), 0);
}

/* Fills one 2 MiB block page by page: the last page folds it and retires the page table. */
static void fill_block(struct mmp_pt *pt)
{
    for (unsigned i = 0; i < BLK / PG; i++)
        ck_assert_int_eq(mmp_pt_map(pt, BASE + i * PG, BASE + PA_OFF + i * PG, PG,
                                    MMP_PROT_READ | MMP_PROT_WRITE, 0),
                         0);
}

#define THREADS 4

struct looker {
    struct mmp_pt *pt;
    pthread_barrier_t *all_in;
    int rc;
};

/* One lookup (the thread gets its epoch record), then held until every thread has one. */
static void *look(void *arg)
{
    struct looker *l = arg;
    struct mmp_pt_leaf leaf;
    l->rc = mmp_pt_lookup(l->pt, BASE + PG, &leaf);
    pthread_barrier_wait(l->all_in);
    return NULL;
}

static size_t heap_in_use(void)
{
    return mallinfo2().uordblks;
}

START_TEST(shutdown_frees_retired_pages_and_records)
{
    static struct mmp_pt pt;
    struct mem m = {0};
    shared_table(&pt, &m);
    fill_block(&pt);
    struct mmp_pt_usage use;
    mmp_pt_usage(&pt, &use);
    ck_assert_uint_eq(use.blocks, 1); /* folded: its page table went to the epoch scheme */
    struct mmp_pt_stats st;
    mmp_pt_stats(&pt, &st);
    uint64_t pending = AO_load(&m.allocs) - AO_load(&m.frees) - st.table_pages;
    ck_assert_uint_gt(pending, 0);

    pthread_barrier_t all_in;
    pthread_barrier_init(&all_in, NULL, THREADS);
    pthread_t t[THREADS];
    struct looker l[THREADS];
    for (int i = 0; i < THREADS; i++) {
        l[i] = (struct looker){&pt, &all_in, -1};
        ck_assert_int_eq(pthread_create(&t[i], NULL, look, &l[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(l[i].rc, 0);
    }
    pthread_barrier_destroy(&all_in);

    size_t before = heap_in_use();
    AO_t frees = AO_load(&m.frees);
    ck_assert_int_eq(mmp_shutdown(), 0);
    /* the retired page table went to free_table; the table itself is untouched */
    ck_assert_uint_eq(AO_load(&m.frees) - frees, pending);
    struct mmp_pt_leaf leaf;
    ck_assert_int_eq(mmp_pt_lookup(&pt, BASE + PG, &leaf), 0);
    ck_assert_uint_eq(leaf.pa, BASE + PA_OFF);
    /* THREADS records of 64 bytes each are gone (mallinfo2 counts 0 under sanitizers) */
    if (before)
        ck_assert_uint_ge(before - heap_in_use() + 64, THREADS * 64);
    /* shared calls still work, the lookup above registered this thread again */
    ck_assert_int_eq(mmp_pt_unmap(&pt, BASE, BLK), 0);
    fill_block(&pt);
    mmp_pt_fini(&pt);
    ck_assert_uint_eq(AO_load(&m.allocs), AO_load(&m.frees));
    ck_assert_int_eq(mmp_shutdown(), 0);
}
END_TEST

struct holder {
    volatile AO_t inside, go;
};

static int hold_in_walk(void *arg, const struct mmp_pt_leaf *leaf)
{
    struct holder *h = arg;
    (void)leaf;
    AO_store_release(&h->inside, 1);
    while (!AO_load_acquire(&h->go))
        sched_yield();
    return 1; /* stop after the first leaf */
}

struct walker {
    struct mmp_pt *pt;
    struct holder *h;
    int rc;
};

static void *walk(void *arg)
{
    struct walker *w = arg;
    w->rc = mmp_pt_walk(w->pt, BASE, BLK, hold_in_walk, w->h);
    return NULL;
}

START_TEST(shutdown_refuses_while_a_lookup_runs)
{
    static struct mmp_pt pt;
    struct mem m = {0};
    shared_table(&pt, &m);
    fill_block(&pt);
    struct mmp_pt_stats st;
    mmp_pt_stats(&pt, &st);
    uint64_t pending = AO_load(&m.allocs) - AO_load(&m.frees) - st.table_pages;
    struct holder h = {0, 0};
    struct walker w = {&pt, &h, -1};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, walk, &w), 0);
    while (!AO_load_acquire(&h.inside))
        sched_yield();
    AO_t frees = AO_load(&m.frees);
    ck_assert_int_eq(mmp_shutdown(), -MMP_EBUSY);
    ck_assert_uint_eq(AO_load(&m.frees), frees); /* nothing released */
    AO_store_release(&h.go, 1);
    pthread_join(t, NULL);
    ck_assert_int_eq(w.rc, 1);
    ck_assert_int_eq(mmp_shutdown(), 0);
    ck_assert_uint_eq(AO_load(&m.frees) - frees, pending);
    mmp_pt_fini(&pt);
    ck_assert_uint_eq(AO_load(&m.allocs), AO_load(&m.frees));
}
END_TEST

Suite *mmp_suite_clear_shutdown(void)
{
    Suite *s = suite_create("clear_shutdown");
    MMP_ADD(s, shutdown_frees_retired_pages_and_records);
    MMP_ADD(s, shutdown_refuses_while_a_lookup_runs);
    return s;
}
