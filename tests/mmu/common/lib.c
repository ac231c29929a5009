/* SPDX-License-Identifier: MIT */
/*
 * The C runtime a freestanding payload needs: printf on the console (the
 * memory primitives and the formatting are examples/hyp/common/fmt.c), a
 * seeded PRNG and the PASS/FAIL bookkeeping every scenario reports through.
 */
#include "fmt.h"
#include "payload.h"

#include <stdarg.h>

/* ---- printf: examples/hyp/common/fmt.c (one implementation) ---- */

int pl_vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap)
{
    return hyp_vsnprintf(buf, cap, fmt, ap);
}

int pl_snprintf(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = pl_vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}

void pl_printf(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    pl_vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    pl_console_write(buf);
}

/* ---- PRNG: splitmix64, seeded so a failing sequence can be replayed ---- */

static uint64_t rng_state;

void pl_srand(uint64_t seed)
{
    rng_state = seed;
}

uint64_t pl_rand(void)
{
    return pl_rand_r(&rng_state);
}

uint64_t pl_rand_r(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t pl_rand_below(uint64_t n)
{
    return n ? pl_rand() % n : 0;
}

/* ---- results ---- */

struct pl_counts pl_counts;

void pl_result(int ok, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    pl_vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    if (ok)
        pl_counts.passed++;
    else
        pl_counts.failed++;
    pl_printf("%s: %s\n", ok ? "PASS" : "FAIL", name);
}

void pl_skip(const char *why, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    pl_vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    pl_counts.skipped++;
    pl_printf("SKIP: %s: %s\n", name, why);
}

void pl_finish(void)
{
    pl_printf("RESULT: %u passed, %u failed, %u skipped\n", pl_counts.passed,
              pl_counts.failed, pl_counts.skipped);
    pl_exit(pl_counts.failed ? 1 : 0);
}
