/* SPDX-License-Identifier: MIT */
/*
 * The HTML report page (report/report-html.c) from the report document
 * (tests/fixtures/report/doc.json, the fixture of test-report: three runs of
 * the demo sweep, the baseline, the feature with L4 results and memory series,
 * and a crash): every section and chart, the numbers and the matrix's targets,
 * the grid's cells, the attempt a result comes from, no network references,
 * the same bytes for the document read back. test-report-chromium renders the
 * same page in a browser.
 */
#include "mxreport.h"
#include "report-html.h"
#include "test.h"

static size_t count(const char *hay, const char *needle)
{
        size_t n = 0;

        for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
                n++;
        return n;
}

static char *render(json_t *doc)
{
        char *buf = NULL, *err = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        ASSERT_NOT_NULL(f);
        ASSERT_OK(report_html_write(doc, f, &err));
        ASSERT_EQ(fclose(f), 0);
        return buf;
}

static json_t *fixture(void)
{
        _cleanup_free_ char *path = test_source_path("tests/fixtures/report/doc.json"), *err = NULL;
        json_t *doc = NULL;

        ASSERT_OK(report_doc_load(path, &doc, &err));
        return doc;
}

static json_t *run_of(json_t *doc, json_int_t id)
{
        json_t *r;
        size_t i;

        json_array_foreach (json_object_get(doc, "runs"), i, r)
                if (json_integer_value(json_object_get(r, "id")) == id)
                        return r;
        test_fail(__FILE__, __LINE__, "no run %" JSON_INTEGER_FORMAT " in the fixture", id);
        return NULL;
}

