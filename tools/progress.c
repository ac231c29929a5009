/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

enum { REDRAW_MS = 100, DELAY_MS = 500, WIDTH = 20 };

double progress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void draw(struct progress *p)
{
    uint64_t done = AO_load(&p->done), total = AO_load(&p->total);
    double dt = progress_now() - p->t0;
    char line[128];
    int n = snprintf(line, sizeof line, "  %s", p->label);
    if (total) {
        unsigned pct = (unsigned)(done > total ? 100 : done * 100 / total);
        char bar[WIDTH + 1];
        for (unsigned i = 0; i < WIDTH; i++)
            bar[i] = i < pct * WIDTH / 100 ? '#' : '.';
        bar[WIDTH] = '\0';
        n += snprintf(line + n, sizeof line - (size_t)n, " [%s] %3u%%", bar, pct);
        if (p->unit) { /* bytes: done/total in the total's unit, and the rate */
            double g = total >= 1ull << 30 ? 1 << 30 : 1 << 20, r = dt > 0 ? done / dt : 0;
            int dec = g > 1 << 20; /* 1.5/16.0 GiB, 96/256 MiB */
            n += snprintf(line + n, sizeof line - (size_t)n, " %.*f/%.*f %s %5.1f %s/s", dec,
                          (double)done / g, dec, (double)total / g, dec ? "GiB" : "MiB",
                          r >= 1e9 ? r / 1e9 : r / 1e6, r >= 1e9 ? "GB" : "MB");
        }
    }
    snprintf(line + n, sizeof line - (size_t)n, " %5.1f s", dt);
    /* \r and erase-to-end-of-line: the line is redrawn in place (a line
     * wider than the terminal would wrap and leave its head behind) */
    fprintf(stderr, "\r%.*s\033[K", p->cols - 1, line);
    fflush(stderr);
    p->drawn = true;
}

static void erase(struct progress *p)
{
    if (p->drawn)
        fputs("\r\033[K", stderr);
    fflush(stderr);
    p->drawn = false;
}

static void *tick(void *arg)
{
    struct progress *p = arg;
    struct timespec ts = {0, REDRAW_MS * 1000000L};
    for (unsigned ms = 0; !AO_load(&p->stop); ms += REDRAW_MS) {
        if (ms >= DELAY_MS) {
            pthread_mutex_lock(&p->lock);
            draw(p);
            pthread_mutex_unlock(&p->lock);
        }
        nanosleep(&ts, NULL);
    }
    return NULL;
}

void progress_suspend(struct progress *p)
{
    if (!p->on)
        return;
    pthread_mutex_lock(&p->lock);
    erase(p);
}

void progress_resume(struct progress *p)
{
    if (!p->on)
        return;
    fflush(stdout);
    pthread_mutex_unlock(&p->lock);
}

void progress_start(struct progress *p, const char *label, const char *unit)
{
    *p = (struct progress){.label = label, .unit = unit, .t0 = progress_now()};
    pthread_mutex_init(&p->lock, NULL);
    struct winsize ws;
    p->cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20 ? ws.ws_col : 80;
    p->on = isatty(STDERR_FILENO) && pthread_create(&p->ticker, NULL, tick, p) == 0;
}

void progress_update(struct progress *p, uint64_t done, uint64_t total)
{
    AO_store(&p->total, (AO_t)total);
    AO_store(&p->done, (AO_t)done);
}

void progress_add(struct progress *p, uint64_t n)
{
    AO_fetch_and_add(&p->done, (AO_t)n);
}

void progress_finish(struct progress *p)
{
    if (!p->on) {
        pthread_mutex_destroy(&p->lock);
        return;
    }
    AO_store(&p->stop, 1);
    pthread_join(p->ticker, NULL);
    erase(p);
    p->on = false;
    pthread_mutex_destroy(&p->lock);
}
