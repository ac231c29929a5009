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

void mmp_host_place_near(const void *addr)
{
    (void)addr;
}

void mmp_host_unplace(void)
{
}

void *mmp_host_thread_block(size_t size)
{
    (void)size;
    return NULL;
}
