/* SPDX-License-Identifier: MIT */
/**
 * @file clear.h
 * Zeroing memory fast: pages, huge pages and whole guest-RAM ranges, with
 * the best instruction sequence for the CPU (rep stos, non-temporal
 * stores, CLZERO, DC ZVA, MOPS), bounded work between yields, and parallel
 * clearing of one range.
 *
 * Contract, for every clearing call below:
 * - addr is 4 KiB aligned and len a multiple of 4 KiB; the range is
 *   writable normal memory that nobody else writes during the call.
 * - Bad input (NULL or unaligned addr, bad length, a range that wraps the
 *   address space, unknown or unusable kernel, bad option) returns a
 *   negative MMP_E* value and writes nothing.
 * - When the call returns, the zeroes are ordered before every later store
 *   of the calling thread: publishing the memory with a release store (or
 *   any store, on x86) makes the zeroes visible to the CPU that acquires
 *   it. Non-temporal kernels end with exactly one store fence per kernel
 *   invocation (one per call, or per thread span and chunk).
 * - The range is cleared in address order (per thread, with threads).
 *
 * Kernel choice: a forced kernel (opts->kernel, else MMPORT_CLEAR=<name>)
 * wins; otherwise the policy (mmp_clear_policy()) gives one "hot" kernel
 * (cache-allocating stores, for memory used soon) and one "cold" kernel
 * (non-temporal stores, CLZERO or DC ZVA, for memory not touched soon);
 * MMP_CLEAR_AUTO uses the cold kernel from policy.cold_min bytes up. The
 * policy comes from facts: CPUID or the ID registers, the quirk table and
 * the cache sizes (cold_min: one core's share of the last-level cache,
 * never below twice its L2; see mmp_clear_policy_for()). Nothing is
 * measured unless the caller asks (mmp_clear_tune(), mmp_clear_calibrate(),
 * `mmport tune`), and files are read only where a variable names them:
 * MMPORT_TUNING=<file> (a tuning file from `mmport tune`; at most 16 KiB,
 * applied whole or not at all) or MMPORT_CACHE_DIR=<dir> (the per-CPU-model
 * file that `mmport tune` or mmp_clear_tune() wrote there, if any).
 * MMPORT_CLEAR_COLD_MIN=<bytes> (decimal, optional K/M/G suffix) overrides
 * cold_min. What was refused and why is in mmp_clear_policy() (`mmport
 * info` shows it). The environment is read once, at the first call of
 * mmp_clear(), mmp_clear_pages(), mmp_clear_populate(), mmp_clear_kernels(),
 * mmp_clear_policy() or mmp_clear_tune(); a bad MMPORT_CLEAR makes every
 * clearing call without opts->kernel fail (see mmp_clear()).
 *
 * The first clear in a process costs what later ones do: it detects the
 * CPU (CPUID on x86-64; on arm64 Linux also a few reads of cpu0's cache
 * sizes under /sys, so a jailed process calls mmp_cpu_features() before
 * entering its jail) and reads the environment; it opens, creates and
 * allocates nothing and times nothing (without the variables above).
 *
 * Vector registers (kernel or hypervisor embeddings): the x86 kernels
 * avx2_nt and avx512_nt use vector registers (ymm0 / zmm0, and VZEROUPPER),
 * and the policy picks one of them as the default cold kernel on AVX2 /
 * AVX-512 CPUs without CLZERO. Forcing a general-register kernel (e.g.
 * opts->kernel = "movnti") is not enough for code that runs with another
 * context's vector state live (a kernel, or a hypervisor between guest
 * entries): at -O2 the compiler itself uses vector registers in the rest
 * of the library (struct copies, zeroing). Such code either saves and
 * restores vector state around the calls (as Linux does with
 * kernel_fpu_begin/end) or builds mmport with -mgeneral-regs-only
 * (./configure --enable-general-regs-only; `make check` step "genregs"
 * verifies with objdump that no vector register appears). That build
 * leaves the vector kernels out: mmp_clear_kernels() lists them
 * unavailable ("left out: general-register build") and the policy never
 * picks them. In it, the portable "memset" kernel may become a call to the
 * environment's memset, which the policy picks only on arches without
 * kernels of their own.
 */
