/* SPDX-License-Identifier: MIT */
/**
 * @file track.h
 * Dirty logging and access tracking: what live migration (which pages did
 * the guest write since the last pass) and reclaim (which pages has it not
 * touched lately) need from a table.
 *
 * Two ways, chosen at creation (mmp_pt_config::flags):
 * - MMP_PT_TRACK_HW: the MMU keeps the state itself. x86-64 and NPT set D
 *   (dirty) and A (accessed); EPT sets them with MMP_PT_EPT_AD (EPTP bit
 *   6); arm64 sets AF (TCR/VTCR.HA) and makes a "clean writable" leaf (DBM
 *   set, write permission off) writable on the first write (HD).
 * - otherwise software: mmp_pt_track_start() write-protects the tracked
 *   leaves (marking them with a bit the hardware ignores), the guest's
 *   first write faults, and the caller's fault handler calls
 *   mmp_pt_dirty_fault(), which marks the page dirty and writable. The
 *   same call serves a table with MMP_PT_TRACK_HW on a CPU without the
 *   hardware update (arm64 without HD: a DBM leaf write-faults).
 * Tracked pages read back with MMP_PROT_WRITE from mmp_pt_lookup() and
 * mmp_pt_walk() (the permission they logically have).
 *
 * Bitmaps: bit i (word i / 64, bit i % 64) is the granule page at
 * va + i * granule; the caller provides (size / granule + 63) / 64 words.
 *
 * No write is lost (clear, then flush, then report): a harvest re-arms a
 * page (clears D, or write-protects it) with an atomic read-modify-write,
 * reports it if it was dirty, and before it returns flushes the TLB for the
 * re-armed range (one coalesced flush, through the table's tlb_flush).
 * A write after that flush must go through the MMU's walk and sets the
 * state again (Intel SDM vol. 3A 4.8 "Accessed and Dirty Flags" and
 * 4.10.4.2: a TLB entry caching D = 1 lets writes through without setting
 * D until it is invalidated; Arm ARM DDI 0487 D8.4.7 "Hardware management
 * of the dirty state": a TLB may keep the writable translation until the
 * TLB invalidation completes). A write that still goes through a stale
 * entry between the clear and the flush is to a page this very harvest
 * reports dirty, and the caller copies it after the harvest returned,
 * i.e. after the flush: the copy has it. Flushing before the clear would
 * lose such writes: a TLB refilled between the flush and the clear would
 * carry the old dirty state past the clear.
 *
 * arm64 contiguous runs: the Arm ARM (D8.6.1, D8.4.6/7) lets the MMU update
 * the access or dirty state of any one entry of a run for an access to any
 * page of it, so a run's state is the OR of its entries: when one entry of
 * a run is dirty (young), every page of the run in the range is reported.
 * The same holds for a block, whose one entry stands for all its pages. A
 * pass that covers the whole block or run re-arms it; one that covers
 * part of it re-arms none of its entries (the state may stand for a page
 * outside the range), so that part is reported again until a pass covers
 * the block or run. mmp_pt_track_start() unmakes the runs (and splits the
 * blocks) of its range, so reports are per page there.
 *
 * What the calls keep. A leaf's state (accessed, dirty) goes with its
 * translation through every change of the leaf's shape, never lost, at
 * worst reported for more pages than were touched:
 * - a block split (by start, or by a map, unmap or protect of part of it)
 *   gives every new leaf the block's state; a run unmade (by start, or by
 *   a change of part of it) gives each entry that stays the run's OR;
 * - a fold (a map that completes a block or a run, or stop) gives the
 *   block or run the OR of the leaves it folds;
 * - mmp_pt_protect() keeps the state of the leaves it changes, except
 *   that on arm64 a leaf made read-only loses its dirty state (no
 *   read-only leaf can be dirty there; x86 and EPT keep D);
 * - a map (MMP_MAP_REPLACE too) makes new leaves with no state (without
 *   MMP_PT_TRACK_HW the access flag is preset), and unmap drops it;
 * - start clears the dirty state of its range (writes before it are not
 *   reported) and keeps the access flags; harvest and test_clear_young
 *   report and re-arm theirs (a block or run they cut: report only); stop
 *   keeps everything but the software dirty state (mmp_pt_track_stop()).
 * So migration's last steps, a final harvest with the guest stopped and
 * then stop, lose nothing, and with MMP_PT_TRACK_HW a harvest after stop
 * still reports every page written since the last harvest.
 * Against the MMU within one call: a change of size or contiguity of a
 * hardware-tracked arm64 table breaks (also with MMP_PT_BBML2) and reads
 * the state after the break; a split replaces its leaf with a compare-and-
 * swap, handing what the MMU recorded meanwhile to the new leaves (x86:
 * also a D set through a TLB entry that held the block until the split's
 * flush); an x86 fold in place flushes at once and adds what stale walks
 * recorded in the old table.
 *
 * Concurrency: start, stop and harvest are writer calls (serialised by the
 * caller like map and unmap). mmp_pt_dirty_fault() and mmp_pt_young_fault()
 * may run on other threads at the same time as a harvest (or a young
 * scan): every change is an atomic compare-and-swap of one descriptor, as
 * the MMU's own updates are.
 */
