/* SPDX-License-Identifier: MIT */
/* The SVG chart primitives of the HTML report (report/svg.c). */
#include "svg.h"
#include "test.h"

static size_t count(const char *hay, const char *needle)
{
        size_t n = 0;

        for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
                n++;
        return n;
}

/*
 * Well-formed enough for a browser's XML parser: every element closed in
 * order, attribute values quoted, no raw '<' or '&' outside markup and entities.
 */
static bool well_formed(const char *s)
{
        char *stack[64];
        size_t depth = 0;
        bool ok = true;

        for (const char *p = s; *p && ok; p++) {
                if (*p == '&') {
                        ok = strncmp(p, "&amp;", 5) == 0 || strncmp(p, "&lt;", 4) == 0 ||
                             strncmp(p, "&gt;", 4) == 0 || strncmp(p, "&quot;", 6) == 0 ||
                             strncmp(p, "&#39;", 5) == 0;
                        continue;
                }
                if (*p != '<')
                        continue;
                {
                        const char *e = p + 1, *end;
                        bool closing = *e == '/', quoted = false;
                        size_t n;

                        if (closing)
                                e++;
                        n = strcspn(e, " />\n");
                        for (end = e; *end && (quoted || *end != '>'); end++) {
                                if (*end == '"')
                                        quoted = !quoted;
                                if (*end == '<' && !quoted)
                                        return false;
                        }
                        if (!*end)
                                return false;
                        if (closing) {
                                ok = depth > 0 && strlen(stack[depth - 1]) == n &&
                                     strncmp(stack[depth - 1], e, n) == 0;
                                if (ok)
                                        free(stack[--depth]);
                        } else if (end[-1] != '/') {
                                if (depth == ELEMENTSOF(stack))
                                        return false;
                                stack[depth++] = xstrndup(e, n);
                        }
                        p = end;
                }
        }
        while (depth > 0)
                free(stack[--depth]);
        return ok && depth == 0;
}

TEST(escape_and_numbers)
{
        _cleanup_free_ char *e = svg_escape("<a href=\"x\">&'\x01");
        const struct {
                double v;
                const char *want;
        } nums[] = {
                { 52, "52" }, { 45.123, "45.1" }, { 1.5, "1.5" }, { 0.12345, "0.123" }, { 1234.6, "1235" },
                { 0, "0" },   { -0.0001, "0" },   { NAN, "-" },   { 2.50, "2.5" },
        };

        ASSERT_STREQ(e, "&lt;a href=&quot;x&quot;&gt;&amp;&#39; ");
        for (size_t i = 0; i < ELEMENTSOF(nums); i++) {
                _cleanup_free_ char *s = svg_number(nums[i].v);
                ASSERT_STREQ(s, nums[i].want);
        }
}

TEST(nice_axes)
{
        struct svg_axis a;

        svg_axis_nice(0, 61, 6, &a);
        ASSERT_EQ(a.lo, 0);
        ASSERT_EQ(a.hi, 70);
        ASSERT_EQ(a.step, 10);
        svg_axis_nice(3.2, 9.7, 5, &a);
        ASSERT_EQ(a.lo, 3);
        ASSERT_EQ(a.hi, 10);
        ASSERT_EQ(a.step, 1);
        svg_axis_nice(0, 0.9, 4, &a); /* 0.225: 0.25 */
        ASSERT_EQ(a.step * 100, 25);
        ASSERT_EQ(a.hi * 100, 100);
        /* A single value gets room around it; nonsense gets a unit axis, not a division by zero. */
        svg_axis_nice(40, 40, 5, &a);
        ASSERT_EQ(a.lo, 0);
        ASSERT_TRUE(a.hi >= 48);
        svg_axis_nice(NAN, 3, 5, &a);
        ASSERT_TRUE(a.hi > a.lo && a.step > 0);
}

TEST(pareto_front)
{
        /* x = tokens/s/user, y = tokens/s/GPU: both higher is better */
        const struct svg_point p[] = {
                { 10, 100, "c8", NULL },       { 20, 80, "c2", NULL },        { 15, 90, "c4", NULL },
                { 12, 70, "dominated", NULL }, { 20, 80, "duplicate", NULL },
                { 5, 100, "beaten on x", NULL },
                { NAN, 500, "missing", NULL },
        };
        size_t idx[ELEMENTSOF(p)];
        size_t n = svg_pareto_front(p, ELEMENTSOF(p), idx);

        ASSERT_EQ(n, 3);
        ASSERT_STREQ(p[idx[0]].label, "c8");
        ASSERT_STREQ(p[idx[1]].label, "c4");
        ASSERT_STREQ(p[idx[2]].label, "c2");
        ASSERT_EQ(svg_pareto_front(p, 0, idx), 0);
}

