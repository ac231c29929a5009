/* SPDX-License-Identifier: MIT */
/*
 * Two CPUs, one MMP_PT_SHARED table, both translating through it while
 * both update it (docs/mmu.md, "Two CPUs at once"). The window holds
 * eleven 2 MiB regions (4K granule: a block is 512 pages, a contiguous run 16):
 *
 *   own regions, four per CPU, changed only by their CPU:
 *     two "mixed" ones: run 0 is mapped read-only at setup and never
 *     changed (stable pages); the CPU maps, unmaps and re-protects single
 *     pages of the rest, so runs fold and unfold;
 *     two "block" ones: mapped as a block at setup; single pages are
 *     unmapped and re-protected (splits) and mapped back (folds into a run
 *     and back into a block), and the block is unmapped and mapped whole;
 *   two shared regions: mapped as blocks at setup, then "hot" pages
 *     unmapped (region 0: four runs, busy; region 1: one run, whose pages
 *     owners keep long, so the region often folds back into a block);
 *     both CPUs race to map hot pages (one wins, the other gets -EEXIST or
 *     -EAGAIN), the winner owns the page and alone unmaps or re-protects
 *     it; completing a run or the whole region folds it, unmapping a page
 *     of a folded one splits it: locked entries meet the other CPU's
 *     calls. The rest of those regions stays mapped;
 *   a duel region: two runs whose even pages CPU 0 changes and odd pages
 *     CPU 1, each keeping one hole open at a time, so runs fold and
 *     unfold under both CPUs' calls.
 *
 * Every call is a shared one on one leaf slot. Output addresses are
 * congruent with the input (runs and blocks can fold) and every frame
 * holds a pattern (each word: its physical address ^ PATTERN), so a
 * real load shows which frame a translation reached. Checks, on both CPUs
 * at once:
 *   - after each call on an own region: its return value (an own region
 *     has no other writer: exactly 0 or -EEXIST, never -EAGAIN), then
 *     lookup, AT (read and write) and a real load of the page;
 *   - the other CPU's own regions: a region's sequence count is odd while
 *     its owner changes it; a page checked (lookup, AT, load, a store of
 *     the word's own pattern) between two equal even reads must agree with
 *     the owner's model. The owner's flush hook reaches both CPUs (a
 *     broadcast TLBI IS, an IPI on x86): a local one would leave this
 *     CPU a stale entry to hit;
 *   - stable pages (and the code, data and stacks, identity-mapped in
 *     the same table) never fault and read their pattern;
 *   - the always-mapped pages of shared regions: lookup must always find
 *     them (it waits out locked entries); AT and loads may fault only
 *     while an entry is locked (break-before-make), counted as transient;
 *   - a hot page both CPUs mapped with success: a lost update;
 *   - at the end (CPU 1 off): every page of the window against the
 *     models, by lookup, AT and load; table pages by mmp_pt_usage() and
 *     the stats; retired table pages unchanged since retirement (the
 *     engine never writes one); every table page back in the arena.
 */
#include "mmu.h"

#include <atomic_ops.h>

#ifndef PL_SMP_OPS
#define PL_SMP_OPS 4000 /* actions per CPU */
#endif
#ifndef PL_SMP_SEED
#define PL_SMP_SEED 0x534d5032
#endif

extern char __image_start[], __image_end[];

#define NCPU 2
#define GRAN 4096ull
#define BLK (2ull << 20)
#define NPG 512u  /* pages of a region (a block) */
#define RUN 16u   /* pages of a contiguous run */
#define NOWN 4u   /* own regions per CPU: 2 mixed, 2 block */
#define NSH 2u    /* shared regions */
#define SH0 (NCPU * NOWN) /* the first shared region */
#define DUEL (SH0 + NSH)   /* the duel region */
#define NREG (DUEL + 1)
#define NDUEL (2 * RUN)    /* duel pages: runs 0 and 1, page p owned by CPU p % 2 */
#define NHOT 64u  /* hot pages of shared region 0 (region 1: one run, 16) */
#define PATTERN PL_SMP_PATTERN

enum { A_NONE = 0, A_RW = 1, A_RO = 2 };
#define REL ((AO_t)1 << 8) /* owner: releasing (its unmap is under way) */

static uint64_t win; /* window base */
static const struct pl_target *tg;
static struct mmp_pt spt;

/* Models. st: A_* per page (own regions: written by the owner inside its
 * odd sequence count; shared: by the page's owner). */
static volatile uint8_t st[NREG][NPG];
static volatile AO_t seq[NREG];
static volatile AO_t owner[NSH][NHOT];
static volatile AO_t arrived;

static uint64_t va_of(unsigned r, unsigned p)
{
    return win + r * BLK + p * GRAN;
}
static uint64_t pa_of(unsigned r, unsigned p)
{
    return pl_scratch_lo + (64ull << 20) + r * BLK + p * GRAN;
}
/* Stable pages (run 0 of a mixed region): frames of their own, not
 * congruent with the region's, so it never folds into a block. */
static uint64_t stable_pa(unsigned r, unsigned p)
{
    return pl_scratch_lo + (32ull << 20) + r * RUN * GRAN + p * GRAN;
}
static int is_mixed(unsigned r)
{
    return r < NCPU * NOWN && r % NOWN < 2;
}
static int is_shared(unsigned r)
{
    return r >= SH0 && r < DUEL;
}
static uint32_t attrs_of(unsigned a)
{
    return a == A_RW ? MMP_PROT_READ | MMP_PROT_WRITE : MMP_PROT_READ;
}
/* Hot pages: four runs of a shared region (0, 1, 16, 31); of own ones
 * three (mixed: 1, 2, 17; block: 0, 5, 31). */
