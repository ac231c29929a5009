/* SPDX-License-Identifier: MIT */
/*
 * Stack depth of every public page-table call (issue 17, item 5): a
 * hypervisor may run them on a small stack (KVM's nVHE hypervisor has one
 * 4 KiB page for everything), so each must stay at or under 2 KiB.
 *
 * Each call runs on a thread whose stack is a buffer painted with a
 * pattern; afterwards the lowest overwritten byte says how deep it went
 * (measured from the thread function's frame, so a few bytes of the
 * thread's own entry are included). The table's hooks are a bump
 * allocator and an empty flush: almost nothing of the hypervisor's side.
 * Table setup runs on the main thread; only the call measured runs on the
 * painted stack. The figures per format are printed (docs/pagetables.md
 * quotes them).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mmport/mmport.h>

#include "mmp_test.h"
#include "pt_harness.h"

#define BUDGET 2048
#define STK (256u << 10)
#define PAINT 0xa5
#define POOL (64u << 20)

static unsigned char *pool;
static size_t pool_used;

/* Bump allocator: pages come from one buffer, freeing is a no-op (the
 * pool is reset with each table). */
static void *s_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    (void)ctx;
    size_t at = (pool_used + bytes - 1) & ~(bytes - 1);
    if (at + bytes > POOL)
        return NULL;
    pool_used = at + bytes;
    *pa = (uint64_t)(uintptr_t)(pool + at);
    return pool + at;
}

static void s_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)ctx, (void)va, (void)pa, (void)bytes;
}

static void s_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    (void)ctx, (void)va, (void)size, (void)flags;
}

static void s_retire(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)ctx, (void)va, (void)pa, (void)bytes;
}

struct job {
    struct mmp_pt *pt;
    uint64_t blk, gran; /* block size used, granule */
    int (*fn)(struct job *);
    int rc;
    uintptr_t top;
};

#define RW (MMP_PROT_READ | MMP_PROT_WRITE)
#define B(j) ((j)->blk)                  /* the block at [B, 2B) */
#define PG(j) ((j)->blk + 5 * (j)->gran) /* a page inside it */

static int out_line(void *arg, const char *line)
{
    (void)arg, (void)line;
    return 0;
}
static int walk_cb(void *arg, const struct mmp_pt_leaf *l)
{
    (void)arg, (void)l;
    return 0;
}

static uint64_t bm[1u << 12]; /* harvest bitmap: up to 2^18 pages */

/* Harvest range: at most the bitmap's pages. */
static uint64_t hsz(const struct job *j)
{
    uint64_t n = j->blk / j->gran, max = sizeof bm * 8;
    return (n < max ? n : max) * j->gran;
}

/* The calls measured (setup, if any, has run before). */
static int c_map_block(struct job *j) { return mmp_pt_map(j->pt, B(j), B(j), B(j), RW, 0); }
static int c_map_page(struct job *j) { return mmp_pt_map(j->pt, PG(j), PG(j), j->gran, RW, 0); }
static int c_protect_page(struct job *j)
{
    return mmp_pt_protect(j->pt, PG(j), j->gran, MMP_PROT_READ);
}
static int c_unmap_page(struct job *j) { return mmp_pt_unmap(j->pt, PG(j), j->gran); }
static int c_replace_page(struct job *j)
{
    return mmp_pt_map(j->pt, PG(j), PG(j) + j->blk, j->gran, RW, MMP_MAP_REPLACE);
}
static int c_unmap_block(struct job *j) { return mmp_pt_unmap(j->pt, B(j), B(j)); }
static int c_replace_block(struct job *j)
{
    return mmp_pt_map(j->pt, B(j), B(j), B(j), RW, MMP_MAP_REPLACE);
}
static int c_protect_block(struct job *j)
{
    return mmp_pt_protect(j->pt, B(j), B(j), MMP_PROT_READ);
}
static int c_map_last_page(struct job *j)
{
    uint64_t va = 2 * B(j) - j->gran;
    return mmp_pt_map(j->pt, va, va, j->gran, RW, 0);
}
static int c_lookup(struct job *j)
{
    struct mmp_pt_leaf l;
    return mmp_pt_lookup(j->pt, PG(j), &l);
}
static int c_walk(struct job *j) { return mmp_pt_walk(j->pt, B(j), B(j), walk_cb, NULL); }
static int c_dump(struct job *j) { return mmp_pt_dump(j->pt, B(j), B(j), out_line, NULL); }
static int c_usage(struct job *j)
{
    struct mmp_pt_usage u;
    return mmp_pt_usage(j->pt, &u);
}
static int c_track_start(struct job *j) { return mmp_pt_track_start(j->pt, B(j), hsz(j), NULL); }
static int c_harvest(struct job *j)
{
    return mmp_pt_track_harvest(j->pt, B(j), hsz(j), bm, NULL);
}
static int c_young(struct job *j) { return mmp_pt_test_clear_young(j->pt, B(j), hsz(j), bm, NULL); }
static int c_dirty_fault(struct job *j) { return mmp_pt_dirty_fault(j->pt, PG(j)); }
static int c_young_fault(struct job *j) { return mmp_pt_young_fault(j->pt, PG(j)); }
static int c_track_stop(struct job *j) { return mmp_pt_track_stop(j->pt, B(j), hsz(j)); }
static int c_lazy(struct job *j)
{
    mmp_lazy_enter(j->pt);
    int rc = mmp_pt_unmap(j->pt, PG(j), j->gran);
    int rc2 = mmp_lazy_leave(j->pt);
    return rc ? rc : rc2;
}

