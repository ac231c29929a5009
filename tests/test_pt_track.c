/* SPDX-License-Identifier: MIT */
/*
 * Dirty logging and access tracking (include/mmport/track.h), every format,
 * software and hardware tracking: writes appear in the bitmap exactly once,
 * re-armed pages report again only after a new write, nothing outside the
 * range changes, split and re-fold keep every translation.
 */
#include "pt_track_harness.h"

/* One page's translation, as lookup reports it. */
struct tr {
    uint64_t pa;
    uint32_t attrs;
};

static void snap(struct mmp_pt *pt, uint64_t va, uint64_t n, uint64_t g, struct tr *out)
{
    for (uint64_t i = 0; i < n; i++) {
        struct mmp_pt_leaf l;
        if (mmp_pt_lookup(pt, va + i * g, &l)) {
            out[i].pa = ~0ull, out[i].attrs = 0;
            continue;
        }
        out[i].pa = l.pa + (va + i * g - l.va);
        out[i].attrs = l.attrs;
    }
}

static void same(const struct tr *a, const struct tr *b, uint64_t n, const char *name,
                 const char *when)
{
    for (uint64_t i = 0; i < n; i++)
        ck_assert_msg(a[i].pa == b[i].pa && a[i].attrs == b[i].attrs,
                      "%s: page %llu changed %s: pa %llx/%llx attrs %x/%x", name,
                      (unsigned long long)i, when, (unsigned long long)a[i].pa,
                      (unsigned long long)b[i].pa, a[i].attrs, b[i].attrs);
}

static int bit(const uint64_t *bm, uint64_t i)
{
    return (int)(bm[i >> 6] >> (i & 63) & 1);
}

static struct mmp_pt_config cfg_of(size_t c, int hw)
{
    struct mmp_pt_config k = pt_cfgs[c].c;
    if (hw)
        k.flags |= MMP_PT_TRACK_HW;
    return k;
}

/* fn on a fresh table of every format, software and (where the format can)
 * hardware tracking. */
static void each_cfg(void (*fn)(struct tenv *e, const struct mmp_pt_config *k, size_t c, int hw))
{
    for (size_t c = 0; c < NCFG; c++) {
        for (int hw = 0; hw < 2; hw++) {
            struct mmp_pt_config k = cfg_of(c, hw);
            if (hw && !cfg_hw_ok(&k))
                continue;
            struct tenv *e = tenv_new(&k);
            fn(e, &k, c, hw);
            tenv_free(e);
        }
    }
}

/*
 * Layout (blk = the smallest block): a guard block, two tracked blocks,
 * then a read-only page and a writable page outside the range. Writes
 * are drawn at random; each round's harvest must return exactly them.
 */
