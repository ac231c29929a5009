/* SPDX-License-Identifier: MIT */
/* Guest RAM for the demo: a large anonymous mapping, huge pages if possible. */
#ifndef MMPORT_TOOLS_GUEST_RAM_H
#define MMPORT_TOOLS_GUEST_RAM_H

#include <stdbool.h>
#include <stddef.h>

struct guest_ram {
    void *base;          /* 2 MiB aligned */
    size_t len;          /* multiple of 2 MiB */
    const char *backing; /* how it is backed, for the report */
    void *map;           /* the mapping itself (base may be inside it) */
    size_t map_len;
};

/*
 * Reserves @p len bytes (rounded up to 2 MiB): hugetlbfs 2 MiB pages when
 * the system has enough reserved, else an anonymous mapping aligned to
 * 2 MiB and advised for transparent huge pages. Returns 0 or -errno.
 */
int guest_ram_reserve(struct guest_ram *ram, size_t len);

struct progress;

/* Writes a non-zero pattern over all of it, as a previous tenant would, on
 * @p threads threads; counts the bytes written on @p pr (NULL: none). */
void guest_ram_dirty(struct guest_ram *ram, unsigned threads, struct progress *pr);

/* Offset of the first non-zero byte, or ram->len when all are zero. */
size_t guest_ram_first_nonzero(const struct guest_ram *ram);

/* Bytes of this process's memory in huge pages (smaps_rollup), or -1. */
long long guest_ram_huge_bytes(void);

void guest_ram_release(struct guest_ram *ram);

#endif
