/* SPDX-License-Identifier: MIT */
/*
 * The attribute method, the report's attribution and submit --confirm: a job's attempts into
 * matrix/analysis/attrib.
 */
#include "attribute.h"
#include "confirm.h"
#include "daemon.h"
#include "evidence.h"
#include "queue.h"
#include "log.h"

#include <inttypes.h>

/* How many confirmation jobs up the chain attribute reads (each --confirm of the last). */
#define ATTRIBUTE_MAX_CHAIN 16

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
                        r = evidence_confirmed_job(db, job, &up);
                if (r == -ENOENT && depth > 0)
                        break; /* the confirmed job was deleted: what is left still counts */
                if (r < 0)
                        return r;
                job = up;
        }
        *ret_configs = TAKE_PTR(configs);
        return 0;
}

/* The runs read so far: the one whose attempts come now (config, results) goes to a when the next begins. */
struct load_state {
        struct mx_attrib *a;
        json_t *configs;
        char **reterr;
        int64_t current;
        json_t *config, *results;
};

static int load_flush(struct load_state *st)
{
        bool passed = json_array_size(st->results) > 0;
        size_t k;
        json_t *x;
        int r = mx_attrib_add_run(st->a, st->current, st->config, st->results, st->reterr);

        if (r < 0)
                return r;
        json_array_foreach (st->results, k, x)
                passed = passed && json_is_string(x);
        json_array_append_new(st->configs, json_pack("{s:O,s:b}", "config", st->config, "pass", passed));
        json_decref(TAKE_PTR(st->config));
        json_decref(TAKE_PTR(st->results));
        return 0;
}

static int load_attempt(const struct evidence_attempt *e, void *ud)
{
        struct load_state *st = ud;
        int r;

        if (e->run != st->current && st->config && (r = load_flush(st)) < 0)
                return r;
        if (e->run != st->current) {
                st->current = e->run;
                st->config = json_incref(e->config);
                st->results = json_array();
                if (!json_is_object(st->config)) {
                        *st->reterr = xasprintf("run %" PRId64 ": its stored configuration is not an object",
                                                e->run);
                        return -EINVAL;
                }
        }
        if (e->outcome) {
                json_t *res = mx_attrib_attempt_result(e->outcome, e->crash_class, e->levels);

                if (res)
                        json_array_append_new(st->results, res);
        }
        return 0;
}

static int load_one(struct mx_db *db, int64_t job, struct mx_attrib *a, json_t *configs, char **reterr)
{
        struct load_state st = {.a = a, .configs = configs, .reterr = reterr};
        uid_t owner;
        int r;

        r = queue_job_owner(db, job, &owner);
        if (r >= 0)
                r = evidence_attempts(db, job, load_attempt, &st);
        if (r >= 0 && st.config)
                r = load_flush(&st);
        json_decref(st.config);
        json_decref(st.results);
        return r;
}

int attribute_strength(struct mx_db *db, int64_t job, int64_t max_size, unsigned *ret)
{
        _cleanup_free_ char *strategy = NULL;
        int r;

        if (max_size > 0) {
                *ret = (unsigned)max_size;
                return 0;
        }
        r = evidence_job_strategy(db, job, &strategy);
        if (r < 0)
                return r;
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
