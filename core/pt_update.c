/* SPDX-License-Identifier: MIT */
/*
 * map / unmap / protect: the call's kind (shared or exclusive) and page
 * source, argument checks, then the one-page path (core/pt_fault.c) or the
 * table's engine instance (core/pt_engine.c, specialised for its depth).
 */
#include "pt_fault.h"
#include "pt_op.h"
#include "pt_reason.h"

/* How a call runs, resolved from its struct mmp_pt_call. */
struct call {
    bool shared;
    struct mmp_pt_memcache *mc;
};

static inline __attribute__((always_inline)) int call_of(struct pt *pt, const struct mmp_pt_call *c,
                                                       struct call *out)
{
    const uint32_t known = MMP_CALL_SHARED | MMP_CALL_EXCLUSIVE;
    bool may_share = (pt->cfg_flags & MMP_PT_SHARED) != 0;
    out->shared = may_share;
    out->mc = NULL;
    if (!c)
        return 0;
    if ((c->flags & ~known) || (c->flags & known) == known)
        return mmp_core_pt_fail(pt, -MMP_EINVAL, MMP_PT_RULE_FLAGS, c->flags, 0, known);
    if ((c->flags & MMP_CALL_SHARED) && !may_share)
        return mmp_core_pt_fail(pt, -MMP_EINVAL, MMP_PT_RULE_CALL_SHARED, 0, 0, 0);
    if (c->mc && c->mc->n > MMP_PT_MEMCACHE_PAGES)
        return mmp_core_pt_fail(pt, -MMP_EINVAL, MMP_PT_RULE_MEMCACHE, c->mc->n, 0,
                                MMP_PT_MEMCACHE_PAGES);
    if (c->flags & known)
        out->shared = (c->flags & MMP_CALL_SHARED) != 0;
    out->mc = c->mc;
    return 0;
}

/* A shared call inside a lazy section would flush its own change while
 * the section's deferred ones for the same range may still be pending. */
static inline __attribute__((always_inline)) int shared_ok(struct pt *pt, const struct call *c)
{
    if (c->shared && pt->lazy_depth)
        return mmp_core_pt_fail(pt, -MMP_EBUSY, MMP_PT_RULE_CALL_LAZY, pt->lazy_depth, 0, 0);
    return 0;
}

/* The result of a run: a dry memcache gets its own reason. */
static int run_result(struct pt *pt, const struct call *c, int rc, uint64_t va, uint64_t last)
{
    if (rc == -MMP_ENOMEM && c->mc)
        return mmp_core_pt_fail(pt, rc, MMP_PT_RULE_MEMCACHE_DRY, va, last, c->mc->n);
    if (rc == -MMP_EINVAL && c->mc)
        return rc; /* a misaligned page of it: recorded where it was found */
    return rc < 0 ? mmp_core_pt_fail_op(pt, rc, va, last) : rc;
}

static int op_init(struct pt_op *o, struct mmp_pt *p, int kind, uint32_t attrs,
                   const struct call *c)
{
    __builtin_memset(o, 0, sizeof *o);
    struct pt *pt = pt_of(p);
    o->pt = pt;
    o->g = &pt->g;
    o->kind = kind;
    o->attrs = attrs;
    o->shared = c->shared;
    o->mc = c->mc;
    o->st = &pt->st;
    if (kind == OP_PROT && !(attrs & MMP_SW_SET))
        o->keep = pt->g.sw_mask;
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
        unsigned rule = (unsigned)mmp_core_pt_leaf(&pt->g, d, attrs, &o->tmpl[d]);
        if (rule)
            return mmp_core_pt_fail_attrs(pt, rule, attrs);
    }
    pt_note_global(pt, attrs);
    return 0;
}

/* map, inlined into both entry points: the plain one (call NULL, the
 * table's default) pays nothing for the call's options. */
static inline __attribute__((always_inline)) int
map_impl(struct mmp_pt *p, const struct mmp_pt_call *call, uint64_t va, uint64_t pa,
         uint64_t size, uint32_t attrs, uint32_t flags)
{
    const uint32_t known = MMP_MAP_REPLACE | MMP_MAP_NO_BLOCK | MMP_MAP_NO_CONT;
    if (!pt_live(p))
        return -MMP_EINVAL;
    struct pt *pt = pt_of(p);
    struct call c;
    int rc = call_of(pt, call, &c);
    if (rc || (rc = shared_ok(pt, &c)))
        return rc;
    if (flags & ~known)
        return mmp_core_pt_fail(pt, -MMP_EINVAL, MMP_PT_RULE_FLAGS, flags & ~known, 0, 0);
    uint64_t last;
    rc = pt_check_va(pt, va, size, &last);
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
    if (last == va + gm &&
        (slot = mmp_core_pt_slot_map(pt, va, pa, attrs, flags, c.shared)) != PT_SLOT_ENGINE &&
        slot != PT_SLOT_FOLD)
        return slot < 0 ? mmp_core_pt_fail_op(pt, slot, va, last) : slot;
    struct pt_op o;
    rc = op_init(&o, p, OP_MAP, attrs, &c);
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
    return run_result(pt, &c, rc, va, last);
}

