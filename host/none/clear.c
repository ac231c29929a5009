/* SPDX-License-Identifier: MIT */
/* No host OS: no environment, no files, no clock, one thread. */
#include "host.h"

const char *mmp_host_getenv(const char *name)
{
    (void)name;
    return NULL;
}

long mmp_host_read_file(const char *path, char *buf, size_t cap)
{
    (void)path;
    if (cap)
        buf[0] = '\0';
    return -MMP_ENOSYS;
}

int mmp_host_write_file(const char *path, const char *text, size_t len)
{
    (void)path, (void)text, (void)len;
    return -MMP_ENOSYS;
}

void *mmp_host_scratch(size_t len)
{
    (void)len;
    return NULL;
}

void mmp_host_scratch_free(void *p, size_t len)
{
    (void)p, (void)len;
}

uint64_t mmp_host_now_ns(void)
{
    return 0;
}

unsigned mmp_host_cpus(void)
{
    return 1;
}

/* Spans run one after another on the calling thread (mmp_clear_set_runner()
 * brings the hypervisor's own workers). */
void mmp_host_run_parallel(unsigned n, void (*fn)(void *arg, unsigned i), void *arg)
{
    for (unsigned i = 0; i < n; i++)
        fn(arg, i);
}

/* No pool: nothing to stop. */
bool mmp_host_pool_hold(void)
{
    return true;
}

void mmp_host_pool_end(bool stop)
{
    (void)stop;
}

void mmp_host_place_near(const void *addr)
{
    (void)addr;
}

void mmp_host_unplace(void)
{
}

int mmp_host_populate(void *addr, size_t len)
{
    (void)addr, (void)len;
    return -MMP_ENOSYS;
}

void *mmp_host_thread_block(size_t size)
{
    (void)size;
    return NULL;
}
