/* SPDX-License-Identifier: MIT */
/*
 * guest_mm.c: how a VMM's memory manager wires mmport in.
 *
 * A hypervisor owns three things mmport cannot guess:
 *   1. where page-table pages come from, and the physical address the MMU
 *      will be given for each (here: a fixed pool whose "physical"
 *      addresses differ from the addresses we use to write it, as in any
 *      kernel: the phys_to_virt hook is how mmport reaches a table page);
 *   2. how to invalidate TLBs (TLBI IPAS2E1IS / INVEPT / a hypercall;
 *      here: a hook that records what it is asked to flush);
 *   3. when memory changes owner (a page freed by one guest is cleared
 *      before another guest can see it: mmp_clear), and when it exits
 *      (mmp_shutdown gives back mmport's threads and records).
 * Bulk updates (populating a guest, tearing one down) run inside a
 * lazy-MMU section: one barrier and one coalesced flush for the batch.
 * A VM with many vCPUs (guest C) takes its faults with shared calls under
 * the read side of the VMM's lock, each vCPU with its own cache of table
 * pages filled before it takes the lock, and changes memslots with
 * exclusive calls under the write side.
 *
 * Build: cc -std=c11 -Iinclude examples/guest_mm.c build/x86_64/libmmport.a -lpthread
 * (or `pkg-config --cflags --libs mmport` against an installed mmport).
 * It runs the same scenario for an arm64 stage-2 table and the two x86
 * second stages (Intel EPT, AMD nested paging),
 * checks every step, and exits non-zero if any check fails.
 */
#define _POSIX_C_SOURCE 200809L /* pthread_rwlock_t under -std=c11 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mmport/mmport.h>

static int failures, checks;
#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        checks++;                                                                         \
        if (!(cond)) {                                                                    \
            failures++;                                                                   \
            printf("  FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond);                    \
            printf(__VA_ARGS__);                                                          \
            printf("\n");                                                                 \
        }                                                                                 \
    } while (0)

/* ---- 1. the VMM's table-page allocator ------------------------------------ */

#define PAGE 4096u
#define POOL_PAGES 64u
/* The "physical" address the pool appears at: deliberately not its host address. */
#define POOL_PA 0x80000000ull

struct table_pool {
    _Alignas(8192) unsigned char page[POOL_PAGES][PAGE];
    bool used[POOL_PAGES];
    unsigned in_use, peak;
    unsigned alloc_calls;
    unsigned phys_to_virt_calls;
    /* TLB-flush bookkeeping, to check the deferred-free rule below. */
    unsigned flushes;
    uint64_t last_flush_va, last_flush_size;
    unsigned last_flush_flags;
    unsigned freed_without_cover; /* table pages freed before a flush covered them */
};

/*
 * alloc_table: @bytes is one granule, or two for the concatenated root of
 * a 40-bit arm64 stage 2; the allocation must be aligned to its size.
 */
static void *pool_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    struct table_pool *p = ctx;
    unsigned n = (unsigned)(bytes / PAGE);
    p->alloc_calls++;
    for (unsigned i = 0; i + n <= POOL_PAGES; i += n) { /* size-aligned slots */
        unsigned k = 0;
        while (k < n && !p->used[i + k])
            k++;
        if (k < n)
            continue;
        for (k = 0; k < n; k++)
            p->used[i + k] = true;
        p->in_use += n;
        if (p->in_use > p->peak)
            p->peak = p->in_use;
        *pa = POOL_PA + (uint64_t)i * PAGE;
        return p->page[i];
    }
    return NULL; /* mmport turns this into -MMP_ENOMEM and changes nothing */
}

static void pool_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    struct table_pool *p = ctx;
    unsigned i = (unsigned)((pa - POOL_PA) / PAGE);
    /* A table unlinked by an unmap may still be walked by a TLB until the
     * flush of its range: mmport hands it back only after that flush. */
    if (!(p->last_flush_flags & MMP_FLUSH_ALL) && p->flushes == 0)
        p->freed_without_cover++;
    (void)va;
    for (unsigned k = 0; k < bytes / PAGE; k++)
        p->used[i + k] = false;
    p->in_use -= (unsigned)(bytes / PAGE);
}

