/* SPDX-License-Identifier: MIT */
/* Page tables: creation, lookup, walk, geometry and counters. */
#include "pt_engine.h"
#include "pt_reason.h"
#include "pt_walk.h"

int mmp_core_pt_geom(struct mmp_pt_geom *g, const struct mmp_pt_config *cfg, unsigned *rule)
{
    *rule = MMP_PT_RULE_FORMAT;
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
    *rule = MMP_PT_RULE_GEOMETRY;
    int rc = f->setup(g, cfg);
    g->fmt = f;
    if (rc || !cfg->max_leaf)
        return rc;
    *rule = MMP_PT_RULE_MAX_LEAF;
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

/* Init failed on storage that is no table: it keeps the reason for
 * mmp_pt_reason() (a state no live-table check accepts). */
static int init_failed(struct mmp_pt *p, const struct mmp_pt_reason *r)
{
    struct pt *pt = pt_of(p);
    __builtin_memset(p, 0, sizeof *p);
    pt->state = pt_state_of(p, PT_FAILED);
    return mmp_core_pt_fail(pt, r->err, r->rule, r->value, r->end, r->limit);
}

int mmp_pt_init(struct mmp_pt *p, const struct mmp_pt_config *cfg, const struct mmp_pt_ops *ops)
{
    if (!p)
        return -MMP_EINVAL;
    struct pt *pt = pt_of(p);
    /* The storage may be garbage (struct pt::state says how that is told). */
    mmp_host_assume_init(&pt->state, sizeof pt->state);
    if (pt_live(p)) /* re-initialising would leak every page of it */
        return mmp_core_pt_fail(pt, -MMP_EBUSY, MMP_PT_RULE_LIVE, 0, 0, 0);
    struct mmp_pt_reason r;
    struct mmp_pt_geom g;
    if (mmp_core_pt_config_check(cfg, &ops, &g, &r))
        return init_failed(p, &r);
    __builtin_memset(p, 0, sizeof *p);
    pt->g = g;
    mmp_core_pt_engine_select(p, (cfg->flags & MMP_PT_GENERIC_DEPTH) != 0);
    pt->ops = *ops;
    pt->cfg_flags = cfg->flags;
    if (cfg->format == MMP_PT_X86_EPT || cfg->format == MMP_PT_X86_NPT)
        pt->cfg_flags |= MMP_PT_FLUSH_CONTEXT; /* no by-address flush there */
    mmp_core_pt_batch_init(pt, cfg);
    uint64_t pa = 0;
    void *root = ops->alloc_table(ops->ctx, pt->g.root_bytes, &pa);
    r = (struct mmp_pt_reason){.rule = MMP_PT_RULE_NOMEM, .err = -MMP_ENOMEM};
    if (!root)
        return init_failed(p, &r);
    if (pa & (pt->g.root_bytes - 1)) { /* the base register cannot hold it */
        ops->free_table(ops->ctx, root, pa, pt->g.root_bytes);
        r = (struct mmp_pt_reason){.rule = MMP_PT_RULE_TABLE_ALIGN, .err = -MMP_EINVAL,
                                   .value = pa, .limit = pt->g.root_bytes};
        return init_failed(p, &r);
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
    pt->closing = 1;
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
    uint64_t gm = ((uint64_t)1 << pt->g.granule_shift) - 1;
    if (!size || (va & gm) || (size & gm))
        return mmp_core_pt_fail(pt, -MMP_EINVAL,
                                !size     ? MMP_PT_RULE_SIZE_ZERO
                                : va & gm ? MMP_PT_RULE_VA_ALIGN
                                          : MMP_PT_RULE_SIZE_ALIGN,
                                va & gm ? va : size, 0, gm + 1);
    uint64_t l = va + size - 1;
    if (l < va)
        return mmp_core_pt_fail(pt, -MMP_EOVERFLOW, MMP_PT_RULE_VA_WRAP, va, 0, size);
    unsigned vb = pt->g.va_bits;
    if (pt->g.sign_extend) {
        /* Canonical: bits 63..vb-1 all equal, and both ends in one half. */
        uint64_t hi_va = va >> (vb - 1), hi_l = l >> (vb - 1);
        uint64_t all = (~0ull) >> (vb - 1);
        if ((hi_va != 0 && hi_va != all) || hi_va != hi_l)
            return mmp_core_pt_fail(pt, -MMP_ERANGE, MMP_PT_RULE_VA_CANONICAL, va, l, vb);
    } else if (l >> vb) {
        return mmp_core_pt_fail(pt, -MMP_ERANGE, MMP_PT_RULE_VA_RANGE, va, l, vb);
    }
    *last = l;
    return 0;
}

struct walk_ctx {
    const struct pt *pt;
    mmp_pt_walk_fn fn;
    void *arg;
    bool shared;   /* MMP_PT_SHARED: entries may be LOCKED */
    bool retry;    /* met one: walk again from the root at resume */
    bool fn_failed; /* the walk returns fn's value */
    unsigned tries; /* exclusive tables: walks again after a freed table */
    uint64_t resume;
};

int mmp_pt_reclaim(struct mmp_pt *p)
{
    if (!pt_live(p))
        return -MMP_EINVAL;
    if (pt_builtin_epoch(pt_of(p)))
        mmp_host_epoch_drain();
    return 0;
}

/* Read-only walks: every valid leaf in the range goes to w->fn; a non-zero
 * return stops the walk and is returned. */
#define READ_TRIES 16

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
            if (rc) {
                w->fn_failed = true;
                return rc;
            }
        } else if (w->shared ? pt_locked(g, e) || pt_kind(g, s->d, e) == PT_TABLE
                             : (pt_kind(g, s->d, e) == PT_TABLE || e == PT_DFREE_MARK) &&
                                   w->tries++ < READ_TRIES) {
            /* Another writer is changing it (or it is in a table being
             * unlinked): the old or the new translation is coming, so look
             * again from the root. A table here is one that replaced what
             * the walk saw (locked a moment ago). In an exclusive table it
             * is one the writer freed after the walk loaded its entry
             * (pt_walk), and the mark an entry of one freed while the walk
             * was inside: unmapped, or folded into a block that has its
             * translations. A few times: a corrupted table may link a
             * freed page for good. */
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
    int rc;
    w->shared = (pt->cfg_flags & MMP_PT_SHARED) != 0;
    do {
        w->retry = false;
        bool ep = pt_reader_enter(pt);
        rc = pt_walk(&read_visitor, w, pt, pt->g.nlev, 0, pt->root, false, va, last);
        pt_reader_leave(ep);
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
    if (!pt_live(p))
        return -MMP_EINVAL;
    if (!out)
        return mmp_core_pt_fail(cpt_of(p), -MMP_EINVAL, MMP_PT_RULE_NULL_ARG, 0, 0, 0);
    const struct pt *pt = cpt_of(p);
    uint64_t last;
    int rc = mmp_core_pt_check_va(pt, va & ~(((uint64_t)1 << pt->g.granule_shift) - 1),
                                  (uint64_t)1 << pt->g.granule_shift, &last);
    if (rc)
        return rc;
    struct walk_ctx w = {.pt = pt, .fn = lookup_leaf, .arg = out};
    rc = read_walk(&w, va, va);
    if (rc < 0)
        return mmp_core_pt_fail_op(pt, rc, va, va);
    return rc ? 0 : -MMP_ENOENT; /* a miss is no failure: nothing recorded */
}

int mmp_core_pt_walk_args(const struct mmp_pt *p, bool fn, uint64_t va, uint64_t size,
                          uint64_t *last)
{
    if (!pt_live(p))
        return -MMP_EINVAL;
    if (!fn)
        return mmp_core_pt_fail(cpt_of(p), -MMP_EINVAL, MMP_PT_RULE_NULL_ARG, 0, 0, 0);
    return mmp_core_pt_check_va(cpt_of(p), va, size, last);
}

int mmp_pt_walk(const struct mmp_pt *p, uint64_t va, uint64_t size, mmp_pt_walk_fn fn, void *arg)
{
    uint64_t last;
    int rc = mmp_core_pt_walk_args(p, fn != NULL, va, size, &last);
    if (rc)
        return rc;
    const struct pt *pt = cpt_of(p);
    struct walk_ctx w = {.pt = pt, .fn = fn, .arg = arg};
    rc = read_walk(&w, va, last);
    /* The walk's own -EIO; fn's values are fn's, not recorded. */
    return rc == -MMP_EIO && !w.fn_failed ? mmp_core_pt_fail_op(pt, rc, va, last) : rc;
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
    if (!pt_live(p))
        return -MMP_EINVAL;
    if (!out)
        return mmp_core_pt_fail(cpt_of(p), -MMP_EINVAL, MMP_PT_RULE_NULL_ARG, 0, 0, 0);
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
    if (!pt_live(p))
        return -MMP_EINVAL;
    const struct pt *pt = cpt_of(p);
    if (!out)
        return mmp_core_pt_fail(pt, -MMP_EINVAL, MMP_PT_RULE_NULL_ARG, 0, 0, 0);
    if (id > pt->g.id_max || !pt->g.fmt->regs)
        return mmp_core_pt_fail(pt, -MMP_EINVAL, MMP_PT_RULE_ID, id, 0, pt->g.id_max);
    __builtin_memset(out, 0, sizeof *out);
    pt->g.fmt->regs(&pt->g, pt->root_pa, id, out);
    return 0;
}
