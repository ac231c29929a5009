/* SPDX-License-Identifier: MIT */
/*
 * mmport demo: a hypervisor memory manager bringing up one guest.
 * 1. reserve guest RAM and dirty it (the previous tenant's data);
 * 2. clear it with mmp_clear (cold hint, every online CPU), then the same
 *    with glibc memset for comparison;
 * 3. build the guest's arm64 stage-2 and x86 EPT and NPT tables for its layout
 *    (demo_guest.c) inside a lazy-MMU section;
 * 4. verify: every RAM byte reads zero, sampled guest addresses translate
 *    as laid out. Exit 0 only if both hold.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mmport/mmport.h>

#include "cli.h"
#include "demo_guest.h"
#include "guest_ram.h"
#include "plot_svg.h"
#include "progress.h"

#define MiB (1ull << 20)

struct opts {
    const char *plot; /* --plot FILE */
    unsigned long long ram;
    unsigned threads;
    bool json;
    uint64_t seed;
    unsigned samples;
};

/* ---- step 2: clearing --------------------------------------------------- */

struct clear_run {
    int rc;
    double seconds;
    const char *kernel; /* what the counters say ran, or NULL */
};

static double gbps(uint64_t bytes, double s)
{
    return s > 0 ? (double)bytes / s / 1e9 : 0;
}

static int on_progress(void *arg, size_t done, size_t total)
{
    progress_update(arg, done, total);
    return 0;
}

/* The kernel whose byte counter grew between two snapshots. */
static const char *kernel_used(const struct mmp_clear_stats *a, const struct mmp_clear_stats *b)
{
    size_t n;
    const struct mmp_clear_kernel *k = mmp_clear_kernels(&n);
    const char *best = NULL;
    uint64_t most = 0;
    for (size_t i = 0; i < n && i < b->nkernels; i++)
        if (b->kernel[i].bytes - a->kernel[i].bytes > most) {
            most = b->kernel[i].bytes - a->kernel[i].bytes;
            best = k[i].name;
        }
    return best;
}

static struct clear_run clear_ram(struct guest_ram *ram, unsigned threads, struct progress *pr)
{
    struct mmp_clear_opts o = {.hint = MMP_CLEAR_COLD, .threads = threads};
    if (pr && pr->on) { /* a callback makes mmp_clear chunk: only when it shows */
        o.yield = on_progress;
        o.yield_arg = pr;
    }
    struct mmp_clear_stats s0, s1;
    mmp_clear_stats(&s0);
    double t0 = progress_now();
    struct clear_run r = {.rc = mmp_clear(ram->base, ram->len, &o)};
    r.seconds = progress_now() - t0;
    mmp_clear_stats(&s1);
    r.kernel = kernel_used(&s0, &s1);
    return r;
}

/* ---- output helpers ----------------------------------------------------- */

static void json_kv_str(const char *sep, const char *k, const char *v)
{
    printf("%s\"%s\": ", sep, k);
    if (v)
        cli_json_string(stdout, v);
    else
        printf("null");
}

/*
 * mmp_pt_dump output: every line, except that the lines inside the
 * ballooned block (one per run of pages between the holes) are folded into
 * one summary line. json: as array elements.
 */
struct dump_ctx {
    bool json, first;
    uint64_t fold_lo, fold_hi; /* [lo, hi) folded; empty when lo == hi */
    unsigned folded;
    uint64_t folded_bytes;
};

static void dump_emit(struct dump_ctx *d, const char *line)
{
    if (d->json) {
        printf("%s", d->first ? "" : ", ");
        cli_json_string(stdout, line);
    } else {
        printf("      %s\n", line);
    }
    d->first = false;
}

static void dump_flush_fold(struct dump_ctx *d)
{
    if (!d->folded)
        return;
    char line[160];
    snprintf(line, sizeof line,
             "0x%016" PRIx64 "-0x%016" PRIx64 " balloon: %u page runs (%" PRIu64
             "K) between %u holes",
             d->fold_lo, d->fold_hi - 1, d->folded, d->folded_bytes >> 10, DEMO_BALLOON);
    d->folded = 0;
    dump_emit(d, line);
}

static int print_dump_line(void *arg, const char *line)
{
    struct dump_ctx *d = arg;
    unsigned long long lo, hi;
    if (sscanf(line, "0x%llx-0x%llx", &lo, &hi) == 2 && lo >= d->fold_lo && hi < d->fold_hi) {
        d->folded++;
        d->folded_bytes += hi - lo + 1;
        return 0;
    }
    dump_flush_fold(d);
    dump_emit(d, line);
    return 0;
}

