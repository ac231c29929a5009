/* SPDX-License-Identifier: MIT */
/*
 * Measuring the clearing kernels, only when asked (layer 4; core/clear.c
 * has the layers): mmp_clear_tune()'s check of the table's choice and
 * mmp_clear_calibrate(). Depends on the kernels, the policy from facts and
 * the tuning format; never on the policy in force.
 */
#ifndef MMPORT_CORE_CLEAR_MEASURE_H
#define MMPORT_CORE_CLEAR_MEASURE_H

#include "clear_policy.h"

/*
 * Times the policy pol (from facts) against the other kernels of `usable`
 * its quirk row allows, on a 64 MiB scratch mapping, and writes the result
 * as a tuning file for f (every figure as a comment) into text. Returns
 * its length; -MMP_ENOSYS without a clock, -MMP_ENOMEM without scratch
 * memory, -MMP_ERANGE if cap is too small.
 */
long mmp_core_clear_measure(const struct mmp_cpu_features *f, uint32_t usable,
                           const struct mmp_clear_policy *pol, char *text, size_t cap);

/*
 * The kernels the measurement compares (MMP_KBIT sets): usable, this
 * arch's, not bad-listed by pol's quirk row, plus pol's own choice.
 */
void mmp_core_clear_verify_candidates(uint32_t usable, const struct mmp_clear_policy *pol,
                                      uint32_t *hot, uint32_t *cold);

/* current, unless a kernel of cand took more than 5% less time (ns[k]). */
unsigned mmp_core_clear_verify_pick(uint32_t cand, unsigned current, const uint64_t *ns);

/*
 * AUTO's threshold from hot/cold times at n ascending sizes: table if it
 * agrees with them (cold within 5% of hot at every size from it, hot
 * within 5% of cold below it); else the smallest size from which cold is
 * within 5% at every larger one; if cold loses at the largest, table when
 * it is larger, else twice the largest size.
 */
uint64_t mmp_core_clear_verify_cold_min(uint64_t table, const uint64_t *size,
                                        const uint64_t *t_hot, const uint64_t *t_cold, unsigned n);

#endif
