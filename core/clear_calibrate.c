/* SPDX-License-Identifier: MIT */
/*
 * mmp_clear_calibrate() (layer 4, measuring; core/clear.c has the layers):
 * measure every available kernel on this machine and derive hot, cold and
 * the AUTO threshold, for `mmport tune`. Freestanding: the clock comes
 * from the host.
 */
#include "clear_measure.h"
#include "host.h"

#define CAL_REPS 3
#define CAL_WORK (32u << 20) /* bytes per sample at small sizes */

/*
 * Best MB/s of kernel fn over [buf, buf + size), lines evicted first.
 * Integer arithmetic only: hypervisors often forbid FP in their own code.
 */
static uint32_t measure(mmp_core_clear_fn fn, mmp_core_clear_fn evict, char *buf, size_t size)
{
    size_t iters = size >= CAL_WORK ? 1 : CAL_WORK / size;
    uint64_t best = 0;
    for (int r = 0; r < CAL_REPS; r++) {
        evict(buf, size); /* same start state for every kernel */
        uint64_t t0 = mmp_host_now_ns();
        for (size_t i = 0; i < iters; i++)
            fn(buf, size);
        uint64_t t = mmp_host_now_ns() - t0;
        /* bytes * 1000 / ns = MB/s; bytes <= 2^44 here, so no overflow */
        uint64_t m = t ? (uint64_t)size * iters * 1000 / t : 0;
        best = m > best ? m : best;
    }
    return best > UINT32_MAX ? UINT32_MAX : (uint32_t)best;
}

int mmp_clear_calibrate(void *buf, size_t len, struct mmp_clear_calibration *out)
{
    if (!buf || !out || ((uintptr_t)buf & (MMP_PAGE_SIZE - 1)) || len < (4u << 20))
        return -MMP_EINVAL;
    if (!mmp_host_now_ns())
        return -MMP_ENOSYS;
    *out = (struct mmp_clear_calibration){0};
    static const uint64_t want[] = {256u << 10, 2u << 20, 8u << 20, 32u << 20};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (want[i] < len)
            out->size[out->nsizes++] = want[i];
    out->size[out->nsizes++] = len & ~(size_t)(MMP_PAGE_SIZE - 1);
    /* The kernels take whole pages: the tail past the last one by hand. */
    for (size_t i = len & ~(size_t)(MMP_PAGE_SIZE - 1); i < len; i++)
        ((volatile char *)buf)[i] = 0;

    struct mmp_clear_policy pol; /* its cold kernel evicts the lines before each sample */
    mmp_clear_policy_for(mmp_cpu_features(), &pol);
    mmp_core_clear_fn evict = mmp_core_clear_fn_of((unsigned)mmp_core_clear_lookup(pol.cold));
    size_t last = out->nsizes - 1;
    int hot = -1, cold = -1;
    uint64_t hot_g = 0, cold_g = 0;
    for (unsigned k = 0; k < MMP_K_COUNT; k++) {
        mmp_core_clear_fn fn = mmp_core_clear_fn_of(k);
        if (!fn)
            continue;
        for (size_t s = 0; s < out->nsizes; s++)
            out->mbps[k][s] = measure(fn, evict, buf, out->size[s]);
        /*
         * hot: the fastest cache-allocating kernel at the cache-resident
         * sizes (an NT kernel can win there on evicted lines, but a hot clear
         * is for memory used soon), this arch's own before the portable one;
         * cold: the largest size, cold kernels first.
         */
        uint64_t h = (uint64_t)out->mbps[k][0] + out->mbps[k][1];
        if (!mmp_core_clear_kdesc[k].cold &&
            (hot < 0 || (k != MMP_K_MEMSET && (hot == MMP_K_MEMSET || h > hot_g))))
            hot_g = h, hot = (int)k;
        bool is_cold = mmp_core_clear_kdesc[k].cold;
        bool cur_cold = cold >= 0 && mmp_core_clear_kdesc[cold].cold;
        if (cold < 0 || (is_cold && !cur_cold) ||
            (is_cold == cur_cold && out->mbps[k][last] > cold_g))
            cold_g = out->mbps[k][last], cold = (int)k;
    }
    out->hot = mmp_core_clear_kdesc[hot].name;
    out->cold = mmp_core_clear_kdesc[cold].name;
    /* the smallest size from which cold beats hot by 5% at every larger size */
    out->cold_min = ~0ull;
    for (size_t s = out->nsizes; s-- > 0;) {
        if ((uint64_t)out->mbps[cold][s] * 20 <= (uint64_t)out->mbps[hot][s] * 21)
            break;
        out->cold_min = out->size[s];
    }
    return 0;
}
