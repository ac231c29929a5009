/* SPDX-License-Identifier: MIT */
/* How a threaded clear splits its range (core/clear.c; exposed for the tests). */
#ifndef MMPORT_CORE_CLEAR_SPAN_H
#define MMPORT_CORE_CLEAR_SPAN_H

#include <mmport/common.h>

/*
 * Span i of n of a threaded round over npages pages at base: pages
 * [*first, *end), cut at huge-page boundaries where the spans are large.
 */
void mmp_core_clear_span(uintptr_t base, size_t npages, unsigned n, unsigned i, size_t *first,
                         size_t *end);

#endif
