/* SPDX-License-Identifier: MIT */
/* One map/unmap/protect call as the engine (core/pt_engine.c) sees it. */
#ifndef MMPORT_CORE_PT_OP_H
#define MMPORT_CORE_PT_OP_H

#include "pt_int.h"

/* OP_SPLIT: split blocks and unmake contiguous runs down to the granule,
 * keeping every translation (dirty tracking, core/pt_track.c). */
enum { OP_MAP, OP_UNMAP, OP_PROT, OP_SPLIT };

#define OPF_REPLACE 1u
#define OPF_NOBLOCK 2u
#define OPF_NOCONT 4u
#define OPF_NOFOLD 8u
/* Shared tables: the map was made by core/pt_fault.c; only fold what it
 * completed (sh_fold_run, sh_fold_table), storing nothing else. */
#define OPF_FOLD 16u

/* Entries handled per break-before-make chunk of protect/unmap; a multiple
 * of every contiguous run length (at most 128), so runs never straddle. */
#define CHUNK 128u

/* Shared mode (MMP_PT_SHARED) only: the call's own batch, merged into
 * the table's at its end (no field of struct pt is written meanwhile). It
 * lives in the shared runner's frame, so exclusive calls do not carry it
 * on their stack. */
struct pt_sh {
    bool bar;          /* a barrier is owed */
    bool fl;           /* a flush of [fl_lo, fl_last] is owed */
    unsigned ud;       /* depth of the one leaf slot the call changes */
    unsigned fl_flags;
    unsigned ntk;      /* private tables taken and not linked into the tree yet */
    unsigned nret;     /* tables unlinked, retired at the end */
    bool maint_done;   /* map: the new memory's cache maintenance ran */
    struct mmp_pt_stats lst;
    /* scratch from here on (never cleared) */
    uint64_t fl_lo, fl_last;
    uint64_t m_pa, m_size; /* map: the output range to maintain */
    struct {
        void *va;
        uint64_t pa;
    } tk[MMP_PT_MAXLEV], ret[MMP_PT_MAXLEV + 1];
    uint64_t lk0; /* old value of the first entry pt_lock() holds */
    uint8_t st_split; /* the state split_begin() gave the live slot's split table */
};

struct pt_op {
    struct pt *pt;
    const struct mmp_pt_geom *g;
    int kind;
    unsigned flags;
    uint32_t attrs;
    bool prep;      /* prepare pass: count tables, find -EEXIST, change nothing */
    bool eio;       /* protect's commit met a reserved entry and left it as it was */
    long need;      /* prepare: table pages the commit will take */
    uint64_t delta; /* map: pa - va (mod 2^64) */
    uint64_t tmpl[MMP_PT_MAXLEV];
    uint64_t keep;  /* protect: bits each leaf keeps besides its state (its
                       software bits, unless MMP_SW_SET) */
    void *res; /* reserved table pages, linked through entries 0/1 */
    uint64_t res_pa;
    uint64_t nres;
    struct mmp_pt_stats *st; /* &pt->st, or &sh->lst in shared mode */
    struct mmp_pt_memcache *mc; /* the caller's pages (NULL: alloc_table) */
    bool shared;
    struct pt_sh *sh; /* shared mode: set by the shared runner */
};

/* After the flush that followed an OP_SPLIT of [va, last]: D the MMU set
 * through a stale block translation in what is a table entry now goes to
 * the table's pages (x86 with MMP_PT_TRACK_HW; nothing elsewhere). */
void mmp_core_pt_stale_d(struct pt *pt, uint64_t va, uint64_t last);

/* ---- helpers of the engine and the shared protocol ---------------------- */

static inline uint64_t slot_size(const struct mmp_pt_geom *g, unsigned d)
{
    return (uint64_t)1 << g->shift[d];
}

static inline bool leaf_fits(const struct pt_op *o, unsigned d)
{
    const struct mmp_pt_geom *g = o->g;
    if (!g->leaf_ok[d])
        return false;
    if (d + 1 < g->nlev && (o->flags & OPF_NOBLOCK))
        return false;
    return (o->delta & (slot_size(g, d) - 1)) == 0;
}

/* Contiguous-run length this map may use at depth d (1 = none). */
static inline unsigned run_len(const struct pt_op *o, unsigned d)
{
    const struct mmp_pt_geom *g = o->g;
    if (!g->cont[d] || (o->flags & OPF_NOCONT))
        return 1;
    if (o->delta & ((slot_size(g, d) << g->cont[d]) - 1))
        return 1;
    return 1u << g->cont[d];
}

/* e is a valid, non-contiguous leaf at depth d mapping pa with tm. */
static inline bool leaf_is(const struct mmp_pt_geom *g, unsigned d, uint64_t e, uint64_t pa,
                           uint64_t tm)
{
    uint64_t m = ~g->oa_mask[d] & ~g->ign_mask;
    return pt_kind(g, d, e) == PT_LEAF && !(e & g->cont_bit) && pt_oa(g, d, e) == pa &&
           (e & m) == (tm & m);
}

