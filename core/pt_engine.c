/* SPDX-License-Identifier: MIT */
/*
 * The page-table update engine: map, unmap, protect, as visitors of the
 * one walker (core/pt_walk.h).
 *
 * Every call walks its range twice with the same visitor:
 *  1. prepare (o->prep): read-only; finds -EEXIST and counts the table
 *     pages the call will need, walking the tables it would create as
 *     imagined ones; they are then allocated up front, so a failed
 *     allocation returns -ENOMEM with nothing changed (Hafnium's
 *     prepare/commit);
 *  2. commit: cannot fail; takes pages from that reserve.
 * (Shared calls walk once: core/pt_shared.c, which uses the primitives
 * below; pt_op::shared is where the two meet.)
 * Both passes make every decision in the same entry callbacks, so they
 * cannot disagree. Tables built during the call (new tables, split blocks)
 * stay private until linked: they are filled completely, then published
 * with one store, so they need neither break-before-make nor flushes.
 *
 * Every change of a live entry goes through one primitive, pt_break(): the
 * format's rule (mmp_pt_fmt::needs_bbm) decides whether it needs
 * break-before-make (store invalid, barrier + flush at once, then write),
 * or a write in place with the flush deferred to the end of the call or
 * lazy section (core/pt_batch.c).
 *
 * The engine is instantiated per paging depth from the list at the end of
 * this file, so the walker runs with its depth a constant (the measured
 * saving: 6-7% fewer instructions); the generic instance reads it from the
 * table.
 */
#include "pt_engine.h"
#include "pt_op.h"
#include "pt_reason.h"
#include "pt_state.h"
#include "pt_walk.h"


static inline size_t gran(const struct mmp_pt_geom *g)
{
    return (size_t)1 << g->granule_shift;
}



/* Extend the slot s to a stretch of full slots while the next one is full
 * and (unless tables_ok) not a table; returns the stretch's last address. */
static uint64_t stretch(const struct pt_op *o, const struct pt_slot *s, bool tables_ok)
{
    uint64_t sz = slot_size(o->g, s->d), slast = s->last;
    if (!s->t) /* an imagined table holds no tables */
        return s->last + ((s->end - s->last) / sz) * sz;
    while (slast != s->end && s->end - slast >= sz) {
        if (!tables_ok && pt_slot_kind(o->g, s, pt_idx(o->g, s->d, slast + 1)) == PT_TABLE)
            break;
        slast += sz;
    }
    return slast;
}

/* ---- the table reserve -------------------------------------------------- */

/* A page of the call's reserve it did not use: back where it came from. */
static void unreserve_page(struct pt_op *o, uint64_t *p, uint64_t pa)
{
    struct mmp_pt_memcache *mc = o->mc;
    if (mc) { /* it came from there, so there is room */
        mc->page[mc->n].va = p;
        mc->page[mc->n++].pa = pa;
    } else {
        pt_free_page(o->pt, p, pa); /* (never linked; a corrupted table may) */
    }
}

static void unreserve(struct pt_op *o)
{
    while (o->res) {
        uint64_t *p = (uint64_t *)o->res;
        uint64_t pa = o->res_pa;
        o->res = (void *)(uintptr_t)p[0];
        o->res_pa = p[1];
        unreserve_page(o, p, pa);
        pt_pages_add(&o->st->table_pages, -1);
    }
    o->nres = 0;
}

static void res_push(struct pt_op *o, uint64_t *p, uint64_t pa)
{
    p[0] = (uint64_t)(uintptr_t)o->res;
    p[1] = o->res_pa;
    o->res = p;
    o->res_pa = pa;
    o->nres++;
}

/* One page for the reserve: from the call's memcache, or alloc_table. */
static uint64_t *new_page(struct pt_op *o, uint64_t *pa)
{
    struct mmp_pt_memcache *mc = o->mc;
    if (!mc) {
        const struct pt *pt = o->pt;
        return (uint64_t *)pt->ops.alloc_table(pt->ops.ctx, gran(o->g), pa);
    }
    if (!mc->n)
        return NULL;
    mc->n--;
    *pa = mc->page[mc->n].pa;
    return (uint64_t *)mc->page[mc->n].va;
}

static int reserve(struct pt_op *o, long n)
{
    if (o->mc && (unsigned long)n > o->mc->n)
        return -MMP_ENOMEM; /* all or nothing: no page taken */
    for (long i = 0; i < n; i++) {
        uint64_t pa = 0;
        uint64_t *p = new_page(o, &pa);
        if (!p) {
            unreserve(o);
            return -MMP_ENOMEM;
        }
        if (pa & (gran(o->g) - 1)) { /* a descriptor cannot hold it */
            unreserve_page(o, p, pa);
            unreserve(o);
            if (o->mc) /* the caller's page: its own reason, recorded here */
                return mmp_core_pt_fail(o->pt, -MMP_EINVAL, MMP_PT_RULE_MEMCACHE, pa, 0, gran(o->g));
            return -MMP_EINVAL;
        }
        res_push(o, p, pa);
        /* Counted while reserved (taken or given back, until unreserve):
         * concurrent walkers read the count, and an atomic store here
         * costs the deepest call chain nothing (take is on it). */
        pt_pages_add(&o->st->table_pages, 1);
    }
    /* Hand the pages out in the order they came: an allocator that gives
     * ascending addresses then lays a split or a new range out in address
     * order, which later scans (dirty harvests) read 3x faster than the
     * reverse (measured with bench dirty). */
    pt_list_reverse(&o->res, &o->res_pa);
    return 0;
}

static uint64_t *take(struct pt_op *o, uint64_t *pa)
{
    uint64_t *p = (uint64_t *)o->res;
    *pa = o->res_pa;
    o->res = (void *)(uintptr_t)p[0];
    o->res_pa = p[1];
    o->nres--;
    if (o->shared) { /* one per depth of the call's path (pt_run_shared) */
        o->sh->tk[o->sh->ntk].va = p;
        o->sh->tk[o->sh->ntk++].pa = *pa;
    }
    return p;
}

/* ---- stores, the break-before-make primitive ---------------------------- */

static void wrote(struct pt_op *o, uint64_t n, bool priv)
{
    if (priv)
        o->st->entries_written += n;
    else
        pt_written(o->pt, n);
}

static void defer_tree(struct pt_op *o, unsigned d, uint64_t *t, uint64_t pa);

/*
 * Slots [lo, hi] of table t at depth d (slot lo maps va_lo) are about to
 * change; `needed` is the format's rule for the change (pt_needs_bbm).
 * A private table needs nothing. A live one is broken when needed: its
 * valid entries are stored invalid (the subtrees of table entries go to
 * the deferred-free list), then the barrier and the flush are issued at
 * once, whatever the batching mode (Arm ARM D8.16.1); the caller then
 * writes the new entries. Otherwise the change is written in place and
 * its flush recorded for the end of the call or lazy section.
 * Returns true when the slots were broken (they are all invalid now).
 * pt_break_leaves() can store old & keep instead of 0 (keep without the valid
 * bits: still invalid, Arm ARM D8.3.1 "Invalid descriptor" ignores bits
 * [63:1]) so the caller can rewrite them from what they held.
 *
 * Shared mode: the break itself is pt_lock() (a compare-and-swap of each
 * entry to LOCKED, which other writers cannot pass), done by the caller
 * before it checks what it locked; here only the barrier and flush
 * follow, at once, or (not needed) at the end of the call. The caller
 * then releases the entries with their new values.
 */
