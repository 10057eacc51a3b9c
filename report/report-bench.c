/* SPDX-License-Identifier: MIT */
/*
 * Seed 002's BENCHMARK_RESULTS.md from a report document: Current Best
 * Results, the Baseline section with its five YAML blocks, the Comparison
 * Matrix, Reference: Competing Engines (the matrix's reference section) and
 * Detailed Run Logs, in the seed's headings and columns.
 */
#include "report-internal.h"
#include "metadata.h"
#include "server-flags.h"
#include "matrix.h"

#include <math.h>

/* A YAML value: the figure with its sample count as a comment, or a quoted reason. */
static void yaml_num(FILE *f, const char *indent, const char *key, json_t *run, const char *metric,
                     struct rep_defs *defs)
{
        struct rep_num n;
        _cleanup_free_ char *t = NULL;

        if (!run) {
                fprintf(f, "%s%s: \"<not measured: no baseline run>\"\n", indent, key);
                return;
        }
        rep_metric(run, metric, &n);
        rep_defs_add(defs, metric, &n);
        if (!n.have) {
                fprintf(f, "%s%s: \"<%s>\"\n", indent, key, n.why);
                return;
        }
        t = rep_num_text(&n);
        if (n.n > 1 && !isnan(n.sd))
                fprintf(f, "%s%s: %s  # ± %.2f, n=%" PRId64 "\n", indent, key, t, n.sd, n.n);
        else if (n.n >= 0)
                fprintf(f, "%s%s: %s  # n=%" PRId64 "\n", indent, key, t, n.n);
        else
                fprintf(f, "%s%s: %s\n", indent, key, t);
}

static void yaml_kv(FILE *f, const char *indent, const char *key, const char *value)
{
        char *end = NULL;

        /* a flag's number ("1", "0.70") is a number in YAML, as the seed writes it */
        if (value && *value && (strtod(value, &end), *end == '\0') && !strpbrk(value, "xXnNiI")) {
                fprintf(f, "%s%s: %s\n", indent, key, value);
                return;
        }
        _cleanup_free_ char *v = mx_meta_yaml_scalar(value ?: "");

        fprintf(f, "%s%s: %s\n", indent, key, v);
}

/* The best run for a metric (higher or lower is better as the vocabulary says), among runs that measured it.
 */
static json_t *best_run(json_t *doc, const char *metric, struct rep_num *ret)
{
        const struct mx_metric_info *mi = mx_metric_lookup(metric);
        json_t *run, *best = NULL;
        size_t i;

        *ret = (struct rep_num){.n = -1, .why = "not measured"};
        json_array_foreach (rep_runs(doc), i, run) {
                struct rep_num n;

                rep_metric(run, metric, &n);
                if (!n.have)
                        continue;
                if (!best || (mi && mi->higher_is_better ? n.v > ret->v : n.v < ret->v)) {
                        best = run;
                        *ret = n;
                }
        }
        return best;
}

static void current_best(FILE *f, json_t *doc, json_t *base, struct rep_defs *defs)
{
        static const struct {
                const char *metric, *label;
        } rows[] = {
                {"tg32_tps", "tg32 (tok/s)"},
                {"tg128_tps", "tg128 (tok/s)"},
                {"pp2048_tps", "pp2048 (tok/s)"},
                {"ttft_p50_ms", "TTFT p50 (ms)"},
        };

        fputs("## Current Best Results\n\n| Metric | Baseline | Best | Config | Date |\n"
              "|--------|----------|------|--------|------|\n",
              f);
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                struct rep_num b = {.why = "not measured"}, best;
                json_t *run = best_run(doc, rows[i].metric, &best);
                _cleanup_free_ char *bc = NULL, *bestc = rep_num_cell(&best), *name = NULL, *date = NULL;

                if (base)
                        rep_metric(base, rows[i].metric, &b);
                bc = rep_num_cell(&b);
                rep_defs_add(defs, rows[i].metric, &b);
                rep_defs_add(defs, rows[i].metric, &best);
                if (run) {
                        _cleanup_free_ char *n = rep_config_name(doc, run);

                        name = xasprintf("%s (r%" JSON_INTEGER_FORMAT ")", n,
                                         json_integer_value(json_object_get(run, "id")));
                        date = rep_date(json_object_get(rep_attempt(run), "finished_at"));
                }
                {
                        _cleanup_free_ char *mname = rep_md(name);

                        fprintf(f, "| %s | %s | %s | %s | %s |\n", rows[i].label, bc, bestc, mname,
                                date ?: "-");
                }
        }
        rep_defs_refs(defs, f);
}

