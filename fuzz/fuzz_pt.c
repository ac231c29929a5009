/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: decodes its input into a table configuration (every format
 * and layout, every create flag, flush_ranges 0..8, pa_bits, identity or
 * offset phys_to_virt) and a sequence of map / unmap / protect / lookup /
 * out-of-range / injected-allocation-failure / lazy-section operations over
 * four windows of the input space (bottom, top of the lower half, start of
 * the upper half or middle, top of the space).
 *
 * Two models check it:
 *  - an extent model (tests/model/pt_model.c) of the translations a caller
 *    asked for, compared after every call with the table as the library's
 *    walk reports it AND as this file's own descriptor decoder reads it;
 *  - a TLB model. The table pages are this file's (alloc_table), so at
 *    every hook the library calls (tlb_flush, free_table: synchronous) and
 *    after every call the model diffs the pages against a shadow copy,
 *    decodes what changed with its own decoder (written from Intel SDM
 *    vol. 3A 4.5, Tables 4-15..4-20, and the Arm ARM D8.3 / D8.6.1, not
 *    through mmp_pt_lookup/walk) and keeps, per address, the translations
 *    a TLB may still hold. It checks that
 *      * a translation that changed is flushed before the call (or the
 *        lazy section) ends;
 *      * two translations a TLB may hold at once never conflict: on arm64
 *        output address, leaf size, contiguous bit, memory type or a
 *        non-global -> global change need break-before-make (D8.16.1), so
 *        the entry must have been invalid at a flush in between; on x86 a
 *        page-size change must keep frame and attributes (SDM 4.10.2.3);
 *        and no invalid entry becomes valid while an older translation for
 *        its address is still pending a flush;
 *      * a table page that was unlinked is not freed (nor the call or
 *        section ended) before a flush that is not MMP_FLUSH_LEAF covers
 *        its whole span; no linked page is freed;
 *      * a flush has size > 0 unless MMP_FLUSH_ALL, does not wrap, is
 *        granule-aligned and has only known flags;
 *      * contiguous runs are whole and consistent whenever the table is
 *        observed (D8.6.1), leaves hold no bits mmport never writes.
 *  - a tracking model (tests/model/trk_model.c), for every other input of
 *    a layout, made with MMP_PT_TRACK_HW: the input plays the MMU, which
 *    records an access or a write in the leaf's descriptor between calls
 *    - in a contiguous run in any one entry of the run (Arm ARM D8.6.1,
 *    D8.4.6/7), chosen by the input - and calls harvest, test-clear-young,
 *    start and stop; every page recorded must be reported by the next
 *    pass over it, whatever map, unmap, protect, fold, split, start or
 *    stop came between (unmap and replace forget pages; a protect that
 *    takes write permission away forgets arm64 dirty state), and *count
 *    must be the number of bits set.
 *  - what a map leaves (pt.h): a block- or run-sized region around either
 *    end of a map's range that it completed is one leaf or run; a replace
 *    of what is mapped already splits nothing and, unless it folds,
 *    changes and flushes nothing.
 *
 * Input: byte 0 layout (below 224: one of the first 28, the 48-bit input
 * spaces, byte % 28; from 224: one of the wide ones, so that inputs keep
 * their layout as layouts are added), byte 1 create flags (bit 6 fill pattern of fresh
 * pages, bit 7 offset phys_to_virt), byte 2 flush_ranges and pa_bits, then
 * 8-byte operations {op, unit, va_lo, va_hi, pa_lo, pa_hi, count, attrs};
 * op bits 3-4 pick the window, 5-6 the per-call map flags, 7 a pa window
 * at the top of the output space; count bits 4-5 continue or repeat the
 * previous operation's range.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mmport/mmport.h>

#include "../tests/model/pt_model.h"
#include "../tests/model/trk_model.h"

#define MAX_OP_BYTES (4ull << 30) /* bound the entries one operation writes */
#define MAX_OP_BYTES_SMALL (32ull << 20) /* ... when blocks are off */
#define NWIN 4
#define MODEL_WIN_SHIFT 40 /* the extent model keeps window w at w << 40 */

struct fcfg {
    enum mmp_pt_format format;
    uint32_t granule, va_bits;
    uint32_t flags; /* PA52: pa_bits 52 whatever byte 2 says; or create flags */
};
#define PA52 (1u << 31)

/* x86 4/5 level; stage 1 every granule at several sizes (2..4 levels);
 * stage 2 including concatenated roots (4K 32/40, 16K 40, 64K 32/46);
 * EPT and NPT 4/5 level. */
static const struct fcfg cfgs[] = {
    {MMP_PT_X86_64, 4096, 48, 0},    {MMP_PT_X86_64, 4096, 57, 0},    {MMP_PT_ARM64_S1, 4096, 48, 0},
    {MMP_PT_ARM64_S1, 4096, 39, 0},  {MMP_PT_ARM64_S1, 4096, 30, 0},  {MMP_PT_ARM64_S1, 4096, 25, 0},
    {MMP_PT_ARM64_S1, 16384, 48, 0}, {MMP_PT_ARM64_S1, 16384, 47, 0}, {MMP_PT_ARM64_S1, 16384, 36, 0},
    {MMP_PT_ARM64_S1, 16384, 26, 0}, {MMP_PT_ARM64_S1, 65536, 48, 0}, {MMP_PT_ARM64_S1, 65536, 42, 0},
    {MMP_PT_ARM64_S1, 65536, 30, 0}, {MMP_PT_ARM64_S2, 4096, 40, 0},  {MMP_PT_ARM64_S2, 4096, 48, 0},
    {MMP_PT_ARM64_S2, 4096, 32, 0},  {MMP_PT_ARM64_S2, 4096, 44, 0},  {MMP_PT_ARM64_S2, 16384, 40, 0},
    {MMP_PT_ARM64_S2, 16384, 48, 0}, {MMP_PT_ARM64_S2, 65536, 32, 0}, {MMP_PT_ARM64_S2, 65536, 33, 0},
    {MMP_PT_ARM64_S2, 65536, 46, 0}, {MMP_PT_ARM64_S2, 65536, 48, 0}, {MMP_PT_ARM64_S2, 65536, 44, 0},
    {MMP_PT_X86_EPT, 4096, 48, 0},   {MMP_PT_X86_EPT, 4096, 57, 0},   {MMP_PT_X86_NPT, 4096, 48, 0},
    {MMP_PT_X86_NPT, 4096, 57, 0},
    /* wide (byte 0 >= 224): 52-bit input (FEAT_LPA2 with level -1 for 4K,
     * 16K; FEAT_LVA for 64K stage 1, any pa_bits), stage-2 IPA 52, and
     * EPT with mode-based execute control */
    {MMP_PT_ARM64_S1, 4096, 52, PA52},  {MMP_PT_ARM64_S1, 4096, 49, PA52},
    {MMP_PT_ARM64_S1, 16384, 52, PA52}, {MMP_PT_ARM64_S1, 65536, 52, 0},
    {MMP_PT_ARM64_S2, 4096, 52, PA52},  {MMP_PT_ARM64_S2, 16384, 52, PA52},
    {MMP_PT_ARM64_S2, 65536, 52, PA52}, {MMP_PT_X86_EPT, 4096, 48, MMP_PT_EPT_MBEC},
};
#define NCFGS (sizeof cfgs / sizeof cfgs[0])
#define NBASE 28 /* the layouts byte 0 below 224 picks */
#define WIDE_FROM 224

static int trace; /* MMPORT_FUZZ_TRACE=1: print every call (to read a failing input) */

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_pt: %s: %s\n", what, detail);
    abort();
}

#define FAILF(what, ...)                                                                     \
    do {                                                                                     \
        char m_[400];                                                                        \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                                \
        fail(what, m_);                                                                      \
    } while (0)

typedef unsigned long long ull;

/* ---- the model's state ---------------------------------------------------- */

/* One decoded leaf descriptor. */
struct rec {
    uint64_t va, size, pa;
    uint32_t attrs;
    uint8_t cont, level;
    uint64_t *desc; /* where the decoder read it */
};

struct recs {
    struct rec *v;
    size_t n, cap;
};

/* A translation a TLB may still hold for [lo, hi]: rec as it was. */
struct stale {
    uint64_t lo, hi;
    struct rec r;
};

/* A table page handed out by alloc_table. */
struct tpage {
    uint64_t *mem, *shadow;
    uint64_t pa;
    size_t bytes;
    uint8_t live, linked, pend, ever;
    uint8_t depth;
    uint64_t base, last; /* input range the page translates while linked */
    unsigned seen, dseen;
};

#define MAXPAGES 2048
#define SLOT (1ull << 20) /* offset mode: table page n lives at tbl_base + n MiB */

struct env {
    /* allocator */
    long live, nalloc, fail_at, flushes;
    int offset_p2v;
    uint8_t fill;
    uint64_t tbl_base;
    struct tpage pg[MAXPAGES];
    unsigned npg;
    int in_fini;
    /* geometry, as the control registers describe it (mmp_pt_info) */
    enum mmp_pt_format fmt;
    int el2, x86, sign, ept, npt, xo, fwb; /* x86: the x86 geometry (EPT, NPT too) */
    int mbec;     /* EPT mode-based execute control: bit 10 user-mode execute */
    int hw;       /* MMP_PT_TRACK_HW: A/D left to the MMU; arm64 AF clear, writable = DBM */
    int lpa2, lpa; /* arm64 52-bit descriptors: DS = 1 (4K/16K), FEAT_LPA (64K) */
    uint64_t max_leaf;
    uint64_t ceiling; /* the default flush ceiling of the format (pt.h) */
    unsigned gs, bpl, nlev, pa_bits, va_bits;
    int start; /* architectural level of the root: arm64 -1 (4K, 52-bit input) .. 3 */
    uint64_t mair;
    struct tpage *root;
    /* TLB model */
    struct recs m;              /* every leaf, as last decoded */
    struct stale *st;
    size_t nst, capst;
    unsigned gen, dgen;
    int ready;                  /* the model is tracking the table */
    long changes;               /* translation changes seen (failed calls: 0) */
};

/* What the inputs replayed so far exercised (printed by the replay). */
static struct {
    uint64_t layouts;
    uint32_t cfl, ranges, pab, mflags, wins, lazy, kinds, maxleaf, trk;
    unsigned p2v_offset, fill_set;
    unsigned long changes, flushes, unlinked, freed_checked, ops;
} cov;

static void recs_reserve(struct recs *r, size_t n)
{
    if (r->n + n <= r->cap)
        return;
    while (r->cap < r->n + n)
        r->cap = r->cap ? r->cap * 2 : 256;
    r->v = realloc(r->v, r->cap * sizeof *r->v);
    if (!r->v)
        abort();
}

static void recs_push(struct recs *r, const struct rec *x)
{
    recs_reserve(r, 1);
    r->v[r->n++] = *x;
}

static uint64_t rec_last(const struct rec *r)
{
    return r->va + r->size - 1;
}

/* ---- geometry (from the manuals, given start level and granule) ----------- */

static int level_of(const struct env *e, unsigned d)
{
    return e->x86 ? e->start - (int)d : e->start + (int)d;
}

static unsigned shift_of(const struct env *e, unsigned d)
{
    int l = level_of(e, d);
    return e->x86 ? 12 + 9 * (unsigned)(l - 1) : e->gs + e->bpl * (unsigned)(3 - l);
}