static inline __attribute__((always_inline)) bool
break_slots(struct pt_op *o, unsigned d, uint64_t *t, unsigned lo, unsigned hi, uint64_t va_lo,
            bool needed, bool priv, unsigned fflags, uint64_t keep, bool tables, uint64_t *was)
{
    if (priv)
        return false;
    const struct mmp_pt_geom *g = o->g;
    uint64_t sz = slot_size(g, d), va_hi = va_lo + (uint64_t)(hi - lo + 1) * sz - 1;
    if (fflags & MMP_FLUSH_LEAF)
        fflags = pt_fl_leaf(g, d);
    if (o->shared)
        return mmp_core_pt_sh_break(o, va_lo, va_hi, needed, fflags);
    if (!needed) {
        mmp_core_pt_flush_add(o->pt, va_lo, va_hi, fflags);
        return false;
    }
    uint64_t n = 0;
    for (unsigned k = lo; k <= hi; k++) {
        uint64_t e = pt_ld(&t[k]), f;
        if (!(e & g->valid_bit))
            continue;
        if (keep && g->trk_hw) /* what the MMU records meanwhile is kept too */
            while ((f = pt_cas(&t[k], e, e & keep)) != e)
                e = f;
        else
            pt_st(&t[k], e & keep);
        n++;
        if (was) /* the caller rewrites these from their kept bits */
            was[(k - lo) / 64] |= 1ull << ((k - lo) % 64);
        if (tables && pt_kind(g, d, e) == PT_TABLE)
            defer_tree(o, d + 1, pt_child(o->pt, e), pt_tbl_oa(g, e));
    }
    wrote(o, n, priv);
    mmp_core_pt_bbm(o->pt, va_lo, va_hi, fflags);
    return true;
}

static bool pt_break(struct pt_op *o, unsigned d, uint64_t *t, unsigned lo, unsigned hi,
                     uint64_t va_lo, bool needed, bool priv, unsigned fflags)
{
    return break_slots(o, d, t, lo, hi, va_lo, needed, priv, fflags, 0, true, NULL);
}

/* pt_break() of slots that hold no table entry (leaves and invalid ones:
 * size changes, protect), or whose tables the caller frees itself: no
 * subtree walk under it, which keeps the deepest call chains (a fold
 * inside a map inside a tracking stop) off the walker's frames. */
static bool pt_break_leaves(struct pt_op *o, unsigned d, uint64_t *t, unsigned lo, unsigned hi,
                            uint64_t va_lo, bool needed, bool priv, unsigned fflags, uint64_t keep)
{
    return break_slots(o, d, t, lo, hi, va_lo, needed, priv, fflags, keep, false, NULL);
}

bool mmp_core_pt_break(struct pt_op *o, unsigned d, uint64_t *t, unsigned lo, unsigned hi,
                       uint64_t va_lo, bool needed)
{
    return pt_break_leaves(o, d, t, lo, hi, va_lo, needed, false, MMP_FLUSH_LEAF, 0);
}


/*
 * A size-only change (a split or fold keeping every translation) of the
 * live slot [lo, last] goes in without a break only if no older
 * translation of it is still waiting for its flush: else both could be
 * cached at once (a page-size change together with frame or attributes).
 * Emit the pending flushes first then.
 */
static void size_change_ready(struct pt_op *o, uint64_t lo, uint64_t last, bool priv)
{
    if (!priv && !o->shared && pt_pending_in(o->pt, lo, last))
        mmp_core_pt_sync(o->pt);
}

/* pt_break() for a change of size or contiguity that keeps every
 * translation: in place where the format allows (`needed` false), once
 * no older translation of the slots waits for its flush. The slots hold
 * leaves (a fold's table slot: its caller frees the table). Broken, they
 * keep their bits but the valid bit: their state goes on into the new
 * entries (core/pt_state.h). */
static bool size_break(struct pt_op *o, unsigned d, uint64_t *t, unsigned lo, unsigned hi,
                       uint64_t va_lo, bool needed, bool priv, unsigned fflags)
{
    if (!needed)
        size_change_ready(o, va_lo, va_lo + (uint64_t)(hi - lo + 1) * slot_size(o->g, d) - 1,
                          priv);
    return pt_break_leaves(o, d, t, lo, hi, va_lo, needed, priv, fflags, ~o->g->valid_bit);
}

/* Link a table built privately: its contents first, then the pointer. */
static void link_table(struct pt_op *o, uint64_t *t, unsigned i, uint64_t pa, bool priv)
{
    if (priv) {
        pt_st(&t[i], o->g->tbl_tmpl | pt_oa_enc(o->g, pa));
    } else {
        mmp_arch_pt_publish();
        pt_st_release(&t[i], o->g->tbl_tmpl | pt_oa_enc(o->g, pa));
    }
    wrote(o, 1, priv);
}

/*
 * Unmake the contiguous run holding entry i at depth d: its entries lose
 * the contiguous bit and keep their translations (a contiguity change:
 * broken first where the format says so), each with the run's state, the
 * OR of its entries (core/pt_state.h). With skip_i, entry i is left as
 * the break left it (or, not broken, as it was), for the caller to write.
 * Returns true when broken.
 */
static bool unfold_run(struct pt_op *o, unsigned d, uint64_t *t, unsigned i, uint64_t va_i,
                       bool priv, bool skip_i)
{
    const struct mmp_pt_geom *g = o->g;
    unsigned R = 1u << g->cont[d], lo = i & ~(R - 1);
    uint64_t sz = slot_size(g, d), va_lo = va_i - (uint64_t)(i - lo) * sz;
    uint64_t e = pt_ld(&t[i]);
    uint64_t tm = e & ~g->oa_mask[d] & ~g->cont_bit;
    uint64_t pa_lo = pt_oa(g, d, e) - (uint64_t)(i - lo) * sz;
    bool broken = size_break(o, d, t, lo, lo + R - 1, va_lo,
                             pt_needs_bbm(g, d, e, tm | (e & g->oa_mask[d]), PT_CHG_CONT), priv,
                             MMP_FLUSH_LEAF);
    /* (read after the break: nothing records state in the entries then) */
    tm = pt_st_as(g, tm, pt_st_or(g, t, lo, lo + R - 1));
    uint64_t v = tm | pt_oa_enc(g, pa_lo); /* a run never crosses pt_oa_wrap */
    for (unsigned k = lo; k < lo + R; k++)
        if (k != i || !skip_i)
            pt_st(&t[k], v + (uint64_t)(k - lo) * sz);
    wrote(o, R - (skip_i ? 1 : 0), priv);
    return broken;
}

/*
 * Entries inside the run holding entry i of the live table t are about to
 * change, and the format lets the run be unmade in place (FEAT_BBM level
 * 2): unmake it and flush it now, so no TLB still holds the run when they
 * change - the same order as a split first (split_begin).
 */
static __attribute__((noinline, cold)) void unfold_first(struct pt_op *o, unsigned d, uint64_t *t, unsigned i, uint64_t va_i)
{
    unfold_run(o, d, t, i, va_i, false, false);
    o->st->split_flushes++;
    mmp_core_pt_sync(o->pt);
}

/* The format's rule for unmaking the live run holding e (at depth d). */
static bool unfold_needs_bbm(const struct mmp_pt_geom *g, unsigned d, uint64_t e)
{
    return pt_needs_bbm(g, d, e, e & ~g->cont_bit, PT_CHG_CONT);
}

/* ---- tables an update unlinks ------------------------------------------- */

