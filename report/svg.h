/* SPDX-License-Identifier: MIT */
/*
 * Charts as inline SVG, written by us (no script, no network): horizontal bar
 * charts with reference lines (tg32 per configuration against the baseline and
 * the targets), x/y charts as lines (memory over time) or points with their
 * Pareto frontier (tokens/s/user against tokens/s/GPU, as vllm bench sweep
 * plot_pareto draws it), and heat maps (pass/fail by axis × axis). Output is
 * deterministic (fixed decimals) so reports can be compared; every text is
 * escaped; colours come from CSS classes the page defines (svg_style()).
 *
 * Each chart is one <svg class="chart" data-chart="KIND"> element with a
 * <title>; drawn shapes carry class "mark" (bars, points, line segments,
 * cells), so a page check can count them.
 */
#pragma once

#include "util.h"

#include <math.h>

#define SVG_MAX_ITEMS 4096 /* bars, points per series, rows or columns: more are left out (and said so) */

/* XML-escape s (&, <, >, ", ') onto b. */
void svg_escape_to(struct mx_buf *b, const char *s);
char *svg_escape(const char *s);

/* A number for a label: up to 3 significant digits past what the magnitude needs, no trailing zeros. */
char *svg_number(double v);

/* An axis with round bounds and a round step (1, 2, 2.5 or 5 × 10^k), about `ticks` ticks. */
struct svg_axis {
        double lo, hi, step;
};
void svg_axis_nice(double lo, double hi, int ticks, struct svg_axis *ret);

/* A reference line at value with a label ("target 52", "baseline 45.1"); cls picks its colour. */
struct svg_ref {
        double value;
        const char *label;
        const char *cls;
};

/* One bar; value NAN: not measured (drawn as a note, not a bar). tip: hover text (<title>). */
struct svg_bar {
        const char *label;
        double value;
        const char *cls;
        const char *tip;
};

struct svg_bars {
        const char *id, *title, *unit;
        const struct svg_bar *bars;
        size_t n;
        const struct svg_ref *refs;
        size_t n_refs;
};
void svg_bar_chart(struct mx_buf *b, const struct svg_bars *c);

/*
 * Stacked horizontal bars: one row per configuration, one segment per part
 * (µs/token by kernel category), parts in the same order and colour in
 * every row, a legend above. values[k] NAN or <= 0: no segment; a row whose
 * values are all missing says "not measured".
 */
struct svg_stack_row {
        const char *label;
        const double *values; /* n_parts */
        const char *tip;
};
struct svg_stacked {
        const char *id, *title, *unit;
        const char *const *parts;
        size_t n_parts;
        const struct svg_stack_row *rows;
        size_t n;
        const char *rest; /* the part drawn grey (what no other part holds), or NULL */
};
void svg_stacked_chart(struct mx_buf *b, const struct svg_stacked *c);

struct svg_point {
        double x, y;
        const char *label; /* written beside the point when the chart labels points (the frontier) */
        const char *tip;
};

struct svg_series {
        const char *name;
        const struct svg_point *pts;
        size_t n;
        const char *cls;
};

struct svg_xy {
        const char *id, *title, *xlabel, *ylabel;
        const struct svg_series *series;
        size_t n_series;
        const struct svg_ref *yrefs;
        size_t n_yrefs;
        bool lines;  /* join each series' points in x order (a time series); else points */
        bool pareto; /* draw and label the frontier of all points, both axes higher-is-better */
};
void svg_xy_chart(struct mx_buf *b, const struct svg_xy *c);

/*
 * The Pareto frontier of points where higher x and higher y are both better:
 * the points no other point beats or equals on both with one strictly better.
 * Their indices into p go to ret_idx (room for n), sorted by x ascending; returns how many.
 */
size_t svg_pareto_front(const struct svg_point *p, size_t n, size_t *ret_idx);

struct svg_cell {
        const char *text; /* short, inside the cell ("3/4"); NULL: none */
        const char *cls;  /* "pass", "fail", "mixed", "none" ... */
        const char *tip;
};

struct svg_heat {
        const char *id, *title, *xlabel, *ylabel;
        const char *const *cols;
        size_t n_cols;
        const char *const *rows;
        size_t n_rows;
        const struct svg_cell *cells; /* n_rows × n_cols, row-major */
};
void svg_heatmap(struct mx_buf *b, const struct svg_heat *c);

/* The CSS the charts' classes need, for the page's <style>. */
const char *svg_style(void);
