/* SPDX-License-Identifier: MIT */
/*
 * Clearing: every available kernel forced on odd sizes between PROT_NONE
 * guard pages, bad input, threads, cancellation, cross-thread visibility,
 * counters, and the policy for fake CPUs (the quirk tables are data).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mmport/mmport.h>

#include "atomic.h"
#include "clear_policy.h"
#include "clear_span.h"
#include "clear_tuning.h"
#include "host.h"
#include "mmp_test.h"

#define PG 4096u
#define PAT 0xa5

/* [guard][pattern page][len bytes][pattern page][guard] */
struct gbuf {
    unsigned char *map, *p;
    size_t len, maplen;
};

static struct gbuf gbuf_new(size_t len)
{
    struct gbuf g = {.len = len, .maplen = len + 4 * PG};
    g.map = mmap(NULL, g.maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(g.map, MAP_FAILED);
    ck_assert_int_eq(mprotect(g.map, PG, PROT_NONE), 0);
    ck_assert_int_eq(mprotect(g.map + g.maplen - PG, PG, PROT_NONE), 0);
    g.p = g.map + 2 * PG;
    memset(g.map + PG, PAT, len + 2 * PG);
    return g;
}

static void gbuf_free(struct gbuf *g)
{
    munmap(g->map, g->maplen);
}

/* Index of the first byte in [p, p+n) that is not v, or n. */
static size_t first_not(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return i;
    return n;
}

/* Bytes [0, zero) are zero, [zero, len) and both pattern pages intact. */
static void check_gbuf(const struct gbuf *g, size_t zero, const char *what)
{
    size_t i = first_not(g->p, zero, 0);
    ck_assert_msg(i == zero, "%s: byte %zu of %zu not zero", what, i, zero);
    i = first_not(g->p + zero, g->len - zero, PAT);
    ck_assert_msg(i == g->len - zero, "%s: byte %zu past the cleared part changed", what,
                  zero + i);
    ck_assert_msg(first_not(g->p - PG, PG, PAT) == PG, "%s: page before touched", what);
    ck_assert_msg(first_not(g->p + g->len, PG, PAT) == PG, "%s: page after touched", what);
}

/* CPUs this thread may run on, from the kernel (what threads are capped at). */
static unsigned affinity_cpus(void)
{
    cpu_set_t set;
    ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
    return (unsigned)CPU_COUNT(&set);
}

static const size_t sizes[] = {4u << 10, 8u << 10, 64u << 10, (2u << 20) + (4u << 10),
                               9u << 20};

START_TEST(kernels_listed_once_with_reasons)
{
    size_t n = 0;
    const struct mmp_clear_kernel *k = mmp_clear_kernels(&n);
    ck_assert_uint_gt(n, 0);
    ck_assert_uint_le(n, MMP_CLEAR_MAX_KERNELS);
    enum mmp_arch arch = mmp_cpu_features()->arch;
    bool generic_seen = false;
    for (size_t i = 0; i < n; i++) {
        ck_assert_ptr_nonnull(k[i].name);
        ck_assert_ptr_nonnull(k[i].why);
        ck_assert_uint_gt(strlen(k[i].why), 0);
        for (size_t j = 0; j < i; j++)
            ck_assert_str_ne(k[i].name, k[j].name);
        if (k[i].arch != MMP_ARCH_GENERIC && k[i].arch != arch)
            ck_assert_msg(!k[i].available, "%s available on the wrong arch", k[i].name);
        if (k[i].arch == MMP_ARCH_GENERIC)
            generic_seen = k[i].available;
    }
    ck_assert(generic_seen);
    struct mmp_clear_policy pol;
    mmp_clear_policy(&pol);
    int hot = mmp_core_clear_lookup(pol.hot), cold = mmp_core_clear_lookup(pol.cold);
    ck_assert_int_ge(hot, 0);
    ck_assert_int_ge(cold, 0);
    ck_assert(k[hot].available);
    ck_assert(k[cold].available);
}
END_TEST

START_TEST(every_kernel_every_size_guarded)
{
    size_t n;
    const struct mmp_clear_kernel *k = mmp_clear_kernels(&n);
    unsigned ran = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        struct gbuf g = gbuf_new(sizes[s]);
        for (size_t i = 0; i < n; i++) {
            if (!k[i].available)
                continue;
            char what[64];
            snprintf(what, sizeof what, "%s at %zu bytes", k[i].name, sizes[s]);
            memset(g.p, PAT, g.len);
            size_t cleared = 1;
            struct mmp_clear_opts o = {.kernel = k[i].name, .cleared = &cleared};
            ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0);
            ck_assert_uint_eq(cleared, g.len);
            check_gbuf(&g, g.len, what);
            ran++;
        }
        /* the defaults, by every hint */
        for (int h = MMP_CLEAR_AUTO; h <= MMP_CLEAR_COLD; h++) {
            memset(g.p, PAT, g.len);
            struct mmp_clear_opts o = {.hint = (enum mmp_clear_hint)h};
            ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0);
            check_gbuf(&g, g.len, "hint");
        }
        memset(g.p, PAT, g.len);
        ck_assert_int_eq(mmp_clear_pages(g.p, g.len / PG), 0);
        check_gbuf(&g, g.len, "mmp_clear_pages");
        gbuf_free(&g);
    }
    ck_assert_uint_ge(ran, 2 * sizeof sizes / sizeof sizes[0]);
}
END_TEST

START_TEST(unavailable_or_unknown_kernel_refused)
{
    struct gbuf g = gbuf_new(8 * PG);
    size_t n, refused = 0;
    const struct mmp_clear_kernel *k = mmp_clear_kernels(&n);
    for (size_t i = 0; i < n; i++) {
        if (k[i].available)
            continue;
        size_t cleared = 1;
        struct mmp_clear_opts o = {.kernel = k[i].name, .cleared = &cleared};
        ck_assert_int_eq(mmp_clear(g.p, g.len, &o), -MMP_ENOTSUP);
        ck_assert_uint_eq(cleared, 0);
        check_gbuf(&g, 0, k[i].name);
        refused++;
    }
    ck_assert_uint_gt(refused, 0); /* another arch's kernels at least */
    struct mmp_clear_opts o = {.kernel = "no_such_kernel"};
    ck_assert_int_eq(mmp_clear(g.p, g.len, &o), -MMP_EINVAL);
    o.kernel = "";
    ck_assert_int_eq(mmp_clear(g.p, g.len, &o), -MMP_EINVAL);
    check_gbuf(&g, 0, "unknown kernel");
    gbuf_free(&g);
}
END_TEST

