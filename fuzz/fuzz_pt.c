/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: decodes its input into a table configuration and a sequence
 * of map / unmap / protect / lookup / injected-allocation-failure (and lazy
 * enter/leave) operations, and after every step checks the table against
 * an independent extent model (tests/model/pt_model.c) and against the
 * structural rules visible from outside: leaf alignment, whole contiguous
 * runs, table pages reachable == table pages allocated, no empty tables,
 * and no page leaked when the input ends.
 *
 * Input layout: byte 0 picks the format, byte 1 the create flags, then
 * 8-byte operations {op, unit, va_lo, va_hi, pa_lo, pa_hi, count, attrs}.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mmport/mmport.h>

#include "../tests/model/pt_model.h"

#define WINDOW (1ull << 36) /* input addresses fuzzed: 64 GiB */
/* Bound the entries one operation writes (keeps every input fast). */
#define MAX_OP_BYTES (4ull << 30)
#define MAX_OP_BYTES_NO_BLOCKS (32ull << 20)

struct fcfg {
    enum mmp_pt_format format;
    uint32_t granule, va_bits;
};

static const struct fcfg cfgs[] = {
    {MMP_PT_X86_64, 4096, 48},    {MMP_PT_X86_64, 4096, 57},
    {MMP_PT_ARM64_S1, 4096, 48},  {MMP_PT_ARM64_S1, 4096, 39},
    {MMP_PT_ARM64_S1, 16384, 47}, {MMP_PT_ARM64_S1, 65536, 42},
    {MMP_PT_ARM64_S2, 4096, 40},  {MMP_PT_ARM64_S2, 65536, 44},
    {MMP_PT_X86_EPT, 4096, 48},   {MMP_PT_X86_NPT, 4096, 57},
};
#define NCFGS (sizeof cfgs / sizeof cfgs[0])

struct env {
    long live, nalloc, fail_at, flushes;
};

/*
 * Systematic fault injection (MMPORT_FUZZ_SYSTEMATIC=1 in the replay):
 * every map/unmap/protect first runs with its 1st, 2nd, ... allocation
 * failing until one attempt needs no more allocations than that; every
 * failed attempt must leave the table exactly as it was.
 */
static int systematic = -1;
unsigned long fuzz_pt_injected; /* failures injected and survived */

static void *f_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    struct env *e = ctx;
    if (e->fail_at && ++e->nalloc == e->fail_at)
        return NULL;
    void *p = aligned_alloc(bytes, bytes);
    if (!p)
        return NULL;
    memset(p, 0x5a, bytes); /* tables need not come zeroed */
    e->live += (long)(bytes / 4096);
    *pa = (uint64_t)(uintptr_t)p;
    return p;
}

static void f_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    struct env *e = ctx;
    if ((uint64_t)(uintptr_t)va != pa)
        abort();
    e->live -= (long)(bytes / 4096);
    free(va);
}

static void f_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    struct env *e = ctx;
    (void)va, (void)size, (void)flags;
    e->flushes++;
}

/* Architectural contiguous-run lengths (Arm ARM D8.6.1), by granule and leaf size. */
static uint32_t cur_granule;
static unsigned run_len_at(uint64_t leaf, void *arg)
{
    (void)arg;
    if (cur_granule == 4096)
        return (leaf == 4096 || leaf == (2u << 20)) ? 16 : 0;
    if (cur_granule == 16384)
        return leaf == 16384 ? 128 : leaf == (32u << 20) ? 32 : 0;
    if (cur_granule == 65536)
        return (leaf == 65536 || leaf == (512u << 20)) ? 32 : 0;
    return 0;
}

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_pt: %s: %s\n", what, detail);
    abort();
}

/* Attributes valid for the format, drawn from one byte. */
static uint32_t pick_attrs(uint8_t b, enum mmp_pt_format fmt)
{
    uint32_t a = MMP_PROT_READ;
    if (b & 1)
        a |= MMP_PROT_WRITE;
    if (b & 2)
        a |= MMP_PROT_EXEC;
    if (fmt != MMP_PT_ARM64_S2 && fmt != MMP_PT_X86_EPT && fmt != MMP_PT_X86_NPT) {
        if (b & 4)
            a |= MMP_PROT_USER;
        if (b & 8)
            a |= MMP_PROT_GLOBAL;
    }
    static const uint32_t mem[] = {MMP_MEM_NORMAL_WB, MMP_MEM_NORMAL_NC, MMP_MEM_DEVICE};
    return a | mem[(b >> 4) % 3];
}

