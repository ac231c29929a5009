/* SPDX-License-Identifier: MIT */
/*
 * One-page calls at the speed of a walk: mmp_pt_map() of one granule into
 * a leaf table that exists, and mmp_pt_unmap() of one granule that is a
 * page - a hypervisor's second-stage faults, and the unmaps of a balloon
 * or of reclaim - on exclusive and shared (MMP_PT_SHARED) tables.
 *
 * Dispatch: mmp_pt_map() and mmp_pt_unmap() (core/pt_update.c) check
 * their arguments, then call mmp_core_pt_slot_map/unmap() for a range of
 * one granule. These either do the whole call or return PT_SLOT_ENGINE
 * having changed nothing, and the engine (core/pt_engine.c) then does the
 * call as it does every other. The rule that keeps the two paths one
 * behaviour: this file only does a call whose every step it can decide
 * from what it reads before its first change, in the cases where the
 * engine would make exactly the same changes, counts and flushes. Every
 * other case goes to the engine untouched:
 *  - any entry on the path that is not a table entry as mmport writes it
 *    (a block to split, an invalid slot, a locked entry, anything a
 *    corrupted table may hold: the engine's walker reports -EIO);
 *  - a path the engine's walker would refuse (a cycle, a table page
 *    queued for free_table, more tables than the table owns);
 *  - a map into a slot that is not empty, with MMP_MAP_REPLACE, or one
 *    that would complete a contiguous run or a table the engine folds
 *    (shared tables: the map is made, then, where it completed one, the
 *    caller runs the engine's folds - PT_SLOT_FOLD - as the engine's own
 *    shared map folds after its compare-and-swap);
 *  - an unmap that would empty its table (the engine frees it);
 *  - attributes no cached template holds and the format refuses.
 * So every guarantee of the engine holds here because the engine's
 * decisions are made on the same data: one store per call, nothing to
 * fail after it; stores, barriers, flushes and counters go through the
 * batching layer (core/pt_batch.c) exactly as the engine's would; the
 * unmap of a page in a contiguous run is the engine's own code
 * (mmp_core_pt_unmap_slot, mmp_core_pt_sh_unmap_slot: the run locked and
 * broken as a whole on a shared table) on the table this walk found.
 *
 * What makes it fast: no operation structure to clear and no prepare
 * pass (nothing can fail after the first change, so there is nothing to
 * prepare); the leaf template from a small cache instead of a call into
 * the format per level; one descent, specialised for the table's depth,
 * reading one entry per level; emptiness after an unmap found by a scan
 * that starts in the cache line of the changed entry and stops at the
 * first valid entry (a count would have to be kept in step by every
 * path that stores, in shared mode under concurrent writers, for a check
 * that almost always ends in the line the call already reads).
 */
#include "pt_fault.h"
#include "pt_op.h"
#include "pt_walk.h"

/* ---- leaf templates, cached per attribute set ---------------------------- */

/*
 * The last-level leaf template for attrs (what op_init() computes for the
 * engine, which also checks that every leaf level of the format takes
 * attrs: the same check is made before a template is cached, so a cached
 * one means the engine would accept attrs too). A slot is ready when its
 * key holds PT_TC_READY | attrs (release) after its template; shared
 * tables fill a free slot once (compare-and-swap: several writers may
 * miss at once), an exclusive table's one writer replaces slots in turn.
 */
#define PT_TC_READY (1ull << 32)
#define PT_TC_CLAIMED (1ull << 33)

static bool tmpl_lookup(const struct pt *pt, uint32_t attrs, uint64_t *tm)
{
    for (unsigned k = 0; k < PT_TC_SLOTS; k++)
        if (AO_load_acquire(&pt->tc[k].key) == (PT_TC_READY | attrs)) {
            *tm = pt->tc[k].tmpl;
            return true;
        }
    return false;
}