static void dump_table(const struct mmp_pt *pt, uint64_t end, const struct demo_balloon *b,
                       bool json)
{
    struct dump_ctx d = {.json = json, .first = true};
    if (b) {
        d.fold_lo = b->block;
        d.fold_hi = b->block + (2u << 20);
    }
    mmp_pt_dump(pt, 0, end, print_dump_line, &d);
    dump_flush_fold(&d);
}

/* ---- step 3 + 4 per table ----------------------------------------------- */

struct table_result {
    struct demo_layout layout;
    struct demo_build lazy, eager; /* the same layout built twice */
    struct demo_balloon balloon_lazy, balloon_eager; /* then the same pages ballooned out */
    bool have_balloon;
    struct demo_verify verify;
    struct mmp_pt pt;              /* the lazily built table, kept for the dump */
    bool have_pt;
};

static void build_and_verify(struct table_result *t, uint64_t *seed, unsigned samples)
{
    /* The same layout built and ballooned without lazy sections, for the comparison. */
    struct mmp_pt eager;
    t->have_balloon = demo_balloon_pick(&t->layout, seed, &t->balloon_lazy);
    t->balloon_eager = t->balloon_lazy;
    if ((t->eager.rc = mmp_pt_init(&eager, &t->layout.cfg, NULL)) == 0) {
        demo_build_table(&t->layout, &eager, false, &t->eager);
        if (!t->eager.rc && t->have_balloon) {
            demo_balloon_unmap(&eager, false, &t->balloon_eager);
            t->eager.rc = t->balloon_eager.rc;
        }
        mmp_pt_fini(&eager);
    }
    if ((t->lazy.rc = mmp_pt_init(&t->pt, &t->layout.cfg, NULL)) != 0)
        return;
    t->have_pt = true;
    demo_build_table(&t->layout, &t->pt, true, &t->lazy);
    if (!t->lazy.rc && t->have_balloon) {
        demo_balloon_unmap(&t->pt, true, &t->balloon_lazy);
        t->lazy.rc = t->balloon_lazy.rc;
        if (!t->lazy.rc)
            t->lazy.rc = mmp_pt_usage(&t->pt, &t->lazy.use);
    }
    if (!t->lazy.rc)
        demo_verify_table(&t->layout, &t->pt, seed, samples,
                          t->have_balloon ? &t->balloon_lazy : NULL, &t->verify);
}

/* End of the highest region: the dump covers [0, end). */
static uint64_t layout_end(const struct demo_layout *l)
{
    return l->n ? l->r[l->n - 1].gpa + l->r[l->n - 1].size : 0;
}

static const char *size_str(uint64_t b, char *buf, size_t cap)
{
    if (b >= (1ull << 30) && !(b & ((1ull << 30) - 1)))
        snprintf(buf, cap, "%" PRIu64 "G", b >> 30);
    else if (b >= MiB && !(b & (MiB - 1)))
        snprintf(buf, cap, "%" PRIu64 "M", b >> 20);
    else
        snprintf(buf, cap, "%" PRIu64 "K", b >> 10);
    return buf;
}

/* Barriers and flushes of one step: per entry (hypothetical), per call, lazy. */
static void print_counts(uint64_t entries, const struct mmp_pt_stats *eager,
                         const struct mmp_pt_stats *lazy)
{
    printf("     %-36s %8" PRIu64 " %8" PRIu64 "\n", "per entry (code without batching)",
           entries, entries);
    printf("     %-36s %8" PRIu64 " %8" PRIu64 "\n", "per call (mmport, no lazy section)",
           eager->barriers, eager->flushes);
    printf("     %-36s %8" PRIu64 " %8" PRIu64 "   (%" PRIu64 " deferred, %" PRIu64
           " ranges coalesced)\n",
           "one lazy section", lazy->barriers, lazy->flushes, lazy->barriers_deferred,
           lazy->ranges_coalesced);
}

