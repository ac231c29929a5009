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
