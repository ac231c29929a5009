/* SPDX-License-Identifier: MIT */
/* Linux host services for clearing: environment, files, clock, threads. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

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

uint64_t mmp_host_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

unsigned mmp_host_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

struct worker {
    pthread_t tid;
    void (*fn)(void *arg, unsigned i);
    void *arg;
    unsigned i;
    bool started;
};

static void *work(void *p)
{
    struct worker *w = p;
    w->fn(w->arg, w->i);
    return NULL;
}

void mmp_host_run_parallel(unsigned n, void (*fn)(void *arg, unsigned i), void *arg)
{
    struct worker w[256];
    if (n > 256)
        n = 256;
    for (unsigned i = 1; i < n; i++) {
        w[i] = (struct worker){.fn = fn, .arg = arg, .i = i};
        w[i].started = pthread_create(&w[i].tid, NULL, work, &w[i]) == 0;
    }
    fn(arg, 0);
    for (unsigned i = 1; i < n; i++) {
        if (w[i].started)
            pthread_join(w[i].tid, NULL); /* join orders the thread's stores before ours */
        else
            fn(arg, i);
    }
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