static unsigned shared_hot(unsigned h)
{
    static const unsigned runs[4] = { 0, 1, 16, 31 };
    return runs[h / RUN] * RUN + h % RUN;
}
static unsigned nhot(unsigned i)
{
    return i ? RUN : NHOT;
}
static int hot_index(unsigned i, unsigned p)
{
    for (unsigned h = 0; h < nhot(i); h++)
        if (shared_hot(h) == p)
            return (int)h;
    return -1;
}

/* What page p of region r must translate to now (quiescent, or for the
 * checks that hold while the page's state cannot change). */
static unsigned want_of(unsigned r, unsigned p, uint64_t *pa)
{
    *pa = pa_of(r, p);
    if (is_mixed(r) && p < RUN) {
        *pa = stable_pa(r, p);
        return A_RO;
    }
    return st[r][p];
}

static void stamp(uint64_t pa, uint64_t size)
{
    for (uint64_t a = pa; a < pa + size; a += 8)
        *(volatile uint64_t *)(uintptr_t)a = a ^ PATTERN;
}

int pl_wait_for(volatile AO_t *v, AO_t want, uint64_t us)
{
    uint64_t t0 = pl_arch_now_us();
    while (AO_load_acquire(v) < want)
        if (pl_arch_now_us() - t0 > us)
            return -1;
    return 0;
}

/* ---- per-CPU results ---- */

struct cpu_res {
    uint64_t rng;
    unsigned fails, nlog;
    char log[4][176];
    unsigned long own_ops, own_checks, block_maps, block_unmaps, folds_seen, splits_seen;
    unsigned long sh_won, sh_eexist, sh_eagain, sh_unmaps, sh_protects, sh_retries, sh_folds;
    unsigned long peer_checks, peer_raced, stable_checks, sharedmap_checks, transient;
    unsigned long duel_ops, duel_retries, duel_folded, shootdowns;
    unsigned long flushes;
    uint64_t t_start, t_end;
};
static struct cpu_res res[NCPU];

/* Set by the first mismatch: both CPUs stop acting and every wait ends, so a
 * broken build (the nolock variant) reports in seconds instead of running
 * into the timeouts of calls that meet entries it left locked. */
static volatile AO_t stopping;

static void fail(struct cpu_res *c, uint64_t va, const char *what, uint64_t want, uint64_t got)
{
    AO_store_release(&stopping, 1);
    if (c->nlog < PL_ARRAY_SIZE(c->log))
        pl_snprintf(c->log[c->nlog++], sizeof(c->log[0]),
                    "  CPU %u: mismatch at %lx: %s: want %lx, got %lx", pl_arch_cpu(), va, what,
                    want, got);
    c->fails++;
}

static uint64_t rnd(struct cpu_res *c, uint64_t n)
{
    return pl_rand_r(&c->rng) % n;
}

/* ---- table memory and flushes: hooks any CPU calls ---- */

static volatile AO_TS_t arena_lock = AO_TS_INITIALIZER;
static void lock(void)
{
    while (AO_test_and_set_acquire(&arena_lock) == AO_TS_SET)
        ;
}
static void unlock(void)
{
    AO_CLEAR(&arena_lock);
}

static void *smp_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    lock();
    void *p = pl_alloc_table(ctx, bytes, pa);
    unlock();
    return p;
}

static void smp_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    lock();
    pl_free_table(ctx, va, pa, bytes);
    unlock();
}

/* Retired pages wait for the end of the scenario (both CPUs out of every
 * call: the simplest grace period), with a checksum taken at retirement. */
#define MAXRET 2048
static struct {
    uint64_t pa, sum;
} retired[MAXRET];
static unsigned nretired, retire_overflow;

static uint64_t checksum(uint64_t pa)
{
    uint64_t s = 0;
    for (unsigned i = 0; i < GRAN / 8; i++)
        s = (s << 7 | s >> 57) ^ ((volatile uint64_t *)(uintptr_t)pa)[i];
    return s;
}

static void smp_retire(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)ctx;
    (void)va;
    (void)bytes;
    uint64_t s = checksum(pa);
    lock();
    if (nretired < MAXRET) {
        retired[nretired].pa = pa;
        retired[nretired++].sum = s;
    } else {
        retire_overflow++;
    }
    unlock();
}

static void smp_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    res[pl_arch_cpu()].flushes++;
    pl_arch_tlb_flush(ctx, va, size, flags);
}

/* ---- checks of one page ---- */

struct seen {
    int lk_rc, at_r, at_w, ld, stf;
    uint64_t lk_pa, at_pa, val;
    uint32_t lk_attrs;
    uint64_t lk_size;
    uint8_t lk_kind;
};

/* Lookup, AT read and write, a load of the word at va (and, @p store, a
 * store of that word's own pattern: harmless wherever it lands). */
static void observe(uint64_t va, int store, struct seen *s)
{
    struct mmp_pt_leaf l;
    s->lk_rc = mmp_pt_lookup(&spt, va, &l);
    s->lk_pa = s->lk_rc ? 0 : l.pa + (va - l.va);
    s->lk_attrs = s->lk_rc ? 0 : l.attrs;
    s->lk_size = s->lk_rc ? 0 : l.size;
    s->lk_kind = s->lk_rc ? 0 : l.kind;
    s->at_r = pl_arch_translate(tg, va, 0, &s->at_pa);
    uint64_t pa_w;
    s->at_w = pl_arch_translate(tg, va, 1, &pa_w);
    s->ld = pl_arch_load(va, &s->val);
    s->stf = -1;
    if (store && !s->ld)
        s->stf = pl_arch_access(va, 1, s->val);
}

