/* SPDX-License-Identifier: MIT */
#include "attribute.h"
#include "confirm.h"
#include "daemon.h"
#include "queue.h"
#include "log.h"

#include <inttypes.h>

/* How many confirmation jobs up the chain attribute reads (each --confirm of the last). */
#define ATTRIBUTE_MAX_CHAIN 16

/* The job a confirmation job confirms (its submit request's "confirm"), or 0. */
static int confirmed_job(struct mx_db *db, int64_t job, int64_t *ret)
{
        static const char sql[] = "SELECT request FROM jobs WHERE id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_json_ json_t *request = NULL;
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, job);
        rc = sqlite3_step(s);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (rc != SQLITE_ROW)
                return db_errno(db, rc);
        request = db_column_json(s, 0);
        *ret = json_integer_value(json_object_get(request, "confirm"));
        return 0;
}

static int load_one(struct mx_db *db, int64_t job, struct mx_attrib *a, json_t *configs, char **reterr);

int attribute_load(struct mx_db *db, int64_t job, struct mx_attrib *a, json_t **ret_configs, char **reterr)
{
        _cleanup_json_ json_t *configs = json_array();
        int r;

        /* A confirmation job's runs are evidence together with the job it confirms (and so on up). */
        for (unsigned depth = 0; job > 0 && depth < ATTRIBUTE_MAX_CHAIN; depth++) {
                int64_t up = 0;

                r = load_one(db, job, a, configs, reterr);
                if (r >= 0)
                        r = confirmed_job(db, job, &up);
                if (r == -ENOENT && depth > 0)
                        break; /* the confirmed job was deleted: what is left still counts */
                if (r < 0)
                        return r;
                job = up;
        }
        *ret_configs = TAKE_PTR(configs);
        return 0;
}

static int load_one(struct mx_db *db, int64_t job, struct mx_attrib *a, json_t *configs, char **reterr)
{
        /*
         * Every attempt of every run, in plan order; the levels of each attempt as a JSON array. A fail-fast
         * run's cheap pass that passed (migration 011) is left out: its second pass decides, and the two
         * together are not a flaky run.
         */
        static const char sql[] =
                "SELECT r.id, r.config, a.outcome, a.crash_class, "
                "(SELECT json_group_array(json_object('level', l.level, 'verdict', l.verdict)) "
                " FROM levels l WHERE l.attempt_id = a.id) "
                "FROM runs r LEFT JOIN attempts a ON a.run_id = r.id "
                "AND NOT (coalesce(a.pass, 0) = 1 AND a.result IN ('pass', 'xpass')) "
                "WHERE r.job_id = ? ORDER BY r.seq, a.n";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_json_ json_t *config = NULL, *results = NULL;
        int64_t current = 0;
        uid_t owner;
        int r, rc;

        r = queue_job_owner(db, job, &owner);
        if (r < 0)
                return r;
        r = db_stmt(db, sql, &s);
        if (r < 0)
                return r;
        db_bind_int64(s, 1, job);
        for (;;) {
                int64_t id;

                rc = sqlite3_step(s);
                if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                        return db_errno(db, rc);
                id = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
                if (id != current && config) {
                        bool passed = json_array_size(results) > 0;
                        size_t k;
                        json_t *x;

                        r = mx_attrib_add_run(a, current, config, results, reterr);
                        if (r < 0)
                                return r;
                        json_array_foreach (results, k, x)
                                passed = passed && json_is_string(x);
                        json_array_append_new(configs,
                                              json_pack("{s:O,s:b}", "config", config, "pass", passed));
                        json_decref(TAKE_PTR(config));
                        json_decref(TAKE_PTR(results));
                }
                if (rc == SQLITE_DONE)
                        break;
                if (id != current) {
                        current = id;
                        config = db_column_json(s, 1);
                        results = json_array();
                        if (!json_is_object(config)) {
                                *reterr = xasprintf(
                                        "run %" PRId64 ": its stored configuration is not an object", id);
                                return -EINVAL;
                        }
                }
                if (sqlite3_column_type(s, 2) != SQLITE_NULL) {
                        _cleanup_free_ char *outcome = db_column_strdup(s, 2), *cls = db_column_strdup(s, 3);
                        _cleanup_json_ json_t *levels = db_column_json(s, 4);
                        json_t *res = mx_attrib_attempt_result(outcome, cls, levels);

                        if (res)
                                json_array_append_new(results, res);
                }
        }
        return 0;
}

int attribute_strength(struct mx_db *db, int64_t job, int64_t max_size, unsigned *ret)
{
        static const char sql[] = "SELECT strategy FROM jobs WHERE id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_free_ char *strategy = NULL;
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        if (max_size > 0) {
                *ret = (unsigned)max_size;
                return 0;
        }
        db_bind_int64(s, 1, job);
        rc = sqlite3_step(s);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (rc != SQLITE_ROW)
                return db_errno(db, rc);
        strategy = db_column_strdup(s, 0);
        /* A pairwise sweep holds every pair: searching triples in it finds mostly coincidences. */
        *ret = streq_ptr(strategy, "pairwise") ? 2 : MX_ATTRIB_DEFAULT_T;
        return 0;
}

/* The daemon's matrix tells which values an axis has, so "spec=eagle3-*" is only written when exact. */
static void add_universe(struct mx_attrib *a, const struct mx_matrix *m)
{
        if (!m)
                return;
        for (size_t ax = 0; ax < m->n_axes; ax++) {
                _cleanup_strv_free_ char **v = NULL;

                for (size_t i = 0; i < m->axes[ax].n_values; i++)
                        strv_push(&v, m->axes[ax].values[i].name);
                mx_attrib_axis_values(a, m->axes[ax].name, v);
        }
}

