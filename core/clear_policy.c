/* SPDX-License-Identifier: MIT */
/*
 * Clearing policy from facts: which kernel for hot and for cold clears, and
 * from which size AUTO goes cold. Pure data and arithmetic over a struct
 * mmp_cpu_features, so every arch's table is built and tested on every
 * host; the overrides (environment, tuning files, measuring) are layered
 * on top in core/clear_config.c.
 */
#include "clear_policy.h"
#include "clear_text.h"

#define B(k) MMP_KBIT(MMP_K_##k)

/*
 * Preference order per arch. A kernel is taken if the CPU supports it, the
 * matched quirk row does not bad-list it, and the CPU has `prefer` (a
 * feature that makes it fast, beyond what it needs to run). The last entry
 * of each list needs nothing and is never bad-listed.
 */
struct pref {
    uint8_t k;
    uint32_t prefer;
    bool zva64; /* only with 64-byte DC ZVA blocks */
};

/*
 * x86 hot: rep stosb where ERMS makes it fast, rep stosq where string ops
 * are microcoded well, else the unrolled loop (Linux clear_page's order).
 * x86 cold: CLZERO (~42-46 GB/s per core on Milan vs 12-17 for rep stosb),
 * then full-line NT stores, widest first: a 64-byte VMOVNTDQ writes a whole
 * line at once, MOVNTI needs eight stores to fill the write-combining buffer.
 */
static const struct pref x86_hot[] = {
    {MMP_K_REP_STOSB, MMP_CPU_ERMS, false}, {MMP_K_REP_STOSQ, MMP_CPU_REP_GOOD, false}, {MMP_K_UNROLLED, 0, false}};
static const struct pref x86_cold[] = {{MMP_K_CLZERO, 0, false},
                                       {MMP_K_AVX512_NT, 0, false},
                                       {MMP_K_AVX2_NT, 0, false},
                                       {MMP_K_MOVNTI, 0, false},
                                       {MMP_K_REP_STOSB, MMP_CPU_ERMS, false},
                                       {MMP_K_UNROLLED, 0, false}};
/*
 * arm64 hot: MOPS where present (glibc's memset_mops), DC ZVA with 64-byte
 * blocks (Linux clear_page uses DC ZVA), else STP. arm64 cold: DC ZVA, else STNP (the fallback when
 * DCZID_EL0.DZP prohibits DC ZVA).
 */
static const struct pref arm_hot[] = {{MMP_K_MOPS, 0, false}, {MMP_K_DC_ZVA, 0, true}, {MMP_K_STP, 0, false}};
static const struct pref arm_cold[] = {{MMP_K_DC_ZVA, 0, false}, {MMP_K_STNP, 0, false}};
static const struct pref gen_any[] = {{MMP_K_MEMSET, 0, false}};

/*
 * The quirk table: rows match vendor + family/model range (x86) or MIDR
 * implementer/part (arm64); the first matching row applies. A row
 * bad-lists kernels for hot or cold clears (NT and CLZERO are on by default
 * and bad-listed per microarchitecture, as reviewers of the Linux
 * NT-clearing patches advised) and bounds the last-level cache one core
 * can count on (AUTO's threshold, below), where a virtual machine's figure
 * may be the host socket's. Each row's reason names its measurement or
 * public source; rows that change nothing say what the table picks there
 * and why that is right. mmp_clear_tune() measures the row's choice against
 * the kernels it allows, when asked.
 */
#define MIDR_PART 0xff00fff0ull /* MIDR_EL1 Implementer [31:24], PartNum [15:4] */
#define MiB (1ull << 20)
#define X86(nm, ven, fam, mlo, mhi) \
    .name = (nm), .arch = MMP_ARCH_X86_64, .vendor = (ven), .fam_lo = (fam), .fam_hi = (fam), \
    .model_lo = (mlo), .model_hi = (mhi)
#define ARM(nm, mask, val) \
    .name = (nm), .arch = MMP_ARCH_ARM64, .vendor = "", .midr_mask = (mask), .midr_val = (val)
