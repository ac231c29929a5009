/* SPDX-License-Identifier: MIT */
/*
 * Interface between the architecture-independent part of the real-MMU
 * payloads (printf, PRNG, results, scenarios) and the per-arch part
 * (console, exit, exceptions, MMU switching, translation probes).
 */
#ifndef MMPORT_TESTS_MMU_PAYLOAD_H
#define MMPORT_TESTS_MMU_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

/* ---- provided by the arch part ---- */

/** Write a NUL-terminated string to the console. */
void pl_console_write(const char *s);
/** Stop the machine; QEMU exits non-zero when @p code is non-zero. */
__attribute__((noreturn)) void pl_exit(int code);

/* ---- provided by common/lib.c ---- */

#include "fmt.h" /* memset, memcpy, memmove, memcmp (examples/hyp/common/fmt.c) */

#include <stdarg.h>
__attribute__((format(printf, 1, 2))) void pl_printf(const char *fmt, ...);
int pl_vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap);
__attribute__((format(printf, 3, 4))) int pl_snprintf(char *buf, size_t cap,
                                                      const char *fmt, ...);

void pl_srand(uint64_t seed);
uint64_t pl_rand(void);
/** The same generator on a caller-owned state (an independent stream). */
uint64_t pl_rand_r(uint64_t *state);
uint64_t pl_rand_below(uint64_t n);

struct pl_counts {
    unsigned passed, failed, skipped;
};
extern struct pl_counts pl_counts;

/** Count and print one "PASS: name" or "FAIL: name" line (name is a format). */
__attribute__((format(printf, 2, 3))) void pl_result(int ok, const char *fmt, ...);
/** Count and print one "SKIP: name: why" line (name is a format). */
__attribute__((format(printf, 2, 3))) void pl_skip(const char *why, const char *fmt, ...);
/** Print the totals and exit non-zero if anything failed. */
__attribute__((noreturn)) void pl_finish(void);

#define PL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
