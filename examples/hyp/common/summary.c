/* SPDX-License-Identifier: MIT */
/* The summary line and its JSON twin, from one list of fields. */
#include "summary.h"

struct field {
    const char *key;
    const char *str; /* NULL: the number */
    uint64_t num;
};

static int emit(char *buf, size_t cap, const struct field *f, size_t n, int json)
{
    size_t len = 0;
    for (size_t i = 0; i < n && len < cap; i++) {
        const char *sep = i ? (json ? "," : " ") : "";
        if (f[i].str)
            len +=
                hyp_snprintf(buf + len, cap - len, json ? "%s\"%s\":\"%s\"" : "%s%s=%s",
                             sep, f[i].key, f[i].str);
        else
            len += hyp_snprintf(buf + len, cap - len, json ? "%s\"%s\":%lu" : "%s%s=%lu",
                                sep, f[i].key, (unsigned long)f[i].num);
    }
    return len < cap;
}

static uint64_t ms(uint64_t ns)
{
    return (ns + 500000) / 1000000;
}

int hyp_summary(const struct hyp_run *r, const struct gmm *g)
{
    const struct gmm_stats *s = &g->st;
    struct gmm_cpu all = {0};
    for (unsigned i = 0; i < HYP_MAX_CPUS; i++) {
        const struct gmm_cpu *c = &g->cpu[i];
        all.maps += c->maps, all.block_maps += c->block_maps, all.refaults += c->refaults;
        all.spurious += c->spurious, all.dirty_faults += c->dirty_faults;
        all.young_faults += c->young_faults, all.concurrent += c->concurrent;
        all.mmp_calls += c->mmp_calls, all.mmp_ns += c->mmp_ns;
    }
    int ok = r->end && !memcmp(r->end, "system-off", 11) && s->compared &&
             !s->compare_diffs && !s->leaked_bytes && !r->arena_out;
    char granule[16], faults[48], conc[48];
    hyp_snprintf(granule, sizeof(granule), "%uK", g->granule / 1024);
    hyp_snprintf(faults, sizeof(faults), "%lu+%lu", (unsigned long)g->cpu[0].maps,
                 (unsigned long)g->cpu[1].maps);
    hyp_snprintf(conc, sizeof(conc), "%lu+%lu", (unsigned long)g->cpu[0].concurrent,
                 (unsigned long)g->cpu[1].concurrent);
    uint64_t later = s->mig_rounds > 1 ? s->mig_rounds - 1 : 1;
    const struct field f[] = {
        {"result", ok ? "PASS" : "FAIL", 0},
        {"arch", r->arch, 0},
        {"cpu", r->cpu_model, 0},
        {"granule", granule, 0},
        {"mode", r->mode, 0},
        {"tracking", g->track_hw ? "hw" : "sw", 0},
        {"vcpus", NULL, r->vcpus},
        {"end", r->end ? r->end : "none", 0},
        {"boot_to_init_ms", NULL, ms(r->boot_to_init_ns)},
        {"run_ms", NULL, ms(r->run_ns)},
        {"faults", NULL, all.maps},
        {"faults_per_vcpu", faults, 0},
        {"faults_per_s", NULL, r->run_ns ? all.maps * 1000000000ull / r->run_ns : 0},
        {"concurrent", NULL, all.concurrent},
        {"concurrent_per_vcpu", conc, 0},
        {"lock_waits", NULL, (uint64_t)g->lock.contended},
        {"block_maps", NULL, all.block_maps},
        {"spurious", NULL, all.spurious},
        {"dirty_faults", NULL, all.dirty_faults},
        {"young_faults", NULL, all.young_faults},
        {"table_pages_peak", NULL, s->table_bytes_peak / g->granule},
        {"table_pages_end", NULL, s->tables_at_end},
        {"leaked_table_bytes", NULL, s->leaked_bytes + r->arena_out},
        {"mig_rounds", NULL, s->mig_rounds},
        {"mig_pages_copied", NULL, s->mig_pages},
        {"mig_first_copy", NULL, s->mig_first_pages},
        {"mig_dirty_per_round", NULL, s->mig_dirty_sum / later},
        {"mig_dirty_max", NULL, s->mig_dirty_max},
        {"mig_dirty_final", NULL, s->mig_dirty_last},
        {"mig_ms", NULL, ms(s->mig_ns)},
        {"compare",
         !s->compared       ? "not-run"
         : s->compare_diffs ? "DIFFER"
                            : "exact",
         0},
        {"compare_diffs", NULL, s->compare_diffs},
        {"young_scans", NULL, s->young_scans},
        {"evictions", NULL, s->evictions},
        {"refaults", NULL, all.refaults},
        {"bad_ipa", NULL, r->bad_ipa},
        {"exits", NULL, r->exits[0] + r->exits[1]},
        {"mmport_calls", NULL, all.mmp_calls},
        {"mmport_ms", NULL, ms(all.mmp_ns)},
    };
    char buf[1536];
    if (emit(buf, sizeof(buf), f, HYP_ARRAY_SIZE(f), 0))
        hyp_printf("hyp-summary: %s\n", buf);
    if (emit(buf, sizeof(buf), f, HYP_ARRAY_SIZE(f), 1))
        hyp_printf("hyp-json: {%s}\n", buf);
    return ok;
}