#ifndef MMPORT_TRACK_H
#define MMPORT_TRACK_H

#include <mmport/pt.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Progress callback of mmp_pt_track_start(): called after each chunk with
 * the bytes of the range done so far (a prefix) and the total. A non-zero
 * return cancels the rest (-MMP_EINTR). The caller may drop and retake its
 * table lock inside it.
 */
typedef int (*mmp_track_yield_fn)(void *arg, uint64_t done, uint64_t total);

/** Default chunk of mmp_pt_track_start(): 1 GiB (a 2 MiB-block guest: 512
 * table pages and their 256 Ki entries per chunk). */
#define MMP_TRACK_DEFAULT_CHUNK (1ull << 30)

/** Options of mmp_pt_track_start(); all-zero or NULL: defaults. */
struct mmp_track_opts {
    /** Bytes per chunk, a multiple of the granule; 0 = MMP_TRACK_DEFAULT_CHUNK. */
    uint64_t chunk;
    mmp_track_yield_fn yield; /**< NULL: no callback */
    void *yield_arg;          /**< passed to yield */
    /** If non-NULL, receives the bytes from va on that are under tracking:
     * size on success, the prefix done on -MMP_EINTR or -MMP_ENOMEM. */
    uint64_t *done;
};

/**
 * Put [va, va+size) under dirty tracking: blocks are split and contiguous
 * runs unmade down to the granule (translations unchanged; each new leaf
 * with the block's or the run's state, above), then every writable leaf
 * is made clean (D cleared; or write-protected and marked, arm64 DBM
 * leaves write-protected); access flags stay. Holes are skipped; leaves mapped
 * later are tracked only with MMP_PT_TRACK_HW (a later mmp_pt_protect or
 * map of a tracked page ends its tracking in software mode). With a yield
 * callback it works in chunks of opts->chunk bytes, each split, armed and
 * flushed before yield is called; without one the whole range is split,
 * then armed, in one flush window: one tlb_flush call with hardware A/D
 * on x86 and EPT, two otherwise (a permission change never shares a
 * flush with a change of page size).
 * Errors: -EINVAL (NULL or uninitialised pt, misaligned va/size or chunk,
 * size 0); -EOVERFLOW; -ERANGE (as mmp_pt_map); -ENOMEM (a split found
 * no table page: the chunks before are done, opts->done says how far);
 * -EINTR (yield cancelled; opts->done says how far).
 */
MMP_API int mmp_pt_track_start(struct mmp_pt *pt, uint64_t va, uint64_t size,
                               const struct mmp_track_opts *opts);

/**
 * Fill @p bitmap with the pages of [va, va+size) dirtied since the last
 * harvest (or start) and re-arm them, with one coalesced TLB flush before
 * returning (also inside a lazy section: the flush is what makes the
 * report complete, the ordering in track.h). Each write is reported by the
 * next harvest whose range holds its page, and again only after a new
 * write - where the page is in a block or a contiguous run, with the
 * block's or run's other pages (a block or run the range cuts: by each
 * harvest until one covers it whole). *count (if not NULL) gets the number of
 * bits set.
 * On a MMP_PT_SHARED table a harvest may run beside shared calls and
 * dirty faults (the read side of the caller's lock; with a retire_table
 * hook, inside the caller's read-side section as for lookups), as well as
 * alone: a write that races it - a dirty fault, or the MMU through a TLB
 * entry - is reported by this harvest or by the next one, never lost (a
 * leaf a shared call holds locked is left for the next pass: the call
 * keeps its state). mmp_pt_track_start() and mmp_pt_track_stop() are
 * exclusive calls.
 * Errors: -EINVAL (NULL pt or bitmap, misaligned, size 0); -EOVERFLOW;
 * -ERANGE.
 */