static void check(struct mmp_pt *pt, struct pt_model *m, struct env *e, const char *after)
{
    char msg[512];
    if (pt_model_compare(m, pt, 0, WINDOW, msg, sizeof msg))
        fail(after, msg);
    if (pt_model_check_leaves(pt, 0, WINDOW, run_len_at, NULL, msg, sizeof msg))
        fail(after, msg);
    struct mmp_pt_usage u;
    struct mmp_pt_stats s;
    if (mmp_pt_usage(pt, &u) || (mmp_pt_stats(pt, &s), 0))
        fail(after, "usage failed");
    if (u.empty_tables)
        fail(after, "an empty table is still linked");
    if (!mmp_lazy_depth(pt) && u.table_pages != s.table_pages) {
        snprintf(msg, sizeof msg, "reachable %llu table pages, counted %llu",
                 (unsigned long long)u.table_pages, (unsigned long long)s.table_pages);
        fail(after, msg);
    }
    (void)e;
}

enum { OP_MAP, OP_MAP_REPLACE, OP_UNMAP, OP_PROTECT, OP_LOOKUP, OP_FAIL_NEXT, OP_LAZY, NOPS };

/* Lazy-MMU state the input has built, to predict each lazy call's result. */
struct lazy_track {
    unsigned depth, paused;
};

/* enter / leave / flush / pause / resume, chosen by one byte. */
static void lazy_op(struct mmp_pt *pt, struct lazy_track *lz, uint8_t which)
{
    int rc, want = 0;
    switch (which % 5) {
    case 0:
        rc = mmp_lazy_enter(pt);
        lz->depth++;
        break;
    case 1: /* documented: -EINVAL without a section, -EBUSY for the outermost while paused */
        rc = mmp_lazy_leave(pt);
        want = !lz->depth ? -MMP_EINVAL : lz->depth == 1 && lz->paused ? -MMP_EBUSY : 0;
        lz->depth -= rc == 0;
        break;
    case 2:
        rc = mmp_lazy_flush(pt);
        want = lz->depth ? 0 : -MMP_EINVAL;
        break;
    case 3:
        rc = mmp_lazy_pause(pt);
        want = lz->depth ? 0 : -MMP_EINVAL;
        lz->paused += rc == 0;
        break;
    default:
        rc = mmp_lazy_resume(pt);
        want = lz->paused ? 0 : -MMP_EINVAL;
        lz->paused -= rc == 0;
        break;
    }
    if (rc != want) {
        char msg[64];
        snprintf(msg, sizeof msg, "op %u returned %d, expected %d", which % 5, rc, want);
        fail("lazy", msg);
    }
    if (mmp_lazy_depth(pt) != lz->depth)
        fail("lazy", "depth differs");
}

struct op {
    int kind;
    uint64_t va, pa, len;
    uint32_t attrs;
};

static int apply(struct mmp_pt *pt, const struct op *o)
{
    switch (o->kind) {
    case OP_MAP:
        return mmp_pt_map(pt, o->va, o->pa, o->len, o->attrs, 0);
    case OP_MAP_REPLACE:
        return mmp_pt_map(pt, o->va, o->pa, o->len, o->attrs, MMP_MAP_REPLACE);
    case OP_UNMAP:
        return mmp_pt_unmap(pt, o->va, o->len);
    default:
        return mmp_pt_protect(pt, o->va, o->len, o->attrs);
    }
}

static void model_apply(struct pt_model *m, const struct op *o)
{
    switch (o->kind) {
    case OP_MAP:
    case OP_MAP_REPLACE:
        pt_model_map(m, o->va, o->pa, o->len, o->attrs);
        break;
    case OP_UNMAP:
        pt_model_unmap(m, o->va, o->len);
        break;
    default:
        pt_model_protect(m, o->va, o->len, o->attrs);
        break;
    }
}

