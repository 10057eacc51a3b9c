/* SPDX-License-Identifier: MIT */
/*
 * The report renderers (client/report-*.c) on a fixture document
 * (tests/fixtures/report/doc.json: three runs of the demo sweep, baseline,
 * the feature and a crash, with L3/L4 metrics and samples added): every
 * figure with its definition and sample count, the seed tables' values,
 * criteria evaluated, CSV and XML escaping, determinism, bad documents; the
 * Known Issues headed by the document's attribution (checked against what
 * matrix/analysis/attrib.c finds from the fixture's runs); and the matrix file's
 * reference section.
 */
#include "test.h"

#include "attrib.h"
#include "csv.h"
#include "lines.h"
#include "matrix.h"
#include "mxreport.h"
#include "report-internal.h"
#include "report-util.h"

#define FIXTURE MX_SOURCE_DIR "/tests/fixtures/report/doc.json"

static json_t *fixture(void)
{
        json_t *doc = NULL;
        _cleanup_free_ char *err = NULL;

        ASSERT_OK(report_doc_load(FIXTURE, &doc, &err));
        return doc;
}

typedef int (*render_fn)(json_t *doc, FILE *f, char **reterr);

static char *render(render_fn fn, json_t *doc)
{
        _cleanup_free_ char *err = NULL;
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        ASSERT_NOT_NULL(f);
        ASSERT_OK(fn(doc, f, &err));
        fclose(f);
        return buf;
}

static char *render_log(json_t *doc, const char *feature)
{
        _cleanup_free_ char *err = NULL;
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        ASSERT_NOT_NULL(f);
        ASSERT_OK(report_test_log(doc, feature, f, &err));
        fclose(f);
        return buf;
}

TEST(benchmark_results_figures)
{
        _cleanup_json_ json_t *doc = fixture();
        _cleanup_free_ char *md = render(report_benchmark_results, doc);

        /* Current Best: tg32 is best in the feature run, TTFT p50 (lower is better) in the baseline. */
        ASSERT_CONTAINS(md, "| tg32 (tok/s) | 29.26 (n=10) | 33.10 (n=10) | CUTLASS Grouped GEMM (r2) |");
        ASSERT_CONTAINS(md, "| TTFT p50 (ms) | 480 (n=20) | 480 (n=20) | Baseline (kernel=marlin) (r1) |");
        /* every figure's definition, from the L4 result document: once, as a footnote, shared by the metrics
         * with the same definition, and each table names the footnotes of its figures */
        ASSERT_CONTAINS(md, "\n## Definitions\n\n[^1]: `tg32_tps`, `tg128_tps`: TG-DEF (N - 1) / (last - first)\n");
        ASSERT_CONTAINS(md, "`ttft_p50_ms`, `ttft_p99_ms`: TTFT-DEF first text event - t0\n");
        ASSERT_NULL(strstr(strstr(md, "TG-DEF") + 1, "TG-DEF"));
        ASSERT_CONTAINS(md, "definitions: [^1] [^2] [^3]\n");
        ASSERT_CONTAINS(md, "GB = 10^9 bytes");
        /* the Baseline section's YAML blocks */
        ASSERT_CONTAINS(md, "### Environment\n```yaml\ndate: ");
        ASSERT_CONTAINS(md, "tensor_parallel_size: 1\n");
        ASSERT_CONTAINS(md, "enforce_eager: false  # CUDA graphs enabled\n");
        ASSERT_CONTAINS(md, "prompt_length: 2048  # tokens\noutput_lengths: [32, 128]\n");
        ASSERT_CONTAINS(md, "  tg32_tps: 29.26  # n=10\n");
        ASSERT_CONTAINS(md, "  gpu_memory_peak_gb: 72  # n=120\n");
        ASSERT_CONTAINS(md, "startup_time_s: 61.50  # n=1\n");
        ASSERT_CONTAINS(md, "expected_kernels:\n  - marlin_*\n");
        ASSERT_CONTAINS(md, "validation: PASS\n");
        /* Comparison Matrix: one row per configuration; the crash says so */
        ASSERT_CONTAINS(
                md,
                "| CUTLASS Grouped GEMM (r2, pass) | 33.10 (n=10) | 32 (n=10) | 4700 (n=20) | 500 (n=20) |");
        /* a run with no L4 figure is one line below the table, not a row of "not measured" */
        ASSERT_CONTAINS(md, "Not measured (no L4 figure: the run failed before it or ran no L4): + kernel=cutlass, "
                            "sinks=on (r8, xfail: illegal-instruction).");
        ASSERT_NULL(strstr(md, "(r8, xfail: illegal-instruction) | not measured |"));
        /* Reference from the matrix file, in the seed's form */
        ASSERT_CONTAINS(md, "### llama.cpp (llama-bench, build f5acfb2ff)\n\n| Test | Throughput (t/s) |\n");
        ASSERT_CONTAINS(md, "| tg32 | **57.85 ± 0.44** |");
        ASSERT_CONTAINS(md, "### SGLang\n\n| Metric | Value |\n|--------|-------|\n| Output throughput | "
                            "**52.37 tok/s** |");
        /* Detailed Run Logs: the crash's evidence, Markdown-escaped */
        ASSERT_CONTAINS(md, "| r8 |");
        ASSERT_CONTAINS(md, "comma \\| pipe");
}

