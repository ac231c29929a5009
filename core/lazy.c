/* SPDX-License-Identifier: MIT */
/*
 * Lazy-MMU sections: they only widen the batching window of pt_batch.c
 * from one call to the whole section (Linux arch_enter/leave_lazy_mmu_mode,
 * Xen PV multicalls).
 */
#include <mmport/lazy.h>

#include "pt_int.h"
#include "pt_reason.h"

static struct pt *live(struct mmp_pt *p)
{
    return pt_live(p) ? pt_of(p) : NULL;
}

static int lazy_state(const struct pt *pt, int err)
{
    return mmp_core_pt_fail(pt, err, MMP_PT_RULE_LAZY_STATE, 0, 0, 0);
}

int mmp_lazy_enter(struct mmp_pt *p)
{
    struct pt *pt = live(p);
    if (!pt)
        return -MMP_EINVAL;
    if (pt->lazy_depth == MMP_LAZY_MAX_DEPTH) /* the count must never wrap to "not lazy" */
        return mmp_core_pt_fail(pt, -MMP_EOVERFLOW, MMP_PT_RULE_LAZY_DEPTH, 0, 0,
                                MMP_LAZY_MAX_DEPTH);
    pt->lazy_depth++;
    return 0;
}

int mmp_lazy_leave(struct mmp_pt *p)
{
    struct pt *pt = live(p);
    if (!pt)
        return -MMP_EINVAL;
    if (!pt->lazy_depth)
        return lazy_state(pt, -MMP_EINVAL);
    if (pt->lazy_depth == 1 && pt->lazy_paused)
        return lazy_state(pt, -MMP_EBUSY);
    if (--pt->lazy_depth == 0)
        mmp_core_pt_call_end(pt);
    return 0;
}

int mmp_lazy_flush(struct mmp_pt *p)
{
    struct pt *pt = live(p);
    if (!pt)
        return -MMP_EINVAL;
    if (!pt->lazy_depth)
        return lazy_state(pt, -MMP_EINVAL);
    mmp_core_pt_sync(pt);
    return 0;
}

int mmp_lazy_pause(struct mmp_pt *p)
{
    struct pt *pt = live(p);
    if (!pt)
        return -MMP_EINVAL;
    if (!pt->lazy_depth)
        return lazy_state(pt, -MMP_EINVAL);
    if (pt->lazy_paused == MMP_LAZY_MAX_DEPTH)
        return mmp_core_pt_fail(pt, -MMP_EOVERFLOW, MMP_PT_RULE_LAZY_DEPTH, 0, 0,
                                MMP_LAZY_MAX_DEPTH);
    pt->lazy_paused++;
    mmp_core_pt_call_end(pt);
    return 0;
}

int mmp_lazy_resume(struct mmp_pt *p)
{
    struct pt *pt = live(p);
    if (!pt)
        return -MMP_EINVAL;
    if (!pt->lazy_paused)
        return lazy_state(pt, -MMP_EINVAL);
    pt->lazy_paused--;
    return 0;
}

unsigned mmp_lazy_depth(const struct mmp_pt *p)
{
    return pt_live(p) ? cpt_of(p)->lazy_depth : 0;
}
