/* SPDX-License-Identifier: MIT */
/*
 * mmport bench map: page-table map/protect/unmap speed per format and leaf
 * policy; --depth: run-time vs compile-time paging depth; --pattern
 * vmalloc: naive / eager / lazy batching of barriers and flushes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <mmport/mmport.h>

#include "cli.h"
#include "plot_svg.h"
#include "progress.h"
#include "map_slot.h"
#include "pt_formats.h"

/* Elapsed time on a terminal while the rows come (suspended around them). */
struct progress bench_map_pr;

double bench_map_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}
#define now_ns bench_map_now_ns

/* ---- ops: heap tables, a flush that costs a system call or nothing ---- */

/*
 * Table pages come from a pre-faulted pool, as a hypervisor's own table
 * allocator would give them: the benchmark measures the engine, not the
 * kernel's page faults on fresh heap memory. Free lists per power-of-two
 * size, carved from one buffer touched up front.
 */
#define POOL_BYTES (64u << 20)
static struct {
    unsigned char *buf;
    size_t used;
    void *free[32];
} pool;

static unsigned size_class(size_t bytes)
{
    unsigned c = 0;
    while (((size_t)1 << c) < bytes)
        c++;
    return c;
}

static void *b_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    (void)ctx;
    unsigned c = size_class(bytes);
    void *p = pool.free[c];
    if (p) {
        pool.free[c] = *(void **)p;
    } else {
        if (!pool.buf) {
            pool.buf = aligned_alloc(1u << 20, POOL_BYTES);
            if (!pool.buf)
                return NULL;
            memset(pool.buf, 0, POOL_BYTES);
        }
        size_t sz = (size_t)1 << c, off = (pool.used + sz - 1) & ~(sz - 1);
        if (off + sz > POOL_BYTES)
            return NULL;
        p = pool.buf + off;
        pool.used = off + sz;
    }
    *pa = (uint64_t)(uintptr_t)p;
    return p;
}

static void b_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)ctx;
    (void)pa;
    unsigned c = size_class(bytes);
    *(void **)va = pool.free[c];
    pool.free[c] = va;
}

static void flush_syscall(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    (void)ctx;
    (void)va;
    (void)size;
    (void)flags;
    syscall(SYS_getppid); /* stand-in for a TLB-flush hypercall or ioctl */
}

static void flush_noop(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    (void)ctx;
    (void)va;
    (void)size;
    (void)flags;
}

static bool use_heap; /* --heap: the built-in allocator (NULL ops) */

struct mmp_pt_ops bench_map_ops(bool syscall_flush)
{
    struct mmp_pt_ops o = {.alloc_table = b_alloc,
                           .free_table = b_free,
                           .phys_to_virt = NULL,
                           .tlb_flush = syscall_flush ? flush_syscall : flush_noop,
                           .ctx = NULL};
    return o;
}

/* ---- leaf policies ------------------------------------------------------ */

struct policy {
    const char *name;
    uint32_t map_flags;
    bool arm_only;
};

static const struct policy policies[] = {
    {"pages", MMP_MAP_NO_BLOCK | MMP_MAP_NO_CONT, false},
    {"cont", MMP_MAP_NO_BLOCK, true},
    {"blocks", 0, false},
};

/* Fewest table pages a naturally aligned region of `bytes` needs with
 * leaves of `leaf` bytes: the root, then per level up from the leaves. */
static uint64_t min_tables(const struct mmp_pt_info *inf, uint64_t bytes, uint64_t leaf)
{
    uint64_t per = inf->granule / 8, n = bytes / leaf, total = inf->root_bytes / inf->granule;
    uint64_t span = leaf; /* bytes one entry maps at the current level */
    unsigned levels_below_root = 0;
    for (uint64_t s = inf->granule; s < leaf; s *= per)
        levels_below_root++;
    /* the leaves sit at depth levels-1-levels_below_root */
    unsigned leaf_depth = inf->levels - 1 - levels_below_root;
    for (unsigned d = leaf_depth; d > 0; d--) {
        n = (n + per - 1) / per;
        total += n;
        span *= per;
    }
    (void)span;
    return total;
}

