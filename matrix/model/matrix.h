/* SPDX-License-Identifier: MIT */
/*
 * The matrix file and its model (docs/mxmatrix.json.5 is the user's
 * description of every key).
 *
 * A matrix has axes; each axis has values; each value says what it sets (env
 * vars, argv flags) and what the kernel gate must see. A configuration assigns
 * at most one value to each axis, as an array of value indices per axis in
 * file order, -1 meaning "unset" (the axis contributes nothing: the server's
 * default). Cells of the product assign every product axis.
 *
 * Constraints are applied in the order GitHub Actions applies its matrix
 * keywords, followed by ours: product -> exclude -> include -> rules ->
 * known-incompatible marks (expand.h streams the result).
 *
 * Loading (matrix-load.c) rejects the whole file on the first error, reported
 * as "FILE:LINE:COL: key 'PATH': message"; mx_matrix_error_at() formats errors
 * in the same way for code outside this module (the runner validates the keys
 * of target and profiles it owns).
 */
#pragma once

#include "util.h"
#include "kgate.h"
#include "kcat.h"
#include "cover.h"

#include <jansson.h>

/* Limits on what a matrix file controls (docs/mxmatrix.json.5, LIMITS). */
#define MX_MATRIX_FORMAT_VERSION 1
#define MX_MATRIX_MAX_FILE_SIZE (4u * 1024 * 1024)
#define MX_MATRIX_MAX_NAME 64     /* axis, value, alias, feature names */
#define MX_MATRIX_MAX_STRING 4096 /* any other string */
#define MX_MATRIX_MAX_AXES MX_COVER_MAX_PARAMS /* 1024: every axis can be a covering-array parameter */
#define MX_MATRIX_MAX_VALUES 64   /* per axis; = MX_COVER_MAX_VALUES, one uint64_t bit set */
#define MX_MATRIX_MAX_ALIASES 16  /* per value */
#define MX_MATRIX_MAX_ENV 64      /* entries per value, and in target.env */
#define MX_MATRIX_MAX_ARGV 64     /* flags per value */
#define MX_MATRIX_MAX_COMMAND 256 /* target.command words */
/* health (the gate between runs): the command's time limit, and how long processes and memory may take to go. */
#define MX_MATRIX_HEALTH_TIMEOUT_MS 60000
#define MX_MATRIX_HEALTH_SETTLE_MS 30000
/* GPU memory (system memory on unified GPUs) may stay this far above the idle level between runs. */
#define MX_MATRIX_HEALTH_MEMORY_TOLERANCE_MB 2048
#define MX_MATRIX_HEALTH_MEMORY_TOLERANCE_MAX_MB (1024 * 1024)
#define MX_MATRIX_MAX_HEALTH_MS (24LL * 3600 * 1000)
#define MX_MATRIX_MAX_PATTERNS 64 /* per must_see / must_not_see list, and alternatives per entry */
#define MX_MATRIX_MAX_FEATURES 256
#define MX_MATRIX_MAX_CRITERIA 32      /* per feature, and hard constraints per feature or matrix */
#define MX_MATRIX_MAX_GATES 32         /* gate conditions per feature */
#define MX_MATRIX_MAX_REF_ENGINES 16   /* reference.engines */
#define MX_MATRIX_MAX_REF_ROWS 64      /* rows per reference engine, and reference.targets */
#define MX_MATRIX_MAX_CONSTRAINTS 1024 /* entries per constraint list */
#define MX_MATRIX_MAX_COND_DEPTH 8     /* nesting of any/not in one condition */
/* Forbidden patterns one rule may compile into (covering arrays), and all rules and excludes together. */
#define MX_MATRIX_MAX_RULE_PATTERNS 4096
/* A file whose includes interact with rules is validated by streaming its product; bound that. */
#define MX_MATRIX_MAX_VALIDATE_CELLS (UINT64_C(1) << 24)

enum mx_feature_status {
        MX_FEATURE_NOT_STARTED,
        MX_FEATURE_IN_PROGRESS,
        MX_FEATURE_COMPLETED,
        MX_FEATURE_BLOCKED,
        _MX_FEATURE_STATUS_MAX,
        _MX_FEATURE_STATUS_INVALID = -EINVAL,
};
const char *mx_feature_status_to_string(enum mx_feature_status s); /* "not-started", ... */
enum mx_feature_status mx_feature_status_from_string(const char *s);