TEST(benchmark_results_spread_and_sampling)
{
        _cleanup_json_ json_t *doc = fixture();
        json_t *l, *t;
        size_t i, k;
        _cleanup_free_ char *md = NULL, *old = NULL;

        /* a document from before L4 recorded its sampling says so, never guesses */
        old = render(report_benchmark_results, doc);
        ASSERT_CONTAINS(old, "temperature: \"<not recorded: the server's default>\"\n");
        /* r1's and r2's L4 with the sampling they sent, r2's tg32 with its spread */
        for (size_t r = 0; r < 2; r++) {
                json_t *run = json_array_get(json_object_get(doc, "runs"), r);

                json_array_foreach (json_object_get(json_array_get(json_object_get(run, "attempt_history"), 0),
                                                    "levels"),
                                    i, l) {
                        json_t *m = json_object_get(l, "metrics");

                        if (!streq_ptr(json_string_value(json_object_get(l, "level")), "L4"))
                                continue;
                        json_array_foreach (json_object_get(m, "tests"), k, t)
                                if (r == 1 && streq_ptr(json_string_value(json_object_get(t, "test")), "tg32"))
                                        json_object_set_new(json_object_get(t, "tps"), "std_sample",
                                                            json_real(0.42));
                        json_object_update_new(json_object_get(m, "config"),
                                               json_pack("{s:f,s:f,s:i}", "temperature", 1.0, "top_p", 1.0,
                                                         "seed", 42));
                }
        }
        md = render(report_benchmark_results, doc);
        ASSERT_CONTAINS(md, "| CUTLASS Grouped GEMM (r2, pass) | 33.10 ± 0.42 (n=10) |");
        ASSERT_CONTAINS(md, "| tg32 (tok/s) | 29.26 (n=10) | 33.10 ± 0.42 (n=10) |");
        /* seed 002's workload as sent */
        ASSERT_CONTAINS(md, "temperature: 1.0\ntop_p: 1.0\ntop_k: \"<not sent: the server's default>\"\nseed: 42\n");
}

/* The L4 rows of run r (0-based) of doc, for editing. */
static json_t *l4_rows(json_t *doc, size_t r)
{
        json_t *run = json_array_get(json_object_get(doc, "runs"), r), *l;
        size_t i;

        json_array_foreach (json_object_get(json_array_get(json_object_get(run, "attempt_history"), 0), "levels"), i,
                            l)
                if (streq_ptr(json_string_value(json_object_get(l, "level")), "L4"))
                        return json_object_get(json_object_get(l, "metrics"), "tests");
        return NULL;
}

