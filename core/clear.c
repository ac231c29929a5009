/* SPDX-License-Identifier: MIT */
/*
 * mmp_clear() and the other public clearing calls: input checks, kernel
 * choice, chunking between yields, parallel spans, counters, and the
 * policy in force. Freestanding: threads, clock and environment come
 * through core/host.h.
 *
 * The clearing code in layers, each including only those below it:
 *   1. core/clear_text.c, core/clear_kernels.c: text helpers; the kernel
 *      table and what this build and CPU can run;
 *   2. core/clear_policy.c: the policy from facts (quirk rows, CPU
 *      features, cache sizes), mmp_clear_policy_for();
 *   3. core/clear_tuning.c: the tuning file, its format and parser;
 *   4. core/clear_measure.c, core/clear_calibrate.c: measuring, only when
 *      asked (mmp_clear_tune(), mmp_clear_calibrate());
 *   5. core/clear_config.c: the policy in force (facts, then the files or
 *      measurement asked for, then the environment);
 *   6. this file: the public calls.
 */
#include "atomic.h"
#include "clear_config.h"
#include "clear_span.h"
#include "host.h"

/* ---- one-time state --------------------------------------------------- */

/*
 * What a clear needs of the policy, in one word so mmp_clear_tune() can
 * change it under running clears: cold_min (a multiple of 4 KiB) with the
 * hot kernel in bits 0-3, the cold one in bits 4-7 and REFUSE (MMPORT_CLEAR
 * names a kernel that cannot be used) in bit 8.
 */
#define W_KERNEL 0xfu
#define W_COLD_SHIFT 4
#define W_REFUSE 0x100u
#define W_COLD_MIN (~(AO_t)(MMP_PAGE_SIZE - 1))
_Static_assert(MMP_K_COUNT <= 16, "kernel ids fit 4 bits");
_Static_assert(sizeof(AO_t) >= sizeof(uint64_t), "cold_min fits a word");

struct clear_state {
    volatile AO_t choice;
    int refuse; /* what REFUSE returns: MMPORT_CLEAR's error */
    mmp_core_clear_fn fn[MMP_K_COUNT];
    struct mmp_clear_kernel list[MMP_K_COUNT];
    struct mmp_core_clear_config cfg; /* described policy; under cfg_lock after init */
};

static struct clear_state st;
static volatile AO_t st_ready; /* 0 = not yet, 1 = being filled, 2 = ready */
static volatile AO_t cfg_lock;  /* st.cfg after init */
static volatile AO_t tune_lock; /* one mmp_clear_tune() at a time */

/* The kernel for a policy name: always one this CPU supports; the portable one if not built. */
static unsigned kernel_of(const char *name)
{
    int k = mmp_core_clear_lookup(name);
    return k >= 0 && st.fn[k] ? (unsigned)k : MMP_K_MEMSET;
}

/* Publishes cfg as the policy in force: its kernels by their ids, and the word. */
static void install(struct mmp_core_clear_config *cfg)
{
    unsigned hot = kernel_of(cfg->pol.hot), cold = kernel_of(cfg->pol.cold);
    cfg->pol.hot = mmp_core_clear_kdesc[hot].name;
    cfg->pol.cold = mmp_core_clear_kdesc[cold].name;
    if (cfg->forced >= 0)
        hot = cold = (unsigned)cfg->forced;
    uint64_t cm = cfg->pol.cold_min;
    cm = cm > (uint64_t)W_COLD_MIN ? (uint64_t)W_COLD_MIN : (cm + MMP_PAGE_SIZE - 1) & W_COLD_MIN;
    AO_store_release(&st.choice, (AO_t)cm | hot | (AO_t)cold << W_COLD_SHIFT |
                                     (cfg->forced_err ? W_REFUSE : 0));
}

