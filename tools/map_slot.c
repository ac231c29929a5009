/* SPDX-License-Identifier: MIT */
/*
 * mmport bench map --pattern fault | split: single-slot page-table calls,
 * a hypervisor's hot path, per format, on an exclusive table and on a
 * shared one (MMP_PT_SHARED), from one thread.
 *
 *   fault  one mmp_pt_map of one granule per call, every granule of the
 *          range once, in a fixed random order; the output address is
 *          offset by one granule from the input address, so no larger leaf
 *          (block or contiguous run) is possible: every call installs one
 *          page, and the tables are built on the way.
 *   split  the range mapped as blocks of the format's smallest block size
 *          (2 MiB with 4K pages; untimed), then 64 one-granule unmaps per
 *          block at scattered offsets (a fixed random choice, in random
 *          order), block after block: the first unmap in a block splits
 *          it. Only the unmaps are timed.
 *
 * Beside each figure, a reference walk measured in the same run on the
 * same table: a minimal loop that reads the table's levels from the root
 * and stores one entry per operation - the physical limit of the work on
 * this machine. For split it also does the split's own stores (the
 * block's table filled with its pages and linked, before the block's
 * first unmap) and, in formats whose split makes contiguous runs, the
 * stores of unmaking a run the first time one of its pages goes (every
 * entry invalid, then rewritten without the contiguous bit: the
 * architecture's break-before-make). The final table is the one the
 * library left; barriers and TLB flushes are not stores and not in it.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "map_slot.h"
#include "pt_formats.h"

#define UNMAPS_PER_BLOCK 64u
#define RW (MMP_PROT_READ | MMP_PROT_WRITE)

static const char cmd[] = "bench map";

/* ---- the order of the operations --------------------------------------- */

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27; /* xorshift64* */
    return *s * 0x2545f4914f6cdd1dull;
}

/* a[0..n) = a random permutation of 0..n-1 (fixed seed: the same every run). */
static void shuffle(uint32_t *a, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++)
        a[i] = (uint32_t)i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(rnd(seed) % i);
        uint32_t x = a[i - 1];
        a[i - 1] = a[j], a[j] = x;
    }
}

/* ---- the reference walk ------------------------------------------------ */

/*
 * Reads a table the way the MMU does, with nothing else: the index of
 * each level from the input address, the next table from the entry.
 * Table pages come from the benchmark's pool (phys_to_virt NULL: the
 * physical address is the pointer), below 2^48; in every format here a
 * table descriptor holds such an address in place, bits 47 down to the
 * granule's, and bit 0 is set in every valid table descriptor.
 */
struct ref {
    uint64_t *root;
    unsigned levels;
    uint64_t addr_mask;
    unsigned shift[6];
    uint64_t mask[6];
};

#define REF_ADDR_BITS 48

static bool ref_init(struct ref *w, const struct mmp_pt *pt, const struct mmp_pt_info *inf)
{
    unsigned gs = (unsigned)__builtin_ctz(inf->granule), per = gs - 3;
    w->root = (uint64_t *)(uintptr_t)mmp_pt_root(pt);
    w->levels = inf->levels;
    w->addr_mask = ((1ull << REF_ADDR_BITS) - 1) & ~(uint64_t)(inf->granule - 1);
    if ((uintptr_t)w->root >> REF_ADDR_BITS || w->levels < 2 || w->levels > 5)
        return false;
    for (unsigned d = 0; d < w->levels; d++) {
        w->shift[d] = gs + (w->levels - 1 - d) * per;
        unsigned nb = d ? per : inf->va_bits - w->shift[0]; /* the root: concatenation too */
        w->mask[d] = (1ull << nb) - 1;
    }
    return true;
}

/* The table at depth `depth` on va's path (NULL where the walk ends). */
static inline __attribute__((always_inline)) uint64_t *ref_table(const struct ref *w,
                                                                 unsigned depth, uint64_t va)
{
    uint64_t *t = w->root;
    for (unsigned d = 0; d < depth; d++) {
        uint64_t e = t[(va >> w->shift[d]) & w->mask[d]];
        if (!(e & 1))
            return NULL;
        t = (uint64_t *)(uintptr_t)(e & w->addr_mask);
    }
    return t;
}

