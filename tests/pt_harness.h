/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of the page-table suites: a counting allocator with fault
 * injection, a flush callback that inspects the table at call time, the
 * list of formats, and a page-granular reference model.
 */
#ifndef MMPORT_TESTS_PT_HARNESS_H
#define MMPORT_TESTS_PT_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mmport/mmport.h>

#include "mmp_test.h"

struct tcfg {
    const char *name;
    struct mmp_pt_config c;
};

static const struct tcfg pt_cfgs[] = {
    {"x86-64", {MMP_PT_X86_64, 4096, 48, 0, 0, 0, 0, 0}},
    {"x86-64-la57", {MMP_PT_X86_64, 4096, 57, 0, 0, 0, 0, 0}},
    {"arm64-4k-48", {MMP_PT_ARM64_S1, 4096, 48, 0, 0, 0, 0, 0}},
    {"arm64-4k-39", {MMP_PT_ARM64_S1, 4096, 39, 0, 0, 0, 0, 0}},
    {"arm64-16k-47", {MMP_PT_ARM64_S1, 16384, 47, 0, 0, 0, 0, 0}},
    {"arm64-16k-48", {MMP_PT_ARM64_S1, 16384, 48, 0, 0, 0, 0, 0}},
    {"arm64-64k-42", {MMP_PT_ARM64_S1, 65536, 42, 0, 0, 0, 0, 0}},
    {"arm64-64k-48", {MMP_PT_ARM64_S1, 65536, 48, 0, 0, 0, 0, 0}},
    {"arm64-s2-4k-40", {MMP_PT_ARM64_S2, 4096, 40, 0, 0, 0, 0, 0}},
    {"arm64-s2-16k-48", {MMP_PT_ARM64_S2, 16384, 48, 0, 0, 0, 0, 0}},
    {"arm64-s2-64k-44", {MMP_PT_ARM64_S2, 65536, 44, 0, 0, 0, 0, 0}},
    {"arm64-el2-4k-48", {MMP_PT_ARM64_S1, 4096, 48, 0, MMP_PT_EL2, 0, 0, 0}},
    {"x86-ept", {MMP_PT_X86_EPT, 4096, 48, 0, 0, 0, 0, 0}},
    {"x86-ept-5-ad-xo", {MMP_PT_X86_EPT, 4096, 57, 0, MMP_PT_EPT_AD | MMP_PT_EPT_XO, 0, 0, 0}},
    {"x86-npt", {MMP_PT_X86_NPT, 4096, 48, 0, 0, 0, 0, 0}},
    {"x86-npt-5", {MMP_PT_X86_NPT, 4096, 57, 0, 0, 0, 0, 0}},
};
#define NCFG (sizeof pt_cfgs / sizeof pt_cfgs[0])

/* x86-64, EPT and NPT: no contiguous bit, no break-before-make. */
static inline int pt_cfg_x86(size_t c)
{
    enum mmp_pt_format f = pt_cfgs[c].c.format;
    return f == MMP_PT_X86_64 || f == MMP_PT_X86_EPT || f == MMP_PT_X86_NPT;
}

/* EPT and NPT flush whole contexts only (MMP_PT_FLUSH_CONTEXT): every
 * tlb_flush call is MMP_FLUSH_ALL. */
static inline int pt_cfg_ctx(size_t c)
{
    enum mmp_pt_format f = pt_cfgs[c].c.format;
    return f == MMP_PT_X86_EPT || f == MMP_PT_X86_NPT || (pt_cfgs[c].c.flags & MMP_PT_FLUSH_CONTEXT);
}

/* Second-stage and single-range EL2 tables reject USER and GLOBAL. */
static inline int pt_cfg_no_user(size_t c)
{
    enum mmp_pt_format f = pt_cfgs[c].c.format;
    return f == MMP_PT_ARM64_S2 || f == MMP_PT_X86_EPT || f == MMP_PT_X86_NPT ||
           (pt_cfgs[c].c.flags & MMP_PT_EL2);
}

struct flush_rec {
    uint64_t va, size;
    unsigned flags;
    int all_invalid; /* every sampled page of the range was unmapped at call time */
};