/* Arm ARM D8.6.1: entries in a contiguous run, by granule and level. */
static unsigned run_entries(const struct env *e, int level)
{
    if (e->x86)
        return 1;
    if (e->gs == 12)
        return level >= 1 ? 16 : 1;
    if (e->gs == 14)
        return level == 3 ? 128 : level == 2 ? 32 : 1;
    return level >= 2 ? 32 : 1;
}

/* Blocks: x86 PDPTE (1 GiB) and PDE (2 MiB); arm64 48-bit OA: 4K L1/L2,
 * 16K L2, 64K L2 (D8.3); with 52-bit descriptors also 4K L0 (512 GiB) and
 * 16K L1 (64 GiB) with DS = 1, 64K L1 (4 TiB) with FEAT_LPA (D8.2.8 table
 * D8-17, D8.2.9 table D8-27, D8.2.10 table D8-36). */
static int block_ok(const struct env *e, int level)
{
    if (e->x86)
        return level == 2 || level == 3;
    if (level == 2 || (level == 1 && e->gs == 12))
        return 1;
    return (e->lpa2 && level == (e->gs == 12 ? 0 : 1)) || (e->lpa && level == 1);
}

static uint64_t bits(unsigned hi, unsigned lo)
{
    return ((~0ull) >> (63 - hi)) & ~((1ull << lo) - 1);
}

/* ---- table pages ------------------------------------------------------------ */

static struct tpage *page_of_pa(struct env *e, uint64_t pa)
{
    if (e->offset_p2v) {
        if (pa < e->tbl_base || (pa - e->tbl_base) / SLOT >= e->npg)
            return NULL;
        struct tpage *p = &e->pg[(pa - e->tbl_base) / SLOT];
        return p->live && pa - p->pa < p->bytes ? p : NULL;
    }
    static unsigned hint;
    if (hint < e->npg && e->pg[hint].live && pa - e->pg[hint].pa < e->pg[hint].bytes)
        return &e->pg[hint];
    for (unsigned i = 0; i < e->npg; i++)
        if (e->pg[i].live && pa - e->pg[i].pa < e->pg[i].bytes)
            return &e->pg[hint = i];
    return NULL;
}

static void *f_p2v(void *ctx, uint64_t pa)
{
    struct tpage *p = page_of_pa(ctx, pa);
    if (!p)
        FAILF("phys_to_virt", "pa %#llx is no live table page", (ull)pa);
    return (char *)p->mem + (pa - p->pa);
}

static void *f_alloc(void *ctx, size_t bytes, uint64_t *pa)
{
    struct env *e = ctx;
    if (e->fail_at && ++e->nalloc == e->fail_at)
        return NULL;
    unsigned i = 0;
    while (i < e->npg && e->pg[i].live)
        i++;
    if (i == MAXPAGES)
        fail("alloc_table", "too many table pages");
    if (bytes > SLOT || (bytes & (bytes - 1)))
        FAILF("alloc_table", "odd size %zu", bytes);
    struct tpage *p = &e->pg[i];
    memset(p, 0, sizeof *p);
    p->mem = aligned_alloc(bytes, bytes);
    p->shadow = malloc(bytes);
    if (!p->mem || !p->shadow)
        abort();
    memset(p->mem, e->fill, bytes); /* tables need not come zeroed */
    p->bytes = bytes;
    p->pa = e->offset_p2v ? e->tbl_base + i * SLOT : (uint64_t)(uintptr_t)p->mem;
    p->live = 1;
    if (i == e->npg)
        e->npg++;
    e->live += (long)(bytes / ((size_t)1 << e->gs));
    *pa = p->pa;
    return p->mem;
}

static void snapshot(struct env *e);

static void f_free(void *ctx, void *va, uint64_t pa, size_t bytes)
{
    struct env *e = ctx;
    struct tpage *p = page_of_pa(e, pa);
    if (!p || p->pa != pa || p->mem != va || p->bytes != bytes)
        FAILF("free_table", "va %p pa %#llx size %zu is no table page given out", va, (ull)pa,
              bytes);
    if (!e->in_fini && e->ready) {
        snapshot(e);
        cov.freed_checked++;
        if (p->linked)
            FAILF("free_table", "table page pa %#llx is still linked (va %#llx..%#llx)",
                  (ull)pa, (ull)p->base, (ull)p->last);
        if (p->pend)
            FAILF("free_table",
                  "table page pa %#llx (va %#llx..%#llx) freed before a non-leaf flush "
                  "covering it",
                  (ull)pa, (ull)p->base, (ull)p->last);
    }
    e->live -= (long)(bytes / ((size_t)1 << e->gs));
    free(p->mem);
    free(p->shadow);
    memset(p, 0, sizeof *p);
}

/* ---- the descriptor decoder ------------------------------------------------- */

/* Permissions inherited from table descriptors on the way down. */
struct hier {
    int no_w, no_u, no_x, no_ux, no_px, no_xu; /* no_xu: EPT bit 10 clear (MBEC) */
};

static uint32_t x86_mem(uint64_t e, unsigned level, uint64_t va)
{
    /* SDM 4.9.2 / 13.12.3: PAT index = PAT:PCD:PWT; power-on PAT (13.12.4)
     * PA0 WB, PA1 WT, PA2 UC-, PA3 UC, then the same again. */
    unsigned pat = level == 1 ? (e >> 7) & 1 : (e >> 12) & 1;
    unsigned idx = pat << 2 | ((e >> 4) & 1) << 1 | ((e >> 3) & 1);
    switch (idx & 3) {
    case 0: return MMP_MEM_NORMAL_WB;
    case 2: return MMP_MEM_NORMAL_NC;
    case 3: return MMP_MEM_DEVICE;
    default: FAILF("decode", "va %#llx: write-through PAT entry %u, never written", (ull)va, idx);
    }
    return 0;
}

/* arm64 stage 1: AttrIndx through MAIR (D19 MAIR_ELx encoding). */
static uint32_t mair_mem(const struct env *e, unsigned idx, uint64_t va)
{
    unsigned a = (unsigned)(e->mair >> (8 * idx)) & 0xff;
    if ((a >> 4) == 0) { /* Device: 0b0000dd00 */
        if (a == 0x04)
            return MMP_MEM_DEVICE; /* nGnRE */
    } else if (a == 0x44) {
        return MMP_MEM_NORMAL_NC; /* inner and outer non-cacheable */
    } else if ((a >> 6) == 3 && ((a >> 4) & 3) && (a & 0xc) == 0xc && (a & 3)) {
        return MMP_MEM_NORMAL_WB; /* inner and outer write-back, some allocation */
    }
    FAILF("decode", "va %#llx: MAIR attribute %#x (index %u) is no type mmport uses", (ull)va,
          a, idx);
    return 0;
}

/* arm64 stage 2, FWB off: MemAttr[3:0] (D8.5.5). */
static uint32_t s2_mem(unsigned m, uint64_t va)
{
    if (m == 0x1)
        return MMP_MEM_DEVICE; /* Device-nGnRE */
    if (m == 0x5)
        return MMP_MEM_NORMAL_NC; /* outer NC, inner NC */
    if (m == 0xf)
        return MMP_MEM_NORMAL_WB; /* outer WB, inner WB */
    FAILF("decode", "va %#llx: stage-2 MemAttr %#x is no type mmport uses", (ull)va, m);
    return 0;
}

/* arm64 stage 2 with HCR_EL2.FWB = 1 (FEAT_S2FWB, D8.6.6): MemAttr[2] set
 * is Normal with [1:0] 0b10 write-back (forced), 0b01 non-cacheable; clear
 * is Device with [1:0] the Device type (0b01 nGnRE). */
static uint32_t s2_fwb_mem(unsigned m, uint64_t va)
{
    if (m == 0x6)
        return MMP_MEM_NORMAL_WB;
    if (m == 0x5)
        return MMP_MEM_NORMAL_NC;
    if (m == 0x1)
        return MMP_MEM_DEVICE;
    FAILF("decode", "va %#llx: FWB stage-2 MemAttr %#x is no type mmport uses", (ull)va, m);
    return 0;
}

static void bad(uint64_t va, int level, uint64_t desc, const char *why)
{
    FAILF("decode", "va %#llx level %d desc %#llx: %s", (ull)va, level, (ull)desc, why);
}

/* A present EPT leaf (SDM vol. 3C 29.3.2, Tables 29-2..29-6; memory
 * types 29.3.7: 0 UC, 1 WC, 4 WT, 5 WP, 6 WB; 2, 3, 7 misconfigurations). */
static void ept_leaf(const struct env *e, uint64_t d, unsigned level, uint64_t va,
                     const struct hier *h, struct rec *r)
{
    unsigned sh = 12 + 9 * (level - 1), mt = (d >> 3) & 7, ipat = (d >> 6) & 1;
    if (level > 1 && (d & bits(sh - 1, 12)))
        bad(va, level, d, "reserved address bits of a large EPT page set");
    if (d & bits(51, e->pa_bits))
        bad(va, level, d, "address bits beyond pa_bits (MAXPHYADDR) set");
    if (d & (bits(63, 52) | bits(11, 11) | (e->mbec ? 0 : bits(10, 10))))
        bad(va, level, d, "bits 63:52 / 11 set (suppress #VE: mmport writes none), or 10 "
                          "without MBEC");
    if ((d & 3) == 2)
        bad(va, level, d, "EPT misconfiguration: write without read");
    /* Execute-only (29.3.3.1): with MBEC a fetch in either mode (bit 2 or
     * bit 10) without read. */
    if (!(d & 1) && (d & (4 | (e->mbec ? 1ull << 10 : 0))) && !e->xo)
        bad(va, level, d, "EPT misconfiguration: execute-only without the capability");
    static const uint32_t mem[8][2] = {{MMP_MEM_NORMAL_NC, MMP_MEM_DEVICE}, {0, MMP_MEM_WC},
                                       {0, 0}, {0, 0}, {0, MMP_MEM_WT}, {0, MMP_MEM_WP},
                                       {MMP_MEM_NORMAL_WB, 0}, {0, 0}};
    /* (WB with IPAT 0 is WB; UC with IPAT 0 is "NC": the guest PAT may
     * still make it WC; mmport writes no other (type, IPAT) pair.) */
    if (mt == 2 || mt == 3 || mt == 7)
        bad(va, level, d, "EPT misconfiguration: reserved memory type");
    if ((mt != 0 && mt != 6) ? !ipat : mt == 6 && ipat)
        bad(va, level, d, "EPT (memory type, ignore PAT) pair mmport never writes");
    r->pa = d & bits(51, sh);
    r->size = 1ull << sh;
    r->cont = 0;
    r->attrs = mem[mt][ipat];
    if (d & 1 && !h->no_u) /* no_u: a table without R */
        r->attrs |= MMP_PROT_READ;
    if (d & 2 && !h->no_w)
        r->attrs |= MMP_PROT_WRITE;
    if (d & 4 && !h->no_x)
        r->attrs |= MMP_PROT_EXEC;
    if (e->mbec && (d >> 10) & 1 && !h->no_xu)
        r->attrs |= MMP_PROT_UEXEC;
}

