/* SPDX-License-Identifier: MIT */
/*
 * Concurrent walkers: reader threads look up and walk while one writer
 * maps, replaces, splits, protects and unmaps (writers serialised, as the
 * contract says). Every translation a reader sees must be one the writer
 * could have produced: unmapped, or one of the two candidate output
 * addresses of that page with one of the attribute sets in play, from a
 * leaf aligned to its size. A torn or out-of-rule descriptor fails.
 *
 * Table pages freed by the writer are quarantined until the readers have
 * stopped: that is the caller's side of the contract (free_table must
 * defer reuse while readers may still traverse, as RCU does).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mmport/mmport.h>

#include "mmp_test.h"
#include "atomic.h"

#define SLOTS 8
#define SLOT_SIZE (2ull << 20)
#define SLOT_STRIDE (4ull << 20)
#define PA_A 0x40000000ull
#define PA_B 0x80000000ull
#define ATTR_RW (MMP_PROT_READ | MMP_PROT_WRITE)
#define ATTR_RO (MMP_PROT_READ)
#define ATTR_RX (MMP_PROT_READ | MMP_PROT_EXEC)

struct quarantine {
    pthread_mutex_t lock;
    void **pages;
    size_t n, cap;
    long live;
};

static void *q_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    struct quarantine *q = ctx;
    void *p = aligned_alloc(bytes, bytes);
    if (!p)
        return NULL;
    pthread_mutex_lock(&q->lock);
    q->live++;
    pthread_mutex_unlock(&q->lock);
    *pa = (uint64_t)(uintptr_t)p;
    return p;
}

static void q_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    struct quarantine *q = ctx;
    (void)pa, (void)bytes;
    pthread_mutex_lock(&q->lock);
    if (q->n == q->cap) {
        q->cap = q->cap ? 2 * q->cap : 256;
        q->pages = realloc(q->pages, q->cap * sizeof *q->pages);
        ck_assert_ptr_nonnull(q->pages);
    }
    q->pages[q->n++] = va;
    q->live--;
    pthread_mutex_unlock(&q->lock);
}

struct shared {
    struct mmp_pt pt;
    uint32_t granule;
    volatile AO_t stop;
    volatile AO_t reads;
    char error[256];
    volatile AO_t failed;
};

static void report(struct shared *s, const char *fmt, unsigned long long a,
                   unsigned long long b)
{
    if (AO_compare_and_swap_full(&s->failed, 0, 1))
        snprintf(s->error, sizeof s->error, fmt, a, b);
}

/* Is this leaf something the writer can have written? */
static int leaf_ok(struct shared *s, const struct mmp_pt_leaf *l)
{
    if (!l->size || (l->size & (l->size - 1)) || ((l->va | l->pa) & (l->size - 1))) {
        report(s, "leaf va=%#llx size=%#llx misaligned or odd size", l->va, l->size);
        return 0;
    }
    uint64_t slot = l->va / SLOT_STRIDE, off = l->va % SLOT_STRIDE;
    if (slot >= SLOTS || off + l->size > SLOT_SIZE) {
        report(s, "leaf va=%#llx size=%#llx outside every slot", l->va, l->size);
        return 0;
    }
    uint64_t a = PA_A + slot * SLOT_STRIDE + off, b = PA_B + slot * SLOT_STRIDE + off;
    if (l->pa != a && l->pa != b) {
        report(s, "leaf va=%#llx has pa %#llx no writer produced", l->va, l->pa);
        return 0;
    }
    uint32_t at = l->attrs & ~(uint32_t)MMP_PROT_GLOBAL;
    if (at != ATTR_RW && at != ATTR_RO && at != ATTR_RX) {
        report(s, "leaf va=%#llx attrs %#llx no writer produced", l->va, l->attrs);
        return 0;
    }
    return 1;
}

static int walk_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    return leaf_ok(arg, l) ? 0 : 1;
}

static void *reader(void *arg)
{
    struct shared *s = arg;
    unsigned seed = (unsigned)(uintptr_t)&seed;
    while (!AO_load_acquire(&s->stop) && !AO_load(&s->failed)) {
        uint64_t slot = (unsigned)rand_r(&seed) % SLOTS;
        uint64_t va = slot * SLOT_STRIDE + ((unsigned)rand_r(&seed) % (SLOT_SIZE / s->granule)) *
                                              s->granule;
        struct mmp_pt_leaf l;
        int rc = mmp_pt_lookup(&s->pt, va, &l);
        if (rc == 0)
            leaf_ok(s, &l);
        else if (rc != -MMP_ENOENT)
            report(s, "lookup of %#llx returned %lld", va, (unsigned long long)(long long)rc);
        if ((rand_r(&seed) & 15) == 0)
            mmp_pt_walk(&s->pt, slot * SLOT_STRIDE, SLOT_SIZE, walk_leaf, s);
        AO_fetch_and_add1(&s->reads);
    }
    return NULL;
}

