/* SPDX-License-Identifier: MIT */
/*
 * A leaf's tracking state (include/mmport/track.h): accessed and dirty, as
 * the MMU or a fault call records them in the descriptor, read and given
 * through the format's tracking bits (mmp_pt_geom::trk_*).
 *
 * The state of an arm64 contiguous run is the OR of its entries: the MMU
 * may record an access to any page of the run in any one of them (Arm ARM
 * D8.6.1, D8.4.6/7), so a change that unmakes a run gives that OR to the
 * entries that stay, and a fold gives the folded leaf the OR of what it
 * folds. The engine (core/pt_engine.c) and the tracking passes
 * (core/pt_track.c) keep it with these helpers.
 */
#ifndef MMPORT_CORE_PT_STATE_H
#define MMPORT_CORE_PT_STATE_H

#include "pt_int.h"

#define PT_ST_A 1u /* accessed */
#define PT_ST_D 2u /* dirty */

/* The state leaf e records. Dirty: D set, or marked and writable (the
 * mark model: arm64 DBM, software tracking). An invalid entry a break
 * left with its other bits (pt_break_leaves' keep) reads the same. */
static inline unsigned pt_st_of(const struct mmp_pt_geom *g, uint64_t e)
{
    unsigned s = (e & g->trk_a) ? PT_ST_A : 0;
    if (g->trk_d ? (e & g->trk_d) != 0 : (e & g->trk_m) && (e & g->trk_w) == g->trk_w_on)
        s |= PT_ST_D;
    return s;
}

/* The OR of the state of entries [lo, hi] of t. */
static inline unsigned pt_st_or(const struct mmp_pt_geom *g, const uint64_t *t, unsigned lo,
                                unsigned hi)
{
    unsigned s = 0;
    for (unsigned k = lo; k <= hi; k++)
        s |= pt_st_of(g, pt_ld(&t[k]));
    return s;
}

/* Leaf e with state s given (only ever set: a marked leaf made writable,
 * an unmarked one cannot be dirty). */
static inline uint64_t pt_st_give(const struct mmp_pt_geom *g, uint64_t e, unsigned s)
{
    if (s & PT_ST_A)
        e |= g->trk_a;
    if ((s & PT_ST_D) && g->trk_d)
        e |= g->trk_d;
    else if ((s & PT_ST_D) && (e & g->trk_m))
        e = (e & ~g->trk_w) | g->trk_w_on;
    return e;
}

/* Leaf e without state: not accessed, clean (a marked leaf write-protected). */
static inline uint64_t pt_st_clean(const struct mmp_pt_geom *g, uint64_t e)
{
    e &= ~(g->trk_a | g->trk_d);
    if (e & g->trk_m)
        e = (e & ~g->trk_w) | (g->trk_w & ~g->trk_w_on);
    return e;
}

/* Template-made leaf v (a map's or a fold's new value) with state s. */
static inline uint64_t pt_st_as(const struct mmp_pt_geom *g, uint64_t v, unsigned s)
{
    return pt_st_give(g, pt_st_clean(g, v), s);
}

/* Give state s to the live leaf at p (one compare-and-swap: the MMU may
 * record state in it meanwhile). Invalid entries and tables are left. */
static inline void pt_st_give_live(const struct mmp_pt_geom *g, unsigned d, uint64_t *p,
                                   unsigned s)
{
    for (uint64_t e = pt_ld(p); s && pt_kind(g, d, e) == PT_LEAF;) {
        uint64_t v = pt_st_give(g, e, s), f;
        if (v == e || (f = pt_cas(p, e, v)) == e)
            return;
        e = f;
    }
}

/*
 * The bits a re-protected leaf keeps from its old value besides its
 * frame: its state. A leaf that stays writable under the mark model keeps
 * its write permission bit too (dirty stays dirty; a read-only leaf's
 * value of it is the clean one); one made read-only there loses its dirty
 * state (the format has no dirty read-only leaf).
 */
static inline uint64_t pt_st_keep(const struct mmp_pt_geom *g, uint64_t tmpl)
{
    return g->trk_a | g->trk_d | ((tmpl & g->trk_m) ? g->trk_w : 0);
}

#endif