static __attribute__((noinline)) bool tmpl_fill(struct pt *pt, uint32_t attrs, uint64_t *tm,
                                               bool shared)
{
    const struct mmp_pt_geom *g = &pt->g;
    for (unsigned d = 0; d < g->nlev; d++) {
        uint64_t x;
        if (g->leaf_ok[d] && mmp_core_pt_leaf(g, d, attrs, &x))
            return false; /* the engine reports the format's error */
        if (d + 1 == g->nlev)
            *tm = x;
    }
    pt_note_global(pt, attrs);
    unsigned k;
    if (shared) {
        for (k = 0; k < PT_TC_SLOTS; k++)
            if (!AO_load(&pt->tc[k].key) &&
                AO_compare_and_swap_full(&pt->tc[k].key, 0, PT_TC_CLAIMED))
                break;
        if (k == PT_TC_SLOTS)
            return true; /* full: computed per call from now on */
    } else {
        k = pt->tc_next++ % PT_TC_SLOTS;
        AO_store(&pt->tc[k].key, 0);
    }
    pt->tc[k].tmpl = *tm;
    AO_store_release(&pt->tc[k].key, PT_TC_READY | attrs);
    return true;
}

static inline bool tmpl_of(struct pt *pt, uint32_t attrs, uint64_t *tm, bool shared)
{
    return tmpl_lookup(pt, attrs, tm) || tmpl_fill(pt, attrs, tm, shared);
}

/* ---- the descent ---------------------------------------------------------- */

/*
 * The last-level table on va's path, or NULL where the engine must look:
 * an entry that is not a table entry as mmport writes it (its template
 * and an address; bits the hardware may set are ignored), a link to the
 * root or back into the path (a cycle), a page this table gave to
 * free_table (PT_DFREE_MARK in entry 2: read only where the page's bit in
 * struct pt::freed_bits is set, so a table that frees few pages costs no
 * second cache line per level), or a table owning fewer pages than the
 * path holds (the engine's walk bound). Shared tables load with acquire,
 * as the engine's shared walk does.
 */
static inline __attribute__((always_inline)) uint64_t *
slot_table(const struct pt *pt, uint64_t va, unsigned nlev, bool shared)
{
    const struct mmp_pt_geom *g = &pt->g;
    /* loop invariants, loaded once (the compiler cannot know that the
     * translation hook leaves them alone) */
    const uint64_t care = ~g->tbl_oa_mask & ~g->ign_mask, want = g->tbl_tmpl & care;
    const uint64_t am = g->tbl_oa_mask & ~g->oa_field, of = g->oa_field;
    const unsigned os = g->oa_shift;
    void *(*p2v)(void *, uint64_t) = pt->ops.phys_to_virt;
    void *ctx = pt->ops.ctx;
    const uintptr_t root = (uintptr_t)pt->root, rb = g->root_bytes;
    const uint64_t freed = AO_load(&pt->freed_bits);
    uint64_t *path[MMP_PT_MAXLEV], *t = pt->root;
    if (!shared && pt_ld(&pt->st.table_pages) < nlev - 1)
        return NULL;
#pragma GCC unroll 4
    for (unsigned d = 0; d + 1 < nlev; d++) {
        uint64_t *s = &t[(va >> g->shift[d]) & ((1u << g->nbits[d]) - 1)];
        uint64_t e = shared ? pt_ld_acquire(s) : pt_ld(s);
        if ((e & care) != want)
            return NULL;
        uint64_t pa = of ? (e & am) | ((e & of) << os) : e & am; /* pt_tbl_oa() */
        t = p2v ? (uint64_t *)p2v(ctx, pa) : (uint64_t *)(uintptr_t)pa;
        if ((uintptr_t)t - root < rb)
            return NULL;
        if (freed && (freed & pt_freed_bit(g, pa)) && pt_ld(&t[2]) == PT_DFREE_MARK)
            return NULL;
#pragma GCC unroll 4
        for (unsigned j = 0; j < d; j++)
            if (path[j] == t)
                return NULL;
        path[d] = t;
    }
    return t;
}

/* ---- map ---------------------------------------------------------------- */

/* Entries [lo, lo + n) of the last-level table t but entry i are leaves
 * mapping pa0 + k * granule with the bits of tm that m keeps. */