static void exactly_once(size_t c, int hw)
{
    struct mmp_pt_config k = cfg_of(c, hw);
    struct tenv *e = tenv_new(&k);
    struct mmp_pt *pt = &e->pt;
    struct mmp_pt_info inf;
    mmp_pt_info(pt, &inf);
    uint64_t g = inf.granule, blk = first_block(&inf);
    struct hwbits h = hw_bits(&k);
    const char *name = pt_cfgs[c].name;
    uint64_t va0 = 4 * blk, pa0 = 16 * blk, tsz = 2 * blk, np = tsz / g;
    ck_assert_int_eq(mmp_pt_map(pt, va0 - blk, pa0 - blk, 3 * blk, RW, 0), 0);
    ck_assert_int_eq(mmp_pt_map(pt, va0 + tsz, 0x1000000 * (g / 4096), g, RO, 0), 0);
    ck_assert_int_eq(mmp_pt_map(pt, va0 + tsz + g, 0x2000000 * (g / 4096), g, RW, 0), 0);
    uint64_t all = np + blk / g + 2, allva = va0 - blk;
    struct tr *before = calloc(all, sizeof *before), *now = calloc(all, sizeof *now);
    snap(pt, allva, all, g, before);
    struct mmp_pt_leaf guard0, l;
    ck_assert_int_eq(mmp_pt_lookup(pt, allva, &guard0), 0);
    struct mmp_pt_usage u0, u;
    mmp_pt_usage(pt, &u0);

    ck_assert_int_eq(mmp_pt_track_start(pt, va0, tsz, NULL), 0);
    snap(pt, allva, all, g, now);
    same(before, now, all, name, "by start");
    for (uint64_t i = 0; i < np; i += np / 8) {
        ck_assert_int_eq(mmp_pt_lookup(pt, va0 + i * g, &l), 0);
        ck_assert_msg(l.size == g, "%s: not split to the granule", name);
    }
    ck_assert_int_eq(mmp_pt_lookup(pt, allva, &l), 0);
    ck_assert_uint_eq(l.desc, guard0.desc); /* the guard block is untouched */
    ck_assert_uint_eq(l.size, blk);

    uint64_t *bm = calloc((np + 63) / 64 + 1, 8), cnt = 1;
    char *want = calloc(np, 1);
    ck_assert_int_eq(mmp_pt_track_harvest(pt, va0, tsz, bm, &cnt), 0);
    ck_assert_msg(cnt == 0, "%s: %llu pages dirty right after start", name,
                  (unsigned long long)cnt);
    uint64_t seed = 0x9e3779b97f4a7c15ull ^ c;
    for (int round = 0; round < 4; round++) {
        memset(want, 0, np);
        uint64_t nw = round == 3 ? 0 : 1 + rnd64(&seed) % 40, distinct = 0;
        for (uint64_t j = 0; j < nw; j++) {
            uint64_t i = rnd64(&seed) % np;
            guest_write(pt, hw, &h, va0 + i * g); /* repeats: still once */
            distinct += !want[i];
            want[i] = 1;
        }
        /* writes outside the range: never reported */
        guest_write(pt, hw, &h, va0 - g);
        guest_write(pt, hw, &h, va0 + tsz + g);
        int f0 = e->nflush;
        ck_assert_int_eq(mmp_pt_track_harvest(pt, va0, tsz, bm, &cnt), 0);
        /* re-armed pages are flushed before the harvest returns */
        for (uint64_t i = 0; i < np && e->nflush < 512; i++) {
            int covered = !want[i];
            for (int f = f0; f < e->nflush && !covered; f++)
                covered = (e->log[f].flags & MMP_FLUSH_ALL) ||
                          (e->log[f].va <= va0 + i * g &&
                           va0 + i * g - e->log[f].va < e->log[f].size);
            ck_assert_msg(covered, "%s: re-armed page %llu not flushed", name,
                          (unsigned long long)i);
        }
        ck_assert_msg(cnt == distinct, "%s round %d: %llu reported, %llu written", name, round,
                      (unsigned long long)cnt, (unsigned long long)distinct);
        for (uint64_t i = 0; i < np; i++)
            ck_assert_msg(bit(bm, i) == want[i], "%s round %d: page %llu reported %d, written %d",
                          name, round, (unsigned long long)i, bit(bm, i), want[i]);
        ck_assert_int_eq(mmp_pt_track_harvest(pt, va0, tsz, bm, &cnt), 0);
        ck_assert_msg(cnt == 0, "%s round %d: re-armed pages reported again", name, round);
    }
    /* a re-armed page reports again after a new write, and only then */
    for (int again = 0; again < 2; again++) {
        guest_write(pt, hw, &h, va0 + 5 * g);
        ck_assert_int_eq(mmp_pt_track_harvest(pt, va0, tsz, bm, &cnt), 0);
        ck_assert_msg(cnt == 1 && bit(bm, 5), "%s: re-written page not reported (pass %d)", name,
                      again);
        ck_assert_int_eq(mmp_pt_track_harvest(pt, va0, tsz, bm, &cnt), 0);
        ck_assert_uint_eq(cnt, 0);
    }
    /* a sub-range harvest sees only its part */
    guest_write(pt, hw, &h, va0);
    guest_write(pt, hw, &h, va0 + tsz - g);
    ck_assert_int_eq(mmp_pt_track_harvest(pt, va0 + g, tsz - g, bm, &cnt), 0);
    ck_assert_uint_eq(cnt, 1);
    ck_assert(bit(bm, np - 2));
    ck_assert_int_eq(mmp_pt_track_harvest(pt, va0, g, bm, &cnt), 0);
    ck_assert_uint_eq(cnt, 1);
    if (!hw) /* a real permission fault stays one */
        ck_assert_int_eq(mmp_pt_dirty_fault(pt, va0 + tsz), -MMP_EACCES);
    ck_assert_int_eq(mmp_pt_dirty_fault(pt, va0 + 8 * blk), -MMP_ENOENT);
    snap(pt, allva, all, g, now);
    same(before, now, all, name, "by harvests");

    ck_assert_int_eq(mmp_pt_track_stop(pt, va0, tsz), 0);
    snap(pt, allva, all, g, now);
    same(before, now, all, name, "by stop");
    mmp_pt_usage(pt, &u);
    ck_assert_msg(u.blocks == u0.blocks && u.pages == u0.pages && u.cont_runs == u0.cont_runs,
                  "%s: not re-folded: blocks %llu/%llu pages %llu/%llu", name,
                  (unsigned long long)u.blocks, (unsigned long long)u0.blocks,
                  (unsigned long long)u.pages, (unsigned long long)u0.pages);
    uint64_t hwm = h.dirty_set | h.dirty_clr | h.young;
    ck_assert_int_eq(mmp_pt_lookup(pt, va0, &l), 0);
    ck_assert_msg(((l.desc ^ guard0.desc) & ~hwm & ~(((uint64_t)1 << 48) - blk)) == 0,
                  "%s: re-folded block %llx, original %llx", name, (unsigned long long)l.desc,
                  (unsigned long long)guard0.desc);
    if (!hw) /* untracked again: a write needs no fault call */
        ck_assert_uint_eq(l.desc & (1ull << 7), guard0.desc & (1ull << 7));
    free(bm);
    free(want);
    free(before);
    free(now);
    tenv_free(e);
}

