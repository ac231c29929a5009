/* SPDX-License-Identifier: MIT */
/*
 * Guest memory: the nested page table (mmport, MMP_PT_X86_NPT with
 * hardware A/D tracking), the guest's physical map (RAM, passed-through
 * devices and firmware, everything else a hole), lazy faulting, and the
 * per-page state the migration and eviction passes share.
 *
 * Guest-physical = host-physical: guest RAM is host RAM the hypervisor
 * does not use (the low 636 KiB and one window above the hypervisor and
 * its modules), so firmware tables and device registers are passed
 * through at their own addresses. The hypervisor's own memory, the
 * migration shadow and the swap area are holes in the guest's map.
 *
 * Locking: every change of the nested table (fault, harvest, young scan,
 * eviction) and of the page state is made under gm.lock, from CPU 0 (the
 * vCPU's faults) or CPU 1 (the passes). mmport's writer calls want one
 * writer at a time; the lock is that writer.
 */
#ifndef HV_GM_H
#define HV_GM_H

#include <mmport/mmport.h>

#include "hv.h"

#define GM_MAX_RANGES 2
#define GM_MAX_DEV 16

/* One range of guest RAM; its pages are numbered first .. first + size/4K - 1
 * (first a multiple of 64, so a range's bits start at a bitmap word). */
struct gm_range {
    uint64_t gpa, size, first;
};

/* A passed-through region (device registers or firmware memory). */
struct gm_dev {
    uint64_t gpa, size;
    uint32_t attrs;
    const char *what;
};

struct gm_stats {
    uint64_t faults;            /* nested page faults handled on guest RAM */
    uint64_t faults_concurrent; /* of those, met CPU 1 inside a table call */
    uint64_t maps_4k, maps_2m;
    uint64_t spurious; /* faults on a page already mapped (a stale TLB entry) */
    uint64_t refaults; /* faults on an evicted page: restored and mapped */
    uint64_t evictions;
    uint64_t fault_tsc;  /* CPU 0 time handling faults, lock wait included */
    uint64_t mmp_tsc[2]; /* time inside mmport calls, per CPU */
    uint64_t mmp_calls[2];
    uint64_t tables_alloc, tables_freed, tables_peak;
    uint64_t lock_wait_tsc[2];
    /* lock acquisitions that found the other CPU holding it */
    uint64_t lock_contended[2];
};

struct gm {
    struct mmp_pt npt;
    hv_lock_t lock;
    int fault_2m; /* map 2 MiB blocks where the range and the page state allow */
    int fold;     /* let a 4 KiB map complete a 2 MiB block (see gm_fault) */
    struct gm_range ram[GM_MAX_RANGES];
    unsigned nram;
    uint64_t npages;       /* page numbers in use (the bitmap length in bits) */
    uint64_t bitmap_words; /* (npages + 63) / 64 */
    struct gm_dev dev[GM_MAX_DEV];
    unsigned ndev;
    /* Page state, bit per page number; changed under the lock. */
    uint64_t *resident;  /* mapped in the nested table */
    uint64_t *evicted;   /* content in the swap area, the page zeroed and unmapped */
    uint64_t *mig_dirty; /* written behind the table's back (eviction): copy next round */
    uint32_t *swap_slot; /* page number -> swap slot, for evicted pages */
    uint8_t *swap;       /* the swap area: swap_slots pages */
    uint32_t swap_slots, swap_used, *swap_free; /* stack of free slots */
    struct gm_stats st;
};
extern struct gm gm;

static inline int bit_test(const uint64_t *b, uint64_t i)
{
    return (int)((((const volatile uint64_t *)b)[i / 64] >> (i % 64)) & 1);
}
static inline void bit_set(uint64_t *b, uint64_t i)
{
    b[i / 64] |= 1ull << (i % 64);
}
static inline void bit_clear(uint64_t *b, uint64_t i)
{
    b[i / 64] &= ~(1ull << (i % 64));
}

/** Page number of guest RAM at @p gpa, or -1 when it is no RAM. */
int64_t gm_page(uint64_t gpa);
/** Guest-physical (= host) address of page number @p p. */
uint64_t gm_gpa(uint64_t p);

/** Create the nested table; 0 or a negative errno. */
int gm_init(int fault_2m, int fold);
/** Pass a region through at its own address (mapped now, whole). */
int gm_map_device(uint64_t gpa, uint64_t size, uint32_t attrs, const char *what);
/** The passed-through region holding @p gpa, or NULL. */
const struct gm_dev *gm_device(uint64_t gpa);
/** CPU 0: a nested page fault on guest RAM at @p gpa; 0, or a negative errno. */
int gm_fault(uint64_t gpa);
/** Tear the table down; returns the table pages still missing (0 = all back). */
uint64_t gm_fini(void);

/* Time an mmport call on CPU @p cpu (0 or 1) into gm.st. */
#define GM_CALL(cpu, call)                                                               \
    ({                                                                                   \
        uint64_t t0_ = rdtsc();                                                          \
        int r_ = (call);                                                                 \
        gm.st.mmp_tsc[cpu] += rdtsc() - t0_;                                             \
        gm.st.mmp_calls[cpu]++;                                                          \
        r_;                                                                              \
    })

static inline void gm_lock(unsigned cpu)
{
    if (AO_test_and_set_acquire(&gm.lock.ts) == AO_TS_CLEAR)
        return;
    uint64_t t0 = rdtsc(); /* the other CPU is inside a table call */
    hv_lock(&gm.lock);
    gm.st.lock_wait_tsc[cpu] += rdtsc() - t0;
    gm.st.lock_contended[cpu]++;
}
static inline void gm_unlock(void)
{
    hv_unlock(&gm.lock);
}

/* ---- the vCPU side (svm.c) the table's flush hook needs ---- */

/**
 * Make the guest's cached nested translations go before it uses the table
 * again. On CPU 0 (the vCPU's own exit path) the next VMRUN flushes; on
 * CPU 1, CPU 0 is also pulled out of the guest (NMI) if it is in it, and
 * the call returns once the next guest instruction can only see the table
 * as it is now.
 */
void hv_vcpu_flush(void);

#endif
