/* SPDX-License-Identifier: MIT */
/*
 * Dirty logging and access tracking (include/mmport/track.h).
 *
 * Every pass is a visitor of the one walker: one leaf transform, "where
 * (e & chk) == val, store (e & ~clr) | set, report the pages", with the
 * format's tracking bits (mmp_pt_geom::trk_*) choosing chk/val/clr/set:
 *   harvest, D model     D set          -> clear D
 *   harvest, mark model  marked+writable -> write-protect
 *   start, D model       D set          -> clear D (no report)
 *   start, mark model    writable       -> mark + write-protect
 *   stop, software mark  marked         -> unmark + writable
 *   young                A set          -> clear A
 * Each store is a compare-and-swap (the MMU, or a fault handler on another
 * thread, may set bits meanwhile); the changed range goes through the
 * engine's break-before-make primitive (the format's rule: a permission or
 * A/D change needs none) and so to the one flush path, core/pt_batch.c.
 * Splitting (start) is the engine's OP_SPLIT; folding back (stop) is the
 * engine's own fold, reached by re-mapping one page of a region that can
 * fold with the translation it already has.
 */
#include <mmport/track.h>

#include "pt_op.h"
#include "pt_reason.h"
#include "pt_state.h"
#include "pt_walk.h"

struct trk {
    struct pt_op op; /* for mmp_core_pt_break */
    uint64_t va0, last;
    uint64_t *bm; /* NULL: no report */
    uint64_t count;
    /* the last contiguous run reported: the walk shows a run of blocks one
     * entry at a time, and its pages are reported (and counted) once */
    uint64_t run_va;
    bool run_seen;
    uint64_t chk, val, clr, set;
    /* the scan's filter (trk_run): a group of entries can hold a match
     * only if (fold ^ flip) & mm, fold the OR (or with neg the AND) of
     * the group */
    uint64_t flip, mm;
    bool neg;
    /* the format's rule for the last set of non-address bits seen, at
     * depth tm_d (whose non-address bits are tmask) */
    bool asked, tm_bbm;
    unsigned tm_d;
    uint64_t tm, tmask;
};

static inline uint64_t slot_sz(const struct mmp_pt_geom *g, unsigned d)
{
    return (uint64_t)1 << g->shift[d];
}

static bool cas(uint64_t *p, uint64_t old, uint64_t nw)
{
    return AO_compare_and_swap_full((volatile AO_t *)(void *)p, (AO_t)old, (AO_t)nw) != 0;
}

/* Page i of the range (bit i of the bitmap). */
static inline void report1(struct trk *w, uint64_t i)
{
    w->bm[i >> 6] |= 1ull << (i & 63);
    w->count++;
}

/* Report the pages of [lo, hi] inside the range. */
static void report(struct trk *w, uint64_t lo, uint64_t hi)
{
    if (!w->bm)
        return;
    if (lo < w->va0)
        lo = w->va0;
    if (hi > w->last)
        hi = w->last;
    unsigned gs = w->op.g->granule_shift;
    uint64_t i = (lo - w->va0) >> gs, j = (hi - w->va0) >> gs;
    w->count += j - i + 1;
    for (; i <= j && (i & 63); i++)
        w->bm[i >> 6] |= 1ull << (i & 63);
    for (; i + 63 <= j; i += 64)
        w->bm[i >> 6] = ~0ull;
    for (; i <= j; i++)
        w->bm[i >> 6] |= 1ull << (i & 63);
}

/* The format's rule for the transform of e, asked once per distinct set of
 * non-address bits (an attribute change of a valid leaf; a tracking bit
 * is no attribute, so no format asks for a break today). */
static inline bool rule(struct trk *w, unsigned d, uint64_t e)
{
    const struct mmp_pt_geom *g = w->op.g;
    if (__builtin_expect(d != w->tm_d, 0)) {
        w->asked = false;
        w->tm_d = d;
        w->tmask = ~g->oa_mask[d];
    }
    uint64_t tm = e & w->tmask;
    if (__builtin_expect(!w->asked || tm != w->tm, 0)) {
        w->asked = true;
        w->tm = tm;
        w->tm_bbm = g->fmt->needs_bbm(g, d, e, (e & ~w->clr) | w->set, PT_CHG_ATTR);
    }
    return w->tm_bbm;
}

