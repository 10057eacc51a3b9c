/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix bench URL: llama-benchy's workloads against a server that is
 * already running, measured by the same engine as the daemon's L4 level
 * (loadgen/bench.c), without a daemon. Prints llama-benchy's table, then the
 * serving metrics (vllm bench serve's definitions) per test, or --json.
 */
#include "client.h"
#include "output.h"

#include "bench-stats.h"
#include "bench.h"

#include <event2/event.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <unistd.h>

struct bench_run {
        struct event_base *base;
        int error;
        char *reason;
        bool quiet;
};

enum { OPT_MODEL = 256, OPT_PP, OPT_TG, OPT_DEPTH, OPT_RUNS, OPT_WARMUP, OPT_CONC, OPT_STYLE,
       OPT_LATENCY, OPT_KEY, OPT_TIMEOUT, OPT_SEED, OPT_REQUESTS, OPT_JSON, OPT_FORCE_REUSE };

static void help(FILE *f)
{
        fprintf(f,
                "Usage: mxmatrix bench URL [OPTIONS]\n\n"
                "Benchmark an OpenAI-compatible server that is already running (vLLM, SGLang,\n"
                "llama-server) with llama-benchy's workloads; no daemon needed.\n\n"
                "  --model NAME          the served model (default: the first of /v1/models)\n"
                "  --pp N[,N...]         prompt tokens (default 2048)\n"
                "  --tg N[,N...]         generated tokens (default 32,128)\n"
                "  --depth N[,N...]      context tokens before the prompt (default 0,4096,8192)\n"
                "  --runs N              measured batches per test (default 10)\n"
                "  --warmup N            untimed requests per test (default 3)\n"
                "  --concurrency N       requests per batch, sent together (default 1)\n"
                "  --llama-bench-style   at depth, load the context first and time only the prompt\n"
                "                        over the cached context (llama-bench's pp @ dN)\n"
                "  --latency-mode M      api (default), generation or none: what est_ppt subtracts\n"
                "  --api-key KEY         sent as a bearer token (default $OPENAI_API_KEY)\n"
                "  --timeout SECONDS     per request (default 600)\n"
                "  --seed N              make prompts and salts repeatable\n"
                "  --requests            with --json: every request's raw timestamps\n"
                "  -q, --quiet           no progress lines on stderr\n"
                "  --json                one JSON document instead of tables\n\n"
                "Exit status: 0 every request passed, 1 a request failed or the benchmark could\n"
                "not run, 2 usage. See mxmatrix(1).\n");
}

/* "512,2048" into v[]; -EINVAL with a message naming the option. */
static int parse_list(const char *opt, const char *s, int64_t min, int64_t *v, size_t *n)
{
        _cleanup_free_ char *copy = xstrdup(s);
        char *save = NULL;

        *n = 0;
        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                if (*n >= MX_BENCH_LIST_MAX) {
                        fprintf(stderr, "mxmatrix: %s takes at most %d values\n", opt, MX_BENCH_LIST_MAX);
                        return -E2BIG;
                }
                if (mx_parse_int64(w, min, MX_BENCH_TOKENS_MAX, &v[*n]) < 0) {
                        fprintf(stderr, "mxmatrix: %s wants integers in %" PRId64 "..%d, not '%s'\n", opt, min,
                                MX_BENCH_TOKENS_MAX, w);
                        return -EINVAL;
                }
                (*n)++;
        }
        if (*n == 0) {
                fprintf(stderr, "mxmatrix: %s wants a value\n", opt);
                return -EINVAL;
        }
        return 0;
}

static int parse_uint(const char *opt, const char *s, int64_t min, int64_t max, unsigned *ret)
{
        int64_t v;

        if (mx_parse_int64(s, min, max, &v) < 0) {
                fprintf(stderr, "mxmatrix: %s wants an integer in %" PRId64 "..%" PRId64 ", not '%s'\n", opt, min,
                        max, s);
                return -EINVAL;
        }
        *ret = (unsigned)v;
        return 0;
}