struct tenv {
    struct mmp_pt pt;
    long live, nalloc, fail_at, frees;
    int nflush;
    struct flush_rec log[512];
    int inspect; /* look the range up in the flush callback */
    uint64_t probe_va, probe_size; /* ... and this range for MMP_FLUSH_ALL */
    /* free_table calls: were they covered by an earlier flush? (lazy tests) */
    int nfree, free_uncovered;
    int free_flushes[256]; /* e->nflush when each free_table call came */
};

static inline void *t_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    struct tenv *e = (struct tenv *)ctx;
    e->nalloc++;
    if (e->fail_at && e->nalloc == e->fail_at)
        return NULL;
    void *p = aligned_alloc(bytes, bytes);
    if (!p)
        return NULL;
    memset(p, 0xa5, bytes); /* the engine must not rely on zeroed pages */
    e->live++;
    *pa = (uint64_t)(uintptr_t)p;
    return p;
}

static inline void t_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    struct tenv *e = (struct tenv *)ctx;
    (void)bytes;
    ck_assert_uint_eq(pa, (uint64_t)(uintptr_t)va);
    e->live--;
    e->frees++;
    if (e->nfree < 256)
        e->free_flushes[e->nfree] = e->nflush;
    e->nfree++;
    free(va);
}

static inline int sampled_invalid(struct tenv *e, uint64_t va, uint64_t size)
{
    struct mmp_pt_info inf;
    mmp_pt_info(&e->pt, &inf);
    uint64_t pages = size / inf.granule, step = pages > 64 ? pages / 64 : 1;
    struct mmp_pt_leaf l;
    for (uint64_t i = 0; i < pages; i += step)
        if (mmp_pt_lookup(&e->pt, va + i * inf.granule, &l) == 0)
            return 0;
    if (mmp_pt_lookup(&e->pt, va + size - inf.granule, &l) == 0)
        return 0;
    return 1;
}

static inline void t_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    struct tenv *e = (struct tenv *)ctx;
    if (e->nflush < (int)(sizeof e->log / sizeof e->log[0])) {
        struct flush_rec *r = &e->log[e->nflush];
        r->va = va;
        r->size = size;
        r->flags = flags;
        if (flags & MMP_FLUSH_ALL)
            va = e->probe_va, size = e->probe_size;
        r->all_invalid = e->inspect && size ? sampled_invalid(e, va, size) : 0;
    }
    e->nflush++;
}

static inline struct mmp_pt_ops t_ops(struct tenv *e)
{
    struct mmp_pt_ops o = {.alloc_table = t_alloc,
                           .free_table = t_free,
                           .phys_to_virt = NULL,
                           .tlb_flush = t_flush,
                           .ctx = e};
    return o;
}

static inline struct tenv *tenv_new(const struct mmp_pt_config *c)
{
    struct tenv *e = calloc(1, sizeof *e);
    struct mmp_pt_ops o = t_ops(e);
    ck_assert_int_eq(mmp_pt_init(&e->pt, c, &o), 0);
    return e;
}

static inline void tenv_free(struct tenv *e)
{
    mmp_pt_fini(&e->pt);
    ck_assert_int_eq(e->live, 0);
    free(e);
}

/* Attributes every format accepts. */
#define RW (MMP_PROT_READ | MMP_PROT_WRITE)
#define RO (MMP_PROT_READ)

