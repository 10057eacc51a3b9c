/* SPDX-License-Identifier: MIT */
/*
 * L5's statistics on simulated jobs: how often the decision (matrix/analysis/regress.h,
 * per-start summaries, the threshold test, Holm over the secondary checks,
 * confirmation starts A/B/A/B up to a budget) calls a regression when there
 * is none (A/A), finds a true tg drop of 10 %, fails a true drop of 3 %
 * (inside the 5 % threshold), and how many confirmation starts it spends.
 *
 * The jobs do not go through the daemon and mxsim (600 jobs of 14 server
 * starts would take hours): the SAME decision code is driven with L4
 * documents drawn from mxsim's variance model, a speed factor per server
 * start (normal, --between %) times a factor per request (normal, --within %),
 * on L4's default rows (pp2048 with tg32 and tg128 at depths 0, 4096, 8192:
 * 12 rows of 10 requests, 20 depth-0 TTFTs, one memory peak per start).
 *
 *   bench-l5 [JOBS [BETWEEN_PCT [WITHIN_PCT [CONFIRM_STARTS]]]]
 *   (default 400 jobs, 2.5 % between starts, 0.2 % within, 6 starts a side: L5.confirm_starts)
 */
#include "regress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng = 0x853c49e6748fea9bULL;

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

struct model {
        double between, within; /* fractions */
        double tg_factor;       /* the true tg speed of the configuration against the baseline */
};

/* One server start's L4 document: rows, depth-0 TTFT, memory peak. */
static json_t *start_doc(const struct model *m, double tg_factor)
{
        static const long depths[] = {0, 4096, 8192}, tgs[] = {32, 128};
        double f = 1 + m->between * normal();
        json_t *tests = json_array(), *ttft = json_array();

        for (size_t d = 0; d < 3; d++)
                for (size_t t = 0; t < 2; t++) {
                        json_t *pp = json_array(), *tg = json_array();
                        char name[64];

                        for (int i = 0; i < 10; i++) {
                                double pp_tps = 4800.0 / (1 + depths[d] / 8192.0) * f * (1 + m->within * normal());

                                json_array_append_new(pp, json_real(pp_tps));
                                json_array_append_new(tg, json_real(29.0 * f * tg_factor *
                                                                    (1 + m->within * normal())));
                                if (depths[d] == 0)
                                        json_array_append_new(ttft, json_real(2048 / pp_tps * 1000 + 20));
                        }
                        snprintf(name, sizeof(name), depths[d] ? "pp2048 @ d%ld" : "pp2048", depths[d]);
                        json_array_append_new(tests, json_pack("{s:s,s:s,s:i,s:I,s:I,s:i,s:{s:o}}", "test", name,
                                                               "kind", "pp", "pp", 2048, "tg", (json_int_t)tgs[t],
                                                               "depth", (json_int_t)depths[d], "concurrency", 1, "tps",
                                                               "values", pp));
                        snprintf(name, sizeof(name), depths[d] ? "tg%ld @ d%ld" : "tg%ld", tgs[t], depths[d]);
                        json_array_append_new(tests, json_pack("{s:s,s:s,s:i,s:I,s:I,s:i,s:{s:o}}", "test", name,
                                                               "kind", "tg", "pp", 2048, "tg", (json_int_t)tgs[t],
                                                               "depth", (json_int_t)depths[d], "concurrency", 1, "tps",
                                                               "values", tg));
                }
        return json_pack("{s:o,s:[{s:i,s:{s:o}}],s:{s:s,s:I}}", "tests", tests, "serving", "depth", 0, "ttft_ms",
                         "values", ttft, "memory", "figure", "gpu", "peak",
                         (json_int_t)(70e9 + 0.05e9 * normal()));
}

struct outcome {
        unsigned regression, unknown, confirm_starts;
};

/* One job: the baseline and the configuration one start each, then confirmation rounds A/B while unknown. */
static void job(const struct model *m, unsigned budget, struct outcome *out)
{
        struct mx_regress_opts o;
        _cleanup_json_ json_t *cur = json_array(), *ref = json_array();
        char decision[32] = "";

        mx_regress_opts_defaults(&o);
        json_array_append_new(ref, start_doc(m, 1));
        json_array_append_new(cur, start_doc(m, m->tg_factor));
        for (unsigned round = 0;; round++) {
                _cleanup_json_ json_t *r = NULL;

                o.can_confirm = round < budget;
                r = mx_regress_compare(cur, ref, &o);
                snprintf(decision, sizeof(decision), "%s", json_string_value(json_object_get(r, "decision")));
                if (getenv("BENCH_L5_DEBUG"))
                        json_dumpf(r, stderr, JSON_INDENT(1)), fputc('\n', stderr);
                if (!streq(decision, "unknown") || round == budget)
                        break;
                /* interleaved: the configuration, then the reference, each on a fresh start */
                json_array_append_new(cur, start_doc(m, m->tg_factor));
                json_array_append_new(ref, start_doc(m, 1));
                out->confirm_starts += 2;
        }
        out->regression += streq(decision, "regression");
        out->unknown += streq(decision, "unknown");
}

static void row(const char *what, const struct model *m, unsigned jobs, unsigned budget)
{
        struct outcome out = {};

        for (unsigned j = 0; j < jobs; j++)
                job(m, budget, &out);
        printf("%-26s %6.1f %%   %6.1f %%   %6.2f\n", what, 100.0 * out.regression / jobs,
               100.0 * out.unknown / jobs, (double)out.confirm_starts / jobs);
}

int main(int argc, char **argv)
{
        unsigned jobs = argc > 1 ? (unsigned)atoi(argv[1]) : 400;
        double between = argc > 2 ? atof(argv[2]) / 100 : 0.025, within = argc > 3 ? atof(argv[3]) / 100 : 0.002;
        unsigned budget = argc > 4 ? (unsigned)atoi(argv[4]) : 6;
        struct model m = {.between = between, .within = within};

        printf("bench-l5: %u jobs per row; speed spread %.2g %% between server starts, %.2g %% within a start; "
               "confirmation budget %u starts a side\n",
               jobs, between * 100, within * 100, budget);
        printf("model: the decision code of matrix/analysis/regress.c on L4 documents drawn from the model (not through "
               "the daemon); 12 rows + TTFT p99 + memory per start; threshold 5 %%, alpha 0.05, primary tg32\n");
        printf("%-26s %8s   %8s   %s\n", "jobs", "regression", "unknown", "confirmation starts/job");
        m.tg_factor = 1;
        row("A/A (no change)", &m, jobs, budget);
        m.tg_factor = 0.97;
        row("tg -3 % (inside 5 %)", &m, jobs, budget);
        m.tg_factor = 0.90;
        row("tg -10 %", &m, jobs, budget);
        return 0;
}
