/* SPDX-License-Identifier: MIT */
/*
 * The page-table update engine: map, unmap, protect. Included once per
 * paging depth (core/pt_run<N>.c, PT_FIXED_NLEV = N, entry point PT_RUN),
 * so each table runs code specialised for its depth, chosen once at
 * creation (struct pt::run); without PT_FIXED_NLEV the depth is read from
 * the geometry (the generic variant `mmport bench map --depth` compares).
 *
 * Every call runs in two passes over the same decisions:
 *  1. prepare (count_tables): read-only; finds -EEXIST and counts the
 *     table pages the call will need; they are then allocated up front,
 *     so a failed allocation returns -ENOMEM with nothing changed
 *     (Hafnium's prepare/commit);
 *  2. commit (map_tbl / chg_tbl): cannot fail; takes pages from that
 *     reserve.
 * Tables built during the call (new tables, split blocks) stay private
 * until linked: they are filled completely, then published with one store,
 * so they need neither break-before-make nor flushes.
 *
 * Break-before-make (Arm ARM D8.16.1) is done whenever a valid entry
 * changes its output address, block size, contiguity or memory type:
 * store invalid, barrier + flush (mmp_core_pt_bbm, never deferred), then
 * the new entries. x86 needs none (the format says so); every changed
 * translation is flushed instead - except a page-size change that also
 * changes frame or attributes (a split under protect/replace, a table
 * replaced by a leaf), which Intel SDM Vol. 3A 4.10.2.3 wants done as
 * not-present, flush, write: those break on x86 too.
 */
#include "pt_op.h"

#ifdef PT_FIXED_NLEV
#define PT_NLEV(g) ((unsigned)PT_FIXED_NLEV)
#else
#define PT_NLEV(g) ((unsigned)(g)->nlev)
#endif

int PT_RUN(struct pt_op *o, uint64_t va, uint64_t last);

static inline uint64_t slot_size(const struct mmp_pt_geom *g, unsigned d)
{
    return (uint64_t)1 << g->shift[d];
}

static inline size_t gran(const struct mmp_pt_geom *g)
{
    return (size_t)1 << g->granule_shift;
}

/* End of the slot (size sz) holding va, clipped to last; *full when the
 * range covers the whole slot. */
static inline uint64_t slot_end(uint64_t va, uint64_t last, uint64_t sz, bool *full)
{
    uint64_t slast = va | (sz - 1);
    if (slast > last)
        slast = last;
    *full = !(va & (sz - 1)) && slast - va == sz - 1;
    return slast;
}

/* Extend a run of full slots ending at slast while the next one is full and
 * (unless tables_ok) not a table. */
static uint64_t stretch(const struct pt_op *o, unsigned d, const uint64_t *t, uint64_t slast,
                        uint64_t last, bool tables_ok)
{
    uint64_t sz = slot_size(o->g, d);
    while (slast != last && last - slast >= sz) {
        uint64_t e = pt_ld(&t[pt_idx(o->g, d, slast + 1)]);
        if (!tables_ok && pt_kind(o->g, d, e) == PT_TABLE)
            break;
        slast += sz;
    }
    return slast;
}

static bool leaf_fits(const struct pt_op *o, unsigned d)
{
    const struct mmp_pt_geom *g = o->g;
    if (!g->leaf_ok[d])
        return false;
    if (d + 1 < PT_NLEV(g) && (o->flags & OPF_NOBLOCK))
        return false;
    return (o->delta & (slot_size(g, d) - 1)) == 0;
}

/* Contiguous-run length this map may use at depth d (1 = none). */
static unsigned run_len(const struct pt_op *o, unsigned d)
{
    const struct mmp_pt_geom *g = o->g;
    if (!g->cont[d] || (o->flags & OPF_NOCONT))
        return 1;
    if (o->delta & ((slot_size(g, d) << g->cont[d]) - 1))
        return 1;
    return 1u << g->cont[d];
}

/* ---- prepare ------------------------------------------------------------ */

