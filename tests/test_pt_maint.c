/* SPDX-License-Identifier: MIT */
/*
 * Cache maintenance of newly mapped memory (mmp_pt_ops::dcache_clean_poc,
 * icache_inval_pou): only where mmp_pt_info::maint asks for it, once per
 * map call for its whole output range, before the first entry is written
 * (lazy or not), the clean skipped with FWB, and nothing for a call that
 * fails.
 */
#include "pt_harness.h"

struct mrec {
    int icache; /* 0: dcache_clean_poc, 1: icache_inval_pou */
    uint64_t pa, size;
    int visible; /* the probe address translated when the hook ran */
    int nflush;  /* flushes issued before it */
    uint32_t attrs; /* the probe's attributes then */
};

struct menv {
    struct tenv t; /* first: the tenv hooks get this as their ctx */
    int n;
    struct mrec log[64];
    uint64_t probe; /* looked up at each hook: the mapping must not be visible yet */
};

static void m_rec(struct menv *m, int ic, uint64_t pa, uint64_t size)
{
    struct mmp_pt_leaf l;
    if (m->n < 64) {
        int vis = mmp_pt_lookup(&m->t.pt, m->probe, &l) == 0;
        m->log[m->n] = (struct mrec){ic, pa, size, vis, m->t.nflush, vis ? l.attrs : 0};
    }
    m->n++;
}
static void m_clean(void *ctx, uint64_t pa, uint64_t size)
{
    m_rec((struct menv *)ctx, 0, pa, size);
}
static void m_inval(void *ctx, uint64_t pa, uint64_t size)
{
    m_rec((struct menv *)ctx, 1, pa, size);
}

static struct menv *menv_new(const struct mmp_pt_config *c)
{
    struct menv *m = calloc(1, sizeof *m);
    struct mmp_pt_ops o = t_ops(&m->t);
    o.ctx = m;
    o.dcache_clean_poc = m_clean;
    o.icache_inval_pou = m_inval;
    ck_assert_int_eq(mmp_pt_init(&m->t.pt, c, &o), 0);
    return m;
}

static void menv_free(struct menv *m)
{
    mmp_pt_fini(&m->t.pt);
    ck_assert_int_eq(m->t.live, 0);
    free(m);
}

#define RX (MMP_PROT_READ | MMP_PROT_EXEC)

/* Stage 2 without FWB: a cacheable map is cleaned, an executable one also
 * invalidated, each once for the call's whole output range - however many
 * leaves (blocks, runs, pages) it is built from - and before the leaf is
 * visible. Device and non-cacheable memory get no clean. */
START_TEST(maint_stage2_counts_and_ranges)
{
    static const size_t s2[] = {8, 9, 10};
    for (size_t c = 0; c < 3; c++) {
        const struct tcfg *tc = &pt_cfgs[s2[c]];
        struct menv *m = menv_new(&tc->c);
        struct mmp_pt_info inf;
        mmp_pt_info(&m->t.pt, &inf);
        ck_assert_uint_eq(inf.maint, MMP_PT_MAINT_DCACHE_CLEAN | MMP_PT_MAINT_ICACHE_INVAL);
        uint64_t B = first_block(&inf), G = inf.granule;
        /* blocks + pages on both sides: one range */
        uint64_t va = 4 * B - 3 * G, pa = 8 * B - 3 * G, size = 2 * B + 5 * G;
        m->probe = va + B;
        ck_assert_int_eq(mmp_pt_map(&m->t.pt, va, pa, size, RW, 0), 0);
        ck_assert_int_eq(m->n, 1);
        ck_assert_int_eq(m->log[0].icache, 0);
        ck_assert_uint_eq(m->log[0].pa, pa);
        ck_assert_uint_eq(m->log[0].size, size);
        ck_assert_msg(!m->log[0].visible, "%s: cleaned after the leaf was written", tc->name);
        m->n = 0;
        m->probe = 32 * B;
        ck_assert_int_eq(mmp_pt_map(&m->t.pt, 32 * B, 64 * B, B + G, RX, 0), 0);
        ck_assert_int_eq(m->n, 2);
        ck_assert_int_eq(m->log[0].icache, 0); /* clean first, then the I-side */
        ck_assert_int_eq(m->log[1].icache, 1);
        ck_assert_uint_eq(m->log[1].pa, 64 * B);
        ck_assert_uint_eq(m->log[1].size, B + G);
        ck_assert(!m->log[0].visible && !m->log[1].visible);
        m->n = 0;
        ck_assert_int_eq(mmp_pt_map(&m->t.pt, 40 * B, 40 * B, G, RW | MMP_MEM_DEVICE, 0), 0);
        ck_assert_int_eq(mmp_pt_map(&m->t.pt, 41 * B, 41 * B, G, RW | MMP_MEM_NORMAL_NC, 0), 0);
        ck_assert_int_eq(m->n, 0);
        /* unmap and protect need none */
        ck_assert_int_eq(mmp_pt_protect(&m->t.pt, va, size, RO), 0);
        ck_assert_int_eq(mmp_pt_unmap(&m->t.pt, va, size), 0);
        ck_assert_int_eq(m->n, 0);
        menv_free(m);
    }
}
END_TEST

