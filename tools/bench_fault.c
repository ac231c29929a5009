/* SPDX-License-Identifier: MIT */
/*
 * mmport bench fault: second-stage fault handling from many threads. T
 * threads each fault 4 KiB pages (one mmp_pt_map of one page per fault)
 * into one 4 GiB guest range of one table, in random order with a few
 * percent collisions (two threads faulting the same page: one maps it, the
 * other gets -EEXIST, as two vCPUs touching one page do), in three modes:
 *   shared     a MMP_PT_SHARED table, no lock;
 *   locked     an exclusive table behind one mutex (the best a caller of
 *              the exclusive mode can do with many vCPUs);
 *   exclusive  an exclusive table, one thread, no lock (the baseline the
 *              shared mode's single-thread cost is compared with);
 *   private    T threads, each faulting its share into an exclusive table
 *              of its own: nothing shared but the machine, so its scaling
 *              is what the machine itself allows this work (the ceiling
 *              the shared mode's scaling is read against).
 * Each thread is pinned to its own CPU of the affinity mask (round robin
 * when there are fewer), so two threads never share a core the scheduler
 * happened to pick for both; only the faults are timed.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mmport/mmport.h>

#include "atomic.h"
#include "cli.h"
#include "plot_svg.h"
#include "progress.h"
#include "pt_formats.h"

#define GUEST (4ull << 30)
#define PG 4096ull
#define PA_OFF (1ull << 34)
#define POOL_MIN (64u << 20)

static struct progress bf_pr;

static double clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ---- table pages: a pre-faulted pool, safe from many threads ------------ */

static struct {
    unsigned char *buf;
    size_t bytes;
    volatile AO_t used;
    pthread_mutex_t lock; /* the free list (given-back pages: rare) */
    volatile AO_t free; /* void *, head of the list */
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *p_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    (void)ctx;
    void *p = NULL;
    if (bytes == PG && AO_load(&pool.free)) {
        pthread_mutex_lock(&pool.lock);
        if ((p = (void *)AO_load(&pool.free)))
            AO_store(&pool.free, (AO_t)*(void **)p);
        pthread_mutex_unlock(&pool.lock);
    }
    if (!p) {
        AO_t off = AO_fetch_and_add(&pool.used, (AO_t)((bytes + PG - 1) & ~(PG - 1)));
        if (off + bytes > pool.bytes)
            return NULL;
        p = pool.buf + off;
    }
    *pa = (uint64_t)(uintptr_t)p;
    return p;
}

static void p_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)ctx, (void)pa;
    if (bytes != PG)
        return; /* the root: the pool is reset between runs */
    pthread_mutex_lock(&pool.lock);
    *(void **)va = (void *)AO_load(&pool.free);
    AO_store(&pool.free, (AO_t)va);
    pthread_mutex_unlock(&pool.lock);
}

static void pool_reset(void)
{
    pool.used = 0;
    pool.free = 0;
}

static void noflush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    (void)ctx, (void)va, (void)size, (void)flags;
}

/* ---- one run ------------------------------------------------------------ */

enum { M_SHARED, M_LOCKED, M_EXCL, M_PRIV, NMODE };
static const char *const mode_names[] = {"shared", "locked", "exclusive", "private"};

/* Modes run at one thread only, or at two or more only. */
static bool mode_runs(int m, unsigned threads)
{
    return m == M_EXCL ? threads == 1 : m == M_PRIV ? threads > 1 : true;
}

struct run {
    struct mmp_pt tab[64]; /* tab[0]; M_PRIV: tab[t] is thread t's */
    pthread_mutex_t lock;
    int mode;
    unsigned threads;
    uint32_t *pages; /* per thread: its faults, pages numbered in the range */
    size_t per;
    volatile AO_t ready, go, errors;
};

struct targ {
    struct run *r;
    unsigned t;
};

/* The CPUs of the affinity mask the bench started with; thread t runs on
 * cpus[t % ncpus]. */
static cpu_set_t start_aff;
static int cpus[CPU_SETSIZE];
static unsigned ncpus;
static bool slices; /* --slices: each thread faults its own 1/T of the range */

