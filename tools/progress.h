/* SPDX-License-Identifier: MIT */
/* A progress display: a live bar on a terminal, a few plain lines otherwise. */
#ifndef MMPORT_TOOLS_PROGRESS_H
#define MMPORT_TOOLS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct progress {
    FILE *out;
    const char *label;
    bool tty;
    unsigned last_step; /* last percent (tty) or quarter (plain) shown */
    double t0;          /* seconds, monotonic */
};

/* Monotonic time in seconds. */
double progress_now(void);

void progress_start(struct progress *p, FILE *out, const char *label);
/* Shows done/total; cheap when nothing visible changes. */
void progress_update(struct progress *p, uint64_t done, uint64_t total);
/* Ends the line (tty) after the last update. */
void progress_finish(struct progress *p);

#endif