static long count_tables(const struct pt_op *o, unsigned d, const uint64_t *t, int virt,
                         uint64_t va, uint64_t last)
{
    const struct mmp_pt_geom *g = o->g;
    const struct pt *pt = o->pt;
    bool replace = (o->flags & OPF_REPLACE) != 0;
    if (d + 1 == PT_NLEV(g)) {
        if (o->kind != OP_MAP || replace || virt == V_INV)
            return 0;
        if (virt == V_LEAF)
            return -MMP_EEXIST;
        for (unsigned i = pt_idx(g, d, va), j = pt_idx(g, d, last); i <= j; i++)
            if (pt_ld(&t[i]) & g->valid_bit)
                return -MMP_EEXIST;
        return 0;
    }
    uint64_t sz = slot_size(g, d);
    bool fits = o->kind == OP_MAP && leaf_fits(o, d);
    long n = 0;
    for (;;) {
        bool full;
        uint64_t slast = slot_end(va, last, sz, &full);
        uint64_t e = virt == V_REAL ? pt_ld(&t[pt_idx(g, d, va)]) : 0;
        int k = virt == V_REAL ? pt_kind(g, d, e) : virt == V_INV ? PT_INV : PT_LEAF;
        long r = 0;
        if (o->kind == OP_MAP) {
            if (full && fits) {
                if (!replace && k == PT_LEAF)
                    return -MMP_EEXIST;
                if (!replace && k == PT_TABLE)
                    r = count_tables(o, d + 1, pt_child(pt, e), V_REAL, va, slast);
            } else if (k == PT_TABLE) {
                r = count_tables(o, d + 1, pt_child(pt, e), V_REAL, va, slast);
            } else if (k == PT_INV) {
                r = 1 + count_tables(o, d + 1, NULL, V_INV, va, slast);
            } else {
                if (!replace)
                    return -MMP_EEXIST;
                r = count_tables(o, d + 1, NULL, V_LEAF, va, slast);
                r = r < 0 ? r : r + 1;
            }
        } else if (!full && k == PT_TABLE) {
            r = count_tables(o, d + 1, pt_child(pt, e), V_REAL, va, slast);
        } else if (!full && k == PT_LEAF) {
            r = 1 + count_tables(o, d + 1, NULL, V_LEAF, va, slast);
        }
        if (r < 0)
            return r;
        n += r;
        if (slast == last)
            return n;
        va = slast + 1;
    }
}

static void unreserve(struct pt_op *o)
{
    struct pt *pt = o->pt;
    while (o->res) {
        uint64_t *p = (uint64_t *)o->res;
        uint64_t pa = o->res_pa;
        o->res = (void *)(uintptr_t)p[0];
        o->res_pa = p[1];
        pt->ops.free_table(pt->ops.ctx, p, pa, gran(o->g));
    }
    o->nres = 0;
}

static int reserve(struct pt_op *o, long n)
{
    struct pt *pt = o->pt;
    for (long i = 0; i < n; i++) {
        uint64_t pa = 0;
        uint64_t *p = (uint64_t *)pt->ops.alloc_table(pt->ops.ctx, gran(o->g), &pa);
        if (!p) {
            unreserve(o);
            return -MMP_ENOMEM;
        }
        p[0] = (uint64_t)(uintptr_t)o->res;
        p[1] = o->res_pa;
        o->res = p;
        o->res_pa = pa;
        o->nres++;
    }
    return 0;
}

/* ---- commit helpers ----------------------------------------------------- */

static uint64_t *take(struct pt_op *o, uint64_t *pa)
{
    uint64_t *p = (uint64_t *)o->res;
    *pa = o->res_pa;
    o->res = (void *)(uintptr_t)p[0];
    o->res_pa = p[1];
    o->nres--;
    o->pt->st.table_pages++;
    return p;
}

static void wrote(struct pt_op *o, uint64_t n, bool priv)
{
    if (priv)
        o->pt->st.entries_written += n;
    else
        pt_written(o->pt, n);
}

