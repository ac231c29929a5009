/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "guest_ram.h"
#include "progress.h"

#define HUGE_2M (2ul << 20)

/* Free 2 MiB hugetlbfs pages in the default pool, or 0. */
static unsigned long free_hugetlb_pages(void)
{
    FILE *f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "r");
    unsigned long n = 0;
    if (f) {
        if (fscanf(f, "%lu", &n) != 1)
            n = 0;
        fclose(f);
    }
    return n;
}

/* THP mode as "[always]" / "[madvise]" / "[never]" in sysfs. */
static const char *thp_backing(void)
{
    char buf[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            buf[0] = '\0';
        fclose(f);
    }
    if (strstr(buf, "[always]") || strstr(buf, "[madvise]"))
        return "transparent huge pages (2 MiB, madvised)";
    return "4 KiB pages (transparent huge pages disabled)";
}

int guest_ram_reserve(struct guest_ram *ram, size_t len)
{
    memset(ram, 0, sizeof *ram);
    len = (len + HUGE_2M - 1) & ~(HUGE_2M - 1);
    if (!len)
        return -EINVAL;

    if (free_hugetlb_pages() >= len / HUGE_2M) {
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
        if (p != MAP_FAILED) {
            *ram = (struct guest_ram){p, len, "hugetlbfs (2 MiB pages)", p, len};
            return 0;
        }
    }
    /* Over-allocate to place the range on a 2 MiB boundary for THP. */
    size_t map_len = len + HUGE_2M;
    void *p = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -errno;
    uintptr_t base = ((uintptr_t)p + HUGE_2M - 1) & ~(uintptr_t)(HUGE_2M - 1);
    const char *backing = thp_backing();
    if (madvise((void *)base, len, MADV_HUGEPAGE) != 0)
        backing = "4 KiB pages (madvise(MADV_HUGEPAGE) refused)";
    *ram = (struct guest_ram){(void *)base, len, backing, p, map_len};
    return 0;
}

struct dirty_span {
    uint64_t *w;
    size_t from, to; /* words */
    struct progress *pr;
};

static void *dirty_span(void *arg)
{
    enum { CHUNK = (32u << 20) / 8 }; /* words between progress counts */
    struct dirty_span *s = arg;
    for (size_t i = s->from; i < s->to;) {
        size_t end = s->to - i > CHUNK ? i + CHUNK : s->to, n = end - i;
        for (; i < end; i++)
            s->w[i] = 0xdeadbeef00000000ull | (i & 0xffffffffu);
        if (s->pr)
            progress_add(s->pr, n * 8);
    }
    return NULL;
}

void guest_ram_dirty(struct guest_ram *ram, unsigned threads, struct progress *pr)
{
    enum { MAX = 64 };
    struct dirty_span span[MAX];
    pthread_t tid[MAX];
    bool joined[MAX] = {false};
    size_t words = ram->len / 8;
    threads = threads < 1 ? 1 : threads > MAX ? MAX : threads;
    /* The first touch faults the memory in: spread it over the CPUs too. */
    for (unsigned t = 0; t < threads; t++)
        span[t] = (struct dirty_span){ram->base, words * t / threads,
                                      words * (t + 1) / threads, pr};
    if (pr)
        progress_update(pr, 0, ram->len);
    for (unsigned t = 1; t < threads; t++)
        joined[t] = pthread_create(&tid[t], NULL, dirty_span, &span[t]) == 0;
    dirty_span(&span[0]);
    for (unsigned t = 1; t < threads; t++) {
        if (joined[t])
            pthread_join(tid[t], NULL);
        else
            dirty_span(&span[t]); /* no thread: do it here */
    }
}

size_t guest_ram_first_nonzero(const struct guest_ram *ram)
{
    const uint64_t *w = ram->base;
    for (size_t i = 0; i < ram->len / 8; i++)
        if (w[i]) {
            const unsigned char *b = (const unsigned char *)&w[i];
            size_t j = 0;
            while (!b[j])
                j++;
            return i * 8 + j;
        }
    return ram->len;
}

long long guest_ram_huge_bytes(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long long kb = -1, v;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "AnonHugePages: %lld kB", &v) == 1 ||
            sscanf(line, "Private_Hugetlb: %lld kB", &v) == 1)
            kb = (kb < 0 ? 0 : kb) + v;
    }
    fclose(f);
    return kb < 0 ? -1 : kb << 10;
}

void guest_ram_release(struct guest_ram *ram)
{
    if (ram->map)
        munmap(ram->map, ram->map_len);
    memset(ram, 0, sizeof *ram);
}
