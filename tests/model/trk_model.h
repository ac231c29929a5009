/* SPDX-License-Identifier: MIT */
/*
 * A reference model of dirty and access tracking (include/mmport/track.h),
 * independent of the engine: the pages the guest wrote (or accessed) as
 * the MMU recorded it, that no harvest (young scan) has reported since. A
 * pass over a range must report every one of them in it, wherever the MMU
 * put the record (any entry of a contiguous run, a block's one entry);
 * it may report more (a run's or a block's state stands for all its pages).
 * Pages are addresses in the caller's model space, granule-aligned.
 */
#ifndef MMPORT_TESTS_TRK_MODEL_H
#define MMPORT_TESTS_TRK_MODEL_H

#include <stddef.h>
#include <stdint.h>

enum { TRK_DIRTY, TRK_YOUNG };

struct trk_model {
    uint64_t *pg[2]; /* [TRK_DIRTY], [TRK_YOUNG]: pages owed a report */
    size_t n[2], cap[2];
};

void trk_model_init(struct trk_model *m);
void trk_model_free(struct trk_model *m);
/* The guest wrote (TRK_DIRTY) or accessed (TRK_YOUNG) page. */
void trk_model_add(struct trk_model *m, int kind, uint64_t page);
/* Pages of [va, va + size) the library may forget: unmapped, replaced,
 * tracking restarted. */
void trk_model_drop(struct trk_model *m, int kind, uint64_t va, uint64_t size);
/*
 * A pass of kind over the n pages of gran bytes from va reported bitmap bm
 * (bit i: va + i * gran). Returns 0, or -1 with *missed the first page
 * owed a report that it lacks. Either way the range is no longer owed.
 */
int trk_model_pass(struct trk_model *m, int kind, uint64_t va, uint64_t gran, uint64_t n,
                   const uint64_t *bm, uint64_t *missed);

#endif