static bool others_map(const struct mmp_pt_geom *g, const uint64_t *t, unsigned i, unsigned lo,
                       unsigned n, uint64_t pa0, uint64_t tm, uint64_t m)
{
    unsigned L = g->nlev - 1u;
    uint64_t gsz = (uint64_t)1 << g->granule_shift;
    for (unsigned k = lo; k < lo + n; k++) {
        uint64_t e = pt_ld(&t[k]);
        if (k != i && (pt_kind(g, L, e) != PT_LEAF || pt_oa(g, L, e) != pa0 + (k - lo) * gsz ||
                       (e & m) != (tm & m)))
            return false;
    }
    return true;
}

/*
 * Would the leaf for pa in slot i complete what the engine then folds: a
 * contiguous run (map_leaves: every other entry of the run maps its part
 * with the same attributes and no run bit), or, without runs, the whole
 * table that becomes a block (try_collapse)? Only where the output
 * address is aligned for it (slot_could_fold). A run not completed
 * leaves its table incomplete too.
 */
static __attribute__((noinline)) bool slot_folds(const struct pt *pt, const uint64_t *t,
                                                 unsigned i, uint64_t pa, uint64_t tm,
                                                 bool run)
{
    const struct mmp_pt_geom *g = &pt->g;
    unsigned L = g->nlev - 1u;
    uint64_t sz = pt_slot_size(g, L), m = ~g->ign_mask & ~g->oa_mask[L];
    if (run) {
        unsigned R = 1u << g->cont[L], lo = i & ~(R - 1);
        return others_map(g, t, i, lo, R, pa - (uint64_t)(i - lo) * sz, tm, m);
    }
    unsigned n = (unsigned)pt_nent(g, L);
    /* the last entry first, as the engine's check: the common "no" */
    m &= ~g->cont_bit;
    if (i != n - 1 && !others_map(g, t, i, n - 1, 1, pa + (uint64_t)(n - 1 - i) * sz, tm, m))
        return false;
    return others_map(g, t, i, 0, n, pa - (uint64_t)i * sz, tm, m);
}

/* Could a leaf for pa at va complete a run (1) or a table (2) the engine
 * folds, the output address being aligned for one? 0: never. */
static inline __attribute__((always_inline)) int slot_could_fold(const struct pt *pt, uint64_t va, uint64_t pa, uint32_t flags)
{
    const struct mmp_pt_geom *g = &pt->g;
    unsigned L = g->nlev - 1u, cont = g->cont[L];
    uint64_t delta = pa - va;
    uint64_t unit = cont ? pt_slot_size(g, L) << cont : pt_slot_size(g, L - 1);
    if (delta & (unit - 1))
        return 0; /* the common case: aligned for neither (a block is a multiple of a run) */
    if (pt->cfg_flags & MMP_PT_NO_FOLD)
        return 0;
    if (cont && !((pt->cfg_flags & MMP_PT_NO_CONT) || (flags & MMP_MAP_NO_CONT)))
        return (delta & ((pt_slot_size(g, L) << cont) - 1)) ? 0 : 1;
    return g->leaf_ok[L - 1] && !(pt->cfg_flags & MMP_PT_NO_BLOCKS) &&
                   !(flags & MMP_MAP_NO_BLOCK) && !(delta & (pt_slot_size(g, L - 1) - 1))
               ? 2
               : 0;
}

