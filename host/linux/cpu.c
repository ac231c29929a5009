/* SPDX-License-Identifier: MIT */
/* Linux host: auxv HWCAPs, and sysfs for what CPUID/ID registers lack (arm64 caches, MIDR). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "host.h"

bool mmp_host_hwcaps(uint64_t *hwcap, uint64_t *hwcap2)
{
    *hwcap = getauxval(AT_HWCAP);
    *hwcap2 = getauxval(AT_HWCAP2);
    return true;
}

/* Reads one line of a small sysfs file; false if it does not exist. */
static bool read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    return ok;
}

/* CPUs in a sysfs CPU list ("0-3,8-11"); 0 if it cannot be read. */
static uint32_t count_cpus(const char *list)
{
    uint32_t n = 0;
    for (const char *p = list; *p >= '0' && *p <= '9';) {
        char *end;
        unsigned long lo = strtoul(p, &end, 10), hi = lo;
        if (*end == '-')
            hi = strtoul(end + 1, &end, 10);
        if (hi < lo || hi - lo > 1u << 20)
            return 0;
        n += (uint32_t)(hi - lo + 1);
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

/*
 * cpu0's caches from sysfs, where the CPU has no way to tell (arm64): the
 * last level (highest level, data or unified), the L2, and the cores
 * sharing the last level (its CPUs / the CPUs of one L2).
 */
static void sysfs_caches(struct mmp_cpu_features *f)
{
    unsigned top = 0;
    uint32_t llc_cpus = 0, l2_cpus = 0;
    for (int i = 0; i < 8; i++) {
        char path[96], buf[256];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (!read_line(path, buf, sizeof buf))
            break;
        if (strncmp(buf, "Instruction", 11) == 0)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!read_line(path, buf, sizeof buf))
            continue;
        char *end;
        uint64_t size = strtoull(buf, &end, 10);
        if (*end == 'K')
            size <<= 10;
        else if (*end == 'M')
            size <<= 20;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        unsigned level = read_line(path, buf, sizeof buf) ? (unsigned)strtoul(buf, NULL, 10) : 0;
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", i);
        uint32_t cpus = read_line(path, buf, sizeof buf) ? count_cpus(buf) : 0;
        if (level == 2)
            f->l2_bytes = size, l2_cpus = cpus;
        if (level > top || (level == top && size > f->llc_bytes))
            top = level, f->llc_bytes = size, llc_cpus = cpus;
    }
    if (top == 2)
        f->llc_cores = 1;
    else if (l2_cpus && llc_cpus >= l2_cpus)
        f->llc_cores = llc_cpus / l2_cpus;
}

void mmp_host_cpu_refine(struct mmp_cpu_features *f)
{
    if (!f->llc_bytes) {
        sysfs_caches(f);
        if (f->llc_bytes)
            f->llc_source = "sysfs";
    }
    if (f->arch == MMP_ARCH_ARM64 && !f->midr) {
        char buf[64];
        if (read_line("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", buf,
                      sizeof buf))
            f->midr = strtoull(buf, NULL, 16);
    }
}