static void progress_cb(void *userdata, const char *line)
{
        struct bench_run *br = userdata;

        if (!br->quiet)
                fprintf(stderr, "mxmatrix bench: %s\n", line);
}

static void done_cb(struct mx_bench *b, int error, const char *reason, void *userdata)
{
        struct bench_run *br = userdata;

        br->error = error;
        br->reason = reason ? xstrdup(reason) : NULL;
        event_base_loopbreak(br->base);
}

/* "123.45 ± 1.23" from a statistics object, "" when it has no mean (llama-benchy leaves such cells empty). */
static char *mean_std(json_t *stat)
{
        json_t *mean = json_object_get(stat, "mean"), *std = json_object_get(stat, "std");

        if (!json_is_number(mean))
                return xstrdup("");
        return xasprintf("%.2f ± %.2f", json_number_value(mean), json_is_number(std) ? json_number_value(std) : 0.0);
}

static char *num_cell(json_t *v, bool flag)
{
        if (!json_is_number(v))
                return xstrdup("-");
        return xasprintf("%.2f%s", json_number_value(v), flag ? "*" : "");
}

/* llama-benchy's table (tabulate "pipe", first column left, the rest right-aligned). */
static void print_benchy_table(json_t *doc)
{
        bool multi = json_integer_value(json_object_get(json_object_get(doc, "config"), "concurrency")) > 1;
        const char *h1[] = {"model", "test", "t/s", "peak t/s", "ttfr (ms)", "est_ppt (ms)", "e2e_ttft (ms)", NULL};
        const char *h2[] = {"model",     "test",         "t/s (total)", "t/s (req)", "peak t/s", "peak t/s (req)",
                            "ttfr (ms)", "est_ppt (ms)", "e2e_ttft (ms)", NULL};
        const char *const *h = multi ? h2 : h1;
        size_t ncol = multi ? 9 : 7, nrow = 0, i;
        json_t *rows = json_object_get(doc, "tests"), *row;
        const char *model = json_string_value(json_object_get(doc, "model"));
        _cleanup_free_ size_t *w = xcalloc(ncol, sizeof(size_t));
        char ***cells = xcalloc(json_array_size(rows) + 1, sizeof(char **));

        json_array_foreach(rows, i, row) {
                char **c = xcalloc(ncol, sizeof(char *));
                size_t k = 0;
                c[k++] = xstrdup(strna(model));
                c[k++] = xstrdup(strna(json_string_value(json_object_get(row, "test"))));
                c[k++] = mean_std(json_object_get(row, "tps"));
                if (multi)
                        c[k++] = mean_std(json_object_get(row, "tps_req"));
                c[k++] = mean_std(json_object_get(row, "peak_tps"));
                if (multi)
                        c[k++] = mean_std(json_object_get(row, "peak_tps_req"));
                c[k++] = mean_std(json_object_get(row, "ttfr_ms"));
                c[k++] = mean_std(json_object_get(row, "est_ppt_ms"));
                c[k++] = mean_std(json_object_get(row, "e2e_ttft_ms"));
                cells[nrow++] = c;
        }
        for (size_t c = 0; c < ncol; c++)
                w[c] = strlen(h[c]);
        for (size_t r = 0; r < nrow; r++)
                for (size_t c = 0; c < ncol; c++) {
                        /* "±" is two bytes and one column */
                        size_t l = strlen(cells[r][c]) - (strstr(cells[r][c], "±") ? 1 : 0);
                        w[c] = MX_MAX(w[c], l);
                }
        printf("|");
        for (size_t c = 0; c < ncol; c++)
                printf(c == 0 ? " %-*s |" : " %*s |", (int)w[c], h[c]);
        printf("\n|");
        for (size_t c = 0; c < ncol; c++) {
                printf(c == 0 ? ":" : "");
                for (size_t k = 0; k < w[c] + 1; k++)
                        putchar('-');
                printf(c == 0 ? "|" : ":|");
        }
        printf("\n");
        for (size_t r = 0; r < nrow; r++) {
                printf("|");
                for (size_t c = 0; c < ncol; c++) {
                        int pad = (int)w[c] + (strstr(cells[r][c], "±") ? 1 : 0);
                        printf(c == 0 ? " %-*s |" : " %*s |", pad, cells[r][c]);
                        free(cells[r][c]);
                }
                printf("\n");
                free(cells[r]);
        }
        free(cells);
}

