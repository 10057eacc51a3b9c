/* SPDX-License-Identifier: MIT */
/*
 * The decode-profile analysis of a job's runs (analysis.h): the files are
 * read here, the judging is matrix/analysis/dprof.c's.
 */
#include "analysis.h"

#include "daemon.h"
#include "dprof.h"
#include "jobruns.h"
#include "kcat.h"
#include "placeholder.h"
#include "profreport.h"
#include "queue.h"

#include <inttypes.h>
#include <libgen.h>

/* The attempt's run directory: where its server log is, else the daemon's layout. */
static char *attempt_dir(struct mx_daemon *d, int64_t run, int attempt, int *ret_n)
{
        _cleanup_free_ char *log = NULL, *outcome = NULL;

        if (queue_attempt_log_path(d->db, run, attempt, &log, ret_n, &outcome) >= 0 && log && log[0] == '/')
                return xstrdup(dirname(log));
        return xasprintf("%s/runs/%" PRId64 "/%d",
                         d->cfg.executor == MX_EXECUTOR_SLURM && d->cfg.slurm.shared_dir
                                 ? d->cfg.slurm.shared_dir
                                 : d->cfg.state_dir,
                         run, *ret_n);
}

/* The report file the profile names, as L1.5 finds it (l15-kgate.c): placeholders, relative to the run
 * directory. */
static int report_path(json_t *prof, const char *dir, char **ret, char **reterr)
{
        const char *values[_MX_PLACEHOLDER_MAX] = {[MX_PLACEHOLDER_RUN_DIR] = dir};
        const char *tmpl = json_string_value(json_object_get(prof, "report"));
        _cleanup_free_ char *path = NULL;
        int r;

        if (!tmpl)
                return mx_reterr(reterr, -ENOENT,
                                 "the run's profile names no profiler report (profiler.report)");
        r = mx_placeholder_expand(tmpl, values, &path, reterr);
        if (r < 0)
                return r;
        *ret = path[0] == '/' ? TAKE_PTR(path) : xasprintf("%s/%s", dir, path);
        return 0;
}

/* The capture's declared workload at path, or NULL with *ret_why (why per token is not measured). */
static json_t *read_workload(const char *path, char **ret_why)
{
        _cleanup_free_ char *err = NULL, *text = NULL;
        _cleanup_close_ int fd = -1;
        json_error_t jerr;
        size_t len = 0;
        json_t *w;
        int r;

        /* the server's side of the run directory wrote it: a regular file of bounded size only, never waited on */
        r = mx_open_regular(path, ANALYSIS_WORKLOAD_MAX, &fd, &err);
        if (r == -ENOENT) {
                *ret_why =
                        xasprintf("no %s in the run directory: the capture declared no decode workload, so "
                                  "there is no token count to divide by",
                                  ANALYSIS_WORKLOAD_FILE);
                return NULL;
        }
        if (r >= 0) {
                r = mx_read_bounded(fd, ANALYSIS_WORKLOAD_MAX, &text, &len);
                if (r < 0)
                        err = r == -EFBIG ? xasprintf("%s: grew past the limit of %d bytes while being read", path,
                                                      ANALYSIS_WORKLOAD_MAX)
                                          : xasprintf("%s: %s", path, strerror(-r));
        }
        if (r < 0) {
                *ret_why = TAKE_PTR(err);
                return NULL;
        }
        w = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!w) {
                *ret_why = xasprintf("%s: line %d: %s", path, jerr.line, jerr.text);
                return NULL;
        }
        if (mx_dprof_workload_check(w, &err) < 0) {
                *ret_why = xasprintf("%s: %s", path, err);
                return json_decref(w), NULL;
        }
        return w;
}

/* One run: {"run", "config_key", "reasons", "attempt", "report", "workload_file", "table" | "error"}. */
static json_t *run_entry(struct mx_daemon *d, const struct mx_kcat *cat, json_t *run)
{
        int64_t id = json_integer_value(json_object_get(run, "id"));
        json_t *prof = json_object_get(json_object_get(json_object_get(run, "spec"), "profile"), "profiler");
        const char *fmt = json_string_value(json_object_get(prof, "format"));
        int n = (int)json_integer_value(json_object_get(run, "result_attempt"));
        _cleanup_free_ char *dir = NULL, *path = NULL, *err = NULL, *wpath = NULL, *why = NULL;
        _cleanup_(mx_profreport_freep) struct mx_profreport *rep = NULL;
        _cleanup_json_ json_t *workload = NULL;
        json_t *o =
                json_pack("{s:I,s:O?,s:O?}", "run", (json_int_t)id, "config_key",
                          json_object_get(run, "config_key"), "reasons", json_object_get(run, "reasons"));
        int r;

        if (n <= 0 && json_integer_value(json_object_get(run, "attempts")) <= 0) {
                json_object_set_new(o, "error", json_string("the run has not run"));
                return o;
        }
        dir = attempt_dir(d, id, n, &n);
        json_object_set_new(o, "attempt", json_integer(n));
        if (!json_is_object(prof)) {
                json_object_set_new(o, "error",
                                    json_string("the run's profile has no profiler: no kernel report"));
                return o;
        }
        r = report_path(prof, dir, &path, &err);
        if (r < 0) {
                json_object_set_new(o, "error", json_sprintf("profiler report: %s", strna(err)));
                return o;
        }
        json_object_set_new(o, "report", json_string(path));
        /* on the event loop: a FIFO is refused, not waited on; a huge file is refused, not read (its reason,
         * "PATH: is a FIFO, not a regular file", "PATH: N bytes, which exceeds the limit of M bytes") */
        r = mx_profreport_parse_regular(path, MX_PROFREPORT_FILE_MAX,
                                        fmt && streq(fmt, "nsys")  ? MX_PROFREPORT_TOOL_NSYS
                                        : fmt && streq(fmt, "ncu") ? MX_PROFREPORT_TOOL_NCU
                                                                   : MX_PROFREPORT_TOOL_ANY,
                                        &rep, &err);
        if (r < 0) {
                json_object_set_new(o, "error", json_sprintf("profiler report %s", strna(err)));
                return o;
        }
        wpath = xasprintf("%s/%s", dir, ANALYSIS_WORKLOAD_FILE);
        workload = read_workload(wpath, &why);
        if (workload)
                json_object_set_new(o, "workload_file", json_string(wpath));
        json_object_set_new(o, "table", mx_dprof_analyse(cat, rep, workload, why));
        return o;
}

