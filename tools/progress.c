/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

enum { REDRAW_MS = 100, DELAY_MS = 500, WIDTH = 30 };

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
        if (p->unit && dt > 0)
            n += snprintf(line + n, sizeof line - (size_t)n, " %6.1f GB/s", (double)done / dt / 1e9);
    }
    snprintf(line + n, sizeof line - (size_t)n, " %5.1f s", dt);
    /* \r and erase-to-end-of-line: the line is redrawn in place */
    fprintf(stderr, "\r%s\033[K", line);
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
    p->on = isatty(STDERR_FILENO) && pthread_create(&p->ticker, NULL, tick, p) == 0;
}

void progress_update(struct progress *p, uint64_t done, uint64_t total)
{
    AO_store(&p->total, (AO_t)total);
    AO_store(&p->done, (AO_t)done);
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