/* "123.45" of a number, "" for null (the cell left blank, the footnote says why). */
static char *blank_or(json_t *v)
{
        return json_is_number(v) ? xasprintf("%.2f", json_number_value(v)) : xstrdup("");
}

/*
 * The server's own figures beside ours, per pp and tg row (loadgen/bench.c: server_pp_tps, server_tg_tps,
 * preparation_ms): where they differ, and why (TTFR holds the request's preparation, which the server's
 * prompt timer leaves out). Blank cells are explained below the table.
 */
static void print_server_timings(json_t *doc)
{
        const char *headers[] = {"test", "t/s", "server t/s", "preparation (ms)", "with timings", NULL};
        _cleanup_(table_freep) struct table *t = table_new(headers);
        json_t *rows = json_object_get(doc, "tests"), *row;
        const char *why = NULL;
        size_t i;

        json_array_foreach(rows, i, row) {
                bool tg = streq_ptr(json_string_value(json_object_get(row, "kind")), "tg");
                json_t *server = json_object_get(row, tg ? "server_tg_tps" : "server_pp_tps");
                _cleanup_free_ char *ours = blank_or(json_object_get(json_object_get(row, "tps"), "mean"));
                _cleanup_free_ char *theirs = blank_or(server);
                _cleanup_free_ char *prep = tg ? xstrdup("") : blank_or(json_object_get(row, "preparation_ms"));
                json_int_t partial = json_integer_value(json_object_get(row, "server_timings_partial"));
                /* requests that reported half a pair are in no figure: say how many */
                _cleanup_free_ char *part =
                        partial > 0 ? xasprintf(" (%" JSON_INTEGER_FORMAT " partial)", partial)
                                    : xstrdup("");
                _cleanup_free_ char *n =
                        xasprintf("%" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT "%s",
                                  json_integer_value(json_object_get(row, "server_timings_requests")),
                                  json_integer_value(json_object_get(row, "requests")), part);
                const char *cells[] = {json_string_value(json_object_get(row, "test")), ours, theirs, prep, n};

                if (!json_is_number(server))
                        why = json_string_value(json_object_get(row, "server_timings"));
                table_add(t, cells);
        }
        printf("\nThe server's own timings of the same requests (server_pp_tps, server_tg_tps):\n");
        table_print(t, stdout);
        printf("pp t/s = prompt tokens / (server prompt_ms + preparation): TTFR also holds the request's "
               "preparation (chat template, tokenization), which the server's prompt timer leaves out; server tg t/s = predicted_n / predicted_ms: llama-server times M "
               "tokens over M - 1 intervals, so it reads about M / (M - 1) above tg t/s\n");
        if (why)
                printf("blank server t/s: %s\n", why);
}

