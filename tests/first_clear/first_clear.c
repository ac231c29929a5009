/* SPDX-License-Identifier: MIT */
/*
 * The first clear of a process between two markers strace sees
 * (scripts/check.d/first_clear.sh): everything the library does for
 * mmp_clear_pages(p, 1) the first time shows up between them. Prints the
 * first and the second call's time (information, not a verdict).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <mmport/mmport.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no system call */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(void)
{
    unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    if (p == MAP_FAILED)
        return 2;
    p[0] = 1; /* faulted in before: the clears meet a resident page */
    access("/mmport-first-clear/begin", F_OK);
    uint64_t t0 = now_ns();
    int rc = mmp_clear_pages(p, 1);
    uint64_t t1 = now_ns();
    p[0] = 1;
    uint64_t t2 = now_ns();
    rc |= mmp_clear_pages(p, 1);
    uint64_t t3 = now_ns();
    access("/mmport-first-clear/end", F_OK);
    printf("first mmp_clear_pages(p, 1) %llu ns, second %llu ns\n",
           (unsigned long long)(t1 - t0), (unsigned long long)(t3 - t2));
    return rc != 0 || p[0] != 0;
}