const struct mmp_core_clear_quirk mmp_core_clear_quirks[] = {
    /* ---- Intel, family 6 ---- */
    {X86("intel-skylake-sp", "GenuineIntel", 6, 0x55, 0x55), .bad_cold = B(AVX512_NT),
     .llc_core_max = 1408u << 10,
     .why = "Skylake-SP/Cascade Lake/Cooper Lake: 512-bit instructions drop the core to a "
            "lower AVX-512 frequency licence (Intel optimization manual, 'AVX-512 frequency'; "
            "LLVM prefers 256-bit vectors on Skylake-AVX512 for that reason, D67259); "
            "32-byte NT stores reach the same DRAM bandwidth. Mesh L3 of 1.375 MiB per core"},
    {X86("intel-icelake-sp", "GenuineIntel", 6, 0x6a, 0x6c), .llc_core_max = 1536u << 10,
     .why = "Ice Lake-SP/-D: mesh L3 of 1.5 MiB per core (CPUID may report the socket's "
            "L3 with no usable sharing count in a VM: bounded to that); AUTO goes cold from "
            "twice the 1.25 MiB L2, as measured on Emerald Rapids' mesh"},
    {X86("intel-sapphire-rapids", "GenuineIntel", 6, 0x8f, 0x8f), .llc_core_max = 2 * MiB,
     .why = "Sapphire Rapids: mesh L3 of 1.875 MiB per core, same core and L3 design as "
            "Emerald Rapids (inferred from that measurement, not measured itself): AUTO "
            "goes cold from twice the 2 MiB L2"},
    {X86("intel-alder-lake", "GenuineIntel", 6, 0x97, 0x9a), .llc_whole = true,
     .why = "Alder Lake client (hybrid): ERMS and FSRM (Intel has ERMS since Ivy Bridge, "
            "FSRM since Ice Lake: RPCS3 PR 11079) make rep stosb the hot kernel; AVX-512 is "
            "fused off (later steppings), so AVX2 NT is the cold one; one core may fill the "
            "ring L3, so cold from the whole LLC. glibc's memset also turns non-temporal only "
            "on Intel, from a fraction of L3 (glibc 2.40 'x86: Add seperate non-temporal "
            "tunable for memset'; libc-alpha 2023-05 'Increase non_temporal_threshold to "
            "roughly sizeof_L3 / 4': rep movsb ~2x NT below that)"},
    {X86("intel-granite-rapids", "GenuineIntel", 6, 0xad, 0xae), .llc_core_max = 2 * MiB,
     .why = "Granite Rapids: mesh L3 like Emerald Rapids (about 4 MiB per core, of which "
            "one core kept ~2 MiB there): AUTO cold from twice the 2 MiB L2, inferred from "
            "the intel-emerald-rapids measurement"},
    {X86("intel-raptor-lake", "GenuineIntel", 6, 0xb7, 0xbf), .llc_whole = true,
     .why = "Raptor Lake client (also Lunar Lake 0xbd, Alder Lake-N 0xbe): as "
            "intel-alder-lake (ring L3 one core may fill, ERMS/FSRM, no AVX-512)"},
    {X86("intel-emerald-rapids", "GenuineIntel", 6, 0xcf, 0xcf), .llc_core_max = 2 * MiB,
     .why = "Emerald Rapids: CPUID reports the whole socket's mesh L3 (260 MiB in a 2-vCPU "
            "KVM guest), but one core keeps only about its 2 MiB L2 plus 2 MiB of L3: "
            "measured (mmport bench clear, lines evicted first) rep stosb = NT at 4 MiB, NT "
            "1.4x at 8 MiB and 2.2x at 32 MiB; so AUTO goes cold from 4 MiB"},
    /* ---- AMD and Hygon: L3 per CCX, 8 cores (Zen 1/2: 4), victim of the L2s ---- */
    {X86("amd-zen1-2", "AuthenticAMD", 0x17, 0, 0xff), .bad_hot = B(REP_STOSB),
     .llc_core_max = 4 * MiB,
     .why = "Zen 1/2 have no ERMS (AMD added ERMS and FSRM with Zen 3) and their rep "
            "movsb/stosb is slow microcode; Linux clear_page uses rep stosq (REP_GOOD). "
            "L3: 8-16 MiB per 4-core CCX"},
    {X86("hygon-dhyana", "HygonGenuine", 0x18, 0, 0xff), .bad_hot = B(REP_STOSB),
     .llc_core_max = 2 * MiB,
     .why = "Hygon Dhyana (family 0x18) is licensed Zen 1: no ERMS, as amd-zen1-2; 8 MiB "
            "L3 per 4-core CCX"},
    {X86("amd-zen3", "AuthenticAMD", 0x19, 0x00, 0x0f), .llc_core_max = 4 * MiB,
     .why = "Zen 3 (Milan): nothing changed: CLZERO ~42-46 GB/s per core vs 12-17 for rep "
            "stosb (measurement quoted in the Linux NT-clearing review); rep stosq over one "
            "extent 13.7 GB/s at 4 KiB, 15.1 at 2 MiB, 38.1 at 1 GiB (Linux 'x86/clear_page: "
            "introduce clear_pages()'), so whole extents, never page by page. 32 MiB L3 per "
            "8-core CCX"},
    {X86("amd-zen4", "AuthenticAMD", 0x19, 0x10, 0x1f), .bad_cold = B(CLZERO),
     .llc_core_max = 4 * MiB,
     .why = "Zen 4 (Genoa): no CLZERO for cold clears: on a 2-vCPU Genoa VM (32 MiB L3) "
            "AUTO with CLZERO reached 0.65 of AVX-512/AVX2 NT at 1 GiB, and at 16 MiB the "
            "two traded places run to run; CLZERO is meant for poison recovery, not fast "
            "zeroing (WikiChip 'CLZERO - x86'); AVX-512 NT is the cold kernel. 32 MiB L3 per "
            "8-core CCX (3D V-Cache: 96 MiB, bounded to 4 MiB per core too: NT ties there)"},
    {X86("amd-zen3-client", "AuthenticAMD", 0x19, 0x20, 0x5f), .llc_core_max = 4 * MiB,
     .why = "Zen 3 client (Vermeer, Cezanne, Rembrandt): same core and CCX as amd-zen3"},
    {X86("amd-zen4-client", "AuthenticAMD", 0x19, 0x60, 0x7f), .bad_cold = B(CLZERO),
     .llc_core_max = 4 * MiB,
     .why = "Zen 4 client (Raphael, Phoenix): same core and CCX as amd-zen4"},
    {X86("amd-zen4c", "AuthenticAMD", 0x19, 0xa0, 0xaf), .bad_cold = B(CLZERO),
     .llc_core_max = 2 * MiB,
     .why = "Zen 4c (Bergamo, Siena): same core as amd-zen4, 16 MiB L3 per 8-core CCX"},
    {X86("amd-zen5", "AuthenticAMD", 0x1a, 0x00, 0x4f), .llc_core_max = 4 * MiB,
     .why = "Zen 5: rep stosb hot, CLZERO cold, 32 MiB L3 per 8-core CCX (Zen 5c: per 16 "
            "cores). Measured in a 2-vCPU EPYC VM (family 0x1a model 2) whose CPUID 0x80000006 "
            "reports the host socket's 508 MiB L3 and no TOPOEXT leaf, so the L3 is bounded to "
            "4 MiB per core: with lines evicted, rep stosb 103-118 GB/s vs 73-75 for the NT "
            "kernels and CLZERO up to 2 MiB, all within 2% of each other at 4-64 MiB, CLZERO "
            "ahead from 256 MiB (64 vs 55 GB/s; 44 vs 31 at 1 GiB)"},
    /* ---- arm64: MIDR implementer/part (Linux cputype.h; Arm TRMs, MIDR_EL1) ---- */
    {ARM("neoverse-n1", MIDR_PART, 0x4100d0c0),
     .why = "Neoverse N1 (also Ampere Altra/Altra Max, built from N1 cores: Phoronix 2022-05 "
            "'Ampere1 LLVM'): nothing changed: DC ZVA with 64-byte blocks (N1 TRM, DCZID_EL0 "
            "BS=4) for hot and cold, as Linux clear_page and glibc's memset (zva_size 64) do; "
            "no FEAT_MOPS (Armv8.2)"},
    {ARM("neoverse-v1", MIDR_PART, 0x4100d400),
     .why = "Neoverse V1: nothing changed: as neoverse-n1 (64-byte DC ZVA, Armv8.4: no MOPS)"},
    {ARM("neoverse-n2", MIDR_PART, 0x4100d490),
     .why = "Neoverse N2: nothing changed: as neoverse-n1 (64-byte DC ZVA, Armv9.0: no MOPS)"},
    {ARM("neoverse-v2", MIDR_PART, 0x4100d4f0),
     .why = "Neoverse V2 (Grace, Graviton4): nothing changed: as neoverse-n1 (64-byte DC "
            "ZVA, Armv9.0: no MOPS)"},
    {ARM("ampereone", MIDR_PART, 0xc000ac30),
     .why = "AmpereOne: Ampere's own Armv8.6 core (Phoronix 2022-05 'Ampere1 LLVM'): nothing "
            "changed: no FEAT_MOPS (Armv8.8), so DC ZVA/STP by block size; no public clearing "
            "figure (mmp_clear_tune() measures it)"},
    {ARM("apple", 0xff000000ull, 0x61000000),
     .why = "Apple M1/M2/M3 (implementer 0x61; Firestorm/Icestorm and later, Armv8.4-8.6: "
            "Wikipedia 'Apple M1'): nothing changed: no FEAT_MOPS, DC ZVA by the block size "
            "DCZID_EL0 reports; no public clearing figure (mmp_clear_tune() measures it)"},
};
const size_t mmp_core_clear_nquirks = sizeof mmp_core_clear_quirks / sizeof mmp_core_clear_quirks[0];

