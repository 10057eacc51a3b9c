/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix plan FILE feature=X [axis=value...]: print the runs a submission
 * would make (plan.h), without a daemon.
 */
#include "client.h"
#include "estimate.h"
#include "ident.h"
#include "levelcat.h"
#include "matrix.h"
#include "output.h"
#include "order.h"
#include "plan.h"

#include <getopt.h>
#include <inttypes.h>

static void plan_help(FILE *f)
{
        fprintf(f,
                "Usage: mxmatrix plan FILE [feature=]X [axis=value...] [levels=LIST] [LEVEL.setting=value...]\n"
                "                     [--strategy S] [--seed S] [--max-runs N] [--order O] [--verbose] [--json]\n\n"
                "Print the runs that submitting feature X would make, and why each exists.\n"
                "X is a feature of FILE by name or id (P1), an axis value by name or alias\n"
                "(cutlass, gemm), or axis=value. Further axis=value words pin that axis in every run.\n"
                "levels=LIST (L1-L3, L1,L2) chooses the levels, LEVEL.setting=value (L3.concurrency=4)\n"
                "sets one for the submission; the plan shows each level's settings.\n\n"
                "Reasons: baseline and feature-off (the feature off on the baseline), feature-on (the\n"
                "feature alone on the baseline), feature-off:stack(P..) and feature-on:stack(P..) (the\n"
                "merged stack of completed features, without and with the feature),\n"
                "prior:P and with:P (each completed feature P alone and with the feature),\n"
                "vary:axis=value (one factor at a time), cover, set-aside (a known-incompatible\n"
                "configuration the covering array leaves out, run once), full.\n\n"
                "Options:\n"
                "  -s, --strategy S   default (the protocol above), pairwise or 3way (add a\n"
                "                     covering array), full (add every valid configuration)\n"
                "      --seed S       covering-array seed (default 0)\n"
                "      --max-runs N   refuse plans with more runs (default %d)\n"
                "      --order O      fail-fast (every run's L1 and L1.5 first, on a server start of its\n"
                "                     own; the other levels then for the runs that passed them) or fifo\n"
                "                     (default: the matrix's settings.order, else fail-fast from 4 runs)\n"
                "  -v, --verbose      print each run's environment, flags and expectations, with the\n"
                "                     source each is checked against (server log, profiler report)\n"
                "      --json         print one JSON document\n"
                "  -h, --help         this help\n\n"
                "Exit status: 0 ok, 2 bad command line or unknown feature, 3 bad matrix file.\n",
                MX_PLAN_DEFAULT_MAX_RUNS);
}

/* Footnote references "[1,3]" for a run's known-incompatible entries. */
static char *ki_marks(const struct mx_plan *p, const struct mx_plan_run *r)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        bool crash = false;

        if (r->n_known_incompatible == 0)
                return xstrdup("-");
        for (size_t i = 0; i < r->n_known_incompatible; i++) {
                crash = crash ||
                        p->m->known_incompatible[r->known_incompatible[i]].expect == MX_KI_EXPECT_CRASH;
                mx_buf_printf(&b, "%s%zu", i ? "," : "", r->known_incompatible[i] + 1);
        }
        return xasprintf("%s [%s]", crash ? "crash" : "fail", b.data);
}

/* Where the gate (L1.5) looks for each kind of expectation. */
static void print_evidence(const struct mx_matrix *m)
{
        _cleanup_free_ char *log = mx_matrix_evidence_log(m), *kernels = mx_matrix_evidence_kernels(m);

        printf("Expectations (L1.5) are checked against:\n  log      %s\n  kernels  %s\n", log, kernels);
}

/* What every run will do: its levels in order, each with the settings that differ from the defaults. */
static void print_levels(json_t *run, json_t *settings)
{
        size_t i;
        json_t *w;

        printf("Levels of every run (in this order; a failed level skips the rest unless continue_on_fail):\n");
        json_array_foreach (run, i, w) {
                const struct mx_level_def *d = mx_level_def_find(json_string_value(w));
                _cleanup_free_ char *sum = mx_level_settings_summary(d, json_object_get(settings, d->name));

                printf("  %-5s %-12s %s\n", d->name, d->title, sum);
        }
        printf("\n");
}

