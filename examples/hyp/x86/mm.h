/* SPDX-License-Identifier: MIT */
/*
 * The memory manager's passes while the guest runs (mm.c drives them on
 * CPU 1): pre-copy migration (mig.c) and cold-page eviction (evict.c).
 */
#ifndef HV_MM_H
#define HV_MM_H

#include "gm.h"

struct mm_opts {
    int mig, evict;
    int evict_young; /* evict pages whether young or not (a stress setting) */
    uint64_t shadow; /* the migration's copy of guest RAM: page p at shadow + p * 4K */
};

#define MIG_ROUND_LOG 64

struct mm_result {
    int compare_ok;
    uint64_t rounds, pages_copied, first_copy_pages, final_pages, diff_pages;
    uint64_t round_pages[MIG_ROUND_LOG]; /* dirty pages of the first rounds */
    uint64_t evict_passes, young_pages, cold_seen;
    uint64_t cpu1_busy_tsc;
};

/** CPU 0, before the guest's first instruction: start tracking, let CPU 1 go. */
int mm_start(const struct mm_opts *o);
/** CPU 1's whole life: wait for the guest, run the passes until told to stop. */
void mm_cpu1(void);
/** CPU 0, the guest stopped: stop CPU 1, final round, compare. */
void mm_finish(struct mm_result *r);
/** Print the summary line and its JSON twin. */
void mm_report(int powered_off, const char *stop, const struct mm_result *r,
               uint64_t leaked, uint64_t scrub_tsc);

/* ---- mig.c ---- */
/** Start dirty tracking over guest RAM (CPU 0, before the guest runs). */
int mig_start(uint64_t shadow);
/** Copy every page of guest RAM to the shadow (the pre-copy's first pass). */
uint64_t mig_copy_all(void);
/** One round: harvest the dirty pages and copy them; the pages copied. */
uint64_t mig_round(unsigned cpu);
/** Pages whose shadow differs from the guest's content (RAM, or swap if evicted). */
uint64_t mig_compare(void);

/* ---- evict.c ---- */
/** One pass: test-and-clear young over guest RAM, evict up to @p max cold
 * pages (with @p any, resident pages young or not). */
uint64_t evict_pass(unsigned max, int any, uint64_t *young, uint64_t *cold);

#endif
