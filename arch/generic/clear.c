/* SPDX-License-Identifier: MIT */
/* Portable default: no arch kernels; core's memset kernel is always there. */
#include "arch.h"

#ifndef mmp_arch_clear_fn
int (*mmp_arch_clear_fn(unsigned id))(void *addr, size_t len)
{
    (void)id;
    return NULL;
}
#endif