struct row {
    const char *format, *op, *policy;
    uint64_t bytes;
    double ns_per_page;
    uint64_t table_pages, table_pages_min;
    struct mmp_pt_stats d; /* counters of this op */
};

void bench_map_stats_delta(const struct mmp_pt_stats *a, const struct mmp_pt_stats *b,
                        struct mmp_pt_stats *out)
{
    out->entries_written = b->entries_written - a->entries_written;
    out->barriers = b->barriers - a->barriers;
    out->barriers_deferred = b->barriers_deferred - a->barriers_deferred;
    out->flushes = b->flushes - a->flushes;
    out->ranges_coalesced = b->ranges_coalesced - a->ranges_coalesced;
    out->bbm = b->bbm - a->bbm;
    out->table_pages = b->table_pages;
}

static void print_row(const struct row *r, bool json, bool *first)
{
    if (json) {
        printf("%s\n  {\"format\": \"%s\", \"op\": \"%s\", \"bytes\": %" PRIu64
               ", \"leaf_policy\": \"%s\", \"ns_per_page\": %.3f, \"table_pages\": %" PRIu64
               ", \"table_pages_min\": %" PRIu64 ", \"entries_written\": %" PRIu64
               ", \"barriers\": %" PRIu64 ", \"flushes\": %" PRIu64 ", \"bbm\": %" PRIu64 "}",
               *first ? "" : ",", r->format, r->op, r->bytes, r->policy, r->ns_per_page,
               r->table_pages, r->table_pages_min, r->d.entries_written, r->d.barriers,
               r->d.flushes, r->d.bbm);
    } else {
        printf("%-*s %-8s %-7s %10.3f %9" PRIu64 " %9" PRIu64 " %10" PRIu64 " %5" PRIu64
               " %5" PRIu64 "\n",
               bench_map_fmt_width(), r->format, r->op, r->policy, r->ns_per_page, r->table_pages, r->table_pages_min,
               r->d.entries_written, r->d.barriers, r->d.flushes);
    }
    *first = false;
}

const char *const bench_map_fmts[] = {"x86-64",         "x86-64-la57",   "x86-ept",
                                      "x86-npt",        "arm64-4k",      "arm64-16k",
                                      "arm64-64k",      "arm64-s2-4k",   "arm64-4k-lpa2",
                                      "arm64-16k-lpa2", "arm64-64k-lpa"};
#define map_fmts bench_map_fmts
#define NFMTS (sizeof bench_map_fmts / sizeof bench_map_fmts[0])
const unsigned bench_map_nfmts = NFMTS;

int bench_map_fmt_width(void)
{
    size_t w = 0;
    for (size_t f = 0; f < NFMTS; f++)
        w = strlen(map_fmts[f]) > w ? strlen(map_fmts[f]) : w;
    return (int)w;
}
#define NPOL (sizeof policies / sizeof policies[0])
static const char *const op_names[3] = {"map", "protect", "unmap"};

/* --plot: ns per page as bars, a panel per operation, a group of bars (one
 * per leaf policy) per format of the run. */
static void plot_formats(FILE *out, uint64_t bytes, int reps, const char *const *cats,
                        size_t ncats, double x[3][NPOL][NFMTS], double y[3][NPOL][NFMTS],
                        const size_t n[3][NPOL])
{
    static char names[3][NPOL][24];
    struct svg_series sr[3][NPOL];
    struct svg_panel pn[3];
    const char *legend[NPOL];
    for (int op = 0; op < 3; op++) {
        pn[op] = (struct svg_panel){op_names[op], 0, sr[op]};
        for (size_t p = 0; p < NPOL; p++) {
            legend[p] = policies[p].name;
            snprintf(names[op][p], sizeof names[op][p], "%s %s", op_names[op], policies[p].name);
            /* the series keep their policy's index (colour), empty or not */
            sr[op][p] = (struct svg_series){names[op][p], n[op][p], x[op][p], y[op][p]};
        }
        pn[op].ns = NPOL;
    }
    char title[200];
    snprintf(title, sizeof title, "mmport bench map: %" PRIu64 " GiB per call, best of %d (%s)",
             bytes >> 30, reps, cli_machine());
    svg_bars(out, title, "ns per 4 KiB page (log scale)", "ns/4K-page", true, cats, ncats, pn, 3,
             legend, NPOL);
}

