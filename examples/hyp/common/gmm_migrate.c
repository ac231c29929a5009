/* SPDX-License-Identifier: MIT */
/*
 * Pre-copy live migration to a shadow area, checked byte for byte.
 *
 * Begin: dirty tracking over all guest RAM; every page is pending.
 * Rounds (on exits, while the guest runs): harvest the pages written since
 * the last harvest (they become pending again), then copy up to
 * mig_budget pending pages, so no exit stalls its vCPU for a whole copy of
 * guest RAM. Finish (guest stopped): a last harvest, every pending page
 * copied, then the compare. A page whose shadow differs from what the
 * guest sees is a write the tracking lost.
 *
 * Besides the harvest, a page is made pending when an eviction unmapped it
 * (gmm_evict.c: an unmap drops the leaf's dirty state with the leaf).
 */
#include "gmm.h"

/* Copy up to budget pending pages to the shadow, from where the last
 * round stopped; returns how many. */
static uint64_t copy_pending(struct gmm *g, uint64_t budget)
{
    uint64_t n = 0, words = (g->npages + 63) / 64;
    for (uint64_t i = 0; i < words && n < budget; i++) {
        uint64_t w = (g->mig_cursor + i) % words;
        while (g->pending[w] && n < budget) {
            uint64_t p = w * 64 + (uint64_t)__builtin_ctzll(g->pending[w]);
            g->pending[w] &= g->pending[w] - 1;
            hyp_copy_words(g->cfg.shadow + p * g->granule, gmm_content(g, p), g->granule);
            n++;
        }
        if (g->pending[w])
            g->mig_cursor = w;
    }
    return n;
}

void gmm_mig_begin(struct gmm *g, unsigned cpu)
{
    uint64_t t = hyp_arch_now_ns();
    hyp_lock(&g->lock);
    int rc =
        GMM_TIMED(g, cpu, mmp_pt_track_start(&g->pt, g->cfg.ipa_base, g->cfg.size, NULL));
    if (rc) {
        hyp_printf("hyp: migration: track_start failed (%d): migration off\n", rc);
        g->mig = MIG_DONE;
        hyp_unlock(&g->lock);
        return;
    }
    /* Tracking is armed: from here every write is logged, so every page is
     * copied once, over the rounds, while the guest runs (a page written
     * meanwhile is harvested and copied again). */
    for (uint64_t p = 0; p < g->npages; p++)
        gmm_set(g->pending, p);
    g->st.mig_first_pages = g->npages;
    g->st.mig_pages += copy_pending(g, g->cfg.mig_budget);
    g->st.mig_rounds = 1;
    g->st.mig_start_at_ns = gmm_ns(g);
    g->mig = MIG_RUNNING;
    hyp_unlock(&g->lock);
    g->st.mig_ns += hyp_arch_now_ns() - t;
}

/* Harvest (the pages written since the last harvest join the pending
 * ones), then copy up to budget pending pages. */
static int mig_round(struct gmm *g, unsigned cpu, uint64_t budget)
{
    uint64_t t = hyp_arch_now_ns(), count = 0;
    hyp_lock(&g->lock);
    int rc = GMM_TIMED(
        g, cpu,
        mmp_pt_track_harvest(&g->pt, g->cfg.ipa_base, g->cfg.size, g->scratch, &count));
    if (rc) {
        hyp_printf("hyp: migration: harvest failed (%d)\n", rc);
        g->st.compare_diffs++; /* a lost harvest is a failed migration */
        hyp_unlock(&g->lock);
        return rc;
    }
    for (uint64_t w = 0; w < (g->npages + 63) / 64; w++)
        g->pending[w] |= g->scratch[w];
    g->st.mig_pages += copy_pending(g, budget);
    g->st.mig_rounds++;
    g->st.mig_dirty_sum += count;
    g->st.mig_dirty_last = count;
    if (count > g->st.mig_dirty_max)
        g->st.mig_dirty_max = count;
    hyp_unlock(&g->lock);
    g->st.mig_ns += hyp_arch_now_ns() - t;
    return 0;
}

void gmm_mig_round(struct gmm *g, unsigned cpu)
{
    mig_round(g, cpu, g->cfg.mig_budget);
}

uint64_t gmm_finish(struct gmm *g, unsigned cpu)
{
    if (g->mig != MIG_RUNNING)
        return 0;
    if (mig_round(g, cpu, ~0ull)) /* stop-and-copy: everything still pending */
        return g->st.compare_diffs;
    hyp_lock(&g->lock);
    for (uint64_t p = 0; p < g->npages; p++) {
        size_t d =
            hyp_diff_words(gmm_content(g, p), g->cfg.shadow + p * g->granule, g->granule);
        if (d == g->granule)
            continue;
        if (!g->st.compare_diffs)
            g->st.first_diff_ipa = g->cfg.ipa_base + p * g->granule + d;
        if (g->st.compare_diffs < 8)
            hyp_printf(
                "hyp: migration: page at IPA %lx differs from the shadow at +%lx%s\n",
                (unsigned long)(g->cfg.ipa_base + p * g->granule), (unsigned long)d,
                gmm_test(g->evicted, p) ? " (evicted)" : "");
        g->st.compare_diffs++;
    }
    g->st.compared = 1;
    g->mig = MIG_DONE;
    hyp_unlock(&g->lock);
    return g->st.compare_diffs;
}