static void print_table_text(struct table_result *t)
{
    const struct demo_layout *l = &t->layout;
    const struct demo_build *b = &t->lazy;
    printf("\n   %s\n", l->title);
    printf("   (%u levels from level %d, root %u bytes%s)\n", b->info.levels,
           b->info.start_level, b->info.root_bytes,
           b->info.root_tables > 1 ? ", concatenated tables" : "");
    struct mmp_pt_regs regs;
    enum mmp_pt_format fm = l->cfg.format;
    if ((fm == MMP_PT_X86_EPT || fm == MMP_PT_X86_NPT) && mmp_pt_regs(&t->pt, 0, &regs) == 0)
        printf("   %s = %#" PRIx64 " (mmp_pt_regs)\n", fm == MMP_PT_X86_EPT ? "EPTP" : "nCR3",
               regs.root);
    for (unsigned i = 0; i < l->n; i++) {
        const struct demo_region *r = &l->r[i];
        char sz[32];
        printf("     %-11s 0x%010" PRIx64 "-0x%010" PRIx64 " %6s -> %s 0x%012" PRIx64 "\n",
               r->name, r->gpa, r->gpa + r->size - 1, size_str(r->size, sz, sizeof sz),
               r->ram ? "host RAM" : "device  ", r->pa);
    }
    if (b->rc) {
        printf("   build FAILED: %s%s%s\n", mmp_strerror(b->rc), b->failed ? " mapping " : "",
               b->failed ? b->failed : "");
        return;
    }
    /* Naive code: one barrier and one flush per entry it writes. */
    printf("   %-40s %8s %8s\n", "", "barriers", "flushes");
    printf("   build: %" PRIu64 " entries written in %.0f us\n", b->st.entries_written,
           b->seconds * 1e6);
    print_counts(b->st.entries_written, &t->eager.st, &b->st);
    if (t->have_balloon) {
        const struct demo_balloon *bl = &t->balloon_lazy;
        printf("   balloon: the guest returns %u scattered 4K pages of the 2M block at 0x%" PRIx64
               "\n   (one unmap each; %" PRIu64 " entries written; ",
               DEMO_BALLOON, bl->block, bl->delta.entries_written);
        if (bl->delta.bbm)
            printf("%" PRIu64 " break-before-make: the block split, runs unfolded)\n",
                   bl->delta.bbm);
        else
            printf("the block split in place, no break-before-make needed)\n");
        print_counts(bl->delta.entries_written, &t->balloon_eager.delta, &bl->delta);
    }
    printf("   the table now (mmp_pt_dump):\n");
    dump_table(&t->pt, layout_end(l), t->have_balloon ? &t->balloon_lazy : NULL, false);
    printf("   leaves: %" PRIu64 " blocks, %" PRIu64 " contiguous runs, %" PRIu64
           " pages; %" PRIu64 " table pages (%" PRIu64 " KiB)\n",
           b->use.blocks, b->use.cont_runs, b->use.pages, b->use.table_pages,
           b->use.table_pages * l->cfg.granule >> 10);
}

