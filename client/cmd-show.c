/* SPDX-License-Identifier: MIT */
/* mxmatrix show JOB [--limit N] [--after rRUN] | rRUN. */
#include "metadata.h"
#include "output.h"
#include "remote.h"
#include "report-util.h"
#include "screen.h"

/* show JOB's runs arrive as stream items, a batch each: gather them. */
static int gather_runs(json_t *item, void *ud)
{
        json_array_extend(ud, json_object_get(item, "runs"));
        return 0;
}

/*
 * show JOB asks for pages until the job has no more runs, unless --limit asks
 * for one page; the result is one document {"job", "runs", "more", "after"}
 * for the table and --json alike. show rRUN is one call.
 */
static int call(struct client_conn *c, json_t *params, json_t **ret_result)
{
        _cleanup_json_ json_t *runs = json_array(), *p = json_deep_copy(params);
        bool one_page = json_object_get(params, "limit") != NULL;
        json_t *res = NULL;

        if (!json_object_get(params, "job"))
                return client_call(c, "show", params, NULL, NULL, ret_result, NULL);
        for (;;) {
                int r;

                json_decref(res);
                res = NULL;
                r = client_call(c, "show", p, gather_runs, runs, &res, NULL);
                if (r != MX_EXIT_OK)
                        return r;
                if (one_page || !json_is_true(json_object_get(res, "more")) ||
                    !json_is_integer(json_object_get(res, "after")))
                        break;
                json_object_set(p, "after", json_object_get(res, "after"));
        }
        json_object_set(res, "runs", runs);
        *ret_result = res;
        return MX_EXIT_OK;
}

static void show_job(json_t *params, json_t *res)
{
        json_t *job = json_object_get(res, "job"), *runs = json_object_get(res, "runs");
        _cleanup_free_ char *counts = mx_result_counts_text(json_object_get(job, "counts"), true);
        _cleanup_free_ char *limit =
                json_is_integer(json_object_get(params, "limit"))
                        ? xasprintf(" --limit %" JSON_INTEGER_FORMAT,
                                    json_integer_value(json_object_get(params, "limit")))
                        : NULL;
        _cleanup_free_ char *when = output_time(json_object_get(job, "submitted_at"));
        _cleanup_free_ char *levels = json_dumps(json_object_get(job, "levels"), JSON_COMPACT);

        printf("job %" JSON_INTEGER_FORMAT ": %s, feature %s, strategy %s, priority %" JSON_INTEGER_FORMAT "\n",
               json_integer_value(json_object_get(job, "id")), strna(json_string_value(json_object_get(job, "state"))),
               json_string_value(json_object_get(job, "feature")) ?: "(pins only)",
               strna(json_string_value(json_object_get(job, "strategy"))),
               json_integer_value(json_object_get(job, "priority")));
        printf("submitted %s by %s (uid %" JSON_INTEGER_FORMAT "), levels %s, matrix %s\n", when,
               json_string_value(json_object_get(job, "user")) ?: "?",
               json_integer_value(json_object_get(job, "uid")), strna(levels),
               strna(json_string_value(json_object_get(job, "matrix"))));
        printf("runs: %s\n\n", counts);
        /* One screen: the summary's table when it holds every run and no page was asked for. */
        if (screen_complete(json_object_get(res, "summary")) && !json_object_get(params, "limit") &&
            !json_object_get(params, "after"))
                screen_print(json_object_get(res, "summary"));
        else
                output_runs(runs);
        if (json_is_true(json_object_get(res, "more")))
                printf("(more: mxmatrix show %" JSON_INTEGER_FORMAT " --after r%" JSON_INTEGER_FORMAT
                       "%s)\n",
                       json_integer_value(json_object_get(job, "id")),
                       json_integer_value(json_object_get(res, "after")), limit ? limit : "");
        output_criteria(json_object_get(res, "criteria"));
}

/* The snapshot's command as the matrix wrote it, for a run no attempt of which has started its command. */
static void show_template(json_t *spec)
{
        json_t *env = json_object_get(spec, "env"), *argv = json_object_get(spec, "argv"), *v;
        const char *k;
        size_t i;

        printf("command (the matrix's template; each attempt shows it expanded once it starts):\n");
        /* The snapshot keeps the matrix's order: an array of "VAR=value"; older ones hold an object. */
        if (json_array_size(env) > 0) {
                printf("env:\n");
                json_array_foreach (env, i, v)
                        printf("  %s\n", strempty(json_string_value(v)));
        } else if (json_object_size(env) > 0) {
                printf("env:\n");
                json_object_foreach (env, k, v)
                        printf("  %s=%s\n", k, strempty(json_string_value(v)));
        }
        if (json_array_size(argv) > 0) {
                printf("argv:");
                json_array_foreach (argv, i, v)
                        printf(" %s", strempty(json_string_value(v)));
                putchar('\n');
        }
}

