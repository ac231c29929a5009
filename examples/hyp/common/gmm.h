/* SPDX-License-Identifier: MIT */
/*
 * The guest memory manager of the reference hypervisor, on mmport: one
 * second-stage table (arm64 stage 2, x86 NPT/EPT) over guest RAM and the
 * passed-through devices, with
 * - lazy faults: guest RAM is mapped on the guest's first access, from any
 *   vCPU at once (table writes under one lock; the dirty and access-flag
 *   faults of software tracking take no lock), as single pages or as
 *   2 MiB leaves where the backing allows;
 * - pre-copy migration: dirty tracking over guest RAM, a full copy to a
 *   shadow area, rounds of harvest + copy while the guest runs, a final
 *   round when it stops, then a byte-for-byte compare of the shadow with
 *   what the guest sees;
 * - cold-page eviction: young scans (test and clear the access flag),
 *   cold pages copied to a swap area, zeroed and unmapped; a later access
 *   refaults them (restore, map);
 * - teardown: every table page back, counted.
 * All of it is architecture-neutral: the arch part decodes its exits into
 * gmm_fault() calls and supplies the table's ops (flush hooks).
 *
 * "Page" here is one granule of the table (4 KiB, or 64 KiB with an arm64
 * 64K granule). What the guest sees at a page ("its content") is the
 * backing page while it is resident, the swap copy while it is evicted.
 */
#ifndef HYP_COMMON_GMM_H
#define HYP_COMMON_GMM_H

#include <mmport/mmport.h>

#include "arena.h"
#include "hyp.h"

/** Largest guest RAM, in 4 KiB pages (sizes the static bitmaps): 1 GiB. */
#define GMM_MAX_PAGES (1u << 18)
#define GMM_WORDS (GMM_MAX_PAGES / 64)
/** The large leaf of the block fault mode. */
#define GMM_BLOCK (2ull << 20)

struct gmm_config {
    uint64_t ipa_base, size; /* guest RAM, guest-physical; size a multiple of GMM_BLOCK */
    uint8_t *ram;            /* its backing, as the hypervisor reaches it */
    uint64_t ram_pa;         /* the backing's physical address (the table's output) */
    uint8_t *shadow, *swap;  /* migration target and eviction store, size bytes each */
    int blocks;              /* fault mode: 2 MiB leaves where the backing allows */
    int fold_tracked; /* let maps fold runs and blocks under dirty tracking (gmm.c) */
    /* Schedule, in ns after gmm_start(); 0 round = never. */
    uint64_t mig_start_ns, mig_round_ns;
    uint64_t mig_budget; /* pages a round copies at most (the final one: all) */
    uint64_t evict_start_ns, evict_round_ns;
    unsigned evict_batch; /* pages evicted per round at most */
};

/** What a second-stage fault was (the arch decodes its syndrome). */
enum gmm_access {
    GMM_TRANSLATION, /* nothing mapped at the address */
    GMM_ACCESS_FLAG, /* arm64 access-flag fault: young tracking in software */
    GMM_PERMISSION,  /* a write to a write-protected page: dirty tracking in software */
};

/** gmm_fault() results besides negative errors. */
enum gmm_result {
    GMM_RETRY = 0,       /* fixed (or fixed by another vCPU): run the access again */
    GMM_RETRY_FLUSH = 1, /* fixed; invalidate this address on this CPU first (arm64:
                            a TLB may keep an entry that faulted) */
};

struct gmm_cpu {
    uint64_t maps,
        block_maps;    /* translation faults that mapped RAM (block_maps: 2 MiB) */
    uint64_t refaults; /* ... of them evicted pages restored */
    uint64_t spurious; /* found mapped already (another vCPU won) */
    uint64_t dirty_faults, young_faults;
    uint64_t concurrent;        /* faults entered while another vCPU was inside one */
    uint64_t mmp_calls, mmp_ns; /* time spent inside mmport calls */
};

struct gmm_stats {
    /* migration */
    uint64_t mig_rounds, mig_pages, mig_first_pages, mig_dirty_max, mig_dirty_last;
    uint64_t mig_dirty_sum; /* dirty pages over every round after the first */
    uint64_t mig_start_at_ns, mig_ns;
    uint64_t compare_diffs, first_diff_ipa;
    int compared;
    /* eviction */
    uint64_t young_scans, evictions, evict_young_seen;
    /* tables */
    uint64_t table_bytes_peak, tables_at_end, leaked_bytes;
};