/* With FWB the clean is dropped and the I-side kept: an executable map
 * gets the icache call alone. */
START_TEST(maint_fwb_skips_clean)
{
    struct mmp_pt_config c = pt_cfgs[8].c;
    c.flags |= MMP_PT_S2FWB;
    struct menv *m = menv_new(&c);
    struct mmp_pt_info inf;
    mmp_pt_info(&m->t.pt, &inf);
    ck_assert_uint_eq(inf.maint, MMP_PT_MAINT_ICACHE_INVAL);
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, 0, 1ull << 30, 1ull << 21, RW, 0), 0);
    ck_assert_int_eq(m->n, 0);
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, 1ull << 21, 1ull << 31, 4096, RX, 0), 0);
    ck_assert_int_eq(m->n, 1);
    ck_assert_int_eq(m->log[0].icache, 1);
    ck_assert_uint_eq(m->log[0].pa, 1ull << 31);
    ck_assert_uint_eq(m->log[0].size, 4096);
    menv_free(m);
}
END_TEST

/* Formats that need no maintenance never call the hooks. */
START_TEST(maint_other_formats_none)
{
    for (size_t c = 0; c < NCFG; c++) {
        if (pt_cfgs[c].c.format == MMP_PT_ARM64_S2)
            continue;
        struct menv *m = menv_new(&pt_cfgs[c].c);
        struct mmp_pt_info inf;
        mmp_pt_info(&m->t.pt, &inf);
        ck_assert_uint_eq(inf.maint, 0);
        uint32_t a = pt_cfgs[c].c.format == MMP_PT_X86_EPT ? RW | MMP_PROT_EXEC : RX;
        ck_assert_int_eq(mmp_pt_map(&m->t.pt, 1ull << 30, 1ull << 30, 1ull << 21, a, 0), 0);
        ck_assert_msg(m->n == 0, "%s: %d maintenance calls", pt_cfgs[c].name, m->n);
        menv_free(m);
    }
}
END_TEST

/* In a lazy section each map still does its maintenance at once, before
 * its own leaves are written (the guest could reach them from then on),
 * while the section's flushes wait for the leave. */