START_TEST(track_exactly_once_sw)
{
    for (size_t c = 0; c < NCFG; c++)
        exactly_once(c, 0);
}
END_TEST

START_TEST(track_exactly_once_hw)
{
    for (size_t c = 0; c < NCFG; c++)
        if (cfg_hw_ok(&pt_cfgs[c].c))
            exactly_once(c, 1);
}
END_TEST

/* Map-time state with MMP_PT_TRACK_HW: A/D clear, arm64 AF clear and
 * writable leaves DBM-clean; the registers enable the hardware updates. */
START_TEST(track_hw_map_state)
{
    for (size_t c = 0; c < NCFG; c++) {
        struct mmp_pt_config k = cfg_of(c, 1);
        if (!cfg_hw_ok(&k)) {
            struct mmp_pt p;
            ck_assert_int_eq(mmp_pt_init(&p, &k, NULL), -MMP_EINVAL);
            continue;
        }
        struct tenv *e = tenv_new(&k);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        struct hwbits h = hw_bits(&k);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_map(&e->pt, 0, 0, inf.granule, RW, 0), 0);
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, 0, &l), 0);
        ck_assert_uint_eq(l.attrs & MMP_PROT_WRITE, MMP_PROT_WRITE);
        ck_assert_uint_eq(l.desc & (h.young | h.dirty_set), 0);
        if (h.dirty_clr) /* arm64 s1: AP[2] set (clean), DBM set */
            ck_assert_uint_eq(l.desc & (h.dirty_clr | 1ull << 51), h.dirty_clr | 1ull << 51);
        if (k.format == MMP_PT_ARM64_S1 || k.format == MMP_PT_ARM64_S2) {
            ck_assert(l.desc & (1ull << 51));
            struct mmp_pt_regs r;
            ck_assert_int_eq(mmp_pt_regs(&e->pt, 0, &r), 0);
            uint64_t ha = (k.format == MMP_PT_ARM64_S2 || (k.flags & MMP_PT_EL2)) ? 21 : 39;
            ck_assert_uint_eq(r.tcr >> ha & 3, 3); /* HA, HD */
            ck_assert(inf.features & MMP_PT_FEAT_HAFDBS);
        }
        tenv_free(e);
    }
}
END_TEST

