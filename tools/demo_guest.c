/* SPDX-License-Identifier: MIT */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "demo_guest.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)

#define RW (MMP_PROT_READ | MMP_PROT_WRITE)
#define RWX (MMP_PROT_READ | MMP_PROT_WRITE | MMP_PROT_EXEC)
#define DEV (RW | MMP_MEM_DEVICE)

static void add(struct demo_layout *l, const char *name, uint64_t gpa, uint64_t size, uint64_t pa,
                uint32_t attrs, bool ram)
{
    if (size && l->n < DEMO_MAX_REGIONS)
        l->r[l->n++] = (struct demo_region){name, gpa, size, pa, attrs, ram};
}

static void device(struct demo_layout *l, const char *name, uint64_t gpa, uint64_t size)
{
    add(l, name, gpa, size, DEMO_DEVICE_PA + gpa, DEV, false);
}

/*
 * QEMU "virt" board's map (hw/arm/virt.c's memmap, public): GIC
 * distributor and redistributors, PL011 UART, PL031 RTC, the low PCIe
 * ECAM window, RAM from 1 GiB. Stage 2 with 4 KiB granule and a 40-bit
 * IPA (the KVM default): 3 levels from level 1, two root tables
 * concatenated (Arm ARM D8.2, VTCR_EL2.SL0).
 */
void demo_layout_arm64(struct demo_layout *l, uint64_t host, uint64_t ram_len)
{
    *l = (struct demo_layout){
        .title = "arm64 stage 2 (VTTBR_EL2), 4K granule, 40-bit IPA",
        .format = "arm64-s2-4k",
        .cfg = {MMP_PT_ARM64_S2, 4096, 40, 0, 0, 0, 0, 0},
    };
    device(l, "gic-dist", 0x08000000, 64 * KiB);
    device(l, "gic-redist", 0x080a0000, 0xf60000);
    device(l, "uart", 0x09000000, 4 * KiB);
    device(l, "rtc", 0x09010000, 4 * KiB);
    device(l, "pcie-ecam", 0x3f000000, 16 * MiB);
    add(l, "ram", 0x40000000, ram_len, host, RWX, true);
}

/*
 * A PC: RAM below 640 KiB, the legacy VGA window, RAM from 1 MiB up to the
 * 32-bit PCI hole, then the rest of RAM from 4 GiB. The hole starts at
 * 1 GiB here (QEMU's q35 uses 2-2.75 GiB) so that even the default 2 GiB
 * guest is split in two. Devices in the hole: PCIe ECAM (MMCONFIG, q35's
 * 0xb0000000), IOAPIC, HPET, local APIC (Intel SDM vol. 3, 11.4.1).
 */
#define X86_HOLE 0x40000000ull

