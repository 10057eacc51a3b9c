/* SPDX-License-Identifier: MIT */
/*
 * The HTML report in a real browser: headless Chromium (Debian's chromium)
 * loads the page written from the report document tests/fixtures/report/doc.json
 * (as `mxmatrix report html --from` writes it), with a check script added to a
 * copy of it (the page itself has none). The script writes
 * what it found into the DOM, which --dump-dom prints: every chart drawn
 * (each mark has an area or a length as laid out), the numbers present, no
 * XML parser error; Chromium's console log (--enable-logging=stderr) must
 * hold no message from the page. Skips (77) without chromium.
 *
 * MX_REPORT_SCREENSHOT=FILE also writes a screenshot of the page; the demo
 * (tests/demo.sh) shoots docs/report-demo.png from its own sweep's page.
 */
#include "mxreport.h"
#include "report-html.h"
#include "test.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

static const char check_script[] =
        "<script>\n"
        "(function () {\n"
        "  var bad = [];\n"
        "  var charts = document.querySelectorAll('svg.chart');\n"
        "  if (charts.length !== 6) bad.push('charts: ' + charts.length);\n"
        "  if (document.querySelector('parsererror')) bad.push('parser error');\n"
        "  charts.forEach(function (c) {\n"
        "    var marks = c.querySelectorAll('.mark'), drawn = 0;\n"
        "    marks.forEach(function (m) {\n"
        "      var b = m.getBBox();\n"
        "      if (b.width > 0 || b.height > 0) drawn++;\n"
        "    });\n"
        "    if (drawn === 0 || drawn !== marks.length)\n"
        "      bad.push(c.id + ': ' + drawn + ' of ' + marks.length + ' marks drawn');\n"
        "    var r = c.getBoundingClientRect();\n"
        "    if (r.width < 300 || r.height < 100) bad.push(c.id + ': ' + r.width + 'x' + r.height);\n"
        "  });\n"
        "  var text = '';\n"
        "  document.querySelectorAll('section').forEach(function (s) { text += s.textContent + ' '; });\n"
        "  ['33.1', '29.3', '4808', 'Minimum 52', 'Target 58', 'Stretch 61', '1/1', 'r2 tg32 c=1',\n"
        "   'xfail: illegal-instruction'].forEach(function (t) {\n"
        "    if (text.indexOf(t) < 0) bad.push('missing ' + t);\n"
        "  });\n"
        "  if (document.querySelectorAll('tbody tr').length !== 3) bad.push('table rows');\n"
        "  var d = document.createElement('div');\n"
        "  d.id = 'mxcheck';\n"
        "  d.textContent = 'MXCHECK ' + (bad.length ? bad.join('; ') : 'ok') + ' charts=' + charts.length;\n"
        "  document.body.appendChild(d);\n"
        "})();\n"
        "</script>\n";

static const char *find_chromium(void)
{
        static const char *const names[] = {"chromium", "chromium-browser", "google-chrome"};
        static char path[4096];
        const char *env = getenv("PATH");

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *dirs = xstrdup(env ? env : "/usr/bin:/bin");
                char *save = NULL;

                for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                        snprintf(path, sizeof(path), "%s/%s", d, names[i]);
                        if (access(path, X_OK) == 0)
                                return path;
                }
        }
        return NULL;
}

/* Run chromium headless with extra arguments; stdout to out, stderr to err. Returns its exit status. */
static int chromium(const char *bin, const char *profile, const char *const *extra, const char *out,
                    const char *err)
{
        pid_t pid = fork();
        int status;

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                const char *argv[32] = {bin,
                                        "--headless",
                                        "--no-sandbox",
                                        "--disable-gpu",
                                        "--no-first-run",
                                        "--disable-extensions",
                                        "--enable-logging=stderr",
                                        "--v=0"};
                size_t n = 8;
                _cleanup_free_ char *prof = xasprintf("--user-data-dir=%s", profile);
                int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

                argv[n++] = prof;
                for (size_t i = 0; extra[i] && n < ELEMENTSOF(argv) - 1; i++)
                        argv[n++] = extra[i];
                if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
                        _exit(127);
                /* chromium wants a home and a runtime directory it can write */
                setenv("HOME", profile, 1);
                setenv("XDG_RUNTIME_DIR", profile, 1);
                execv(bin, (char **)argv);
                _exit(127);
        }
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(page_in_chromium)
{
        const char *bin = find_chromium(), *dir = test_tmpdir();
        _cleanup_free_ char *src = test_source_path("tests/fixtures/report/doc.json");
        _cleanup_free_ char *page = xasprintf("%s/report.html", dir),
                            *checked = xasprintf("%s/checked.html", dir);
        _cleanup_free_ char *url = NULL, *dom_path = xasprintf("%s/dom.txt", dir);
        _cleanup_free_ char *log = xasprintf("%s/chromium.log", dir),
                            *profile = xasprintf("%s/profile", dir);
        _cleanup_free_ char *html = NULL, *with = NULL, *dom = NULL, *errs = NULL, *err = NULL, *lerr = NULL;
        _cleanup_json_ json_t *doc = NULL;
        const char *shot = getenv("MX_REPORT_SCREENSHOT");
        FILE *f;
        char *body;
        int st;

        if (!bin)
                test_skip("no chromium (Debian: apt-get install chromium)");
        ASSERT_OK(report_doc_load(src, &doc, &lerr));
        f = fopen(page, "we");
        ASSERT_NOT_NULL(f);
        ASSERT_OK(report_html_write(doc, f, &err));
        ASSERT_EQ(fclose(f), 0);
        ASSERT_EQ(mkdir(profile, 0700), 0);
        /* the copy with the check script, just before </body> */
        html = test_read_file(page, NULL);
        body = strstr(html, "</body>");
        ASSERT_NOT_NULL(body);
        with = xasprintf("%.*s%s%s", (int)(body - html), html, check_script, body);
        test_write_file(checked, with);
        url = xasprintf("file://%s", checked);
        st = chromium(bin, profile,
                      (const char *const[]){"--virtual-time-budget=5000", "--dump-dom", url, NULL}, dom_path,
                      log);
        dom = test_read_file(dom_path, NULL);
        errs = test_read_file(log, NULL);
        if (st != 0 || !strstr(dom, "MXCHECK"))
                test_fail(__FILE__, __LINE__, "chromium exited %d; its log:\n%s\nDOM (start): %.500s", st,
                          errs, dom);
        ASSERT_CONTAINS(dom, "MXCHECK ok charts=6");
        /* The console: a script error or a page message would be logged as CONSOLE(...). */
        if (strstr(errs, "CONSOLE") || strstr(errs, "Uncaught"))
                test_fail(__FILE__, __LINE__, "the page logged to the console:\n%s", errs);
        if (shot) {
                _cleanup_free_ char *arg = xasprintf("--screenshot=%s", shot);
                _cleanup_free_ char *purl = xasprintf("file://%s", page);

                ASSERT_EQ(chromium(bin, profile,
                                   (const char *const[]){"--window-size=1150,2900", "--hide-scrollbars", arg,
                                                         purl, NULL},
                                   "/dev/null", log),
                          0);
        }
}
