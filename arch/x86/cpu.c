/* SPDX-License-Identifier: MIT */
/*
 * x86-64 feature detection from CPUID alone (freestanding).
 * Bit positions: Intel SDM vol. 2A, CPUID; AMD APM vol. 3, appendix E.
 */
#include "arch.h"
#include "cpuid.h"

/* CPUID.1:ECX */
#define C1_OSXSAVE (1u << 27)
/* CPUID.1:EDX */
#define D1_SSE2 (1u << 26)
/* CPUID.(7,0):EBX / ECX / EDX */
#define B7_AVX2 (1u << 5)
#define B7_ERMS (1u << 9)
#define B7_AVX512F (1u << 16)
#define C7_MOVDIR64B (1u << 28)
#define D7_FSRM (1u << 4)
/* CPUID.80000008:EBX */
#define B80000008_CLZERO (1u << 0)
/* XCR0: SSE | AVX (YMM) state, and opmask | ZMM_Hi256 | Hi16_ZMM */
#define XCR0_YMM 0x6u
#define XCR0_ZMM 0xe6u

/*
 * The caches a deterministic cache-parameters leaf describes (Intel leaf 4,
 * AMD leaf 0x8000001D: the same layout): the last level (highest level,
 * data or unified), the L2, and the logical CPUs sharing each
 * (EAX[25:14] + 1). Size = ways * partitions * line * sets, each field
 * stored minus one. False if the leaf describes nothing.
 */
static bool cache_leaf(uint32_t leaf, struct mmp_cpu_features *f)
{
    unsigned top = 0;
    uint32_t llc_share = 0, l2_share = 0;
    for (uint32_t i = 0; i < 16; i++) {
        struct x86_regs r = x86_cpuid(leaf, i);
        uint32_t type = r.a & 0x1f;
        if (type == 0)
            break;
        if (type == 2) /* instruction cache */
            continue;
        unsigned level = (r.a >> 5) & 7;
        uint32_t share = ((r.a >> 14) & 0xfff) + 1;
        uint64_t ways = ((r.b >> 22) & 0x3ff) + 1;
        uint64_t parts = ((r.b >> 12) & 0x3ff) + 1;
        uint64_t line = (r.b & 0xfff) + 1;
        uint64_t sets = (uint64_t)r.c + 1;
        uint64_t size = ways * parts * line * sets;
        if (level == 2)
            f->l2_bytes = size, l2_share = share;
        if (level > top || (level == top && size > f->llc_bytes))
            top = level, f->llc_bytes = size, llc_share = share;
    }
    if (!top)
        return false;
    /* cores = CPUs sharing the LLC / CPUs sharing one core's L2 (its threads) */
    if (top == 2)
        f->llc_cores = 1;
    else if (l2_share && llc_share >= l2_share)
        f->llc_cores = llc_share / l2_share;
    return true;
}

static void detect_caches(struct mmp_cpu_features *f, uint32_t max_leaf, uint32_t max_ext)
{
    bool amd = f->vendor[0] == 'A' || f->vendor[0] == 'H'; /* AuthenticAMD, HygonGenuine */
    bool found = false;
    if (!amd && max_leaf >= 4)
        found = cache_leaf(4, f);
    if (amd && max_ext >= 0x8000001d && (x86_cpuid(0x80000001, 0).c & (1u << 22)))
        found = cache_leaf(0x8000001d, f); /* TOPOEXT */
    if (max_ext >= 0x80000006) {
        /* L2 (both vendors) and L3 (AMD) sizes, without sharing counts */
        struct x86_regs r = x86_cpuid(0x80000006, 0);
        uint64_t l3 = (uint64_t)(r.d >> 18) * 512 * 1024;
        uint64_t l2 = (uint64_t)(r.c >> 16) * 1024;
        if (!f->l2_bytes)
            f->l2_bytes = l2;
        if (!found) {
            f->llc_bytes = l3 ? l3 : l2;
            f->llc_cores = l3 ? 0 : 1; /* an L2 is one core's */
        }
    }
    if (f->llc_bytes)
        f->llc_source = "cpuid";
}

void mmp_arch_cpu_detect(struct mmp_cpu_features *f)
{
    f->arch = MMP_ARCH_X86_64;

    struct x86_regs r = x86_cpuid(0, 0);
    uint32_t max_leaf = r.a;
    uint32_t vendor[3] = {r.b, r.d, r.c};
    for (int i = 0; i < 12; i++)
        f->vendor[i] = (char)(vendor[i / 4] >> (8 * (i % 4)));
    f->vendor[12] = '\0';
    uint32_t max_ext = x86_cpuid(0x80000000, 0).a;

    r = x86_cpuid(1, 0);
    uint32_t base_family = (r.a >> 8) & 0xf, base_model = (r.a >> 4) & 0xf;
    f->family = base_family == 0xf ? base_family + ((r.a >> 20) & 0xff) : base_family;
    f->model = (base_family == 0x6 || base_family == 0xf)
                   ? base_model | (((r.a >> 16) & 0xf) << 4)
                   : base_model;
    f->stepping = r.a & 0xf;

    uint32_t flags = 0;
    if (r.d & D1_SSE2)
        flags |= MMP_CPU_SSE2;
    uint64_t xcr0 = (r.c & C1_OSXSAVE) ? x86_xgetbv(0) : 0;

    if (max_leaf >= 7) {
        struct x86_regs s = x86_cpuid(7, 0);
        if (s.b & B7_ERMS)
            flags |= MMP_CPU_ERMS;
        if (s.d & D7_FSRM)
            flags |= MMP_CPU_FSRM;
        if ((s.b & B7_AVX2) && (xcr0 & XCR0_YMM) == XCR0_YMM)
            flags |= MMP_CPU_AVX2;
        if ((s.b & B7_AVX512F) && (xcr0 & XCR0_ZMM) == XCR0_ZMM)
            flags |= MMP_CPU_AVX512F;
        if (s.c & C7_MOVDIR64B)
            flags |= MMP_CPU_MOVDIR64B;
    }
    if (max_ext >= 0x80000008 && (x86_cpuid(0x80000008, 0).b & B80000008_CLZERO))
        flags |= MMP_CPU_CLZERO;

    /*
     * REP_GOOD as Linux defines it: Intel family 6 from model 0x0e (and
     * later families), AMD from family 0x10; ERMS implies it.
     */
    bool intel = f->vendor[0] == 'G';
    bool amd = f->vendor[0] == 'A' || f->vendor[0] == 'H';
    if ((intel && (f->family > 6 || (f->family == 6 && f->model >= 0x0e))) ||
        (amd && f->family >= 0x10) || (flags & MMP_CPU_ERMS))
        flags |= MMP_CPU_REP_GOOD;

    f->flags = flags;
    detect_caches(f, max_leaf, max_ext);
}
