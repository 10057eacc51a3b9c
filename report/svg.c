/* SPDX-License-Identifier: MIT */
/* Charts as inline SVG: bar charts, x/y charts (lines, points, Pareto frontier), heat maps (svg.h). */
#include "svg.h"

#include <float.h>

#define CHAR_W 6.6   /* px per character at the charts' 11px font: for sizing label columns */
#define LABEL_MAX 48 /* characters of a label drawn; the full text stays in the tooltip */
#define PALETTE 8    /* series colours s0..s7 in svg_style() */

void svg_escape_to(struct mx_buf *b, const char *s)
{
        for (; s && *s; s++)
                switch (*s) {
                case '&':
                        mx_buf_puts(b, "&amp;");
                        break;
                case '<':
                        mx_buf_puts(b, "&lt;");
                        break;
                case '>':
                        mx_buf_puts(b, "&gt;");
                        break;
                case '"':
                        mx_buf_puts(b, "&quot;");
                        break;
                case '\'':
                        mx_buf_puts(b, "&#39;");
                        break;
                default:
                        /* Control characters are not allowed in XML 1.0 at all. */
                        mx_buf_putc(b, (unsigned char)*s < 0x20 && *s != '\n' && *s != '\t' ? ' ' : *s);
                }
}

char *svg_escape(const char *s)
{
        struct mx_buf b = MX_BUF_INIT;

        svg_escape_to(&b, s);
        return mx_buf_steal(&b);
}

char *svg_number(double v)
{
        char buf[64];
        double a = fabs(v);
        char *dot;

        if (!isfinite(v))
                return xstrdup("-");
        snprintf(buf, sizeof(buf), "%.*f", a >= 100 || a == 0 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3, v);
        dot = strchr(buf, '.');
        if (dot) {
                char *e = buf + strlen(buf) - 1;

                while (e > dot && *e == '0')
                        *e-- = '\0';
                if (e == dot)
                        *e = '\0';
        }
        if (streq(buf, "-0"))
                return xstrdup("0");
        return xstrdup(buf);
}

void svg_axis_nice(double lo, double hi, int ticks, struct svg_axis *ret)
{
        double span, raw, mag, f, step;

        if (!isfinite(lo) || !isfinite(hi) || hi < lo)
                lo = hi = 0;
        if (hi == lo) {
                /* One value: an axis around it (from 0 for positive figures). */
                hi = hi > 0 ? hi * 1.2 : hi + 1;
                lo = lo > 0 ? 0 : lo;
        }
        ticks = MX_MAX(ticks, 2);
        span = hi - lo;
        raw = span / ticks;
        mag = pow(10, floor(log10(raw)));
        /* The round step nearest the raw one (Heckbert's "nice numbers"), so about `ticks` ticks. */
        f = raw / mag;
        step = mag * (f < 1.5 ? 1 : f < 2.25 ? 2 : f < 3.5 ? 2.5 : f < 7.5 ? 5 : 10);
        *ret = (struct svg_axis){
                .lo = floor(lo / step + 1e-9) * step,
                .hi = ceil(hi / step - 1e-9) * step,
                .step = step,
        };
}

/* Position of v on an axis mapped to pixels [p0, p1]. */
static double map(const struct svg_axis *a, double v, double p0, double p1)
{
        double span = a->hi - a->lo;

        return span > 0 ? p0 + (v - a->lo) / span * (p1 - p0) : p0;
}

/* A label cut to LABEL_MAX characters (UTF-8 aware), escaped. */
static void put_label(struct mx_buf *b, const char *s)
{
        size_t n = 0, i = 0;
        _cleanup_free_ char *cut = NULL;

        for (; s && s[i]; i++)
                if (((unsigned char)s[i] & 0xc0) != 0x80 && ++n > LABEL_MAX)
                        break;
        if (s && s[i]) {
                cut = xasprintf("%.*s…", (int)i, s);
                svg_escape_to(b, cut);
        } else
                svg_escape_to(b, s);
}

