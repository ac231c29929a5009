/* SPDX-License-Identifier: MIT */
/*
 * Hooks into the hosting environment (an OS, or nothing for a bare-metal
 * hypervisor). host/linux.c implements them for the hosted library;
 * host/none.c is the freestanding default. Core never calls libc itself.
 */
#ifndef MMPORT_CORE_HOST_H
#define MMPORT_CORE_HOST_H

#include <mmport/cpu.h>
#include <mmport/pt.h>

/**
 * The OS's hardware-capability words (Linux AT_HWCAP / AT_HWCAP2).
 * Returns false, leaving both 0, where there is no OS to ask: the arch code
 * then reads the ID registers itself (it runs at EL1 or above).
 */
bool mmp_host_hwcaps(uint64_t *hwcap, uint64_t *hwcap2);

/**
 * Add what only the OS knows to *f (auxv HWCAPs, sysfs cache sizes and
 * MIDR). Called once, after mmp_arch_cpu_detect(). May do nothing.
 */
void mmp_host_cpu_refine(struct mmp_cpu_features *f);

/** Value of an environment variable, or NULL (always NULL without an OS). */
const char *mmp_host_getenv(const char *name);

/**
 * Read the whole file at path into buf, NUL-terminated after the bytes
 * read (which may include NUL bytes). Returns the bytes read, or a
 * negative MMP_E* value: -MMP_ERANGE if the file holds more than cap - 1
 * bytes, -MMP_ENOENT if it cannot be opened or read, -MMP_ENOSYS without
 * an OS.
 */
long mmp_host_read_file(const char *path, char *buf, size_t cap);

/**
 * Write len bytes of text to the file at path, whole or not at all
 * (temporary file, then rename). The file's directory is created if it is
 * missing and its parent exists; no other directory is. 0, or -MMP_ENOENT
 * if it cannot, -MMP_ENOSYS without an OS.
 */
int mmp_host_write_file(const char *path, const char *text, size_t len);

/**
 * len bytes of writable scratch memory, resident (faulted in), for a
 * measurement; NULL where there is none. Freed with mmp_host_scratch_free().
 */
void *mmp_host_scratch(size_t len);
void mmp_host_scratch_free(void *p, size_t len);

/** Monotonic time in nanoseconds; 0 when the host has no clock. */
uint64_t mmp_host_now_ns(void);

/** CPUs the calling thread may run on (its affinity mask; at least 1). */
unsigned mmp_host_cpus(void);

/**
 * Run fn(arg, i) for every i in [0, n), concurrently where the host has
 * threads (a persistent pool plus the calling thread, each taking the next
 * index), and return when all are done; their stores are then visible to
 * the caller. Without threads (or when the pool is busy with another call,
 * or a thread cannot be started) the caller runs the rest itself.
 */
void mmp_host_run_parallel(unsigned n, void (*fn)(void *arg, unsigned i), void *arg);

/**
 * mmp_shutdown()'s side of the pool: mmp_host_pool_hold() waits for no
 * call and returns false if a threaded clear is using the pool, else
 * keeps every later one off it until mmp_host_pool_end(stop), which stops
 * and joins the workers first if stop is true (a later threaded clear
 * starts them again). No-ops without threads.
 */
bool mmp_host_pool_hold(void);
void mmp_host_pool_end(bool stop);

/**
 * Move the calling thread onto the CPUs of the NUMA node holding the page
 * at addr, until mmp_host_unplace(). Does nothing where the node is unknown
 * (page not faulted in, one node, no OS).
 */
void mmp_host_place_near(const void *addr);

/**
 * Fault [addr, addr + len) in writable (Linux: MADV_POPULATE_WRITE) so the
 * clearing stores take no page faults. 0 when done; -MMP_ENOSYS where the
 * host cannot (then the stores fault the pages in); -MMP_ENOMEM if the
 * range cannot be backed (not mapped, not writable, out of memory).
 */
int mmp_host_populate(void *addr, size_t len);

/** Undo mmp_host_place_near() on the calling thread (nothing if it did nothing). */
void mmp_host_unplace(void);

/**
 * A zeroed block of `size` bytes private to the calling thread, for
 * batching shared counters without a locked instruction per call; or NULL
 * (then core updates the shared counters directly). When such a thread
 * exits, the host calls mmp_core_thread_block_exit(block). Optional:
 * host/none returns NULL.
 */
void *mmp_host_thread_block(size_t size);

/**
 * The built-in table allocator behind mmp_pt_init(ops = NULL): heap pages,
 * pa == va, no-op flush (host/linux); NULL where there is no heap
 * (host/none), and mmp_pt_init then returns -EINVAL.
 */
const struct mmp_pt_ops *mmp_host_pt_default_ops(void);

/*
 * [p, p+n) is caller-owned storage that may never have been written and
 * is about to be read on purpose (mmp_pt_init tells a live table from
 * garbage): tell a memory checker (valgrind) to take it as initialised.
 * No-op without one.
 */
void mmp_host_assume_init(const void *p, size_t n);

/*
 * The built-in reclamation of MMP_PT_SHARED tables without a retire_table
 * hook: an epoch scheme (host/linux/pt_epoch.c). Lookups and shared calls
 * run between mmp_host_epoch_enter() and mmp_host_epoch_leave() (nesting
 * allowed); a retired page is given to free_table(ctx, va, pa, bytes) once
 * every section that was running when it was retired has left.
 * mmp_host_epoch_ok() is false where there is none (host/none): shared
 * tables then need the caller's hook.
 */
bool mmp_host_epoch_ok(void);
void mmp_host_epoch_enter(void);
void mmp_host_epoch_leave(void);
void mmp_host_epoch_retire(void (*free_table)(void *, void *, uint64_t, size_t), void *ctx,
                           void *va, uint64_t pa, size_t bytes);
/* Wait for every running section to leave, then free every retired page
 * (the caller is in no section). */
void mmp_host_epoch_drain(void);
/*
 * mmp_shutdown()'s side: if no thread is inside a section, free every
 * retired page and every thread's record, and return 0 (a thread's next
 * section registers it again); else -MMP_EBUSY, nothing freed.
 */
int mmp_host_epoch_release(void);

/** Core's side of mmp_host_thread_block(): flushes a block at thread exit. */
void mmp_core_thread_block_exit(void *block);

#endif
