/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: random table CONTENTS (fuzz_pt.c fuzzes operations on
 * tables the library built). The input picks a format, lets the library
 * build a few tables with ordinary maps, then overwrites entries of those
 * pages as a stray DMA write or a hypervisor bug would: pointers to other
 * table pages (aliases), to the root or a parent (cycles), leaves at any
 * level, raw values, single flipped bits (reserved bits), copies of other
 * entries. Then lookup / walk / usage / dump / unmap / protect / map run
 * over addresses that reach the damaged entries.
 *
 * It fails (abort) when:
 *  - any callback runs more than STEP_MAX times in one input (a walk or a
 *    list that does not end);
 *  - free_table gets a page twice, or the root while the table is live;
 *  - an update that fails (-EIO, -EEXIST, -ENOMEM...) changed a byte of
 *    any table page, the page count or the flush count ("a failed call
 *    changes nothing", include/mmport/pt.h);
 *  - a read or an update returns an error pt.h does not list.
 * Table pages come from a pool reached through phys_to_virt (pa = BASE +
 * offset, any pa lands on some pool page), so every pointer the damage
 * makes leads into the pool, to a page the library had before the damage
 * (p_at); pages are never reused after free_table.
 *
 * Input: byte 0 format, byte 1 seeding maps (bits 0-2) and KEEP_TABLES
 * (bit 3), then 4 bytes per seeding map {kind, i0, i1, i2}, 6 bytes per
 * patch {page, entry, kind, b0, b1, b2} (byte 2's top bit ends the
 * patches), then 4 bytes per operation {op, i0, i1, i2}. Indices i0..i2
 * are the table indices of the first three levels (mod 8, so they hit
 * the patched entries 0..7).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mmport/mmport.h>

#define NPOOL 24
#define BASE 0x100000000ull
#define STEP_MAX (1ul << 22)
#define MAX_OPS 16

struct fcfg {
    enum mmp_pt_format format;
    uint32_t granule, va_bits, pa_bits, flags;
    uint64_t tbl; /* the table descriptor template */
};

static const struct fcfg cfgs[] = {
    {MMP_PT_X86_64, 4096, 48, 0, 0, 0x27},
    {MMP_PT_X86_64, 4096, 57, 0, 0, 0x27},
    {MMP_PT_X86_64, 4096, 48, 40, 0, 0x27},
    {MMP_PT_X86_NPT, 4096, 48, 0, 0, 0x27},
    {MMP_PT_X86_EPT, 4096, 48, 0, 0, 0x7},
    {MMP_PT_X86_EPT, 4096, 48, 44, MMP_PT_EPT_XO | MMP_PT_EPT_AD, 0x107},
    {MMP_PT_ARM64_S1, 4096, 48, 0, 0, 0x3},
    {MMP_PT_ARM64_S1, 4096, 39, 40, 0, 0x3},
    {MMP_PT_ARM64_S1, 16384, 47, 0, 0, 0x3},
    {MMP_PT_ARM64_S1, 65536, 42, 0, 0, 0x3},
    {MMP_PT_ARM64_S2, 4096, 40, 0, 0, 0x3},
    {MMP_PT_ARM64_S2, 4096, 48, 0, 0, 0x3},
    {MMP_PT_ARM64_S1, 4096, 52, 52, 0, 0x3},
};
#define NCFGS (sizeof cfgs / sizeof cfgs[0])

static struct {
    uint8_t *mem;
    size_t gran;
    int state[NPOOL]; /* 0 never given, 1 live, 2 freed */
    int next, ndamaged; /* pages given before the damage: [0, ndamaged) */
    unsigned long steps;
    uint64_t root_pa;
    int live_table;
} P;

/* Outcome counts over a replay, printed by fuzz_report. */
static unsigned long n_inputs, n_eio, n_ok, n_other, n_freed;

static void step(const char *what)
{
    if (++P.steps > STEP_MAX) {
        fprintf(stderr, "fuzz_pt_mem: more than %lu callbacks in one input (%s): a loop\n",
                STEP_MAX, what);
        abort();
    }
}

/*
 * Pages the library gets before the damage come from the lower half of
 * the pool, later ones from the upper half. A pa that is not exactly a
 * later page lands on one of the pages the damage could reach (the ones
 * given before it): a damaged entry must never lead to a page the
 * allocator hands out later, which the library could not tell from its own.
 */
static void *p_at(uint64_t pa)
{
    uint64_t i = (pa - BASE) / P.gran;
    if (!P.ndamaged) /* before the damage: the library's own pointers */
        i %= NPOOL;
    else if (pa < BASE || i < NPOOL / 2 || i >= NPOOL || !P.state[i])
        i %= (uint64_t)P.ndamaged;
    return P.mem + i * P.gran + (pa % P.gran);
}

static void *f_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    (void)ctx;
    step("alloc_table");
    size_t n = bytes / P.gran;
    int i = (P.next + (int)n - 1) / (int)n * (int)n; /* aligned to its size */
    if (i + (int)n > (P.ndamaged ? NPOOL : NPOOL / 2))
        return NULL;
    for (size_t k = 0; k < n; k++)
        P.state[i + k] = 1;
    P.next = i + (int)n;
    memset(P.mem + i * P.gran, 0xc3, bytes); /* not zeroed */
    *pa = BASE + (uint64_t)i * P.gran;
    return P.mem + i * P.gran;
}