static void pin(unsigned t)
{
    cpu_set_t one;
    if (!ncpus)
        return;
    CPU_ZERO(&one);
    CPU_SET(cpus[t % ncpus], &one);
    (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

static void *worker(void *arg)
{
    struct targ *a = arg;
    struct run *r = a->r;
    pin(a->t);
    const uint32_t *pg = r->pages + a->t * r->per;
    struct mmp_pt *pt = &r->tab[r->mode == M_PRIV ? a->t : 0];
    AO_fetch_and_add1(&r->ready);
    while (!AO_load_acquire(&r->go))
        ;
    for (size_t i = 0; i < r->per; i++) {
        uint64_t ipa = (uint64_t)pg[i] * PG;
        int rc;
        if (r->mode == M_LOCKED)
            pthread_mutex_lock(&r->lock);
        do
            rc = mmp_pt_map(pt, ipa, ipa + PA_OFF, PG, MMP_PROT_READ | MMP_PROT_WRITE, 0);
        while (rc == -MMP_EAGAIN); /* re-fault, as the vCPU would */
        if (r->mode == M_LOCKED)
            pthread_mutex_unlock(&r->lock);
        if (rc && rc != -MMP_EEXIST)
            AO_fetch_and_add1(&r->errors);
    }
    return NULL;
}

/* Picks k random distinct entries of a[0..n) into a[0..k) (partial
 * Fisher-Yates). */
static void pick(uint32_t *a, size_t n, size_t k, unsigned *seed)
{
    for (size_t i = 0; i < k; i++) {
        size_t j = i + (size_t)(((uint64_t)rand_r(seed) << 31 ^ (uint64_t)rand_r(seed)) %
                                (n - i));
        uint32_t x = a[i];
        a[i] = a[j], a[j] = x;
    }
}

/* Random distinct pages, split among the threads: from the whole range
 * (every thread's faults spread over every table), or with --slices each
 * from its own 1/T of it; `coll` percent of each thread's faults on pages
 * another thread faults. */
static void make_pages(struct run *r, size_t faults, unsigned coll, unsigned seed)
{
    size_t n = GUEST / PG;
    uint32_t *all = malloc(n * sizeof *all);
    for (size_t i = 0; i < n; i++)
        all[i] = (uint32_t)i;
    r->per = faults / r->threads;
    size_t w = slices ? n / r->threads : r->per; /* thread t's picks: all[t * w ...] */
    if (slices)
        for (unsigned t = 0; t < r->threads; t++)
            pick(all + t * w, w, r->per, &seed);
    else
        pick(all, n, r->per * r->threads, &seed);
    for (unsigned t = 0; t < r->threads; t++)
        for (size_t i = 0; i < r->per; i++) {
            size_t src = t * w + i;
            if (r->threads > 1 && (unsigned)rand_r(&seed) % 100 < coll)
                src = ((t + 1) % r->threads) * w + (size_t)rand_r(&seed) % r->per;
            r->pages[t * r->per + i] = all[src];
        }
    free(all);
}

/* Faults per second of wall time; *cpu_ns: CPU time per fault (all
 * threads), which shows contention even where the threads had to share
 * cores with other work. */
static double one_run(const struct mmp_pt_config *base, int mode, unsigned threads,
                      size_t faults, unsigned coll, unsigned seed, unsigned long *errors,
                      double *cpu_ns)
{
    static struct run r;
    memset(&r, 0, sizeof r);
    r.lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    r.mode = mode;
    r.threads = threads;
    r.pages = malloc(faults * sizeof *r.pages);
    make_pages(&r, faults, coll, seed);
    struct mmp_pt_config c = *base;
    if (mode == M_SHARED)
        c.flags |= MMP_PT_SHARED;
    struct mmp_pt_ops ops = {.alloc_table = p_alloc, .free_table = p_free,
                             .tlb_flush = noflush};
    pool_reset();
    unsigned ntab = mode == M_PRIV ? threads : 1;
    for (unsigned k = 0; k < ntab; k++)
        if (mmp_pt_init(&r.tab[k], &c, &ops)) {
            while (k--)
                mmp_pt_fini(&r.tab[k]);
            free(r.pages);
            return 0;
        }
    pthread_t th[64];
    struct targ ta[64];
    for (unsigned t = 1; t < threads; t++) {
        ta[t] = (struct targ){&r, t};
        pthread_create(&th[t], NULL, worker, &ta[t]);
    }
    pin(0);
    while (AO_load(&r.ready) + 1 < threads)
        ;
    double t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    AO_store_release(&r.go, 1);
    ta[0] = (struct targ){&r, 0};
    worker(&ta[0]);
    for (unsigned t = 1; t < threads; t++)
        pthread_join(th[t], NULL);
    double ns = clock_ns(CLOCK_MONOTONIC) - t0;
    *cpu_ns = (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0) / (double)(r.per * threads);
    if (ncpus)
        (void)pthread_setaffinity_np(pthread_self(), sizeof start_aff, &start_aff);
    *errors += r.errors;
    for (unsigned k = 0; k < ntab; k++)
        mmp_pt_fini(&r.tab[k]);
    free(r.pages);
    return (double)(r.per * threads) / (ns / 1e9);
}

/* ---- the table ---------------------------------------------------------- */

struct result {
    const char *format;
    unsigned threads;
    int mode;
    double fps, cpu_ns;
};

static void print_result(const struct result *x, bool json, bool *first)
{
    if (json)
        printf("%s\n  {\"format\": \"%s\", \"threads\": %u, \"mode\": \"%s\", "
               "\"layout\": \"%s\", \"faults_per_s\": %.0f, \"ns_per_fault\": %.1f, "
               "\"cpu_ns_per_fault\": %.1f}",
               *first ? "" : ",", x->format, x->threads, mode_names[x->mode],
               slices ? "slices" : "spread", x->fps, 1e9 / x->fps, x->cpu_ns);
    else
        printf("%-12s %7u %-9s %14.0f %12.1f %12.1f\n", x->format, x->threads,
               mode_names[x->mode], x->fps, 1e9 / x->fps, x->cpu_ns);
    *first = false;
}

/* --plot: millions of faults per second as bars, a panel per format, a
 * group per thread count, a bar per mode. */
#define NF 2
static void plot_faults(FILE *out, const char *const *fmts, const bool *ran, unsigned maxt,
                        unsigned long long faults, double (*fps)[NMODE][65])
{
    static char cats[64][16], names[NF][NMODE][40];
    static double x[NF][NMODE][64], y[NF][NMODE][64];
    static const char *cp[64];
    struct svg_series sr[NF][NMODE];
    struct svg_panel pn[NF];
    size_t np = 0;
    for (unsigned t = 1; t <= maxt; t++) {
        snprintf(cats[t - 1], sizeof cats[t - 1], "%u thread%s", t, t > 1 ? "s" : "");
        cp[t - 1] = cats[t - 1];
    }
    for (size_t f = 0; f < NF; f++) {
        if (!ran[f])
            continue;
        for (int m = 0; m < NMODE; m++) {
            size_t n = 0;
            for (unsigned t = 1; t <= maxt; t++)
                if (fps[f][m][t] > 0)
                    x[f][m][n] = t - 1, y[f][m][n++] = fps[f][m][t] / 1e6;
            snprintf(names[f][m], sizeof names[f][m], "%s %s", fmts[f], mode_names[m]);
            sr[np][m] = (struct svg_series){names[f][m], n, x[f][m], y[f][m]};
        }
        pn[np] = (struct svg_panel){fmts[f], NMODE, sr[np]};
        np++;
    }
    char title[200];
    snprintf(title, sizeof title,
             "mmport bench fault: %llu faults, 4 KiB each, best of the reps (%s)", faults,
             cli_machine());
    svg_bars(out, title, "million faults per second (all threads)", "M faults/s", false, cp, maxt,
             pn, np, mode_names, NMODE);
}

static void target(const char *what, double got, double want)
{
    printf("  %-44s %5.2fx  (target >= %.2fx: %s)\n", what, got, want,
           got >= want ? "met" : "NOT met");
}

static int run(int argc, char **argv)
{
    static const char cmd[] = "bench fault";
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},       {"format", required_argument, NULL, 'f'},
        {"faults", required_argument, NULL, 'n'}, {"threads", required_argument, NULL, 't'},
        {"reps", required_argument, NULL, 'r'}, {"collisions", required_argument, NULL, 'c'},
        {"no-pin", no_argument, NULL, 'P'},     {"plot", required_argument, NULL, 'p'},
        {"slices", no_argument, NULL, 'S'},     {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, pinning = true;
    const char *only = NULL, *plot = NULL;
    unsigned long long v, faults = 1u << 18, reps = 3, coll = 3, maxt = 2;
    int c;
    cli_getopt_start();
    while ((c = getopt_long(argc, argv, ":hjf:n:t:r:c:p:", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': return fputs(cli_bench_fault.usage, stdout), 0;
        case 'j': json = true; break;
        case 'P': pinning = false; break;
        case 'S': slices = true; break;
        case 'p': plot = optarg; break;
        case 'f':
            only = optarg;
            if (!cli_pt_format(only))
                return cli_usage_error(cmd, "--format '%s': unknown format", only);
            if (strcmp(only, "arm64-s2-4k") && strcmp(only, "x86-ept"))
                return cli_usage_error(cmd, "--format '%s': want arm64-s2-4k or x86-ept", only);
            break;
        case 'n':
            if (!cli_parse_size(optarg, &v) || v < 1024 || v > GUEST / PG)
                return cli_usage_error(cmd, "--faults '%s': want 1K..1M", optarg);
            faults = v;
            break;
        case 't':
            if (!cli_parse_size(optarg, &v) || v < 1 || v > 64)
                return cli_usage_error(cmd, "--threads '%s': want 1..64", optarg);
            maxt = v;
            break;
        case 'r':
            if (!cli_parse_size(optarg, &v) || v < 1 || v > 100)
                return cli_usage_error(cmd, "--reps '%s': want 1..100", optarg);
            reps = v;
            break;
        case 'c':
            if (!cli_parse_size(optarg, &v) || v > 50)
                return cli_usage_error(cmd, "--collisions '%s': want 0..50 (percent)", optarg);
            coll = v;
            break;
        default: return cli_opt_error(cmd, c, argv, longopts);
        }
    }
    if ((c = cli_no_operands(cmd, argc, argv)))
        return c;
    if (pinning && sched_getaffinity(0, sizeof start_aff, &start_aff) == 0)
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &start_aff))
                cpus[ncpus++] = i;
    FILE *plot_out = plot ? cli_plot_open(cmd, plot) : NULL;
    if (plot && !plot_out)
        return 1;
    /* Every table of every mode's run: a private table per thread holds at
     * most one leaf table per 2 MiB it faults, plus its upper levels. */
    pool.bytes = POOL_MIN;
    for (unsigned t = 2; t <= maxt; t++) {
        size_t per = faults / t, leafs = per < GUEST >> 21 ? per : GUEST >> 21;
        size_t need = t * (leafs + 8) * PG;
        pool.bytes = need > pool.bytes ? (need + (1u << 21) - 1) & ~(size_t)((1u << 21) - 1)
                                       : pool.bytes;
    }
    pool.buf = aligned_alloc(1u << 21, pool.bytes);
    if (!pool.buf)
        return cli_error(cmd, "no memory for the table pool");
    memset(pool.buf, 0, pool.bytes); /* pre-faulted */
    static const char *const fmts[NF] = {"arm64-s2-4k", "x86-ept"};
    static double best[NF][NMODE][65], cpu[NF][NMODE][65];
    bool ran[NF] = {false};
    if (json)
        printf("[");
    else
        printf("%-12s %7s %-9s %14s %12s %12s\n", "format", "threads", "mode", "faults/s",
               "ns/fault", "cpu-ns/fault");
    bool first = true;
    unsigned long errors = 0;
    progress_start(&bf_pr, cmd, NULL);
    for (size_t f = 0; f < NF; f++) {
        if (only && strcmp(only, fmts[f]))
            continue;
        ran[f] = true;
        const struct mmp_pt_config *cfg = &cli_pt_format(fmts[f])->cfg;
        /* Interleaved repetitions: the machine's noise hits every mode alike. */
        for (unsigned long long rep = 0; rep < reps; rep++)
            for (unsigned t = 1; t <= maxt; t++)
                for (int m = 0; m < NMODE; m++) {
                    if (!mode_runs(m, t))
                        continue;
                    double cns = 0;
                    double fps = one_run(cfg, m, t, faults, coll, 1234u + (unsigned)rep,
                                         &errors, &cns);
                    if (fps > best[f][m][t])
                        best[f][m][t] = fps;
                    if (!cpu[f][m][t] || cns < cpu[f][m][t])
                        cpu[f][m][t] = cns;
                }
        progress_suspend(&bf_pr);
        for (unsigned t = 1; t <= maxt; t++)
            for (int m = 0; m < NMODE; m++)
                if (mode_runs(m, t)) {
                    struct result x = {fmts[f], t, m, best[f][m][t], cpu[f][m][t]};
                    print_result(&x, json, &first);
                }
        if (!json && maxt >= 2) {
            target("shared 2 threads / shared 1 thread",
                   best[f][M_SHARED][2] / best[f][M_SHARED][1], 1.7);
            printf("  %-44s %5.2fx  (the machine's ceiling for this work)\n",
                   "private 2 threads / exclusive 1 thread",
                   best[f][M_PRIV][2] / best[f][M_EXCL][1]);
            printf("  %-44s %5.2f   (1.00: it scales as the machine does)\n",
                   "shared scaling / private scaling",
                   (best[f][M_SHARED][2] / best[f][M_SHARED][1]) /
                       (best[f][M_PRIV][2] / best[f][M_EXCL][1]));
            target("shared 2 threads / locked 2 threads",
                   best[f][M_SHARED][2] / best[f][M_LOCKED][2], 1.5);
            target("shared 1 thread / exclusive (within 10%)",
                   best[f][M_SHARED][1] / best[f][M_EXCL][1], 0.9);
        }
        progress_resume(&bf_pr);
    }
    progress_finish(&bf_pr);
    if (json)
        printf("\n]\n");
    free(pool.buf);
    if (plot_out) {
        plot_faults(plot_out, fmts, ran, (unsigned)maxt, faults, best);
        if (cli_plot_close(cmd, plot, plot_out))
            return 1;
    }
    if (errors)
        return cli_error(cmd, "%lu faults failed (neither mapped nor -EEXIST)", errors);
    return 0;
}

const struct cli_command cli_bench_fault = {
    .name = "fault",
    .summary = "second-stage faults from many threads: shared mode vs a lock",
    .usage =
        "usage: mmport bench fault [-j|--json] [-f|--format F] [-t|--threads T]\n"
        "                          [-n|--faults N] [-c|--collisions P] [-r|--reps N]\n"
        "                          [--slices] [--no-pin] [-p|--plot FILE]\n\n"
        "T threads (1..T, default 2) each fault 4 KiB pages, one mmp_pt_map of one page\n"
        "per fault, into one 4 GiB guest range of one table (arm64-s2-4k and x86-ept;\n"
        "--format picks one): --faults pages in all (default 256K), in random order,\n"
        "spread over the whole range (every thread writes into every leaf table) or,\n"
        "with --slices, each thread's from its own 1/T of the range (vCPUs touching\n"
        "their own memory); P percent (default 3) of each thread's faults on pages\n"
        "another thread faults too (-EEXIST for the later one). Modes: shared (a\n"
        "MMP_PT_SHARED table, no lock, built-in epoch reclamation), locked (an exclusive\n"
        "table behind one mutex), exclusive (one thread, no lock) and private (2+\n"
        "threads, each with an exclusive table of its own: nothing shared, so its\n"
        "scaling is the machine's ceiling for this work, printed beside the shared\n"
        "mode's). faults_per_s is all threads' faults over the wall time, ns_per_fault\n"
        "its inverse; cpu_ns_per_fault the process CPU time per fault (all threads:\n"
        "contention shows there even when other load leaves the threads fewer cores than\n"
        "asked). Thread t is pinned to the t-th CPU of the affinity mask (round robin;\n"
        "--no-pin leaves placement to the scheduler). Best of --reps (default 3)\n"
        "interleaved runs, a fresh table each. The targets are printed beside the\n"
        "figures (wall-time ratios). --plot FILE also writes an SVG chart: faults per\n"
        "second as bars, a panel per format, a group per thread count, a bar per mode.\n",
    .run = run,
};