/* Unlinked subtree t (depth d): every table page goes to the deferred-free
 * list, children before parents. */
static void defer_tree(struct pt_op *o, unsigned d, uint64_t *t, uint64_t pa)
{
    pt_for_each_table(o->pt, d, t, pt_defer_page, o->pt);
    mmp_core_pt_defer_free(o->pt, t, pa);
}

static bool tbl_empty(const struct mmp_pt_geom *g, unsigned d, const uint64_t *t)
{
    /* Only the writer stores into its tables (walkers just read), so plain
     * loads are exact here. A cache line at a time, to the first valid
     * entry (a table an unmap leaves non-empty usually shows it at once). */
    size_t n = pt_nent(g, d);
    for (size_t l = 0; l < n; l += 8) {
        uint64_t acc = 0;
        for (size_t k = l; k < l + 8 && k < n; k++)
            acc |= t[k];
        if (acc & g->valid_bit)
            return false;
    }
    return true;
}

/* ---- splitting a leaf --------------------------------------------------- */

/* The state of the leaf in slot i of t at depth d (core/pt_state.h): its
 * own, or in a contiguous run (run) the run's OR. */
static unsigned leaf_state(const struct mmp_pt_geom *g, unsigned d, const uint64_t *t, unsigned i,
                           bool run)
{
    if (!run)
        return pt_st_of(g, pt_ld(&t[i]));
    unsigned R = 1u << g->cont[d], lo = i & ~(R - 1);
    return pt_st_or(g, t, lo, lo + R - 1);
}

/* Give state st to every leaf of the private subtree t (depth d) this
 * call built: state its block recorded after the split read it. */
static __attribute__((noinline, cold)) void give_tree(struct pt_op *o, unsigned d, uint64_t *t,
                                                      unsigned st)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t *tab[MMP_PT_MAXLEV];
    size_t at[MMP_PT_MAXLEV];
    unsigned n = 0;
    tab[0] = t, at[0] = 0;
    for (;;) {
        if (at[n] == pt_nent(g, d + n)) {
            if (!n)
                return;
            n--;
            continue;
        }
        uint64_t *p = &tab[n][at[n]++], e = pt_ld(p);
        int kind = pt_kind(g, d + n, e);
        if (kind == PT_LEAF)
            pt_st(p, pt_st_give(g, e, st));
        else if (kind == PT_TABLE && d + n + 1 < g->nlev)
            tab[n + 1] = pt_child(o->pt, e), at[n + 1] = 0, n++;
    }
}

/*
 * Link the split table c (at cpa) in slot s, whose leaf it replaces. What
 * the MMU recorded in the leaf (or its run) after split_begin() read it
 * goes to c's leaves first; a live leaf is replaced with a
 * compare-and-swap from the value that state was read from.
 */
static void link_split(struct pt_op *o, struct pt_slot *s, uint64_t *c, uint64_t cpa)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t *p = &s->t[s->i], tbl = g->tbl_tmpl | pt_oa_enc(g, cpa);
    for (;;) {
        uint64_t e = pt_ld(p);
        unsigned st = leaf_state(g, s->d, s->t, s->i, (s->e & g->cont_bit) != 0);
        if (st & ~s->st) {
            give_tree(o, s->d + 1, c, st & ~s->st);
            s->st |= (uint8_t)st;
        }
        if (s->priv || !(e & g->valid_bit)) { /* broken: nothing records state in it */
            link_table(o, s->t, s->i, cpa, s->priv);
            return;
        }
        mmp_arch_pt_publish();
        if (pt_cas(p, e, tbl) == e)
            break;
    }
    wrote(o, 1, false);
}

/*
 * x86 with the MMU's D (MMP_PT_TRACK_HW): a write through a TLB entry that
 * still held the block until the split's flush may have set D in slot i,
 * a table entry now (the bit is ignored there, SDM 3A 4.5): the pages of
 * the live table c get it.
 */
static void stale_d(struct pt_op *o, unsigned d, uint64_t *t, unsigned i, uint64_t *c)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t e = pt_ld(&t[i]), f;
    if (!(e & g->trk_d))
        return;
    for (size_t k = 0; k < pt_nent(g, d + 1); k++)
        pt_st_give_live(g, d + 1, &c[k], PT_ST_D);
    while ((f = pt_cas(&t[i], e, e & ~g->trk_d)) != e)
        e = f;
}

/*
 * Replace the leaf of slot s by a private table of equivalent smaller
 * leaves (contiguous runs where they hold); the walk then applies the
 * operation inside it and split_end() links it.
 */
/* The private table of the leaf in slot s: the block's own translations
 * (contiguous runs where they hold), each with the block's state. */
static uint64_t *split_table(struct pt_op *o, struct pt_slot *s, uint64_t *cpa)
{
    const struct mmp_pt_geom *g = o->g;
    unsigned d = s->d;
    uint64_t csz = slot_size(g, d + 1);
    uint64_t *c = take(o, cpa);
    uint64_t ctm = g->fmt->child(g, d, s->e), pa0 = pt_oa(g, d, s->e);
    /* the pages take the block's state (a run's: the OR of its entries) */
    s->st = (uint8_t)leaf_state(g, d, s->t, s->i, (s->e & g->cont_bit) != 0);
    ctm = pt_st_give(g, ctm, s->st);
    if (o->shared && !s->priv)
        o->sh->st_split = s->st;
    if (g->cont[d + 1] && !(o->pt->cfg_flags & MMP_PT_NO_CONT) && o->kind != OP_SPLIT)
        ctm |= g->cont_bit; /* a block is aligned to every run below it */
    size_t n = pt_nent(g, d + 1);
    uint64_t v = ctm | pt_oa_enc(g, pa0); /* a block never crosses pt_oa_wrap */
    for (size_t k = 0; k < n; k++, v += csz)
        c[k] = v;
    o->st->entries_written += n;
    return c;
}

/* The walk goes on in the private table c; split_end() links it. */
static int split_private(struct pt_op *o, struct pt_slot *s, uint64_t *c, uint64_t cpa)
{
    s->tag = T_SPLIT;
    s->aux = cpa;
    s->aux2 = o->st->entries_written;
    return pt_descend(s, c, PT_TABLE, true);
}

static int split_begin(struct pt_op *o, struct pt_slot *s)
{
    const struct mmp_pt_geom *g = o->g;
    unsigned d = s->d;
    uint64_t cpa, *c = split_table(o, s, &cpa);
    uint64_t sz = slot_size(g, d), base = s->va & ~(sz - 1);
    if (!o->shared && !s->priv && o->kind != OP_SPLIT && (o->kind != OP_UNMAP || g->trk_d) &&
        (!(s->e & g->cont_bit) || !unfold_needs_bbm(g, d, s->e)) &&
        !pt_needs_bbm(g, d, s->e, 0, PT_CHG_SIZE)) {
        /*
         * Split first, then change: where the format lets a size-only
         * change go in with one store (x86, Intel SDM vol. 3A 4.10.2.3;
         * arm64 with FEAT_BBM level 2), the table of the block's own
         * translations is linked at once and its flush issued now, so no
         * TLB still holds the block when entries inside change; every
         * address outside the changed range stays mapped throughout. The
         * operation then runs in the live table. A block in a contiguous
         * run leaves the run first, the same way. (An unmap too where the
         * MMU records D: the flush must come before stale_d() looks.) A
         * split alone (OP_SPLIT) changes nothing inside, so it is linked
         * at the end like a private one, its flush deferred with the
         * call's (its caller runs mmp_core_pt_stale_d after it).
         */
        if (s->e & g->cont_bit)
            unfold_first(o, d, s->t, s->i, base);
        size_change_ready(o, base, base + sz - 1, false);
        link_split(o, s, c, cpa);
        o->st->split_flushes++;
        mmp_core_pt_flush_now(o->pt, base, base + sz - 1, pt_fl_leaf(g, d));
        stale_d(o, d, s->t, s->i, c);
        s->tag = T_NONE;
        return pt_descend(s, c, PT_TABLE, false);
    }
    return split_private(o, s, c, cpa);
}