/* One writer step on a random slot. */
static void write_step(struct shared *s, unsigned *seed)
{
    uint64_t slot = (unsigned)rand_r(seed) % SLOTS, base = slot * SLOT_STRIDE;
    uint64_t pa = ((unsigned)rand_r(seed) & 1 ? PA_A : PA_B) + base;
    uint64_t pages = SLOT_SIZE / s->granule;
    uint64_t first = (unsigned)rand_r(seed) % pages, n = 1 + (unsigned)rand_r(seed) % (pages - first);
    static const uint32_t attrs[] = {ATTR_RW, ATTR_RO, ATTR_RX};
    uint32_t at = attrs[(unsigned)rand_r(seed) % 3];
    int rc;
    switch ((unsigned)rand_r(seed) % 5) {
    case 0: /* whole slot, largest leaves */
        rc = mmp_pt_map(&s->pt, base, pa, SLOT_SIZE, at, MMP_MAP_REPLACE);
        break;
    case 1: /* part of it, pages and runs */
        rc = mmp_pt_map(&s->pt, base + first * s->granule, pa + first * s->granule,
                        n * s->granule, at, MMP_MAP_REPLACE);
        break;
    case 2:
        rc = mmp_pt_unmap(&s->pt, base + first * s->granule, n * s->granule);
        break;
    case 3:
        rc = mmp_pt_protect(&s->pt, base + first * s->granule, n * s->granule, at);
        break;
    default:
        rc = mmp_pt_unmap(&s->pt, base, SLOT_SIZE);
        break;
    }
    ck_assert_int_eq(rc, 0);
}

static void run_concurrent(const struct mmp_pt_config *cfg, int steps)
{
    struct quarantine q = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct mmp_pt_ops ops = {.alloc_table = q_alloc,
                             .free_table = q_free,
                             .phys_to_virt = NULL,
                             .tlb_flush = NULL,
                             .ctx = &q};
    static struct shared s;
    memset(&s, 0, sizeof s);
    s.granule = cfg->granule;
    ck_assert_int_eq(mmp_pt_init(&s.pt, cfg, &ops), 0);

    pthread_t r[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&r[i], NULL, reader, &s), 0);
    unsigned seed = 12345;
    for (int i = 0; i < steps && !AO_load(&s.failed); i++)
        write_step(&s, &seed);
    AO_store_release(&s.stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
    ck_assert_msg(!s.failed, "%s", s.error);
    printf("concurrency: %d writes, %lu reads checked (granule %u)\n", steps,
           (unsigned long)s.reads, cfg->granule);

    mmp_pt_fini(&s.pt);
    ck_assert_int_eq(q.live, 0);
    for (size_t i = 0; i < q.n; i++)
        free(q.pages[i]);
    free(q.pages);
}

static int steps(void)
{
    return mmp_test_slow() ? 300 : 3000;
}

START_TEST(readers_see_only_whole_descriptors_x86)
{
    struct mmp_pt_config c = {MMP_PT_X86_64, 4096, 48, 0, 0, 0, 0, 0};
    run_concurrent(&c, steps());
}
END_TEST

START_TEST(readers_see_only_whole_descriptors_arm64_4k)
{
    struct mmp_pt_config c = {MMP_PT_ARM64_S1, 4096, 48, 0, 0, 0, 0, 0};
    run_concurrent(&c, steps());
}
END_TEST

START_TEST(readers_see_only_whole_descriptors_arm64_64k_s2)
{
    struct mmp_pt_config c = {MMP_PT_ARM64_S2, 65536, 44, 0, 0, 0, 0, 0};
    run_concurrent(&c, steps());
}
END_TEST

Suite *mmp_suite_concurrency(void)
{
    Suite *s = suite_create("concurrency");
    MMP_ADD(s, readers_see_only_whole_descriptors_x86);
    MMP_ADD(s, readers_see_only_whole_descriptors_arm64_4k);
    MMP_ADD(s, readers_see_only_whole_descriptors_arm64_64k_s2);
    return s;
}
