/* SPDX-License-Identifier: MIT */
/*
 * The batching layer: every descriptor update reports here what it
 * changed, and this file alone decides when barriers, TLB flushes and the
 * freeing of unlinked table pages happen. Outside lazy mode that is once
 * per call (after all entries are written, never per entry); in a lazy
 * section (core/lazy.c) once per outermost leave. Break-before-make is the
 * exception: its barrier and flush are issued at once (mmp_core_pt_bbm).
 * No tlb_flush call stands for more invalidations than the table's flush
 * ceiling: a larger range, pending or not, goes out as MMP_FLUSH_ALL.
 * Cache maintenance of newly mapped memory (mmp_core_pt_maint) is issued
 * before the map's first store, never deferred.
 */
#include "pt_int.h"
#include "pt_state.h"

static void emit_barrier(struct pt *pt)
{
    mmp_arch_pt_barrier();
    pt->barrier_pending = 0;
    pt->st.barriers++;
}

void mmp_core_pt_batch_init(struct pt *pt, const struct mmp_pt_config *cfg)
{
    pt->max_ranges = (uint8_t)(cfg->flush_ranges ? cfg->flush_ranges : 4);
    /* Linux's anchors: x86 tlb_single_page_flush_ceiling (33 pages), arm64
     * MAX_TLBI_OPS (one last-level table's entries). */
    bool arm = cfg->format == MMP_PT_ARM64_S1 || cfg->format == MMP_PT_ARM64_S2;
    pt->ceiling = cfg->flush_ceiling ? cfg->flush_ceiling
                  : arm              ? (uint32_t)1 << (pt->g.granule_shift - 3)
                                     : 33;
}

/* A pending range's hints in one byte: MMP_FLUSH_LEAF and the stride. */
#define H_LEAF 0x40u
static uint8_t hint_pack(unsigned flags)
{
    return (uint8_t)((flags & MMP_FLUSH_LEAF) ? H_LEAF | MMP_FLUSH_STRIDE(flags) : 0);
}
static unsigned hint_unpack(uint8_t h)
{
    return ((h & H_LEAF) ? MMP_FLUSH_LEAF : 0) | (unsigned)(h & 0x3fu) << MMP_FLUSH_STRIDE_SHIFT;
}

/*
 * Would [lo, last] stand for more invalidations than the ceiling (steps
 * of its stride, else of the granule)? A range across bit 63 (x86's
 * non-canonical hole, ~2^64 bytes; [0, 2^64-1] has no size in 64 bits)
 * always would.
 */
static bool over_ceiling(const struct pt *pt, uint64_t lo, uint64_t last, unsigned flags)
{
    unsigned s = MMP_FLUSH_STRIDE(flags);
    if (!s || !(flags & MMP_FLUSH_LEAF))
        s = pt->g.granule_shift;
    return ((lo ^ last) >> 63) || ((last - lo) >> s) >= pt->ceiling;
}

/* The one place tlb_flush is called. */
static void call_flush(const struct pt *pt, struct mmp_pt_stats *st, bool all, uint64_t lo,
                       uint64_t last, unsigned flags)
{
    /* (a table that takes shared calls: a harvest flushes beside them) */
    if (st == &pt->st && (pt->cfg_flags & MMP_PT_SHARED))
        AO_fetch_and_add1((volatile AO_t *)(void *)&st->flushes);
    else
        st->flushes++;
    if (!pt->ops.tlb_flush)
        return;
    unsigned gl = AO_char_load(&pt->global) ? MMP_FLUSH_GLOBAL : 0;
    if (!(flags & MMP_FLUSH_LEAF))
        flags &= ~MMP_FLUSH_STRIDE_MASK;
    if (all || (pt->cfg_flags & MMP_PT_FLUSH_CONTEXT) || over_ceiling(pt, lo, last, flags))
        pt->ops.tlb_flush(pt->ops.ctx, 0, 0, MMP_FLUSH_ALL | gl);
    else
        pt->ops.tlb_flush(pt->ops.ctx, lo, last - lo + 1, flags | gl);
}

