/* SPDX-License-Identifier: MIT */
/*
 * Shared calls (MMP_CALL_SHARED on a MMP_PT_SHARED table): many writers at
 * once, each changing one leaf slot, beside lookups. This is the fault
 * path a vCPU takes when the one-page path (core/pt_fault.c) hands a call
 * over: a table to create, a block to split, a run or table to fold. It
 * runs the engine's walker with its own visitor (sh_entry, sh_span,
 * sh_post) and uses the engine's primitives (core/pt_engine.c, declared in
 * core/pt_op.h) where both kinds of call do the same thing: the reserve,
 * new and split tables, the break-before-make primitive. Where the two
 * kinds meet: struct pt_op::shared, tested by those primitives.
 */
#include "pt_op.h"
#include "pt_state.h"
#include "pt_walk.h"


/*
 * Many writers at once (include/mmport/pt.h, MMP_PT_SHARED): the same
 * walker, reserve and primitives as above, with one rule that makes a
 * call failure-atomic on a tree that changes under it: a call changes ONE
 * leaf slot (the unit, at depth o->sh->ud), so its walk makes exactly one
 * change other threads can see first - the publication: the unit's entry,
 * or the link of the private subtree the call built (new tables, a split
 * block) where its path left the live tree. Everything before it reads
 * live tables and fills private ones, so no prepare pass is needed: table
 * pages are allocated on the way, and a failure before the publication
 * (-ENOMEM, -EEXIST, -EAGAIN) gives them back with nothing changed. If the
 * publication's compare-and-swap finds another value, the call gives its
 * private pages back and restarts from the root (PT_RESTART; a few times,
 * then -EAGAIN); a call takes effect at its publication (linearisable). After it only folds follow,
 * each of which completes or undoes itself. An entry found LOCKED means
 * another writer is inside a break-before-make there: -EAGAIN.
 * Unlinked tables are retired at the end of the call, never written:
 * a walker still inside finds their entries frozen (locked) and restarts.
 */
/* Shared mode: the call's own flush window (one range: a call changes one
 * slot and what folds around it). */
static void sh_flush_add(struct pt_op *o, uint64_t lo, uint64_t last, unsigned fflags)
{
    if (!o->sh->fl) {
        o->sh->fl = true;
        o->sh->fl_lo = lo, o->sh->fl_last = last, o->sh->fl_flags = fflags;
        return;
    }
    o->sh->fl_lo = lo < o->sh->fl_lo ? lo : o->sh->fl_lo;
    o->sh->fl_last = last > o->sh->fl_last ? last : o->sh->fl_last;
    o->sh->fl_flags = pt_fl_merge(o->sh->fl_flags, fflags);
}

/* The break-before-make primitive's shared half (the engine's break_slots
 * calls it for a shared call): the entries are locked by the caller
 * already (pt_lock); the barrier and the flush follow at once where needed,
 * else the flush joins the call's window. */
bool mmp_core_pt_sh_break(struct pt_op *o, uint64_t lo, uint64_t last, bool needed, unsigned fflags)
{
    if (!needed) {
        sh_flush_add(o, lo, last, fflags);
        return false;
    }
    mmp_core_pt_emit(o->pt, o->st, true, lo, last, fflags);
    o->st->bbm++;
    return true;
}


/* pt_break() of the engine for a shared call: slots [lo, hi] of depth d
 * (slot lo maps va_lo), a private table needing nothing. */
static bool sh_pt_break(struct pt_op *o, unsigned d, unsigned lo, unsigned hi, uint64_t va_lo,
                        bool needed, bool priv, unsigned fflags)
{
    if (priv)
        return false;
    uint64_t va_hi = va_lo + (uint64_t)(hi - lo + 1) * slot_size(o->g, d) - 1;
    if (fflags & MMP_FLUSH_LEAF)
        fflags = pt_fl_leaf(o->g, d);
    return mmp_core_pt_sh_break(o, va_lo, va_hi, needed, fflags);
}

#define PT_RESTART (-4096) /* internal: the tree changed under the commit */
#define SH_TRIES 8