/* A valid x86 leaf at level (1 PTE, 2 PDE, 3 PDPTE). */
static void x86_leaf(const struct env *e, uint64_t d, unsigned level, uint64_t va,
                     const struct hier *h, struct rec *r)
{
    unsigned sh = 12 + 9 * (level - 1);
    if (level > 1 && (d & bits(sh - 1, 13)))
        bad(va, level, d, "reserved address bits of a large page set");
    if (d & bits(51, e->pa_bits))
        bad(va, level, d, "address bits beyond pa_bits (MAXPHYADDR) set");
    if (d & bits(62, 52))
        bad(va, level, d, "ignored / protection-key bits 62:52 set (mmport writes none)");
    if (d & bits(11, 9))
        bad(va, level, d, "software bits 11:9 set (mmport writes none)");
    r->pa = d & bits(51, sh);
    r->size = 1ull << sh;
    r->attrs = MMP_PROT_READ | x86_mem(d, level, va);
    if ((d & 2) && !h->no_w)
        r->attrs |= MMP_PROT_WRITE;
    if (e->npt) { /* APM vol. 2 15.25.5: nested accesses are user accesses */
        if (!(d & 4) || h->no_u)
            bad(va, level, d, "nested entry without U/S: every guest access would fault");
        if (d & (1ull << 8))
            bad(va, level, d, "G set in a nested entry (mmport writes none)");
    } else if ((d & 4) && !h->no_u) {
        r->attrs |= MMP_PROT_USER;
    }
    if (!(d >> 63) && !h->no_x)
        r->attrs |= MMP_PROT_EXEC;
    if (d & (1ull << 8))
        r->attrs |= MMP_PROT_GLOBAL;
    r->cont = 0;
}

/* A valid arm64 block or page at level. */
static void arm_leaf(const struct env *e, uint64_t d, int level, uint64_t va,
                     const struct hier *h, struct rec *r)
{
    unsigned sh = e->gs + e->bpl * (unsigned)(3 - level);
    /* Output address (D8.3.1 tables D8-50..53): OA[47:sh] in place; with
     * DS = 1 (FEAT_LPA2) OA[49:48] in bits 49:48 and OA[51:50] in bits 9:8,
     * which then hold no shareability (TCR/VTCR.SH0 gives it, checked with
     * the registers); 64K with FEAT_LPA: OA[51:48] in bits 15:12. */
    uint64_t oa = d & bits(47, sh), below = sh > 12 ? bits(sh - 1, 12) : 0;
    uint64_t dbm = e->hw ? 1ull << 51 : 0; /* DBM: writable, the MMU keeps it dirty or clean */
    if (e->lpa2) {
        oa = (d & bits(49, sh)) | ((d >> 8) & 3) << 50;
        if (d & bits(51, 50) & ~dbm)
            bad(va, level, d, "bits 51:50 set (DBM without TRACK_HW, GP: never written)");
    } else {
        if (e->lpa) {
            oa |= ((d >> 12) & 0xf) << 48;
            below = sh > 16 ? bits(sh - 1, 16) : 0;
        }
        if (d & bits(51, 48) & ~dbm)
            bad(va, level, d, "bits 51:48 set (OA beyond 48 bits, DBM without TRACK_HW, GP: "
                              "never written)");
        if (((d >> 8) & 3) == 1)
            bad(va, level, d, "SH = 0b01 is reserved");
    }
    if (d & below)
        bad(va, level, d, "bits below the output address set (RES0 / nT)");
    if (d & bits(63, 55))
        bad(va, level, d, "software / PBHA bits 63:55 set (mmport writes none)");
    if (e->pa_bits < 52 && oa >> e->pa_bits)
        bad(va, level, d, "output address beyond pa_bits");
    if (!(d & (1ull << 10)) && !e->hw)
        bad(va, level, d, "AF clear without TRACK_HW: every access would fault");
    r->pa = oa;
    r->size = 1ull << sh;
    r->cont = (d >> 52) & 1;
    unsigned ap = (d >> 6) & 3;
    if (e->fmt == MMP_PT_ARM64_S2) {
        unsigned xn = (d >> 53) & 3;
        if (xn == 1 || xn == 3)
            bad(va, level, d, "FEAT_XNX execute-never variant, never written");
        r->attrs = e->fwb ? s2_fwb_mem((d >> 2) & 0xf, va) : s2_mem((d >> 2) & 0xf, va);
        if (ap & 1)
            r->attrs |= MMP_PROT_READ;
        if ((ap & 2) || (d & dbm))
            r->attrs |= MMP_PROT_WRITE;
        if (!xn)
            r->attrs |= MMP_PROT_EXEC;
        return;
    }
    r->attrs = MMP_PROT_READ | mair_mem(e, (d >> 2) & 7, va);
    if ((!(ap & 2) || (d & dbm)) && !h->no_w)
        r->attrs |= MMP_PROT_WRITE;
    if (e->el2) { /* single-range regime: AP[1] RES1, one XN bit (54), no nG */
        if (!(ap & 1))
            bad(va, level, d, "AP[1] is RES1 in the EL2 regime");
        if (d & (1ull << 53 | 1ull << 11))
            bad(va, level, d, "bit 53 / nG set in the EL2 regime (RES0)");
        if (!((d >> 54) & 1) && !h->no_ux)
            r->attrs |= MMP_PROT_EXEC;
        return;
    }
    int user = (ap & 1) && !h->no_u;
    if (user)
        r->attrs |= MMP_PROT_USER;
    /* EL0 executes unless UXN, EL1 unless PXN: mmport's EXEC is the one for
     * the mapping's own privilege. */
    if (user ? !((d >> 54) & 1) && !h->no_ux : !((d >> 53) & 1) && !h->no_px)
        r->attrs |= MMP_PROT_EXEC;
    if (!((d >> 11) & 1))
        r->attrs |= MMP_PROT_GLOBAL;
}

static uint64_t canon(const struct env *e, uint64_t va)
{
    if (e->sign && ((va >> (e->va_bits - 1)) & 1))
        va |= ~0ull << e->va_bits;
    return va;
}

/*
 * Decode the leaves of the table t (depth d, translating [base, last]) that
 * overlap [lo, hi] into out; pages reached are marked linked at their place.
 */
static void decode(struct env *e, struct tpage *pg, unsigned d, uint64_t base, uint64_t last,
                   uint64_t lo, uint64_t hi, struct hier h, struct recs *out)
{
    if (lo < base)
        lo = base;
    if (hi > last)
        hi = last;
    if (lo > hi)
        return;
    unsigned sh = shift_of(e, d);
    int level = level_of(e, d);
    size_t nent = pg->bytes / 8;
    uint64_t *t = pg->mem;
    pg->dseen = e->dgen;
    if (pg->seen != e->gen) {
        pg->seen = e->gen;
        pg->linked = pg->ever = 1;
        pg->pend = 0;
        pg->depth = (uint8_t)d;
        pg->base = base;
        pg->last = last;
        memcpy(pg->shadow, pg->mem, pg->bytes);
    }
    /* x86 root: the upper half is indexed by the bits below the sign. */
    for (uint64_t va = lo & ~((1ull << sh) - 1);;) {
        size_t i = (size_t)((va >> sh) & (nent - 1));
        uint64_t x = __atomic_load_n(&t[i], __ATOMIC_RELAXED);
        uint64_t slast = va + (1ull << sh) - 1;
        if (e->ept) {
            if (x & (7 | (e->mbec ? 1ull << 10 : 0))) { /* present (29.3.2) */
                int leaf = level == 1 || (x & 0x80);
                if (leaf && level > 3)
                    bad(va, level, x, "bit 7 set in an EPT PML4E/PML5E (misconfiguration)");
                if (leaf) {
                    struct rec r = {.va = va, .level = (uint8_t)level, .desc = &t[i]};
                    ept_leaf(e, x, level, va, &h, &r);
                    recs_push(out, &r);
                } else {
                    if (x & (bits(7, 3) | bits(63, 52) | bits(11, 11) |
                             (e->mbec ? 0 : bits(10, 10))))
                        bad(va, level, x, "reserved bits 7:3 (or bits 63:52, 11, 10 without "
                                          "MBEC) of an EPT table entry set");
                    if ((x & 3) == 2)
                        bad(va, level, x, "EPT misconfiguration: write without read");
                    struct hier c = h;
                    c.no_u |= !(x & 1);
                    c.no_w |= !(x & 2);
                    c.no_x |= !(x & 4);
                    c.no_xu |= !((x >> 10) & 1);
                    struct tpage *cp = page_of_pa(e, x & bits(51, 12));
                    if (!cp || cp->pa != (x & bits(51, 12)))
                        bad(va, level, x, "EPT table entry points to no table page");
                    if (cp->dseen == e->dgen)
                        bad(va, level, x, "table page linked twice");
                    decode(e, cp, d + 1, va, slast, lo, hi, c, out);
                }
            }
        } else if (e->x86) {
            if (x & 1) {
                int leaf = level == 1 || (x & 0x80);
                if (leaf && level > 3)
                    bad(va, level, x, "PS set in a PML4E/PML5E (reserved)");
                if (leaf) {
                    struct rec r = {.va = va, .level = (uint8_t)level, .desc = &t[i]};
                    x86_leaf(e, x, level, va, &h, &r);
                    recs_push(out, &r);
                } else {
                    if (x & bits(62, 52))
                        bad(va, level, x, "bits 62:52 of a table entry set");
                    struct hier c = h;
                    c.no_w |= !(x & 2);
                    c.no_u |= !(x & 4);
                    c.no_x |= (int)(x >> 63);
                    struct tpage *cp = page_of_pa(e, x & bits(51, 12));
                    if (!cp || cp->pa != (x & bits(51, 12)))
                        bad(va, level, x, "table entry points to no table page");
                    if (cp->dseen == e->dgen)
                        bad(va, level, x, "table page linked twice");
                    decode(e, cp, d + 1, va, slast, lo, hi, c, out);
                }
            }
        } else if (x & 1) {
            if ((x & 2) && level < 3) {
                /* Next-level table address: as the output address above
                 * (D8.3.1 tables D8-50/51), bits 11:2 otherwise ignored. */
                uint64_t ta = x & bits(47, e->gs);
                if (e->lpa2) {
                    ta = (x & bits(49, e->gs)) | ((x >> 8) & 3) << 50;
                    if (x & bits(51, 50))
                        bad(va, level, x, "RES0 bits 51:50 of a table descriptor set");
                } else {
                    if (e->lpa)
                        ta |= ((x >> 12) & 0xf) << 48;
                    if (x & bits(50, 48))
                        bad(va, level, x, "RES0 bits 50:48 of a table descriptor set");
                }
                if (e->fmt == MMP_PT_ARM64_S2 && (x >> 59))
                    bad(va, level, x, "stage-2 table descriptor bits 63:59 set (RES0)");
                struct hier c = h;
                c.no_px |= (int)((x >> 59) & 1);
                c.no_ux |= (int)((x >> 60) & 1);
                c.no_u |= (int)((x >> 61) & 1);
                c.no_w |= (int)((x >> 62) & 1);
                struct tpage *cp = page_of_pa(e, ta);
                if (!cp || cp->pa != ta)
                    bad(va, level, x, "table descriptor points to no table page");
                if (cp->dseen == e->dgen)
                    bad(va, level, x, "table page linked twice");
                decode(e, cp, d + 1, va, slast, lo, hi, c, out);
            } else {
                if (!(x & 2) && level == 3)
                    bad(va, level, x, "descriptor type 0b01 at level 3 is reserved");
                if (!(x & 2) && !block_ok(e, level))
                    bad(va, level, x, "block descriptor at a level without blocks");
                struct rec r = {.va = va, .level = (uint8_t)level, .desc = &t[i]};
                arm_leaf(e, x, level, va, &h, &r);
                recs_push(out, &r);
            }
        }
        if (slast >= hi)
            break;
        va = slast + 1;
    }
}