/* vllm bench serve's metrics per test: N, mean ± std, p50/p90/p99 (flagged when N is too small). */
static void print_serving(json_t *doc)
{
        static const char *const metrics[][2] = {
                {"ttfr_ms", "TTFR"}, {"ttft_ms", "TTFT"}, {"tpot_ms", "TPOT"}, {"itl_ms", "ITL"}, {"e2el_ms", "E2EL"},
        };
        const char *headers[] = {"test", "metric", "N", "mean ± std", "p50", "p90", "p99", NULL};
        _cleanup_(table_freep) struct table *t = table_new(headers);
        json_t *sv = json_object_get(doc, "serving"), *e;
        bool flagged = false;
        size_t i;

        json_array_foreach(sv, i, e) {
                for (size_t m = 0; m < ELEMENTSOF(metrics); m++) {
                        json_t *s = json_object_get(e, metrics[m][0]);
                        _cleanup_free_ char *n = xasprintf("%" JSON_INTEGER_FORMAT,
                                                           json_integer_value(json_object_get(s, "n")));
                        _cleanup_free_ char *ms = mean_std(s);
                        bool f90 = json_is_true(json_object_get(s, "p90_few"));
                        bool f99 = json_is_true(json_object_get(s, "p99_few"));
                        _cleanup_free_ char *p50 = num_cell(json_object_get(s, "p50"), false);
                        _cleanup_free_ char *p90 = num_cell(json_object_get(s, "p90"), f90);
                        _cleanup_free_ char *p99 = num_cell(json_object_get(s, "p99"), f99);
                        const char *cells[] = {m == 0 ? json_string_value(json_object_get(e, "test")) : "",
                                               metrics[m][1], n, ms, p50, p90, p99};
                        flagged |= (f90 || f99) && json_is_number(json_object_get(s, "p90"));
                        table_add(t, cells);
                }
        }
        printf("\nServing metrics in ms (vllm bench serve's definitions):\n");
        table_print(t, stdout);
        if (flagged)
                printf("* from fewer samples than a 99 %%-confidence estimate needs (p90: %d, p99: %d; "
                       "MLPerf LoadGen)\n",
                       MX_BSTAT_P90_MIN_N, MX_BSTAT_P99_MIN_N);
}

static void print_footer(json_t *doc)
{
        json_t *defs = json_object_get(doc, "definitions"), *stats = json_object_get(doc, "statistics");
        json_t *fails = json_object_get(doc, "failures"), *e, *lat = json_object_get(doc, "latency_ms");
        _cleanup_free_ char *date = mx_format_time(json_integer_value(json_object_get(doc, "started_us")));
        size_t i;

        printf("\n%s | date: %s | server: %s | latency mode: %s (%.3f ms)\n",
               json_string_value(json_object_get(doc, "tool")), date,
               json_string_value(json_object_get(doc, "server")),
               json_string_value(json_object_get(json_object_get(doc, "config"), "latency_mode")),
               json_is_number(lat) ? json_number_value(lat) : 0.0);
        printf("prompts: %s; chat template overhead %" JSON_INTEGER_FORMAT " (user) / %" JSON_INTEGER_FORMAT
               " (system + user) tokens\n",
               json_string_value(json_object_get(doc, "tokenize")),
               json_integer_value(json_object_get(json_object_get(doc, "template_overhead"), "user")),
               json_integer_value(json_object_get(json_object_get(doc, "template_overhead"), "context")));
        json_array_foreach(json_object_get(doc, "tests"), i, e)
                if (json_is_true(json_object_get(e, "ttfr_before_prefill")))
                        printf("warning: %s: the server sent its first chunk before the prefill ended (ttfr far "
                               "below e2e_ttft), so its pp t/s says little; by the time to the first text "
                               "(llama-benchy 0.4): %.1f t/s\n",
                               json_string_value(json_object_get(e, "test")),
                               json_number_value(json_object_get(json_object_get(e, "tps_first_text"), "mean")));
        printf("\nDefinitions:\n");
        {
                static const char *const keys[] = {"pp_tps", "pp_tps_first_text", "tg_tps", "peak_tps",
                                                   "ttfr_ms", "ttft_ms", "est_ppt_ms", "tpot_ms",
                                                   "itl_ms", "e2el_ms", "server_pp_tps", "server_tg_tps",
                                                   "preparation_ms", "t0"};
                for (size_t k = 0; k < ELEMENTSOF(keys); k++)
                        printf("  %-10s %s\n", keys[k], json_string_value(json_object_get(defs, keys[k])));
        }
        printf("  statistics: %s; %s; percentiles by %s\n", json_string_value(json_object_get(stats, "mean_std")),
               json_string_value(json_object_get(stats, "std_sample")),
               json_string_value(json_object_get(stats, "percentiles")));
        printf("\nRequests: %" JSON_INTEGER_FORMAT " measured, %" JSON_INTEGER_FORMAT " failed\n",
               json_integer_value(json_object_get(doc, "measured")),
               json_integer_value(json_object_get(doc, "failed")));
        json_array_foreach(fails, i, e)
                printf("  FAILED %s run %" JSON_INTEGER_FORMAT ": %s\n",
                       json_string_value(json_object_get(e, "test")), json_integer_value(json_object_get(e, "run")),
                       json_string_value(json_object_get(e, "error")));
}