/* How a success criterion compares a metric (seed 000's "Success Criteria"). */
enum mx_criterion_op {
        MX_CRITERION_MIN_GAIN_PCT,       /* better than the baseline by at least X % */
        MX_CRITERION_MAX_REGRESSION_PCT, /* worse than the baseline by at most X % */
        MX_CRITERION_MAX_INCREASE,       /* at most X units above the baseline */
        MX_CRITERION_MAX_DECREASE,       /* at most X units below the baseline */
        MX_CRITERION_MAX,                /* absolute: at most X */
        MX_CRITERION_MIN,                /* absolute: at least X */
        _MX_CRITERION_OP_MAX,
        _MX_CRITERION_OP_INVALID = -EINVAL,
};
const char *mx_criterion_op_to_string(enum mx_criterion_op op); /* the JSON key, e.g. "min_gain_pct" */
enum mx_criterion_op mx_criterion_op_from_string(const char *s);

/* A metric the benchmark levels report, and which direction is better. */
struct mx_metric_info {
        const char *name;
        const char *unit;
        bool higher_is_better;
        const char *description;
};
/* The metric vocabulary; NULL if name is not a known metric. */
const struct mx_metric_info *mx_metric_lookup(const char *name);
extern const struct mx_metric_info mx_metrics[];
extern const size_t mx_n_metrics;

enum mx_ki_expect {
        MX_KI_EXPECT_FAIL,  /* some level fails */
        MX_KI_EXPECT_CRASH, /* the server dies */
        _MX_KI_EXPECT_MAX,
        _MX_KI_EXPECT_INVALID = -EINVAL,
};
const char *mx_ki_expect_to_string(enum mx_ki_expect e);
enum mx_ki_expect mx_ki_expect_from_string(const char *s);

struct mx_matrix_value {
        char *name;
        char *description;
        char **aliases;
        char **env;  /* "VAR=value", file order */
        char **argv; /* flags added to the command */
        struct mx_kgate_expect expect;
        bool product; /* false: reachable only through include, a feature, a pin or the baseline */
        json_t *node; /* borrowed from the document */
};

struct mx_matrix_axis {
        char *name;
        char *description;
        bool product; /* false: no value of this axis is in the product */
        struct mx_matrix_value *values;
        size_t n_values;
        uint64_t product_set; /* bit v set when values[v] is in the product */
        json_t *node;
};

/* One term of a condition: axis is assigned a value in set (bit v = value v). */
struct mx_matrix_term {
        unsigned axis;
        uint64_t set;
};

/*
 * A condition: every term holds (a term on an unassigned axis never holds),
 * and, when n_any > 0, at least one of any[] holds, and, when not_ is set,
 * not_ does not hold. Exclude entries have terms only.
 */
struct mx_matrix_cond {
        struct mx_matrix_term *terms;
        size_t n_terms;
        struct mx_matrix_cond *any;
        size_t n_any;
        struct mx_matrix_cond *not_;
};

/* "if A then B [else C]": broken by A and not B, or (with else) by not A and not C. */
struct mx_matrix_rule {
        struct mx_matrix_cond if_;
        struct mx_matrix_cond then;
        struct mx_matrix_cond else_;
        bool has_else;
        char *reason;
        json_t *node;
};

struct mx_matrix_exclude {
        struct mx_matrix_cond cond;
        json_t *node;
};

struct mx_matrix_include {
        int *values; /* per axis, -1 = not in the entry */
        json_t *node;
};

struct mx_matrix_known_incompatible {
        struct mx_matrix_cond when;
        char *reason;
        char *workaround; /* what to do instead (seed 003 Known Issues), or NULL */
        char *status;     /* the state ("Open"), or NULL */
        enum mx_ki_expect expect;
        json_t *node;
};

/*
 * Time limits a matrix carries for its target, per matrix and per feature
 * (docs/mxmatrix.json.5, SETTINGS); 0 = not set (the daemon's flag, or the
 * profile's ready timeout). A plan puts them into every run's snapshot.
 */
struct mx_matrix_settings {
        int64_t run_timeout_ms;
        int64_t level_timeout_ms;
        int64_t ready_timeout_ms;
};
/* over's set limits replace base's. */
void mx_matrix_settings_overlay(struct mx_matrix_settings *base, const struct mx_matrix_settings *over);
/* The set limits as {"run_timeout_ms": N, ...} (unset ones left out). */
json_t *mx_matrix_settings_to_json(const struct mx_matrix_settings *s);

