/* SPDX-License-Identifier: MIT */
/*
 * Page-table scenarios, the same on every architecture. For each table
 * configuration the CPU supports: build a table with mmport (the payload
 * identity-maps itself through it), load it into the MMU, then map, unmap
 * and protect in a scenario window while the table is live. After every
 * operation, addresses around the change are checked three ways:
 *   the scenario's own model of what was asked for,
 *   mmp_pt_lookup() (and mmp_pt_walk()),
 *   the MMU (arch hook: AT + PAR_EL1 and real accesses on arm64, real
 *   accesses with a #PF handler on x86-64).
 * All three must agree. The tables are live, so a missing or misplaced
 * TLB flush shows up as a stale translation.
 */
#include "mmu.h"

#include <mmport/lazy.h>
#include <mmport/track.h>

/* x86-64, EPT, NPT: no contiguous bit, no break-before-make rule. */
static int fmt_x86(const struct pl_target *t)
{
    return t->cfg.format == MMP_PT_X86_64 || t->cfg.format == MMP_PT_X86_EPT ||
           t->cfg.format == MMP_PT_X86_NPT;
}

extern char __image_start[], __image_end[], __arena_start[], __arena_end[];

/* ---- table memory: a bitmap allocator over the arena, 4 KiB units ---- */

#define UNIT 4096u
#define ARENA_UNITS 4096u /* 16 MiB, the arena in link.ld */
static uint8_t arena_used[ARENA_UNITS];
static uint32_t arena_serial[ARENA_UNITS]; /* call that allocated the page */
static uint32_t op_serial;                 /* the current call (or lazy section) */
static int nonleaf_flushed;                /* this call flushed walk caches too */
static unsigned long early_frees;          /* tables freed before such a flush */
static unsigned arena_pages;
static int arena_fail_countdown = -1; /* >= 0: fail the n-th next allocation */

void *pl_alloc_table(void *ctx, size_t bytes, uint64_t *pa)
{
    (void)ctx;
    uint64_t base = (uint64_t)(uintptr_t)__arena_start;
    unsigned n = (unsigned)((bytes + UNIT - 1) / UNIT);
    if (arena_fail_countdown >= 0 && arena_fail_countdown-- == 0)
        return 0;
    for (unsigned i = 0; i + n <= ARENA_UNITS; i++) {
        uint64_t a = base + (uint64_t)i * UNIT;
        if (a & (bytes - 1))
            continue;
        unsigned j = 0;
        while (j < n && !arena_used[i + j])
            j++;
        if (j < n)
            continue;
        for (j = 0; j < n; j++) {
            arena_used[i + j] = 1;
            arena_serial[i + j] = op_serial;
        }
        arena_pages++;
        /* Poison: a descriptor the engine failed to clear looks valid. */
        memset((void *)(uintptr_t)a, 0xa5, bytes);
        *pa = a;
        return (void *)(uintptr_t)a;
    }
    return 0;
}

static unsigned long table_frees;
static int live_pt_set(void);

void pl_free_table(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)ctx;
    table_frees++;
    (void)va;
    unsigned i = (unsigned)((pa - (uint64_t)(uintptr_t)__arena_start) / UNIT);
    /*
     * A table from an earlier call was reachable by the MMU's walker: it
     * may be freed only after a flush that is not leaf-only (walk caches;
     * mmp_pt_ops::tlb_flush, MMP_FLUSH_LEAF). Pages allocated by this call
     * may never have been linked (spare reservations): not judged.
     */
    if (live_pt_set() && arena_serial[i] != op_serial && !nonleaf_flushed)
        early_frees++;
    for (unsigned j = 0; j < (bytes + UNIT - 1) / UNIT; j++)
        arena_used[i + j] = 0;
    arena_pages--;
}

unsigned pl_arena_pages(void)
{
    return arena_pages;
}

static void *pl_phys_to_virt(void *ctx, uint64_t pa)
{
    (void)ctx;
    return (void *)(uintptr_t)pa;
}

/* ---- the model: sorted, non-overlapping extents ---- */

struct ext {
    uint64_t va, pa, size;
    uint32_t attrs;
};
#define MAXEXT 1024
static struct ext model[MAXEXT];
static unsigned nmodel;

static void model_clear(void)
{
    nmodel = 0;
}

static int model_find(uint64_t va, struct pl_expect *e)
{
    for (unsigned i = 0; i < nmodel; i++) {
        if (va >= model[i].va && va - model[i].va < model[i].size) {
            e->mapped = 1;
            e->pa = model[i].pa + (va - model[i].va);
            e->attrs = model[i].attrs;
            return 1;
        }
    }
    e->mapped = 0;
    e->pa = 0;
    e->attrs = 0;
    return 0;
}

static int model_overlaps(uint64_t va, uint64_t size)
{
    for (unsigned i = 0; i < nmodel; i++)
        if (model[i].va < va + size && va < model[i].va + model[i].size)
            return 1;
    return 0;
}

static void model_insert_at(unsigned i, const struct ext *x)
{
    memmove(&model[i + 1], &model[i], (nmodel - i) * sizeof(model[0]));
    model[i] = *x;
    nmodel++;
}

/* Split the extent containing @p va (if any) so an extent starts at va. */
static void model_split(uint64_t va)
{
    for (unsigned i = 0; i < nmodel; i++) {
        struct ext *x = &model[i];
        if (va > x->va && va < x->va + x->size) {
            struct ext hi = *x;
            hi.va = va;
            hi.pa = x->pa + (va - x->va);
            hi.size = x->size - (va - x->va);
            x->size = va - x->va;
            model_insert_at(i + 1, &hi);
            return;
        }
    }
}

static void model_unmap(uint64_t va, uint64_t size)
{
    model_split(va);
    model_split(va + size);
    unsigned j = 0;
    for (unsigned i = 0; i < nmodel; i++)
        if (!(model[i].va >= va && model[i].va < va + size))
            model[j++] = model[i];
    nmodel = j;
}

static int model_map(uint64_t va, uint64_t pa, uint64_t size, uint32_t attrs)
{
    model_unmap(va, size);
    if (nmodel >= MAXEXT)
        return -1;
    unsigned i = 0;
    while (i < nmodel && model[i].va < va)
        i++;
    struct ext x = { va, pa, size, attrs };
    model_insert_at(i, &x);
    return 0;
}

static void model_protect(uint64_t va, uint64_t size, uint32_t attrs)
{
    model_split(va);
    model_split(va + size);
    for (unsigned i = 0; i < nmodel; i++)
        if (model[i].va >= va && model[i].va < va + size)
            model[i].attrs = attrs;
}

/* ---- checking ---- */

static const struct pl_target *cur;
static uint64_t gran;
static unsigned mismatches; /* in the current scenario */
#define MAX_REPORTS 8