/* Transform slot k of t (depth d, its leaf at va_k), which was read as e
 * and matched: in place with a compare-and-swap while it still matches
 * (the MMU, or a fault handler on another thread, may set bits
 * meanwhile), or, where the rule says so, broken first (the engine's
 * primitive: invalid, barrier, flush), then written. True when stored. */
static inline __attribute__((always_inline)) bool apply(struct trk *w, unsigned d, uint64_t *t,
                                                       unsigned k, uint64_t e, uint64_t va_k)
{
    if (pt_kind(w->op.g, d, e) != PT_LEAF)
        return false;
    if (__builtin_expect(!rule(w, d, e), 1)) {
        while (!cas(&t[k], e, (e & ~w->clr) | w->set)) {
            e = pt_ld(&t[k]);
            /* locked: a shared call is changing it and keeps its state,
             * which a later pass reports */
            if ((e & w->chk) != w->val || pt_locked(w->op.g, e) ||
                pt_kind(w->op.g, d, e) != PT_LEAF)
                return false;
        }
        return true;
    }
    mmp_core_pt_break(&w->op, d, t, k, k, va_k, true);
    pt_st(&t[k], (e & ~w->clr) | w->set);
    return true;
}

/* Slots [lo, hi] changed in place: their flush, deferred to the pass's end
 * (the engine's primitive without a break, so the one batching layer). */
static void changed(struct trk *w, unsigned d, uint64_t *t, unsigned lo, unsigned hi,
                    uint64_t va_lo)
{
    mmp_core_pt_break(&w->op, d, t, lo, hi, va_lo, false);
}

/* A contiguous run holding slot k: its state is the OR of its entries (the
 * MMU may update any one of them). Its pages in the range are reported;
 * a run the range covers whole has its entries in [a, b] re-armed, one the
 * range cuts none (its state also stands for its pages outside the range,
 * which a later pass must still see). Returns the last slot of the run
 * inside [a, b]. */
static unsigned run(struct trk *w, struct pt_slot *s, unsigned k, unsigned a, unsigned b,
                    uint64_t base)
{
    const struct mmp_pt_geom *g = w->op.g;
    unsigned d = s->d, R = 1u << g->cont[d], lo = k & ~(R - 1), hi = lo + R - 1;
    uint64_t sz = slot_sz(g, d);
    bool hit = false;
    for (unsigned m = lo; m <= hi; m++)
        hit |= (pt_ld(&s->t[m]) & w->chk) == w->val;
    unsigned x = lo > a ? lo : a, y = hi < b ? hi : b;
    /* (the run may begin before slot a, the span's first) */
    uint64_t rva = base + (uint64_t)lo * sz - (uint64_t)a * sz;
    if (hit && (!w->run_seen || w->run_va != rva)) {
        report(w, rva, rva + (uint64_t)R * sz - 1);
        w->run_seen = true;
        w->run_va = rva;
    }
    if (hit && rva >= w->va0 && rva + (uint64_t)R * sz - 1 <= w->last) {
        bool st = false;
        for (unsigned m = x; m <= y; m++) {
            uint64_t e = pt_ld(&s->t[m]);
            if ((e & w->chk) == w->val)
                st |= apply(w, d, s->t, m, e, base + (uint64_t)(m - a) * sz);
        }
        if (st)
            changed(w, d, s->t, x, y, base + (uint64_t)(x - a) * sz);
    }
    return y;
}

/* The OR of the eight entries at q, or with neg their AND. */
static inline __attribute__((always_inline)) uint64_t fold8(const uint64_t *q, bool neg)
{
    uint64_t e0 = pt_ld(&q[0]), e1 = pt_ld(&q[1]), e2 = pt_ld(&q[2]), e3 = pt_ld(&q[3]);
    uint64_t e4 = pt_ld(&q[4]), e5 = pt_ld(&q[5]), e6 = pt_ld(&q[6]), e7 = pt_ld(&q[7]);
    if (neg)
        return e0 & e1 & e2 & e3 & e4 & e5 & e6 & e7;
    return e0 | e1 | e2 | e3 | e4 | e5 | e6 | e7;
}

