/* SPDX-License-Identifier: MIT */
/*
 * Atomics, through libatomic_ops (the project's one source of atomics).
 * Only the header-only AO primitives are used, so nothing extra is linked.
 */
#ifndef MMPORT_CORE_ATOMIC_H
#define MMPORT_CORE_ATOMIC_H

#include <atomic_ops.h>

#if !defined(AO_HAVE_load_acquire) || !defined(AO_HAVE_store_release) || \
    !defined(AO_HAVE_compare_and_swap_full) || !defined(AO_HAVE_fetch_and_add) || \
    !defined(AO_HAVE_fetch_compare_and_swap_full)
#error "libatomic_ops lacks a primitive mmport needs on this target"
#endif

#endif
