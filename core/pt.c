/* SPDX-License-Identifier: MIT */
/* Page tables: creation, lookup, walk, geometry and counters. */
#include "pt_engine.h"
#include "pt_walk.h"

int mmp_core_pt_geom(struct mmp_pt_geom *g, const struct mmp_pt_config *cfg)
{
    const struct mmp_pt_fmt *f;
    switch (cfg->format) {
    case MMP_PT_X86_64: f = &mmp_core_pt_fmt_x86_64; break;
    case MMP_PT_ARM64_S1: f = &mmp_core_pt_fmt_arm64_s1; break;
    case MMP_PT_ARM64_S2: f = &mmp_core_pt_fmt_arm64_s2; break;
    case MMP_PT_X86_EPT: f = &mmp_core_pt_fmt_x86_ept; break;
    case MMP_PT_X86_NPT: f = &mmp_core_pt_fmt_x86_npt; break;
    default: return -MMP_EINVAL;
    }
    __builtin_memset(g, 0, sizeof *g);
    int rc = f->setup(g, cfg);
    g->fmt = f;
    if (rc || !cfg->max_leaf)
        return rc;
    /* The leaf-size limit, for every format: no block, and no contiguous
     * run, whose size exceeds it (a run is one TLB entry of its total size). */
    uint64_t m = cfg->max_leaf;
    if ((m & (m - 1)) || m < ((uint64_t)1 << g->granule_shift))
        return -MMP_EINVAL;
    for (unsigned d = 0; d < g->nlev; d++) {
        if (((uint64_t)1 << g->shift[d]) > m)
            g->leaf_ok[d] = 0;
        if (g->cont[d] && ((uint64_t)1 << (g->shift[d] + g->cont[d])) > m)
            g->cont[d] = 0;
    }
    g->max_leaf = m;
    return 0;
}

#define CFG_FLAGS                                                                  \
    (MMP_PT_NO_BLOCKS | MMP_PT_NO_CONT | MMP_PT_NO_FOLD | MMP_PT_FLUSH_ALL_OVER |      \
     MMP_PT_KEEP_TABLES | MMP_PT_EL2 | MMP_PT_S2FWB | MMP_PT_TRACK_HW | MMP_PT_SHARED |      \
     MMP_PT_BBML2 | MMP_PT_X86_SIZE_BBM | MMP_PT_GENERIC_DEPTH |                     \
     CFG_EPT_FLAGS)
#define CFG_EPT_FLAGS (MMP_PT_EPT_XO | MMP_PT_EPT_AD | MMP_PT_EPT_MBEC)

int mmp_pt_init(struct mmp_pt *p, const struct mmp_pt_config *cfg, const struct mmp_pt_ops *ops)
{
    if (!p)
        return -MMP_EINVAL;
    struct pt *pt = pt_of(p);
    /* The storage may be garbage (struct pt::state says how that is told). */
    mmp_host_assume_init(&pt->state, sizeof pt->state);
    if (pt_live(p))
        return -MMP_EBUSY; /* re-initialising would leak every page of it */
    if (!cfg || (cfg->flags & ~CFG_FLAGS) || cfg->flush_ranges > PT_MAX_RANGES)
        return -MMP_EINVAL;
    if ((cfg->flags & CFG_EPT_FLAGS) && cfg->format != MMP_PT_X86_EPT)
        return -MMP_EINVAL;
    if ((cfg->flags & MMP_PT_X86_SIZE_BBM) && cfg->format != MMP_PT_X86_64 &&
        cfg->format != MMP_PT_X86_NPT)
        return -MMP_EINVAL; /* an AMD erratum: not for EPT (Intel) or arm64 */
    if ((cfg->flags & MMP_PT_BBML2) && cfg->format != MMP_PT_ARM64_S1 &&
        cfg->format != MMP_PT_ARM64_S2)
        return -MMP_EINVAL;
    if (!ops)
        ops = mmp_host_pt_default_ops();
    if (!ops || !ops->alloc_table || !ops->free_table)
        return -MMP_EINVAL;
    if ((cfg->flags & MMP_PT_SHARED) && !ops->retire_table && !mmp_host_epoch_ok())
        return -MMP_EINVAL; /* nothing could tell when an unlinked table is free */
    __builtin_memset(p, 0, sizeof *p);
    int rc = mmp_core_pt_geom(&pt->g, cfg);
    if (rc)
        return rc;
    mmp_core_pt_engine_select(p, (cfg->flags & MMP_PT_GENERIC_DEPTH) != 0);
    pt->ops = *ops;
    pt->cfg_flags = cfg->flags;
    mmp_core_pt_batch_init(pt, cfg);
    uint64_t pa = 0;
    void *root = ops->alloc_table(ops->ctx, pt->g.root_bytes, &pa);
    if (!root) {
        __builtin_memset(p, 0, sizeof *p);
        return -MMP_ENOMEM;
    }
    if (pa & (pt->g.root_bytes - 1)) { /* the base register cannot hold it */
        ops->free_table(ops->ctx, root, pa, pt->g.root_bytes);
        __builtin_memset(p, 0, sizeof *p);
        return -MMP_EINVAL;
    }
    __builtin_memset(root, 0, pt->g.root_bytes);
    pt->root = (uint64_t *)root;
    pt->root_pa = pa;
    pt->st.table_pages = pt->g.root_bytes >> pt->g.granule_shift;
    pt->state = pt_state_of(p, PT_LIVE);
    return 0;
}