/*
 * Without a daemon there are no stored durations: only the settings' upper bound (mxmatrix submit
 * --dry-run asks the daemon, which estimates from what it stored). And the criteria these levels miss.
 */
static json_t *plan_estimate_json(const struct mx_plan *p, json_t *run, json_t *lset, bool two_passes)
{
        struct mx_estimate_input in = {
                .m = p->m, .settings = &p->settings, .levels = run, .level_settings = lset, .n_runs = p->n_runs,
                .two_passes = two_passes,
        };
        _cleanup_strv_free_ char **unmeasured = mx_criteria_unmeasured(p->m, p->feature, run);
        json_t *e, *w = json_array();

        for (size_t i = 0; i < p->n_runs; i++)
                in.n_expect_fail += p->runs[i].n_known_incompatible > 0;
        e = mx_estimate(&in);
        for (char **u = unmeasured; u && *u; u++)
                json_array_append_new(w, json_string(*u));
        json_object_set_new(e, "warnings", w);
        return e;
}

static void print_estimate(const struct mx_plan *p, json_t *run, json_t *lset, bool two_passes)
{
        _cleanup_json_ json_t *e = plan_estimate_json(p, run, lset, two_passes);
        json_t *w;
        size_t i;

        printf("Estimate: %s; mxmatrix submit --dry-run estimates from the daemon's stored durations\n",
               json_string_value(json_object_get(e, "text")));
        json_array_foreach (json_object_get(e, "warnings"), i, w)
                printf("Warning: %s\n", json_string_value(w));
        printf("\n");
}

/* The order the runs take (matrix/plan/order.h): fifo, or fail-fast's two passes. */
static void print_order(json_t *o)
{
        json_t *pass, *l;
        size_t i, k;

        printf("Order: %s (%s)\n", json_string_value(json_object_get(o, "order")),
               json_string_value(json_object_get(o, "why")));
        json_array_foreach (json_object_get(o, "passes"), i, pass) {
                printf("  pass %zu: ", i + 1);
                json_array_foreach (json_object_get(pass, "levels"), k, l)
                        printf("%s%s", k ? ", " : "", json_string_value(l));
                printf(" - %s\n", json_string_value(json_object_get(pass, "runs")));
        }
        printf("\n");
}

/* What was planned: the feature, its hypothesis and criteria, the strategy and command. */
static void print_header(const struct mx_plan *p)
{
        const struct mx_matrix *m = p->m;
        _cleanup_free_ char *pins = mx_config_describe(m, p->pins);

        printf("Plan for %s: %s\n", p->input, p->resolved);
        if (p->feature >= 0) {
                const struct mx_matrix_feature *f = &m->features[p->feature];

                printf("  P%d %s%s%s, %s\n  hypothesis: %s\n", f->priority, f->name, f->title ? " - " : "",
                       strempty(f->title), mx_feature_status_to_string(f->status), f->hypothesis);
                for (size_t c = 0; c < f->n_criteria; c++) {
                        _cleanup_free_ char *text = mx_criterion_describe(&f->criteria[c]);

                        printf("  criterion:  %s\n", text);
                }
                if (f->gate)
                        printf("  gate:       %s\n", f->gate);
        }
        printf("Matrix %s (%s), strategy %s", m->name, m->path, mx_plan_strategy_to_string(p->strategy));
        if (p->cover_t)
                printf(" (strength %u, seed %" PRIu64 ", %zu covering rows)", p->cover_t, p->seed,
                       p->cover_rows);
        printf("\n");
        if (*pins)
                printf("Pinned in every run: %s\n", pins);
        if (p->n_stack_features > 0) {
                _cleanup_free_ char *set = mx_config_describe(m, p->stack);

                printf("Merged stack (%s):", p->stack_ids);
                for (size_t i = 0; i < p->n_stack_features; i++)
                        printf("%s %s", i ? "," : "", m->features[p->stack_features[i]].name);
                printf(" = %s\n  feature-on: the feature alone on the baseline; feature-on:stack(%s): on the merged "
                       "stack\n",
                       *set ? set : "(nothing set)", p->stack_ids);
        }
        printf("Command:");
        for (size_t i = 0; m->command[i]; i++)
                printf(" %s", m->command[i]);
        printf("\n");
        print_evidence(m);
        printf("\n");
}