/* Setups, on the main thread. */
enum { S_NONE, S_BLOCK, S_SPLIT, S_ALMOST, S_TRACKED, S_DIRTY };

struct call {
    const char *name;
    int setup;
    int (*fn)(struct job *);
    int shared; /* also measured on an MMP_PT_SHARED table (one leaf a call) */
};

static const struct call calls[] = {
    {"map block", S_NONE, c_map_block, 1},
    {"map page", S_NONE, c_map_page, 1},
    {"protect page in block", S_BLOCK, c_protect_page, 0},
    {"unmap page in block", S_BLOCK, c_unmap_page, 0},
    {"replace page in block", S_BLOCK, c_replace_page, 0},
    {"protect page", S_SPLIT, c_protect_page, 1},
    {"unmap page", S_SPLIT, c_unmap_page, 1},
    {"unmap split block", S_SPLIT, c_unmap_block, 0},
    {"replace split block", S_SPLIT, c_replace_block, 0},
    {"protect split block", S_SPLIT, c_protect_block, 0},
    {"map completing block", S_ALMOST, c_map_last_page, 0},
    {"lookup", S_SPLIT, c_lookup, 1},
    {"walk", S_SPLIT, c_walk, 0},
    {"dump", S_SPLIT, c_dump, 0},
    {"usage", S_SPLIT, c_usage, 0},
    {"lazy unmap page in block", S_BLOCK, c_lazy, 0},
    {"track start", S_BLOCK, c_track_start, 0},
    {"track harvest", S_DIRTY, c_harvest, 0},
    {"test clear young", S_DIRTY, c_young, 0},
    {"dirty fault", S_TRACKED, c_dirty_fault, 0},
    {"young fault", S_TRACKED, c_young_fault, 0},
    {"track stop", S_DIRTY, c_track_stop, 0},
};
#define NCALLS (sizeof calls / sizeof calls[0])

static unsigned char *stk;

static void *thr(void *arg)
{
    struct job *j = (struct job *)arg;
    volatile char mark = 0;
    j->top = (uintptr_t)&mark;
    j->rc = j->fn(j);
    return NULL;
}

/* Bytes of the painted stack the call touched. */
static size_t measure(struct job *j)
{
    memset(stk, PAINT, STK);
    pthread_attr_t a;
    pthread_t t;
    ck_assert_int_eq(pthread_attr_init(&a), 0);
    ck_assert_int_eq(pthread_attr_setstack(&a, stk, STK), 0);
    ck_assert_int_eq(pthread_create(&t, &a, thr, j), 0);
    pthread_join(t, NULL);
    pthread_attr_destroy(&a);
    size_t i = 0;
    while (i < STK && stk[i] == PAINT)
        i++;
    return j->top - (uintptr_t)&stk[i];
}

/* The largest block the table can hold at an address below its top. */
static uint64_t big_block(const struct mmp_pt *pt, uint64_t gran)
{
    struct mmp_pt_info in;
    ck_assert_int_eq(mmp_pt_info(pt, &in), 0);
    uint64_t best = gran;
    for (unsigned n = 0; n < 64; n++)
        if ((in.block_sizes >> n & 1) && n + 2 <= in.va_bits)
            best = 1ull << n;
    return best;
}

static int setup(struct job *j, int kind)
{
    int rc = 0;
    if (kind == S_NONE)
        return 0;
    if (kind == S_ALMOST) /* all but the last page: smaller leaves */
        return mmp_pt_map(j->pt, B(j), B(j), B(j) - j->gran, RW, 0);
    rc = mmp_pt_map(j->pt, B(j), B(j), B(j), RW, 0);
    if (!rc && kind == S_SPLIT)
        rc = mmp_pt_protect(j->pt, PG(j) + j->gran, j->gran, MMP_PROT_READ);
    if (!rc && kind >= S_TRACKED)
        rc = mmp_pt_track_start(j->pt, B(j), hsz(j), NULL);
    if (!rc && kind == S_DIRTY)
        rc = mmp_pt_dirty_fault(j->pt, PG(j));
    return rc;
}

