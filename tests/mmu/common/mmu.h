/* SPDX-License-Identifier: MIT */
/*
 * The page-table scenarios (scenarios.c, arch-independent) and the hooks
 * each payload's arch part provides for them: which table configurations
 * the CPU can run, loading a table into the MMU, the tlb_flush hook, and
 * the hardware check of one address.
 */
#ifndef MMPORT_TESTS_MMU_MMU_H
#define MMPORT_TESTS_MMU_MMU_H

#include <atomic_ops.h>
#include <mmport/pt.h>

#include "payload.h"

/** One table configuration to test. */
struct pl_target {
    char name[72];
    struct mmp_pt_config cfg;
    uint64_t window;    /* base VA of the scenario window (free, in range) */
    uint64_t far_va;    /* a far VA only this configuration can reach, or 0 */
    uint64_t max_leaf;  /* largest leaf the CPU walks (x86 without 1 GiB pages) */
    uint64_t sparse_span; /* scattered pages stay below this input address (0: va_bits) */
    uint32_t prot_mask; /* MMP_PROT_* bits the format takes */
    uint32_t arch_flags;
};

/** What the scenario expects one address to translate to. */
struct pl_expect {
    int mapped;
    uint64_t pa;
    uint32_t attrs;
    uint64_t desc;      /* the descriptor mmp_pt_lookup reported (0 if none) */
    uint64_t leaf_size; /* and the size of its leaf */
};

/* ---- arch hooks ---- */

/** Fill up to @p max targets; print a SKIP line for each one the CPU lacks. */
int pl_arch_targets(struct pl_target *t, int max);
/** Physical RAM that scenarios may read and write through any mapping. */
extern const uint64_t pl_scratch_lo, pl_scratch_hi; /* 1 GiB aligned lo */
/** Identity ranges the payload needs besides its image (devices, scratch). */
struct pl_ident {
    uint64_t pa, size;
    uint32_t attrs;
};
extern const struct pl_ident pl_arch_ident[];
extern const unsigned pl_arch_nident;
/** Load @p pt into the MMU for @p t. Returns 0 or -1 (and prints why). */
int pl_arch_activate(const struct pl_target *t, const struct mmp_pt *pt);
/** Back to the boot map. */
void pl_arch_deactivate(void);
/** The payload's mmp_pt_ops::tlb_flush (ctx = the active pl_target). */
void pl_arch_tlb_flush(void *ctx, uint64_t va, uint64_t size, unsigned flags);
/**
 * Check what the MMU does at @p va against @p e. @p real allows real
 * accesses (e->pa is scratch RAM, or the address is unmapped). Returns
 * 0 when they agree; otherwise prints one "  mismatch" line and returns 1.
 */
int pl_arch_check(const struct pl_target *t, uint64_t va, const struct pl_expect *e, int real);
/** Address of the descriptor translating @p va (own walk of the table), or NULL. */
uint64_t *pl_arch_desc_ptr(const struct pl_target *t, const struct mmp_pt *pt, uint64_t va);
/** Corrupt one attribute bit of a leaf descriptor (MMP_TEST_FLIP_ATTR_BIT). */
void pl_arch_flip(const struct pl_target *t, uint64_t *desc);
/** The ret instruction written where exec probes branch. */
extern const uint32_t pl_ret_insn;
extern const unsigned pl_ret_insn_size;

/** A real store of @p value (@p store) or load at @p va through the active
 * table (a fault-tolerant probe): 0 when it completed, 1 when it faulted. */
int pl_arch_access(uint64_t va, int store, uint64_t value);

/** A monotonic clock in microseconds (for the time each target takes). */
uint64_t pl_arch_now_us(void);

/* ---- a second CPU (smp.c) ---- */

/** Every word of a frame the SMP scenario maps holds its physical address
 * ^ this: a load shows which frame a translation reached. */
#define PL_SMP_PATTERN 0x736d700000000000ull
/** The table configuration of the SMP scenario: 0, or -1 with @p why. */
int pl_arch_smp_target(struct pl_target *t, const char **why);
/**
 * Start CPU 1 with its MMU on @p pt (already live on this CPU, loaded by
 * pl_arch_activate) to run fn(arg); it stops when fn returns. Returns 0
 * once it runs on the table, else -1 with @p why.
 */
int pl_arch_smp_start(const struct pl_target *t, const struct mmp_pt *pt, void (*fn)(void *),
                      void *arg, const char **why);
/** Wait up to @p us microseconds for *@p v to reach @p want: 0, or -1. */
int pl_wait_for(volatile AO_t *v, AO_t want, uint64_t us);
/** Wait up to @p us microseconds for CPU 1 to return from fn: 0, or -1. */
int pl_arch_smp_join(uint64_t us);
/** This CPU's index (0: the one that booted). */
unsigned pl_arch_cpu(void);
/**
 * The MMU's translation of @p va for a read (or, @p write, a write) at
 * the payload's privilege: 0 and *pa, or the fault's class.
 */
int pl_arch_translate(const struct pl_target *t, uint64_t va, int write, uint64_t *pa);
#define PL_FAULT_TRANS 1
#define PL_FAULT_PERM 2
#define PL_FAULT_OTHER 3
/** A real load of the 8 bytes at @p va (fault-tolerant): 0 and *v, or 1 (it faulted). */
int pl_arch_load(uint64_t va, uint64_t *v);

/** The SMP scenario (prints a SKIP line where the payload cannot run it). */
void pl_run_smp(void);

/* ---- scenarios.c ---- */

/** Run every scenario on every target. */
void pl_run_scenarios(void);
/** The table arena (one CPU at a time): mmp_pt_ops::alloc_table / free_table. */
void *pl_alloc_table(void *ctx, size_t bytes, uint64_t *pa);
void pl_free_table(void *ctx, void *va, uint64_t pa, size_t bytes);
/** Table pages allocated from the arena now. */
unsigned pl_arena_pages(void);

#endif