static void mismatch(uint64_t va, const char *what, uint64_t want, uint64_t got)
{
    if (mismatches++ < MAX_REPORTS)
        pl_printf("  mismatch at %lx: %s: want %lx, got %lx\n", va, what, want, got);
}

static int in_scratch(uint64_t pa, uint64_t len)
{
    return pa >= pl_scratch_lo && pa + len <= pl_scratch_hi;
}

/* Addresses compared (model, lookup, MMU), and those with an output
 * address at or above 2^48 (arm64 52-bit layouts). */
static unsigned long checks_total, checks_high;

/* One address, three ways. */
static void check_va(const struct mmp_pt *pt, uint64_t va)
{
    struct pl_expect e;
    struct mmp_pt_leaf leaf;
    model_find(va, &e);
    checks_total++;
    if (e.mapped && (e.pa >> 48))
        checks_high++;
    int rc = mmp_pt_lookup(pt, va, &leaf);
    if (!e.mapped) {
        if (rc != -MMP_ENOENT)
            mismatch(va, "lookup of an unmapped VA (rc)", (uint64_t)-MMP_ENOENT, (uint64_t)rc);
    } else if (rc != 0) {
        mismatch(va, "lookup of a mapped VA (rc)", 0, (uint64_t)rc);
    } else {
        uint64_t pa = leaf.pa + (va - leaf.va);
        if (pa != e.pa)
            mismatch(va, "lookup PA", e.pa, pa);
        if (leaf.attrs != e.attrs)
            mismatch(va, "lookup attrs", e.attrs, leaf.attrs);
        if (va < leaf.va || va - leaf.va >= leaf.size)
            mismatch(va, "lookup leaf does not cover the VA", va, leaf.va);
        e.desc = leaf.desc;
        e.leaf_size = leaf.size;
    }
    if (!e.mapped || rc)
        e.desc = e.leaf_size = 0;
    int real = !e.mapped || in_scratch(e.pa & ~(gran - 1), gran);
    if (pl_arch_check(cur, va, &e, real))
        mismatches++;
}

struct walk_ctx {
    const struct mmp_pt *pt;
    uint64_t lo, hi;
    unsigned leaves;
};

/* Every leaf the engine reports must lie inside one model extent. */
static unsigned long kinds_seen[3]; /* walked leaves by enum mmp_pt_leaf_kind */

static int walk_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct walk_ctx *w = arg;
    struct pl_expect e;
    w->leaves++;
    if (l->kind < 3)
        kinds_seen[l->kind]++;
    uint64_t lo = l->va > w->lo ? l->va : w->lo;
    uint64_t hi = l->va + l->size < w->hi ? l->va + l->size : w->hi;
    if (!model_find(lo, &e) || e.pa != l->pa + (lo - l->va) || e.attrs != l->attrs)
        mismatch(lo, "walk leaf disagrees with the model (leaf va)", e.pa, l->va);
    /* The MMU sees the first leaves and a sample of the rest (a split block
     * has thousands; the model already covers each one above). */
    if (w->leaves <= 16 || pl_rand_below(32) == 0) {
        check_va(w->pt, lo);
        check_va(w->pt, hi - gran);
    }
    return 0;
}

/* Check [lo, hi): the edges, every model extent and gap, every engine leaf. */
static void verify(const struct mmp_pt *pt, uint64_t lo, uint64_t hi)
{
    lo &= ~(gran - 1);
    hi = (hi + gran - 1) & ~(gran - 1);
    check_va(pt, lo);
    check_va(pt, hi - gran);
    uint64_t prev = lo;
    for (unsigned i = 0; i < nmodel; i++) {
        const struct ext *x = &model[i];
        if (x->va + x->size <= lo || x->va >= hi)
            continue;
        uint64_t a = x->va > lo ? x->va : lo;
        uint64_t b = x->va + x->size < hi ? x->va + x->size : hi;
        if (a > prev) { /* a gap before this extent */
            check_va(pt, prev);
            check_va(pt, a - gran);
        }
        check_va(pt, a);
        check_va(pt, b - gran);
        /* somewhere inside, at a random 8-byte offset */
        uint64_t off = pl_rand_below((b - a) / 8) * 8;
        check_va(pt, a + off);
        prev = b;
    }
    if (prev < hi) {
        check_va(pt, prev);
        check_va(pt, prev + ((hi - prev) / 2 & ~(gran - 1)));
    }
    struct walk_ctx w = { pt, lo, hi, 0 };
    int rc = mmp_pt_walk(pt, lo, hi - lo, walk_leaf, &w);
    if (rc)
        mismatch(lo, "walk rc", 0, (uint64_t)rc);
}

static uint64_t t_scenario;

static void scenario_begin(void)
{
    mismatches = 0;
    t_scenario = pl_arch_now_us();
}

__attribute__((format(printf, 1, 2))) static void scenario_end(const char *fmt, ...)
{
    char name[160];
    va_list ap;
    va_start(ap, fmt);
    pl_vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    pl_result(mismatches == 0, "%s: %s (%lu ms)", cur->name, name,
              (pl_arch_now_us() - t_scenario) / 1000);
}

/* ---- break-before-make, seen from the tlb_flush hook ---- */

/*
 * arm64 needs break-before-make when a valid entry changes its output
 * address, memory type, block size or contiguous bit (Arm ARM D8.16.1):
 * make the entries invalid, flush, then write the new ones. Two checks,
 * while the engine runs (the model still holds the state before the call):
 * - the engine counts each such sequence (mmp_pt_stats::bbm) as it issues
 *   its flush, so when the hook sees that count move, the flushed range is
 *   a broken one: no address in it may translate at that moment;
 * - at any other flush, an address outside this call's broken ranges may
 *   not already translate to a different frame or memory type than before
 *   the call (that change needed break-before-make).
 */
static const struct mmp_pt *live_pt;
static int in_lazy;                /* inside a lazy section, not paused */
static unsigned long lazy_flushes; /* flushes other than break-before-make while in_lazy */
static uint64_t last_bbm, last_split;
static unsigned long bbm_flushes, bbm_checked, bbm_violations;
static struct {
    uint64_t lo, last;
} broken[32]; /* this call's break-before-make ranges */
static unsigned nbroken;
static int broken_overflow;

/* Every flush of the current call (or lazy leave), to check coverage. */
static struct {
    uint64_t lo, last;
} flushed[32];
static unsigned nflushed;
static int flushed_all; /* a full flush, or more ranges than recorded */

static void op_begin(void)
{
    nbroken = 0;
    broken_overflow = 0;
    if (!in_lazy) { /* a lazy section records its flushes from enter to leave */
        nflushed = 0;
        flushed_all = 0;
        nonleaf_flushed = 0;
        op_serial++;
    }
}

