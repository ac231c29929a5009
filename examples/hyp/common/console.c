/* SPDX-License-Identifier: MIT */
/*
 * The console (printf on the arch's putc), word-wide copy and compare for
 * guest pages, and a spinlock.
 */
#include "hyp.h"

/* Guest pages are copied and compared a lot (a 512 MiB shadow copy, the
 * final compare): eight words per iteration, no vector registers (the
 * guest's are live while the hypervisor runs). */
void hyp_copy_words(void *d, const void *s, size_t n)
{
    uint64_t *p = d;
    const uint64_t *q = s;
    for (size_t i = 0; i < n / 8; i += 8) {
        uint64_t a = q[i], b = q[i + 1], c = q[i + 2], e = q[i + 3];
        uint64_t f = q[i + 4], g = q[i + 5], h = q[i + 6], k = q[i + 7];
        p[i] = a, p[i + 1] = b, p[i + 2] = c, p[i + 3] = e;
        p[i + 4] = f, p[i + 5] = g, p[i + 6] = h, p[i + 7] = k;
    }
}

size_t hyp_diff_words(const void *a, const void *b, size_t n)
{
    const uint64_t *p = a, *q = b;
    for (size_t i = 0; i < n / 8; i += 8) {
        uint64_t x = (p[i] ^ q[i]) | (p[i + 1] ^ q[i + 1]) | (p[i + 2] ^ q[i + 2]) |
                     (p[i + 3] ^ q[i + 3]) | (p[i + 4] ^ q[i + 4]) |
                     (p[i + 5] ^ q[i + 5]) | (p[i + 6] ^ q[i + 6]) |
                     (p[i + 7] ^ q[i + 7]);
        if (x) {
            const unsigned char *u = (const unsigned char *)(p + i);
            const unsigned char *v = (const unsigned char *)(q + i);
            size_t j = 0;
            while (u[j] == v[j])
                j++;
            return i * 8 + j;
        }
    }
    return n;
}

/* ---- spinlock ---- */

void hyp_lock(struct hyp_lock *l)
{
    if (AO_test_and_set_acquire(&l->ts) == AO_TS_CLEAR)
        return;
    AO_fetch_and_add1(&l->contended);
    while (AO_test_and_set_acquire(&l->ts) != AO_TS_CLEAR)
        hyp_arch_relax();
}

void hyp_unlock(struct hyp_lock *l)
{
    AO_CLEAR(&l->ts);
}

static struct hyp_lock console_lock;

void hyp_printf(const char *fmt, ...)
{
    char buf[768];
    va_list ap;
    va_start(ap, fmt);
    hyp_vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    hyp_lock(&console_lock);
    for (const char *s = buf; *s; s++) {
        if (*s == '\n')
            hyp_arch_putc('\r');
        hyp_arch_putc(*s);
    }
    hyp_unlock(&console_lock);
}
