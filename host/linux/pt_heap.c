/* SPDX-License-Identifier: MIT */
/*
 * Hosted defaults for page tables: the built-in table allocator behind
 * NULL ops (heap pages, pa == va, no TLB to flush) and heap-allocated
 * struct mmp_pt.
 */
#include <stdlib.h>

#include "host.h"

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#endif
#endif

void mmp_host_assume_init(const void *p, size_t n)
{
#ifdef VALGRIND_MAKE_MEM_DEFINED
    VALGRIND_MAKE_MEM_DEFINED(p, n);
#else
    (void)p;
    (void)n;
#endif
}

static void *heap_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    (void)ctx;
    void *p = aligned_alloc(bytes, bytes);
    *pa = (uint64_t)(uintptr_t)p;
    return p;
}

static void heap_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)ctx;
    (void)pa;
    (void)bytes;
    free(va);
}

static const struct mmp_pt_ops heap_ops = {
    .alloc_table = heap_alloc,
    .free_table = heap_free,
};

const struct mmp_pt_ops *mmp_host_pt_default_ops(void)
{
    return &heap_ops;
}

int mmp_pt_create(struct mmp_pt **pt, const struct mmp_pt_config *cfg,
                  const struct mmp_pt_ops *ops)
{
    if (!pt)
        return -MMP_EINVAL;
    struct mmp_pt *p = aligned_alloc(64, sizeof *p);
    if (!p)
        return -MMP_ENOMEM;
    int rc = mmp_pt_init(p, cfg, ops);
    if (rc) {
        free(p);
        return rc;
    }
    *pt = p;
    return 0;
}

void mmp_pt_destroy(struct mmp_pt *pt)
{
    if (!pt)
        return;
    mmp_pt_fini(pt);
    free(pt);
}