/* mmport never dereferences a table's physical address: it asks us. */
static void *pool_phys_to_virt(void *ctx, uint64_t pa)
{
    struct table_pool *p = ctx;
    p->phys_to_virt_calls++;
    return p->page[(pa - POOL_PA) / PAGE];
}

/* ---- 2. the TLB-flush hook -------------------------------------------------- */

/*
 * A real VMM issues TLBI IPAS2E1IS per page (or VMALLS12E1IS for big
 * ranges) + DSB + TLBI VMALLE1IS on arm64, INVEPT on x86, or asks its
 * hypervisor. mmport calls this once per coalesced range.
 */
static void vmm_tlb_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    struct table_pool *p = ctx;
    p->flushes++;
    p->last_flush_va = va;
    p->last_flush_size = size;
    p->last_flush_flags = flags;
}

/* The hooks, all on one (emptied) pool. */
static struct mmp_pt_ops pool_ops(struct table_pool *pool)
{
    memset(pool, 0, sizeof *pool);
    struct mmp_pt_ops ops = {
        .alloc_table = pool_alloc,
        .free_table = pool_free,
        .phys_to_virt = pool_phys_to_virt,
        .tlb_flush = vmm_tlb_flush,
        .ctx = pool,
    };
    return ops;
}

/* ---- guest RAM: host memory the VMM hands to guests ------------------------ */

#define GUEST_PAGES 512u /* 2 MiB: one block on both formats */

