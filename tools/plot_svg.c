/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdbool.h>

#include "plot_svg.h"

enum { W = 900, H = 520, ML = 70, MR = 170, MT = 40, MB = 60 };

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
                                      "#393b79", "#637939", "#8c6d31", "#843c39"};
#define NPAL (sizeof palette / sizeof palette[0])

void svg_text(FILE *out, const char *s)
{
    for (; s && *s; s++)
        switch (*s) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default: fputc(*s, out);
        }
}

static void head(FILE *out, int w, int h, const char *title)
{
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%d\" y=\"24\" font-size=\"15\" text-anchor=\"middle\">",
            w, h, w, h, w / 2);
    svg_text(out, title);
    fputs("</text>\n", out);
}

static void size_label(char *buf, size_t cap, double v)
{
    static const char units[] = "KMGT";
    double x = v / 1024;
    unsigned u = 0;
    while (x >= 1024 && u < 3)
        x /= 1024, u++;
    snprintf(buf, cap, "%g%c", x, units[u]);
}

static void chart(FILE *out, const char *title, const char *xlabel, const char *ylabel,
                  const char *yunit, const struct svg_series *s, size_t ns,
                  const struct svg_marker *m, size_t nm, bool logy);

/* A y axis over the values: log, whole decades around [ymin, ymax] (ymin
 * the smallest y > 0), a tick per decade; linear, 0 to a round top, a
 * tick per 1, 2 or 5 x 10^k (about 5 ticks). */
struct yaxis {
    bool log;
    double lo, hi, step; /* log: exponents */
};

static struct yaxis yaxis(double ymin, double ymax, bool log)
{
    struct yaxis a = {log, 0, 1, 1};
    if (log) {
        a.lo = floor(log10(ymin < INFINITY ? ymin : 1));
        a.hi = ceil(log10(ymax > 0 ? ymax : 10));
        if (a.hi <= a.lo)
            a.hi = a.lo + 1;
    } else if (ymax > 0) {
        a.step = pow(10, floor(log10(ymax / 5)));
        double r = ymax / 5 / a.step;
        a.step *= r > 5 ? 10 : r > 2 ? 5 : r > 1 ? 2 : 1;
        a.hi = a.step * ceil(ymax / a.step);
    }
    return a;
}

/* Where y sits on the axis, 0 (bottom) to 1 (top). */
static double yfrac(const struct yaxis *a, double y)
{
    if (!a->log)
        return y / a->hi;
    return (log10(y > pow(10, a->lo) ? y : pow(10, a->lo)) - a->lo) / (a->hi - a->lo);
}

/* The ticks' values: y = ytick(a, t) for t from a->lo to a->hi by a->step. */
static double ytick(const struct yaxis *a, double t)
{
    return a->log ? pow(10, t) : t;
}

void svg_chart(FILE *out, const char *title, const char *xlabel, const char *ylabel,
               const char *yunit, const struct svg_series *s, size_t ns,
               const struct svg_marker *m, size_t nm)
{
    chart(out, title, xlabel, ylabel, yunit, s, ns, m, nm, false);
}

void svg_chart_logy(FILE *out, const char *title, const char *xlabel, const char *ylabel,
                    const char *yunit, const struct svg_series *s, size_t ns)
{
    chart(out, title, xlabel, ylabel, yunit, s, ns, NULL, 0, true);
}

static void chart(FILE *out, const char *title, const char *xlabel, const char *ylabel,
                  const char *yunit, const struct svg_series *s, size_t ns,
                  const struct svg_marker *m, size_t nm, bool logy)
{
    double xmin = INFINITY, xmax = 0, ymax = 0, ymin = INFINITY;
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < s[i].n; j++) {
            xmin = fmin(xmin, s[i].x[j]);
            xmax = fmax(xmax, s[i].x[j]);
            ymax = fmax(ymax, s[i].y[j]);
            if (s[i].y[j] > 0)
                ymin = fmin(ymin, s[i].y[j]);
        }
    for (size_t i = 0; i < nm; i++) /* the axis reaches the markers too */
        if (m[i].x > 0 && m[i].x < 1e30) {
            xmin = fmin(xmin, m[i].x);
            xmax = fmax(xmax, m[i].x);
        }
    if (!(xmin < INFINITY))
        xmin = 1, xmax = 2;
    double lx0 = floor(log2(xmin)), lx1 = ceil(log2(xmax));
    if (lx1 <= lx0)
        lx1 = lx0 + 1;
    const struct yaxis ya = yaxis(ymin, ymax, logy);
    const double pw = W - ML - MR, ph = H - MT - MB;
