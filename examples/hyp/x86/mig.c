/* SPDX-License-Identifier: MIT */
/*
 * Pre-copy live migration to a shadow copy of guest RAM, checked byte for
 * byte at the end.
 *
 * - mig_start: mmp_pt_track_start over guest RAM before the guest runs.
 *   With MMP_PT_TRACK_HW the nested table's leaves, mapped lazily later,
 *   come with D clear, and the CPU's nested walk sets D on the first write.
 * - mig_copy_all (CPU 1): every page to the shadow, while the guest runs.
 * - mig_round (CPU 1 every round; CPU 0 once the guest stopped):
 *   mmp_pt_track_harvest re-arms every dirty leaf and flushes (through the
 *   table's tlb_flush hook, which pulls CPU 0 out of the guest) before it
 *   returns, so a write after the harvest sets D again; then each page it
 *   reported is copied. Pages the hypervisor itself changed behind the
 *   table (evicted: unmapped and zeroed, their content in the swap area)
 *   are in gm.mig_dirty and are copied too.
 * - mig_compare: the shadow against what the guest would see (RAM, or
 *   the swap slot of an evicted page). A difference is a write the
 *   tracking lost.
 */
#include "mm.h"

#define MAX_WORDS ((2048ull << 20) / HV_PAGE / 64 + 16)
static uint64_t dirty[MAX_WORDS];
static uint8_t *shadow;

static void *shadow_page(uint64_t p)
{
    return shadow + p * HV_PAGE;
}

int mig_start(uint64_t shadow_pa)
{
    shadow = (uint8_t *)(uintptr_t)shadow_pa;
    if (gm.bitmap_words > MAX_WORDS)
        return -1;
    int rc = 0;
    gm_lock(0);
    for (unsigned i = 0; i < gm.nram && !rc; i++)
        rc = GM_CALL(0, mmp_pt_track_start(&gm.npt, gm.ram[i].gpa, gm.ram[i].size, NULL));
    gm_unlock();
    if (rc)
        hv_printf("hyp: mmp_pt_track_start: %d\n", rc);
    return rc;
}

/* The guest's content of page p: RAM, or its swap slot while evicted.
 * Only CPU 1 evicts and the migration runs there (or on CPU 0 once CPU 1
 * stopped), so a page seen not evicted stays so during the copy; one seen
 * evicted may be restored by CPU 0 at any time, hence the lock. */
static void copy_page(uint64_t p, unsigned cpu)
{
    void *ram = (void *)(uintptr_t)gm_gpa(p);
    if (!bit_test(gm.evicted, p)) {
        hv_copy_page(shadow_page(p), ram);
        return;
    }
    gm_lock(cpu);
    const void *src =
        bit_test(gm.evicted, p) ? gm.swap + (uint64_t)gm.swap_slot[p] * HV_PAGE : ram;
    hv_copy_page(shadow_page(p), src);
    gm_unlock();
}

uint64_t mig_copy_all(void)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < gm.nram; i++)
        for (uint64_t k = 0; k < gm.ram[i].size / HV_PAGE; k++, n++)
            copy_page(gm.ram[i].first + k, 1);
    return n;
}

uint64_t mig_round(unsigned cpu)
{
    gm_lock(cpu);
    for (unsigned i = 0; i < gm.nram; i++) {
        int rc = GM_CALL(cpu, mmp_pt_track_harvest(&gm.npt, gm.ram[i].gpa, gm.ram[i].size,
                                                   &dirty[gm.ram[i].first / 64], NULL));
        if (rc) /* cannot happen on a valid range; make it loud */
            hv_printf("hyp: FAIL: mmp_pt_track_harvest: %d\n", rc);
    }
    for (uint64_t w = 0; w < gm.bitmap_words; w++) {
        dirty[w] |= gm.mig_dirty[w];
        gm.mig_dirty[w] = 0;
    }
    gm_unlock();
    uint64_t n = 0;
    for (uint64_t w = 0; w < gm.bitmap_words; w++)
        for (uint64_t bits = dirty[w]; bits; bits &= bits - 1, n++)
            copy_page(w * 64 + (uint64_t)__builtin_ctzll(bits), cpu);
    return n;
}

uint64_t mig_compare(void)
{
    uint64_t diff = 0;
    for (unsigned i = 0; i < gm.nram; i++)
        for (uint64_t k = 0; k < gm.ram[i].size / HV_PAGE; k++) {
            uint64_t p = gm.ram[i].first + k;
            const void *src = bit_test(gm.evicted, p)
                                  ? gm.swap + (uint64_t)gm.swap_slot[p] * HV_PAGE
                                  : (const void *)(uintptr_t)gm_gpa(p);
            if (!hv_page_equal(shadow_page(p), src) && diff++ < 8)
                hv_printf("hyp: migration compare: page %lx differs (%s)\n", gm_gpa(p),
                          bit_test(gm.evicted, p) ? "evicted" : "resident");
        }
    return diff;
}
