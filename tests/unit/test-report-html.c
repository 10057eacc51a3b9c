/* SPDX-License-Identifier: MIT */
/*
 * The HTML report page (client/report-html.c) from a report document
 * (tests/fixtures/report/html-doc.json: six runs, kernel x graphs, a baseline, L4
 * results, memory series, a crash and a failure): every section and chart,
 * the numbers and the targets, the grid's cells, no network references.
 * test-report-chromium renders the same page in a browser.
 */
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
        _cleanup_free_ char *path = test_source_path("tests/fixtures/report/html-doc.json");
        json_error_t e;
        json_t *doc = json_load_file(path, 0, &e);

        if (!doc)
                test_fail(__FILE__, __LINE__, "%s: %s", path, e.text);
        return doc;
}

TEST(page_from_the_fixture)
{
        _cleanup_json_ json_t *doc = fixture();
        _cleanup_free_ char *page = render(doc), *again = render(doc);
        const char *cell;

        /* one page, nothing fetched: no script, no external reference */
        ASSERT_TRUE(startswith(page, "<!DOCTYPE html>"));
        ASSERT_FALSE(strstr(page, "<script"));
        ASSERT_FALSE(strstr(page, "src="));
        ASSERT_FALSE(strstr(page, "href="));
        ASSERT_FALSE(strstr(page, "url("));
        /* the sections and their charts */
        ASSERT_EQ(count(page, "<svg "), 6);
        ASSERT_CONTAINS(page, "<section id=\"tg32\"");
        ASSERT_CONTAINS(page, "<section id=\"pp2048\"");
        ASSERT_CONTAINS(page, "<section id=\"ttft\"");
        ASSERT_CONTAINS(page, "<section id=\"pareto\"");
        ASSERT_CONTAINS(page, "<section id=\"memory-over-time\"");
        ASSERT_CONTAINS(page, "<section id=\"pass-fail\"");
        /* tg32: five runs measured (triton with graphs on crashed first), baseline and the seed's targets */
        ASSERT_CONTAINS(page, "5 of 6 runs measured");
        ASSERT_CONTAINS(page, ">baseline 29.3</text>");
        ASSERT_CONTAINS(page, ">minimum 52</text>");
        ASSERT_CONTAINS(page, ">target 58</text>");
        ASSERT_CONTAINS(page, ">stretch 61</text>");
        ASSERT_CONTAINS(page, "<title>r3 graphs=on,kernel=cutlass: 53.4 tokens/s</title>");
        ASSERT_CONTAINS(page, "mark bar good");
        ASSERT_CONTAINS(page, "mark bar bad");
        ASSERT_CONTAINS(page, "mark bar baseline");
        /* TTFT: lower is better, so cutlass (faster prefill) is green there too */
        ASSERT_CONTAINS(page, "<title>r3 graphs=on,kernel=cutlass: 939 ms</title>");
        /* Pareto: 4 concurrencies of 5 measured runs; the frontier labelled by run and concurrency */
        ASSERT_CONTAINS(page, "(20 points)");
        ASSERT_EQ(count(page, "<circle class=\"mark pt"), 20);
        ASSERT_CONTAINS(page, ">r3 c=8</text>");
        ASSERT_CONTAINS(page, ">r3 c=1</text>");
        /* memory: one line per run, on the unified-memory axis label */
        ASSERT_EQ(count(page, "<polyline class=\"mark line"), 6);
        ASSERT_CONTAINS(page, "GiB used (system memory: unified GPU)");
        /* grid: kernel (3 values) as rows, graphs (2) as columns */
        ASSERT_EQ(count(page, "<rect class=\"mark cell"), 6);
        ASSERT_CONTAINS(page, "by kernel &#215; graphs");
        cell = strstr(page, "r5 graphs=on,kernel=triton: crashed");
        ASSERT_NOT_NULL(cell);
        ASSERT_EQ(count(page, "mark cell pass"), 4);
        ASSERT_EQ(count(page, "mark cell fail"), 2);
        /* the table: every run with its numbers */
        ASSERT_CONTAINS(page, "<td>r1 (baseline)</td><td>graphs=on,kernel=marlin</td><td>pass</td>"
                              "<td class=\"n\">29.3</td><td class=\"n\">1650</td>");
        ASSERT_CONTAINS(page, "<td>r5</td><td>graphs=on,kernel=triton</td><td>crashed</td>"
                              "<td class=\"n\"><span class=\"na\">-</span>");
        /* deterministic */
        ASSERT_STREQ(page, again);
}

TEST(targets_from_the_document_and_no_baseline)
{
        _cleanup_json_ json_t *doc = fixture();
        json_t *runs = json_object_get(doc, "runs");
        _cleanup_free_ char *page = NULL;

        json_object_set_new(doc, "targets", json_pack("[{s:s,s:s,s:f}]", "metric", "tg32", "label", "SGLang",
                                                      "value", 52.37));
        json_object_set_new(json_array_get(runs, 0), "reasons", json_array());
        page = render(doc);
        ASSERT_CONTAINS(page, ">SGLang 52.4</text>");
        ASSERT_FALSE(strstr(page, ">minimum 52</text>"));
        ASSERT_CONTAINS(page, "no baseline run in this report");
        ASSERT_FALSE(strstr(page, "mark bar good"));
}

TEST(escaped_and_empty)
{
        _cleanup_json_ json_t *doc = json_pack("{s:s,s:[{s:i,s:s,s:{s:s},s:s}]}", "title", "<b>&\"x\"</b>", "runs",
                                               "id", 1, "config_key", "k=<v>", "config", "k", "<v>", "result",
                                               "pass");
        _cleanup_json_ json_t *empty = json_pack("{s:[]}", "runs");
        _cleanup_json_ json_t *bad = json_pack("{s:i}", "runs", 3);
        _cleanup_free_ char *page = render(doc), *page2 = render(empty), *err = NULL;
        FILE *f = fopen("/dev/null", "w");

        ASSERT_CONTAINS(page, "<title>&lt;b&gt;&amp;&quot;x&quot;&lt;/b&gt;</title>");
        ASSERT_FALSE(strstr(page, "<v>"));
        ASSERT_CONTAINS(page, "k=&lt;v&gt;");
        ASSERT_CONTAINS(page, "not measured");
        ASSERT_CONTAINS(page2, ">no data</text>");
        ASSERT_CONTAINS(page2, "0 runs");
        ASSERT_ERR(report_html_write(bad, f, &err), EINVAL);
        ASSERT_CONTAINS(err, "no \"runs\" array");
        fclose(f);
}