static int bench_formats(const char *only, uint64_t bytes, int reps, bool json, FILE *plot)
{
    static double px[3][NPOL][NFMTS], py[3][NPOL][NFMTS];
    size_t pn[3][NPOL] = {{0}}, ncats = 0;
    const char *cats[NFMTS];
    bool first = true;
    if (json)
        printf("[");
    else
        printf("%-*s %-8s %-7s %10s %9s %9s %10s %5s %5s\n", bench_map_fmt_width(), "format",
               "op", "policy",
               "ns/4K-page", "tables", "min", "entries", "barr", "flush");
    for (size_t f = 0; f < NFMTS; f++) {
        if (only && strcmp(only, map_fmts[f]) != 0)
            continue;
        cats[ncats++] = map_fmts[f];
        const struct cli_pt_format *fmt = cli_pt_format(map_fmts[f]);
        bool arm = fmt->cfg.format == MMP_PT_ARM64_S1 || fmt->cfg.format == MMP_PT_ARM64_S2;
        for (size_t p = 0; p < NPOL; p++) {
            if (policies[p].arm_only && !arm)
                continue;
            struct row rows[3];
            double best[3] = {1e30, 1e30, 1e30};
            for (int rep = 0; rep < reps; rep++) {
                struct mmp_pt pt;
                struct mmp_pt_ops ops = bench_map_ops(false);
                if (mmp_pt_init(&pt, &fmt->cfg, use_heap ? NULL : &ops))
                    return cli_error("bench map", "cannot create a %s table", map_fmts[f]);
                struct mmp_pt_info inf;
                mmp_pt_info(&pt, &inf);
                /* 52-bit layouts: output addresses with the moved OA bits set. */
                uint64_t va = 1ull << 30;
                uint64_t pa = fmt->cfg.pa_bits == 52 ? 0xc000100000000ull : 4ull << 30;
                for (int op = 0; op < 3; op++) {
                    struct mmp_pt_stats s0, s1;
                    mmp_pt_stats(&pt, &s0);
                    double t0 = now_ns();
                    int rc = op == 0   ? mmp_pt_map(&pt, va, pa, bytes, MMP_PROT_READ | MMP_PROT_WRITE,
                                                    policies[p].map_flags)
                             : op == 1 ? mmp_pt_protect(&pt, va, bytes, MMP_PROT_READ)
                                       : mmp_pt_unmap(&pt, va, bytes);
                    double t = now_ns() - t0;
                    if (rc)
                        return cli_error("bench map", "%s %s: %s", map_fmts[f], op_names[op],
                                         mmp_strerror(rc));
                    mmp_pt_stats(&pt, &s1);
                    if (t < best[op]) {
                        best[op] = t;
                        rows[op].format = map_fmts[f];
                        rows[op].op = op_names[op];
                        rows[op].policy = policies[p].name;
                        rows[op].bytes = bytes;
                        rows[op].ns_per_page = t / (double)(bytes / 4096);
                        bench_map_stats_delta(&s0, &s1, &rows[op].d);
                        rows[op].table_pages = s1.table_pages;
                        uint64_t leaf = inf.granule;
                        if (p == 2)
                            for (unsigned b = 0; b < 63; b++)
                                if ((inf.block_sizes >> b & 1) && (1ull << b) <= bytes &&
                                    !(va % (1ull << b)) && !(pa % (1ull << b)))
                                    leaf = 1ull << b;
                        rows[op].table_pages_min = op == 2 ? inf.root_bytes / inf.granule
                                                           : min_tables(&inf, bytes, leaf);
                    }
                }
                mmp_pt_fini(&pt);
            }
            progress_suspend(&bench_map_pr);
            for (int op = 0; op < 3; op++) {
                print_row(&rows[op], json, &first);
                px[op][p][pn[op][p]] = (double)(ncats - 1);
                py[op][p][pn[op][p]++] = rows[op].ns_per_page;
            }
            progress_resume(&bench_map_pr);
        }
    }
    if (json)
        printf("\n]\n");
    if (plot)
        plot_formats(plot, bytes, reps, cats, ncats, px, py, pn);
    return 0;
}