/* Unlinked subtree: every table page goes to the deferred-free list. */
static void defer_tree(struct pt_op *o, unsigned d, uint64_t *t, uint64_t pa)
{
    const struct mmp_pt_geom *g = o->g;
    if (d + 1 < PT_NLEV(g))
        for (size_t i = 0; i < pt_nent(g, d); i++) {
            uint64_t e = pt_ld(&t[i]);
            if (pt_kind(g, d, e) == PT_TABLE)
                defer_tree(o, d + 1, pt_child(o->pt, e), pt_tbl_oa(g, e));
        }
#if MMP_TEST_PLANT == 1 /* planted bug for the checks' own test: leak one table */
    static int leaked;
    if (!leaked++)
        return;
#endif
    mmp_core_pt_defer_free(o->pt, t, pa);
}

static bool tbl_empty(const struct mmp_pt_geom *g, unsigned d, const uint64_t *t)
{
    /* Only the writer stores into its tables (walkers just read), so plain
     * loads are exact here; OR-reducing them lets the compiler vectorise. */
    uint64_t acc = 0;
    for (size_t i = 0; i < pt_nent(g, d); i++)
        acc |= t[i];
    return !(acc & g->valid_bit);
}

/* Link a table built privately: its contents first, then the pointer. */
static void link_table(struct pt_op *o, unsigned d, uint64_t *t, unsigned i, uint64_t pa, bool priv)
{
    (void)d;
    if (priv) {
        pt_st(&t[i], o->g->tbl_tmpl | pt_oa_enc(o->g, pa));
    } else {
        mmp_arch_pt_publish();
        pt_st_release(&t[i], o->g->tbl_tmpl | pt_oa_enc(o->g, pa));
    }
    wrote(o, 1, priv);
}

static void map_tbl(struct pt_op *o, unsigned d, uint64_t *t, uint64_t va, uint64_t last, bool priv);
static void chg_tbl(struct pt_op *o, unsigned d, uint64_t *t, uint64_t va, uint64_t last, bool priv);

/* Break entries [lo, lo+n) of a live table (arm64): invalid, then the
 * barrier and flush at once. Nothing to do in private tables or on x86. */
static void break_entries(struct pt_op *o, unsigned d, uint64_t *t, unsigned lo, unsigned n,
                          uint64_t va_lo, bool priv)
{
    if (priv || !o->g->bbm)
        return;
    for (unsigned k = lo; k < lo + n; k++)
        pt_st(&t[k], 0);
    wrote(o, n, priv);
    mmp_core_pt_bbm(o->pt, va_lo, va_lo + n * slot_size(o->g, d) - 1, MMP_FLUSH_LEAF);
}

/*
 * Unfold the contiguous run holding entry i at depth d (its entries lose the
 * contiguous bit, the translations stay); with break-before-make when the
 * table is live. Entry i itself is left invalid when keep_i is false.
 */
static void unfold_run(struct pt_op *o, unsigned d, uint64_t *t, unsigned i, uint64_t va_i,
                       bool priv, bool keep_i)
{
    const struct mmp_pt_geom *g = o->g;
    unsigned R = 1u << g->cont[d], lo = i & ~(R - 1);
    uint64_t sz = slot_size(g, d), va_lo = va_i - (uint64_t)(i - lo) * sz;
    uint64_t e = pt_ld(&t[i]);
    uint64_t tm = e & ~g->oa_mask[d] & ~g->cont_bit;
    uint64_t pa_lo = pt_oa(g, d, e) - (uint64_t)(i - lo) * sz;
    break_entries(o, d, t, lo, R, va_lo, priv);
    uint64_t v = tm | pt_oa_enc(g, pa_lo); /* a run never crosses pt_oa_wrap */
    for (unsigned k = lo; k < lo + R; k++)
        if (k != i || keep_i)
            pt_st(&t[k], v + (uint64_t)(k - lo) * sz);
    wrote(o, R - (keep_i ? 0 : 1), priv);
    if (!priv && !g->bbm)
        mmp_core_pt_flush_add(o->pt, va_lo, va_lo + R * sz - 1, MMP_FLUSH_LEAF);
}