static void split_end(struct pt_op *o, struct pt_slot *s)
{
    const struct mmp_pt_geom *g = o->g;
    unsigned d = s->d;
    uint64_t sz = slot_size(g, d), base = s->va & ~(sz - 1);
    /* Nothing written into the child: only the page size changes. An
     * unmap split counts as size-only too (the removed pages need no
     * second translation to be correct). */
    bool differs = o->kind != OP_UNMAP && o->kind != OP_SPLIT &&
                   o->st->entries_written != s->aux2;
    /* A block in a contiguous run: the run is unmade first (broken as a
     * whole where the format says so). Not broken, the block itself is
     * then replaced like one outside a run. */
    if (!(s->e & g->cont_bit) || !unfold_run(o, d, s->t, s->i, base, s->priv, true)) {
        unsigned chg = PT_CHG_SIZE | (differs ? PT_CHG_ATTR : 0);
        size_break(o, d, s->t, s->i, s->i, base, pt_needs_bbm(g, d, s->e, 0, chg), s->priv,
                   MMP_FLUSH_LEAF);
    }
    link_split(o, s, pt_slot_child(s), s->aux);
}

/* ---- map ---------------------------------------------------------------- */




/*
 * A replace of the full slots [a, b] (depth d, pa_a for slot a) that
 * finds what it would leave there: every entry already the leaf it would
 * write, and no run it would make (a whole one inside [a, b], or with the
 * matching entries around, a fold) left to make. Existing runs stay.
 */
static bool replace_is_noop(const struct pt_op *o, unsigned d, const uint64_t *t, unsigned a,
                            unsigned b, uint64_t va_a)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t sz = slot_size(g, d);
    for (unsigned k = a; k <= b; k++)
        if (!leaf_same(o, d, pt_ld(&t[k]), va_a + (uint64_t)(k - a) * sz))
            return false;
    unsigned R = run_len(o, d);
    if (R == 1)
        return true;
    for (unsigned r = a & ~(R - 1); r <= b; r += R) {
        unsigned lo = r > a ? r : a;
        if (pt_ld(&t[lo]) & g->cont_bit)
            continue; /* a run already (a run is whole) */
        if (r >= a && r + R - 1 <= b)
            return false; /* the map writes this run */
        uint64_t va_r = va_a - (uint64_t)a * sz + (uint64_t)r * sz;
        if (!(o->flags & OPF_NOFOLD) &&
            run_matches(o, d, t, r, r + R - 1, va_r + o->delta, o->tmpl[d]))
            return false; /* the map folds it */
    }
    return true;
}

/*
 * Map replacing whatever [a, b] held (MMP_MAP_REPLACE): contiguous runs
 * straddling the ends are unmade, then the valid entries and tables of
 * [a, b] are broken where the format says so (a table replaced by a leaf
 * changes the page size and in general the frame); replaced tables are
 * freed after the flush.
 */
static void replace_prepare(struct pt_op *o, unsigned d, uint64_t *t, unsigned a, unsigned b,
                            uint64_t va_a, bool priv)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t sz = slot_size(g, d);
    if (g->cont[d]) {
        unsigned R = 1u << g->cont[d];
        uint64_t ea = pt_ld(&t[a]);
        if (pt_kind(g, d, ea) == PT_LEAF && (ea & g->cont_bit) && (a & (R - 1)))
            unfold_run(o, d, t, a, va_a, priv, false);
        uint64_t eb = pt_ld(&t[b]);
        if (pt_kind(g, d, eb) == PT_LEAF && (eb & g->cont_bit) && ((b + 1) & (R - 1)))
            unfold_run(o, d, t, b, va_a + (uint64_t)(b - a) * sz, priv, false);
    }
    bool any = false, tables = false;
    uint64_t first = 0;
    for (unsigned k = a; k <= b; k++) {
        uint64_t e = pt_ld(&t[k]);
        if (!(e & g->valid_bit))
            continue;
        if (!any)
            first = e;
        any = true;
        tables |= pt_kind(g, d, e) == PT_TABLE;
    }
    if (!any)
        return;
    unsigned chg = PT_CHG_OA | (tables ? PT_CHG_SIZE : 0);
    pt_break(o, d, t, a, b, va_a, pt_needs_bbm(g, d, first, o->tmpl[d], chg), priv,
             tables ? 0 : MMP_FLUSH_LEAF);
}

/* Write leaves for the full slots [a, b] of t (depth d), largest first. */
static void map_leaves(struct pt_op *o, unsigned d, uint64_t *t, unsigned a, unsigned b,
                       uint64_t va_a, bool priv)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t sz = slot_size(g, d), tm = o->tmpl[d];
    unsigned R = run_len(o, d), lo = a, hi = b, st_lo = 0, st_hi = 0;
    uint64_t pa_a = va_a + o->delta;
    if (o->flags & OPF_REPLACE) {
        if (replace_is_noop(o, d, t, a, b, va_a))
            return; /* no store, no flush, no break */
        replace_prepare(o, d, t, a, b, va_a, priv);
    }
    if (R > 1 && !(o->flags & OPF_NOFOLD)) {
        /* Fold runs this call completes (Linux contpte_try_fold): the
         * run's other entries must already map the matching addresses. */
        unsigned ra = a & ~(R - 1), rb = b | (R - 1);
        bool fa = ra < a && run_matches(o, d, t, ra, a - 1, pa_a - (uint64_t)(a - ra) * sz, tm);
        bool fb = rb > b &&
                  run_matches(o, d, t, b + 1, rb, pa_a + (uint64_t)(b - a + 1) * sz, tm);
        if ((a & ~(R - 1)) == (b & ~(R - 1)))
            fa = fb = (ra == a || fa) && (rb == b || fb) && (ra < a || rb > b);
        if (fa)
            lo = ra;
        if (fb)
            hi = rb;
        if (fa || fb)
            size_break(o, d, t, lo, hi, va_a - (uint64_t)(a - lo) * sz,
                       pt_needs_bbm(g, d, tm, tm | g->cont_bit, PT_CHG_CONT), priv,
                       MMP_FLUSH_LEAF);
        /* the entries a fold takes in keep their state in the run's OR */
        st_lo = fa && ra < a ? pt_st_or(g, t, ra, a - 1) : 0;
        st_hi = fb && rb > b ? pt_st_or(g, t, b + 1, rb) : 0;
    }
    uint64_t pa = pa_a - (uint64_t)(a - lo) * sz, cont = g->cont_bit;
    /* v: the descriptor for pa, stepping by sz like pa within a segment
     * that does not cross into a moved OA field (pt_oa_wrap: a multiple of
     * 2^48 or 2^50, so almost always one segment); re-encoded per segment.
     * Runs are aligned to their size and never cross such a point. */
    uint64_t wrap = pt_oa_wrap(g);
    unsigned k = lo;
    while (k <= hi) {
        unsigned end = hi, k0 = k;
        if (wrap != ~0ull) {
            uint64_t left = ((wrap + 1) - (pa & wrap)) / sz; /* entries before the crossing */
            if (left - 1 < (uint64_t)(hi - k))
                end = k + (unsigned)left - 1;
        }
        uint64_t v = tm | pt_oa_enc(g, pa);
        if (R == 1) /* no runs: the plain store loop */
            for (; k <= end; k++, v += sz)
                pt_st(&t[k], v);
        while (k <= end) {
            if (R > 1 && !(k & (R - 1)) && k + R - 1 <= end) {
                for (unsigned m = 0; m < R; m++, v += sz)
                    pt_st(&t[k + m], v | cont);
                k += R;
            } else {
                pt_st(&t[k], v);
                v += sz;
                k++;
            }
        }
        pa += (uint64_t)(k - k0) * sz;
    }
    wrote(o, hi - lo + 1, priv);
    for (unsigned m = 0; (st_lo | st_hi) && m < R; m++) {
        pt_st_give_live(g, d, &t[lo + m], st_lo);
        pt_st_give_live(g, d, &t[hi - m], st_hi);
    }
}

