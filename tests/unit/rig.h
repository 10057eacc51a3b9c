/* SPDX-License-Identifier: MIT */
/*
 * A rig that drives one runner on a private event loop, as the scheduler
 * does, recording every callback: the pid, each level's verdict (and how
 * often it came), the outcome. For the tests of the runners and the levels
 * (test-runner, test-levels): rig_finish() checks that finished() came once,
 * each level at most once, and that nothing carrying the run's tag is left.
 */
#pragma once

#include "http.h"
#include "proc-reaper.h"
#include "proc.h"
#include "runner-util.h"
#include "test.h"

/* The longest rig_run_until() waits before the test fails. */
#define RIG_LOOP_TIMEOUT_MS 120000

struct rig {
        struct event_base *base;
        struct proc_reaper *reaper;
        struct mx_http *http;
        char *dir, *tag;
        json_t *spec, *levels;
        const struct mx_runner_ops *ops;
        struct mx_runner *runner;
        pid_t pid;
        json_t *recorded; /* {level: {"verdict", "message", "times", "metrics", "artifacts"}} */
        unsigned n_finished;
        enum mx_outcome outcome;
        char *crash_class, *message;
        const struct mx_history *history; /* handed to the runner (L2's and L5's stored results), or NULL */
        int64_t loop_timeout_ms;          /* rig_run_until()'s limit; 0: RIG_LOOP_TIMEOUT_MS */
};

/* A rig for one run of spec (taken over) with these levels. */
void rig_init(struct rig *g, const char *name, json_t *spec, const char *levels);
/* Start the runner; its return value, and its reason in *reterr on failure. */
int rig_try_start(struct rig *g, int64_t level_timeout_ms, char **reterr);
void rig_start(struct rig *g, int64_t level_timeout_ms);
/* Run the loop until cond(g) holds, failing the test after RIG_LOOP_TIMEOUT_MS. */
void rig_run_until(struct rig *g, bool (*cond)(struct rig *g), const char *what);
bool rig_finished(struct rig *g);
/* The loop a little longer, so a second finished() or a late callback would show. */
void rig_run_a_while(struct rig *g, int ms);
/* Kill whatever still carries the tag (after a failed assertion's evidence was taken). */
size_t rig_kill_tagged(const char *tag);
/* Wait for the end, check the common promises, free the runner. */
void rig_finish(struct rig *g);
void rig_done(struct rig *g);
const char *rig_verdict(struct rig *g, const char *level);
/* JSON text with placeholders filled by xasprintf(), parsed; the test fails on bad JSON. */
json_t *rig_json_text(const char *fmt, ...) _printf_(1, 2);