/*
 * Replace the leaf at t[i] (depth d, not the last level) by a table of
 * equivalent smaller leaves (contiguous runs where they hold), apply the
 * operation to [va, last] inside it while it is private, then link it.
 */
static void split(struct pt_op *o, unsigned d, uint64_t *t, unsigned i, uint64_t e, uint64_t va,
                  uint64_t last, bool priv)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t sz = slot_size(g, d), csz = slot_size(g, d + 1), base = va & ~(sz - 1);
    uint64_t cpa;
    uint64_t *c = take(o, &cpa);
    uint64_t ctm = g->fmt->child(g, d, e), pa0 = pt_oa(g, d, e);
    if (g->cont[d + 1] && !(o->pt->cfg_flags & MMP_PT_NO_CONT))
        ctm |= g->cont_bit; /* a block is aligned to every run below it */
    size_t n = pt_nent(g, d + 1);
    uint64_t v = ctm | pt_oa_enc(g, pa0); /* a block never crosses pt_oa_wrap */
    for (size_t k = 0; k < n; k++)
        c[k] = v + k * csz;
    o->pt->st.entries_written += n;
    uint64_t w0 = o->pt->st.entries_written;
    if (o->kind == OP_MAP)
        map_tbl(o, d + 1, c, va, last, true);
    else
        chg_tbl(o, d + 1, c, va, last, true);
    /* x86 (no BBM otherwise): a page-size change that also changes frame
     * or attributes must go not-present, flush, write (Intel SDM Vol. 3A
     * 4.10.2.3, TLB note 317080). A size-only change (the child repeats
     * the block: nothing was written into it) or an unmap split stays one
     * store plus a deferred flush, which Intel allows. */
    bool differs = o->kind != OP_UNMAP && o->pt->st.entries_written != w0;
    if (e & g->cont_bit) {
        unfold_run(o, d, t, i, base, priv, false);
    } else if (!priv && (g->bbm || differs)) {
        pt_st(&t[i], 0);
        wrote(o, 1, priv);
        mmp_core_pt_bbm(o->pt, base, base + sz - 1, MMP_FLUSH_LEAF);
    } else if (!priv) {
        mmp_core_pt_flush_add(o->pt, base, base + sz - 1, MMP_FLUSH_LEAF);
    }
    link_table(o, d, t, i, cpa, priv);
}

/* ---- map ---------------------------------------------------------------- */

/* Entries [k0, k1] are valid, non-contiguous leaves mapping pa0.. with tm. */
static bool run_matches(const struct pt_op *o, unsigned d, const uint64_t *t, unsigned k0,
                        unsigned k1, uint64_t pa0, uint64_t tm)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t sz = slot_size(g, d), m = ~g->oa_mask[d] & ~g->ign_mask;
    for (unsigned k = k0; k <= k1; k++, pa0 += sz) {
        uint64_t e = pt_ld(&t[k]);
        if (pt_kind(g, d, e) != PT_LEAF || (e & g->cont_bit) ||
            pt_oa(g, d, e) != pa0 || (e & m) != (tm & m))
            return false;
    }
    return true;
}

/*
 * Map replacing whatever [a, b] held (MMP_MAP_REPLACE): contiguous runs
 * straddling the ends are unfolded, valid entries and tables are broken
 * (break-before-make when live), replaced tables freed after the flush.
 */