static void young_one(struct tenv *e, const struct mmp_pt_config *k, size_t c, int hw)
{
    (void)c;
    struct mmp_pt_info inf;
    mmp_pt_info(&e->pt, &inf);
    struct hwbits h = hw_bits(k);
    uint64_t g = inf.granule, n = 64, bm[2], cnt = 0;
    ck_assert_int_eq(mmp_pt_map(&e->pt, 64 * g, 0, n * g, RW, MMP_MAP_NO_CONT), 0);
    int rc = mmp_pt_test_clear_young(&e->pt, 64 * g, n * g, bm, &cnt);
    if (k->format == MMP_PT_X86_EPT && !(k->flags & MMP_PT_EPT_AD)) {
        ck_assert_int_eq(rc, -MMP_ENOTSUP);
        ck_assert_int_eq(mmp_pt_young_fault(&e->pt, 64 * g), -MMP_ENOTSUP);
        return;
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(cnt, hw ? 0 : n); /* preset at map time without TRACK_HW */
    for (uint64_t i = 3; i < n; i += 7) {
        if (hw)
            hw_young(&e->pt, &h, (64 + i) * g);
        else
            ck_assert_int_eq(mmp_pt_young_fault(&e->pt, (64 + i) * g), 0);
    }
    ck_assert_int_eq(mmp_pt_test_clear_young(&e->pt, 64 * g, n * g, bm, &cnt), 0);
    ck_assert_uint_eq(cnt, (n - 3 + 6) / 7);
    for (uint64_t i = 0; i < n; i++)
        ck_assert_int_eq(bit(bm, i), i % 7 == 3);
    ck_assert_int_eq(mmp_pt_test_clear_young(&e->pt, 64 * g, n * g, bm, &cnt), 0);
    ck_assert_uint_eq(cnt, 0);
}

/* test_and_clear_young: A/AF set by hand (hardware) or by the fault call
 * appear once; EPT without A/D has none. */
START_TEST(track_young)
{
    each_cfg(young_one);
}
END_TEST

/* An arm64 contiguous run's state is the OR of its entries: the MMU may
 * have set the bit on any one of them. */
START_TEST(track_cont_run_or)
{
    for (size_t c = 0; c < NCFG; c++) {
        struct mmp_pt_config k = cfg_of(c, 1);
        if (pt_cfg_x86(c))
            continue;
        struct tenv *e = tenv_new(&k);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        struct hwbits h = hw_bits(&k);
        uint64_t g = inf.granule, run = run_bytes_for(inf.cont_sizes, g), n = run / g;
        ck_assert_uint_gt(n, 1);
        uint64_t *bm = calloc(2 * n / 64 + 2, 8), cnt;
        ck_assert_int_eq(mmp_pt_map(&e->pt, 2 * run, 4 * run, 2 * run, RW, 0), 0);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, 2 * run, &l), 0);
        ck_assert_uint_eq(l.kind, MMP_LEAF_CONT);
        hw_write(&e->pt, &h, 2 * run + 5 * g); /* entry 5 of the first run */
        /* harvest half of the first run: its pages there all report, and
         * nothing is re-armed (the state may stand for the other half) */
        ck_assert_int_eq(mmp_pt_track_harvest(&e->pt, 2 * run, run / 2, bm, &cnt), 0);
        ck_assert_uint_eq(cnt, n / 2);
        ck_assert_int_eq(mmp_pt_track_harvest(&e->pt, 2 * run, 2 * run, bm, &cnt), 0);
        ck_assert_uint_eq(cnt, n);
        for (uint64_t i = 0; i < 2 * n; i++)
            ck_assert_int_eq(bit(bm, i), i < n);
        ck_assert_int_eq(mmp_pt_track_harvest(&e->pt, 2 * run, 2 * run, bm, &cnt), 0);
        ck_assert_uint_eq(cnt, 0); /* a pass over the whole run re-armed it */
        hw_write(&e->pt, &h, 3 * run + (n - 1) * g);
        ck_assert_int_eq(mmp_pt_track_harvest(&e->pt, 2 * run, 2 * run, bm, &cnt), 0);
        ck_assert_uint_eq(cnt, n);
        for (uint64_t i = 0; i < 2 * n; i++)
            ck_assert_int_eq(bit(bm, i), i >= n);
        /* young alike: every page of the run */
        ck_assert_int_eq(mmp_pt_test_clear_young(&e->pt, 2 * run, 2 * run, bm, &cnt), 0);
        ck_assert_uint_eq(cnt, 2 * n);
        hw_young(&e->pt, &h, 2 * run + g);
        ck_assert_int_eq(mmp_pt_test_clear_young(&e->pt, 2 * run, 2 * run, bm, &cnt), 0);
        ck_assert_uint_eq(cnt, n);
        free(bm);
        tenv_free(e);
    }
}
END_TEST