/* ---- run-time vs compile-time depth ------------------------------------ */

/* Maps `bytes` of 4K pages one call per page (descent-heavy), unmaps them,
 * then maps and unmaps them in one call each; ns per page, with the
 * table's own (depth-specialised) engine instance or the generic one. */
static double depth_round(const struct mmp_pt_config *cfg0, bool generic, uint64_t bytes)
{
    struct mmp_pt pt;
    struct mmp_pt_config cfg = *cfg0;
    struct mmp_pt_ops ops = bench_map_ops(false);
    if (generic)
        cfg.flags |= MMP_PT_GENERIC_DEPTH;
    if (mmp_pt_init(&pt, &cfg, &ops))
        return 0;
    uint64_t va = 1ull << 30, pa = 4ull << 30, n = bytes / 4096;
    double t0 = now_ns();
    for (uint64_t i = 0; i < n; i++)
        mmp_pt_map(&pt, va + i * 4096, pa + i * 4096, 4096, MMP_PROT_READ, MMP_MAP_NO_BLOCK);
    mmp_pt_unmap(&pt, va, bytes);
    mmp_pt_map(&pt, va, pa, bytes, MMP_PROT_READ, MMP_MAP_NO_BLOCK);
    mmp_pt_unmap(&pt, va, bytes);
    double t = now_ns() - t0;
    mmp_pt_fini(&pt);
    return t / (double)(2 * n);
}

static int bench_depth(uint64_t bytes, int reps, bool json)
{
    static const char *const fmts[] = {"x86-64", "arm64-4k"};
    if (json)
        printf("[");
    else
        printf("%-10s %18s %16s %10s\n", "format", "specialised ns/pg", "generic ns/pg",
               "generic");
    for (size_t f = 0; f < 2; f++) {
        const struct cli_pt_format *fmt = cli_pt_format(fmts[f]);
        double sp = 1e30, gen = 1e30;
        for (int r = 0; r < reps; r++) { /* interleaved; the minimum of each */
            double a = depth_round(&fmt->cfg, false, bytes);
            double c = depth_round(&fmt->cfg, true, bytes);
            sp = a < sp ? a : sp;
            gen = c < gen ? c : gen;
        }
        progress_suspend(&bench_map_pr);
        if (json)
            printf("%s\n  {\"format\": \"%s\", \"op\": \"map+unmap\", \"bytes\": %" PRIu64
                   ", \"specialised_ns_per_page\": %.3f, "
                   "\"generic_ns_per_page\": %.3f, \"generic_overhead\": %.4f}",
                   f ? "," : "", fmts[f], bytes, sp, gen, gen / sp - 1);
        else
            printf("%-10s %18.3f %16.3f %+9.2f%%\n", fmts[f], sp, gen, (gen / sp - 1) * 100);
        progress_resume(&bench_map_pr);
    }
    if (json)
        printf("\n]\n");
    return 0;
}

/* ---- vmalloc pattern: naive / eager / lazy ----------------------------- */

enum { NAIVE, EAGER, LAZY };
static const char *const mode_names[] = {"naive", "eager", "lazy"};

struct vres {
    double ns_per_op, barriers_per_op, flushes_per_op;
};

static bool vm_keep = true;
static int vm_mode = -1;   /* --mode: only this one */
static unsigned vm_pages;  /* --pages: only this p */