static void replace_prepare(struct pt_op *o, unsigned d, uint64_t *t, unsigned a, unsigned b,
                            uint64_t va_a, bool priv)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t sz = slot_size(g, d);
    if (g->cont[d]) {
        uint64_t ea = pt_ld(&t[a]), eb = pt_ld(&t[b]);
        unsigned R = 1u << g->cont[d];
        if (pt_kind(g, d, ea) == PT_LEAF && (ea & g->cont_bit) && (a & (R - 1)))
            unfold_run(o, d, t, a, va_a, priv, true);
        eb = pt_ld(&t[b]);
        if (pt_kind(g, d, eb) == PT_LEAF && (eb & g->cont_bit) && ((b + 1) & (R - 1)))
            unfold_run(o, d, t, b, va_a + (uint64_t)(b - a) * sz, priv, true);
    }
    /* A table replaced by a leaf changes the page size and (in general)
     * the frame: break the whole range on x86 too (Intel SDM Vol. 3A
     * 4.10.2.3), so nothing in the flushed range still translates. Its
     * pages are unreachable, or inside this break, when defer_tree writes
     * the free-list link into them. */
    bool brk = g->bbm;
    for (unsigned k = a; k <= b && !brk; k++)
        brk = pt_kind(g, d, pt_ld(&t[k])) == PT_TABLE;
    uint64_t n = 0;
    bool any = false;
    unsigned flags = MMP_FLUSH_LEAF;
    for (unsigned k = a; k <= b; k++) {
        uint64_t e = pt_ld(&t[k]);
        int kind = pt_kind(g, d, e);
        if (kind == PT_INV)
            continue;
        any = true;
        if (brk) {
            pt_st(&t[k], 0);
            n++;
        }
        if (kind == PT_TABLE) {
            flags = 0;
            defer_tree(o, d + 1, pt_child(o->pt, e), pt_tbl_oa(g, e));
        }
    }
    if (!any)
        return;
    wrote(o, n, priv);
    uint64_t lo = va_a, hi = va_a + (uint64_t)(b - a + 1) * sz - 1;
    if (!priv && brk)
        mmp_core_pt_bbm(o->pt, lo, hi, flags);
    else if (!priv)
        mmp_core_pt_flush_add(o->pt, lo, hi, flags);
}

/* Write leaves for the full slots [a, b] of t (depth d), largest first. */
static void map_leaves(struct pt_op *o, unsigned d, uint64_t *t, unsigned a, unsigned b,
                       uint64_t va_a, bool priv)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t sz = slot_size(g, d), tm = o->tmpl[d];
    unsigned R = run_len(o, d), lo = a, hi = b;
    uint64_t pa_a = va_a + o->delta;
    if (o->flags & OPF_REPLACE)
        replace_prepare(o, d, t, a, b, va_a, priv);
    if (R > 1 && !(o->flags & OPF_NOFOLD)) {
        /* Fold runs this call completes (Linux contpte_try_fold): the
         * run's other entries must already map the matching addresses. */
        unsigned ra = a & ~(R - 1), rb = b | (R - 1);
        bool fa = ra < a && run_matches(o, d, t, ra, a - 1, pa_a - (uint64_t)(a - ra) * sz, tm);
        bool fb = rb > b &&
                  run_matches(o, d, t, b + 1, rb, pa_a + (uint64_t)(b - a + 1) * sz, tm);
        if ((a & ~(R - 1)) == (b & ~(R - 1)))
            fa = fb = (ra == a || fa) && (rb == b || fb) && (ra < a || rb > b);
        if (fa)
            lo = ra;
        if (fb)
            hi = rb;
        if ((fa || fb) && !priv && g->bbm) {
            uint64_t n = 0;
            for (unsigned k = lo; k < a; k++, n++)
                pt_st(&t[k], 0);
            for (unsigned k = b + 1; k <= hi; k++, n++)
                pt_st(&t[k], 0);
            wrote(o, n, priv);
            mmp_core_pt_bbm(o->pt, va_a - (uint64_t)(a - lo) * sz,
                            va_a + (uint64_t)(hi - a + 1) * sz - 1, MMP_FLUSH_LEAF);
        }
    }
    uint64_t pa = pa_a - (uint64_t)(a - lo) * sz, cont = g->cont_bit;
    /* v: the descriptor for pa. It steps by sz like pa, except where pa
     * crosses into a moved OA field (pt_oa_wrap): then it is re-encoded. */
    uint64_t wrap = pt_oa_wrap(g), v = tm | pt_oa_enc(g, pa);
    unsigned k = lo;
    while (k <= hi) {
        if (R > 1 && !(k & (R - 1)) && k + R - 1 <= hi) {
            /* A run is aligned to its size: it never crosses such a point. */
            for (unsigned m = 0; m < R; m++, v += sz)
                pt_st(&t[k + m], v | cont);
            pa += (uint64_t)R * sz;
            k += R;
#if MMP_TEST_PLANT == 2 /* planted bug: a contiguous run one entry short */
        } else if (R > 1 && !(k & (R - 1)) && k + R - 2 == hi) {
            for (; k <= hi; k++, pa += sz, v += sz)
                pt_st(&t[k], v | cont);
#endif
        } else {
            pt_st(&t[k], v);
            pa += sz;
            v += sz;
            k++;
        }
        if (!(pa & wrap))
            v = tm | pt_oa_enc(g, pa);
    }
    wrote(o, hi - lo + 1, priv);
}

