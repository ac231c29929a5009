/* SPDX-License-Identifier: MIT */
/* No host: no built-in table allocator; the hypervisor passes its ops. */
#include "host.h"

const struct mmp_pt_ops *mmp_host_pt_default_ops(void)
{
    return NULL;
}

int mmp_pt_create(struct mmp_pt **pt, const struct mmp_pt_config *cfg,
                  const struct mmp_pt_ops *ops)
{
    (void)pt;
    (void)cfg;
    (void)ops;
    return -MMP_ENOSYS; /* no heap: embed struct mmp_pt and call mmp_pt_init() */
}

void mmp_pt_destroy(struct mmp_pt *pt)
{
    mmp_pt_fini(pt);
}