/* Compare what was seen at va (offset in its page: va & 4095) with a page
 * that maps pa with a (A_NONE: unmapped). Returns the mismatches. */
static unsigned judge(struct cpu_res *c, uint64_t va, const struct seen *s, unsigned a,
                      uint64_t pa, const char *who)
{
    unsigned f0 = c->fails;
    uint64_t off = va & (GRAN - 1), pw = (pa | off) & ~7ull;
    char what[96];
    if (a == A_NONE) {
        if (s->lk_rc != -MMP_ENOENT) {
            pl_snprintf(what, sizeof(what), "%s: lookup of an unmapped page (rc)", who);
            fail(c, va, what, (uint64_t)-MMP_ENOENT, (uint64_t)s->lk_rc);
        }
        if (s->at_r != PL_FAULT_TRANS || s->at_w != PL_FAULT_TRANS) {
            pl_snprintf(what, sizeof(what), "%s: AT of an unmapped page (fault class r/w)", who);
            fail(c, va, what, PL_FAULT_TRANS * 0x11, (uint64_t)(s->at_r * 16 + s->at_w));
        }
        if (!s->ld) {
            pl_snprintf(what, sizeof(what), "%s: load from an unmapped page did not fault (value)",
                        who);
            fail(c, va, what, 0, s->val);
        }
        return c->fails - f0;
    }
    if (s->lk_rc || s->lk_pa != (pa | off) || s->lk_attrs != attrs_of(a)) {
        pl_snprintf(what, sizeof(what), "%s: lookup (rc, PA, attrs %x)", who, s->lk_attrs);
        fail(c, va, what, pa | off, s->lk_rc ? (uint64_t)s->lk_rc : s->lk_pa);
    }
    if (s->at_r || s->at_pa != (pa | off)) {
        pl_snprintf(what, sizeof(what), "%s: AT read (fault class %d, PA)", who, s->at_r);
        fail(c, va, what, pa | off, s->at_pa);
    }
    if (s->at_w != (a == A_RW ? 0 : PL_FAULT_PERM)) {
        pl_snprintf(what, sizeof(what), "%s: AT write (fault class)", who);
        fail(c, va, what, a == A_RW ? 0 : PL_FAULT_PERM, (uint64_t)s->at_w);
    }
    if (s->ld || s->val != (pw ^ PATTERN)) {
        pl_snprintf(what, sizeof(what), "%s: load (faulted %d, value)", who, s->ld);
        fail(c, va, what, pw ^ PATTERN, s->val);
    }
    if (s->stf >= 0 && s->stf != (a == A_RO)) {
        pl_snprintf(what, sizeof(what), "%s: store of the word's own pattern (faulted)", who);
        fail(c, va, what, a == A_RO, (uint64_t)s->stf);
    }
    return c->fails - f0;
}

static uint64_t word(struct cpu_res *c)
{
    return 8 * rnd(c, GRAN / 8);
}

/* ---- one CPU's actions ---- */

static int map1(uint64_t va, uint64_t pa, unsigned a)
{
    return mmp_pt_map(&spt, va, pa, GRAN, attrs_of(a), 0);
}

/* A page of own region r to change: mostly a hot one. */
static unsigned own_page(struct cpu_res *c, unsigned r)
{
    static const unsigned mixed[3] = { 1, 2, 17 }, block[3] = { 0, 5, 31 };
    if (rnd(c, 10) == 0)
        return is_mixed(r) ? RUN + (unsigned)rnd(c, NPG - RUN) : (unsigned)rnd(c, NPG);
    unsigned run = (is_mixed(r) ? mixed : block)[rnd(c, 3)];
    return run * RUN + (unsigned)rnd(c, RUN);
}

static void own_block_op(struct cpu_res *c, unsigned r)
{
    uint64_t va = va_of(r, 0);
    unsigned n = 0;
    for (unsigned p = 0; p < NPG; p++)
        n += st[r][p] != A_NONE;
    struct mmp_pt_leaf l;
    int block = mmp_pt_lookup(&spt, va, &l) == 0 && l.size == BLK;
    int rc, want;
    AO_fetch_and_add_full(&seq[r], 1);
    if (n == 0) {
        rc = mmp_pt_map(&spt, va, pa_of(r, 0), BLK, attrs_of(A_RW), 0);
        want = 0;
        if (rc == 0) {
            for (unsigned p = 0; p < NPG; p++)
                st[r][p] = A_RW;
            c->block_maps++;
        }
    } else if (block || rnd(c, 2)) {
        /* a block: unmapped whole; a table with leaves: refused, nothing changed */
        rc = mmp_pt_unmap(&spt, va, BLK);
        want = block ? 0 : -MMP_ENOTSUP;
        if (rc == 0 && block) {
            for (unsigned p = 0; p < NPG; p++)
                st[r][p] = A_NONE;
            c->block_unmaps++;
        }
    } else {
        rc = mmp_pt_map(&spt, va, pa_of(r, 0), BLK, attrs_of(A_RW), 0);
        want = -MMP_EEXIST;
    }
    AO_fetch_and_add_full(&seq[r], 1);
    if (rc != want)
        fail(c, va, block ? "own block call on a block (rc)" : "own block call (rc)",
             (uint64_t)want, (uint64_t)rc);
}