/* What the command line asks beyond the engine's configuration. */
struct bench_args {
        struct mx_bench_config cfg;
        unsigned timeout_s;
        bool json, quiet;
};

static const struct option bench_options[] = {
        {"model", required_argument, NULL, OPT_MODEL},
        {"pp", required_argument, NULL, OPT_PP},
        {"tg", required_argument, NULL, OPT_TG},
        {"depth", required_argument, NULL, OPT_DEPTH},
        {"runs", required_argument, NULL, OPT_RUNS},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"concurrency", required_argument, NULL, OPT_CONC},
        {"llama-bench-style", no_argument, NULL, OPT_STYLE},
        {"latency-mode", required_argument, NULL, OPT_LATENCY},
        {"api-key", required_argument, NULL, OPT_KEY},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"seed", required_argument, NULL, OPT_SEED},
        {"requests", no_argument, NULL, OPT_REQUESTS},
        {"json", no_argument, NULL, OPT_JSON},
        /* not in --help: for testing that a reused cache is caught (mxmatrix(1), DEBUGGING) */
        {"debug-force-cache-reuse", no_argument, NULL, OPT_FORCE_REUSE},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {},
};

/* The option c with its argument into a; -EINVAL (usage, already said) for a bad value. */
static int bench_apply_option(struct bench_args *a, int c, const char *arg)
{
        struct mx_bench_config *cfg = &a->cfg;
        int64_t seed;

        switch (c) {
        case OPT_MODEL:
                cfg->model = arg;
                return 0;
        case OPT_PP:
                return parse_list("--pp", arg, 1, cfg->pp, &cfg->n_pp);
        case OPT_TG:
                return parse_list("--tg", arg, 2, cfg->tg, &cfg->n_tg);
        case OPT_DEPTH:
                return parse_list("--depth", arg, 0, cfg->depth, &cfg->n_depth);
        case OPT_RUNS:
                return parse_uint("--runs", arg, 1, MX_BENCH_RUNS_MAX, &cfg->runs);
        case OPT_WARMUP:
                return parse_uint("--warmup", arg, 0, MX_BENCH_WARMUP_MAX, &cfg->warmup);
        case OPT_CONC:
                return parse_uint("--concurrency", arg, 1, MX_BENCH_CONCURRENCY_MAX, &cfg->concurrency);
        case OPT_FORCE_REUSE:
                cfg->force_cache_reuse = true;
                return 0;
        case OPT_STYLE:
                cfg->llama_bench_style = true;
                return 0;
        case OPT_LATENCY:
                cfg->latency_mode = mx_bench_latency_mode_from_string(arg);
                if (cfg->latency_mode < 0) {
                        fprintf(stderr, "mxmatrix: --latency-mode is api, generation or none, not '%s'\n", arg);
                        return -EINVAL;
                }
                return 0;
        case OPT_KEY:
                cfg->api_key = arg;
                return 0;
        case OPT_TIMEOUT:
                return parse_uint("--timeout", arg, 1, 86400, &a->timeout_s);
        case OPT_SEED:
                if (mx_parse_int64(arg, 1, INT64_MAX, &seed) < 0) {
                        fprintf(stderr, "mxmatrix: --seed wants a positive integer, not '%s'\n", arg);
                        return -EINVAL;
                }
                cfg->seed = (uint64_t)seed;
                return 0;
        case OPT_REQUESTS:
                cfg->keep_requests = true;
                return 0;
        case OPT_JSON:
                a->json = true;
                return 0;
        case 'q':
                a->quiet = true;
                return 0;
        default:
                return -EINVAL;
        }
}

