/* SPDX-License-Identifier: MIT */
/*
 * A page of a job's runs streamed a batch at a time (show JOB, report):
 * pager.c explains.
 */
#pragma once

#include "control.h"

struct mx_pager_ops {
        const char *what; /* the method, in errors */
        int batch;        /* runs read and sent at a time */
        int64_t page;     /* runs of a page unless the client asks for another size */
        /* Up to n runs of job after the run at after_seq in plan order, as queue_job_runs_json(). */
        int (*read)(struct mx_db *db, int64_t job, int64_t after_seq, int n, json_t **ret_runs,
                    int64_t *ret_last_seq, bool *ret_more);
        /*
         * The page is out: answer req. job is queue_job_json()'s (borrowed), after_run the last
         * run sent (0: none), more whether runs follow the page.
         */
        void (*reply)(struct mx_request *req, json_t *job, int64_t after_run, bool more);
};

/*
 * At most limit (<= 0: ops->page) of the job's runs after run after_run (0:
 * from the first); ops must outlive the request.
 */
void pager_start(struct mx_request *req, const struct mx_pager_ops *ops, int64_t job, int64_t after_run,
                 int64_t limit);