/* The server's own figures beside ours in the Comparison Matrix; blank cells say why under the table. */
TEST(benchmark_results_server_timings)
{
        _cleanup_json_ json_t *doc = fixture();
        _cleanup_free_ char *md = NULL;
        json_t *t;
        size_t i;

        /* r1 from llama-server (timings in the stream), r2 from vLLM (none); r8 ran no L4 */
        json_array_foreach (l4_rows(doc, 0), i, t) {
                bool tg = streq_ptr(json_string_value(json_object_get(t, "kind")), "tg");

                json_object_set_new(t, tg ? "server_tg_tps" : "server_pp_tps",
                                    json_real(tg ? 30.5 + (double)i : 1500.25));
                json_object_set_new(t, "server_timings_requests", json_integer(10));
                json_object_set_new(t, "server_timings", json_string("llama-server's timings"));
        }
        json_array_foreach (l4_rows(doc, 1), i, t) {
                json_object_set_new(t, json_string_value(json_object_get(t, "kind"))[0] == 't' ? "server_tg_tps"
                                                                                                : "server_pp_tps",
                                    json_null());
                json_object_set_new(t, "server_timings", json_string("not reported by the server (vllm): none"));
        }
        md = render(report_benchmark_results, doc);
        ASSERT_CONTAINS(md, "| Config | tg32 | tg128 | pp2048 | TTFT p50 | TTFT p99 | Memory |\n");
        ASSERT_CONTAINS(md, "\n| Config | server tg32 t/s | server tg128 t/s | server pp2048 t/s |\n");
        ASSERT_CONTAINS(md, " | 31.50 (n=10) | 33.50 (n=10) | 1500.25 (n=10) |\n");
        ASSERT_CONTAINS(md, "(r2, pass) |");
        ASSERT_CONTAINS(md, " |  |  |  |\n");
        ASSERT_CONTAINS(md, "Blank server t/s: r2: not reported by the server (vllm): none.\n");
        ASSERT_NULL(strstr(md, "r8: not reported"));
}

/* A result from before the server's figures were kept: blank, and said so. */
TEST(benchmark_results_server_timings_old_document)
{
        _cleanup_json_ json_t *doc = fixture();
        _cleanup_free_ char *md = render(report_benchmark_results, doc);

        ASSERT_CONTAINS(md, "Blank server t/s: r1: not recorded (a result from before the server's figures were kept)");
}

TEST(test_log_and_criteria)
{
        _cleanup_json_ json_t *doc = fixture();
        _cleanup_free_ char *md = render_log(doc, NULL), *md2 = NULL, *name = NULL, *err = NULL;

        ASSERT_CONTAINS(md, "# Test Log: CUTLASS Grouped GEMM\n\nDate: ");
        ASSERT_CONTAINS(md, "Branch: (not recorded: ");
        ASSERT_CONTAINS(md, "| tg32 | 29.26 (n=10) | 33.10 (n=10) | +13.1% |");
        ASSERT_CONTAINS(md, "- Memory before: 70.10 GB\n- Memory after: 70.40 GB\n");
        ASSERT_CONTAINS(md, "| tg32_tps improves by >= 10% vs baseline | ≥10% | 13.12% (n=10) | PASS |");
        ASSERT_CONTAINS(md, "| ttft_p50_ms regresses by <= 3% vs baseline | ≤3% | 4.17% (n=20) | FAIL |");
        ASSERT_CONTAINS(md, "| memory_gb <= baseline + 2 GB | ≤+2GB | 1.50GB (n=120) | PASS |");
        ASSERT_CONTAINS(md, "**Overall**: FAIL\n");
        ASSERT_CONTAINS(md, "- [x] NEEDS FIXES");
        ASSERT_CONTAINS(
                md, "| + sinks=on (r8) | xfail | illegal-instruction: crash <&> \"quoted\", comma \\| pipe");
        /* the daemon's evaluation (helper H10's criteria object) is printed as given */
        json_object_set_new(doc, "criteria",
                            json_pack("{s:[{s:s,s:s,s:s,s:b}]}", "items", "criterion", "tg32 improved ≥10%",
                                      "target", "≥10%", "actual", "13.1%", "pass", true));
        md2 = render_log(doc, "cutlass-gemm");
        ASSERT_CONTAINS(md2, "| tg32 improved ≥10% | ≥10% | 13.1% | PASS |");
        ASSERT_CONTAINS(md2, "Evaluated by mxmatrixd");
        ASSERT_CONTAINS(md2, "**Overall**: PASS\n");
        /* r8's crash is a declared known issue (xfail): the job can merge */
        ASSERT_CONTAINS(md2, "- [x] READY TO MERGE\n");
        /* the same crash undeclared: seed 001, "if any test fails: keep on branch" */
        {
                json_t *r8 = json_array_get(json_object_get(doc, "runs"), 2);
                _cleanup_free_ char *md3 = NULL;

                json_object_set_new(r8, "result", json_string("fail"));
                md3 = render_log(doc, "cutlass-gemm");
                ASSERT_CONTAINS(md3, "**Overall**: FAIL (the feature run and its criteria pass, but 1 run of the job "
                                     "failed unexpectedly");
                ASSERT_CONTAINS(md3, "- [ ] READY TO MERGE\n- [x] NEEDS FIXES");
                ASSERT_CONTAINS(md3, "    - r8 (");
                json_object_set_new(r8, "result", json_string("xfail"));
        }
        ASSERT_OK(report_test_log_name(doc, NULL, &name, &err));
        ASSERT_TRUE(startswith(name, "TEST_LOGS/FEATURE_CUTLASS_GEMM_20") &&
                    strlen(name) == strlen("TEST_LOGS/FEATURE_CUTLASS_GEMM_2026-11-25.md"));
        free(name);
        name = NULL;
        ASSERT_ERR(report_test_log_name(doc, "no-such-feature", &name, &err), ENOENT);
        ASSERT_CONTAINS(err, "no-such-feature");
}

