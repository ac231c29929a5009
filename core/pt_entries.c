/* SPDX-License-Identifier: MIT */
/*
 * mmp_pt_walk_entries(): a read-only walk of the descriptors themselves,
 * table entries included, for the caller's own inspection (its software
 * bits, its own checks of the tree). A visitor of the one walker
 * (core/pt_walk.h), so it is bounded and stops with -EIO on a corrupted
 * table as every other walk does.
 */
#include "pt_reason.h"
#include "pt_walk.h"

/* The walk returns this when fn stopped it (fn's value is in the ctx). */
#define STOPPED (-4097)

struct ent_ctx {
    const struct pt *pt;
    mmp_pt_entry_fn fn;
    void *arg;
    int rc; /* fn's non-zero value */
};

static int report(struct ent_ctx *c, unsigned d, uint64_t va, uint64_t e, unsigned kind)
{
    const struct mmp_pt_geom *g = &c->pt->g;
    uint64_t sz = (uint64_t)1 << g->shift[d];
    struct mmp_pt_entry x = {
        .va = va & ~(sz - 1),
        .size = sz,
        .desc = e,
        .level = (int8_t)(g->first_level + g->level_step * (int)d),
        .kind = (uint8_t)kind,
    };
    c->rc = c->fn(c->arg, &x);
    return c->rc ? STOPPED : 0;
}

PT_VISITOR int ent_entry(void *ctx, struct pt_slot *s)
{
    struct ent_ctx *c = (struct ent_ctx *)ctx;
    if (s->kind != PT_TABLE) {
        s->span_last = s->last;
        return PT_SPAN;
    }
    if (report(c, s->d, s->va, s->e, MMP_ENTRY_TABLE))
        return STOPPED;
    return pt_descend(s, pt_child(c->pt, s->e), PT_TABLE, false);
}

/* One slot above the last level, or the walked part of a last-level table. */
PT_VISITOR int ent_span(void *ctx, struct pt_slot *s)
{
    struct ent_ctx *c = (struct ent_ctx *)ctx;
    const struct mmp_pt_geom *g = &c->pt->g;
    uint64_t sz = (uint64_t)1 << g->shift[s->d];
    bool last = s->d + 1 == g->nlev;
    for (uint64_t va = s->va;; va = (va | (sz - 1)) + 1) {
        uint64_t e = last ? pt_ld_acquire(&s->t[pt_idx(g, s->d, va)]) : s->e;
        int kind = pt_kind(g, s->d, e);
        /* (a table here: one the walk reported, then found freed under a
         * writer racing it; its POST closes it) */
        unsigned k = kind == PT_LEAF    ? MMP_ENTRY_LEAF
                     : kind == PT_TABLE ? MMP_ENTRY_TABLE_POST
                                        : MMP_ENTRY_INVALID;
        if (e && report(c, s->d, va, e, k))
            return STOPPED;
        if ((va | (sz - 1)) >= s->span_last)
            return 0;
    }
}

PT_VISITOR int ent_post(void *ctx, struct pt_slot *s)
{
    return report((struct ent_ctx *)ctx, s->d, s->va, s->e, MMP_ENTRY_TABLE_POST);
}

static const struct pt_visitor ent_visitor = {.flags = PT_V_ACQUIRE | PT_V_CHECK,
                                              .entry = ent_entry,
                                              .span = ent_span,
                                              .post = ent_post};

int mmp_pt_walk_entries(const struct mmp_pt *p, uint64_t va, uint64_t size, mmp_pt_entry_fn fn,
                        void *arg)
{
    uint64_t last;
    int rc = mmp_core_pt_walk_args(p, fn != NULL, va, size, &last);
    if (rc)
        return rc;
    const struct pt *pt = cpt_of(p);
    struct ent_ctx c = {.pt = pt, .fn = fn, .arg = arg};
    bool epoch = pt_reader_enter(pt);
    rc = pt_walk(&ent_visitor, &c, pt, pt->g.nlev, 0, pt->root, false, va, last);
    pt_reader_leave(epoch);
    if (rc == STOPPED)
        return c.rc;
    return rc < 0 ? mmp_core_pt_fail_op(pt, rc, va, last) : rc;
}