START_TEST(bad_input_changes_nothing)
{
    struct gbuf g = gbuf_new(8 * PG);
    struct mmp_clear_stats before, after;
    mmp_clear_stats(&before);
    size_t cleared = 7;
    struct mmp_clear_opts o = {.cleared = &cleared};
    ck_assert_int_eq(mmp_clear(NULL, PG, &o), -MMP_EINVAL);
    ck_assert_uint_eq(cleared, 0);
    ck_assert_int_eq(mmp_clear(g.p + 64, PG, NULL), -MMP_EINVAL);
    ck_assert_int_eq(mmp_clear(g.p + PG / 2, PG, NULL), -MMP_EINVAL);
    ck_assert_int_eq(mmp_clear(g.p, 100, NULL), -MMP_EINVAL);
    ck_assert_int_eq(mmp_clear(g.p, PG + 1, NULL), -MMP_EINVAL);
    ck_assert_int_eq(mmp_clear_pages(NULL, 1), -MMP_EINVAL);
    ck_assert_int_eq(mmp_clear_pages(g.p + 8, 1), -MMP_EINVAL);
    ck_assert_int_eq(mmp_clear_pages(g.p, SIZE_MAX / PG + 1), -MMP_EOVERFLOW);
    ck_assert_int_eq(mmp_clear_pages(g.p, SIZE_MAX), -MMP_EOVERFLOW);
    /* a range that wraps the address space */
    void *top = (void *)(UINTPTR_MAX & ~(uintptr_t)(PG - 1));
    ck_assert_int_eq(mmp_clear(top, 2 * PG, NULL), -MMP_EOVERFLOW);
    ck_assert_int_eq(mmp_clear(g.p, SIZE_MAX & ~(size_t)(PG - 1), NULL), -MMP_EOVERFLOW);
    struct mmp_clear_opts bad = {.hint = (enum mmp_clear_hint)7};
    ck_assert_int_eq(mmp_clear(g.p, g.len, &bad), -MMP_EINVAL);
    bad = (struct mmp_clear_opts){.chunk = 100};
    ck_assert_int_eq(mmp_clear(g.p, g.len, &bad), -MMP_EINVAL);
    bad = (struct mmp_clear_opts){.threads = MMP_CLEAR_MAX_THREADS + 1};
    ck_assert_int_eq(mmp_clear(g.p, g.len, &bad), -MMP_EINVAL);
    check_gbuf(&g, 0, "bad input");
    mmp_clear_stats(&after);
    ck_assert_uint_eq(after.rejected - before.rejected, 14);
    /* zero length is fine and writes nothing */
    ck_assert_int_eq(mmp_clear(g.p, 0, NULL), 0);
    check_gbuf(&g, 0, "zero length");
    gbuf_free(&g);
}
END_TEST

START_TEST(threads_on_odd_page_counts)
{
    static const unsigned threads[] = {1, 2, 3, 7};
    static const size_t pages[] = {1, 5, 301, 513};
    for (size_t p = 0; p < sizeof pages / sizeof pages[0]; p++) {
        struct gbuf g = gbuf_new(pages[p] * PG);
        for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
            for (int hint = MMP_CLEAR_HOT; hint <= MMP_CLEAR_COLD; hint++) {
                char what[64];
                snprintf(what, sizeof what, "%zu pages, %u threads, hint %d", pages[p],
                         threads[t], hint);
                memset(g.p, PAT, g.len);
                size_t cleared = 0;
                struct mmp_clear_opts o = {.threads = threads[t],
                                           .hint = (enum mmp_clear_hint)hint,
                                           .cleared = &cleared};
                ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0);
                ck_assert_uint_eq(cleared, g.len);
                check_gbuf(&g, g.len, what);
            }
        }
        gbuf_free(&g);
    }
}
END_TEST

struct cancel_at {
    size_t stop_at; /* cancel once done >= this */
    size_t calls, last_done, total;
    bool monotonic;
};

static int yield_cb(void *arg, size_t done, size_t total)
{
    struct cancel_at *c = arg;
    c->monotonic &= done > c->last_done;
    c->last_done = done;
    c->total = total;
    c->calls++;
    return done >= c->stop_at;
}

START_TEST(cancel_at_chunk_boundary_reports_exact_length)
{
    const size_t len = 131 * PG, chunk = 4 * PG;
    struct gbuf g = gbuf_new(len);
    static const unsigned threads[] = {1, 2, 3, 7};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        /* each round: chunk bytes per thread, threads capped at the CPUs */
        unsigned used = threads[t] < affinity_cpus() ? threads[t] : affinity_cpus();
        size_t round = chunk * used;
        /* stop at the 3rd callback; then let everything finish */
        size_t stops[] = {3 * round - PG, len};
        for (size_t s = 0; s < 2; s++) {
            memset(g.p, PAT, len);
            struct cancel_at c = {.stop_at = stops[s], .monotonic = true};
            size_t cleared = 1;
            struct mmp_clear_opts o = {.chunk = chunk,
                                       .yield = yield_cb,
                                       .yield_arg = &c,
                                       .threads = threads[t],
                                       .cleared = &cleared};
            int rc = mmp_clear(g.p, len, &o);
            ck_assert(c.monotonic);
            ck_assert_uint_eq(c.total, len);
            if (s == 0) {
                ck_assert_int_eq(rc, -MMP_EINTR);
                ck_assert_uint_eq(c.calls, 3);
                ck_assert_uint_eq(cleared, 3 * round);
                ck_assert_uint_eq(cleared, c.last_done);
            } else {
                ck_assert_int_eq(rc, 0);
                ck_assert_uint_eq(cleared, len);
                ck_assert_uint_eq(c.calls, (len + round - 1) / round);
            }
            check_gbuf(&g, cleared, s ? "completed" : "cancelled");
        }
    }
    gbuf_free(&g);
}
END_TEST

struct vis {
    unsigned char *p;
    size_t len;
    const char *kernel;
    volatile AO_t flag;
    size_t bad;
};

static void *observer(void *arg)
{
    struct vis *v = arg;
    while (!AO_load_acquire(&v->flag))
        ;
    v->bad = v->len - first_not(v->p, v->len, 0);
    return NULL;
}

START_TEST(zeroes_visible_to_acquirer)
{
    size_t n;
    const struct mmp_clear_kernel *k = mmp_clear_kernels(&n);
    struct gbuf g = gbuf_new(256 * PG);
    for (size_t i = 0; i < n; i++) {
        if (!k[i].available)
            continue;
        for (int round = 0; round < 3; round++) {
            memset(g.p, PAT, g.len);
            struct vis v = {.p = g.p, .len = g.len, .kernel = k[i].name};
            pthread_t t;
            ck_assert_int_eq(pthread_create(&t, NULL, observer, &v), 0);
            struct mmp_clear_opts o = {.kernel = k[i].name};
            ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0);
            AO_store_release(&v.flag, 1);
            pthread_join(t, NULL);
            ck_assert_msg(v.bad == 0, "%s: observer saw %zu non-zero bytes", k[i].name, v.bad);
        }
    }
    gbuf_free(&g);
}
END_TEST

START_TEST(stats_count_calls_and_bytes)
{
    size_t n;
    const struct mmp_clear_kernel *k = mmp_clear_kernels(&n);
    struct gbuf g = gbuf_new(128 * PG);
    for (size_t i = 0; i < n; i++) {
        if (!k[i].available)
            continue;
        struct mmp_clear_stats a, b;
        mmp_clear_stats(&a);
        ck_assert_uint_eq(a.nkernels, n);
        struct mmp_clear_opts o = {.kernel = k[i].name};
        ck_assert_int_eq(mmp_clear(g.p, 16 * PG, &o), 0);  /* untimed */
        ck_assert_int_eq(mmp_clear(g.p, 128 * PG, &o), 0); /* timed (512 KiB) */
        o.threads = 2;
        ck_assert_int_eq(mmp_clear(g.p, 96 * PG, &o), 0); /* two untimed spans */
        mmp_clear_stats(&b);
        ck_assert_uint_eq(b.kernel[i].calls - a.kernel[i].calls, affinity_cpus() > 1 ? 4 : 3);
        ck_assert_uint_eq(b.kernel[i].bytes - a.kernel[i].bytes, (16 + 128 + 96) * PG);
        ck_assert_uint_eq(b.kernel[i].timed_bytes - a.kernel[i].timed_bytes, 128 * PG);
        ck_assert_uint_eq(b.clears - a.clears, 3);
    }
    gbuf_free(&g);
}
END_TEST


/* ---- the thread pool ------------------------------------------------------ */

/* The ids of this process's clearing pool threads, sorted, into ids[]; returns how many. */
static size_t task_ids(long *ids, size_t cap)
{
    DIR *d = opendir("/proc/self/task");
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f) && strcmp(comm, "mmport-clear\n") == 0 && n < cap)
            ids[n++] = atol(e->d_name);
        fclose(f);
    }
    closedir(d);
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful */
        for (size_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            long t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    return n;
}