static int live_pt_set(void)
{
    return live_pt != 0;
}

static int flush_covers(uint64_t va)
{
    if (flushed_all)
        return 1;
    for (unsigned i = 0; i < nflushed; i++)
        if (va >= flushed[i].lo && va <= flushed[i].last)
            return 1;
    return 0;
}

static void bbm_violation(uint64_t va, const char *what, uint64_t pa)
{
    if (bbm_violations++ < 4)
        pl_printf("  break-before-make: at a flush, %lx %s (now to %lx)\n", va, what, pa);
    mismatches++;
}

static void bbm_check_broken(uint64_t va)
{
    struct mmp_pt_leaf now;
    bbm_checked++;
    if (mmp_pt_lookup(live_pt, va, &now) == 0)
        bbm_violation(va, "still translates in its break-before-make flush",
                      now.pa + (va - now.va));
}

static void bbm_check_changed(uint64_t va)
{
    struct pl_expect before;
    struct mmp_pt_leaf now;
    if (broken_overflow)
        return;
    for (unsigned i = 0; i < nbroken; i++)
        if (va >= broken[i].lo && va <= broken[i].last)
            return;
    if (!model_find(va, &before) || mmp_pt_lookup(live_pt, va, &now) != 0)
        return;
    bbm_checked++;
    uint64_t pa = now.pa + (va - now.va);
    if (pa != before.pa || ((now.attrs ^ before.attrs) & MMP_MEM_MASK))
        bbm_violation(va, "changed frame or memory type without break-before-make", pa);
}

static void flush_hook(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    struct mmp_pt_stats st;
    if (!(flags & MMP_FLUSH_LEAF))
        nonleaf_flushed = 1;
    if (live_pt && (flags & MMP_FLUSH_ALL)) {
        /* A break-before-make flush over the ceiling goes out as a full
         * flush: it is this flush's, not the next ranged one's. */
        mmp_pt_stats(live_pt, &st);
        if (st.bbm != last_bbm)
            bbm_flushes++;
        last_bbm = st.bbm;
        last_split = st.split_flushes;
    }
    if ((flags & MMP_FLUSH_ALL) || nflushed == PL_ARRAY_SIZE(flushed)) {
        flushed_all = 1;
    } else if (size) {
        flushed[nflushed].lo = va;
        flushed[nflushed++].last = va + size - 1;
    }
    if (live_pt && !(flags & MMP_FLUSH_ALL) && size) {
        mmp_pt_stats(live_pt, &st);
        int bbm = st.bbm != last_bbm;
        int split = st.split_flushes != last_split; /* a split-first's flush: never deferred */
        void (*check)(uint64_t) = bbm_check_changed;
        last_bbm = st.bbm;
        last_split = st.split_flushes;
        if (in_lazy && !bbm && !split)
            lazy_flushes++;
        if (bbm) {
            bbm_flushes++;
            check = bbm_check_broken;
            if (nbroken < PL_ARRAY_SIZE(broken)) {
                broken[nbroken].lo = va;
                broken[nbroken++].last = va + size - 1;
            } else {
                broken_overflow = 1;
            }
        }
        if (bbm || !fmt_x86(cur)) {
            check(va & ~(gran - 1));
            check((va + size - 1) & ~(gran - 1));
            for (int i = 0; i < 4 && size > 2 * gran; i++)
                check((va + pl_rand_below(size)) & ~(gran - 1));
        }
    }
    pl_arch_tlb_flush(ctx, va, size, flags);
}

/* ---- operations: engine + model ---- */

/* Drop the permission bits the format has no place for (stage 2: USER, GLOBAL). */
static uint32_t fit(uint32_t attrs)
{
    return attrs & (cur->prot_mask | MMP_MEM_MASK);
}

/*
 * After a call (outside a lazy section), every address that was mapped
 * and now translates differently (or not at all) must lie in a range the
 * call flushed: otherwise a stale TLB entry may survive. Sampled.
 */
#define NSAMPLE 6
struct sample {
    uint64_t va[NSAMPLE];
    struct pl_expect before[NSAMPLE];
};

static void sample_before(struct sample *sm, uint64_t va, uint64_t size)
{
    uint64_t last = (va + size - 1) & ~(gran - 1);
    for (unsigned i = 0; i < NSAMPLE; i++) {
        sm->va[i] = i == 0 ? va : i == 1 ? last : (va + pl_rand_below(size)) & ~(gran - 1);
        model_find(sm->va[i], &sm->before[i]);
    }
}

static void sample_after(const struct sample *sm, const char *op)
{
    if (in_lazy || !live_pt)
        return;
    for (unsigned i = 0; i < NSAMPLE; i++) {
        struct pl_expect a;
        const struct pl_expect *b = &sm->before[i];
        model_find(sm->va[i], &a);
        if (!b->mapped || (a.mapped && a.pa == b->pa && a.attrs == b->attrs))
            continue;
        if (!flush_covers(sm->va[i]))
            mismatch(sm->va[i], op, 1, 0);
    }
}

static int op_map(struct mmp_pt *pt, uint64_t va, uint64_t pa, uint64_t size, uint32_t attrs,
                  uint32_t flags)
{
    struct sample sm;
    int overl = model_overlaps(va, size);
    sample_before(&sm, va, size);
    op_begin();
    int rc = mmp_pt_map(pt, va, pa, size, attrs, flags);
    int want = overl && !(flags & MMP_MAP_REPLACE) ? -MMP_EEXIST : 0;
    if (rc != want) {
        mismatch(va, "mmp_pt_map rc", (uint64_t)want, (uint64_t)rc);
        return rc;
    }
    if (rc == 0 && model_map(va, pa, size, attrs)) {
        mismatch(va, "model full", 0, 0);
        return -1;
    }
    sample_after(&sm, "replaced by mmp_pt_map but not flushed (covered)");
    return rc;
}

static int op_unmap(struct mmp_pt *pt, uint64_t va, uint64_t size)
{
    struct sample sm;
    sample_before(&sm, va, size);
    op_begin();
    int rc = mmp_pt_unmap(pt, va, size);
    if (rc)
        mismatch(va, "mmp_pt_unmap rc", 0, (uint64_t)rc);
    else
        model_unmap(va, size);
    sample_after(&sm, "unmapped but not flushed (covered)");
    return rc;
}

static int op_protect(struct mmp_pt *pt, uint64_t va, uint64_t size, uint32_t attrs)
{
    struct sample sm;
    sample_before(&sm, va, size);
    op_begin();
    int rc = mmp_pt_protect(pt, va, size, attrs);
    if (rc)
        mismatch(va, "mmp_pt_protect rc", 0, (uint64_t)rc);
    else
        model_protect(va, size, attrs);
    sample_after(&sm, "protected but not flushed (covered)");
    return rc;
}

