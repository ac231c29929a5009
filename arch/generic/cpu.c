/* SPDX-License-Identifier: MIT */
/* Portable default for CPU detection: nothing is known. */
#include "arch.h"

#ifndef mmp_arch_cpu_detect
void mmp_arch_cpu_detect(struct mmp_cpu_features *f)
{
    f->arch = MMP_ARCH_GENERIC;
}
#endif