/*
 * Randomized against a model: a window of holes, read-only pages, writable
 * pages and (arm64) contiguous runs, tracking started on a random part of
 * it, then rounds of random writes and harvests of random sub-ranges
 * (unaligned ends, holes and read-only entries beside the written ones).
 * The model keeps a dirty flag per descriptor: a harvest must report
 * exactly the pages of [h0, h1) whose descriptor - or, in a run, any
 * descriptor of the run - was written since it was last re-armed, re-arm
 * only the descriptors in [h0, h1) (none of a run the range cuts), and
 * change no descriptor outside it.
 * Software tracking tracks what start armed; hardware tracking every
 * writable leaf from map time on.
 */
enum { M_HOLE, M_RO, M_RW };

static void model_one(struct tenv *e, const struct mmp_pt_config *k, size_t c, int hw)
{
    struct mmp_pt *pt = &e->pt;
    struct mmp_pt_info inf;
    mmp_pt_info(pt, &inf);
    const char *name = pt_cfgs[c].name;
    struct hwbits h = hw_bits(k);
    enum { N = 512 };
    uint64_t g = inf.granule, rb = run_bytes_for(inf.cont_sizes, g), R = rb ? rb / g : 16;
    /* inside no block-aligned block: leaves are pages and runs */
    uint64_t va0 = first_block(&inf) + 128 * g, pa0 = 1ull << 32;
    uint64_t seed = 0x6a09e667f3bcc908ull ^ (c * 2 + (uint64_t)hw);
    uint8_t kind[N], trk[N], dirty[N], inrun[N];
    uint64_t run0[N], desc[N + 2];
    for (uint64_t p0 = 0; p0 < N; p0 += R) {
        uint64_t r = rnd64(&seed) % 5;
        for (uint64_t p = p0; p < p0 + R; p++)
            kind[p] = r == 0 ? M_HOLE : r == 1 ? M_RO : r <= 3 ? M_RW : (uint8_t)(rnd64(&seed) % 3);
        if (r >= 1 && r <= 3) /* a whole segment: a run where the format has them */
            ck_assert_int_eq(mmp_pt_map(pt, va0 + p0 * g, pa0 + p0 * g, R * g, r == 1 ? RO : RW,
                                        r == 3 ? MMP_MAP_NO_CONT : 0),
                             0);
        for (uint64_t p = p0; r == 4 && p < p0 + R; p++)
            if (kind[p] != M_HOLE)
                ck_assert_int_eq(mmp_pt_map(pt, va0 + p * g, pa0 + p * g, g,
                                            kind[p] == M_RO ? RO : RW, MMP_MAP_NO_CONT),
                                 0);
    }
    uint64_t s0 = rnd64(&seed) % (N / 2), s1 = N / 2 + rnd64(&seed) % (N / 2) + 1;
    struct tr *before = calloc(N, sizeof *before), *now = calloc(N, sizeof *now);
    snap(pt, va0, N, g, before);
    ck_assert_int_eq(mmp_pt_track_start(pt, va0 + s0 * g, (s1 - s0) * g, NULL), 0);
    snap(pt, va0, N, g, now);
    same(before, now, N, name, "by start");
    for (uint64_t p = 0; p < N; p++) {
        struct mmp_pt_leaf l;
        inrun[p] = kind[p] != M_HOLE && mmp_pt_lookup(pt, va0 + p * g, &l) == 0 &&
                   l.kind == MMP_LEAF_CONT;
        run0[p] = inrun[p] ? (((va0 + p * g) & ~(rb - 1)) - va0) / g : p;
        ck_assert_msg(!inrun[p] || p < s0 || p >= s1, "%s: a run left in the started range",
                      name);
        trk[p] = kind[p] == M_RW && (hw || (p >= s0 && p < s1));
        dirty[p] = 0;
    }
    uint64_t bm[N / 64 + 1], cnt;
    for (int round = 0; round < 24; round++) {
        for (uint64_t j = rnd64(&seed) % 48; j > 0; j--) {
            uint64_t p = rnd64(&seed) % N;
            if (!trk[p])
                continue;
            guest_write(pt, hw, &h, va0 + p * g);
            dirty[p] = 1;
        }
        uint64_t h0 = rnd64(&seed) % N, h1 = h0 + 1 + rnd64(&seed) % (N - h0);
        if (round % 6 == 5)
            h0 = 0, h1 = N;
        for (uint64_t p = 0; p < N + 2; p++) {
            struct mmp_pt_leaf l;
            uint64_t va = p < N ? va0 + p * g : p == N ? va0 - g : va0 + N * g;
            desc[p] = mmp_pt_lookup(pt, va, &l) == 0 ? l.desc : 0;
        }
        memset(bm, 0xa5, sizeof bm);
        ck_assert_int_eq(mmp_pt_track_harvest(pt, va0 + h0 * g, (h1 - h0) * g, bm, &cnt), 0);
        uint64_t want = 0;
        for (uint64_t p = h0; p < h1; p++) {
            int d = dirty[p];
            for (uint64_t q = run0[p]; inrun[p] && q < run0[p] + R; q++)
                d |= dirty[q]; /* a run: the OR of its entries */
            want += (uint64_t)d;
            ck_assert_msg(bit(bm, p - h0) == d,
                          "%s %s round %d [%llu, %llu): page %llu: %d, model %d", name,
                          hw ? "hw" : "sw", round, (unsigned long long)h0,
                          (unsigned long long)h1, (unsigned long long)p, bit(bm, p - h0), d);
        }
        ck_assert_uint_eq(cnt, want);
        /* re-armed: the descriptors in [h0, h1) but those of a run the
         * range cuts (its state stands for its pages outside too) */
        for (uint64_t p = h0; p < h1; p++)
            if (!inrun[p] || (run0[p] >= h0 && run0[p] + R <= h1))
                dirty[p] = 0;
        for (uint64_t p = 0; p < N + 2; p++) {
            struct mmp_pt_leaf l;
            uint64_t va = p < N ? va0 + p * g : p == N ? va0 - g : va0 + N * g;
            if (p >= h0 && p < h1)
                continue;
            ck_assert_msg((mmp_pt_lookup(pt, va, &l) == 0 ? l.desc : 0) == desc[p],
                          "%s: harvest of [%llu, %llu) changed page %llu's descriptor", name,
                          (unsigned long long)h0, (unsigned long long)h1, (unsigned long long)p);
        }
        snap(pt, va0, N, g, now);
        same(before, now, N, name, "by a harvest");
    }
    ck_assert_int_eq(mmp_pt_track_stop(pt, va0 + s0 * g, (s1 - s0) * g), 0);
    snap(pt, va0, N, g, now);
    same(before, now, N, name, "by stop");
    free(before);
    free(now);
}

