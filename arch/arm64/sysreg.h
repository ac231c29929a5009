/* SPDX-License-Identifier: MIT */
/*
 * System-register reads. Registers are named by their generic encoding
 * (S3_op1_Cn_Cm_op2) so older assemblers accept them.
 */
#ifndef MMPORT_ARCH_ARM64_SYSREG_H
#define MMPORT_ARCH_ARM64_SYSREG_H

#include <stdint.h>

#define arm64_read_sysreg(enc)                                                          \
    ({                                                                                  \
        uint64_t v_;                                                                    \
        __asm__ volatile("mrs %0, " enc : "=r"(v_));                                    \
        v_;                                                                             \
    })

#define ARM64_DCZID_EL0 "S3_3_C0_C0_7"         /* readable at EL0 */
#define ARM64_MIDR_EL1 "S3_0_C0_C0_0"          /* EL1, or EL0 when HWCAP_CPUID */
#define ARM64_ID_AA64PFR0_EL1 "S3_0_C0_C4_0"   /* SVE: bits [35:32] */
#define ARM64_ID_AA64ISAR2_EL1 "S3_0_C0_C6_2"  /* MOPS: bits [19:16] */

#endif
