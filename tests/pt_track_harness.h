/* SPDX-License-Identifier: MIT */
/*
 * Dirty-tracking test helpers: "writes" and "accesses" the way the MMU
 * does them - the dirty or access bits set by hand, atomically, in the
 * leaf descriptor (hardware tracking) - or the way a fault handler does
 * (software tracking: mmp_pt_dirty_fault). The descriptor is found by
 * walking the table with the test's identity allocator (pa == va).
 */
#ifndef MMPORT_TESTS_PT_TRACK_HARNESS_H
#define MMPORT_TESTS_PT_TRACK_HARNESS_H

#include "atomic.h"
#include "pt_harness.h"

/* Bits the MMU sets, per format (architecture manuals, not mmport). */
struct hwbits {
    uint64_t dirty_set, dirty_clr; /* a write: set these, clear those */
    uint64_t young;
};

static inline struct hwbits hw_bits(const struct mmp_pt_config *c)
{
    struct hwbits h = {0, 0, 0};
    switch (c->format) {
    case MMP_PT_X86_64:
    case MMP_PT_X86_NPT: h.dirty_set = 1ull << 6, h.young = 1ull << 5; break; /* D, A */
    case MMP_PT_X86_EPT: h.dirty_set = 1ull << 9, h.young = 1ull << 8; break;
    case MMP_PT_ARM64_S1: h.dirty_clr = 1ull << 7, h.young = 1ull << 10; break; /* AP[2] */
    case MMP_PT_ARM64_S2: h.dirty_set = 1ull << 7, h.young = 1ull << 10; break; /* S2AP[1] */
    }
    return h;
}

/* The leaf descriptor translating va (NULL if unmapped). */
static inline uint64_t *desc_ptr(struct mmp_pt *pt, uint64_t va)
{
    struct mmp_pt_info inf;
    struct mmp_pt_leaf l;
    if (mmp_pt_info(pt, &inf) || mmp_pt_lookup(pt, va, &l))
        return NULL;
    unsigned gs = (unsigned)__builtin_ctz(inf.granule), bpl = gs - 3, n = inf.levels;
    uint64_t amask = ((1ull << 48) - 1) & ~((uint64_t)inf.granule - 1);
    uint64_t *t = (uint64_t *)(uintptr_t)mmp_pt_root(pt);
    for (unsigned d = 0;; d++) {
        unsigned shift = gs + bpl * (n - 1 - d);
        unsigned bits = d == 0 ? inf.va_bits - shift : bpl;
        uint64_t *p = &t[(va >> shift) & ((1ull << bits) - 1)];
        if ((1ull << shift) == l.size)
            return p;
        t = (uint64_t *)(uintptr_t)(*p & amask);
    }
}

/* The MMU writes va: one atomic update of its leaf. */
static inline void hw_write(struct mmp_pt *pt, const struct hwbits *h, uint64_t va)
{
    uint64_t *p = desc_ptr(pt, va);
    if (!p) /* (a passing ck_assert writes to check's pipe: not per write) */
        ck_abort_msg("no leaf at %llx", (unsigned long long)va);
    for (;;) {
        uint64_t e = (uint64_t)AO_load((volatile AO_t *)p);
        uint64_t n = ((e | h->dirty_set | h->young) & ~h->dirty_clr);
        if (AO_compare_and_swap_full((volatile AO_t *)p, (AO_t)e, (AO_t)n))
            return;
    }
}

static inline void hw_young(struct mmp_pt *pt, const struct hwbits *h, uint64_t va)
{
    uint64_t *p = desc_ptr(pt, va);
    if (!p) /* (a passing ck_assert writes to check's pipe: not per write) */
        ck_abort_msg("no leaf at %llx", (unsigned long long)va);
    for (;;) {
        uint64_t e = (uint64_t)AO_load((volatile AO_t *)p);
        if (AO_compare_and_swap_full((volatile AO_t *)p, (AO_t)e, (AO_t)(e | h->young)))
            return;
    }
}

/* A guest write: by hand in the descriptor (hw) or through the fault call. */
static inline void guest_write(struct mmp_pt *pt, int hw, const struct hwbits *h, uint64_t va)
{
    if (hw)
        hw_write(pt, h, va);
    else
        ck_assert_int_eq(mmp_pt_dirty_fault(pt, va), 0);
}

/* Can cfg c track in hardware? (EPT needs its A/D flags.) */
static inline int cfg_hw_ok(const struct mmp_pt_config *c)
{
    return c->format != MMP_PT_X86_EPT || (c->flags & MMP_PT_EPT_AD);
}

#endif