/* The server's flags, read as its kind reads them, as seed 002's vLLM Configuration block, with its environment. */
static void vllm_config(FILE *f, json_t *doc, json_t *run)
{
        json_t *spec = json_object_get(run, "spec"), *e;
        const char *kind = json_string_value(json_object_get(json_object_get(spec, "profile"), "base"));
        _cleanup_json_ json_t *flags = mx_server_flags(kind, json_object_get(spec, "argv"),
                                                       json_object_get(spec, "env"));
        static const char *const skip[] = {"host", "port", "served_model_name", "model", "alias", NULL};
        const char *k;
        json_t *v;
        size_t i;

        (void)doc;
        for (size_t s = 0; skip[s]; s++)
                json_object_del(flags, skip[s]);
        fputs("### vLLM Configuration\n```yaml\n", f);
        {
                /* the seed's keys first, in its order; then the other flags, sorted */
                static const char *const order[] = {"quantization",
                                                    "tensor_parallel_size",
                                                    "max_model_len",
                                                    "max_num_seqs",
                                                    "max_num_batched_tokens",
                                                    "enforce_eager",
                                                    "enable_prefix_caching",
                                                    "load_format",
                                                    NULL};
                _cleanup_json_ json_t *rest = json_deep_copy(flags);
                const char **keys;
                size_t nk = 0;

                for (size_t o = 0; order[o]; o++) {
                        v = json_object_get(flags, order[o]);
                        json_object_del(rest, order[o]);
                        if (json_is_boolean(v))
                                fprintf(f, "%s: %s%s\n", order[o], json_is_true(v) ? "true" : "false",
                                        streq(order[o], "enforce_eager")
                                                ? (json_is_true(v) ? "  # CUDA graphs disabled"
                                                                   : "  # CUDA graphs enabled")
                                                : "");
                        else
                                yaml_kv(f, "", order[o], json_string_value(v) ?: "<not set>");
                }
                yaml_kv(f, "", "served_model",
                        json_string_value(json_object_get(spec, "model")) ?: "<not set>");
                keys = xcalloc(json_object_size(rest) + 1, sizeof(*keys));
                json_object_foreach (rest, k, v)
                        keys[nk++] = k;
                for (size_t a = 1; a < nk; a++)
                        for (size_t b = a; b > 0 && strcmp(keys[b - 1], keys[b]) > 0; b--) {
                                const char *t = keys[b];
                                keys[b] = keys[b - 1];
                                keys[b - 1] = t;
                        }
                for (size_t a = 0; a < nk; a++) {
                        v = json_object_get(rest, keys[a]);
                        if (json_is_boolean(v))
                                fprintf(f, "%s: %s\n", keys[a], json_is_true(v) ? "true" : "false");
                        else
                                yaml_kv(f, "", keys[a], json_string_value(v));
                }
                free(keys);
        }
        fputs("\nenv_vars:\n", f);
        json_array_foreach (json_object_get(spec, "env"), i, e) {
                const char *s = json_string_value(e), *eq = s ? strchr(s, '=') : NULL;
                _cleanup_free_ char *name = eq ? xstrndup(s, (size_t)(eq - s)) : NULL;

                if (name)
                        yaml_kv(f, "  ", name, eq + 1);
        }
        if (json_array_size(json_object_get(spec, "env")) == 0)
                fputs("  {}\n", f);
        fputs("```\n\n", f);
}