TEST(page_from_the_report_document)
{
        _cleanup_json_ json_t *doc = fixture();
        _cleanup_free_ char *page = render(doc), *again = render(doc);

        /* one page, nothing fetched: no script, no external reference */
        ASSERT_TRUE(startswith(page, "<!DOCTYPE html>"));
        ASSERT_FALSE(strstr(page, "<script"));
        ASSERT_FALSE(strstr(page, "src="));
        ASSERT_FALSE(strstr(page, "href="));
        ASSERT_FALSE(strstr(page, "url("));
        ASSERT_CONTAINS(page, "<title>mxmatrix report: job 7, feature cutlass</title>");
        /* the document's own time, not the clock's */
        ASSERT_CONTAINS(page, "<span>data as of 2026-11-25 05:11:03 UTC</span>");
        ASSERT_CONTAINS(page, "<span>baseline: r1 activation=bf16,graphs=on,kernel=marlin,");
        /* the sections and their charts */
        ASSERT_EQ(count(page, "<svg "), 6);
        ASSERT_CONTAINS(page, "<section id=\"tg32\"");
        ASSERT_CONTAINS(page, "<section id=\"pp2048\"");
        ASSERT_CONTAINS(page, "<section id=\"ttft\"");
        ASSERT_CONTAINS(page, "<section id=\"pareto\"");
        ASSERT_CONTAINS(page, "<section id=\"memory-over-time\"");
        ASSERT_CONTAINS(page, "<section id=\"pass-fail\"");
        /* tg32 from L4's results: the crashed run is not measured; the matrix's reference targets */
        ASSERT_CONTAINS(page, "2 of 3 runs measured");
        ASSERT_CONTAINS(page, ">baseline 29.3</text>");
        ASSERT_CONTAINS(page, ">Minimum 52</text>");
        ASSERT_CONTAINS(page, ">Target 58</text>");
        ASSERT_CONTAINS(page, ">Stretch 61</text>");
        ASSERT_CONTAINS(page, "Targets: Minimum tg32_tps &#8805; 52, Target tg32_tps &#8805; 58");
        /* bars named by what sets a run apart from the baseline */
        ASSERT_CONTAINS(page, "<title>r2 kernel=cutlass: 33.1 tokens/s</title>");
        ASSERT_CONTAINS(page, "<title>r2 kernel=cutlass: 4700 tokens/s</title>");
        ASSERT_CONTAINS(page, "<title>r2 kernel=cutlass: 500 ms</title>");
        /* faster decode is green; slower prefill and a longer TTFT (lower is better) red */
        ASSERT_EQ(count(page, "mark bar good"), 1);
        ASSERT_EQ(count(page, "mark bar bad"), 2);
        ASSERT_EQ(count(page, "mark bar baseline"), 3);
        /* Pareto: the tg32 and tg128 rows of two runs, the frontier labelled by run, length and concurrency
         */
        ASSERT_CONTAINS(page, "4 points)");
        ASSERT_EQ(count(page, "<circle class=\"mark pt"), 4);
        ASSERT_CONTAINS(page, ">r2 tg32 c=1</text>");
        /* memory: the sampler's "run" series of the two runs that have one (GPU memory, not unified) */
        ASSERT_EQ(count(page, "<polyline class=\"mark line"), 2);
        ASSERT_CONTAINS(page, "GB used (GPU)");
        ASSERT_CONTAINS(page, "2 runs with samples");
        /* grid: kernel x sinks; the expected crash is an xfail, grey, never a pass; marlin with sinks on never ran */
        ASSERT_CONTAINS(page, "by kernel &#215; sinks");
        ASSERT_EQ(count(page, "<rect class=\"mark cell"), 4);
        ASSERT_EQ(count(page, "mark cell pass"), 2);
        ASSERT_EQ(count(page, "mark cell xfail"), 1);
        ASSERT_CONTAINS(page, ">0/1, 1 xfail</text>");
        ASSERT_EQ(count(page, "mark cell none"), 1);
        ASSERT_CONTAINS(page, "r8 kernel=cutlass, sinks=on: xfail");
        /* the table: every run with its numbers, the crash with its class; peak memory in GB (10^9 bytes) */
        ASSERT_CONTAINS(
                page, "<td>r1 (baseline)</td><td>activation=bf16,graphs=on,kernel=marlin,sinks=off,spec=off,"
                      "tile=auto</td><td>pass</td><td class=\"n\">29.3</td><td class=\"n\">4808</td>"
                      "<td class=\"n\">480</td><td class=\"n\">72</td>"); /* 67.1 GiB = 72.0 GB */
        ASSERT_CONTAINS(page,
                        "<td>xfail: illegal-instruction</td><td class=\"n\"><span class=\"na\">-</span>");
        /* deterministic, and the same for the document as export writes and report --from reads it */
        ASSERT_STREQ(page, again);
        {
                _cleanup_free_ char *text = report_doc_dump(doc),
                                    *path = xasprintf("%s/doc.json", test_tmpdir());
                _cleanup_free_ char *err = NULL, *back_page = NULL;
                _cleanup_json_ json_t *back = NULL;

                test_write_file(path, text);
                ASSERT_OK(report_doc_load(path, &back, &err));
                back_page = render(back);
                ASSERT_STREQ(page, back_page);
        }
}

TEST(a_kind_of_report)
{
        const struct report_kind *k = report_kind_find("html");

        ASSERT_NOT_NULL(k);
        ASSERT_STREQ(k->file, "report.html");
        ASSERT_TRUE(k->render == report_html_write);
}

TEST(figures_from_the_result_attempt)
{
        _cleanup_json_ json_t *doc = fixture();
        json_t *r2 = run_of(doc, 2), *hist = json_object_get(r2, "attempt_history");
        _cleanup_free_ char *latest = NULL, *chosen = NULL;

        /* a later attempt that measured nothing: without result_attempt the latest counts */
        json_array_append_new(hist, json_pack("{s:i,s:s,s:[]}", "n", 2, "outcome", "infra-error", "levels"));
        latest = render(doc);
        ASSERT_CONTAINS(latest, "1 of 3 runs measured");
        ASSERT_FALSE(strstr(latest, "33.1 tokens/s"));
        /* the result came from attempt 1: its figures are the run's */
        json_object_set_new(r2, "result_attempt", json_integer(1));
        chosen = render(doc);
        ASSERT_CONTAINS(chosen, "2 of 3 runs measured");
        ASSERT_CONTAINS(chosen, "<title>r2 kernel=cutlass: 33.1 tokens/s</title>");
}