static void print_table_json(struct table_result *t, const char *sep)
{
    const struct demo_layout *l = &t->layout;
    const struct demo_build *b = &t->lazy;
    printf("%s{", sep);
    json_kv_str("", "title", l->title);
    json_kv_str(", ", "format", l->format);
    printf(", \"granule\": %u, \"va_bits\": %u, \"levels\": %u, \"start_level\": %d"
           ", \"root_bytes\": %u, \"regions\": [",
           l->cfg.granule, l->cfg.va_bits, b->info.levels, b->info.start_level,
           b->info.root_bytes);
    for (unsigned i = 0; i < l->n; i++) {
        const struct demo_region *r = &l->r[i];
        printf("%s{", i ? ", " : "");
        json_kv_str("", "name", r->name);
        printf(", \"gpa\": ");
        cli_json_hex(stdout, r->gpa);
        printf(", \"size\": %" PRIu64 ", \"pa\": ", r->size);
        cli_json_hex(stdout, r->pa);
        printf(", \"attrs\": ");
        cli_json_hex(stdout, r->attrs);
        printf(", \"ram\": %s}", r->ram ? "true" : "false");
    }
    printf("]");
    json_kv_str(", ", "error", b->rc ? mmp_strerror(b->rc) : NULL);
    if (!b->rc) {
        printf(", \"dump\": [");
        dump_table(&t->pt, layout_end(l), t->have_balloon ? &t->balloon_lazy : NULL, true);
        printf("]");
    }
    printf(", \"usage\": {\"blocks\": %" PRIu64 ", \"cont_runs\": %" PRIu64
           ", \"pages\": %" PRIu64 ", \"table_pages\": %" PRIu64 ", \"mapped_bytes\": %" PRIu64
           "}, \"build_us\": %.1f",
           b->use.blocks, b->use.cont_runs, b->use.pages, b->use.table_pages,
           b->use.mapped_bytes, b->seconds * 1e6);
    printf(", \"entries_written\": %" PRIu64 ", \"per_entry\": {\"barriers\": %" PRIu64
           ", \"flushes\": %" PRIu64 "}, \"per_call\": {\"barriers\": %" PRIu64
           ", \"flushes\": %" PRIu64 "}, \"lazy\": {\"barriers\": %" PRIu64
           ", \"flushes\": %" PRIu64 ", \"barriers_deferred\": %" PRIu64
           ", \"ranges_coalesced\": %" PRIu64 ", \"bbm\": %" PRIu64 "}",
           b->st.entries_written, b->st.entries_written, b->st.entries_written,
           t->eager.st.barriers, t->eager.st.flushes, b->st.barriers, b->st.flushes,
           b->st.barriers_deferred, b->st.ranges_coalesced, b->st.bbm);
    if (t->have_balloon) {
        const struct demo_balloon *bl = &t->balloon_lazy, *be = &t->balloon_eager;
        printf(", \"balloon\": {\"pages\": %u, \"block\": ", DEMO_BALLOON);
        cli_json_hex(stdout, bl->block);
        printf(", \"entries_written\": %" PRIu64 ", \"bbm\": %" PRIu64
               ", \"per_entry\": {\"barriers\": %" PRIu64 ", \"flushes\": %" PRIu64
               "}, \"per_call\": {\"barriers\": %" PRIu64 ", \"flushes\": %" PRIu64
               "}, \"lazy\": {\"barriers\": %" PRIu64 ", \"flushes\": %" PRIu64
               ", \"barriers_deferred\": %" PRIu64 ", \"ranges_coalesced\": %" PRIu64 "}}",
               bl->delta.entries_written, bl->delta.bbm,
               bl->delta.entries_written, bl->delta.entries_written, be->delta.barriers,
               be->delta.flushes, bl->delta.barriers, bl->delta.flushes,
               bl->delta.barriers_deferred, bl->delta.ranges_coalesced);
    }
    printf(", \"verify\": {\"samples\": %u, \"holes\": %u, \"ram_read\": %u, \"bad\": %u",
           t->verify.samples, t->verify.holes, t->verify.ram_read, t->verify.bad);
    json_kv_str(", ", "first_bad", t->verify.bad ? t->verify.first_bad : NULL);
    printf("}}");
}

/* ---- the command -------------------------------------------------------- */

enum { PARSE_HELP = -1 }; /* parse(): --help printed, exit 0 */

static int parse(int argc, char **argv, struct opts *o)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (struct opts){.ram = 2ull << 30, .threads = n > 0 ? (unsigned)n : 1, .seed = 1,
                       .samples = 64};
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"ram", required_argument, NULL, 'r'},
        {"threads", required_argument, NULL, 't'},
        {"seed", required_argument, NULL, 's'},
        {"samples", required_argument, NULL, 'n'},
        {"plot", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    unsigned long long v = 0;
    cli_getopt_start();
    while ((c = getopt_long(argc, argv, ":hjr:t:s:n:p:", longopts, NULL)) != -1) {
        if (c == 'r' || c == 't' || c == 's' || c == 'n') {
            if (!cli_parse_size(optarg, &v))
                return cli_usage_error("demo", "--%s '%s': not a number",
                                       c == 'r' ? "ram" : c == 't' ? "threads"
                                                        : c == 's' ? "seed" : "samples",
                                       optarg);
        }
        switch (c) {
        case 'h': return fputs(cli_cmd_demo.usage, stdout), PARSE_HELP;
        case 'j': o->json = true; break;
        case 'p': o->plot = optarg; break;
        case 'r':
            if (v < 4 * MiB || v > (256ull << 30))
                return cli_usage_error("demo", "--ram '%s': out of range 4M..256G", optarg);
            if (v % (2 * MiB))
                return cli_usage_error("demo", "--ram '%s': not a multiple of 2M", optarg);
            o->ram = v;
            break;
        case 't':
            if (v < 1 || v > MMP_CLEAR_MAX_THREADS)
                return cli_usage_error("demo", "--threads '%s': out of range 1..%u", optarg,
                                       MMP_CLEAR_MAX_THREADS);
            o->threads = (unsigned)v;
            break;
        case 's':
            if (!v)
                return cli_usage_error("demo", "--seed '%s': must not be 0", optarg);
            o->seed = v;
            break;
        case 'n':
            if (v > 100000)
                return cli_usage_error("demo", "--samples '%s': out of range 0..100000", optarg);
            o->samples = (unsigned)v;
            break;
        default: return cli_opt_error("demo", c, argv, longopts);
        }
    }
    if ((c = cli_no_operands("demo", argc, argv)))
        return c;
    return 0;
}

