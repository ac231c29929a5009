/* SPDX-License-Identifier: MIT */
/*
 * Dirty tracking under concurrency: a "guest" thread writes pages - through
 * mmp_pt_dirty_fault (software tracking) or by setting the dirty state in
 * the descriptor with atomics, as the MMU does (hardware tracking) - while
 * the test thread harvests in a loop. The model: the writer counts each
 * write before making it (w[p]++ then the dirty update); after each
 * harvest the harvester reads w[p] of every page it reported (r[p]). A
 * write counted after that read made its dirty update after the harvest
 * re-armed p, so a later harvest must report p again: once the writer has
 * stopped and a last harvest ran, r[p] == w[p] for every page, or a write
 * was lost. Per harvest, sharper: a page whose write completed before the
 * harvest began (done[p], stored after the update) and is newer than its
 * last report's r[p] must be in this harvest's bitmap - so an intermediate
 * lost write is caught too, not only the last one. Reports never
 * outnumber writes. Also run under TSan.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "pt_track_harness.h"

#define NPAGES 512
/* On a loaded 2-core machine the threads would otherwise take turns by
 * scheduler slices (a handful of overlapping harvests in 10^6 writes):
 * every BATCH writes the writer waits for the next harvest, but no longer
 * than WAIT_NS (a harvester without a CPU must not stall the run: the
 * writes go on, the model does not depend on the wait). */
#define BATCH 256
#define WAIT_NS 200000

struct mt {
    struct tenv *e;
    int hw;
    struct hwbits h;
    uint64_t va0, g;
    long writes;
    long waits_cut; /* waits that ended at WAIT_NS */
    volatile AO_t w[NPAGES];
    volatile AO_t done[NPAGES]; /* w[p] of the last write whose update completed */
    volatile AO_t stop;
    volatile AO_t harvests; /* the writer waits for one every BATCH writes */
    int fault_rc;
};

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *writer(void *arg)
{
    struct mt *m = arg;
    uint64_t seed = 0x243f6a8885a308d3ull;
    AO_t seen = 0;
    for (long i = 0; i < m->writes; i++) {
        if (i % BATCH == 0) {
            double t0 = now_ns();
            while (AO_load_acquire(&m->harvests) == seen) {
                if (now_ns() - t0 > WAIT_NS) {
                    m->waits_cut++;
                    break;
                }
                sched_yield();
            }
            seen = AO_load_acquire(&m->harvests);
        }
        uint64_t p = rnd64(&seed) % NPAGES;
        AO_t c = AO_fetch_and_add1(&m->w[p]) + 1;
        if (m->hw) {
            hw_write(&m->e->pt, &m->h, m->va0 + p * m->g);
        } else {
            int rc = mmp_pt_dirty_fault(&m->e->pt, m->va0 + p * m->g);
            if (rc)
                m->fault_rc = rc;
        }
        AO_store_release(&m->done[p], c);
    }
    AO_store_release(&m->stop, 1);
    return NULL;
}