static inline unsigned ref_idx(const struct ref *w, unsigned d, uint64_t va)
{
    return (unsigned)((va >> w->shift[d]) & w->mask[d]);
}

/* The fault pattern's reference: for each operation the walk to the
 * last level and the store of its leaf, v0 + (va - va0). The levels are
 * constants in each instance, as in the library's own. */
#define REF_FAULT(n)                                                                       \
    static __attribute__((noinline)) int ref_fault_##n(const struct ref *w,                \
                                                       const uint32_t *ord, size_t nops,   \
                                                       uint64_t va0, uint64_t g,           \
                                                       uint64_t v0)                        \
    {                                                                                      \
        for (size_t i = 0; i < nops; i++) {                                                \
            uint64_t off = (uint64_t)ord[i] * g, va = va0 + off;                           \
            uint64_t *t = ref_table(w, n - 1, va);                                         \
            if (!t)                                                                        \
                return -1;                                                                 \
            t[ref_idx(w, n - 1, va)] = v0 + off;                                           \
        }                                                                                  \
        return 0;                                                                          \
    }
REF_FAULT(2)
REF_FAULT(3)
REF_FAULT(4)
REF_FAULT(5)

static int ref_fault(const struct ref *w, const uint32_t *ord, size_t nops, uint64_t va0,
                     uint64_t g, uint64_t v0)
{
    switch (w->levels) {
    case 2: return ref_fault_2(w, ord, nops, va0, g, v0);
    case 3: return ref_fault_3(w, ord, nops, va0, g, v0);
    case 4: return ref_fault_4(w, ord, nops, va0, g, v0);
    default: return ref_fault_5(w, ord, nops, va0, g, v0);
    }
}

/* Contiguous runs exist in the arm64 formats only, whose descriptors are
 * valid with bit 0 set (Arm ARM D8.3.1); unmaking one without FEAT_BBM
 * level 2 is break-before-make: every entry stored invalid, then
 * rewritten without the contiguous bit (D8.16.1). */
#define REF_VALID 1ull

/* What the split pattern's reference needs to know of the format. */
struct split_ref {
    uint64_t va0, g, bsz; /* first address, granule, block size */
    uint64_t v0;          /* the page at va0 as the split writes it, without run bit */
    uint64_t cont;        /* the contiguous bit of the split's runs; 0: no runs */
    unsigned run;         /* pages per run */
};

/* The split pattern's reference: per block, its table filled and linked,
 * then its unmaps (ord: UNMAPS_PER_BLOCK page numbers per block). */
#define REF_SPLIT(n)                                                                       \
    static __attribute__((noinline)) int ref_split_##n(const struct ref *w,                \
                                                       const struct split_ref *x,          \
                                                       const uint32_t *ord, size_t nblk)   \
    {                                                                                      \
        size_t per = (size_t)(x->bsz / x->g);                                              \
        for (size_t b = 0; b < nblk; b++) {                                                \
            uint64_t vb = x->va0 + b * x->bsz, v = x->v0 + b * x->bsz;                     \
            uint64_t *p = ref_table(w, n - 2, vb);                                         \
            if (!p)                                                                        \
                return -1;                                                                 \
            uint64_t *slot = &p[ref_idx(w, n - 2, vb)], te = *slot;                        \
            uint64_t *c = (uint64_t *)(uintptr_t)(te & w->addr_mask);                      \
            for (size_t k = 0; k < per; k++, v += x->g)                                    \
                c[k] = v | x->cont;                                                        \
            *slot = te;                                                                    \
            for (size_t k = 0; k < UNMAPS_PER_BLOCK; k++) {                                \
                uint64_t va = vb + (uint64_t)ord[b * UNMAPS_PER_BLOCK + k] * x->g;         \
                uint64_t *t = ref_table(w, n - 1, va);                                     \
                if (!t)                                                                    \
                    return -1;                                                             \
                unsigned i = ref_idx(w, n - 1, va);                                        \
                if (t[i] & x->cont) { /* break-before-make of the run */                   \
                    unsigned lo = i & ~(x->run - 1);                                       \
                    for (unsigned r = 0; r < x->run; r++)                                  \
                        t[lo + r] &= ~REF_VALID;                                           \
                    for (unsigned r = 0; r < x->run; r++)                                  \
                        t[lo + r] = (t[lo + r] | REF_VALID) & ~x->cont;                    \
                }                                                                          \
                t[i] = 0;                                                                  \
            }                                                                              \
        }                                                                                  \
        return 0;                                                                          \
    }
