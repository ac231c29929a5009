/* SPDX-License-Identifier: MIT */
/*
 * mmport bench clear: every available clearing kernel, the default policy
 * ("auto"), glibc memset and a per-4-KiB-page loop, at several sizes, all
 * in one run with the methods interleaved; the best of several repetitions
 * after a warm-up; then populate+clear of a fresh 2 GiB range against a
 * single-thread first touch. Ends with each ratio next to its target.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <mmport/mmport.h>

#include "clear_kernels.h"
#include "cli.h"
#include "plot_svg.h"
#include "progress.h"

enum kind { KERNEL, AUTO, MEMSET, PER_PAGE };

struct method {
    const char *name;
    enum kind kind;
    unsigned threads;
};

struct result {
    unsigned long long size;
    const struct method *m;
    double gbps;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static mmp_core_clear_fn per_page_fn;

static int run_once(const struct method *m, char *buf, size_t size)
{
    struct mmp_clear_opts o = {.threads = m->threads};
    switch (m->kind) {
    case KERNEL:
        o.kernel = m->name;
        return mmp_clear(buf, size, &o);
    case AUTO: /* the defaults, as a caller without options writes it */
        return mmp_clear(buf, size, m->threads > 1 ? &o : NULL);
    case MEMSET:
        memset(buf, 0, size);
        __asm__ volatile("" ::"r"(buf) : "memory"); /* keep the stores */
        return 0;
    case PER_PAGE:
        for (size_t off = 0; off < size; off += MMP_PAGE_SIZE)
            per_page_fn(buf + off, MMP_PAGE_SIZE);
        return 0;
    }
    return -1;
}

/* GB/s of one sample: enough iterations for >= ~32 MiB of work. */
static double sample(const struct method *m, char *buf, size_t size)
{
    size_t iters = size >= (32u << 20) ? 1 : (32u << 20) / size;
    /*
     * Every sample starts from the same cache state, whatever the previous
     * method left: the range evicted (cleared with the cold kernel, whose NT
     * stores or CLZERO leave no line cached), as memory a hypervisor hands
     * out usually is. Repeated iterations at small sizes then run warm.
     */
    struct mmp_clear_opts evict = {.hint = MMP_CLEAR_COLD};
    mmp_clear(buf, size, &evict);
    double t0 = now_s();
    for (size_t i = 0; i < iters; i++)
        if (run_once(m, buf, size))
            return 0;
    double t = now_s() - t0;
    return t > 0 ? (double)size * (double)iters / t / 1e9 : 0;
}

static const char usage[] =
    "usage: mmport bench clear [-j|--json] [-q|--quick] [-s|--sizes S[,S...]]\n"
    "                          [-r|--reps N] [-p|--plot FILE]\n\n"
    "Measures every available clearing kernel forced through mmp_clear(), \"auto\"\n"
    "(the default policy: AUTO hint), \"memset\" (glibc) and \"per_page\" (the auto\n"
    "hot kernel called once per 4 KiB page, as a kernel clear_page loop does), at\n"
    "each size, interleaved, best of N repetitions after one warm-up, every\n"
    "sample starting with the range evicted from the caches; at 1 GiB\n"
    "also \"auto\" with one thread per CPU of the affinity mask. The library's\n"
    "own \"memset\" kernel is glibc memset in a hosted build (its loop compiles\n"
    "to a memset call), so it is reported once, as \"memset\". The buffer is\n"
    "prefaulted and advised MADV_HUGEPAGE, as guest RAM usually is. With the\n"
    "default sizes, also a fresh 2 GiB range made resident: one thread touching\n"
    "each page against mmp_clear_populate() with one thread per CPU. Each ratio\n"
    "is printed with its target.\n\n"
    "  -j, --json        one JSON object on stdout: \"results\" ({size_bytes, method,\n"
    "                    threads, gbps}), \"ratios\" ({what, ratio, target, met}),\n"
    "                    \"notes\" (targets not measured), \"policy\", \"first_touch\"\n"
    "  -q, --quick       2 repetitions instead of 7 (under 15 s)\n"
    "  -s, --sizes L     comma-separated sizes (default 4K,2M,32M,256M,1G)\n"
    "  -r, --reps N      repetitions per method and size\n"
    "  -p, --plot FILE   also an SVG chart: GB/s against size (log axis), one line per\n"
    "                    method, the LLC size and the policy's cold_min marked\n";

