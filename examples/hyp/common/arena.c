/* SPDX-License-Identifier: MIT */
/* Table-page allocator handed to mmport: bump first, then reuse per size. */
#include "arena.h"

void hyp_arena_init(struct hyp_arena *a, void *va, uint64_t pa, size_t size)
{
    memset(a, 0, sizeof(*a));
    a->base = va;
    a->pa_base = pa;
    a->size = size;
}

void *hyp_arena_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    struct hyp_arena *a = ctx;
    void *p = NULL;
    hyp_lock(&a->lock);
    unsigned i;
    for (i = 0; i < HYP_ARENA_SIZES; i++)
        if (a->free[i].bytes == bytes && a->free[i].head)
            break;
    if (i < HYP_ARENA_SIZES) {
        p = a->free[i].head;
        a->free[i].head = *(void **)p;
    } else {
        /* Aligned to its size, as mmport requires of every table. */
        size_t at = (a->used + bytes - 1) & ~(bytes - 1);
        if (at + bytes <= a->size) {
            p = a->base + at;
            a->used = at + bytes;
        }
    }
    if (p) {
        a->out_bytes += bytes;
        a->allocs++;
        if (a->out_bytes > a->peak_bytes)
            a->peak_bytes = a->out_bytes;
        *pa = a->pa_base + (uint64_t)((uint8_t *)p - a->base);
    }
    hyp_unlock(&a->lock);
    return p;
}

void hyp_arena_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    struct hyp_arena *a = ctx;
    (void)pa;
    hyp_lock(&a->lock);
    unsigned i, empty = HYP_ARENA_SIZES;
    for (i = 0; i < HYP_ARENA_SIZES; i++) {
        if (a->free[i].bytes == bytes)
            break;
        if (!a->free[i].bytes && empty == HYP_ARENA_SIZES)
            empty = i;
    }
    if (i == HYP_ARENA_SIZES)
        i = empty;
    if (i < HYP_ARENA_SIZES) { /* more sizes than lists: the block is not reused */
        a->free[i].bytes = bytes;
        *(void **)va = a->free[i].head;
        a->free[i].head = va;
    }
    a->out_bytes -= bytes;
    a->frees++;
    hyp_unlock(&a->lock);
}

void *hyp_arena_phys_to_virt(void *ctx, uint64_t pa)
{
    struct hyp_arena *a = ctx;
    return a->base + (pa - a->pa_base);
}