static void run(const char *name, const struct mmp_pt_config *cfg)
{
    printf("%s\n", name);
    static struct table_pool pool;
    struct mmp_pt_ops ops = pool_ops(&pool);
    unsigned char *ram = aligned_alloc(2u << 20, GUEST_PAGES * PAGE);
    CHECK(ram != NULL, "no memory");
    if (!ram)
        return;
    const uint64_t host = (uintptr_t)ram; /* stands for the host physical address */
    const uint32_t rw = MMP_PROT_READ | MMP_PROT_WRITE;

    /* Guest A's table. Its root comes from our pool, at a pool "PA". */
    struct mmp_pt a;
    int rc = mmp_pt_init(&a, cfg, &ops);
    CHECK(rc == 0, "mmp_pt_init: %s", mmp_strerror(rc));
    if (rc) {
        free(ram);
        return;
    }
    CHECK(mmp_pt_root(&a) >= POOL_PA && mmp_pt_root(&a) < POOL_PA + POOL_PAGES * PAGE,
          "root 0x%" PRIx64 " not from the pool", mmp_pt_root(&a));

    /*
     * Populate guest A page by page, as stage-2 faults would, but in one
     * lazy section: mmport defers the barrier and the flushes to the leave.
     */
    const uint64_t gpa_a = 0x40000000;
    struct mmp_pt_stats s0, s1;
    mmp_pt_stats(&a, &s0);
    mmp_lazy_enter(&a);
    for (unsigned i = 0; i < GUEST_PAGES; i++) {
        unsigned pg = GUEST_PAGES - 1 - i; /* faults arrive in any order */
        rc = mmp_pt_map(&a, gpa_a + pg * PAGE, host + pg * PAGE, PAGE, rw, 0);
        if (rc)
            break;
    }
    CHECK(rc == 0, "map: %s", mmp_strerror(rc));
    CHECK(mmp_lazy_depth(&a) == 1, "depth %u", mmp_lazy_depth(&a));
    rc = mmp_lazy_leave(&a);
    CHECK(rc == 0, "leave: %s", mmp_strerror(rc));
    mmp_pt_stats(&a, &s1);
    /*
     * Only break-before-make is not deferred: on arm64, each time 16
     * adjacent pages complete a contiguous run (and 512 a 2 MiB block),
     * mmport folds them, and a fold must invalidate the old entries before
     * writing the new ones (Arm ARM D8.14). Everything else waits for leave.
     */
    uint64_t bbm = s1.bbm - s0.bbm, barriers = s1.barriers - s0.barriers;
    printf("  guest A: %u single-page maps in one lazy section: %" PRIu64 " entries written, "
           "%" PRIu64 " barrier(s) (%" PRIu64 " for break-before-make folds), %" PRIu64
           " flush(es); %u table pages from the pool\n",
           GUEST_PAGES, s1.entries_written - s0.entries_written, barriers, bbm,
           s1.flushes - s0.flushes, pool.in_use);
    CHECK(barriers <= bbm + 1, "%" PRIu64 " barriers for %" PRIu64 " folds", barriers, bbm);
    CHECK(s1.entries_written - s0.entries_written >= GUEST_PAGES, "entries");
    CHECK(pool.phys_to_virt_calls > 0, "mmport never asked where a table page is");

    /* The guest writes its secrets, through the translation. */
    for (unsigned i = 0; i < GUEST_PAGES; i += 7) {
        struct mmp_pt_leaf leaf;
        uint64_t gpa = gpa_a + (uint64_t)i * PAGE + 123;
        rc = mmp_pt_lookup(&a, gpa, &leaf);
        CHECK(rc == 0 && leaf.pa + (gpa - leaf.va) == host + (uint64_t)i * PAGE + 123,
              "lookup 0x%" PRIx64 ": %s", gpa, mmp_strerror(rc));
        if (rc == 0)
            *(unsigned char *)(uintptr_t)(leaf.pa + (gpa - leaf.va)) = 0xA5;
    }

    /*
     * Guest A shuts down. Tear its RAM out in a lazy section; table pages
     * left empty return to our pool, but only after the flush at leave.
     */
    unsigned tables_before = pool.in_use;
    pool.flushes = 0;
    mmp_lazy_enter(&a);
    rc = mmp_pt_unmap(&a, gpa_a, GUEST_PAGES * PAGE);
    CHECK(rc == 0, "unmap: %s", mmp_strerror(rc));
    CHECK(pool.flushes == 0, "%u flushes before leave", pool.flushes);
    mmp_lazy_leave(&a);
    printf("  guest A torn down: %u flush(es) (last 0x%" PRIx64 "+0x%" PRIx64 "), table pages "
           "%u -> %u\n",
           pool.flushes, pool.last_flush_va, pool.last_flush_size, tables_before, pool.in_use);
    CHECK(pool.flushes >= 1, "no flush after unmapping");
    CHECK((pool.last_flush_flags & MMP_FLUSH_ALL) ||
              (pool.last_flush_va <= gpa_a &&
               pool.last_flush_va + pool.last_flush_size >= gpa_a + GUEST_PAGES * PAGE),
          "flush does not cover the unmapped range");
    CHECK(pool.freed_without_cover == 0, "%u table pages freed before their flush",
          pool.freed_without_cover);
    CHECK(pool.in_use < tables_before, "no table page came back");
    struct mmp_pt_leaf leaf;
    CHECK(mmp_pt_lookup(&a, gpa_a, &leaf) == -MMP_ENOENT, "still mapped");

    /*
     * 3. The same host pages go to guest B. They still hold guest A's
     * data: clear them before B can map them, on two threads (mmport's
     * pool; the default hint picks the kernel by size).
     */
    const struct mmp_clear_opts two = {.threads = 2};
    rc = mmp_clear(ram, GUEST_PAGES * PAGE, &two);
    CHECK(rc == 0, "mmp_clear: %s", mmp_strerror(rc));
    size_t nonzero = 0;
    for (size_t i = 0; i < GUEST_PAGES * PAGE; i++)
        nonzero += ram[i] != 0;
    CHECK(nonzero == 0, "%zu bytes of guest A survive", nonzero);

    struct mmp_pt b;
    rc = mmp_pt_init(&b, cfg, &ops);
    CHECK(rc == 0, "init B: %s", mmp_strerror(rc));
    if (rc == 0) {
        /* One call for the whole range: aligned, so one 2 MiB block. */
        const uint64_t gpa_b = 0x80000000;
        rc = mmp_pt_map(&b, gpa_b, host, GUEST_PAGES * PAGE, rw, 0);
        CHECK(rc == 0, "map B: %s", mmp_strerror(rc));
        struct mmp_pt_usage use;
        mmp_pt_usage(&b, &use);
        printf("  guest B: the cleared pages mapped with one call: %" PRIu64 " block(s), %" PRIu64
               " page(s)\n",
               use.blocks, use.pages);
        CHECK(use.blocks == 1 && use.pages == 0, "%" PRIu64 " blocks", use.blocks);
        rc = mmp_pt_lookup(&b, gpa_b + 7 * PAGE + 123, &leaf);
        CHECK(rc == 0 && *(unsigned char *)(uintptr_t)(leaf.pa + (gpa_b + 7 * PAGE + 123 -
                                                                  leaf.va)) == 0,
              "guest B reads guest A's byte");
        mmp_pt_fini(&b);
    }
    mmp_pt_fini(&a);
    CHECK(pool.in_use == 0, "%u table pages leaked", pool.in_use);
    printf("  pool: peak %u of %u table pages, %u phys_to_virt calls, all returned\n", pool.peak,
           POOL_PAGES, pool.phys_to_virt_calls);
    free(ram);
}