static __attribute__((noinline)) const struct clear_state *state_init(void)
{
    if (AO_compare_and_swap_full(&st_ready, 0, 1)) {
        for (unsigned k = 0; k < MMP_K_COUNT; k++)
            st.fn[k] = mmp_core_clear_fn_of(k);
        mmp_core_clear_config_init(&st.cfg);
        st.refuse = st.cfg.forced_err;
        install(&st.cfg);
        AO_store_release(&st_ready, 2);
    } else {
        while (AO_load_acquire(&st_ready) != 2)
            ; /* another thread reads the environment; microseconds */
    }
    return &st;
}

static inline const struct clear_state *state(void)
{
    return AO_load_acquire(&st_ready) == 2 ? &st : state_init();
}

/* A short spin lock (core has no mutex): held for a struct copy. */
static void lock(volatile AO_t *l)
{
    while (!AO_compare_and_swap_full(l, 0, 1))
        ;
}

static void unlock(volatile AO_t *l)
{
    AO_store_release(l, 0);
}

/* The list only for whoever asks: a first clear does nothing it does not need. */
static volatile AO_t list_ready; /* 0 = not yet, 1 = being filled, 2 = ready */

const struct mmp_clear_kernel *mmp_clear_kernels(size_t *n)
{
    state(); /* reads the environment, as documented */
    if (n)
        *n = MMP_K_COUNT;
    if (AO_load_acquire(&list_ready) != 2) {
        if (AO_compare_and_swap_full(&list_ready, 0, 1)) {
            mmp_core_clear_describe(st.list);
            AO_store_release(&list_ready, 2);
        } else {
            while (AO_load_acquire(&list_ready) != 2)
                ; /* another thread fills it; microseconds */
        }
    }
    return st.list;
}

void mmp_clear_policy(struct mmp_clear_policy *out)
{
    state();
    lock(&cfg_lock);
    *out = st.cfg.pol;
    unlock(&cfg_lock);
}

int mmp_clear_tune(const char *dir, unsigned flags)
{
    if ((flags & ~MMP_CLEAR_TUNE_AGAIN) || (dir && !*dir))
        return -MMP_EINVAL;
    state();
    if (!AO_compare_and_swap_full(&tune_lock, 0, 1))
        return -MMP_EBUSY;
    static struct mmp_core_clear_config next; /* off the stack: hypervisor stacks are small */
    int rc = mmp_core_clear_config_tune(&st.cfg, &next, dir, flags);
    if (!rc) {
        lock(&cfg_lock);
        st.cfg = next;
        install(&st.cfg);
        unlock(&cfg_lock);
    }
    unlock(&tune_lock);
    return rc;
}

/* ---- counters ---------------------------------------------------------- */

static volatile AO_t n_calls[MMP_K_COUNT], n_bytes[MMP_K_COUNT], n_ns[MMP_K_COUNT],
    n_timed[MMP_K_COUNT];
static volatile AO_t n_clears, n_cancelled, n_rejected;

/* Invocations below this are not timed: two clock reads cost about as much
 * as zeroing a 4 KiB page. */
#define TIME_MIN (256u << 10)

/*
 * Small calls are counted in a per-thread block and flushed to the shared
 * counters every FLUSH_EVERY calls of a kernel: a locked add per call would
 * wait for the previous clear's stores to drain (~9 ns each on the dev
 * machine, a third of a 4 KiB clear in L1). One word per kernel packs the
 * three counts, so counting is one add: lengths are multiples of 4 KiB,
 * which leaves bits 0-5 for calls and 6-11 for finished mmp_clear() calls.
 */
#define FLUSH_EVERY 32
#define P_CALL 1u
#define P_CLEAR 64u
#define P_MASK 63u
struct pending {
    uint64_t w[MMP_K_COUNT];
    uint64_t clears; /* finished calls counted apart from a kernel call */
};

static void flush(struct pending *p)
{
    uint64_t clears = p->clears;
    for (unsigned k = 0; k < MMP_K_COUNT; k++) {
        uint64_t w = p->w[k];
        if (!w)
            continue;
        AO_fetch_and_add(&n_calls[k], (AO_t)(w & P_MASK));
        AO_fetch_and_add(&n_bytes[k], (AO_t)(w & ~(uint64_t)(MMP_PAGE_SIZE - 1)));
        clears += (w / P_CLEAR) & P_MASK;
        p->w[k] = 0;
    }
    if (clears)
        AO_fetch_and_add(&n_clears, (AO_t)clears);
    p->clears = 0;
}