/*
 * The command line into a (the configuration's defaults, $OPENAI_API_KEY, then the options and the URL):
 * -1 to go on, else the exit status (--help, a usage error).
 */
static int bench_parse_args(int argc, char **argv, struct bench_args *a)
{
        int c;

        *a = (struct bench_args){.timeout_s = 600, .json = arg_json};
        mx_bench_config_defaults(&a->cfg);
        a->cfg.api_key = getenv("OPENAI_API_KEY");
        if (a->cfg.api_key && !*a->cfg.api_key)
                a->cfg.api_key = NULL;
        optind = 0;
        while ((c = getopt_long(argc, argv, "qh", bench_options, NULL)) >= 0) {
                if (c == 'h') {
                        help(stdout);
                        return MX_EXIT_OK;
                }
                if (bench_apply_option(a, c, optarg) < 0)
                        return MX_EXIT_USAGE;
        }
        if (optind + 1 != argc) {
                fprintf(stderr, "mxmatrix: bench wants exactly one URL (mxmatrix bench --help)\n");
                return MX_EXIT_USAGE;
        }
        a->cfg.url = argv[optind];
        a->cfg.timeout_ms = (int64_t)a->timeout_s * 1000;
        return -1;
}

/*
 * The benchmark of a, run to its end on a loop of its own: 0 with its result document and how many
 * requests failed, else the exit status (it could not be set up or could not run).
 */
static int bench_execute(const struct bench_args *a, json_t **ret_doc, unsigned *ret_failed)
{
        struct bench_run br = {.quiet = a->quiet};
        _cleanup_(mx_bench_freep) struct mx_bench *b = NULL;
        _cleanup_free_ char *err = NULL;
        int r, status = 0;

        br.base = event_base_new();
        if (!br.base) {
                fprintf(stderr, "mxmatrix: cannot create an event loop\n");
                return MX_EXIT_FAILURE;
        }
        r = mx_bench_new(br.base, &a->cfg, &b, &err);
        if (r < 0) {
                fprintf(stderr, "mxmatrix: %s\n", err);
                event_base_free(br.base);
                return r == -EINVAL || r == -E2BIG ? MX_EXIT_USAGE : MX_EXIT_FAILURE;
        }
        mx_bench_start(b, done_cb, progress_cb, &br);
        event_base_dispatch(br.base);
        if (br.error < 0) {
                fprintf(stderr, "mxmatrix: bench %s: %s\n", a->cfg.url, strna(br.reason));
                status = MX_EXIT_FAILURE;
        } else {
                *ret_doc = mx_bench_result_json(b);
                mx_bench_counts(b, NULL, ret_failed);
        }
        free(br.reason);
        b = mx_bench_free(b);
        event_base_free(br.base);
        return status;
}

/* The result on stdout: the JSON document, or the tables and their footer. */
static void bench_print(json_t *doc, bool json)
{
        if (json) {
                output_json(doc);
                return;
        }
        print_benchy_table(doc);
        print_server_timings(doc);
        print_serving(doc);
        print_footer(doc);
}

int cmd_bench(int argc, char **argv)
{
        struct bench_args a;
        _cleanup_json_ json_t *doc = NULL;
        unsigned failed = 0;
        int status;

        status = bench_parse_args(argc, argv, &a);
        if (status >= 0)
                return status;
        status = bench_execute(&a, &doc, &failed);
        if (status != 0)
                return status;
        bench_print(doc, a.json);
        return failed > 0 ? MX_EXIT_FAILURE : MX_EXIT_OK;
}
