/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <time.h>
#include <unistd.h>

#include "progress.h"

double progress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_start(struct progress *p, FILE *out, const char *label)
{
    p->out = out;
    p->label = label;
    p->tty = isatty(fileno(out));
    p->last_step = ~0u;
    p->t0 = progress_now();
}

void progress_update(struct progress *p, uint64_t done, uint64_t total)
{
    if (!total)
        return;
    unsigned pct = (unsigned)(done * 100 / total);
    double dt = progress_now() - p->t0;
    double gbps = dt > 0 ? (double)done / dt / 1e9 : 0;
    if (p->tty) {
        if (pct == p->last_step)
            return;
        enum { WIDTH = 40 };
        char bar[WIDTH + 1];
        unsigned fill = pct * WIDTH / 100;
        for (unsigned i = 0; i < WIDTH; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[WIDTH] = '\0';
        fprintf(p->out, "\r  %s [%s] %3u%%  %6.1f GB/s", p->label, bar, pct, gbps);
        fflush(p->out);
    } else {
        unsigned quarter = pct / 25;
        if (quarter == p->last_step)
            return;
        fprintf(p->out, "  %s: %3u%% (%.1f GB/s)\n", p->label, quarter * 25, gbps);
    }
    p->last_step = p->tty ? pct : pct / 25;
}

void progress_finish(struct progress *p)
{
    if (p->tty)
        fputc('\n', p->out);
}
