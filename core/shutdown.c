/* SPDX-License-Identifier: MIT */
/*
 * mmp_shutdown(): give back what mmport keeps between calls - the clearing
 * thread pool and the epoch state of shared tables - for a clean exit or
 * an unload. Both restart lazily, so mmport stays usable after it.
 */
#include "host.h"

int mmp_shutdown(void)
{
    /* The pool first, held, so a failed epoch release leaves it as it was. */
    if (!mmp_host_pool_hold())
        return -MMP_EBUSY;
    int rc = mmp_host_epoch_release();
    mmp_host_pool_end(rc == 0);
    return rc;
}