/* One success criterion or hard constraint (criteria-load.c parses it; matrix/analysis/criteria.c judges it). */
struct mx_matrix_criterion {
        char *metric;
        enum mx_criterion_op op;
        double value;
        char *note;
        bool has_baseline; /* a declared baseline (seed 000's Baseline column), used when none is measured */
        double baseline;
};

/* How a gate condition compares (seed 001's "TTFT < 1s", "tg32 >= 40"). */
enum mx_gate_op {
        MX_GATE_OP_LT,
        MX_GATE_OP_LE,
        MX_GATE_OP_GT,
        MX_GATE_OP_GE,
        _MX_GATE_OP_MAX,
        _MX_GATE_OP_INVALID = -EINVAL,
};
const char *mx_gate_op_to_string(enum mx_gate_op op); /* "<", "<=", ">", ">=" */
enum mx_gate_op mx_gate_op_from_string(const char *s);
bool mx_gate_op_holds(enum mx_gate_op op, double a, double b); /* a OP b */

enum mx_gate_kind {
        MX_GATE_METRIC,           /* {"metric", "op", "value"}: a number of the feature's measured runs */
        MX_GATE_LEVEL,            /* {"level": "L2"}: every run of the feature that ran the level passed */
        MX_GATE_KERNELS_VERIFIED, /* {"kernels_verified": true}: L1.5 passed on a profiler report */
        MX_GATE_SPEEDUP,          /* {"speedup_vs": F, "metric", "min_percent"}: better than F's by X % */
        _MX_GATE_KIND_MAX,
};

/*
 * A gate between phases (seed 001 "Gate Criteria Between Phases"), declared
 * on the feature it holds back: the condition must hold on the runs of each
 * feature in of[] (by default the feature's depends_on) before it may start.
 */
struct mx_matrix_gate {
        enum mx_gate_kind kind;
        size_t *of; /* feature indices */
        size_t n_of;
        char *metric; /* METRIC, SPEEDUP */
        enum mx_gate_op op;
        double value; /* METRIC: the bound; SPEEDUP: the minimum percent */
        char *level;  /* LEVEL */
        size_t vs;    /* SPEEDUP: feature index */
        char *note;
        json_t *node;
};

/*
 * A decision rule (seed 001 Step 0.4, "If profiling shows... then priority
 * is..."): when the decode-time share of the named kernel categories, added
 * up, compares with pct, the priority is then. Written {"when": "MoE GEMM +
 * MoE routing > 50%", "then": "MoE kernel (P1)"} (kcat-load.c).
 */
#define MX_MATRIX_MAX_DECISION_RULES 32
struct mx_matrix_drule {
        char *when;   /* as written */
        size_t *cats; /* category indices into mx_matrix_kcats(); the count means "other" */
        size_t n_cats;
        enum mx_gate_op op;
        double pct;
        char *then;
        char *note;
        json_t *node;
};

struct mx_matrix_feature {
        char *name;
        char *title;
        char *description;
        int priority; /* 1 = highest */
        int *set;     /* per axis, -1 = not set by the feature */
        char *hypothesis;
        struct mx_matrix_criterion *criteria;
        size_t n_criteria;
        enum mx_feature_status status;
        size_t *depends_on; /* feature indices */
        size_t n_depends_on;
        char *gate;                   /* "gate" given as a string: for people only, never judged */
        struct mx_matrix_gate *gates; /* "gate" given as conditions: what must hold before it may start */
        size_t n_gates;
        /* hard constraints (seed 000): the feature's own when has_hard, else the matrix's */
        struct mx_matrix_criterion *hard;
        size_t n_hard;
        bool has_hard;
        struct mx_matrix_settings settings;
        json_t *node;
};

struct mx_matrix {
        char *path; /* as given; used in error messages */
        char *text; /* the file's contents, for error positions */
        size_t text_len;
        json_t *root;

        char *name;
        char *description;

        /* target: profile and command are ours; everything else belongs to the runner. */
        char *profile;
        char **command;    /* argv template with {placeholders} */
        char **target_env; /* "VAR=value" */
        char *model;
        char *served_model_name;
        json_t *target;   /* borrowed from root */
        json_t *profiles; /* borrowed from root; NULL when absent */
        json_t *profile_resolved; /* owned: the target's profile, normalised (profile.h) */
        json_t *metadata;         /* owned: the metadata section, normalised (metadata.h), or NULL */
        json_t *reference;        /* borrowed from root: competing engines and targets (reports), or NULL */
        json_t *bisect;           /* borrowed from root: the bisect section, checked, or NULL */
        struct mx_matrix_settings settings;
        char *order;         /* settings.order: "fifo", "fail-fast", or NULL (by the number of runs) */
        int *cache_key_axes; /* settings.cache_key_axes: axis indices; runs sharing their values run together */
        size_t n_cache_key_axes;