START_TEST(track_model_rand)
{
    each_cfg(model_one);
}
END_TEST

static int cancel_after_one(void *arg, uint64_t done, uint64_t total)
{
    int *calls = arg;
    (void)done, (void)total;
    return ++*calls >= 1;
}

/* start works in chunks and stops, with progress, when yield says so. */
START_TEST(track_start_chunks_cancel)
{
    for (size_t c = 0; c < NCFG; c++) {
        struct tenv *e = tenv_new(&pt_cfgs[c].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&e->pt, &inf);
        uint64_t blk = first_block(&inf), done = 0;
        int calls = 0;
        ck_assert_int_eq(mmp_pt_map(&e->pt, 4 * blk, 8 * blk, 4 * blk, RW, 0), 0);
        struct mmp_track_opts o = {blk, cancel_after_one, &calls, &done};
        ck_assert_int_eq(mmp_pt_track_start(&e->pt, 4 * blk, 4 * blk, &o), -MMP_EINTR);
        ck_assert_uint_eq(done, blk);
        ck_assert_int_eq(calls, 1);
        struct mmp_pt_leaf l;
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, 4 * blk, &l), 0);
        ck_assert_uint_eq(l.size, inf.granule);
        ck_assert_int_eq(mmp_pt_lookup(&e->pt, 5 * blk, &l), 0);
        ck_assert_uint_eq(l.size, blk); /* the rest not touched */
        o.chunk = inf.granule + 1;
        ck_assert_int_eq(mmp_pt_track_start(&e->pt, 4 * blk, 4 * blk, &o), -MMP_EINVAL);
        uint64_t bm[1];
        ck_assert_int_eq(mmp_pt_track_harvest(&e->pt, 4 * blk, 4 * blk, NULL, NULL),
                         -MMP_EINVAL);
        ck_assert_int_eq(mmp_pt_track_harvest(&e->pt, 4 * blk + 1, inf.granule, bm, NULL),
                         -MMP_EINVAL);
        ck_assert_int_eq(mmp_pt_track_harvest(NULL, 0, inf.granule, bm, NULL), -MMP_EINVAL);
        tenv_free(e);
    }
}
END_TEST

