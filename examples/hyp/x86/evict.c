/* SPDX-License-Identifier: MIT */
/*
 * Cold-page eviction (CPU 1) and its other half, the refault (gm.c's
 * fault path on CPU 0).
 *
 * A pass asks mmp_pt_test_clear_young which resident pages the guest
 * touched since the last pass (the CPU's nested walk sets A again on the
 * next access, after the flush the call ends with) and evicts up to a
 * batch of the others, in rotating order over guest RAM (victims=any, a
 * stress setting, takes young pages too: the guest then refaults its
 * working set, often with reads, next to pages it is writing):
 *
 *  1. unmap each page from the nested table (in one lazy section: one
 *     flush for the batch, which pulls CPU 0 out of the guest) - from then
 *     on no guest access reaches the page, so its content is final;
 *  2. copy it to a swap slot, zero it (mmp_clear), mark it evicted, and
 *     mark it dirty for the migration: the unmap took the leaf and its D
 *     bit away, and the page's content is now in the swap area.
 *
 * All under gm.lock: a guest access to one of these pages faults, and CPU
 * 0's fault path waits for the lock, restores the page from its slot and
 * maps it again. Unmap first, copy after is the order that makes the copy
 * complete; copying first would race with the guest's writes.
 */
#include "mm.h"

#define MAX_WORDS ((2048ull << 20) / HV_PAGE / 64 + 16)
static uint64_t young[MAX_WORDS];
static uint64_t cursor;

uint64_t evict_pass(unsigned max, int any, uint64_t *nyoung, uint64_t *ncold)
{
    uint64_t pick[64];
    unsigned n = 0;
    *nyoung = *ncold = 0;
    if (max > HV_ARRAY_SIZE(pick))
        max = HV_ARRAY_SIZE(pick);
    gm_lock(1);
    for (unsigned i = 0; i < gm.nram; i++) {
        uint64_t c = 0;
        int rc =
            GM_CALL(1, mmp_pt_test_clear_young(&gm.npt, gm.ram[i].gpa, gm.ram[i].size,
                                               &young[gm.ram[i].first / 64], &c));
        if (rc)
            hv_printf("hyp: FAIL: mmp_pt_test_clear_young: %d\n", rc);
        *nyoung += c;
    }
    /* Cold: resident, not young, not evicted (resident only changes under
     * the lock, which is held). */
    for (uint64_t k = 0; k < gm.npages; k++) {
        uint64_t p = (cursor + k) % gm.npages;
        if (bit_test(gm.resident, p) && (any || !bit_test(young, p)) &&
            !bit_test(gm.evicted, p)) {
            ++*ncold;
            if (n < max && gm.swap_used + n < gm.swap_slots)
                pick[n++] = p;
        }
    }
    if (n)
        cursor = (pick[n - 1] + 1) % gm.npages;

    mmp_lazy_enter(&gm.npt);
    unsigned ok = 0;
    for (unsigned i = 0; i < n; i++) {
        int rc = GM_CALL(1, mmp_pt_unmap(&gm.npt, gm_gpa(pick[i]), HV_PAGE));
        if (rc == 0)
            pick[ok++] = pick[i];
        else if (rc != -MMP_ENOMEM) /* -ENOMEM: a block split found no table page */
            hv_printf("hyp: FAIL: mmp_pt_unmap: %d\n", rc);
    }
    GM_CALL(1, mmp_lazy_leave(&gm.npt)); /* the flush: no vCPU translation is left */
    for (unsigned i = 0; i < ok; i++) {
        uint64_t p = pick[i];
        void *ram = (void *)(uintptr_t)gm_gpa(p);
        uint32_t slot = gm.swap_free[gm.swap_used++];
        hv_copy_page(gm.swap + (uint64_t)slot * HV_PAGE, ram);
        gm.swap_slot[p] = slot;
        GM_CALL(1, mmp_clear_pages(ram, 1));
        bit_clear(gm.resident, p);
        bit_set(gm.evicted, p);
        bit_set(gm.mig_dirty, p);
        gm.st.evictions++;
    }
    gm_unlock();
    return ok;
}
