/* SPDX-License-Identifier: MIT */
/* No host OS (bare-metal hypervisor): the arch code reads ID registers itself. */
#include "host.h"

bool mmp_host_hwcaps(uint64_t *hwcap, uint64_t *hwcap2)
{
    *hwcap = 0;
    *hwcap2 = 0;
    return false;
}

void mmp_host_cpu_refine(struct mmp_cpu_features *f)
{
    (void)f;
}
