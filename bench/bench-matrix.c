/* SPDX-License-Identifier: MIT */
/*
 * bench-matrix: figures for the matrix engine. Prints, for the shipped matrix
 * (matrix/mxfp4-gb10.json unless a path is given): load time, valid-count
 * time, plan time, and rows and seconds of pairwise and 3-way covering
 * arrays; and for a synthetic 2^24-cell product (24 two-valued axes): the
 * streaming expansion rate with and without constraints. Each figure is the
 * median of several repetitions, on CLOCK_MONOTONIC.
 *
 * Usage: bench-matrix [MATRIX.json]   (run from the source tree, or give the path)
 */
#include "expand.h"
#include "matrix.h"
#include "plan.h"

#include <inttypes.h>

#define REPS 5

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

static int64_t median(int64_t *v, size_t n)
{
        qsort(v, n, sizeof(int64_t), cmp_i64);
        return v[n / 2];
}

static void row(const char *what, const char *figure, int64_t us)
{
        printf("%-48s %22s %12.3f ms\n", what, figure, (double)us / 1000.0);
}

static struct mx_matrix *load_or_die(const char *path)
{
        _cleanup_free_ char *why = NULL;
        struct mx_matrix *m = NULL;

        if (mx_matrix_load_file(path, &m, &why) < 0)
                mx_die("%s", why);
        return m;
}

static void bench_load(const char *path)
{
        int64_t t[REPS];

        for (int i = 0; i < REPS; i++) {
                int64_t t0 = mx_now_mono_us();
                struct mx_matrix *m = load_or_die(path);

                t[i] = mx_now_mono_us() - t0;
                mx_matrix_free(m);
        }
        row("load + validate shipped matrix", "1 file", median(t, REPS));
}

static void bench_count(const struct mx_matrix *m, const char *what)
{
        struct mx_expand_counts c = {};
        int64_t t[REPS];
        char fig[64];

        for (int i = 0; i < REPS; i++) {
                int64_t t0 = mx_now_mono_us();

                if (mx_expand_count(m, NULL, UINT64_MAX, &c) < 0)
                        mx_die("count failed");
                t[i] = mx_now_mono_us() - t0;
        }
        int64_t us = median(t, REPS);
        snprintf(fig, sizeof fig, "%" PRIu64 "/%" PRIu64 " valid", c.valid, c.product);
        row(what, fig, us);
        if (c.product >= 1000000) {
                snprintf(fig, sizeof fig, "%.1f M cells/s", (double)c.product / ((double)us / 1e6) / 1e6);
                printf("%-48s %22s\n", "  streaming rate", fig);
        }
}

static void bench_plan(const struct mx_matrix *m, const char *feature, enum mx_plan_strategy s)
{
        struct mx_plan_request req = { .feature = feature, .strategy = s };
        int64_t t[REPS];
        size_t runs = 0;
        char what[96], fig[64];

        for (int i = 0; i < REPS; i++) {
                _cleanup_free_ char *why = NULL;
                struct mx_plan *p = NULL;
                int64_t t0 = mx_now_mono_us();

                if (mx_plan_build(m, &req, &p, &why) < 0)
                        mx_die("plan: %s", why);
                t[i] = mx_now_mono_us() - t0;
                runs = p->n_runs;
                mx_plan_free(p);
        }
        snprintf(what, sizeof what, "plan feature=%s --strategy %s", feature, mx_plan_strategy_to_string(s));
        snprintf(fig, sizeof fig, "%zu runs", runs);
        row(what, fig, median(t, REPS));
}

static void bench_cover(const struct mx_matrix *m, unsigned strength)
{
        int64_t t[REPS];
        size_t rows = 0;
        char what[64], fig[64];

        for (int i = 0; i < REPS; i++) {
                struct mx_matrix_cover c = {};
                _cleanup_free_ int *r = NULL;
                _cleanup_free_ char *why = NULL;
                int64_t t0 = mx_now_mono_us();

                mx_matrix_cover_build(m, NULL, true, &c);
                if (mx_cover_generate(&c.model, &(struct mx_cover_options){ .t = strength }, &r, &rows,
                                      &why) < 0)
                        mx_die("cover: %s", why);
                t[i] = mx_now_mono_us() - t0;
                mx_matrix_cover_done(&c);
        }
        snprintf(what, sizeof what, "covering array, strength %u", strength);
        snprintf(fig, sizeof fig, "%zu rows", rows);
        row(what, fig, median(t, REPS));
}

/* 24 two-valued axes; with constraints, one exclude entry and one rule. */
static struct mx_matrix *big_matrix(bool constraints)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        _cleanup_free_ char *why = NULL;
        struct mx_matrix *m = NULL;

        mx_buf_puts(&b,
                    "{\"matrix\": 1, \"name\": \"big\", \"target\": {\"command\": [\"true\"]}, \"axes\": [");
        for (int i = 0; i < 24; i++)
                mx_buf_printf(&b,
                              "%s{\"name\": \"a%d\", \"values\": [{\"name\": \"0\"}, {\"name\": \"1\"}]}",
                              i ? ", " : "", i);
        mx_buf_puts(&b, "], \"baseline\": {");
        for (int i = 0; i < 24; i++)
                mx_buf_printf(&b, "%s\"a%d\": \"0\"", i ? ", " : "", i);
        mx_buf_puts(&b, "}");
        if (constraints)
                mx_buf_puts(&b,
                            ", \"constraints\": {\"exclude\": [{\"a0\": \"1\", \"a5\": \"1\"}], \"rules\": "
                            "[{\"if\": {\"a1\": \"1\"}, \"then\": {\"a2\": \"0\"}, \"reason\": \"r\"}], "
                            "\"known_incompatible\": [{\"when\": {\"a3\": \"1\"}, \"reason\": \"k\"}]}");
        mx_buf_puts(&b, "}");
        if (mx_matrix_load_string("big.json", b.data, b.len, &m, &why) < 0)
                mx_die("%s", why);
        return m;
}

int main(int argc, char **argv)
{
        const char *path = argc > 1 ? argv[1] : "matrix/mxfp4-gb10.json";
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL, *big = NULL, *bigc = NULL;

        printf("%-48s %22s %15s\n", "what (median of 5)", "figure", "time");
        bench_load(path);
        m = load_or_die(path);
        bench_count(m, "count valid configurations, shipped matrix");
        bench_plan(m, "cutlass", MX_PLAN_DEFAULT);
        bench_plan(m, "cutlass", MX_PLAN_PAIRWISE);
        bench_plan(m, "cutlass", MX_PLAN_3WAY);
        bench_plan(m, "cutlass", MX_PLAN_FULL);
        bench_cover(m, 2);
        bench_cover(m, 3);
        big = big_matrix(false);
        bench_count(big, "stream 2^24 product, no constraints");
        bigc = big_matrix(true);
        bench_count(bigc, "stream 2^24 product, exclude + rule + KI");
        return 0;
}