static size_t label_chars(const char *s)
{
        size_t n = 0;

        for (; s && *s; s++)
                n += ((unsigned char)*s & 0xc0) != 0x80;
        return MX_MIN(n, (size_t)LABEL_MAX + 1);
}

static void open_svg(struct mx_buf *b, const char *kind, const char *id, const char *title, double w,
                     double h)
{
        mx_buf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-chart=\"%s\"",
                      kind);
        if (id) {
                mx_buf_puts(b, " id=\"");
                svg_escape_to(b, id);
                mx_buf_puts(b, "\"");
        }
        mx_buf_printf(b,
                      " width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"",
                      w, h, w, h);
        svg_escape_to(b, title);
        mx_buf_puts(b, "\"><title>");
        svg_escape_to(b, title);
        mx_buf_printf(b, "</title>\n<text class=\"ctitle\" x=\"8\" y=\"18\">");
        svg_escape_to(b, title);
        mx_buf_puts(b, "</text>\n");
}

static void tip(struct mx_buf *b, const char *t)
{
        if (!t)
                return;
        mx_buf_puts(b, "<title>");
        svg_escape_to(b, t);
        mx_buf_puts(b, "</title>");
}

/* A vertical reference line across [y0, y1] at x, its label above at row k. */
static void vref(struct mx_buf *b, const struct svg_ref *r, double x, double y0, double y1, size_t k,
                 double w)
{
        _cleanup_free_ char *num = svg_number(r->value);
        const char *anchor = x > w - 120 ? "end" : x < 120 ? "start" : "middle";

        mx_buf_printf(b, "<line class=\"ref %s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
                      r->cls ? r->cls : "", x, y0 - 12.0 * (double)k - 4, x, y1);
        mx_buf_printf(b, "<text class=\"reflabel %s\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">",
                      r->cls ? r->cls : "", x, y0 - 12.0 * (double)k - 6, anchor);
        svg_escape_to(b, r->label);
        mx_buf_printf(b, " %s</text>\n", num);
}

/* The value axis under a horizontal chart: grid lines and ticks from top down to y_axis, the unit below. */
static void horizontal_axis(struct mx_buf *b, const struct svg_axis *ax, double left, double right,
                            double top, double y_axis, double h, const char *unit)
{
        for (double t = ax->lo; t <= ax->hi + ax->step / 2; t += ax->step) {
                _cleanup_free_ char *num = svg_number(t);
                double x = map(ax, t, left, right);

                mx_buf_printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x,
                              top, x, y_axis);
                mx_buf_printf(b, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s",
                              x, y_axis + 14, num);
                mx_buf_puts(b, "</text>\n");
        }
        mx_buf_printf(b, "<text class=\"alabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                      (left + right) / 2, h - 8);
        svg_escape_to(b, unit);
        mx_buf_puts(b, "</text>\n");
}

