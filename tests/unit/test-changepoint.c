/* SPDX-License-Identifier: MIT */
/*
 * Change points (matrix/analysis/changepoint.h) on series drawn from the
 * verdicts issue's noise model (bench/bench-l5.c, mxsim's variance): a speed
 * factor per server start, normal with sd 2.5 %, times 0.2 % per request over
 * L4's 10 requests. 200 flat series and 200 with a 5 % drop planted at a
 * known commit: false alarms, detections and exact positions counted and
 * held to issue 19's bounds.
 */
#include "changepoint.h"
#include "test.h"

#include <math.h>
#include <time.h>

#define BETWEEN 0.025
#define WITHIN 0.002
#define MAXPTS 64
#define SERIES 200

#define RNG_SEED 0x853c49e6748fea9bULL
static uint64_t rng = RNG_SEED;

static double uniform(void)
{
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        return ((double)((rng * 0x2545F4914F6CDD1DULL) >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(void)
{
        return sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
}

/* One server start's tg32 (mean of 10 requests), bench-l5's model. */
static double start_value(double factor)
{
        double f = 1 + BETWEEN * normal(), s = 0;

        for (int i = 0; i < 10; i++)
                s += 29.0 * f * factor * (1 + WITHIN * normal());
        return s / 10;
}

struct shape {
        size_t commits, starts, shift_at; /* a 5 % drop from commit shift_at on */
};

static size_t series(const struct shape *sh, double drop, double *v, size_t *group)
{
        size_t n = 0;

        for (size_t c = 0; c < sh->commits; c++)
                for (size_t s = 0; s < sh->starts; s++) {
                        group[n] = c;
                        v[n++] = start_value(c >= sh->shift_at ? 1 - drop : 1);
                }
        return n;
}

struct rates {
        unsigned alarms, found, exact, near; /* near: within one commit */
};

/* perms: the shuffles per segment (0: the default 199; 99 is what the work bound may leave a segment) */
static void rates(const struct shape *sh, unsigned perms, struct rates *ret)
{
        double v[MAXPTS];
        size_t group[MAXPTS];
        struct mx_cp_opts o;

        *ret = (struct rates){};
        /*
         * The same 400 series for 199 and 99 shuffles, whatever order the tests run in (it is the link's:
         * a shared generator gave the optimized and the ASan tree different series). Over 8 seeds (1600
         * series a shape) one start per commit gave, at 199 / 99 shuffles: false alarms 4.4 / 4.0 %,
         * detection 96.3 / 95.0 %, within one commit 82.7 / 81.8 % (one seed's 200: 77-86 %); three
         * starts: exact 89.4 / 89.2 %. The bounds below hold for this seed; the means are why they are fair.
         */
        rng = RNG_SEED;
        mx_cp_opts_defaults(&o);
        if (perms)
                o.permutations = o.permutations_min = perms;
        for (int k = 0; k < SERIES; k++) {
                _cleanup_free_ struct mx_cp *cp = NULL;
                size_t n = series(sh, 0, v, group), ncp = 0;

                ASSERT_EQ(mx_changepoints(v, group, n, &o, &cp, &ncp, NULL), 0);
                ret->alarms += ncp > 0;
        }
        for (int k = 0; k < SERIES; k++) {
                _cleanup_free_ struct mx_cp *cp = NULL;
                size_t n = series(sh, 0.05, v, group), ncp = 0, want = sh->shift_at * sh->starts;
                bool at = false, near = false;

                ASSERT_EQ(mx_changepoints(v, group, n, &o, &cp, &ncp, NULL), 0);
                for (size_t i = 0; i < ncp; i++) {
                        at |= cp[i].at == want;
                        near |= cp[i].at + sh->starts >= want && cp[i].at <= want + sh->starts;
                }
                ret->found += ncp > 0;
                ret->exact += at;
                ret->near += near;
        }
        printf("%u permutations: %d flat series of %zu commits x %zu start(s), between-start sd %.1f %%: "
               "false alarms %u (%.1f %%)\n",
               o.permutations, SERIES, sh->commits, sh->starts, BETWEEN * 100, ret->alarms, 100.0 * ret->alarms / SERIES);
        printf("%d with a 5 %% drop at commit %zu: detected %u (%.1f %%), at that commit %u (%.1f %%), "
               "within one commit %u (%.1f %%)\n",
               SERIES, sh->shift_at, ret->found, 100.0 * ret->found / SERIES, ret->exact,
               100.0 * ret->exact / SERIES, ret->near, 100.0 * ret->near / SERIES);
}

/* Three server starts per commit (L5's confirmation starts give as many): the commit found exactly. */
TEST(rates_three_starts)
{
        struct shape sh = {.commits = 10, .starts = 3, .shift_at = 5};
        struct rates r;

        for (unsigned perms = 0; perms <= 99; perms += 99) {
                rates(&sh, perms, &r);
                ASSERT_TRUE(r.alarms * 10 <= SERIES);    /* false alarms <= 10 % */
                ASSERT_TRUE(r.found * 10 >= SERIES * 8); /* detection >= 80 % */
                ASSERT_TRUE(r.exact * 10 >= SERIES * 8); /* position exact in >= 80 % */
        }
}

/*
 * One start per commit (a plain nightly series): a 5 % step is two sd of one
 * start, so the exact commit is found only about 55-65 % of the time; the
 * neighbourhood is held to 80 %, and bisect narrows the rest.
 */
TEST(rates_one_start)
{
        struct shape sh = {.commits = 24, .starts = 1, .shift_at = 12};
        struct rates r;

        for (unsigned perms = 0; perms <= 99; perms += 99) {
                rates(&sh, perms, &r);
                ASSERT_TRUE(r.alarms * 10 <= SERIES);
                ASSERT_TRUE(r.found * 10 >= SERIES * 8);
                ASSERT_TRUE(r.near * 10 >= SERIES * 8);
        }
}

static double now_s(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#define WIDE 500 /* SERIES_POINTS_MAX, the most a history holds */

/*
 * The work bound: a 500-point staircase of growing steps (a change every 6
 * points, each significant, the biggest last: every split falls near the
 * segment's end, so the segments shrink by a few points a time, the cost
 * cubic) would cost far more than MX_CP_WORK_MAX unbounded; bounded it
 * stays within it, and the segments it could not pay for are counted, not
 * passed over in silence. One change in 500 points is tested in full.
 */
TEST(work_bound)
{
        static double v[WIDE];
        static size_t group[WIDE];
        _cleanup_free_ struct mx_cp *a = NULL, *b = NULL, *c = NULL;
        struct mx_cp_stats sa, sb, sc;
        size_t na = 0, nb = 0, nc = 0;
        struct mx_cp_opts o;
        bool found_half = false;
        double t0, t1;

        for (size_t i = 0; i < WIDE; i++) {
                group[i] = i / 3;
                v[i] = pow(1.5, (double)(i / 6)) + 0.01 * (double)(i % 3);
        }
        mx_cp_opts_defaults(&o);
        t0 = now_s();
        ASSERT_EQ(mx_changepoints(v, group, WIDE, &o, &a, &na, &sa), 0);
        t1 = now_s();
        printf("staircase of %d points, bounded: %zu change points, %zu segments untested, %.3g distances "
               "(bound %.3g), fewest shuffles %u, %.3f s\n", WIDE, na, sa.untested, (double)sa.work,
               (double)MX_CP_WORK_MAX, sa.min_permutations, t1 - t0);
        ASSERT_TRUE(sa.work <= MX_CP_WORK_MAX);
        ASSERT_TRUE(sa.untested > 0);
        ASSERT_TRUE(na > 0);
        ASSERT_TRUE(sa.min_permutations >= o.permutations_min);
        o.work_max = 4 * MX_CP_WORK_MAX; /* enough to show it needs more than twice the bound */
        ASSERT_EQ(mx_changepoints(v, group, WIDE, &o, &b, &nb, &sb), 0);
        printf("four times the bound: %zu change points, %.3g distances\n", nb, (double)sb.work);
        ASSERT_TRUE(sb.work > 2 * MX_CP_WORK_MAX);
        ASSERT_TRUE(nb > na);

        for (size_t i = 0; i < WIDE; i++) {
                group[i] = i;
                v[i] = (i < WIDE / 2 ? 30.0 : 27.0) + 0.3 * sin((double)i * 1.7);
        }
        mx_cp_opts_defaults(&o);
        t0 = now_s();
        ASSERT_EQ(mx_changepoints(v, group, WIDE, &o, &c, &nc, &sc), 0);
        t1 = now_s();
        printf("one change in %d points: %zu change point(s), %zu untested, %.3g distances, %.3f s\n", WIDE, nc,
               sc.untested, (double)sc.work, t1 - t0);
        ASSERT_EQ(sc.untested, 0u);
        ASSERT_EQ(sc.min_permutations, o.permutations);
        ASSERT_TRUE(nc >= 1);
        for (size_t i = 0; i < nc; i++)
                found_half |= c[i].at == WIDE / 2;
        ASSERT_TRUE(found_half);
}

TEST(reproducible)
{
        struct shape sh = {.commits = 10, .starts = 3, .shift_at = 5};
        double v[MAXPTS];
        size_t group[MAXPTS], n = series(&sh, 0.05, v, group);
        _cleanup_free_ struct mx_cp *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        struct mx_cp_opts o;

        mx_cp_opts_defaults(&o);
        ASSERT_EQ(mx_changepoints(v, group, n, &o, &a, &na, NULL), 0);
        ASSERT_EQ(mx_changepoints(v, group, n, &o, &b, &nb, NULL), 0);
        ASSERT_EQ(na, nb);
        for (size_t i = 0; i < na; i++) {
                ASSERT_EQ(a[i].at, b[i].at);
                ASSERT_TRUE(a[i].p == b[i].p);
        }
}

/* A split never falls between two starts of one commit; bad input is refused. */
TEST(groups_and_errors)
{
        double v[] = {10, 10.1, 9.9, 10, 10.05, 5, 5.1, 4.9, 5, 5.05};
        size_t group[] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4};
        _cleanup_free_ struct mx_cp *cp = NULL, *cp2 = NULL;
        size_t ncp = 0, ncp2 = 0;
        struct mx_cp_opts o;
        double bad[] = {1, NAN, 2};

        mx_cp_opts_defaults(&o);
        o.min_size = 2;
        ASSERT_EQ(mx_changepoints(v, NULL, 10, &o, &cp, &ncp, NULL), 0);
        ASSERT_EQ(ncp, 1u);
        ASSERT_EQ(cp[0].at, 5u);
        /* commit 2 holds points 4 and 5: the split moves to a commit boundary */
        ASSERT_EQ(mx_changepoints(v, group, 10, &o, &cp2, &ncp2, NULL), 0);
        ASSERT_EQ(ncp2, 1u);
        ASSERT_TRUE(cp2[0].at == 4 || cp2[0].at == 6);
        ASSERT_EQ(mx_changepoints(bad, NULL, 3, &o, &cp2, &ncp2, NULL), -EINVAL);
        o.alpha = 0;
        ASSERT_EQ(mx_changepoints(v, NULL, 10, &o, &cp2, &ncp2, NULL), -EINVAL);
}

static json_t *doc(double tg)
{
        return json_pack("{s:[{s:s,s:s,s:i,s:i,s:i,s:i,s:{s:[f,f]}}]}", "tests", "test", "tg32", "kind", "tg", "pp",
                         2048, "tg", 32, "depth", 0, "concurrency", 1, "tps", "values", tg - 0.1, tg + 0.1);
}

/* The history document: series in order, the change point named by its commits with the words of issue 19. */
TEST(history_json)
{
        _cleanup_json_ json_t *points = json_array(), *out = NULL;
        struct mx_cp_opts o;
        json_t *cp;

        for (int i = 0; i < 10; i++) {
                char sha[41];

                snprintf(sha, sizeof(sha), "%040d", i);
                json_array_append_new(points, json_pack("{s:s,s:I,s:o}", "commit", sha, "committed_at",
                                                        (json_int_t)(1000 + i), "l4",
                                                        doc(i < 6 ? 30 + 0.2 * (i % 2) : 28.2 + 0.2 * (i % 2))));
        }
        json_array_append_new(points, json_pack("{s:s,s:{}}", "commit", "x", "l4")); /* no tg32: left out */
        mx_cp_opts_defaults(&o);
        ASSERT_EQ(mx_cp_history_json(points, "tg32", &o, &out), 0);
        ASSERT_EQ(json_array_size(json_object_get(out, "series")), 10u);
        ASSERT_EQ(json_array_size(json_object_get(out, "change_points")), 1u);
        cp = json_array_get(json_object_get(out, "change_points"), 0);
        ASSERT_EQ(json_integer_value(json_object_get(cp, "index")), 6);
        ASSERT_STREQ(json_string_value(json_object_get(cp, "before")), "0000000000000000000000000000000000000005");
        ASSERT_STREQ(json_string_value(json_object_get(cp, "after")), "0000000000000000000000000000000000000006");
        ASSERT_EQ(json_integer_value(json_object_get(cp, "n_before")), 6);
        ASSERT_EQ(json_integer_value(json_object_get(cp, "n_after")), 4);
        ASSERT_EQ(json_integer_value(json_object_get(out, "untested_segments")), 0);
        ASSERT_TRUE(strstr(json_string_value(json_object_get(cp, "summary")), "tg32 fell 6.0 % between commits "
                                                                             "000000000000 and 000000000000 (n=6 "
                                                                             "runs before, 4 after, p="));
}