/* The command an attempt started, expanded, each word shell-quoted (mxmatrix repro rRUN writes it as a script). */
static void show_command(json_t *cmd)
{
        json_t *v;
        size_t i;

        if (json_is_string(json_object_get(cmd, "cwd")))
                printf("  cwd: %s\n", json_string_value(json_object_get(cmd, "cwd")));
        json_array_foreach (json_object_get(cmd, "env"), i, v) {
                const char *kv = strempty(json_string_value(v)), *eq = strchr(kv, '=');
                _cleanup_free_ char *q = output_shell_quote(eq ? eq + 1 : "");

                printf("  env: %.*s=%s\n", (int)(eq ? eq - kv : (ptrdiff_t)strlen(kv)), kv, q);
        }
        printf("  argv:");
        json_array_foreach (json_object_get(cmd, "argv"), i, v) {
                _cleanup_free_ char *q = output_shell_quote(strempty(json_string_value(v)));

                printf(" %s", q);
        }
        putchar('\n');
}

/* Did any attempt record the command it started? */
static bool any_command(json_t *attempts)
{
        json_t *a;
        size_t i;

        json_array_foreach (attempts, i, a)
                if (json_is_object(json_object_get(a, "command")))
                        return true;
        return false;
}

/* Bytes as GB (10^9, the seeds' unit, as the criteria and the reports count them), signed when asked (drift). */
static void print_gb(const char *label, json_t *v, bool sign)
{
        if (json_is_integer(v))
                printf(sign ? "%s %+.2f GB" : "%s %.2f GB", label, (double)json_integer_value(v) / 1e9);
}

/* The GPU and memory summary of one scope (daemon/measure/sampler.h: mx_sample_summary_to_json). */
static void show_samples(const char *scope, json_t *sum)
{
        json_t *mem = json_object_get(sum, "memory"), *tree = json_object_get(sum, "tree"), *v;
        size_t i;

        printf("  %s memory (%s%s, %" JSON_INTEGER_FORMAT " samples):", scope,
               strna(json_string_value(json_object_get(sum, "source"))),
               json_is_true(json_object_get(sum, "unified")) ? ", unified: system memory" : "",
               json_integer_value(json_object_get(sum, "samples")));
        print_gb(" start", json_object_get(mem, "start"), false);
        print_gb(", end", json_object_get(mem, "end"), false);
        print_gb(", peak", json_object_get(mem, "peak"), false);
        print_gb(", drift", json_object_get(mem, "drift"), true);
        if (json_is_number(json_object_get(mem, "drift_pct")))
                printf(" (%+.1f%%)", json_number_value(json_object_get(mem, "drift_pct")));
        print_gb(", server PSS peak", json_object_get(tree, "pss_peak"), false);
        putchar('\n');
        if (json_is_integer(json_object_get(sum, "power_peak_mw")) || json_object_get(sum, "sm_clock_mhz")) {
                printf("  %s gpu:", scope);
                if (json_is_integer(json_object_get(sum, "power_peak_mw")))
                        printf(" power peak %.0f W,",
                               (double)json_integer_value(json_object_get(sum, "power_peak_mw")) / 1e3);
                if (json_is_integer(json_object_get(sum, "temp_peak_c")))
                        printf(" temperature peak %" JSON_INTEGER_FORMAT " C,",
                               json_integer_value(json_object_get(sum, "temp_peak_c")));
                v = json_object_get(sum, "sm_clock_mhz");
                if (json_array_size(v) == 2)
                        printf(" SM clock %" JSON_INTEGER_FORMAT "-%" JSON_INTEGER_FORMAT " MHz,",
                               json_integer_value(json_array_get(v, 0)), json_integer_value(json_array_get(v, 1)));
                printf(" throttle:");
                json_array_foreach (json_object_get(sum, "throttle"), i, v)
                        printf(" %s", strna(json_string_value(v)));
                printf(json_array_size(json_object_get(sum, "throttle")) ? "\n" : " none seen\n");
        }
        if (json_is_string(json_object_get(sum, "error")))
                printf("  %s gpu unreadable %" JSON_INTEGER_FORMAT " time(s): %s\n", scope,
                       json_integer_value(json_object_get(sum, "gpu_failures")),
                       json_string_value(json_object_get(sum, "error")));
}

