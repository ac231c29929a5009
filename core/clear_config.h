/* SPDX-License-Identifier: MIT */
/*
 * The clearing policy in force (layer 5; core/clear.c has the layers): the
 * policy from facts, then a tuning file or a measurement (only when the
 * caller asks: MMPORT_TUNING, MMPORT_CACHE_DIR, mmp_clear_tune()), then the
 * environment's overrides (MMPORT_CLEAR_COLD_MIN, MMPORT_CLEAR).
 */
#ifndef MMPORT_CORE_CLEAR_CONFIG_H
#define MMPORT_CORE_CLEAR_CONFIG_H

#include "clear_policy.h"

struct mmp_core_clear_config {
    struct mmp_clear_policy pol;
    int forced;          /* MMPORT_CLEAR's kernel id, or -1 */
    int forced_err;      /* MMPORT_CLEAR names an unknown / unusable kernel */
    bool cold_min_env;   /* MMPORT_CLEAR_COLD_MIN set pol.cold_min */
    uint64_t cold_min;   /* its value */
};

/*
 * The policy at first use: from facts; then the file MMPORT_TUNING names,
 * else the per-CPU-model file in MMPORT_CACHE_DIR if there is one (read,
 * never written); then MMPORT_CLEAR_COLD_MIN and MMPORT_CLEAR. Without those
 * variables: no file access, no allocation, no measuring.
 */
void mmp_core_clear_config_init(struct mmp_core_clear_config *c);

/*
 * mmp_clear_tune(dir, flags) given the configuration in force: the new one
 * into *next (the environment's overrides kept). Returns 0, or the error
 * mmp_clear_tune() documents with *next unspecified. Not reentrant (the
 * caller serialises).
 */
int mmp_core_clear_config_tune(const struct mmp_core_clear_config *cur,
                               struct mmp_core_clear_config *next, const char *dir,
                               unsigned flags);

#endif
