/* SPDX-License-Identifier: MIT */
/*
 * The memory manager's schedule. CPU 1 waits for the guest to start, then
 * (with migration on) copies all of guest RAM to the shadow and runs a
 * harvest-and-copy round every ROUND_US, and (with eviction on) an
 * eviction pass every EVICT_EVERY rounds, until CPU 0 says the guest
 * stopped. CPU 0 then makes the final round itself (the guest is stopped:
 * nothing can dirty a page any more) and compares.
 */
#include "mm.h"

#include "svm.h"

#define ROUND_US 100000ull /* 100 ms */
#define EVICT_EVERY 2
#define EVICT_BATCH 64

static struct mm_opts opts;
static volatile AO_t go, stop, done;
static struct mm_result res;

int mm_start(const struct mm_opts *o)
{
    opts = *o;
    if (opts.mig && mig_start(opts.shadow))
        return -1;
    AO_store_release(&go, 1);
    return 0;
}

static void wait_us(uint64_t us)
{
    uint64_t t0 = hv_now_us();
    while (hv_now_us() - t0 < us && !AO_load_acquire(&stop))
        cpu_relax();
}

void mm_cpu1(void)
{
    while (!AO_load_acquire(&go))
        cpu_relax();
    uint64_t busy = 0, t;
    if (opts.mig) {
        t = rdtsc();
        res.first_copy_pages = mig_copy_all();
        busy += rdtsc() - t;
    }
    for (uint64_t n = 1; !AO_load_acquire(&stop); n++) {
        wait_us(ROUND_US);
        if (AO_load_acquire(&stop))
            break;
        vcpu_tick();
        t = rdtsc();
        if (opts.mig) {
            uint64_t pages = mig_round(1);
            if (res.rounds < MIG_ROUND_LOG)
                res.round_pages[res.rounds] = pages;
            res.rounds++;
            res.pages_copied += pages;
        }
        if (opts.evict && n % EVICT_EVERY == 0) {
            uint64_t young, cold;
            evict_pass(EVICT_BATCH, opts.evict_young, &young, &cold);
            res.evict_passes++;
            res.young_pages += young;
            res.cold_seen += cold;
        }
        busy += rdtsc() - t;
    }
    res.cpu1_busy_tsc = busy;
    AO_store_release(&done, 1);
}

void mm_finish(struct mm_result *r)
{
    AO_store_release(&stop, 1);
    uint64_t t0 = hv_now_us();
    while (!AO_load_acquire(&done))
        if (hv_now_us() - t0 > 30000000) {
            hv_printf("hyp: FAIL: CPU 1 did not finish its pass within 30 s\n");
            break;
        }
    res.compare_ok = 1;
    if (opts.mig) {
        res.final_pages = mig_round(0);
        res.pages_copied += res.final_pages;
        res.diff_pages = mig_compare();
        res.compare_ok = res.diff_pages == 0;
    }
    *r = res;
}

static uint64_t ms(uint64_t tsc)
{
    return hv_tsc_to_us(tsc) / 1000;
}

