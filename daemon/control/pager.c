/* SPDX-License-Identifier: MIT */
/*
 * The one pager of show JOB and report: a page of a job's runs goes out a
 * batch at a time, each batch a stream item {"runs": [...]}, waiting for the
 * reader whenever its unsent output passes a quarter of the limit; then the
 * reply, which says the last run sent (the next page's after) and whether
 * runs follow. A 10 000-run page never exists as one JSON document in the
 * daemon.
 */
#include "pager.h"
#include "queue.h"

#include <inttypes.h>

struct mx_pager {
        struct mx_request *req;
        const struct mx_pager_ops *ops;
        int64_t job;
        int64_t after_seq; /* the last run sent, by place in the plan */
        int64_t after_run;
        int64_t left; /* runs of the page still to send */
        bool done;    /* no run follows the last batch */
};

static void pager_closed(struct mx_request *req, void *ud)
{
        (void)req;
        free(ud);
}

static void pager_drain_cb(struct mx_request *req, void *ud);

/* One batch out; false with the request answered when the read failed. */
static bool pager_batch(struct mx_pager *p)
{
        struct mx_daemon *d = p->req->d;
        _cleanup_json_ json_t *runs = NULL, *item = NULL;
        int64_t last = 0;
        bool more = false;
        int r = p->ops->read(d->db, p->job, p->after_seq, (int)MX_MIN(p->left, p->ops->batch), &runs, &last,
                             &more);

        if (r < 0) {
                request_error_errno(p->req, r, p->ops->what);
                return false;
        }
        p->done = !more || json_array_size(runs) == 0;
        if (json_array_size(runs) == 0)
                return true;
        p->after_run = json_integer_value(json_object_get(json_array_get(runs, json_array_size(runs) - 1), "id"));
        p->after_seq = last;
        p->left -= (int64_t)json_array_size(runs);
        item = json_pack("{s:O}", "runs", runs);
        request_stream(p->req, item); /* borrows item */
        return true;
}

/* Send batches until the page is out or the reader lags, then the reply. Returns true when ended. */
static bool pager_pump(struct mx_pager *p)
{
        _cleanup_json_ json_t *job = NULL;
        int r;

        for (;;) {
                /* Before each batch and before the reply: both count against the client's output limit. */
                if (request_output_pending(p->req) > p->req->d->cfg.limits.output_bytes / 4) {
                        request_on_drain(p->req, pager_drain_cb, p);
                        return false;
                }
                if (p->left == 0 || p->done)
                        break;
                if (!pager_batch(p))
                        return true;
        }
        r = queue_job_json(p->req->d->db, p->job, &job);
        if (r < 0) {
                request_error_errno(p->req, r, p->ops->what);
                return true;
        }
        p->ops->reply(p->req, job, p->after_run, !p->done);
        return true;
}

static void pager_drain_cb(struct mx_request *req, void *ud)
{
        request_on_drain(req, NULL, NULL);
        if (pager_pump(ud))
                free(ud);
}

void pager_start(struct mx_request *req, const struct mx_pager_ops *ops, int64_t job, int64_t after_run,
                 int64_t limit)
{
        struct mx_pager *p;
        int64_t seq = 0;
        uid_t owner;
        int r = queue_job_owner(req->d->db, job, &owner);

        if (r < 0) {
                request_error_errno(req, r, ops->what);
                return;
        }
        if (after_run > 0) {
                r = queue_job_run_seq(req->d->db, job, after_run, &seq);
                if (r == -ENOENT) {
                        request_error(req, "bad-request",
                                      "--after r%" PRId64 " is not a run of job %" PRId64, after_run, job);
                        return;
                }
                if (r < 0) {
                        request_error_errno(req, r, ops->what);
                        return;
                }
        }
        p = xcalloc(1, sizeof(*p));
        *p = (struct mx_pager){
                .req = req,
                .ops = ops,
                .job = job,
                .after_seq = seq,
                .after_run = after_run,
                .left = limit > 0 ? limit : ops->page,
        };
        request_keep(req, pager_closed, p);
        if (pager_pump(p))
                free(p);
}
