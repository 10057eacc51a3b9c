/* SPDX-License-Identifier: MIT */
/*
 * Plans: the runs a submission "feature=X [axis=value...]" makes.
 *
 * X is a feature of the matrix file by name or id ("P1": the feature of
 * priority 1), or an axis value by name or alias ("cutlass", "gemm"), or
 * "axis=value". The default strategy follows seed
 * 001's test protocol:
 *
 *   baseline, feature-off   the baseline (feature disabled)
 *   feature-on               the feature alone on the baseline
 *   feature-off:stack(P..)   the merged stack: the baseline with every completed
 *                       ("merged") feature applied in priority order (seed
 *                       003's Configuration Combinations C1-C4), feature off
 *   feature-on:stack(P..)    the feature on top of the merged stack
 *   prior:<P>        each completed feature P alone ("all previously merged
 *                       features still work")
 *   with:<P>              the feature with each completed feature P
 *   vary:<axis>=<value>   one factor at a time: the feature (on the merged stack,
 *                       when there is one) with every other product value of
 *                       every axis the feature does not set
 *
 * Strategies pairwise and 3way add the rows of a covering array of strength
 * 2 or 3 over the product with the feature's axes pinned (the feature-on, L5 and
 * L6 runs are its first rows; reason "cover"), with the known-incompatible
 * configurations forbidden in its rows (each tested once: by a run already
 * planned, else one with reason "set-aside"); full adds every valid
 * configuration of the product with the feature pinned (reason "full").
 *
 * Pins apply to every run, the baseline included; a pin that repeats the
 * feature's own assignment is dropped (with a note), so that the feature-off
 * runs keep the baseline's value. A run planned for several
 * reasons is listed once with all of them. Runs that match an exclude entry or
 * break a rule are left out and listed as skipped, with the place in the file
 * that removed them. Runs that match a known-incompatible entry are kept and
 * marked. The daemon calls this at submit time and stores each run.
 */
#pragma once

#include "matrix.h"

#define MX_PLAN_DEFAULT_MAX_RUNS 10000
#define MX_PLAN_MAX_PINS MX_MATRIX_MAX_AXES

enum mx_plan_strategy {
        MX_PLAN_DEFAULT,
        MX_PLAN_PAIRWISE,
        MX_PLAN_3WAY,
        MX_PLAN_FULL,
        _MX_PLAN_STRATEGY_MAX,
        _MX_PLAN_STRATEGY_INVALID = -EINVAL,
};
const char *mx_plan_strategy_to_string(enum mx_plan_strategy s); /* "default", "pairwise", "3way", "full" */
enum mx_plan_strategy mx_plan_strategy_from_string(const char *s);

struct mx_plan_request {
        const char *feature;
        char *const *pins; /* "axis=value" strings, NULL-terminated or NULL */
        enum mx_plan_strategy strategy;
        uint64_t seed;   /* covering-array seed */
        size_t max_runs; /* refuse larger plans; 0 = MX_PLAN_DEFAULT_MAX_RUNS */
};

struct mx_plan_run {
        int *config; /* per axis, -1 = unset */
        char *key;   /* identity (ident.h) */
        uint64_t hash;
        char **reasons;
        char **env;   /* "VAR=value": target.env, then the values' env in axis order */
        char **flags; /* the values' argv flags in axis order */
        char **argv;  /* target.command + flags, placeholders left for the runner */
        struct mx_kgate_expect expect;
        size_t *known_incompatible; /* indices into m->known_incompatible */
        size_t n_known_incompatible;
};

struct mx_plan_skip {
        int *config;
        char *key;
        char **reasons; /* why it was planned */
        char *why;      /* why it was left out, for people ("breaks the rule at FILE:L:C: reason") */
        char *where;    /* FILE:LINE:COL of that rule or exclude entry */
};