REF_SPLIT(2)
REF_SPLIT(3)
REF_SPLIT(4)
REF_SPLIT(5)

static int ref_split(const struct ref *w, const struct split_ref *x, const uint32_t *ord,
                     size_t nblk)
{
    switch (w->levels) {
    case 2: return ref_split_2(w, x, ord, nblk);
    case 3: return ref_split_3(w, x, ord, nblk);
    case 4: return ref_split_4(w, x, ord, nblk);
    default: return ref_split_5(w, x, ord, nblk);
    }
}

/* The thread's CPU time in ns: the figure other processes on the machine
 * do not inflate (they still share its caches). */
static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ---- one format, one mode ----------------------------------------------- */

static const char *const pattern_names[] = {"fault", "split"};
static const char *const mode_names[] = {"exclusive", "shared"};

struct slot_row {
    double ns, ref_ns;         /* per operation, wall time, best of the reps */
    double cpu_ns, ref_cpu_ns; /* the same in the thread's CPU time */
    size_t ops;
    struct mmp_pt_stats d; /* counters of the timed operations */
    uint64_t table_pages;
};

/* 52-bit layouts: output addresses with the moved OA bits set (as the
 * default bench map run). */
static uint64_t pa_base(const struct mmp_pt_config *cfg)
{
    return cfg->pa_bits == 52 ? 0xc000100000000ull : 4ull << 30;
}

/* The smallest block size of the format (0: none). */
static uint64_t smallest_block(const struct mmp_pt_info *inf)
{
    uint64_t b = inf->block_sizes & ~(uint64_t)(2 * inf->granule - 1);
    return b & (0 - b);
}

/* What a split writes in this format, found on a small table of its own:
 * one block, one page unmapped; a page of another run then shows the
 * run bit, one of the unmapped page's run the plain entry. */
static int split_probe(const struct mmp_pt_config *cfg, const struct mmp_pt_info *inf,
                       uint64_t va0, uint64_t pa0, uint64_t bsz, struct split_ref *x)
{
    struct mmp_pt pt;
    struct mmp_pt_ops ops = bench_map_ops(false);
    struct mmp_pt_leaf a, b;
    uint64_t g = inf->granule;
    int rc = mmp_pt_init(&pt, cfg, &ops);
    if (rc)
        return rc;
    if (!(rc = mmp_pt_map(&pt, va0, pa0, bsz, RW, 0)) && !(rc = mmp_pt_unmap(&pt, va0, g)) &&
        !(rc = mmp_pt_lookup(&pt, va0 + bsz / 2, &a)))
        rc = mmp_pt_lookup(&pt, va0 + g, &b);
    mmp_pt_fini(&pt);
    if (rc)
        return rc;
    x->va0 = va0, x->g = g, x->bsz = bsz;
    x->v0 = b.desc - g;
    x->cont = a.kind == MMP_LEAF_CONT ? (a.desc - bsz / 2) ^ x->v0 : 0;
    uint64_t runs = inf->cont_sizes & ~(uint64_t)(g - 1);
    x->run = x->cont ? (unsigned)((runs & (0 - runs)) / g) : 1;
    return 0;
}

