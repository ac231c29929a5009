/* SPDX-License-Identifier: MIT */
/*
 * The C runtime a freestanding hypervisor needs: the four memory
 * primitives the compiler may call (and mmport expects), word-wise page
 * copy and compare, a small printf to the serial console, the TSC clock
 * and the way out of QEMU.
 */
#include "hv.h"

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

size_t hv_strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

/* Migration copies and compares hundreds of MiB: 8-byte words, unrolled
 * (under TCG each guest instruction costs, so the byte loops above would
 * dominate the run). */
void hv_copy_page(void *dst, const void *src)
{
    uint64_t *d = dst;
    const uint64_t *s = src;
    for (unsigned i = 0; i < HV_PAGE / 8; i += 4) {
        uint64_t a = s[i], b = s[i + 1], c = s[i + 2], e = s[i + 3];
        d[i] = a;
        d[i + 1] = b;
        d[i + 2] = c;
        d[i + 3] = e;
    }
}

void hv_copy(void *dst, const void *src, size_t n)
{
    uint64_t *d = dst;
    const uint64_t *s = src;
    if (!(((uintptr_t)dst | (uintptr_t)src) & 7)) {
        for (; n >= 8; n -= 8)
            *d++ = *s++;
    }
    memcpy(d, s, n);
}

int hv_page_equal(const void *a, const void *b)
{
    const uint64_t *p = a, *q = b;
    uint64_t diff = 0;
    for (unsigned i = 0; i < HV_PAGE / 8; i += 4)
        diff |= (p[i] ^ q[i]) | (p[i + 1] ^ q[i + 1]) | (p[i + 2] ^ q[i + 2]) |
                (p[i + 3] ^ q[i + 3]);
    return diff == 0;
}

/* ---- printf: %s %c %d %u %x %p with l/ll/z, width and '0' flag ---- */

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

int hv_vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap)
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
            int len = (int)hv_strlen(s);
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

int hv_snprintf(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = hv_vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}

/* ---- console: COM1, polled. The guest drives the same UART (passed
 * through); the hypervisor writes to it only while the guest is stopped
 * (before it starts, after it ends, or from an exit on CPU 0), and CPU 1
 * never does while the guest runs. ---- */

#define COM1 0x3f8
#define COM_LSR 5
#define LSR_THRE 0x20

static hv_lock_t console_lock;

static void serial_putc(char c)
{
    for (unsigned i = 0; i < 100000 && !(inb(COM1 + COM_LSR) & LSR_THRE); i++)
        cpu_relax();
    outb(COM1, (uint8_t)c);
}

void hv_printf(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    hv_vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    hv_lock(&console_lock);
    for (const char *s = buf; *s; s++) {
        if (*s == '\n')
            serial_putc('\r');
        serial_putc(*s);
    }
    hv_unlock(&console_lock);
}

/* ---- time ---- */

/* The TSC's rate, measured against the HPET's main counter over 20 ms
 * (IA-PC HPET specification 1.0a, 2.3: the general capabilities register
 * at 0x000 gives the counter period in femtoseconds in bits 63:32, the
 * configuration register at 0x010 enables the counter with bit 0, the
 * main counter is at 0x0f0). QEMU's TCG TSC counts at the host's rate,
 * which no constant fits, and its PIT read through port 0x61 proved too
 * coarse for this (Linux's own PIT calibration fails there too). The
 * HPET's configuration is put back as it was: it is the guest's. */
static volatile uint64_t *hpet_reg(unsigned off)
{
    return (volatile uint64_t *)(uintptr_t)(0xfed00000ull + off);
}

static uint64_t tsc_per_us = 1000; /* until measured: 1 GHz */

unsigned hv_tsc_calibrate(void)
{
    uint64_t cap = *hpet_reg(0);
    uint64_t fs = cap >> 32; /* femtoseconds per tick: at most 100 ns */
    if (cap == ~0ull || fs == 0 || fs > 100000000ull)
        return (unsigned)tsc_per_us;
    uint64_t cfg = *hpet_reg(0x10);
    *hpet_reg(0x10) = cfg | 1;
    uint64_t ticks = 20000000000000ull / fs; /* 20 ms */
    uint64_t h0 = *hpet_reg(0xf0), t0 = rdtsc(), h, t;
    do {
        h = *hpet_reg(0xf0);
        t = rdtsc();
    } while (h - h0 < ticks && t - t0 < 100000000000ull);
    *hpet_reg(0x10) = cfg;
    uint64_t us = (h - h0) * fs / 1000000000ull;
    if (us >= 1000 && (t - t0) / us >= 100)
        tsc_per_us = (t - t0) / us;
    return (unsigned)tsc_per_us;
}

uint64_t hv_tsc_per_us(void)
{
    return tsc_per_us;
}

uint64_t hv_now_us(void)
{
    return rdtsc() / tsc_per_us;
}

/* isa-debug-exit at iobase 0xf4 (the guest cannot reach it: its IOPM bit
 * is set). */
void hv_exit(int code)
{
    outl(0xf4, (uint32_t)code);
    for (;;)
        __asm__ volatile("cli; hlt");
}

/* splitmix64 */
uint64_t hv_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
