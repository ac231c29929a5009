/* SPDX-License-Identifier: MIT */
/*
 * No outage outside the changed range: while one writer protects (and
 * replaces) single pages inside fresh 1 GiB and 2 MiB leaves, readers look
 * up every other page of the same leaf and must never find it unmapped or
 * with other attributes. The TLB-flush hook takes a while (as a hypervisor's
 * invalidation does), so a break of the whole leaf would be seen.
 *
 * The formats that allow a size-only change in one store: x86-64, EPT and
 * NPT (Intel SDM vol. 3A 4.10.2.3), and arm64 with FEAT_BBM level 2
 * (MMP_PT_BBML2, Arm ARM D8.16 "Support levels for changing block size"),
 * blocks in contiguous runs included. arm64 without it breaks the block
 * being split (and a contiguous run of blocks holding it): there the
 * readers check only the other blocks.
 *
 * Table pages freed while readers run are quarantined until they stop.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <mmport/mmport.h>

#include "atomic.h"
#include "mmp_test.h"

#define RW (MMP_PROT_READ | MMP_PROT_WRITE)
#define RO MMP_PROT_READ
#define READERS 2
#define PA0 (64ull << 30)

struct outage {
    struct mmp_pt pt;
    uint64_t base, leaf;      /* the region being changed: [base, base + leaf) */
    volatile AO_t cur;        /* region index the readers check (writer bumps it) */
    volatile AO_t changed;    /* the page being changed now (readers skip it) */
    volatile AO_t stop;
    volatile AO_t reads, bad;
    bool whole_leaf_breaks;   /* arm64: readers check only outside the leaf */
};

static void *o_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    (void)ctx;
    void *p = aligned_alloc(bytes, bytes);
    *pa = (uint64_t)(uintptr_t)p;
    return p;
}

/* Freed table pages wait until the readers have stopped (the caller's
 * side of the contract: reuse deferred while walkers may be inside). */
static void *o_freed[4096];
static volatile AO_t o_nfreed;

static void o_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)ctx;
    (void)pa;
    (void)bytes;
    AO_t i = AO_fetch_and_add1(&o_nfreed);
    if (i < sizeof o_freed / sizeof o_freed[0])
        o_freed[i] = va;
    else
        ck_abort_msg("outage: quarantine full");
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A flush that takes a while: the window a break would leave open. It
 * spins 20 us and yields once: yields alone cost a time slice each on a
 * loaded machine, minutes over the suite. */
static void o_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    (void)ctx;
    (void)va;
    (void)size;
    (void)flags;
    uint64_t until = now_ns() + 20000;
    while (now_ns() < until)
        ;
    sched_yield();
}

static void *o_reader(void *arg)
{
    struct outage *o = arg;
    unsigned seed = (unsigned)(uintptr_t)&seed;
    while (!AO_load_acquire(&o->stop)) {
        AO_t r = AO_load_acquire(&o->cur);
        uint64_t lo = o->base + r * o->leaf;
        uint64_t pages = o->leaf / 4096;
        uint64_t va = lo + (uint64_t)(rand_r(&seed) % pages) * 4096;
        if (o->whole_leaf_breaks) /* the previous region: split and settled */
            va = r ? va - o->leaf : o->base + o->leaf * 1000;
        uint64_t ch = AO_load_acquire(&o->changed);
        if (va == ch)
            continue;
        struct mmp_pt_leaf l;
        int rc = mmp_pt_lookup(&o->pt, va, &l);
        /* Only a region still current counts (the writer moves on). */
        if (AO_load_acquire(&o->cur) != r || AO_load_acquire(&o->changed) != ch)
            continue;
        if (o->whole_leaf_breaks && !r)
            continue;
        AO_fetch_and_add1(&o->reads);
        uint64_t want = PA0 + (va - o->base);
        if (rc || l.pa + (va - l.va) != want || l.attrs != RW) {
            if (!AO_fetch_and_add1(&o->bad))
                printf("outage: first bad read: va %#llx rc %d pa %#llx attrs %#x (want %#llx)\n",
                       (unsigned long long)va, rc, (unsigned long long)(l.pa + (va - l.va)),
                       rc ? 0 : l.attrs, (unsigned long long)want);
        }
    }
    return NULL;
}

