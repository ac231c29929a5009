/* SPDX-License-Identifier: MIT */
/**
 * @file lazy.h
 * Lazy-MMU batching: inside a lazy section, page-table updates record the
 * barrier and TLB flushes they need instead of issuing them, and table
 * pages they unlink are kept; the outermost mmp_lazy_leave() emits one
 * barrier, the coalesced flushes (adjacent and overlapping ranges merged;
 * beyond mmp_pt_config::flush_ranges ranges one covering range or one full
 * flush), and only then hands the unlinked table pages to free_table.
 *
 * Flush ceiling: no tlb_flush call stands for more invalidations than
 * mmp_pt_config::flush_ceiling (its size over its stride, MMP_FLUSH_STRIDE(),
 * or over the granule where it gives none; default 33 on x86, one table's
 * entries on arm64). A pending range that grows beyond it, or a covering
 * range that would, makes everything pending one MMP_FLUSH_ALL: five
 * one-page unmaps spread over a 48-bit space end in one full flush, not in
 * a range a per-page hook would walk for hours.
 *
 * Outside a lazy section every mmp_pt_map/unmap/protect call already emits
 * its barrier once, after all its entries (never per entry), and flushes
 * once with its coalesced range.
 *
 * Break-before-make is never deferred: when a valid entry must be broken
 * (block split, contiguous-run unfold or fold, replacement), its barrier
 * and flush are issued before the new entry is written, lazy or not. The
 * same holds across calls: a map over a range whose flush the section
 * still holds (unmapped or changed earlier in the section) first emits
 * everything pending, as mmp_lazy_flush() would, then writes.
 *
 * The lazy state belongs to the table (struct mmp_pt), and so to the one
 * writer the caller allows at a time: enter, updates and leave come from
 * that writer. Sections nest; only the outermost leave emits.
 *
 * Data pages unmapped inside a lazy section may still be reachable
 * through stale TLB entries until the section's flush: the caller must not
 * reuse or free them before mmp_lazy_leave() (or mmp_lazy_flush()) returns.
 * (Outside a section: once the unmap call has returned.)
 *
 * Cache maintenance of newly mapped memory (mmp_pt_ops::dcache_clean_poc,
 * icache_inval_pou) is not deferred either: each map calls it before its
 * first store, since the guest may use the mapping as soon as a walk sees
 * it, and a lazy section does not delay the stores.
 */
#ifndef MMPORT_LAZY_H
#define MMPORT_LAZY_H

#include <mmport/pt.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Deepest nesting of lazy sections, and of pauses, a table takes. */
#define MMP_LAZY_MAX_DEPTH 65535u

/**
 * Enter (or nest into) a lazy section.
 * Errors: -EINVAL (NULL, uninitialised or finished pt); -EOVERFLOW
 * (already MMP_LAZY_MAX_DEPTH sections deep: an unbalanced enter; the
 * depth is unchanged, so it can never wrap to "not lazy").
 */
MMP_API int mmp_lazy_enter(struct mmp_pt *pt);

/**
 * Leave one level; the outermost leave emits the pending barrier and
 * flushes, then frees the table pages unlinked inside the section.
 * Errors: -EINVAL (not in a lazy section: a leave without an enter);
 * -EBUSY (the outermost leave while paused: resume first).
 */
MMP_API int mmp_lazy_leave(struct mmp_pt *pt);

/** Emit everything pending now and stay in the section. Errors: -EINVAL (not lazy). */
MMP_API int mmp_lazy_flush(struct mmp_pt *pt);

/**
 * Emit everything pending and run eagerly (per call) until the matching
 * mmp_lazy_resume(), for code that must see its updates take effect.
 * Nests. Errors: -EINVAL (not lazy); -EOVERFLOW (already paused
 * MMP_LAZY_MAX_DEPTH times; nothing emitted).
 */
MMP_API int mmp_lazy_pause(struct mmp_pt *pt);

/** Undo one mmp_lazy_pause(). Errors: -EINVAL (not paused). */
MMP_API int mmp_lazy_resume(struct mmp_pt *pt);

/** Lazy-section depth of @p pt (0 = not lazy); 0 for NULL. */
MMP_API unsigned mmp_lazy_depth(const struct mmp_pt *pt);

#ifdef __cplusplus
}
#endif

#endif
