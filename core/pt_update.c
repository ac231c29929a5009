/* SPDX-License-Identifier: MIT */
/*
 * map / unmap / protect: argument checks, then the table's engine instance
 * (core/pt_engine.c, specialised for its depth) does the work.
 */
#include "pt_op.h"

static int op_init(struct pt_op *o, struct mmp_pt *p, int kind, uint32_t attrs)
{
    __builtin_memset(o, 0, sizeof *o);
    struct pt *pt = pt_of(p);
    o->pt = pt;
    o->g = &pt->g;
    o->kind = kind;
    o->attrs = attrs;
    o->shared = (pt->cfg_flags & MMP_PT_SHARED) != 0;
    o->st = &pt->st;
    if (pt->cfg_flags & MMP_PT_NO_BLOCKS)
        o->flags |= OPF_NOBLOCK;
    if (pt->cfg_flags & MMP_PT_NO_CONT)
        o->flags |= OPF_NOCONT;
    if (pt->cfg_flags & MMP_PT_NO_FOLD)
        o->flags |= OPF_NOFOLD;
    if (kind == OP_UNMAP)
        return 0;
    for (unsigned d = 0; d < pt->g.nlev; d++) {
        if (!pt->g.leaf_ok[d])
            continue;
        int rc = pt->g.fmt->leaf(&pt->g, d, attrs, &o->tmpl[d]);
        if (rc)
            return rc;
    }
    pt_note_global(pt, attrs);
    return 0;
}

int mmp_pt_map(struct mmp_pt *p, uint64_t va, uint64_t pa, uint64_t size, uint32_t attrs,
               uint32_t flags)
{
    if (!pt_live(p) ||
        (flags & ~(uint32_t)(MMP_MAP_REPLACE | MMP_MAP_NO_BLOCK | MMP_MAP_NO_CONT)))
        return -MMP_EINVAL;
    struct pt *pt = pt_of(p);
    uint64_t last;
    int rc = mmp_core_pt_check_va(pt, va, size, &last);
    if (rc)
        return rc;
    if (pa & (((uint64_t)1 << pt->g.granule_shift) - 1))
        return -MMP_EINVAL;
    if (pa + size - 1 < pa)
        return -MMP_EOVERFLOW;
    if ((pa + size - 1) >> pt->g.pa_bits)
        return -MMP_ERANGE;
    struct pt_op o;
    rc = op_init(&o, p, OP_MAP, attrs);
    if (rc)
        return rc;
    o.delta = pa - va;
    if (flags & MMP_MAP_REPLACE)
        o.flags |= OPF_REPLACE;
    if (flags & MMP_MAP_NO_BLOCK)
        o.flags |= OPF_NOBLOCK;
    if (flags & MMP_MAP_NO_CONT)
        o.flags |= OPF_NOCONT;
    return o.pt->run(&o, va, last);
}

/* Unmap and protect: check the range, then run the table's engine. */
static int run_range(struct mmp_pt *p, uint64_t va, uint64_t size, int kind, uint32_t attrs)
{
    if (!pt_live(p))
        return -MMP_EINVAL;
    uint64_t last;
    int rc = mmp_core_pt_check_va(pt_of(p), va, size, &last);
    if (rc)
        return rc;
    struct pt_op o;
    rc = op_init(&o, p, kind, attrs);
    if (rc)
        return rc;
    return o.pt->run(&o, va, last);
}

int mmp_pt_unmap(struct mmp_pt *p, uint64_t va, uint64_t size)
{
    return run_range(p, va, size, OP_UNMAP, 0);
}

int mmp_pt_protect(struct mmp_pt *p, uint64_t va, uint64_t size, uint32_t attrs)
{
    return run_range(p, va, size, OP_PROT, attrs);
}