void mmp_core_thread_block_exit(void *block)
{
    flush(block);
}

static struct pending *own_block(void)
{
    return mmp_host_thread_block(sizeof(struct pending));
}

/* Counts one kernel invocation (and, with clear, one finished mmp_clear). */
static inline void count(unsigned k, size_t len, bool clear)
{
    struct pending *p = own_block();
    if (!p) {
        AO_fetch_and_add1(&n_calls[k]);
        AO_fetch_and_add(&n_bytes[k], (AO_t)len);
        if (clear)
            AO_fetch_and_add1(&n_clears);
        return;
    }
    uint64_t w = p->w[k] + len + P_CALL + (clear ? P_CLEAR : 0);
    p->w[k] = w;
    if ((w & P_MASK) >= FLUSH_EVERY)
        flush(p);
}

static void count_clear(void)
{
    struct pending *p = own_block();
    if (!p) {
        AO_fetch_and_add1(&n_clears);
        return;
    }
    if (++p->clears >= FLUSH_EVERY)
        flush(p);
}

/* Runs kernel k on [p, p + len) and counts it. */
static inline __attribute__((always_inline)) void invoke(unsigned k, mmp_core_clear_fn fn, char *p, size_t len, bool clear)
{
    if (len >= TIME_MIN) {
        uint64_t t0 = mmp_host_now_ns();
        fn(p, len);
        uint64_t t1 = mmp_host_now_ns();
        AO_fetch_and_add(&n_ns[k], (AO_t)(t1 - t0));
        AO_fetch_and_add(&n_timed[k], (AO_t)len);
        AO_fetch_and_add1(&n_calls[k]);
        AO_fetch_and_add(&n_bytes[k], (AO_t)len);
        if (clear)
            AO_fetch_and_add1(&n_clears);
    } else {
        fn(p, len);
        count(k, len, clear);
    }
}

void mmp_clear_stats(struct mmp_clear_stats *out)
{
    struct pending *p = own_block();
    if (p)
        flush(p); /* the caller's own recent calls; other threads may lag */
    *out = (struct mmp_clear_stats){0};
    out->nkernels = MMP_K_COUNT;
    for (unsigned k = 0; k < MMP_K_COUNT; k++) {
        out->kernel[k].calls = AO_load(&n_calls[k]);
        out->kernel[k].bytes = AO_load(&n_bytes[k]);
        out->kernel[k].ns = AO_load(&n_ns[k]);
        out->kernel[k].timed_bytes = AO_load(&n_timed[k]);
    }
    out->clears = AO_load(&n_clears);
    out->cancelled = AO_load(&n_cancelled);
    out->rejected = AO_load(&n_rejected);
}

/* ---- the engine --------------------------------------------------------- */

/* One round: npages pages at base, split into n contiguous spans. */
struct round {
    unsigned k;
    mmp_core_clear_fn fn;
    char *base;
    size_t npages;
    unsigned n;
    bool numa;
    bool populate;        /* mmp_clear_populate(): fault each span in first */
    volatile AO_t failed; /* a span could not be populated: the call fails */
};

/* Page-index cut i of n over npages pages at base, moved to the nearest multiple of align pages. */
static size_t cut(uintptr_t base, size_t npages, unsigned n, unsigned i, size_t align)
{
    if (i == 0 || i >= n)
        return i == 0 ? 0 : npages;
    /* npages < 2^52 and n <= 256: the product cannot overflow. */
    uintptr_t first = base / MMP_PAGE_SIZE, even = first + npages * i / n;
    uintptr_t c = (even + align / 2) / align * align;
    c = c < first ? first : c - first;
    return c > npages ? npages : c;
}

