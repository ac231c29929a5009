/* SPDX-License-Identifier: MIT */
/*
 * The one descent of a table tree. Every path that looks at more than one
 * entry - map, unmap and protect (their prepare and commit passes), lookup,
 * walk, usage, teardown and the freeing of unlinked subtrees - is a
 * visitor of pt_walk(); none descends by itself.
 *
 * pt_walk() visits [va, last] of the table t at depth d0 slot by slot. For a
 * slot above the last level it asks the visitor's `entry` what to do:
 *   PT_SKIP     nothing (the walk moves to the next slot);
 *   PT_SPAN     hand slots [s->i, index of s->span_last] of this table to
 *               `span` in one call (the visitor stretches over as many
 *               slots as it wants to treat alike);
 *   PT_DESCEND  walk the table given with pt_descend() (depth d + 1) over
 *               the slot's part of the range, then call `post` for the
 *               slot (table pre/post order).
 * A non-zero return of `span` or `post`, or a negative one of `entry`,
 * ends the walk with that value.
 * Without `entry`, tables are descended into and everything else is a
 * one-slot span (the read-only walks). At the last level the whole range
 * of the table goes to `span` at once.
 *
 * The walk is iterative (a frame per level, bounded by MMP_PT_MAXLEV) and
 * always inlined: each caller passes a constant visitor, so the callbacks
 * become direct, inlined code and `nlev` a constant in the depth-specialised
 * engine instances (core/pt_engine.c).
 *
 * A prepare pass walks tables that do not exist yet (the ones its commit
 * would create): s->t is NULL and every entry of such a table is of kind
 * s->vkind (PT_INV for a new table, PT_LEAF for a split block).
 *
 * Corrupted tables (a bug or a stray DMA write in the caller) are caught
 * here, for every path: an entry the walk loads that the format reserves
 * (mmp_pt_fmt::reserved), a table entry that leads back to the root or to
 * a table on the walk's own path (a cycle), and entering more tables than
 * the table owns (pages linked twice) end the walk with -EIO; with
 * PT_V_CHECK, so does a reserved entry in a span. Descents are
 * bounded by the level count. A visitor that only needs a subtree to be
 * sound (an update that will free it) walks it with pt_validate(): its
 * tables are descended into and checked, nothing is handed to the visitor.
 */
#ifndef MMPORT_CORE_PT_WALK_H
#define MMPORT_CORE_PT_WALK_H

#include "pt_int.h"

enum { PT_SKIP = 0, PT_SPAN = 1, PT_DESCEND = 2 };

/* Visitor flags. */
#define PT_V_ACQUIRE 1u /* load entries with acquire (readers racing a writer) */
#define PT_V_CHECK 2u   /* check every entry of a span for reserved ones too */

/* One slot of one table, as the walker shows it to a visitor. The walk
 * keeps one per depth; slot d + 1 describes the table below slot d. */
struct pt_slot {
    /* the table at this depth (set by the parent's pt_descend()) */
    uint64_t *t;    /* NULL: imagined by a prepare pass */
    /* the slot */
    uint64_t e;     /* the entry (0 in an imagined table) */
    uint64_t va, last; /* the walked range's part in this slot */
    uint64_t end;      /* last address of the walked range in this table */
    /* PT_SPAN: last address of the span (>= last), set by the visitor */
    uint64_t span_last;
    /* free for the visitor between entry and post */
    uint64_t aux, aux2;
    unsigned i;
    /* (bytes: the walk keeps a frame per level on the caller's stack,
     * which may be one page) */
    uint8_t d;
    uint8_t kind;   /* PT_INV / PT_TABLE / PT_LEAF */
    uint8_t tag;    /* free for the visitor */
    uint8_t st;     /* free for the visitor */
    uint8_t vkind;  /* t == NULL: the kind of every entry */
    bool priv;      /* t is not linked yet (built by this call) */
    bool vonly;     /* pt_validate(): walked for soundness only */
    bool full;      /* the walked range covers the whole slot */
};

struct pt_visitor {
    unsigned flags;
    int (*entry)(void *ctx, struct pt_slot *s);
    int (*span)(void *ctx, struct pt_slot *s);
    int (*post)(void *ctx, struct pt_slot *s);
};

/* Visitor callbacks are inlined into the walk that calls them. */
#define PT_VISITOR static inline __attribute__((always_inline))