/* One span of one table as scan() sees it. */
struct spn {
    uint64_t *t;
    unsigned d, a, b;
    unsigned lo, hi; /* the slots changed in place (lo > b: none) */
    uint64_t sz, base; /* slot a maps base */
    bool page;         /* a slot is one page, inside the range: bit i0 + (k - a) */
    uint64_t i0;
};

/* Slot k of the span, read as e, matched: transform it, report it. A
 * block the range cuts is only reported: its state also stands for its
 * pages outside the range, which a later pass must still see. */
static inline __attribute__((always_inline)) void hit(struct trk *w, struct spn *c, unsigned k,
                                                      uint64_t e)
{
    uint64_t va = c->base + (uint64_t)(k - c->a) * c->sz;
    if (!c->page && (va < w->va0 || va + c->sz - 1 > w->last)) {
        if (pt_kind(w->op.g, c->d, e) == PT_LEAF)
            report(w, va, va + c->sz - 1);
        return;
    }
    if (!apply(w, c->d, c->t, k, e, va))
        return;
    if (w->bm && c->page)
        report1(w, c->i0 + (k - c->a));
    else
        report(w, va, va + c->sz - 1); /* (a block: clipped to the range; no bitmap: nothing) */
    c->lo = c->lo > c->b ? k : c->lo;
    c->hi = k;
}

/* Bit j set for each of the eight entries at q that matches. */
static inline __attribute__((always_inline)) unsigned match8(const uint64_t *q, uint64_t chk,
                                                             uint64_t val)
{
    return (unsigned)((pt_ld(&q[0]) & chk) == val) | (unsigned)((pt_ld(&q[1]) & chk) == val) << 1 |
           (unsigned)((pt_ld(&q[2]) & chk) == val) << 2 |
           (unsigned)((pt_ld(&q[3]) & chk) == val) << 3 |
           (unsigned)((pt_ld(&q[4]) & chk) == val) << 4 |
           (unsigned)((pt_ld(&q[5]) & chk) == val) << 5 |
           (unsigned)((pt_ld(&q[6]) & chk) == val) << 6 |
           (unsigned)((pt_ld(&q[7]) & chk) == val) << 7;
}

/*
 * Slots [s->i, span_last] of a table: leaves (or holes; tables are
 * descended by the walker). The harvest's hot path: aligned groups of
 * eight entries, one fold and one branch each (the filter of trk_run);
 * only a group that can hold a match is looked at further, a page's
 * report is one bit, and the flush of what changed is recorded once per
 * table.
 */
static inline __attribute__((always_inline)) void scan(struct trk *w, struct pt_slot *s, bool neg)
{
    const struct mmp_pt_geom *g = w->op.g;
    const uint64_t chk = w->chk, val = w->val, cb = g->cont_bit, flip = w->flip, mm = w->mm;
    struct spn c;
    c.t = s->t;
    c.d = s->d;
    c.a = s->i;
    c.b = pt_idx(g, c.d, s->span_last);
    c.lo = c.b + 1;
    c.hi = 0;
    c.sz = slot_sz(g, c.d);
    c.base = s->va & ~(c.sz - 1);
    c.page = c.sz == (uint64_t)1 << g->granule_shift;
    c.i0 = c.page ? (c.base - w->va0) >> g->granule_shift : 0;
    uint64_t *t = c.t;
    unsigned b = c.b;
    for (unsigned k = c.a;;) {
        if (!(k & 7)) {
            uint64_t f = 0;
            while (k + 7 <= b && __builtin_expect(!((f = fold8(&t[k], neg) ^ flip) & mm), 1))
                k += 8;
            if (k + 7 <= b && !(f & cb)) {
                /* a group without runs: its matching entries, a bit each */
                for (unsigned m = match8(&t[k], chk, val); m; m &= m - 1) {
                    unsigned x = k + (unsigned)__builtin_ctz(m);
                    hit(w, &c, x, pt_ld(&t[x]));
                }
                k += 8;
                continue;
            }
        }
        if (k > b)
            break;
        /* the unaligned ends, and groups in runs: entry by entry */
        unsigned end = (k | 7) < b ? (k | 7) : b;
        for (; k <= end; k++) {
            uint64_t e = pt_ld(&t[k]);
            if (e & cb) {
                if (pt_kind(g, c.d, e) == PT_LEAF) {
                    k = run(w, s, k, c.a, b, c.base);
                    end = k > end ? k : end;
                }
            } else if ((e & chk) == val) {
                hit(w, &c, k, e);
            }
        }
    }
    if (c.lo <= b)
        changed(w, c.d, t, c.lo, c.hi, c.base + (uint64_t)(c.lo - c.a) * c.sz);
}

