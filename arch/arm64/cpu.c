/* SPDX-License-Identifier: MIT */
/*
 * arm64 feature detection. DCZID_EL0 is readable at every EL; the other ID
 * registers are read only where allowed: at EL1 (no OS to ask), or at EL0
 * when the kernel advertises that it emulates them (HWCAP_CPUID).
 * Field layouts: Arm ARM (DDI 0487), D19 "AArch64 System Register
 * Descriptions"; HWCAP values: Linux uapi asm/hwcap.h.
 */
#include "arch.h"
#include "host.h"
#include "sysreg.h"

#define HWCAP_CPUID (1ull << 11)
#define HWCAP_SVE (1ull << 22)
#define HWCAP2_MOPS (1ull << 43)

#define DCZID_BS_MASK 0xfu   /* log2(block size in 4-byte words) */
#define DCZID_DZP (1u << 4)  /* DC ZVA prohibited */

void mmp_arch_cpu_detect(struct mmp_cpu_features *f)
{
    f->arch = MMP_ARCH_ARM64;

    uint64_t dczid = arm64_read_sysreg(ARM64_DCZID_EL0);
    f->zva_prohibited = (dczid & DCZID_DZP) != 0;
    if (!f->zva_prohibited) {
        f->zva_block = 4u << (dczid & DCZID_BS_MASK);
        f->flags |= MMP_CPU_DC_ZVA;
    }

    uint64_t hwcap = 0, hwcap2 = 0;
    bool hosted = mmp_host_hwcaps(&hwcap, &hwcap2);
    f->hwcap = hwcap;
    f->hwcap2 = hwcap2;
    if (hosted) {
        if (hwcap & HWCAP_SVE)
            f->flags |= MMP_CPU_SVE;
        if (hwcap2 & HWCAP2_MOPS)
            f->flags |= MMP_CPU_MOPS;
    } else {
        if ((arm64_read_sysreg(ARM64_ID_AA64PFR0_EL1) >> 32) & 0xf)
            f->flags |= MMP_CPU_SVE;
        if ((arm64_read_sysreg(ARM64_ID_AA64ISAR2_EL1) >> 16) & 0xf)
            f->flags |= MMP_CPU_MOPS;
    }
    if (!hosted || (hwcap & HWCAP_CPUID)) {
        f->flags |= hosted ? MMP_CPU_ID_REGS : 0;
        f->midr = arm64_read_sysreg(ARM64_MIDR_EL1);
    }
    if (f->midr) {
        /* MIDR_EL1.Implementer, bits [31:24] */
        switch ((f->midr >> 24) & 0xff) {
        case 0x41: __builtin_memcpy(f->vendor, "ARM", 4); break;
        case 0x61: __builtin_memcpy(f->vendor, "Apple", 6); break;
        case 0xc0: __builtin_memcpy(f->vendor, "Ampere", 7); break;
        case 0x48: __builtin_memcpy(f->vendor, "HiSilicon", 10); break;
        case 0x51: __builtin_memcpy(f->vendor, "Qualcomm", 9); break;
        case 0x4e: __builtin_memcpy(f->vendor, "NVIDIA", 7); break;
        default: __builtin_memcpy(f->vendor, "other", 6); break;
        }
    }
}