static void own_op(struct cpu_res *c, unsigned cpu)
{
    unsigned k = (unsigned)rnd(c, NOWN), r = cpu * NOWN + k;
    c->own_ops++;
    if (!is_mixed(r) && rnd(c, 8) == 0) {
        own_block_op(c, r);
        return;
    }
    unsigned p = own_page(c, r);
    if (!is_mixed(r) && rnd(c, 5) < 3) {
        /* block regions heal: a page not mapped RW, to fold back */
        unsigned q = (unsigned)rnd(c, NPG);
        for (unsigned n = 0; n < NPG && st[r][q] == A_RW; n++)
            q = (q + 1) % NPG;
        p = q;
    }
    unsigned m = st[r][p], nm = m;
    uint64_t va = va_of(r, p), pa = pa_of(r, p);
    struct mmp_pt_leaf l;
    int was_block = mmp_pt_lookup(&spt, va, &l) == 0 && l.size == BLK;
    int rc, want = 0;
    AO_fetch_and_add_full(&seq[r], 1);
    if (m == A_NONE) {
        nm = !is_mixed(r) || rnd(c, 5) ? A_RW : A_RO;
        rc = map1(va, pa, nm);
    } else if (m == A_RO && !is_mixed(r)) {
        nm = A_NONE; /* a read-only page heals by unmap and map */
        rc = mmp_pt_unmap(&spt, va, GRAN);
    } else {
        switch (rnd(c, 3)) {
        case 0:
            nm = A_NONE;
            rc = mmp_pt_unmap(&spt, va, GRAN);
            break;
        case 1:
            nm = m ^ 3;
            rc = mmp_pt_protect(&spt, va, GRAN, attrs_of(nm));
            break;
        default:
            want = -MMP_EEXIST;
            rc = map1(va, pa, A_RW);
            break;
        }
    }
    if (rc == want)
        st[r][p] = (uint8_t)nm;
    AO_fetch_and_add_full(&seq[r], 1);
    if (rc != want) {
        fail(c, va, "own page call (rc; an own region has no other writer)", (uint64_t)want,
             (uint64_t)rc);
        return;
    }
    if (was_block && nm != m)
        c->splits_seen++;
    /* the page, on this CPU: lookup, AT, load */
    struct seen s;
    uint64_t wpa, vw = va + word(c);
    unsigned a = want_of(r, p, &wpa);
    observe(vw, 0, &s);
    judge(c, vw, &s, a, wpa, "own page after the call");
    c->own_checks++;
    if (nm == A_RW && s.lk_rc == 0 && s.lk_size == BLK)
        c->folds_seen++;
}

/* Claim hot page h of shared region i after a map of it succeeded: the
 * previous owner may still be releasing it (its unmap returned, its model
 * not yet updated); a page owned and not being released is a lost update. */
static int claim(struct cpu_res *c, unsigned i, unsigned h, AO_t me)
{
    for (unsigned long spin = 0;; spin++) {
        AO_t o = AO_load_acquire(&owner[i][h]);
        if (o == 0 && AO_compare_and_swap_full(&owner[i][h], 0, me))
            return 0;
        if (AO_load_acquire(&stopping))
            return -1;
        if (o != 0 && !(o & REL)) {
            fail(c, va_of(SH0 + i, shared_hot(h)),
                 "a hot page both CPUs mapped with success (owner)", me, o);
            return -1;
        }
        if (spin > 100000000ul) {
            fail(c, va_of(SH0 + i, shared_hot(h)), "owner never released", 0, o);
            return -1;
        }
    }
}

/*
 * A call of a page's only writer (op 0 map to pa, 1 unmap, 2 protect; a:
 * the attributes):
 * -EAGAIN means a locked entry another CPU's call holds, so retry, for up
 * to 20 s (that CPU's host thread may be descheduled while it holds it).
 */
static int retried(unsigned long *retries, unsigned op, uint64_t va, uint64_t pa, unsigned a)
{
    uint64_t t0 = 0;
    for (;;) {
        int rc = op == 0   ? map1(va, pa, a)
                 : op == 1 ? mmp_pt_unmap(&spt, va, GRAN)
                           : mmp_pt_protect(&spt, va, GRAN, attrs_of(a));
        if (rc != -MMP_EAGAIN || AO_load_acquire(&stopping))
            return rc;
        ++*retries;
        if (!t0)
            t0 = pl_arch_now_us();
        else if (pl_arch_now_us() - t0 > 20000000)
            return rc;
    }
}

static void shared_op(struct cpu_res *c, unsigned cpu)
{
    unsigned i = (unsigned)rnd(c, NSH), h = (unsigned)rnd(c, nhot(i)), r = SH0 + i;
    unsigned p = shared_hot(h);
    uint64_t va = va_of(r, p);
    AO_t me = cpu + 1, o = AO_load_acquire(&owner[i][h]);
    if (o == me) {
        int rc;
        /* Owners keep pages a while (region 1 much longer): runs and
         * whole regions fill and fold, and a later unmap splits them. */
        unsigned m = st[r][p], x = (unsigned)rnd(c, i ? 128 : 12);
        if (m == A_RW && x >= 3)
            return;
        if (m == A_RW && x < 2) {
            AO_store_full(&owner[i][h], me | REL);
            rc = retried(&c->sh_retries, 1, va, 0, A_NONE);
            st[r][p] = A_NONE;
            AO_store_release(&owner[i][h], 0);
            c->sh_unmaps++;
        } else {
            unsigned nm = m ^ 3;
            rc = retried(&c->sh_retries, 2, va, 0, nm);
            st[r][p] = (uint8_t)nm;
            c->sh_protects++;
        }
        if (rc)
            fail(c, va, "owner's unmap / protect of a hot page (rc after -EAGAIN retries)", 0,
                 (uint64_t)rc);
        return;
    }
    int rc = map1(va, pa_of(r, p), A_RW);
    if (rc == 0) {
        if (claim(c, i, h, me) == 0)
            st[r][p] = A_RW;
        c->sh_won++;
        struct mmp_pt_leaf l;
        c->sh_folds += mmp_pt_lookup(&spt, va, &l) == 0 && l.size == BLK;
    } else if (rc == -MMP_EEXIST) {
        c->sh_eexist++;
    } else if (rc == -MMP_EAGAIN) {
        c->sh_eagain++;
    } else {
        fail(c, va, "map of a hot page (rc)", 0, (uint64_t)rc);
    }
}

