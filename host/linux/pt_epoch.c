/* SPDX-License-Identifier: MIT */
/*
 * Epoch-based reclamation for MMP_PT_SHARED tables whose caller has no
 * RCU of its own (core/host.h). Classic three-epoch EBR (Fraser, "Practical
 * lock-freedom", 2004): a reader publishes the global epoch it entered in;
 * the epoch advances only when every active reader is in the current one,
 * so a page retired in epoch e is unreachable to every reader once the
 * global epoch reaches e + 2.
 *
 * Readers (lookups, shared calls) cost one sequentially consistent store
 * and two loads per outermost section; retiring (splits and folds only)
 * takes a mutex and a heap node, off the fault fast path.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "host.h"

_Static_assert(sizeof(AO_t) * 2 + sizeof(void *) + sizeof(unsigned) <= 64, "record > a line");

struct rec {
    volatile AO_t active; /* 0 = outside, else the epoch entered */
    volatile AO_t used;   /* owned by a live thread */
    struct rec *next;     /* registry: reused at thread exit, freed by mmp_shutdown() */
    unsigned depth;       /* nesting (owner only) */
};

struct node {
    void (*free_table)(void *, void *, uint64_t, size_t);
    void *ctx, *va;
    uint64_t pa;
    size_t bytes;
    AO_t epoch;
    struct node *next;
};

static volatile AO_t epoch = 1;
static volatile AO_t registry; /* struct rec *, push-only until mmp_shutdown() */
/* Bumped by mmp_shutdown(): a thread's record from an older generation is gone. */
static volatile AO_t generation = 1;
static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;
static struct node *retired;
static unsigned nretired;
static pthread_mutex_t key_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t rec_key;
static bool rec_key_made;
static _Thread_local struct rec *self;
static _Thread_local AO_t self_generation;

static void rec_exit(void *p)
{
    struct rec *r = (struct rec *)p;
    AO_store_release(&r->active, 0);
    AO_store_release(&r->used, 0);
}

static struct rec *rec_get(void)
{
    if (self && self_generation == AO_load(&generation))
        return self;
    pthread_mutex_lock(&key_lock);
    if (!rec_key_made)
        rec_key_made = pthread_key_create(&rec_key, rec_exit) == 0;
    pthread_mutex_unlock(&key_lock);
    struct rec *r;
    for (r = (struct rec *)AO_load_acquire(&registry); r; r = r->next)
        if (!AO_load(&r->used) && AO_compare_and_swap_full(&r->used, 0, 1))
            break;
    if (!r) {
        /* A cache line each: readers store to their own record only. */
        r = aligned_alloc(64, 64);
        if (!r)
            abort(); /* 64 bytes once per thread; nothing sane to do without */
        memset(r, 0, sizeof *r);
        r->used = 1;
        AO_t h;
        do {
            h = AO_load(&registry);
            r->next = (struct rec *)h;
        } while (!AO_compare_and_swap_full(&registry, h, (AO_t)r));
    }
    pthread_setspecific(rec_key, r);
    self = r;
    self_generation = AO_load(&generation);
    return r;
}

bool mmp_host_epoch_ok(void)
{
    return true;
}

void mmp_host_epoch_enter(void)
{
    struct rec *r = rec_get();
    if (r->depth++)
        return;
    /* Publish an epoch that is still current after the publication: then
     * no advance can have missed this reader. */
    AO_t e = AO_load(&epoch);
    for (;;) {
        AO_store_full(&r->active, e); /* ordered before the reads below */
        AO_t now = AO_load_acquire(&epoch);
        if (now == e)
            return;
        e = now;
    }
}

void mmp_host_epoch_leave(void)
{
    struct rec *r = self;
    if (--r->depth == 0)
        AO_store_release(&r->active, 0);
}

/* Advance the epoch if every active reader is in the current one. */
static AO_t try_advance(void)
{
    AO_t e = AO_load_full(&epoch);
    for (struct rec *r = (struct rec *)AO_load_acquire(&registry); r; r = r->next) {
        AO_t a = AO_load_full(&r->active);
        if (a && a != e)
            return e;
    }
    if (AO_compare_and_swap_full(&epoch, e, e + 1))
        return e + 1;
    return AO_load_full(&epoch);
}

/* Free the retired pages whose epoch is two behind (retired_lock held). */
static void free_old(AO_t now)
{
    struct node **pp = &retired;
    while (*pp) {
        struct node *n = *pp;
        if (n->epoch + 2 <= now) {
            *pp = n->next;
            n->free_table(n->ctx, n->va, n->pa, n->bytes);
            free(n);
            nretired--;
        } else {
            pp = &n->next;
        }
    }
}

void mmp_host_epoch_retire(void (*free_table)(void *, void *, uint64_t, size_t), void *ctx,
                           void *va, uint64_t pa, size_t bytes)
{
    struct node *n = malloc(sizeof *n);
    if (!n) {
        /* No node: wait for a grace period here instead (rare). */
        bool in = self && self->depth;
        if (!in) {
            mmp_host_epoch_drain();
            free_table(ctx, va, pa, bytes);
            return;
        }
        abort(); /* unreachable: core retires outside its sections */
    }
    n->free_table = free_table;
    n->ctx = ctx;
    n->va = va;
    n->pa = pa;
    n->bytes = bytes;
    pthread_mutex_lock(&retired_lock);
    n->epoch = AO_load_full(&epoch);
    n->next = retired;
    retired = n;
    if (++nretired >= 32)
        free_old(try_advance());
    pthread_mutex_unlock(&retired_lock);
}

void mmp_host_epoch_drain(void)
{
    pthread_mutex_lock(&retired_lock);
    AO_t target = AO_load_full(&epoch) + 2;
    for (;;) {
        AO_t now = try_advance();
        if (now >= target)
            break;
        if (AO_load_full(&epoch) == now)
            sched_yield(); /* a reader is still inside: let it run */
    }
    free_old(AO_load_full(&epoch));
    pthread_mutex_unlock(&retired_lock);
}

int mmp_host_epoch_release(void)
{
    pthread_mutex_lock(&retired_lock);
    for (struct rec *r = (struct rec *)AO_load_acquire(&registry); r; r = r->next)
        if (AO_load_full(&r->active)) {
            pthread_mutex_unlock(&retired_lock);
            return -MMP_EBUSY;
        }
    /* No section is running: every retired page is out of every reader's reach. */
    free_old(~(AO_t)0);
    struct rec *r = (struct rec *)AO_load(&registry);
    AO_store(&registry, 0);
    while (r) {
        struct rec *next = r->next;
        free(r);
        r = next;
    }
    AO_fetch_and_add1(&generation); /* every thread registers again at its next section */
    self = NULL;
    pthread_mutex_lock(&key_lock);
    if (rec_key_made) /* no exit-time destructor for the freed records */
        rec_key_made = pthread_key_delete(rec_key) != 0;
    pthread_mutex_unlock(&key_lock);
    pthread_mutex_unlock(&retired_lock);
    return 0;
}
