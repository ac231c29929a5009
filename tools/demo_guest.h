/* SPDX-License-Identifier: MIT */
/*
 * The guest the demo brings up: its guest-physical layout for an arm64
 * (QEMU-virt-like) and an x86 (PC-like; EPT or NPT) machine, building the second-
 * stage table for it, and checking that table translates as laid out.
 */
#ifndef MMPORT_TOOLS_DEMO_GUEST_H
#define MMPORT_TOOLS_DEMO_GUEST_H

#include <stdbool.h>
#include <stdint.h>

#include <mmport/mmport.h>

#define DEMO_MAX_REGIONS 12

/* One window of guest-physical space and what backs it. */
struct demo_region {
    const char *name;
    uint64_t gpa, size; /* guest-physical (the table's input address) */
    uint64_t pa;        /* output address: a host address of the RAM, or a device PA */
    uint32_t attrs;     /* MMP_PROT_* | MMP_MEM_* */
    bool ram;           /* backed by the reserved guest RAM (reads zero after clearing) */
};

struct demo_layout {
    const char *title;  /* "arm64 stage 2" */
    const char *format; /* name as `mmport ptdump --format` spells it */
    struct mmp_pt_config cfg;
    unsigned n;
    struct demo_region r[DEMO_MAX_REGIONS]; /* ascending gpa, disjoint */
};

/* Host "physical" base of the device windows: above any user-space address. */
#define DEMO_DEVICE_PA 0xf00000000000ull

/* The layouts for RAM of @p ram_len bytes at host address @p host (2 MiB
 * aligned); the x86 one in EPT (Intel) or, with @p amd, NPT. */
void demo_layout_arm64(struct demo_layout *l, uint64_t host, uint64_t ram_len);
void demo_layout_x86(struct demo_layout *l, uint64_t host, uint64_t ram_len, bool amd);

/* Counters of one table build. */
struct demo_build {
    int rc;                   /* 0 or the first mmp_* error */
    const char *failed;       /* region whose map failed, or NULL */
    double seconds;           /* time to map every region */
    struct mmp_pt_stats st;   /* counters after the build */
    struct mmp_pt_usage use;  /* what a walk of the finished table finds */
    struct mmp_pt_info info;
};

/*
 * Map every region of @p l into @p pt (initialised by the caller), inside
 * one lazy-MMU section when @p lazy.
 */
void demo_build_table(const struct demo_layout *l, struct mmp_pt *pt, bool lazy,
                      struct demo_build *out);

/*
 * The guest's balloon driver hands pages back: DEMO_BALLOON scattered
 * 4 KiB pages of one 2 MiB block of RAM, unmapped one call each.
 */
#define DEMO_BALLOON 64

struct demo_balloon {
    uint64_t block;               /* gpa of the 2 MiB block they come from */
    uint64_t gpa[DEMO_BALLOON];   /* distinct pages inside it */
    struct mmp_pt_stats delta;    /* counters the unmaps added */
    int rc;
};

/* Picks the pages (from *seed) in the last RAM region; false if it has no 2 MiB block. */
bool demo_balloon_pick(const struct demo_layout *l, uint64_t *seed, struct demo_balloon *b);

/* Unmaps b's pages from @p pt, inside one lazy section when @p lazy. */
void demo_balloon_unmap(struct mmp_pt *pt, bool lazy, struct demo_balloon *b);

struct demo_verify {
    unsigned samples;  /* addresses looked up inside regions */
    unsigned holes;    /* addresses looked up between regions */
    unsigned ram_read; /* RAM samples whose byte was read through the translation */
    unsigned bad;      /* lookups that disagree with the layout */
    char first_bad[160];
};

/*
 * Look up the first and last byte of every region, @p per_region random
 * addresses inside each (xorshift from *seed) and addresses in the holes
 * between regions; RAM translations are also read (they must read zero).
 * With @p balloon (may be NULL), every page of its block is looked up:
 * the ballooned ones must be unmapped, the rest still mapped as laid out.
 */
void demo_verify_table(const struct demo_layout *l, const struct mmp_pt *pt, uint64_t *seed,
                       unsigned per_region, const struct demo_balloon *balloon,
                       struct demo_verify *out);

#endif