static bool touches(const struct pt_range *r, uint64_t lo, uint64_t last)
{
    return (lo <= r->last || lo == r->last + 1) && (last >= r->lo || last + 1 == r->lo);
}

/* Pending range i has grown: beyond the ceiling, everything pending
 * goes out as one full flush. The ranges stay, to tell what is pending
 * (pt_pending_in): a size change elsewhere need not wait for it. */
static void check_ceiling(struct pt *pt, unsigned i)
{
    if (over_ceiling(pt, pt->r[i].lo, pt->r[i].last, hint_unpack(pt->rhint[i])))
        pt->flush_all = 1;
}

void mmp_core_pt_flush_add(struct pt *pt, uint64_t lo, uint64_t last, unsigned flags)
{
    /* A TLB that flushes whole contexts only: one full flush, whatever is
     * pending (the ranges still say what). */
    if (pt->cfg_flags & MMP_PT_FLUSH_CONTEXT)
        pt->flush_all = 1;
    /* Merge first: a range inside or next to a pending one (the common
     * case: one call, or calls walking up an area) never counts against
     * flush_ranges. */
    for (unsigned j = 0; j < pt->nranges; j++) {
        struct pt_range *r = &pt->r[j];
        if (!touches(r, lo, last))
            continue;
        if (lo < r->lo)
            r->lo = lo;
        if (last > r->last)
            r->last = last;
        unsigned h = pt_fl_merge(hint_unpack(pt->rhint[j]), flags);
        pt->st.ranges_coalesced++;
        /* The widened range may now reach others: absorb them. */
        for (unsigned k = 0; k < pt->nranges; k++) {
            if (k == j || !touches(&pt->r[k], pt->r[j].lo, pt->r[j].last))
                continue;
            if (pt->r[k].lo < pt->r[j].lo)
                pt->r[j].lo = pt->r[k].lo;
            if (pt->r[k].last > pt->r[j].last)
                pt->r[j].last = pt->r[k].last;
            h = pt_fl_merge(h, hint_unpack(pt->rhint[k]));
            pt->nranges--;
            pt->r[k] = pt->r[pt->nranges];
            pt->rhint[k] = pt->rhint[pt->nranges];
            if (j == pt->nranges)
                j = k; /* r[j] was the last one and now sits at k */
            pt->st.ranges_coalesced++;
            k = (unsigned)-1; /* rescan */
        }
        pt->rhint[j] = hint_pack(h);
        check_ceiling(pt, j);
        return;
    }
    unsigned i = pt->nranges;
    if (i == pt->max_ranges) {
        /* Too many disjoint ranges: keep one covering range (the ops asked
         * for that), unless told to flush all or beyond the ceiling. */
        for (unsigned j = 0; j < pt->nranges; j++) {
            if (pt->r[j].lo < lo)
                lo = pt->r[j].lo;
            if (pt->r[j].last > last)
                last = pt->r[j].last;
            flags = pt_fl_merge(flags, hint_unpack(pt->rhint[j]));
        }
        pt->st.ranges_coalesced += pt->nranges;
        if (pt->cfg_flags & MMP_PT_FLUSH_ALL_OVER)
            pt->flush_all = 1;
        i = 0;
    }
    pt->r[i].lo = lo;
    pt->r[i].last = last;
    pt->rhint[i] = hint_pack(flags);
    pt->nranges = (uint8_t)(i + 1);
    check_ceiling(pt, i);
}

void mmp_core_pt_flush_now(struct pt *pt, uint64_t lo, uint64_t last, unsigned flags)
{
    emit_barrier(pt);
    call_flush(pt, &pt->st, false, lo, last, flags);
}

void mmp_core_pt_bbm(struct pt *pt, uint64_t lo, uint64_t last, unsigned flags)
{
    /* The invalid entries must be visible before the TLB invalidation,
     * and the invalidation complete before the new entries are written
     * (Arm ARM D8.16.1): never deferred, lazy mode or not. */
    pt->st.bbm++;
    mmp_core_pt_flush_now(pt, lo, last, flags);
}