void svg_bar_chart(struct mx_buf *b, const struct svg_bars *c)
{
        const double W = 760, row = 22, bottom = 40;
        size_t n = MX_MIN(c->n, (size_t)SVG_MAX_ITEMS), chars = 8;
        double top = 40 + 12.0 * (double)c->n_refs, left, right = W - 56, h, max = 0;
        struct svg_axis ax;

        for (size_t i = 0; i < n; i++) {
                chars = MX_MAX(chars, label_chars(c->bars[i].label));
                if (isfinite(c->bars[i].value))
                        max = MX_MAX(max, c->bars[i].value);
        }
        for (size_t i = 0; i < c->n_refs; i++)
                if (isfinite(c->refs[i].value))
                        max = MX_MAX(max, c->refs[i].value);
        left = MX_MIN(10 + CHAR_W * (double)chars, 340);
        h = top + row * (double)MX_MAX(n, (size_t)1) + bottom;
        svg_axis_nice(0, max, 6, &ax);
        open_svg(b, "bars", c->id, c->title, W, h);
        horizontal_axis(b, &ax, left, right, top, h - bottom, h, c->unit);
        for (size_t i = 0; i < n; i++) {
                const struct svg_bar *bar = &c->bars[i];
                double y = top + row * (double)i;

                mx_buf_printf(b, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">",
                              left - 6, y + 15);
                put_label(b, bar->label);
                mx_buf_puts(b, "</text>");
                if (!isfinite(bar->value)) {
                        mx_buf_printf(b, "<text class=\"na\" x=\"%.1f\" y=\"%.1f\">not measured</text>\n",
                                      left + 4, y + 15);
                        continue;
                }
                {
                        _cleanup_free_ char *num = svg_number(bar->value);
                        double x1 = map(&ax, MX_MAX(bar->value, 0), left, right);

                        mx_buf_printf(b,
                                      "<rect class=\"mark bar %s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                                      "height=\"14\">",
                                      bar->cls ? bar->cls : "", left, y + 4, MX_MAX(x1 - left, 1.0));
                        tip(b, bar->tip ? bar->tip : bar->label);
                        mx_buf_printf(b, "</rect><text class=\"value\" x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                                      x1 + 4, y + 15, num);
                }
        }
        for (size_t i = 0; i < c->n_refs; i++)
                if (isfinite(c->refs[i].value))
                        vref(b, &c->refs[i], map(&ax, c->refs[i].value, left, right), top, h - bottom,
                             c->n_refs - 1 - i, W);
        if (c->n > n)
                mx_buf_printf(b, "<text class=\"na\" x=\"8\" y=\"%.1f\">%zu more left out</text>\n", h - 8,
                              c->n - n);
        mx_buf_puts(b, "</svg>\n");
}

/* A part's colour class: s0..s11 in turn, "rest" for the part that holds what the others do not. */
static const char *seg_class(const struct svg_stacked *c, size_t k, char buf[static 8])
{
        if (c->rest && streq(c->parts[k], c->rest))
                return "rest";
        snprintf(buf, 8, "s%zu", k % 12);
        return buf;
}

/* A legend entry's width: its swatch, its label and the gap before the next. */
static double legend_width(const char *part)
{
        return 18 + CHAR_W * (double)label_chars(part) + 12;
}

/* How many lines the legend takes: its entries wrap at the chart's width W. */
static size_t legend_lines(const struct svg_stacked *c, double W)
{
        size_t lines = 1;
        double lx = 10;

        for (size_t k = 0; k < c->n_parts; k++) {
                double w = legend_width(c->parts[k]);

                if (lx + w > W - 10 && lx > 10)
                        lines++, lx = 10;
                lx += w;
        }
        return lines;
}

/* The legend: a swatch and a label per part, wrapped as legend_lines() counts them. */
static void legend_write(struct mx_buf *b, const struct svg_stacked *c, double W)
{
        char cls[8];
        double lx = 10;

        for (size_t k = 0, line = 0; k < c->n_parts; k++) {
                double w = legend_width(c->parts[k]), y;

                if (lx + w > W - 10 && lx > 10)
                        line++, lx = 10;
                y = 30 + 16.0 * (double)line;
                mx_buf_printf(b, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"10\"/>",
                              seg_class(c, k, cls), lx, y);
                mx_buf_printf(b, "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\">", lx + 16, y + 9);
                put_label(b, c->parts[k]);
                mx_buf_puts(b, "</text>\n");
                lx += w;
        }
}

/* Of the first n rows: the widest label in characters (at least 8), and the largest total. */
static void stacked_extent(const struct svg_stacked *c, size_t n, size_t *ret_chars, double *ret_max)
{
        *ret_chars = 8;
        *ret_max = 0;
        for (size_t i = 0; i < n; i++) {
                double sum = 0;

                *ret_chars = MX_MAX(*ret_chars, label_chars(c->rows[i].label));
                for (size_t k = 0; k < c->n_parts; k++)
                        if (isfinite(c->rows[i].values[k]) && c->rows[i].values[k] > 0)
                                sum += c->rows[i].values[k];
                *ret_max = MX_MAX(*ret_max, sum);
        }
}

/* Row r at y: its label, a segment per part with a value, then its total, or "not measured". */
static void stacked_row(struct mx_buf *b, const struct svg_stacked *c, const struct svg_stack_row *r,
                        const struct svg_axis *ax, double left, double right, double y)
{
        char cls[8];
        double acc = 0;
        bool any = false;

        mx_buf_printf(b, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", left - 6,
                      y + 15);
        put_label(b, r->label);
        mx_buf_puts(b, "</text>");
        for (size_t k = 0; k < c->n_parts; k++) {
                double v = r->values[k], x0, x1;
                _cleanup_free_ char *num = NULL, *t = NULL;

                if (!isfinite(v) || v <= 0)
                        continue;
                x0 = map(ax, acc, left, right);
                acc += v;
                x1 = map(ax, acc, left, right);
                num = svg_number(v);
                t = xasprintf("%s: %s %s", c->parts[k], num, c->unit);
                mx_buf_printf(b,
                              "<rect class=\"mark seg %s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                              "height=\"14\">",
                              seg_class(c, k, cls), x0, y + 4, MX_MAX(x1 - x0, 0.5));
                tip(b, t);
                mx_buf_puts(b, "</rect>");
                any = true;
        }
        if (!any)
                mx_buf_printf(b, "<text class=\"na\" x=\"%.1f\" y=\"%.1f\">not measured</text>", left + 4,
                              y + 15);
        else {
                _cleanup_free_ char *num = svg_number(acc);

                mx_buf_printf(b, "<text class=\"value\" x=\"%.1f\" y=\"%.1f\">%s</text>",
                              map(ax, acc, left, right) + 4, y + 15, num);
        }
        mx_buf_puts(b, "\n");
}

void svg_stacked_chart(struct mx_buf *b, const struct svg_stacked *c)
{
        const double W = 760, row = 22, bottom = 40;
        size_t n = MX_MIN(c->n, (size_t)SVG_MAX_ITEMS), chars;
        double top = 30 + 16.0 * (double)legend_lines(c, W) + 8, left, right = W - 56, h, max;
        struct svg_axis ax;

        stacked_extent(c, n, &chars, &max);
        left = MX_MIN(10 + CHAR_W * (double)chars, 340);
        h = top + row * (double)MX_MAX(n, (size_t)1) + bottom;
        svg_axis_nice(0, max, 6, &ax);
        open_svg(b, "stacked", c->id, c->title, W, h);
        legend_write(b, c, W);
        horizontal_axis(b, &ax, left, right, top, h - bottom, h, c->unit);
        for (size_t i = 0; i < n; i++)
                stacked_row(b, c, &c->rows[i], &ax, left, right, top + row * (double)i);
        if (c->n > n)
                mx_buf_printf(b, "<text class=\"na\" x=\"8\" y=\"%.1f\">%zu more left out</text>\n", h - 8,
                              c->n - n);
        mx_buf_puts(b, "</svg>\n");
}

size_t svg_pareto_front(const struct svg_point *p, size_t n, size_t *ret_idx)
{
        size_t k = 0;

        for (size_t i = 0; i < n; i++) {
                bool beaten = !isfinite(p[i].x) || !isfinite(p[i].y);

                for (size_t j = 0; j < n && !beaten; j++)
                        if (j != i && isfinite(p[j].x) && isfinite(p[j].y) && p[j].x >= p[i].x &&
                            p[j].y >= p[i].y && (p[j].x > p[i].x || p[j].y > p[i].y || j < i))
                                beaten = true; /* j < i: of equal points, the first stands */
                if (!beaten)
                        ret_idx[k++] = i;
        }
        /* insertion sort by x: the frontier is short */
        for (size_t i = 1; i < k; i++)
                for (size_t j = i; j > 0 && p[ret_idx[j - 1]].x > p[ret_idx[j]].x; j--) {
                        size_t t = ret_idx[j];
                        ret_idx[j] = ret_idx[j - 1];
                        ret_idx[j - 1] = t;
                }
        return k;
}

static int point_cmp_x(const void *a, const void *b)
{
        const struct svg_point *p = a, *q = b;

        return (p->x > q->x) - (p->x < q->x);
}

/* Rows the legend takes (none for one series), wrapping as svg_xy_chart() draws it. */
static size_t legend_rows(const struct svg_xy *c, double L, double W)
{
        size_t rows = 1;
        double x = L;

        if (c->n_series < 2)
                return 0;
        for (size_t s = 0; s < c->n_series; s++) {
                double w = 24 + CHAR_W * (double)label_chars(c->series[s].name);

                if (x > L && x + w > W - 8) {
                        x = L;
                        rows++;
                }
                x += w;
        }
        return rows;
}

/* Where an x-y chart draws: its box (pixels) and its two axes. */
struct xy_frame {
        double W, L, R, B, T, H;
        struct svg_axis ax, ay;
};

static double xy_x(const struct xy_frame *f, double x)
{
        return map(&f->ax, x, f->L, f->W - f->R);
}

static double xy_y(const struct xy_frame *f, double y)
{
        return map(&f->ay, y, f->H - f->B, f->T);
}

/* Size the box and fit both axes to the finite points and the references; returns how many points count. */
static size_t xy_frame_fit(const struct svg_xy *c, struct xy_frame *f)
{
        double xmin = DBL_MAX, xmax = -DBL_MAX, ymax = 0, ymin = 0;
        size_t total = 0;

        *f = (struct xy_frame){ .W = 760, .L = 70, .R = c->pareto ? 150 : 24, .B = 50 };
        f->T = 44 + 16.0 * (double)legend_rows(c, f->L, f->W) + 12.0 * (double)c->n_yrefs;
        f->H = 364 + f->T;
        for (size_t s = 0; s < c->n_series; s++)
                for (size_t i = 0; i < MX_MIN(c->series[s].n, (size_t)SVG_MAX_ITEMS); i++) {
                        const struct svg_point *p = &c->series[s].pts[i];

                        if (!isfinite(p->x) || !isfinite(p->y))
                                continue;
                        xmin = MX_MIN(xmin, p->x);
                        xmax = MX_MAX(xmax, p->x);
                        ymax = MX_MAX(ymax, p->y);
                        ymin = MX_MIN(ymin, p->y);
                        total++;
                }
        for (size_t i = 0; i < c->n_yrefs; i++)
                if (isfinite(c->yrefs[i].value))
                        ymax = MX_MAX(ymax, c->yrefs[i].value);
        if (total == 0)
                xmin = xmax = 0;
        /* Points start their x axis at 0 (throughput); a time series at its first sample. */
        svg_axis_nice(c->lines ? xmin : MX_MIN(xmin, 0), xmax, 8, &f->ax);
        svg_axis_nice(ymin, ymax, 6, &f->ay);
        return total;
}

/* Grid lines and tick numbers of both axes, then the axis labels. */
static void xy_axes(struct mx_buf *b, const struct svg_xy *c, const struct xy_frame *f)
{
        for (double t = f->ax.lo; t <= f->ax.hi + f->ax.step / 2; t += f->ax.step) {
                _cleanup_free_ char *num = svg_number(t);
                double x = xy_x(f, t);

                mx_buf_printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x,
                              f->T, x, f->H - f->B);
                mx_buf_printf(
                        b, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                        x, f->H - f->B + 14, num);
        }
        for (double t = f->ay.lo; t <= f->ay.hi + f->ay.step / 2; t += f->ay.step) {
                _cleanup_free_ char *num = svg_number(t);
                double y = xy_y(f, t);

                mx_buf_printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
                              f->L, y, f->W - f->R, y);
                mx_buf_printf(b,
                              "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                              f->L - 4, y + 4, num);
        }
        mx_buf_printf(b, "<text class=\"alabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                      (f->L + f->W - f->R) / 2, f->H - 12);
        svg_escape_to(b, c->xlabel);
        mx_buf_printf(b,
                      "</text><text class=\"alabel\" transform=\"translate(14 %.1f) rotate(-90)\" "
                      "text-anchor=\"middle\">",
                      (f->T + f->H - f->B) / 2);
        svg_escape_to(b, c->ylabel);
        mx_buf_puts(b, "</text>\n");
}

/* The series' swatches and names, wrapped to the chart's width (no legend for one series). */
static void xy_legend(struct mx_buf *b, const struct svg_xy *c, const struct xy_frame *f)
{
        double x = f->L, y = 28;

        if (c->n_series < 2)
                return;
        for (size_t s = 0; s < c->n_series; s++) {
                double w = 24 + CHAR_W * (double)label_chars(c->series[s].name);

                if (x > f->L && x + w > f->W - 8) {
                        x = f->L;
                        y += 16;
                }
                mx_buf_printf(b,
                              "<rect class=\"swatch s%zu\" x=\"%.1f\" y=\"%.1f\" width=\"10\" "
                              "height=\"10\"/>"
                              "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\">",
                              s % PALETTE, x, y, x + 14, y + 9);
                put_label(b, c->series[s].name);
                mx_buf_puts(b, "</text>");
                x += w;
        }
        mx_buf_puts(b, "\n");
}

/* Series s (its first n points) as one polyline in x order. */
static void xy_series_line(struct mx_buf *b, const struct svg_series *se, size_t s, size_t n,
                           const struct xy_frame *f)
{
        _cleanup_free_ struct svg_point *sorted = xmalloc(n * sizeof(*sorted));

        memcpy(sorted, se->pts, n * sizeof(*sorted));
        qsort(sorted, n, sizeof(*sorted), point_cmp_x);
        mx_buf_printf(b, "<polyline class=\"mark line s%zu %s\" points=\"", s % PALETTE,
                      se->cls ? se->cls : "");
        for (size_t i = 0; i < n; i++)
                if (isfinite(sorted[i].x) && isfinite(sorted[i].y))
                        mx_buf_printf(b, "%s%.1f,%.1f", i ? " " : "", xy_x(f, sorted[i].x),
                                      xy_y(f, sorted[i].y));
        mx_buf_puts(b, "\">");
        tip(b, se->name);
        mx_buf_puts(b, "</polyline>\n");
}

/* Series s (its first n points) as one circle per finite point. */
static void xy_series_points(struct mx_buf *b, const struct svg_series *se, size_t s, size_t n,
                             const struct xy_frame *f)
{
        for (size_t i = 0; i < n; i++) {
                const struct svg_point *p = &se->pts[i];

                if (!isfinite(p->x) || !isfinite(p->y))
                        continue;
                mx_buf_printf(b, "<circle class=\"mark pt s%zu %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\">",
                              s % PALETTE, se->cls ? se->cls : "", xy_x(f, p->x), xy_y(f, p->y));
                tip(b, p->tip ? p->tip : p->label);
                mx_buf_puts(b, "</circle>\n");
        }
}

static void xy_series(struct mx_buf *b, const struct svg_xy *c, const struct xy_frame *f)
{
        for (size_t s = 0; s < c->n_series; s++) {
                const struct svg_series *se = &c->series[s];
                size_t n = MX_MIN(se->n, (size_t)SVG_MAX_ITEMS);

                if (c->lines && n > 0)
                        xy_series_line(b, se, s, n, f);
                else
                        xy_series_points(b, se, s, n, f);
        }
}

/* The Pareto frontier of all total finite points, each of its points labelled. */
static void xy_frontier(struct mx_buf *b, const struct svg_xy *c, const struct xy_frame *f, size_t total)
{
        _cleanup_free_ struct svg_point *all = xmalloc(total * sizeof(*all));
        _cleanup_free_ size_t *front = xmalloc(total * sizeof(*front));
        size_t k = 0, nf;

        for (size_t s = 0; s < c->n_series; s++)
                for (size_t i = 0; i < MX_MIN(c->series[s].n, (size_t)SVG_MAX_ITEMS); i++)
                        if (isfinite(c->series[s].pts[i].x) && isfinite(c->series[s].pts[i].y))
                                all[k++] = c->series[s].pts[i];
        nf = svg_pareto_front(all, k, front);
        mx_buf_puts(b, "<polyline class=\"frontier\" points=\"");
        for (size_t i = 0; i < nf; i++)
                mx_buf_printf(b, "%s%.1f,%.1f", i ? " " : "", xy_x(f, all[front[i]].x),
                              xy_y(f, all[front[i]].y));
        mx_buf_puts(b, "\"/>\n");
        for (size_t i = 0; i < nf; i++) {
                if (!all[front[i]].label)
                        continue;
                mx_buf_printf(b, "<text class=\"plabel\" x=\"%.1f\" y=\"%.1f\">",
                              xy_x(f, all[front[i]].x) + 6, xy_y(f, all[front[i]].y) - 6);
                put_label(b, all[front[i]].label);
                mx_buf_puts(b, "</text>\n");
        }
}

/* Horizontal reference lines, each labelled with its name and value at the right edge. */
static void xy_yrefs(struct mx_buf *b, const struct svg_xy *c, const struct xy_frame *f)
{
        for (size_t i = 0; i < c->n_yrefs; i++) {
                const struct svg_ref *r = &c->yrefs[i];
                _cleanup_free_ char *num = svg_number(r->value);
                double y;

                if (!isfinite(r->value))
                        continue;
                y = xy_y(f, r->value);
                mx_buf_printf(b, "<line class=\"ref %s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
                              strempty(r->cls), f->L, y, f->W - f->R, y);
                mx_buf_printf(b, "<text class=\"reflabel %s\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">",
                              strempty(r->cls), f->W - f->R, y - 3);
                svg_escape_to(b, r->label);
                mx_buf_printf(b, " %s</text>\n", num);
        }
}

void svg_xy_chart(struct mx_buf *b, const struct svg_xy *c)
{
        struct xy_frame f;
        size_t total = xy_frame_fit(c, &f);

        open_svg(b, c->lines ? "lines" : "points", c->id, c->title, f.W, f.H);
        xy_axes(b, c, &f);
        xy_legend(b, c, &f);
        xy_series(b, c, &f);
        if (c->pareto && total > 0)
                xy_frontier(b, c, &f, total);
        xy_yrefs(b, c, &f);
        if (total == 0)
                mx_buf_printf(
                        b,
                        "<text class=\"na\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no data</text>\n",
                        (f.L + f.W - f.R) / 2, (f.T + f.H - f.B) / 2);
        mx_buf_puts(b, "</svg>\n");
}

void svg_heatmap(struct mx_buf *b, const struct svg_heat *c)
{
        const double cell_h = 24, T = 40;
        size_t nr = MX_MIN(c->n_rows, (size_t)SVG_MAX_ITEMS), nc = MX_MIN(c->n_cols, (size_t)SVG_MAX_ITEMS);
        size_t rchars = 4, cchars = 3;
        double cell_w, L, top, W, H;

        for (size_t i = 0; i < nr; i++)
                rchars = MX_MAX(rchars, label_chars(c->rows[i]));
        for (size_t j = 0; j < nc; j++)
                cchars = MX_MAX(cchars, label_chars(c->cols[j]));
        cell_w = MX_MAX(48, MX_MIN(CHAR_W * (double)cchars + 10, 140));
        L = MX_MIN(16 + CHAR_W * (double)rchars, 300);
        top = T + 18 + 16; /* the x axis's name, then the column labels */
        W = MX_MAX(L + cell_w * (double)nc + 20, 320);
        H = top + cell_h * (double)nr + 28;
        open_svg(b, "heat", c->id, c->title, W, H);
        mx_buf_printf(b, "<text class=\"alabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                      L + cell_w * (double)nc / 2, T);
        svg_escape_to(b, c->xlabel);
        mx_buf_printf(b, "</text><text class=\"alabel\" x=\"8\" y=\"%.1f\">", top - 4);
        svg_escape_to(b, c->ylabel);
        mx_buf_puts(b, "</text>\n");
        for (size_t j = 0; j < nc; j++) {
                mx_buf_printf(b, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                              L + cell_w * ((double)j + 0.5), top - 6);
                put_label(b, c->cols[j]);
                mx_buf_puts(b, "</text>");
        }
        mx_buf_puts(b, "\n");
        for (size_t i = 0; i < nr; i++) {
                double y = top + cell_h * (double)i;

                mx_buf_printf(b, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", L - 6,
                              y + 16);
                put_label(b, c->rows[i]);
                mx_buf_puts(b, "</text>");
                for (size_t j = 0; j < nc; j++) {
                        const struct svg_cell *cell = &c->cells[i * c->n_cols + j];
                        double x = L + cell_w * (double)j;

                        mx_buf_printf(b,
                                      "<rect class=\"mark cell %s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                                      "height=\"%.1f\">",
                                      cell->cls ? cell->cls : "none", x + 1, y + 1, cell_w - 2, cell_h - 2);
                        tip(b, cell->tip);
                        mx_buf_puts(b, "</rect>");
                        if (cell->text) {
                                mx_buf_printf(b,
                                              "<text class=\"celltext\" x=\"%.1f\" y=\"%.1f\" "
                                              "text-anchor=\"middle\">",
                                              x + cell_w / 2, y + 16);
                                svg_escape_to(b, cell->text);
                                mx_buf_puts(b, "</text>");
                        }
                }
                mx_buf_puts(b, "\n");
        }
        if (c->n_rows > nr || c->n_cols > nc)
                mx_buf_printf(
                        b, "<text class=\"na\" x=\"8\" y=\"%.1f\">%zu rows, %zu columns left out</text>\n",
                        H - 8, c->n_rows - nr, c->n_cols - nc);
        mx_buf_puts(b, "</svg>\n");
}

const char *svg_style(void)
{
        return "svg.chart{font:11px sans-serif;background:#fff;display:block;margin:8px 0}\n"
               ".chart .ctitle{font-size:13px;font-weight:bold;fill:#222}\n"
               ".chart .grid{stroke:#e4e4e4;stroke-width:1}\n"
               ".chart .tick,.chart .label,.chart .legend{fill:#333}\n"
               ".chart .alabel{fill:#555;font-style:italic}\n"
               ".chart .value{fill:#222}.chart .na{fill:#999;font-style:italic}\n"
               ".chart .bar{fill:#4e79a7}.chart .bar.baseline{fill:#9c9c9c}\n"
               ".chart .bar.good{fill:#59a14f}.chart .bar.bad{fill:#e15759}\n"
               ".chart .ref{stroke:#333;stroke-width:1.2;stroke-dasharray:5 3}\n"
               ".chart .ref.target{stroke:#f28e2b}.chart .reflabel.target{fill:#b85f00}\n"
               ".chart .ref.baseline{stroke:#777;stroke-dasharray:2 2}.chart .reflabel{fill:#333}\n"
               ".chart .line{fill:none;stroke-width:1.8}\n"
               ".chart .frontier{fill:none;stroke:#e15759;stroke-width:1.5;stroke-dasharray:6 3}\n"
               ".chart .plabel{fill:#a02020}\n"
               ".chart .s0{fill:#4e79a7;stroke:#4e79a7}.chart .s1{fill:#f28e2b;stroke:#f28e2b}\n"
               ".chart .s2{fill:#59a14f;stroke:#59a14f}.chart .s3{fill:#b07aa1;stroke:#b07aa1}\n"
               ".chart .s4{fill:#76b7b2;stroke:#76b7b2}.chart .s5{fill:#edc948;stroke:#edc948}\n"
               ".chart .s6{fill:#ff9da7;stroke:#ff9da7}.chart .s7{fill:#9c755f;stroke:#9c755f}\n"
               ".chart .s8{fill:#bab0ac;stroke:#bab0ac}.chart .s9{fill:#e15759;stroke:#e15759}\n"
               ".chart .s10{fill:#86bcb6;stroke:#86bcb6}.chart .s11{fill:#d37295;stroke:#d37295}\n"
               ".chart .rest{fill:#d9d9d9;stroke:#d9d9d9}\n"
               ".chart polyline.line{fill:none}\n"
               ".chart .cell.pass{fill:#8cd17d}.chart .cell.fail{fill:#ff9d9a}.chart "
               ".cell.mixed{fill:#f1ce63}\n"
               ".chart .cell.none{fill:#f0f0f0}.chart .cell.xfail{fill:#c7c7c7}\n"
               ".chart .celltext{fill:#222}\n";
}