#define PX(x) (ML + (log2(x) - lx0) / (lx1 - lx0) * pw)
#define PY(y) (MT + ph - yfrac(&ya, (y)) * ph)
    head(out, W, H, title);
    fprintf(out, "<g class=\"axes\" stroke=\"#000\" fill=\"none\">"
                 "<rect x=\"%d\" y=\"%d\" width=\"%g\" height=\"%g\"/></g>\n",
            ML, MT, pw, ph);
    char lab[32];
    for (double l = lx0; l <= lx1; l++) { /* one tick per power of two */
        double x = ML + (l - lx0) / (lx1 - lx0) * pw;
        size_label(lab, sizeof lab, pow(2, l));
        fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>",
                x, MT, x, MT + ph);
        if ((int)(l - lx0) % (lx1 - lx0 > 16 ? 2 : 1) == 0)
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x,
                    MT + ph + 16, lab);
    }
    for (double t = ya.lo; t <= ya.hi + ya.step / 2; t += ya.step) {
        double y = ytick(&ya, t);
        fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", ML,
                PY(y), ML + pw, PY(y));
        fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", ML - 6,
                PY(y) + 4, y);
    }
    fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", ML + pw / 2, H - 18);
    svg_text(out, xlabel);
    fprintf(out, "</text>\n<text transform=\"translate(18 %.1f) rotate(-90)\" "
                 "text-anchor=\"middle\">",
            MT + ph / 2);
    svg_text(out, ylabel);
    fputs("</text>\n", out);
    for (size_t i = 0; i < nm; i++) {
        if (!(m[i].x > 0 && m[i].x < 1e30))
            continue; /* e.g. cold_min ~0: cold never wins */
        fprintf(out, "<g class=\"marker\" data-name=\"");
        svg_text(out, m[i].label);
        /* the label on the side of the line with more room */
        bool left = PX(m[i].x) > ML + pw / 2;
        fprintf(out, "\"><line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\" "
                     "stroke-dasharray=\"5 4\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
                     "text-anchor=\"%s\">",
                PX(m[i].x), MT, PX(m[i].x), MT + ph, PX(m[i].x) + (left ? -4 : 4),
                MT + ph - 8 - 14.0 * (double)i, left ? "end" : "start");
        svg_text(out, m[i].label);
        fputs("</text></g>\n", out);
    }
    for (size_t i = 0; i < ns; i++) {
        const char *c = palette[i % NPAL];
        fprintf(out, "<g class=\"series\" data-name=\"");
        svg_text(out, s[i].name);
        fprintf(out, "\" stroke=\"%s\" fill=\"%s\">\n<polyline fill=\"none\" stroke-width=\"2\" "
                     "points=\"",
                c, c);
        for (size_t j = 0; j < s[i].n; j++)
            fprintf(out, "%s%.1f,%.1f", j ? " " : "", PX(s[i].x[j]), PY(s[i].y[j]));
        fputs("\"/>\n", out);
        for (size_t j = 0; j < s[i].n; j++) {
            fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"><title>%g ",
                    PX(s[i].x[j]), PY(s[i].y[j]), s[i].y[j]);
            svg_text(out, yunit);
            fputs("</title></circle>", out);
        }
        double ly = MT + 8 + 18.0 * (double)i;
        fprintf(out, "\n<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke-width=\"3\"/>"
                     "<text x=\"%d\" y=\"%.1f\" stroke=\"none\" fill=\"#000\">",
                W - MR + 12, ly, W - MR + 36, ly, W - MR + 42, ly + 4);
        svg_text(out, s[i].name);
        fputs("</text></g>\n", out);
    }
    fputs("</svg>\n", out);
#undef PX
#undef PY
}