TEST(a_sweep_without_l4)
{
        _cleanup_json_ json_t *doc = fixture();
        _cleanup_free_ char *page = NULL;
        json_t *r;
        size_t i;

        /* the demo's sweep runs L1-L3: no bench document anywhere */
        json_array_foreach (json_object_get(doc, "runs"), i, r) {
                json_t *levels =
                        json_object_get(json_array_get(json_object_get(r, "attempt_history"), 0), "levels");

                for (size_t k = json_array_size(levels); k-- > 0;)
                        if (streq_ptr(json_string_value(json_object_get(json_array_get(levels, k), "level")),
                                      "L4"))
                                json_array_remove(levels, k);
        }
        page = render(doc);
        ASSERT_CONTAINS(page,
                        "Not measured: no run of this report has an L4 (benchmark) level (the job ran L1, "
                        "L1.5), so the charts of tg32");
        /* the grid and memory charts only, grid first */
        ASSERT_EQ(count(page, "<svg "), 2);
        ASSERT_FALSE(strstr(page, "<section id=\"tg32\""));
        ASSERT_TRUE(strstr(page, "<section id=\"pass-fail\"") <
                    strstr(page, "<section id=\"memory-over-time\""));
        ASSERT_EQ(count(page, "<polyline class=\"mark line"), 2);
}

TEST(targets_and_no_baseline)
{
        _cleanup_json_ json_t *doc = fixture();
        json_t *matrix = json_object_get(doc, "matrix");
        _cleanup_free_ char *own = NULL, *seed = NULL;

        /* the document's own targets first */
        json_object_set_new(
                doc, "targets",
                json_pack("[{s:s,s:s,s:f}]", "metric", "tg32", "label", "SGLang", "value", 52.37));
        own = render(doc);
        ASSERT_CONTAINS(own, ">SGLang 52.4</text>");
        ASSERT_FALSE(strstr(own, ">Minimum 52</text>"));
        /* neither the document's nor the matrix's: seed 001's; and no run is the baseline */
        json_object_del(doc, "targets");
        json_object_del(json_object_get(matrix, "reference"), "targets");
        json_object_set_new(matrix, "baseline", json_pack("{s:s}", "kernel", "none-such"));
        json_object_set_new(run_of(doc, 1), "reasons", json_array());
        seed = render(doc);
        ASSERT_CONTAINS(seed, ">minimum 52</text>");
        ASSERT_CONTAINS(seed, ">target 58</text>");
        ASSERT_CONTAINS(seed, ">stretch 61</text>");
        ASSERT_CONTAINS(seed, "no baseline run in this report");
        ASSERT_FALSE(strstr(seed, "mark bar good"));
        ASSERT_FALSE(strstr(seed, "mark bar baseline"));
}

TEST(escaped_and_empty)
{
        _cleanup_json_ json_t *doc = fixture(), *empty = fixture(), *bad = fixture();
        json_t *r1 = run_of(doc, 1);
        _cleanup_free_ char *page = NULL, *page2 = NULL, *err = NULL;
        FILE *f = fopen("/dev/null", "w");

        json_object_set_new(doc, "title", json_string("<b>&\"x\"</b>"));
        json_object_set_new(r1, "config_key", json_string("k=<v>"));
        json_object_set_new(json_object_get(r1, "config"), "kernel", json_string("<v>"));
        page = render(doc);
        ASSERT_CONTAINS(page, "<title>&lt;b&gt;&amp;&quot;x&quot;&lt;/b&gt;</title>");
        ASSERT_FALSE(strstr(page, "<v>"));
        ASSERT_CONTAINS(page, "k=&lt;v&gt;");
        ASSERT_CONTAINS(page, ">&lt;v&gt;</text>"); /* the grid's row */
        json_object_set_new(empty, "runs", json_array());
        page2 = render(empty);
        ASSERT_CONTAINS(page2, ">no data</text>");
        ASSERT_CONTAINS(page2, "0 runs");
        json_object_set_new(bad, "runs", json_integer(3));
        ASSERT_NOT_NULL(f);
        ASSERT_ERR(report_html_write(bad, f, &err), EINVAL);
        ASSERT_CONTAINS(err, "no \"runs\" array");
        fclose(f);
}