/* Decode [lo, hi] of the whole table. */
static void decode_range(struct env *e, uint64_t lo, uint64_t hi, struct recs *out)
{
    struct hier h = {0, 0, 0, 0, 0, 0};
    out->n = 0;
    recs_reserve(out, 1); /* never a NULL array */
    e->dgen++;
    if (e->sign) { /* two halves: the root indexes bits va_bits-1..39/48 */
        uint64_t half = 1ull << (e->va_bits - 1);
        decode(e, e->root, 0, 0, half - 1, lo, hi, h, out);
        e->root->dseen = 0; /* the second half is the same page */
        decode(e, e->root, 0, canon(e, half), ~0ull, lo, hi, h, out);
        e->root->base = 0;
        e->root->last = ~0ull;
    } else {
        decode(e, e->root, 0, 0, (1ull << e->va_bits) - 1, lo, hi, h, out);
    }
}

/* ---- the TLB model ------------------------------------------------------------ */

static size_t first_ending_at_or_after(const struct recs *r, uint64_t a)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (rec_last(&r->v[mid]) < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int same_tr(const struct rec *a, const struct rec *b)
{
    return a->pa - a->va == b->pa - b->va && a->size == b->size && a->cont == b->cont &&
           a->attrs == b->attrs;
}

/* Why a TLB must not hold old and new at once, or NULL. */
static const char *conflict(const struct env *e, const struct rec *o, const struct rec *n)
{
    int frame = o->pa - o->va != n->pa - n->va;
    if (e->x86) /* SDM 4.10.2.3: both page sizes may be used until the flush */
        return o->size != n->size && (frame || o->attrs != n->attrs)
                   ? "page size changed together with frame or attributes"
                   : NULL;
    if (frame)
        return "output address changed";
    if (o->size != n->size)
        return "block size changed";
    if (o->cont != n->cont)
        return "contiguous bit changed";
    if ((o->attrs ^ n->attrs) & MMP_MEM_MASK)
        return "memory type changed";
    if ((n->attrs & ~o->attrs) & MMP_PROT_GLOBAL)
        return "non-global became global";
    return NULL;
}

static void tr_str(char *b, size_t n, const struct rec *r, uint64_t at)
{
    if (!r)
        snprintf(b, n, "invalid");
    else
        snprintf(b, n, "pa %#llx size %#llx%s attrs %#x", (ull)(r->pa + (at - r->va)),
                 (ull)r->size, r->cont ? " cont" : "", r->attrs);
}

static void add_stale(struct env *e, uint64_t lo, uint64_t hi, const struct rec *r)
{
    /* Extend the last record when it continues it (a run of pages). */
    if (e->nst) {
        struct stale *s = &e->st[e->nst - 1];
        if (s->hi + 1 == lo && same_tr(&s->r, r)) { /* offsets are what same_tr compares */
            s->hi = hi;
            return;
        }
    }
    if (e->nst == e->capst) {
        e->capst = e->capst ? e->capst * 2 : 64;
        e->st = realloc(e->st, e->capst * sizeof *e->st);
        if (!e->st)
            abort();
    }
    e->st[e->nst++] = (struct stale){lo, hi, *r};
}

/* Address segment [s, t] went from o to n (either may be NULL). */
static void changed(struct env *e, uint64_t s, uint64_t t, const struct rec *o,
                    const struct rec *n)
{
    char a[96], b[96];
    e->changes++;
    cov.changes++;
    if (n) {
        for (size_t i = 0; i < e->nst; i++) {
            const struct stale *x = &e->st[i];
            if (x->hi < s || x->lo > t || same_tr(&x->r, n))
                continue;
            uint64_t at = x->lo > s ? x->lo : s;
            const char *why = o ? conflict(e, &x->r, n) : "became valid";
            if (!why)
                continue;
            tr_str(a, sizeof a, &x->r, at);
            tr_str(b, sizeof b, n, at);
            FAILF("tlb model",
                  "va %#llx: %s while an older translation may still be cached "
                  "(no flush since it changed): old %s, now %s",
                  (ull)at, why, a, b);
        }
        const char *why = o ? conflict(e, o, n) : NULL;
        if (why) {
            tr_str(a, sizeof a, o, s);
            tr_str(b, sizeof b, n, s);
            FAILF("tlb model", "va %#llx: %s without break-before-make: old %s, now %s", (ull)s,
                  why, a, b);
        }
    }
    if (o)
        add_stale(e, s, t, o);
}

/* Compare old and new leaves over [lo, hi] segment by segment. */
static void diff(struct env *e, const struct rec *ov, size_t on, const struct rec *nv, size_t nn,
                 uint64_t lo, uint64_t hi)
{
    size_t i = 0, j = 0;
    for (uint64_t a = lo;;) {
        while (i < on && rec_last(&ov[i]) < a)
            i++;
        while (j < nn && rec_last(&nv[j]) < a)
            j++;
        const struct rec *o = i < on && ov[i].va <= a ? &ov[i] : NULL;
        const struct rec *n = j < nn && nv[j].va <= a ? &nv[j] : NULL;
        /* The segment ends where either side changes. */
        uint64_t end = hi;
        if (o && rec_last(o) < end)
            end = rec_last(o);
        else if (!o && i < on && ov[i].va - 1 < end)
            end = ov[i].va - 1;
        if (n && rec_last(n) < end)
            end = rec_last(n);
        else if (!n && j < nn && nv[j].va - 1 < end)
            end = nv[j].va - 1;
        if ((o || n) && !(o && n && same_tr(o, n)))
            changed(e, a, end, o, n);
        if (end >= hi)
            break;
        a = end + 1;
    }
}

struct range {
    uint64_t lo, hi;
};

static int by_lo(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* A contiguous run that holds [r] must be whole and consistent (D8.6.1);
 * returns the index after the run. */
static size_t check_run(const struct env *e, const struct recs *m, size_t k)
{
    const struct rec *r = &m->v[k];
    unsigned n = run_entries(e, r->level);
    uint64_t span = r->size * n, g0 = r->va & ~(span - 1);
    size_t i = first_ending_at_or_after(m, g0);
    const struct rec *f = i < m->n ? &m->v[i] : NULL;
    if (n < 2)
        bad(r->va, r->level, 0, "contiguous bit at a level without runs");
    if (!f || f->va != g0 || i + n > m->n)
        FAILF("tlb model", "va %#llx: contiguous run at %#llx is not whole (%u entries)",
              (ull)r->va, (ull)g0, n);
    if ((f->pa & (span - 1)))
        FAILF("tlb model", "va %#llx: contiguous run's output %#llx is not aligned to %#llx",
              (ull)g0, (ull)f->pa, (ull)span);
    for (unsigned x = 0; x < n; x++) {
        const struct rec *y = &m->v[i + x];
        if (y->va != g0 + x * r->size || y->size != r->size || !y->cont ||
            y->pa != f->pa + x * r->size || y->attrs != f->attrs)
            FAILF("tlb model", "va %#llx: contiguous run at %#llx misprogrammed at entry %u",
                  (ull)r->va, (ull)g0, x);
    }
    return i + n;
}

/*
 * Observe the table now: find the entries that changed since the last
 * look, decode the ranges they translate, and feed the differences to the
 * TLB model. Called from the hooks and after every call.
 */
static void snapshot(struct env *e)
{
    if (!e->ready)
        return;
    static struct range *rg;
    static size_t nrg, caprg;
    nrg = 0;
    for (unsigned p = 0; p < e->npg; p++) {
        struct tpage *pg = &e->pg[p];
        if (!pg->live || !pg->linked || !memcmp(pg->mem, pg->shadow, pg->bytes))
            continue;
        unsigned sh = shift_of(e, pg->depth);
        int lev = level_of(e, pg->depth);
        uint64_t grp = (uint64_t)run_entries(e, lev) << sh;
        size_t nent = pg->bytes / 8;
        for (size_t i = 0; i < nent; i++) {
            if (pg->mem[i] == pg->shadow[i])
                continue;
            uint64_t va = pg == e->root ? canon(e, (uint64_t)i << sh) : pg->base + (i << sh);
            if (nrg == caprg) {
                caprg = caprg ? caprg * 2 : 64;
                rg = realloc(rg, caprg * sizeof *rg);
                if (!rg)
                    abort();
            }
            /* A run may change as a whole: decode the run around it. */
            uint64_t lo = va & ~(grp - 1);
            rg[nrg++] = (struct range){lo, lo + grp - 1};
        }
    }
    if (!nrg)
        return;
    qsort(rg, nrg, sizeof *rg, by_lo);
    size_t w = 0;
    for (size_t i = 1; i < nrg; i++) {
        if (rg[w].hi == ~0ull || rg[i].lo <= rg[w].hi + 1) {
            if (rg[i].hi > rg[w].hi)
                rg[w].hi = rg[i].hi;
        } else {
            rg[++w] = rg[i];
        }
    }
    nrg = w + 1;
    e->gen++;
    static struct recs nw;
    for (size_t k = 0; k < nrg; k++) {
        uint64_t lo = rg[k].lo, hi = rg[k].hi;
        decode_range(e, lo, hi, &nw);
        /* Widen to whole old and new leaves at the edges. */
        size_t a = first_ending_at_or_after(&e->m, lo), b = a;
        if (a < e->m.n && e->m.v[a].va < lo)
            lo = e->m.v[a].va;
        if (nw.n && nw.v[0].va < lo)
            lo = nw.v[0].va;
        while (b < e->m.n && e->m.v[b].va <= hi)
            b++;
        if (b > a && rec_last(&e->m.v[b - 1]) > hi)
            hi = rec_last(&e->m.v[b - 1]);
        if (nw.n && rec_last(&nw.v[nw.n - 1]) > hi)
            hi = rec_last(&nw.v[nw.n - 1]);
        if (lo != rg[k].lo || hi != rg[k].hi) { /* only when a leaf crossed a change's edge */
            decode_range(e, lo, hi, &nw);
            a = first_ending_at_or_after(&e->m, lo);
            for (b = a; b < e->m.n && e->m.v[b].va <= hi;)
                b++;
        }
        recs_reserve(&e->m, nw.n + 1);
        diff(e, e->m.v + a, b - a, nw.v, nw.n, lo, hi);
        /* Replace m[a, b) by the new leaves. */
        memmove(e->m.v + a + nw.n, e->m.v + b, (e->m.n - b) * sizeof *e->m.v);
        memcpy(e->m.v + a, nw.v, nw.n * sizeof *nw.v);
        e->m.n = e->m.n - (b - a) + nw.n;
        rg[k].lo = lo;
        rg[k].hi = hi;
    }
    /* Pages that were linked inside a decoded range and were not reached
     * are unlinked now: they wait for a non-leaf flush over their span. */
    for (unsigned p = 0; p < e->npg; p++) {
        struct tpage *pg = &e->pg[p];
        if (!pg->live || !pg->linked || pg->seen == e->gen || pg == e->root)
            continue;
        for (size_t k = 0; k < nrg; k++)
            if (rg[k].lo <= pg->base && pg->last <= rg[k].hi) {
                pg->linked = 0;
                pg->pend = 1;
                cov.unlinked++;
                break;
            }
    }
    for (size_t k = 0; k < nrg; k++)
        for (size_t i = first_ending_at_or_after(&e->m, rg[k].lo);
             i < e->m.n && e->m.v[i].va <= rg[k].hi;) {
            const struct rec *r = &e->m.v[i];
            uint64_t tlb = r->cont ? r->size * run_entries(e, r->level) : r->size;
            if (e->max_leaf && tlb > e->max_leaf)
                FAILF("tlb model", "va %#llx: a leaf%s of %#llx bytes, above max_leaf %#llx",
                      (ull)r->va, r->cont ? " run" : "", (ull)tlb, (ull)e->max_leaf);
            i = r->cont ? check_run(e, &e->m, i) : i + 1;
        }
}

static void f_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags)
{
    struct env *e = ctx;
    e->flushes++;
    cov.flushes++;
    if (trace)
        fprintf(stderr, "  tlb_flush va %#llx size %#llx flags %#x\n", (ull)va, (ull)size, flags);
    if (!e->ready)
        return;
    if (flags & ~(unsigned)(MMP_FLUSH_LEAF | MMP_FLUSH_ALL | MMP_FLUSH_GLOBAL |
                            MMP_FLUSH_STRIDE_MASK))
        FAILF("tlb_flush", "unknown flags %#x", flags);
    if ((flags & MMP_FLUSH_GLOBAL) && (e->x86 ? e->fmt != MMP_PT_X86_64 : e->fmt != MMP_PT_ARM64_S1 || e->el2))
        FAILF("tlb_flush", "MMP_FLUSH_GLOBAL from a format without global entries");
    unsigned stride = (flags & MMP_FLUSH_LEAF) ? MMP_FLUSH_STRIDE(flags) : 0;
    uint64_t gm = (1ull << e->gs) - 1, hi = va + size - 1;
    if (!(flags & MMP_FLUSH_ALL)) {
        if (!size)
            FAILF("tlb_flush", "va %#llx size 0 without MMP_FLUSH_ALL", (ull)va);
        if (hi < va)
            FAILF("tlb_flush", "va %#llx size %#llx wraps", (ull)va, (ull)size);
        if ((va | size) & gm)
            FAILF("tlb_flush", "va %#llx size %#llx not granule-aligned", (ull)va, (ull)size);
        if (MMP_FLUSH_STRIDE(flags) && (!stride || stride < e->gs || ((va | size) & ((1ull << stride) - 1))))
            FAILF("tlb_flush", "va %#llx size %#llx flags %#x: bad stride", (ull)va, (ull)size,
                  flags);
        if ((size >> (stride ? stride : e->gs)) > e->ceiling)
            FAILF("tlb_flush", "va %#llx size %#llx flags %#x: more invalidations than the "
                  "ceiling %llu", (ull)va, (ull)size, flags, (ull)e->ceiling);
    } else {
        if (flags & ~(unsigned)(MMP_FLUSH_ALL | MMP_FLUSH_GLOBAL))
            FAILF("tlb_flush", "MMP_FLUSH_ALL with flags %#x", flags);
        va = 0;
        hi = ~0ull;
    }
    snapshot(e); /* what changed before this flush is what it can cover */
    static struct stale *keep;
    static size_t capk;
    if (capk < 2 * e->nst + 2) {
        capk = 2 * e->nst + 2;
        keep = realloc(keep, capk * sizeof *keep);
        if (!keep)
            abort();
    }
    size_t w = 0;
    for (size_t i = 0; i < e->nst; i++) { /* keep what lies outside the flush */
        struct stale s = e->st[i];
        /* A flush that gives a stride invalidates (arm64 TTL hint) only
         * leaves of that size; one without MMP_FLUSH_GLOBAL not global
         * ones (a flush by ASID / PCID). */
        int missed = (stride && s.r.size != 1ull << stride) ||
                      ((s.r.attrs & MMP_PROT_GLOBAL) && !(flags & MMP_FLUSH_GLOBAL));
        if (s.hi < va || s.lo > hi || missed) {
            keep[w++] = s;
            continue;
        }
        if (s.lo < va)
            keep[w++] = (struct stale){s.lo, va - 1, s.r};
        if (s.hi > hi)
            keep[w++] = (struct stale){hi + 1, s.hi, s.r};
    }
    e->nst = 0;
    for (size_t i = 0; i < w; i++)
        add_stale(e, keep[i].lo, keep[i].hi, &keep[i].r);
    if (!(flags & MMP_FLUSH_LEAF))
        for (unsigned p = 0; p < e->npg; p++)
            if (e->pg[p].pend && va <= e->pg[p].base && e->pg[p].last <= hi)
                e->pg[p].pend = 0;
}

/* Nothing may stay pending where the call or section is over. */
static void quiescent(struct env *e, const char *what)
{
    snapshot(e);
    if (e->nst) {
        char a[96];
        tr_str(a, sizeof a, &e->st[0].r, e->st[0].lo);
        FAILF(what, "va %#llx..%#llx changed (old %s) and was not flushed", (ull)e->st[0].lo,
              (ull)e->st[0].hi, a);
    }
    for (unsigned p = 0; p < e->npg; p++)
        if (e->pg[p].pend)
            FAILF(what, "table page for va %#llx..%#llx unlinked without a non-leaf flush",
                  (ull)e->pg[p].base, (ull)e->pg[p].last);
}

/* ---- inputs ----------------------------------------------------------------- */

static uint32_t pick_attrs(uint8_t b, const struct env *e)
{
    uint32_t a = MMP_PROT_READ;
    if (b & 1)
        a |= MMP_PROT_WRITE;
    if (b & 2)
        a |= MMP_PROT_EXEC;
    if (e->fmt != MMP_PT_ARM64_S2 && !e->el2 && !e->ept && !e->npt) {
        if (b & 4)
            a |= MMP_PROT_USER;
        if (b & 8)
            a |= MMP_PROT_GLOBAL;
    }
    if (e->mbec && (b & 8)) /* user-mode execute; with b & 2 in both modes */
        a |= MMP_PROT_UEXEC;
    if (e->xo && (b & 4)) /* EPT execute-only (in either mode, with MBEC) */
        a = a & MMP_PROT_UEXEC ? a & (MMP_PROT_EXEC | MMP_PROT_UEXEC) : MMP_PROT_EXEC;
    static const uint32_t mem[] = {MMP_MEM_NORMAL_WB, MMP_MEM_NORMAL_NC, MMP_MEM_DEVICE,
                                   MMP_MEM_WC,        MMP_MEM_WT,        MMP_MEM_WP};
    return a | mem[(b >> 4) % (e->ept ? 6 : 3)];
}

enum { OP_MAP, OP_MAP_REPLACE, OP_UNMAP, OP_PROTECT, OP_LOOKUP, OP_FAIL_NEXT, OP_LAZY, OP_RANGE };

struct lazy_track {
    unsigned depth, paused;
};

static int quiet_now(const struct lazy_track *lz)
{
    return !lz->depth || lz->paused;
}

/* enter / leave / flush / pause / resume, chosen by one byte. */
static void lazy_op(struct mmp_pt *pt, struct env *e, struct lazy_track *lz, uint8_t which)
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
        if (!rc && !lz->depth)
            quiescent(e, "lazy leave");
        break;
    case 2:
        rc = mmp_lazy_flush(pt);
        want = lz->depth ? 0 : -MMP_EINVAL;
        if (!rc)
            quiescent(e, "lazy flush");
        break;
    case 3:
        rc = mmp_lazy_pause(pt);
        want = lz->depth ? 0 : -MMP_EINVAL;
        lz->paused += rc == 0;
        if (!rc)
            quiescent(e, "lazy pause");
        break;
    default:
        rc = mmp_lazy_resume(pt);
        want = lz->paused ? 0 : -MMP_EINVAL;
        lz->paused -= rc == 0;
        break;
    }
    if (rc != want)
        FAILF("lazy", "op %u returned %d, expected %d", which % 5, rc, want);
    if (mmp_lazy_depth(pt) != lz->depth)
        fail("lazy", "depth differs");
    snapshot(e);
}