/*
 * Lock entries [lo, hi] of the live table t; entry `at` must still be
 * `want` (the value the caller decided on; at = ~0u: none). On a conflict
 * the ones taken are restored: -EAGAIN (one was locked) or PT_RESTART (one
 * changed). The old values are not copied (stack: a 128-entry run would
 * take 1 KiB): a locked entry keeps every bit but the valid ones, so
 * pt_lk_old() gives it back; lk0 keeps the first, and a lock of more than
 * one entry (a contiguous run: arm64, whose valid bit is one bit) takes
 * valid entries only.
 */
static uint64_t pt_lk_old(const struct pt_op *o, const uint64_t *t, unsigned lo, unsigned k)
{
    return k == lo ? o->sh->lk0 : (pt_ld(&t[k]) & ~o->g->lock_bit) | o->g->valid_bit;
}

static void pt_unlock(struct pt_op *o, uint64_t *t, unsigned lo, unsigned end)
{
    for (unsigned k = lo; k < end; k++)
        pt_st_release(&t[k], pt_lk_old(o, t, lo, k));
}

static int pt_lock(struct pt_op *o, uint64_t *t, unsigned lo, unsigned hi, unsigned at,
                   uint64_t want)
{
    const struct mmp_pt_geom *g = o->g;
    for (unsigned k = lo; k <= hi; k++) {
        uint64_t e = pt_ld(&t[k]);
        int rc = 0;
        if (pt_locked(g, e))
            rc = -MMP_EAGAIN;
        else if ((k == at && e != want) || (hi > lo && !(e & g->valid_bit)) ||
                 pt_cas(&t[k], e, pt_lockval(g, e)) != e)
            rc = PT_RESTART;
        if (rc) {
            pt_unlock(o, t, lo, k);
            return rc;
        }
        if (k == lo)
            o->sh->lk0 = e;
    }
    o->st->entries_written += hi - lo + 1;
    return 0;
}

/* What a lost compare-and-swap found. */
static int sh_lost(const struct pt_op *o, uint64_t found)
{
    return pt_locked(o->g, found) ? -MMP_EAGAIN : PT_RESTART;
}

static void sh_retire(struct pt_op *o, void *va, uint64_t pa)
{
    o->sh->ret[o->sh->nret].va = va; /* at most one per depth and call */
    o->sh->ret[o->sh->nret].pa = pa;
    o->sh->nret++;
}

static void give_back(void *arg, void *va, uint64_t pa)
{
    struct pt_op *o = (struct pt_op *)arg;
    mmp_core_pt_res_push(o, (uint64_t *)va, pa); /* still counted: unreserve uncounts it */
}

/*
 * Change the live entry i (value e) of t at depth d into v, which needs
 * break-before-make when `needed`. Inside a contiguous run the whole run
 * is locked and unmade (a contiguity change), entry i taking v; the
 * entries that stay (and a re-protected entry i) get the run's state, the
 * OR of its entries (core/pt_state.h), which may differ from entry to
 * entry. Without a break (and outside a run) it is one compare-and-swap,
 * flushed at the end.
 */