static int trk_span(void *ctx, struct pt_slot *s)
{
    struct trk *w = (struct trk *)ctx;
    if (w->neg)
        scan(w, s, true);
    else
        scan(w, s, false);
    return 0;
}

static const struct pt_visitor trk_visitor = {.span = trk_span};
/* Beside shared calls (MMP_PT_SHARED): entries loaded with acquire. */
static const struct pt_visitor trk_visitor_sh = {.flags = PT_V_ACQUIRE, .span = trk_span};

static int trk_run(struct trk *w, struct pt *pt, uint64_t va, uint64_t last)
{
    w->op.pt = pt;
    w->op.g = &pt->g;
    w->op.st = &pt->st;
    w->op.kind = OP_PROT;
    w->va0 = va;
    w->last = last;
    w->asked = false;
    w->tm_d = ~0u;
    /* The scan's filter. A match has the lowest bit chk tests (fm) as val
     * has it: set, the OR of a group that holds a match has it too;
     * clear, the AND of the group lacks it. A contiguous run shows as
     * cont_bit in either: runs are aligned and at least 16 entries long
     * (Arm ARM D8.6.1), so an aligned group of eight is all in one run
     * or in none. */
    uint64_t fm = w->chk & (0 - w->chk);
    w->neg = !(w->val & fm);
    w->flip = w->neg ? fm : 0;
    w->mm = fm | pt->g.cont_bit;
    if (pt->cfg_flags & MMP_PT_SHARED)
        return pt_walk(&trk_visitor_sh, w, pt, pt->g.nlev, 0, pt->root, false, va, last);
    return pt_walk(&trk_visitor, w, pt, pt->g.nlev, 0, pt->root, false, va, last);
}

/* Transforms. A writable leaf: (e & trk_w) == trk_w_on; write-protecting
 * flips trk_w (AP[2] set, or W / S2AP[1] clear). */
static void t_protect(const struct mmp_pt_geom *g, struct trk *w, uint64_t chk, uint64_t val,
                      uint64_t set)
{
    w->chk = chk;
    w->val = val;
    w->clr = g->trk_w;
    w->set = (g->trk_w ^ g->trk_w_on) | set;
}

static void t_harvest(const struct mmp_pt_geom *g, struct trk *w)
{
    if (g->trk_d) {
        w->chk = w->val = w->clr = g->trk_d;
        w->set = 0;
    } else {
        t_protect(g, w, g->trk_m | g->trk_w, g->trk_m | g->trk_w_on, 0);
    }
}

static int check(struct mmp_pt *p, uint64_t va, uint64_t size, uint64_t *last)
{
    if (!pt_live(p))
        return -MMP_EINVAL;
    return mmp_core_pt_check_va(pt_of(p), va, size, last);
}

/* The end of a tracking pass: the flush is not deferred by a lazy section
 * (the report is complete only after it). */
static void pass_end(struct pt *pt)
{
    if (pt->barrier_pending || pt->nranges || pt->flush_all || pt->dfree || pt->nkept)
        mmp_core_pt_sync(pt);
}

