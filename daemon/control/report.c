/* SPDX-License-Identifier: MIT */
/*
 * The report method: everything the database holds about one job, as the
 * report document of docs/mxmatrix-report.json.5, which `mxmatrix report`
 * renders and `mxmatrix export` writes. The runs go out as stream items of
 * REPORT_BATCH runs each (every attempt with its levels, metrics, messages,
 * samples and metadata record), waiting for the reader between batches; the
 * reply carries the job, the matrix section and where the next page starts;
 * the last page's reply also carries the criteria and the attribution.
 * A page of 10 000 runs never exists as one JSON document in the daemon.
 */
#include "report.h"
#include "analysis.h"
#include "attribute.h"
#include "gates.h"
#include "log.h"
#include "daemon.h"
#include "matrix-report.h"
#include "meta.h"
#include "queue.h"

#include <inttypes.h>

#define REPORT_BATCH 20  /* runs read and sent at a time: a run with its history is 20-60 KB of JSON */
#define REPORT_PAGE 1000 /* runs of a page unless the client asks for another size */

struct reportsub {
        struct mx_request *req;
        int64_t job;
        int64_t after_seq; /* the last run sent, by place in the plan */
        int64_t after_run;
        int64_t left; /* runs of the page still to send */
        bool done;    /* no run follows the last batch */
};

/* Up to n run ids of job after after_seq in plan order; *ret_more: runs follow them. */
static int page_ids(struct mx_db *db, int64_t job, int64_t after_seq, int n, int64_t *ids, int64_t *seqs,
                    int *ret_n, bool *ret_more)
{
        static const char sql[] =
                "SELECT id, seq FROM runs WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, sql, &s), rc, k = 0;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, job);
        db_bind_int64(s, 2, after_seq);
        db_bind_int64(s, 3, n + 1);
        *ret_more = false;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                if (k == n) {
                        *ret_more = true;
                        break;
                }
                ids[k] = sqlite3_column_int64(s, 0);
                seqs[k] = sqlite3_column_int64(s, 1);
                k++;
        }
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                return db_errno(db, rc);
        *ret_n = k;
        return 0;
}

/* One run as the document holds it: show rRUN's run with metadata records, without the blobs' text. */
static int run_json(struct mx_db *db, int64_t id, json_t **ret)
{
        _cleanup_json_ json_t *run = NULL;
        int r = queue_run_json(db, id, true, &run);

        if (r >= 0)
                r = meta_attach_run(db, run);
        if (r < 0)
                return r;
        /* pip freeze and the like: records name them by hash; a report has no use for megabytes of text. */
        json_object_del(run, "metadata_blobs");
        *ret = TAKE_PTR(run);
        return 0;
}

static int job_digest(struct mx_db *db, int64_t job, char **ret)
{
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, "SELECT matrix_digest FROM jobs WHERE id = ?", &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, job);
        rc = sqlite3_step(s);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (rc != SQLITE_ROW)
                return db_errno(db, rc);
        *ret = xstrdup((const char *)sqlite3_column_text(s, 0));
        return 0;
}

/*
 * The matrix section: the job's matrix file as the daemon has it loaded when
 * that is the file the job was planned from (same digest), else the file at
 * the job's path read again. "current": the file is still the one the job
 * was planned from; when it is not (edited since), the section is what the
 * file says now, and the renderers say so.
 */
static json_t *matrix_section(struct mx_daemon *d, const char *path, const char *digest,
                              struct mx_matrix **owned, const struct mx_matrix **ret_m)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *loaded = NULL;
        const struct mx_matrix *m = NULL;
        _cleanup_free_ char *err = NULL;
        json_t *o;

        if (d->matrix) {
                _cleanup_json_ json_t *cur = mx_matrix_report_json(d->matrix);

                if (streq_ptr(json_string_value(json_object_get(cur, "digest")), digest))
                        m = d->matrix;
        }
        if (!m && path && mx_matrix_load_file(path, &loaded, &err) >= 0)
                m = loaded;
        if (!m && d->matrix && streq_ptr(d->cfg.matrix_path, path))
                m = d->matrix;
        *ret_m = m;
        if (!m)
                return json_pack("{s:s?,s:s?,s:b,s:s}", "path", path, "job_digest", digest, "current", false,
                                 "error", err ? err : "the job's matrix file is not loaded");
        o = mx_matrix_report_json(m);
        json_object_set_new(o, "job_digest", json_string(digest));
        json_object_set_new(
                o, "current",
                json_boolean(streq_ptr(json_string_value(json_object_get(o, "digest")), digest)));
        *owned = TAKE_PTR(loaded);
        return o;
}

/*
 * What mxmatrix attribute says of the job (attribute_job(): the same
 * analysis), with the known_incompatible entries it proposes; a job the
 * analysis refuses (over attrib.h's limits) gets {"error"}: the rest of the
 * report still stands.
 */