/* ---- geometry of the target ---- */

/* Leaf sizes of the format, smallest first: page, contiguous run of pages,
 * block, contiguous run of blocks, bigger block. */
struct sizes {
    uint64_t page, cont_page, block, cont_block, big_block;
};

static struct sizes target_sizes(const struct pl_target *t)
{
    struct sizes s = { 0, 0, 0, 0, 0 };
    s.page = t->cfg.granule;
    if (fmt_x86(t)) {
        s.block = 2ull << 20;
        s.big_block = t->max_leaf >= (1ull << 30) ? 1ull << 30 : 0;
    } else {
        switch (t->cfg.granule) {
        case 4096:
            s.cont_page = 64u << 10;
            s.block = 2ull << 20;
            s.cont_block = 32ull << 20;
            s.big_block = 1ull << 30;
            break;
        case 16384:
            s.cont_page = 2ull << 20;
            s.block = 32ull << 20;
            s.cont_block = 1ull << 30;
            break;
        default:
            s.cont_page = 2ull << 20;
            s.block = 512ull << 20;
            s.cont_block = 16ull << 30;
            break;
        }
    }
    /* Tables created without blocks or contiguous runs have none of those
     * leaf kinds (the sizes stay usable as range sizes). */
    if (t->cfg.flags & MMP_PT_NO_CONT)
        s.cont_page = s.cont_block = 0;
    if (t->cfg.flags & MMP_PT_NO_BLOCKS)
        s.cont_block = s.big_block = 0;
    return s;
}

#define RW (MMP_PROT_READ | MMP_PROT_WRITE)
#define RO MMP_PROT_READ

/* ---- scenarios ---- */

/*
 * 52-bit output addresses (arm64 pa_bits = 52: FEAT_LPA2 keeps OA[51:50]
 * in descriptor bits 9:8, FEAT_LPA OA[51:48] in bits 15:12): one leaf of
 * every size the table offers (and an unaligned-size range splitting into
 * several), at output addresses above 2^48 up to the last one below
 * 2^52. No memory exists there: the MMU's answer is its own translation
 * (arm64 AT + PAR_EL1), compared with the model and with lookup.
 */
static void sc_high_pa(struct mmp_pt *pt)
{
    if (cur->cfg.pa_bits != 52)
        return;
    scenario_begin();
    struct mmp_pt_info inf;
    mmp_pt_info(pt, &inf);
    uint64_t span = cur->sparse_span ? cur->sparse_span : 1ull << cur->cfg.va_bits;
    unsigned long high0 = checks_high;
    unsigned leaves = 0;
    for (unsigned b = 0; b < 52; b++) {
        if (!(inf.block_sizes >> b & 1))
            continue;
        uint64_t sz = 1ull << b;
        /* Input: the first sz-aligned address from the window on; output:
         * the top of the 52-bit space, then a pattern with OA[51:48] = 0xa. */
        uint64_t va = (cur->window + sz - 1) & ~(sz - 1);
        if (va + sz > span || va + sz < va)
            continue;
        const uint64_t pas[2] = { (1ull << 52) - sz, (0xa5a5a5a5a5a5ull << 4) & ~(sz - 1) };
        for (unsigned k = 0; k < 2; k++) {
            if (pas[k] >> 48 == 0)
                continue;
            if (op_map(pt, va, pas[k], sz, fit(k ? RO : RW), 0) == 0) {
                leaves++;
                verify(pt, va, va + sz);
            }
            op_unmap(pt, va, sz);
            verify(pt, va, va + sz);
        }
    }
    /* A range of 3 pages + 1 block + 2 pages: several leaf sizes at once. */
    uint64_t blk = 0;
    for (unsigned b = (unsigned)__builtin_ctzll(gran) + 1; b < 52 && !blk; b++)
        if (inf.block_sizes >> b & 1)
            blk = 1ull << b;
    if (blk && cur->window + 2 * blk <= span) {
        uint64_t va = cur->window + blk - 3 * gran, pa = (0xdull << 48) + blk - 3 * gran;
        op_map(pt, va, pa, blk + 5 * gran, fit(RW), 0);
        verify(pt, va, va + blk + 5 * gran);
        op_unmap(pt, va, blk + 5 * gran);
    }
    if (!leaves || checks_high == high0)
        mismatches++; /* nothing was checked: that is a failure too */
    scenario_end("52-bit output addresses: %u leaves up to 2^52, %lu addresses >= 2^48 "
                 "compared with lookup and the MMU",
                 leaves, checks_high - high0);
}

/* One mapping of each leaf kind; lookup must report the kind and size. */
static void sc_leaf_kinds(struct mmp_pt *pt)
{
    struct sizes s = target_sizes(cur);
    int no_blk = (cur->cfg.flags & MMP_PT_NO_BLOCKS) != 0;
    struct {
        uint64_t size;
        uint8_t kind;
        const char *what;
    } k[] = {
        { s.page, MMP_LEAF_PAGE, "page" },
        { s.cont_page, MMP_LEAF_CONT, "contiguous pages" },
        { s.block, no_blk ? (s.cont_page ? MMP_LEAF_CONT : MMP_LEAF_PAGE) : MMP_LEAF_BLOCK,
          no_blk ? "block-sized range (no blocks: MMP_PT_NO_BLOCKS)" : "block" },
        { s.cont_block, MMP_LEAF_CONT, "contiguous blocks" },
        { s.big_block, MMP_LEAF_BLOCK, "large block" },
    };
    uint64_t va = cur->window;
    uint64_t pa = pl_scratch_lo;
    for (unsigned i = 0; i < PL_ARRAY_SIZE(k); i++) {
        if (!k[i].size)
            continue;
        scenario_begin();
        uint64_t sz = k[i].size;
        va = (va + sz - 1) & ~(sz - 1);
        uint64_t p = (pa + sz - 1) & ~(sz - 1);
        if (op_map(pt, va, p, sz, RW | MMP_PROT_EXEC, 0) == 0) {
#ifdef MMP_TEST_FLIP_ATTR_BIT
            uint64_t *d = pl_arch_desc_ptr(cur, pt, va);
            if (d)
                pl_arch_flip(cur, d);
#endif
            struct mmp_pt_leaf l;
            if (mmp_pt_lookup(pt, va + sz / 2, &l) == 0) {
                /* a block maps all of it, a page one granule, a run entry less */
                uint64_t want = k[i].kind == MMP_LEAF_BLOCK ? sz : gran;
                if (l.kind != k[i].kind)
                    mismatch(va, "leaf kind", k[i].kind, l.kind);
                if (k[i].kind == MMP_LEAF_CONT ? l.size >= sz : l.size != want)
                    mismatch(va, "leaf size", want, l.size);
            }
            verify(pt, va - s.page, va + sz + s.page);
            op_unmap(pt, va, sz);
            verify(pt, va, va + sz);
        }
        scenario_end("%s", k[i].what);
        va += 2 * sz;
    }
}