static bool vendor_is(const struct mmp_cpu_features *f, const char *v)
{
    return !*v || mmp_core_streq(f->vendor, v);
}

const struct mmp_core_clear_quirk *mmp_core_clear_quirk_for(const struct mmp_cpu_features *f)
{
    for (size_t i = 0; i < mmp_core_clear_nquirks; i++) {
        const struct mmp_core_clear_quirk *q = &mmp_core_clear_quirks[i];
        if (q->arch != f->arch || !vendor_is(f, q->vendor))
            continue;
        if (q->arch == MMP_ARCH_X86_64 &&
            (f->family < q->fam_lo || f->family > q->fam_hi || f->model < q->model_lo ||
             f->model > q->model_hi))
            continue;
        if (q->arch == MMP_ARCH_ARM64 && (f->midr & q->midr_mask) != q->midr_val)
            continue;
        return q;
    }
    return NULL;
}

static unsigned pick(const struct mmp_cpu_features *f, const struct pref *list, size_t n,
                     uint32_t bad)
{
    for (size_t i = 0; i + 1 < n; i++) {
        unsigned k = list[i].k;
        if (mmp_core_clear_supported(f, k) && !(bad & MMP_KBIT(k)) &&
            (f->flags & list[i].prefer) == list[i].prefer && (!list[i].zva64 || f->zva_block == 64))
            return k;
    }
    return list[n - 1].k;
}