/* ---- 4. many vCPUs: shared faults, exclusive memslot changes --------------- */

/* What each vCPU thread keeps: its own cache of table pages. */
struct vcpu {
    struct mmp_pt_memcache mc;
};

/* Outside the lock, where the VMM may sleep: fill the cache to the most
 * pages one fault can take. */
static int vcpu_topup(struct vcpu *v, struct table_pool *pool, const struct mmp_pt *pt)
{
    uint64_t need = mmp_pt_call_pages(pt, PAGE); /* levels - 1 */
    while (v->mc.n < need) {
        struct mmp_pt_cache_page *pg = &v->mc.page[v->mc.n];
        if (!(pg->va = pool_alloc(pool, PAGE, &pg->pa)))
            return -MMP_ENOMEM;
        v->mc.n++;
    }
    return 0;
}

static void vcpu_exit(struct vcpu *v, struct table_pool *pool)
{
    while (v->mc.n) {
        v->mc.n--;
        pool_free(pool, v->mc.page[v->mc.n].va, v->mc.page[v->mc.n].pa, PAGE);
    }
}

/* A stage-2 fault at gpa: map the one page under the read lock. Another
 * vCPU faulting the same page first (-EEXIST) is success; -EAGAIN (an
 * entry on the way was being changed) means "re-enter the guest and
 * fault again", which here is the loop. */
static int vcpu_fault(struct mmp_pt *pt, pthread_rwlock_t *lock, struct vcpu *v,
                      struct table_pool *pool, uint64_t gpa, uint64_t hpa)
{
    const struct mmp_pt_call shared = {.flags = MMP_CALL_SHARED, .mc = &v->mc};
    int rc;
    do {
        if ((rc = vcpu_topup(v, pool, pt)))
            return rc;
        pthread_rwlock_rdlock(lock);
        rc = mmp_pt_map_call(pt, &shared, gpa, hpa, PAGE, MMP_PROT_READ | MMP_PROT_WRITE, 0);
        pthread_rwlock_unlock(lock);
    } while (rc == -MMP_EAGAIN);
    return rc == -MMP_EEXIST ? 0 : rc;
}

