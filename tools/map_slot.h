/* SPDX-License-Identifier: MIT */
/* mmport bench map: what its parts (tools/bench_map.c, tools/map_slot.c) share. */
#ifndef MMPORT_TOOLS_MAP_SLOT_H
#define MMPORT_TOOLS_MAP_SLOT_H

#include <stdbool.h>
#include <stdint.h>

#include <mmport/mmport.h>

#include "progress.h"

/* Table pages from a pre-faulted pool (phys_to_virt NULL: pa = address)
 * and a TLB-flush hook that costs a system call or nothing. */
struct mmp_pt_ops bench_map_ops(bool syscall_flush);
/* The counters b - a (table_pages: b's). */
void bench_map_stats_delta(const struct mmp_pt_stats *a, const struct mmp_pt_stats *b,
                           struct mmp_pt_stats *out);
/* Monotonic time in ns. */
double bench_map_now_ns(void);
/* The formats every bench map run goes through, and the width of their
 * longest name (text columns). */
extern const char *const bench_map_fmts[];
extern const unsigned bench_map_nfmts;
int bench_map_fmt_width(void);
/* The progress line of the run (suspended around printed rows). */
extern struct progress bench_map_pr;

enum { SLOT_FAULT, SLOT_SPLIT };
/* --pattern fault / split: every format (or only `only`), exclusive and
 * shared, best of reps, over `bytes`. Exit code. */
int bench_map_slot(int pattern, const char *only, uint64_t bytes, int reps, bool json);

#endif