/*
 * The duel: both CPUs change pages of the same two runs (CPU c the pages
 * p with p % 2 == c), so most calls fold or unfold a run the other CPU is
 * changing too, which locks the run. Each page has one writer, so every
 * result is exact: 0 (after retries of -EAGAIN, a locked entry met); an
 * -EEXIST, or a lookup that disagrees, is an update another call lost.
 * AT may miss the page while the other CPU has the run locked (its
 * break-before-make): counted, not judged.
 */
static void duel_op(struct cpu_res *c, unsigned cpu)
{
    /* One hole at a time per CPU: make one (unmap, or protect read-only),
     * then fill it; a fill that completes the run folds it, the next hole
     * unfolds it. */
    unsigned p = 2 * (unsigned)rnd(c, NDUEL / 2) + cpu;
    for (unsigned q = cpu; q < NDUEL; q += 2)
        if (st[DUEL][q] != A_RW)
            p = q;
    unsigned m = st[DUEL][p];
    unsigned op = m == A_NONE ? 0 : m == A_RO || rnd(c, 8) == 0 ? 2 : 1; /* map, unmap, protect */
    unsigned nm = op == 0 ? A_RW : op == 1 ? A_NONE : m ^ 3;
    uint64_t va = va_of(DUEL, p), pa = pa_of(DUEL, p);
    int rc = retried(&c->duel_retries, op, va, pa, nm);
    c->duel_ops++;
    if (rc) {
        fail(c, va, op == 0 ? "duel: map of this CPU's unmapped page (rc)"
                            : "duel: unmap / protect of this CPU's page (rc)",
             0, (uint64_t)rc);
        st[DUEL][p] = op == 0 && rc == -MMP_EEXIST ? A_RW : (uint8_t)m;
        return;
    }
    st[DUEL][p] = (uint8_t)nm;
    struct mmp_pt_leaf l;
    rc = mmp_pt_lookup(&spt, va, &l);
    uint64_t lpa = rc ? 0 : l.pa + (va - l.va);
    if (nm == A_NONE ? rc != -MMP_ENOENT : rc || lpa != pa || l.attrs != attrs_of(nm))
        fail(c, va, "duel: lookup after the call (rc, PA)", nm == A_NONE ? 0 : pa,
             rc ? (uint64_t)rc : lpa);
    c->duel_folded += rc == 0 && l.kind == MMP_LEAF_CONT;
    uint64_t at_pa;
    int at = pl_arch_translate(tg, va, 0, &at_pa);
    if (nm != A_NONE && at == PL_FAULT_TRANS)
        c->transient++;
    else if (nm == A_NONE ? at != PL_FAULT_TRANS : at || at_pa != pa)
        fail(c, va, "duel: AT read after the call (fault class, PA)", nm == A_NONE ? 0 : pa,
             at ? (uint64_t)at : at_pa);
}

/* A page of the other CPU's own regions, between two equal even counts. */
static void peer_check(struct cpu_res *c, unsigned cpu)
{
    /* Mostly one run of its mixed regions (32 pages, which the other CPU
     * changes often): this CPU's TLB then holds their old translations. */
    unsigned x = (unsigned)rnd(c, 4), r = (cpu ^ 1) * NOWN + (x ? x & 1 : (unsigned)rnd(c, NOWN));
    unsigned p = x ? RUN + (unsigned)rnd(c, RUN)
                 : rnd(c, 8) == 0 && is_mixed(r) ? (unsigned)rnd(c, RUN) : own_page(c, r);
    uint64_t va = va_of(r, p) + word(c), pa;
    AO_t s1 = AO_load_acquire(&seq[r]);
    if (s1 & 1)
        return;
    unsigned a = want_of(r, p, &pa);
    struct seen s;
    observe(va, 1, &s);
    AO_nop_full();
    if (AO_load(&seq[r]) != s1) {
        c->peer_raced++;
        return;
    }
    c->peer_checks++;
    judge(c, va, &s, a, pa, "other CPU's page, stable count");
}

/* Stable pages (either CPU's) and the always-mapped pages of a shared region. */
static void stable_check(struct cpu_res *c)
{
    unsigned r = (unsigned)rnd(c, NCPU) * NOWN + (unsigned)rnd(c, 2), p = (unsigned)rnd(c, RUN);
    uint64_t va = va_of(r, p) + word(c), pa;
    unsigned a = want_of(r, p, &pa);
    struct seen s;
    observe(va, 1, &s);
    judge(c, va, &s, a, pa, "stable page");
    c->stable_checks++;

    r = SH0 + (unsigned)rnd(c, NSH);
    do
        p = (unsigned)rnd(c, NPG);
    while (hot_index(r - SH0, p) >= 0);
    va = va_of(r, p) + word(c);
    pa = pa_of(r, p) | (va & (GRAN - 1));
    observe(va, 0, &s);
    c->sharedmap_checks++;
    if (s.lk_rc || s.lk_pa != pa || s.lk_attrs != attrs_of(A_RW))
        fail(c, va, "lookup of an always-mapped page of a shared region (rc, PA)", pa,
             s.lk_rc ? (uint64_t)s.lk_rc : s.lk_pa);
    /* The MMU may miss it only inside a break-before-make window. */
    if (s.at_r == PL_FAULT_TRANS || s.ld)
        c->transient++;
    else if (s.at_r || s.at_pa != pa || s.val != ((pa & ~7ull) ^ PATTERN))
        fail(c, va, "AT / load of an always-mapped page of a shared region (PA, value)", pa,
             s.at_r ? (uint64_t)s.at_r : s.at_pa != pa ? s.at_pa : s.val);
}

