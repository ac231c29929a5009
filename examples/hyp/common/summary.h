/* SPDX-License-Identifier: MIT */
/*
 * The end of a run: one summary line for people ("hyp-summary: ...") and
 * the same fields as one JSON object for the runner ("hyp-json: {...}").
 */
#ifndef HYP_COMMON_SUMMARY_H
#define HYP_COMMON_SUMMARY_H

#include "gmm.h"

struct hyp_run {
    const char *arch, *cpu_model; /* "arm64", "max" */
    const char *mode;             /* fault mode: "pages" or "blocks" */
    unsigned vcpus;
    uint64_t
        boot_to_init_ns; /* guest start to its init's first doorbell write; 0: never */
    uint64_t run_ns;     /* guest start to its power-off */
    uint64_t exits[HYP_MAX_CPUS];
    uint64_t bad_ipa;   /* guest accesses to neither RAM nor a device (aborts injected) */
    const char *end;    /* how the guest ended: "system-off", "system-reset", ... */
    uint64_t arena_out; /* every table's bytes still out after teardown */
};

/**
 * Print the summary and JSON lines; returns 1 when the hypervisor's side
 * passed (the guest powered off, the compare ran and was exact, no table
 * page leaked, no error), else 0. The guest's own verdict is its OK line.
 */
int hyp_summary(const struct hyp_run *r, const struct gmm *g);

#endif