struct op {
    int kind;
    uint64_t va, pa, len;
    uint32_t attrs, mflags;
};

static int apply(struct mmp_pt *pt, const struct op *o)
{
    switch (o->kind) {
    case OP_MAP:
        return mmp_pt_map(pt, o->va, o->pa, o->len, o->attrs, o->mflags);
    case OP_MAP_REPLACE:
        return mmp_pt_map(pt, o->va, o->pa, o->len, o->attrs, o->mflags | MMP_MAP_REPLACE);
    case OP_UNMAP:
        return mmp_pt_unmap(pt, o->va, o->len);
    default:
        return mmp_pt_protect(pt, o->va, o->len, o->attrs);
    }
}

/* The fuzzed windows of the input space and where the extent model keeps them. */
struct windows {
    uint64_t base[NWIN], size;
};

static uint64_t model_va(const struct windows *w, unsigned k, uint64_t va)
{
    return ((uint64_t)k << MODEL_WIN_SHIFT) + (va - w->base[k]);
}

static void model_apply(struct pt_model *m, const struct windows *w, unsigned k,
                        const struct op *o)
{
    uint64_t mv = model_va(w, k, o->va);
    switch (o->kind) {
    case OP_MAP:
    case OP_MAP_REPLACE:
        pt_model_map(m, mv, o->pa, o->len, o->attrs);
        break;
    case OP_UNMAP:
        pt_model_unmap(m, mv, o->len);
        break;
    default:
        pt_model_protect(m, mv, o->len, o->attrs);
        break;
    }
}

/* Leaves (this file's decode) merged into extents and moved to model space. */
static void merged(const struct env *e, const struct windows *w, struct pt_model *out)
{
    pt_model_init(out);
    for (size_t i = 0; i < e->m.n; i++) {
        const struct rec *r = &e->m.v[i];
        unsigned k = 0;
        while (k < NWIN && !(r->va - w->base[k] < w->size && rec_last(r) - w->base[k] < w->size))
            k++;
        if (k == NWIN)
            FAILF("check", "leaf va %#llx size %#llx outside the fuzzed windows", (ull)r->va,
                  (ull)r->size);
        uint64_t mv = model_va(w, k, r->va);
        if (out->n) {
            struct pt_model_extent *l = &out->ext[out->n - 1];
            if (l->va + l->size == mv && l->pa + l->size == r->pa && l->attrs == r->attrs) {
                l->size += r->size;
                continue;
            }
        }
        pt_model_map(out, mv, r->pa, r->size, r->attrs);
    }
}

struct walk_cmp {
    const struct env *e;
    size_t i, seen;
    char msg[200];
};

/* The library's walk must report exactly the leaves this decoder reads. */
static int cmp_leaf(void *arg, const struct mmp_pt_leaf *l)
{
    struct walk_cmp *c = arg;
    const struct recs *m = &c->e->m;
    size_t i = c->i++; /* both in address order */
    const struct rec *r = i < m->n ? &m->v[i] : NULL;
    int kind = !r ? -1 : r->cont ? MMP_LEAF_CONT
                     : (c->e->x86 ? r->level == 1 : r->level == 3) ? MMP_LEAF_PAGE
                                                                      : MMP_LEAF_BLOCK;
    if (!r || r->va != l->va || r->size != l->size || r->pa != l->pa || r->attrs != l->attrs ||
        kind != l->kind || r->level != l->level) {
        snprintf(c->msg, sizeof c->msg,
                 "walk leaf va %#llx size %#llx pa %#llx attrs %#x kind %u level %u; "
                 "decoded %s va %#llx size %#llx pa %#llx attrs %#x kind %d level %u",
                 (ull)l->va, (ull)l->size, (ull)l->pa, l->attrs, l->kind, l->level,
                 r ? "" : "none", r ? (ull)r->va : 0, r ? (ull)r->size : 0,
                 r ? (ull)r->pa : 0, r ? r->attrs : 0, kind, r ? r->level : 0);
        return 1;
    }
    c->seen++;
    return 0;
}