        struct mx_matrix_axis *axes;
        size_t n_axes;
        unsigned *axes_by_name; /* axis indices sorted by name (bytewise): identity order */

        int *baseline; /* per axis */

        /* hard constraints of every feature (seed 000's three unless the file says otherwise) */
        struct mx_matrix_criterion *hard;
        size_t n_hard;

        struct mx_matrix_feature *features;
        size_t n_features;

        struct mx_matrix_exclude *excludes;
        size_t n_excludes;
        struct mx_matrix_include *includes;
        size_t n_includes;
        struct mx_matrix_rule *rules;
        size_t n_rules;
        struct mx_matrix_known_incompatible *known_incompatible;
        size_t n_known_incompatible;

        /* kernel categories (kcat.h): the file's when has_kcats, else the built-in list */
        struct mx_kcat_def *kcats;
        size_t n_kcats;
        bool has_kcats;
        struct mx_matrix_drule *drules;
        size_t n_drules;

        /* health: checked by the daemon before each run (NULL command: none) */
        char **health_command;
        int64_t health_timeout_ms;
        int64_t health_settle_ms;
        int64_t health_memory_tolerance_mb;
};

struct mx_matrix *mx_matrix_free(struct mx_matrix *m);
DEFINE_POINTER_CLEANUP(struct mx_matrix, mx_matrix_free)

/*
 * Format an error about node (an object, array, string or number of m->root;
 * jansson shares true/false/null, so pass their container and key instead) or,
 * when key is not NULL, about node's member key. Always returns -EINVAL and
 * sets *reterr to "FILE:LINE:COL: key 'PATH': message".
 */
/* mx_matrix_error_at() for the element at index of an array. */
_printf_(5, 6) int mx_matrix_error_index(const struct mx_matrix *m, json_t *array, size_t index, char **reterr,
                                         const char *fmt, ...);
/*
 * Members of obj outside allowed (NULL-terminated) are errors: "unknown key 'K' in WHAT (known keys: ...)",
 * at the member's position; 0 when every member is allowed.
 */
int mx_matrix_check_keys(const struct mx_matrix *m, json_t *obj, const char *const *allowed, const char *what,
                         char **reterr);
_printf_(5, 6) int mx_matrix_error_at(const struct mx_matrix *m, json_t *node, const char *key,
                                      char **reterr, const char *fmt, ...);
/* The same with a va_list; index (SIZE_MAX for none) names an element of the array node. */
int mx_matrix_verror_at(const struct mx_matrix *m, json_t *node, const char *key, size_t index,
                        char **reterr, const char *fmt, va_list ap) _printf_(6, 0);
/* What a JSON value is, for errors: "an object", "a string", "null", ... */
const char *mx_json_kind(json_t *v);

/* "FILE:LINE:COL" of node (as above), for messages that point at a second place. */
char *mx_matrix_location(const struct mx_matrix *m, json_t *node);

/* A valid axis, value, alias or feature name: [A-Za-z0-9][A-Za-z0-9._+-]*, MX_MATRIX_MAX_NAME at most. */
bool mx_matrix_name_valid(const char *s);

/* Look up by name; -1 when absent. Values match by name or alias. */
int mx_matrix_axis_index(const struct mx_matrix *m, const char *name);
int mx_matrix_value_index(const struct mx_matrix_axis *a, const char *name_or_alias);
int mx_matrix_feature_index(const struct mx_matrix *m, const char *name);

/* A fresh configuration with every axis unset (caller frees). */
int *mx_config_new(const struct mx_matrix *m);
int *mx_config_copy(const struct mx_matrix *m, const int *config);
/* Set on config the axis values feature f sets; its other axes stay as they are. */
void mx_feature_apply(const struct mx_matrix *m, const struct mx_matrix_feature *f, int *config);
bool mx_config_equal(const struct mx_matrix *m, const int *a, const int *b);
/* "axis=value,axis=value" in file order, for messages ("" when nothing is assigned). */
char *mx_config_describe(const struct mx_matrix *m, const int *config);