static struct vres vmalloc_run(const struct mmp_pt_config *cfg0, unsigned p, int mode, bool sysf,
                               uint64_t nops)
{
    struct mmp_pt pt;
    struct mmp_pt_config c = *cfg0;
    const struct mmp_pt_config *cfg = &c;
    if (vm_keep)
        c.flags |= MMP_PT_KEEP_TABLES;
    struct mmp_pt_ops ops = bench_map_ops(sysf);
    struct vres r = {0, 0, 0};
    if (mmp_pt_init(&pt, cfg, &ops))
        return r;
    uint64_t G = 4096, base = 1ull << 32, pa = 1ull << 33;
    uint64_t window = (1ull << 30) / (p * G); /* ops before the VA wraps */
    struct mmp_pt_stats s0, s1;
    mmp_pt_stats(&pt, &s0);
    double t0 = now_ns();
    for (uint64_t i = 0; i < nops; i++) {
        uint64_t va = base + (i % window) * p * G;
        if (mode == LAZY && i % 64 == 0)
            mmp_lazy_enter(&pt);
        if (mode == NAIVE) {
            for (unsigned k = 0; k < p; k++)
                mmp_pt_map(&pt, va + k * G, pa + k * G, G, MMP_PROT_READ | MMP_PROT_WRITE, 0);
            for (unsigned k = 0; k < p; k++)
                mmp_pt_unmap(&pt, va + k * G, G);
        } else {
            mmp_pt_map(&pt, va, pa, p * G, MMP_PROT_READ | MMP_PROT_WRITE, 0);
            mmp_pt_unmap(&pt, va, p * G);
        }
        if (mode == LAZY && (i % 64 == 63 || i + 1 == nops))
            mmp_lazy_leave(&pt);
    }
    double t = now_ns() - t0;
    mmp_pt_stats(&pt, &s1);
    mmp_pt_fini(&pt);
    r.ns_per_op = t / (double)nops;
    r.barriers_per_op = (double)(s1.barriers - s0.barriers) / (double)nops;
    r.flushes_per_op = (double)(s1.flushes - s0.flushes) / (double)nops;
    return r;
}

/* --plot: ns per op against the range size, one line per format and mode. */
static void plot_vmalloc(FILE *out, bool sysf, const char *const names[6],
                        double x[6][6], double y[6][6], const size_t n[6])
{
    struct svg_series sr[6];
    size_t ns = 0;
    for (size_t i = 0; i < 6; i++)
        if (n[i])
            sr[ns++] = (struct svg_series){names[i], n[i], x[i], y[i]};
    char title[200];
    snprintf(title, sizeof title, "mmport bench map --pattern vmalloc, %s (%s)",
             sysf ? "each flush a system call" : "free flushes", cli_machine());
    svg_chart_logy(out, title, "bytes mapped and unmapped per op (log scale)",
                   "ns per op (log scale)", "ns/op", sr, ns);
}