TEST(feature_matrix_known_issues)
{
        _cleanup_json_ json_t *doc = fixture();
        _cleanup_free_ char *md = render(report_feature_matrix, doc);

        ASSERT_CONTAINS(md, "| Feature | Status | Priority | Env Var | Default |");
        /* r8 crashed from sinks=on (the attribution's set): not charged to kernel=cutlass */
        ASSERT_CONTAINS(md, "| CUTLASS Grouped GEMM | ✅ Passing: 1 of 1 runs with it pass; 1 run with it failed "
                            "from other issues (sinks=on): not counted against it");
        /* every icon of the combinations table is in its legend */
        ASSERT_CONTAINS(md, "**Legend**: ✅ passed | ❌ failed as a declared known issue expects | 💥 failed "
                            "unexpectedly");
        ASSERT_CONTAINS(md, "| `VLLM_MXFP4_MOE_KERNEL=gemm` | `marlin` |");
        ASSERT_CONTAINS(md, "| ID | Kernel | Activation | Tile | Sinks | Spec | Graphs | Status |");
        ASSERT_CONTAINS(md, "| B1 (r1) | marlin |");
        /*
         * observed: headed by the smallest explaining set (r2 shows kernel=cutlass alone passes), its
         * support, what one run cannot separate, its class and evidence from the run; the declaration beside
         * it
         */
        ASSERT_CONTAINS(md, "`mxmatrix attribute 7`");
        ASSERT_CONTAINS(
                md, "### sinks=on → illegal-instruction\n\n- **Issue**: `illegal-instruction`: crash <&>");
        ASSERT_NULL(strstr(md, "### kernel=cutlass + sinks=on"));
        ASSERT_CONTAINS(md,
                        "- **Found from the runs**: 1 of 1 failing runs with `illegal-instruction` hold it, "
                        "0 passing hold it");
        ASSERT_CONTAINS(md, "- **Cannot separate**: every run with it also had `kernel=cutlass` (and the "
                            "baseline's `activation=bf16`, `tile=auto`, `spec=off`, `graphs=on`)");
        ASSERT_CONTAINS(md, "- **Observed in**: r8 (xfail, kernel=cutlass, sinks=on)\n");
        ASSERT_CONTAINS(md, "- **Declared**: when sinks=on, expect crash: Attention sinks");
        ASSERT_CONTAINS(md, "- **Workaround**: disable sinks\n");
        /* declared issues no run of this (shortened) job covers, with the entry's own workaround and status */
        {
                json_t *ki = json_array_get(json_object_get(json_object_get(doc, "matrix"), "known_incompatible"), 2);
                _cleanup_free_ char *md2 = NULL;

                json_object_set_new(ki, "workaround", json_string("Use M=128 tiles only"));
                json_object_set_new(ki, "status", json_string("Requires FlashInfer architectural change"));
                md2 = render(report_feature_matrix, doc);
                ASSERT_CONTAINS(md2, "### tile=64x128 (declared)\n\n- **Issue**: M=64 tiles");
                ASSERT_CONTAINS(md2, "- **Workaround**: Use M=128 tiles only\n- **Status**: Requires FlashInfer "
                                     "architectural change (not tested in this job: no run matches it)\n");
        }
        ASSERT_CONTAINS(md, "(declared)\n\n- **Issue**: M=64 tiles");
        ASSERT_CONTAINS(md, "Not tested in this job");
}