#define PICK(f, l, bad) pick((f), (l), sizeof(l) / sizeof((l)[0]), (bad))

/*
 * AUTO's threshold: the cache one core can count on when every core
 * sharing the last-level cache is busy (a host clearing guest RAM while
 * other cores run guests): its share of the LLC, never less than twice its
 * L2. Below that a clear stays in cache and the hot kernel is as fast or
 * faster (rep stosb 103 vs 75 GB/s at 2 MiB on Zen 5 with a 1 MiB L2, 32 vs
 * 24 at 2 MiB on Emerald Rapids with a 2 MiB L2); beyond it the lines go to
 * memory anyway and non-temporal stores skip reading them and writing them
 * back (2.2x at 32 MiB on Emerald Rapids, CLZERO 1.08-1.33x from 256 MiB on
 * Zen 5). The share is the LLC divided by the cores sharing it, bounded by
 * the row (or MMP_CORE_LLC_CORE_MAX) where that figure is implausible; a
 * row whose cores may fill a ring L3 alone takes the whole LLC.
 */
static void threshold(const struct mmp_cpu_features *f, const struct mmp_core_clear_quirk *q,
                      struct mmp_clear_policy *out)
{
    if (!f->llc_bytes) {
        out->cold_min = MMP_CORE_COLD_MIN_DEFAULT;
        out->cold_min_from = "default";
        return;
    }
    uint64_t share = f->llc_bytes;
    uint64_t max = q && q->llc_core_max ? q->llc_core_max : MMP_CORE_LLC_CORE_MAX;
    if (!(q && q->llc_whole) && f->llc_cores > 1)
        share /= f->llc_cores;
    out->cold_min_from = "cache";
    if (share > max) {
        share = max;
        out->cold_min_from = "cache-bound";
    }
    uint64_t l2x2 = f->l2_bytes < (1ull << 40) ? 2 * f->l2_bytes : 1ull << 41; /* no L2 is 1 TiB */
    out->cold_min = share > l2x2 ? share : l2x2;
    out->cold_min = (out->cold_min + MMP_PAGE_SIZE - 1) & ~(uint64_t)(MMP_PAGE_SIZE - 1);
}

int mmp_clear_policy_for(const struct mmp_cpu_features *f, struct mmp_clear_policy *out)
{
    if (!f || !out)
        return -MMP_EINVAL;
    *out = (struct mmp_clear_policy){0};
    const struct mmp_core_clear_quirk *q = mmp_core_clear_quirk_for(f);
    if (q) {
        out->quirk = q->name;
        out->quirk_why = q->why;
        out->bad_hot = q->bad_hot;
        out->bad_cold = q->bad_cold;
    }
    uint32_t left_out = 0;
    for (unsigned k = 0; k < MMP_K_COUNT; k++)
        left_out |= mmp_core_clear_left_out(k) ? MMP_KBIT(k) : 0;
    unsigned hot, cold;
    switch (f->arch) {
    case MMP_ARCH_X86_64:
        hot = PICK(f, x86_hot, out->bad_hot | left_out);
        cold = PICK(f, x86_cold, out->bad_cold | left_out);
        break;
    case MMP_ARCH_ARM64:
        hot = PICK(f, arm_hot, out->bad_hot | left_out);
        cold = PICK(f, arm_cold, out->bad_cold | left_out);
        break;
    default:
        hot = cold = PICK(f, gen_any, 0);
        break;
    }
    out->hot = mmp_core_clear_kdesc[hot].name;
    out->cold = mmp_core_clear_kdesc[cold].name;
    threshold(f, q, out);
    out->source = "table";
    return 0;
}