/* An entry callback's answer to descend into child (NULL: an imagined
 * table, every entry of kind vkind; priv: not linked yet). */
static inline __attribute__((always_inline)) int pt_descend(struct pt_slot *s, uint64_t *child,
                                                            int vkind, bool priv)
{
    s[1].t = child;
    s[1].vkind = (uint8_t)vkind;
    s[1].priv = priv;
    s[1].vonly = s->vonly;
    return PT_DESCEND;
}

/* An entry callback's answer to walk the live table child below s only
 * for soundness (the walker checks it and its subtree; the visitor sees
 * nothing of it but its post for s). */
static inline int pt_validate(struct pt_slot *s, uint64_t *child)
{
    pt_descend(s, child, PT_TABLE, false);
    s[1].vonly = true;
    return PT_DESCEND;
}

/* A last-level entry the format reserves. */
static inline __attribute__((always_inline)) bool pt_leaf_bad(const struct mmp_pt_geom *g, uint64_t e)
{
    return ((g->leaf_bad >> (e & 63)) & 1) || ((e & g->valid_bit) && (e & g->leaf_rsv));
}

/* A valid entry at depth d the format reserves (a corrupted table). */
static inline bool pt_bad(const struct mmp_pt_geom *g, unsigned d, uint64_t e)
{
    if (d + 1 == g->nlev)
        return pt_leaf_bad(g, e);
    return (e & g->valid_bit) && g->fmt->reserved(g, d, e);
}

/* The OR of e ^ e0 over the entries [p, end) and, with any, their OR.
 * Eight at a time in GNU vectors (SSE2, NEON): the -O2 vectoriser leaves
 * a loop of unknown length scalar. Inlined with any NULL or not, so the
 * loop does only what is asked (half the work without the OR). */
static inline __attribute__((always_inline)) uint64_t
pt_scan_leaves(const uint64_t *p, const uint64_t *end, uint64_t e0, uint64_t *any)
{
    typedef uint64_t v2 __attribute__((vector_size(16)));
    v2 o0 = {0, 0}, o1 = o0, d0 = o0, d1 = o0, x0 = {e0, e0};
    for (; end - p >= 8; p += 8) {
        v2 w, x, y, z;
        __builtin_memcpy(&w, p, sizeof w);
        __builtin_memcpy(&x, p + 2, sizeof x);
        __builtin_memcpy(&y, p + 4, sizeof y);
        __builtin_memcpy(&z, p + 6, sizeof z);
        if (any) {
            o0 |= w | y;
            o1 |= x | z;
        }
        d0 |= (w ^ x0) | (y ^ x0);
        d1 |= (x ^ x0) | (z ^ x0);
    }
    o0 |= o1;
    d0 |= d1;
    uint64_t an = o0[0] | o0[1], df = d0[0] | d0[1];
    for (; p < end; p++) {
        an |= *p;
        df |= *p ^ e0;
    }
    if (any)
        *any = an;
    return df;
}

/* -EIO if one of the entries [a, b] of the live table t (depth d) is
 * reserved. racing: a writer may store meanwhile (atomic loads). */
static inline int pt_check(const struct mmp_pt_geom *g, unsigned d, const uint64_t *t, unsigned a,
                           unsigned b, bool racing)
{
    if (!t || (d + 1 == g->nlev && !g->leaf_rsv && !g->leaf_bad))
        return 0;
    if (d + 1 < g->nlev) {
        for (unsigned k = a; k <= b; k++)
            if (pt_bad(g, d, pt_ld(&t[k])))
                return -MMP_EIO;
        return 0;
    }
    uint64_t vb = g->valid_bit, rsv = g->leaf_rsv;
    if (!racing) {
        /* Whole tables (the prepare pass of protect and unmap), where only
         * this writer stores (plain loads): entries that all share bits
         * 5:0 with the first (one mapping's leaves) and hold no reserved
         * bit anywhere need one test. */
        uint64_t an = 0, e0 = t[a];
        uint64_t df = rsv ? pt_scan_leaves(t + a, t + b + 1, e0, &an)
                          : pt_scan_leaves(t + a, t + b + 1, e0, NULL);
        if (!(df & 63) && !(an & rsv))
            return (g->leaf_bad >> (e0 & 63)) & 1 ? -MMP_EIO : 0;
    }
    /* Otherwise the set of bits 5:0 values seen, then one test. */
    uint64_t seen = 0, hi = 0;
    for (unsigned k = a; k <= b; k++) {
        uint64_t e = racing ? pt_ld(&t[k]) : t[k];
        seen |= 1ull << (e & 63);
        if (rsv)
            hi |= (e & vb) ? e : 0;
    }
    return (seen & g->leaf_bad) || (hi & rsv) ? -MMP_EIO : 0;
}

