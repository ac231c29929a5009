/* SPDX-License-Identifier: MIT */
/*
 * arm64 TLB invalidation helpers (see tlb.h for who may call them).
 * TLBI operand layouts, Arm ARM D8.13 / C5.5: by VA, bits [43:0] hold
 * VA[55:12] and bits [63:48] the ASID; by IPA, bits [35:0] hold
 * IPA[47:12] and bits [39:36] IPA[51:48] (FEAT_LPA / FEAT_LPA2: 52-bit
 * IPAs; RES0 otherwise, where those IPA bits are 0 anyway). With 16K/64K
 * granules the low operand bits are ignored.
 */
#include "tlb.h"

#define barrier_before() __asm__ volatile("dsb ishst" ::: "memory")
#define barrier_after() __asm__ volatile("dsb ish\n\tisb" ::: "memory")
#define tlbi(op, arg) __asm__ volatile("tlbi " #op ", %0" ::"r"(arg) : "memory")
#define tlbi0(op) __asm__ volatile("tlbi " #op ::: "memory")

static inline uint64_t va_operand(uint64_t va, uint16_t asid)
{
    return ((va >> 12) & ((1ull << 44) - 1)) | ((uint64_t)asid << 48);
}

static inline uint64_t ipa_operand(uint64_t ipa)
{
    return (ipa >> 12) & ((1ull << 40) - 1);
}

/* Number of per-granule operations for [va, va+size), or 0 if too many. */
static uint64_t range_ops(uint64_t va, uint64_t size, unsigned shift, uint64_t *start)
{
    uint64_t g = 1ull << shift;
    uint64_t first = va & ~(g - 1);
    uint64_t end = va + size;
    if (size == 0 || end < va)
        return 0;
    uint64_t n = (end - first + g - 1) >> shift;
    *start = first;
    return n <= MMP_ARCH_TLBI_MAX_OPS ? n : 0;
}

typedef void tlbi_one_fn(uint64_t addr, uint16_t asid, bool last_level);

static void after(void)
{
    barrier_after();
}

/*
 * One DSB ISHST, one TLBI per granule of the range, then @p finish; or
 * @p all alone when the range needs more than MMP_ARCH_TLBI_MAX_OPS.
 */
static void tlbi_range(uint64_t va, uint64_t size, unsigned shift, uint16_t asid,
                       bool last_level, tlbi_one_fn *one, void (*finish)(void),
                       void (*all)(void))
{
    uint64_t start = 0;
    uint64_t n = range_ops(va, size, shift, &start);
    if (!n) {
        all();
        return;
    }
    barrier_before();
    for (uint64_t i = 0; i < n; i++)
        one(start + (i << shift), asid, last_level);
    finish();
}

static void el1_va_ops(uint64_t va, uint16_t asid, bool last_level)
{
    if (last_level)
        tlbi(vale1is, va_operand(va, asid));
    else
        tlbi(vae1is, va_operand(va, asid));
}

void mmp_arch_tlbi_el1_va(uint64_t va, uint16_t asid, bool last_level)
{
    mmp_arch_tlbi_el1_range(va, 1, 12, asid, last_level);
}

void mmp_arch_tlbi_el1_range(uint64_t va, uint64_t size, unsigned granule_shift,
                             uint16_t asid, bool last_level)
{
    tlbi_range(va, size, granule_shift, asid, last_level, el1_va_ops, after,
               mmp_arch_tlbi_el1_all);
}

void mmp_arch_tlbi_el1_asid(uint16_t asid)
{
    barrier_before();
    tlbi(aside1is, (uint64_t)asid << 48);
    barrier_after();
}

void mmp_arch_tlbi_el1_all(void)
{
    barrier_before();
    tlbi0(vmalle1is);
    barrier_after();
}

static void s2_ipa_ops(uint64_t ipa, uint16_t asid, bool last_level)
{
    (void)asid;
    if (last_level)
        tlbi(ipas2le1is, ipa_operand(ipa));
    else
        tlbi(ipas2e1is, ipa_operand(ipa));
}

/* The IPA invalidations must complete before the stage-1 one (D8.13.5). */
static void s2_finish(void)
{
    __asm__ volatile("dsb ish" ::: "memory");
    tlbi0(vmalle1is);
    barrier_after();
}

void mmp_arch_tlbi_s2_ipa(uint64_t ipa, bool last_level)
{
    mmp_arch_tlbi_s2_range(ipa, 1, 12, last_level);
}

void mmp_arch_tlbi_s2_range(uint64_t ipa, uint64_t size, unsigned granule_shift,
                            bool last_level)
{
    tlbi_range(ipa, size, granule_shift, 0, last_level, s2_ipa_ops, s2_finish,
               mmp_arch_tlbi_s12_all);
}

void mmp_arch_tlbi_s12_all(void)
{
    barrier_before();
    tlbi0(vmalls12e1is);
    barrier_after();
}

static void el2_va_ops(uint64_t va, uint16_t asid, bool last_level)
{
    (void)asid;
    if (last_level)
        tlbi(vale2is, va_operand(va, 0));
    else
        tlbi(vae2is, va_operand(va, 0));
}

void mmp_arch_tlbi_el2_va(uint64_t va, bool last_level)
{
    mmp_arch_tlbi_el2_range(va, 1, 12, last_level);
}

void mmp_arch_tlbi_el2_range(uint64_t va, uint64_t size, unsigned granule_shift,
                             bool last_level)
{
    tlbi_range(va, size, granule_shift, 0, last_level, el2_va_ops, after,
               mmp_arch_tlbi_el2_all);
}

void mmp_arch_tlbi_el2_all(void)
{
    barrier_before();
    tlbi0(alle2is);
    barrier_after();
}