/*
 * Split a block / contiguous run by unmapping or protecting one granule in
 * its middle, then re-protect and remap it whole (the engine may fold).
 */
static void sc_split(struct mmp_pt *pt, uint64_t sz, const char *what, uint64_t va)
{
    if (!sz)
        return;
    uint64_t pa = (pl_scratch_lo + sz - 1) & ~(sz - 1);
    va = (va + sz - 1) & ~(sz - 1);
    uint64_t mid = va + sz / 2 + gran;

    scenario_begin();
    if (op_map(pt, va, pa, sz, RW, 0) == 0) {
        verify(pt, va, va + sz);
        op_unmap(pt, mid, gran);
        verify(pt, va, va + sz);
        op_map(pt, mid, pa + (mid - va), gran, RW, 0);
        verify(pt, va, va + sz);
        op_unmap(pt, va, sz);
        verify(pt, va, va + sz);
    }
    scenario_end("unmap one granule inside %s", what);

    scenario_begin();
    if (op_map(pt, va, pa, sz, RW, 0) == 0) {
        verify(pt, va, va + sz);
        op_protect(pt, mid, gran, RO);
        verify(pt, va, va + sz);
        op_protect(pt, va, gran * 2, RO | MMP_PROT_EXEC);
        verify(pt, va, va + sz);
        op_protect(pt, va, sz, RW);
        verify(pt, va, va + sz);
        /* replace one granule with another frame */
        op_map(pt, mid, pa + gran * 7, gran, RW, MMP_MAP_REPLACE);
        verify(pt, va, va + sz);
        op_unmap(pt, va, sz);
        verify(pt, va, va + sz);
    }
    scenario_end("protect and replace one granule inside %s", what);

    /* All of it made read-only after stores through it: the protect's
     * flush must drop the writable TLB entry. Off the window's first
     * leaf, and from an empty TLB: QEMU
     * drops everything when an invalidation meets the span of the large
     * entries it holds, which would hide one aimed at the wrong address. */
    scenario_begin();
    uint64_t far = va + 3 * sz;
    pl_arch_tlb_flush((void *)(uintptr_t)cur, 0, 0, MMP_FLUSH_ALL);
    if (op_map(pt, far, pa, sz, RW, 0) == 0) {
        verify(pt, far, far + sz);
        op_protect(pt, far, sz, RO);
        verify(pt, far, far + sz);
        op_unmap(pt, far, sz);
        verify(pt, far, far + sz);
    }
    scenario_end("make all of %s read-only after stores through it", what);
}

/* Permissions and memory types: every combination the API offers. */
static void sc_attrs(struct mmp_pt *pt)
{
    static const uint32_t prot[] = {
        RO, RW, RO | MMP_PROT_EXEC, RW | MMP_PROT_EXEC, RO | MMP_PROT_USER,
        RW | MMP_PROT_USER, RO | MMP_PROT_USER | MMP_PROT_EXEC, RW | MMP_PROT_GLOBAL,
        RO | MMP_PROT_EXEC | MMP_PROT_GLOBAL,
    };
    static const uint32_t mem[] = { MMP_MEM_NORMAL_WB, MMP_MEM_NORMAL_NC, MMP_MEM_DEVICE };
    scenario_begin();
    uint64_t va = cur->window;
    for (unsigned m = 0; m < PL_ARRAY_SIZE(mem); m++) {
        for (unsigned p = 0; p < PL_ARRAY_SIZE(prot); p++) {
            uint64_t pa = pl_scratch_lo + (m * 16 + p) * gran;
            op_map(pt, va, pa, gran, fit(prot[p] | mem[m]), 0);
            verify(pt, va, va + gran);
            va += 2 * gran;
        }
    }
    /* change every one of them to the next combination in place */
    va = cur->window;
    for (unsigned m = 0; m < PL_ARRAY_SIZE(mem); m++) {
        for (unsigned p = 0; p < PL_ARRAY_SIZE(prot); p++) {
            uint32_t a = prot[(p + 1) % PL_ARRAY_SIZE(prot)] | mem[(m + 1) % PL_ARRAY_SIZE(mem)];
            op_protect(pt, va, gran, fit(a));
            verify(pt, va - gran, va + 2 * gran);
            va += 2 * gran;
        }
    }
    op_unmap(pt, cur->window, va - cur->window);
    verify(pt, cur->window, va);
    scenario_end("permissions and memory types");
}

/* Single pages scattered over the whole input-address range. */
static void sc_sparse(struct mmp_pt *pt)
{
    uint64_t span = cur->sparse_span ? cur->sparse_span : 1ull << cur->cfg.va_bits;
    uint64_t img_hi = pl_scratch_hi;
    uint64_t vas[24];
    unsigned n = 0;
    scenario_begin();
    if (cur->far_va) {
        vas[n++] = cur->far_va;
        op_map(pt, cur->far_va, pl_scratch_lo, gran, RW, 0);
    }
    while (n < PL_ARRAY_SIZE(vas)) {
        uint64_t va = pl_rand_below(span) & ~(gran - 1);
        if (va < img_hi)
            continue; /* keep clear of the identity map (and arm64's device GiB) */
        if (cur->cfg.format == MMP_PT_X86_64 && (va >> (cur->cfg.va_bits - 1)))
            va |= ~(span - 1); /* canonical upper half */
        if (model_overlaps(va, gran))
            continue;
        vas[n++] = va;
        op_map(pt, va, pl_scratch_lo + n * gran, gran, RW, 0);
    }
    for (unsigned i = 0; i < n; i++)
        verify(pt, vas[i] - gran, vas[i] + 2 * gran);
    for (unsigned i = 0; i < n; i++) {
        op_unmap(pt, vas[i], gran);
        verify(pt, vas[i], vas[i] + gran);
    }
    scenario_end("pages scattered over the whole VA range");
}

/* A seeded random sequence of map / replace / unmap / protect. */
static uint64_t rnd(uint64_t *state, uint64_t n)
{
    return n ? pl_rand_r(state) % n : 0;
}