/*
 * Folding of a block-sized region: when this call completed a table whose
 * entries all map one aligned region with this call's attributes, the
 * table becomes one block (break-before-make on the table entry; the
 * table page is freed after the flush).
 */
static void try_collapse(struct pt_op *o, unsigned d, uint64_t *t, unsigned i, uint64_t e,
                         uint64_t *c, uint64_t base, bool priv)
{
    const struct mmp_pt_geom *g = o->g;
    unsigned n = (unsigned)pt_nent(g, d + 1);
    uint64_t pa = base + o->delta, csz = slot_size(g, d + 1);
    uint64_t m = ~g->oa_mask[d + 1] & ~g->cont_bit & ~g->ign_mask;
    uint64_t tm = o->tmpl[d + 1] & m, lst = pt_ld(&c[n - 1]);
    if (pt_kind(g, d + 1, lst) != PT_LEAF || pt_oa(g, d + 1, lst) != pa + (n - 1) * csz)
        return; /* the common case: not complete */
    for (unsigned k = 0; k < n; k++) {
        uint64_t x = pt_ld(&c[k]);
        if (pt_kind(g, d + 1, x) != PT_LEAF || pt_oa(g, d + 1, x) != pa + k * csz ||
            (x & m) != tm)
            return;
    }
    uint64_t sz = slot_size(g, d);
    if (!priv && g->bbm) {
        pt_st(&t[i], 0);
        wrote(o, 1, priv);
        mmp_core_pt_bbm(o->pt, base, base + sz - 1, 0);
    } else if (!priv) {
        mmp_core_pt_flush_add(o->pt, base, base + sz - 1, 0);
    }
    pt_st(&t[i], o->tmpl[d] | pt_oa_enc(g, pa));
    wrote(o, 1, priv);
    /* x86: same translation, so the block goes in with one store (Intel
     * allows a size-only change); but a stale PDE cache may still walk c
     * until the flush and must find its valid entries: keep c untouched
     * (no free-list link written into it). */
    if (!priv && !g->bbm)
        mmp_core_pt_defer_keep(o->pt, c, pt_tbl_oa(g, e));
    else
        mmp_core_pt_defer_free(o->pt, c, pt_tbl_oa(g, e));
    /* The new block may complete a contiguous run of blocks. */
    unsigned R = run_len(o, d);
    if (R > 1) {
        unsigned ra = i & ~(R - 1);
        uint64_t va_ra = base - (uint64_t)(i - ra) * sz;
        if (run_matches(o, d, t, ra, ra + R - 1, va_ra + o->delta, o->tmpl[d])) {
            break_entries(o, d, t, ra, R, va_ra, priv);
            for (unsigned k = ra; k < ra + R; k++)
                pt_st(&t[k], o->tmpl[d] | g->cont_bit |
                                 pt_oa_enc(g, va_ra + o->delta + (k - ra) * sz));
            wrote(o, R, priv);
        }
    }
}