static inline uint64_t rnd64(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The smallest block (leaf above the page) the table offers. */
static inline uint64_t first_block(const struct mmp_pt_info *inf)
{
    for (unsigned b = 0; b < 40; b++)
        if ((inf->block_sizes >> b & 1) && (1ull << b) > inf->granule)
            return 1ull << b;
    return 0;
}

/* Reference model: one entry per granule page of a window. */
struct mpage {
    uint64_t pa;
    uint32_t attrs;
    uint8_t valid;
};

struct walk_cmp {
    const struct mpage *m;
    uint64_t base, gran, npages;
    uint64_t next;   /* page index the next leaf must not precede */
    uint64_t seen;   /* valid pages covered */
    int bad;
    char why[160];
    uint64_t cont_sizes;
    const struct mmp_pt *pt;
};

static inline uint64_t run_bytes_for(uint64_t cont_sizes, uint64_t leaf)
{
    for (unsigned b = 0; b < 64; b++)
        if ((cont_sizes >> b & 1) && (1ull << b) > leaf && (1ull << b) / leaf <= 128)
            return 1ull << b;
    return 0;
}

static inline int cmp_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct walk_cmp *w = (struct walk_cmp *)arg;
    if (w->bad)
        return 1;
    for (uint64_t off = 0; off < l->size; off += w->gran) {
        uint64_t va = l->va + off;
        if (va < w->base || va >= w->base + w->npages * w->gran)
            continue;
        uint64_t i = (va - w->base) / w->gran;
        const struct mpage *p = &w->m[i];
        if (!p->valid || p->pa != l->pa + off || p->attrs != l->attrs) {
            snprintf(w->why, sizeof w->why,
                     "va %#llx: table pa %#llx attrs %#x, model valid %d pa %#llx attrs %#x",
                     (unsigned long long)va, (unsigned long long)(l->pa + off), l->attrs,
                     p->valid, (unsigned long long)p->pa, p->attrs);
            w->bad = 1;
            return 1;
        }
        w->seen++;
    }
    if (l->kind == MMP_LEAF_CONT) {
        /* The whole naturally aligned run: valid, contiguous, same attrs, all cont. */
        uint64_t rb = run_bytes_for(w->cont_sizes, l->size);
        uint64_t rva = l->va & ~(rb - 1), rpa = l->pa - (l->va - rva);
        if (!rb || (rpa & (rb - 1))) {
            snprintf(w->why, sizeof w->why, "cont leaf %#llx misaligned run",
                     (unsigned long long)l->va);
            w->bad = 1;
            return 1;
        }
        for (uint64_t o = 0; l->va == rva && o < rb; o += l->size) {
            struct mmp_pt_leaf x;
            if (mmp_pt_lookup(w->pt, rva + o, &x) || x.kind != MMP_LEAF_CONT ||
                x.pa != rpa + o || x.attrs != l->attrs || x.size != l->size) {
                snprintf(w->why, sizeof w->why, "cont run at %#llx broken at +%#llx",
                         (unsigned long long)rva, (unsigned long long)o);
                w->bad = 1;
                return 1;
            }
        }
    }
    return 0;
}

/* The table translates exactly what the model says over the window, every
 * contiguous run keeps its rules, and table pages in use equal both what a
 * walk finds and what the allocator handed out. */
static inline void check_model(struct tenv *e, const struct mpage *m, uint64_t base,
                               uint64_t npages, const char *ctx)
{
    struct mmp_pt_info inf;
    mmp_pt_info(&e->pt, &inf);
    struct walk_cmp w = {m, base, inf.granule, npages, 0, 0, 0, "", inf.cont_sizes, &e->pt};
    int rc = mmp_pt_walk(&e->pt, base, npages * inf.granule, cmp_leaf, &w);
    ck_assert_msg(!w.bad && rc == 0, "%s: %s", ctx, w.why);
    uint64_t valid = 0;
    for (uint64_t i = 0; i < npages; i++)
        valid += m[i].valid;
    ck_assert_msg(w.seen == valid, "%s: walk saw %llu valid pages, model %llu", ctx,
                  (unsigned long long)w.seen, (unsigned long long)valid);
    struct mmp_pt_usage u;
    struct mmp_pt_stats st;
    ck_assert_int_eq(mmp_pt_usage(&e->pt, &u), 0);
    mmp_pt_stats(&e->pt, &st);
    ck_assert_msg(u.table_pages == st.table_pages, "%s: walk %llu tables, stats %llu", ctx,
                  (unsigned long long)u.table_pages, (unsigned long long)st.table_pages);
    long root_pages = (long)(inf.root_bytes / inf.granule);
    ck_assert_msg((long)u.table_pages == e->live - 1 + root_pages,
                  "%s: walk %llu table pages, allocator %ld live", ctx,
                  (unsigned long long)u.table_pages, e->live);
    ck_assert_msg(u.empty_tables == 0, "%s: %llu empty tables left", ctx,
                  (unsigned long long)u.empty_tables);
}

static inline void model_set(struct mpage *m, uint64_t first, uint64_t n, uint64_t pa,
                             uint64_t gran, uint32_t attrs, int valid)
{
    for (uint64_t i = 0; i < n; i++) {
        m[first + i].valid = (uint8_t)valid;
        m[first + i].pa = valid ? pa + i * gran : 0;
        m[first + i].attrs = valid ? attrs : 0;
    }
}

#endif
