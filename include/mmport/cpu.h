/* SPDX-License-Identifier: MIT */
/**
 * @file cpu.h
 * What mmport knows about the CPU it runs on. Detection runs once, on first
 * use, and is thread-safe; the result is immutable afterwards.
 */
#ifndef MMPORT_CPU_H
#define MMPORT_CPU_H

#include <mmport/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Instruction-set architecture of the running build. */
enum mmp_arch {
    MMP_ARCH_GENERIC = 0, /**< portable C only */
    MMP_ARCH_X86_64 = 1,  /**< x86-64 */
    MMP_ARCH_ARM64 = 2,   /**< arm64 (AArch64) */
};

/** Feature bits in mmp_cpu_features::flags. x86 and arm64 bits do not overlap. */
enum mmp_cpu_flag {
    /* x86 */
    MMP_CPU_SSE2 = 1u << 0,      /**< SSE2 (MOVNTI) */
    MMP_CPU_ERMS = 1u << 1,      /**< enhanced REP MOVSB/STOSB */
    MMP_CPU_FSRM = 1u << 2,      /**< fast short REP MOVSB */
    MMP_CPU_REP_GOOD = 1u << 3,  /**< string ops are microcoded well (Linux REP_GOOD rule) */
    MMP_CPU_AVX2 = 1u << 4,      /**< AVX2, and the OS saves YMM state */
    MMP_CPU_AVX512F = 1u << 5,   /**< AVX-512F, and the OS saves ZMM state */
    MMP_CPU_CLZERO = 1u << 6,    /**< AMD CLZERO */
    MMP_CPU_MOVDIR64B = 1u << 7, /**< MOVDIR64B */
    /* arm64 */
    MMP_CPU_DC_ZVA = 1u << 16,   /**< DC ZVA usable (DCZID_EL0.DZP clear) */
    MMP_CPU_MOPS = 1u << 17,     /**< FEAT_MOPS (SETP/SETM/SETE), HWCAP2_MOPS */
    MMP_CPU_SVE = 1u << 18,      /**< SVE, HWCAP_SVE */
    MMP_CPU_ID_REGS = 1u << 19,  /**< EL0 may read ID registers (HWCAP_CPUID) */
};

/** The CPU as mmport sees it. Fields that do not apply to the arch are 0. */
struct mmp_cpu_features {
    enum mmp_arch arch;
    char vendor[16];      /**< "GenuineIntel", "AuthenticAMD", "ARM", ... or "" */
    uint32_t family;      /**< x86 display family */
    uint32_t model;       /**< x86 display model */
    uint32_t stepping;    /**< x86 stepping */
    uint64_t midr;        /**< arm64 MIDR_EL1, 0 if unknown */
    uint32_t flags;       /**< enum mmp_cpu_flag bits */
    uint32_t zva_block;   /**< DC ZVA block bytes (4 << DCZID_EL0.BS); 0 if none */
    bool zva_prohibited;  /**< DCZID_EL0.DZP: DC ZVA must not be used */
    uint64_t hwcap;       /**< arm64 AT_HWCAP (0 if not known) */
    uint64_t hwcap2;      /**< arm64 AT_HWCAP2 (0 if not known) */
    /**
     * Size of one instance of the last-level cache (the cache of the highest
     * level, as the CPU describes its sharing group: CPUID leaf 4 on Intel,
     * 0x8000001D on AMD; else CPUID 0x80000006 or sysfs, which a virtual
     * machine may fill with the host socket's figure); 0 if unknown.
     */
    uint64_t llc_bytes;
    const char *llc_source; /**< where llc_bytes came from: "cpuid", "sysfs", "none" */
    uint64_t l2_bytes;      /**< size of one core's level 2 data or unified cache, 0 if unknown */
    /**
     * Cores sharing one last-level cache instance: the logical CPUs the
     * cache leaf (or sysfs shared_cpu_list) says share it, divided by those
     * sharing one L2 (the threads of a core); 0 if unknown (no such leaf,
     * as in many virtual machines). On Intel the leaf gives a power-of-two
     * bound, so this may exceed the cores present.
     */
    uint32_t llc_cores;
};

/**
 * The features of the running CPU, detected on first call.
 * Never fails and never returns NULL; unknown facts read as 0.
 */
MMP_API const struct mmp_cpu_features *mmp_cpu_features(void);

/** Name of an architecture ("x86_64", "aarch64", "generic"). Never fails. */
MMP_API const char *mmp_arch_name(enum mmp_arch arch);

/**
 * Name of one feature bit (e.g. "erms"); NULL for a value that is not
 * exactly one known bit.
 */
MMP_API const char *mmp_cpu_flag_name(uint32_t flag);

#ifdef __cplusplus
}
#endif

#endif
