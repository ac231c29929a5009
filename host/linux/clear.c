/* SPDX-License-Identifier: MIT */
/* Linux host services for clearing: environment, files, clock, the thread pool, NUMA placement. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "host.h"

const char *mmp_host_getenv(const char *name)
{
    return secure_getenv(name); /* ignored in set-uid programs */
}

long mmp_host_read_file(const char *path, char *buf, size_t cap)
{
    if (!cap)
        return -MMP_EINVAL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -MMP_ENOENT;
    size_t got = 0;
    long rc = 0;
    for (;;) {
        char extra;
        bool full = got + 1 >= cap; /* only a probe for one byte more is left */
        ssize_t n = full ? read(fd, &extra, 1) : read(fd, buf + got, cap - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -MMP_ENOENT;
            break;
        }
        if (n == 0)
            break;
        if (full) {
            rc = -MMP_ERANGE;
            break;
        }
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return rc ? rc : (long)got;
}

int mmp_host_write_file(const char *path, const char *text, size_t len)
{
    char dir[512], tmp[540];
    size_t n = strlen(path);
    if (n >= sizeof dir)
        return -MMP_ENOENT;
    memcpy(dir, path, n + 1);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        mkdir(dir, 0755); /* the file's own directory only: exists, or fails at open() */
    }
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -MMP_ENOENT;
    bool ok = true;
    for (size_t done = 0; ok && done < len;) {
        ssize_t w = write(fd, text + done, len - done);
        ok = w > 0 || (w < 0 && errno == EINTR);
        done += w > 0 ? (size_t)w : 0;
    }
    ok = close(fd) == 0 && ok && rename(tmp, path) == 0;
    if (!ok)
        unlink(tmp);
    return ok ? 0 : -MMP_ENOENT;
}

void *mmp_host_scratch(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    madvise(p, len, MADV_HUGEPAGE); /* fewer faults; the kernels then meet no TLB misses */
    if (mmp_host_populate(p, len) != 0)
        memset(p, 0, len);
    return p;
}

void mmp_host_scratch_free(void *p, size_t len)
{
    munmap(p, len);
}

uint64_t mmp_host_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

unsigned mmp_host_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN); /* more than CPU_SETSIZE CPUs */
    return n > 0 ? (unsigned)n : 1;
}

/*
 * The pool: workers started on demand (never more than the CPUs less the
 * caller), parked on a condition variable between jobs, alive until
 * mmp_shutdown() stops and joins them (or the process ends). One job at a
 * time (pool_busy); everything else under pool_lock, which also orders the
 * workers' stores before the caller's return. A forked child starts with
 * an empty pool.
 */
#define POOL_MAX 255
static pthread_mutex_t pool_busy = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static unsigned pool_workers;
static pthread_t pool_thread[POOL_MAX];
static bool pool_stop;
static struct {
    void (*fn)(void *arg, unsigned i);
    void *arg;
    unsigned n, next, left;
} job;

/* Runs indices of the current job until none is left; pool_lock held on entry and exit. */
static void take_indices(void)
{
    while (job.next < job.n) {
        unsigned i = job.next++;
        void (*fn)(void *, unsigned) = job.fn;
        void *arg = job.arg;
        pthread_mutex_unlock(&pool_lock);
        fn(arg, i);
        pthread_mutex_lock(&pool_lock);
        if (--job.left == 0)
            pthread_cond_signal(&pool_done);
    }
}

static void *worker(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&pool_lock);
    for (;;) {
        while (job.next >= job.n && !pool_stop)
            pthread_cond_wait(&pool_wake, &pool_lock);
        if (pool_stop)
            break;
        take_indices();
    }
    pthread_mutex_unlock(&pool_lock);
    return NULL;
}

static void pool_after_fork(void)
{
    /* The child has only the forking thread: no workers, nothing held. */
    pthread_mutex_init(&pool_busy, NULL);
    pthread_mutex_init(&pool_lock, NULL);
    pthread_cond_init(&pool_wake, NULL);
    pthread_cond_init(&pool_done, NULL);
    pool_workers = 0;
    pool_stop = false;
    job.n = job.next = job.left = 0;
}

static void pool_init(void)
{
    pthread_atfork(NULL, NULL, pool_after_fork);
}

/* Starts workers until there are want; pool_lock held. */
static void pool_grow(unsigned want)
{
    want = want > POOL_MAX ? POOL_MAX : want;
    while (pool_workers < want) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL))
            break; /* fewer workers; the caller takes what they leave */
        pthread_setname_np(t, "mmport-clear"); /* visible in top -H, ps -L */
        pool_thread[pool_workers++] = t;
    }
}

void mmp_host_run_parallel(unsigned n, void (*fn)(void *arg, unsigned i), void *arg)
{
    pthread_once(&pool_once, pool_init);
    if (n <= 1 || pthread_mutex_trylock(&pool_busy) != 0) {
        for (unsigned i = 0; i < n; i++)
            fn(arg, i);
        return;
    }
    pthread_mutex_lock(&pool_lock);
    unsigned cpus = mmp_host_cpus();
    pool_grow((n < cpus ? n : cpus) - 1);
    job.fn = fn;
    job.arg = arg;
    job.n = n;
    job.next = 0;
    job.left = n;
    pthread_cond_broadcast(&pool_wake);
    take_indices();
    while (job.left)
        pthread_cond_wait(&pool_done, &pool_lock);
    job.n = job.next = 0;
    pthread_mutex_unlock(&pool_lock);
    pthread_mutex_unlock(&pool_busy);
}

