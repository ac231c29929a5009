/* SPDX-License-Identifier: MIT */
/* No host: no built-in table allocator; the hypervisor passes its ops. */
#include "host.h"

void mmp_host_assume_init(const void *p, size_t n)
{
    (void)p;
    (void)n;
}

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

/* No threads to wait for, and no heap for the retired list: shared tables
 * need the caller's retire_table hook (mmp_pt_init checks). */
bool mmp_host_epoch_ok(void)
{
    return false;
}
void mmp_host_epoch_enter(void)
{
}
void mmp_host_epoch_leave(void)
{
}
void mmp_host_epoch_retire(void (*free_table)(void *, void *, uint64_t, size_t), void *ctx,
                           void *va, uint64_t pa, size_t bytes)
{
    free_table(ctx, va, pa, bytes); /* unreachable: mmp_host_epoch_ok() is false */
}
void mmp_host_epoch_drain(void)
{
}
int mmp_host_epoch_release(void)
{
    return 0;
}