static void map_tbl(struct pt_op *o, unsigned d, uint64_t *t, uint64_t va, uint64_t last, bool priv)
{
    const struct mmp_pt_geom *g = o->g;
    if (d + 1 == PT_NLEV(g)) {
        map_leaves(o, d, t, pt_idx(g, d, va), pt_idx(g, d, last), va, priv);
        return;
    }
    bool replace = (o->flags & OPF_REPLACE) != 0, fits = leaf_fits(o, d);
    uint64_t sz = slot_size(g, d);
    for (;;) {
        bool full;
        uint64_t slast = slot_end(va, last, sz, &full);
        unsigned i = pt_idx(g, d, va);
        uint64_t e = pt_ld(&t[i]);
        int k = pt_kind(g, d, e);
        if (full && fits && (replace || k != PT_TABLE)) {
            /* The longest stretch of full slots that take leaves. */
            slast = stretch(o, d, t, slast, last, replace);
            map_leaves(o, d, t, i, pt_idx(g, d, slast), va, priv);
        } else if (k == PT_TABLE) {
            uint64_t *c = pt_child(o->pt, e);
            map_tbl(o, d + 1, c, va, slast, priv);
            if (fits && !(o->flags & OPF_NOFOLD))
                try_collapse(o, d, t, i, e, c, va & ~(sz - 1), priv);
        } else if (k == PT_INV) {
            uint64_t cpa;
            uint64_t *c = take(o, &cpa);
            __builtin_memset(c, 0, gran(g));
            map_tbl(o, d + 1, c, va, slast, true);
            link_table(o, d, t, i, cpa, priv);
        } else {
            split(o, d, t, i, e, va, slast, priv);
        }
        if (slast == last)
            return;
        va = slast + 1;
    }
}

/* ---- unmap / protect ---------------------------------------------------- */

/*
 * Full slots [a, b] of t at depth d hold leaves or nothing: unmap or
 * re-protect them, in chunks of CHUNK entries. Contiguous runs cut by the
 * range's ends are unfolded with break-before-make. Runs wholly inside keep
 * their bit: a permission change is written in place, because until the
 * flush a TLB may give either the old or the new permission for the run and
 * after it only the new one (what Linux's contpte_wrprotect_ptes relies on);
 * a memory-type change needs break-before-make (D8.16.1), chunk by chunk.
 */
static void chg_leaves(struct pt_op *o, unsigned d, uint64_t *t, unsigned a, unsigned b,
                       uint64_t va_a, bool priv)
{
    const struct mmp_pt_geom *g = o->g;
    uint64_t sz = slot_size(g, d);
    unsigned R = g->cont[d] ? 1u << g->cont[d] : 1;
    uint64_t old[CHUNK], nv[CHUNK];
    bool tm_bbm = false;
    uint64_t last_tm = ~0ull;
    for (unsigned x = a; x <= b;) {
        unsigned y = (x | (CHUNK - 1)) < b ? (x | (CHUNK - 1)) : b;
        unsigned lo = x, hi = y;
        if (R > 1) {
            uint64_t ex = pt_ld(&t[x]), ey = pt_ld(&t[y]);
            if (pt_kind(g, d, ex) == PT_LEAF && (ex & g->cont_bit))
                lo = x & ~(R - 1);
            if (pt_kind(g, d, ey) == PT_LEAF && (ey & g->cont_bit))
                hi = y | (R - 1);
        }
        bool straddle = false, bbm = false, changed = false;
        for (unsigned k = lo; k <= hi; k++) {
            uint64_t e = old[k - lo] = pt_ld(&t[k]), v = e;
            if (e & g->valid_bit) {
                bool inside = k >= a && k <= b;
                bool cut = (e & g->cont_bit) && ((k & ~(R - 1)) < a || (k | (R - 1)) > b);
                if (cut)
                    straddle = true;
                if (!inside) {
                    v = e & ~g->cont_bit;
                } else if (o->kind == OP_UNMAP) {
                    v = 0;
                } else {
                    uint64_t tm = e & ~g->oa_mask[d] & ~g->cont_bit;
                    if (tm != last_tm) { /* decode once per distinct attribute set */
                        last_tm = tm;
                        tm_bbm = g->fmt->needs_bbm(g->fmt->attrs(g, d, e), o->attrs);
                    }
                    bbm |= tm_bbm;
                    v = (e & (g->oa_mask[d] | (cut ? 0 : g->cont_bit))) | o->tmpl[d];
                    if ((v & ~g->ign_mask) == (e & ~g->ign_mask))
                        v = e;
                }
            }
            nv[k - lo] = v;
            if (v != e)
                changed = true;
        }
        if (changed && !priv) {
            uint64_t va_lo = va_a - ((uint64_t)a - lo) * sz;
            uint64_t va_hi = va_a + ((uint64_t)hi - a + 1) * sz - 1;
            if (g->bbm && (straddle || bbm)) {
                uint64_t n = 0;
                for (unsigned k = lo; k <= hi; k++)
                    if (old[k - lo] & g->valid_bit) {
                        pt_st(&t[k], 0);
                        n++;
                    }
                wrote(o, n, priv);
                mmp_core_pt_bbm(o->pt, va_lo, va_hi, MMP_FLUSH_LEAF);
                for (unsigned k = 0; k < CHUNK && lo + k <= hi; k++)
                    old[k] = 0; /* everything below is rewritten */
            } else {
                mmp_core_pt_flush_add(o->pt, va_lo, va_hi, MMP_FLUSH_LEAF);
            }
        }
        if (changed) {
            uint64_t n = 0;
            for (unsigned k = lo; k <= hi; k++)
                if (nv[k - lo] != old[k - lo]) {
                    pt_st(&t[k], nv[k - lo]);
                    n++;
                }
            wrote(o, n, priv);
        }
        if (y == b)
            break;
        x = y + 1;
    }
}