static int bitmap_pass(struct mmp_pt *p, uint64_t va, uint64_t size, uint64_t *bitmap,
                       uint64_t *count, bool young)
{
    uint64_t last;
    int rc = check(p, va, size, &last);
    if (rc)
        return rc;
    struct pt *pt = pt_of(p);
    if (!bitmap)
        return mmp_core_pt_fail(pt, -MMP_EINVAL, MMP_PT_RULE_NULL_ARG, 0, 0, 0);
    const struct mmp_pt_geom *g = &pt->g;
    if (young && !g->trk_a)
        return mmp_core_pt_fail(pt, -MMP_ENOTSUP, MMP_PT_RULE_TRACK_MODE, 0, 0, 0);
    uint64_t n = size >> g->granule_shift;
    __builtin_memset(bitmap, 0, ((n + 63) / 64) * 8);
    struct trk w;
    __builtin_memset(&w, 0, sizeof w);
    w.bm = bitmap;
    if (young) {
        w.chk = w.val = w.clr = g->trk_a;
    } else {
        t_harvest(g, &w);
    }
    bool epoch = pt_reader_enter(pt); /* beside shared calls */
    rc = trk_run(&w, pt, va, last);
    pt_reader_leave(epoch);
    pass_end(pt);
    if (count)
        *count = w.count;
    return rc < 0 ? mmp_core_pt_fail_op(pt, rc, va, last) : rc;
}

int mmp_pt_track_harvest(struct mmp_pt *p, uint64_t va, uint64_t size, uint64_t *bitmap,
                         uint64_t *count)
{
    return bitmap_pass(p, va, size, bitmap, count, false);
}

int mmp_pt_test_clear_young(struct mmp_pt *p, uint64_t va, uint64_t size, uint64_t *bitmap,
                            uint64_t *count)
{
    return bitmap_pass(p, va, size, bitmap, count, true);
}

static int arm(struct pt *pt, uint64_t lo, uint64_t hi);

/* Split [lo, hi] down to the granule (its flush deferred with the call's). */
static int split(struct pt *pt, uint64_t lo, uint64_t hi)
{
    struct pt_op o;
    __builtin_memset(&o, 0, sizeof o);
    o.pt = pt;
    o.g = &pt->g;
    o.st = &pt->st;
    o.kind = OP_SPLIT;
    return mmp_core_pt_run(&o, lo, hi);
}

/*
 * Arm [lo, hi], split before. The splits changed only sizes; the arm
 * changes permissions (software tracking, arm64 DBM), which must not share
 * a flush window with a size change (Intel's TLB note; Arm ARM D8.16): one
 * flush between. Where the arm only clears the MMU's D (x86, EPT with
 * MMP_PT_TRACK_HW) both share one flush: a write until then, through a
 * TLB entry that still held a block, is one made before tracking began,
 * and one that set D in a table entry goes to its pages after the flush.
 */
static int arm_split(struct pt *pt, uint64_t lo, uint64_t hi)
{
    if (!pt->g.trk_d)
        pass_end(pt);
    int rc = arm(pt, lo, hi);
    mmp_core_pt_stale_d(pt, lo, hi);
    return rc;
}

/* Arm [lo, hi] (a function of its own: its frame and the split's are not
 * on the stack at once). */
static __attribute__((noinline)) int arm_only(struct pt *pt, uint64_t lo, uint64_t hi)
{
    const struct mmp_pt_geom *g = &pt->g;
    struct trk w;
    __builtin_memset(&w, 0, sizeof w);
    if (g->trk_d) {
        t_harvest(g, &w);
    } else {
        t_protect(g, &w, g->trk_w, g->trk_w_on, g->trk_m);
    }
    return trk_run(&w, pt, lo, hi);
}

static int arm(struct pt *pt, uint64_t lo, uint64_t hi)
{
    int rc = arm_only(pt, lo, hi);
    /* flushed before start returns, lazy section or not: a write through a
     * TLB entry still writable (or caching D = 1) after it would be lost */
    pass_end(pt);
    return rc;
}