static inline __attribute__((always_inline)) int
slot_map(struct pt *pt, uint64_t va, uint64_t pa, uint32_t attrs, uint32_t flags, unsigned nlev,
         bool shared)
{
    const struct mmp_pt_geom *g = &pt->g;
    unsigned L = nlev - 1;
    uint64_t tm;
    if (!tmpl_of(pt, attrs, &tm, shared))
        return PT_SLOT_ENGINE;
    uint64_t v = tm | pt_oa_enc(g, pa);
    if (!shared) {
        uint64_t *t = slot_table(pt, va, nlev, false);
        if (!t)
            return PT_SLOT_ENGINE;
        unsigned i = pt_idx(g, L, va);
        int fold = slot_could_fold(pt, va, pa, flags);
        if (pt_ld(&t[i]) != 0 || (fold && slot_folds(pt, t, i, pa, tm, fold == 1)))
            return PT_SLOT_ENGINE;
        /* From here on it cannot fail (the engine's commit point). */
        if (g->maint)
            mmp_core_pt_maint(pt, pa, pt_slot_size(g, L), attrs);
        if ((pt->nranges || pt->flush_all) && pt_pending_in(pt, va, va + pt_slot_size(g, L) - 1))
            mmp_core_pt_sync(pt); /* a deferred unmap of this page: flushed first */
        pt_st(&t[i], v);
        mmp_core_pt_slot_end(pt, false, 0, 0, 0);
        return 0;
    }
    /* Shared: as the engine, the compare-and-swap first, then whether it
     * completed a run or a table; writers completing one at once each
     * look after their own swap, so the last one sees it whole. The folds
     * themselves (freeze, lock, break) are the engine's. */
    int fold = slot_could_fold(pt, va, pa, flags);
    bool epoch = !pt->ops.retire_table, folds = false;
    if (epoch)
        mmp_host_epoch_enter();
    uint64_t *t = slot_table(pt, va, nlev, true);
    unsigned i = pt_idx(g, L, va);
    int rc = PT_SLOT_ENGINE;
    if (t && pt_ld_acquire(&t[i]) == 0) {
        if (g->maint) /* a lost race after it is -EEXIST / -EAGAIN, as pt.h allows */
            mmp_core_pt_maint(pt, pa, pt_slot_size(g, L), attrs);
        uint64_t f = pt_cas(&t[i], 0, v);
        rc = f == 0 ? 0 : pt_kind(g, L, f) == PT_LEAF ? -MMP_EEXIST : -MMP_EAGAIN;
        if (!rc) {
            mmp_arch_pt_barrier();
            folds = fold && slot_folds(pt, t, i, pa, tm, fold == 1);
        }
    }
    if (epoch)
        mmp_host_epoch_leave();
    return folds ? PT_SLOT_FOLD : rc;
}

/* ---- unmap -------------------------------------------------------------- */

static __attribute__((noinline)) bool others_valid_scan(const struct mmp_pt_geom *g,
                                                        const uint64_t *t, unsigned i)
{
    unsigned n = (unsigned)pt_nent(g, g->nlev - 1u), line = i & ~7u;
    uint64_t acc = 0;
    for (unsigned k = line; k < line + 8; k++)
        acc |= k == i ? 0 : t[k];
    if (acc & g->valid_bit)
        return true;
    for (unsigned l = (line + 8) & (n - 1); l != line; l = (l + 8) & (n - 1)) {
        acc = 0;
        for (unsigned k = l; k < l + 8; k++)
            acc |= t[k];
        if (acc & g->valid_bit)
            return true;
    }
    return false;
}

/* Does the last-level table t hold a valid entry besides entry i? Its
 * neighbour, then the rest of the cache line of entry i (the call has
 * read it), then the other lines in turn; the first valid entry ends the
 * scan. Only this table's one writer stores into it (exclusive tables):
 * plain loads. */
static inline __attribute__((always_inline)) bool others_valid(const struct mmp_pt_geom *g,
                                                               const uint64_t *t, unsigned i)
{
    if (t[i ^ 1] & g->valid_bit)
        return true;
    return others_valid_scan(g, t, i);
}

/* others_valid for a table other writers change meanwhile: a hint (the
 * engine decides again under its locks), read with atomic loads. */
static __attribute__((noinline)) bool sh_others_valid(const struct mmp_pt_geom *g,
                                                      const uint64_t *t, unsigned i)
{
    unsigned n = (unsigned)pt_nent(g, g->nlev - 1u);
    for (unsigned k = (i + 1) & (n - 1); k != i; k = (k + 1) & (n - 1))
        if (pt_ld(&t[k]))
            return true;
    return false;
}