static json_t *attribution_section(struct mx_daemon *d, int64_t job)
{
        _cleanup_json_ json_t *res = NULL;
        _cleanup_free_ char *err = NULL;
        const char *code = NULL;
        json_t *o;
        int r = attribute_job(d, job, 0, &res, &code, &err);

        if (r < 0) {
                log_warning_errno(r, "report: job %" PRId64 ": no attribution%s%s", job, err ? ": " : "",
                                  strempty(err));
                return json_pack("{s:s}", "error", err ?: strerror(-r));
        }
        o = json_incref(json_object_get(res, "attribution"));
        json_object_set(o, "known_incompatible", json_object_get(res, "known_incompatible"));
        return o;
}

static void report_closed(struct mx_request *req, void *ud)
{
        (void)req;
        free(ud);
}

static void report_drain_cb(struct mx_request *req, void *ud);

/* Send batches until the page is out or the reader lags, then the reply. Returns true when ended. */
static bool report_pump(struct reportsub *rs)
{
        struct mx_daemon *d = rs->req->d;
        _cleanup_json_ json_t *job = NULL, *matrix = NULL;
        _cleanup_(mx_matrix_freep) struct mx_matrix *owned = NULL;
        const struct mx_matrix *m = NULL;
        _cleanup_free_ char *digest = NULL;
        int r;

        for (;;) {
                _cleanup_json_ json_t *runs = json_array(), *item = NULL;
                int64_t ids[REPORT_BATCH], seqs[REPORT_BATCH];
                bool more = false;
                int n = 0;

                if (request_output_pending(rs->req) > d->cfg.limits.output_bytes / 4) {
                        request_on_drain(rs->req, report_drain_cb, rs);
                        return false;
                }
                if (rs->left == 0 || rs->done)
                        break;
                r = page_ids(d->db, rs->job, rs->after_seq, (int)MX_MIN(rs->left, REPORT_BATCH), ids, seqs,
                             &n, &more);
                for (int i = 0; r >= 0 && i < n; i++) {
                        json_t *run = NULL;

                        r = run_json(d->db, ids[i], &run);
                        if (r >= 0)
                                json_array_append_new(runs, run);
                }
                if (r < 0) {
                        request_error_errno(rs->req, r, "report");
                        return true;
                }
                rs->done = !more;
                if (n == 0)
                        continue;
                rs->after_seq = seqs[n - 1];
                rs->after_run = ids[n - 1];
                rs->left -= n;
                item = json_pack("{s:O}", "runs", runs);
                request_stream(rs->req, item); /* borrows item */
        }
        r = queue_job_json(d->db, rs->job, &job);
        if (r >= 0)
                r = job_digest(d->db, rs->job, &digest);
        if (r < 0) {
                request_error_errno(rs->req, r, "report");
                return true;
        }
        json_object_set_new(job, "matrix_digest", json_string(digest));
        matrix = matrix_section(d, json_string_value(json_object_get(job, "matrix")), digest, &owned, &m);
        /*
         * Once, with the last page: the daemon's evaluation of the feature's success criteria and hard
         * constraints (gates.h), the failures' attribution (attribute.h) and where decode time went
         * (analysis.h).
         */
        request_reply(rs->req,
                      json_pack("{s:i,s:O,s:O,s:b,s:o,s:o,s:o,s:o}", "report", MX_REPORT_VERSION, "job", job,
                                "matrix", matrix, "more", !rs->done, "after",
                                rs->after_run > 0 ? json_integer(rs->after_run) : json_null(), "criteria",
                                rs->done ? gates_job_criteria(d, job) : json_null(), "attribution",
                                rs->done ? attribution_section(d, rs->job) : json_null(), "analysis",
                                rs->done ? analysis_job(d, rs->job, m) : json_null()));
        return true;
}

static void report_drain_cb(struct mx_request *req, void *ud)
{
        request_on_drain(req, NULL, NULL);
        if (report_pump(ud))
                free(ud);
}

void report_start(struct mx_request *req, int64_t job, int64_t after_run, int64_t limit)
{
        struct reportsub *rs;
        int64_t seq = 0;
        uid_t owner;
        int r = queue_job_owner(req->d->db, job, &owner);

        if (r < 0) {
                request_error_errno(req, r, "report");
                return;
        }
        if (after_run > 0) {
                int64_t run_job = 0;
                _cleanup_json_ json_t *run = NULL;

                r = queue_run_owner(req->d->db, after_run, &owner, &run_job);
                if (r >= 0 && run_job != job)
                        r = -ENOENT;
                if (r >= 0)
                        r = queue_run_json(req->d->db, after_run, false, &run);
                if (r == -ENOENT) {
                        request_error(req, "bad-request",
                                      "--after r%" PRId64 " is not a run of job %" PRId64, after_run, job);
                        return;
                }
                if (r < 0) {
                        request_error_errno(req, r, "report");
                        return;
                }
                seq = json_integer_value(json_object_get(run, "seq"));
        }
        rs = xcalloc(1, sizeof(*rs));
        *rs = (struct reportsub){
                .req = req,
                .job = job,
                .after_seq = seq,
                .after_run = after_run,
                .left = limit > 0 ? limit : REPORT_PAGE,
        };
        request_keep(req, report_closed, rs);
        if (report_pump(rs))
                free(rs);
}