/* ---- --plot: the stage-2 layout as strips of blocks, runs, pages, holes ---- */

enum { K_BLOCK, K_RUN, K_PAGE, K_HOLE };
static const char *const plot_kinds[] = {"block", "run", "page", "hole"};
static const char *const plot_colors[] = {"#2b6cb0", "#38a169", "#dd6b20", "#ffffff"};

struct extents {
    struct svg_extent *e;
    size_t n, cap;
    uint64_t next; /* end of what was collected */
};

static bool ext_add(struct extents *x, uint64_t start, uint64_t size, unsigned kind)
{
    if (x->n && x->e[x->n - 1].kind == kind && x->e[x->n - 1].start + x->e[x->n - 1].size == start) {
        x->e[x->n - 1].size += size;
    } else {
        if (x->n == x->cap) {
            size_t cap = x->cap ? x->cap * 2 : 64;
            struct svg_extent *e = realloc(x->e, cap * sizeof *e);
            if (!e)
                return false;
            x->e = e, x->cap = cap;
        }
        x->e[x->n++] = (struct svg_extent){.start = start, .size = size, .kind = kind};
    }
    x->next = start + size;
    return true;
}

static int plot_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct extents *x = arg;
    if (l->va > x->next && !ext_add(x, x->next, l->va - x->next, K_HOLE))
        return -MMP_ENOMEM;
    unsigned k = l->kind == MMP_LEAF_BLOCK ? K_BLOCK : l->kind == MMP_LEAF_CONT ? K_RUN : K_PAGE;
    return ext_add(x, l->va, l->size, k) ? 0 : -MMP_ENOMEM;
}

/* Extents of [lo, hi) of pt, tooltips filled in. */
static int collect(const struct mmp_pt *pt, uint64_t lo, uint64_t hi, struct extents *x)
{
    *x = (struct extents){.next = lo};
    int rc = mmp_pt_walk(pt, lo, hi - lo, plot_leaf, x);
    if (!rc && x->next < hi && !ext_add(x, x->next, hi - x->next, K_HOLE))
        rc = -MMP_ENOMEM;
    for (size_t i = 0; i < x->n; i++)
        snprintf(x->e[i].tip, sizeof x->e[i].tip, "%s 0x%" PRIx64 "-0x%" PRIx64 " (%" PRIu64 " KiB)",
                 plot_kinds[x->e[i].kind], x->e[i].start, x->e[i].start + x->e[i].size - 1,
                 x->e[i].size >> 10);
    return rc;
}

static int plot_layout(FILE *out, const struct table_result *t)
{
    const struct demo_layout *l = &t->layout;
    struct svg_strip rows[DEMO_MAX_REGIONS + 1];
    struct extents x[DEMO_MAX_REGIONS + 1];
    char names[DEMO_MAX_REGIONS + 1][64];
    size_t nrows = 0;
    int rc = 0;
    snprintf(names[0], sizeof names[0], "guest space 0-%" PRIu64 "M", layout_end(l) >> 20);
    rc = collect(&t->pt, 0, layout_end(l), &x[0]);
    rows[nrows++] = (struct svg_strip){names[0], 0, layout_end(l), x[0].n, x[0].e};
    for (unsigned i = 0; i < l->n && !rc; i++) {
        const struct demo_region *r = &l->r[i];
        snprintf(names[nrows], sizeof names[nrows], "%s (%" PRIu64 "K)", r->name, r->size >> 10);
        rc = collect(&t->pt, r->gpa, r->gpa + r->size, &x[nrows]);
        rows[nrows] = (struct svg_strip){names[nrows], r->gpa, r->gpa + r->size, x[nrows].n,
                                         x[nrows].e};
        nrows++;
    }
    if (!rc) {
        char title[128];
        snprintf(title, sizeof title, "mmport demo: %s layout (%s), after the balloon", l->title,
                 l->format);
        svg_strips(out, title, rows, nrows, plot_kinds, plot_colors, 4);
    }
    for (size_t i = 0; i < nrows; i++)
        free(x[i].e);
    return rc;
}

