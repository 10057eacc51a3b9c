/* SPDX-License-Identifier: MIT */
/*
 * What the analyses of a job read from the database (control/attribute.c,
 * control/report.c): every attempt of its runs for attribution, the job a
 * confirmation job confirms, its strategy and matrix digest, and its runs
 * by pages in plan order. Read-only; non-logging.
 */
#pragma once

#include "db.h"

#include <jansson.h>

/* One attempt of a run (or a run without attempts: outcome NULL), borrowed for the callback. */
struct evidence_attempt {
        int64_t run;
        json_t *config;          /* the run's stored configuration, as parsed (NULL: not JSON) */
        const char *outcome;     /* NULL: no attempt, or one that has not ended */
        const char *crash_class; /* NULL: none */
        json_t *levels;          /* [{"level", "verdict"}] of the attempt */
};
/*
 * cb for every attempt of every run of job, in plan order then attempt order;
 * a negative return of cb stops and is returned. 0 or -errno.
 */
int evidence_attempts(struct mx_db *db, int64_t job, int (*cb)(const struct evidence_attempt *a, void *ud),
                      void *ud);
/* The job a confirmation job confirms (its submit request's "confirm"), 0 if none; -ENOENT: no such job. */
int evidence_confirmed_job(struct mx_db *db, int64_t job, int64_t *ret);
/* The strategy the job was planned with (NULL when none), or -ENOENT. */
int evidence_job_strategy(struct mx_db *db, int64_t job, char **ret);
/* The digest of the matrix file the job was planned from, or -ENOENT. */
int evidence_job_digest(struct mx_db *db, int64_t job, char **ret);
/* Up to n run ids (and seqs) of job after after_seq in plan order; *ret_more: runs follow them. */
int evidence_run_page(struct mx_db *db, int64_t job, int64_t after_seq, int n, int64_t *ids, int64_t *seqs,
                      int *ret_n, bool *ret_more);
