/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for mmp_clear() argument handling: address offsets, lengths
 * (aligned, unaligned, wrapping), hints, chunk sizes, thread counts, forced
 * kernels (known, unavailable, unknown) and cancellation, on a buffer with
 * PROT_NONE guard pages on both sides. The result must match what the
 * documented rules predict: success clears exactly the range; cancellation
 * clears exactly the reported prefix of it; any error writes nothing.
 *
 * Input: 12 bytes {off_lo, off_hi, len_lo, len_hi, len_mode, hint, chunk,
 * threads, kernel, cancel_after, pad, pad}.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <mmport/mmport.h>

#define PAGES 48
#define PG 4096u
#define PATTERN 0xc3

static unsigned char *buf; /* PAGES usable pages between two guard pages */

static void setup(void)
{
    unsigned char *m = mmap(NULL, (PAGES + 2) * PG, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        abort();
    mprotect(m, PG, PROT_NONE);
    mprotect(m + (PAGES + 1) * PG, PG, PROT_NONE);
    buf = m + PG;
}

static void fail(const char *what, size_t at)
{
    fprintf(stderr, "fuzz_clear: %s (byte %zu)\n", what, at);
    abort();
}

struct cancel {
    unsigned after, calls;
};

static int yield_cb(void *arg, size_t done, size_t total)
{
    struct cancel *c = arg;
    if (done > total)
        fail("yield reported more than the total", done);
    return ++c->calls >= c->after;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t size)
{
    if (size < 12)
        return 0;
    if (!buf)
        setup();
    memset(buf, PATTERN, PAGES * PG);

    size_t off = (size_t)(d[0] | d[1] << 8) % (PAGES * PG);
    if (d[4] & 1)
        off &= ~(size_t)(PG - 1); /* mostly aligned addresses */
    size_t room = PAGES * PG - off;
    size_t len;
    switch (d[4] >> 1 & 3) {
    case 0: len = ((size_t)(d[2] | d[3] << 8) % (room / PG + 1)) * PG; break; /* valid pages */
    case 1: len = (size_t)(d[2] | d[3] << 8) % (room + 1); break;           /* any bytes */
    case 2: len = ~(size_t)0 - (PG - 1) - (size_t)d[2] * PG; break;          /* wraps */
    default: len = room & ~(size_t)(PG - 1); break;                         /* to the end */
    }
    size_t nk;
    const struct mmp_clear_kernel *ks = mmp_clear_kernels(&nk);
    const char *kernel = NULL;
    bool kernel_ok = true;
    if (d[8] & 0x80) {
        unsigned k = d[8] & 0x7f;
        if (k < nk) {
            kernel = ks[k].name;
            kernel_ok = ks[k].available;
        } else if (k == 0x7f) {
            kernel = "no_such_kernel";
            kernel_ok = false;
        }
    }
    struct cancel c = {d[9] % 8 + 1, 0};
    size_t cleared = 12345;
    struct mmp_clear_opts o = {
        .hint = (enum mmp_clear_hint)(d[5] % 4), /* 3 is not a hint */
        .chunk = (size_t)(d[6] % 8) * PG + (d[6] & 0x80 ? 1 : 0),
        .yield = d[9] & 0x80 ? yield_cb : NULL,
        .yield_arg = &c,
        .threads = d[7] & 0x80 ? MMP_CLEAR_MAX_THREADS + d[7] : d[7] % 5,
        .kernel = kernel,
        .cleared = &cleared,
    };
    unsigned char *addr = buf + off;
    int rc = mmp_clear(addr, len, &o);

    /* What the documented rules predict, from the inputs alone. */
    bool valid = ((uintptr_t)addr % PG) == 0 && len % PG == 0 && o.hint <= MMP_CLEAR_COLD &&
                 o.chunk % PG == 0 && o.threads <= MMP_CLEAR_MAX_THREADS && kernel_ok;
    bool wraps = (uintptr_t)addr + len < (uintptr_t)addr;
    if (!valid || wraps) {
        if (rc >= 0)
            fail("bad arguments accepted", 0);
        if (cleared != 0)
            fail("an error reported cleared bytes", cleared);
        for (size_t i = 0; i < PAGES * PG; i++)
            if (buf[i] != PATTERN)
                fail("a rejected call wrote", i);
        return 0;
    }
    size_t want = len;
    if (rc == -MMP_EINTR) {
        if (!o.yield || cleared > len)
            fail("cancelled without a callback, or more than asked", cleared);
        want = cleared;
    } else if (rc != 0) {
        fail("valid arguments refused", (size_t)-rc);
    } else if (cleared != len) {
        fail("cleared length differs from len", cleared);
    }
    for (size_t i = 0; i < PAGES * PG; i++) {
        bool inside = i >= off && i < off + want;
        bool in_range = i >= off && i < off + len;
        if (inside && buf[i] != 0)
            fail("a byte inside the cleared range is not zero", i);
        if (!in_range && buf[i] != PATTERN)
            fail("a byte outside the range was written", i);
    }
    return 0;
}
