/* SPDX-License-Identifier: MIT */
/* Freestanding text helpers of the clearing code (core/clear_text.h). */
#include "clear_text.h"

bool mmp_core_streq(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

bool mmp_core_parse_size(const char *s, uint64_t *v)
{
    uint64_t x = 0;
    if (!s || *s < '0' || *s > '9')
        return false;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (x > (UINT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
    }
    unsigned shift = 0;
    switch (*s) {
    case 'K': case 'k': shift = 10; break;
    case 'M': case 'm': shift = 20; break;
    case 'G': case 'g': shift = 30; break;
    default: break;
    }
    if (shift) {
        if (x > (UINT64_MAX >> shift))
            return false;
        x <<= shift;
        s++;
    }
    if (*s)
        return false;
    *v = x;
    return true;
}

void mmp_core_put(struct mmp_core_sink *o, const char *s)
{
    for (; *s; s++, o->n++)
        if (o->n + 1 < o->cap)
            o->p[o->n] = *s;
    if (o->cap)
        o->p[o->n + 1 < o->cap ? o->n : o->cap - 1] = '\0';
}

void mmp_core_put_u64(struct mmp_core_sink *o, uint64_t v)
{
    char d[24];
    int i = 23;
    d[i] = '\0';
    do
        d[--i] = (char)('0' + v % 10);
    while (v /= 10);
    mmp_core_put(o, d + i);
}