static inline __attribute__((always_inline)) int slot_unmap(struct pt *pt, uint64_t va,
                                                            unsigned nlev, bool shared)
{
    const struct mmp_pt_geom *g = &pt->g;
    unsigned L = nlev - 1;
    uint64_t last = va + pt_slot_size(g, L) - 1;
    unsigned fl = pt_fl_leaf(g, L);
    if (!shared) {
        uint64_t *t = slot_table(pt, va, nlev, false);
        if (!t)
            return PT_SLOT_ENGINE;
        unsigned i = pt_idx(g, L, va);
        uint64_t e = pt_ld(&t[i]);
        if (pt_kind(g, L, e) != PT_LEAF || pt_leaf_bad(g, e))
            return PT_SLOT_ENGINE; /* nothing mapped, or corrupted: the engine decides */
        if (!(pt->cfg_flags & MMP_PT_KEEP_TABLES) && !others_valid(g, t, i))
            return PT_SLOT_ENGINE; /* the table goes: the engine frees it */
        if (e & g->cont_bit) { /* a run cut: the engine's own unmaking */
            mmp_core_pt_unmap_slot(pt, L, t, i, va);
            mmp_core_pt_call_end(pt);
            return 0;
        }
        pt_st(&t[i], 0);
        mmp_core_pt_slot_end(pt, true, va, last, fl);
        return 0;
    }
    bool epoch = !pt->ops.retire_table;
    if (epoch)
        mmp_host_epoch_enter();
    uint64_t *t = slot_table(pt, va, nlev, true);
    unsigned i = pt_idx(g, L, va);
    int rc = PT_SLOT_ENGINE;
    if (t && !((pt->cfg_flags & MMP_PT_KEEP_TABLES) || sh_others_valid(g, t, i))) {
        /* the table may go: the engine's walk unlinks it (sh_drop_empty) */
    } else if (t) {
        uint64_t e = pt_ld_acquire(&t[i]);
        bool leaf = pt_kind(g, L, e) == PT_LEAF;
        if (leaf && (e & g->cont_bit)) { /* a run: locked and broken as a whole */
            if (!mmp_core_pt_sh_unmap_slot(pt, L, t, i, va, e))
                rc = 0;
        } else if (leaf && pt_cas(&t[i], e, 0) == e) {
            struct mmp_pt_stats st = {0};
            mmp_core_pt_emit(pt, &st, true, va, last, fl);
            AO_fetch_and_add((volatile AO_t *)(void *)&pt->st.flushes, 1);
            rc = 0;
        }
    }
    if (epoch)
        mmp_host_epoch_leave();
    return rc;
}

/* ---- the instances -------------------------------------------------------- */

/* One per paging depth, as the engine's, and the generic one for tables
 * created with MMP_PT_GENERIC_DEPTH. */
int mmp_core_pt_slot_map(struct pt *pt, uint64_t va, uint64_t pa, uint32_t attrs,
                         uint32_t flags, bool shared)
{
    if (flags & MMP_MAP_REPLACE)
        return PT_SLOT_ENGINE;
    if (pt->cfg_flags & MMP_PT_GENERIC_DEPTH)
        return slot_map(pt, va, pa, attrs, flags, pt->g.nlev, shared);
    switch (pt->g.nlev) {
    case 2: return slot_map(pt, va, pa, attrs, flags, 2, shared);
    case 3: return slot_map(pt, va, pa, attrs, flags, 3, shared);
    case 4: return slot_map(pt, va, pa, attrs, flags, 4, shared);
    case 5: return slot_map(pt, va, pa, attrs, flags, 5, shared);
    default: return PT_SLOT_ENGINE;
    }
}

int mmp_core_pt_slot_unmap(struct pt *pt, uint64_t va, bool shared)
{
    if (pt->cfg_flags & MMP_PT_GENERIC_DEPTH)
        return slot_unmap(pt, va, pt->g.nlev, shared);
    switch (pt->g.nlev) {
    case 2: return slot_unmap(pt, va, 2, shared);
    case 3: return slot_unmap(pt, va, 3, shared);
    case 4: return slot_unmap(pt, va, 4, shared);
    case 5: return slot_unmap(pt, va, 5, shared);
    default: return PT_SLOT_ENGINE;
    }
}
