/* SPDX-License-Identifier: MIT */
/*
 * Bisections in the database (schema/migrations/010-bisect.sql): the
 * bisection, its steps (one commit each: checkout, build, runs) and the runs
 * each step queued. Everything run/bisect.c needs to resume after a restart.
 * Non-logging.
 */
#pragma once

#include "db.h"

#include <jansson.h>
#include <sys/types.h>

struct bstore_new {
        uid_t uid;
        gid_t gid;
        const char *user_name, *repo, *good_arg, *bad_arg, *config_key;
        const char *metric; /* NULL: level mode */
        double threshold;   /* percent, with metric */
        const char *level;  /* NULL: metric mode */
        json_t *template;   /* the job and run snapshot every step submits */
};

int bstore_create(struct mx_db *db, const struct bstore_new *b, int64_t *ret_id);
/*
 * A bisection as JSON: {id, uid, state, repo, good, bad, config_key, metric,
 * threshold, level, commits, template, result, message, created_at,
 * finished_at, steps: [{id, idx, sha, state, worktree, build_log, decision,
 * message, runs: [{run, job, side, state, result, verdicts, l4}]}]}. -ENOENT if none.
 */
int bstore_get(struct mx_db *db, int64_t id, json_t **ret);
/* The bisections still resolving or running, oldest first. */
int bstore_active(struct mx_db *db, int64_t **ret_ids, size_t *ret_n);
/* The good and bad commits as full SHAs and the first-parent commits from good to bad. */
int bstore_resolved(struct mx_db *db, int64_t id, const char *good, const char *bad, json_t *commits);
/* The bisection ended: done, failed or cancelled, with its result (may be NULL) and a message. */
int bstore_end(struct mx_db *db, int64_t id, const char *state, json_t *result, const char *message);
/* A commit tried: its step starts building. */
int bstore_step_add(struct mx_db *db, int64_t bisection, int64_t idx, const char *sha, const char *worktree,
                    const char *build_log, int64_t *ret_step);
/* A step's state (building, running, good, bad, skip), with what decided and why. */
int bstore_step_set(struct mx_db *db, int64_t step, const char *state, json_t *decision, const char *message);
/* The runs of job, in plan order, belong to step; sides[i] names the i-th run's side. */
int bstore_step_link(struct mx_db *db, int64_t step, int64_t job, const char *const *sides, size_t n);
/* The L4 metrics documents of the bisection's finished runs of side 'reference'. */
int bstore_reference_l4(struct mx_db *db, int64_t bisection, json_t **ret);
/* How many bisections of uid are resolving or running. */
int bstore_count_active(struct mx_db *db, uid_t uid, int64_t *ret);
