/* SPDX-License-Identifier: MIT */
/*
 * The two facts the hypervisor reads from the firmware's ACPI tables
 * (ACPI 6.5, 5.2.5 RSDP, 5.2.7/5.2.8 RSDT/XSDT, 5.2.9 FADT): where the
 * RSDP is (handed to the guest in boot_params) and which I/O port is the
 * PM1a control register (whose SLP_EN write is the guest's power-off).
 */
#include "acpi.h"

static int checksum_ok(const uint8_t *p, uint32_t n)
{
    uint8_t s = 0;
    for (uint32_t i = 0; i < n; i++)
        s = (uint8_t)(s + p[i]);
    return s == 0;
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* The RSDP is on a 16-byte boundary in the BIOS area 0xe0000-0xfffff. */
uint64_t acpi_find_rsdp(void)
{
    for (uint64_t a = 0xe0000; a < 0x100000; a += 16) {
        const uint8_t *p = (const uint8_t *)(uintptr_t)a;
        if (!memcmp(p, "RSD PTR ", 8) && checksum_ok(p, 20))
            return a;
    }
    return 0;
}

/* Only tables below 4 GiB are read (the hypervisor's map ends there). */
static const uint8_t *table(uint64_t pa, const char *sig)
{
    if (!pa || pa >= (4ull << 30) - 36)
        return NULL;
    const uint8_t *t = (const uint8_t *)(uintptr_t)pa;
    uint32_t len = rd32(t + 4);
    if (len < 36 || len > (1u << 20) || pa + len > (4ull << 30) || !checksum_ok(t, len))
        return NULL;
    return sig && memcmp(t, sig, 4) ? NULL : t;
}

uint16_t acpi_pm1a_cnt(uint64_t rsdp)
{
    if (!rsdp)
        return 0;
    const uint8_t *r = (const uint8_t *)(uintptr_t)rsdp;
    const uint8_t *rsdt = table(rd32(r + 16), "RSDT");
    if (!rsdt)
        return 0;
    uint32_t n = (rd32(rsdt + 4) - 36) / 4;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *t = table(rd32(rsdt + 36 + 4 * i), "FACP");
        if (t && rd32(t + 4) >= 68)
            return (uint16_t)rd32(t + 64); /* PM1a_CNT_BLK */
    }
    return 0;
}