int mmp_pt_track_start(struct mmp_pt *p, uint64_t va, uint64_t size,
                       const struct mmp_track_opts *opts)
{
    uint64_t last;
    int rc = check(p, va, size, &last);
    if (rc)
        return rc;
    struct pt *pt = pt_of(p);
    uint64_t chunk = opts && opts->chunk ? opts->chunk : MMP_TRACK_DEFAULT_CHUNK;
    uint64_t gm = ((uint64_t)1 << pt->g.granule_shift) - 1;
    if (chunk & gm)
        return mmp_core_pt_fail(pt, -MMP_EINVAL, MMP_PT_RULE_TRACK_CHUNK, chunk, 0, gm + 1);
    uint64_t done = 0;
    /* Without a yield callback nothing needs a chunk flushed before the
     * next one: one flush window for the whole range (two where the arm
     * changes permissions: arm_split); with hardware A/D each chunk is
     * armed right after its split. With a yield callback each chunk is
     * flushed before it runs. */
    bool one_window = !(opts && opts->yield);
    if (one_window)
        pt->lazy_depth++; /* the splits' flushes wait for the arm's */
    for (uint64_t lo = va;;) {
        uint64_t hi = last - lo >= chunk ? lo + chunk - 1 : last;
        rc = split(pt, lo, hi);
        if (rc == 0 && !one_window)
            rc = arm_split(pt, lo, hi);
        else if (rc == 0 && pt->g.trk_d) /* (while the chunk's tables are in the cache) */
            rc = arm_only(pt, lo, hi);
        if (rc) {
            mmp_core_pt_fail_op(pt, rc, lo, hi);
            break;
        }
        done = hi - va + 1;
        if (hi == last)
            break;
        if (opts && opts->yield && opts->yield(opts->yield_arg, done, size)) {
            rc = mmp_core_pt_fail(pt, -MMP_EINTR, MMP_PT_RULE_CANCELLED, done, 0, 0);
            break;
        }
        lo = hi + 1;
    }
    if (one_window) {
        pt->lazy_depth--;
        if (done && pt->g.trk_d) { /* armed already: the one flush, then D */
            pass_end(pt);
            mmp_core_pt_stale_d(pt, va, va + done - 1);
        } else if (done) { /* what was split is armed (after -ENOMEM: the prefix) */
            (void)arm_split(pt, va, va + done - 1);
        }
    }
    if (opts && opts->done)
        *opts->done = done;
    return rc;
}

/* ---- stop: disarm, then fold back --------------------------------------- */

/* Where the walk ends up for one address: the table and slot. */
struct find {
    uint64_t *t;
    unsigned d, i;
};

static int find_span(void *ctx, struct pt_slot *s)
{
    struct find *f = (struct find *)ctx;
    f->t = s->t;
    f->d = s->d;
    f->i = s->i;
    return 1;
}

static const struct pt_visitor find_visitor = {.flags = PT_V_ACQUIRE, .span = find_span};

static struct find find(const struct pt *pt, uint64_t va)
{
    struct find f = {NULL, 0, 0};
    pt_walk(&find_visitor, &f, pt, pt->g.nlev, 0, pt->root, false, va, va);
    return f;
}

/*
 * Entries [k0, k0 + n) of leaf table t (depth d) map one output range
 * starting at an n * sz aligned address with identical attributes (their
 * tracking state aside), none contiguous: *pa, *attrs describe it, and
 * *re is the entry to re-map: one whose state (core/pt_state.h) the
 * others' OR already holds, so the re-map, which may write it anew, loses
 * nothing of the OR the fold gives the block or run (at most two entries
 * hold a state bit alone, and n >= 16); if one has the state a new leaf
 * starts with (software tracking presets the access flag), that one, so
 * that the re-map adds nothing either.
 */
static bool uniform(const struct pt *pt, unsigned d, const uint64_t *t, unsigned k0, unsigned n,
                    uint64_t *pa, uint32_t *attrs, unsigned *re)
{
    const struct mmp_pt_geom *g = &pt->g;
    uint64_t sz = slot_sz(g, d), m = ~g->oa_mask[d] & ~g->ign_mask;
    uint64_t e0 = pt_ld(&t[k0]), pa0 = pt_oa(g, d, e0);
    unsigned once = 0, more = 0; /* state bits held by one entry, by more */
    if (pt_kind(g, d, e0) != PT_LEAF || (pa0 & (n * sz - 1)))
        return false;
    for (unsigned k = 0; k < n; k++) {
        uint64_t e = pt_ld(&t[k0 + k]);
        if (pt_kind(g, d, e) != PT_LEAF || (e & g->cont_bit) || pt_oa(g, d, e) != pa0 + k * sz ||
            (e & m) != (e0 & m))
            return false;
        unsigned st = pt_st_of(g, e);
        more |= once & st;
        once |= st;
    }
    once &= ~more;
    *attrs = mmp_core_pt_attrs(g, d, e0);
    uint64_t tm = 0;
    unsigned fresh = mmp_core_pt_leaf(g, d, *attrs, &tm) ? 0 : pt_st_of(g, tm);
    *re = k0 + n;
    for (unsigned k = k0; k < k0 + n; k++) {
        unsigned st = pt_st_of(g, pt_ld(&t[k]));
        if (st & once)
            continue;
        if (*re == k0 + n)
            *re = k;
        if ((st & fresh) == fresh) {
            *re = k;
            break;
        }
    }
    if (*re == k0 + n) /* (the state changed meanwhile) */
        *re = k0;
    *pa = pa0;
    return true;
}