/*
 * Folding of a block-sized region: when this call completed a table whose
 * entries all map one aligned region with this call's attributes, the
 * table becomes one block (a size-only change; the table page is freed
 * after the flush).
 */
static void try_collapse(struct pt_op *o, struct pt_slot *s)
{
    const struct mmp_pt_geom *g = o->g;
    unsigned d = s->d, i = s->i;
    uint64_t *t = s->t, *c = pt_slot_child(s);
    bool priv = s->priv;
    uint64_t sz = slot_size(g, d), base = s->va & ~(sz - 1);
    unsigned n = (unsigned)pt_nent(g, d + 1);
    uint64_t pa = base + o->delta, csz = slot_size(g, d + 1);
    uint64_t m = ~g->oa_mask[d + 1] & ~g->cont_bit & ~g->ign_mask;
    uint64_t tm = o->tmpl[d + 1] & m, lst = pt_ld(&c[n - 1]);
    if (pt_kind(g, d + 1, lst) != PT_LEAF || pt_oa(g, d + 1, lst) != pa + (n - 1) * csz)
        return; /* the common case: not complete */
    unsigned st = 0; /* the block's state: the OR of the pages' */
    for (unsigned k = 0; k < n; k++) {
        uint64_t x = pt_ld(&c[k]);
        if (pt_kind(g, d + 1, x) != PT_LEAF || pt_oa(g, d + 1, x) != pa + k * csz ||
            (x & m) != tm)
            return;
        st |= pt_st_of(g, x);
    }
    uint64_t blk = o->tmpl[d] | pt_oa_enc(g, pa);
    /* Without a break (x86: same translation, and Intel allows a
     * size-only change as one store), a stale walk cache may still walk c
     * until the flush and must find its valid entries: keep c untouched. */
    bool broken = size_break(o, d, t, i, i, base, pt_needs_bbm(g, d, s->e, blk, PT_CHG_SIZE),
                             priv, 0);
    /* Where the MMU records state, what c got until the break is read
     * after it (nothing records it there then); without a break a stale
     * walk may until the flush: that flush is now, and what c got by then
     * is added. */
    if (broken && g->trk_hw)
        st = pt_st_or(g, c, 0, n - 1);
    blk = pt_st_as(g, blk, st);
    pt_st(&t[i], blk);
    wrote(o, 1, priv);
    if (broken) { /* c holds only leaves: no subtree below it */
        mmp_core_pt_defer_free(o->pt, c, pt_tbl_oa(g, s->e));
    } else if (!priv && g->trk_hw) {
        /* (a section of many folds completes the block at its flush) */
        if (!mmp_core_pt_keep_state(o->pt, c, pt_tbl_oa(g, s->e), &t[i], d, st)) {
            mmp_core_pt_flush_now(o->pt, base, base + sz - 1, 0);
            pt_st_give_live(g, d, &t[i], pt_st_or(g, c, 0, n - 1) & ~st);
            mmp_core_pt_defer_keep(o->pt, c, pt_tbl_oa(g, s->e));
        }
    } else {
        mmp_core_pt_defer_keep(o->pt, c, pt_tbl_oa(g, s->e));
    }
    /* The new block may complete a contiguous run of blocks. */
    unsigned R = run_len(o, d);
    if (R > 1) {
        unsigned ra = i & ~(R - 1);
        uint64_t va_ra = base - (uint64_t)(i - ra) * sz;
        if (run_matches(o, d, t, ra, ra + R - 1, va_ra + o->delta, o->tmpl[d])) {
            size_break(o, d, t, ra, ra + R - 1, va_ra,
                       pt_needs_bbm(g, d, blk, blk | g->cont_bit, PT_CHG_CONT), priv,
                       MMP_FLUSH_LEAF);
            for (unsigned k = ra; k < ra + R; k++) /* each keeps its state */
                pt_st(&t[k], pt_st_as(g, o->tmpl[d] | g->cont_bit |
                                             pt_oa_enc(g, va_ra + o->delta + (k - ra) * sz),
                                      pt_st_of(g, pt_ld(&t[k]))));
            wrote(o, R, priv);
        }
    }
}

/* A new, empty table for the invalid slot s: walked privately, linked in
 * the slot's post. */
static int new_begin(struct pt_op *o, struct pt_slot *s)
{
    uint64_t cpa;
    uint64_t *c = take(o, &cpa);
    __builtin_memset(c, 0, gran(o->g));
    s->tag = T_NEW;
    s->aux = cpa;
    return pt_descend(s, c, PT_TABLE, true);
}

PT_VISITOR int map_entry(void *ctx, struct pt_slot *s)
{
    struct pt_op *o = (struct pt_op *)ctx;
    bool replace = (o->flags & OPF_REPLACE) != 0;
    s->tag = T_NONE;
    if (s->full && leaf_fits(o, s->d) && (replace || s->kind != PT_TABLE)) {
        if (o->prep && s->kind == PT_TABLE) /* replaced: its pages go, so check them */
            return pt_validate(s, pt_child(o->pt, s->e));
        /* The longest stretch of full slots that take leaves. */
        s->span_last = stretch(o, s, replace && !o->prep);
        return PT_SPAN;
    }
    if (s->kind == PT_TABLE) {
        s->tag = T_TABLE;
        return pt_descend(s, pt_child(o->pt, s->e), PT_TABLE, s->priv);
    }
    /* A block that already translates the part as asked: nothing to split
     * (the same answer in both passes: the commit changes no frame or
     * attributes outside the range, only contiguous bits). */
    if (replace && leaf_same(o, s->d, s->e, s->va & ~(slot_size(o->g, s->d) - 1)))
        return PT_SKIP;
    if (o->prep) {
        if (s->kind == PT_LEAF && !replace)
            return -MMP_EEXIST;
        o->need++;
        return pt_descend(s, NULL, s->kind, true);
    }
    return s->kind == PT_LEAF ? split_begin(o, s) : new_begin(o, s);
}

PT_VISITOR int map_span(void *ctx, struct pt_slot *s)
{
    struct pt_op *o = (struct pt_op *)ctx;
    const struct mmp_pt_geom *g = o->g;
    unsigned a = s->i, b = pt_idx(g, s->d, s->span_last);
    if (!o->prep) {
        map_leaves(o, s->d, s->t, a, b, s->va, s->priv);
        return 0;
    }
    if (o->flags & OPF_REPLACE)
        return pt_check(g, s->d, s->t, a, b, false);
    if (!s->t)
        return s->vkind == PT_LEAF ? -MMP_EEXIST : 0;
    for (unsigned k = a; k <= b; k++) {
        uint64_t e = pt_ld(&s->t[k]);
        if (e & g->valid_bit)
            return pt_bad(g, s->d, e) ? -MMP_EIO : -MMP_EEXIST;
    }
    return 0;
}