/* Issue 15 item 7: one pool, created once, reused; never more threads than CPUs. */
START_TEST(pool_reused_and_capped_at_affinity)
{
    if (mmp_test_emulated())
        MMP_SKIP("qemu-user's own threads show in /proc/self/task");
    unsigned cpus = affinity_cpus();
    if (cpus < 2)
        MMP_SKIP("one CPU in the affinity mask: no pool to see");
    struct gbuf g = gbuf_new(512 * PG);
    long before[512], after[512];
    size_t n0 = task_ids(before, 512);
    struct mmp_clear_stats a, b;
    mmp_clear_stats(&a);
    struct mmp_clear_opts o = {.threads = MMP_CLEAR_MAX_THREADS};
    ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0);
    check_gbuf(&g, g.len, "256 threads asked");
    mmp_clear_stats(&b);
    /* one span per thread used: at most one per CPU */
    uint64_t spans = 0;
    for (size_t k = 0; k < b.nkernels; k++)
        spans += b.kernel[k].calls - a.kernel[k].calls;
    ck_assert_uint_eq(spans, cpus);
    size_t n1 = task_ids(before, 512);
    ck_assert_uint_eq(n0, 0);
    ck_assert_msg(n1 > 0, "no pool thread alive after the call");
    ck_assert_uint_le(n1, cpus - 1);
    for (int i = 0; i < 20; i++) {
        memset(g.p, PAT, g.len);
        o.threads = 2 + (unsigned)i % 7;
        ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0);
        check_gbuf(&g, g.len, "reused pool");
    }
    ck_assert_uint_eq(task_ids(after, 512), n1);
    ck_assert_msg(memcmp(before, after, n1 * sizeof *before) == 0, "pool threads replaced");
    gbuf_free(&g);
}
END_TEST

/* Spans cover the round exactly, in order, cut at 2 MiB / 1 GiB where large. */
/* mmp_shutdown() joins the pool's threads; the next threaded clear starts them again. */
START_TEST(shutdown_stops_the_pool_and_it_restarts)
{
    if (mmp_test_emulated())
        MMP_SKIP("qemu-user's own threads show in /proc/self/task");
    if (affinity_cpus() < 2)
        MMP_SKIP("one CPU in the affinity mask: no pool to see");
    struct gbuf g = gbuf_new(512 * PG);
    long ids[512];
    ck_assert_int_eq(mmp_shutdown(), 0); /* nothing started: nothing to do */
    struct mmp_clear_opts o = {.threads = 2};
    ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0);
    ck_assert_uint_gt(task_ids(ids, 512), 0);
    ck_assert_int_eq(mmp_shutdown(), 0);
    ck_assert_uint_eq(task_ids(ids, 512), 0);
    ck_assert_int_eq(mmp_shutdown(), 0); /* again: nothing left */
    memset(g.p, PAT, g.len);
    ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0);
    check_gbuf(&g, g.len, "after shutdown");
    ck_assert_uint_gt(task_ids(ids, 512), 0);
    ck_assert_int_eq(mmp_shutdown(), 0);
    gbuf_free(&g);
}
END_TEST

START_TEST(spans_cut_at_huge_pages)
{
    static const struct {
        uintptr_t base;
        size_t npages;
        unsigned n;
        size_t align; /* pages every inner cut must be a multiple of (absolute) */
    } c[] = {
        {0x40000000, 512 * 100, 2, 512},         /* 200 MiB over 2 at a 1 GiB base */
        {0x40001000, 512 * 100 + 3, 3, 512},     /* unaligned start and end */
        {0x200000, 512 * 8, 2, 512},             /* 16 MiB over 2: 8 MiB spans */
        {0x200000, 512 * 8 - 256, 2, 1},         /* 7.5 MiB spans: page cuts */
        {0x40000000, (size_t)262144 * 8, 2, 262144}, /* 8 GiB over 2: 1 GiB cuts */
        {0x1000, 5, 7, 1},                       /* fewer pages than threads */
        {0x7f0000000000, 513, 256, 1},
    };
    for (size_t t = 0; t < sizeof c / sizeof c[0]; t++) {
        size_t prev = 0, most = 0;
        for (unsigned i = 0; i < c[t].n; i++) {
            size_t a, b;
            mmp_core_clear_span(c[t].base, c[t].npages, c[t].n, i, &a, &b);
            ck_assert_msg(a == prev && b >= a && b <= c[t].npages, "case %zu span %u: %zu-%zu",
                          t, i, a, b);
            if (i + 1 < c[t].n && b > 0 && b < c[t].npages)
                ck_assert_msg((c[t].base / PG + b) % c[t].align == 0, "case %zu cut %zu", t, b);
            most = b - a > most ? b - a : most;
            prev = b;
        }
        ck_assert_uint_eq(prev, c[t].npages);
        /* within 1/8 of even where cut at huge pages, one page where not */
        size_t even = (c[t].npages + c[t].n - 1) / c[t].n;
        ck_assert_msg(most <= even + (c[t].align > 1 ? even / 8 + 1 : 1), "case %zu: %zu", t,
                      most);
    }
}
END_TEST

/*
 * Placement on a machine with one node: a private mount namespace shows
 * the page's node owning only the last CPU of the affinity mask (a bind
 * mount over its sysfs cpulist); placing near the page must then narrow
 * the thread to that CPU and unplacing restore the mask. A node whose CPUs
 * are all outside the mask changes nothing. Runs in a child: the namespace
 * and the affinity stay there. Exit status: 0 pass, 77 skip, else the step.
 */
static int numa_child(const char *dir, char *why, size_t cap)
{
    char *page = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return 10;
    page[0] = 1;
    void *pages[1] = {page};
    int node = -1;
    if (syscall(SYS_move_pages, 0, 1ul, pages, NULL, &node, 0) != 0 || node < 0)
        return snprintf(why, cap, "move_pages() cannot tell the page's node here"), 77;
    char cpulist[96];
    snprintf(cpulist, sizeof cpulist, "/sys/devices/system/node/node%d/cpulist", node);
    cpu_set_t all, now;
    if (sched_getaffinity(0, sizeof all, &all) != 0)
        return 11;
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all))
            last = c;
    if (CPU_COUNT(&all) < 2)
        return snprintf(why, cap, "one CPU in the affinity mask: nothing to narrow"), 77;
    if (access(cpulist, R_OK) != 0)
        return snprintf(why, cap, "no %s", cpulist), 77;
    /* "none" types: ignored by the kernel here, but valgrind reads them */
    if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0)
        return snprintf(why, cap, "no private mount namespace (needs root)"), 77;
    char fake[512];
    snprintf(fake, sizeof fake, "%s/cpulist", dir);
    for (int round = 0; round < 2; round++) {
        /* round 0: the node is the last CPU; round 1: a CPU outside the mask */
        FILE *f = fopen(fake, "w");
        if (!f)
            return 12;
        fprintf(f, "%d\n", round ? CPU_SETSIZE - 1 : last);
        fclose(f);
        if (mount(fake, cpulist, "none", MS_BIND, NULL) != 0)
            return snprintf(why, cap, "cannot bind-mount over %s", cpulist), 77;
        mmp_host_place_near(page + 100);
        if (sched_getaffinity(0, sizeof now, &now) != 0)
            return 13;
        if (round == 0 && !(CPU_COUNT(&now) == 1 && CPU_ISSET(last, &now)))
            return 20; /* not narrowed to the node's CPU */
        if (round == 1 && !CPU_EQUAL(&now, &all))
            return 21; /* changed although the node has none of the mask's CPUs */
        mmp_host_unplace();
        if (sched_getaffinity(0, sizeof now, &now) != 0 || !CPU_EQUAL(&now, &all))
            return 22 + round; /* not restored */
        if (umount(cpulist) != 0)
            return 14;
    }
    return 0;
}