static void print_policy_text(const struct mmp_clear_policy *p, const char *kernel)
{
    printf("   kernel   %s", kernel ? kernel : "?");
    if (p->forced)
        printf(" (forced by MMPORT_CLEAR=%s)\n", p->forced);
    else
        printf(" (the policy's cold kernel; hot: %s)\n", p->hot);
    char why[64];
    snprintf(why, sizeof why, "   why      quirk row: %s%s", p->quirk ? p->quirk : "none matched",
             p->quirk_why ? ": " : "");
    cli_print_wrapped(why, 12, p->quirk_why ? p->quirk_why : "");
    char src[512];
    snprintf(src, sizeof src,
             "policy source: %s; AUTO switches to %s from %" PRIu64 " KiB (from %s)", p->source,
             p->cold, p->cold_min >> 10, p->cold_min_from);
    cli_print_wrapped("            ", 12, src);
}

static void print_policy_json(const struct mmp_clear_policy *p, const char *kernel)
{
    json_kv_str(", ", "kernel", kernel);
    json_kv_str(", ", "forced", p->forced);
    json_kv_str(", ", "hot", p->hot);
    json_kv_str(", ", "cold", p->cold);
    json_kv_str(", ", "quirk", p->quirk);
    json_kv_str(", ", "quirk_why", p->quirk_why);
    json_kv_str(", ", "source", p->source);
    printf(", \"cold_min\": %" PRIu64, p->cold_min);
    json_kv_str(", ", "cold_min_from", p->cold_min_from);
}

