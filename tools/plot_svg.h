/* SPDX-License-Identifier: MIT */
/*
 * SVG pictures the mmport command draws itself (no plotting dependency):
 * a line chart with a log-2 x axis (bench clear --plot), grouped bars in
 * stacked panels (bench map / fault / dirty --plot) and horizontal strips of
 * coloured extents (demo --plot). Every series / strip is a
 * <g class="series|strip" data-name="..."> so tests can find it.
 */
#ifndef MMPORT_TOOLS_PLOT_SVG_H
#define MMPORT_TOOLS_PLOT_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct svg_series {
    const char *name;
    size_t n;
    const double *x, *y; /* x > 0 (log axis) */
};

struct svg_marker {
    double x;
    const char *label;
};

/* A chart of the series; markers are dashed vertical lines (the x axis
 * extends to include them); yunit labels the points' tooltips. */
void svg_chart(FILE *out, const char *title, const char *xlabel, const char *ylabel,
               const char *yunit, const struct svg_series *s, size_t ns,
               const struct svg_marker *m, size_t nm);
/* The same with a log-10 y axis (values over several decades; y > 0). */
void svg_chart_logy(FILE *out, const char *title, const char *xlabel, const char *ylabel,
                    const char *yunit, const struct svg_series *s, size_t ns);

/* A panel of grouped bars: series i of every panel has colour i and the
 * legend's name i; a series' x values are category indices (a category
 * without a point has no bar of that series). */
struct svg_panel {
    const char *name;
    size_t ns;
    const struct svg_series *s;
};

/* Panels stacked over one row of categories, each with its own y axis
 * over the same range (logy: log-10, whole decades, y > 0; else from 0);
 * a bar's tooltip is "<category> <series>: <y> <yunit>". */
void svg_bars(FILE *out, const char *title, const char *ylabel, const char *yunit, bool logy,
              const char *const *cats, size_t ncats, const struct svg_panel *p, size_t np,
              const char *const *legend, size_t nlegend);

/* One extent of a strip: [start, start+size) of a kind (index into the
 * kinds given to svg_strips), with a tooltip. */
struct svg_extent {
    uint64_t start, size;
    unsigned kind;
    char tip[96];
};

struct svg_strip {
    const char *name;  /* row label */
    uint64_t lo, hi;   /* the row spans [lo, hi) */
    size_t n;
    const struct svg_extent *e;
};

/* Rows of extents, each row scaled to its own span; a legend of kinds. */
void svg_strips(FILE *out, const char *title, const struct svg_strip *rows, size_t nrows,
                const char *const *kinds, const char *const *colors, size_t nkinds);

/* Writes s with XML's five special characters escaped. */
void svg_text(FILE *out, const char *s);

#endif
