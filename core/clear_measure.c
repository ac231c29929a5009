/* SPDX-License-Identifier: MIT */
/*
 * Measuring, only when asked (layer 4; core/clear.c has the layers):
 * mmp_clear_tune() compares the table's choice with the alternatives on
 * this machine (tens of ms of stores on a 64 MiB scratch mapping) -
 * quirk rows included: a row only bad-lists kernels and sets the first
 * guess, the measurement checks it among the kernels the row allows. The
 * table's kernel and threshold are kept unless the measurement shows them
 * more than 5% off. The result is a tuning file (readable, with every
 * figure as comments), applied by the caller. Freestanding builds have no
 * clock or scratch memory: -MMP_ENOSYS.
 */
#include "clear_measure.h"
#include "clear_tuning.h"
#include "host.h"

#define HOT_BYTES (64u << 10) /* cache-resident: what a hot clear meets */
#define HOT_ITERS 32u
/*
 * Cold kernels are compared on 64 MiB, twice the 32 MiB per-CCX L3 of
 * Zen 3-5: on 16 MiB (inside Zen 4's L3) CLZERO and AVX-512 NT traded
 * places run to run, and at 1 GiB CLZERO reached 0.65 of AVX-512 NT.
 */
#define COLD_BYTES (64u << 20)
/* AUTO's threshold is checked at 4, 8, 16, 32 and 64 MiB (SCAN_MIN << (NSCAN - 1) == COLD_BYTES). */
#define SCAN_MIN (4u << 20)
#define NSCAN 5u
#define REPS 3u
#define MARGIN_PCT 5u

/*
 * REPS more rounds for each kernel in cand, keeping in ns[k] the best time
 * of a pass of `iters` clears of len bytes (callers start ns at
 * UINT64_MAX). Every round runs each kernel once, starting one kernel
 * later than the round before, so a slow spell of a shared machine falls
 * on all of them alike. With evict, a sample that would start on lines a
 * cached kernel left behind is preceded by an untimed evict pass: the
 * clears measured meet memory that is not in cache (as the benchmark's
 * samples do); the first one also faults the scratch pages in.
 */
static void time_kernels(uint32_t cand, char *buf, size_t len, unsigned iters,
                         mmp_core_clear_fn evict, uint64_t *ns)
{
    unsigned list[MMP_K_COUNT], n = 0;
    for (unsigned k = 0; k < MMP_K_COUNT; k++)
        if (cand & MMP_KBIT(k))
            list[n++] = k;
    bool cached = true;
    for (unsigned r = 0; r < REPS; r++)
        for (unsigned j = 0; j < n; j++) {
            unsigned k = list[(j + r) % n];
            mmp_core_clear_fn fn = mmp_core_clear_fn_of(k);
            if (evict && cached)
                evict(buf, len);
            uint64_t t0 = mmp_host_now_ns();
            for (unsigned i = 0; i < iters; i++)
                fn(buf, len);
            uint64_t t = mmp_host_now_ns() - t0;
            if (t < ns[k])
                ns[k] = t ? t : 1;
            cached = !mmp_core_clear_kdesc[k].cold;
        }
}

unsigned mmp_core_clear_verify_pick(uint32_t cand, unsigned current, const uint64_t *ns)
{
    unsigned best = current;
    for (unsigned k = 0; k < MMP_K_COUNT; k++)
        if ((cand & MMP_KBIT(k)) && ns[k] < ns[best])
            best = k;
    return ns[best] * (100 + MARGIN_PCT) < ns[current] * 100 ? best : current;
}

/* a is at most MARGIN_PCT slower than b */
static bool within(uint64_t a, uint64_t b)
{
    return a * 100 <= b * (100 + MARGIN_PCT);
}

/* The times agree with AUTO going cold from table. */
static bool agrees(uint64_t table, const uint64_t *size, const uint64_t *t_hot,
                   const uint64_t *t_cold, unsigned n)
{
    bool ok = true;
    for (unsigned i = 0; i < n; i++)
        ok &= size[i] >= table ? within(t_cold[i], t_hot[i]) : within(t_hot[i], t_cold[i]);
    return ok;
}