static int run(int argc, char **argv)
{
    struct opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == PARSE_HELP ? 0 : rc;
    const struct mmp_cpu_features *f = mmp_cpu_features();
    struct progress pr;

    FILE *plot_out = o.plot ? cli_plot_open("demo", o.plot) : NULL;
    if (o.plot && !plot_out)
        return 1;

    /* 1. guest RAM */
    struct guest_ram ram;
    rc = guest_ram_reserve(&ram, o.ram);
    if (rc) {
        if (plot_out)
            fclose(plot_out);
        return cli_error("demo", "cannot reserve %llu MiB of guest RAM: %s", o.ram >> 20,
                         strerror(-rc));
    }
    if (!o.json) {
        printf("mmport %s demo: bringing up one guest on %s (%u threads)\n\n", mmp_version(),
               mmp_arch_name(f->arch), o.threads);
        printf("1. guest RAM: %zu MiB at host 0x%" PRIxPTR "\n   backing  %s\n",
               ram.len >> 20, (uintptr_t)ram.base, ram.backing);
        fflush(stdout);
    }
    double t0 = progress_now();
    progress_start(&pr, "first touch", "B");
    guest_ram_dirty(&ram, o.threads, &pr);
    progress_finish(&pr);
    double dirty_s = progress_now() - t0;
    long long huge = guest_ram_huge_bytes();
    if (!o.json) {
        if (huge >= 0)
            printf("   huge     %lld MiB of the process in huge pages (smaps) after the first "
                   "touch\n",
                   huge >> 20);
        printf("   dirtied as a previous tenant would (%.2f s, first-touch page faults included)\n\n2. "
               "clearing it (mmp_clear, COLD hint, %u threads)\n",
               dirty_s, o.threads);
    }

    /* 2. clearing: mmp_clear with progress, then memset vs mmp_clear on one thread */
    fflush(stdout);
    progress_start(&pr, "mmp_clear", "B");
    struct clear_run main_clear = clear_ram(&ram, o.threads, &pr);
    progress_finish(&pr);
    if (main_clear.rc) {
        guest_ram_release(&ram);
        return cli_error("demo", "mmp_clear: %s", mmp_strerror(main_clear.rc));
    }
    struct mmp_clear_policy pol;
    mmp_clear_policy(&pol);
    size_t nz_after_clear = guest_ram_first_nonzero(&ram);

    /* four passes over the RAM: a line counting them */
    progress_start(&pr, "comparison, one thread each", NULL);
    guest_ram_dirty(&ram, o.threads, NULL);
    progress_update(&pr, 1, 4);
    t0 = progress_now();
    memset(ram.base, 0, ram.len);
    double memset_s = progress_now() - t0;
    progress_update(&pr, 2, 4);
    guest_ram_dirty(&ram, o.threads, NULL);
    progress_update(&pr, 3, 4);
    struct clear_run one = clear_ram(&ram, 1, NULL);
    progress_finish(&pr);
    if (one.rc) {
        guest_ram_release(&ram);
        return cli_error("demo", "mmp_clear: %s", mmp_strerror(one.rc));
    }
    double g_main = gbps(ram.len, main_clear.seconds), g_one = gbps(ram.len, one.seconds);
    double g_memset = gbps(ram.len, memset_s);
    if (!o.json) {
        printf("   mmp_clear     %u thread%s %6.3f s  %6.1f GB/s\n", o.threads,
               o.threads > 1 ? "s" : " ", main_clear.seconds, g_main);
        print_policy_text(&pol, main_clear.kernel);
        printf("   comparison, one thread each (re-dirtied before each):\n");
        printf("     glibc memset  %6.3f s  %6.1f GB/s\n", memset_s, g_memset);
        printf("     mmp_clear     %6.3f s  %6.1f GB/s  (%.2fx memset)\n", one.seconds, g_one,
               g_memset > 0 ? g_one / g_memset : 0);
        printf("\n3. the guest's second-stage tables, each built in one lazy-MMU section\n");
    }

    /* 3. page tables for the guest layout */
    /* The x86 guest both ways: EPT for an Intel host, NPT for an AMD one;
     * the one this CPU would need comes first. */
    enum { NTABS = 3 };
    static struct table_result tabs[NTABS];
    bool amd = strcmp(f->vendor, "AuthenticAMD") == 0 || strcmp(f->vendor, "HygonGenuine") == 0;
    demo_layout_arm64(&tabs[0].layout, (uintptr_t)ram.base, ram.len);
    demo_layout_x86(&tabs[1].layout, (uintptr_t)ram.base, ram.len, amd);
    demo_layout_x86(&tabs[2].layout, (uintptr_t)ram.base, ram.len, !amd);
    if (!o.json && f->vendor[0])
        printf("   (this CPU is %s: its x86 guests would run on %s)\n", f->vendor,
               amd ? "NPT" : strcmp(f->vendor, "GenuineIntel") == 0 ? "EPT" : "EPT or NPT");
    uint64_t seed = o.seed;
    unsigned bad_tables = 0;
    for (int i = 0; i < NTABS; i++) {
        build_and_verify(&tabs[i], &seed, o.samples);
        if (tabs[i].lazy.rc || tabs[i].eager.rc || tabs[i].verify.bad)
            bad_tables++;
        if (!o.json)
            print_table_text(&tabs[i]);
    }

    if (plot_out) {
        const struct table_result *s2 = NULL;
        for (int i = 0; i < 2; i++)
            if (tabs[i].layout.cfg.format == MMP_PT_ARM64_S2 && tabs[i].have_pt)
                s2 = &tabs[i];
        int prc = s2 ? plot_layout(plot_out, s2) : -MMP_ENOENT;
        if (prc)
            cli_error("demo", "--plot '%s': %s", o.plot,
                      prc == -MMP_ENOENT ? "no stage-2 table" : mmp_strerror(prc));
        if (cli_plot_close("demo", o.plot, plot_out) || prc) {
            for (int i = 0; i < 2; i++)
                if (tabs[i].have_pt)
                    mmp_pt_fini(&tabs[i].pt);
            guest_ram_release(&ram);
            return 1;
        }
    }

    /* 4. verification */
    size_t nz = guest_ram_first_nonzero(&ram);
    bool ram_ok = nz == ram.len && nz_after_clear == ram.len;
    bool ok = ram_ok && !bad_tables;
    if (o.json) {
        printf("{\"version\": ");
        cli_json_string(stdout, mmp_version());
        json_kv_str(", ", "arch", mmp_arch_name(f->arch));
        printf(", \"ram\": {\"bytes\": %zu, \"host\": ", ram.len);
        cli_json_hex(stdout, (uintptr_t)ram.base);
        json_kv_str(", ", "backing", ram.backing);
        printf(", \"huge_bytes\": %lld, \"dirty_s\": %.3f}", huge, dirty_s);
        printf(", \"clear\": {\"hint\": \"cold\", \"threads\": %u, \"seconds\": %.4f"
               ", \"gbps\": %.2f",
               o.threads, main_clear.seconds, g_main);
        print_policy_json(&pol, main_clear.kernel);
        printf(", \"one_thread\": {\"mmp_clear_gbps\": %.2f, \"memset_gbps\": %.2f"
               ", \"ratio\": %.2f}}",
               g_one, g_memset, g_memset > 0 ? g_one / g_memset : 0);
        printf(", \"tables\": [");
        for (int i = 0; i < NTABS; i++)
            print_table_json(&tabs[i], i ? ", " : "");
        printf("], \"verify\": {\"ram_zero\": %s, \"first_nonzero\": ", ram_ok ? "true" : "false");
        if (ram_ok)
            printf("null");
        else
            printf("%zu", nz_after_clear != ram.len ? nz_after_clear : nz);
        printf(", \"seed\": %" PRIu64 ", \"ok\": %s}}\n", o.seed, ok ? "true" : "false");
    } else {
        printf("\n4. verification\n");
        if (ram_ok)
            printf("   RAM: all %zu bytes read zero\n", ram.len);
        else
            printf("   RAM: FAILED, byte %zu is not zero\n",
                   nz_after_clear != ram.len ? nz_after_clear : nz);
        for (int i = 0; i < NTABS; i++) {
            const struct demo_verify *v = &tabs[i].verify;
            printf("   %-12s %u lookups, %u regions, %u in holes, %u RAM bytes read: %s%s\n",
                   tabs[i].layout.format, v->samples, tabs[i].layout.n, v->holes, v->ram_read,
                   v->bad || tabs[i].lazy.rc ? "FAILED " : "all as laid out",
                   v->bad ? v->first_bad : "");
        }
        printf("\n%s (seed %" PRIu64 ")\n", ok ? "verification passed" : "verification FAILED",
               o.seed);
    }
    for (int i = 0; i < NTABS; i++)
        if (tabs[i].have_pt)
            mmp_pt_fini(&tabs[i].pt);
    guest_ram_release(&ram);
    if (!ok)
        fprintf(stderr, "mmport demo: verification failed\n");
    return ok ? 0 : 1;
}