static void chg_tbl(struct pt_op *o, unsigned d, uint64_t *t, uint64_t va, uint64_t last, bool priv)
{
    const struct mmp_pt_geom *g = o->g;
    if (d + 1 == PT_NLEV(g)) {
        chg_leaves(o, d, t, pt_idx(g, d, va), pt_idx(g, d, last), va, priv);
        return;
    }
    uint64_t sz = slot_size(g, d);
    for (;;) {
        bool full;
        uint64_t slast = slot_end(va, last, sz, &full);
        unsigned i = pt_idx(g, d, va);
        uint64_t e = pt_ld(&t[i]);
        int k = pt_kind(g, d, e);
        uint64_t base = va & ~(sz - 1);
        if (k == PT_TABLE) {
            uint64_t *c = pt_child(o->pt, e);
            bool keep = (o->pt->cfg_flags & MMP_PT_KEEP_TABLES) != 0;
            bool drop = full && o->kind == OP_UNMAP && !keep;
            if (!drop) {
                chg_tbl(o, d + 1, c, va, slast, priv);
                drop = o->kind == OP_UNMAP && !keep && tbl_empty(g, d + 1, c);
            }
            if (drop) {
                /* Unlink; the pages go after the flush that covers them. */
                pt_st(&t[i], 0);
                wrote(o, 1, priv);
                defer_tree(o, d + 1, c, pt_tbl_oa(g, e));
                mmp_core_pt_flush_add(o->pt, base, base + sz - 1, 0);
            }
        } else if (k == PT_LEAF && !full) {
            split(o, d, t, i, e, va, slast, priv);
        } else if (full) {
            slast = stretch(o, d, t, slast, last, false);
            chg_leaves(o, d, t, i, pt_idx(g, d, slast), va, priv);
        }
        if (slast == last)
            return;
        va = slast + 1;
    }
}

/* ---- public calls ------------------------------------------------------- */

int PT_RUN(struct pt_op *o, uint64_t va, uint64_t last)
{
    long n = count_tables(o, 0, o->pt->root, V_REAL, va, last);
    if (n < 0)
        return (int)n;
    int rc = reserve(o, n);
    if (rc)
        return rc;
    /* A map over a range whose flush a lazy section deferred (unmap, then
     * map again) would write valid entries while the old translations may
     * still be cached: emit the pending flush first (break-before-make is
     * never deferred). */
    if (o->kind == OP_MAP && pt_pending_in(o->pt, va, last))
        mmp_core_pt_sync(o->pt);
    if (o->kind == OP_MAP)
        map_tbl(o, 0, o->pt->root, va, last, false);
    else
        chg_tbl(o, 0, o->pt->root, va, last, false);
    unreserve(o); /* empty unless the two passes disagree */
    mmp_core_pt_call_end(o->pt);
    return 0;
}
