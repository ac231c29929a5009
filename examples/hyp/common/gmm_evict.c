/* SPDX-License-Identifier: MIT */
/*
 * Cold-page eviction. A round tests and clears the access flag of all
 * guest RAM (the pages found young were used since the last round), then
 * evicts up to evict_batch resident pages that were not, going round the
 * RAM from where the last round stopped: unmap (one lazy section, one
 * flush for the batch), then copy each to the swap area and zero it. The
 * guest's next access to such a page faults and gmm.c restores it.
 */
#include "gmm.h"

void gmm_evict_round(struct gmm *g, unsigned cpu)
{
    static uint64_t batch[256];
    uint64_t young = 0, n = 0, max = g->cfg.evict_batch;
    if (max > HYP_ARRAY_SIZE(batch))
        max = HYP_ARRAY_SIZE(batch);
    hyp_lock(&g->lock);
    int rc = GMM_TIMED(g, cpu,
                       mmp_pt_test_clear_young(&g->pt, g->cfg.ipa_base, g->cfg.size,
                                               g->scratch, &young));
    if (rc) {
        hyp_printf("hyp: eviction: test_clear_young failed (%d): eviction off\n", rc);
        g->cfg.evict_batch = 0;
        hyp_unlock(&g->lock);
        return;
    }
    g->st.young_scans++;
    g->st.evict_young_seen += young;
    GMM_TIMED(g, cpu, mmp_lazy_enter(&g->pt));
    for (uint64_t i = 0; i < g->npages && n < max; i++) {
        uint64_t p = (g->evict_cursor + i) % g->npages;
        if (!gmm_test(g->resident, p) || gmm_test(g->scratch, p))
            continue;
        rc = GMM_TIMED(
            g, cpu, mmp_pt_unmap(&g->pt, g->cfg.ipa_base + p * g->granule, g->granule));
        if (rc) { /* -ENOMEM splitting a block: keep the page */
            hyp_printf("hyp: eviction: unmap failed (%d)\n", rc);
            break;
        }
        gmm_clr(g->resident, p);
        batch[n++] = p;
        g->evict_cursor = p + 1;
    }
    /* The flush: no vCPU can reach the pages after this. */
    GMM_TIMED(g, cpu, mmp_lazy_leave(&g->pt));
    for (uint64_t i = 0; i < n; i++) {
        uint64_t off = batch[i] * g->granule;
        hyp_copy_words(g->cfg.swap + off, g->cfg.ram + off, g->granule);
        GMM_TIMED(g, cpu, mmp_clear(g->cfg.ram + off, g->granule, NULL));
        gmm_set(g->evicted, batch[i]);
        if (g->mig == MIG_RUNNING) /* the unmap took the page's dirty state with it */
            gmm_set(g->pending, batch[i]);
    }
    g->st.evictions += n;
    hyp_unlock(&g->lock);
}