/* The attribution of the document's runs as the daemon computes it (daemon/control/attribute.c, matrix/analysis/attrib.h). */
static json_t *attribution_of(json_t *doc)
{
        _cleanup_(mx_attrib_freep) struct mx_attrib *a = mx_attrib_new();
        _cleanup_(mx_attrib_result_freep) struct mx_attrib_result *res = NULL;
        _cleanup_free_ char *err = NULL;
        json_t *run, *at, *ax, *v;
        size_t i, k;

        json_array_foreach (json_object_get(json_object_get(doc, "matrix"), "axes"), i, ax) {
                _cleanup_strv_free_ char **names = NULL;

                json_array_foreach (json_object_get(ax, "values"), k, v)
                        strv_push(&names, json_string_value(json_object_get(v, "name")));
                mx_attrib_axis_values(a, json_string_value(json_object_get(ax, "name")), names);
        }
        json_array_foreach (json_object_get(doc, "runs"), i, run) {
                _cleanup_json_ json_t *results = json_array();

                json_array_foreach (json_object_get(run, "attempt_history"), k, at) {
                        json_t *r = mx_attrib_attempt_result(
                                json_string_value(json_object_get(at, "outcome")),
                                json_string_value(json_object_get(at, "crash_class")),
                                json_object_get(at, "levels"));

                        if (r)
                                json_array_append_new(results, r);
                }
                ASSERT_OK(mx_attrib_add_run(a, json_integer_value(json_object_get(run, "id")),
                                            json_object_get(run, "config"), results, &err));
        }
        ASSERT_OK(mx_attrib_analyse(a, 3, &res, &err));
        return mx_attrib_result_to_json(a, res);
}

TEST(feature_matrix_attribution)
{
        _cleanup_json_ json_t *doc = fixture(), *mine = attribution_of(doc), *given = NULL;
        json_t *r8 = json_array_get(json_object_get(doc, "runs"), 2);
        _cleanup_free_ char *md = NULL, *old = NULL, *broken = NULL;

        /* the fixture's attribution is what the code finds from its runs */
        given = json_deep_copy(json_object_get(doc, "attribution"));
        json_object_del(given, "known_incompatible");
        ASSERT_TRUE(json_equal(given, mine));

        /* r8 with 64x128 tiles as well: two sets hold in the same failing run and no passing one (a tie) */
        json_object_set_new(json_object_get(r8, "config"), "tile", json_string("64x128"));
        json_object_set_new(doc, "attribution", attribution_of(doc));
        md = render(report_feature_matrix, doc);
        ASSERT_CONTAINS(md, "### sinks=on or tile=64x128 → illegal-instruction\n");
        /* the run was marked with the sinks declaration only; both tied sets' declarations are named, each
         * with its own workaround (the reason's clause, where the entry has no workaround key) */
        ASSERT_CONTAINS(md, "- **Declared**: when tile=64x128, expect fail: M=64 tiles");
        ASSERT_CONTAINS(md, "- **Workaround**: disable sinks (when sinks=on)\n");
        ASSERT_CONTAINS(md,
                        "- **Cannot separate**: `sinks=on` and `tile=64x128` hold in the same failing runs: "
                        "any of them may be the cause (`mxmatrix submit --confirm 7`");
        ASSERT_CONTAINS(md, "- **Cannot separate**: every run with it also had `kernel=cutlass` (and the "
                            "baseline's `activation=bf16`, `spec=off`, `graphs=on`)");
        /* r2 passes with kernel=cutlass alone: no heading says it takes part */
        ASSERT_NULL(strstr(md, "### kernel=cutlass"));

        /* a document exported without an attribution keeps the baseline-difference heading */
        json_object_del(doc, "attribution");
        json_object_set_new(json_object_get(r8, "config"), "tile", json_string("auto"));
        old = render(report_feature_matrix, doc);
        ASSERT_CONTAINS(old,
                        "### kernel=cutlass + sinks=on\n\n- **Issue**: `illegal-instruction`: crash <&>");
        ASSERT_CONTAINS(old, "- **Workaround**: disable sinks\n");
        /* one the daemon could not attribute says why */
        json_object_set_new(doc, "attribution", json_pack("{s:s}", "error", "job 7: too many runs"));
        broken = render(report_feature_matrix, doc);
        ASSERT_CONTAINS(broken, "no attribution (job 7: too many runs)");
        ASSERT_CONTAINS(broken, "### kernel=cutlass + sinks=on\n");
}