static int sh_change(struct pt_op *o, uint64_t *t, unsigned d, unsigned i, uint64_t va_i,
                     uint64_t e, uint64_t v, bool needed, unsigned fflags)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t sz = slot_size(g, d), cb = g->cont_bit;
    if (fflags & MMP_FLUSH_LEAF)
        fflags = pt_fl_leaf(g, d);
    if (!(e & g->valid_bit) || !(e & cb)) {
        if (!needed) {
            uint64_t f = pt_cas(&t[i], e, v);
            if (f != e)
                return sh_lost(o, f);
            o->st->entries_written++;
            o->sh->bar = true;
            if (e & g->valid_bit)
                sh_flush_add(o, va_i, va_i + sz - 1, fflags);
            return 0;
        }
        int rc = pt_lock(o, t, i, i, i, e);
        if (rc)
            return rc;
        sh_pt_break(o, d, i, i, va_i, true, false, fflags);
        pt_st_release(&t[i], v);
        return 0;
    }
    unsigned R = 1u << g->cont[d], lo = i & ~(R - 1), st = 0;
    int rc = pt_lock(o, t, lo, lo + R - 1, i, e);
    if (rc)
        return rc;
    for (unsigned k = 0; k < R; k++) {
        uint64_t x = pt_lk_old(o, t, lo, lo + k);
        if (((x ^ (o->sh->lk0 + k * sz)) & ~g->ign_mask) || !(x & cb)) {
            pt_unlock(o, t, lo, lo + R);
            return PT_RESTART; /* not the run the caller saw */
        }
        st |= pt_st_of(g, x);
    }
    if (pt_kind(g, d, v) == PT_TABLE && (st & ~o->sh->st_split)) {
        pt_unlock(o, t, lo, lo + R);
        return PT_RESTART; /* state recorded after the split read it: again */
    }
    if (o->kind == OP_PROT)
        v = pt_st_give(g, v, st);
    /* the run unmade while entry i changes: not a change of size alone */
    needed |= pt_needs_bbm(g, d, e, v, PT_CHG_CONT | PT_CHG_ATTR);
    sh_pt_break(o, d, lo, lo + R - 1, va_i - (uint64_t)(i - lo) * sz, needed, false, fflags);
    for (unsigned k = 0; k < R; k++)
        pt_st_release(&t[lo + k],
                      lo + k == i ? v : pt_st_give(g, pt_lk_old(o, t, lo, lo + k) & ~cb, st));
    o->sh->bar = true;
    return 0;
}

/*
 * A shared map's cache maintenance of its new memory (mmp_pt_maint), once,
 * just before the call's publication - or its success without one (the
 * translation was in place) - so that a call failing before it (-ENOMEM,
 * -ENOTSUP, -EEXIST, -EIO) calls no hook. Only a call that then loses its
 * publication to another writer can fail after it (pt.h).
 */
static void sh_maint(struct pt_op *o)
{
    if (o->kind != OP_MAP || (o->flags & OPF_FOLD) || o->sh->maint_done)
        return; /* OPF_FOLD: core/pt_fault.c maintained its page before storing it */
    o->sh->maint_done = true;
    mmp_core_pt_maint(o->pt, o->sh->m_pa, o->sh->m_size, o->attrs);
}

/* Fold the run around entry i of t at depth d if this call completed it:
 * lock it, check it, break where the format says, release it with the
 * contiguous bit. Gives up (changing nothing) on any conflict. */
static void sh_fold_run(struct pt_op *o, uint64_t *t, unsigned d, unsigned i, uint64_t va_i)
{
    const struct mmp_pt_geom *g = o->g;
    unsigned R = run_len(o, d);
    if (R < 2 || (o->flags & OPF_NOFOLD))
        return;
    uint64_t sz = slot_size(g, d), cb = g->cont_bit;
    unsigned ra = i & ~(R - 1);
    uint64_t va_ra = va_i - (uint64_t)(i - ra) * sz, pa_ra = va_ra + o->delta;
    if (!run_matches(o, d, t, ra, ra + R - 1, pa_ra, o->tmpl[d]))
        return;
    if (pt_lock(o, t, ra, ra + R - 1, ~0u, 0))
        return;
    for (unsigned k = 0; k < R; k++)
        if (!leaf_is(g, d, pt_lk_old(o, t, ra, ra + k), pa_ra + k * sz, o->tmpl[d])) {
            pt_unlock(o, t, ra, ra + R);
            return;
        }
    sh_pt_break(o, d, ra, ra + R - 1, va_ra,
             pt_needs_bbm(g, d, o->sh->lk0, o->sh->lk0 | cb, PT_CHG_CONT), false, MMP_FLUSH_LEAF);
    for (unsigned k = 0; k < R; k++)
        pt_st_release(&t[ra + k], pt_lk_old(o, t, ra, ra + k) | cb);
    o->sh->bar = true;
}

/*
 * Freeze the n entries of the live table c (depth d): each is swapped to
 * LOCKED if it is what the caller expects - a leaf mapping pa + k * csz
 * with tm (pa != ~0), or invalid (pa == ~0). Writers that reach c before
 * its parent is replaced then fail their compare-and-swap. On a mismatch
 * the frozen ones are restored and the entry found is returned (0 done).
 */