/*
 * Most tables one walk may enter: a tree holds each of its pages once, so
 * a walk that enters more than the table owns is going round pages linked
 * twice (a chain of them would take 512^levels steps). Shared tables:
 * other writers' new tables are counted when their calls end; a reader
 * racing the writer (racing) may still walk tables unlinked meanwhile.
 */
static inline uint64_t pt_tables_max(const struct pt *pt, bool racing)
{
    return pt_ld(&pt->st.table_pages) + (racing || (pt->cfg_flags & MMP_PT_SHARED) ? 4096 : 0);
}

/* The table c a walk is about to enter below frame s is not the root,
 * nor one of the tables on the walk's path from top (a cycle), nor a page
 * already given to free_table (linked twice; PT_DFREE_MARK; a reader
 * racing the writer may meet one that was unlinked under it: pt_walk). */
static inline bool pt_child_ok(const struct pt *pt, const struct pt_slot *top,
                               const struct pt_slot *s, const uint64_t *c, bool racing)
{
    if ((uintptr_t)c - (uintptr_t)pt->root < pt->g.root_bytes ||
        (!racing && pt_ld(&c[2]) == PT_DFREE_MARK))
        return false;
    for (; top <= s; top++)
        if (top->t == c)
            return false;
    return true;
}

/* In post: the table the walk descended into from slot s. */
static inline uint64_t *pt_slot_child(const struct pt_slot *s)
{
    return s[1].t;
}

/* Kind of entry i of the table a slot describes. */
static inline int pt_slot_kind(const struct mmp_pt_geom *g, const struct pt_slot *s, unsigned i)
{
    return s->t ? pt_kind(g, s->d, pt_ld(&s->t[i])) : s->vkind;
}

static inline __attribute__((always_inline)) int
pt_walk(const struct pt_visitor *v, void *ctx, const struct pt *pt, unsigned nlev, unsigned d0,
        uint64_t *t0, bool priv0, uint64_t va, uint64_t last)
{
    const struct mmp_pt_geom *g = &pt->g;
    struct pt_slot f[MMP_PT_MAXLEV]; /* (pt_descend() writes s[1] below the last level only) */
    struct pt_slot *s = &f[d0], *top = s;
    uint64_t ntab = 0; /* tables entered */
    s->t = t0;
    s->vkind = PT_TABLE;
    s->priv = priv0;
    s->vonly = false;
    s->end = last;
    s->d = d0;
    for (;;) {
        unsigned d = s->d;
        int rc;
        s->va = va;
        s->i = pt_idx(g, d, va);
        if (d + 1 == nlev) {
            s->last = s->span_last = s->end;
            if (!s->vonly) {
                if ((v->flags & PT_V_CHECK) &&
                    (rc = pt_check(g, d, s->t, s->i, pt_idx(g, d, s->end),
                                   (v->flags & PT_V_ACQUIRE) != 0)) != 0)
                    return rc;
                rc = v->span(ctx, s);
                if (rc)
                    return rc;
            }
        } else {
            uint64_t m = ((uint64_t)1 << g->shift[d]) - 1, sl = va | m;
            s->full = !(va & m) && sl <= s->end;
            s->last = sl <= s->end ? sl : s->end;
            if (s->t) {
                s->e = (v->flags & PT_V_ACQUIRE) ? pt_ld_acquire(&s->t[s->i]) : pt_ld(&s->t[s->i]);
                s->kind = pt_kind(g, d, s->e);
                if (s->kind != PT_INV && g->fmt->reserved(g, d, s->e))
                    return -MMP_EIO;
            } else {
                s->e = 0;
                s->kind = s->vkind;
            }
            if (s->vonly)
                rc = s->kind == PT_TABLE ? pt_descend(s, pt_child(pt, s->e), PT_TABLE, false)
                                         : PT_SKIP;
            else if (v->entry)
                rc = v->entry(ctx, s);
            else if (s->kind == PT_TABLE)
                rc = pt_descend(s, pt_child(pt, s->e), PT_TABLE, s->priv);
            else
                s->span_last = s->last, rc = PT_SPAN;
            if (rc < 0)
                return rc;
            if (rc == PT_DESCEND && s[1].t && (v->flags & PT_V_ACQUIRE) &&
                pt_ld(&s[1].t[2]) == PT_DFREE_MARK) {
                /* A reader racing the writer: a table unlinked (and queued
                 * for free_table) after the walk loaded its entry. Unmapped,
                 * or folded into a block: the visitor's span sees the table
                 * entry (lookups look again from the root, core/pt.c). */
                s->span_last = s->last;
                rc = PT_SPAN;
            }
            if (rc == PT_DESCEND) {
                bool racing = (v->flags & PT_V_ACQUIRE) != 0;
                if (s[1].t && (!pt_child_ok(pt, top, s, s[1].t, racing) ||
                               ++ntab > pt_tables_max(pt, racing)))
                    return -MMP_EIO;
                s[1].end = s->last;
                s[1].d = d + 1;
                s++;
                continue;
            }
            if (rc == PT_SPAN) {
                if ((v->flags & PT_V_CHECK) && s->span_last != s->last &&
                    (rc = pt_check(g, d, s->t, s->i + 1, pt_idx(g, d, s->span_last),
                                   (v->flags & PT_V_ACQUIRE) != 0)) != 0)
                    return rc;
                rc = v->span(ctx, s);
                if (rc)
                    return rc;
                s->last = s->span_last;
            }
        }
        /* Next slot; climb out of every table whose range is done. */
        while (s->last == s->end) {
            if (s == top)
                return 0;
            s--;
            if (v->post && !s->vonly && (rc = v->post(ctx, s)) != 0)
                return rc;
        }
        va = s->last + 1;
    }
}

