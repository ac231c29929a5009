/* SPDX-License-Identifier: MIT */
/*
 * Page-table engine internals: the private layout of struct mmp_pt and the
 * batching layer every update goes through (core/pt_batch.c). Barrier
 * hoisting, flush coalescing and deferred freeing of table pages live in
 * that one place; lazy-MMU mode (core/lazy.c) only widens its window from
 * one call to a whole lazy section.
 */
#ifndef MMPORT_CORE_PT_INT_H
#define MMPORT_CORE_PT_INT_H

#include "arch.h"
#include "atomic.h"
#include "host.h"
#include "pt_fmt.h"

#define PT_MAX_RANGES 8
#define PT_KEPT 3
#define PT_TC_SLOTS 4 /* leaf templates cached (core/pt_fault.c) */

struct pt_op;
/* An engine instance (core/pt_engine.c), one per paging depth. */
typedef int (*mmp_core_pt_run_fn)(struct pt_op *o, uint64_t va, uint64_t last);

struct pt_range {
    uint64_t lo, last; /* inclusive */
};

struct pt {
    /*
     * Lifecycle, checked by every call: PT_LIVE from mmp_pt_init to
     * mmp_pt_fini, PT_DEAD after it, each XORed with the storage's own
     * address. The storage is the caller's and may hold anything before
     * init: zeroed or stack garbage (or a copy of a live table elsewhere)
     * matches with probability 2^-64; only a table left without fini at
     * this very address does (pt_live).
     */
    uint64_t state;
    struct mmp_pt_geom g;
    mmp_core_pt_run_fn run; /* chosen once for the depth: no per-level test of it */
    struct mmp_pt_ops ops;
    uint64_t *root;
    uint64_t root_pa;
    uint32_t cfg_flags;
    /* batching state (pt_batch.c) */
    uint8_t barrier_pending;
    uint8_t nranges;
    uint8_t max_ranges;
    uint8_t flush_all;
    uint8_t nkept;
    uint8_t global; /* a GLOBAL leaf was asked for: flushes say MMP_FLUSH_GLOBAL */
    uint8_t closing; /* mmp_pt_fini: no reader is left, pages go to free_table */
    uint8_t keep_more; /* kept pages beyond kept[] may go to a scratch list (klist) */
    uint8_t rhint[PT_MAX_RANGES]; /* per pending range: its hints, packed */
    uint32_t ceiling;             /* mmp_pt_config::flush_ceiling, resolved */
    uint32_t lazy_depth;
    uint32_t lazy_paused;
    struct pt_range r[PT_MAX_RANGES];
    void *dfree;      /* table pages waiting for the flush, linked through entries 0/1 */
    uint64_t dfree_pa;
    /* Table pages waiting for the flush that walk caches may still reach
     * and must find unchanged (x86 folds): kept out of band. */
    struct {
        void *va;
        uint64_t pa;
    } kept[PT_KEPT];
    /* More of them, while keep_more: a chain of scratch pages from
     * alloc_table (core/pt_batch.c), freed with them at the flush. */
    uint64_t *klist;
    uint64_t klist_pa;
    struct mmp_pt_stats st;
    /* Last-level leaf templates by attribute set, for one-page calls
     * (core/pt_fault.c): key = PT_TC_READY | attrs once tmpl is valid. */
    struct {
        volatile AO_t key;
        uint64_t tmpl;
    } tc[PT_TC_SLOTS];
    unsigned tc_next; /* exclusive tables: the slot replaced next */
    /* Every table page this table ever queued for free_table (so marked
     * PT_DFREE_MARK) has its bit, pt_freed_bit(), set here: a walk need
     * not read a page's mark where the bit is clear (core/pt_fault.c). */
    volatile AO_t freed_bits;
    /* Why the last call failed (core/pt_reason.c): rule | err << 32,
     * value, end, limit; written only on error paths. */
    volatile AO_t why[4];
};

_Static_assert(sizeof(struct pt) <= sizeof(struct mmp_pt), "struct mmp_pt too small");
_Static_assert(sizeof(AO_t) == sizeof(uint64_t), "64-bit AO_t needed for descriptors");

