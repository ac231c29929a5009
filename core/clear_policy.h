/* SPDX-License-Identifier: MIT */
/*
 * The clearing policy from facts alone (layer 2; core/clear.c has the
 * layers): the quirk table and mmp_clear_policy_for(), which turn a struct
 * mmp_cpu_features into hot and cold kernels and AUTO's threshold. Pure
 * data and arithmetic: no environment, files or clock.
 */
#ifndef MMPORT_CORE_CLEAR_POLICY_H
#define MMPORT_CORE_CLEAR_POLICY_H

#include "clear_kernels.h"

/* One row of the quirk table (core/clear_policy.c). */
struct mmp_core_clear_quirk {
    const char *name;
    enum mmp_arch arch;
    const char *vendor;                /* exact mmp_cpu_features::vendor; "" = any */
    uint32_t fam_lo, fam_hi;           /* x86 display family range */
    uint32_t model_lo, model_hi;       /* x86 display model range */
    uint64_t midr_mask, midr_val;      /* arm64: (midr & mask) == val */
    uint32_t bad_hot, bad_cold;        /* MMP_KBIT() sets */
    /*
     * The most last-level cache one core of this design can count on
     * (bytes; 0 = MMP_CORE_LLC_CORE_MAX): its LLC per core, or less where
     * measured. A larger per-core figure is not one core's (a virtual
     * machine reporting the host socket's cache, a sharing count the
     * hypervisor invented) and is cut to this.
     */
    uint64_t llc_core_max;
    bool llc_whole;                    /* one core may fill the whole LLC (ring L3) */
    const char *why;
};
extern const struct mmp_core_clear_quirk mmp_core_clear_quirks[];
extern const size_t mmp_core_clear_nquirks;

/* The first quirk row matching f, or NULL. */
const struct mmp_core_clear_quirk *mmp_core_clear_quirk_for(const struct mmp_cpu_features *f);

/* The bound on one core's LLC share for CPUs without a row of their own. */
#define MMP_CORE_LLC_CORE_MAX (32ull << 20)

/* AUTO's threshold when the LLC size is unknown. */
#define MMP_CORE_COLD_MIN_DEFAULT (8ull << 20)

#endif