START_TEST(numa_placement_follows_the_node_of_the_memory)
{
    char dir[] = "/tmp/mmport-numa-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char why[160] = "";
        int rc = numa_child(dir, why, sizeof why);
        if (write(fds[1], why, strlen(why)) < 0)
            rc = 15;
        _exit(rc);
    }
    close(fds[1]);
    char why[161] = "";
    ssize_t n = read(fds[0], why, sizeof why - 1);
    why[n > 0 ? n : 0] = 0;
    close(fds[0]);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    char path[64];
    snprintf(path, sizeof path, "%s/cpulist", dir);
    unlink(path);
    rmdir(dir);
    ck_assert(WIFEXITED(st));
    if (WEXITSTATUS(st) == 77)
        MMP_SKIP(why);
    ck_assert_msg(WEXITSTATUS(st) == 0,
                  "placement under a fake one-CPU node: step %d failed (20 not narrowed, 21 "
                  "changed for a node outside the mask, 22/23 not restored)",
                  WEXITSTATUS(st));
}
END_TEST

START_TEST(numa_placement_restores_the_caller)
{
    cpu_set_t before, after;
    ck_assert_int_eq(sched_getaffinity(0, sizeof before, &before), 0);
    struct gbuf g = gbuf_new(301 * PG);
    struct mmp_clear_opts o = {.threads = 3, .flags = MMP_CLEAR_NUMA};
    ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0); /* resident memory: nodes known */
    check_gbuf(&g, g.len, "numa");
    o.threads = 1;
    memset(g.p, PAT, g.len);
    ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0);
    check_gbuf(&g, g.len, "numa, one thread");
    ck_assert_int_eq(sched_getaffinity(0, sizeof after, &after), 0);
    ck_assert(CPU_EQUAL(&before, &after));
    o.flags = 2;
    ck_assert_int_eq(mmp_clear(g.p, g.len, &o), -MMP_EINVAL);
    gbuf_free(&g);
}
END_TEST

/* A runner of the caller's own: every span once, threads capped at its workers. */
struct my_runner {
    unsigned calls, spans, last_n;
};

struct my_job {
    mmp_clear_span_fn span;
    void *arg;
    unsigned i;
};

static void *my_worker(void *p)
{
    struct my_job *j = p;
    j->span(j->arg, j->i);
    return NULL;
}

static void my_run(void *ctx, unsigned n, mmp_clear_span_fn span, void *arg)
{
    struct my_runner *r = ctx;
    pthread_t t[8];
    struct my_job j[8];
    ck_assert_uint_le(n, 8);
    r->calls++;
    r->spans += n;
    r->last_n = n;
    for (unsigned i = 0; i < n; i++) {
        j[i] = (struct my_job){span, arg, i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, my_worker, &j[i]), 0);
    }
    for (unsigned i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

START_TEST(runner_hook_runs_the_spans)
{
    struct my_runner r = {0};
    mmp_clear_set_runner(my_run, &r, 5);
    struct gbuf g = gbuf_new(513 * PG);
    struct mmp_clear_opts o = {.threads = 64};
    ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0);
    check_gbuf(&g, g.len, "runner");
    ck_assert_uint_eq(r.calls, 1);
    ck_assert_uint_eq(r.last_n, 5);
    /* with a yield callback: one runner call per round */
    struct cancel_at c = {.stop_at = ~(size_t)0, .monotonic = true};
    memset(g.p, PAT, g.len);
    o = (struct mmp_clear_opts){.threads = 2, .chunk = 64 * PG, .yield = yield_cb,
                                .yield_arg = &c};
    ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0);
    check_gbuf(&g, g.len, "runner, rounds");
    /* 513 pages in rounds of 2 x 64: four through the runner, the last page alone */
    ck_assert_uint_eq(c.calls, 5);
    ck_assert_uint_eq(r.calls, 1 + 4);
    mmp_clear_set_runner(NULL, NULL, 0);
    unsigned calls = r.calls;
    ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0);
    ck_assert_uint_eq(r.calls, calls);
    gbuf_free(&g);
}
END_TEST

/* ---- populate and clear ------------------------------------------------------ */

/* Pages of [p, p + len) that are resident. */
static size_t resident_pages(void *p, size_t len)
{
    unsigned char vec[4096];
    size_t n = len / PG, r = 0;
    ck_assert_uint_le(n, sizeof vec);
    ck_assert_int_eq(mincore(p, len, vec), 0);
    for (size_t i = 0; i < n; i++)
        r += vec[i] & 1;
    return r;
}

static int count_progress(void *arg, size_t done, size_t total)
{
    struct cancel_at *c = arg;
    return yield_cb(arg, done, total) && c->stop_at < total;
}

START_TEST(populate_makes_fresh_and_dirty_pages_resident_and_zero)
{
    const size_t len = 2048 * PG; /* 8 MiB */
    static const unsigned threads[] = {1, 2, 5};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                                -1, 0);
        ck_assert_ptr_ne(p, MAP_FAILED);
        madvise(p, len, MADV_NOHUGEPAGE); /* so residency is per 4 KiB page */
        for (size_t i = 0; i < len; i += 7 * PG) /* some pages dirty, the rest never touched */
            memset(p + i, PAT, PG);
        if (!mmp_test_slow())
            ck_assert_uint_lt(resident_pages(p, len), len / PG / 2);
        struct cancel_at c = {.stop_at = ~(size_t)0, .monotonic = true};
        size_t cleared = 0;
        struct mmp_clear_opts o = {.threads = threads[t], .chunk = 256 * PG,
                                   .yield = count_progress, .yield_arg = &c,
                                   .cleared = &cleared};
        ck_assert_int_eq(mmp_clear_populate(p, len, &o), 0);
        ck_assert_uint_eq(cleared, len);
        ck_assert(c.monotonic);
        ck_assert_uint_eq(c.last_done, len);
        ck_assert_uint_ge(c.calls, 2);
        ck_assert_uint_eq(resident_pages(p, len), len / PG);
        size_t i = first_not(p, len, 0);
        ck_assert_msg(i == len, "%u threads: byte %zu not zero", threads[t], i);
        munmap(p, len);
    }
}
END_TEST

START_TEST(populate_refuses_what_cannot_be_backed)
{
    if (mmp_test_emulated())
        MMP_SKIP("qemu-user accepts and ignores MADV_POPULATE_WRITE: read-only pages would fault");
    struct gbuf g = gbuf_new(64 * PG);
    /* the last 16 pages read-only: populating them fails, nothing is written there */
    ck_assert_int_eq(mprotect(g.p + 48 * PG, 16 * PG, PROT_READ), 0);
    size_t cleared = 1;
    struct mmp_clear_opts o = {.chunk = 16 * PG, .yield = count_progress,
                               .yield_arg = &(struct cancel_at){.stop_at = ~(size_t)0},
                               .cleared = &cleared};
    int rc = mmp_clear_populate(g.p, g.len, &o);
    if (rc == 0)
        MMP_SKIP("kernel without MADV_POPULATE_WRITE: read-only pages would fault instead");
    ck_assert_int_eq(rc, -MMP_ENOMEM);
    ck_assert_uint_eq(cleared, 48 * PG);
    ck_assert_uint_eq(first_not(g.p, 48 * PG, 0), 48 * PG);
    ck_assert_uint_eq(first_not(g.p + 48 * PG, 16 * PG, PAT), 16 * PG);
    ck_assert_int_eq(mprotect(g.p + 48 * PG, 16 * PG, PROT_READ | PROT_WRITE), 0);
    /* bad input as mmp_clear() */
    ck_assert_int_eq(mmp_clear_populate(g.p + 1, PG, NULL), -MMP_EINVAL);
    ck_assert_int_eq(mmp_clear_populate(g.p, 0, NULL), 0);
    gbuf_free(&g);
}
END_TEST