/* Entries [k0, k1] are valid, non-contiguous leaves mapping pa0.. with tm. */
static inline bool run_matches(const struct pt_op *o, unsigned d, const uint64_t *t, unsigned k0,
                        unsigned k1, uint64_t pa0, uint64_t tm)
{
    uint64_t sz = slot_size(o->g, d);
    for (unsigned k = k0; k <= k1; k++, pa0 += sz)
        if (!leaf_is(o->g, d, pt_ld(&t[k]), pa0, tm))
            return false;
    return true;
}

/* The leaf e at depth d (slot base va_base) already translates as this map
 * asks (bits the hardware changes and the contiguous bit aside): a replace
 * has nothing to change under it. */
static inline bool leaf_same(const struct pt_op *o, unsigned d, uint64_t e, uint64_t va_base)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t m = ~g->oa_mask[d] & ~g->ign_mask & ~g->cont_bit;
    return g->leaf_ok[d] && pt_kind(g, d, e) == PT_LEAF && pt_oa(g, d, e) == va_base + o->delta &&
           (e & m) == (o->tmpl[d] & m);
}

static inline bool pt_needs_bbm(const struct mmp_pt_geom *g, unsigned d, uint64_t old,
                                uint64_t nw, unsigned chg)
{
    return g->fmt->needs_bbm(g, d, old, nw, chg);
}

/* What a walk left in pt_slot::tag for a slot's post visit. */
enum { T_NONE, T_TABLE, T_NEW, T_SPLIT };

/* The engine's primitives the shared protocol (core/pt_shared.c) uses:
 * the reserve (mmp_core_pt_reserve takes n pages, all or none), the new
 * and split tables a walk builds privately (a shared call's split is
 * always a private table, published by its one compare-and-swap), the
 * link of a table. */
struct pt_slot;
int mmp_core_pt_reserve(struct pt_op *o, long n);
void mmp_core_pt_unreserve(struct pt_op *o);
void mmp_core_pt_res_push(struct pt_op *o, uint64_t *p, uint64_t pa);
int mmp_core_pt_split_private(struct pt_op *o, struct pt_slot *s);
int mmp_core_pt_new_begin(struct pt_op *o, struct pt_slot *s);
void mmp_core_pt_link_table(struct pt_op *o, uint64_t *t, unsigned i, uint64_t pa, bool priv);
/* The other way: the shared half of the break-before-make primitive
 * (core/pt_shared.c), which the engine's break_slots() calls. */
bool mmp_core_pt_sh_break(struct pt_op *o, uint64_t lo, uint64_t last, bool needed, unsigned fflags);

/* The paging depths the engine is instantiated for (and a generic one). */
#define PT_DEPTHS(X) X(2) X(3) X(4) X(5)

/* The shared protocol's instances (core/pt_shared.c). */
#define PT_SH_DECL(n) int mmp_core_pt_run_sh_##n(struct pt_op *o, uint64_t va, uint64_t last);
PT_DEPTHS(PT_SH_DECL)
int mmp_core_pt_run_sh_generic(struct pt_op *o, uint64_t va, uint64_t last);

/* The engine instance of a table (core/pt_engine.c): prepare, reserve,
 * commit. 0 or a negative MMP_E* (nothing changed then). */
int mmp_core_pt_run(struct pt_op *o, uint64_t va, uint64_t last);

/* The one break-before-make primitive (pt_break in core/pt_engine.c), for
 * entry changes made outside the engine (core/pt_track.c): slots [lo, hi]
 * of the live table t at depth d (slot lo maps va_lo) are about to change;
 * needed = the format's rule; the slots hold no table entry. Returns true
 * when they were broken. */
bool mmp_core_pt_break(struct pt_op *o, unsigned d, uint64_t *t, unsigned lo, unsigned hi,
                       uint64_t va_lo, bool needed);

/* The engine's unmap of entry i (mapping va) of the live table t at depth
 * d of an exclusive table, as its commit pass does it (contiguous runs
 * cut are unmade, break-before-make where the format says), for a caller
 * that found the entry itself (core/pt_fault.c); the caller ends the
 * call (mmp_core_pt_call_end). */
void mmp_core_pt_unmap_slot(struct pt *pt, unsigned d, uint64_t *t, unsigned i, uint64_t va);
/* The same on a shared table, entry e of the run having been read: the
 * engine's locked break of the run. 0, or non-zero having changed nothing
 * (the run changed or another writer holds it: the engine's walk decides). */
int mmp_core_pt_sh_unmap_slot(struct pt *pt, unsigned d, uint64_t *t, unsigned i, uint64_t va,
                              uint64_t e);

#endif
