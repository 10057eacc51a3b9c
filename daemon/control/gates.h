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
/*
 * The same criteria, and with ret_summary show JOB's and follow's summary
 * (summary.h), from one read of the job's evidence. New references.
 */
void gates_job_answer(struct mx_daemon *d, json_t *job, json_t **ret_criteria, json_t **ret_summary);

/* The gates method: every feature of the daemon's matrix, may it start and what holds it back. */
void gates_method(struct mx_request *req);