struct mx_plan {
        const struct mx_matrix *m; /* borrowed: must outlive the plan */
        char *input;               /* X as given */
        char *resolved;            /* "feature 'cutlass-gemm'" or "kernel=cutlass" */
        int feature;               /* the feature X names or whose assignment it equals, or -1 */
        int *assignment;           /* what X sets, per axis */
        int *pins;                 /* per axis */
        int *stack;                /* per axis: what the merged (completed) features set, -1 elsewhere */
        char *stack_ids;           /* "P1,P2": the merged features in the stack, NULL when none */
        size_t *stack_features;    /* their indices, in the order they were applied */
        size_t n_stack_features;
        enum mx_plan_strategy strategy;
        uint64_t seed;
        unsigned cover_t;  /* strength of the covering array (pairwise 2, 3way 3), else 0 */
        size_t cover_rows; /* rows of that covering array, its first rows included */
        struct mx_plan_run *runs;
        size_t n_runs;
        struct mx_plan_skip *skipped;
        size_t n_skipped;
        char **notes; /* things the user should know: unmet dependencies, empty L5 ... */
        struct mx_matrix_settings settings; /* the matrix's, the feature's over them: into every snapshot */
};

/*
 * Resolve X: *ret_feature (or -1) and *ret_assignment (per axis, caller
 * frees). -ENOENT when nothing matches (the message lists close names),
 * -EINVAL when X is ambiguous (the message lists the candidates).
 */
int mx_plan_resolve_feature(const struct mx_matrix *m, const char *x, int *ret_feature, int **ret_assignment,
                            char **reterr);
/* Parse "axis=value" (value by name or alias). */
int mx_plan_parse_pin(const struct mx_matrix *m, const char *s, int *ret_axis, int *ret_value,
                      char **reterr);
/*
 * The axis=value pins a client sent ({"axis": "value"}, where a value may go
 * on as a whole configuration key, "a": "1,b=2,c=3", as show and history
 * print one) as one {"axis": "value"} each. -EINVAL (*reterr names it,
 * escaped) for a part that is not axis=value and for an axis pinned twice
 * to different values: nothing a client wrote is dropped unread.
 */
int mx_plan_split_pins(json_t *pins, json_t **ret, char **reterr);

int mx_plan_build(const struct mx_matrix *m, const struct mx_plan_request *req, struct mx_plan **ret,
                  char **reterr);
struct mx_plan *mx_plan_free(struct mx_plan *p);
DEFINE_POINTER_CLEANUP(struct mx_plan, mx_plan_free)

/*
 * A plan of given configurations (n x m->n_axes values), each planned for
 * reasons[i]; they go through exclude, include and rules as planned runs do,
 * and one configuration planned twice is one run with both reasons. input
 * names the plan ("confirm job 7"). For follow-up runs (confirm.h).
 */
int mx_plan_build_explicit(const struct mx_matrix *m, const char *input, const int *configs,
                           char *const *reasons, size_t n, size_t max_runs, struct mx_plan **ret, char **reterr);

/* Number of runs marked known-incompatible. */
size_t mx_plan_n_known_incompatible(const struct mx_plan *p);

/* The plan as one JSON object (docs/mxmatrix.json.5, PLANS, documents the shape). */
json_t *mx_plan_to_json(const struct mx_plan *p);
/*
 * One run as JSON, the snapshot the daemon stores: {"key", "hash", "config",
 * "reasons", "env", "flags", "argv", "expect", "known_incompatible",
 * "settings": {"run_timeout_ms", "level_timeout_ms", "ready_timeout_ms"}
 * (the set ones)}.
 */
json_t *mx_plan_run_to_json(const struct mx_plan *p, const struct mx_plan_run *r);
/* A configuration as a JSON object axis -> value name (assigned axes only, file order). */
json_t *mx_config_to_json(const struct mx_matrix *m, const int *config);
/* Kernel-gate expectations as JSON: {"log": {"must_see": [[...]], "must_not_see": [...]}, "kernels": ...}.
 */
json_t *mx_expect_to_json(const struct mx_kgate_expect *e);
/* The reverse, for the runner reading a snapshot; -EINVAL on a malformed object. */
int mx_expect_from_json(json_t *j, struct mx_kgate_expect *ret);
