/* SPDX-License-Identifier: MIT */
/*
 * Small freestanding text helpers of the clearing code (no libc): bounded
 * appends, number formatting and parsing. The lowest layer: includes
 * nothing of the clearing code.
 */
#ifndef MMPORT_CORE_CLEAR_TEXT_H
#define MMPORT_CORE_CLEAR_TEXT_H

#include <mmport/common.h>

/* a and b hold the same characters. */
bool mmp_core_streq(const char *a, const char *b);

/*
 * Parses a size: decimal digits with an optional K/M/G suffix (either case;
 * binary units), the whole string, no overflow. False on anything else.
 */
bool mmp_core_parse_size(const char *s, uint64_t *v);

/* Appends text to a bounded buffer, always NUL-terminated; n counts what it would need. */
struct mmp_core_sink {
    char *p;
    size_t cap, n;
};
void mmp_core_put(struct mmp_core_sink *o, const char *s);
void mmp_core_put_u64(struct mmp_core_sink *o, uint64_t v);

#endif