void svg_bars(FILE *out, const char *title, const char *ylabel, const char *yunit, bool logy,
              const char *const *cats, size_t ncats, const struct svg_panel *p, size_t np,
              const char *const *legend, size_t nlegend)
{
    enum { PH = 150, PG = 28, LABELS = 95 };
    double ymin = INFINITY, ymax = 0;
    for (size_t k = 0; k < np; k++)
        for (size_t i = 0; i < p[k].ns; i++)
            for (size_t j = 0; j < p[k].s[i].n; j++) {
                ymax = fmax(ymax, p[k].s[i].y[j]);
                if (p[k].s[i].y[j] > 0)
                    ymin = fmin(ymin, p[k].s[i].y[j]);
            }
    const struct yaxis ya = yaxis(ymin, ymax, logy);
    const int mr = 130, h = MT + (int)np * (PH + PG) + LABELS;
    const double pw = W - ML - mr, gw = pw / (double)(ncats ? ncats : 1);
    const double bw = 0.8 * gw / (double)(nlegend ? nlegend : 1);
    head(out, W, h, title);
    for (size_t k = 0; k < np; k++) {
        const double top = MT + PG + (double)k * (PH + PG);
#define BY(y) (top + PH - yfrac(&ya, (y)) * PH)
        fprintf(out, "<g class=\"panel\" data-name=\"");
        svg_text(out, p[k].name);
        fprintf(out, "\"><text x=\"%d\" y=\"%.1f\" font-weight=\"bold\">", ML, top - 7);
        svg_text(out, p[k].name);
        fputs("</text>\n", out);
        for (double t = ya.lo; t <= ya.hi + ya.step / 2; t += ya.step)
            fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                         "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                    ML, BY(ytick(&ya, t)), ML + pw, BY(ytick(&ya, t)), ML - 6,
                    BY(ytick(&ya, t)) + 4, ytick(&ya, t));
        for (size_t c = 1; c < ncats; c++) /* group separators */
            fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>",
                    ML + (double)c * gw, top, ML + (double)c * gw, top + PH);
        for (size_t i = 0; i < p[k].ns; i++) {
            const struct svg_series *s = &p[k].s[i];
            if (!s->n)
                continue;
            fprintf(out, "\n<g class=\"series\" data-name=\"");
            svg_text(out, s->name);
            fprintf(out, "\" fill=\"%s\">", palette[i % NPAL]);
            for (size_t j = 0; j < s->n; j++) {
                size_t c = (size_t)s->x[j];
                if (c >= ncats)
                    continue;
                double x = ML + (double)c * gw + 0.1 * gw + (double)i * bw, y = BY(s->y[j]);
                fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>",
                        x, y, bw, top + PH - y);
                svg_text(out, cats[c]);
                fputc(' ', out);
                svg_text(out, s->name);
                fprintf(out, ": %g ", s->y[j]);
                svg_text(out, yunit);
                fputs("</title></rect>", out);
            }
            fputs("</g>", out);
        }
        fprintf(out, "\n<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"none\" "
                     "stroke=\"#000\"/></g>\n",
                ML, top, pw, PH);
#undef BY
    }
    const double bottom = MT + (double)np * (PH + PG);
    for (size_t c = 0; c < ncats; c++) { /* slanted: the names are longer than a group */
        double x = ML + ((double)c + 0.5) * gw;
        fprintf(out, "<text transform=\"translate(%.1f %.1f) rotate(-35)\" text-anchor=\"end\">",
                x + 4, bottom + 14);
        svg_text(out, cats[c]);
        fputs("</text>\n", out);
    }
    fprintf(out, "<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\">",
            (MT + bottom) / 2);
    svg_text(out, ylabel);
    fputs("</text>\n", out);
    for (size_t i = 0, row = 0; i < nlegend; i++) {
        bool used = false; /* e.g. no contiguous runs on x86: no "cont" */
        for (size_t k = 0; k < np; k++)
            used |= i < p[k].ns && p[k].s[i].n;
        if (!used)
            continue;
        double ly = MT + PG + 18.0 * (double)row++;
        fprintf(out, "<rect x=\"%d\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>"
                     "<text x=\"%d\" y=\"%.1f\">",
                W - mr + 12, ly, palette[i % NPAL], W - mr + 32, ly + 12);
        svg_text(out, legend[i]);
        fputs("</text>\n", out);
    }
    fputs("</svg>\n", out);
}

void svg_strips(FILE *out, const char *title, const struct svg_strip *rows, size_t nrows,
                const char *const *kinds, const char *const *colors, size_t nkinds)
{
    enum { LW = 190, RW = 20, ROWH = 26, GAP = 12 };
    const int w = W, h = MT + (int)nrows * (ROWH + GAP) + 50;
    const double sw = w - LW - RW;
    head(out, w, h, title);
    for (size_t r = 0; r < nrows; r++) {
        const struct svg_strip *row = &rows[r];
        double y = MT + (double)r * (ROWH + GAP), span = (double)(row->hi - row->lo);
        fprintf(out, "<g class=\"strip\" data-name=\"");
        svg_text(out, row->name);
        fprintf(out, "\"><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", LW - 8, y + ROWH / 2 + 4);
        svg_text(out, row->name);
        fprintf(out, "</text><rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
                     "fill=\"#f4f4f4\" stroke=\"#999\"/>\n",
                LW, y, sw, ROWH);
        for (size_t i = 0; i < row->n; i++) {
            const struct svg_extent *e = &row->e[i];
            double x0 = LW + (double)(e->start - row->lo) / span * sw;
            double ww = (double)e->size / span * sw;
            fprintf(out, "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
                         "fill=\"%s\"><title>",
                    kinds[e->kind], x0, y, ww < 0.5 ? 0.5 : ww, ROWH, colors[e->kind]);
            svg_text(out, e->tip);
            fputs("</title></rect>\n", out);
        }
        fputs("</g>\n", out);
    }
    double ly = MT + (double)nrows * (ROWH + GAP) + 10;
    for (size_t k = 0; k < nkinds; k++) {
        double lx = LW + 130.0 * (double)k;
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\" "
                     "stroke=\"#999\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                lx, ly, colors[k], lx + 20, ly + 12, kinds[k]);
    }
    fputs("</svg>\n", out);
}