#ifndef MMPORT_CLEAR_H
#define MMPORT_CLEAR_H

#include <mmport/common.h>
#include <mmport/cpu.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What the caller will do with the memory (mmp_clear_opts::hint). */
enum mmp_clear_hint {
    MMP_CLEAR_AUTO = 0, /**< choose by size: cold from policy.cold_min bytes up */
    MMP_CLEAR_HOT = 1,  /**< used soon: cache-allocating stores */
    MMP_CLEAR_COLD = 2, /**< not touched soon: bypass or avoid filling the caches */
};

/**
 * Progress callback: called on the calling thread after each chunk with the
 * bytes cleared so far (a prefix of the range) and the total. Returning
 * non-zero cancels the rest of the call.
 */
typedef int (*mmp_clear_yield_fn)(void *arg, size_t done, size_t total);

/** Most threads one mmp_clear() call may use. */
#define MMP_CLEAR_MAX_THREADS 256u

/** Default chunk: 32 MiB, a few ms per thread at 10 GB/s (Linux uses the same bound). */
#define MMP_CLEAR_DEFAULT_CHUNK (32u << 20)

/** Options of mmp_clear(). All-zero (or a NULL pointer) means the defaults. */
struct mmp_clear_opts {
    enum mmp_clear_hint hint;
    /**
     * Bytes each thread clears between two calls of yield; a multiple of
     * 4 KiB, 0 = MMP_CLEAR_DEFAULT_CHUNK. Only matters with a yield callback.
     */
    size_t chunk;
    mmp_clear_yield_fn yield; /**< NULL: no callback, no chunking */
    void *yield_arg;          /**< passed to yield */
    /**
     * Threads clearing the range, each a contiguous span (0 or 1: only the
     * calling thread); at most MMP_CLEAR_MAX_THREADS. Capped at the pages
     * to clear and at the CPUs the calling thread may run on (its affinity
     * mask), or at the workers of a runner (mmp_clear_set_runner()). Spans
     * of 8 MiB and more are cut at 2 MiB boundaries (4 GiB and more: 1 GiB)
     * so no huge page is split between threads. Hosted, the threads are a
     * pool started by the first threaded call and reused by every later one
     * until mmp_shutdown() joins them (one call at a time uses it; a
     * concurrent or nested call runs its spans on its own thread). A
     * freestanding build without a runner uses one thread.
     */
    unsigned threads;
    /** Kernel name from mmp_clear_kernels(), or NULL for the policy / MMPORT_CLEAR. */
    const char *kernel;
    /**
     * If non-NULL, receives the bytes cleared from addr on: len on success,
     * the exact prefix cleared when cancelled (-MMP_EINTR), 0 on any other
     * error.
     */
    size_t *cleared;
    unsigned flags; /**< MMP_CLEAR_NUMA, or 0 */
};

/**
 * mmp_clear_opts::flags: run each span on a CPU of the NUMA node that holds
 * its memory (hosted Linux: move_pages() finds the node of the span's first
 * page, sched_setaffinity() moves the thread there for the span and back
 * after). Memory not yet faulted in has no node: the span runs where it is.
 */
#define MMP_CLEAR_NUMA 1u

/**
 * Zero len bytes at addr.
 *
 * The kernel: opts->kernel, else MMPORT_CLEAR, else the policy in force
 * (mmp_clear_policy()): its hot kernel for MMP_CLEAR_HOT, its cold one for
 * MMP_CLEAR_COLD, and for MMP_CLEAR_AUTO the cold one from policy.cold_min
 * bytes up (one core's share of the last-level cache, never below twice
 * its L2: mmp_clear_policy_for()). That policy comes from CPUID or the ID
 * registers, the quirk table and the cache sizes, without measuring: the
 * first call opens,
 * creates, allocates and times nothing (on arm64 Linux, CPU detection
 * reads cpu0's cache sizes from /sys once). Measuring happens only in
 * mmp_clear_tune() and mmp_clear_calibrate(); tuning files are read only
 * where MMPORT_TUNING or MMPORT_CACHE_DIR names them.
 * @return 0; -MMP_EINVAL for NULL or non-4 KiB-aligned addr, len not a
 * multiple of 4 KiB, an unknown kernel name (opts or MMPORT_CLEAR), an
 * unknown hint, a chunk that is not a multiple of 4 KiB, threads above
 * MMP_CLEAR_MAX_THREADS, or an unknown flag; -MMP_EOVERFLOW if addr + len wraps; -MMP_ENOTSUP
 * if the forced kernel cannot run on this CPU (it is never executed);
 * -MMP_EINTR if yield cancelled (opts->cleared says how much is zero).
 * len == 0 with a valid addr succeeds and writes nothing.
 */