/* The serving entry of an L4 test ("pp2048 tg32"), for its TTFT percentiles. */
static json_t *l4_serving(json_t *m, json_t *row)
{
        json_t *e;
        size_t i;

        json_array_foreach (json_object_get(m, "serving"), i, e)
                if (json_integer_value(json_object_get(e, "depth")) ==
                            json_integer_value(json_object_get(row, "depth")) &&
                    json_integer_value(json_object_get(e, "pp")) ==
                            json_integer_value(json_object_get(row, "pp")) &&
                    json_integer_value(json_object_get(e, "tg")) ==
                            json_integer_value(json_object_get(row, "tg")))
                        return e;
        return NULL;
}

static void print_ms(json_t *v)
{
        if (json_is_number(v))
                printf(" %9.1f", json_number_value(v));
        else
                printf(" %9s", "-");
}

/* The L4 benchmark as a compact table: each llama-benchy row with its t/s, TTFT and flags. */
static void show_l4(json_t *m)
{
        json_t *cfg = json_object_get(m, "config"), *row, *mem = json_object_get(m, "memory");
        size_t i;

        printf("  L4 %s, %" JSON_INTEGER_FORMAT " runs per test, t/s mean +- population std%s:\n",
               json_is_false(json_object_get(m, "valid")) ? "INVALID (kernel gate)" : "valid",
               json_integer_value(json_object_get(cfg, "runs")),
               json_is_number(json_object_get(m, "ready_s")) ? "" : ", startup time unknown");
        printf("    %-18s %21s %9s %9s %4s  %s\n", "test", "t/s", "TTFT p50", "TTFT p99", "N", "flags");
        json_array_foreach (json_object_get(m, "tests"), i, row) {
                json_t *tps = json_object_get(row, "tps"), *sv = NULL, *ttft = NULL;
                const char *kind = json_string_value(json_object_get(row, "kind"));
                struct mx_buf f = MX_BUF_INIT;
                _cleanup_free_ char *flags = NULL;

                if (streq_ptr(kind, "pp") && (sv = l4_serving(m, row)))
                        ttft = json_object_get(sv, "ttft_ms");
                printf("    %-18s", strna(json_string_value(json_object_get(row, "test"))));
                if (json_is_number(json_object_get(tps, "mean")))
                        printf(" %10.2f +- %7.2f", json_number_value(json_object_get(tps, "mean")),
                               json_number_value(json_object_get(tps, "std")));
                else
                        printf(" %21s", "-");
                print_ms(json_object_get(ttft, "p50"));
                print_ms(json_object_get(ttft, "p99"));
                printf(" %4" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(tps, "n")));
                if (json_integer_value(json_object_get(row, "failed")) > 0)
                        mx_buf_printf(&f, " %" JSON_INTEGER_FORMAT "-failed",
                                      json_integer_value(json_object_get(row, "failed")));
                if (json_is_true(json_object_get(ttft, "p99_few")))
                        mx_buf_printf(&f, " p99-few-samples");
                if (streq_ptr(kind, "pp") &&
                    json_integer_value(json_object_get(row, "cached_tokens_max")) > 0 &&
                    !streq_ptr(json_string_value(json_object_get(cfg, "style")), "llama-bench"))
                        mx_buf_printf(&f, " prefix-cache-hit");
                flags = mx_buf_steal(&f);
                printf("  %s\n", flags && *flags ? flags + 1 : "");
        }
        if (json_is_number(json_object_get(m, "ready_s")))
                printf("    startup %.1f s", json_number_value(json_object_get(m, "ready_s")));
        print_gb(json_is_number(json_object_get(m, "ready_s")) ? ", memory peak" : "    memory peak",
                  json_object_get(mem, "peak"), false);
        print_gb(", drift", json_object_get(mem, "drift"), true);
        if (json_is_string(json_object_get(mem, "figure")))
                printf(" (%s)", json_string_value(json_object_get(mem, "figure")));
        putchar('\n');
}