#define MAXM 24
#define MAXS 16

static double find(const struct result *r, size_t nr, unsigned long long size, const char *name,
                   unsigned threads)
{
    for (size_t i = 0; i < nr; i++)
        if (r[i].size == size && strcmp(r[i].m->name, name) == 0 && r[i].m->threads == threads)
            return r[i].gbps;
    return 0;
}

/* Best single-thread figure at size among the forced kernels. */
static double best_kernel(const struct result *r, size_t nr, unsigned long long size,
                          const char **name)
{
    double best = 0;
    *name = "?";
    for (size_t i = 0; i < nr; i++)
        if (r[i].size == size && r[i].m->threads == 1 && r[i].m->kind == KERNEL &&
            r[i].gbps > best)
            best = r[i].gbps, *name = r[i].m->name;
    return best;
}

/* The ratios of a run against their targets, and notes on those not
 * measured, in the order they are printed. */
struct ratio {
    char what[160]; /* a note when ratio is 0 */
    double ratio, want;
};
struct ratios {
    size_t n;
    struct ratio r[3 * MAXS + 8];
};

static void target(struct ratios *rs, const char *what, double ratio, double want)
{
    if (ratio > 0 && rs->n < sizeof rs->r / sizeof rs->r[0]) {
        rs->r[rs->n] = (struct ratio){.ratio = ratio, .want = want};
        snprintf(rs->r[rs->n++].what, sizeof rs->r[0].what, "%s", what);
    }
}