TEST(bar_chart)
{
        const struct svg_bar bars[] = {
                { "baseline: kernel=marlin", 45.2, "baseline", NULL },
                { "kernel=cutlass <fast>", 70, "good", "70 tok/s, 3 runs" },
                { "kernel=triton", NAN, NULL, NULL },
        };
        const struct svg_ref refs[] = { { 52, "target", "target" }, { 61, "stretch", "target" } };
        struct svg_bars c = { "tg32", "tg32 per configuration", "tokens/s", bars, ELEMENTSOF(bars),
                             refs,   ELEMENTSOF(refs) };
        struct mx_buf b = MX_BUF_INIT, b2 = MX_BUF_INIT;
        double w_full = 0;
        const char *p;

        svg_bar_chart(&b, &c);
        ASSERT_TRUE(well_formed(b.data));
        ASSERT_EQ(count(b.data, "<rect class=\"mark bar"), 2);
        ASSERT_CONTAINS(b.data, "data-chart=\"bars\"");
        ASSERT_CONTAINS(b.data, "id=\"tg32\"");
        ASSERT_CONTAINS(b.data, "kernel=cutlass &lt;fast&gt;");
        ASSERT_CONTAINS(b.data, "<title>70 tok/s, 3 runs</title>");
        ASSERT_CONTAINS(b.data, "not measured");
        ASSERT_CONTAINS(b.data, ">target 52</text>");
        ASSERT_CONTAINS(b.data, ">stretch 61</text>");
        ASSERT_CONTAINS(b.data, ">45.2</text>");
        /* The axis runs 0..70 in steps of 10 (the largest value is 70): that bar spans the whole plot. */
        p = strstr(b.data, "mark bar good");
        ASSERT_NOT_NULL(p);
        ASSERT_EQ(sscanf(strstr(p, "width=\"") + 7, "%lf", &w_full), 1);
        {
                double left, w_base;
                const char *q = strstr(b.data, "mark bar baseline");

                ASSERT_EQ(sscanf(strstr(q, "x=\"") + 3, "%lf", &left), 1);
                ASSERT_EQ(sscanf(strstr(q, "width=\"") + 7, "%lf", &w_base), 1);
                ASSERT_EQ((int)(w_full / (760 - 56 - left) * 1000 + 0.5), 1000);
                ASSERT_EQ((int)(w_base / w_full * 1000 + 0.5), (int)(45.2 / 70 * 1000 + 0.5));
        }
        /* Deterministic */
        svg_bar_chart(&b2, &c);
        ASSERT_STREQ(b.data, b2.data);
        mx_buf_free(&b);
        mx_buf_free(&b2);
}

TEST(bar_chart_bounded)
{
        size_t n = SVG_MAX_ITEMS + 3;
        _cleanup_free_ struct svg_bar *bars = xcalloc(n, sizeof(*bars));
        struct svg_bars c = { NULL, "many", "x", bars, n, NULL, 0 };
        struct mx_buf b = MX_BUF_INIT;

        for (size_t i = 0; i < n; i++)
                bars[i] = (struct svg_bar){ "r", (double)i, NULL, NULL };
        svg_bar_chart(&b, &c);
        ASSERT_EQ(count(b.data, "<rect class=\"mark bar"), SVG_MAX_ITEMS);
        ASSERT_CONTAINS(b.data, "3 more left out");
        mx_buf_free(&b);
}