static void sc_random(struct mmp_pt *pt, uint64_t seed, unsigned nops)
{
    struct sizes s = target_sizes(cur);
    uint64_t units[5] = { s.page, s.cont_page, s.block, s.cont_block, s.big_block };
    uint64_t maxu = s.page;
    for (unsigned i = 0; i < 5; i++)
        if (units[i] > maxu && units[i] <= (4ull << 30))
            maxu = units[i];
    uint64_t win = 4 * maxu; /* room for several of the largest leaves */
    static const uint32_t attrs[] = {
        RW, RO, RW | MMP_PROT_EXEC, RW | MMP_PROT_USER, RW | MMP_MEM_NORMAL_NC,
        RO | MMP_MEM_DEVICE, RW | MMP_PROT_GLOBAL,
    };
    unsigned counts[4] = { 0, 0, 0, 0 };
    kinds_seen[0] = kinds_seen[1] = kinds_seen[2] = 0;
    uint64_t rs = seed; /* the operations' own stream: checks draw from pl_rand() */
    scenario_begin();
    for (unsigned i = 0; i < nops && mismatches < MAX_REPORTS; i++) {
        /* size class weighted to small leaves, 1..3 units, sometimes ragged */
        unsigned c = (unsigned)rnd(&rs, 10);
        c = c < 4 ? 0 : c < 6 ? 1 : c < 8 ? 2 : c < 9 ? 3 : 4;
        while (!units[c] || units[c] > maxu)
            c--;
        uint64_t u = units[c];
        uint64_t size = u * (1 + rnd(&rs, 3));
        uint64_t off = rnd(&rs, win / u) * u;
        if (rnd(&rs, 4) == 0) { /* ragged: shift by some granules */
            off += rnd(&rs, 8) * gran;
            size += rnd(&rs, 8) * gran;
        }
        if (off >= win)
            continue;
        if (off + size > win)
            size = win - off;
        uint64_t va = cur->window + off;
        /* PA congruent to the VA modulo the largest leaf, so blocks happen,
         * and inside scratch RAM where it can, so real accesses run */
        uint64_t pa = pl_scratch_lo + off % maxu;
        uint32_t a = fit(attrs[rnd(&rs, PL_ARRAY_SIZE(attrs))]);
        unsigned op = (unsigned)rnd(&rs, 8);
        /* now and then a map that must not use blocks or contiguous runs */
        unsigned r = (unsigned)rnd(&rs, 16);
        uint32_t mf = r == 0 ? MMP_MAP_NO_BLOCK : r == 1 ? MMP_MAP_NO_CONT : 0;
        if (op < 3) {
            op_map(pt, va, pa, size, a, mf);
            counts[0]++;
        } else if (op < 5) {
            op_map(pt, va, pa, size, a, mf | MMP_MAP_REPLACE);
            counts[1]++;
        } else if (op < 7) {
            op_unmap(pt, va, size);
            counts[2]++;
        } else {
            op_protect(pt, va, size, a);
            counts[3]++;
        }
        verify(pt, va - gran, va + size + gran);
    }
    verify(pt, cur->window, cur->window + win);
    op_unmap(pt, cur->window, win);
    verify(pt, cur->window, cur->window + win);
    pl_printf("  random: leaves walked: %lu pages, %lu in contiguous runs, %lu blocks\n",
              kinds_seen[MMP_LEAF_PAGE], kinds_seen[MMP_LEAF_CONT], kinds_seen[MMP_LEAF_BLOCK]);
    scenario_end("random sequence, seed %lx: %u ops (%u map, %u replace, %u unmap, %u protect)",
                 seed, nops, counts[0], counts[1], counts[2], counts[3]);
}

/*
 * Lazy-MMU sections (mmport/lazy.h) on the live table: the MMU's TLB is
 * filled first, then updates run inside a nested section. Inside it only
 * break-before-make may flush and no table page may be freed; the inner
 * leave emits nothing; after the outer leave the MMU must show the new
 * state everywhere. A paused section must act at once.
 */
static void sc_lazy(struct mmp_pt *pt)
{
    struct sizes s = target_sizes(cur);
    uint64_t blk = s.block, va = cur->window + 4 * blk, pa = pl_scratch_lo;
    uint64_t len = 2 * blk + 5 * gran;
    struct mmp_pt_stats st0, st1;
    scenario_begin();
    op_map(pt, va, pa, len, RW, 0);
    op_map(pt, va + 3 * blk + gran, pa + gran, 3 * gran, RW, 0); /* needs its own last-level table */
    verify(pt, va, va + 4 * blk);
    /* the addresses the section changes, touched now so the TLB holds them */
    const uint64_t touch[] = { va + gran,           va + 2 * gran,      va + blk / 2,
                               va + blk,            va + blk + 3 * gran, va + 2 * blk,
                               va + 2 * blk + gran, va + 3 * blk + gran, va + 3 * blk + 3 * gran };
    for (unsigned i = 0; i < PL_ARRAY_SIZE(touch); i++)
        check_va(pt, touch[i]);

    if (mmp_lazy_enter(pt) || mmp_lazy_enter(pt) || mmp_lazy_depth(pt) != 2)
        mismatch(va, "mmp_lazy_enter twice (depth)", 2, mmp_lazy_depth(pt));
    unsigned long frees0 = table_frees;
    op_begin();
    in_lazy = 1;
    lazy_flushes = 0;
    op_protect(pt, va + gran, 2 * gran, RO);                                 /* pages */
    op_unmap(pt, va + blk / 2, gran);                                        /* split a block */
    op_protect(pt, va + blk, blk, fit(RW | MMP_MEM_NORMAL_NC));              /* memory type */
    op_map(pt, va + 2 * blk, pa + 7 * gran, 5 * gran, RW, MMP_MAP_REPLACE);  /* new frames */
    op_unmap(pt, va + 3 * blk + gran, 3 * gran);                             /* empties a table */
    in_lazy = 0;
    if (lazy_flushes)
        mismatch(va, "flushes other than break-before-make inside the section", 0, lazy_flushes);
    if (table_frees != frees0)
        mismatch(va, "table pages freed inside the section", 0, table_frees - frees0);
    mmp_pt_stats(pt, &st0);
    mmp_lazy_leave(pt);
    mmp_pt_stats(pt, &st1);
    if (st1.flushes != st0.flushes || mmp_lazy_depth(pt) != 1)
        mismatch(va, "the inner leave emitted flushes", st0.flushes, st1.flushes);
    if (mmp_lazy_leave(pt) || mmp_lazy_depth(pt) != 0)
        mismatch(va, "the outer leave (depth)", 0, mmp_lazy_depth(pt));
    /* changed in the section: a break-before-make flush in the section or the
     * outermost leave must have covered each (the section's flushes are recorded) */
    const uint64_t deferred[] = { va + gran, va + 2 * gran, va + 3 * blk + gran,
                                  va + 3 * blk + 3 * gran };
    for (unsigned i = 0; i < PL_ARRAY_SIZE(deferred); i++)
        if (!flush_covers(deferred[i]))
            mismatch(deferred[i], "changed in the section, never flushed (covered)", 1,
                     0);
    int keep = (cur->cfg.flags & MMP_PT_KEEP_TABLES) != 0;
    if (keep ? table_frees != frees0 : table_frees == frees0)
        mismatch(va, keep ? "a table was freed although MMP_PT_KEEP_TABLES"
                          : "the emptied table was not freed at the outer leave",
                 !keep, table_frees - frees0);
    for (unsigned i = 0; i < PL_ARRAY_SIZE(touch); i++)
        check_va(pt, touch[i]); /* a missing flush leaves these stale */
    verify(pt, va, va + 4 * blk);

    /* paused: each update takes effect before the call returns */
    mmp_lazy_enter(pt);
    mmp_lazy_pause(pt);
    op_protect(pt, va, gran, RO);
    verify(pt, va, va + 2 * gran);
    op_unmap(pt, va + 4 * gran, gran);
    verify(pt, va + 3 * gran, va + 6 * gran);
    mmp_lazy_resume(pt);
    if (mmp_lazy_leave(pt) || mmp_lazy_depth(pt) != 0)
        mismatch(va, "leave after resume (depth)", 0, mmp_lazy_depth(pt));
    op_unmap(pt, va, 4 * blk);
    verify(pt, va, va + 4 * blk);
    scenario_end("lazy-MMU section (nested, paused), then the MMU sees every update");
}

