/* SPDX-License-Identifier: MIT */
/*
 * What the architecture-neutral part of the reference hypervisor
 * (examples/hyp/common/) needs from the architecture part, and what it
 * gives every part: console and printf, the memory primitives the
 * compiler and mmport call, a spinlock, a clock.
 */
#ifndef HYP_COMMON_HYP_H
#define HYP_COMMON_HYP_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <atomic_ops.h>

#include "fmt.h"

/* ---- provided by the architecture part ---- */

/** Write one character to the console (polled; callable from any CPU). */
void hyp_arch_putc(char c);
/** Nanoseconds since an arbitrary start, monotonic, the same on every CPU. */
uint64_t hyp_arch_now_ns(void);
/** The index of the physical CPU running this (0 .. HYP_MAX_CPUS-1). */
unsigned hyp_arch_cpu(void);
/** Hint that this CPU is spinning (arm64 YIELD, x86 PAUSE). */
void hyp_arch_relax(void);
/** Stop the machine for good (after the summary). */
__attribute__((noreturn)) void hyp_arch_power_off(void);

#define HYP_MAX_CPUS 2

/* ---- console.c ---- */

/** Copy @p n bytes between 8-byte-aligned buffers (a multiple of 64). */
void hyp_copy_words(void *d, const void *s, size_t n);
/** Offset of the first differing byte of two 8-byte-aligned buffers of
 *  @p n bytes (a multiple of 64), or n when they are equal. */
size_t hyp_diff_words(const void *a, const void *b, size_t n);

/* printf on the console (fmt.h's formats). Lines from two CPUs do not
 * interleave (one lock per call). */
__attribute__((format(printf, 1, 2))) void hyp_printf(const char *fmt, ...);

/* ---- a test-and-set spinlock that counts contention ---- */

struct hyp_lock {
    volatile AO_TS_t ts;
    volatile AO_t contended; /* acquisitions that had to wait */
};
void hyp_lock(struct hyp_lock *l);
void hyp_unlock(struct hyp_lock *l);

#define HYP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