void mmp_core_pt_emit(const struct pt *pt, struct mmp_pt_stats *st, bool flush, uint64_t lo,
                      uint64_t last, unsigned flags)
{
    mmp_arch_pt_barrier();
    st->barriers++;
    if (flush)
        call_flush(pt, st, false, lo, last, flags);
}

/*
 * A page linked twice in a corrupted table would be queued twice: the
 * list would loop and free_table see it again. A queued or freed page is
 * marked (entry 2, invalid in every format: bits 2:0 clear, neither lock
 * bit) or in kept[] until the flush; the root is never queued.
 */

/*
 * The scratch list of kept pages: a page from alloc_table whose words 0/1
 * link the next one (va, pa), word 2 counts its entries, and entries of
 * KL_W words follow from word KL_HDR: the kept page (va, pa) and, for a
 * fold of a table the MMU records state in, the block's slot | its depth
 * (its state is completed after the flush: mmp_core_pt_keep_state). It
 * holds what a long section folds (track stop: one fold per block) until
 * the one flush that covers them. New pages go in front; the flush walks
 * the chain from the oldest.
 */
#define KL_HDR 4u
#define KL_W 3u

static uint64_t kl_cap(const struct pt *pt)
{
    return (((uint64_t)1 << pt->g.granule_shift) / 8 - KL_HDR) / KL_W;
}

static bool kl_add(struct pt *pt, void *va, uint64_t pa, uint64_t slot)
{
    uint64_t *l = pt->klist;
    if (!l || l[2] == kl_cap(pt)) {
        uint64_t npa;
        uint64_t *n = (uint64_t *)pt->ops.alloc_table(pt->ops.ctx,
                                                      (size_t)1 << pt->g.granule_shift, &npa);
        if (!n)
            return false; /* the caller flushes instead */
        n[0] = (uint64_t)(uintptr_t)l;
        n[1] = pt->klist_pa;
        n[2] = 0;
        pt->klist = l = n;
        pt->klist_pa = npa;
    }
    uint64_t *x = &l[KL_HDR + KL_W * l[2]];
    x[0] = (uint64_t)(uintptr_t)va;
    x[1] = pa;
    x[2] = slot;
    l[2]++;
    return true;
}


static bool pt_may_free(const struct pt *pt, const void *va)
{
    const uint64_t *p = (const uint64_t *)va;
    if ((uintptr_t)va - (uintptr_t)pt->root < pt->g.root_bytes || pt_ld(&p[2]) == PT_DFREE_MARK)
        return false;
    for (unsigned i = 0; i < pt->nkept; i++)
        if (pt->kept[i].va == va)
            return false;
    return true; /* (the scratch list is checked at the flush: kl_mark) */
}

void mmp_core_pt_defer_free(struct pt *pt, void *va, uint64_t pa)
{
    /*
     * The page may still be reachable through a stale walk-cache entry
     * until the flush. Entries 0 and 1 carry the list link (the next page's
     * address and physical address): both are multiples of the page size,
     * so bit 0 is clear and a walker reading them sees invalid descriptors
     * (arm64, x86 and EPT alike) - never a translation mmport did not make.
     * Invalid is only right where the translations go away or are broken:
     * an unmapped subtree, or one replaced inside a break-before-make. A
     * fold keeps its translations, so its old table goes to
     * mmp_core_pt_defer_keep instead (x86 has no break there).
     */
    uint64_t *p = (uint64_t *)va;
    if (!pt_may_free(pt, va))
        return;
    pt_st(&p[0], (uint64_t)(uintptr_t)pt->dfree);
    pt_st(&p[1], pt->dfree_pa);
    pt_st(&p[2], PT_DFREE_MARK);
    pt_note_freed(pt, pa);
    pt->dfree = va;
    pt->dfree_pa = pa;
}

bool mmp_core_pt_keep_state(struct pt *pt, void *va, uint64_t pa, uint64_t *slot, unsigned d,
                            unsigned st)
{
    if (!pt->keep_more || !pt_may_free(pt, va))
        return false;
    /* (st in the address's low bits: a page is aligned to the granule) */
    return kl_add(pt, va, pa | st, (uint64_t)(uintptr_t)slot | d);
}