/*
 * Huge pages (2 MiB, 1 GiB) stay whole within one span: cuts move to the
 * nearest boundary of the largest size of which each span holds at least
 * 4, so the spans stay within 1/8 of even. Which size backs the range
 * does not matter: on 4 KiB pages aligned cuts cost nothing.
 */
void mmp_core_clear_span(uintptr_t base, size_t npages, unsigned n, unsigned i, size_t *first,
                         size_t *end)
{
    size_t share = npages / n;
    size_t align = share >= 4 * (1ull << 18) ? (1u << 18) : share >= 4 * 512 ? 512 : 1;
    *first = cut(base, npages, n, i, align);
    *end = cut(base, npages, n, i + 1, align);
}

static void run_span(void *arg, unsigned i)
{
    struct round *r = arg;
    size_t a, b;
    mmp_core_clear_span((uintptr_t)r->base, r->npages, r->n, i, &a, &b);
    if (b <= a)
        return;
    char *p = r->base + a * MMP_PAGE_SIZE;
    size_t len = (b - a) * MMP_PAGE_SIZE;
    if (r->numa)
        mmp_host_place_near(p);
    /* -MMP_ENOSYS: no populate call here; the clearing stores fault pages in. */
    int err = r->populate ? mmp_host_populate(p, len) : 0;
    if (err && err != -MMP_ENOSYS)
        AO_store(&r->failed, 1);
    else
        invoke(r->k, r->fn, p, len, false);
    if (r->numa)
        mmp_host_unplace();
    /* Pool workers never exit: their counts reach the shared counters now. */
    struct pending *own = own_block();
    if (own)
        flush(own);
}

/* ---- who runs the spans ---------------------------------------------------- */

static mmp_clear_runner_fn runner;
static void *runner_ctx;
static unsigned runner_workers;

void mmp_clear_set_runner(mmp_clear_runner_fn run, void *ctx, unsigned workers)
{
    runner_ctx = ctx;
    runner_workers = workers ? workers : 1;
    runner = run;
}

/* Threads one call may use: its request, capped at the CPUs (or the runner's workers). */
static unsigned threads_for(unsigned want)
{
    unsigned cap = runner ? runner_workers : mmp_host_cpus();
    want = want ? want : 1;
    return want < cap ? want : cap;
}

static void run_round(struct round *r)
{
    if (runner)
        runner(runner_ctx, r->n, run_span, r);
    else
        mmp_host_run_parallel(r->n, run_span, r);
}

/* Validates everything and picks the kernel; nothing is written on error. */
static int prepare(const struct clear_state *s, void *addr, size_t len,
                   const struct mmp_clear_opts *o, unsigned *k)
{
    uintptr_t a = (uintptr_t)addr;
    if (!addr || (a & (MMP_PAGE_SIZE - 1)) || (len & (MMP_PAGE_SIZE - 1)))
        return -MMP_EINVAL;
    if (len > UINTPTR_MAX - a + 1 && len) /* the last byte is a + len - 1 */
        return -MMP_EOVERFLOW;
    if ((unsigned)o->hint > MMP_CLEAR_COLD || (o->chunk & (MMP_PAGE_SIZE - 1)) ||
        o->threads > MMP_CLEAR_MAX_THREADS || (o->flags & ~(unsigned)MMP_CLEAR_NUMA))
        return -MMP_EINVAL;
    if (o->kernel) {
        int id = mmp_core_clear_lookup(o->kernel);
        if (id < 0)
            return -MMP_EINVAL;
        if (!s->fn[id])
            return -MMP_ENOTSUP;
        *k = (unsigned)id;
        return 0;
    }
    AO_t w = AO_load(&s->choice);
    if (w & W_REFUSE)
        return s->refuse;
    if (o->hint == MMP_CLEAR_HOT)
        *k = w & W_KERNEL;
    else if (o->hint == MMP_CLEAR_COLD)
        *k = (w >> W_COLD_SHIFT) & W_KERNEL;
    else
        *k = len >= (w & W_COLD_MIN) ? (w >> W_COLD_SHIFT) & W_KERNEL : w & W_KERNEL;
    return 0;
}