/* Runs o with allocation number k failing; the call must change nothing. */
static int attempt_failing_at(struct mmp_pt *pt, struct pt_model *m, struct env *e,
                              const struct op *o, long k, const char *what)
{
    long live = e->live, flushes = e->flushes;
    e->fail_at = k;
    e->nalloc = 0;
    int rc = apply(pt, o);
    e->fail_at = 0;
    if (rc != -MMP_ENOMEM || e->nalloc < k)
        return rc; /* the failure was not reached, or the call failed otherwise */
    if (e->live != live)
        fail(what, "a failed call kept or lost table pages");
    if (e->flushes != flushes)
        fail(what, "a failed call flushed");
    check(pt, m, e, what);
    fuzz_pt_injected++;
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (systematic < 0) {
        const char *s = getenv("MMPORT_FUZZ_SYSTEMATIC");
        systematic = s && *s == '1';
    }
    if (size < 2)
        return 0;
    const struct fcfg *fc = &cfgs[data[0] % NCFGS];
    struct mmp_pt_config cfg = {fc->format, fc->granule, fc->va_bits, 0, data[1] & 7, 0, 0};
    struct env e = {0};
    struct mmp_pt_ops ops = {.alloc_table = f_alloc,
                             .free_table = f_free,
                             .phys_to_virt = NULL,
                             .tlb_flush = f_flush,
                             .ctx = &e};
    struct mmp_pt pt;
    cur_granule = fc->granule;
    if (mmp_pt_init(&pt, &cfg, &ops))
        fail("init", "failed");
    long root_pages = e.live;
    struct mmp_pt_info info;
    if (mmp_pt_info(&pt, &info))
        fail("info", "failed");

    /* Units an address or size is drawn in: every leaf and run size. */
    uint64_t units[64];
    unsigned nunits = 0;
    for (unsigned b = 0; b < 64; b++)
        if (((info.block_sizes | info.cont_sizes) >> b) & 1)
            units[nunits++] = 1ull << b;

    struct pt_model m;
    pt_model_init(&m);
    char what[160];
    long fail_next = 0;
    struct lazy_track lz = {0, 0};
    for (size_t off = 2; off + 8 <= size; off += 8) {
        const uint8_t *b = data + off;
        uint64_t unit = units[b[1] % nunits];
        struct op o = {.kind = b[0] % NOPS};
        o.va = ((uint64_t)(b[2] | b[3] << 8) * unit) % WINDOW;
        o.pa = ((uint64_t)(b[4] | b[5] << 8) * unit) % WINDOW;
        o.len = (uint64_t)(b[6] % 16 + 1) * (b[1] & 0x80 ? unit : fc->granule);
        uint64_t cap = cfg.flags & MMP_PT_NO_BLOCKS ? MAX_OP_BYTES_NO_BLOCKS : MAX_OP_BYTES;
        if (o.len > cap)
            o.len = cap;
        if (o.va + o.len > WINDOW)
            o.va = WINDOW - o.len;
        o.attrs = pick_attrs(b[7], fc->format);

        if (o.kind == OP_LOOKUP) { /* at an arbitrary byte */
            struct mmp_pt_leaf l;
            uint64_t a = o.va + (b[4] | b[5] << 8) % o.len, mpa;
            uint32_t mattrs;
            int rc = mmp_pt_lookup(&pt, a, &l);
            int mrc = pt_model_lookup(&m, a, &mpa, &mattrs);
            if (mrc ? rc != -MMP_ENOENT : rc || l.pa + (a - l.va) != mpa || l.attrs != mattrs)
                fail("lookup", "differs from the model");
            continue;
        }
        if (o.kind == OP_LAZY) {
            lazy_op(&pt, &lz, b[1]);
            if (!lz.depth)
                check(&pt, &m, &e, "lazy leave");
            continue;
        }
        if (o.kind == OP_FAIL_NEXT) { /* the next operation's k-th allocation fails */
            fail_next = b[1] % 8 + 1;
            continue;
        }
        static const char *const names[] = {"map", "map(replace)", "unmap", "protect"};
        snprintf(what, sizeof what, "%s va=%#llx pa=%#llx len=%#llx attrs=%#x", names[o.kind],
                 (unsigned long long)o.va, (unsigned long long)o.pa,
                 (unsigned long long)o.len, o.attrs);

        int want = o.kind == OP_MAP && pt_model_any_mapped(&m, o.va, o.len) ? -MMP_EEXIST : 0;
        int rc;
        if (systematic) {
            for (long k = 1;; k++)
                if ((rc = attempt_failing_at(&pt, &m, &e, &o, k, what)) != -MMP_ENOMEM ||
                    e.nalloc < k)
                    break;
        } else if (fail_next) {
            rc = attempt_failing_at(&pt, &m, &e, &o, fail_next, what);
            fail_next = 0;
            if (rc == -MMP_ENOMEM)
                continue; /* checked: nothing changed */
        } else {
            rc = apply(&pt, &o);
        }
        if (rc != want) {
            char msg[64];
            snprintf(msg, sizeof msg, "returned %d, expected %d", rc, want);
            fail(what, msg);
        }
        if (rc == 0)
            model_apply(&m, &o);
        check(&pt, &m, &e, what);
    }

    for (; lz.paused; lz.paused--)
        if (mmp_lazy_resume(&pt))
            fail("lazy", "final resume failed");
    for (; lz.depth; lz.depth--)
        if (mmp_lazy_leave(&pt))
            fail("lazy", "final leave failed");
    check(&pt, &m, &e, "final leave");

    /* Unmapping everything must free every table but the root. */
    if (mmp_pt_unmap(&pt, 0, WINDOW))
        fail("final unmap", "failed");
    if (e.live != root_pages)
        fail("final unmap", "table pages left allocated");
    mmp_pt_fini(&pt);
    if (e.live != 0)
        fail("fini", "table pages leaked");
    pt_model_free(&m);
    return 0;
}