/* The runs as a table: one column per axis, then reasons and expected failures. */
static void print_runs(const struct mx_plan *p)
{
        const struct mx_matrix *m = p->m;
        _cleanup_strv_free_ char **headers = NULL;

        strv_push(&headers, "#");
        strv_push(&headers, "ID");
        for (size_t a = 0; a < m->n_axes; a++)
                strv_push(&headers, m->axes[a].name);
        strv_push(&headers, "REASONS");
        strv_push(&headers, "EXPECTED");
        _cleanup_(table_freep) struct table *t = table_new((const char *const *)headers);
        for (size_t i = 0; i < p->n_runs; i++) {
                const struct mx_plan_run *r = &p->runs[i];
                _cleanup_buf_ struct mx_buf reasons = MX_BUF_INIT;
                _cleanup_strv_free_ char **row = NULL;
                char hash[MX_IDENT_HASH_LEN + 1];

                for (size_t k = 0; r->reasons[k]; k++)
                        mx_buf_printf(&reasons, "%s%s", k ? " " : "", r->reasons[k]);
                strv_consume(&row, xasprintf("%zu", i + 1));
                strv_push(&row, mx_ident_hash_format(r->hash, hash));
                for (size_t a = 0; a < m->n_axes; a++)
                        strv_push(&row, r->config[a] >= 0 ? m->axes[a].values[r->config[a]].name : "-");
                strv_push(&row, reasons.data);
                strv_consume(&row, ki_marks(p, r));
                table_add(t, (const char *const *)row);
        }
        table_print(t, stdout);
}

/* One source's expectations of a run (--verbose). */
static void print_rules(const char *label, const struct mx_kgate_rules *r)
{
        for (size_t i = 0; i < r->n_must_see; i++) {
                printf("       %s must see ", label);
                for (size_t k = 0; r->must_see[i].patterns[k]; k++)
                        printf("%s'%s'", k ? " or " : "", r->must_see[i].patterns[k]);
                putchar('\n');
        }
        for (size_t i = 0; r->must_not_see && r->must_not_see[i]; i++)
                printf("       %s must not see '%s'\n", label, r->must_not_see[i]);
}

/* Each run's environment, flags and expectations (--verbose). */
static void print_details(const struct mx_plan *p)
{
        for (size_t i = 0; i < p->n_runs; i++) {
                const struct mx_plan_run *r = &p->runs[i];

                printf("\n%3zu  %s\n", i + 1, *r->key ? r->key : "(nothing assigned)");
                for (size_t k = 0; r->env && r->env[k]; k++)
                        printf("     env   %s\n", r->env[k]);
                for (size_t k = 0; r->flags && r->flags[k]; k++)
                        printf("     flag  %s\n", r->flags[k]);
                print_rules("log (server output)", &r->expect.log);
                print_rules(mx_matrix_has_gate(p->m) && mx_matrix_has_profiler(p->m)
                                    ? "kernels (profiler report)"
                                    : "kernels (NEVER CHECKED: no profiler)",
                            &r->expect.kernels);
        }
}