static void many_vcpus(const char *name, const struct mmp_pt_config *cfg)
{
    printf("%s, shared faults from two vCPUs\n", name);
    static struct table_pool pool;
    struct mmp_pt_ops ops = pool_ops(&pool);
    struct mmp_pt_config c = *cfg;
    c.flags |= MMP_PT_SHARED; /* may take shared calls */
    struct mmp_pt pt;
    int rc = mmp_pt_init(&pt, &c, &ops);
    CHECK(rc == 0, "init C: %s", mmp_strerror(rc));
    if (rc)
        return;
    pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
    static struct vcpu vcpu[2];
    memset(vcpu, 0, sizeof vcpu);
    const uint64_t gpa_c = 0xc0000000, hpa = 0x200000000;
    /* The two vCPUs fault the guest's pages in, interleaved (on threads
     * of their own in a real VMM: the calls are made for that). mmport
     * takes table pages only from their caches, never from alloc_table. */
    unsigned from_hook = 0, hits = 0;
    for (unsigned i = 0; i < GUEST_PAGES && rc == 0; i++) {
        unsigned pg = (i * 37) % GUEST_PAGES;
        struct vcpu *v = &vcpu[i & 1];
        rc = vcpu_topup(v, &pool, &pt);
        unsigned calls = pool.alloc_calls;
        if (rc == 0)
            rc = vcpu_fault(&pt, &lock, v, &pool, gpa_c + pg * PAGE, hpa + pg * PAGE);
        from_hook += pool.alloc_calls - calls;
        /* the other vCPU faults the same page: already there */
        if (rc == 0 && i % 64 == 0) {
            rc = vcpu_fault(&pt, &lock, &vcpu[!(i & 1)], &pool, gpa_c + pg * PAGE, hpa + pg * PAGE);
            hits++;
        }
    }
    CHECK(rc == 0, "fault: %s", mmp_strerror(rc));
    CHECK(from_hook == 0, "%u table pages came from alloc_table in the fault path", from_hook);
    struct mmp_pt_usage use;
    mmp_pt_usage(&pt, &use);
    CHECK(use.mapped_bytes == GUEST_PAGES * PAGE, "%" PRIu64 " bytes mapped", use.mapped_bytes);
    /* The VMM removes the second half of the memslot: one exclusive call
     * under the write lock, in a lazy section (one flush for all of it). */
    const struct mmp_pt_call exclusive = {.flags = MMP_CALL_EXCLUSIVE};
    pool.flushes = 0;
    pthread_rwlock_wrlock(&lock);
    mmp_lazy_enter(&pt);
    rc = mmp_pt_unmap_call(&pt, &exclusive, gpa_c + GUEST_PAGES / 2 * PAGE, GUEST_PAGES / 2 * PAGE);
    mmp_lazy_leave(&pt);
    pthread_rwlock_unlock(&lock);
    CHECK(rc == 0, "memslot unmap: %s", mmp_strerror(rc));
    mmp_pt_usage(&pt, &use);
    printf("  %u pages faulted in (%u faults on a page already there), table pages from the "
           "vCPUs' caches only; half the memslot removed with one exclusive call, %u flush(es); "
           "%" PRIu64 " bytes left mapped\n",
           GUEST_PAGES, hits, pool.flushes, use.mapped_bytes);
    CHECK(use.mapped_bytes == GUEST_PAGES / 2 * PAGE, "%" PRIu64 " bytes left", use.mapped_bytes);
    CHECK(pool.flushes <= 1 + 2 * GUEST_PAGES / 32, "%u flushes", pool.flushes);
    vcpu_exit(&vcpu[0], &pool);
    vcpu_exit(&vcpu[1], &pool);
    mmp_pt_fini(&pt); /* waits for the pages retired meanwhile */
    CHECK(pool.in_use == 0, "%u table pages leaked", pool.in_use);
    pthread_rwlock_destroy(&lock);
}

int main(void)
{
    /* The arm64 stage 2 a KVM-style VMM gives VTTBR_EL2: 4K granule, 40-bit IPA. */
    const struct mmp_pt_config s2 = {.format = MMP_PT_ARM64_S2, .granule = 4096, .va_bits = 40};
    /* Intel VMX: EPT, 4 levels (EPTP from mmp_pt_regs: WB walk, length 4). */
    const struct mmp_pt_config ept = {.format = MMP_PT_X86_EPT, .granule = 4096, .va_bits = 48};
    /* AMD SVM: nested x86-64 table (nCR3), U set in every entry by mmport. */
    const struct mmp_pt_config npt = {.format = MMP_PT_X86_NPT, .granule = 4096, .va_bits = 48};
    run("arm64 stage 2, 4K granule, 40-bit IPA", &s2);
    run("Intel EPT, 4 levels", &ept);
    run("AMD NPT, 4 levels", &npt);
    many_vcpus("arm64 stage 2", &s2);
    many_vcpus("Intel EPT", &ept);
    /*
     * The VMM exits: mmport gives back what it keeps between calls (the
     * clearing threads, shared tables' epoch records), so a leak checker
     * finds nothing.
     */
    int rc = mmp_shutdown();
    CHECK(rc == 0, "mmp_shutdown: %s", mmp_strerror(rc));
    printf("guest_mm: %d of %d checks passed\n", checks - failures, checks);
    return failures ? 1 : 0;
}