static int bench_vmalloc(const char *only, bool sysf, int reps, bool json, FILE *plot)
{
    static const char *const fmts[] = {"x86-64", "arm64-4k"};
    static const unsigned ps[] = {1, 4, 16, 64, 256, 512};
    static const char *const series[6] = {"x86-64 naive", "x86-64 eager", "x86-64 lazy",
                                          "arm64-4k naive", "arm64-4k eager", "arm64-4k lazy"};
    static double px[6][6], py[6][6];
    size_t pn[6] = {0};
    bool first = true;
    if (json)
        printf("[");
    else
        printf("flush: %s, tables %s\n%-9s %5s %-6s %11s %12s %12s %10s %10s\n",
               sysf ? "syscall" : "noop",
               vm_keep ? "kept (MMP_PT_KEEP_TABLES)" : "freed when empty", "format", "pages",
               "mode", "ns/op", "barriers/op", "flushes/op", "vs naive", "vs eager");
    for (size_t f = 0; f < 2; f++) {
        if (only && strcmp(only, fmts[f]) != 0)
            continue;
        const struct cli_pt_format *fmt = cli_pt_format(fmts[f]);
        for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
            unsigned p = ps[pi];
            if (vm_pages && p != vm_pages)
                continue;
            uint64_t nops = 64 * (p >= 64 ? 16 : 64);
            struct vres best[3];
            for (int m = 0; m < 3; m++)
                best[m].ns_per_op = 1e30;
            for (int r = 0; r < reps; r++)
                for (int m = 0; m < 3; m++) { /* interleaved */
                    if (vm_mode >= 0 && m != vm_mode)
                        continue;
                    struct vres x = vmalloc_run(&fmt->cfg, p, m, sysf, nops);
                    if (x.ns_per_op < best[m].ns_per_op)
                        best[m] = x;
                }
            progress_suspend(&bench_map_pr);
            for (int m = 0; m < 3; m++) {
                if (vm_mode >= 0 && m != vm_mode)
                    continue;
                if (json)
                    printf("%s\n  {\"format\": \"%s\", \"pages\": %u, \"mode\": \"%s\", \"flush\": "
                           "\"%s\", \"ns_per_op\": %.1f, \"barriers_per_op\": %.5f, "
                           "\"flushes_per_op\": %.5f}",
                           first ? "" : ",", fmts[f], p, mode_names[m], sysf ? "syscall" : "noop",
                           best[m].ns_per_op, best[m].barriers_per_op, best[m].flushes_per_op);
                else {
                    printf("%-9s %5u %-6s %11.1f %12.5f %12.5f", fmts[f], p, mode_names[m],
                           best[m].ns_per_op, best[m].barriers_per_op, best[m].flushes_per_op);
                    /* a ratio only against a mode this run measured (--mode picks one) */
                    for (int base = NAIVE; base <= EAGER; base++)
                        if (vm_mode < 0)
                            printf(" %9.2fx", best[base].ns_per_op / best[m].ns_per_op);
                        else
                            printf(" %10s", "-");
                    printf("\n");
                }
                first = false;
                size_t si = f * 3 + (size_t)m;
                px[si][pn[si]] = (double)p * 4096;
                py[si][pn[si]++] = best[m].ns_per_op;
            }
            progress_resume(&bench_map_pr);
        }
    }
    if (json)
        printf("\n]\n");
    if (plot)
        plot_vmalloc(plot, sysf, series, px, py, pn);
    return 0;
}