/* Skipped runs with the rule or exclude entry that removed them, known issues, notes. */
static void print_footer(const struct mx_plan *p)
{
        const struct mx_matrix *m = p->m;
        bool any_ki = false;

        if (p->n_skipped > 0) {
                printf("\nSkipped (planned, but the matrix file rules them out):\n");
                for (size_t i = 0; i < p->n_skipped; i++) {
                        const struct mx_plan_skip *s = &p->skipped[i];
                        _cleanup_free_ char *desc = mx_config_describe(m, s->config);
                        _cleanup_buf_ struct mx_buf reasons = MX_BUF_INIT;

                        for (size_t k = 0; s->reasons[k]; k++)
                                mx_buf_printf(&reasons, "%s%s", k ? " " : "", s->reasons[k]);
                        printf("  %s: %s\n    %s\n", reasons.data, desc, s->why);
                }
        }
        for (size_t i = 0; i < p->n_runs; i++)
                any_ki = any_ki || p->runs[i].n_known_incompatible > 0;
        if (any_ki) {
                printf("\nKnown incompatible (still run; expected to fail or crash):\n");
                for (size_t k = 0; k < m->n_known_incompatible; k++) {
                        bool used = false;
                        _cleanup_free_ char *at = NULL;

                        for (size_t i = 0; i < p->n_runs && !used; i++)
                                for (size_t j = 0; j < p->runs[i].n_known_incompatible; j++)
                                        used = used || p->runs[i].known_incompatible[j] == k;
                        if (!used)
                                continue;
                        at = mx_matrix_location(m, m->known_incompatible[k].node);
                        printf("  [%zu] %s: %s (%s)\n", k + 1,
                               mx_ki_expect_to_string(m->known_incompatible[k].expect),
                               m->known_incompatible[k].reason, at);
                }
        }
        if (p->notes) {
                printf("\nNotes:\n");
                for (size_t i = 0; p->notes[i]; i++)
                        printf("  - %s\n", p->notes[i]);
        }
        printf("\n%zu runs (%zu expected to fail), %zu skipped.\n", p->n_runs,
               mx_plan_n_known_incompatible(p), p->n_skipped);
}

/* What the command line asks for; plan_args_done() frees it. */
struct plan_args {
        struct mx_plan_request req;
        const char *path, *order;
        bool verbose;
        char **pins;
        json_t *levels_sel, *level_over;
};

static void plan_args_done(struct plan_args *a)
{
        strv_free(a->pins);
        json_decref(a->levels_sel);
        json_decref(a->level_over);
}

/* One option of the getopt loop: 1 to go on, 0 when it printed the help, -EINVAL after saying why not. */
static int plan_option(int c, struct plan_args *a)
{
        int64_t v;

        switch (c) {
        case 's':
                a->req.strategy = mx_plan_strategy_from_string(optarg);
                if (a->req.strategy < 0) {
                        fprintf(stderr, "mxmatrix: unknown strategy '%s' (default, pairwise, 3way, full)\n",
                                optarg);
                        return -EINVAL;
                }
                return 1;
        case 'S':
                if (mx_parse_int64(optarg, 0, INT64_MAX, &v) < 0) {
                        fprintf(stderr, "mxmatrix: --seed wants a non-negative integer, not '%s'\n", optarg);
                        return -EINVAL;
                }
                a->req.seed = (uint64_t)v;
                return 1;
        case 'm':
                if (mx_parse_int64(optarg, 1, 1000000, &v) < 0) {
                        fprintf(stderr, "mxmatrix: --max-runs wants 1 to 1000000, not '%s'\n", optarg);
                        return -EINVAL;
                }
                a->req.max_runs = (size_t)v;
                return 1;
        case 'o':
                if (mx_order_from_string(optarg) < 0) {
                        fprintf(stderr, "mxmatrix: unknown order '%s' (fifo, fail-fast)\n", optarg);
                        return -EINVAL;
                }
                a->order = optarg;
                return 1;
        case 'v':
                a->verbose = true;
                return 1;
        case 'j':
                arg_json = true;
                return 1;
        case 'h':
                plan_help(stdout);
                return 0;
        default:
                return -EINVAL;
        }
}

/* One word after the options: FILE, levels=, LEVEL.setting=value, [feature=]X or a pin. */
static int plan_word(const char *w, struct plan_args *a)
{
        const char *eq = strchr(w, '='), *dot = strchr(w, '.');

        if (!a->path)
                a->path = w;
        else if (startswith(w, "levels="))
                json_array_append_new(a->levels_sel, json_string(w + strlen("levels=")));
        else if (dot && eq && dot < eq) {
                /* LEVEL.setting=value, as submit takes it. */
                _cleanup_free_ char *k = xstrndup(w, eq - w);

                json_object_set_new(a->level_over, k, json_string(eq + 1));
        } else if (startswith(w, "feature=")) {
                if (a->req.feature) {
                        fprintf(stderr, "mxmatrix: plan takes one feature X\n");
                        return -EINVAL;
                }
                a->req.feature = w + strlen("feature=");
        } else if (eq)
                strv_push(&a->pins, w);
        else if (!a->req.feature)
                a->req.feature = w; /* a bare X, as submit takes it */
        else {
                fprintf(stderr,
                        "mxmatrix: unexpected argument '%s' (plan takes one feature X; pins are "
                        "axis=value)\n",
                        w);
                return -EINVAL;
        }
        return 1;
}