MMP_API int mmp_pt_track_harvest(struct mmp_pt *pt, uint64_t va, uint64_t size,
                                 uint64_t *bitmap, uint64_t *count);

/**
 * End tracking of [va, va+size): software-tracked leaves get their write
 * permission back (their dirty state goes: harvest first to keep it; the
 * access flags stay), then each block-sized region and contiguous run
 * whose pages again map one aligned output range with identical
 * attributes (their state aside) is folded back into a block or a run
 * (not with MMP_PT_NO_FOLD), which carries the OR of their state. A
 * hardware-tracked table loses no state: a harvest after stop reports
 * every page written since the last harvest (with its whole block), and
 * test_clear_young every page accessed since the last scan. (A block or
 * run folded back in software mode may come back accessed.) The folds
 * share one flush (software tracking: one more for the permissions); the
 * tables they replace wait for it, listed in scratch pages it asks
 * alloc_table for and gives back to free_table at that flush (where none
 * comes, it flushes sooner).
 * Errors: -EINVAL, -EOVERFLOW, -ERANGE as for mmp_pt_track_harvest() (no bitmap);
 * -ENOMEM is never returned: a fold that finds no memory is left undone.
 */
MMP_API int mmp_pt_track_stop(struct mmp_pt *pt, uint64_t va, uint64_t size);

/**
 * Test and clear the access flag (x86 A, EPT A, arm64 AF) of every leaf in
 * [va, va+size): the pages whose flag was set go into @p bitmap (every
 * page of a block or contiguous run in the range), flags are cleared with
 * atomic updates (none of a block or run the range cuts, as for harvest) and one
 * coalesced flush follows. *count (if not NULL) gets the number of bits
 * set. With MMP_PT_TRACK_HW the
 * MMU sets the flags again on access; without it on arm64 an access to a
 * cleared page takes an Access flag fault, which the caller passes to
 * mmp_pt_young_fault() (x86 MMUs always set A).
 * Like a harvest, it may run beside shared calls on a MMP_PT_SHARED table.
 * Errors: -EINVAL (NULL pt or bitmap, misaligned, size 0); -EOVERFLOW;
 * -ERANGE; -ENOTSUP (EPT without MMP_PT_EPT_AD has no access flag).
 */
MMP_API int mmp_pt_test_clear_young(struct mmp_pt *pt, uint64_t va, uint64_t size,
                                    uint64_t *bitmap, uint64_t *count);

/**
 * From a write fault at @p va: mark the page dirty and make it writable
 * (a software-tracked or DBM-clean leaf; every entry of a contiguous run),
 * setting its access flag too. Freestanding, no allocation, no lock: one
 * compare-and-swap per entry, safe against a concurrent harvest. It does
 * not flush: x86 invalidates a translation that faulted (SDM 3A 4.10.4.3);
 * on arm64, where a TLB may keep an entry that caused a permission fault,
 * the caller invalidates that one address locally (TLBI VALE1 / IPAS2E1
 * without broadcast) before returning to the guest.
 * Returns 0 also when the page already was writable and dirty.
 * On a MMP_PT_SHARED table it may run beside shared calls, as they run
 * beside each other (inside the caller's read-side section where the
 * table has a retire_table hook, as lookups).
 * Errors: -ENOENT (nothing mapped at va); -EACCES (the leaf is read-only
 * and not tracked: a real permission fault); -EAGAIN (MMP_PT_SHARED
 * table: a shared call is changing the leaf or an entry on the way, or
 * kept changing the leaf's shape - a block split, a run unmade - under
 * the call's walks; nothing changed but access and dirty state, fault
 * again); -EINVAL
 * (NULL pt); -ERANGE (va out of range).
 */
MMP_API int mmp_pt_dirty_fault(struct mmp_pt *pt, uint64_t va);

/**
 * From an access-flag fault at @p va: set the access flag of the leaf (every
 * entry of a contiguous run). Like mmp_pt_dirty_fault: freestanding, one
 * compare-and-swap per entry, no flush.
 * Errors: -ENOENT; -ENOTSUP (no access flag: EPT without A/D); -EAGAIN
 * (as mmp_pt_dirty_fault()); -EINVAL; -ERANGE.
 */
MMP_API int mmp_pt_young_fault(struct mmp_pt *pt, uint64_t va);

#ifdef __cplusplus
}
#endif

#endif