static __attribute__((noinline)) int slot_run(int pattern, const char *name, bool shared, uint64_t bytes, int reps,
                    struct slot_row *row)
{
    const struct cli_pt_format *fmt = cli_pt_format(name);
    struct mmp_pt_config cfg = fmt->cfg;
    if (shared)
        cfg.flags |= MMP_PT_SHARED;
    struct mmp_pt_ops ops = bench_map_ops(false);
    struct mmp_pt pt;
    struct mmp_pt_info inf;
    int rc = mmp_pt_init(&pt, &cfg, &ops);
    if (rc)
        return cli_error(cmd, "cannot create a %s table: %s", name, mmp_strerror(rc));
    mmp_pt_info(&pt, &inf);
    mmp_pt_fini(&pt);
    uint64_t g = inf.granule, va0 = 1ull << 30, bsz = smallest_block(&inf);
    size_t nblk = bsz ? (size_t)(bytes / bsz) : 0;
    size_t nops = pattern == SLOT_FAULT ? (size_t)(bytes / g) : nblk * UNMAPS_PER_BLOCK;
    /* fault: every page, one granule off; split: blocks one block off
     * (no larger block, no run of blocks) */
    uint64_t pa0 = pa_base(&cfg) + (pattern == SLOT_FAULT ? g : bsz);
    struct split_ref x = {0};
    if (pattern == SLOT_SPLIT) {
        if (!nblk || bsz / g < UNMAPS_PER_BLOCK)
            return cli_error(cmd, "%s: no blocks in %" PRIu64 " bytes", name, bytes);
        if ((rc = split_probe(&cfg, &inf, va0, pa0, bsz, &x)))
            return cli_error(cmd, "%s split: %s", name, mmp_strerror(rc));
    }
    uint32_t *ord = malloc(nops * sizeof *ord), *tmp = NULL;
    if (!ord)
        return cli_error(cmd, "out of memory");
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    if (pattern == SLOT_FAULT) {
        shuffle(ord, nops, &seed);
    } else {
        size_t per = (size_t)(bsz / g);
        if (!(tmp = malloc(per * sizeof *tmp))) {
            free(ord);
            return cli_error(cmd, "out of memory");
        }
        for (size_t b = 0; b < nblk; b++) { /* 64 of the block's pages, shuffled */
            shuffle(tmp, per, &seed);
            memcpy(ord + b * UNMAPS_PER_BLOCK, tmp, UNMAPS_PER_BLOCK * sizeof *ord);
        }
        free(tmp);
    }
    row->ns = row->ref_ns = row->cpu_ns = row->ref_cpu_ns = 1e30;
    row->ops = nops;
    for (int rep = 0; rep < reps && !rc; rep++) {
        struct mmp_pt_stats s0, s1;
        struct ref w;
        if ((rc = mmp_pt_init(&pt, &cfg, &ops)))
            break;
        if (pattern == SLOT_SPLIT)
            for (size_t b = 0; b < nblk && !rc; b++)
                rc = mmp_pt_map(&pt, va0 + b * bsz, pa0 + b * bsz, bsz, RW, 0);
        mmp_pt_stats(&pt, &s0);
        double t0 = bench_map_now_ns(), c0 = cpu_ns();
        if (pattern == SLOT_FAULT)
            for (size_t i = 0; i < nops && !rc; i++) {
                uint64_t off = (uint64_t)ord[i] * g;
                rc = mmp_pt_map(&pt, va0 + off, pa0 + off, g, RW, 0);
            }
        else
            for (size_t i = 0; i < nops && !rc; i++)
                rc = mmp_pt_unmap(&pt, va0 + (i / UNMAPS_PER_BLOCK) * bsz + (uint64_t)ord[i] * g,
                                  g);
        double t = bench_map_now_ns() - t0, c = cpu_ns() - c0;
        mmp_pt_stats(&pt, &s1);
        if (!rc && t / (double)nops < row->ns) {
            row->ns = t / (double)nops;
            bench_map_stats_delta(&s0, &s1, &row->d);
            row->table_pages = s1.table_pages;
        }
        if (!rc && c / (double)nops < row->cpu_ns)
            row->cpu_ns = c / (double)nops;
        /* The reference on the table the calls built. */
        struct mmp_pt_leaf l0, l1;
        if (!rc && (rc = mmp_pt_lookup(&pt, va0, &l0)) == -MMP_ENOENT)
            rc = 0, l0.desc = 0;
        if (!rc && ref_init(&w, &pt, &inf)) {
            t0 = bench_map_now_ns(), c0 = cpu_ns();
            int r = pattern == SLOT_FAULT ? ref_fault(&w, ord, nops, va0, g, l0.desc)
                                          : ref_split(&w, &x, ord, nblk);
            t = bench_map_now_ns() - t0, c = cpu_ns() - c0;
            if (c / (double)nops < row->ref_cpu_ns)
                row->ref_cpu_ns = c / (double)nops;
            /* it wrote what was there: the library still finds it */
            if (r || mmp_pt_lookup(&pt, va0, &l1) != (l0.desc ? 0 : -MMP_ENOENT) ||
                (l0.desc && l1.desc != l0.desc))
                rc = cli_error(cmd, "%s %s: the reference walk went wrong", name,
                               pattern_names[pattern]);
            else if (t / (double)nops < row->ref_ns)
                row->ref_ns = t / (double)nops;
        }
        mmp_pt_fini(&pt);
        if (rc < 0)
            rc = cli_error(cmd, "%s %s %s: %s", name, pattern_names[pattern],
                           mode_names[shared], mmp_strerror(rc));
    }
    free(ord);
    return rc;
}