static void note(struct ratios *rs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct ratios *rs, const char *fmt, ...)
{
    if (rs->n == sizeof rs->r / sizeof rs->r[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    rs->r[rs->n] = (struct ratio){.ratio = 0};
    vsnprintf(rs->r[rs->n++].what, sizeof rs->r[0].what, fmt, ap);
    va_end(ap);
}

/* Each ratio against its target, on one line of at most 100 columns. */
static void print_ratios(const struct ratios *rs)
{
    printf("\nratios against the targets (all from this run):\n");
    for (size_t i = 0; i < rs->n; i++) {
        const struct ratio *r = &rs->r[i];
        if (r->ratio > 0)
            printf("  %-62s %6.3f  >= %.2f %s\n", r->what, r->ratio, r->want,
                   r->ratio >= r->want ? "met" : "NOT met");
        else
            printf("  %s\n", r->what);
    }
}

static void json_ratios(const struct ratios *rs)
{
    printf(", \"ratios\": [");
    bool first = true;
    for (size_t i = 0; i < rs->n; i++) {
        const struct ratio *r = &rs->r[i];
        if (r->ratio <= 0)
            continue;
        printf("%s\n    {\"what\": ", first ? "" : ",");
        cli_json_string(stdout, r->what);
        printf(", \"ratio\": %.3f, \"target\": %.2f, \"met\": %s}", r->ratio, r->want,
               r->ratio >= r->want ? "true" : "false");
        first = false;
    }
    printf("\n  ], \"notes\": [");
    first = true;
    for (size_t i = 0; i < rs->n; i++)
        if (rs->r[i].ratio <= 0) {
            printf("%s", first ? "" : ", ");
            cli_json_string(stdout, rs->r[i].what + strspn(rs->r[i].what, " "));
            first = false;
        }
    printf("]");
}

static void size_label(char *buf, size_t cap, unsigned long long size)
{
    if (size >= (1ull << 30) && size % (1ull << 30) == 0)
        snprintf(buf, cap, "%lluG", size >> 30);
    else if (size >= (1ull << 20) && size % (1ull << 20) == 0)
        snprintf(buf, cap, "%lluM", size >> 20);
    else
        snprintf(buf, cap, "%lluK", size >> 10);
}

/* The first-touch comparison: seconds for single-thread touching and for populate+clear. */
struct first_touch {
    double touch_s, populate_s;
    unsigned threads;
    unsigned long long bytes;
};

static void ratios(struct ratios *out, const struct result *r, size_t nr, const unsigned long long *sizes,
                   size_t ns, unsigned cpus, const struct first_touch *ft)
{
    unsigned long long llc = mmp_cpu_features()->llc_bytes;
    out->n = 0;
    char what[96], sz[24];
    for (size_t s = 0; s < ns; s++) {
        const char *bn;
        double a = find(r, nr, sizes[s], "auto", 1), best = best_kernel(r, nr, sizes[s], &bn);
        size_label(sz, sizeof sz, sizes[s]);
        snprintf(what, sizeof what, "auto / best single-thread kernel (%s) at %s", bn, sz);
        target(out, what, best > 0 ? a / best : 0, 0.95);
    }
    size_t nbig = 0;
    for (size_t s = 0; s < ns; s++)
        nbig += llc && sizes[s] >= 4 * llc;
    if (!nbig) {
        char l4[24];
        size_label(l4, sizeof l4, 4 * llc);
        note(out, "auto / glibc memset (>= 1.2 from 4 x LLC up): not measured, %s",
             llc ? "no size reaches 4 x LLC" : "LLC size unknown");
        if (llc)
            note(out, "  (4 x LLC = %s here: --sizes %s measures it)", l4, l4);
    }
    for (size_t s = 0; s < ns; s++) {
        if (!llc || sizes[s] < 4 * llc)
            continue; /* from 4 x the LLC up: memory bandwidth, not cache */
        const char *bn;
        double m = find(r, nr, sizes[s], "memset", 1);
        double best = best_kernel(r, nr, sizes[s], &bn);
        size_label(sz, sizeof sz, sizes[s]);
        if (m > 0 && best / m < 1.2) {
            note(out, "auto / glibc memset at %s: target void, no kernel reaches 1.2 (best %s %.3f)",
                 sz, bn, best / m);
            continue;
        }
        snprintf(what, sizeof what, "auto / glibc memset at %s (>= 4 x LLC)", sz);
        target(out, what, m > 0 ? find(r, nr, sizes[s], "auto", 1) / m : 0, 1.2);
    }
    for (size_t s = 0; s < ns; s++) {
        if (sizes[s] != (2ull << 20))
            continue;
        const char *bn;
        double pp = find(r, nr, sizes[s], "per_page", 1);
        double best = best_kernel(r, nr, sizes[s], &bn);
        snprintf(what, sizeof what, "one 2M extent (best kernel, %s) / 4K pages one by one", bn);
        target(out, what, pp > 0 ? best / pp : 0, 1.5);
    }
    for (size_t s = 0; s < ns; s++) {
        if (sizes[s] != (1ull << 30) || cpus < 2)
            continue;
        double one = find(r, nr, sizes[s], "auto", 1);
        snprintf(what, sizeof what, "auto %u threads / auto 1 thread at 1G", cpus);
        target(out, what, one > 0 ? find(r, nr, sizes[s], "auto", cpus) / one : 0, 1.6);
    }
    if (ft && ft->populate_s > 0) {
        size_label(sz, sizeof sz, ft->bytes);
        snprintf(what, sizeof what, "populate+clear %u threads / 1-thread first touch, fresh %s",
                 ft->threads, sz);
        target(out, what, ft->touch_s / ft->populate_s, 1.6);
    }
}

/*
 * A fresh range (never touched, so every page faults) made resident: one
 * thread writing one byte per page, against mmp_clear_populate() with
 * `threads`. Best of reps; fresh mappings every time.
 */
static int first_touch(struct first_touch *ft, unsigned long long bytes, unsigned threads,
                       unsigned reps)
{
    *ft = (struct first_touch){.threads = threads, .bytes = bytes};
    for (unsigned r = 0; r < reps; r++)
        for (int populate = 0; populate < 2; populate++) {
            char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (p == MAP_FAILED)
                return -1;
            double t0 = now_s();
            if (populate) {
                struct mmp_clear_opts o = {.threads = threads};
                if (mmp_clear_populate(p, bytes, &o)) {
                    munmap(p, bytes);
                    return -1;
                }
            } else {
                for (size_t off = 0; off < bytes; off += MMP_PAGE_SIZE)
                    ((volatile char *)p)[off] = 0;
            }
            double t = now_s() - t0;
            double *best = populate ? &ft->populate_s : &ft->touch_s;
            *best = *best == 0 || t < *best ? t : *best;
            munmap(p, bytes);
        }
    return 0;
}

/* --plot: GB/s against size, one series per method, LLC and cold_min marked. */
static void plot_results(FILE *out, const struct result *r, size_t nr,
                        const struct method *m, size_t nm, const unsigned long long *sizes,
                        size_t ns, unsigned cpus, const struct mmp_clear_policy *pol)
{
    size_t order[MAXS];
    for (size_t i = 0; i < ns; i++) { /* sizes ascending, for the lines */
        size_t j = i;
        for (; j > 0 && sizes[order[j - 1]] > sizes[i]; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    static double xs[MAXM + 1][MAXS], ys[MAXM + 1][MAXS];
    struct svg_series sr[MAXM + 1];
    char mtname[32];
    size_t nsr = 0;
    for (size_t i = 0; i <= nm; i++) {
        bool mt = i == nm;
        if (mt && cpus < 2)
            break;
        size_t n = 0;
        for (size_t k = 0; k < ns; k++) {
            double g = find(r, nr, sizes[order[k]], mt ? "auto" : m[i].name, mt ? cpus : 1);
            if (g > 0)
                xs[nsr][n] = (double)sizes[order[k]], ys[nsr][n++] = g;
        }
        if (!n)
            continue;
        snprintf(mtname, sizeof mtname, "auto x%u", cpus);
        sr[nsr] = (struct svg_series){mt ? mtname : m[i].name, n, xs[nsr], ys[nsr]};
        nsr++;
    }
    const struct mmp_cpu_features *f = mmp_cpu_features();
    char llc[48], cm[64], title[160];
    snprintf(llc, sizeof llc, "LLC %llu KiB", (unsigned long long)f->llc_bytes >> 10);
    snprintf(cm, sizeof cm, "cold_min %llu KiB (%s from here)",
             (unsigned long long)pol->cold_min >> 10, pol->cold);
    /* cold_min first: without an LLC figure only it is marked */
    struct svg_marker mk[2] = {{(double)pol->cold_min, cm}, {(double)f->llc_bytes, llc}};
    snprintf(title, sizeof title, "mmport bench clear: %s", cli_machine());
    svg_chart(out, title, "bytes per call (log scale)", "GB/s (best of the repetitions)",
              "GB/s", sr, nsr, mk, f->llc_bytes ? 2 : 1);
}

/* --json: one object with the results and the ratios. */
static void print_json(const struct result *res, size_t nr, unsigned reps,
                       const struct mmp_clear_policy *pol, const struct first_touch *ft,
                       const struct ratios *rs, const char *plot, double elapsed)
{
    const struct mmp_cpu_features *f = mmp_cpu_features();
    printf("{\"bench\": \"clear\", \"machine\": ");
    cli_json_string(stdout, cli_machine());
    printf(", \"llc_bytes\": %llu, \"policy\": {\"hot\": ", (unsigned long long)f->llc_bytes);
    cli_json_string(stdout, pol->hot);
    printf(", \"cold\": ");
    cli_json_string(stdout, pol->cold);
    if (pol->cold_min == UINT64_MAX)
        printf(", \"cold_min\": null");
    else
        printf(", \"cold_min\": %llu", (unsigned long long)pol->cold_min);
    printf(", \"quirk\": ");
    if (pol->quirk)
        cli_json_string(stdout, pol->quirk);
    else
        printf("null");
    printf(", \"source\": ");
    cli_json_string(stdout, pol->source);
    printf("}, \"reps\": %u, \"results\": [", reps);
    for (size_t i = 0; i < nr; i++) {
        printf("%s\n    {\"size_bytes\": %llu, \"method\": ", i ? "," : "", res[i].size);
        cli_json_string(stdout, res[i].m->name);
        printf(", \"threads\": %u, \"gbps\": %.2f}", res[i].m->threads, res[i].gbps);
    }
    printf("\n  ], \"first_touch\": ");
    if (ft->populate_s > 0)
        printf("{\"bytes\": %llu, \"touch_s\": %.4f, \"populate_threads\": %u"
               ", \"populate_s\": %.4f}",
               ft->bytes, ft->touch_s, ft->threads, ft->populate_s);
    else
        printf("null");
    json_ratios(rs);
    if (plot) {
        printf(", \"plot\": ");
        cli_json_string(stdout, plot);
    }
    printf(", \"seconds\": %.1f}\n", elapsed);
}

static int run(int argc, char **argv)
{
    bool json = false;
    unsigned reps = 7;
    unsigned long long sizes[MAXS] = {4ull << 10, 2ull << 20, 32ull << 20, 256ull << 20,
                                      1ull << 30};
    size_t ns = 5;
    bool default_sizes = true;
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"quick", no_argument, NULL, 'q'},
        {"reps", required_argument, NULL, 'r'},
        {"sizes", required_argument, NULL, 's'},
        {"plot", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char cmd[] = "bench clear";
    const char *plot = NULL;
    bool quick = false, reps_given = false;
    int c;
    unsigned long long v;
    cli_getopt_start();
    while ((c = getopt_long(argc, argv, ":hjqr:s:p:", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': return fputs(usage, stdout), 0;
        case 'j': json = true; break;
        case 'q': quick = true; break;
        case 'p': plot = optarg; break;
        case 'r':
            if (!cli_parse_size(optarg, &v) || !v || v > 100)
                return cli_usage_error(cmd, "--reps '%s': want 1..100", optarg);
            reps = (unsigned)v;
            reps_given = true;
            break;
        case 's': {
            char *save = NULL;
            ns = 0;
            default_sizes = false;
            for (char *t = strtok_r(optarg, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (ns == MAXS)
                    return cli_usage_error(cmd, "--sizes: more than %d sizes", MAXS);
                if (!cli_parse_size(t, &sizes[ns]))
                    return cli_usage_error(cmd, "--sizes: '%s' is not a size (e.g. 2M)", t);
                if (!sizes[ns] || sizes[ns] % MMP_PAGE_SIZE)
                    return cli_usage_error(cmd, "--sizes: '%s' is not a multiple of 4K", t);
                ns++;
            }
            if (!ns)
                return cli_usage_error(cmd, "--sizes: empty list");
            break;
        }
        default: return cli_opt_error(cmd, c, argv, longopts);
        }
    }
    if ((c = cli_no_operands(cmd, argc, argv)))
        return c;
    if (quick && reps_given)
        return cli_usage_error(cmd, "--quick and --reps exclude each other (--quick is --reps 2)");
    if (quick)
        reps = 2;
    FILE *plot_out = plot ? cli_plot_open(cmd, plot) : NULL;
    if (plot && !plot_out)
        return 1;

    struct mmp_clear_policy pol;
    mmp_clear_policy(&pol);
    per_page_fn = mmp_core_clear_fn_of((unsigned)mmp_core_clear_lookup(pol.hot));
    cpu_set_t aff;
    unsigned cpus = sched_getaffinity(0, sizeof aff, &aff) == 0 ? (unsigned)CPU_COUNT(&aff) : 1;

    static struct method methods[MAXM];
    size_t nm = 0;
    size_t nk;
    const struct mmp_clear_kernel *ks = mmp_clear_kernels(&nk);
    for (size_t k = 0; k < nk; k++)
        if (ks[k].available && strcmp(ks[k].name, "memset") != 0 && nm < MAXM - 4)
            methods[nm++] = (struct method){ks[k].name, KERNEL, 1};
    methods[nm++] = (struct method){"auto", AUTO, 1};
    methods[nm++] = (struct method){"memset", MEMSET, 1};
    methods[nm++] = (struct method){"per_page", PER_PAGE, 1};
    struct method auto_mt = {"auto", AUTO, cpus};

    unsigned long long max = 0;
    for (size_t s = 0; s < ns; s++)
        max = sizes[s] > max ? sizes[s] : max;
    char *buf = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return cli_error("bench clear", "cannot map %llu bytes", max);
    madvise(buf, max, MADV_HUGEPAGE);
    memset(buf, 1, max); /* prefault: page faults are not what is measured */

    static struct result res[MAXS * (MAXM + 1)];
    size_t nr = 0;
    double t_start = now_s();
    struct progress pr;
    uint64_t samples = 0, all_samples = (uint64_t)ns * (nm + 1) * (reps + 1);
    progress_start(&pr, "bench clear", NULL);
    for (size_t s = 0; s < ns; s++) {
        const struct method *list[MAXM + 1];
        size_t n = 0;
        for (size_t i = 0; i < nm; i++)
            list[n++] = &methods[i];
        if (sizes[s] == (1ull << 30) && cpus > 1)
            list[n++] = &auto_mt;
        double best[MAXM + 1] = {0};
        for (size_t i = 0; i < n; i++) /* warm-up */
            sample(list[i], buf, sizes[s]);
        progress_update(&pr, samples += n, all_samples);
        for (unsigned r = 0; r < reps; r++)
            for (size_t j = 0; j < n; j++) { /* interleaved, rotating the start */
                size_t i = (j + r) % n;
                double g = sample(list[i], buf, sizes[s]);
                best[i] = g > best[i] ? g : best[i];
                progress_update(&pr, ++samples, all_samples);
            }
        for (size_t i = 0; i < n; i++)
            res[nr++] = (struct result){sizes[s], list[i], best[i]};
    }
    progress_finish(&pr);
    munmap(buf, max);
    /* populate+clear of a fresh 2 GiB range (default sizes only: it needs 2 GiB free) */
    struct first_touch ft = {0};
    if (default_sizes && first_touch(&ft, 2ull << 30, cpus > 1 ? cpus : 2, reps > 3 ? 3 : reps))
        ft.populate_s = 0;
    double elapsed = now_s() - t_start;

    static struct ratios rs;
    ratios(&rs, res, nr, sizes, ns, cpus, &ft);
    if (plot) {
        plot_results(plot_out, res, nr, methods, nm, sizes, ns, cpus, &pol);
        if (cli_plot_close(cmd, plot, plot_out))
            return 1;
    }
    if (json) {
        print_json(res, nr, reps, &pol, &ft, &rs, plot, elapsed);
    } else {
        const struct mmp_cpu_features *f = mmp_cpu_features();
        printf("mmport bench clear: %s, LLC %llu KiB\n", cli_machine(),
               (unsigned long long)f->llc_bytes >> 10);
        printf("policy: hot %s, cold %s from %llu KiB; quirk row %s\npolicy source: %s\n",
               pol.hot, pol.cold, (unsigned long long)pol.cold_min >> 10,
               pol.quirk ? pol.quirk : "none", pol.source);
        printf("best of %u after a warm-up, GB/s (1e9 bytes/s)\n\n", reps);
        /* One row per method, one column per size: 9 sizes per block keep
         * the table within 100 columns. */
        enum { COLS = 9 };
        char label[24];
        for (size_t s0 = 0; s0 < ns; s0 += COLS) {
            size_t s1 = s0 + COLS < ns ? s0 + COLS : ns;
            printf("%s%-10s", s0 ? "\n" : "", "method");
            for (size_t s = s0; s < s1; s++) {
                size_label(label, sizeof label, sizes[s]);
                printf(" %8s", label);
            }
            printf("\n");
            for (size_t i = 0; i <= nm; i++) {
                bool mt = i == nm; /* the last row: auto with one thread per CPU */
                if (mt && cpus < 2)
                    break;
                char name[24];
                if (mt)
                    snprintf(name, sizeof name, "auto x%u", cpus);
                else
                    snprintf(name, sizeof name, "%s", methods[i].name);
                printf("%-10s", name);
                for (size_t s = s0; s < s1; s++) {
                    double g = find(res, nr, sizes[s], mt ? "auto" : methods[i].name,
                                    mt ? cpus : 1);
                    if (g > 0)
                        printf(" %8.2f", g);
                    else
                        printf(" %8s", "-");
                }
                printf("\n");
            }
        }
        if (ft.populate_s > 0) {
            size_label(label, sizeof label, ft.bytes);
            printf("\nfresh %s made resident: 1-thread first touch %.3f s (%.2f GB/s), "
                   "mmp_clear_populate x%u %.3f s (%.2f GB/s)\n",
                   label, ft.touch_s, (double)ft.bytes / ft.touch_s / 1e9, ft.threads,
                   ft.populate_s, (double)ft.bytes / ft.populate_s / 1e9);
        }
        print_ratios(&rs);
        if (plot)
            printf("plot: %s\n", plot);
        printf("\n(%.1f s)\n", elapsed);
    }
    return 0;
}

const struct cli_command cli_bench_clear = {
    .name = "clear",
    .summary = "clearing kernels vs glibc memset and per-page clearing",
    .usage = usage,
    .run = run,
};