static void workload(FILE *f, json_t *run)
{
        json_t *l4 = json_object_get(rep_level(rep_attempt(run), "L4"), "metrics");
        json_t *cfg = json_object_get(l4, "config"), *tg = json_object_get(cfg, "tg"), *x;
        const char *why = run ? (l4 ? NULL : "\"<not measured: no L4 level ran>\"")
                              : "\"<not measured: no baseline run>\"";
        static const char *const unrecorded[] = {"temperature", "top_p", "top_k", "seed", NULL};
        size_t i;

        fputs("### Workload Parameters\n```yaml\n", f);
        if (why) {
                static const char *const keys[] = {"prompt_length",   "output_lengths", "batch_size",
                                                   "concurrency",     "temperature",    "top_p",
                                                   "top_k",           "seed",           "tokenizer",
                                                   "warmup_requests", "test_requests",  NULL};

                for (i = 0; keys[i]; i++)
                        fprintf(f, "%s: %s\n", keys[i], why);
                fputs("```\n\n", f);
                return;
        }
        fprintf(f, "prompt_length: %" JSON_INTEGER_FORMAT "  # tokens\n",
                json_integer_value(json_array_get(json_object_get(cfg, "pp"), 0)));
        fputs("output_lengths: [", f);
        json_array_foreach (tg, i, x)
                fprintf(f, "%s%" JSON_INTEGER_FORMAT, i ? ", " : "", json_integer_value(x));
        fputs("]\n", f);
        fprintf(f, "batch_size: %" JSON_INTEGER_FORMAT "\n",
                json_integer_value(json_object_get(cfg, "concurrency")));
        fprintf(f, "concurrency: %" JSON_INTEGER_FORMAT "\n",
                json_integer_value(json_object_get(cfg, "concurrency")));
        for (i = 0; unrecorded[i]; i++) {
                json_t *v = json_object_get(cfg, unrecorded[i]);

                if (json_is_number(v))
                        /* as the seed writes them: temperature 1.0, seed 42 */
                        fprintf(f, json_is_real(v) && json_real_value(v) == floor(json_real_value(v))
                                           ? "%s: %.1f\n"
                                           : "%s: %g\n",
                                unrecorded[i], json_number_value(v));
                else if (json_object_get(cfg, "temperature"))
                        /* a document that records the sampling sent: this one was not (the server's default) */
                        fprintf(f, "%s: \"<not sent: the server's default>\"\n", unrecorded[i]);
                else
                        fprintf(f, "%s: \"<not recorded: the server's default>\"\n", unrecorded[i]);
        }
        {
                const char *model = json_string_value(json_object_get(l4, "model"));

                if (!model)
                        model = json_string_value(json_object_get(json_object_get(run, "spec"), "model"));
                yaml_kv(f, "", "tokenizer", model ?: "<unknown>");
        }
        fprintf(f, "warmup_requests: %" JSON_INTEGER_FORMAT "\n",
                json_integer_value(json_object_get(cfg, "warmup")));
        fprintf(f, "test_requests: %" JSON_INTEGER_FORMAT "  # batches per test\n",
                json_integer_value(json_object_get(cfg, "runs")));
        fputs("```\n\n", f);
}

static void results(FILE *f, json_t *run, struct rep_defs *defs)
{
        static const char *const thr[] = {"pp2048_tps", "tg32_tps", "tg128_tps", NULL};
        static const char *const lat[] = {"ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
                                          "tpot_p99_ms", "itl_p50_ms",  "itl_p99_ms",
                                          "e2e_p50_ms",  "e2e_p99_ms",  NULL};
        json_t *l4 = json_object_get(rep_level(rep_attempt(run), "L4"), "metrics");

        fputs("### Results\n```yaml\n", f);
        yaml_num(f, "", "startup_time_s", run, "startup_s", defs);
        fputs("\nthroughput:\n", f);
        for (size_t i = 0; thr[i]; i++)
                yaml_num(f, "  ", thr[i], run, thr[i], defs);
        fputs("\nlatency:\n", f);
        for (size_t i = 0; lat[i]; i++)
                yaml_num(f, "  ", lat[i], run, lat[i], defs);
        fputs("\nresource:\n", f);
        yaml_num(f, "  ", "gpu_memory_peak_gb", run, "memory_gb", defs);
        if (json_is_number(json_object_get(l4, "cpu_usage_percent")))
                fprintf(f, "  cpu_usage_percent: %.1f\n",
                        json_number_value(json_object_get(l4, "cpu_usage_percent")));
        else
                fputs("  cpu_usage_percent: \"<not measured>\"\n", f);
        fputs("```\n", f);
        rep_defs_refs(defs, f);
        fputc('\n', f);
}