static inline struct pt *pt_of(struct mmp_pt *p)
{
    return (struct pt *)(void *)p;
}
static inline const struct pt *cpt_of(const struct mmp_pt *p)
{
    return (const struct pt *)(const void *)p;
}

#define PT_LIVE 0x6d6d706f72742b21ull /* between init and fini */
#define PT_DEAD 0x6d6d706f72742d2dull /* after fini */
#define PT_FAILED 0x6d6d706f72743f3full /* after an init that failed: holds its reason */

static inline uint64_t pt_state_of(const void *p, uint64_t st)
{
    return st ^ (uint64_t)(uintptr_t)p;
}

/* p is a table between mmp_pt_init and mmp_pt_fini (NULL is not): the
 * one check at the top of every call. */
static inline bool pt_live(const struct mmp_pt *p)
{
    return p && cpt_of(p)->state == pt_state_of(p, PT_LIVE);
}

/* One aligned atomic load/store per descriptor (no torn reads by walkers). */
static inline uint64_t pt_ld(const uint64_t *p)
{
    return (uint64_t)AO_load((const volatile AO_t *)(const void *)p);
}
static inline void pt_st(uint64_t *p, uint64_t v)
{
    AO_store((volatile AO_t *)(void *)p, (AO_t)v);
}
/* The table-page count: one writer, but read by concurrent walkers (their
 * bound on tables entered, pt_walk.h), so its updates are atomic stores. */
static inline void pt_pages_add(uint64_t *c, int64_t d)
{
    AO_store((volatile AO_t *)(void *)c, (AO_t)(*c + (uint64_t)d)); /* the one writer reads its own count */
}
/*
 * Publishing a table and following a descriptor to one pair up as
 * release/acquire: a concurrent software walker must see the new table's
 * entries, not what the page held before (found by the concurrent-walker
 * test under TSan; on x86 both compile to plain moves).
 */
static inline uint64_t pt_ld_acquire(const uint64_t *p)
{
    return (uint64_t)AO_load_acquire((const volatile AO_t *)(const void *)p);
}
static inline void pt_st_release(uint64_t *p, uint64_t v)
{
    AO_store_release((volatile AO_t *)(void *)p, (AO_t)v);
}

/* Shared mode: one compare-and-swap, returning the value found (== old
 * when it swapped). Full barrier: it publishes tables and orders the
 * reads of a walk that follows it. */
static inline uint64_t pt_cas(uint64_t *p, uint64_t old, uint64_t nw)
{
    return (uint64_t)AO_fetch_compare_and_swap_full((volatile AO_t *)(void *)p, (AO_t)old,
                                                   (AO_t)nw);
}

static inline void *pt_p2v(const struct pt *pt, uint64_t pa)
{
    if (!pt->ops.phys_to_virt)
        return (void *)(uintptr_t)pa;
    return pt->ops.phys_to_virt(pt->ops.ctx, pa);
}

enum { PT_INV = 0, PT_TABLE = 1, PT_LEAF = 2 };

static inline int pt_kind(const struct mmp_pt_geom *g, unsigned d, uint64_t e)
{
    if (!(e & g->valid_bit))
        return PT_INV;
    return (e & g->tbl_mask[d]) == g->tbl_val[d] ? PT_TABLE : PT_LEAF;
}

/* Shared mode: an entry a writer holds LOCKED (mmp_pt_geom::lock_bit):
 * invalid, with the other bits of the entry it replaced. */
static inline bool pt_locked(const struct mmp_pt_geom *g, uint64_t e)
{
    return (e & (g->valid_bit | g->lock_bit)) == g->lock_bit;
}
static inline uint64_t pt_lockval(const struct mmp_pt_geom *g, uint64_t e)
{
    return (e & ~g->valid_bit) | g->lock_bit;
}