/* start and harvest flush before they return, inside a lazy section too:
 * a deferred flush would let writes through stale writable (or D = 1) TLB
 * entries go unrecorded. */
static int flushed(const struct tenv *e, int from, uint64_t va, uint64_t size)
{
    for (int f = from; f < e->nflush && f < 512; f++)
        if ((e->log[f].flags & MMP_FLUSH_ALL) ||
            (e->log[f].va <= va && va + size - e->log[f].va <= e->log[f].size))
            return 1;
    return 0;
}

static void lazy_one(struct tenv *e, const struct mmp_pt_config *k, size_t c, int hw)
{
    (void)k;
    struct mmp_pt_info inf;
    mmp_pt_info(&e->pt, &inf);
    uint64_t g = inf.granule, va = 32 * g, bm[1], cnt;
    ck_assert_int_eq(mmp_pt_map(&e->pt, va, 0, 16 * g, RW, MMP_MAP_NO_CONT), 0);
    ck_assert_int_eq(mmp_lazy_enter(&e->pt), 0);
    int f0 = e->nflush;
    ck_assert_int_eq(mmp_pt_track_start(&e->pt, va, 16 * g, NULL), 0);
    if (!hw) /* hardware: nothing was dirty, nothing re-armed */
        ck_assert_msg(flushed(e, f0, va, 16 * g), "%s: start left its flush to the lazy section",
                      pt_cfgs[c].name);
    ck_assert_int_eq(mmp_pt_dirty_fault(&e->pt, va + 3 * g), 0);
    f0 = e->nflush;
    ck_assert_int_eq(mmp_pt_track_harvest(&e->pt, va, 16 * g, bm, &cnt), 0);
    ck_assert_uint_eq(cnt, 1);
    ck_assert_msg(flushed(e, f0, va + 3 * g, g), "%s: harvest left its flush to the lazy section",
                  pt_cfgs[c].name);
    ck_assert_int_eq(mmp_lazy_leave(&e->pt), 0);
}

START_TEST(track_flush_in_lazy)
{
    each_cfg(lazy_one);
}
END_TEST

Suite *mmp_suite_pt_track(void)
{
    Suite *s = suite_create("pt_track");
    MMP_ADD(s, track_exactly_once_sw);
    MMP_ADD(s, track_exactly_once_hw);
    MMP_ADD(s, track_hw_map_state);
    MMP_ADD(s, track_young);
    MMP_ADD(s, track_cont_run_or);
    MMP_ADD(s, track_model_rand);
    MMP_ADD(s, track_start_chunks_cancel);
    MMP_ADD(s, track_flush_in_lazy);
    return s;
}