static void kernel_validation(FILE *f, json_t *run)
{
        json_t *spec = json_object_get(run, "spec"),
               *ms = json_object_get(json_object_get(json_object_get(spec, "expect"), "kernels"),
                                     "must_see");
        json_t *l15 = rep_level(rep_attempt(run), "L1.5"), *obs, *e, *alt;
        const char *v = json_string_value(json_object_get(l15, "verdict"));
        size_t i, k, n = 0;

        fputs("### Kernel Validation\n```yaml\nexpected_kernels:\n", f);
        json_array_foreach (ms, i, e) {
                _cleanup_free_ char *line = NULL;
                struct mx_buf b = MX_BUF_INIT;

                if (json_is_array(e))
                        json_array_foreach (e, k, alt)
                                mx_buf_printf(&b, "%s%s", k ? " | " : "", json_string_value(alt));
                else
                        mx_buf_puts(&b, json_string_value(e) ?: "");
                line = mx_buf_steal(&b);
                {
                        _cleanup_free_ char *sc = mx_meta_yaml_scalar(line);

                        fprintf(f, "  - %s\n", sc);
                }
        }
        if (json_array_size(ms) == 0)
                fputs("  []\n", f);
        obs = json_object_get(json_object_get(json_object_get(l15, "metrics"), "kernels"), "must_see");
        fputs("observed_kernels:", f);
        json_array_foreach (obs, i, e)
                if (json_is_string(json_object_get(e, "subject"))) {
                        _cleanup_free_ char *s =
                                mx_meta_yaml_scalar(json_string_value(json_object_get(e, "subject")));

                        fprintf(f, "\n  - %s", s);
                        n++;
                }
        if (n == 0)
                fputs(l15 ? " []" : " \"<pending: no L1.5 level ran>\"", f);
        fprintf(f, "\nvalidation: %s\n```\n\n", v ? rep_verdict_word(v) : "PENDING");
}

static void baseline_section(FILE *f, json_t *doc, json_t *base, struct rep_defs *defs)
{
        _cleanup_free_ char *name = base ? rep_config_name(doc, base) : NULL;
        json_t *a = rep_attempt(base);
        json_t *record = json_object_get(a, "metadata");

        fprintf(f, "## %s\n\n", name ?: "Baseline");
        if (base) {
                _cleanup_free_ char *when = rep_datetime(json_object_get(a, "finished_at"));

                fprintf(f,
                        "**Status**: %s (r%" JSON_INTEGER_FORMAT ", attempt %" JSON_INTEGER_FORMAT
                        ", %s UTC)\n\n",
                        rep_result(base), json_integer_value(json_object_get(base, "id")),
                        json_integer_value(json_object_get(a, "n")), when);
        } else
                fputs("**Status**: TODO - the job has no baseline run\n\n", f);
        fputs("### Environment\n```yaml\n", f);
        if (json_is_object(record)) {
                _cleanup_free_ char *y = mx_meta_env_yaml(record);

                fputs(y, f);
        } else {
                static const char *const keys[] = {"date",
                                                   "git_sha_vllm",
                                                   "git_sha_flashinfer",
                                                   "docker_image_hash",
                                                   "cuda_version",
                                                   "driver_version",
                                                   "cudnn_version",
                                                   "gpu_clocks",
                                                   "gpu_power_mode",
                                                   NULL};

                for (size_t i = 0; keys[i]; i++)
                        fprintf(f, "%s: \"<not recorded: no metadata for this attempt>\"\n", keys[i]);
        }
        fputs("```\n\n", f);
        vllm_config(f, doc, base);
        workload(f, base);
        results(f, base, defs);
        kernel_validation(f, base);
}

/* The server's own figures beside the seed's columns: tg32, tg128 and pp2048 at depth 0 (loadgen/bench.c). */
static const struct {
        const char *kind, *field;
        int64_t size;
} server_cols[] = {
        {"tg", "server_tg_tps", 32},
        {"tg", "server_tg_tps", 128},
        {"pp", "server_pp_tps", 2048},
};

