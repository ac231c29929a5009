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
#define MMP_VERSION_MINOR 1 /**< minor version: new API, compatible */
#define MMP_VERSION_PATCH 0 /**< patch level: fixes only */
#define MMP_VERSION_STRING "0.1.0" /**< "MAJOR.MINOR.PATCH" */

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
#define MMP_ERANGE 34    /**< address outside the configured VA/PA bits */
#define MMP_ENOSYS 38    /**< not supported by this build */
#define MMP_EOVERFLOW 75 /**< a length or address computation overflows */
#define MMP_ENOTSUP 95   /**< not supported by this CPU or format */

/** Size of the base page that clearing sizes are expressed in. */
#define MMP_PAGE_SIZE 4096u

#ifdef __cplusplus
extern "C" {
#endif

/** Library version as "MAJOR.MINOR.PATCH". Never fails. */
MMP_API const char *mmp_version(void);

/**
 * Short English description of an mmport error value (negative or
 * positive). Unknown values give "unknown error". Never fails.
 */
MMP_API const char *mmp_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