/* ---- mmp_clear_tune() under running clears ------------------------------- */

struct swap_clearer {
    volatile AO_t *stop;
    unsigned char *p;
    size_t len;
    int bad;
};

/* Clears its own range at sizes around both thresholds until told to stop. */
static void *swap_clear(void *arg)
{
    struct swap_clearer *c = arg;
    static const size_t sizes[] = {4096, 64u << 10, 256u << 10, 1u << 20};
    for (unsigned n = 0; !AO_load_acquire(c->stop); n++) {
        size_t len = sizes[n % 4];
        memset(c->p, PAT, len);
        struct mmp_clear_opts o = {.hint = (enum mmp_clear_hint)(n % 3)};
        if ((n & 4 ? mmp_clear(c->p, len, &o) : mmp_clear(c->p, len, NULL)) != 0 ||
            first_not(c->p, len, 0) != len)
            c->bad++;
    }
    return NULL;
}

/* A tuning file for this CPU in dir: hot kernel `hot`, cold_min cm. */
static void swap_file(const char *dir, const char *hot, const char *cm)
{
    char path[512], cpu[128], text[512];
    struct mmp_core_sink o = {cpu, sizeof cpu, 0};
    mmp_core_clear_put_cpu(&o, mmp_cpu_features());
    ck_assert_int_gt(mmp_core_clear_cache_path(dir, mmp_cpu_features(), path, sizeof path), 0);
    snprintf(text, sizeof text, "%shot %s\ncold_min %s\n", cpu, hot, cm);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/*
 * The policy in force changes under clears running on other threads (two
 * files loaded in turn: no measuring): every clear succeeds and zeroes its
 * range, and the policy read back is always one of the two (TSan: no race).
 */
START_TEST(tune_swaps_the_policy_under_running_clears)
{
    char a[] = "/tmp/mmport-swap-a-XXXXXX", b[] = "/tmp/mmport-swap-b-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(a));
    ck_assert_ptr_nonnull(mkdtemp(b));
    struct mmp_clear_policy table;
    mmp_clear_policy_for(mmp_cpu_features(), &table);
    const char *other = mmp_cpu_features()->arch == MMP_ARCH_X86_64 ? "unrolled"
                        : mmp_cpu_features()->arch == MMP_ARCH_ARM64 ? "stp"
                                                                     : "memset";
    swap_file(a, other, "64K");
    swap_file(b, table.hot, "1M");
    volatile AO_t stop = 0;
    struct swap_clearer c[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        c[i] = (struct swap_clearer){&stop, mmap(NULL, 1u << 20, PROT_READ | PROT_WRITE,
                                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), 1u << 20, 0};
        ck_assert_ptr_ne(c[i].p, MAP_FAILED);
        ck_assert_int_eq(pthread_create(&t[i], NULL, swap_clear, &c[i]), 0);
    }
    int rounds = mmp_test_slow() ? 20 : 200;
    for (int r = 0; r < rounds; r++) {
        ck_assert_int_eq(mmp_clear_tune(r & 1 ? b : a, 0), 0);
        struct mmp_clear_policy p;
        mmp_clear_policy(&p);
        ck_assert_str_eq(p.hot, r & 1 ? table.hot : other);
        ck_assert_uint_eq(p.cold_min, r & 1 ? 1u << 20 : 64u << 10);
        ck_assert_ptr_nonnull(strstr(p.source, r & 1 ? b : a));
    }
    AO_store_release(&stop, 1);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(c[i].bad, 0);
        munmap(c[i].p, c[i].len);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", a, b);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- policy, from fake CPUs ----------------------------------------------- */

static struct mmp_cpu_features fake_x86(const char *vendor, uint32_t fam, uint32_t model,
                                        uint32_t flags, uint64_t llc)
{
    struct mmp_cpu_features f = {.arch = MMP_ARCH_X86_64, .family = fam, .model = model,
                                 .flags = flags, .llc_bytes = llc};
    snprintf(f.vendor, sizeof f.vendor, "%s", vendor);
    return f;
}

static struct mmp_cpu_features fake_arm(uint64_t midr, uint32_t flags, uint32_t zva, bool dzp)
{
    struct mmp_cpu_features f = {.arch = MMP_ARCH_ARM64, .midr = midr, .flags = flags,
                                 .zva_block = zva, .zva_prohibited = dzp,
                                 .llc_bytes = 1u << 20};
    return f;
}

#define X86_ALL                                                                          \
    (MMP_CPU_SSE2 | MMP_CPU_ERMS | MMP_CPU_FSRM | MMP_CPU_REP_GOOD | MMP_CPU_AVX2 |       \
     MMP_CPU_AVX512F)

static void expect(const struct mmp_cpu_features *f, const char *hot, const char *cold,
                   const char *quirk)
{
    struct mmp_clear_policy p;
    ck_assert_int_eq(mmp_clear_policy_for(f, &p), 0);
    ck_assert_str_eq(p.hot, hot);
    ck_assert_str_eq(p.cold, cold);
    if (quirk)
        ck_assert_str_eq(p.quirk, quirk);
    else
        ck_assert_ptr_null(p.quirk);
    ck_assert_str_eq(p.source, "table");
}

START_TEST(policy_for_fake_cpus)
{
    /* The dev machine: Emerald Rapids, 260 MiB LLC. */
    struct mmp_cpu_features f = fake_x86("GenuineIntel", 6, 0xcf, X86_ALL, 260ull << 20);
    expect(&f, "rep_stosb", "avx512_nt", "intel-emerald-rapids");
    /* An Intel client core the table does not list (Tiger Lake). */
    f = fake_x86("GenuineIntel", 6, 0x8c, X86_ALL & ~MMP_CPU_AVX512F, 30u << 20);
    expect(&f, "rep_stosb", "avx2_nt", NULL);
    /* Skylake-SP: 512-bit stores bad-listed. */
    f = fake_x86("GenuineIntel", 6, 0x55, X86_ALL, 38u << 20);
    expect(&f, "rep_stosb", "avx2_nt", "intel-skylake-sp");
    /* Zen 5: CLZERO for cold. */
    f = fake_x86("AuthenticAMD", 0x1a, 0x02, X86_ALL | MMP_CPU_CLZERO, 32u << 20);
    expect(&f, "rep_stosb", "clzero", "amd-zen5");
    /* Zen 4 (Genoa): CLZERO bad-listed for cold (0.65x AVX-512 NT at 1 GiB) */
    f = fake_x86("AuthenticAMD", 0x19, 0x11, X86_ALL | MMP_CPU_CLZERO, 32u << 20);
    expect(&f, "rep_stosb", "avx512_nt", "amd-zen4");
    /* Zen 2: no ERMS, rep stosq for hot. */
    f = fake_x86("AuthenticAMD", 0x17, 0x31,
                 MMP_CPU_SSE2 | MMP_CPU_REP_GOOD | MMP_CPU_AVX2 | MMP_CPU_CLZERO, 16u << 20);
    expect(&f, "rep_stosq", "clzero", "amd-zen1-2");
    /* A bare x86-64 without string-op or vector features. */
    f = fake_x86("GenuineIntel", 6, 0x0d, 0, 0);
    expect(&f, "unrolled", "unrolled", NULL);
    f = fake_x86("GenuineIntel", 6, 0x0d, MMP_CPU_SSE2, 0);
    expect(&f, "unrolled", "movnti", NULL);

    /* arm64: 64-byte DC ZVA (cortex-a57) for both. */
    f = fake_arm(0x411fd070, MMP_CPU_DC_ZVA, 64, false);
    expect(&f, "dc_zva", "dc_zva", NULL);
    /* 512-byte blocks (QEMU max): DC ZVA only for cold. */
    f = fake_arm(0, MMP_CPU_DC_ZVA, 512, false);
    expect(&f, "stp", "dc_zva", NULL);
    /* DC ZVA prohibited: the STNP fallback. */
    f = fake_arm(0x411fd070, 0, 0, true);
    expect(&f, "stp", "stnp", NULL);
    /* MOPS for hot where present. */
    f = fake_arm(0, MMP_CPU_DC_ZVA | MMP_CPU_MOPS, 64, false);
    expect(&f, "mops", "dc_zva", NULL);

    /* Anything else: the portable kernel. */
    f = (struct mmp_cpu_features){.arch = MMP_ARCH_GENERIC};
    expect(&f, "memset", "memset", NULL);
    ck_assert_int_eq(mmp_clear_policy_for(NULL, NULL), -MMP_EINVAL);
}
END_TEST

/*
 * AUTO's threshold from the cache facts: one core's share of the LLC, cut
 * to the row's bound, never below twice the L2 (mmp_clear_policy_for()).
 */
START_TEST(policy_thresholds_from_cache_sizes)
{
    const uint64_t M = 1u << 20;
    struct mmp_clear_policy p;
    /* Zen 5 with its topology: 32 MiB CCX shared by 8 cores, 1 MiB L2 */
    struct mmp_cpu_features f = fake_x86("AuthenticAMD", 0x1a, 0x02, X86_ALL, 32 * M);
    f.llc_cores = 8, f.l2_bytes = 1 * M;
    mmp_clear_policy_for(&f, &p);
    ck_assert_uint_eq(p.cold_min, 4 * M);
    ck_assert_str_eq(p.cold_min_from, "cache");
    /* the same CPU in a VM reporting the host socket's 508 MiB, no sharing count */
    f.llc_bytes = 508 * M, f.llc_cores = 0;
    mmp_clear_policy_for(&f, &p);
    ck_assert_uint_eq(p.cold_min, 4 * M);
    ck_assert_str_eq(p.cold_min_from, "cache-bound");
    /* ... or a sharing count the hypervisor made up (2 vCPUs) */
    f.llc_cores = 2;
    mmp_clear_policy_for(&f, &p);
    ck_assert_uint_eq(p.cold_min, 4 * M);
    /* Emerald Rapids in a KVM guest: 260 MiB socket L3, 2 MiB L2 */
    f = fake_x86("GenuineIntel", 6, 0xcf, X86_ALL, 260 * M);
    f.l2_bytes = 2 * M, f.llc_cores = 1;
    mmp_clear_policy_for(&f, &p);
    ck_assert_uint_eq(p.cold_min, 4 * M); /* the L2 floor over the row's 2 MiB bound */
    /* ... and on the host, leaf 4 saying 128 threads, 2 per core */
    f.llc_cores = 64;
    mmp_clear_policy_for(&f, &p);
    ck_assert_uint_eq(p.cold_min, 4 * M);
    /* a ring-L3 client row takes the whole LLC */
    f = fake_x86("GenuineIntel", 6, 0xb7, X86_ALL, 36 * M);
    f.l2_bytes = 2 * M, f.llc_cores = 16;
    mmp_clear_policy_for(&f, &p);
    ck_assert_uint_eq(p.cold_min, 32 * M); /* bounded to MMP_CORE_LLC_CORE_MAX */
    f.llc_bytes = 24 * M;
    mmp_clear_policy_for(&f, &p);
    ck_assert_uint_eq(p.cold_min, 24 * M);
    /* no row: the share, bounded to 32 MiB; a CPU without sharing count keeps its figure */
    f = fake_x86("GenuineIntel", 6, 0x8c, X86_ALL, 12 * M);
    f.l2_bytes = 1280u << 10, f.llc_cores = 4;
    mmp_clear_policy_for(&f, &p);
    ck_assert_uint_eq(p.cold_min, 3 * M);
    f.llc_cores = 0;
    mmp_clear_policy_for(&f, &p);
    ck_assert_uint_eq(p.cold_min, 12 * M);
    f.llc_bytes = 256 * M;
    mmp_clear_policy_for(&f, &p);
    ck_assert_uint_eq(p.cold_min, MMP_CORE_LLC_CORE_MAX);
    /* an L2 that is the last level (llc_cores 1): twice it */
    f = fake_x86("GenuineIntel", 6, 0x0d, X86_ALL, 1 * M);
    f.l2_bytes = 1 * M, f.llc_cores = 1;
    mmp_clear_policy_for(&f, &p);
    ck_assert_uint_eq(p.cold_min, 2 * M);
    /* unknown sizes: the default; odd sizes round up to whole pages */
    f.llc_bytes = 0;
    mmp_clear_policy_for(&f, &p);
    ck_assert_str_eq(p.cold_min_from, "default");
    ck_assert_uint_eq(p.cold_min, MMP_CORE_COLD_MIN_DEFAULT);
    f.llc_bytes = 3 * M + 1, f.l2_bytes = 0, f.llc_cores = 1;
    mmp_clear_policy_for(&f, &p);
    ck_assert_uint_eq(p.cold_min, 3 * M + PG);
    /* every row's bound holds for a CPU of the row claiming a huge LLC */
    for (size_t i = 0; i < mmp_core_clear_nquirks; i++) {
        const struct mmp_core_clear_quirk *q = &mmp_core_clear_quirks[i];
        f = (struct mmp_cpu_features){.arch = q->arch, .family = q->fam_lo, .model = q->model_lo,
                                      .midr = q->midr_val, .llc_bytes = 4096 * M};
        snprintf(f.vendor, sizeof f.vendor, "%s", q->vendor);
        mmp_clear_policy_for(&f, &p);
        ck_assert_str_eq(p.quirk, q->name);
        uint64_t max = q->llc_core_max ? q->llc_core_max : MMP_CORE_LLC_CORE_MAX;
        ck_assert_uint_eq(p.cold_min, (max + PG - 1) / PG * PG);
        ck_assert_str_eq(p.cold_min_from, "cache-bound");
    }
}
END_TEST

/* Every quirk row: a CPU inside its range matches it and gets no bad kernel. */
START_TEST(policy_honours_every_quirk_row)
{
    ck_assert_uint_gt(mmp_core_clear_nquirks, 0);
    for (size_t i = 0; i < mmp_core_clear_nquirks; i++) {
        const struct mmp_core_clear_quirk *q = &mmp_core_clear_quirks[i];
        struct mmp_cpu_features f = {.arch = q->arch, .llc_bytes = 64u << 20};
        snprintf(f.vendor, sizeof f.vendor, "%s", q->vendor);
        if (q->arch == MMP_ARCH_X86_64) {
            f.family = q->fam_hi;
            f.model = q->model_hi;
            f.flags = X86_ALL | MMP_CPU_CLZERO;
        } else {
            f.midr = q->midr_val;
            f.flags = MMP_CPU_DC_ZVA | MMP_CPU_MOPS;
            f.zva_block = 64;
        }
        struct mmp_clear_policy p;
        ck_assert_int_eq(mmp_clear_policy_for(&f, &p), 0);
        ck_assert_str_eq(p.quirk, q->name);
        ck_assert_uint_eq(p.bad_hot, q->bad_hot);
        ck_assert_uint_eq(p.bad_cold, q->bad_cold);
        int hot = mmp_core_clear_lookup(p.hot), cold = mmp_core_clear_lookup(p.cold);
        ck_assert(!(q->bad_hot & MMP_KBIT(hot)));
        ck_assert(!(q->bad_cold & MMP_KBIT(cold)));
        ck_assert(mmp_core_clear_supported(&f, (unsigned)hot));
        ck_assert(mmp_core_clear_supported(&f, (unsigned)cold));
        /* one model outside the range does not match this row */
        if (q->arch == MMP_ARCH_X86_64 && q->model_hi < 0xff) {
            f.model = q->model_hi + 1;
            mmp_clear_policy_for(&f, &p);
            ck_assert(!p.quirk || strcmp(p.quirk, q->name) != 0);
        }
    }
}
END_TEST

/* The environment is read once, at the first call into the clearing API;
 * each test runs in a fresh forked child, so a test may set it first. */
static bool fresh_process(void)
{
    const char *fork = getenv("CK_FORK");
    return !fork || strcmp(fork, "no") != 0;
}

START_TEST(env_cold_min_switches_auto)
{
    if (!fresh_process())
        MMP_SKIP("needs libcheck's fork mode (CK_FORK=no set)");
    setenv("MMPORT_CLEAR_COLD_MIN", "65536", 1);
    struct mmp_clear_policy p;
    mmp_clear_policy(&p);
    ck_assert_str_eq(p.cold_min_from, "env");
    ck_assert_uint_eq(p.cold_min, 65536);
    int hot = mmp_core_clear_lookup(p.hot), cold = mmp_core_clear_lookup(p.cold);
    struct gbuf g = gbuf_new(32 * PG);
    struct mmp_clear_stats a, b;
    mmp_clear_stats(&a);
    ck_assert_int_eq(mmp_clear(g.p, 8 * PG, NULL), 0);   /* 32 KiB: hot */
    ck_assert_int_eq(mmp_clear(g.p, 16 * PG, NULL), 0);  /* 64 KiB: cold */
    mmp_clear_stats(&b);
    if (hot == cold) {
        ck_assert_uint_eq(b.kernel[hot].calls - a.kernel[hot].calls, 2);
    } else {
        ck_assert_uint_eq(b.kernel[hot].bytes - a.kernel[hot].bytes, 8 * PG);
        ck_assert_uint_eq(b.kernel[cold].bytes - a.kernel[cold].bytes, 16 * PG);
    }
    check_gbuf(&g, 16 * PG, "auto");
    gbuf_free(&g);
}
END_TEST

START_TEST(env_forces_kernel)
{
    if (!fresh_process())
        MMP_SKIP("needs libcheck's fork mode (CK_FORK=no set)");
    setenv("MMPORT_CLEAR", "memset", 1);
    struct mmp_clear_policy p;
    mmp_clear_policy(&p);
    ck_assert_str_eq(p.forced, "memset");
    struct gbuf g = gbuf_new(4 * PG);
    struct mmp_clear_stats a, b;
    mmp_clear_stats(&a);
    struct mmp_clear_opts o = {.hint = MMP_CLEAR_COLD};
    ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0);
    ck_assert_int_eq(mmp_clear_pages(g.p, 4), 0);
    mmp_clear_stats(&b);
    ck_assert_uint_eq(b.kernel[MMP_K_MEMSET].calls - a.kernel[MMP_K_MEMSET].calls, 2);
    check_gbuf(&g, g.len, "forced");
    gbuf_free(&g);
}
END_TEST

START_TEST(env_unusable_kernel_fails_every_call)
{
    if (!fresh_process())
        MMP_SKIP("needs libcheck's fork mode (CK_FORK=no set)");
    /* from the data table: mmp_clear_kernels() would read the environment */
    const char *unusable = NULL;
    for (unsigned i = 0; i < MMP_K_COUNT && !unusable; i++)
        if (!mmp_core_clear_supported(mmp_cpu_features(), i))
            unusable = mmp_core_clear_kdesc[i].name;
    ck_assert_ptr_nonnull(unusable);
    setenv("MMPORT_CLEAR", unusable, 1);
    struct gbuf g = gbuf_new(4 * PG);
    ck_assert_int_eq(mmp_clear_pages(g.p, 4), -MMP_ENOTSUP);
    check_gbuf(&g, 0, "unusable forced");
    /* an explicit kernel still works */
    struct mmp_clear_opts o = {.kernel = "memset"};
    ck_assert_int_eq(mmp_clear(g.p, g.len, &o), 0);
    gbuf_free(&g);
}
END_TEST

static char *tmp_tuning(const char *text)
{
    static char path[] = "/tmp/mmport-tuning-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

/* The policy in force after pointing MMPORT_TUNING at a file with text. */
static void policy_with_tuning(const char *text, struct mmp_clear_policy *p)
{
    char *path = tmp_tuning(text);
    setenv("MMPORT_TUNING", path, 1);
    mmp_clear_policy(p);
    unlink(path);
}

static void cpu_line(char *buf, size_t cap)
{
    const struct mmp_cpu_features *f = mmp_cpu_features();
    snprintf(buf, cap, "cpu %s %s %u %u %llu\n", mmp_arch_name(f->arch),
             f->vendor[0] ? f->vendor : "-", f->family, f->model,
             (unsigned long long)f->midr);
}

START_TEST(tuning_file_applies)
{
    if (!fresh_process())
        MMP_SKIP("needs libcheck's fork mode (CK_FORK=no set)");
    char text[512], line[128];
    cpu_line(line, sizeof line);
    snprintf(text, sizeof text, "# test\n%shot memset\ncold memset\ncold_min 1234M\n", line);
    struct mmp_clear_policy p;
    policy_with_tuning(text, &p);
    ck_assert_str_eq(p.source, "tuning");
    ck_assert_str_eq(p.hot, "memset");
    ck_assert_str_eq(p.cold, "memset");
    ck_assert_uint_eq(p.cold_min, 1234ull << 20);
    ck_assert_str_eq(p.cold_min_from, "tuning");
}
END_TEST

START_TEST(tuning_file_for_other_cpu_ignored)
{
    if (!fresh_process())
        MMP_SKIP("needs libcheck's fork mode (CK_FORK=no set)");
    struct mmp_clear_policy p, table;
    policy_with_tuning("cpu x86_64 NoSuchVendor 99 99 0\nhot memset\n", &p);
    mmp_clear_policy_for(mmp_cpu_features(), &table);
    ck_assert_ptr_nonnull(strstr(p.source, "another CPU"));
    ck_assert_str_eq(p.hot, table.hot);
    ck_assert_uint_eq(p.cold_min, table.cold_min);
}
END_TEST

START_TEST(tuning_file_bad_or_missing_ignored)
{
    if (!fresh_process())
        MMP_SKIP("needs libcheck's fork mode (CK_FORK=no set)");
    char line[128], text[512];
    cpu_line(line, sizeof line);
    static const char *const bad[] = {"hot no_such_kernel\n", "cold_min lots\n",
                                      "colour blue\n", ""};
    static const char *const why[] = {"unknown kernel", "bad cold_min", "unknown key",
                                      "empty file"};
    /* each case in a child of its own: the file is read once per process */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            snprintf(text, sizeof text, "%s%s", i == 3 ? "" : line, bad[i]);
            struct mmp_clear_policy p;
            policy_with_tuning(text, &p);
            _exit(strstr(p.source, why[i]) ? 0 : 1);
        }
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "case %zu (%s)", i, why[i]);
    }
    setenv("MMPORT_TUNING", "/nonexistent/mmport-tuning", 1);
    struct mmp_clear_policy p;
    mmp_clear_policy(&p);
    ck_assert_ptr_nonnull(strstr(p.source, "cannot read"));
}
END_TEST