static void run_outage(const struct mmp_pt_config *cfg, uint64_t leaf, bool whole_breaks,
                       unsigned regions)
{
    static struct outage o;
    struct mmp_pt_ops ops = {.alloc_table = o_alloc, .free_table = o_free, .phys_to_virt = NULL, .tlb_flush = o_flush, .ctx = NULL};
    o = (struct outage){.base = 1ull << 39, .leaf = leaf, .whole_leaf_breaks = whole_breaks};
    ck_assert_int_eq(mmp_pt_init(&o.pt, cfg, &ops), 0);
    o.changed = (AO_t)-1;
    /* Every region mapped up front, as one leaf each. */
    for (unsigned r = 0; r < regions; r++)
        ck_assert_int_eq(mmp_pt_map(&o.pt, o.base + r * leaf, PA0 + r * leaf, leaf, RW, 0), 0);
    pthread_t th[READERS];
    for (int i = 0; i < READERS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, o_reader, &o), 0);
    unsigned seed = 7;
    for (unsigned r = 0; r < regions; r++) {
        AO_store_release(&o.cur, r);
        uint64_t lo = o.base + r * leaf;
        for (int k = 0; k < 8; k++) {
            uint64_t va = lo + (uint64_t)(rand_r(&seed) % (leaf / 4096)) * 4096;
            AO_store_release(&o.changed, va);
            ck_assert_int_eq(mmp_pt_protect(&o.pt, va, 4096, RO), 0);
            ck_assert_int_eq(mmp_pt_protect(&o.pt, va, 4096, RW), 0);
            ck_assert_int_eq(mmp_pt_map(&o.pt, va, PA0 + (va - o.base), 4096, RW, MMP_MAP_REPLACE),
                             0);
        }
        AO_store_release(&o.changed, (AO_t)-1);
        /* Let the readers in (a loaded machine may not have run them yet),
         * for at most a second of wall time: a count of yields is no bound,
         * since on a loaded machine each one can cost a whole time slice.
         * Region 0 of a whole-leaf break has no read that counts. */
        AO_t before = AO_load_acquire(&o.reads);
        uint64_t until = now_ns() + 1000000000ull;
        while (!(whole_breaks && r == 0) && AO_load_acquire(&o.reads) < before + 64 &&
               now_ns() < until)
            sched_yield();
    }
    AO_store_release(&o.stop, 1);
    for (int i = 0; i < READERS; i++)
        pthread_join(th[i], NULL);
    printf("outage: format %d, %llu-byte leaves x %u: %lu reads, %lu saw another translation\n",
           (int)cfg->format, (unsigned long long)leaf, regions, (unsigned long)o.reads,
           (unsigned long)o.bad);
    ck_assert_msg(o.bad == 0, "%lu reads outside the changed page saw it unmapped or changed",
                  (unsigned long)o.bad);
    ck_assert_uint_gt(o.reads, 0);
    mmp_pt_fini(&o.pt);
    for (AO_t i = 0; i < o_nfreed; i++)
        free(o_freed[i]);
    o_nfreed = 0;
}

#define SKIP_WITHOUT_RACES()                                                               \
    do {                                                                                   \
        if (getenv("MMPORT_UNDER_VALGRIND"))                                               \
            MMP_SKIP("valgrind runs threads one at a time: the readers cannot race the "   \
                     "writer (native, TSan and qemu-user runs do)");                       \
    } while (0)

START_TEST(x86_split_keeps_the_rest_mapped)
{
    SKIP_WITHOUT_RACES();
    static const struct mmp_pt_config cfgs[] = {
        {MMP_PT_X86_64, 4096, 48, 0, 0, 0, 0, 0},
        {MMP_PT_X86_EPT, 4096, 48, 0, 0, 0, 0, 0},
        {MMP_PT_X86_NPT, 4096, 48, 0, 0, 0, 0, 0},
    };
    for (size_t c = 0; c < 3; c++) {
        run_outage(&cfgs[c], 1ull << 30, false, 4);
        run_outage(&cfgs[c], 2ull << 20, false, 16);
    }
}
END_TEST

START_TEST(arm64_split_breaks_only_its_block)
{
    SKIP_WITHOUT_RACES();
    /* Without contiguous runs: unmaking a run of blocks breaks the whole
     * run (16 x 2 MiB), as D8.16.1 requires. */
    static const struct mmp_pt_config c = {MMP_PT_ARM64_S2, 4096, 40, 0, MMP_PT_NO_CONT, 0, 0, 0};
    run_outage(&c, 2ull << 20, true, 16);
}
END_TEST

START_TEST(arm64_bbml2_split_keeps_the_rest_mapped)
{
    SKIP_WITHOUT_RACES();
    /* Contiguous runs allowed: the 2 MiB leaves fold into runs of 16,
     * which a split unmakes in place first. */
    static const struct mmp_pt_config c = {MMP_PT_ARM64_S2, 4096, 40, 0, MMP_PT_BBML2, 0, 0, 0};
    run_outage(&c, 1ull << 30, false, 4);
    run_outage(&c, 2ull << 20, false, 16);
}
END_TEST

Suite *mmp_suite_pt_outage(void)
{
    Suite *s = suite_create("pt_outage");
    MMP_ADD(s, x86_split_keeps_the_rest_mapped);
    MMP_ADD(s, arm64_split_breaks_only_its_block);
    MMP_ADD(s, arm64_bbml2_split_keeps_the_rest_mapped);
    return s;
}