/* The command line into a: 1 to go on, 0 when it printed the help, -EINVAL after saying why not. */
static int plan_parse_args(int argc, char **argv, struct plan_args *a)
{
        static const struct option opts[] = {
                { "strategy", required_argument, NULL, 's' },
                { "seed", required_argument, NULL, 'S' },
                { "max-runs", required_argument, NULL, 'm' },
                { "order", required_argument, NULL, 'o' },
                { "verbose", no_argument, NULL, 'v' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "s:vh", opts, NULL)) >= 0)
                if ((r = plan_option(c, a)) <= 0)
                        return r;
        for (int i = optind; i < argc; i++)
                if ((r = plan_word(argv[i], a)) < 0)
                        return r;
        if (!a->path || !a->req.feature || !*a->req.feature) {
                fprintf(stderr, "mxmatrix: plan wants FILE and a feature X (see mxmatrix plan --help)\n");
                return -EINVAL;
        }
        a->req.pins = a->pins;
        return 1;
}

/* The plan's order as mx_order_to_json() gives it (*ret_two: the levels make two passes), or -EINVAL. */
static int plan_order_json(const struct mx_matrix *m, const struct mx_plan *p, const char *order,
                           json_t *run, bool *ret_two, json_t **ret)
{
        enum mx_order o;
        _cleanup_free_ char *owhy = NULL;

        *ret_two = false;
        if (mx_order_resolve(m, order, p->n_runs, run, &o, ret_two, &owhy) < 0)
                return -EINVAL;
        *ret = mx_order_to_json(o, *ret_two, owhy, run);
        return 0;
}

/* The plan as one JSON document, or as text. */
static void plan_print(const struct mx_plan *p, json_t *run, json_t *lset, json_t *order_json, bool two,
                       bool verbose)
{
        if (arg_json) {
                _cleanup_(json_decrefp) json_t *j = mx_plan_to_json(p);

                json_object_set(j, "order", order_json);
                json_object_set(j, "levels", run);
                json_object_set(j, "level_settings", lset);
                json_object_set_new(j, "estimate", plan_estimate_json(p, run, lset, two));
                output_json(j);
                return;
        }
        print_header(p);
        print_levels(run, lset);
        print_order(order_json);
        print_estimate(p, run, lset, two);
        print_runs(p);
        if (verbose)
                print_details(p);
        print_footer(p);
}

int cmd_plan(int argc, char **argv)
{
        _cleanup_(plan_args_done) struct plan_args a = {
                .req = { .strategy = MX_PLAN_DEFAULT },
                .levels_sel = json_array(),
                .level_over = json_object(),
        };
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        _cleanup_(mx_plan_freep) struct mx_plan *p = NULL;
        _cleanup_free_ char *why = NULL;
        _cleanup_json_ json_t *run = NULL, *lset = NULL, *order_json = NULL;
        bool two;
        int r;

        r = plan_parse_args(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? MX_EXIT_USAGE : MX_EXIT_OK;
        r = mx_matrix_load_file(a.path, &m, &why);
        if (r < 0) {
                fprintf(stderr, "%s\n", why);
                return MX_EXIT_INPUT;
        }
        r = mx_plan_build(m, &a.req, &p, &why);
        if (r < 0) {
                fprintf(stderr, "mxmatrix: %s: %s\n", a.path, why);
                return r == -E2BIG ? MX_EXIT_FAILURE : MX_EXIT_USAGE;
        }
        r = mx_levels_resolve(m, p->feature, a.levels_sel, a.level_over, &run, &lset, &why);
        if (r < 0) {
                fprintf(stderr, "mxmatrix: levels: %s\n", why);
                return MX_EXIT_USAGE;
        }
        if (plan_order_json(m, p, a.order, run, &two, &order_json) < 0) {
                fprintf(stderr, "mxmatrix: %s: unknown settings.order\n", a.path);
                return MX_EXIT_INPUT;
        }
        plan_print(p, run, lset, order_json, two, a.verbose);
        return MX_EXIT_OK;
}