START_TEST(tuning_format_round_trips)
{
    if (!fresh_process())
        MMP_SKIP("needs libcheck's fork mode (CK_FORK=no set)");
    struct mmp_clear_calibration cal = {.nsizes = 1, .size = {1u << 20}};
    struct mmp_clear_policy table;
    mmp_clear_policy_for(mmp_cpu_features(), &table);
    cal.hot = table.cold; /* swapped, so the file visibly wins */
    cal.cold = table.hot;
    cal.cold_min = 3u << 20;
    cal.mbps[MMP_K_MEMSET][0] = 1500;
    char text[2048];
    ck_assert_int_eq(mmp_clear_tuning_format(&cal, text, 16), -MMP_ERANGE);
    ck_assert_int_eq(mmp_clear_tuning_format(NULL, text, sizeof text), -MMP_EINVAL);
    int n = mmp_clear_tuning_format(&cal, text, sizeof text);
    ck_assert_int_gt(n, 0);
    ck_assert_uint_eq(strlen(text), (size_t)n);
    struct mmp_clear_policy p;
    policy_with_tuning(text, &p);
    ck_assert_str_eq(p.source, "tuning");
    ck_assert_str_eq(p.hot, cal.hot);
    ck_assert_str_eq(p.cold, cal.cold);
    ck_assert_uint_eq(p.cold_min, cal.cold_min);
}
END_TEST

