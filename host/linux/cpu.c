/* SPDX-License-Identifier: MIT */
/* Linux host: auxv HWCAPs, and sysfs for what CPUID/ID registers lack. */
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

/* Largest data/unified cache cpu0 reports, in bytes ("32K", "2048K", "1M"). */
static uint64_t sysfs_llc(void)
{
    uint64_t best = 0;
    for (int i = 0; i < 8; i++) {
        char path[96], buf[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (!read_line(path, buf, sizeof buf))
            break;
        if (strncmp(buf, "Instruction", 11) == 0)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!read_line(path, buf, sizeof buf))
            continue;
        char *end;
        uint64_t v = strtoull(buf, &end, 10);
        if (*end == 'K')
            v <<= 10;
        else if (*end == 'M')
            v <<= 20;
        if (v > best)
            best = v;
    }
    return best;
}

void mmp_host_cpu_refine(struct mmp_cpu_features *f)
{
    if (!f->llc_bytes) {
        f->llc_bytes = sysfs_llc();
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
