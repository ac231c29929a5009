/* SPDX-License-Identifier: MIT */
/**
 * @file pt_reason.h
 * Why a page-table call failed: the rule it applied and the value that
 * broke it, beside the unchanged negative errno the call returned.
 *
 * Every call of pt.h, track.h and lazy.h that fails on a live table
 * records a reason in the table (struct mmp_pt), and so does a failed
 * mmp_pt_init() in the storage it was given; mmp_pt_reason() reads it and
 * mmp_pt_why() renders it ("output range 0x40000000000000-0x40000000000fff
 * beyond pa_bits 46"). A successful call does not clear it: read it right
 * after the call that failed. Calls that return -MMP_ENOENT (nothing
 * mapped: lookups and fault handlers) record nothing, so a fault path pays
 * nothing for it. Nothing is recorded where there is no table to record
 * in: a NULL @p pt, or storage that holds no live table (those calls
 * return -MMP_EINVAL and the storage is not written).
 *
 * In a MMP_PT_SHARED table concurrent failing calls each write the record
 * (every word atomically): read it when no other call fails at the same
 * time, or the words may come from two calls.
 *
 * Works freestanding (no libc).
 */
#ifndef MMPORT_PT_REASON_H
#define MMPORT_PT_REASON_H

#include <mmport/pt.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The rule a refused or failed call applied (mmp_pt_reason::rule).
 * "va" is the input address, "pa" the output address; value, end and
 * limit are the fields of struct mmp_pt_reason.
 */
