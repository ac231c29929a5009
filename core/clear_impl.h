/* SPDX-License-Identifier: MIT */
/*
 * Clearing internals shared by core/clear*.c and the arch kernels: the one
 * kernel table (ids of every arch's kernels, so the policy data and the
 * quirk tables build and are tested on every host).
 */
#ifndef MMPORT_CORE_CLEAR_IMPL_H
#define MMPORT_CORE_CLEAR_IMPL_H

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

/* Fill the public kernel list for the running CPU (mmp_clear_kernels()). */
void mmp_core_clear_describe(struct mmp_clear_kernel *list);

/* One row of an arch quirk table (core/clear_policy.c). */
struct mmp_core_clear_quirk {
    const char *name;
    enum mmp_arch arch;
    const char *vendor;                /* exact mmp_cpu_features::vendor; "" = any */
    uint32_t fam_lo, fam_hi;           /* x86 display family range */
    uint32_t model_lo, model_hi;       /* x86 display model range */
    uint64_t midr_mask, midr_val;      /* arm64: (midr & mask) == val */
    uint32_t bad_hot, bad_cold;        /* MMP_KBIT() sets */
    uint32_t llc_div;                  /* AUTO goes cold from LLC / llc_div (0 = 1) */
    const char *why;
};
extern const struct mmp_core_clear_quirk mmp_core_clear_quirks[];
extern const size_t mmp_core_clear_nquirks;

/* The first quirk row matching f, or NULL. */
const struct mmp_core_clear_quirk *mmp_core_clear_quirk_for(const struct mmp_cpu_features *f);

/*
 * The policy in force: the table's, then the tuning file, then
 * MMPORT_CLEAR_COLD_MIN. *forced = MMPORT_CLEAR's kernel id or -1;
 * *forced_err = its error if it names an unknown or unusable kernel.
 */
void mmp_core_clear_policy_in_force(struct mmp_clear_policy *pol, int *forced, int *forced_err);

/*
 * Span i of n of a threaded round over npages pages at base: pages
 * [*first, *end), cut at huge-page boundaries where the spans are large.
 */
void mmp_core_clear_span(uintptr_t base, size_t npages, unsigned n, unsigned i, size_t *first,
                         size_t *end);

/* Largest tuning file accepted (bytes); a longer one is refused whole. */
#define MMP_CORE_TUNING_MAX (16u << 10)

/*
 * Applies the tuning file text[0, len) (modified in place; text[len] must
 * be writable) for CPU f onto *pol, whole or not at all: kernels must be in
 * the `usable` set (MMP_KBIT bits). Returns NULL when applied, else the
 * reason it was refused (valid until the next call).
 */
const char *mmp_core_clear_tuning_apply(char *text, size_t len, const struct mmp_cpu_features *f,
                                        uint32_t usable, struct mmp_clear_policy *pol);

/* mmp_clear_tuning_format() for CPU f. */
int mmp_core_clear_tuning_format_for(const struct mmp_clear_calibration *cal,
                                     const struct mmp_cpu_features *f, char *text, size_t cap);

/*
 * Parses a size: decimal digits with an optional K/M/G suffix (either case;
 * binary units), the whole string, no overflow. False on anything else.
 */
bool mmp_core_parse_size(const char *s, uint64_t *v);

/* Small freestanding string helpers. */
bool mmp_core_streq(const char *a, const char *b);

/* Appends text to a bounded buffer, always NUL-terminated; n counts what it would need. */
struct mmp_core_sink {
    char *p;
    size_t cap, n;
};
void mmp_core_put(struct mmp_core_sink *o, const char *s);
void mmp_core_put_u64(struct mmp_core_sink *o, uint64_t v);

/* Appends the "cpu <arch> <vendor> <family> <model> <midr>" line of a tuning file for f. */
void mmp_core_clear_put_cpu(struct mmp_core_sink *o, const struct mmp_cpu_features *f);

/* The five words of that line (the vendor as one word), separated by sep. */
void mmp_core_clear_put_cpu_id(struct mmp_core_sink *o, const struct mmp_cpu_features *f,
                               char sep);

/*
 * The per-CPU-model file in the user's cache directory that the policy
 * loads by default (core/clear_verify.c), into path. Returns its length, or
 * -MMP_ENOSYS without a host, -MMP_ERANGE if cap is too small.
 */
int mmp_core_clear_cache_path(const struct mmp_cpu_features *f, char *path, size_t cap);

/*
 * Without MMPORT_TUNING: applies that file if it is there; else, on a CPU
 * without a quirk row, measures briefly, writes it and applies it.
 */
void mmp_core_clear_verify(const struct mmp_cpu_features *f, uint32_t usable,
                           struct mmp_clear_policy *pol);

/*
 * The kernels the first-use measurement compares (MMP_KBIT sets): usable,
 * this arch's, not bad-listed by pol's quirk row, plus pol's own choice.
 */
void mmp_core_clear_verify_candidates(uint32_t usable, const struct mmp_clear_policy *pol,
                                      uint32_t *hot, uint32_t *cold);

/* current, unless a kernel of cand took more than 5% less time (ns[k]). */
unsigned mmp_core_clear_verify_pick(uint32_t cand, unsigned current, const uint64_t *ns);

/*
 * AUTO's threshold from hot/cold times at n ascending sizes: table if it
 * agrees with them (cold within 5% of hot at every size from it, hot
 * within 5% of cold below it); else the smallest size from which cold is
 * within 5% at every larger one; if cold loses at the largest, table when
 * it is larger, else twice the largest size.
 */
uint64_t mmp_core_clear_verify_cold_min(uint64_t table, const uint64_t *size,
                                        const uint64_t *t_hot, const uint64_t *t_cold, unsigned n);

#endif