/* ---- the run ------------------------------------------------------------ */

static void print_slot(int pattern, const char *name, int mode, const struct slot_row *r,
                       double excl_ns, double excl_cpu_ns, bool json, bool *first)
{
    double vs_ref = r->ref_ns < 1e30 ? r->ns / r->ref_ns : 0;
    if (json) {
        printf("%s\n  {\"format\": \"%s\", \"pattern\": \"%s\", \"mode\": \"%s\", \"ops\": %zu"
               ", \"ns_per_op\": %.2f, \"ref_ns_per_op\": %.2f, \"vs_ref\": %.3f"
               ", \"cpu_ns_per_op\": %.2f, \"ref_cpu_ns_per_op\": %.2f, \"vs_ref_cpu\": %.3f",
               *first ? "" : ",", name, pattern_names[pattern], mode_names[mode], r->ops, r->ns,
               r->ref_ns, vs_ref, r->cpu_ns, r->ref_cpu_ns, r->cpu_ns / r->ref_cpu_ns);
        if (mode)
            printf(", \"vs_exclusive\": %.3f, \"vs_exclusive_cpu\": %.3f", r->ns / excl_ns,
                   r->cpu_ns / excl_cpu_ns);
        printf(", \"table_pages\": %" PRIu64 ", \"entries_written\": %" PRIu64
               ", \"barriers\": %" PRIu64 ", \"flushes\": %" PRIu64 ", \"bbm\": %" PRIu64 "}",
               r->table_pages, r->d.entries_written, r->d.barriers, r->d.flushes, r->d.bbm);
    } else {
        char ve[16] = "-";
        if (mode)
            snprintf(ve, sizeof ve, "%.2fx", r->ns / excl_ns);
        printf("%-*s %-5s %-9s %6zu %8.2f %7.2f %7.2f %6.2fx %6s %6" PRIu64 " %6" PRIu64
               " %6" PRIu64 "\n",
               bench_map_fmt_width(), name, pattern_names[pattern], mode_names[mode], r->ops, r->ns,
               r->cpu_ns, r->ref_ns, vs_ref, ve, r->d.barriers, r->d.flushes, r->d.bbm);
    }
    *first = false;
}

int bench_map_slot(int pattern, const char *only, uint64_t bytes, int reps, bool json)
{
    bool first = true;
    if (json)
        printf("[");
    else
        printf("%-*s %-5s %-9s %6s %8s %7s %7s %7s %6s %6s %6s %6s\n", bench_map_fmt_width(),
               "format", "work", "mode", "ops", "ns/op", "cpu ns", "ref ns", "vs ref", "vs exc",
               "barr", "flush", "bbm");
    for (unsigned f = 0; f < (only ? 1 : bench_map_nfmts); f++) {
        const char *name = only ? only : bench_map_fmts[f];
        struct slot_row r[2];
        for (int m = 0; m < 2; m++) {
            int rc = slot_run(pattern, name, m == 1, bytes, reps, &r[m]);
            if (rc)
                return rc;
        }
        progress_suspend(&bench_map_pr);
        for (int m = 0; m < 2; m++)
            print_slot(pattern, name, m, &r[m], r[0].ns, r[0].cpu_ns, json, &first);
        progress_resume(&bench_map_pr);
    }
    if (json)
        printf("\n]\n");
    return 0;
}