static int run(int argc, char **argv)
{
    bool json = false, depth = false, vmalloc = false, sysf = true;
    int slot = -1;             /* --pattern fault / split */
    const char *pattern = NULL; /* the last --pattern */
    const char *only = NULL;
    unsigned long long bytes = 1ull << 30;
    int reps = 3;
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"depth", no_argument, NULL, 'd'},
        {"pattern", required_argument, NULL, 'p'},
        {"flush", required_argument, NULL, 'F'},
        {"mode", required_argument, NULL, 'M'},
        {"pages", required_argument, NULL, 'P'},
        {"heap", no_argument, NULL, 'H'},
        {"free-tables", no_argument, NULL, 'T'},
        {"format", required_argument, NULL, 'f'},
        {"size", required_argument, NULL, 's'},
        {"reps", required_argument, NULL, 'r'},
        {"plot", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char cmd[] = "bench map";
    const char *plot = NULL;
    const char *vm_only = NULL, *plain_only = NULL; /* first option seen of each kind */
    int c;
    unsigned long long v;
    cli_getopt_start();
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': return fputs(cli_bench_map.usage, stdout), 0;
        case 'j': json = true; break;
        case 'd': depth = true; break;
        case 'p': /* the last one counts */
            vmalloc = false, slot = -1;
            if (strcmp(optarg, "vmalloc") == 0)
                vmalloc = true;
            else if (strcmp(optarg, "fault") == 0)
                slot = SLOT_FAULT;
            else if (strcmp(optarg, "split") == 0)
                slot = SLOT_SPLIT;
            else
                return cli_usage_error(
                    cmd, "--pattern '%s': unknown pattern (vmalloc, fault, split)", optarg);
            pattern = optarg;
            break;
        case 'F':
            if (strcmp(optarg, "syscall") && strcmp(optarg, "noop"))
                return cli_usage_error(cmd, "--flush '%s': want syscall or noop", optarg);
            sysf = strcmp(optarg, "syscall") == 0;
            vm_only = vm_only ? vm_only : "--flush";
            break;
        case 'M':
            vm_mode = -1;
            for (int m = 0; m < 3; m++)
                if (strcmp(optarg, mode_names[m]) == 0)
                    vm_mode = m;
            if (vm_mode < 0)
                return cli_usage_error(cmd, "--mode '%s': want naive, eager or lazy", optarg);
            vm_only = vm_only ? vm_only : "--mode";
            break;
        case 'P':
            if (!cli_parse_size(optarg, &v) ||
                (v != 1 && v != 4 && v != 16 && v != 64 && v != 256 && v != 512))
                return cli_usage_error(cmd, "--pages '%s': want 1, 4, 16, 64, 256 or 512",
                                       optarg);
            vm_pages = (unsigned)v;
            vm_only = vm_only ? vm_only : "--pages";
            break;
        case 'H':
            use_heap = true;
            plain_only = plain_only ? plain_only : "--heap";
            break;
        case 'T':
            vm_keep = false;
            vm_only = vm_only ? vm_only : "--free-tables";
            break;
        case 'f':
            only = optarg;
            if (!cli_pt_format(only))
                return cli_usage_error(cmd, "--format '%s': unknown format", only);
            break;
        case 's':
            if (!cli_parse_size(optarg, &bytes) || !bytes || bytes % (1ull << 30))
                return cli_usage_error(cmd, "--size '%s': want a multiple of 1G", optarg);
            plain_only = plain_only ? plain_only : "--size";
            break;
        case 'o': plot = optarg; break;
        case 'r':
            if (!cli_parse_size(optarg, &v) || v < 1 || v > 1000)
                return cli_usage_error(cmd, "--reps '%s': want 1..1000", optarg);
            reps = (int)v;
            break;
        default: return cli_opt_error(cmd, c, argv, longopts);
        }
    }
    if ((c = cli_no_operands(cmd, argc, argv)))
        return c;
    /* No option is silently ignored: each belongs to one of the runs. */
    if (pattern && depth)
        return cli_usage_error(cmd, "--depth and --pattern exclude each other");
    if (slot >= 0 && use_heap)
        return cli_usage_error(cmd, "--heap does not apply to --pattern %s", pattern);
    if (slot >= 0 && plot)
        return cli_usage_error(cmd, "--plot does not apply to --pattern %s", pattern);
    if (!vmalloc && vm_only)
        return cli_usage_error(cmd, "%s needs --pattern vmalloc", vm_only);
    if ((vmalloc || depth) && plain_only)
        return cli_usage_error(cmd, "%s does not apply to %s", plain_only,
                               vmalloc ? "--pattern vmalloc" : "--depth");
    if (depth && only)
        return cli_usage_error(cmd, "--format does not apply to --depth");
    if (vmalloc && only && strcmp(only, "x86-64") && strcmp(only, "arm64-4k"))
        return cli_usage_error(cmd, "--format '%s': --pattern vmalloc runs x86-64 or arm64-4k",
                               only);
    if (depth && plot)
        return cli_usage_error(cmd, "--plot does not apply to --depth");
    FILE *plot_out = plot ? cli_plot_open(cmd, plot) : NULL;
    if (plot && !plot_out)
        return 1;
    progress_start(&bench_map_pr, "bench map", NULL);
    int rc = slot >= 0 ? bench_map_slot(slot, only, bytes, reps, json)
             : vmalloc ? bench_vmalloc(only, sysf, reps, json, plot_out)
             : depth ? bench_depth(64ull << 20, reps * 3, json)
                     : bench_formats(only, bytes, reps, json, plot_out);
    progress_finish(&bench_map_pr);
    if (plot_out && cli_plot_close(cmd, plot, plot_out))
        rc = rc ? rc : 1;
    return rc;
}