void demo_layout_x86(struct demo_layout *l, uint64_t host, uint64_t ram_len, bool amd)
{
    /* The second stage an Intel VMX host builds is EPT (SDM vol. 3C 29.3),
     * an AMD SVM host's the nested x86-64 table (APM vol. 2 15.25). */
    if (amd)
        *l = (struct demo_layout){
            .title = "x86 AMD NPT (nCR3), 4-level, guest-physical -> host, U=1 in every entry",
            .format = "x86-npt",
            .cfg = {MMP_PT_X86_NPT, 4096, 48, 0, 0, 0, 0, 0},
        };
    else
        *l = (struct demo_layout){
            .title = "x86 Intel EPT (EPTP walk length 4), guest-physical -> host",
            .format = "x86-ept",
            .cfg = {MMP_PT_X86_EPT, 4096, 48, 0, 0, 0, 0, 0},
        };
    uint64_t low = ram_len < X86_HOLE ? ram_len : X86_HOLE;
    add(l, "ram-640k", 0, 640 * KiB, host, RWX, true);
    device(l, "vga", 0xa0000, 128 * KiB);
    add(l, "ram-low", 1 * MiB, low - 1 * MiB, host + 1 * MiB, RWX, true);
    device(l, "pcie-ecam", 0xb0000000, 256 * MiB);
    device(l, "ioapic", 0xfec00000, 4 * KiB);
    device(l, "hpet", 0xfed00000, 4 * KiB);
    device(l, "lapic", 0xfee00000, 4 * KiB);
    add(l, "ram-high", 4 * GiB, ram_len - low, host + low, RWX, true);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void demo_build_table(const struct demo_layout *l, struct mmp_pt *pt, bool lazy,
                      struct demo_build *out)
{
    *out = (struct demo_build){0};
    double t0 = now();
    /*
     * The lazy-MMU step: inside the section every map records its barrier
     * and TLB flush instead of issuing them; the leave issues one barrier
     * and the coalesced flushes for the whole layout.
     */
    if (lazy)
        out->rc = mmp_lazy_enter(pt);
    for (unsigned i = 0; i < l->n && !out->rc; i++) {
        const struct demo_region *r = &l->r[i];
        out->rc = mmp_pt_map(pt, r->gpa, r->pa, r->size, r->attrs, 0);
        if (out->rc)
            out->failed = r->name;
    }
    if (lazy) {
        int rc = mmp_lazy_leave(pt);
        if (!out->rc)
            out->rc = rc;
    }
    out->seconds = now() - t0;
    mmp_pt_stats(pt, &out->st);
    if (!out->rc)
        out->rc = mmp_pt_usage(pt, &out->use);
    if (!out->rc)
        out->rc = mmp_pt_info(pt, &out->info);
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Counts a disagreement; the first one is kept as text. */
static void __attribute__((format(printf, 2, 3))) bad(struct demo_verify *v, const char *fmt, ...)
{
    if (v->bad++)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->first_bad, sizeof v->first_bad, fmt, ap);
    va_end(ap);
}

/* One lookup inside region r. */
static void check_in(const struct demo_region *r, const struct mmp_pt *pt, uint64_t a,
                     struct demo_verify *v)
{
    struct mmp_pt_leaf leaf;
    int rc = mmp_pt_lookup(pt, a, &leaf);
    uint64_t want = r->pa + (a - r->gpa);
    v->samples++;
    if (rc) {
        bad(v, "gpa 0x%" PRIx64 ": lookup failed (%s), want pa 0x%" PRIx64, a,
            mmp_strerror(rc), want);
        return;
    }
    uint64_t got = leaf.pa + (a - leaf.va);
    if (got != want || leaf.attrs != r->attrs) {
        bad(v, "gpa 0x%" PRIx64 ": pa 0x%" PRIx64 " attrs 0x%x, want pa 0x%" PRIx64
               " attrs 0x%x", a, got, (unsigned)leaf.attrs, want, (unsigned)r->attrs);
        return;
    }
    /* For RAM the output address is a host address: read the guest's byte. */
    if (r->ram) {
        v->ram_read++;
        if (*(const volatile unsigned char *)(uintptr_t)got != 0)
            bad(v, "gpa 0x%" PRIx64 ": the byte at host 0x%" PRIx64 " is not zero", a, got);
    }
}

static bool in_list(const uint64_t *gpa, unsigned n, uint64_t a)
{
    for (unsigned i = 0; i < n; i++)
        if (a >> 12 == gpa[i] >> 12)
            return true;
    return false;
}

static bool ballooned(const struct demo_balloon *b, uint64_t a)
{
    return b && in_list(b->gpa, DEMO_BALLOON, a);
}

static void check_hole(const struct mmp_pt *pt, uint64_t a, struct demo_verify *v)
{
    struct mmp_pt_leaf leaf;
    int rc = mmp_pt_lookup(pt, a, &leaf);
    v->holes++;
    if (rc != -MMP_ENOENT)
        bad(v, "gpa 0x%" PRIx64 " lies in a hole, but lookup gave %s", a,
            rc ? mmp_strerror(rc) : "a mapping");
}

/* One address inside region r: mapped as laid out, unless ballooned out. */
static void check_at(const struct demo_region *r, const struct mmp_pt *pt, uint64_t a,
                     const struct demo_balloon *b, struct demo_verify *v)
{
    if (ballooned(b, a))
        check_hole(pt, a, v);
    else
        check_in(r, pt, a, v);
}

void demo_verify_table(const struct demo_layout *l, const struct mmp_pt *pt, uint64_t *seed,
                       unsigned per_region, const struct demo_balloon *b,
                       struct demo_verify *v)
{
    *v = (struct demo_verify){0};
    uint64_t prev_end = 0;
    for (unsigned i = 0; i < l->n; i++) {
        const struct demo_region *r = &l->r[i];
        check_at(r, pt, r->gpa, b, v);
        check_at(r, pt, r->gpa + r->size - 1, b, v);
        for (unsigned k = 0; k < per_region; k++)
            check_at(r, pt, r->gpa + xorshift(seed) % r->size, b, v);
        /* Every page of the ballooned block, at a varying offset. */
        if (b && b->block >= r->gpa && b->block < r->gpa + r->size)
            for (uint64_t pg = 0; pg < 512; pg++)
                check_at(r, pt, b->block + pg * 4096 + xorshift(seed) % 4096, b, v);
        if (r->gpa > prev_end) { /* the hole before this region */
            uint64_t len = r->gpa - prev_end;
            check_hole(pt, prev_end, v);
            check_hole(pt, r->gpa - 1, v);
            check_hole(pt, prev_end + xorshift(seed) % len, v);
        }
        prev_end = r->gpa + r->size;
    }
    check_hole(pt, prev_end, v); /* just past the last region */
}

bool demo_balloon_pick(const struct demo_layout *l, uint64_t *seed, struct demo_balloon *b)
{
    *b = (struct demo_balloon){0};
    const struct demo_region *ram = NULL;
    for (unsigned i = 0; i < l->n; i++)
        if (l->r[i].ram)
            ram = &l->r[i];
    if (!ram)
        return false;
    uint64_t first = (ram->gpa + 2 * MiB - 1) & ~(2 * MiB - 1);
    if (first + 2 * MiB > ram->gpa + ram->size)
        return false;
    b->block = first;
    for (unsigned n = 0; n < DEMO_BALLOON;) {
        uint64_t a = first + (xorshift(seed) % 512) * 4096;
        if (!in_list(b->gpa, n, a))
            b->gpa[n++] = a;
    }
    return true;
}

void demo_balloon_unmap(struct mmp_pt *pt, bool lazy, struct demo_balloon *b)
{
    struct mmp_pt_stats s0, s1;
    mmp_pt_stats(pt, &s0);
    b->rc = lazy ? mmp_lazy_enter(pt) : 0;
    for (unsigned i = 0; i < DEMO_BALLOON && !b->rc; i++)
        b->rc = mmp_pt_unmap(pt, b->gpa[i], 4096);
    if (lazy) {
        int rc = mmp_lazy_leave(pt);
        b->rc = b->rc ? b->rc : rc;
    }
    mmp_pt_stats(pt, &s1);
    b->delta = (struct mmp_pt_stats){
        .entries_written = s1.entries_written - s0.entries_written,
        .barriers = s1.barriers - s0.barriers,
        .barriers_deferred = s1.barriers_deferred - s0.barriers_deferred,
        .flushes = s1.flushes - s0.flushes,
        .ranges_coalesced = s1.ranges_coalesced - s0.ranges_coalesced,
        .table_pages = s1.table_pages,
        .bbm = s1.bbm - s0.bbm,
    };
}