MMP_API int mmp_clear(void *addr, size_t len, const struct mmp_clear_opts *opts);

/**
 * Make len bytes at addr resident and zero in one pass, for a VMM bringing
 * guest RAM up: each thread faults its span in (hosted Linux:
 * MADV_POPULATE_WRITE, Linux 5.14 and later; elsewhere the clearing stores
 * fault the pages in) and clears it. opts as for mmp_clear(): threads (the
 * pool), chunk and yield (progress after each round, and cancellation),
 * hint, kernel, flags. The range may be fresh (never touched) or resident.
 * @return as mmp_clear(); and -MMP_ENOMEM if part of the range cannot be
 * backed (not mapped, not writable, out of memory): the rounds before the
 * failing one are resident and zero (opts->cleared says how far), the
 * failing round may be partly populated and cleared.
 */
MMP_API int mmp_clear_populate(void *addr, size_t len, const struct mmp_clear_opts *opts);

/**
 * Zero npages 4 KiB pages at addr with the default options (AUTO hint).
 * @return as mmp_clear(); -MMP_EOVERFLOW if npages * 4096 overflows.
 */
MMP_API int mmp_clear_pages(void *addr, size_t npages);

/** One clearing kernel. */
struct mmp_clear_kernel {
    const char *name;     /**< e.g. "rep_stosb", "dc_zva", "memset" */
    enum mmp_arch arch;   /**< MMP_ARCH_GENERIC for the portable one */
    bool available;       /**< built in and supported by this CPU */
    bool cold;            /**< non-temporal / cache-avoiding (a "cold" kernel) */
    const char *why;      /**< why it is (un)available, one short phrase */
};

/**
 * Every kernel of every architecture, in a fixed order (stats use the same
 * index). *n receives the count (n may be NULL). Never fails.
 */
MMP_API const struct mmp_clear_kernel *mmp_clear_kernels(size_t *n);

/** One span of a threaded round: the runner calls it once for each i in [0, n). */
typedef void (*mmp_clear_span_fn)(void *span_arg, unsigned i);

/**
 * Runs span(span_arg, i) for every i in [0, n), on any threads, and returns
 * when all have returned, their stores ordered before its return (a
 * release by each worker and an acquire by the runner, as any join gives).
 */
typedef void (*mmp_clear_runner_fn)(void *ctx, unsigned n, mmp_clear_span_fn span,
                                    void *span_arg);

/**
 * Runs the spans of threaded clears (opts->threads > 1) on the caller's own
 * workers - a hypervisor's per-CPU threads, or a freestanding build's only
 * way to clear in parallel - instead of the built-in pool. workers (0 = 1)
 * caps opts->threads. run = NULL goes back to the built-in pool. Call it
 * before clearing with threads, never during a clear. Never fails.
 */
MMP_API void mmp_clear_set_runner(mmp_clear_runner_fn run, void *ctx, unsigned workers);

/** Most kernels mmp_clear_kernels() may list. */
#define MMP_CLEAR_MAX_KERNELS 16u

/** Counters since the process started (libatomic_ops atomics; never reset). */
struct mmp_clear_stats {
    size_t nkernels; /**< entries used in kernel[], same order as mmp_clear_kernels() */
    struct {
        uint64_t calls;       /**< kernel invocations (one per thread span and chunk) */
        uint64_t bytes;       /**< bytes zeroed */
        uint64_t ns;          /**< time inside the kernel, summed over threads */
        uint64_t timed_bytes; /**< bytes of the timed invocations (>= 256 KiB each) */
    } kernel[MMP_CLEAR_MAX_KERNELS];
    uint64_t clears;    /**< mmp_clear() calls that cleared everything */
    uint64_t cancelled; /**< calls cancelled by a yield callback */
    uint64_t rejected;  /**< calls refused for bad input */
};

