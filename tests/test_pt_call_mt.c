/* SPDX-License-Identifier: MIT */
/*
 * Per-call kinds from several threads: shared maps racing the unlinking of
 * the tables they map into, harvests beside shared faults, faults beside
 * the splits and folds of the block they hit, and shared faults beside
 * exclusive range calls and tracking passes under a reader-writer lock,
 * held to a model. Also run under TSan.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pt_call_harness.h"

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

/* ---- faults beside the splits and folds of their block ----------------- */

/*
 * The main thread unmaps the first page of a 2 MiB block and maps it back,
 * with shared calls: the unmap splits the block into a table, the map that
 * completes the table folds it into a block again. Another thread makes
 * dirty and young faults on the block's other pages, which stay mapped
 * throughout: a fault finds its page whether its walk met the block or
 * the table that replaced it, so it never answers -ENOENT (-EAGAIN, where
 * an entry on its way is locked, and it tries again).
 */
struct sf {
    struct mmp_pt pt;
    struct mem mem;
    volatile AO_t stop, failed, faults;
};

static void *sf_faulter(void *arg)
{
    struct sf *f = arg;
    unsigned seed = 5;
    while (!AO_load(&f->stop) && !AO_load(&f->failed)) {
        uint64_t va = RBASE + (1 + (unsigned)rand_r(&seed) % (BLK / PG - 1)) * PG;
        bool young = rand_r(&seed) & 1;
        unsigned tries = 0;
        int rc;
        do
            rc = young ? mmp_pt_young_fault(&f->pt, va) : mmp_pt_dirty_fault(&f->pt, va);
        while (rc == -MMP_EAGAIN && ++tries < 1000000);
        if (rc) {
            fprintf(stderr, "%s fault at %#llx -> %d\n", young ? "young" : "dirty",
                    (unsigned long long)va, rc);
            AO_store(&f->failed, 1);
        }
        AO_fetch_and_add1(&f->faults);
    }
    return NULL;
}

static void faults_beside_splits_one(enum mmp_pt_format fmt, uint32_t va_bits)
{
    static struct sf f;
    memset(&f, 0, sizeof f);
    struct mmp_pt_config c = {.format = fmt, .granule = 4096, .va_bits = va_bits,
                              .flags = MMP_PT_SHARED | MMP_PT_TRACK_HW |
                                       (fmt == MMP_PT_X86_EPT ? MMP_PT_EPT_AD : 0)};
    struct mmp_pt_ops ops = ops_of(&f.mem);
    ck_assert_int_eq(mmp_pt_init(&f.pt, &c, &ops), 0);
    struct mmp_pt_call ex = {.flags = MMP_CALL_EXCLUSIVE}, sh = {.flags = MMP_CALL_SHARED};
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_map_call(&f.pt, &ex, RBASE, RBASE + OFF, BLK, RW, 0), 0);
    ck_assert_int_eq(mmp_pt_lookup(&f.pt, RBASE + PG, &l), 0);
    ck_assert_uint_eq(l.size, BLK);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, sf_faulter, &f), 0);
    int rounds = mmp_test_slow() ? 2000 : 20000;
    unsigned splits = 0, folds = 0;
    for (int i = 0; i < rounds && !AO_load(&f.failed); i++) {
        for (int map = 0; map < 2; map++) {
            int rc;
            do
                rc = map ? mmp_pt_map_call(&f.pt, &sh, RBASE, RBASE + OFF, PG, RW, 0)
                         : mmp_pt_unmap_call(&f.pt, &sh, RBASE, PG);
            while (rc == -MMP_EAGAIN);
            ck_assert_int_eq(rc, 0);
            ck_assert_int_eq(mmp_pt_lookup(&f.pt, RBASE + PG, &l), 0);
            if (map)
                folds += l.size == BLK;
            else
                splits += l.size == PG;
        }
    }
    AO_store(&f.stop, 1);
    pthread_join(th, NULL);
    ck_assert_msg(!AO_load(&f.failed), "a fault missed its page (stderr)");
    /* the race was run: the block went and came back */
    ck_assert_uint_gt(splits, 0);
    ck_assert_uint_gt(folds, 0);
    printf("faults beside splits (%s): %u splits, %u folds, %lu faults\n",
           fmt == MMP_PT_X86_EPT ? "ept" : "arm64-s2-4k", splits, folds,
           (unsigned long)f.faults);
    mmp_pt_fini(&f.pt);
    ck_assert_uint_eq(f.mem.allocs, f.mem.frees);
}

START_TEST(faults_beside_splits)
{
    faults_beside_splits_one(MMP_PT_ARM64_S2, 40);
    faults_beside_splits_one(MMP_PT_X86_EPT, 48);
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

Suite *mmp_suite_pt_call_mt(void)
{
    Suite *s = suite_create("pt_call_mt");
    MMP_ADD(s, shared_drop_race_arm64_s2);
    MMP_ADD(s, shared_drop_race_ept);
    MMP_ADD(s, harvest_beside_shared_faults);
    MMP_ADD(s, faults_beside_splits);
    MMP_ADD(s, mixed_writers_arm64_s2);
    MMP_ADD(s, mixed_writers_ept);
    return s;
}