uint64_t mmp_core_clear_verify_cold_min(uint64_t table, const uint64_t *size,
                                        const uint64_t *t_hot, const uint64_t *t_cold, unsigned n)
{
    if (!n || agrees(table, size, t_hot, t_cold, n))
        return table;
    unsigned k = n; /* the smallest size from which cold keeps within the margin */
    while (k > 0 && within(t_cold[k - 1], t_hot[k - 1]))
        k--;
    if (k < n)
        return size[k];
    /* cold loses at the largest size measured: from beyond it, or the table's if larger */
    return table > size[n - 1] ? table : size[n - 1] * 2;
}

/*
 * The kernel of cand for clears of len bytes: the table's (current)
 * unless another is more than 5% faster over REPS rounds and still over
 * REPS more of the two (one noisy spell must not move the policy). extra
 * kernels are timed alongside (ns) but not chosen.
 */
static unsigned measure_pick(uint32_t cand, uint32_t extra, unsigned current, char *buf,
                             size_t len, unsigned iters, mmp_core_clear_fn evict, uint64_t *ns)
{
    time_kernels(cand | extra, buf, len, iters, evict, ns);
    unsigned k = mmp_core_clear_verify_pick(cand, current, ns);
    if (k != current) {
        time_kernels(MMP_KBIT(k) | MMP_KBIT(current), buf, len, iters, evict, ns);
        k = mmp_core_clear_verify_pick(cand, current, ns);
    }
    return k;
}

/* REPS more rounds of hot and cold at every scan size (th, tc: best ns so far). */
static void scan(unsigned hot, unsigned cold, char *buf, mmp_core_clear_fn evict,
                 const uint64_t *size, uint64_t *th, uint64_t *tc)
{
    uint64_t t[MMP_K_COUNT];
    for (unsigned i = 0; i < NSCAN; i++) {
        t[hot] = th[i], t[cold] = tc[i];
        time_kernels(MMP_KBIT(hot) | MMP_KBIT(cold), buf, size[i], 1, evict, t);
        th[i] = t[hot], tc[i] = t[cold];
    }
}

/* Candidates for hot or cold clears: usable, not bad-listed, this arch's own kernels. */
static uint32_t candidates(uint32_t usable, bool cold, uint32_t bad)
{
    uint32_t m = 0;
    for (unsigned k = 0; k < MMP_K_COUNT; k++)
        if (k != MMP_K_MEMSET && mmp_core_clear_kdesc[k].cold == cold)
            m |= MMP_KBIT(k);
    return m & usable & ~bad;
}

void mmp_core_clear_verify_candidates(uint32_t usable, const struct mmp_clear_policy *pol,
                                      uint32_t *hot, uint32_t *cold)
{
    *hot = candidates(usable, false, pol->bad_hot) |
           MMP_KBIT((unsigned)mmp_core_clear_lookup(pol->hot));
    *cold = candidates(usable, true, pol->bad_cold) |
            MMP_KBIT((unsigned)mmp_core_clear_lookup(pol->cold));
}

/* "<what> kernel MB/s ..." for the kernels in cand, bytes per timed pass. */
static void put_mbps(struct mmp_core_sink *o, const char *what, uint32_t cand, uint64_t bytes,
                     const uint64_t *ns)
{
    mmp_core_put(o, what);
    for (unsigned k = 0; k < MMP_K_COUNT; k++)
        if (cand & MMP_KBIT(k)) {
            mmp_core_put(o, " "), mmp_core_put(o, mmp_core_clear_kdesc[k].name);
            mmp_core_put(o, " "), mmp_core_put_u64(o, bytes * 1000 / ns[k]);
        }
    mmp_core_put(o, "\n");
}