enum mmp_pt_rule {
    MMP_PT_RULE_NONE = 0,       /**< nothing recorded since init */
    MMP_PT_RULE_NULL_ARG = 1,   /**< a NULL pointer argument (-EINVAL) */
    MMP_PT_RULE_FLAGS = 2,      /**< unknown flag bits; value = those bits (-EINVAL) */
    MMP_PT_RULE_SIZE_ZERO = 3,  /**< size 0 (-EINVAL) */
    /** va not granule-aligned; value = va, limit = granule (-EINVAL) */
    MMP_PT_RULE_VA_ALIGN = 4,
    /** size not a multiple of the granule; value = size, limit = granule (-EINVAL) */
    MMP_PT_RULE_SIZE_ALIGN = 5,
    /** pa not granule-aligned; value = pa, limit = granule (-EINVAL) */
    MMP_PT_RULE_PA_ALIGN = 6,
    /** va + size wraps past 2^64; value = va, limit = size (-EOVERFLOW) */
    MMP_PT_RULE_VA_WRAP = 7,
    /** pa + size wraps past 2^64; value = pa, limit = size (-EOVERFLOW) */
    MMP_PT_RULE_PA_WRAP = 8,
    /** input range beyond va_bits; value..end = the range, limit = va_bits (-ERANGE) */
    MMP_PT_RULE_VA_RANGE = 9,
    /** x86-64: input range not canonical (or spanning both halves);
     *  value..end = the range, limit = va_bits (-ERANGE) */
    MMP_PT_RULE_VA_CANONICAL = 10,
    /** output range beyond pa_bits; value..end = the range, limit = pa_bits (-ERANGE) */
    MMP_PT_RULE_PA_RANGE = 11,
    /** attribute bits the table's format does not know; value = those bits (-EINVAL) */
    MMP_PT_RULE_ATTRS_UNKNOWN = 12,
    /** a leaf without MMP_PROT_READ; value = attrs (-EINVAL) */
    MMP_PT_RULE_READ_NEEDED = 13,
    /** EPT: WRITE without READ is a misconfiguration; value = attrs (-EINVAL) */
    MMP_PT_RULE_EPT_WRITE_NEEDS_READ = 14,
    /** EPT: execute without READ needs MMP_PT_EPT_XO; value = attrs (-EINVAL) */
    MMP_PT_RULE_EPT_EXEC_ONLY = 15,
    /** USER or GLOBAL on a table without them (stage 2, EPT, NPT,
     *  MMP_PT_EL2); value = attrs (-EINVAL) */
    MMP_PT_RULE_NO_USER_GLOBAL = 16,
    /** MMP_PROT_UEXEC without an EPT table made with MMP_PT_EPT_MBEC;
     *  value = attrs (-EINVAL) */
    MMP_PT_RULE_UEXEC = 17,
    /** a memory type the format lacks; value = attrs & MMP_MEM_MASK (-EINVAL) */
    MMP_PT_RULE_MEM_TYPE = 18,
    /** map: the range holds a mapping and MMP_MAP_REPLACE was not given
     *  (shared table: or another thread mapped it first); value..end =
     *  the call's range (-EEXIST) */
    MMP_PT_RULE_EXISTS = 19,
    /** MMP_PT_SHARED table: the range is not one leaf slot; value..end =
     *  the range (-ENOTSUP) */
    MMP_PT_RULE_SHARED_ONE_SLOT = 20,
    /** MMP_PT_SHARED table: the block-sized slot value..end holds a table
     *  with entries, which a shared call does not replace (-ENOTSUP) */
    MMP_PT_RULE_SHARED_SUBTREE = 21,
    /** MMP_PT_SHARED table: an entry in value..end is being changed by
     *  another writer; retry (-EAGAIN) */
    MMP_PT_RULE_CONTENDED = 22,
    /** a table allocation failed; value..end = the call's range (-ENOMEM) */
    MMP_PT_RULE_NOMEM = 23,
    /** mmp_pt_ops::alloc_table returned a page not aligned to its size;
     *  value = its pa, limit = the size (-EINVAL) */
    MMP_PT_RULE_TABLE_ALIGN = 24,
    /** the table is corrupted on the way to or inside value..end (-EIO) */
    MMP_PT_RULE_CORRUPT = 25,
    /** mmp_pt_regs(): the id is wider than the format's; value = id,
     *  limit = largest id (-EINVAL) */
    MMP_PT_RULE_ID = 26,
    /** mmp_pt_init(): the storage holds a live table (-EBUSY) */
    MMP_PT_RULE_LIVE = 27,
    /** config: unknown format; value = mmp_pt_config::format (-EINVAL) */
    MMP_PT_RULE_FORMAT = 28,
    /** config: a flag for other formats; value = the flag (-EINVAL) */
    MMP_PT_RULE_FLAG_FORMAT = 29,
    /** config: flush_ranges too large; value = it, limit = 8 (-EINVAL) */
    MMP_PT_RULE_FLUSH_RANGES = 30,
    /** config: max_leaf not a power of two >= the granule; value = max_leaf,
     *  limit = granule (-EINVAL) */
    MMP_PT_RULE_MAX_LEAF = 31,
    /** ops: NULL in a freestanding build, or without alloc_table or
     *  free_table (-EINVAL) */
    MMP_PT_RULE_OPS = 32,
    /** MMP_PT_SHARED without mmp_pt_ops::retire_table in a build without
     *  the built-in epoch scheme (-EINVAL) */
    MMP_PT_RULE_SHARED_RETIRE = 33,
    /**
     * config: granule, va_bits, pa_bits and flags are not a combination
     * the format has (mmp_pt_config lists them; -EINVAL), or one the
     * engine lacks (-ENOTSUP). value = granule, end = va_bits << 32 |
     * pa_bits (pa_bits as given), limit = flags.
     */
    MMP_PT_RULE_GEOMETRY = 34,
    /** track.h: the table does not keep what the call asks for (access
     *  state without A flags); (-ENOTSUP) */
    MMP_PT_RULE_TRACK_MODE = 35,
    /** track.h: a chunk size not a multiple of the granule; value = it,
     *  limit = granule (-EINVAL) */
    MMP_PT_RULE_TRACK_CHUNK = 36,
    /** track.h: cancelled by the yield callback after value bytes (-EINTR) */
    MMP_PT_RULE_CANCELLED = 37,
    /** track.h: a write fault on a leaf that is not writable; value = va
     *  (-EACCES) */
    MMP_PT_RULE_NOT_WRITABLE = 38,
    /** lazy.h: a call that needs a lazy section (or a paused one) outside
     *  it, or a leave while paused (-EINVAL, -EBUSY) */
    MMP_PT_RULE_LAZY_STATE = 39,
    /** lazy.h: nesting deeper than MMP_LAZY_MAX_DEPTH; limit = it (-EOVERFLOW) */
    MMP_PT_RULE_LAZY_DEPTH = 40,
    /** mmp_pt_call: MMP_CALL_SHARED on a table made without
     *  MMP_PT_SHARED (-EINVAL) */
    MMP_PT_RULE_CALL_SHARED = 41,
    /** a shared call while a lazy section is open on the table; value =
     *  the section's depth (-EBUSY) */
    MMP_PT_RULE_CALL_LAZY = 42,
    /** mmp_pt_memcache: n above MMP_PT_MEMCACHE_PAGES (value = n, limit =
     *  it), or a page not aligned to the granule (value = its pa, limit =
     *  the granule) (-EINVAL) */
    MMP_PT_RULE_MEMCACHE = 43,
    /** the call's memcache held fewer pages than the call needed;
     *  value..end = the call's range, limit = pages it holds (-ENOMEM) */
    MMP_PT_RULE_MEMCACHE_DRY = 44,
    /** attrs: a software bit the format does not have; value = the
     *  MMP_SW() bits asked, limit = the format's count (-EINVAL) */
    MMP_PT_RULE_SW_BITS = 45,
};

