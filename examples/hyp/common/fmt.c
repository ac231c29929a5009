/* SPDX-License-Identifier: MIT */
/*
 * The C library a freestanding program needs: the four memory primitives
 * the compiler and mmport may call, and snprintf (%s %c %d %u %x %p with
 * l/ll/z, width and the '0' flag). Shared by the reference hypervisor and
 * the real-MMU payloads (tests/mmu/); no state, no vector registers when
 * built -mgeneral-regs-only.
 */
#include "fmt.h"

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

static void out_num(struct out *o, uint64_t v, unsigned base, int width, char pad,
                    int neg)
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
    struct out o = {buf, 0, cap};
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
