/* SPDX-License-Identifier: MIT */
/**
 * @file common.h
 * Definitions shared by every mmport header: export macro, version and the
 * error values every call returns.
 *
 * mmport reports errors as negative errno values. The core is freestanding
 * (a hypervisor may have no <errno.h>), so the values used are spelled out
 * here; they equal Linux's errno numbers, which the test suite checks.
 */
#ifndef MMPORT_COMMON_H
#define MMPORT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Marks the functions the library exports (default visibility). */
#if defined(__GNUC__) || defined(__clang__)
#define MMP_API __attribute__((visibility("default")))
#else
#define MMP_API
#endif

/** Version of the headers, at compile time (mmp_version() gives the library's). */
#define MMP_VERSION_MAJOR 0 /**< major version: changes when the API breaks */
#define MMP_VERSION_MINOR 2 /**< minor version: new API, compatible */
#define MMP_VERSION_PATCH 0 /**< patch level: fixes only */
#define MMP_VERSION_STRING "0.2.0" /**< "MAJOR.MINOR.PATCH" */

/* Error values (returned negated). Equal to Linux <errno.h>. */
#define MMP_ENOENT 2     /**< nothing mapped / no such item */
#define MMP_EINTR 4      /**< cancelled by a callback */
#define MMP_EIO 5        /**< a corrupted table: a descriptor the format reserves, or a cycle */
#define MMP_EAGAIN 11    /**< shared mode: an entry is being changed by another writer; retry */
#define MMP_ENOMEM 12    /**< an allocation failed; nothing changed */
#define MMP_EACCES 13    /**< the access is not allowed (a real permission fault) */
#define MMP_EBUSY 16     /**< the object is in a state that forbids the call */
#define MMP_EEXIST 17    /**< the target already holds a mapping */
#define MMP_EINVAL 22    /**< malformed argument (alignment, NULL, flags) */
#define MMP_ERANGE 34    /**< address outside the configured VA/PA bits (mmp_pt_why: which) */
#define MMP_ENOSYS 38    /**< not supported by this build */
#define MMP_EOVERFLOW 75 /**< a length or address computation overflows */
#define MMP_ENOTSUP 95   /**< not supported by this format, configuration or table mode */

/** Size of the base page that clearing sizes are expressed in. */
#define MMP_PAGE_SIZE 4096u

#ifdef __cplusplus
extern "C" {
#endif

/** Library version as "MAJOR.MINOR.PATCH". Never fails. */
MMP_API const char *mmp_version(void);

/**
 * Short English description of an mmport error value (negative or
 * positive). Unknown values give "unknown error". Never fails. It names
 * the class of error only; which rule a page-table call broke, and the
 * value that broke it, come from mmp_pt_why() (include/mmport/pt_reason.h).
 */
MMP_API const char *mmp_strerror(int err);

/**
 * Give back what mmport keeps between calls, for a clean exit or before
 * unloading the library (leak checkers such as valgrind then find nothing
 * of mmport's): stop and join the threads of the clearing pool (started by
 * the first mmp_clear() or mmp_clear_populate() with opts->threads > 1),
 * and free the state of the built-in epoch scheme of MMP_PT_SHARED tables
 * (each thread's record, and every table page retired to it, which goes to
 * its table's free_table hook now). Counters, the clearing policy, and
 * tables and their pages are not touched (mmp_pt_fini() frees those).
 *
 * Call it when no other thread is inside mmport or will enter it during
 * the call. mmport stays usable after it: the next threaded clear starts
 * the pool again, the next lookup or shared call on a shared table
 * registers its thread again; so call it last to end with nothing held.
 * A freestanding build holds nothing: it returns 0.
 * @return 0; -MMP_EBUSY if a threaded clear is running or a thread is
 * inside a lookup or shared call of a MMP_PT_SHARED table (nothing is
 * released; call it again once they are done).
 */
MMP_API int mmp_shutdown(void);

#ifdef __cplusplus
}
#endif

#endif