static void f_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    (void)ctx;
    step("free_table");
    size_t i = (size_t)((uint8_t *)va - P.mem) / P.gran;
    if ((uint8_t *)va < P.mem || i >= NPOOL || va != p_at(pa)) {
        fprintf(stderr, "fuzz_pt_mem: free_table(%p, %#llx) outside the pool\n", va,
                (unsigned long long)pa);
        abort();
    }
    if (P.live_table && pa == P.root_pa) {
        fprintf(stderr, "fuzz_pt_mem: free_table of the live root\n");
        abort();
    }
    for (size_t k = 0; k < bytes / P.gran; k++) {
        if (P.state[i + k] == 2) {
            fprintf(stderr, "fuzz_pt_mem: free_table(%#llx) twice\n", (unsigned long long)pa);
            abort();
        }
        P.state[i + k] = 2; /* a page the damage reached but never given: allowed */
    }
    n_freed++;
}

static void *f_p2v(void *ctx, uint64_t pa)
{
    (void)ctx;
    step("phys_to_virt");
    return p_at(pa);
}

static void f_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    (void)ctx;
    (void)va;
    (void)size;
    (void)flags;
    step("tlb_flush");
}

static int f_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    (void)arg;
    (void)l;
    step("walk callback");
    return 0;
}

static int f_line(void *arg, const char *line)
{
    (void)arg;
    (void)line;
    step("dump line");
    return 0;
}

struct geo {
    unsigned levels, shift[5], bits[5];
    uint64_t gran;
};

static uint64_t va_of(const struct geo *g, const uint8_t *ix)
{
    uint64_t va = 0;
    for (unsigned d = 0; d < g->levels && d < 3; d++)
        va |= (uint64_t)(ix[d] & 7 & ((1u << g->bits[d]) - 1)) << g->shift[d];
    return va;
}