/*
 * Load and analyse a job. On failure a negative errno with, where there is
 * more to say than the errno, *ret_code (a protocol error code) and *reterr.
 */
static int analyse_job(struct mx_daemon *d, int64_t job, int64_t max_size, struct mx_attrib *a,
                       struct mx_attrib_result **ret_res, json_t **ret_configs, const char **ret_code,
                       char **reterr)
{
        _cleanup_free_ char *err = NULL;
        unsigned t = 0;
        int r;

        r = attribute_load(d->db, job, a, ret_configs, &err);
        if (r >= 0)
                r = attribute_strength(d->db, job, max_size, &t);
        if (r == -EINVAL || r == -E2BIG) {
                *ret_code = r == -E2BIG ? "limit-exceeded" : "internal";
                *reterr = xasprintf("job %" PRId64 ": %s", job, strna(err));
                return r;
        }
        if (r < 0)
                return r;
        r = mx_attrib_analyse(a, t, ret_res, &err);
        if (r < 0) {
                *ret_code = "bad-request";
                *reterr = xasprintf("%s", strna(err));
        }
        return r;
}

/* analyse_job() for a request: errors go to the client. */
static int analyse_request(struct mx_request *req, int64_t job, int64_t max_size, struct mx_attrib *a,
                           struct mx_attrib_result **ret_res, json_t **ret_configs)
{
        _cleanup_free_ char *err = NULL;
        const char *code = NULL;
        int r = analyse_job(req->d, job, max_size, a, ret_res, ret_configs, &code, &err);

        if (r < 0 && err)
                request_error(req, code, "%s", err);
        else if (r < 0)
                request_error_errno(req, r, req->method->name);
        return r;
}

/* The groups as known_incompatible entries of the matrix file (mxmatrix.json(5)). */
static json_t *known_incompatible(const struct mx_attrib *a, const struct mx_attrib_result *res, int64_t job)
{
        json_t *list = json_array();

        for (size_t k = 0; k < res->n_classes; k++) {
                const struct mx_attrib_class *c = &res->classes[k];

                for (size_t g = 0; g < c->n_groups; g++) {
                        const struct mx_attrib_group *gr = &c->groups[g];
                        _cleanup_free_ char *text = mx_attrib_group_describe(a, res, c, gr);
                        _cleanup_free_ char *reason =
                                xasprintf("%s → %s: observed in %zu of %zu failing runs of job %" PRId64
                                          ", no passing run holds it (mxmatrix attribute)",
                                          text, c->name, gr->support, c->failing, job);

                        json_array_append_new(list, json_pack("{s:o,s:s,s:s}", "when",
                                                              mx_attrib_group_when(res, c, gr), "expect",
                                                              c->kind == MX_ATTRIB_CRASH ? "crash" : "fail",
                                                              "reason", reason));
                }
        }
        return list;
}

int attribute_job(struct mx_daemon *d, int64_t job, int64_t max_size, json_t **ret, const char **ret_code,
                  char **reterr)
{
        _cleanup_(mx_attrib_freep) struct mx_attrib *a = mx_attrib_new();
        _cleanup_(mx_attrib_result_freep) struct mx_attrib_result *res = NULL;
        _cleanup_json_ json_t *configs = NULL;
        int r;

        add_universe(a, d->matrix);
        r = analyse_job(d, job, max_size, a, &res, &configs, ret_code, reterr);
        if (r < 0)
                return r;
        *ret = json_pack("{s:o,s:o}", "attribution", mx_attrib_result_to_json(a, res), "known_incompatible",
                         known_incompatible(a, res, job));
        return 0;
}

void attribute_handle(struct mx_request *req)
{
        int64_t job = json_integer_value(json_object_get(req->params, "job"));
        int64_t max_size = json_integer_value(json_object_get(req->params, "max_size"));
        _cleanup_free_ char *err = NULL;
        const char *code = NULL;
        json_t *res = NULL;
        int r = attribute_job(req->d, job, max_size, &res, &code, &err);

        if (r < 0 && err) {
                request_error(req, code, "%s", err);
                return;
        }
        if (r < 0) {
                request_error_errno(req, r, req->method->name);
                return;
        }
        json_object_set_new(res, "job", json_integer(job));
        request_reply(req, res);
}

int attribute_confirm_plan(struct mx_request *req, const struct mx_matrix *m, int64_t job, size_t max_runs,
                           struct mx_plan **ret)
{
        _cleanup_(mx_attrib_freep) struct mx_attrib *a = mx_attrib_new();
        _cleanup_(mx_attrib_result_freep) struct mx_attrib_result *res = NULL;
        _cleanup_json_ json_t *configs = NULL;
        _cleanup_free_ char *err = NULL, *input = xasprintf("confirm job %" PRId64, job);
        int64_t max_size = json_integer_value(json_object_get(req->params, "max_size"));
        int r;

        r = analyse_request(req, job, max_size, a, &res, &configs);
        if (r < 0)
                return r;
        r = mx_confirm_plan(m, res, configs, input, max_runs, ret, &err);
        if (r < 0)
                request_error(req, r == -E2BIG ? "limit-exceeded" : "matrix-error", "job %" PRId64 ": %s",
                              job, strna(err));
        return r;
}