/* Output addresses in and out of descriptors (most formats: a mask). */
static inline uint64_t pt_oa(const struct mmp_pt_geom *g, unsigned d, uint64_t e)
{
    return mmp_core_pt_oa_dec(g, e, g->oa_mask[d]);
}
static inline uint64_t pt_tbl_oa(const struct mmp_pt_geom *g, uint64_t e)
{
    return mmp_core_pt_oa_dec(g, e, g->tbl_oa_mask);
}
static inline uint64_t pt_oa_enc(const struct mmp_pt_geom *g, uint64_t pa)
{
    return mmp_core_pt_oa_enc(g, pa);
}
/* pa & wrap == 0 where adding to an encoded address stops being adding to
 * pa (the lowest moved OA bit; ~0 for formats without a moved field). */
static inline uint64_t pt_oa_wrap(const struct mmp_pt_geom *g)
{
    uint64_t m = g->oa_field << g->oa_shift;
    return (m & (0 - m)) - 1;
}

static inline uint64_t *pt_child(const struct pt *pt, uint64_t e)
{
    return (uint64_t *)pt_p2v(pt, pt_tbl_oa(&pt->g, e));
}

static inline unsigned pt_idx(const struct mmp_pt_geom *g, unsigned d, uint64_t va)
{
    return (unsigned)(va >> g->shift[d]) & ((1u << g->nbits[d]) - 1);
}

static inline size_t pt_nent(const struct mmp_pt_geom *g, unsigned d)
{
    return (size_t)1 << g->nbits[d];
}

/* Bytes one entry at depth d maps. */
static inline uint64_t pt_slot_size(const struct mmp_pt_geom *g, unsigned d)
{
    return (uint64_t)1 << g->shift[d];
}

/* Batching layer (pt_batch.c). */
/* Flush ceiling and range count from the configuration (mmp_pt_init). */
void mmp_core_pt_batch_init(struct pt *pt, const struct mmp_pt_config *cfg);
/* Flush hints for leaves at depth d that changed: MMP_FLUSH_LEAF and
 * their stride. */
static inline unsigned pt_fl_leaf(const struct mmp_pt_geom *g, unsigned d)
{
    return MMP_FLUSH_LEAF | ((unsigned)g->shift[d] << MMP_FLUSH_STRIDE_SHIFT);
}
/* The hints of two flushes made one: LEAF if both had it, the stride if
 * both had the same. */
static inline unsigned pt_fl_merge(unsigned a, unsigned b)
{
    unsigned f = a & b & ~MMP_FLUSH_STRIDE_MASK;
    if (((a ^ b) & MMP_FLUSH_STRIDE_MASK) == 0 && (f & MMP_FLUSH_LEAF))
        f |= a & MMP_FLUSH_STRIDE_MASK;
    return f;
}
/* n descriptors were stored into tables a walker can reach. */
static inline void pt_written(struct pt *pt, uint64_t n)
{
    pt->st.entries_written += n;
    if (!pt->barrier_pending) /* set only if not set: no RMW on the hot path */
        pt->barrier_pending = 1;
}
/* Translations in [lo, last] changed: flush them before the call (or the
 * lazy section) ends. */
void mmp_core_pt_flush_add(struct pt *pt, uint64_t lo, uint64_t last, unsigned flags);
/* Break-before-make: the entries for [lo, last] were made invalid; emit the
 * barrier and the flush now, whatever the batching mode. */
void mmp_core_pt_bbm(struct pt *pt, uint64_t lo, uint64_t last, unsigned flags);
/* The barrier and the flush of [lo, last] now, whatever the batching mode
 * (a split that must be complete before entries inside it change). */
void mmp_core_pt_flush_now(struct pt *pt, uint64_t lo, uint64_t last, unsigned flags);
/* Does a deferred flush overlap [lo, last]? (At most PT_MAX_RANGES
 * compares; nothing is pending outside a lazy section.) */
static inline bool pt_pending_in(const struct pt *pt, uint64_t lo, uint64_t last)
{
    if (pt->flush_all && !pt->nranges)
        return true;
    for (unsigned i = 0; i < pt->nranges; i++)
        if (pt->r[i].lo <= last && lo <= pt->r[i].last)
            return true;
    return false;
}
/* Entry 2 of a table page queued for free_table or freed (pt_batch.c):
 * invalid in every format (bits 2:0 clear, neither lock bit). */