/*
 * TLB shootdown, deterministic: in each round one CPU (the writer) maps a
 * page of its own, the other reads and writes it through the MMU (its
 * TLB now holds the translation), the writer unmaps it or makes it
 * read-only, and the reader's next load or store must fault. Between
 * its two accesses the reader flushes nothing: only the writer's flush
 * hook, a broadcast TLBI or a shootdown IPI, can remove its entry (a
 * local TLBI, or a flush limited to the writer, leaves it in place).
 */
#define NSHOOT 32
static volatile AO_t shoot; /* round * 4 + step */

static int wait_step(struct cpu_res *c, AO_t v)
{
    uint64_t t0 = pl_arch_now_us();
    while (AO_load_acquire(&shoot) < v) {
        if (AO_load_acquire(&stopping))
            return -1;
        if (pl_arch_now_us() - t0 > 20000000) {
            fail(c, v, "TLB shootdown: the other CPU did not reach step", v, AO_load(&shoot));
            return -1;
        }
    }
    return 0;
}

static void shootdown(struct cpu_res *c, unsigned cpu)
{
    for (unsigned k = 0; k < NSHOOT; k++) {
        unsigned w = k & 1, r = w * NOWN + (k >> 1) % 2, p = RUN + (k * 7) % (2 * RUN);
        int unmap = (k >> 2) & 1, rc = 0;
        uint64_t va = va_of(r, p) + 8 * k, pw = pa_of(r, p) + 8 * k, v;
        AO_t base = (AO_t)k * 4;
        if (cpu == w) {
            if (wait_step(c, base))
                return;
            AO_fetch_and_add_full(&seq[r], 1);
            if (st[r][p] == A_NONE)
                rc = map1(va_of(r, p), pa_of(r, p), A_RW);
            else if (st[r][p] == A_RO)
                rc = mmp_pt_protect(&spt, va_of(r, p), GRAN, attrs_of(A_RW));
            st[r][p] = A_RW;
            AO_fetch_and_add_full(&seq[r], 1);
            AO_store_release(&shoot, base + 1);
            if (wait_step(c, base + 2))
                return;
            AO_fetch_and_add_full(&seq[r], 1);
            rc |= unmap ? mmp_pt_unmap(&spt, va_of(r, p), GRAN)
                        : mmp_pt_protect(&spt, va_of(r, p), GRAN, attrs_of(A_RO));
            st[r][p] = unmap ? A_NONE : A_RO;
            AO_fetch_and_add_full(&seq[r], 1);
            if (rc)
                fail(c, va, "TLB shootdown: the writer's calls (rc)", 0, (uint64_t)rc);
            AO_store_release(&shoot, base + 3);
            continue;
        }
        if (wait_step(c, base + 1))
            return;
        if (pl_arch_load(va, &v) || v != (pw ^ PATTERN) || pl_arch_access(va, 1, v))
            fail(c, va, "TLB shootdown: load / store of the mapped page (value)", pw ^ PATTERN,
                 v);
        AO_store_release(&shoot, base + 2);
        if (wait_step(c, base + 3))
            return;
        int lf = pl_arch_load(va, &v), sf = lf || pl_arch_access(va, 1, v);
        if (unmap ? !lf : lf || !sf)
            fail(c, va,
                 unmap ? "TLB shootdown: load after the other CPU unmapped the page (faulted)"
                       : "TLB shootdown: store after the other CPU made the page read-only "
                         "(faulted)",
                 1, unmap ? (uint64_t)lf : (uint64_t)sf);
        c->shootdowns++;
        AO_store_release(&shoot, base + 4);
    }
}

static void worker(void *arg)
{
    struct cpu_res *c = arg;
    unsigned cpu = pl_arch_cpu();
    AO_fetch_and_add_full(&arrived, 1);
    uint64_t t0 = pl_arch_now_us();
    while (AO_load_acquire(&arrived) < NCPU)
        if (pl_arch_now_us() - t0 > 20000000) {
            fail(c, 0, "the other CPU did not arrive within 20 s (arrived)", NCPU,
                 AO_load(&arrived));
            break;
        }
    c->t_start = pl_arch_now_us();
    for (unsigned n = 0; n < PL_SMP_OPS && !AO_load_acquire(&stopping); n++) {
        switch (rnd(c, 10)) {
        case 0:
        case 1: own_op(c, cpu); break;
        case 2:
        case 3: shared_op(c, cpu); break;
        case 4:
        case 5: duel_op(c, cpu); break;
        case 6:
        case 7:
        case 8: peer_check(c, cpu); break;
        default: stable_check(c); break;
        }
    }
    c->t_end = pl_arch_now_us();
    shootdown(c, cpu);
}

/* ---- setup and the final comparison ---- */

/* Map [va, va+size) as shared calls do it: one leaf slot at a time. */
static int map_slots(uint64_t va, uint64_t pa, uint64_t size, uint32_t attrs)
{
    static const uint64_t slots[] = { 1ull << 30, 2ull << 20, 4096 };
    while (size) {
        uint64_t sz = 4096;
        for (unsigned i = 0; i < PL_ARRAY_SIZE(slots); i++)
            if (!((va | pa) & (slots[i] - 1)) && size >= slots[i]) {
                sz = slots[i];
                break;
            }
        int rc = mmp_pt_map(&spt, va, pa, sz, attrs, 0);
        if (rc)
            return rc;
        va += sz, pa += sz, size -= sz;
    }
    return 0;
}

