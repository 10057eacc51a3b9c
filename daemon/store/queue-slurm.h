/* SPDX-License-Identifier: MIT */
/* The attempts' Slurm columns (migration 009), for show and start-up recovery. */
#pragma once

#include "db.h"

#include <jansson.h>

/* 1 when the attempt was submitted to Slurm (start-up recovery leaves it to the executor), 0 if not. */
int slurm_attempt_has_job(struct mx_db *db, int64_t attempt);
/* Adds "slurm": {job_name, job_id, node, state} to an attempt's JSON when it has a job; 1 when added. */
int slurm_attempt_json(struct mx_db *db, int64_t attempt, json_t *into);