void mm_report(int powered_off, const char *stop_name, const struct mm_result *r,
               uint64_t leaked, uint64_t scrub_tsc)
{
    const struct vcpu_stats *v = &vcpu_st;
    const struct gm_stats *s = &gm.st;
    uint64_t run_us = hv_tsc_to_us(v->t_stop - v->t_start);
    uint64_t init_ms =
        v->t_doorbell[DOORBELL_INIT] ? ms(v->t_doorbell[DOORBELL_INIT] - v->t_start) : 0;
    const char *guest = v->t_doorbell[DOORBELL_FAIL] ? "FAIL"
                        : v->t_doorbell[DOORBELL_OK] ? "OK"
                                                     : "none";
    const char *cmp = !opts.mig ? "off" : r->compare_ok ? "OK" : "FAIL";
    uint64_t fps = run_us ? s->faults * 1000000 / run_us : 0;
    char rounds[MIG_ROUND_LOG * 8] = "";
    size_t n = 0;
    for (uint64_t i = 0; i < r->rounds && i < MIG_ROUND_LOG && n + 12 < sizeof rounds;
         i++)
        n += (size_t)hv_snprintf(rounds + n, sizeof rounds - n, "%s%lu", i ? "," : "",
                                 r->round_pages[i]);
    hv_printf(
        "hyp: summary: stop=%s guest=%s boot_to_init_ms=%lu run_ms=%lu exits=%lu "
        "npf=%lu faults=%lu faults_concurrent=%lu faults_4k=%lu faults_2m=%lu "
        "spurious=%lu faults_per_s=%lu "
        "table_pages_peak=%lu table_pages_leaked=%lu mig_rounds=%lu mig_first_copy=%lu "
        "mig_pages=%lu mig_final=%lu mig_compare=%s mig_diff_pages=%lu evictions=%lu "
        "refaults=%lu nmi_kicks=%lu reinjected=%lu mmport_ms_cpu0=%lu mmport_ms_cpu1=%lu "
        "flush_wait_ms=%lu mmport_calls=%lu fault_us=%lu fault_lock_wait_ms=%lu "
        "scrub_ms=%lu\n",
        stop_name, guest, init_ms, run_us / 1000, v->exits, v->exits_npf, s->faults,
        s->faults_concurrent, s->maps_4k, s->maps_2m, s->spurious, fps, s->tables_peak,
        leaked, r->rounds, r->first_copy_pages, r->pages_copied, r->final_pages, cmp,
        r->diff_pages, s->evictions, s->refaults, v->kicks, v->reinjected,
        ms(s->mmp_tsc[0]), ms(s->mmp_tsc[1]), ms(v->flush_waits_tsc),
        s->mmp_calls[0] + s->mmp_calls[1],
        s->faults ? hv_tsc_to_us(s->fault_tsc) / s->faults : 0, ms(s->lock_wait_tsc[0]),
        ms(scrub_tsc));
    hv_printf(
        "hyp: json: {\"arch\":\"x86_64\",\"stop\":\"%s\",\"guest\":\"%s\","
        "\"powered_off\":%d,\"boot_to_init_ms\":%lu,\"run_ms\":%lu,\"exits\":%lu,"
        "\"faults\":{\"vcpu0\":%lu,\"map_4k\":%lu,\"map_2m\":%lu,\"spurious\":%lu,"
        "\"concurrent\":%lu,\"per_s\":%lu,\"avg_us\":%lu,\"lock_wait_ms\":%lu},"
        "\"table_pages\":{\"peak\":%lu,\"allocated\":%lu,\"freed\":%lu,\"leaked\":%lu},"
        "\"migration\":{\"rounds\":%lu,\"first_copy\":%lu,\"pages_copied\":%lu,"
        "\"final_pages\":%lu,\"round_pages\":[%s],\"compare\":\"%s\",\"diff_pages\":%lu},"
        "\"eviction\":{\"passes\":%lu,\"evictions\":%lu,\"refaults\":%lu},"
        "\"nmi_kicks\":%lu,\"reinjected\":%lu,\"mmport_ms\":{\"cpu0\":%lu,\"cpu1\":%lu,"
        "\"cpu1_flush_wait\":%lu},\"scrub_ms\":%lu}\n",
        stop_name, guest, powered_off, init_ms, run_us / 1000, v->exits, s->faults,
        s->maps_4k, s->maps_2m, s->spurious, s->faults_concurrent, fps,
        s->faults ? hv_tsc_to_us(s->fault_tsc) / s->faults : 0, ms(s->lock_wait_tsc[0]),
        s->tables_peak, s->tables_alloc, s->tables_freed, leaked, r->rounds,
        r->first_copy_pages, r->pages_copied, r->final_pages, rounds, cmp, r->diff_pages,
        r->evict_passes, s->evictions, s->refaults, v->kicks, v->reinjected,
        ms(s->mmp_tsc[0]), ms(s->mmp_tsc[1]), ms(v->flush_waits_tsc), ms(scrub_tsc));
}
