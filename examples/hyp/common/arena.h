/* SPDX-License-Identifier: MIT */
/*
 * Table pages for mmport (mmp_pt_ops::alloc_table / free_table): a bump
 * region with one free list per allocation size, behind a lock, counting
 * what is out so teardown can prove every page came back.
 */
#ifndef HYP_COMMON_ARENA_H
#define HYP_COMMON_ARENA_H

#include "hyp.h"

#define HYP_ARENA_SIZES 4

struct hyp_arena {
    uint8_t *base;    /* where the hypervisor reaches the region */
    uint64_t pa_base; /* its physical address */
    size_t size, used;
    struct {
        size_t bytes;
        void *head; /* freed blocks of this size, linked through their first word */
    } free[HYP_ARENA_SIZES];
    struct hyp_lock lock;
    /* Bytes handed out and not returned; the most at once; calls. */
    uint64_t out_bytes, peak_bytes, allocs, frees;
};

/** Give @p arena the region [va, va+size) at physical @p pa. */
void hyp_arena_init(struct hyp_arena *arena, void *va, uint64_t pa, size_t size);
/** mmp_pt_ops::alloc_table (ctx = the arena). */
void *hyp_arena_alloc(void *ctx, size_t bytes, uint64_t *pa);
/** mmp_pt_ops::free_table (ctx = the arena). */
void hyp_arena_free(void *ctx, void *va, uint64_t pa, size_t bytes);
/** mmp_pt_ops::phys_to_virt (ctx = the arena). */
void *hyp_arena_phys_to_virt(void *ctx, uint64_t pa);

#endif