/* The one leaf decoder: what the leaf e at depth d maps (va inside it). */
static inline void pt_leaf_of(const struct pt *pt, unsigned d, uint64_t e, uint64_t va,
                              struct mmp_pt_leaf *l)
{
    const struct mmp_pt_geom *g = &pt->g;
    uint64_t sz = (uint64_t)1 << g->shift[d];
    l->va = va & ~(sz - 1);
    l->pa = pt_oa(g, d, e);
    l->size = sz;
    l->attrs = mmp_core_pt_attrs(g, d, e);
    l->level = (uint8_t)(g->first_level + g->level_step * (int)d);
    l->kind = (e & g->cont_bit) ? MMP_LEAF_CONT : d + 1 == g->nlev ? MMP_LEAF_PAGE : MMP_LEAF_BLOCK;
    l->desc = e;
}

/* Last address of the whole index space of the table at depth d (used to
 * walk every slot of a table, e.g. for teardown and usage). */
static inline uint64_t pt_span_of(const struct mmp_pt_geom *g, unsigned d)
{
    unsigned bits = g->shift[d] + g->nbits[d];
    return bits >= 64 ? ~0ull : ((uint64_t)1 << bits) - 1;
}

/* ---- every table page below a table ------------------------------------ */

struct pt_tables {
    const struct pt *pt;
    void (*fn)(void *arg, void *va, uint64_t pa);
    void *arg;
};

static inline int pt_tables_span(void *ctx, struct pt_slot *s)
{
    (void)ctx;
    (void)s;
    return 0;
}

static inline int pt_tables_post(void *ctx, struct pt_slot *s)
{
    struct pt_tables *w = (struct pt_tables *)ctx;
    w->fn(w->arg, pt_slot_child(s), pt_tbl_oa(&w->pt->g, s->e));
    return 0;
}

/* fn(arg, va, pa) for every table page below t (depth d), children before
 * their parent; t itself is not included. Teardown and the deferred free
 * of unlinked subtrees. -EIO where the subtree is corrupted (the walk
 * stops there: what it did not reach is not passed to fn). */
static inline int pt_for_each_table(const struct pt *pt, unsigned d, uint64_t *t,
                                     void (*fn)(void *arg, void *va, uint64_t pa), void *arg)
{
    static const struct pt_visitor v = {.span = pt_tables_span, .post = pt_tables_post};
    struct pt_tables w = {pt, fn, arg};
    /* Only the indices matter below the table: walk all of them. */
    return pt_walk(&v, &w, pt, pt->g.nlev, d, t, false, 0, pt_span_of(&pt->g, d));
}

#endif