/* The depth-0 L4 row of kind and size in run's result, or NULL. */
static json_t *l4_row(json_t *run, const char *kind, int64_t size)
{
        json_t *m = json_object_get(rep_level(rep_attempt(run), "L4"), "metrics"), *row;
        size_t i;

        json_array_foreach (json_object_get(m, "tests"), i, row)
                if (streq_ptr(json_string_value(json_object_get(row, "kind")), kind) &&
                    json_integer_value(json_object_get(row, "depth")) == 0 &&
                    json_integer_value(json_object_get(row, kind)) == size)
                        return row;
        return NULL;
}

/*
 * One server column's cell: the server's figure with the requests it came from, else blank, and *ret_why the
 * reason the row gives (the footnote under the table) when it has one.
 */
static char *server_cell(json_t *run, size_t c, const char **ret_why)
{
        json_t *row = l4_row(run, server_cols[c].kind, server_cols[c].size);
        json_t *v = json_object_get(row, server_cols[c].field);

        if (json_is_number(v))
                return xasprintf("%.2f (n=%" JSON_INTEGER_FORMAT ")", json_number_value(v),
                                 json_integer_value(json_object_get(row, "server_timings_requests")));
        if (row)
                *ret_why = json_string_value(json_object_get(row, "server_timings"))
                                   ?: "not recorded (a result from before the server's figures were kept)";
        return xstrdup("");
}

#define COMPARISON_COLS_MAX 16 /* of rep_bench_cols in one row */

/* A row's name: the configuration's name, the run and its result (and a failure's class). */
static char *comparison_name(json_t *doc, json_t *run)
{
        struct rep_failure fail;
        bool failed = rep_run_failure(run, &fail);
        _cleanup_free_ char *nm = rep_config_name(doc, run);
        char *name = failed ? xasprintf("%s (r%" JSON_INTEGER_FORMAT ", %s: %s)", nm,
                                        json_integer_value(json_object_get(run, "id")), rep_result(run),
                                        fail.klass)
                            : xasprintf("%s (r%" JSON_INTEGER_FORMAT ", %s)", nm,
                                        json_integer_value(json_object_get(run, "id")), rep_result(run));

        rep_failure_done(&fail);
        return name;
}

/* The run's figures of seed 002's columns into n: whether it has any benchmark figure (memory is none). */
static bool bench_figures(json_t *run, struct rep_num n[COMPARISON_COLS_MAX])
{
        bool any = false;

        for (size_t c = 0; c < rep_n_bench_cols && c < COMPARISON_COLS_MAX; c++) {
                rep_metric(run, rep_bench_cols[c].metric, &n[c]);
                any |= n[c].have && !streq(rep_bench_cols[c].metric, "memory_gb");
        }
        return any;
}

/* The run's row of seed 002's table: cell and its figures n, whose definitions go to defs. */
static void bench_row(FILE *f, struct rep_defs *defs, const char *cell,
                      const struct rep_num n[COMPARISON_COLS_MAX])
{
        fprintf(f, "| %s |", cell);
        for (size_t c = 0; c < rep_n_bench_cols && c < COMPARISON_COLS_MAX; c++) {
                _cleanup_free_ char *t = rep_num_cell(&n[c]);

                rep_defs_add(defs, rep_bench_cols[c].metric, &n[c]);
                fprintf(f, " %s |", t);
        }
        fputc('\n', f);
}

/* The run's row of the server's own figures into srv; why a cell is blank (the last reason) into why. */
static void server_row(struct mx_buf *srv, struct mx_buf *why, json_t *run, const char *cell)
{
        const char *blank = NULL;

        mx_buf_printf(srv, "| %s |", cell);
        for (size_t c = 0; c < ELEMENTSOF(server_cols); c++) {
                _cleanup_free_ char *t = server_cell(run, c, &blank);

                mx_buf_printf(srv, " %s |", t);
        }
        mx_buf_putc(srv, '\n');
        if (blank)
                mx_buf_printf(why, "%sr%" JSON_INTEGER_FORMAT ": %s", why->len ? "; " : "",
                              json_integer_value(json_object_get(run, "id")), blank);
}

