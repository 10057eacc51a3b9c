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
#include "evidence.h"
#include "matrix-report.h"
#include "meta.h"
#include "pager.h"
#include "queue.h"

#include <inttypes.h>

#define REPORT_BATCH 20  /* runs read and sent at a time: a run with its history is 20-60 KB of JSON */
#define REPORT_PAGE 1000 /* runs of a page unless the client asks for another size */

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

/* Up to n runs of job after after_seq, each as run_json() gives it (the pager's read, pager.h). */
static int report_runs(struct mx_db *db, int64_t job, int64_t after_seq, int n, json_t **ret_runs,
                       int64_t *ret_last_seq, bool *ret_more)
{
        _cleanup_json_ json_t *runs = json_array();
        int64_t ids[REPORT_BATCH], seqs[REPORT_BATCH];
        int k = 0;
        int r = evidence_run_page(db, job, after_seq, (int)MX_MIN(n, REPORT_BATCH), ids, seqs, &k, ret_more);

        for (int i = 0; r >= 0 && i < k; i++) {
                json_t *run = NULL;

                r = run_json(db, ids[i], &run);
                if (r >= 0)
                        json_array_append_new(runs, run);
        }
        if (r < 0)
                return r;
        *ret_last_seq = k > 0 ? seqs[k - 1] : after_seq;
        *ret_runs = TAKE_PTR(runs);
        return 0;
}

/*
 * The document's head once the page's runs are out (pager.h); with the last
 * page, the daemon's evaluation of the feature's success criteria and hard
 * constraints (gates.h), and the failures' attribution (attribute.h).
 */
static void report_reply(struct mx_request *req, json_t *job, int64_t after_run, bool more)
{
        struct mx_daemon *d = req->d;
        int64_t id = json_integer_value(json_object_get(job, "id"));
        _cleanup_json_ json_t *matrix = NULL;
        _cleanup_(mx_matrix_freep) struct mx_matrix *owned = NULL;
        const struct mx_matrix *m = NULL;
        _cleanup_free_ char *digest = NULL;
        int r = evidence_job_digest(d->db, id, &digest);

        if (r < 0) {
                request_error_errno(req, r, "report");
                return;
        }
        json_object_set_new(job, "matrix_digest", json_string(digest));
        matrix = matrix_section(d, json_string_value(json_object_get(job, "matrix")), digest, &owned, &m);
        /*
         * Once, with the last page: the daemon's evaluation of the feature's success criteria and hard
         * constraints (gates.h), the failures' attribution (attribute.h) and where decode time went
         * (analysis.h).
         */
        request_reply(req, json_pack("{s:i,s:O,s:O,s:b,s:o,s:o,s:o,s:o}", "report", MX_REPORT_VERSION, "job", job,
                                     "matrix", matrix, "more", more, "after",
                                     after_run > 0 ? json_integer(after_run) : json_null(), "criteria",
                                     !more ? gates_job_criteria(d, job) : json_null(), "attribution",
                                     !more ? attribution_section(d, id) : json_null(), "analysis",
                                     !more ? analysis_job(d, id, m) : json_null()));
}

static const struct mx_pager_ops report_pager = {
        .what = "report",
        .batch = REPORT_BATCH,
        .page = REPORT_PAGE,
        .read = report_runs,
        .reply = report_reply,
};

void report_start(struct mx_request *req, int64_t job, int64_t after_run, int64_t limit)
{
        pager_start(req, &report_pager, job, after_run, limit);
}