struct kinds {
    unsigned long leaves, blocks, conts, pages;
};
static int count_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct kinds *k = arg;
    k->leaves++;
    k->blocks += l->kind == MMP_LEAF_BLOCK;
    k->conts += l->kind == MMP_LEAF_CONT;
    k->pages += l->kind == MMP_LEAF_PAGE;
    return 0;
}

/* Every page of the window, quiescent: lookup, AT, load against the models. */
static unsigned check_all(struct cpu_res *c, struct kinds *k)
{
    unsigned f0 = c->fails;
    for (unsigned r = 0; r < NREG; r++) {
        for (unsigned p = 0; p < NPG; p++) {
            uint64_t pa;
            unsigned a = want_of(r, p, &pa);
            if (is_shared(r)) {
                int h = hot_index(r - SH0, p);
                AO_t o = h >= 0 ? owner[r - SH0][h] : 1;
                if ((o != 0) != (a != A_NONE) || (o & REL))
                    fail(c, va_of(r, p), "hot page: owner and model disagree (owner)",
                         a != A_NONE, o);
            }
            struct seen s;
            uint64_t va = va_of(r, p) + word(c);
            observe(va, 0, &s);
            judge(c, va, &s, a, pa, "final table");
        }
    }
    *k = (struct kinds){ 0, 0, 0, 0 };
    mmp_pt_walk(&spt, win, NREG * BLK, count_leaf, k);
    return c->fails - f0;
}

static void print_log(const struct cpu_res *c)
{
    for (unsigned i = 0; i < c->nlog; i++)
        pl_printf("%s\n", c->log[i]);
}