/* Fold what can be folded in [lo, hi], one last-level table's span: the
 * engine folds a region whose remaining pages already match when a map
 * completes it, so re-mapping one page with its own translation is the
 * request (a size-only change where the format allows, Arm's
 * break-before-make where not). */
static void fold(struct mmp_pt *p, uint64_t lo, uint64_t hi)
{
    struct pt *pt = pt_of(p);
    const struct mmp_pt_geom *g = &pt->g;
    unsigned d = g->nlev - 1;
    uint64_t sz = slot_sz(g, d), pa;
    uint32_t attrs;
    unsigned re;
    struct find f = find(pt, lo);
    if (!f.t || f.d != d)
        return; /* a block or a hole */
    unsigned n = (unsigned)pt_nent(g, d);
    uint64_t base = lo - (uint64_t)f.i * sz;
    /* (an exclusive call whatever the table's default: stop is one) */
    const struct mmp_pt_call ex = {.flags = MMP_CALL_EXCLUSIVE};
    if (lo == base && hi == base + n * sz - 1 && g->leaf_ok[d - 1] &&
        !(pt->cfg_flags & MMP_PT_NO_BLOCKS) && uniform(pt, d, f.t, 0, n, &pa, &attrs, &re)) {
        mmp_pt_map_call(p, &ex, lo + (uint64_t)re * sz, pa + (uint64_t)re * sz, sz, attrs,
                        MMP_MAP_REPLACE);
        return;
    }
    if (!g->cont[d] || (pt->cfg_flags & MMP_PT_NO_CONT))
        return;
    unsigned R = 1u << g->cont[d];
    for (unsigned k = (f.i + R - 1) & ~(R - 1); base + (uint64_t)(k + R) * sz - 1 <= hi; k += R) {
        /* (re-read: the previous fold may have freed nothing here, but a
         * run's table stays the same one) */
        if (uniform(pt, d, f.t, k, R, &pa, &attrs, &re))
            mmp_pt_map_call(p, &ex, base + (uint64_t)re * sz, pa + (uint64_t)(re - k) * sz, sz,
                            attrs, MMP_MAP_REPLACE);
    }
}

/* Software marks off (a function of its own: its frame is not on the
 * stack while the folds below map). */
static __attribute__((noinline)) int unmark(struct pt *pt, uint64_t va, uint64_t last)
{
    const struct mmp_pt_geom *g = &pt->g;
    struct trk w;
    __builtin_memset(&w, 0, sizeof w);
    /* marked -> unmarked, writable and accessed: untracked again, so no
     * access may fault (an MMU without hardware AF would raise an access
     * flag fault nobody handles after stop; a fold gives the block the OR) */
    w.chk = w.val = g->trk_m;
    w.clr = g->trk_m | g->trk_w;
    w.set = g->trk_w_on | g->trk_a;
    int rc = trk_run(&w, pt, va, last);
    mmp_core_pt_call_end(pt);
    return rc;
}

int mmp_pt_track_stop(struct mmp_pt *p, uint64_t va, uint64_t size)
{
    uint64_t last;
    int rc = check(p, va, size, &last);
    if (rc)
        return rc;
    struct pt *pt = pt_of(p);
    const struct mmp_pt_geom *g = &pt->g;
    if (!g->trk_hw && (rc = unmark(pt, va, last)) != 0)
        return mmp_core_pt_fail_op(pt, rc, va, last);
    if ((pt->cfg_flags & MMP_PT_NO_FOLD) || g->nlev < 2)
        return 0;
    /* One last-level table's span at a time (its table may be folded
     * away), all in one flush window: each fold changes only the size of
     * its own region, which no other fold's pending flush covers, and the
     * tables they replace wait for that one flush (a scratch list holds
     * them beyond the few struct pt keeps). */
    uint64_t span = slot_sz(g, g->nlev - 2);
    pt->lazy_depth++;
    pt->keep_more = 1;
    for (uint64_t lo = va;;) {
        uint64_t end = (lo | (span - 1)), hi = end < last ? end : last;
        fold(p, lo, hi);
        if (hi == last)
            break;
        lo = hi + 1;
    }
    pt->keep_more = 0;
    pt->lazy_depth--;
    pass_end(pt);
    return 0;
}