TEST(csv_rows)
{
        _cleanup_json_ json_t *doc = fixture();
        _cleanup_free_ char *csv = render(report_csv, doc);
        _cleanup_(mx_csv_freep) struct mx_csv *c = mx_csv_new(NULL);
        _cleanup_(mx_lines_freep) struct mx_lines *l = mx_lines_new_buffer(csv, strlen(csv), 1 << 20, 0);
        _cleanup_free_ char *err = NULL;
        const char *line;
        size_t len;
        unsigned records = 0, tg32 = 0, r8_l1 = 0;

        while (mx_lines_next(l, &line, &len) > 0) {
                const struct mx_csv_record *rec;
                int r = mx_csv_feed_line(c, mx_lines_number(l), line, len, &err);

                ASSERT_LE(0, r);
                if (r == 0)
                        continue;
                rec = mx_csv_record(c);
                ASSERT_EQ(rec->n_fields, (size_t)12);
                records++;
                if (streq(rec->fields[8], "results.throughput.tg32_tps") && streq(rec->fields[1], "r2")) {
                        ASSERT_STREQ(rec->fields[9], "33.1");
                        ASSERT_STREQ(rec->fields[10], "10");
                        ASSERT_TRUE(startswith(rec->fields[11], "TG-DEF"));
                        tg32++;
                }
                if (streq(rec->fields[1], "r8") && streq(rec->fields[6], "L1.5"))
                        r8_l1++; /* a skipped level without metrics still has its row */
                ASSERT_STREQ(rec->fields[0], records == 1 ? "job" : "7");
        }
        ASSERT_EQ(tg32, 1u);
        ASSERT_EQ(r8_l1, 1u);
        ASSERT_LT(40u, records);
}

TEST(junit_escaped_and_valid)
{
        _cleanup_json_ json_t *doc = fixture();
        _cleanup_free_ char *xml = render(report_junit, doc), *path = NULL, *cmd = NULL;
        FILE *f;

        ASSERT_CONTAINS(xml, "crash &lt;&amp;&gt; &quot;quoted&quot;, comma | pipe");
        ASSERT_NULL(strstr(xml, "<&>"));
        /* 3 runs: L1, L1.5, L3, L4 for two, L1, L1.5 for the crash */
        ASSERT_CONTAINS(xml, "tests=\"10\" failures=\"0\" errors=\"0\" skipped=\"2\"");
        ASSERT_CONTAINS(xml, "<skipped message=\"expected failure (known incompatible): Attention sinks");
        if (system("command -v xmllint >/dev/null 2>&1") != 0) {
                fprintf(stderr, "xmllint not installed: well-formedness not checked\n");
                return;
        }
        path = xasprintf("%s/test-report-%d.xml", getenv("TMPDIR") ?: "/tmp", (int)getpid());
        f = fopen(path, "we");
        ASSERT_NOT_NULL(f);
        fputs(xml, f);
        fclose(f);
        cmd = xasprintf("xmllint --noout '%s'", path);
        ASSERT_EQ(system(cmd), 0);
        unlink(path);
}

TEST(deterministic)
{
        _cleanup_json_ json_t *doc = fixture(), *again = NULL;
        _cleanup_free_ char *text = report_doc_dump(doc), *err = NULL, *path = NULL;
        render_fn fns[] = {report_benchmark_results, report_feature_matrix, report_json, report_csv,
                           report_junit};
        FILE *f;

        /* the same bytes twice, and from the document written and read back (export, report --from) */
        path = xasprintf("%s/test-report-%d.json", getenv("TMPDIR") ?: "/tmp", (int)getpid());
        f = fopen(path, "we");
        ASSERT_NOT_NULL(f);
        fputs(text, f);
        fclose(f);
        ASSERT_OK(report_doc_load(path, &again, &err));
        unlink(path);
        for (size_t i = 0; i < ELEMENTSOF(fns); i++) {
                _cleanup_free_ char *a = render(fns[i], doc), *b = render(fns[i], doc), *c = NULL;

                setenv("TZ", "Pacific/Auckland", 1);
                c = render(fns[i], again);
                unsetenv("TZ");
                ASSERT_STREQ(a, b);
                ASSERT_STREQ(a, c);
        }
}

