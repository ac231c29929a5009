/* SPDX-License-Identifier: MIT */
/*
 * Randomized differential test: random map / map-replace / unmap / protect
 * calls against a page-granular reference model. After every step each
 * page translates as the model says, contiguous runs keep their rules,
 * table pages in use equal those a walk finds and the allocator's count,
 * and no empty table is left.
 */
#include "pt_harness.h"

/*
 * The 52-bit layouts, with output addresses placed so that mappings cross
 * the first address whose bits leave the descriptor's in-place field
 * (2^50 for FEAT_LPA2, OA[51:50] in bits 9:8; 2^48 for FEAT_LPA, OA[51:48]
 * in bits 15:12) and reach up to 2^52.
 */
static const struct rcfg {
    struct tcfg t;
    uint64_t pa_cross; /* the output window straddles this address */
} cfgs52[] = {
    {{"arm64-4k-lpa2-52", {MMP_PT_ARM64_S1, 4096, 52, 52, 0, 0, 0, 0}}, 1ull << 50},
    {{"arm64-4k-lpa2-48", {MMP_PT_ARM64_S1, 4096, 48, 52, 0, 0, 0, 0}}, 1ull << 51},
    {{"arm64-16k-lpa2-52", {MMP_PT_ARM64_S1, 16384, 52, 52, 0, 0, 0, 0}}, 1ull << 50},
    {{"arm64-64k-lpa-52", {MMP_PT_ARM64_S1, 65536, 52, 52, 0, 0, 0, 0}}, 1ull << 48},
    {{"arm64-s2-4k-lpa2-52", {MMP_PT_ARM64_S2, 4096, 52, 52, 0, 0, 0, 0}}, 3ull << 50},
    {{"arm64-s2-16k-lpa2-44", {MMP_PT_ARM64_S2, 16384, 44, 52, 0, 0, 0, 0}}, 1ull << 50},
    {{"arm64-s2-64k-lpa-52", {MMP_PT_ARM64_S2, 65536, 52, 52, MMP_PT_S2FWB, 0, 0, 0}}, 1ull << 49},
};

static const uint32_t attrs_pool[] = {RW, RO, RW | MMP_MEM_DEVICE, RO | MMP_PROT_EXEC,
                                      RW | MMP_MEM_NORMAL_NC};
/* EPT with mode-based execute control and execute-only: bit 10 alone,
 * with bit 2, and without read. */
static const uint32_t attrs_mbec[] = {RW | MMP_PROT_UEXEC, RO | MMP_PROT_EXEC | MMP_PROT_UEXEC,
                                      MMP_PROT_UEXEC | MMP_MEM_WC, RO | MMP_PROT_EXEC,
                                      MMP_PROT_EXEC | MMP_PROT_UEXEC};
static const struct tcfg cfg_mbec = {
    "x86-ept-mbec-xo", {MMP_PT_X86_EPT, 4096, 48, 0, MMP_PT_EPT_MBEC | MMP_PT_EPT_XO, 0, 0, 0}};

/* pa_cross 0: output addresses near the input window, as before; pool: 5
 * attribute words. */
static void differential(const struct tcfg *cfg, uint64_t pa_cross, int steps, uint64_t seed,
                         const uint32_t *pool)
{
    struct tenv *e = tenv_new(&cfg->c);
    struct mmp_pt_info inf;
    mmp_pt_info(&e->pt, &inf);
    uint64_t G = inf.granule;
    uint64_t blk = first_block(&inf);
    uint64_t run = run_bytes_for(inf.cont_sizes, G);
    /* window: 4 of the smallest blocks, but at most 8192 pages */
    uint64_t W = blk * 4;
    if (W / G > 8192)
        W = 8192 * G;
    uint64_t n = W / G, base = blk * 4;
    struct mpage *m = calloc(n, sizeof *m);
    for (int step = 0; step < steps; step++) {
        uint64_t r = rnd64(&seed);
        int op = (int)(r % 10);
        /* sizes: a page, a few pages, a run, a block, or anything */
        uint64_t pages;
        switch (rnd64(&seed) % 5) {
        case 0: pages = 1; break;
        case 1: pages = 1 + rnd64(&seed) % 8; break;
        case 2: pages = run ? run / G + (rnd64(&seed) % 3) - 1 : 16; break;
        case 3: pages = blk / G; break;
        default: pages = 1 + rnd64(&seed) % (n / 2); break;
        }
        if (pages == 0)
            pages = 1;
        if (pages > n)
            pages = n;
        uint64_t first = rnd64(&seed) % (n - pages + 1);
        if (rnd64(&seed) % 3 == 0) { /* align the start to the size class */
            uint64_t al = pages >= blk / G ? blk / G : run ? run / G : 1;
            first -= first % al;
        }
        uint64_t va = base + first * G;
        uint32_t attrs = pool[rnd64(&seed) % 5];
        uint64_t pa = (rnd64(&seed) % 2) ? va + blk * 16 : (rnd64(&seed) % 4096) * G;
        if (pa_cross)
            pa = pa_cross - W + pa % (2 * W); /* blk-aligned: still block-sized leaves */
        int rc, want = 0;
        if (op < 5) { /* map, sometimes replacing */
            int replace = op == 4;
            int any = 0;
            for (uint64_t i = 0; i < pages; i++)
                any |= m[first + i].valid;
            want = any && !replace ? -MMP_EEXIST : 0;
            rc = mmp_pt_map(&e->pt, va, pa, pages * G, attrs, replace ? MMP_MAP_REPLACE : 0);
            if (!want)
                model_set(m, first, pages, pa, G, attrs, 1);
        } else if (op < 8) {
            rc = mmp_pt_unmap(&e->pt, va, pages * G);
            model_set(m, first, pages, 0, G, 0, 0);
        } else {
            rc = mmp_pt_protect(&e->pt, va, pages * G, attrs);
            for (uint64_t i = 0; i < pages; i++)
                if (m[first + i].valid)
                    m[first + i].attrs = attrs;
        }
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s step %d op %d va %#llx pages %llu pa %#llx attrs %#x",
                 cfg->name, step, op, (unsigned long long)va, (unsigned long long)pages,
                 (unsigned long long)pa, attrs);
        ck_assert_msg(rc == want, "%s: rc %d want %d", ctx, rc, want);
        check_model(e, m, base, n, ctx);
    }
    /* Clearing everything leaves the root alone. */
    ck_assert_int_eq(mmp_pt_unmap(&e->pt, base, W), 0);
    ck_assert_int_eq(e->live, 1);
    free(m);
    tenv_free(e);
}

START_TEST(differential_vs_model)
{
    int steps = mmp_test_slow() ? 150 : 3000;
    for (size_t c = 0; c < NCFG; c++)
        differential(&pt_cfgs[c], 0, steps, 0x9e3779b97f4a7c15ull ^ (c * 0x1234567), attrs_pool);
    differential(&cfg_mbec, 0, steps, 0x51ed27061a3b4c5dull, attrs_mbec);
}
END_TEST

START_TEST(differential_52bit_output)
{
    int steps = mmp_test_slow() ? 150 : 3000;
    for (size_t c = 0; c < sizeof cfgs52 / sizeof cfgs52[0]; c++)
        differential(&cfgs52[c].t, cfgs52[c].pa_cross, steps, 0x2545f4914f6cdd1dull ^ c,
                     attrs_pool);
}
END_TEST

Suite *mmp_suite_pt_rand(void)
{
    Suite *s = suite_create("pt_rand");
    MMP_ADD(s, differential_vs_model);
    MMP_ADD(s, differential_52bit_output);
    return s;
}