static void bad_rc(const char *call, int rc, int allowed_extra)
{
    if (rc > 0 || rc == 0 || rc == -MMP_EIO || rc == -MMP_ENOENT || rc == -MMP_EEXIST ||
        rc == -MMP_ENOMEM || rc == -MMP_ERANGE || rc == allowed_extra)
        return;
    fprintf(stderr, "fuzz_pt_mem: %s returned %d (%s)\n", call, rc, mmp_strerror(rc));
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const struct fcfg *fc = &cfgs[data[0] % NCFGS];
    size_t pos = 2;
    n_inputs++;
    memset(&P, 0, sizeof P);
    P.gran = fc->granule;
    P.mem = aligned_alloc(P.gran * 2, NPOOL * P.gran);
    memset(P.mem, 0, NPOOL * P.gran);
    uint8_t *snap = malloc(NPOOL * P.gran);
    struct mmp_pt_config c = {fc->format, fc->granule, fc->va_bits, fc->pa_bits,
                              fc->flags | ((data[1] & 8) ? MMP_PT_KEEP_TABLES : 0), 0, 0, 0};
    struct mmp_pt_ops ops = {.alloc_table = f_alloc, .free_table = f_free,
                             .phys_to_virt = f_p2v, .tlb_flush = f_flush};
    struct mmp_pt pt;
    if (mmp_pt_init(&pt, &c, &ops) != 0) {
        fprintf(stderr, "fuzz_pt_mem: init failed\n");
        abort();
    }
    P.root_pa = mmp_pt_root(&pt);
    P.live_table = 1;
    struct mmp_pt_info inf;
    mmp_pt_info(&pt, &inf);
    struct geo g = {.levels = inf.levels, .gran = inf.granule};
    unsigned gs = (unsigned)__builtin_ctzll(inf.granule), bpl = gs - 3;
    for (unsigned d = 0; d < inf.levels; d++) {
        g.shift[d] = gs + bpl * (inf.levels - 1 - d);
        g.bits[d] = d ? bpl : inf.va_bits - g.shift[0];
    }
    /* Seed: ordinary maps, so the pages are the library's own. */
    for (unsigned m = 0; m < (data[1] & 7u) && pos + 4 <= size; m++, pos += 4) {
        const uint8_t *b = data + pos;
        uint64_t va = va_of(&g, b + 1);
        uint64_t sz = (b[0] & 1) ? g.gran : ((uint64_t)g.gran << bpl);
        uint32_t fl = (b[0] & 2) ? MMP_MAP_NO_BLOCK : 0;
        mmp_pt_map(&pt, va, va + ((uint64_t)(b[0] >> 2) << 30), sz, MMP_PROT_READ | MMP_PROT_WRITE,
                   fl);
    }
    /* Damage: patches on the pages given so far. */
    int npg = P.next; /* >= 1: the root */
    P.ndamaged = npg;
    P.next = NPOOL / 2;
    for (; pos + 6 <= size; pos += 6) {
        const uint8_t *b = data + pos;
        uint64_t *pg = (uint64_t *)(P.mem + (size_t)(b[0] % npg) * P.gran);
        uint64_t *e = &pg[b[1] & 7];
        uint64_t raw = (uint64_t)b[3] | (uint64_t)b[4] << 8 | (uint64_t)b[5] << 16;
        switch (b[2] & 7) {
        case 0: *e = (BASE + (uint64_t)(b[3] % NPOOL) * P.gran) | fc->tbl; break;
        case 1: *e = P.root_pa | fc->tbl; break;
        case 2: *e = (raw << 12) ^ ((uint64_t)b[3] << 56) ^ (b[5] & 0xfff); break;
        case 3: *e ^= 1ull << (b[3] & 63); break;
        case 4: *e = 0; break;
        case 5: *e = ((uint64_t *)(P.mem + (size_t)(b[3] % npg) * P.gran))[b[4] & 7]; break;
        case 6: *e = (BASE + (uint64_t)(b[3] % NPOOL) * P.gran) | (b[4] & 0x3f) | (uint64_t)(b[5] & 0x81) << 7; break;
        default: *e |= 1ull << (b[3] & 63); break;
        }
        if (b[2] & 0x80) {
            pos += 6;
            break;
        }
    }
    /* Operations over the damaged tables. */
    for (unsigned n = 0; n < MAX_OPS && pos + 4 <= size; n++, pos += 4) {
        const uint8_t *b = data + pos;
        uint64_t va = va_of(&g, b + 1), sz = g.gran * (1 + ((b[0] >> 3) & 3));
        if (b[0] & 0x20)
            sz = (uint64_t)g.gran << bpl;
        if (b[0] & 0x40)
            sz = (uint64_t)1 << g.shift[g.levels > 2 ? 1 : 0];
        va &= ~(sz - 1);
        struct mmp_pt_leaf l;
        struct mmp_pt_usage u;
        struct mmp_pt_stats s0, s1;
        int rc;
        unsigned op = b[0] & 7;
        int st0[NPOOL];
        if (op >= 4) {
            memcpy(snap, P.mem, NPOOL * P.gran);
            memcpy(st0, P.state, sizeof st0);
            mmp_pt_stats(&pt, &s0);
        }
        switch (op) {
        case 0: rc = mmp_pt_lookup(&pt, va + g.gran * (b[3] & 3), &l); bad_rc("lookup", rc, 0); break;
        case 1: rc = mmp_pt_walk(&pt, va, sz, f_leaf, NULL); bad_rc("walk", rc, 0); break;
        case 2: rc = mmp_pt_usage(&pt, &u); bad_rc("usage", rc, 0); break;
        case 3: rc = mmp_pt_dump(&pt, va, sz, f_line, NULL); bad_rc("dump", rc, 0); break;
        case 4: rc = mmp_pt_unmap(&pt, va, sz); bad_rc("unmap", rc, 0); break;
        case 5: rc = mmp_pt_protect(&pt, va, sz, (b[3] & 1) ? MMP_PROT_READ : MMP_PROT_READ | MMP_PROT_EXEC);
                bad_rc("protect", rc, 0); break;
        case 6: rc = mmp_pt_map(&pt, va, va, sz, MMP_PROT_READ, MMP_MAP_REPLACE); bad_rc("map replace", rc, 0); break;
        default: rc = mmp_pt_map(&pt, va, va, sz, MMP_PROT_READ | MMP_PROT_WRITE, 0); bad_rc("map", rc, 0); break;
        }
        if (rc == -MMP_EIO)
            n_eio++;
        else if (rc == 0)
            n_ok++;
        else
            n_other++;
        if (op >= 4 && rc < 0) {
            /* The pages that were the table's (a failed call may take
             * fresh pages and give them back) are as they were. */
            int same = 1;
            for (int i = 0; i < NPOOL; i++)
                if (st0[i] == 1)
                    same &= P.state[i] == 1 &&
                            !memcmp(snap + i * P.gran, P.mem + i * P.gran, P.gran);
            mmp_pt_stats(&pt, &s1);
            if (!same || s1.table_pages != s0.table_pages || s1.flushes != s0.flushes) {
                fprintf(stderr, "fuzz_pt_mem: op %u failed (%d) but changed the tables\n", op, rc);
                abort();
            }
        }
    }
    P.live_table = 0;
    mmp_pt_fini(&pt);
    free(snap);
    free(P.mem);
    return 0;
}

void fuzz_report(void);
void fuzz_report(void)
{
    printf("%lu inputs: %lu calls -EIO, %lu succeeded, %lu other results; %lu pages freed\n",
           n_inputs, n_eio, n_ok, n_other, n_freed);
}