const struct cli_command cli_cmd_demo = {
    .name = "demo",
    .summary = "bring up one guest: clear its RAM, build its tables, verify",
    .usage =
        "usage: mmport demo [-r|--ram SIZE] [-t|--threads N] [-j|--json] [-s|--seed N]\n"
        "                   [-n|--samples N] [-p|--plot FILE]\n\n"
        "Plays a hypervisor memory manager bringing up one guest:\n"
        "  1. reserves guest RAM (hugetlbfs 2 MiB pages if reserved, else transparent\n"
        "     huge pages) and dirties it as a previous tenant would;\n"
        "  2. clears it with mmp_clear (COLD hint, N threads, progress on a\n"
        "     terminal), says which kernel ran and why, then compares glibc memset\n"
        "     and mmp_clear on one thread;\n"
        "  3. builds the guest's arm64 stage-2 (4K granule, 40-bit IPA, QEMU-virt-like\n"
        "     layout) and x86 (PC-like, RAM split around the 32-bit PCI hole) tables,\n"
        "     the x86 one both as Intel EPT and as AMD NPT (this CPU's kind first),\n"
        "     in one lazy-MMU section each, then unmaps 64 scattered pages of one 2M\n"
        "     block (a balloon inflating) in another, and shows leaves, table pages,\n"
        "     and the barriers and flushes issued vs per-entry and per-call code;\n"
        "  4. verifies every RAM byte reads zero and random guest addresses in every\n"
        "     region, every page of the ballooned block and the holes between regions\n"
        "     translate as laid out.\n"
        "Exits 0 when verification passes, 1 when it fails.\n\n"
        "  -r, --ram SIZE     guest RAM, a multiple of 2M from 4M (default 2G)\n"
        "  -t, --threads N    clearing threads (default: the online CPUs)\n"
        "  -j, --json         one JSON object on stdout instead of the report;\n"
        "                     addresses are \"0x...\" strings\n"
        "  -s, --seed N       seed of the sampled addresses (default 1)\n"
        "  -n, --samples N    random lookups per region (default 64)\n"
        "  -p, --plot FILE    also an SVG picture of the arm64 stage-2 table: the guest\n"
        "                     space and each region as a strip of blocks, contiguous\n"
        "                     runs, pages and holes\n",
    .run = run,
};