#define PT_DFREE_MARK 0x21d20feed00df000ull
_Static_assert(!(PT_DFREE_MARK & (7u | 1ull << 11 | 1ull << 58)), "mark must stay invalid");

/* The bit of struct pt::freed_bits that stands for the table page at pa. */
static inline uint64_t pt_freed_bit(const struct mmp_pt_geom *g, uint64_t pa)
{
    return 1ull << (((pa >> g->granule_shift) * 0x9e3779b97f4a7c15ull) >> 58);
}

/* Sets pa's bit in struct pt::freed_bits (shared-mode writers free
 * reserved pages concurrently, hence the compare-and-swap; the bit is
 * read before the swap, so a table that frees the same pages again pays
 * one load). */
static inline void pt_note_freed(struct pt *pt, uint64_t pa)
{
    const AO_t bit = (AO_t)pt_freed_bit(&pt->g, pa);
    AO_t old;
    do {
        old = AO_load(&pt->freed_bits);
        if (old & bit)
            return;
    } while (!AO_compare_and_swap(&pt->freed_bits, old, old | bit));
}

/* Give a table page of the granule's size back to free_table, marked:
 * a corrupted table that still links it (or links it later, while the
 * memory is unchanged) meets the mark and stops (-EIO), never frees it
 * twice. Every page but the root and retired shared-mode pages (which no
 * writer may touch) goes this way. */
static inline void pt_free_page(struct pt *pt, void *va, uint64_t pa)
{
    pt_note_freed(pt, pa);
    pt_st(&((uint64_t *)va)[2], PT_DFREE_MARK);
    pt->ops.free_table(pt->ops.ctx, va, pa, (size_t)1 << pt->g.granule_shift);
}

/* Reverse a list of pages linked through their words 0 and 1 (the next
 * page's address and physical address; the head's in *head, *head_pa). */
static inline void pt_list_reverse(void **head, uint64_t *head_pa)
{
    void *prev = NULL;
    uint64_t prev_pa = 0;
    while (*head) {
        uint64_t *p = (uint64_t *)*head;
        uint64_t pa = *head_pa;
        *head = (void *)(uintptr_t)p[0];
        *head_pa = p[1];
        p[0] = (uint64_t)(uintptr_t)prev;
        p[1] = prev_pa;
        prev = p;
        prev_pa = pa;
    }
    *head = prev;
    *head_pa = prev_pa;
}

/* A table page unlinked (and flushed) from a table that takes shared
 * calls, which lookups or shared calls may still be reading: to
 * mmp_pt_ops::retire_table, or the built-in epoch scheme. */
void mmp_core_pt_retire(const struct pt *pt, void *va, uint64_t pa);
/* Whether retired pages go to the built-in epoch scheme (a table that
 * takes shared calls, without a retire_table hook). */
static inline bool pt_builtin_epoch(const struct pt *pt)
{
    return (pt->cfg_flags & MMP_PT_SHARED) && !pt->ops.retire_table;
}
/* A reader beside shared calls (lookup, walk, harvest, fault), which may
 * unlink the tables it reads: with the built-in epochs, a section of them
 * around its walk (with a retire hook, the caller's read-side section
 * does this). pt_reader_leave() takes what pt_reader_enter() returned. */
static inline bool pt_reader_enter(const struct pt *pt)
{
    bool ep = pt_builtin_epoch(pt);
    if (ep)
        mmp_host_epoch_enter();
    return ep;
}
static inline void pt_reader_leave(bool ep)
{
    if (ep)
        mmp_host_epoch_leave();
}
/* A table page unlinked from the tree: freed after the covering flush
 * (once, however often a corrupted table links it; never the root). */