static void check(struct mmp_pt *pt, const struct pt_model *m, struct env *e, const struct windows *w,
                  uint32_t cfl, const char *after)
{
    snapshot(e);
    /* the decoded table against the extent model (both merged the same way) */
    struct pt_model got, want;
    merged(e, w, &got);
    pt_model_init(&want);
    for (size_t i = 0; i < m->n; i++) {
        const struct pt_model_extent *x = &m->ext[i];
        struct pt_model_extent *l = want.n ? &want.ext[want.n - 1] : NULL;
        if (l && l->va + l->size == x->va && l->pa + l->size == x->pa && l->attrs == x->attrs)
            l->size += x->size;
        else
            pt_model_map(&want, x->va, x->pa, x->size, x->attrs);
    }
    m = &want;
    size_t n = got.n > m->n ? got.n : m->n;
    for (size_t i = 0; i < n; i++) {
        const struct pt_model_extent *g = i < got.n ? &got.ext[i] : NULL;
        const struct pt_model_extent *x = i < m->n ? &m->ext[i] : NULL;
        if (g && x && g->va == x->va && g->size == x->size && g->pa == x->pa &&
            g->attrs == x->attrs)
            continue;
        unsigned k = (unsigned)((g ? g->va : x->va) >> MODEL_WIN_SHIFT);
        uint64_t off = (g ? g->va : x->va) & ((1ull << MODEL_WIN_SHIFT) - 1);
        FAILF(after,
              "extent %zu (window %u at va %#llx): table size %#llx pa %#llx attrs %#x, "
              "model va+%#llx size %#llx pa %#llx attrs %#x",
              i, k, (ull)(w->base[k & 3] + off), g ? (ull)g->size : 0, g ? (ull)g->pa : 0,
              g ? g->attrs : 0, x ? (ull)(x->va & ((1ull << MODEL_WIN_SHIFT) - 1)) : 0,
              x ? (ull)x->size : 0, x ? (ull)x->pa : 0, x ? x->attrs : 0);
    }
    pt_model_free(&got);
    pt_model_free(&want);
    /* the library's walk against the decoder, window by window */
    struct walk_cmp c = {e, 0, 0, ""};
    for (unsigned k = 0; k < NWIN; k++) {
        int rc = mmp_pt_walk(pt, w->base[k], w->size, cmp_leaf, &c);
        if (rc)
            fail(after, c.msg[0] ? c.msg : "walk failed");
    }
    if (c.seen != e->m.n)
        FAILF(after, "walk saw %zu leaves, the decoder %zu", c.seen, e->m.n);
    struct mmp_pt_usage u;
    struct mmp_pt_stats s;
    if (mmp_pt_usage(pt, &u))
        fail(after, "usage failed");
    mmp_pt_stats(pt, &s);
    if (u.empty_tables && !(cfl & MMP_PT_KEEP_TABLES))
        fail(after, "an empty table is still linked");
    long linked = 0;
    for (unsigned p = 0; p < e->npg; p++)
        linked += e->pg[p].linked ? (long)(e->pg[p].bytes >> e->gs) : 0;
    if ((long)u.table_pages != linked)
        FAILF(after, "library reaches %llu table pages, the decoder %ld", (ull)u.table_pages,
              linked);
    if (!mmp_lazy_depth(pt) && u.table_pages != s.table_pages)
        FAILF(after, "reachable %llu table pages, counted %llu", (ull)u.table_pages,
              (ull)s.table_pages);
}

/* ---- what a map leaves: folded regions, identical replaces -------------- */

/* The run size of a contiguous leaf of size `leaf` (0: none). */
static uint64_t run_of(const struct mmp_pt_info *inf, uint64_t leaf)
{
    for (unsigned b = 0; b < 64; b++) {
        uint64_t c = 1ull << b, l = 0;
        if (!(inf->cont_sizes >> b & 1))
            continue;
        for (unsigned x = 0; x < b; x++) /* the run's leaf: the largest leaf below it */
            if (inf->block_sizes >> x & 1)
                l = 1ull << x;
        if (l == leaf)
            return c;
    }
    return 0;
}

/* The decoded table maps [va, va + len) to pa.. with attrs, all of it. */
static int recs_translate(const struct env *e, uint64_t va, uint64_t len, uint64_t pa,
                          uint32_t attrs)
{
    uint64_t at = va, last = va + len - 1;
    for (size_t i = first_ending_at_or_after(&e->m, va); i < e->m.n; i++) {
        const struct rec *r = &e->m.v[i];
        if (r->va > at || r->attrs != attrs || r->pa + (at - r->va) != pa + (at - va))
            return 0;
        if (rec_last(r) >= last)
            return 1;
        at = rec_last(r) + 1;
    }
    return 0;
}

/* Leaves decoded in [lo, hi], a contiguous run counted once. */
static size_t leaf_units(const struct env *e, const struct mmp_pt_info *inf, uint64_t lo,
                         uint64_t hi)
{
    size_t n = 0;
    for (size_t i = first_ending_at_or_after(&e->m, lo); i < e->m.n && e->m.v[i].va <= hi; i++)
        n += !e->m.v[i].cont || !(e->m.v[i].va & (run_of(inf, e->m.v[i].size) - 1));
    return n;
}

/*
 * After a map: every region of a block or run size around either end of
 * [va, va + len) that the table now maps uniformly (one aligned output
 * range, one set of attributes) is one leaf or run - a map folds what it
 * completes with earlier calls (include/mmport/pt.h). Not for maps with
 * per-call flags, nor tables made with NO_FOLD.
 */
static void check_folded(const struct env *e, const struct mmp_pt_info *inf, uint64_t va,
                         uint64_t len, uint32_t cfl, const char *what)
{
    if (cfl & MMP_PT_NO_FOLD)
        return;
    for (unsigned b = 0; b < 64; b++) {
        uint64_t L = 1ull << b, leaf = 0;
        int run = (inf->cont_sizes >> b & 1) != 0;
        if (L <= inf->granule || !((inf->block_sizes | inf->cont_sizes) >> b & 1))
            continue;
        for (unsigned x = 0; x < b; x++)
            if (inf->block_sizes >> x & 1)
                leaf = 1ull << x;
        if (run ? (cfl & MMP_PT_NO_CONT) || (leaf > inf->granule && (cfl & MMP_PT_NO_BLOCKS))
                : (cfl & MMP_PT_NO_BLOCKS) != 0)
            continue;
        for (int end = 0; end < 2; end++) {
            uint64_t r = (end ? va + len - 1 : va) & ~(L - 1);
            size_t i = first_ending_at_or_after(&e->m, r);
            if (i == e->m.n || e->m.v[i].va > r)
                continue;
            const struct rec *f = &e->m.v[i];
            uint64_t pa = f->pa + (r - f->va);
            if ((pa & (L - 1)) || !recs_translate(e, r, L, pa, f->attrs))
                continue;
            if (f->size >= L || (run && f->cont && f->size == leaf))
                continue;
            FAILF(what, "va %#llx..%#llx maps %#llx.. uniformly but is not one %s: leaf %#llx%s",
                  (ull)r, (ull)(r + L - 1), (ull)pa, run ? "run" : "block", (ull)f->size,
                  f->cont ? " cont" : "");
        }
    }
}

/* ---- systematic fault injection ------------------------------------------- */

/*
 * MMPORT_FUZZ_SYSTEMATIC=1 in the replay: every map/unmap/protect first
 * runs with its 1st, 2nd, ... allocation failing until one attempt needs
 * no more allocations than that; every failed attempt must leave the
 * table exactly as it was, flush nothing and keep no page.
 */
static int systematic = -1;
unsigned long fuzz_pt_injected; /* failures injected and survived */

static unsigned popc(uint64_t x)
{
    return (unsigned)__builtin_popcountll(x);
}

void fuzz_report(void);
void fuzz_report(void)
{
    printf("model: %lu operations, %lu translation changes and %lu flushes checked, %lu tables "
           "unlinked, %lu frees checked\n",
           cov.ops, cov.changes, cov.flushes, cov.unlinked, cov.freed_checked);
    printf("covered: layouts %u/%zu, create flags %#x, flush_ranges %u/9, pa_bits %u/4, "
           "max_leaf %u/3, map flags %#x, windows %u/4, lazy ops %u/5, op kinds %u/8, offset phys_to_virt %s, "
           "set-bit fill %s, tracking ops %u/8\n",
           popc(cov.layouts), NCFGS, cov.cfl, popc(cov.ranges), popc(cov.pab), popc(cov.maxleaf & 7), cov.mflags,
           popc(cov.wins), popc(cov.lazy), popc(cov.kinds), cov.p2v_offset ? "yes" : "no",
           cov.fill_set ? "yes" : "no", popc(cov.trk));
}

static int attempt_failing_at(struct mmp_pt *pt, struct env *e, const struct op *o, long k,
                              const char *what)
{
    long live = e->live, flushes = e->flushes, changes = e->changes;
    e->fail_at = k;
    e->nalloc = 0;
    int rc = apply(pt, o);
    e->fail_at = 0;
    if (rc != -MMP_ENOMEM || e->nalloc < k)
        return rc; /* the failure was not reached, or the call failed otherwise */
    snapshot(e);
    if (e->live != live)
        fail(what, "a failed call kept or lost table pages");
    if (e->flushes != flushes)
        fail(what, "a failed call flushed");
    if (e->changes != changes)
        fail(what, "a failed call changed a translation");
    fuzz_pt_injected++;
    return rc;
}

/* ---- the MMU's tracking and the passes ------------------------------------ */

/* The shadow copy takes a change that is the MMU's, not the library's. */
static void shadow_set(struct env *e, const uint64_t *p, uint64_t v)
{
    for (unsigned i = 0; i < e->npg; i++) {
        struct tpage *pg = &e->pg[i];
        if (pg->live && (uintptr_t)p - (uintptr_t)pg->mem < pg->bytes) {
            pg->shadow[p - pg->mem] = v;
            return;
        }
    }
}

/*
 * The guest accesses (write: writes) va and the MMU records it in the
 * leaf's descriptor as the manuals say (SDM 3A 4.8: A, D; 3C 29.3.5: EPT
 * A bit 8, D bit 9; Arm ARM D8.4.6/7: AF, and a DBM leaf made writable -
 * AP[2] cleared, S2AP[1] set); in a contiguous run in entry `pick` of the
 * run, whichever page of it was accessed (D8.6.1). Returns -1 (nothing
 * mapped: the access would fault), 0 (an access, or a write the page does
 * not allow: the MMU records only the access) or 1 (a write recorded).
 */
static int mmu_access(struct env *e, uint64_t va, int write, unsigned pick)
{
    snapshot(e);
    size_t i = first_ending_at_or_after(&e->m, va);
    if (i == e->m.n || e->m.v[i].va > va)
        return -1;
    const struct rec *r = &e->m.v[i];
    uint64_t *p = r->desc;
    if (r->cont) {
        unsigned n = run_entries(e, r->level);
        p = r->desc - (r->va & (r->size * n - 1)) / r->size + pick % n;
    }
    write = write && (r->attrs & MMP_PROT_WRITE);
    uint64_t d = *p;
    if (e->ept)
        d |= 1ull << 8 | (write ? 1ull << 9 : 0);
    else if (e->x86)
        d |= 1ull << 5 | (write ? 1ull << 6 : 0);
    else if ((d |= 1ull << 10), write && (d >> 51 & 1))
        d = e->fmt == MMP_PT_ARM64_S2 ? d | 1ull << 7 : d & ~(1ull << 7);
    *p = d;
    shadow_set(e, p, d);
    return write;
}