PT_VISITOR int map_post(void *ctx, struct pt_slot *s)
{
    struct pt_op *o = (struct pt_op *)ctx;
    if (o->prep)
        return 0;
    if (s->tag == T_TABLE) {
        if (leaf_fits(o, s->d) && !(o->flags & OPF_NOFOLD))
            try_collapse(o, s);
    } else if (s->tag == T_NEW) {
        link_table(o, s->t, s->i, s->aux, s->priv);
    } else if (s->tag == T_SPLIT) {
        split_end(o, s);
    }
    return 0;
}

static const struct pt_visitor map_visitor = {
    .entry = map_entry, .span = map_span, .post = map_post};

/* ---- unmap / protect ---------------------------------------------------- */

/* Unmap or re-protect entry k (e, before any break) of a chunk of
 * [a, b]; entries outside [a, b] belong to a run cut by the range and
 * lose the contiguous bit. Returns 1 when it stored. */
static unsigned chg_one(struct pt_op *o, unsigned d, uint64_t *t, unsigned k, uint64_t e,
                        unsigned a, unsigned b, bool broken)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t cb = g->cont_bit, cmp = ~g->ign_mask, v;
    unsigned R = g->cont[d] ? 1u << g->cont[d] : 1;
    if (!(e & g->valid_bit))
        return 0;
    if (k < a || k > b) {
        v = e & ~cb;
    } else if (o->kind == OP_UNMAP) {
        v = 0;
    } else if (d + 1 == g->nlev && pt_leaf_bad(g, e)) { /* data: no call (stack) */
        o->eio = true; /* corrupted: left as it was (broken: put back) */
        if (broken)
            pt_st(&t[k], e);
        return 0;
    } else {
        bool cut = (e & cb) && ((k & ~(R - 1)) < a || (k | (R - 1)) > b);
        uint64_t ks = pt_st_keep(g, o->tmpl[d]) | o->keep; /* its state stays */
        v = (e & (g->oa_mask[d] | (cut ? 0 : cb) | ks)) | (o->tmpl[d] & ~ks);
        if ((v & cmp) == (e & cmp))
            v = e;
    }
    if (broken && !v) { /* the break counted it; only its kept bits go */
        pt_st(&t[k], 0);
        return 0;
    }
    if (!broken && v == e)
        return 0;
    pt_st(&t[k], v);
    return 1;
}

/*
 * Full slots [a, b] of t at depth d hold leaves or nothing: unmap or
 * re-protect them, in chunks of CHUNK entries. Contiguous runs cut by the
 * range's ends are unmade (a contiguity change). Runs wholly inside keep
 * their bit: a permission change is written in place, because until the
 * flush a TLB may give either the old or the new permission for the run and
 * after it only the new one (what Linux's contpte_wrprotect_ptes relies on);
 * whether an attribute change needs break-before-make is the format's rule,
 * asked once per distinct attribute set.
 */
static void chg_leaves(struct pt_op *o, unsigned d, uint64_t *t, unsigned a, unsigned b,
                       uint64_t va_a, bool priv)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t sz = slot_size(g, d), vb = g->valid_bit, cb = g->cont_bit, cmp = ~g->ign_mask;
    bool unmap = o->kind == OP_UNMAP, ask = g->bbm && !unmap && !priv;
    /* a re-protected leaf keeps its frame, its run and its state */
    uint64_t ks = unmap ? 0 : pt_st_keep(g, o->tmpl[d]) | o->keep;
    uint64_t oa = g->oa_mask[d], tmpl = o->tmpl[d] & ~ks, tmask = ~oa & ~cb, keep = oa | cb | ks;
    unsigned R = g->cont[d] ? 1u << g->cont[d] : 1;
    uint64_t was[CHUNK / 64]; /* slots [brk, hi] valid before their break */
    bool tm_bbm = false;
    uint64_t last_tm = ~0ull;
    /* [A, B]: the slots of the runs wholly inside [a, b] */
    unsigned A = (a + R - 1) & ~(R - 1), B = ((b + 1) & ~(R - 1)) - 1;
    if (A > b || B < a || B + 1 == 0)
        A = b + 1, B = b;
    for (unsigned x = a; x <= b;) {
        unsigned y = (x | (CHUNK - 1)) < b ? (x | (CHUNK - 1)) : b;
        unsigned lo = x, hi = y, brk = y + 1; /* slots [brk, hi] get broken */
        if (R > 1) {
            /* Only the runs at the chunk's ends can reach outside [a, b]:
             * cut, they are unmade (a contiguity change). */
            uint64_t ex = pt_ld(&t[x]), ey = pt_ld(&t[y]);
            /* A cut run the format lets be unmade in place (FEAT_BBM
             * level 2) is, and flushed, first: then only the entries
             * inside [a, b] change here. */
            if ((ex & vb) && (ex & cb) && (x & ~(R - 1)) < a && !priv && !unfold_needs_bbm(g, d, ex)) {
                unfold_first(o, d, t, x, va_a + (uint64_t)(x - a) * sz);
                ex = pt_ld(&t[x]), ey = pt_ld(&t[y]); /* (one run may hold both ends) */
            }
            if ((ey & vb) && (ey & cb) && (y | (R - 1)) > b && !priv && !unfold_needs_bbm(g, d, ey)) {
                unfold_first(o, d, t, y, va_a + (uint64_t)(y - a) * sz);
                ey = pt_ld(&t[y]);
            }
            if ((ex & vb) && (ex & cb)) {
                lo = x & ~(R - 1);
                if (lo < a && !priv)
                    brk = lo;
            }
            if ((ey & vb) && (ey & cb)) {
                hi = y | (R - 1);
                if (hi > b && !priv)
                    brk = lo;
            }
            if (brk == y + 1)
                brk = hi + 1;
        } else {
            brk = hi + 1;
        }
        /* In place, in slot order, until an entry whose new attributes
         * need a break (the rule is asked once per distinct attribute
         * set); runs wholly inside [a, b] keep their bit, so between the
         * first and the last whole run the new value is the frame (and
         * bit) with the new template: the fast loop, as tight as map's. */
        uint64_t n = 0;
        unsigned f0 = x > A ? x : A, f1 = y < B ? y : B;
        if (f0 > f1 || f0 >= brk)
            f0 = f1 = brk;
        else if (f1 >= brk)
            f1 = brk - 1;
        for (unsigned k = lo; k < brk; k++) {
            if (k >= f0 && k <= f1 && f0 < brk) {
                /* The fast loop over whole runs inside [a, b]. An entry
                 * that continues the last one changed (next frame, same
                 * bits) takes the next new value; any other is computed,
                 * and an attribute set the rule has not passed (or an
                 * invalid entry: the set holds the valid bit) goes to the
                 * rule below. */
                uint64_t exp = 0, nv = 0;
                bool chain = false;
                for (; k <= f1; k++) {
                    if (chain) { /* the tight loop: continuing entries */
                        unsigned k0 = k;
                        for (; k <= f1 && pt_ld(&t[k]) == exp; k++, exp += sz, nv += sz)
                            pt_st(&t[k], nv);
                        n += k - k0;
                        if (k > f1)
                            break;
                    }
                    uint64_t e = pt_ld(&t[k]);
                    uint64_t v = unmap ? 0 : (e & keep) | tmpl;
                    if (ask ? (e & tmask) != last_tm || tm_bbm : !(e & vb))
                        break;
                    if (!unmap && d + 1 == g->nlev && pt_leaf_bad(g, e))
                        break; /* chg_one leaves it */
                    chain = false;
                    if (unmap || ((v ^ e) & cmp)) {
                        pt_st(&t[k], v);
                        n++;
                        /* (no carry out of the frame bits: then the next
                         * entry's new value is v + sz) */
                        chain = !unmap && !(((e + sz) ^ e) & ~oa);
                        exp = e + sz;
                        nv = v + sz;
                    }
                }
                if (k > f1) {
                    k = f1; /* the loop's k++ moves on past the fast range */
                    continue;
                }
            }
            uint64_t e = pt_ld(&t[k]);
            if (!(e & vb))
                continue;
            if (ask && (e & tmask) != last_tm) {
                last_tm = e & tmask;
                tm_bbm = pt_needs_bbm(g, d, e, (e & (oa | ks)) | tmpl, PT_CHG_ATTR);
            }
            if (ask && tm_bbm) {
                unsigned rs = (e & cb) ? k & ~(R - 1) : k;
                brk = rs > lo ? rs : lo;
                break;
            }
            n += chg_one(o, d, t, k, e, a, b, false);
        }
        if (n) { /* in place: the flush is deferred */
            uint64_t va_lo = va_a - ((uint64_t)a - lo) * sz;
            pt_break_leaves(o, d, t, lo, brk - 1, va_lo, false, priv, MMP_FLUSH_LEAF, 0);
            wrote(o, n, priv);
        }
        if (brk <= hi) {
            uint64_t va_b = va_a - ((uint64_t)a - brk) * sz;
            /* No copy of the old entries (stack: a hypervisor's may be one
             * page): the break keeps their bits but the valid bit, and a
             * bitmap says which were valid. (Only arm64 breaks here: its
             * valid bit is one bit, so e & ~vb | vb is e again.) */
            __builtin_memset(was, 0, sizeof was);
            for (unsigned m = brk; m <= hi; m++)
                if (pt_ld(&t[m]) & vb)
                    was[(m - brk) / 64] |= 1ull << ((m - brk) % 64);
            pt_break_leaves(o, d, t, brk, hi, va_b, true, priv, MMP_FLUSH_LEAF, ~vb);
            /* runs the range cuts (broken whole): their state, the OR of
             * their entries, goes to the entries that stay */
            unsigned st_lo = lo < a ? pt_st_or(g, t, lo, lo + R - 1) : 0;
            unsigned st_hi = hi > b ? pt_st_or(g, t, hi - R + 1, hi) : 0;
            n = 0;
            for (unsigned m = brk; m <= hi; m++)
                if (was[(m - brk) / 64] & (1ull << ((m - brk) % 64)))
                    n += chg_one(o, d, t, m, pt_ld(&t[m]) | vb, a, b, true);
            wrote(o, n, priv);
            for (unsigned m = 0; (st_lo | st_hi) && m < R; m++) {
                pt_st_give_live(g, d, &t[lo + m], st_lo);
                pt_st_give_live(g, d, &t[hi - m], st_hi);
            }
        }
        if (y == b)
            break;
        x = y + 1;
    }
}