void mmp_core_pt_defer_free(struct pt *pt, void *va, uint64_t pa);
/* The same as a pt_for_each_table() callback (arg: the struct pt). */
static inline void pt_defer_page(void *arg, void *va, uint64_t pa)
{
    mmp_core_pt_defer_free((struct pt *)arg, va, pa);
}
/* The same for a page whose entries must stay intact until that flush
 * (its translations are still valid); syncs first when the few slots are
 * full. */
void mmp_core_pt_defer_keep(struct pt *pt, void *va, uint64_t pa);
/* The same for the table a fold at depth d replaced by the block at slot,
 * in a table the MMU records state in: after the flush the block gets
 * what the MMU recorded in the table until then, beyond st (the state it
 * got at the fold). Only in a section that keeps more (keep_more) and
 * while scratch pages come: false, nothing done, otherwise (the caller
 * flushes now instead). */
bool mmp_core_pt_keep_state(struct pt *pt, void *va, uint64_t pa, uint64_t *slot, unsigned d,
                            unsigned st);
/* End of one map/unmap/protect call: one barrier, one coalesced flush and
 * the deferred frees, unless a lazy section defers them. */
void mmp_core_pt_call_end(struct pt *pt);
/* End of a one-page call (core/pt_fault.c) that stored one entry into a
 * live table: the same as mmp_core_pt_flush_add of [lo, last] (when
 * flush) and mmp_core_pt_call_end, without their loops when nothing else
 * is pending and no lazy section is open. */
void mmp_core_pt_slot_end(struct pt *pt, bool flush, uint64_t lo, uint64_t last, unsigned flags);
/* Shared mode, where nothing in struct pt may be written: barrier, then
 * (flush) tlb_flush [lo, last], counted in *st. */
void mmp_core_pt_emit(const struct pt *pt, struct mmp_pt_stats *st, bool flush, uint64_t lo,
                      uint64_t last, unsigned flags);
/* Emit everything pending now (lazy leave/flush/pause). */
void mmp_core_pt_sync(struct pt *pt);
/* A map of [pa, pa+size) with attrs is about to be written: the cache
 * maintenance the format asks for (mmp_pt_info::maint), through the ops
 * hooks, complete before the first store. */
void mmp_core_pt_maint(const struct pt *pt, uint64_t pa, uint64_t size, uint32_t attrs);
/* A map or protect asks for a global leaf: flushes say so from now on. */
static inline void pt_note_global(struct pt *pt, uint32_t attrs)
{
    if ((attrs & MMP_PROT_GLOBAL) && !AO_char_load(&pt->global))
        AO_char_store(&pt->global, 1);
}

/* The arguments of a read-only walk: a live table, a callback (fn), the
 * range as mmp_core_pt_check_va() wants it. 0 or the call's error. */
int mmp_core_pt_walk_args(const struct mmp_pt *p, bool fn, uint64_t va, uint64_t size,
                          uint64_t *last);
/* Input-range check shared by every call: alignment (-EINVAL), wrap
 * (-EOVERFLOW), VA bits / canonical form (-ERANGE); *last = va+size-1.
 * The test is inline for map and unmap, whose one-page calls it is a tenth
 * of; a refusal goes to mmp_core_pt_check_va, which records the rule. */
int mmp_core_pt_check_va(const struct pt *pt, uint64_t va, uint64_t size, uint64_t *last);
static inline int pt_check_va(const struct pt *pt, uint64_t va, uint64_t size, uint64_t *last)
{
    uint64_t gm = ((uint64_t)1 << pt->g.granule_shift) - 1, l = va + size - 1;
    unsigned vb = pt->g.va_bits;
    bool ok = size && !((va | size) & gm) && l >= va;
    if (pt->g.sign_extend) {
        /* Canonical: bits 63..vb-1 all equal, and both ends in one half. */
        uint64_t hi_va = va >> (vb - 1), hi_l = l >> (vb - 1);
        ok = ok && hi_va == hi_l && (hi_va == 0 || hi_va == (~0ull) >> (vb - 1));
    } else {
        ok = ok && !(l >> vb);
    }
    if (__builtin_expect(!ok, 0))
        return mmp_core_pt_check_va(pt, va, size, last);
    *last = l;
    return 0;
}

#endif