/**
 * Copy the counters to *out. Only invocations of at least 256 KiB are timed
 * (a clock read costs as much as clearing a page); ns is 0 without a clock
 * (freestanding builds). Smaller calls are batched per thread (up to 31
 * calls per kernel) before they reach the shared counters: the caller's
 * own are flushed here, another running thread's may lag; a thread's are
 * flushed when it exits. Never fails.
 */
MMP_API void mmp_clear_stats(struct mmp_clear_stats *out);

/** The kernels chosen for a CPU, and why. */
struct mmp_clear_policy {
    const char *hot;       /**< kernel for HOT, and AUTO below cold_min */
    const char *cold;      /**< kernel for COLD, and AUTO from cold_min up */
    uint64_t cold_min;     /**< AUTO threshold in bytes */
    /**
     * Where cold_min came from: "cache" (one core's share of the
     * last-level cache, or twice its L2 if that is more), "cache-bound"
     * (the same with the share cut to the quirk row's bound, as when a
     * virtual machine reports the host socket's cache), "default" (cache
     * size unknown: 8 MiB), "env" (MMPORT_CLEAR_COLD_MIN), "tuning" (a
     * tuning file or mmp_clear_tune()).
     */
    const char *cold_min_from;
    const char *quirk;     /**< matched quirk-table row, or NULL */
    const char *quirk_why; /**< what the row says, or NULL */
    const char *forced;    /**< MMPORT_CLEAR kernel, or NULL */
    /**
     * Why MMPORT_CLEAR is refused (unknown kernel, or one this CPU or build
     * cannot run), or NULL; then every clear without opts->kernel fails
     * with forced_status.
     */
    const char *forced_error;
    int forced_status;     /**< 0, or -MMP_EINVAL / -MMP_ENOTSUP (see forced_error) */
    /** Why MMPORT_CLEAR_COLD_MIN was ignored (not a size), or NULL. */
    const char *cold_min_error;
    /**
     * What the policy rests on: "table" (facts only); "tuning" (the
     * MMPORT_TUNING file); "cached file <path>" (MMPORT_CACHE_DIR's or
     * mmp_clear_tune()'s file); "measured by mmp_clear_tune()" (with
     * ", cached in <path>" when it wrote one); or "table (<why>)" when a
     * file was named but not used: "tuning ignored: <why>", "cached file
     * <path> ignored: <why>", "no cached file <path>", why naming the line
     * and the fault (a file is applied whole or not at all). A later
     * mmp_clear_tune() may rewrite the text this points to.
     */
    const char *source;
    uint32_t bad_hot;      /**< bit i: kernel i bad-listed for hot clears by the quirk row */
    uint32_t bad_cold;     /**< bit i: kernel i bad-listed for cold clears */
};

/**
 * The policy computed from a CPU description alone (no environment, no
 * tuning file, no measuring): the quirk table of f->arch, the feature bits
 * and the cache sizes. cold_min is the cache one core can count on when
 * every core sharing the last-level cache is busy: f->llc_bytes divided by
 * f->llc_cores (the whole LLC for a quirk row whose cores may fill a ring
 * L3 alone), cut to the row's per-core bound where that figure is
 * implausible (32 MiB without a row), and never below twice f->l2_bytes;
 * 8 MiB when the LLC size is unknown; rounded up to 4 KiB.
 * Works for any arch on any host (fake CPUs in tests).
 * @return 0; -MMP_EINVAL if f or out is NULL.
 */
MMP_API int mmp_clear_policy_for(const struct mmp_cpu_features *f, struct mmp_clear_policy *out);

/**
 * The policy in force for this process: mmp_clear_policy_for() the running
 * CPU, then the tuning file or measurement asked for (MMPORT_TUNING,
 * MMPORT_CACHE_DIR, mmp_clear_tune()), then MMPORT_CLEAR_COLD_MIN and
 * MMPORT_CLEAR. Never fails.
 */