/* A failed map (no table memory) must change nothing. */
static void sc_enomem(struct mmp_pt *pt)
{
    struct sizes s = target_sizes(cur);
    scenario_begin();
    uint64_t va = cur->window + s.block + gran; /* needs new tables at the last levels */
    uint64_t pa = pl_scratch_lo;
    op_map(pt, va - gran, pa, gran, RW, 0);
    verify(pt, va - gran, va + 4 * gran);
    arena_fail_countdown = 0;
    int rc = mmp_pt_map(pt, cur->window + 64 * s.block + gran, pa, gran * 3, RW, 0);
    arena_fail_countdown = -1;
    if (rc != -MMP_ENOMEM)
        mismatch(va, "map without table memory (rc)", (uint64_t)-MMP_ENOMEM, (uint64_t)rc);
    verify(pt, cur->window + 64 * s.block, cur->window + 64 * s.block + 4 * gran);
    verify(pt, va - gran, va + 4 * gran);
    op_unmap(pt, va - gran, gran);
    scenario_end("a map that runs out of table memory changes nothing");
}

/*
 * Dirty logging and access tracking on the real MMU, stage 1 (the
 * payload's accesses are the guest's). With MMP_PT_TRACK_HW the MMU sets
 * the bits itself (x86 D/A; arm64 AF and DBM with TCR.HA/HD); without it,
 * software: a store to a tracked page faults, and the payload's "fault
 * handler" (guest_access) calls mmp_pt_dirty_fault (an arm64 Access flag
 * fault: mmp_pt_young_fault), invalidates that address locally and
 * retries. A block is put under tracking (split to pages), the payload
 * writes a random set of its pages, and the harvest must return exactly
 * that set; a second harvest nothing; a new set after that exactly the new
 * set (the MMU marks a re-armed page again only because the harvest
 * flushed after re-arming). Then loads, and test_clear_young must return
 * exactly the pages read. Stop folds the block back.
 */
static int bm_equal(const uint64_t *bm, const uint8_t *want, unsigned n, uint64_t va,
                    const char *what)
{
    int bad = 0;
    for (unsigned i = 0; i < n; i++)
        if ((int)(bm[i / 64] >> (i % 64) & 1) != want[i]) {
            mismatch(va + i * gran, what, want[i], !want[i]);
            bad = 1;
        }
    return bad;
}

/* One access through the fault path: returns the faults taken (0 or 1). */
static unsigned guest_access(struct mmp_pt *pt, uint64_t va, int store, uint64_t value)
{
    if (!pl_arch_access(va, store, value))
        return 0;
    int rc = store ? mmp_pt_dirty_fault(pt, va) : mmp_pt_young_fault(pt, va);
    if (rc)
        mismatch(va, store ? "mmp_pt_dirty_fault rc" : "mmp_pt_young_fault rc", 0, (uint64_t)rc);
    pl_arch_tlb_flush((void *)(uintptr_t)cur, va & ~(gran - 1), gran, MMP_FLUSH_LEAF);
    if (pl_arch_access(va, store, value))
        mismatch(va, "access after the fault call faulted again", 0, 1);
    return 1;
}

static void sc_dirty(struct mmp_pt *pt)
{
    enum mmp_pt_format f = cur->cfg.format;
    int hw = (cur->cfg.flags & MMP_PT_TRACK_HW) != 0;
    if ((f != MMP_PT_X86_64 && f != MMP_PT_ARM64_S1) || (cur->cfg.flags & MMP_PT_EL2))
        return; /* second stages: the payload's accesses are not the guest's; EL2: probes at EL1 */
    struct sizes s = target_sizes(cur);
    if (s.block > (32ull << 20))
        return; /* the bitmaps below hold up to 8192 pages */
    scenario_begin();
    static uint64_t bm[8192 / 64];
    static uint8_t want[8192];
    unsigned n = (unsigned)(s.block / gran), writes = 0, reads = 0, faults = 0, want_faults = 0;
    uint64_t va = cur->window, pa = pl_scratch_lo, cnt = ~0ull;
    op_map(pt, va, pa, s.block, RW, 0);
    int rc = mmp_pt_track_start(pt, va, s.block, 0);
    if (rc)
        mismatch(va, "mmp_pt_track_start rc", 0, (uint64_t)rc);
    struct mmp_pt_leaf l;
    if (mmp_pt_lookup(pt, va, &l) || l.size != gran)
        mismatch(va, "start: split to the granule (leaf size)", gran, l.size);
    mmp_pt_track_harvest(pt, va, s.block, bm, &cnt);
    if (cnt)
        mismatch(va, "pages dirty right after start", 0, cnt);
    for (int round = 0; round < 3; round++) {
        memset(want, 0, n);
        unsigned k = round == 1 ? 0 : 1 + (unsigned)pl_rand_below(40);
        for (unsigned j = 0; j < k; j++) {
            unsigned i = (unsigned)pl_rand_below(n);
            want_faults += !hw && !want[i]; /* software: the first store per page faults */
            want[i] = 1;
            faults += guest_access(pt, va + i * gran + 8 * pl_rand_below(gran / 8), 1, 0x7d17 + j);
            writes++;
        }
        rc = mmp_pt_track_harvest(pt, va, s.block, bm, &cnt);
        if (rc)
            mismatch(va, "mmp_pt_track_harvest rc", 0, (uint64_t)rc);
        bm_equal(bm, want, n, va, "harvest: page written (1) / not (0)");
        mmp_pt_track_harvest(pt, va, s.block, bm, &cnt);
        if (cnt)
            mismatch(va, "second harvest without writes", 0, cnt);
    }
    if (faults != want_faults)
        mismatch(va, "write faults taken (software tracking: one per page and pass)",
                 want_faults, faults);
    /* access flags: clear them all, read a set, clear again */
    mmp_pt_test_clear_young(pt, va, s.block, bm, &cnt);
    memset(want, 0, n);
    for (unsigned j = 0, k = 1 + (unsigned)pl_rand_below(40); j < k; j++) {
        unsigned i = (unsigned)pl_rand_below(n);
        want[i] = 1;
        guest_access(pt, va + i * gran, 0, 0);
        reads++;
    }
    rc = mmp_pt_test_clear_young(pt, va, s.block, bm, &cnt);
    if (rc)
        mismatch(va, "mmp_pt_test_clear_young rc", 0, (uint64_t)rc);
    bm_equal(bm, want, n, va, "young: page read (1) / not (0)");
    rc = mmp_pt_track_stop(pt, va, s.block);
    uint64_t folded = (cur->cfg.flags & (MMP_PT_NO_BLOCKS | MMP_PT_NO_FOLD)) ? gran : s.block;
    if (rc || mmp_pt_lookup(pt, va, &l) || l.size != folded)
        mismatch(va, "stop: folded back into a block (leaf size)", folded, l.size);
    verify(pt, va, va + s.block);
    op_unmap(pt, va, s.block);
    scenario_end("dirty logging, %s: %u writes (%u faults) and %u reads harvested exactly "
                 "(split, re-armed, folded back)",
                 hw ? "the MMU's bits" : "software (write faults)", writes, faults, reads);
}