/*
 * Under seed 002's table: the server's own figures and what they are, why some are blank, what was not
 * measured. Frees the three buffers.
 */
static void comparison_notes(FILE *f, struct mx_buf *srv, struct mx_buf *why, struct mx_buf *none)
{
        if (srv->len)
                fprintf(f,
                        "\n| Config | server tg32 t/s | server tg128 t/s | server pp2048 t/s |\n"
                        "|--------|-----------------|------------------|-------------------|\n%s",
                        srv->data);
        mx_buf_free(srv);
        fputs("\nServer t/s: the server's own timings of the same requests, where it reports them per request "
              "(llama-server: prompt_n / prompt_ms, predicted_n / predicted_ms); the pp columns beside them follow "
              "llama-benchy (prompt tokens / (TTFR - latency)), and TTFR also holds the request's preparation "
              "(chat template, tokenization) that the server's prompt timer leaves out.\n",
              f);
        if (why->len) {
                _cleanup_free_ char *t = rep_md(why->data);

                fprintf(f, "Blank server t/s: %s.\n", t);
        }
        mx_buf_free(why);
        if (none->len) {
                _cleanup_free_ char *t = rep_md(none->data);

                fprintf(f, "\nNot measured (no L4 figure: the run failed before it or ran no L4): %s.\n", t);
        }
        mx_buf_free(none);
}

static void comparison(FILE *f, json_t *doc, struct rep_defs *defs)
{
        /* seed 002's table as it is; the server's own figures in a table of their own under it */
        struct mx_buf none = MX_BUF_INIT, why = MX_BUF_INIT, srv = MX_BUF_INIT;
        json_t *run;
        size_t i;

        fputs("## Comparison Matrix\n\n| Config | tg32 | tg128 | pp2048 | TTFT p50 | TTFT p99 | Memory |\n"
              "|--------|------|-------|--------|----------|----------|--------|\n",
              f);
        json_array_foreach (rep_runs(doc), i, run) {
                _cleanup_free_ char *name = NULL, *cell = NULL;
                struct rep_num n[COMPARISON_COLS_MAX];

                if (!rep_attempt(run))
                        continue; /* never ran: nothing measured */
                name = comparison_name(doc, run);
                /* a run with no benchmark figure is one line below the table, not a row of "not measured" */
                if (!bench_figures(run, n)) {
                        mx_buf_printf(&none, "%s%s", none.len ? "; " : "", name);
                        continue;
                }
                cell = rep_md(name);
                bench_row(f, defs, cell, n);
                server_row(&srv, &why, run, cell);
        }
        comparison_notes(f, &srv, &why, &none);
        rep_defs_refs(defs, f);
}

/* One cell of a window figure: the number with prec decimals, else "not reported"/"not measured" and why. */
static char *window_cell(json_t *o, const char *key, int prec, const char *absent)
{
        json_t *v = json_object_get(o, key);
        const char *why = json_string_value(json_object_get(o, absent));

        if (json_is_number(v))
                return xasprintf("%.*f", prec, json_number_value(v));
        return rep_md(why ? why : "not recorded");
}

/*
 * L4's per-test figures of issue 18: the draft acceptance from the server's counters and the joules per
 * generated token from NVML, one row per configuration and test; nothing for documents without them.
 */
