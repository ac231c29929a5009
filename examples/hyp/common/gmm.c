/* SPDX-License-Identifier: MIT */
/*
 * Guest memory manager: the table, lazy faults, the schedule of rounds,
 * teardown (gmm.h says what it does; gmm_migrate.c and gmm_evict.c hold
 * the two background jobs).
 */
#include "gmm.h"

#define RAM_ATTRS (MMP_PROT_READ | MMP_PROT_WRITE | MMP_PROT_EXEC | MMP_MEM_NORMAL_WB)
#define DEV_ATTRS (MMP_PROT_READ | MMP_PROT_WRITE | MMP_MEM_DEVICE)

int gmm_init(struct gmm *g, const struct gmm_config *cfg,
             const struct mmp_pt_config *ptcfg, const struct mmp_pt_ops *ops)
{
    memset(g, 0, sizeof(*g));
    g->cfg = *cfg;
    g->granule = ptcfg->granule;
    g->npages = cfg->size / ptcfg->granule;
    g->track_hw = (ptcfg->flags & MMP_PT_TRACK_HW) != 0;
    if (!cfg->size || cfg->size % GMM_BLOCK || cfg->ipa_base % GMM_BLOCK ||
        cfg->ram_pa % GMM_BLOCK || cfg->size / 4096 > GMM_MAX_PAGES)
        return -MMP_EINVAL;
    int rc = mmp_pt_init(&g->pt, ptcfg, ops);
    if (rc == 0)
        rc = mmp_pt_info(&g->pt, &g->info);
    return rc;
}

int gmm_map_device(struct gmm *g, uint64_t ipa, uint64_t pa, uint64_t size)
{
    uint64_t m = g->granule - 1;
    uint64_t end = (ipa + size + m) & ~m;
    /* Round out to the granule: a 64 KiB stage-2 page passes through the
     * neighbours of a 4 KiB device too (QEMU virt keeps them 64 KiB apart). */
    pa -= ipa & m;
    ipa &= ~m;
    hyp_lock(&g->lock);
    int rc = GMM_TIMED(g, 0, mmp_pt_map(&g->pt, ipa, pa, end - ipa, DEV_ATTRS, 0));
    hyp_unlock(&g->lock);
    return rc;
}

void gmm_start(struct gmm *g)
{
    g->t0 = hyp_arch_now_ns();
}

/* True when no page of the 2 MiB region of page p is resident or evicted. */
static int region_free(const struct gmm *g, uint64_t first, uint64_t n)
{
    for (uint64_t p = first; p < first + n; p++)
        if (gmm_test(g->resident, p) || gmm_test(g->evicted, p))
            return 0;
    return 1;
}

/* Software dirty tracking write-protects what track_start saw; a page
 * mapped later would be writable and untracked, so it is put under
 * tracking at once (the shadow already holds its content). */
static int track_new(struct gmm *g, unsigned cpu, uint64_t ipa, uint64_t size)
{
    if (g->mig != MIG_RUNNING || g->track_hw)
        return 0;
    return GMM_TIMED(g, cpu, mmp_pt_track_start(&g->pt, ipa, size, NULL));
}

/* A translation fault on guest RAM: map it, restoring an evicted page. */
static int map_fault(struct gmm *g, unsigned cpu, uint64_t ipa)
{
    struct gmm_cpu *c = &g->cpu[cpu];
    uint64_t p = (ipa - g->cfg.ipa_base) / g->granule;
    uint64_t off = p * g->granule;
    uint64_t at = g->cfg.ipa_base + off, size = g->granule;
    int rc;
    hyp_lock(&g->lock);
    if (gmm_test(g->resident, p)) {
        /* Another vCPU mapped it first, or a split of its block was in its
         * break-before-make window: the access will now succeed. */
        struct mmp_pt_leaf leaf;
        rc = GMM_TIMED(g, cpu, mmp_pt_lookup(&g->pt, ipa, &leaf));
        c->spurious++;
        hyp_unlock(&g->lock);
        return rc == 0 ? GMM_RETRY : rc;
    }
    /*
     * Under dirty tracking no map folds: a folded run or block carries
     * the OR of its pages' state, so one write reports all of its pages
     * and the next copy grows with the leaf (as for new blocks, below).
     * hyp.fold=1 lets maps fold: the compare stays exact, the copies grow.
     */
    uint32_t mflags = g->mig == MIG_RUNNING && !g->cfg.fold_tracked
                          ? MMP_MAP_NO_CONT | MMP_MAP_NO_BLOCK
                          : 0;
    if (gmm_test(g->evicted, p)) {
        hyp_copy_words(g->cfg.ram + off, g->cfg.swap + off, g->granule);
        rc = GMM_TIMED(
            g, cpu, mmp_pt_map(&g->pt, at, g->cfg.ram_pa + off, size, RAM_ATTRS, mflags));
        if (rc == 0) {
            gmm_clr(g->evicted, p);
            gmm_set(g->resident, p);
            c->refaults++;
        }
    } else {
        uint64_t per = GMM_BLOCK / g->granule, first = p & ~(per - 1);
        /* No new blocks under dirty tracking: a harvest reports a dirty
         * block as all its pages (and software tracking would split it at
         * once), so the copy would grow 512-fold for one write. */
        int block = g->cfg.blocks && g->mig != MIG_RUNNING && region_free(g, first, per);
        if (block) {
            at = g->cfg.ipa_base + first * g->granule;
            size = GMM_BLOCK;
        }
        rc = GMM_TIMED(g, cpu,
                       mmp_pt_map(&g->pt, at, g->cfg.ram_pa + (at - g->cfg.ipa_base),
                                  size, RAM_ATTRS, mflags));
        if (rc == 0) {
            for (uint64_t q = (at - g->cfg.ipa_base) / g->granule;
                 q < (at - g->cfg.ipa_base + size) / g->granule; q++)
                gmm_set(g->resident, q);
            c->block_maps += block;
        }
    }
    if (rc == 0) {
        c->maps++;
        rc = track_new(g, cpu, at, size);
    }
    hyp_unlock(&g->lock);
    return rc;
}