START_TEST(maint_lazy_not_deferred)
{
    struct menv *m = menv_new(&pt_cfgs[8].c);
    uint64_t G = 4096;
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(mmp_pt_map(&m->t.pt, k * G, (8 + k) * G, G, RO, 0), 0);
    m->n = 0;
    m->t.nflush = 0;
    ck_assert_int_eq(mmp_lazy_enter(&m->t.pt), 0);
    for (int k = 0; k < 4; k++) {
        ck_assert_int_eq(mmp_pt_unmap(&m->t.pt, k * G, G), 0);
        m->probe = (16 + k) * G;
        ck_assert_int_eq(mmp_pt_map(&m->t.pt, (16 + k) * G, (32 + k) * G, G, RX, 0), 0);
        ck_assert_int_eq(m->n, 2 * (k + 1));
        ck_assert(!m->log[2 * k].visible && !m->log[2 * k + 1].visible);
        ck_assert_uint_eq(m->log[2 * k].pa, (32 + k) * G);
    }
    ck_assert_int_eq(m->t.nflush, 0); /* the unmaps' flushes wait */
    ck_assert_int_eq(mmp_lazy_leave(&m->t.pt), 0);
    ck_assert_int_ge(m->t.nflush, 1);
    ck_assert_int_eq(m->n, 8);
    menv_free(m);
}
END_TEST

/* A map that fails (-EEXIST, -ENOMEM, -EINVAL, -ERANGE) calls neither
 * hook. */
START_TEST(maint_failed_call_none)
{
    struct menv *m = menv_new(&pt_cfgs[8].c);
    uint64_t B = 2ull << 20, G = 4096;
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, B + G, 0, G, RX, 0), 0);
    m->n = 0;
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, B, 0, B, RX, 0), -MMP_EEXIST);
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, 0, 0, G, RX | 0x80, 0), -MMP_EINVAL);
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, 1ull << 40, 0, G, RX, 0), -MMP_ERANGE);
    m->t.nalloc = 0;
    m->t.fail_at = 1;
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, 1ull << 35, 0, G, RX, 0), -MMP_ENOMEM);
    m->t.fail_at = 0;
    ck_assert_int_eq(m->n, 0);
    menv_free(m);
}
END_TEST

/* NULL hooks: the caller does the maintenance; maps work as before. */
START_TEST(maint_null_hooks)
{
    struct tenv *e = tenv_new(&pt_cfgs[8].c);
    ck_assert_int_eq(mmp_pt_map(&e->pt, 0, 0, 1ull << 21, RX, 0), 0);
    tenv_free(e);
}
END_TEST

/* MMP_PT_SHARED: the hooks run once per call, before the leaf is
 * published (the call walks once: they come after the argument checks). */
START_TEST(maint_shared_mode)
{
    struct mmp_pt_config c = pt_cfgs[8].c;
    c.flags |= MMP_PT_SHARED;
    struct menv *m = menv_new(&c);
    uint64_t G = 4096;
    m->probe = 3 * G;
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, 3 * G, 7 * G, G, RX, 0), 0);
    ck_assert_int_eq(m->n, 2);
    ck_assert(!m->log[0].visible && !m->log[1].visible);
    ck_assert_uint_eq(m->log[0].pa, 7 * G);
    ck_assert_uint_eq(m->log[1].size, G);
    m->n = 0;
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, 3 * G, 7 * G, 2 * G, RX, 0), -MMP_ENOTSUP);
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, 3 * G, 7 * G, G, RX | 0x80, 0), -MMP_EINVAL);
    ck_assert_int_eq(m->n, 0);
    menv_free(m);
}
END_TEST

/* MMP_PT_SHARED: a map that fails before its publication calls neither
 * hook - out of table memory (-ENOMEM), a block over a table that holds a
 * page (-ENOTSUP), a page already mapped (-EEXIST) - only a call that
 * reaches its publication does (pt.h); a replace that finds its
 * translation in place succeeds and maintains too. */
START_TEST(maint_shared_failed_call_none)
{
    struct mmp_pt_config c = pt_cfgs[8].c;
    c.flags |= MMP_PT_SHARED;
    struct menv *m = menv_new(&c);
    uint64_t B = 2ull << 20, G = 4096;
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, B + G, 0, G, RX, 0), 0);
    m->n = 0;
    m->t.nalloc = 0;
    m->t.fail_at = 1;
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, 1ull << 35, 0, G, RX, 0), -MMP_ENOMEM);
    m->t.fail_at = 0;
    ck_assert_int_eq(m->n, 0);
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, B, 0, B, RX, MMP_MAP_REPLACE), -MMP_ENOTSUP);
    ck_assert_int_eq(m->n, 0);
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, B + G, 0, G, RX, 0), -MMP_EEXIST);
    ck_assert_int_eq(m->n, 0);
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, B + G, 0, G, RX, MMP_MAP_REPLACE), 0);
    ck_assert_int_eq(m->n, 2);
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, 1ull << 35, 0, G, RX, 0), 0);
    ck_assert_int_eq(m->n, 4);
    menv_free(m);
}
END_TEST