START_TEST(calibrate_measures_every_available_kernel)
{
    if (mmp_test_emulated())
        MMP_SKIP("timing only; under qemu-user clocks say nothing and it takes minutes");
    struct mmp_clear_calibration cal;
    struct gbuf g = gbuf_new(4u << 20);
    ck_assert_int_eq(mmp_clear_calibrate(g.p + 8, g.len, &cal), -MMP_EINVAL);
    ck_assert_int_eq(mmp_clear_calibrate(g.p, 1u << 20, &cal), -MMP_EINVAL);
    ck_assert_int_eq(mmp_clear_calibrate(g.p, g.len, &cal), 0);
    check_gbuf(&g, g.len, "calibration buffer");
    ck_assert_uint_ge(cal.nsizes, 2);
    ck_assert_uint_eq(cal.size[cal.nsizes - 1], g.len);
    size_t n;
    const struct mmp_clear_kernel *k = mmp_clear_kernels(&n);
    for (size_t i = 0; i < n; i++)
        for (size_t s = 0; s < cal.nsizes; s++)
            ck_assert_msg((cal.mbps[i][s] > 0) == k[i].available, "%s at %zu", k[i].name, s);
    ck_assert(k[mmp_core_clear_lookup(cal.hot)].available);
    ck_assert(k[mmp_core_clear_lookup(cal.cold)].available);
    /* hot is a cache-allocating kernel, and the arch's own where it has one */
    ck_assert_msg(!k[mmp_core_clear_lookup(cal.hot)].cold, "hot %s is a cold kernel", cal.hot);
    if (mmp_cpu_features()->arch != MMP_ARCH_GENERIC)
        ck_assert_str_ne(cal.hot, "memset");
    gbuf_free(&g);
}
END_TEST