static void spec_energy(FILE *f, json_t *doc)
{
        json_t *run, *sv;
        size_t i, k;
        bool head = false;

        json_array_foreach (rep_runs(doc), i, run) {
                json_t *l4 = json_object_get(rep_level(rep_attempt(run), "L4"), "metrics");
                _cleanup_free_ char *nm = NULL;

                json_array_foreach (json_object_get(l4, "serving"), k, sv) {
                        json_t *sd = json_object_get(sv, "spec_decode"), *en = json_object_get(sv, "energy");
                        _cleanup_free_ char *cfg = NULL, *test = NULL, *rate = NULL, *len = NULL, *jpt = NULL;

                        if (!json_is_object(sd) && !json_is_object(en))
                                continue;
                        if (!head) {
                                fputs("### Speculative Decoding and Energy\n\n| Config | Test | Acceptance rate | "
                                      "Mean acceptance length | J/token |\n"
                                      "|--------|------|-----------------|------------------------|---------|\n",
                                      f);
                                head = true;
                        }
                        if (!nm)
                                nm = rep_config_name(doc, run);
                        cfg = rep_md(nm);
                        test = rep_md(strna(json_string_value(json_object_get(sv, "test"))));
                        rate = window_cell(sd, "acceptance_rate", 3, "not_reported");
                        len = window_cell(sd, "mean_acceptance_length", 2, "not_reported");
                        jpt = window_cell(en, "joules_per_token", 4, "not_measured");
                        fprintf(f, "| %s (r%" JSON_INTEGER_FORMAT ") | %s | %s | %s | %s |\n", cfg,
                                json_integer_value(json_object_get(run, "id")), test, rate, len, jpt);
                }
        }
        if (head)
                fputs("\nAcceptance rate = accepted / draft tokens, mean acceptance length = 1 + accepted / "
                      "drafts, from the server's /metrics counters read before and after each test (vLLM's "
                      "definitions); J/token = NVML's total energy over the test's measured requests / the "
                      "tokens they generated (prefill included).\n\n",
                      f);
}

static void reference(FILE *f, json_t *doc)
{
        json_t *ref = json_object_get(rep_matrix(doc), "reference"), *e, *row;
        size_t i, k;

        fputs("## Reference: Competing Engines\n\n", f);
        if (json_array_size(json_object_get(ref, "engines")) == 0) {
                fputs("The matrix file has no reference section (mxmatrix.json(5), REFERENCE).\n\n", f);
                return;
        }
        json_array_foreach (json_object_get(ref, "engines"), i, e) {
                const char *tool = json_string_value(json_object_get(e, "tool"));
                const char *build = json_string_value(json_object_get(e, "build"));
                json_t *cols = json_object_get(e, "columns");
                const char *c0 = json_string_value(json_array_get(cols, 0)) ?: "Metric";
                const char *c1 = json_string_value(json_array_get(cols, 1)) ?: "Value";

                fprintf(f, "### %s", json_string_value(json_object_get(e, "name")));
                if (tool && build)
                        fprintf(f, " (%s, build %s)", tool, build);
                else if (tool || build)
                        fprintf(f, " (%s%s)", build ? "build " : "", tool ?: build);
                fprintf(f, "\n\n| %s | %s |\n|", c0, c1);
                for (size_t d = 0; d < strlen(c0) + 2; d++)
                        fputc('-', f);
                fputc('|', f);
                for (size_t d = 0; d < strlen(c1) + 2; d++)
                        fputc('-', f);
                fputs("|\n", f);
                json_array_foreach (json_object_get(e, "rows"), k, row) {
                        _cleanup_free_ char *name = rep_md(json_string_value(json_object_get(row, "name")));
                        struct mx_buf b = MX_BUF_INIT;
                        _cleanup_free_ char *val = NULL;
                        bool bold = json_is_true(json_object_get(row, "best"));

                        mx_buf_printf(&b, "%s%.2f", bold ? "**" : "",
                                      json_number_value(json_object_get(row, "value")));
                        if (json_is_number(json_object_get(row, "error")))
                                mx_buf_printf(&b, " ± %.2f",
                                              json_number_value(json_object_get(row, "error")));
                        if (json_is_string(json_object_get(row, "unit")))
                                mx_buf_printf(&b, " %s", json_string_value(json_object_get(row, "unit")));
                        if (bold)
                                mx_buf_puts(&b, "**");
                        val = mx_buf_steal(&b);
                        fprintf(f, "| %s | %s |\n", name, val);
                }
                if (json_is_string(json_object_get(e, "note")))
                        fprintf(f, "\nSource: %s (from the matrix file, not measured here).\n",
                                json_string_value(json_object_get(e, "note")));
                fputc('\n', f);
        }
}