/* "kernel!=cutlass, tile=auto, spec in {a, b}, any(x=1 | y=2), not(z=3)": a condition for people. */
char *mx_matrix_cond_describe(const struct mx_matrix *m, const struct mx_matrix_cond *c);
/* Free what a criterion owns (not c itself). */
void mx_criterion_done(struct mx_matrix_criterion *c);
/* "tg32_tps >= +10% vs baseline": a criterion for people. */
char *mx_criterion_describe(const struct mx_matrix_criterion *c);


void mx_kcat_load_done(struct mx_matrix *m);

bool mx_matrix_cond_matches(const struct mx_matrix_cond *c, const int *config);
/* Does the condition (any/not included) mention axis? */
bool mx_matrix_cond_mentions(const struct mx_matrix_cond *c, size_t axis);
void mx_matrix_cond_done(struct mx_matrix_cond *c);
/* Does the configuration break rule i? */
bool mx_matrix_rule_broken(const struct mx_matrix *m, size_t i, const int *config);
/*
 * The number of forbidden patterns rule i compiles into over the unpinned
 * product (pins only ever lower it), or SIZE_MAX when more than
 * MX_MATRIX_MAX_RULE_PATTERNS.
 */
size_t mx_matrix_rule_patterns(const struct mx_matrix *m, size_t i);
/* The index of the first exclude entry that matches, or -1. */
int mx_matrix_excluded(const struct mx_matrix *m, const int *config);
/* The index of the first rule the configuration breaks, or -1. */
int mx_matrix_broken_rule(const struct mx_matrix *m, const int *config);
/* Indices of the known-incompatible entries that match, in file order; returns how many. */
size_t mx_matrix_known_incompatible(const struct mx_matrix *m, const int *config, size_t *ret_indices);

/*
 * GitHub's include step for one configuration: original[a] says which axes
 * the include entries may not overwrite. Entries that match (set no original
 * axis to another value) add their pairs; later entries may overwrite what
 * earlier ones added. Marks matched entries in matched (may be NULL) and
 * returns whether any entry matched.
 */
bool mx_matrix_apply_includes(const struct mx_matrix *m, int *config, const bool *original, bool *matched);

/* The environment of a configuration: target.env, then each assigned axis value's env in axis order. */
char **mx_config_env(const struct mx_matrix *m, const int *config);
/* The argv flags of a configuration's assigned values, in axis order. */
char **mx_config_flags(const struct mx_matrix *m, const int *config);
/* target.command followed by the flags (placeholders left for the runner). */
char **mx_config_argv(const struct mx_matrix *m, const int *config);
/* The merged kernel-gate expectations of the assigned values (caller calls mx_kgate_expect_done()). */
void mx_config_expect(const struct mx_matrix *m, const int *config, struct mx_kgate_expect *ret);

/*
 * A covering-array model of the product: one parameter per product axis (in
 * file order), its product values as the parameter's values, the exclude
 * entries and rules as forbidden patterns. With pins (per axis, -1 = free;
 * may be NULL), a pinned axis becomes a parameter with the one pinned value
 * (even a non-product value or a non-product axis), and terms on pinned axes
 * become constants.
 */
struct mx_matrix_cover {
        struct mx_cover_model model;
        unsigned *param_axis; /* parameter -> axis */
        int **param_values;   /* parameter -> its values as value indices of the axis */
        unsigned *n_values;
        struct mx_cover_forbid *forbidden;
        struct mx_cover_term *terms;
        size_t n_params;
};
void mx_matrix_cover_build(const struct mx_matrix *m, const int *pins, bool with_rules,
                           struct mx_matrix_cover *ret);
/*
 * As mx_matrix_cover_build() with the rules, and the known-incompatible entries forbidden too,
 * so that every row can pass; set_aside (n_known_incompatible entries, zeroed by the caller)
 * marks the entries that became patterns (not those the pins alone satisfy).
 */
void mx_matrix_cover_build_passable(const struct mx_matrix *m, const int *pins, bool *set_aside,
                                    struct mx_matrix_cover *ret);
void mx_matrix_cover_done(struct mx_matrix_cover *c);
/* Convert a covering-array row to a configuration (non-product pins set too) and back (-1 if not
 * representable). */
void mx_matrix_cover_row_to_config(const struct mx_matrix *m, const struct mx_matrix_cover *c,
                                   const int *pins, const int *row, int *config);
int mx_matrix_cover_config_to_row(const struct mx_matrix_cover *c, const int *config, int *row);

/* The functions of the files beside this one, which take these types. */
#include "criteria-load.h"
#include "kcat-load.h"
#include "matrix-load.h"
#include "matrix-warn.h"