long mmp_core_clear_measure(const struct mmp_cpu_features *f, uint32_t usable,
                           const struct mmp_clear_policy *pol, char *text, size_t cap)
{
    if (!mmp_host_now_ns())
        return -MMP_ENOSYS;
    char *buf = mmp_host_scratch(COLD_BYTES);
    if (!buf)
        return -MMP_ENOMEM;
    uint64_t t0 = mmp_host_now_ns();
    unsigned hot = (unsigned)mmp_core_clear_lookup(pol->hot);
    unsigned cold = (unsigned)mmp_core_clear_lookup(pol->cold);
    mmp_core_clear_fn evict = mmp_core_clear_fn_of(cold);
    uint32_t hc, cc;
    mmp_core_clear_verify_candidates(usable, pol, &hc, &cc);
    uint64_t ns_hot[MMP_K_COUNT], ns[MMP_K_COUNT];
    for (unsigned k = 0; k < MMP_K_COUNT; k++)
        ns_hot[k] = ns[k] = UINT64_MAX;
    hot = measure_pick(hc, 0, hot, buf, HOT_BYTES, HOT_ITERS, NULL, ns_hot);
    /* the hot kernel runs in the cold round too: the threshold's largest size */
    cold = measure_pick(cc, MMP_KBIT(hot), cold, buf, COLD_BYTES, 1, evict, ns);
    uint64_t size[NSCAN], th[NSCAN], tc[NSCAN], cold_min = pol->cold_min;
    for (unsigned i = 0; i < NSCAN; i++)
        size[i] = (uint64_t)SCAN_MIN << i, th[i] = tc[i] = UINT64_MAX; /* the last: COLD_BYTES */
    th[NSCAN - 1] = ns[hot], tc[NSCAN - 1] = ns[cold];
    if (hot != cold) {
        scan(hot, cold, buf, evict, size, th, tc);
        /* times that disagree with the table must do so over REPS more rounds */
        if (!agrees(pol->cold_min, size, th, tc, NSCAN))
            scan(hot, cold, buf, evict, size, th, tc);
        cold_min = mmp_core_clear_verify_cold_min(pol->cold_min, size, th, tc, NSCAN);
    }
    uint64_t ms = (mmp_host_now_ns() - t0) / 1000000;
    mmp_host_scratch_free(buf, COLD_BYTES);

    struct mmp_core_sink o = {text, cap, 0};
    mmp_core_put(&o, "# mmport: clearing kernels measured by mmp_clear_tune() (");
    mmp_core_put_u64(&o, ms);
    mmp_core_put(&o, " ms; the table's choice kept unless it was 5% off).\n"
                     "# `mmport tune` writes a fuller one.\n");
    put_mbps(&o, "# hot, 64 KiB in cache, MB/s:", hc, HOT_BYTES * HOT_ITERS, ns_hot);
    put_mbps(&o, "# cold, 64 MiB evicted, MB/s:", cc | MMP_KBIT(hot), COLD_BYTES, ns);
    if (hot != cold)
        for (unsigned i = 0; i < NSCAN; i++) {
            mmp_core_put(&o, "# at "), mmp_core_put_u64(&o, size[i] >> 20);
            mmp_core_put(&o, " MiB evicted, MB/s: "), mmp_core_put(&o, mmp_core_clear_kdesc[hot].name);
            mmp_core_put(&o, " "), mmp_core_put_u64(&o, size[i] * 1000 / th[i]);
            mmp_core_put(&o, " "), mmp_core_put(&o, mmp_core_clear_kdesc[cold].name);
            mmp_core_put(&o, " "), mmp_core_put_u64(&o, size[i] * 1000 / tc[i]), mmp_core_put(&o, "\n");
        }
    mmp_core_put(&o, "# table: hot "), mmp_core_put(&o, pol->hot);
    mmp_core_put(&o, ", cold "), mmp_core_put(&o, pol->cold);
    mmp_core_put(&o, ", cold_min "), mmp_core_put_u64(&o, pol->cold_min);
    mmp_core_put(&o, pol->quirk ? " (row " : ""), mmp_core_put(&o, pol->quirk ? pol->quirk : "");
    mmp_core_put(&o, pol->quirk ? ")\n" : "\n");
    mmp_core_clear_put_cpu(&o, f);
    mmp_core_put(&o, "hot "), mmp_core_put(&o, mmp_core_clear_kdesc[hot].name);
    mmp_core_put(&o, "\ncold "), mmp_core_put(&o, mmp_core_clear_kdesc[cold].name);
    mmp_core_put(&o, "\ncold_min "), mmp_core_put_u64(&o, cold_min);
    mmp_core_put(&o, "\n");
    return o.n + 1 > cap ? -MMP_ERANGE : (long)o.n;
}
