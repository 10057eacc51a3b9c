/* SPDX-License-Identifier: MIT */
/*
 * Success criteria of a job and gates between phases, from the stored runs
 * (gates.h). The judging is criteria.c's; this file finds what to judge.
 */
#include "gates.h"
#include "analysis.h"

#include "criteria.h"
#include "plan.h"
#include "queue.h"
#include "summary.h"

#include <inttypes.h>

/* The feature index a job's "feature" word names in m, or -1 (pins only, an axis value no feature sets). */
static int job_feature(const struct mx_matrix *m, const char *word)
{
        _cleanup_free_ int *assignment = NULL;
        int f = -1;

        if (!word || mx_plan_resolve_feature(m, word, &f, &assignment, NULL) < 0)
                return -1;
        return f;
}

static json_t *none(const char *fmt, ...) _printf_(1, 2);
static json_t *none(const char *fmt, ...)
{
        _cleanup_free_ char *why = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&why, fmt, ap) < 0)
                why = NULL;
        va_end(ap);
        return json_pack("{s:s,s:s}", "overall", "none", "why", strna(why));
}

/* The job's criteria from its evidence (read once by the caller); *ret_f its feature (-1: none). */
static json_t *job_criteria(struct mx_daemon *d, json_t *job, json_t *runs, struct mx_matrix **owned,
                            const struct mx_matrix **ret_m, int *ret_f)
{
        const char *path = json_string_value(json_object_get(job, "matrix"));
        const char *word = json_string_value(json_object_get(job, "feature"));
        int64_t id = json_integer_value(json_object_get(job, "id"));
        _cleanup_free_ char *err = NULL;
        const struct mx_matrix *m = d->matrix;
        int f, r;

        *ret_m = NULL;
        *ret_f = -1;
        if (!word)
                return none("job %" PRId64 " was submitted with pins only: no feature, no success criteria",
                            id);
        /* The job's own matrix: the daemon's, or the file an admin named at submit. */
        if (!m || !streq_ptr(m->path, path)) {
                r = path ? mx_matrix_load_file(path, owned, &err) : -ENOENT;
                if (r < 0)
                        return none("the job's matrix %s cannot be read now: %s", strna(path),
                                    err ? err : strerror(-r));
                m = *owned;
        }
        *ret_m = m;
        f = job_feature(m, word);
        if (f < 0)
                return none(
                        "'%s' is not a feature of %s (an axis value no feature sets): no success criteria",
                        word, m->path);
        if (!runs)
                return none("the job's runs cannot be read");
        *ret_f = f;
        return criteria_job_json(m, (size_t)f, runs);
}

void gates_job_answer(struct mx_daemon *d, json_t *job, json_t **ret_criteria, json_t **ret_summary)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *owned = NULL;
        _cleanup_(json_decrefp) json_t *runs = NULL;
        const struct mx_matrix *m;
        int f, r = queue_job_evidence_json(d->db, json_integer_value(json_object_get(job, "id")), &runs);
        json_t *c;

        if (r < 0) {
                *ret_criteria = none("the job's runs cannot be read: %s", strerror(-r));
                if (ret_summary)
                        *ret_summary = json_null();
                return;
        }
        c = job_criteria(d, job, runs, &owned, &m, &f);
        *ret_criteria = c;
        if (ret_summary)
                *ret_summary = summary_job_json(m, f, json_object_get(job, "levels"), runs);
}

json_t *gates_job_criteria(struct mx_daemon *d, json_t *job)
{
        json_t *c;

        gates_job_answer(d, job, &c, NULL);
        return c;
}

static int cmp_desc(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return x < y ? 1 : x > y ? -1 : 0;
}

/* Per feature of m referenced by a gate: its newest jobs' evidence ({"job", "runs"}), newest first. */
static int gather(struct mx_daemon *d, const struct mx_matrix *m, json_t **jobs)
{
        _cleanup_(json_decrefp) json_t *by_word = NULL;
        _cleanup_free_ bool *wanted = xcalloc(MX_MAX(m->n_features, 1), sizeof(bool));
        _cleanup_free_ int64_t *ids = NULL;
        const char *word;
        json_t *list;
        int r;

        for (size_t i = 0; i < m->n_features; i++)
                for (size_t k = 0; k < m->features[i].n_gates; k++) {
                        const struct mx_matrix_gate *g = &m->features[i].gates[k];

                        for (size_t o = 0; o < g->n_of; o++)
                                wanted[g->of[o]] = true;
                        if (g->kind == MX_GATE_SPEEDUP)
                                wanted[g->vs] = true;
                }
        r = queue_feature_jobs_json(d->db, m->path, CRITERIA_GATE_JOBS, &by_word);
        if (r < 0)
                return r;
        ids = xcalloc(CRITERIA_GATE_JOBS * (json_object_size(by_word) + 1), sizeof(int64_t));
        for (size_t i = 0; i < m->n_features; i++) {
                size_t n = 0;

                jobs[i] = json_array();
                if (!wanted[i])
                        continue;
                /* "cutlass", "P1" and "cutlass-gemm" are one feature: merge their jobs, newest first. */
                json_object_foreach (by_word, word, list) {
                        json_t *v;
                        size_t k;

                        if (job_feature(m, word) != (int)i)
                                continue;
                        json_array_foreach (list, k, v)
                                ids[n++] = json_integer_value(v);
                }
                qsort(ids, n, sizeof(int64_t), cmp_desc);
                for (size_t k = 0; k < n && k < CRITERIA_GATE_JOBS; k++) {
                        json_t *runs = NULL;

                        r = queue_job_evidence_json(d->db, ids[k], &runs);
                        if (r < 0)
                                return r;
                        json_array_append_new(
                                jobs[i], json_pack("{s:I,s:o}", "job", (json_int_t)ids[k], "runs", runs));
                }
        }
        return 0;
}

void gates_method(struct mx_request *req)
{
        struct mx_daemon *d = req->d;
        const struct mx_matrix *m = d->matrix;
        json_t **jobs;
        json_t *res = NULL;
        int r;

        if (!m) {
                request_error(req, "matrix-error", "%s",
                              d->matrix_error ? d->matrix_error : "mxmatrixd has no matrix file (--matrix)");
                return;
        }
        jobs = xcalloc(MX_MAX(m->n_features, 1), sizeof(json_t *));
        r = gather(d, m, jobs);
        if (r >= 0) {
                res = criteria_gates_json(m, jobs);
                json_object_set_new(res, "matrix", json_string(m->path));
                json_object_set_new(res, "decision_rules", analysis_gates_rules(d, m));
        }
        for (size_t i = 0; i < m->n_features; i++)
                json_decref(jobs[i]);
        free(jobs);
        if (r < 0) {
                request_error_errno(req, r, "gates");
                return;
        }
        request_reply(req, res);
}