struct gmm {
    struct gmm_config cfg;
    struct mmp_pt pt;
    struct mmp_pt_info info;
    uint32_t granule;
    uint64_t npages;
    int track_hw;
    struct hyp_lock lock;        /* every table writer call and the bitmaps below */
    volatile AO_t in_fault;      /* vCPUs inside gmm_fault() */
    volatile AO_TS_t round_busy; /* a CPU is doing a migration or eviction round */
    uint64_t t0;                 /* gmm_start() */
    enum { MIG_IDLE, MIG_RUNNING, MIG_DONE } mig;
    uint64_t last_mig, last_evict, evict_cursor, mig_cursor;
    struct gmm_cpu cpu[HYP_MAX_CPUS];
    struct gmm_stats st;
    uint64_t resident[GMM_WORDS]; /* mapped RAM pages */
    uint64_t evicted[GMM_WORDS];  /* content in swap, page unmapped and zeroed */
    uint64_t pending[GMM_WORDS];  /* to copy to the shadow (migration) */
    uint64_t scratch[GMM_WORDS];  /* harvest and young bitmaps */
};

/**
 * Create the second-stage table (@p ptcfg, @p ops: the arch's) for guest
 * RAM as @p cfg says. Returns 0 or a negative MMP_E* value (the table's,
 * or -MMP_EINVAL for a layout gmm cannot handle).
 */
int gmm_init(struct gmm *g, const struct gmm_config *cfg,
             const struct mmp_pt_config *ptcfg, const struct mmp_pt_ops *ops);
/** Map a passed-through device region (guest-physical @p ipa -> @p pa) at boot. */
int gmm_map_device(struct gmm *g, uint64_t ipa, uint64_t pa, uint64_t size);
/** The guest starts now: the schedule counts from here. */
void gmm_start(struct gmm *g);
/**
 * A second-stage fault of vCPU @p cpu at @p ipa. Returns enum gmm_result,
 * -MMP_ENOENT when @p ipa is not guest RAM (the arch decides: device
 * emulation, or a bad access), or another negative value when the fault
 * cannot be fixed (a real permission fault, table memory exhausted,
 * an inconsistency: the arch stops the guest with a message).
 */
int gmm_fault(struct gmm *g, unsigned cpu, uint64_t ipa, enum gmm_access kind, int write);
/** Called on exits: runs the migration and eviction rounds that are due. */
void gmm_tick(struct gmm *g, unsigned cpu);
/**
 * The guest has stopped (no vCPU runs): final harvest and copy, then the
 * compare of every page with the shadow. Returns the pages that differ.
 */
uint64_t gmm_finish(struct gmm *g, unsigned cpu);
/**
 * End tracking and free the table (its pages come from @p arena, which
 * nothing else uses); returns the table bytes not given back (0).
 */
uint64_t gmm_teardown(struct gmm *g, unsigned cpu, const struct hyp_arena *arena);

/* ---- internal, shared by gmm.c, gmm_migrate.c, gmm_evict.c ---- */

static inline int gmm_test(const uint64_t *bm, uint64_t p)
{
    return (bm[p / 64] >> (p % 64)) & 1;
}
static inline void gmm_set(uint64_t *bm, uint64_t p)
{
    bm[p / 64] |= 1ull << (p % 64);
}
static inline void gmm_clr(uint64_t *bm, uint64_t p)
{
    bm[p / 64] &= ~(1ull << (p % 64));
}
/** Where the guest's content of page @p p is now (backing or swap). */
static inline uint8_t *gmm_content(struct gmm *g, uint64_t p)
{
    return (gmm_test(g->evicted, p) ? g->cfg.swap : g->cfg.ram) + p * g->granule;
}
static inline uint64_t gmm_ns(const struct gmm *g)
{
    return hyp_arch_now_ns() - g->t0;
}
/* Account one mmport call of this CPU (time and count). */
#define GMM_TIMED(g, c, call)                                                            \
    ({                                                                                   \
        uint64_t t_ = hyp_arch_now_ns();                                                 \
        __typeof__(call) r_ = (call);                                                    \
        (g)->cpu[c].mmp_ns += hyp_arch_now_ns() - t_;                                    \
        (g)->cpu[c].mmp_calls++;                                                         \
        r_;                                                                              \
    })

void gmm_mig_begin(struct gmm *g, unsigned cpu);
void gmm_mig_round(struct gmm *g, unsigned cpu);
void gmm_evict_round(struct gmm *g, unsigned cpu);

#endif