void mmp_core_pt_defer_keep(struct pt *pt, void *va, uint64_t pa)
{
    /* Nothing is written into the page: a walk through a stale cache still
     * finds the old, valid entries. The flush of its range is already
     * pending, so a sync when full covers it too. */
    if (!pt_may_free(pt, va))
        return;
    if (pt->nkept == PT_KEPT && pt->keep_more && kl_add(pt, va, pa, 0))
        return;
    if (pt->nkept == PT_KEPT)
        mmp_core_pt_sync(pt);
    pt->kept[pt->nkept].va = va;
    pt->kept[pt->nkept].pa = pa;
    pt->nkept++;
}

void mmp_core_pt_retire(const struct pt *pt, void *va, uint64_t pa)
{
    size_t bytes = (size_t)1 << pt->g.granule_shift;
    if (pt->ops.retire_table)
        pt->ops.retire_table(pt->ops.ctx, va, pa, bytes);
    else
        mmp_host_epoch_retire(pt->ops.free_table, pt->ops.ctx, va, pa, bytes);
}

/* A page an exclusive call unlinked, its flush done (marked already: a
 * lookup still inside meets the mark and looks again from the root). */
static void release_page(struct pt *pt, void *va, uint64_t pa)
{
    if ((pt->cfg_flags & MMP_PT_SHARED) && !pt->closing)
        mmp_core_pt_retire(pt, va, pa);
    else
        pt_free_page(pt, va, pa);
}

/* A kept page, its flush done: marked, then released. */
static void release_kept(struct pt *pt, void *va, uint64_t pa)
{
    pt_note_freed(pt, pa);
    pt_st(&((uint64_t *)va)[2], PT_DFREE_MARK);
    release_page(pt, va, pa);
    pt_pages_add(&pt->st.table_pages, -1);
}

/*
 * After the flush, before anything is freed: every page of the scratch
 * list, oldest first (a fold of a table whose own block then folded is
 * completed before the table it is in). An entry with a slot gives the
 * block the state the MMU recorded in the kept table until the flush;
 * then the page is marked. A page found marked already is one a corrupted
 * table linked twice (kept twice, or also queued for free_table): it is
 * dropped from the list, so no page is freed twice. (No search at each
 * insertion: a long stop keeps thousands.)
 */
static void kl_mark(struct pt *pt)
{
    void *head = pt->klist; /* oldest first: the chain reversed */
    uint64_t head_pa = pt->klist_pa;
    pt_list_reverse(&head, &head_pa);
    pt->klist = (uint64_t *)head;
    pt->klist_pa = head_pa;
    const struct mmp_pt_geom *g = &pt->g;
    uint64_t gm = ((uint64_t)1 << g->granule_shift) - 1;
    for (uint64_t *l = pt->klist; l; l = (uint64_t *)(uintptr_t)l[0])
        for (uint64_t k = 0; k < l[2]; k++) {
            uint64_t *x = &l[KL_HDR + KL_W * k], *c = (uint64_t *)(uintptr_t)x[0];
            if (pt_ld(&c[2]) == PT_DFREE_MARK) {
                x[0] = 0;
                continue;
            }
            if (x[2]) { /* what the block did not get at its fold */
                unsigned d = (unsigned)(x[2] & 7), st = (unsigned)(x[1] & gm);
                uint64_t *slot = (uint64_t *)(uintptr_t)(x[2] & ~7ull);
                pt_st_give_live(g, d, slot,
                                pt_st_or(g, c, 0, (unsigned)pt_nent(g, d + 1) - 1) & ~st);
            }
            pt_note_freed(pt, x[1] & ~gm);
            pt_st(&c[2], PT_DFREE_MARK);
        }
}

/* Then each page (marked) goes, and the list's own pages with them. */
static void kl_release(struct pt *pt)
{
    uint64_t gm = ((uint64_t)1 << pt->g.granule_shift) - 1;
    while (pt->klist) {
        uint64_t *l = pt->klist, lpa = pt->klist_pa;
        for (uint64_t k = 0; k < l[2]; k++) {
            const uint64_t *x = &l[KL_HDR + KL_W * k];
            if (x[0]) {
                release_page(pt, (void *)(uintptr_t)x[0], x[1] & ~gm);
                pt_pages_add(&pt->st.table_pages, -1);
            }
        }
        pt->klist = (uint64_t *)(uintptr_t)l[0];
        pt->klist_pa = l[1];
        pt->ops.free_table(pt->ops.ctx, l, lpa, (size_t)1 << pt->g.granule_shift);
    }
}