/*
 * A harvest (young: a test-clear-young) of the n pages from va, checked
 * against the tracking model: every page owed a report is reported, and
 * *count is the number of bits set.
 */
static void track_pass(struct mmp_pt *pt, struct env *e, struct trk_model *tm, uint64_t va,
                       uint64_t mva, uint64_t n, int young, const char *what)
{
    uint64_t *bm = calloc(n / 64 + 1, 8), cnt = ~0ull, set = 0, missed;
    if (!bm)
        abort();
    uint64_t sz = n << e->gs;
    int rc = young ? mmp_pt_test_clear_young(pt, va, sz, bm, &cnt)
                   : mmp_pt_track_harvest(pt, va, sz, bm, &cnt);
    if (rc)
        FAILF(what, "returned %d", rc);
    for (uint64_t j = 0; j < n / 64 + 1; j++)
        set += popc(bm[j]);
    if (cnt != set)
        FAILF(what, "*count %llu, %llu bits set", (ull)cnt, (ull)set);
    if (trk_model_pass(tm, young ? TRK_YOUNG : TRK_DIRTY, mva, 1ull << e->gs, n, bm, &missed))
        FAILF("track model", "%s: page va %#llx was %s (the MMU recorded it) and is not reported",
              what, (ull)(va + (missed - mva)), young ? "accessed" : "written");
    free(bm);
}

