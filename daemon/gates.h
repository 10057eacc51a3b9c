/* SPDX-License-Identifier: MIT */
/*
 * The daemon's side of success criteria and gates: which matrix and feature
 * a job belongs to, which jobs measured each feature, their evidence from
 * the queue (queue_job_evidence_json), judged by criteria.c.
 */
#pragma once

#include "control.h"

/*
 * The success criteria of a job (queue_job_json()'s object): criteria.h's
 * object, or {"overall": "none", "why"} when the job's feature is not a
 * feature of its matrix or that matrix cannot be read. A new reference.
 */
json_t *gates_job_criteria(struct mx_daemon *d, json_t *job);

/* The gates method: every feature of the daemon's matrix, may it start and what holds it back. */
void gates_method(struct mx_request *req);