static void run_mt(const struct mmp_pt_config *k, int hw, long writes, const char *name)
{
    struct mt *m = calloc(1, sizeof *m);
    m->e = tenv_new(k);
    m->hw = hw;
    m->h = hw_bits(k);
    m->writes = writes;
    struct mmp_pt_info inf;
    mmp_pt_info(&m->e->pt, &inf);
    m->g = inf.granule;
    m->va0 = 256 * m->g;
    uint64_t sz = NPAGES * m->g;
    ck_assert_int_eq(mmp_pt_map(&m->e->pt, m->va0, 0, sz, RW, 0), 0);
    ck_assert_int_eq(mmp_pt_track_start(&m->e->pt, m->va0, sz, NULL), 0);
    uint64_t bm[NPAGES / 64], r[NPAGES] = {0}, reports = 0, harvests = 0, cnt;
    uint64_t rep[NPAGES] = {0}, busy = 0, d0[NPAGES], idle = 0;
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, writer, m), 0);
    for (int last = 0; !last;) {
        last = (int)AO_load_acquire(&m->stop);
        for (unsigned p = 0; p < NPAGES; p++)
            d0[p] = AO_load_acquire(&m->done[p]);
        /* checks that pass stay silent here: a passing ck_assert writes to
         * check's pipe, a system call per page per harvest */
        int rc = mmp_pt_track_harvest(&m->e->pt, m->va0, sz, bm, &cnt);
        if (rc)
            ck_abort_msg("%s: harvest: %d", name, rc);
        harvests++;
        AO_store_release(&m->harvests, (AO_t)harvests);
        busy += cnt > 0;
        /* harvests overlap the writes while both threads run; when the
         * writer has not run for a while, give it the CPU if it shares
         * ours (a spinning harvester stretched the run tenfold) */
        idle = cnt ? 0 : idle + 1;
        if (idle >= 64)
            sched_yield();
        for (unsigned p = 0; p < NPAGES; p++) {
            if (!(bm[p / 64] >> (p % 64) & 1)) {
                /* a write completed before this harvest began and not
                 * covered by an earlier report: this one must have it */
                if (d0[p] > r[p])
                    ck_abort_msg("%s: page %u: write %llu lost (last report saw %llu)", name, p,
                                 (unsigned long long)d0[p], (unsigned long long)r[p]);
                continue;
            }
            rep[p]++;
            reports++;
            r[p] = AO_load(&m->w[p]);
        }
    }
    pthread_join(t, NULL);
    ck_assert_int_eq(mmp_pt_track_harvest(&m->e->pt, m->va0, sz, bm, &cnt), 0);
    ck_assert_uint_eq(cnt, 0);
    ck_assert_int_eq(m->fault_rc, 0);
    long total = 0;
    for (unsigned p = 0; p < NPAGES; p++) {
        uint64_t w = AO_load(&m->w[p]);
        total += (long)w;
        ck_assert_msg(r[p] == w, "%s: page %u: %llu writes, the last report saw %llu: lost",
                      name, p, (unsigned long long)w, (unsigned long long)r[p]);
        ck_assert_msg(rep[p] <= w, "%s: page %u reported %llu times for %llu writes", name, p,
                      (unsigned long long)rep[p], (unsigned long long)w);
    }
    ck_assert_int_eq(total, writes);
    printf("  %s: %ld writes, none lost; %llu harvests (%llu with reports), %llu reports; "
           "%ld of %ld waits for a harvest cut short\n",
           name, writes, (unsigned long long)harvests, (unsigned long long)busy,
           (unsigned long long)reports, m->waits_cut, (writes + BATCH - 1) / BATCH);
    tenv_free(m->e);
    free(m);
}

/* The 10^6 writes natively; sanitizers and emulation scale down
 * (the count is printed). */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define MT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define MT_SANITIZED 1
#endif
#endif

static long n_writes(void)
{
#ifdef MT_SANITIZED
    return 100000;
#else
    return mmp_test_slow() ? 100000 : 1000000;
#endif
}

START_TEST(track_mt_fault_x86)
{
    run_mt(&pt_cfgs[0].c, 0, n_writes(), "x86-64 fault");
}
END_TEST

START_TEST(track_mt_fault_arm64_s2)
{
    run_mt(&pt_cfgs[8].c, 0, n_writes(), "arm64-s2 fault");
}
END_TEST

START_TEST(track_mt_hw_bits)
{
    /* x86 D, arm64 stage-1 DBM (AP[2] cleared by the "MMU") */
    struct mmp_pt_config x = pt_cfgs[0].c, a = pt_cfgs[2].c;
    x.flags |= MMP_PT_TRACK_HW;
    a.flags |= MMP_PT_TRACK_HW;
    run_mt(&x, 1, n_writes(), "x86-64 D bits");
    run_mt(&a, 1, n_writes(), "arm64 DBM");
}
END_TEST

Suite *mmp_suite_pt_track_mt(void)
{
    Suite *s = suite_create("pt_track_mt");
    MMP_ADD(s, track_mt_fault_x86);
    MMP_ADD(s, track_mt_fault_arm64_s2);
    MMP_ADD(s, track_mt_hw_bits);
    return s;
}