/* ---- the target ------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (systematic < 0) {
        const char *s = getenv("MMPORT_FUZZ_SYSTEMATIC");
        systematic = s && *s == '1';
        s = getenv("MMPORT_FUZZ_TRACE");
        trace = s && *s == '1';
    }
    if (size < 3)
        return 0;
    unsigned li = data[0] < WIDE_FROM ? data[0] % NBASE
                                      : NBASE + (data[0] - WIDE_FROM) % (unsigned)(NCFGS - NBASE);
    const struct fcfg *fc = &cfgs[li];
    int x86 = fc->format == MMP_PT_X86_64 || fc->format == MMP_PT_X86_EPT ||
              fc->format == MMP_PT_X86_NPT;
    int sign = fc->format == MMP_PT_X86_64; /* canonical VAs; EPT/NPT take GPAs */
    uint32_t cfl = data[1] & 0x3f;
    if (fc->format != MMP_PT_ARM64_S1)
        cfl &= ~(uint32_t)MMP_PT_EL2;
    if (fc->format == MMP_PT_ARM64_S2 && (data[1] & 0x20)) /* ... and FWB at stage 2 */
        cfl |= MMP_PT_S2FWB;
    if (fc->format == MMP_PT_X86_EPT) { /* the EL2 bit means execute-only here */
        cfl |= data[1] & 0x20 ? MMP_PT_EPT_XO : 0;
        cfl |= (data[2] / 36) & 1 ? MMP_PT_EPT_AD : 0;
    }
    cfl |= fc->flags & ~PA52;
    /* Hardware tracking for every other input of a layout (odd byte 0 /
     * 28, or for the wide layouts (byte 0 - 224) / 8: the layout stays
     * what byte 0 picks); EPT needs its A/D flags for it. */
    int hw = (data[0] < WIDE_FROM ? data[0] / NBASE : (data[0] - WIDE_FROM) / (NCFGS - NBASE)) & 1;
    if (hw && (fc->format != MMP_PT_X86_EPT || (cfl & MMP_PT_EPT_AD)))
        cfl |= MMP_PT_TRACK_HW;
    /* arm64: 52 selects the 52-bit descriptor layouts (FEAT_LPA2 / FEAT_LPA) */
    static const uint32_t pab_x86[] = {0, 36, 40, 46}, pab_arm[] = {0, 32, 40, 52};
    uint32_t pa_bits = fc->flags & PA52 ? 52 : (x86 ? pab_x86 : pab_arm)[(data[2] / 9) % 4];
    /* max_leaf: none, the smallest block, or 16 granules */
    static const uint64_t first_block[] = {2ull << 20, 32ull << 20, 512ull << 20};
    unsigned ml = (data[2] / 72) % 4;
    uint64_t max_leaf = ml == 1   ? first_block[fc->granule == 4096 ? 0 : fc->granule == 16384 ? 1 : 2]
                        : ml == 2 ? 16ull * fc->granule
                                  : 0;
    struct mmp_pt_config cfg = {fc->format, fc->granule, fc->va_bits, pa_bits, cfl,
                                data[2] % 9u, max_leaf, 0};
    static struct env e;
    memset(&e, 0, sizeof e);
    cov.layouts |= 1ull << li;
    cov.cfl |= cfl;
    cov.maxleaf |= 1u << ((data[2] / 72) % 4);
    cov.ranges |= 1u << (data[2] % 9u);
    cov.pab |= 1u << ((data[2] / 9) % 4);
    cov.p2v_offset |= data[1] >> 7;
    cov.fill_set |= (data[1] >> 6) & 1;
    e.fill = data[1] & 0x40 ? 0xa5 : 0x5a;
    e.offset_p2v = data[1] >> 7;
    e.gs = fc->granule == 4096 ? 12 : fc->granule == 16384 ? 14 : 16;
    unsigned pab = pa_bits ? pa_bits : x86 ? 52 : 48;
    /* Table pages at the top of the output space (offset mode); with the
     * arm64 52-bit layouts below 5 << 48, so that OA[51:50] (01) and
     * OA[49:48] (00) differ and a field moved or swapped shows. */
    int arm52 = !x86 && pab == 52;
    e.tbl_base = (arm52 ? 5ull << 48 : 1ull << pab) - MAXPAGES * SLOT;
    struct mmp_pt_ops ops = {.alloc_table = f_alloc,
                             .free_table = f_free,
                             .phys_to_virt = e.offset_p2v ? f_p2v : NULL,
                             .tlb_flush = f_flush,
                             .ctx = &e};
    static struct mmp_pt pt;
    if (mmp_pt_init(&pt, &cfg, &ops))
        fail("init", "failed");
    long root_pages = e.live;
    struct mmp_pt_info info;
    if (mmp_pt_info(&pt, &info))
        fail("info", "failed");
    /* The decoder's geometry: what TCR/VTCR/CR4 and MAIR say. */
    e.fmt = fc->format;
    e.x86 = x86;
    e.sign = sign;
    e.ept = fc->format == MMP_PT_X86_EPT;
    e.npt = fc->format == MMP_PT_X86_NPT;
    e.xo = (cfl & MMP_PT_EPT_XO) != 0;
    e.fwb = (cfl & MMP_PT_S2FWB) != 0;
    e.max_leaf = max_leaf;
    e.ceiling = fc->format == MMP_PT_ARM64_S1 || fc->format == MMP_PT_ARM64_S2 ? fc->granule / 8 : 33;
    e.el2 = (cfl & MMP_PT_EL2) != 0;
    e.bpl = e.gs - 3;
    e.nlev = info.levels;
    e.start = info.start_level;
    e.mbec = (cfl & MMP_PT_EPT_MBEC) != 0;
    e.hw = (cfl & MMP_PT_TRACK_HW) != 0;
    e.pa_bits = pab;
    e.va_bits = fc->va_bits;
    e.mair = info.mair;
    if (info.pa_bits != pab || (!x86 && info.t0sz != 64 - fc->va_bits))
        fail("info", "geometry differs from the configuration");
    if (!x86) {
        /* TCR_EL1 (D24.2.194): IPS 34:32, DS 59; TCR_EL2 with E2H = 0
         * (D24.2.195) and VTCR_EL2 (D24.2.224): PS 18:16, DS 32. PS/IPS
         * 0b110 is 52 bits; DS = 1 selects the FEAT_LPA2 descriptors, whose
         * Normal memory is as shareable as SH0 (13:12) says (D8.3.1). */
        struct mmp_pt_regs rg;
        if (mmp_pt_regs(&pt, 0, &rg))
            fail("regs", "failed");
        int tcr2 = fc->format == MMP_PT_ARM64_S2 || e.el2;
        unsigned ds = (unsigned)(rg.tcr >> (tcr2 ? 32 : 59)) & 1;
        unsigned ps = (unsigned)(rg.tcr >> (tcr2 ? 16 : 32)) & 7, sh0 = (rg.tcr >> 12) & 3;
        if ((ps == 6) != (pab == 52) || ds != (pab == 52 && e.gs != 16))
            FAILF("regs", "TCR %#llx: PS %u / DS %u do not match pa_bits %u, granule %u",
                  (ull)rg.tcr, ps, ds, pab, fc->granule);
        if (ds && sh0 < 2)
            FAILF("regs", "TCR %#llx: SH0 %u with DS = 1 (reserved or non-shareable leaves)",
                  (ull)rg.tcr, sh0);
        e.lpa2 = ds;
        e.lpa = ps == 6 && e.gs == 16;
    }
    e.root = page_of_pa(&e, mmp_pt_root(&pt));
    if (!e.root || e.root->pa != mmp_pt_root(&pt) || e.root->bytes != info.root_bytes)
        fail("init", "root is no table page of root_bytes");
    e.ready = 1;
    e.gen = 1;
    {
        struct recs r = {0};
        decode_range(&e, 0, sign ? ~0ull : (1ull << fc->va_bits) - 1, &r);
        if (r.n)
            fail("init", "a fresh table translates something");
        free(r.v);
    }

    struct windows w;
    unsigned vb = fc->va_bits;
    w.size = vb - 2 < 36 ? 1ull << (vb - 2) : 1ull << 36;
    uint64_t half = 1ull << (vb - 1);
    w.base[0] = 0;
    w.base[1] = half - w.size;
    w.base[2] = sign ? 0 - half : half;
    w.base[3] = (sign ? 0 : 1ull << vb) - w.size;
    uint64_t pw = pab - 1 < 36 ? 1ull << (pab - 1) : 1ull << 36;

    /* Units an address or size is drawn in: every leaf and run size. */
    uint64_t units[64];
    unsigned nunits = 0;
    for (unsigned b = 0; b < 64; b++)
        if (((info.block_sizes | info.cont_sizes) >> b) & 1 && (1ull << b) <= w.size)
            units[nunits++] = 1ull << b;

    uint64_t blk1 = 1ull << 63; /* the smallest block above the granule */
    for (unsigned b = 63; b > e.gs; b--)
        if ((info.block_sizes >> b) & 1)
            blk1 = 1ull << b;

    struct pt_model m;
    pt_model_init(&m);
    struct trk_model tm;
    trk_model_init(&tm);
    char what[200];
    long fail_next = 0;
    struct lazy_track lz = {0, 0};
    struct prev_op {
        unsigned win;
        uint64_t voff, poff, pbase, len;
    } prev = {0, 0, 0, 0, fc->granule};
    for (size_t off = 3; off + 8 <= size; off += 8) {
        const uint8_t *b = data + off;
        uint64_t unit = units[(b[1] & 0x3f) % nunits];
        unsigned win = (b[0] >> 3) & 3;
        struct op o = {.kind = b[0] & 7};
        o.mflags = (b[0] >> 5) & 3 ? (uint32_t)((b[0] >> 5) & 3) << 1 : 0; /* NO_BLOCK, NO_CONT */
        o.len = (uint64_t)(b[6] % 16 + 1) * (b[1] & 0x80 ? unit : fc->granule);
        int small = (cfl & MMP_PT_NO_BLOCKS) || (o.mflags & MMP_MAP_NO_BLOCK);
        uint64_t cap = small ? MAX_OP_BYTES_SMALL : MAX_OP_BYTES;
        if (cap > w.size)
            cap = w.size;
        if (cap > pw)
            cap = pw;
        if (o.len > cap)
            o.len = cap;
        uint64_t voff = ((uint64_t)(b[2] | b[3] << 8) * unit) % w.size;
        /* the high window: the top of the output space, or for the arm64
         * 52-bit layouts one across 9 << 48 (OA[51:48] 1000 / 1001) */
        uint64_t pbase = !(b[0] & 0x80) ? 0 : arm52 ? (9ull << 48) - pw / 2 : (1ull << pab) - pw;
        uint64_t poff = ((uint64_t)(b[4] | b[5] << 8) * unit) % pw;
        /* count bit 4: right after the previous operation (va and pa), so
         * that calls complete runs and blocks together (folds); bit 5: the
         * previous operation's range again (unmap, then map it anew). */
        if (b[6] & 0x30) {
            win = prev.win;
            pbase = prev.pbase;
            voff = prev.voff + (b[6] & 0x10 ? prev.len : 0);
            poff = prev.poff + (b[6] & 0x10 ? prev.len : 0);
            if (b[6] & 0x20)
                o.len = prev.len;
        }
        if (o.len > cap)
            o.len = cap;
        if (voff + o.len > w.size)
            voff = w.size - o.len;
        o.va = w.base[win] + voff;
        if (poff + o.len > pw)
            poff = pw - o.len;
        o.pa = pbase + poff;
        /* A map whose va and pa disagree below the first block size writes
         * pages only: keep it small. */
        if (o.kind <= OP_MAP_REPLACE && ((o.va ^ o.pa) & (blk1 - 1)) && o.len > MAX_OP_BYTES_SMALL)
            o.len = MAX_OP_BYTES_SMALL;
        if (o.kind <= OP_PROTECT)
            prev = (struct prev_op){win, voff, poff, pbase, o.len};
        o.attrs = pick_attrs(b[7], &e);
        cov.ops++;
        cov.kinds |= 1u << o.kind;
        if (o.kind <= OP_PROTECT)
            cov.wins |= 1u << win;
        if (o.kind <= OP_MAP_REPLACE)
            cov.mflags |= o.mflags;
        if (o.kind == OP_LAZY)
            cov.lazy |= 1u << (b[1] % 5);

        /* Hardware tracking: a lookup with attrs bit 7 is the MMU's access
         * or write at an arbitrary byte (bits 3:0 with count pick the
         * entry of a run), or a harvest, young scan, start or stop. */
        if (o.kind == OP_LOOKUP && e.hw && (b[7] & 0x80)) {
            unsigned sub = (b[7] >> 4) & 7;
            uint64_t a = o.va + (b[4] | b[5] << 8) % o.len, mva = model_va(&w, win, o.va);
            cov.trk |= 1u << sub;
            if (sub <= 2 || sub == 7) {
                int wr = mmu_access(&e, a, sub != 2, (unsigned)(b[6] | (b[7] & 0xf) << 8));
                uint64_t pg = model_va(&w, win, a & ~((1ull << e.gs) - 1));
                if (wr >= 0)
                    trk_model_add(&tm, TRK_YOUNG, pg);
                if (wr > 0)
                    trk_model_add(&tm, TRK_DIRTY, pg);
                if (trace)
                    fprintf(stderr, "mmu %s va %#llx -> %d\n", sub != 2 ? "write" : "access",
                            (ull)a, wr);
                continue;
            }
            /* start and stop split and fold: at most 32 MiB (table pages) */
            if (sub >= 5 && o.len > (32ull << 20))
                o.len = 32ull << 20;
            static const char *const tn[] = {"harvest", "test-clear-young", "track start",
                                             "track stop"};
            snprintf(what, sizeof what, "%s va=%#llx len=%#llx", tn[sub - 3], (ull)o.va,
                     (ull)o.len);
            if (trace)
                fprintf(stderr, "%s ...\n", what);
            int rc = 0;
            if (sub <= 4)
                track_pass(&pt, &e, &tm, o.va, mva, o.len >> e.gs, sub == 4, what);
            else if (sub == 5)
                rc = mmp_pt_track_start(&pt, o.va, o.len, NULL);
            else
                rc = mmp_pt_track_stop(&pt, o.va, o.len);
            if (rc)
                FAILF(what, "returned %d", rc);
            if (sub == 5) /* dirty since start: what came before is forgotten */
                trk_model_drop(&tm, TRK_DIRTY, mva, o.len);
            if (quiet_now(&lz))
                quiescent(&e, what);
            check(&pt, &m, &e, &w, cfl, what);
            continue;
        }
        if (o.kind == OP_LOOKUP) { /* at an arbitrary byte */
            struct mmp_pt_leaf l;
            uint64_t a = o.va + (b[4] | b[5] << 8) % o.len, mpa;
            uint32_t mattrs;
            int rc = mmp_pt_lookup(&pt, a, &l);
            int mrc = pt_model_lookup(&m, model_va(&w, win, a), &mpa, &mattrs);
            if (mrc ? rc != -MMP_ENOENT : rc || l.pa + (a - l.va) != mpa || l.attrs != mattrs)
                FAILF("lookup", "va %#llx differs from the model (rc %d)", (ull)a, rc);
            continue;
        }
        if (o.kind == OP_LAZY) {
            if (trace)
                fprintf(stderr, "lazy op %u\n", b[1] % 5);
            lazy_op(&pt, &e, &lz, b[1]);
            if (!lz.depth)
                check(&pt, &m, &e, &w, cfl, "lazy leave");
            continue;
        }
        if (o.kind == OP_FAIL_NEXT) { /* the next operation's k-th allocation fails */
            fail_next = b[1] % 8 + 1;
            continue;
        }
        if (o.kind == OP_RANGE) { /* out of the space: refused, nothing changes */
            int want = -MMP_ERANGE, rc;
            uint64_t g = fc->granule;
            long fl = e.flushes, ch = e.changes;
            switch (b[1] % 4) {
            case 0: /* first address past the lower half / the space */
                rc = mmp_pt_map(&pt, sign ? half : 1ull << vb, 0, g, o.attrs, 0);
                break;
            case 1: /* output beyond pa_bits */
                rc = mmp_pt_map(&pt, o.va, (1ull << pab) - g, 2 * g, o.attrs, MMP_MAP_REPLACE);
                break;
            case 2: /* across the top of the space */
                want = -MMP_EOVERFLOW;
                rc = mmp_pt_unmap(&pt, 0 - g, 2 * g);
                break;
            default: /* x86-64: across the canonical hole; others: past the space */
                rc = mmp_pt_protect(&pt, (sign ? half : 1ull << vb) - g, 2 * g, o.attrs);
                break;
            }
            snapshot(&e);
            if (rc != want || e.flushes != fl || e.changes != ch)
                FAILF("out-of-range call", "case %u returned %d, expected %d (or changed)",
                      b[1] % 4, rc, want);
            continue;
        }
        static const char *const names[] = {"map", "map(replace)", "unmap", "protect"};
        snprintf(what, sizeof what, "%s va=%#llx pa=%#llx len=%#llx attrs=%#x flags=%#x",
                 names[o.kind], (ull)o.va, (ull)o.pa, (ull)o.len, o.attrs, o.mflags);

        if (trace)
            fprintf(stderr, "%s ...\n", what);
        int want = o.kind == OP_MAP && pt_model_any_mapped(&m, model_va(&w, win, o.va), o.len)
                       ? -MMP_EEXIST
                       : 0;
        /* A replace of what is mapped already changes nothing, but may
         * fold what it completes: fewer leaves, or none changed at all. */
        int same = o.kind == OP_MAP_REPLACE && recs_translate(&e, o.va, o.len, o.pa, o.attrs);
        uint64_t top = info.block_sizes | info.cont_sizes;
        top = 1ull << (63 - __builtin_clzll(top)); /* the largest leaf or run */
        uint64_t ulo = o.va & ~(top - 1), uhi = (o.va + o.len - 1) | (top - 1);
        size_t units0 = same ? leaf_units(&e, &info, ulo, uhi) : 0;
        long ch0 = e.changes, fl0 = e.flushes;
        int rc;
        if (systematic) {
            for (long k = 1;; k++)
                if ((rc = attempt_failing_at(&pt, &e, &o, k, what)) != -MMP_ENOMEM ||
                    e.nalloc < k)
                    break;
        } else if (fail_next) {
            rc = attempt_failing_at(&pt, &e, &o, fail_next, what);
            fail_next = 0;
            if (rc == -MMP_ENOMEM)
                continue; /* checked: nothing changed */
        } else {
            rc = apply(&pt, &o);
        }
        if (trace)
            fprintf(stderr, "%s window %u -> %d (%ld table pages)\n", what, win, rc, e.live);
        if (rc != want)
            FAILF(what, "returned %d, expected %d", rc, want);
        if (rc == 0)
            model_apply(&m, &w, win, &o);
        if (rc == 0 && o.kind != OP_PROTECT) { /* gone, or mapped anew */
            trk_model_drop(&tm, TRK_DIRTY, model_va(&w, win, o.va), o.len);
            trk_model_drop(&tm, TRK_YOUNG, model_va(&w, win, o.va), o.len);
        } else if (rc == 0 && !e.x86 && !(o.attrs & MMP_PROT_WRITE)) {
            /* arm64 has no dirty read-only leaf: write-protecting drops it */
            trk_model_drop(&tm, TRK_DIRTY, model_va(&w, win, o.va), o.len);
        }
        if (quiet_now(&lz))
            quiescent(&e, what);
        check(&pt, &m, &e, &w, cfl, what);
        if (rc == 0 && o.kind <= OP_MAP_REPLACE && !o.mflags)
            check_folded(&e, &info, o.va, o.len, cfl, what);
        if (rc == 0 && same) {
            size_t units1 = leaf_units(&e, &info, ulo, uhi);
            if (units1 > units0)
                FAILF(what, "an identical replace split leaves (%zu leaves and runs, now %zu)",
                      units0, units1);
            /* (a lazy section's pending flushes may go first) */
            if (units1 == units0 && (e.changes != ch0 || (quiet_now(&lz) && e.flushes != fl0)))
                FAILF(what, "an identical replace changed %ld translations, flushed %ld times",
                      e.changes - ch0, e.flushes - fl0);
        }
    }

    for (; lz.paused; lz.paused--)
        if (mmp_lazy_resume(&pt))
            fail("lazy", "final resume failed");
    for (; lz.depth; lz.depth--)
        if (mmp_lazy_leave(&pt))
            fail("lazy", "final leave failed");
    quiescent(&e, "final leave");
    check(&pt, &m, &e, &w, cfl, "final leave");

    /* Unmapping everything must free every table but the root. */
    for (unsigned k = 0; k < NWIN; k++)
        if (mmp_pt_unmap(&pt, w.base[k], w.size))
            fail("final unmap", "failed");
    quiescent(&e, "final unmap");
    if (e.m.n)
        fail("final unmap", "something is still mapped");
    if (!(cfl & MMP_PT_KEEP_TABLES) && e.live != root_pages)
        fail("final unmap", "table pages left allocated");
    e.in_fini = 1;
    mmp_pt_fini(&pt);
    if (e.live != 0)
        fail("fini", "table pages leaked");
    pt_model_free(&m);
    trk_model_free(&tm);
    free(e.m.v);
    free(e.st);
    return 0;
}
