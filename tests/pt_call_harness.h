/* SPDX-License-Identifier: MIT */
/*
 * What the per-call tests (test_pt_call.c, test_pt_call_mt.c) share: table
 * memory that counts its bytes (atomically: several threads allocate) and
 * scribbles on a page it frees, and a 4K table that takes shared calls.
 */
#ifndef MMPORT_TESTS_PT_CALL_HARNESS_H
#define MMPORT_TESTS_PT_CALL_HARNESS_H

#include <stdlib.h>
#include <string.h>

#include <atomic_ops.h>
#include <mmport/mmport.h>

#include "mmp_test.h"

#define PG 4096ull
#define BLK (2ull << 20)
#define OFF 0x100000000ull /* pa = va + OFF */
#define RO MMP_PROT_READ
#define RW (MMP_PROT_READ | MMP_PROT_WRITE)
#define RBASE (5ull << 30) /* the threaded tests' region */


/* ---- table memory: counted; a freed page is scribbled on first ---------- */

struct mem {
    volatile AO_t allocs, frees; /* bytes */
    volatile AO_t calls;         /* alloc_table calls */
};

static inline void *m_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    struct mem *m = ctx;
    void *p = aligned_alloc(bytes, bytes);
    if (!p)
        return NULL;
    AO_fetch_and_add(&m->allocs, bytes);
    AO_fetch_and_add1(&m->calls);
    *pa = (uint64_t)(uintptr_t)p;
    return p;
}

static inline void m_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    struct mem *m = ctx;
    (void)pa;
    memset(va, 0xa5, bytes); /* a walk through a page freed early reads garbage */
    free(va);
    AO_fetch_and_add(&m->frees, bytes);
}
static inline struct mmp_pt_ops ops_of(struct mem *m)
{
    struct mmp_pt_ops o = {.alloc_table = m_alloc, .free_table = m_free, .ctx = m};
    return o;
}

static inline uint64_t pages_now(const struct mmp_pt *pt)
{
    struct mmp_pt_stats st;
    mmp_pt_stats(pt, &st);
    return st.table_pages;
}
/* A 4K table that takes shared calls, on m: its root's granules. */
static inline uint64_t shared_init(struct mmp_pt *pt, struct mem *m, enum mmp_pt_format fmt,
                            uint32_t va_bits)
{
    struct mmp_pt_config c = {.format = fmt, .granule = 4096, .va_bits = va_bits,
                              .flags = MMP_PT_SHARED};
    struct mmp_pt_ops ops = ops_of(m);
    ck_assert_int_eq(mmp_pt_init(pt, &c, &ops), 0);
    return pages_now(pt);
}
#endif