TEST(bad_documents)
{
        _cleanup_json_ json_t *doc = fixture();
        _cleanup_free_ char *err = NULL;

        json_object_set_new(doc, "report", json_integer(2));
        ASSERT_ERR(report_doc_check(doc, &err), EINVAL);
        ASSERT_CONTAINS(err, "key 'report'");
        free(err);
        err = NULL;
        json_object_set_new(doc, "report", json_integer(1));
        json_object_del(json_array_get(json_object_get(doc, "runs"), 1), "config");
        ASSERT_ERR(report_doc_check(doc, &err), EINVAL);
        ASSERT_CONTAINS(err, "runs[1]");
        free(err);
        err = NULL;
        json_object_set_new(doc, "attribution", json_string("sinks=on"));
        ASSERT_ERR(report_doc_check(doc, &err), EINVAL);
        ASSERT_CONTAINS(err, "key 'attribution'");
        free(err);
        err = NULL;
        ASSERT_ERR(report_doc_load("/nonexistent/doc.json", &doc, &err), ENOENT);
}

TEST(matrix_reference_section)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        _cleanup_json_ json_t *root = json_load_file(MX_SOURCE_DIR "/matrix/mxfp4-gb10.json", 0, NULL);
        _cleanup_free_ char *err = NULL, *text = NULL;
        json_t *row;

        ASSERT_NOT_NULL(root);
        ASSERT_OK(mx_matrix_load_file(MX_SOURCE_DIR "/matrix/mxfp4-gb10.json", &m, &err));
        ASSERT_NOT_NULL(m->reference);
        m = mx_matrix_free(m);
        /* a reference row may only name a metric of the criteria's vocabulary */
        row = json_array_get(
                json_object_get(
                        json_array_get(json_object_get(json_object_get(root, "reference"), "engines"), 0),
                        "rows"),
                0);
        json_object_set_new(row, "metric", json_string("tg33_tps"));
        text = json_dumps(root, JSON_INDENT(2));
        ASSERT_ERR(mx_matrix_load_string("ref.json", text, strlen(text), &m, &err), EINVAL);
        ASSERT_CONTAINS(err, "unknown metric 'tg33_tps'");
        ASSERT_CONTAINS(err, "ref.json:");
        free(err);
        err = NULL;
        free(text);
        json_object_set_new(row, "metric", json_string("tg32_tps"));
        json_object_set_new(row, "value", json_string("fast"));
        text = json_dumps(root, JSON_INDENT(2));
        ASSERT_ERR(mx_matrix_load_string("ref.json", text, strlen(text), &m, &err), EINVAL);
        ASSERT_CONTAINS(err, "value");
}

/* Seed 000's feature document (report-porting.c) on the fixture: filled where the runs answer, the template's
 * prompts where only people can. */
TEST(porting_document)
{
        _cleanup_json_ json_t *doc = fixture();
        _cleanup_free_ char *err = NULL, *name = NULL, *md = NULL;
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        ASSERT_NOT_NULL(f);
        ASSERT_OK(report_porting(doc, NULL, f, &err));
        fclose(f);
        md = buf;
        ASSERT_CONTAINS(md, "# Feature: CUTLASS Grouped GEMM\n\n**Status**: In Progress\n**Priority**: P1\n");
        ASSERT_CONTAINS(md, "> \"This should improve tg32 by at least 10% because CUTLASS grouped GEMM is faster");
        /* the seed's criteria table: baseline (r1), target (the feature's criterion), actual (r2), pass */
        ASSERT_CONTAINS(md, "| Metric | Baseline | Target | Actual | Pass? |\n");
        ASSERT_CONTAINS(md, "| tg32 (tok/s) | 29.26 (n=10) | tg32_tps improves by >= 10% vs baseline | "
                            "33.10 (n=10) | PASS |\n");
        ASSERT_CONTAINS(md, "| TTFT p50 (ms) | 480 (n=20) | ttft_p50_ms regresses by <= 3% vs baseline | "
                            "500 (n=20) | FAIL |\n");
        ASSERT_CONTAINS(md, "| pp2048 (tok/s) | 4808 (n=20) | - | 4700 (n=20) | - |\n");
        /* test results per level: L2 and L5 did not run in the fixture job, L1 passed */
        ASSERT_CONTAINS(md, "### Level 1: Smoke Test\n- [x] Server starts without crash\n");
        ASSERT_CONTAINS(md, "### Level 2: Correctness\n- [ ] Output matches reference");
        ASSERT_CONTAINS(md, "- **Result**: NOT RUN\n");
        ASSERT_CONTAINS(md, "- [ ] Long context: not measured\n");
        ASSERT_CONTAINS(md, "1 xfail; 0 unexpected)");
        /* the evaluation and its overall verdict */
        ASSERT_CONTAINS(md, "## Success Criteria Evaluation\n");
        ASSERT_CONTAINS(md, "**Overall**: FAIL\n");
        ASSERT_CONTAINS(md, "tg32_tps: 33.10\n");
        /* human sections keep the template's prompts */
        ASSERT_CONTAINS(md, "## REQUIRED: Areas for Improvement\n");
        ASSERT_CONTAINS(md, "1. **<Improvement 1>**: Description\n");
        ASSERT_CONTAINS(md, "| `path/to/file.py` | Description |\n");
        ASSERT_CONTAINS(md, "git checkout mxfp4_v2_baseline\n");
        ASSERT_OK(report_porting_name(doc, NULL, &name, &err));
        ASSERT_STREQ(name, "porting/FEATURE_CUTLASS_GEMM.md");
        ASSERT_NOT_NULL(report_kind_find("porting"));
        {
                _cleanup_free_ char *e2 = NULL;
                FILE *g = open_memstream(&buf, &len);

                ASSERT_ERR(report_porting(doc, "no-such-feature", g, &e2), ENOENT);
                fclose(g);
                free(buf);
                ASSERT_CONTAINS(e2, "'no-such-feature' is not a feature");
        }
}