/* arm64: DC ZVA on starts and ends that are not block aligned. */
START_TEST(arm64_dc_zva_any_alignment)
{
#if !defined(__aarch64__)
    MMP_SKIP("arm64-only check; this build is not aarch64");
#else
    const struct mmp_cpu_features *f = mmp_cpu_features();
    if (f->zva_prohibited)
        MMP_SKIP("DC ZVA prohibited on this CPU; the stnp fallback is tested instead");
    const char *cpu = getenv("QEMU_CPU");
    if (cpu && strcmp(cpu, "max") == 0)
        ck_assert_uint_eq(f->zva_block, 512);
    if (cpu && strcmp(cpu, "cortex-a57") == 0)
        ck_assert_uint_eq(f->zva_block, 64);
    mmp_core_clear_fn fn = mmp_core_clear_fn_of(MMP_K_DC_ZVA);
    ck_assert_ptr_nonnull(fn);
    size_t bs = f->zva_block;
    struct gbuf g = gbuf_new(16 * PG);
    /* offsets and lengths in 64-byte units around block boundaries */
    size_t offs[] = {0, 1, bs / 64 - 1, bs / 64, bs / 64 + 1, 3 * bs / 64 - 1};
    size_t lens[] = {1, 2, bs / 64 - 1, bs / 64, bs / 64 + 1, 2 * bs / 64 + 3, 40 * bs / 64 + 1};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++)
        for (size_t j = 0; j < sizeof lens / sizeof lens[0]; j++) {
            if (!lens[j])
                continue;
            size_t off = offs[i] * 64, len = lens[j] * 64;
            memset(g.p, PAT, g.len);
            fn(g.p + PG + off, len);
            ck_assert_msg(first_not(g.p, PG + off, PAT) == PG + off, "before %zu+%zu", off, len);
            ck_assert_msg(first_not(g.p + PG + off, len, 0) == len, "inside %zu+%zu", off, len);
            size_t rest = g.len - PG - off - len;
            ck_assert_msg(first_not(g.p + PG + off + len, rest, PAT) == rest, "after %zu+%zu",
                          off, len);
        }
    gbuf_free(&g);
#endif
}
END_TEST

START_TEST(arm64_kernels_follow_the_cpu)
{
#if !defined(__aarch64__)
    MMP_SKIP("arm64-only check; this build is not aarch64");
#else
    const struct mmp_cpu_features *f = mmp_cpu_features();
    size_t n;
    const struct mmp_clear_kernel *k = mmp_clear_kernels(&n);
    ck_assert_int_eq(k[MMP_K_DC_ZVA].available, !f->zva_prohibited);
    ck_assert(k[MMP_K_STNP].available);
    ck_assert(k[MMP_K_STP].available);
    ck_assert_int_eq(k[MMP_K_MOPS].available, !!(f->flags & MMP_CPU_MOPS));
    struct mmp_clear_policy p;
    mmp_clear_policy(&p);
    if (strcmp(p.source, "table") == 0) /* not measured (core/clear_verify.c) */
        ck_assert_str_eq(p.cold, f->zva_prohibited ? "stnp" : "dc_zva");
    else
        ck_assert(k[mmp_core_clear_lookup(p.cold)].cold);
#endif
}
END_TEST

Suite *mmp_suite_clear(void)
{
    Suite *s = suite_create("clear");
    MMP_ADD(s, kernels_listed_once_with_reasons);
    MMP_ADD(s, every_kernel_every_size_guarded);
    MMP_ADD(s, unavailable_or_unknown_kernel_refused);
    MMP_ADD(s, bad_input_changes_nothing);
    MMP_ADD(s, threads_on_odd_page_counts);
    MMP_ADD(s, cancel_at_chunk_boundary_reports_exact_length);
    MMP_ADD(s, zeroes_visible_to_acquirer);
    MMP_ADD(s, stats_count_calls_and_bytes);
    MMP_ADD(s, pool_reused_and_capped_at_affinity);
    MMP_ADD(s, shutdown_stops_the_pool_and_it_restarts);
    MMP_ADD(s, tune_swaps_the_policy_under_running_clears);
    MMP_ADD(s, spans_cut_at_huge_pages);
    MMP_ADD(s, numa_placement_restores_the_caller);
    MMP_ADD(s, numa_placement_follows_the_node_of_the_memory);
    MMP_ADD(s, runner_hook_runs_the_spans);
    MMP_ADD(s, populate_makes_fresh_and_dirty_pages_resident_and_zero);
    MMP_ADD(s, populate_refuses_what_cannot_be_backed);
    MMP_ADD(s, policy_for_fake_cpus);
    MMP_ADD(s, policy_thresholds_from_cache_sizes);
    MMP_ADD(s, policy_honours_every_quirk_row);
    MMP_ADD(s, env_cold_min_switches_auto);
    MMP_ADD(s, env_forces_kernel);
    MMP_ADD(s, env_unusable_kernel_fails_every_call);
    MMP_ADD(s, tuning_file_applies);
    MMP_ADD(s, tuning_file_for_other_cpu_ignored);
    MMP_ADD(s, tuning_file_bad_or_missing_ignored);
    MMP_ADD(s, tuning_format_round_trips);
    MMP_ADD(s, calibrate_measures_every_available_kernel);
    MMP_ADD(s, arm64_dc_zva_any_alignment);
    MMP_ADD(s, arm64_kernels_follow_the_cpu);
    return s;
}
