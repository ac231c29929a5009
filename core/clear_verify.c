/* SPDX-License-Identifier: MIT */
/*
 * Trust but verify: on a CPU the quirk table has no row for, the first use
 * in a process measures the candidate kernels briefly (a few ms, fixed
 * bytes) and keeps the table's choice unless another kernel is more than
 * 5% faster; the result goes to a per-CPU-model file in the user's cache
 * directory (a tuning file: readable, deletable), which later processes -
 * and `mmport tune`, which writes a full calibration there - load instead.
 * Freestanding builds have no clock, files or scratch memory: table only.
 */
#include "clear_impl.h"
#include "host.h"

#define HOT_BYTES (64u << 10)  /* cache-resident: what a hot clear meets */
#define HOT_ITERS 32u
#define COLD_BYTES (16u << 20) /* past L2 (8 MiB read 1.4x DRAM speed on Zen 4) */
#define REPS 4u
#define MARGIN_PCT 5u

int mmp_core_clear_cache_path(const struct mmp_cpu_features *f, char *path, size_t cap)
{
    char name[96];
    struct mmp_core_sink o = {name, sizeof name, 0};
    mmp_core_put(&o, "clear-");
    mmp_core_clear_put_cpu_id(&o, f, '-');
    mmp_core_put(&o, ".conf");
    return o.n + 1 > sizeof name ? -MMP_ERANGE : mmp_host_cache_path(name, path, cap);
}

/* Best of REPS passes (interleaved over the candidates) of each kernel in cand; ns per pass. */
static void time_kernels(uint32_t cand, char *buf, size_t len, unsigned iters, uint64_t *ns)
{
    for (unsigned r = 0; r < REPS; r++)
        for (unsigned k = 0; k < MMP_K_COUNT; k++) {
            if (!(cand & MMP_KBIT(k)))
                continue;
            mmp_core_clear_fn fn = mmp_core_clear_fn_of(k);
            uint64_t t0 = mmp_host_now_ns();
            for (unsigned i = 0; i < iters; i++)
                fn(buf, len);
            uint64_t t = mmp_host_now_ns() - t0;
            if (!r || t < ns[k])
                ns[k] = t ? t : 1;
        }
}

/* The table's kernel, unless a candidate is more than MARGIN_PCT faster. */
static unsigned pick(uint32_t cand, unsigned current, const uint64_t *ns)
{
    unsigned best = current;
    for (unsigned k = 0; k < MMP_K_COUNT; k++)
        if ((cand & MMP_KBIT(k)) && ns[k] < ns[best])
            best = k;
    return ns[best] * (100 + MARGIN_PCT) < ns[current] * 100 ? best : current;
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

static char cache_file[256], cache_note[300], cache_text[MMP_CORE_TUNING_MAX + 1];

/* policy.source = a <cache file> b c */
static void note_source(const char *a, const char *b, const char *c, struct mmp_clear_policy *pol)
{
    struct mmp_core_sink o = {cache_note, sizeof cache_note, 0};
    mmp_core_put(&o, a), mmp_core_put(&o, cache_file), mmp_core_put(&o, b), mmp_core_put(&o, c);
    pol->source = cache_note;
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

/* Measures, writes the cache file, applies it; false if this host cannot. */
static bool measure(const struct mmp_cpu_features *f, uint32_t usable,
                    struct mmp_clear_policy *pol)
{
    char *buf = mmp_host_scratch(COLD_BYTES);
    if (!buf)
        return false;
    uint64_t ns[MMP_K_COUNT] = {0}, t0 = mmp_host_now_ns();
    unsigned hot = (unsigned)mmp_core_clear_lookup(pol->hot);
    unsigned cold = (unsigned)mmp_core_clear_lookup(pol->cold);
    uint32_t hc = candidates(usable, false, pol->bad_hot) | MMP_KBIT(hot);
    uint32_t cc = candidates(usable, true, pol->bad_cold) | MMP_KBIT(cold);
    uint64_t ns_hot[MMP_K_COUNT] = {0};
    time_kernels(hc, buf, HOT_BYTES, HOT_ITERS, ns_hot);
    hot = pick(hc, hot, ns_hot);
    time_kernels(cc, buf, COLD_BYTES, 1, ns);
    cold = pick(cc, cold, ns);
    uint64_t ms = (mmp_host_now_ns() - t0) / 1000000;
    mmp_host_scratch_free(buf, COLD_BYTES);

    struct mmp_core_sink o = {cache_text, sizeof cache_text, 0};
    mmp_core_put(&o, "# mmport: clearing kernels measured at first use (");
    mmp_core_put_u64(&o, ms);
    mmp_core_put(&o, " ms; the table's choice kept unless another kernel was 5% faster).\n"
                     "# Delete this file to measure again; `mmport tune` writes a full one.\n");
    put_mbps(&o, "# hot, 64 KiB in cache, MB/s:", hc, HOT_BYTES * HOT_ITERS, ns_hot);
    put_mbps(&o, "# cold, 16 MiB, MB/s:", cc, COLD_BYTES, ns);
    mmp_core_clear_put_cpu(&o, f);
    mmp_core_put(&o, "hot "), mmp_core_put(&o, mmp_core_clear_kdesc[hot].name);
    mmp_core_put(&o, "\ncold "), mmp_core_put(&o, mmp_core_clear_kdesc[cold].name);
    mmp_core_put(&o, "\n");
    if (o.n + 1 > sizeof cache_text)
        return false;
    mmp_host_write_file(cache_file, cache_text, o.n); /* unwritable: measure next time */
    if (mmp_core_clear_tuning_apply(cache_text, o.n, f, usable, pol))
        return false;
    note_source("measured at first use, cached in ", "", "", pol);
    return true;
}

void mmp_core_clear_verify(const struct mmp_cpu_features *f, uint32_t usable,
                           struct mmp_clear_policy *pol)
{
    if (mmp_core_clear_cache_path(f, cache_file, sizeof cache_file) < 0)
        return;
    long n = mmp_host_read_file(cache_file, cache_text, sizeof cache_text);
    if (n >= 0) {
        struct mmp_clear_policy t = *pol;
        const char *why = mmp_core_clear_tuning_apply(cache_text, (size_t)n, f, usable, &t);
        if (!why) {
            *pol = t;
            note_source("cached file ", "", "", pol);
            return;
        }
        note_source("table (cached file ", " ignored: ", why, pol);
    }
    const char *v = mmp_host_getenv("MMPORT_CLEAR_VERIFY");
    if (pol->quirk || (v && mmp_core_streq(v, "0")) || !mmp_host_now_ns())
        return; /* a row is trusted; or measuring is off, or there is no clock */
    measure(f, usable, pol);
    if (n >= 0 && mmp_core_streq(pol->source, "table")) /* could not measure: say why not the file */
        note_source("table (cached file ", " ignored)", "", pol);
}