static uint64_t sh_freeze(struct pt_op *o, uint64_t *c, unsigned d, uint64_t pa, uint64_t tm,
                          uint64_t *found)
{
    const struct mmp_pt_geom *g = o->g;
    size_t n = pt_nent(g, d), k;
    uint64_t csz = slot_size(g, d), vb = tm & g->valid_bit;
    for (k = 0; k < n; k++) {
        uint64_t x = pt_ld(&c[k]);
        bool ok = pa == ~0ull ? x == 0 : leaf_is(g, d, x & ~g->cont_bit, pa + k * csz, tm);
        if (!ok || pt_cas(&c[k], x, pt_lockval(g, x)) != x) {
            *found = x ? x : 1;
            break;
        }
    }
    if (k == n) {
        o->st->entries_written += n;
        return 0;
    }
    for (size_t j = 0; j < k; j++) /* frozen leaves had tm's valid bits */
        pt_st_release(&c[j], pa == ~0ull ? 0 : (pt_ld(&c[j]) & ~g->lock_bit) | vb);
    return *found;
}

/* Replace the table entry of slot s (its child frozen) by v: lock, break,
 * release; the child is retired. */
static int sh_replace_table(struct pt_op *o, struct pt_slot *s, uint64_t *c, uint64_t v)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t sz = slot_size(g, s->d), base = s->va & ~(sz - 1);
    int rc = pt_lock(o, s->t, s->i, s->i, s->i, s->e);
    if (rc)
        return rc;
    sh_pt_break(o, s->d, s->i, s->i, base, true, false, 0);
    pt_st_release(&s->t[s->i], v);
    sh_retire(o, c, pt_tbl_oa(g, s->e));
    return 0;
}

/* A table this call completed (every entry a leaf of one aligned region
 * with its attributes) becomes one block. The children are frozen first:
 * a writer that found the table before cannot change an entry of it
 * after it is unlinked. */
static void sh_fold_table(struct pt_op *o, struct pt_slot *s)
{
    const struct mmp_pt_geom *g = o->g;
    unsigned d = s->d;
    size_t n = pt_nent(g, d + 1);
    uint64_t *c = pt_child(o->pt, s->e);
    uint64_t lst = pt_ld(&c[n - 1]) & ~g->cont_bit;
    if (pt_kind(g, d + 1, lst) != PT_LEAF)
        return; /* the common case: not complete */
    uint64_t sz = slot_size(g, d), base = s->va & ~(sz - 1), pa = base + o->delta;
    uint64_t found, tm = o->tmpl[d + 1];
    if (!leaf_is(g, d + 1, lst, pa + (n - 1) * slot_size(g, d + 1), tm))
        return;
    if (sh_freeze(o, c, d + 1, pa, tm, &found))
        return;
    /* the block's state: the OR of the frozen pages' (they keep their bits) */
    if (sh_replace_table(o, s, c,
                         pt_st_as(g, o->tmpl[d] | pt_oa_enc(g, pa), pt_st_or(g, c, 0, (unsigned)n - 1)))) {
        uint64_t vb = tm & g->valid_bit;
        for (size_t k = 0; k < n; k++)
            pt_st_release(&c[k], (pt_ld(&c[k]) & ~g->lock_bit) | vb);
        return;
    }
    sh_fold_run(o, s->t, d, s->i, base);
}

/* An unmap left the child of slot s empty (its entries all 0): freeze
 * them (a writer that reached the table fails its compare-and-swap and
 * retries from the root), unlink it, retire it. Gives up, changing
 * nothing, where an entry is not 0 or the slot changed. Levels above
 * follow in their own post visits. */
static void sh_drop_empty(struct pt_op *o, struct pt_slot *s)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t *c = pt_child(o->pt, s->e), found;
    size_t n = pt_nent(g, s->d + 1);
    for (size_t k = 0; k < n; k++) /* the common case ends at once */
        if (pt_ld(&c[k]))
            return;
    if (sh_freeze(o, c, s->d + 1, ~0ull, 0, &found))
        return;
    if (sh_replace_table(o, s, c, 0))
        for (size_t k = 0; k < n; k++)
            pt_st_release(&c[k], 0);
}