/* A feature's status word as the matrix reads it: "merged" is completed (seed 003), not "Not Started". */
TEST(feature_status_merged_is_completed)
{
        ASSERT_EQ(rep_feature_status("merged"), MX_FEATURE_COMPLETED);
        ASSERT_EQ(rep_feature_status("completed"), MX_FEATURE_COMPLETED);
        ASSERT_EQ(rep_feature_status("in-progress"), MX_FEATURE_IN_PROGRESS);
        ASSERT_EQ(rep_feature_status("no-such-status"), MX_FEATURE_NOT_STARTED);
        ASSERT_EQ(rep_feature_status(NULL), MX_FEATURE_NOT_STARTED);
}

/* L5's confirmation starts as the reports and show print them: per run, the reference's job when another. */
TEST(l5_confirmation_text)
{
        _cleanup_json_ json_t *none = json_pack("{s:s,s:{s:b}}", "level", "L5", "metrics", "regression", 0);
        _cleanup_json_ json_t *other_job = json_loads(
                "{\"level\": \"L5\", \"metrics\": {\"confirmation\": {\"rounds\": 2, \"budget\": 3, "
                "\"starts\": [{\"side\": \"current\", \"run\": 12, \"job\": 5, \"attempt\": 40},"
                " {\"side\": \"current\", \"run\": 12, \"job\": 5, \"attempt\": 42},"
                " {\"side\": \"reference\", \"run\": 7, \"job\": 3, \"attempt\": 41},"
                " {\"side\": \"reference\", \"run\": 7, \"job\": 3, \"attempt\": 43}]}}}",
                0, NULL);
        _cleanup_json_ json_t *same_job = json_loads(
                "{\"metrics\": {\"confirmation\": {\"rounds\": 1, \"budget\": 2, "
                "\"starts\": [{\"side\": \"current\", \"run\": 12, \"job\": 5, \"attempt\": 40},"
                " {\"side\": \"reference\", \"run\": 11, \"job\": 5, \"attempt\": 41}]}}}",
                0, NULL);
        _cleanup_json_ json_t *old = json_loads(
                "{\"metrics\": {\"confirmation\": {\"rounds\": 1, \"budget\": 2, "
                "\"current_attempts\": [40], \"reference_attempts\": [41]}}}",
                0, NULL);
        _cleanup_free_ char *a = report_l5_confirmation_text(other_job), *b = report_l5_confirmation_text(same_job),
                            *c = report_l5_confirmation_text(old);

        ASSERT_NULL(report_l5_confirmation_text(none));
        ASSERT_NULL(report_l5_confirmation_text(NULL));
        ASSERT_STREQ(a, "4 extra server starts in 2 confirmation rounds (of at most 3): r12 (this run) 2, "
                        "r7 (the reference, job 3) 2");
        ASSERT_STREQ(b, "2 extra server starts in 1 confirmation round (of at most 2): r12 (this run) 1, "
                        "r11 (the reference) 1");
        ASSERT_STREQ(c, "2 extra server starts in 1 confirmation round (of at most 2): this run 1, the reference 1");
}