int gmm_fault(struct gmm *g, unsigned cpu, uint64_t ipa, enum gmm_access kind, int write)
{
    if (ipa < g->cfg.ipa_base || ipa - g->cfg.ipa_base >= g->cfg.size)
        return -MMP_ENOENT;
    struct gmm_cpu *c = &g->cpu[cpu];
    if (AO_fetch_and_add1(&g->in_fault) != 0)
        c->concurrent++;
    int rc;
    switch (kind) {
    case GMM_TRANSLATION:
        rc = map_fault(g, cpu, ipa);
        break;
    case GMM_ACCESS_FLAG:
        /* No lock: one compare-and-swap, safe beside a young scan. -ENOENT:
         * an eviction unmapped the page meanwhile; the retry refaults it. */
        rc = GMM_TIMED(g, cpu, mmp_pt_young_fault(&g->pt, ipa));
        c->young_faults++;
        rc = rc == 0 ? GMM_RETRY_FLUSH : rc == -MMP_ENOENT ? GMM_RETRY : rc;
        break;
    case GMM_PERMISSION:
        /* Guest RAM is mapped writable: a write fault is dirty tracking. */
        rc = write ? GMM_TIMED(g, cpu, mmp_pt_dirty_fault(&g->pt, ipa)) : -MMP_EACCES;
        c->dirty_faults++;
        rc = rc == 0 ? GMM_RETRY_FLUSH : rc == -MMP_ENOENT ? GMM_RETRY : rc;
        break;
    default:
        rc = -MMP_EINVAL;
    }
    AO_fetch_and_sub1(&g->in_fault);
    return rc;
}

void gmm_tick(struct gmm *g, unsigned cpu)
{
    uint64_t now = gmm_ns(g);
    const struct gmm_config *k = &g->cfg;
    int mig_due = k->mig_round_ns &&
                  ((g->mig == MIG_IDLE && now >= k->mig_start_ns) ||
                   (g->mig == MIG_RUNNING && now - g->last_mig >= k->mig_round_ns));
    int evict_due = k->evict_round_ns && k->evict_batch && now >= k->evict_start_ns &&
                    now - g->last_evict >= k->evict_round_ns;
    if (!mig_due && !evict_due)
        return;
    /* One CPU does the rounds; the other goes back to its guest. */
    if (AO_test_and_set_acquire(&g->round_busy) != AO_TS_CLEAR)
        return;
    if (mig_due) {
        if (g->mig == MIG_IDLE)
            gmm_mig_begin(g, cpu);
        else if (g->mig == MIG_RUNNING)
            gmm_mig_round(g, cpu);
        g->last_mig = gmm_ns(g);
    }
    if (evict_due) {
        gmm_evict_round(g, cpu);
        g->last_evict = gmm_ns(g);
    }
    AO_CLEAR(&g->round_busy);
}

uint64_t gmm_teardown(struct gmm *g, unsigned cpu, const struct hyp_arena *arena)
{
    struct mmp_pt_usage u;
    struct mmp_pt_stats s;
    hyp_lock(&g->lock);
    if (g->mig == MIG_RUNNING || g->mig == MIG_DONE)
        GMM_TIMED(g, cpu, mmp_pt_track_stop(&g->pt, g->cfg.ipa_base, g->cfg.size));
    GMM_TIMED(g, cpu, mmp_pt_usage(&g->pt, &u));
    mmp_pt_stats(&g->pt, &s);
    g->st.tables_at_end = u.table_pages;
    g->st.table_bytes_peak = arena->peak_bytes;
    uint64_t before = arena->out_bytes;
    GMM_TIMED(g, cpu, (mmp_pt_fini(&g->pt), 0));
    g->st.leaked_bytes = arena->out_bytes;
    hyp_unlock(&g->lock);
    /* The walk, the engine's count and the arena must agree before the fini. */
    if (u.table_pages != s.table_pages || u.table_pages * g->granule != before)
        hyp_printf("hyp: table pages disagree: walk %lu, stats %lu, arena %lu bytes\n",
                   (unsigned long)u.table_pages, (unsigned long)s.table_pages,
                   (unsigned long)before);
    return g->st.leaked_bytes;
}