int mmp_pt_map_call(struct mmp_pt *p, const struct mmp_pt_call *call, uint64_t va, uint64_t pa,
                    uint64_t size, uint32_t attrs, uint32_t flags)
{
    return map_impl(p, call, va, pa, size, attrs, flags);
}

int mmp_pt_map(struct mmp_pt *p, uint64_t va, uint64_t pa, uint64_t size, uint32_t attrs,
               uint32_t flags)
{
    return map_impl(p, NULL, va, pa, size, attrs, flags);
}

/* Unmap and protect: check the range, then run the table's engine. */
static inline __attribute__((always_inline)) int run_range(struct mmp_pt *p, const struct mmp_pt_call *call, uint64_t va,
                     uint64_t size, int kind, uint32_t attrs)
{
    if (!pt_live(p))
        return -MMP_EINVAL;
    struct pt *pt = pt_of(p);
    struct call c;
    int rc = call_of(pt, call, &c);
    if (rc || (rc = shared_ok(pt, &c)))
        return rc;
    uint64_t last;
    rc = pt_check_va(pt, va, size, &last);
    if (rc)
        return rc;
    if (kind == OP_UNMAP && last == va + ((uint64_t)1 << pt->g.granule_shift) - 1 &&
        (rc = mmp_core_pt_slot_unmap(pt, va, c.shared)) != PT_SLOT_ENGINE)
        return rc < 0 ? mmp_core_pt_fail_op(pt, rc, va, last) : rc;
    struct pt_op o;
    rc = op_init(&o, p, kind, attrs, &c);
    if (rc)
        return rc;
    rc = o.pt->run(&o, va, last);
    return run_result(pt, &c, rc, va, last);
}

int mmp_pt_unmap_call(struct mmp_pt *p, const struct mmp_pt_call *call, uint64_t va,
                      uint64_t size)
{
    return run_range(p, call, va, size, OP_UNMAP, 0);
}

int mmp_pt_unmap(struct mmp_pt *p, uint64_t va, uint64_t size)
{
    return run_range(p, NULL, va, size, OP_UNMAP, 0);
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

int mmp_pt_protect_call(struct mmp_pt *p, const struct mmp_pt_call *call, uint64_t va,
                        uint64_t size, uint32_t attrs)
{
    if (pt_live(p) && (attrs & MMP_PROT_EXEC)) {
        struct pt *pt = pt_of(p);
        struct call c;
        int rc = call_of(pt, call, &c);
        if (rc || (rc = shared_ok(pt, &c)))
            return rc;
        uint64_t tmpl;
        /* Only for a protect that will run: valid attributes, a valid
         * range (mmp_pt_walk checks it; its error is the protect's). */
        if ((pt->g.maint & MMP_PT_MAINT_ICACHE_INVAL) && pt->ops.icache_inval_pou &&
            mmp_core_pt_leaf(&pt->g, pt->g.nlev - 1, attrs, &tmpl) == 0) {
            struct exec_maint m = {.pt = pt};
            int rc = mmp_pt_walk(p, va, size, exec_maint_leaf, &m);
            if (rc < 0)
                return rc;
            exec_maint_emit(&m);
        }
    }
    return run_range(p, call, va, size, OP_PROT, attrs);
}

int mmp_pt_protect(struct mmp_pt *p, uint64_t va, uint64_t size, uint32_t attrs)
{
    return mmp_pt_protect_call(p, NULL, va, size, attrs);
}

uint64_t mmp_pt_call_pages(const struct mmp_pt *p, uint64_t size)
{
    if (!pt_live(p) || !size)
        return 0;
    const struct mmp_pt_geom *g = &cpt_of(p)->g;
    uint64_t gsz = (uint64_t)1 << g->granule_shift, n = 0;
    uint64_t s = size - 1 - (size - 1) % gsz; /* size rounded up to the granule, minus one */
    /* A granule-aligned range of s + gsz bytes meets at most
     * ceil(s / span) + 1 tables of a depth whose tables span span bytes:
     * each may be new, or a block split into it; nothing else takes one. */
    for (unsigned d = 1; d < g->nlev; d++) {
        uint64_t span = pt_slot_size(g, d - 1);
        n += s / span + (s % span != 0) + 1;
    }
    return n;
}
