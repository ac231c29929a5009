/* SPDX-License-Identifier: MIT */
/*
 * Progress for the steps of the mmport command that take a while: a line
 * on stderr, only when stderr is a terminal, drawn by a ticker thread at
 * most 10 times a second and only once the step has run 0.5 s (short
 * steps show nothing), erased when the step ends. The step itself only
 * stores its counters (progress_update is two atomic stores), so blocking
 * calls without a callback (calibration) get an elapsed-time line too.
 */
#ifndef MMPORT_TOOLS_PROGRESS_H
#define MMPORT_TOOLS_PROGRESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <atomic_ops.h>

struct progress {
    const char *label;
    const char *unit; /* "B": done/total are bytes (shown, with the rate); NULL: steps */
    double t0;
    bool on;          /* stderr is a terminal: the ticker runs */
    int cols;         /* the terminal's width: the line is cut to fit */
    bool drawn;       /* something is on the line (to erase) */
    AO_t done, total, stop;
    pthread_t ticker;
    pthread_mutex_t lock; /* the ticker draws under it; suspend holds it */
};

/* Monotonic time in seconds. */
double progress_now(void);

void progress_start(struct progress *p, const char *label, const char *unit);
/* done of total (total 0: unknown, elapsed time only). Cheap; never draws. */
void progress_update(struct progress *p, uint64_t done, uint64_t total);
/* Adds n to done: for a step split over threads (one atomic add). */
void progress_add(struct progress *p, uint64_t n);
/* Stops the ticker and erases the line. */
void progress_finish(struct progress *p);
/* Around output on stdout while a step runs (a table row): the line is
 * erased and not redrawn until resume, so the two never mix on a terminal. */
void progress_suspend(struct progress *p);
void progress_resume(struct progress *p);

#endif
