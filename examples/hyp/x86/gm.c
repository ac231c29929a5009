/* SPDX-License-Identifier: MIT */
/*
 * Guest memory (gm.h): the nested table and the lazy fault path.
 *
 * The table is an mmport MMP_PT_X86_NPT table (4-level, 48-bit guest-
 * physical space) made with MMP_PT_TRACK_HW: leaves are written with A and
 * D clear and the CPU's nested walk sets them, which is what the young
 * scan (eviction) and the dirty harvest (migration) read back. Its pages
 * come from an arena in the hypervisor image; every page given out and
 * taken back is counted, so teardown can prove none leaked.
 */
#include "gm.h"

struct gm gm;

/* ---- table memory ---- */

#define ARENA_PAGES 1024 /* 4 MiB: a 1 GiB guest mapped with 4 KiB pages needs ~520 */
static uint8_t arena[ARENA_PAGES][HV_PAGE] __attribute__((aligned(4096)));
static uint32_t arena_free[ARENA_PAGES];
static unsigned arena_nfree, arena_next;

/* Called inside mmport calls, which run under gm.lock: no lock of its own. */
static void *alloc_table(void *ctx, size_t bytes, uint64_t *pa)
{
    (void)ctx;
    if (bytes != HV_PAGE)
        return NULL;
    void *p;
    if (arena_nfree)
        p = arena[arena_free[--arena_nfree]];
    else if (arena_next < ARENA_PAGES)
        p = arena[arena_next++];
    else
        return NULL;
    gm.st.tables_alloc++;
    uint64_t live = gm.st.tables_alloc - gm.st.tables_freed;
    if (live > gm.st.tables_peak)
        gm.st.tables_peak = live;
    *pa = (uint64_t)(uintptr_t)p;
    return p;
}

static void free_table(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)ctx, (void)pa, (void)bytes;
    arena_free[arena_nfree++] = (uint32_t)(((uint8_t *)va - arena[0]) / HV_PAGE);
    gm.st.tables_freed++;
}

/* Any flush: the nested TLB is flushed whole (TLB_CONTROL = 1 at the next
 * VMRUN), so the range and hints do not matter. */
static void tlb_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    (void)ctx, (void)va, (void)size, (void)flags;
    hv_vcpu_flush();
}

static const struct mmp_pt_ops npt_ops = {
    .alloc_table = alloc_table,
    .free_table = free_table,
    .tlb_flush = tlb_flush,
};

/* ---- the guest's physical map ---- */

int64_t gm_page(uint64_t gpa)
{
    for (unsigned i = 0; i < gm.nram; i++)
        if (gpa - gm.ram[i].gpa < gm.ram[i].size)
            return (int64_t)(gm.ram[i].first + (gpa - gm.ram[i].gpa) / HV_PAGE);
    return -1;
}

uint64_t gm_gpa(uint64_t p)
{
    for (unsigned i = 0; i < gm.nram; i++)
        if (p - gm.ram[i].first < gm.ram[i].size / HV_PAGE)
            return gm.ram[i].gpa + (p - gm.ram[i].first) * HV_PAGE;
    return ~0ull;
}

int gm_init(int fault_2m, int fold)
{
    struct mmp_pt_config cfg = {
        .format = MMP_PT_X86_NPT,
        .granule = 4096,
        .va_bits = 48,
        .flags = MMP_PT_TRACK_HW,
        .max_leaf = HV_2M, /* the fault path maps 4 KiB or 2 MiB, never more */
    };
    gm.fault_2m = fault_2m;
    gm.fold = fold;
    return mmp_pt_init(&gm.npt, &cfg, &npt_ops);
}

int gm_map_device(uint64_t gpa, uint64_t size, uint32_t attrs, const char *what)
{
    if (gm.ndev == GM_MAX_DEV)
        return -MMP_ENOMEM;
    int rc = GM_CALL(0, mmp_pt_map(&gm.npt, gpa, gpa, size, attrs, 0));
    if (rc)
        return rc;
    gm.dev[gm.ndev++] = (struct gm_dev){gpa, size, attrs, what};
    return 0;
}