bool mmp_host_pool_hold(void)
{
    pthread_once(&pool_once, pool_init);
    return pthread_mutex_trylock(&pool_busy) == 0;
}

void mmp_host_pool_end(bool stop)
{
    if (stop) {
        pthread_mutex_lock(&pool_lock);
        pool_stop = true;
        pthread_cond_broadcast(&pool_wake);
        pthread_mutex_unlock(&pool_lock);
        for (unsigned i = 0; i < pool_workers; i++)
            pthread_join(pool_thread[i], NULL);
        pthread_mutex_lock(&pool_lock);
        pool_workers = 0;
        pool_stop = false;
        pthread_mutex_unlock(&pool_lock);
    }
    pthread_mutex_unlock(&pool_busy);
}

/* ---- populating ------------------------------------------------------------ */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14, uapi asm-generic/mman-common.h */
#endif
/* 0 = not probed, 1 = the kernel knows MADV_POPULATE_WRITE, 2 = it does not */
static volatile AO_t populate_known;

int mmp_host_populate(void *addr, size_t len)
{
    if (!AO_load(&populate_known)) /* an unknown advice fails even for len 0 */
        AO_store(&populate_known, madvise(addr, 0, MADV_POPULATE_WRITE) == 0 ? 1 : 2);
    if (AO_load(&populate_known) != 1)
        return -MMP_ENOSYS;
    while (madvise(addr, len, MADV_POPULATE_WRITE) != 0)
        if (errno != EINTR && errno != EAGAIN)
            return -MMP_ENOMEM; /* not mapped, not writable (EINVAL), out of memory */
    return 0;
}

/* ---- NUMA placement, without libnuma ----------------------------------------- */

static __thread cpu_set_t placed_from;
static __thread bool placed;

/* The CPUs of NUMA node `node` from sysfs ("0-3,8-11"); false if unknown. */
static bool node_cpus(int node, cpu_set_t *set)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", node);
    long n = mmp_host_read_file(path, buf, sizeof buf);
    if (n <= 0)
        return false;
    CPU_ZERO(set);
    for (char *p = buf; *p && *p != '\n';) {
        char *end;
        unsigned long lo = strtoul(p, &end, 10), hi = lo;
        if (end == p)
            return false;
        if (*end == '-')
            hi = strtoul(end + 1, &end, 10);
        for (unsigned long c = lo; c <= hi && c < CPU_SETSIZE; c++)
            CPU_SET(c, set);
        p = *end == ',' ? end + 1 : end;
    }
    return CPU_COUNT(set) > 0;
}

void mmp_host_place_near(const void *addr)
{
    void *page = (void *)((uintptr_t)addr & ~(uintptr_t)(MMP_PAGE_SIZE - 1));
    int status = -1;
    /* move_pages() with no target nodes only reports where each page is. */
    if (syscall(SYS_move_pages, 0, 1ul, &page, NULL, &status, 0) != 0 || status < 0)
        return;
    cpu_set_t now, want;
    if (!node_cpus(status, &want) || sched_getaffinity(0, sizeof now, &now) != 0)
        return;
    CPU_AND(&want, &want, &now);
    if (!CPU_COUNT(&want) || CPU_EQUAL(&want, &now) ||
        sched_setaffinity(0, sizeof want, &want) != 0)
        return;
    placed_from = now;
    placed = true;
}

void mmp_host_unplace(void)
{
    if (placed)
        sched_setaffinity(0, sizeof placed_from, &placed_from);
    placed = false;
}

/*
 * One small block per thread (initial-exec TLS: no __tls_get_addr call on
 * the clearing path), flushed by a pthread key destructor at thread exit.
 * Kept small: initial-exec TLS of a dlopen()ed library comes out of glibc's
 * limited static-TLS surplus. A larger request gets NULL (shared atomics).
 */
#define BLOCK_MAX 128
static __thread __attribute__((tls_model("initial-exec"), aligned(64)))
unsigned char thread_block[BLOCK_MAX];
static __thread __attribute__((tls_model("initial-exec"))) bool thread_block_keyed;
static pthread_key_t block_key;
static pthread_once_t block_once = PTHREAD_ONCE_INIT;
static bool block_key_ok;

static void block_exit(void *block)
{
    mmp_core_thread_block_exit(block);
}

static void block_init(void)
{
    block_key_ok = pthread_key_create(&block_key, block_exit) == 0;
}

/* First use in a thread: register the block for the exit-time flush. */
static __attribute__((noinline)) void *block_first_use(void)
{
    pthread_once(&block_once, block_init);
    if (!block_key_ok || pthread_setspecific(block_key, thread_block) != 0)
        return NULL;
    thread_block_keyed = true;
    return thread_block;
}

void *mmp_host_thread_block(size_t size)
{
    if (size > BLOCK_MAX)
        return NULL;
    return thread_block_keyed ? thread_block : block_first_use();
}