/* Unlink the table of slot s (every slot below it unmapped); its pages go
 * after the flush that covers them. */
static void drop_table(struct pt_op *o, struct pt_slot *s)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t sz = slot_size(g, s->d), base = s->va & ~(sz - 1);
    pt_st(&s->t[s->i], 0);
    wrote(o, 1, s->priv);
    defer_tree(o, s->d + 1, pt_child(o->pt, s->e), pt_tbl_oa(g, s->e));
    mmp_core_pt_flush_add(o->pt, base, base + sz - 1, 0);
}

PT_VISITOR int chg_entry(void *ctx, struct pt_slot *s)
{
    struct pt_op *o = (struct pt_op *)ctx;
    s->tag = T_NONE;
    if (s->kind == PT_TABLE) {
        bool keep = (o->pt->cfg_flags & MMP_PT_KEEP_TABLES) != 0;
        if (s->full && o->kind == OP_UNMAP && !keep) {
            /* A wholly covered table goes; the prepare pass checks that
             * its pages are sound (a corrupted one must not be freed). */
            if (o->prep)
                return pt_validate(s, pt_child(o->pt, s->e));
            drop_table(o, s);
            return PT_SKIP;
        }
        s->tag = T_TABLE;
        return pt_descend(s, pt_child(o->pt, s->e), PT_TABLE, s->priv);
    }
    if (s->full && o->kind != OP_SPLIT) {
        /* (the prepare pass: the walker checks the stretch's entries) */
        s->span_last = stretch(o, s, false);
        return PT_SPAN;
    }
    if (s->kind != PT_LEAF)
        return PT_SKIP;
    if (o->prep) {
        o->need++;
        return pt_descend(s, NULL, PT_LEAF, true);
    }
    return split_begin(o, s);
}

/* OP_SPLIT at the last level: unmake the contiguous runs of [a, b]. */
static void split_runs(struct pt_op *o, struct pt_slot *s)
{
    const struct mmp_pt_geom *g = o->g;
    unsigned b = pt_idx(g, s->d, s->span_last), R = 1u << g->cont[s->d];
    uint64_t sz = slot_size(g, s->d);
    for (unsigned k = s->i; g->cont[s->d] && k <= b; k = (k | (R - 1)) + 1) {
        uint64_t e = pt_ld(&s->t[k]);
        if (pt_kind(g, s->d, e) == PT_LEAF && (e & g->cont_bit))
            unfold_run(o, s->d, s->t, k, s->va + (uint64_t)(k - s->i) * sz, s->priv, false);
    }
}

PT_VISITOR int chg_span(void *ctx, struct pt_slot *s)
{
    struct pt_op *o = (struct pt_op *)ctx;
    if (o->kind == OP_SPLIT) {
        if (!o->prep)
            split_runs(o, s);
        return 0;
    }
    if (!o->prep)
        chg_leaves(o, s->d, s->t, s->i, pt_idx(o->g, s->d, s->span_last), s->va, s->priv);
    return 0;
}

PT_VISITOR int chg_post(void *ctx, struct pt_slot *s)
{
    struct pt_op *o = (struct pt_op *)ctx;
    if (o->prep)
        return 0;
    if (s->tag == T_TABLE) {
        bool keep = (o->pt->cfg_flags & MMP_PT_KEEP_TABLES) != 0;
        if (o->kind == OP_UNMAP && !keep && tbl_empty(o->g, s->d + 1, pt_slot_child(s)))
            drop_table(o, s);
    } else if (s->tag == T_SPLIT) {
        split_end(o, s);
    }
    return 0;
}

static const struct pt_visitor chg_visitor = {
    .entry = chg_entry, .span = chg_span, .post = chg_post};
/* The prepare pass of unmap and protect reads every entry the commit
 * will change: a reserved one fails the call (-EIO) before anything is. */
static const struct pt_visitor chg_prep_visitor = {
    .flags = PT_V_CHECK, .entry = chg_entry, .span = chg_span, .post = chg_post};

/* ---- one call ----------------------------------------------------------- */