/** Why the last failing call on a table failed (mmp_pt_reason()). */
struct mmp_pt_reason {
    uint32_t rule;  /**< enum mmp_pt_rule */
    int32_t err;    /**< the negative MMP_E* value the call returned; 0 = none */
    uint64_t value; /**< the value that broke the rule (see the rule) */
    uint64_t end;   /**< last address of a range, where the rule has one */
    uint64_t limit; /**< the bound it broke: bits, granule, size, flags */
};

/**
 * Copy the reason recorded in @p pt into *out: of the last failing call
 * on a live table, or of the mmp_pt_init() that failed on this storage
 * (until the storage is initialised again). A table no call has failed
 * on gives rule MMP_PT_RULE_NONE, err 0.
 * Errors: -EINVAL (NULL argument, or storage that holds neither a live
 * table nor a failed init).
 */
MMP_API int mmp_pt_reason(const struct mmp_pt *pt, struct mmp_pt_reason *out);

/**
 * Render @p r as one line of English naming the rule and its values
 * (e.g. "EPT: WRITE needs READ (a write-only entry is an EPT
 * misconfiguration), attrs 0x2"), NUL-terminated and cut to @p size - 1 bytes, as snprintf
 * does. @p buf may be NULL when @p size is 0.
 * @return the length of the whole text (>= size: it was cut);
 * -EINVAL for NULL @p r, or NULL @p buf with a non-zero @p size.
 */
MMP_API int mmp_pt_reason_text(const struct mmp_pt_reason *r, char *buf, size_t size);

/**
 * Render why the last failing call on @p pt failed into @p buf, as
 * mmp_pt_reason() then mmp_pt_reason_text() would.
 * @return the length of the whole text, as mmp_pt_reason_text();
 * -EINVAL for NULL @p pt, storage that holds neither a live table nor a
 * failed init, or NULL @p buf with a non-zero @p size.
 */
MMP_API int mmp_pt_why(const struct mmp_pt *pt, char *buf, size_t size);

/**
 * Check @p cfg and @p ops as mmp_pt_init() does, without storage or
 * allocation: 0, or the error init would return (except -ENOMEM, -EBUSY
 * and a misaligned root page, which only init can meet) with the reason
 * in *why (may be NULL; set to rule NONE, err 0 on success).
 */
MMP_API int mmp_pt_config_check(const struct mmp_pt_config *cfg, const struct mmp_pt_ops *ops,
                                struct mmp_pt_reason *why);

#ifdef __cplusplus
}
#endif

#endif
