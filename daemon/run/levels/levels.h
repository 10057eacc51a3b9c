/* SPDX-License-Identifier: MIT */
/*
 * Test levels (seed 001 Phase 6) as modules, and the driver that runs them
 * against one ready server.
 *
 * The target runner (runner-target.c) owns the server's life: start, ready
 * probe, health, stop. It creates a set of levels (mx_levels_new) when it
 * starts the server, feeds it every log line, hands it the ready server
 * (mx_levels_run), and, once the server is gone, ends it (mx_levels_end).
 * The driver runs the selected levels one after the other in the seed's
 * order (the catalogue, matrix/base/levelcat.h); a level that fails skips the ones
 * after it unless its continue_on_fail setting says to go on.
 *
 * A level is one file in daemon/run/levels/ implementing struct mx_level_ops and
 * one row in the table of levels.c (and one in the catalogue). Its life:
 *
 *   new        when the server is started, before it is ready: set up state
 *              (a refusal refuses the run's start, e.g. malformed expectations)
 *   log_line   every line of the server's log from the start (optional)
 *   run        its turn: the server is ready; it works on the event loop and
 *              ends with mx_level_finish() (its verdict, now) or
 *              mx_level_pending() (its verdict needs the server gone: L1.5's
 *              profiler report, L3's leftover processes), never both
 *   cancel     stop in-flight work at once; no finish follows (the driver
 *              records the verdict: fail with the reason of the stop, or
 *              skipped for a cancelled run)
 *   before_stop optional: every level had its turn and the server still runs
 *              (L1.5 reads the server's counters for a whole-life capture);
 *              must end with mx_level_before_stop_done(), the server is
 *              stopped after the last one
 *   after_stop for a pending level, once the server and everything it
 *              started is gone: must call mx_level_finish()
 *   metrics    what the level has measured so far (optional), for the
 *              verdict the driver records when the level could not finish
 *   free
 *
 * Each level's settings come resolved (defaults filled in) from the run's
 * snapshot ("level_settings"). Metrics are a JSON object; artifacts a JSON
 * array of {"name", "path" (relative to the run directory), "what"} for files
 * the level wrote as evidence, so that `mxmatrix show rN` can point at them.
 */
#pragma once

#include "kgate.h"    /* enum mx_verdict */
#include "levelcat.h" /* the catalogue */
#include "runner.h"

#include <event2/event.h>
#include <jansson.h>
#include <sys/types.h>

struct crash_scan;
struct logcap;
struct mx_http;
struct mx_levels;
struct mx_level;
struct mx_sample_summary;

/*
 * One memory sample of the server (L3's leak check, L4's drift; the GPU
 * sampler plugs in here). Three figures of different kinds, never added or
 * compared with each other (memtrack.h picks one per comparison).
 */
struct mx_mem_sample {
        int64_t t_mono_us;
        uint64_t server_bytes; /* memory of the server's process tree (PSS when known, else RSS); 0: unknown */
        uint64_t gpu_bytes;    /* device memory of the server's compute processes; 0: unknown */
        uint64_t sys_used_bytes; /* MemTotal - MemAvailable; 0: unknown */
        bool unified;            /* the GPU has no memory of its own (the GB10): sys_used_bytes is the figure */
        unsigned n_procs;        /* processes counted in server_bytes */
        const char *source;      /* static string naming where server_bytes came from */
};

/*
 * Take a sample: 0, or a negative errno. The default reads
 * /proc/PID/smaps_rollup of every process carrying the run's tag
 * (mx_mem_sample_pss); the GPU and memory sampler replaces it.
 */
typedef int (*mx_mem_sample_fn)(void *ud, struct mx_mem_sample *ret);

/* Everything a level may use. Borrowed for the level's lifetime; strings are stable. */
struct mx_level_ctx {
        struct event_base *base;
        struct mx_http *http;
        const char *url;     /* http://host:port of the server */
        /*
         * Headers every request to the server carries ("Authorization: Bearer KEY" from the profile's
         * api_key or api_key_env), NULL-terminated, or NULL; api_key is the key itself (L4's engine).
         */
        const char *const *headers;
        const char *api_key;
        const char *model;   /* the served model name for requests, or NULL */
        const char *run_dir; /* the attempt's directory: evidence goes there */
        const char *tag;     /* MXMATRIX_RUN_TAG of every process of the run */
        json_t *spec;     /* the run's snapshot */
        json_t *profile;  /* the snapshot's server profile */
        json_t *settings; /* this level's settings, every one present */
        struct logcap *log;       /* logcap_note() into the run's log */
        struct crash_scan *crash; /* crash signatures seen in the log so far */
        char *const *values;      /* placeholder values (placeholder.h), for paths in the profile */
        double ready_s;           /* seconds from start to ready (set when the server became ready) */
        mx_mem_sample_fn mem_sample;
        void *mem_ud;
        /*
         * The GPU sampler's window (sampler.h) with mem_ud: begin true starts
         * it; NULL when the run has no sampler. L4 reads its throttle
         * reasons, clocks and foreign processes. NULL hook: none.
         */
        const struct mx_sample_summary *(*gpu_window)(void *ud, bool begin);
        /*
         * The GPU's total energy counter in mJ now (sampler.h: mx_sampler_energy_mj), with mem_ud: 0, or a
         * negative errno with a reason (-EOPNOTSUPP: the GPU does not report energy). NULL: no sampler.
         */
        int (*gpu_energy)(void *ud, int64_t *ret_mj, char **reterr);
        const struct mx_history *history; /* stored results of earlier runs (runner.h), or NULL */
};