PT_VISITOR int sh_entry(void *ctx, struct pt_slot *s)
{
    struct pt_op *o = (struct pt_op *)ctx;
    bool map = o->kind == OP_MAP;
    s->tag = T_NONE;
    if (s->d == o->sh->ud) { /* the unit, a block-sized slot */
        s->span_last = s->last;
        return PT_SPAN;
    }
    if (pt_locked(o->g, s->e))
        return -MMP_EAGAIN;
    if (s->kind == PT_TABLE) {
        s->tag = s->priv ? T_NONE : T_TABLE;
        return pt_descend(s, pt_child(o->pt, s->e), PT_TABLE, s->priv);
    }
    if (o->flags & OPF_FOLD)
        return PT_SKIP; /* no table here: nothing the map completed */
    if (s->kind == PT_INV && !map)
        return PT_SKIP; /* nothing mapped there */
    if (s->kind == PT_LEAF && map && !(o->flags & OPF_REPLACE))
        return -MMP_EEXIST;
    if (map && leaf_same(o, s->d, s->e, s->va & ~(slot_size(o->g, s->d) - 1)))
        return PT_SKIP; /* a block translating the unit as asked already */
    int rc;
    if (!o->nres && (rc = mmp_core_pt_reserve(o, 1)))
        return rc; /* nothing published yet: the call gives back what it took */
    return s->kind == PT_LEAF ? mmp_core_pt_split_private(o, s) : mmp_core_pt_new_begin(o, s);
}

/* The unit: slot s->i of s->t at depth o->sh->ud. */
PT_VISITOR int sh_span(void *ctx, struct pt_slot *s)
{
    struct pt_op *o = (struct pt_op *)ctx;
    const struct mmp_pt_geom *g = o->g;
    unsigned d = s->d, i = s->i;
    uint64_t *t = s->t, cb = g->cont_bit, sz = slot_size(g, d), va = s->va & ~(sz - 1);
    uint64_t e = t ? pt_ld_acquire(&t[i]) : 0;
    int kind = t ? pt_kind(g, d, e) : s->vkind;
    bool map = o->kind == OP_MAP, replace = (o->flags & OPF_REPLACE) != 0;
    if (pt_locked(g, e))
        return -MMP_EAGAIN;
    if (o->flags & OPF_FOLD) { /* the map happened: only its run's fold */
        if (kind == PT_LEAF && !(e & cb))
            sh_fold_run(o, t, d, i, va);
        return 0;
    }
    if (kind == PT_INV && !map)
        return 0;
    if (kind == PT_LEAF && map && !replace)
        return -MMP_EEXIST;
    if (kind == PT_TABLE && d + 1 < MMP_PT_MAXLEV) {
        /* A block-sized unit over a table: only an empty one is replaced
         * (freezing arbitrary subtrees is not done in shared mode). */
        uint64_t *c = pt_child(o->pt, e), found = 0;
        if (o->kind == OP_PROT)
            return -MMP_ENOTSUP;
        if (!sh_freeze(o, c, d + 1, ~0ull, 0, &found)) {
            sh_maint(o);
            int rc = sh_replace_table(o, s, c, map ? o->tmpl[d] | pt_oa_enc(g, va + o->delta) : 0);
            if (rc == 0 && map)
                sh_fold_run(o, t, d, i, va);
            return rc;
        }
        if (pt_locked(g, found))
            return -MMP_EAGAIN;
        return found && map && !replace ? -MMP_EEXIST : found ? -MMP_ENOTSUP : 0;
    }
    uint64_t v = 0;
    unsigned chg = 0;
    if (map) {
        v = o->tmpl[d] | pt_oa_enc(g, va + o->delta);
        chg = PT_CHG_OA | PT_CHG_ATTR;
    } else if (o->kind == OP_PROT) {
        uint64_t ks = pt_st_keep(g, o->tmpl[d]) | o->keep; /* its state stays */
        v = (e & ((g->oa_mask[d] & ~cb) | ks)) | (o->tmpl[d] & ~ks);
        chg = PT_CHG_ATTR;
    }
    if (kind == PT_LEAF && !((v ^ e) & ~g->ign_mask & ~cb)) {
        sh_maint(o);
        return 0; /* already so (a run keeps its bit) */
    }
    if (s->priv) { /* a split block's table, or a new one: plain stores */
        if (e & cb) {
            unsigned R = 1u << g->cont[d], lo = i & ~(R - 1);
            for (unsigned k = lo; k < lo + R; k++)
                pt_st(&t[k], pt_ld(&t[k]) & ~cb);
        }
        pt_st(&t[i], v);
        o->st->entries_written++;
        return 0;
    }
    bool needed = kind == PT_LEAF && v && pt_needs_bbm(g, d, e, v, chg);
    sh_maint(o);
    int rc = sh_change(o, t, d, i, va, e, v, needed, MMP_FLUSH_LEAF);
    if (rc == PT_RESTART && map && !replace && kind == PT_INV) {
        /* lost to another map of this slot: -EEXIST, like a later call */
        uint64_t f = pt_ld(&t[i]);
        if (pt_kind(g, d, f) == PT_LEAF)
            return -MMP_EEXIST;
    }
    if (rc == 0 && map)
        sh_fold_run(o, t, d, i, va);
    return rc;
}