/* A protect that makes mappings executable invalidates the instruction
 * cache for the output of those that were not, coalesced, before any
 * entry changes; leaves that were executable, holes, a protect without
 * EXEC and a refused one call nothing. */
START_TEST(maint_protect_adds_exec)
{
    const struct tcfg *tc = &pt_cfgs[8];
    struct menv *m = menv_new(&tc->c);
    struct mmp_pt_info inf;
    mmp_pt_info(&m->t.pt, &inf);
    uint64_t B = first_block(&inf), G = inf.granule;
    /* [0, B): a block to 4B; [B, B+4G): pages to 4B+B (contiguous output);
     * a hole; [B+8G, B+10G): executable already; [B+10G, B+12G) to 9B. */
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, 0, 4 * B, B + 4 * G, RW, 0), 0);
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, B + 8 * G, 7 * B, 2 * G, RX, 0), 0);
    ck_assert_int_eq(mmp_pt_map(&m->t.pt, B + 10 * G, 9 * B, 2 * G, RW, 0), 0);
    m->n = 0;
    ck_assert_int_eq(mmp_pt_protect(&m->t.pt, 0, B + 4 * G, RO), 0);
    ck_assert_int_eq(m->n, 0);
    ck_assert_int_eq(mmp_pt_protect(&m->t.pt, 0, B + 12 * G, MMP_PROT_WRITE | MMP_PROT_EXEC),
                     -MMP_EINVAL);
    ck_assert_int_eq(m->n, 0);
    m->probe = B;
    ck_assert_int_eq(mmp_pt_protect(&m->t.pt, 0, B + 12 * G, RX), 0);
    ck_assert_int_eq(m->n, 2);
    ck_assert_int_eq(m->log[0].icache, 1);
    ck_assert_uint_eq(m->log[0].pa, 4 * B);
    ck_assert_uint_eq(m->log[0].size, B + 4 * G);
    ck_assert_int_eq(m->log[1].icache, 1);
    ck_assert_uint_eq(m->log[1].pa, 9 * B);
    ck_assert_uint_eq(m->log[1].size, 2 * G);
    /* before the change: the probe was mapped, not executable yet */
    ck_assert(m->log[0].visible && !(m->log[0].attrs & MMP_PROT_EXEC));
    struct mmp_pt_leaf l;
    ck_assert_int_eq(mmp_pt_lookup(&m->t.pt, B, &l), 0);
    ck_assert_uint_eq(l.attrs & MMP_PROT_EXEC, MMP_PROT_EXEC);
    m->n = 0;
    ck_assert_int_eq(mmp_pt_protect(&m->t.pt, 0, B + 12 * G, RX), 0); /* all executable */
    ck_assert_int_eq(m->n, 0);
    menv_free(m);
}
END_TEST

Suite *mmp_suite_pt_maint(void)
{
    Suite *s = suite_create("pt_maint");
    MMP_ADD(s, maint_stage2_counts_and_ranges);
    MMP_ADD(s, maint_fwb_skips_clean);
    MMP_ADD(s, maint_other_formats_none);
    MMP_ADD(s, maint_lazy_not_deferred);
    MMP_ADD(s, maint_failed_call_none);
    MMP_ADD(s, maint_null_hooks);
    MMP_ADD(s, maint_shared_mode);
    MMP_ADD(s, maint_shared_failed_call_none);
    MMP_ADD(s, maint_protect_adds_exec);
    return s;
}
