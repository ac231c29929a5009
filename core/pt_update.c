/* SPDX-License-Identifier: MIT */
/*
 * map / unmap / protect: argument checks, then the table's engine instance
 * (core/pt_engine.c, specialised for its depth) does the work.
 */
#include "pt_fault.h"
#include "pt_op.h"
#include "pt_reason.h"

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
        unsigned rule = pt->g.fmt->leaf(&pt->g, d, attrs, &o->tmpl[d]);
        if (rule)
            return mmp_core_pt_fail_attrs(pt, rule, attrs);
    }
    pt_note_global(pt, attrs);
    return 0;
}

int mmp_pt_map(struct mmp_pt *p, uint64_t va, uint64_t pa, uint64_t size, uint32_t attrs,
               uint32_t flags)
{
    const uint32_t known = MMP_MAP_REPLACE | MMP_MAP_NO_BLOCK | MMP_MAP_NO_CONT;
    if (!pt_live(p))
        return -MMP_EINVAL;
    struct pt *pt = pt_of(p);
    if (flags & ~known)
        return mmp_core_pt_fail(pt, -MMP_EINVAL, MMP_PT_RULE_FLAGS, flags & ~known, 0, 0);
    uint64_t last;
    int rc = pt_check_va(pt, va, size, &last);
    if (rc)
        return rc;
    uint64_t gm = ((uint64_t)1 << pt->g.granule_shift) - 1;
    if (pa & gm)
        return mmp_core_pt_fail(pt, -MMP_EINVAL, MMP_PT_RULE_PA_ALIGN, pa, 0, gm + 1);
    if (pa + size - 1 < pa)
        return mmp_core_pt_fail(pt, -MMP_EOVERFLOW, MMP_PT_RULE_PA_WRAP, pa, 0, size);
    if ((pa + size - 1) >> pt->g.pa_bits)
        return mmp_core_pt_fail(pt, -MMP_ERANGE, MMP_PT_RULE_PA_RANGE, pa, pa + size - 1,
                                pt->g.pa_bits);
    int slot = PT_SLOT_ENGINE;
    if (last == va + gm && (slot = mmp_core_pt_slot_map(pt, va, pa, attrs, flags)) != PT_SLOT_ENGINE &&
        slot != PT_SLOT_FOLD)
        return slot < 0 ? mmp_core_pt_fail_op(pt, slot, va, last) : slot;
    struct pt_op o;
    rc = op_init(&o, p, OP_MAP, attrs);
    if (rc)
        return rc;
    o.delta = pa - va;
    if (slot == PT_SLOT_FOLD) { /* mapped already: the folds it completed */
        o.flags |= OPF_FOLD;
        (void)o.pt->run(&o, va, last);
        return 0;
    }
    if (flags & MMP_MAP_REPLACE)
        o.flags |= OPF_REPLACE;
    if (flags & MMP_MAP_NO_BLOCK)
        o.flags |= OPF_NOBLOCK;
    if (flags & MMP_MAP_NO_CONT)
        o.flags |= OPF_NOCONT;
    rc = o.pt->run(&o, va, last);
    return rc < 0 ? mmp_core_pt_fail_op(pt, rc, va, last) : rc;
}

/* Unmap and protect: check the range, then run the table's engine. */
static int run_range(struct mmp_pt *p, uint64_t va, uint64_t size, int kind, uint32_t attrs)
{
    if (!pt_live(p))
        return -MMP_EINVAL;
    uint64_t last;
    int rc = pt_check_va(pt_of(p), va, size, &last);
    if (rc)
        return rc;
    if (kind == OP_UNMAP && last == va + ((uint64_t)1 << pt_of(p)->g.granule_shift) - 1 &&
        (rc = mmp_core_pt_slot_unmap(pt_of(p), va)) != PT_SLOT_ENGINE)
        return rc < 0 ? mmp_core_pt_fail_op(pt_of(p), rc, va, last) : rc;
    struct pt_op o;
    rc = op_init(&o, p, kind, attrs);
    if (rc)
        return rc;
    rc = o.pt->run(&o, va, last);
    return rc < 0 ? mmp_core_pt_fail_op(pt_of(p), rc, va, last) : rc;
}

int mmp_pt_unmap(struct mmp_pt *p, uint64_t va, uint64_t size)
{
    return run_range(p, va, size, OP_UNMAP, 0);
}

/* The output ranges of the leaves a protect makes executable, coalesced:
 * their instruction-cache lines go before the guest may execute them. */
struct exec_maint {
    const struct pt *pt;
    uint64_t pa, size;
};

static void exec_maint_emit(struct exec_maint *m)
{
    if (m->size)
        m->pt->ops.icache_inval_pou(m->pt->ops.ctx, m->pa, m->size);
    m->size = 0;
}

static int exec_maint_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct exec_maint *m = (struct exec_maint *)arg;
    if (l->attrs & MMP_PROT_EXEC)
        return 0; /* executable already: its lines were invalidated then */
    if (m->size && m->pa + m->size == l->pa) {
        m->size += l->size;
        return 0;
    }
    exec_maint_emit(m);
    m->pa = l->pa, m->size = l->size;
    return 0;
}

int mmp_pt_protect(struct mmp_pt *p, uint64_t va, uint64_t size, uint32_t attrs)
{
    if (pt_live(p) && (attrs & MMP_PROT_EXEC)) {
        const struct pt *pt = pt_of(p);
        uint64_t tmpl;
        /* Only for a protect that will run: valid attributes, a valid
         * range (mmp_pt_walk checks it; its error is the protect's). */
        if ((pt->g.maint & MMP_PT_MAINT_ICACHE_INVAL) && pt->ops.icache_inval_pou &&
            pt->g.fmt->leaf(&pt->g, pt->g.nlev - 1, attrs, &tmpl) == 0) {
            struct exec_maint m = {.pt = pt};
            int rc = mmp_pt_walk(p, va, size, exec_maint_leaf, &m);
            if (rc < 0)
                return rc;
            exec_maint_emit(&m);
        }
    }
    return run_range(p, va, size, OP_PROT, attrs);
}