MMP_API void mmp_clear_policy(struct mmp_clear_policy *out);

/** mmp_clear_tune() flag: measure even if dir holds a file for this CPU (and replace it). */
#define MMP_CLEAR_TUNE_AGAIN 1u

/**
 * Measure the clearing kernels here and make the result the policy in
 * force for this process; nothing measures otherwise. The measurement
 * compares the table's hot and cold kernels with the others the quirk row
 * allows (64 KiB in cache; 64 MiB with lines evicted) and checks cold_min
 * at 4-64 MiB; the table's choice stays unless another is more than 5%
 * faster over two sets of rounds. It maps 64 MiB of scratch memory for the
 * duration and takes tens of milliseconds (more on a busy machine).
 *
 * With dir (a directory the caller names) the result is kept in
 * dir/clear-<arch>-<vendor>-<family>-<model>-<midr>.conf, a tuning file: a
 * later call with the same dir loads it instead of measuring (unless flags
 * has MMP_CLEAR_TUNE_AGAIN), as does MMPORT_CACHE_DIR=dir at first use in a
 * later process. A file that is refused (another format, a broken line) is
 * measured again and replaced. dir itself is created if it is missing and
 * its parent exists; no other directory is. The file is replaced whole
 * (a temporary file, then rename). dir NULL: measure, keep nothing.
 *
 * MMPORT_CLEAR and MMPORT_CLEAR_COLD_MIN still win over the result. Clears
 * running on other threads meanwhile finish with the policy they started
 * with; later ones use the new one.
 * @return 0; -MMP_EINVAL for unknown flags or an empty dir; -MMP_EBUSY if
 * another mmp_clear_tune() is running; -MMP_ENOSYS if this build has no
 * clock, scratch memory or files (freestanding); -MMP_ENOMEM if the
 * scratch memory cannot be mapped; -MMP_ERANGE if the file's path is
 * longer than 511 bytes; -MMP_ENOENT if the file cannot be written (dir
 * and its parent missing, or not writable); -MMP_EIO if the measurement
 * cannot be read back (never expected). On error the policy in force is
 * unchanged.
 */
MMP_API int mmp_clear_tune(const char *dir, unsigned flags);

/** Sizes mmp_clear_calibrate() measures. */
#define MMP_CLEAR_CAL_SIZES 5u

/** Result of a calibration run. */
struct mmp_clear_calibration {
    size_t nsizes;                      /**< entries used in size[] and in each mbps[] row */
    uint64_t size[MMP_CLEAR_CAL_SIZES]; /**< bytes, ascending */
    /**
     * MB/s (1e6 bytes/s) per kernel (mmp_clear_kernels() order) and size;
     * 0 = not measured. Integers: the core uses no floating point.
     */
    uint32_t mbps[MMP_CLEAR_MAX_KERNELS][MMP_CLEAR_CAL_SIZES];
    const char *hot;   /**< fastest kernel at the small sizes (cache-resident) */
    const char *cold;  /**< fastest cold kernel at the largest size */
    uint64_t cold_min; /**< smallest size from which cold beats hot by 5% (UINT64_MAX: never) */
};

/**
 * Measure every available kernel at up to MMP_CLEAR_CAL_SIZES sizes within
 * buf (4 KiB aligned, len >= 4 MiB; best results with len >= 4 x the LLC)
 * and derive hot, cold and cold_min. All len bytes of buf are overwritten
 * with zeroes (len need not be a multiple of 4 KiB).
 * @return 0; -MMP_EINVAL for bad buf/len or NULL out; -MMP_ENOSYS if the
 * host has no clock.
 */
MMP_API int mmp_clear_calibrate(void *buf, size_t len, struct mmp_clear_calibration *out);

/**
 * Write cal as a tuning file (text, for MMPORT_TUNING) into text, bound to
 * the running CPU. @return the length written (excluding the NUL), or
 * -MMP_ERANGE if cap is too small, -MMP_EINVAL for NULL arguments.
 */
MMP_API int mmp_clear_tuning_format(const struct mmp_clear_calibration *cal, char *text,
                                    size_t cap);

#ifdef __cplusplus
}
#endif

#endif