json_t *analysis_job(struct mx_daemon *d, int64_t job, const struct mx_matrix *m)
{
        _cleanup_(mx_kcat_freep) struct mx_kcat *cat = NULL;
        _cleanup_json_ json_t *runs = NULL, *entries = json_array();
        _cleanup_free_ char *err = NULL;
        const struct mx_kcat_def *defs;
        size_t n_defs, i;
        json_t *run, *out, *names = json_array();
        int r;

        defs = mx_matrix_kcats(m, &n_defs);
        r = mx_kcat_new(defs, n_defs, &cat, &err);
        if (r >= 0)
                r = queue_job_runs_json(d->db, job, 0, ANALYSIS_RUNS_MAX, &runs, NULL, NULL);
        if (r < 0) {
                json_decref(names);
                return json_pack("{s:s}", "error", err ?: strerror(-r));
        }
        json_array_foreach (runs, i, run) {
                _cleanup_json_ json_t *full = NULL;
                int64_t id = json_integer_value(json_object_get(run, "id"));

                if (queue_run_json(d->db, id, true, &full) < 0)
                        continue;
                json_array_append_new(entries, run_entry(d, cat, full));
        }
        for (size_t k = 0; k <= n_defs; k++)
                json_array_append_new(names, json_string(mx_kcat_name(cat, k)));
        out = mx_dprof_job(m, entries);
        json_object_set_new(out, "categories", names);
        return out;
}

static int cmp_desc(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return x < y ? 1 : x > y ? -1 : 0;
}

/* The table of job's baseline run (reason baseline, else feature-off; as mx_dprof_job() picks it), or NULL.
 */
static json_t *baseline_table(struct mx_daemon *d, const struct mx_kcat *cat, int64_t job, int64_t *ret_run)
{
        _cleanup_json_ json_t *runs = NULL, *full = NULL, *e = NULL;
        json_t *run;

        if (queue_job_runs_json(d->db, job, 0, ANALYSIS_RUNS_MAX, &runs, NULL, NULL) < 0)
                return NULL;
        run = mx_jobruns_baseline(runs);
        if (!run)
                return NULL;
        *ret_run = json_integer_value(json_object_get(run, "id"));
        if (queue_run_json(d->db, *ret_run, true, &full) < 0)
                return NULL;
        e = run_entry(d, cat, full);
        return json_incref(json_object_get(e, "table"));
}

json_t *analysis_gates_rules(struct mx_daemon *d, const struct mx_matrix *m)
{
        _cleanup_(mx_kcat_freep) struct mx_kcat *cat = NULL;
        _cleanup_json_ json_t *by_word = NULL;
        _cleanup_free_ int64_t *ids = NULL;
        const struct mx_kcat_def *defs;
        const char *word;
        json_t *list, *v, *rules = json_array();
        size_t n = 0, k, n_defs;

        for (size_t i = 0; i < m->n_drules; i++)
                json_array_append_new(rules, json_pack("{s:s,s:s,s:s?,s:s}", "when", m->drules[i].when,
                                                       "then", m->drules[i].then, "note", m->drules[i].note,
                                                       "verdict", "not-measured"));
        if (m->n_drules == 0)
                return json_pack("{s:o,s:s}", "rules", rules, "why", "the matrix declares no decision_rules");
        defs = mx_matrix_kcats(m, &n_defs);
        if (mx_kcat_new(defs, n_defs, &cat, NULL) < 0 ||
            queue_feature_jobs_json(d->db, m->path, ANALYSIS_GATES_JOBS, &by_word) < 0)
                return json_pack("{s:o,s:s}", "rules", rules, "why", "no job of this matrix was found");
        ids = xcalloc(ANALYSIS_GATES_JOBS * json_object_size(by_word) + 1, sizeof(int64_t));
        json_object_foreach (by_word, word, list)
                json_array_foreach (list, k, v)
                        ids[n++] = json_integer_value(v);
        qsort(ids, n, sizeof(int64_t), cmp_desc);
        for (size_t j = 0; j < n && j < ANALYSIS_GATES_JOBS; j++) {
                int64_t run = 0;
                _cleanup_json_ json_t *t = baseline_table(d, cat, ids[j], &run);

                if (!t)
                        continue;
                json_decref(rules);
                return json_pack("{s:o,s:I,s:I}", "rules", mx_dprof_rules(m, t), "job", (json_int_t)ids[j],
                                 "run", (json_int_t)run);
        }
        return json_pack("{s:o,s:s}", "rules", rules, "why",
                         "no recent job of this matrix has a baseline run with a profiler report");
}