PT_VISITOR int sh_post(void *ctx, struct pt_slot *s)
{
    struct pt_op *o = (struct pt_op *)ctx;
    const struct mmp_pt_geom *g = o->g;
    if (s->tag == T_NONE)
        return 0;
    if (s->tag == T_TABLE) {
        if (o->kind == OP_MAP && leaf_fits(o, s->d) && !(o->flags & OPF_NOFOLD))
            sh_fold_table(o, s);
        else if (o->kind == OP_UNMAP && !(o->pt->cfg_flags & MMP_PT_KEEP_TABLES))
            sh_drop_empty(o, s);
        return 0;
    }
    /* T_NEW / T_SPLIT: link the private subtree - the publication. */
    uint64_t tbl = g->tbl_tmpl | pt_oa_enc(g, s->aux);
    if (s->priv) {
        if (s->tag == T_SPLIT && (s->e & g->cont_bit)) {
            unsigned R = 1u << g->cont[s->d], lo = s->i & ~(R - 1);
            for (unsigned k = lo; k < lo + R; k++)
                pt_st(&s->t[k], pt_ld(&s->t[k]) & ~g->cont_bit);
        }
        mmp_core_pt_link_table(o, s->t, s->i, s->aux, true);
        return 0;
    }
    sh_maint(o);
    mmp_arch_pt_publish(); /* the child's contents before the pointer */
    uint64_t sz = slot_size(g, s->d), base = s->va & ~(sz - 1);
    bool needed = s->tag == T_SPLIT &&
                  pt_needs_bbm(g, s->d, s->e, 0,
                               PT_CHG_SIZE | (o->kind != OP_UNMAP ? PT_CHG_ATTR : 0));
    int rc = sh_change(o, s->t, s->d, s->i, base, s->e, tbl, needed, MMP_FLUSH_LEAF);
    /* Not published: the private subtree is the pages the call took
     * (o->sh->tk), which pt_run_shared gives back after the walk, outside
     * its frames. */
    if (rc == 0)
        o->sh->ntk = 0; /* linked */
    return rc;
}

static const struct pt_visitor sh_visitor = {
    .flags = PT_V_ACQUIRE, .entry = sh_entry, .span = sh_span, .post = sh_post};

/* The unit's depth: the one whose slot is [va, last] (a leaf size). */
static int sh_unit(struct pt_op *o, uint64_t va, uint64_t last)
{
    const struct mmp_pt_geom *g = o->g;
    for (unsigned d = g->nlev; d-- > 0;) { /* pages first: the common case */
        uint64_t sz = slot_size(g, d);
        if (last - va + 1 != sz || (va & (sz - 1)))
            continue;
        bool ok = o->kind == OP_MAP ? leaf_fits(o, d) || d + 1 == g->nlev : g->leaf_ok[d];
        if (!ok || (o->kind == OP_MAP && (o->delta & (sz - 1))))
            break;
        o->sh->ud = d;
        return 0;
    }
    return -MMP_ENOTSUP;
}

