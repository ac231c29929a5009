/* SPDX-License-Identifier: MIT */
/*
 * The C runtime of a freestanding hypervisor: the four memory primitives
 * the compiler and mmport may call, word-wide copy and compare for guest
 * pages, a small printf on the console, and a spinlock.
 */
#include "hyp.h"

void *memset(void *d, int c, size_t n)
{
    unsigned char *p = d;
    while (n--)
        *p++ = (unsigned char)c;
    return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
    unsigned char *p = d;
    const unsigned char *q = s;
    while (n--)
        *p++ = *q++;
    return d;
}

void *memmove(void *d, const void *s, size_t n)
{
    unsigned char *p = d;
    const unsigned char *q = s;
    if (p < q) {
        while (n--)
            *p++ = *q++;
    } else {
        while (n--)
            p[n] = q[n];
    }
    return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *p = a, *q = b;
    for (; n; n--, p++, q++)
        if (*p != *q)
            return *p - *q;
    return 0;
}

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
                     (p[i + 3] ^ q[i + 3]) | (p[i + 4] ^ q[i + 4]) | (p[i + 5] ^ q[i + 5]) |
                     (p[i + 6] ^ q[i + 6]) | (p[i + 7] ^ q[i + 7]);
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

/* ---- printf ---- */

struct out {
    char *buf;
    size_t n, cap;
};

static void out_c(struct out *o, char c)
{
    if (o->n + 1 < o->cap)
        o->buf[o->n] = c;
    o->n++;
}

static void out_num(struct out *o, uint64_t v, unsigned base, int width, char pad, int neg)
{
    char tmp[24];
    int i = 0;
    do {
        tmp[i++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    if (neg)
        tmp[i++] = '-';
    while (width-- > i)
        out_c(o, pad);
    while (i)
        out_c(o, tmp[--i]);
}

int hyp_vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap)
{
    struct out o = { buf, 0, cap };
    for (; *fmt; fmt++) {
        if (*fmt != '%') {
            out_c(&o, *fmt);
            continue;
        }
        fmt++;
        char pad = ' ';
        int width = 0, lng = 0;
        if (*fmt == '0') {
            pad = '0';
            fmt++;
        }
        while (*fmt >= '0' && *fmt <= '9')
            width = width * 10 + (*fmt++ - '0');
        while (*fmt == 'l' || *fmt == 'z') {
            lng++;
            fmt++;
        }
        switch (*fmt) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            int len = 0;
            while (s[len])
                len++;
            while (width-- > len)
                out_c(&o, ' ');
            while (*s)
                out_c(&o, *s++);
            break;
        }
        case 'c':
            out_c(&o, (char)va_arg(ap, int));
            break;
        case 'd': {
            int64_t v = lng ? va_arg(ap, int64_t) : va_arg(ap, int);
            out_num(&o, v < 0 ? -(uint64_t)v : (uint64_t)v, 10, width, pad, v < 0);
            break;
        }
        case 'u':
        case 'x': {
            uint64_t v = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
            out_num(&o, v, *fmt == 'x' ? 16 : 10, width, pad, 0);
            break;
        }
        case 'p':
            out_c(&o, '0');
            out_c(&o, 'x');
            out_num(&o, (uintptr_t)va_arg(ap, void *), 16, width, pad, 0);
            break;
        case '%':
            out_c(&o, '%');
            break;
        default:
            out_c(&o, '?');
            break;
        }
    }
    if (cap)
        buf[o.n < cap ? o.n : cap - 1] = 0;
    return (int)o.n;
}

int hyp_snprintf(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = hyp_vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    return n;
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