static void run_logs(FILE *f, json_t *doc, struct rep_defs *defs)
{
        json_t *run;
        size_t i;

        fputs("## Detailed Run Logs\n\nEach run links to:\n"
              "1. Its full metadata in the report document (`mxmatrix export JOB`, `mxmatrix show rRUN`)\n"
              "2. Its server log (below, on the daemon's host)\n"
              "3. The feature's test log in `TEST_LOGS/` (`mxmatrix report test-log JOB`)\n\n"
              "| Run ID | Date | Config | tg32 | Notes |\n|--------|------|--------|------|-------|\n",
              f);
        json_array_foreach (rep_runs(doc), i, run) {
                json_t *a = rep_attempt(run);
                _cleanup_free_ char *date = rep_datetime(json_object_get(a, "finished_at")), *name = NULL,
                                    *tg = NULL, *notes = NULL, *mnotes = NULL, *mname = NULL;
                struct rep_failure fail;
                struct rep_num n;
                bool failed = rep_run_failure(run, &fail);

                rep_metric(run, "tg32_tps", &n);
                rep_defs_add(defs, "tg32_tps", &n);
                tg = rep_num_cell(&n);
                name = xstrdup(json_string_value(json_object_get(run, "config_key")));
                notes = failed ? xasprintf("%s (%s): %s; attempt %" JSON_INTEGER_FORMAT "; log %s",
                                           rep_result(run), fail.klass, fail.text,
                                           json_integer_value(json_object_get(a, "n")),
                                           strna(json_string_value(json_object_get(a, "log"))))
                               : xasprintf("%s; attempt %" JSON_INTEGER_FORMAT "; log %s", rep_result(run),
                                           json_integer_value(json_object_get(a, "n")),
                                           strna(json_string_value(json_object_get(a, "log"))));
                rep_failure_done(&fail);
                mnotes = rep_md(notes);
                mname = rep_md(name);
                fprintf(f, "| r%" JSON_INTEGER_FORMAT " | %s | %s | %s | %s |\n",
                        json_integer_value(json_object_get(run, "id")), date, mname, tg, mnotes);
        }
        rep_defs_refs(defs, f);
}

int report_benchmark_results(json_t *doc, FILE *f, char **reterr)
{
        json_t *job = rep_job(doc), *m = rep_matrix(doc), *base = rep_baseline_run(doc);
        _cleanup_free_ char *when = rep_datetime(json_object_get(job, "submitted_at"));
        _cleanup_free_ char *counts = rep_result_counts(doc); /* the words of show and follow */
        const char *name = json_string_value(json_object_get(m, "name"));
        struct rep_defs defs = {};

        (void)reterr;
        fprintf(f, "# %s Benchmark Results\n\nLive tracking of benchmark results across configurations.\n\n",
                name ?: "mxmatrix");
        fprintf(f,
                "Written by `mxmatrix report benchmark-results` from job %" JSON_INTEGER_FORMAT
                " (feature %s, strategy %s, submitted %s UTC, %zu runs: %s), matrix `%s`.\n",
                json_integer_value(json_object_get(job, "id")),
                json_string_value(json_object_get(job, "feature")) ?: "(pins only)",
                strna(json_string_value(json_object_get(job, "strategy"))), when,
                json_array_size(rep_runs(doc)), counts, strna(json_string_value(json_object_get(m, "path"))));
        rep_matrix_changed_note(f, doc);
        fputs("\n---\n\n", f);
        current_best(f, doc, base, &defs);
        fputs("\n---\n\n", f);
        baseline_section(f, doc, base, &defs);
        fputs("---\n\n", f);
        comparison(f, doc, &defs);
        spec_energy(f, doc);
        fputs("\n---\n\n", f);
        reference(f, doc);
        fputs("---\n\n", f);
        run_logs(f, doc, &defs);
        fprintf(f,
                "\n---\n\n## How to Run Benchmarks\n\n```bash\n"
                "# Queue the feature's runs with the benchmark level\n"
                "mxmatrix submit feature=%s levels=L1-L4\n\n"
                "# Follow them, then write this file\n"
                "mxmatrix follow JOB\nmxmatrix report benchmark-results JOB -o docs\n```\n",
                json_string_value(json_object_get(job, "feature")) ?: "X");
        rep_defs_print(&defs, f);
        rep_defs_done(&defs);
        return 0;
}
