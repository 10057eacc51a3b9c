/* SPDX-License-Identifier: MIT */
/* The attempts' Slurm columns (migration 009): the executor's records, for show and start-up recovery. */
#pragma once

#include "db.h"

#include <jansson.h>

/* 1 when the attempt was submitted to Slurm (start-up recovery leaves it to the executor), 0 if not. */
int slurm_attempt_has_job(struct mx_db *db, int64_t attempt);
/* Adds "slurm": {job_name, job_id, node, state} to an attempt's JSON when it has a job; 1 when added. */
int slurm_attempt_json(struct mx_db *db, int64_t attempt, json_t *into);

/* Record what the executor knows of the attempt's job: the name it submitted, Slurm's id, node, state. */
int slurm_attempt_set_job_name(struct mx_db *db, int64_t attempt, const char *name);
int slurm_attempt_set_job_id(struct mx_db *db, int64_t attempt, int64_t id);
int slurm_attempt_set_node(struct mx_db *db, int64_t attempt, const char *node);
int slurm_attempt_set_state(struct mx_db *db, int64_t attempt, const char *state);
/* How often a run was lost to a node failure, preemption or boot failure; 0 when it cannot be read. */
int slurm_run_lost_count(struct mx_db *db, int64_t run);

/* Open attempts with a Slurm job name: the runs a previous daemon left in flight. */
struct slurm_open_attempt {
        int64_t attempt_id, run, job, job_id;
        int attempt;
        char *config_key, *job_name, *node; /* NULL: none stored */
        bool cancel_req;                    /* the run was cancelled */
};
int slurm_open_attempts(struct mx_db *db, struct slurm_open_attempt **ret, size_t *ret_n);
void slurm_open_attempts_free(struct slurm_open_attempt *a, size_t n);