const struct cli_command cli_bench_map = {
    .name = "map",
    .summary = "page-table map/protect/unmap speed",
    .usage =
        "usage: mmport bench map [--json] [--format F] [--size 1G] [--reps N] [--heap]\n"
        "                        [--plot FILE]\n"
        "       mmport bench map --depth [--json]\n"
        "       mmport bench map --pattern vmalloc [--flush syscall|noop] [--free-tables]\n"
        "                        [--format F] [--mode M] [--pages P] [--json] [--plot FILE]\n"
        "       mmport bench map --pattern fault|split [--format F] [--size 1G] [--reps N]\n"
        "                        [--json]\n\n"
        "Default: maps --size bytes (1 GiB) in one call, re-protects and unmaps them, per\n"
        "format (x86-64, x86-64-la57, x86-ept, x86-npt, arm64-4k, -16k, -64k, arm64-s2-4k,\n"
        "the 52-bit arm64-4k-lpa2, -16k-lpa2, -64k-lpa with output addresses above 2^50)\n"
        "and policy: pages (no blocks, no contiguous runs), cont (runs, no blocks; arm64),\n"
        "blocks (everything). ns_per_page is per 4 KiB of input address space, best of --reps\n"
        "fresh tables; table_pages is what the map left, table_pages_min the fewest\n"
        "the layout allows; entries/barriers/flushes are the mmp_pt_stats counters.\n"
        "Table pages come from a pre-faulted pool (a hypervisor's own allocator);\n"
        "--heap uses the built-in allocator instead (fresh heap pages: page faults).\n"
        "--plot FILE also writes an SVG chart: ns per page as bars on a log axis, a\n"
        "panel per operation, a bar per policy, grouped by format.\n\n"
        "--depth: the same engine with the paging depth fixed at compile time (4 levels)\n"
        "against the run-time depth, interleaved, 64 MiB one page per call plus one\n"
        "range call; the overhead column is the cost of choosing the depth at run time.\n\n"
        "--pattern vmalloc: for p = 1..512 pages, map a fresh p-page range and unmap it\n"
        "(one op), in modes naive (a call per page: barrier and flush per entry),\n"
        "eager (one call each: barrier and flush hoisted per call) and lazy (a lazy\n"
        "section around each 64 ops). --flush syscall (default) makes each TLB flush\n"
        "callback one system call (getppid), a stand-in for a hypercall; noop is free.\n"
        "Tables stay allocated (MMP_PT_KEEP_TABLES), as the kernel's vmalloc area keeps\n"
        "its page tables; --free-tables frees tables an unmap empties (deferred to the\n"
        "flush, so lazy mode cannot reuse them within a section). --plot FILE also\n"
        "writes an SVG chart: ns per op against the range size, both axes log, one\n"
        "line per format and mode.\n\n"
        "--pattern fault: one map of one page (the granule) per call, every page of\n"
        "--size once in a fixed random order, the output address one page off (no\n"
        "larger leaf possible). --pattern split: --size mapped as blocks of the format's\n"
        "smallest block size (2 MiB with 4K pages), then 64 one-page unmaps at scattered\n"
        "offsets per block, block after block (the first one splits the block); only\n"
        "the unmaps are timed. Both run per format (or --format F, any format) on an\n"
        "exclusive and on a shared (MMP_PT_SHARED) table, one thread, and print ns per\n"
        "call, best of --reps fresh tables. Beside it, \"ref ns\": a reference walk on\n"
        "the same table in the same run, a minimal loop that reads the levels from the\n"
        "root and stores the operation's entry (split: also fills and links each\n"
        "block's table, and unmakes a contiguous run as break-before-make stores):\n"
        "the physical limit of the work. \"cpu ns\" is the thread's CPU time per call\n"
        "(what other processes do not inflate); \"vs ref\" is ns/op over ref ns, \"vs exc\"\n"
        "a shared table's ns/op over the exclusive one's; barr, flush and bbm are the\n"
        "mmp_pt_stats counters of the timed calls (a shared table counts flushes and bbm\n"
        "only). --json rows carry the CPU-time figures and ratios too.\n",
    .run = run,
};
