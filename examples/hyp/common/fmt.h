/* SPDX-License-Identifier: MIT */
/* The freestanding C library subset of fmt.c. */
#ifndef HYP_COMMON_FMT_H
#define HYP_COMMON_FMT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);

/** vsnprintf for %s %c %d %u %x %p with l/ll/z, width and the '0' flag;
 *  returns the length the whole output needs. */
int hyp_vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap);
__attribute__((format(printf, 3, 4))) int hyp_snprintf(char *buf, size_t cap,
                                                       const char *fmt, ...);

#endif