static void show_attempt(json_t *a)
{
        _cleanup_free_ char *start = output_time(json_object_get(a, "started_at"));
        _cleanup_free_ char *el = output_elapsed(json_object_get(a, "started_at"), json_object_get(a, "finished_at"));
        json_t *levels = json_object_get(a, "levels"), *l, *sum;
        const char *scope;
        size_t i;

        /* The attempt's result in the vocabulary of the job's table; the outcome when it says more. */
        const char *result = json_string_value(json_object_get(a, "result"));
        const char *outcome = json_string_value(json_object_get(a, "outcome"));

        printf("attempt %" JSON_INTEGER_FORMAT ": %s", json_integer_value(json_object_get(a, "n")),
               result ?: outcome ?: "running");
        if (outcome && !streq_ptr(result, outcome) && !streq(outcome, "completed"))
                printf(" (outcome %s)", outcome);
        printf(" at %s, %s", start, el);
        if (json_integer_value(json_object_get(a, "pass")) == 1)
                printf(", first pass (fail-fast: L1, L1.5 only)");
        if (json_is_string(json_object_get(a, "crash_class")))
                printf(", crash class %s", json_string_value(json_object_get(a, "crash_class")));
        if (json_is_integer(json_object_get(a, "exit_status")))
                printf(", exit status %" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(a, "exit_status")));
        if (json_is_integer(json_object_get(a, "exit_signal")))
                printf(", signal %" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(a, "exit_signal")));
        putchar('\n');
        if (json_is_string(json_object_get(a, "message")))
                printf("  %s\n", json_string_value(json_object_get(a, "message")));
        if (json_is_object(json_object_get(a, "command")))
                show_command(json_object_get(a, "command"));
        json_array_foreach (levels, i, l) {
                _cleanup_free_ char *conf = report_l5_confirmation_text(l);

                printf("  %-5s %-8s %s\n", strna(json_string_value(json_object_get(l, "level"))),
                       strna(json_string_value(json_object_get(l, "verdict"))),
                       strempty(json_string_value(json_object_get(l, "message"))));
                /* what L5's decision rested on beyond the run's own start */
                if (conf)
                        printf("        confirmation starts: %s\n", conf);
        }
        json_array_foreach (levels, i, l)
                if (streq_ptr(json_string_value(json_object_get(l, "level")), "L4") &&
                    json_array_size(json_object_get(json_object_get(l, "metrics"), "tests")) > 0)
                        show_l4(json_object_get(l, "metrics"));
        json_object_foreach (json_object_get(a, "samples"), scope, sum)
                show_samples(scope, sum);
        if (json_is_string(json_object_get(a, "log")))
                printf("  log: %s\n", json_string_value(json_object_get(a, "log")));
        if (json_is_object(json_object_get(a, "slurm"))) {
                json_t *sl = json_object_get(a, "slurm");

                printf("  slurm: job %" JSON_INTEGER_FORMAT " on node %s (%s), job name %s\n",
                       json_integer_value(json_object_get(sl, "job_id")),
                       strna(json_string_value(json_object_get(sl, "node"))),
                       strna(json_string_value(json_object_get(sl, "state"))),
                       strna(json_string_value(json_object_get(sl, "job_name"))));
        }
        if (json_is_object(json_object_get(a, "metadata"))) {
                _cleanup_free_ char *meta = mx_meta_summary(json_object_get(a, "metadata"), "  ");

                fputs(meta, stdout);
        }
}

static void show_run(json_t *run)
{
        json_t *reasons = json_object_get(run, "reasons"), *attempts = json_object_get(run, "attempt_history"), *v;
        size_t i;

        printf("run r%" JSON_INTEGER_FORMAT " of job %" JSON_INTEGER_FORMAT " (#%" JSON_INTEGER_FORMAT "): %s",
               json_integer_value(json_object_get(run, "id")), json_integer_value(json_object_get(run, "job")),
               json_integer_value(json_object_get(run, "seq")), strna(json_string_value(json_object_get(run, "state"))));
        if (json_is_string(json_object_get(run, "result")))
                printf(", result %s", json_string_value(json_object_get(run, "result")));
        /* A later attempt cancelled or interrupted does not replace the result of an earlier one. */
        if (json_is_integer(json_object_get(run, "result_attempt")) &&
            json_integer_value(json_object_get(run, "result_attempt")) !=
                    json_integer_value(json_object_get(run, "attempts")))
                printf(" (from attempt %" JSON_INTEGER_FORMAT ")",
                       json_integer_value(json_object_get(run, "result_attempt")));
        printf("\nconfig: %s (%s)\nwhy:", strna(json_string_value(json_object_get(run, "config_key"))),
               strna(json_string_value(json_object_get(run, "config_hash"))));
        json_array_foreach (reasons, i, v)
                printf(" %s", json_string_value(v));
        putchar('\n');
        if (json_is_string(json_object_get(run, "expect_fail")))
                printf("expected to fail: %s\n", json_string_value(json_object_get(run, "expect_fail")));
        if (!any_command(attempts))
                show_template(json_object_get(run, "spec"));
        json_array_foreach (attempts, i, v)
                show_attempt(v);
}

static int render(json_t *params, json_t *res)
{
        if (arg_json)
                output_json(res);
        else if (json_object_get(res, "run"))
                show_run(json_object_get(res, "run"));
        else
                show_job(params, res);
        return MX_EXIT_OK;
}

const struct remote_verb remote_show = { "show", render, NULL, call };