/* Deepest call on one configuration; prints each figure. */
static size_t run_cfg(const char *name, const struct mmp_pt_config *base, bool shared)
{
    struct mmp_pt_config c = *base;
    struct mmp_pt_ops ops = {s_alloc, s_free, NULL, s_flush, NULL, s_retire, NULL, NULL};
    size_t worst = 0;
    const char *wname = "";
    char line[2048];
    int len = snprintf(line, sizeof line, "stack: %-16s%s", name, shared ? " shared" : "");
    if (shared)
        c.flags |= MMP_PT_SHARED;
    for (size_t k = 0; k < NCALLS; k++) {
        if (shared && !calls[k].shared)
            continue;
        struct mmp_pt pt;
        pool_used = 0;
        ck_assert_int_eq(mmp_pt_init(&pt, &c, &ops), 0);
        struct job j = {.pt = &pt, .gran = c.granule, .fn = calls[k].fn};
        j.blk = big_block(&pt, c.granule);
        if (shared && calls[k].setup == S_SPLIT) { /* one leaf a call: pages */
            int rc = mmp_pt_map(&pt, B(&j), B(&j), 64 * j.gran, RW, MMP_MAP_NO_BLOCK);
            ck_assert_int_eq(rc == -MMP_ENOTSUP ? 0 : rc, 0);
            for (uint64_t o = 0; rc && o < 64; o++)
                ck_assert_int_eq(mmp_pt_map(&pt, B(&j) + o * j.gran, B(&j) + o * j.gran,
                                            j.gran, RW, 0), 0);
        } else {
            ck_assert_msg(setup(&j, calls[k].setup) == 0, "%s: setup of '%s'", name,
                          calls[k].name);
        }
        size_t used = measure(&j);
        ck_assert_msg(j.rc == 0 || j.rc == -MMP_ENOTSUP, "%s: '%s' returned %d", name,
                      calls[k].name, j.rc);
        if (len < (int)sizeof line - 40)
            len += snprintf(line + len, sizeof line - (size_t)len, " | %s %zu", calls[k].name,
                            used);
        if (used > worst) {
            worst = used;
            wname = calls[k].name;
        }
        mmp_pt_fini(&pt);
    }
    printf("%s\nstack: %-16s%s worst %zu bytes (%s)\n", line, name, shared ? " shared" : "",
           worst, wname);
    fflush(stdout);
    ck_assert_msg(worst <= BUDGET, "%s%s: '%s' used %zu bytes of stack (budget %d)", name,
                  shared ? " shared" : "", wname, worst, BUDGET);
    return worst;
}

START_TEST(every_call_within_2k)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    MMP_SKIP("sanitizer builds inflate every frame (redzones, shadow calls): the budget is "
             "for the optimised build (native and aarch64 runs check it)");
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    MMP_SKIP("sanitizer builds inflate every frame (redzones, shadow calls): the budget is "
             "for the optimised build (native and aarch64 runs check it)");
#endif
#endif
#ifndef __OPTIMIZE__
    MMP_SKIP("an unoptimised build keeps every local in its own slot: the budget is for the "
             "optimised build");
#endif
    if (getenv("MMPORT_UNDER_VALGRIND"))
        MMP_SKIP("valgrind runs the thread on its own stack: the painted one is not used");
    pool = aligned_alloc(1u << 20, POOL); /* a concatenated root: up to 1 MiB */
    stk = aligned_alloc(1u << 16, STK);
    ck_assert_ptr_nonnull(pool);
    ck_assert_ptr_nonnull(stk);
    static const struct tcfg extra[] = {
        {"arm64-4k-52-lpa2", {MMP_PT_ARM64_S1, 4096, 52, 52, 0, 0, 0, 0}},
        {"arm64-64k-52-lpa", {MMP_PT_ARM64_S2, 65536, 52, 52, 0, 0, 0, 0}},
        {"arm64-s2-4k-trkhw", {MMP_PT_ARM64_S2, 4096, 40, 0, MMP_PT_TRACK_HW, 0, 0, 0}},
    };
    size_t worst = 0;
    for (size_t c = 0; c < NCFG + 3; c++) {
        const struct tcfg *t = c < NCFG ? &pt_cfgs[c] : &extra[c - NCFG];
        size_t w = run_cfg(t->name, &t->c, false);
        worst = w > worst ? w : worst;
        w = run_cfg(t->name, &t->c, true);
        worst = w > worst ? w : worst;
    }
    printf("stack: worst over every format and call: %zu bytes (budget %d)\n", worst, BUDGET);
    free(stk);
    free(pool);
}
END_TEST

Suite *mmp_suite_pt_stack(void)
{
    Suite *s = suite_create("pt_stack");
    MMP_ADD(s, every_call_within_2k);
    return s;
}