#ifndef PL_SEED
#define PL_SEED 0x6d6d7530 /* override: make -f tests/mmu/mmu.mk PL_EXTRA=-DPL_SEED=... */
#endif
#ifndef PL_NOPS
#define PL_NOPS 300
#endif

static void run_target(const struct pl_target *t, unsigned idx)
{
    struct mmp_pt pt;
    struct mmp_pt_ops ops = {.alloc_table = pl_alloc_table,
                             .free_table = pl_free_table,
                             .phys_to_virt = pl_phys_to_virt,
                             .tlb_flush = flush_hook,
                             .ctx = (void *)(uintptr_t)t};
    cur = t;
    gran = t->cfg.granule;
    model_clear();
    pl_printf("== %s\n", t->name);
    unsigned pages0 = arena_pages;
    int rc = mmp_pt_init(&pt, &t->cfg, &ops);
    if (rc) {
        pl_result(0, "%s: mmp_pt_init (rc %d)", t->name, rc);
        return;
    }
    /* identity map: the payload image, then the arch's devices and scratch RAM */
    uint64_t lo = (uint64_t)(uintptr_t)__image_start & ~(gran - 1);
    uint64_t hi = ((uint64_t)(uintptr_t)__image_end + gran - 1) & ~(gran - 1);
    scenario_begin();
    op_map(&pt, lo, lo, hi - lo, fit(RW | MMP_PROT_EXEC | MMP_PROT_GLOBAL), 0);
    for (unsigned i = 0; i < pl_arch_nident; i++)
        op_map(&pt, pl_arch_ident[i].pa, pl_arch_ident[i].pa, pl_arch_ident[i].size,
               fit(pl_arch_ident[i].attrs), 0);
    if (mismatches || pl_arch_activate(t, &pt)) {
        pl_result(0, "%s: identity map and MMU switch", t->name);
        mmp_pt_fini(&pt);
        return;
    }
    verify(&pt, lo, hi);
    pl_result(mismatches == 0, "%s: payload runs on the mmport table (identity map checked)",
              t->name);
    live_pt = &pt;
    early_frees = 0;
    unsigned long frees_at_start = table_frees;
    struct mmp_pt_stats st;
    mmp_pt_stats(&pt, &st);
    last_bbm = st.bbm;
    last_split = st.split_flushes;
    bbm_flushes = bbm_checked = bbm_violations = 0;

    struct sizes s = target_sizes(t);
    sc_leaf_kinds(&pt);
    sc_split(&pt, s.cont_page, "a contiguous run of pages", t->window);
    sc_split(&pt, s.block, "a block", t->window);
    sc_split(&pt, s.cont_block, "a contiguous run of blocks", t->window);
    sc_split(&pt, s.big_block, "a large block", t->window);
    sc_attrs(&pt);
    sc_sparse(&pt);
    sc_enomem(&pt);
    sc_lazy(&pt);
    sc_high_pa(&pt);
    sc_dirty(&pt);
    sc_random(&pt, PL_SEED + idx, PL_NOPS);

    /* Everything the scenarios mapped is gone: no table left empty, and the
     * engine's count of table pages agrees with a walk and with the arena. */
    struct mmp_pt_usage u;
    struct mmp_pt_stats st0;
    mmp_pt_stats(&pt, &st0);
    rc = mmp_pt_usage(&pt, &u);
    if (t->cfg.flags & MMP_PT_KEEP_TABLES)
        pl_result(rc == 0 && u.empty_tables > 0 && u.table_pages == st0.table_pages,
                  "%s: emptied tables kept (%lu empty, %lu table pages, stats say %lu)", t->name,
                  u.empty_tables, u.table_pages, st0.table_pages);
    else
        pl_result(rc == 0 && u.empty_tables == 0 && u.table_pages == st0.table_pages,
                  "%s: no empty table left behind (%lu empty, %lu table pages, stats say %lu)",
                  t->name, u.empty_tables, u.table_pages, st0.table_pages);

    live_pt = 0;
    pl_result(early_frees == 0,
              "%s: no table page freed before a walk-cache (non-leaf) flush (%lu frees, %lu early)",
              t->name, table_frees - frees_at_start, early_frees);
    pl_arch_deactivate();
    mmp_pt_stats(&pt, &st);
    pl_printf("  stats: %lu entries written, %lu flushes, %lu barriers, %lu break-before-make, "
              "%lu table pages\n  break-before-make flushes seen: %lu; %lu addresses checked at "
              "flush time, %lu violations\n",
              st.entries_written, st.flushes, st.barriers, st.bbm, st.table_pages, bbm_flushes,
              bbm_checked, bbm_violations);
    mmp_pt_fini(&pt);
    pl_result(arena_pages == pages0, "%s: every table page is given back (%u left)", t->name,
              arena_pages - pages0);
}

void pl_run_scenarios(void)
{
    static struct pl_target targets[32];
    pl_srand(1);
    int n = pl_arch_targets(targets, (int)PL_ARRAY_SIZE(targets));
    for (int i = 0; i < n; i++)
        run_target(&targets[i], (unsigned)i);
    pl_printf("note: %lu translations compared (model, lookup and MMU), %lu of them with "
              "output addresses at or above 2^48\n",
              checks_total, checks_high);
}