void mmp_pt_fini(struct mmp_pt *p)
{
    if (!pt_live(p))
        return;
    struct pt *pt = pt_of(p);
    mmp_core_pt_sync(pt);
    mmp_pt_reclaim(p);
    /* Through the deferred-free list: a page a corrupted table links
     * twice is freed once (what a corrupted subtree hides is leaked). */
    pt_for_each_table(pt, 0, pt->root, pt_defer_page, pt);
    mmp_core_pt_sync(pt);
    pt->ops.free_table(pt->ops.ctx, pt->root, pt->root_pa, pt->g.root_bytes);
    __builtin_memset(p, 0, sizeof *p);
    pt->state = pt_state_of(p, PT_DEAD);
}

int mmp_core_pt_check_va(const struct pt *pt, uint64_t va, uint64_t size, uint64_t *last)
{
    return pt_check_va(pt, va, size, last);
}

struct walk_ctx {
    const struct pt *pt;
    mmp_pt_walk_fn fn;
    void *arg;
    bool shared;   /* MMP_PT_SHARED: entries may be LOCKED */
    bool retry;    /* met one: walk again from the root at resume */
    uint64_t resume;
};

/* Shared tables with the built-in epoch scheme: readers bracket their walk. */
static bool builtin_epoch(const struct pt *pt)
{
    return (pt->cfg_flags & MMP_PT_SHARED) && !pt->ops.retire_table;
}

int mmp_pt_reclaim(struct mmp_pt *p)
{
    if (!pt_live(p))
        return -MMP_EINVAL;
    if (builtin_epoch(pt_of(p)))
        mmp_host_epoch_drain();
    return 0;
}

/* Read-only walks: every valid leaf in the range goes to w->fn; a non-zero
 * return stops the walk and is returned. */
static int read_span(void *ctx, struct pt_slot *s)
{
    struct walk_ctx *w = (struct walk_ctx *)ctx;
    const struct mmp_pt_geom *g = &w->pt->g;
    uint64_t sz = (uint64_t)1 << g->shift[s->d];
    bool last = s->d + 1 == g->nlev;
    for (uint64_t va = s->va;; va = (va | (sz - 1)) + 1) {
        /* Above the last level the span is the one slot the walker loaded:
         * use that value (loading again could meet a table linked since). */
        uint64_t e = last ? pt_ld_acquire(&s->t[pt_idx(g, s->d, va)]) : s->e;
        if (pt_kind(g, s->d, e) == PT_LEAF) {
            struct mmp_pt_leaf l;
            pt_leaf_of(w->pt, s->d, e, va, &l);
            int rc = w->fn(w->arg, &l);
            if (rc)
                return rc;
        } else if (w->shared && (pt_locked(g, e) || pt_kind(g, s->d, e) == PT_TABLE)) {
            /* Another writer is changing it (or it is in a table being
             * unlinked): the old or the new translation is coming, so look
             * again from the root. A table here is one that replaced what
             * the walk saw (locked a moment ago). */
            w->retry = true;
            w->resume = va;
            return 1;
        }
        if ((va | (sz - 1)) >= s->span_last)
            return 0;
    }
}

static const struct pt_visitor read_visitor = {.flags = PT_V_ACQUIRE | PT_V_CHECK,
                                               .span = read_span};

/* The read-only walk of [va, last], again from the root at every locked
 * entry it meets in a shared table. */