static inline __attribute__((always_inline)) int pt_run(struct pt_op *o, uint64_t va,
                                                        uint64_t last, unsigned nlev)
{
    struct pt *pt = o->pt;
    o->prep = true;
    o->need = 0;
    int rc = o->kind == OP_MAP ? pt_walk(&map_visitor, o, pt, nlev, 0, pt->root, false, va, last)
                               : pt_walk(&chg_prep_visitor, o, pt, nlev, 0, pt->root, false, va, last);
    if (rc < 0)
        return rc;
    rc = reserve(o, o->need);
    if (rc)
        return rc;
    o->prep = false;
    /* The call cannot fail from here: the new memory's cache maintenance
     * before the first store (mmp_pt_ops::dcache_clean_poc). */
    if (o->kind == OP_MAP)
        mmp_core_pt_maint(pt, va + o->delta, last - va + 1, o->attrs);
    /* A map over a range whose flush a lazy section deferred (unmap, then
     * map again) would write valid entries while the old translations may
     * still be cached: emit the pending flush first (break-before-make is
     * never deferred). */
    if (o->kind == OP_MAP && pt_pending_in(pt, va, last))
        mmp_core_pt_sync(pt);
    if (o->kind == OP_MAP)
        pt_walk(&map_visitor, o, pt, nlev, 0, pt->root, false, va, last);
    else if (pt_walk(&chg_visitor, o, pt, nlev, 0, pt->root, false, va, last) < 0)
        o->eio = true;
    /* Empty: the commit took what the prepare counted. The prepare pass
     * read every entry the commit changes, so the commit meets a reserved
     * one only if something else wrote it in between (a stray DMA write):
     * it is left as it was, and -EIO says so. */
    unreserve(o);
    mmp_core_pt_call_end(pt);
    return o->eio ? -MMP_EIO : 0;
}

/* The instances: one per depth, and the generic one. A shared call runs
 * the shared protocol's own instance (core/pt_shared.c), a function of its
 * own, so exclusive calls do not carry its frame (stack: every call stays
 * within 2 KiB, tests/test_pt_stack.c). */
#define PT_INSTANCE(n)                                                         \
    static int pt_run_##n(struct pt_op *o, uint64_t va, uint64_t last)         \
    {                                                                          \
        if (o->shared)                                                         \
            return mmp_core_pt_run_sh_##n(o, va, last);                        \
        return pt_run(o, va, last, n);                                         \
    }
PT_DEPTHS(PT_INSTANCE)

static int pt_run_generic(struct pt_op *o, uint64_t va, uint64_t last)
{
    if (o->shared)
        return mmp_core_pt_run_sh_generic(o, va, last);
    return pt_run(o, va, last, o->g->nlev);
}

#define PT_CASE(n) case n: return pt_run_##n;
static mmp_core_pt_run_fn engine_for(unsigned nlev)
{
    switch (nlev) {
    PT_DEPTHS(PT_CASE)
    default: return pt_run_generic;
    }
}

void mmp_core_pt_engine_select(struct mmp_pt *p, bool generic)
{
    struct pt *pt = pt_of(p);
    pt->run = generic ? pt_run_generic : engine_for(pt->g.nlev);
}

int mmp_core_pt_run(struct pt_op *o, uint64_t va, uint64_t last)
{
    return o->pt->run(o, va, last);
}

void mmp_core_pt_unmap_slot(struct pt *pt, unsigned d, uint64_t *t, unsigned i, uint64_t va)
{
    struct pt_op o = {.pt = pt, .g = &pt->g, .kind = OP_UNMAP, .st = &pt->st};
    const struct mmp_pt_geom *g = o.g;
    uint64_t e = pt_ld(&t[i]), vb = g->valid_bit;
    if (!(e & vb) || !(e & g->cont_bit) || !unfold_needs_bbm(g, d, e)) {
        chg_leaves(&o, d, t, i, i, va, false);
        return;
    }
    /* The run the unmap cuts, broken as a whole: what chg_leaves does for
     * it (chg_one's rule: the run's other entries lose the contiguous bit
     * and keep the rest), without the bookkeeping of a range. */
    unsigned R = 1u << g->cont[d], lo = i & ~(R - 1), n = 0;
    uint64_t was[CHUNK / 64] = {0}, cb = g->cont_bit;
    break_slots(&o, d, t, lo, lo + R - 1, va - (uint64_t)(i - lo) * slot_size(g, d), true, false,
                MMP_FLUSH_LEAF, ~vb, false, was);
    /* The run's state is the OR of its entries (the MMU records it in any
     * one): the pages that stay get it (read after the break, which kept
     * the bits and stopped the MMU from recording more). */
    unsigned st = pt_st_or(g, t, lo, lo + R - 1);
    for (unsigned w = 0; w < R; w += 64)
        for (uint64_t bits = was[w / 64]; bits; bits &= bits - 1) {
            unsigned k = lo + w + (unsigned)__builtin_ctzll(bits);
            if (k == i) {
                pt_st(&t[i], 0); /* counted by the break */
                continue;
            }
            pt_st(&t[k], pt_st_give(g, (pt_ld(&t[k]) | vb) & ~cb, st));
            n++;
        }
    wrote(&o, n, false);
}

/*
 * x86 with the MMU's D (MMP_PT_TRACK_HW): after the flush that followed
 * splits linked in place (OP_SPLIT), a write made through a TLB entry that
 * still held a block may have set D in what is now a table entry: its
 * pages get it (stale_d), so no write is lost.
 */
PT_VISITOR int stale_entry(void *ctx, struct pt_slot *s)
{
    struct pt_op *o = (struct pt_op *)ctx;
    if (s->kind != PT_TABLE)
        return PT_SKIP;
    uint64_t *c = pt_child(o->pt, s->e);
    if (s->e & o->g->trk_d)
        stale_d(o, s->d, s->t, s->i, c);
    return s->d + 2 < o->g->nlev ? pt_descend(s, c, PT_TABLE, false) : PT_SKIP;
}

static int stale_span(void *ctx, struct pt_slot *s)
{
    (void)ctx, (void)s;
    return 0;
}

static const struct pt_visitor stale_visitor = {.entry = stale_entry, .span = stale_span};

void mmp_core_pt_stale_d(struct pt *pt, uint64_t va, uint64_t last)
{
    struct pt_op o = {.pt = pt, .g = &pt->g, .kind = OP_SPLIT, .st = &pt->st};
    if (pt->g.trk_d && pt->g.nlev > 1)
        (void)pt_walk(&stale_visitor, &o, pt, pt->g.nlev, 0, pt->root, false, va, last);
}

/* ---- the primitives the shared protocol uses (core/pt_shared.c) ---------- */

int mmp_core_pt_reserve(struct pt_op *o, long n)
{
    return reserve(o, n);
}

void mmp_core_pt_unreserve(struct pt_op *o)
{
    unreserve(o);
}

void mmp_core_pt_res_push(struct pt_op *o, uint64_t *p, uint64_t pa)
{
    res_push(o, p, pa);
}

int mmp_core_pt_split_private(struct pt_op *o, struct pt_slot *s)
{
    uint64_t cpa, *c = split_table(o, s, &cpa);
    return split_private(o, s, c, cpa);
}

int mmp_core_pt_new_begin(struct pt_op *o, struct pt_slot *s)
{
    return new_begin(o, s);
}

void mmp_core_pt_link_table(struct pt_op *o, uint64_t *t, unsigned i, uint64_t pa, bool priv)
{
    link_table(o, t, i, pa, priv);
}