const struct gm_dev *gm_device(uint64_t gpa)
{
    for (unsigned i = 0; i < gm.ndev; i++)
        if (gpa - gm.dev[i].gpa < gm.dev[i].size)
            return &gm.dev[i];
    return NULL;
}

/* ---- the fault path (CPU 0, under the lock) ---- */

#define RAM_ATTRS (MMP_PROT_READ | MMP_PROT_WRITE | MMP_PROT_EXEC | MMP_MEM_NORMAL_WB)

/* Give an evicted page its content back (the slot returns to the pool).
 * The evicted bit clears after the copy: CPU 1's migration reads a page
 * from the swap slot while it sees the bit, from RAM after. */
static void restore(uint64_t p)
{
    uint32_t slot = gm.swap_slot[p];
    hv_copy_page((void *)(uintptr_t)gm_gpa(p), gm.swap + (uint64_t)slot * HV_PAGE);
    AO_nop_full();
    bit_clear(gm.evicted, p);
    gm.swap_free[--gm.swap_used] = slot;
    gm.st.refaults++;
}

/* A 2 MiB block over guest RAM at @p gpa can be mapped whole: inside one
 * range, no page of it evicted (its zeroes are not the guest's) or mapped. */
static int block_ok(uint64_t gpa)
{
    uint64_t b = gpa & ~(HV_2M - 1);
    int64_t p0 = gm_page(b), p1 = gm_page(b + HV_2M - 1);
    if (p0 < 0 || p1 != p0 + 511)
        return 0;
    for (uint64_t w = (uint64_t)p0 / 64; w <= (uint64_t)p1 / 64; w++)
        if (gm.evicted[w] | gm.resident[w])
            return 0; /* p0 is 512-aligned within its range: whole words */
    return 1;
}

static void set_resident(uint64_t p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        bit_set(gm.resident, p + i);
}

int gm_fault(uint64_t gpa)
{
    int64_t p = gm_page(gpa);
    if (p < 0)
        return -MMP_ERANGE;
    uint64_t t0 = rdtsc();
    uint64_t waited = gm.st.lock_contended[0];
    gm_lock(0);
    gm.st.faults++;
    gm.st.faults_concurrent += gm.st.lock_contended[0] != waited;
    int rc;
    if (bit_test(gm.evicted, (uint64_t)p))
        restore((uint64_t)p);
    if (bit_test(gm.resident, (uint64_t)p)) {
        /* Mapped already: the vCPU walked a translation its TLB still
         * held from before a change. The next VMRUN flushes. */
        gm.st.spurious++;
        hv_vcpu_flush();
        rc = 0;
    } else if (gm.fault_2m && block_ok(gpa) &&
               (rc = GM_CALL(0, mmp_pt_map(&gm.npt, gpa & ~(HV_2M - 1),
                                           gpa & ~(HV_2M - 1), HV_2M, RAM_ATTRS, 0))) ==
                   0) {
        set_resident((uint64_t)gm_page(gpa & ~(HV_2M - 1)), 512);
        gm.st.maps_2m++;
    } else {
        /* A 4 KiB map that completes a 2 MiB region would fold it into a
         * block, and mmport writes that block from the map's template: the
         * D bits the CPU set in the 512 leaves since the last harvest are
         * dropped, and those writes would be lost to the migration.
         * MMP_MAP_NO_BLOCK keeps such regions as 4 KiB leaves. */
        uint64_t pg = gpa & ~(HV_PAGE - 1);
        rc = GM_CALL(0, mmp_pt_map(&gm.npt, pg, pg, HV_PAGE, RAM_ATTRS,
                                   gm.fold ? 0 : MMP_MAP_NO_BLOCK));
        if (rc == 0) {
            set_resident((uint64_t)p, 1);
            gm.st.maps_4k++;
        }
    }
    gm_unlock();
    gm.st.fault_tsc += rdtsc() - t0;
    return rc;
}

uint64_t gm_fini(void)
{
    mmp_pt_fini(&gm.npt);
    return gm.st.tables_alloc - gm.st.tables_freed;
}