/* How the server's life ended, for after_stop and for levels that could not run. */
struct mx_level_stop {
        bool ready;            /* the server became ready */
        bool crashed;          /* it exited on its own or its engine died */
        bool cancelled;        /* cancelled or interrupted: no verdict on what did not run */
        const char *why;       /* the run's failure, or NULL ("levels done") */
        size_t n_leftovers;    /* processes of the run that outlived the stop */
};

struct mx_level_ops {
        const char *name; /* as in the catalogue */
        int (*new)(const struct mx_level_ctx *ctx, struct mx_level **ret, char **reterr);
        void (*log_line)(struct mx_level *l, const char *line, size_t len);
        void (*run)(struct mx_level *l);
        void (*cancel)(struct mx_level *l);
        void (*before_stop)(struct mx_level *l);
        void (*after_stop)(struct mx_level *l, const struct mx_level_stop *st);
        json_t *(*metrics)(struct mx_level *l); /* a new reference, or NULL */
        void (*free)(struct mx_level *l);
};

/* The driver's part of every level: a level's own struct starts with it. */
struct mx_level {
        const struct mx_level_ops *ops;
        const struct mx_level_def *def;
        const struct mx_level_ctx *ctx;
        struct mx_levels *owner;
};

/*
 * The level's verdict, with its metrics and artifacts (both taken over, may
 * be NULL) and a message (may be NULL for a pass). Once per level; may be
 * called from run() itself.
 */
void mx_level_finish(struct mx_level *l, enum mx_verdict v, json_t *metrics, json_t *artifacts, const char *fmt,
                     ...) _printf_(5, 6);
/* The level's work with the server is done; its verdict comes from after_stop(). */
void mx_level_pending(struct mx_level *l);
/* The level's before_stop() is over: the next one runs, or the server is stopped. */
void mx_level_before_stop_done(struct mx_level *l);

/*
 * The verdict and metrics (borrowed, may be NULL) another level of the same
 * run recorded: L4 asks for the kernel gate's (L1.5) to say whether its
 * numbers are valid, L5 for L4's numbers. -ENOENT when that level is not
 * selected, -EAGAIN when it has no verdict yet. A gated verdict still held
 * for the gate is given as it stands.
 */
int mx_level_sibling(struct mx_level *l, const char *name, enum mx_verdict *ret_verdict,
                     json_t **ret_metrics);

/*
 * The line of a failed assumption (probe.h's check names: "tokenize",
 * "context", "cache_defeat", ...) that L1's probe recorded in this attempt,
 * or NULL: it passed, was not measured, or no probe ran. Borrowed.
 */
const char *mx_level_assumption_failed(struct mx_level *l, const char *check);
/*
 * Call at the start of run(): when one of checks (NULL-terminated) failed in
 * L1's probe, the level fails now with "assumption CHECK failed: LINE"
 * instead of producing numbers, and true is returned.
 */
bool mx_level_fail_on_assumptions(struct mx_level *l, const char *const *checks);

/* The level's time limit (its timeout setting, else the daemon's --level-timeout), for its requests. */
int64_t mx_level_timeout_ms(struct mx_level *l);

/* The implementations, by catalogue name (levels.c); NULL when none. */
const struct mx_level_ops *mx_level_ops_find(const char *name);
extern const struct mx_level_ops *const mx_level_table[];

/* What the driver tells the runner. */
struct mx_levels_hooks {
        void (*started)(void *ud, const char *level);
        void (*recorded)(void *ud, const struct mx_level_result *r);
        /* Every level had its turn (or the rest were skipped): the runner may stop the server. */
        void (*done)(void *ud);
        /* A level ran past its timeout: the runner ends the run as timed out. */
        void (*timed_out)(void *ud, const char *level);
};

/*
 * The levels of a run: wanted is the selection (names from the catalogue);
 * ctx is copied per level with its settings from the snapshot. Levels
 * without an implementation are recorded as skipped when the run ends.
 */
int mx_levels_new(const struct mx_level_ctx *ctx, json_t *wanted, int64_t default_timeout_ms,
                  const struct mx_levels_hooks *hooks, void *ud, struct mx_levels **ret, char **reterr);
struct mx_levels *mx_levels_free(struct mx_levels *lv);
void mx_levels_log_line(struct mx_levels *lv, const char *line, size_t len);
/* The server is ready after ready_s seconds: run the levels in order. */
void mx_levels_run(struct mx_levels *lv, double ready_s);
/* The server is being stopped before the levels were done: cancel the running level. */
void mx_levels_abort(struct mx_levels *lv);
/* The server is gone: pending levels decide, every level not recorded yet is. Once. */
void mx_levels_end(struct mx_levels *lv, const struct mx_level_stop *st);
/* The level running now, or NULL. */
const char *mx_levels_current(struct mx_levels *lv);
/* The first failed level's message as "L2: ...", or NULL: for the run's message. */
const char *mx_levels_failure(struct mx_levels *lv);
/* Is any selected level implemented and wanting the server? (L1.5 alone does not.) */
bool mx_levels_wanted(struct mx_levels *lv, const char *name);

/* The run's log, once it is open (the levels are created before it, to refuse a bad run early). */
void mx_levels_set_log(struct mx_levels *lv, struct logcap *log);

/* Is the level waiting for the stop to decide (L1.5 with expectations)? */
bool mx_levels_pending(struct mx_levels *lv, const char *name);