void mmp_core_pt_sync(struct pt *pt)
{
    bool have = pt->flush_all || pt->nranges || pt->dfree || pt->nkept;
    if (pt->barrier_pending || have)
        emit_barrier(pt);
    if (pt->flush_all)
        call_flush(pt, &pt->st, true, 0, 0, 0);
    else
        for (unsigned i = 0; i < pt->nranges; i++)
            call_flush(pt, &pt->st, false, pt->r[i].lo, pt->r[i].last,
                       hint_unpack(pt->rhint[i]));
    pt->flush_all = 0;
    pt->nranges = 0;
    kl_mark(pt); /* (before the queued pages are freed: it reads its pages) */
    /* No page is queued twice; the bound (the pages the table owns) is
     * for a list a corrupted page could still bend. */
    for (uint64_t n = pt->st.table_pages; pt->dfree; n--) {
        if (!n) {
            pt->dfree = NULL;
            break;
        }
        uint64_t *p = (uint64_t *)pt->dfree;
        uint64_t pa = pt->dfree_pa;
        pt->dfree = (void *)(uintptr_t)p[0];
        pt->dfree_pa = p[1];
        release_page(pt, p, pa);
        pt_pages_add(&pt->st.table_pages, -1);
    }
    /* Kept pages are marked only now, after their flush (a walk through a
     * stale cache must find their entries until then), so that a corrupted
     * table that still links one cannot have it freed twice. A lookup that
     * loaded the old table entry before the fold (a caller's free_table may
     * defer through RCU for it) and meets the mark looks again from the
     * root and finds the block (read_span). */
    for (unsigned i = 0; i < pt->nkept; i++)
        release_kept(pt, pt->kept[i].va, pt->kept[i].pa);
    pt->nkept = 0;
    kl_release(pt);
}

void mmp_core_pt_call_end(struct pt *pt)
{
    if (pt->lazy_depth && !pt->lazy_paused) {
        if (pt->barrier_pending)
            pt->st.barriers_deferred++;
        return;
    }
    if (pt->barrier_pending || pt->nranges || pt->flush_all || pt->dfree || pt->nkept)
        mmp_core_pt_sync(pt);
}

void mmp_core_pt_slot_end(struct pt *pt, bool flush, uint64_t lo, uint64_t last, unsigned flags)
{
    pt_written(pt, 1);
    if ((pt->lazy_depth && !pt->lazy_paused) || pt->nranges || pt->flush_all || pt->dfree ||
        pt->nkept) {
        if (flush)
            mmp_core_pt_flush_add(pt, lo, last, flags);
        mmp_core_pt_call_end(pt);
        return;
    }
    /* mmp_core_pt_sync with one range pending, which a single page never
     * takes over the ceiling */
    emit_barrier(pt);
    if (flush)
        call_flush(pt, &pt->st, false, lo, last, flags);
}

void mmp_core_pt_maint(const struct pt *pt, uint64_t pa, uint64_t size, uint32_t attrs)
{
    /* Clean before invalidating the instruction cache: the I-side fills
     * from the point of unification the clean reaches (and a clean to the
     * point of coherency passes it). */
    if ((pt->g.maint & MMP_PT_MAINT_DCACHE_CLEAN) && pt->ops.dcache_clean_poc &&
        (attrs & MMP_MEM_MASK) == MMP_MEM_NORMAL_WB)
        pt->ops.dcache_clean_poc(pt->ops.ctx, pa, size);
    if ((pt->g.maint & MMP_PT_MAINT_ICACHE_INVAL) && pt->ops.icache_inval_pou &&
        (attrs & MMP_PROT_EXEC))
        pt->ops.icache_inval_pou(pt->ops.ctx, pa, size);
}