static __attribute__((noinline)) int clear_opts(void *addr, size_t len,
                                                const struct mmp_clear_opts *opts, bool populate);

int mmp_clear(void *addr, size_t len, const struct mmp_clear_opts *opts)
{
    /*
     * Short path for small default clears: few live registers, so no spills
     * ahead of the kernel (measured: 35 -> 28 ns per 4 KiB vs 24 ns for the
     * bare kernel on the dev machine).
     */
    const struct clear_state *s = state();
    AO_t w = AO_load(&s->choice);
    if (!opts && !(w & W_REFUSE) && addr && len && len < TIME_MIN &&
        !(((uintptr_t)addr | len) & (MMP_PAGE_SIZE - 1)) && len <= UINTPTR_MAX - (uintptr_t)addr) {
        unsigned k = len >= (w & W_COLD_MIN) ? (w >> W_COLD_SHIFT) & W_KERNEL : w & W_KERNEL;
        count(k, len, true);
        return s->fn[k](addr, len); /* 0; a tail call */
    }
    return clear_opts(addr, len, opts, false);
}

int mmp_clear_populate(void *addr, size_t len, const struct mmp_clear_opts *opts)
{
    return clear_opts(addr, len, opts, true);
}

static int clear_opts(void *addr, size_t len, const struct mmp_clear_opts *opts, bool populate)
{
    static const struct mmp_clear_opts defaults;
    const struct mmp_clear_opts *o = opts ? opts : &defaults;
    const struct clear_state *s = state();
    unsigned k = 0;
    if (o->cleared)
        *o->cleared = 0;
    int err = prepare(s, addr, len, o, &k);
    if (err) {
        AO_fetch_and_add1(&n_rejected);
        return err;
    }

    unsigned threads = o->threads > 1 ? threads_for(o->threads) : 1;
    if (!o->yield && threads == 1 && !populate) { /* the common case, kept short */
        if (len)
            invoke(k, s->fn[k], addr, len, true);
        else
            count_clear();
        if (o->cleared)
            *o->cleared = len;
        return 0;
    }
    /* Without a callback there is nothing to bound: one round. */
    size_t per = o->yield ? (o->chunk ? o->chunk : MMP_CLEAR_DEFAULT_CHUNK) : len;
    size_t step = threads == 1 ? per : per > len / threads ? len : per * threads;
    struct round r = {k, s->fn[k], addr, 0, 0, (o->flags & MMP_CLEAR_NUMA) != 0, populate, 0};
    size_t done = 0;
    bool counted = false;
    while (done < len) {
        size_t n = len - done < step ? len - done : step;
        r.base = (char *)addr + done;
        r.npages = n / MMP_PAGE_SIZE;
        r.n = r.npages < threads ? (unsigned)r.npages : threads;
        if (r.n == 1 && !populate) { /* the common case: no division, one count */
            counted = !o->yield && n == len;
            invoke(k, r.fn, r.base, n, counted);
        } else if (r.n == 1) {
            run_span(&r, 0);
        } else {
            run_round(&r);
        }
        if (AO_load(&r.failed)) {
            if (o->cleared)
                *o->cleared = done; /* the rounds before this one are resident and zero */
            return -MMP_ENOMEM;
        }
        done += n;
        if (o->yield && o->yield(o->yield_arg, done, len) && done < len) {
            if (o->cleared)
                *o->cleared = done;
            AO_fetch_and_add1(&n_cancelled);
            return -MMP_EINTR;
        }
    }
    if (o->cleared)
        *o->cleared = len;
    if (!counted)
        count_clear();
    return 0;
}

int mmp_clear_pages(void *addr, size_t npages)
{
    if (npages > SIZE_MAX / MMP_PAGE_SIZE) {
        AO_fetch_and_add1(&n_rejected);
        return -MMP_EOVERFLOW;
    }
    return mmp_clear(addr, npages * MMP_PAGE_SIZE, NULL);
}