/* ---- from fault handlers ------------------------------------------------ */

/* The fault's change of the leaf at va; -EAGAIN where a shared call of a
 * MMP_PT_SHARED table holds an entry on the way locked. FAULT_RETRY: the
 * leaf found changed shape under the fault (a block split into a table, a
 * run unmade): the walk starts again. */
#define FAULT_RETRY 1
static int fault_once(const struct pt *pt, uint64_t va, bool write)
{
    const struct mmp_pt_geom *g = &pt->g;
    struct find f = find(pt, va);
    if (!f.t)
        return -MMP_ENOENT;
    uint64_t e = pt_ld(&f.t[f.i]), cb = e & g->cont_bit;
    if (pt_locked(g, e))
        return -MMP_EAGAIN;
    int kind = pt_kind(g, f.d, e);
    if (kind != PT_LEAF) /* a table: the walk read a block since split */
        return kind == PT_TABLE ? FAULT_RETRY : -MMP_ENOENT;
    unsigned lo = f.i, hi = f.i;
    if (cb) {
        unsigned R = 1u << g->cont[f.d];
        lo = f.i & ~(R - 1);
        hi = lo + R - 1;
    }
    for (unsigned k = lo; k <= hi; k++) {
        for (;;) {
            uint64_t x = pt_ld(&f.t[k]), nw = x | g->trk_a;
            /* (the bits set before are state only: the holder's lock
             * swap fails on them and starts again) */
            if (pt_locked(g, x))
                return -MMP_EAGAIN;
            if (pt_kind(g, f.d, x) != PT_LEAF || (x & g->cont_bit) != cb)
                return FAULT_RETRY;
            if (write) {
                bool wr = (x & g->trk_w) == g->trk_w_on;
                if (g->trk_d && wr)
                    nw |= g->trk_d;
                else if (!g->trk_d && !wr && (x & g->trk_m))
                    nw = (nw & ~g->trk_w) | g->trk_w_on;
                else if (!wr)
                    return mmp_core_pt_fail(pt, -MMP_EACCES, MMP_PT_RULE_NOT_WRITABLE, va, 0,
                                            0);
            }
            if (nw == x || cas(&f.t[k], x, nw))
                break;
        }
    }
    return 0;
}

/* A few walks where the tree keeps changing shape, then -EAGAIN. */
static int fault_leaf(const struct pt *pt, uint64_t va, bool write)
{
    for (int tries = 0; tries < 8; tries++) {
        int rc = fault_once(pt, va, write);
        if (rc != FAULT_RETRY)
            return rc;
    }
    return -MMP_EAGAIN;
}

static int fault(struct mmp_pt *p, uint64_t va, bool write)
{
    if (!pt_live(p))
        return -MMP_EINVAL;
    const struct pt *pt = pt_of(p);
    const struct mmp_pt_geom *g = &pt->g;
    uint64_t gm = ((uint64_t)1 << g->granule_shift) - 1, last;
    int rc = mmp_core_pt_check_va(pt, va & ~gm, gm + 1, &last);
    if (rc)
        return rc;
    if (!write && !g->trk_a)
        return mmp_core_pt_fail(pt, -MMP_ENOTSUP, MMP_PT_RULE_TRACK_MODE, 0, 0, 0);
    bool epoch = pt_reader_enter(pt); /* beside shared calls */
    rc = fault_leaf(pt, va, write);
    pt_reader_leave(epoch);
    return rc;
}

int mmp_pt_dirty_fault(struct mmp_pt *p, uint64_t va)
{
    return fault(p, va, true);
}

int mmp_pt_young_fault(struct mmp_pt *p, uint64_t va)
{
    return fault(p, va, false);
}
