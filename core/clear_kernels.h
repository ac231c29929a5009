/* SPDX-License-Identifier: MIT */
/*
 * The clearing kernels (layer 1 of the clearing code; core/clear.c has the
 * layers): one table of every arch's kernels, so the policy data and the
 * quirk tables build and are tested on every host, and which of them this
 * build and CPU can run. The arch kernels (arch/<name>/clear.c) include
 * this for the ids.
 */
#ifndef MMPORT_CORE_CLEAR_KERNELS_H
#define MMPORT_CORE_CLEAR_KERNELS_H

#include <mmport/clear.h>

/* Kernel ids: index into the kernel table, and bit i of the bad-lists. */
enum mmp_core_clear_kid {
    MMP_K_MEMSET,
    MMP_K_REP_STOSB,
    MMP_K_REP_STOSQ,
    MMP_K_UNROLLED,
    MMP_K_MOVNTI,
    MMP_K_AVX2_NT,
    MMP_K_AVX512_NT,
    MMP_K_CLZERO,
    MMP_K_DC_ZVA,
    MMP_K_STNP,
    MMP_K_STP,
    MMP_K_MOPS,
    MMP_K_COUNT
};
#define MMP_KBIT(k) (1u << (k))

/*
 * A kernel zeroes len bytes at addr: both multiples of 64 and len > 0
 * (mmp_clear() passes whole 4 KiB pages). Non-temporal kernels end with one
 * store fence; every kernel orders its zeroes before later stores. Kernels
 * return 0, so mmp_clear() can end in a tail call to one.
 */
typedef int (*mmp_core_clear_fn)(void *addr, size_t len);

/* Static description of a kernel (data; the same on every host). */
struct mmp_core_clear_kdesc {
    const char *name;
    enum mmp_arch arch; /* MMP_ARCH_GENERIC: runs everywhere */
    uint32_t needs;     /* enum mmp_cpu_flag bits the CPU must have */
    bool cold;
    bool vector;           /* uses vector registers: left out of general-register builds */
    const char *needs_why; /* shown when a needed flag is missing */
    const char *ok_why;    /* shown when it is available */
};
extern const struct mmp_core_clear_kdesc mmp_core_clear_kdesc[MMP_K_COUNT];

/* The portable kernel (a plain store loop; compilers may call memset). */
int mmp_core_clear_memset(void *addr, size_t len);

/* True if the CPU described by f could run kernel k (built or not). */
bool mmp_core_clear_supported(const struct mmp_cpu_features *f, unsigned k);

/* Kernel id by name, or -1. */
int mmp_core_clear_lookup(const char *name);

/*
 * True if kernel k is of this build's arch but not built into it (the
 * vector kernels of a general-register build): the policy never picks it.
 */
bool mmp_core_clear_left_out(unsigned k);

/* The function for kernel k in this build, NULL if not built or not usable here. */
mmp_core_clear_fn mmp_core_clear_fn_of(unsigned k);

/* The kernels this build can run on this CPU (MMP_KBIT set). */
uint32_t mmp_core_clear_usable(void);

/* Fill the public kernel list for the running CPU (mmp_clear_kernels()). */
void mmp_core_clear_describe(struct mmp_clear_kernel *list);

#endif