void pl_run_smp(void)
{
    static struct pl_target t;
    const char *why = 0;
    if (pl_arch_smp_target(&t, &why)) {
        pl_skip(why, "SMP: two CPUs on one MMP_PT_SHARED table");
        return;
    }
    t.cfg.flags |= MMP_PT_SHARED;
    tg = &t;
    win = t.window;
    struct mmp_pt_ops ops = {.alloc_table = smp_alloc,
                             .free_table = smp_free,
                             .tlb_flush = smp_flush,
                             .retire_table = smp_retire,
                             .ctx = (void *)(uintptr_t)&t};
    struct cpu_res *c0 = &res[0];
    unsigned pages0 = pl_arena_pages();
    pl_printf("== SMP: %s\n", t.name);
    int rc = mmp_pt_init(&spt, &t.cfg, &ops);
    if (rc) {
        pl_result(0, "SMP %s: mmp_pt_init (rc %d)", t.name, rc);
        return;
    }
    uint64_t lo = (uint64_t)(uintptr_t)__image_start & ~(GRAN - 1);
    uint64_t hi = ((uint64_t)(uintptr_t)__image_end + GRAN - 1) & ~(GRAN - 1);
    rc = map_slots(lo, lo, hi - lo, MMP_PROT_READ | MMP_PROT_WRITE | MMP_PROT_EXEC |
                                        MMP_PROT_GLOBAL);
    for (unsigned i = 0; i < pl_arch_nident && !rc; i++)
        rc = map_slots(pl_arch_ident[i].pa, pl_arch_ident[i].pa, pl_arch_ident[i].size,
                       pl_arch_ident[i].attrs);
    if (rc || pl_arch_activate(&t, &spt)) {
        pl_result(0, "SMP %s: identity map with shared calls and MMU switch (rc %d)", t.name, rc);
        mmp_pt_fini(&spt);
        return;
    }
    /* The regions' first state, by this CPU alone. */
    stamp(pl_scratch_lo + (32ull << 20), NREG * RUN * GRAN);
    stamp(pa_of(0, 0), NREG * BLK);
    for (unsigned r = 0; r < NREG && !rc; r++) {
        if (is_mixed(r)) {
            for (unsigned p = 0; p < RUN && !rc; p++)
                rc = map1(va_of(r, p), stable_pa(r, p), A_RO);
            continue;
        }
        rc = mmp_pt_map(&spt, va_of(r, 0), pa_of(r, 0), BLK, attrs_of(A_RW), 0);
        for (unsigned p = 0; p < NPG; p++)
            st[r][p] = A_RW;
        for (unsigned h = 0; is_shared(r) && h < nhot(r - SH0) && !rc; h++) {
            rc = mmp_pt_unmap(&spt, va_of(r, shared_hot(h)), GRAN);
            st[r][shared_hot(h)] = A_NONE;
        }
    }
    struct kinds k;
    for (unsigned i = 0; i < NCPU; i++)
        res[i].rng = PL_SMP_SEED + i * 0x9e3779b97f4a7c15ull;
    unsigned bad = rc ? 1 : check_all(c0, &k);
    pl_result(!bad, "SMP %s: setup: %u regions mapped with shared calls and checked (%lu leaves)",
              t.name, NREG, k.leaves);
    print_log(c0);
    if (bad)
        goto out;
    c0->nlog = c0->fails = 0;
    AO_store_release(&stopping, 0);

    uint64_t t0 = pl_arch_now_us();
    if (pl_arch_smp_start(&t, &spt, worker, &res[1], &why)) {
        pl_skip(why, "SMP %s: two CPUs on one MMP_PT_SHARED table", t.name);
        goto out;
    }
    worker(&res[0]);
    if (pl_arch_smp_join(240ull * 1000000)) {
        pl_result(0, "SMP %s: CPU 1 did not finish within 240 s", t.name);
        pl_finish(); /* CPU 1 may still use the table: no teardown */
    }
    uint64_t us = pl_arch_now_us() - t0;
    unsigned fails = 0;
    struct cpu_res sum;
    memset(&sum, 0, sizeof(sum));
    for (unsigned i = 0; i < NCPU; i++) {
        struct cpu_res *c = &res[i];
        print_log(c);
        fails += c->fails;
        sum.own_ops += c->own_ops, sum.own_checks += c->own_checks;
        sum.block_maps += c->block_maps, sum.block_unmaps += c->block_unmaps;
        sum.folds_seen += c->folds_seen, sum.splits_seen += c->splits_seen;
        sum.sh_won += c->sh_won, sum.sh_eexist += c->sh_eexist, sum.sh_eagain += c->sh_eagain;
        sum.sh_unmaps += c->sh_unmaps, sum.sh_protects += c->sh_protects;
        sum.sh_retries += c->sh_retries, sum.sh_folds += c->sh_folds;
        sum.peer_checks += c->peer_checks, sum.peer_raced += c->peer_raced;
        sum.stable_checks += c->stable_checks, sum.sharedmap_checks += c->sharedmap_checks;
        sum.transient += c->transient, sum.flushes += c->flushes;
        sum.duel_ops += c->duel_ops, sum.duel_retries += c->duel_retries;
        sum.duel_folded += c->duel_folded, sum.shootdowns += c->shootdowns;
    }
    pl_result(fails == 0,
              "SMP %s: 2 CPUs, %u actions each, in %lu ms: calls on own regions, shared maps, "
              "checks of the other CPU's pages (%u mismatches)",
              t.name, PL_SMP_OPS, us / 1000, fails);
    pl_printf("smp: own regions: %lu calls (%lu block maps, %lu block unmaps, %lu seen splitting "
              "a block, %lu seen folding one), %lu pages checked after them\n",
              sum.own_ops, sum.block_maps, sum.block_unmaps, sum.splits_seen, sum.folds_seen,
              sum.own_checks);
    pl_printf("smp: shared regions: %lu maps won (%lu seen folding the region into a block), "
              "%lu -EEXIST, %lu -EAGAIN; owners: %lu unmaps, %lu protects, %lu -EAGAIN retries\n",
              sum.sh_won, sum.sh_folds, sum.sh_eexist, sum.sh_eagain, sum.sh_unmaps,
              sum.sh_protects, sum.sh_retries);
    pl_printf("smp: duel runs: %lu calls (%lu -EAGAIN retries), %lu left the page in a "
              "folded run\n",
              sum.duel_ops, sum.duel_retries, sum.duel_folded);
    pl_printf("smp: the other CPU's pages checked at a stable count: %lu (%lu raced a change); "
              "stable pages %lu; always-mapped shared pages %lu; %lu translations missed "
              "inside another CPU's break-before-make; %lu flushes (reaching both CPUs)\n",
              sum.peer_checks, sum.peer_raced, sum.stable_checks, sum.sharedmap_checks,
              sum.transient, sum.flushes);
    uint64_t ov_lo = res[0].t_start > res[1].t_start ? res[0].t_start : res[1].t_start;
    uint64_t ov_hi = res[0].t_end < res[1].t_end ? res[0].t_end : res[1].t_end;
    pl_printf("smp: TLB shootdowns: %lu of %u rounds checked (a page the other CPU had in "
              "its TLB, unmapped or made read-only, then accessed by it)\n",
              sum.shootdowns, NSHOOT);
    pl_printf("smp: CPU 0 ran %lu ms, CPU 1 %lu ms, both at once %lu ms\n",
              (res[0].t_end - res[0].t_start) / 1000, (res[1].t_end - res[1].t_start) / 1000,
              ov_hi > ov_lo ? (ov_hi - ov_lo) / 1000 : 0);
    pl_result(sum.peer_checks > 0 && sum.sh_won > 0 && sum.sh_eexist + sum.sh_eagain > 0 &&
                  sum.shootdowns == NSHOOT,
              "SMP %s: the CPUs met (cross-CPU checks %lu, lost map races %lu, TLB "
              "shootdown rounds %lu)",
              t.name, sum.peer_checks, sum.sh_eexist + sum.sh_eagain, sum.shootdowns);

    c0->nlog = c0->fails = 0;
    bad = check_all(c0, &k);
    struct mmp_pt_usage u;
    struct mmp_pt_stats sts;
    mmp_pt_stats(&spt, &sts);
    int urc = mmp_pt_usage(&spt, &u);
    pl_result(!bad && !urc && u.table_pages == sts.table_pages,
              "SMP %s: final table equals the models (%u pages: %lu leaves, %lu blocks, %lu in "
              "runs, %lu pages; %lu table pages, stats %lu)",
              t.name, NREG * NPG, k.leaves, k.blocks, k.conts, k.pages, u.table_pages,
              sts.table_pages);
    print_log(c0);
out:
    pl_arch_deactivate();
    unsigned changed = 0;
    for (unsigned i = 0; i < nretired; i++) {
        changed += checksum(retired[i].pa) != retired[i].sum;
        pl_free_table(0, (void *)(uintptr_t)retired[i].pa, retired[i].pa, GRAN);
    }
    mmp_pt_fini(&spt);
    pl_result(changed == 0 && !retire_overflow && pl_arena_pages() == pages0,
              "SMP %s: %u retired table pages unchanged since retirement, every table page "
              "given back (%u left)",
              t.name, nretired, pl_arena_pages() - pages0);
}