static void sh_count(uint64_t *c, uint64_t n)
{
    if (n)
        AO_fetch_and_add((volatile AO_t *)(void *)c, (AO_t)n);
}

/* End of a shared call: its barrier and flush, its retired tables, and its
 * counters added to the table's. */
static void sh_end(struct pt_op *o)
{
    struct pt *pt = o->pt;
    if (o->sh->fl || o->sh->bar)
        mmp_core_pt_emit(pt, o->st, o->sh->fl, o->sh->fl_lo, o->sh->fl_last, o->sh->fl_flags);
    for (unsigned k = 0; k < o->sh->nret; k++) {
        void *va = o->sh->ret[k].va;
        uint64_t pa = o->sh->ret[k].pa;
        o->st->table_pages--; /* shared mode: the call's own count */
        mmp_core_pt_retire(pt, va, pa);
    }
    /* The rare counters only: one locked add per fault on a line every
     * writer shares would be the first limit on many CPUs (pt.h). */
    sh_count(&pt->st.table_pages, o->st->table_pages);
    sh_count(&pt->st.flushes, o->st->flushes);
    sh_count(&pt->st.bbm, o->st->bbm);
}

static inline __attribute__((always_inline)) int pt_run_shared(struct pt_op *o, uint64_t va,
                                                               uint64_t last, unsigned nlev)
{
    struct pt *pt = o->pt;
    struct pt_sh sh;
    __builtin_memset(&sh, 0, __builtin_offsetof(struct pt_sh, fl_lo)); /* not the scratch */
    o->sh = &sh;
    o->st = &sh.lst;
    int rc = sh_unit(o, va, last);
    if (rc)
        return rc;
    sh.m_pa = va + o->delta; /* maintained just before the publication */
    sh.m_size = last - va + 1;
    bool epoch = !pt->ops.retire_table;
    if (epoch)
        mmp_host_epoch_enter();
    rc = PT_RESTART;
    for (unsigned n = 0; rc == PT_RESTART && n < SH_TRIES; n++) {
        rc = pt_walk(&sh_visitor, o, pt, nlev, 0, pt->root, false, va, last);
        /* A walk that stopped before its publication (-ENOMEM, -EEXIST,
         * the tree changed under it) may hold private tables, none linked
         * to another yet. */
        while (o->sh->ntk) {
            o->sh->ntk--;
            give_back(o, o->sh->tk[o->sh->ntk].va, o->sh->tk[o->sh->ntk].pa);
        }
    }
    if (epoch)
        mmp_host_epoch_leave();
    mmp_core_pt_unreserve(o);
    sh_end(o);
    return rc == PT_RESTART ? -MMP_EAGAIN : rc;
}

/* The instances: one per depth, and the generic one (struct pt::run of
 * the table calls them for its shared calls). */
#define PT_SH_INSTANCE(n)                                                      \
    __attribute__((noinline)) int mmp_core_pt_run_sh_##n(struct pt_op *o, uint64_t va, \
                                                         uint64_t last)        \
    {                                                                          \
        return pt_run_shared(o, va, last, n);                                  \
    }
PT_DEPTHS(PT_SH_INSTANCE)

__attribute__((noinline)) int mmp_core_pt_run_sh_generic(struct pt_op *o, uint64_t va,
                                                         uint64_t last)
{
    return pt_run_shared(o, va, last, o->g->nlev);
}

int mmp_core_pt_sh_unmap_slot(struct pt *pt, unsigned d, uint64_t *t, unsigned i, uint64_t va,
                              uint64_t e)
{
    struct pt_sh sh;
    __builtin_memset(&sh, 0, __builtin_offsetof(struct pt_sh, fl_lo)); /* not the scratch */
    struct pt_op o = {.pt = pt, .g = &pt->g, .kind = OP_UNMAP, .shared = true, .sh = &sh,
                      .st = &sh.lst};
    /* what sh_span does for the unmap of a leaf: no break asked (v = 0);
     * sh_change adds the run's own */
    if (sh_change(&o, t, d, i, va, e, 0, false, MMP_FLUSH_LEAF))
        return -1;
    sh_end(&o);
    return 0;
}