static int read_walk(struct walk_ctx *w, uint64_t va, uint64_t last)
{
    const struct pt *pt = w->pt;
    bool ep = builtin_epoch(pt);
    int rc;
    w->shared = (pt->cfg_flags & MMP_PT_SHARED) != 0;
    do {
        w->retry = false;
        if (ep)
            mmp_host_epoch_enter();
        rc = pt_walk(&read_visitor, w, pt, pt->g.nlev, 0, pt->root, false, va, last);
        if (ep)
            mmp_host_epoch_leave();
        va = w->resume;
    } while (w->retry);
    return rc;
}

static int lookup_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    *(struct mmp_pt_leaf *)arg = *l;
    return 1;
}

int mmp_pt_lookup(const struct mmp_pt *p, uint64_t va, struct mmp_pt_leaf *out)
{
    if (!pt_live(p) || !out)
        return -MMP_EINVAL;
    const struct pt *pt = cpt_of(p);
    uint64_t last;
    int rc = mmp_core_pt_check_va(pt, va & ~(((uint64_t)1 << pt->g.granule_shift) - 1),
                                  (uint64_t)1 << pt->g.granule_shift, &last);
    if (rc)
        return rc;
    struct walk_ctx w = {.pt = pt, .fn = lookup_leaf, .arg = out};
    rc = read_walk(&w, va, va);
    return rc < 0 ? rc : rc ? 0 : -MMP_ENOENT;
}

int mmp_pt_walk(const struct mmp_pt *p, uint64_t va, uint64_t size, mmp_pt_walk_fn fn, void *arg)
{
    if (!pt_live(p) || !fn)
        return -MMP_EINVAL;
    const struct pt *pt = cpt_of(p);
    uint64_t last;
    int rc = mmp_core_pt_check_va(pt, va, size, &last);
    if (rc)
        return rc;
    struct walk_ctx w = {.pt = pt, .fn = fn, .arg = arg};
    return read_walk(&w, va, last);
}

uint64_t mmp_pt_root(const struct mmp_pt *p)
{
    return pt_live(p) ? cpt_of(p)->root_pa : 0;
}

void mmp_pt_stats(const struct mmp_pt *p, struct mmp_pt_stats *out)
{
    if (out && pt_live(p))
        *out = cpt_of(p)->st;
    else if (out)
        __builtin_memset(out, 0, sizeof *out);
}

int mmp_pt_info(const struct mmp_pt *p, struct mmp_pt_info *out)
{
    if (!pt_live(p) || !out)
        return -MMP_EINVAL;
    const struct mmp_pt_geom *g = &cpt_of(p)->g;
    __builtin_memset(out, 0, sizeof *out);
    out->format = g->fmt->format;
    out->granule = 1u << g->granule_shift;
    out->va_bits = g->va_bits;
    out->pa_bits = g->pa_bits;
    out->levels = g->nlev;
    out->start_level = g->first_level;
    out->root_tables = g->root_tables;
    out->root_bytes = g->root_bytes;
    if (g->fmt->format == MMP_PT_ARM64_S1 || g->fmt->format == MMP_PT_ARM64_S2)
        out->t0sz = 64u - g->va_bits;
    if (g->fmt->format == MMP_PT_ARM64_S2)
        out->sl0 = g->start_level_enc;
    if (g->fmt->format == MMP_PT_ARM64_S1)
        out->mair = 0x0444ffull; /* Attr0 0xff WB, Attr1 0x44 NC, Attr2 0x04 nGnRE */
    for (unsigned d = 0; d < g->nlev; d++) {
        if (!g->leaf_ok[d])
            continue;
        out->block_sizes |= 1ull << g->shift[d];
        if (g->cont[d])
            out->cont_sizes |= 1ull << (g->shift[d] + g->cont[d]);
    }
    out->maint = g->maint;
    out->features = g->features;
    out->hcr_set = g->hcr_set;
    out->max_leaf = g->max_leaf;
    return 0;
}

int mmp_pt_regs(const struct mmp_pt *p, uint16_t id, struct mmp_pt_regs *out)
{
    if (!pt_live(p) || !out)
        return -MMP_EINVAL;
    const struct pt *pt = cpt_of(p);
    if (id > pt->g.id_max || !pt->g.fmt->regs)
        return -MMP_EINVAL;
    __builtin_memset(out, 0, sizeof *out);
    pt->g.fmt->regs(&pt->g, pt->root_pa, id, out);
    return 0;
}