TEST(line_chart)
{
        /* Samples out of order are drawn in time order; the y reference is a horizontal line. */
        const struct svg_point mem[] = { { 20, 30, NULL, NULL }, { 0, 10, NULL, NULL },
                                         { 10, 40, NULL, NULL } };
        const struct svg_point mem2[] = { { 0, 5, NULL, NULL }, { 20, 6, NULL, NULL } };
        const struct svg_series s[] = { { "r1 kernel=marlin", mem, 3, NULL },
                                       { "r2 kernel=cutlass", mem2, 2, NULL } };
        const struct svg_ref cap = { 48, "limit", NULL };
        struct svg_xy c = { "mem", "GPU memory", "seconds", "GiB", s, 2, &cap, 1, true, false };
        struct mx_buf b = MX_BUF_INIT;
        double x0, y0, x1, y1;
        const char *p;

        svg_xy_chart(&b, &c);
        ASSERT_TRUE(well_formed(b.data));
        ASSERT_CONTAINS(b.data, "data-chart=\"lines\"");
        ASSERT_EQ(count(b.data, "<polyline class=\"mark line"), 2);
        ASSERT_CONTAINS(b.data, ">limit 48</text>");
        ASSERT_CONTAINS(b.data, "r2 kernel=cutlass"); /* legend */
        p = strstr(b.data, "points=\"");
        ASSERT_EQ(sscanf(p + 8, "%lf,%lf %lf,%lf", &x0, &y0, &x1, &y1), 4);
        ASSERT_EQ((int)x0, 70); /* t = 0 at the left edge */
        ASSERT_TRUE(x1 > x0);   /* then t = 10 */
        ASSERT_TRUE(y1 < y0);   /* 40 GiB is higher up than 10 */
        mx_buf_free(&b);
}

TEST(pareto_chart)
{
        const struct svg_point pts[] = {
                { 10, 100, "c=8", "r1" }, { 20, 80, "c=2", "r2" }, { 12, 70, "c=4", "r3" } };
        const struct svg_series s = { "runs", pts, 3, NULL };
        struct svg_xy c = { "pareto", "Pareto", "tokens/s/user", "tokens/s/GPU", &s, 1,
                            NULL,     0,        false,           true };
        struct mx_buf b = MX_BUF_INIT;

        svg_xy_chart(&b, &c);
        ASSERT_TRUE(well_formed(b.data));
        ASSERT_EQ(count(b.data, "<circle class=\"mark pt"), 3);
        ASSERT_EQ(count(b.data, "class=\"frontier\""), 1);
        ASSERT_CONTAINS(b.data, ">c=8</text>");
        ASSERT_CONTAINS(b.data, ">c=2</text>");
        ASSERT_FALSE(strstr(b.data, ">c=4</text>")); /* dominated: not labelled */
        mx_buf_free(&b);
        /* No data: says so, draws no marks */
        c.n_series = 0;
        svg_xy_chart(&b, &c);
        ASSERT_TRUE(well_formed(b.data));
        ASSERT_CONTAINS(b.data, ">no data</text>");
        ASSERT_EQ(count(b.data, "class=\"mark"), 0);
        mx_buf_free(&b);
}

TEST(heatmap)
{
        const char *const rows[] = { "graphs=on", "graphs=off" };
        const char *const cols[] = { "spec=none", "spec=eagle3", "spec=<mtp>" };
        const struct svg_cell cells[] = {
                { "2/2", "pass", "2 pass" }, { "0/2", "fail", "illegal-instruction" },
                { NULL, "none", NULL },      { "1/2", "mixed", NULL },
                { "2/2", "pass", NULL },     { "1/1", "pass", NULL },
        };
        struct svg_heat c = { "grid", "pass/fail", "spec", "graphs", cols, 3, rows, 2, cells };
        struct mx_buf b = MX_BUF_INIT;

        svg_heatmap(&b, &c);
        ASSERT_TRUE(well_formed(b.data));
        ASSERT_CONTAINS(b.data, "data-chart=\"heat\"");
        ASSERT_EQ(count(b.data, "<rect class=\"mark cell"), 6);
        ASSERT_EQ(count(b.data, "mark cell pass"), 3);
        ASSERT_EQ(count(b.data, "mark cell fail"), 1);
        ASSERT_CONTAINS(b.data, "spec=&lt;mtp&gt;");
        ASSERT_CONTAINS(b.data, "<title>illegal-instruction</title>");
        ASSERT_CONTAINS(b.data, ">1/2</text>");
        mx_buf_free(&b);
}

TEST(style_names_the_classes)
{
        ASSERT_CONTAINS(svg_style(), ".cell.fail");
        ASSERT_CONTAINS(svg_style(), ".ref.target");
        ASSERT_CONTAINS(svg_style(), ".frontier");
}
