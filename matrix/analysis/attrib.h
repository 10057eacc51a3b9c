/* SPDX-License-Identifier: MIT */
/*
 * Failure attribution for a sweep (seed 001 Level 6: "Record any incompatible
 * combinations"): from runs, each a configuration (axis=value pairs) and its
 * results, find for every failure class the smallest sets of axis values that
 * explain it.
 *
 * A set S explains class C when no passing configuration holds S and at least
 * one configuration failing with C does; configurations failing another way
 * neither support nor veto S (two causes may meet in one run). S is minimal
 * when no proper subset explains C. Sets are searched up to size t (the
 * covering strength, MX_ATTRIB_MAX_T at most) and ranked by size, then by the
 * failing runs they cover (support), then by name. A set that covers only
 * some of C's failures is reported with its coverage. Redundant sets are
 * left out: one whose C failures smaller sets all explain already, and one
 * that runs failing another way hold whose C failures better-ranked sets all
 * explain (it owes its place to the other failures not vetoing it). A
 * failing run some minimal set explains is always explained by a reported
 * one (up to MX_ATTRIB_MAX_SETS).
 *
 * Noise: a configuration whose results disagree (a run passed on one attempt
 * and failed on another, or two runs of the same configuration came to
 * different results) is flaky: it is reported and is evidence for nothing.
 *
 * The search works per failing configuration f: S is a subset of f's pairs,
 * and S explains when the passing configurations holding each of its pairs
 * (bit sets, one per axis value) have an empty intersection. Cost: about
 * |failing| * axes^t / t! word operations, with early exits.
 *
 * Pure: no daemon, no matrix file (names only; a matrix can add each axis's
 * full value list so that "spec=eagle3-*" is only written when the glob
 * names exactly the values found). Non-logging.
 */
#pragma once

#include "util.h"

#include <jansson.h>

#define MX_ATTRIB_MAX_T 3 /* largest explaining set searched */
#define MX_ATTRIB_DEFAULT_T 3
#define MX_ATTRIB_MAX_RUNS 100000               /* runs one analysis takes */
#define MX_ATTRIB_MAX_AXES 1024                 /* distinct axes (= MX_MATRIX_MAX_AXES) */
#define MX_ATTRIB_MAX_VALUES 64                 /* distinct values per axis (= MX_MATRIX_MAX_VALUES) */
#define MX_ATTRIB_MAX_CELLS (UINT64_C(1) << 26) /* distinct configurations x axes, the dense table */
#define MX_ATTRIB_MAX_RESULTS 1000              /* results (attempts) per run */
#define MX_ATTRIB_MAX_CLASSES 256               /* distinct failure classes */
#define MX_ATTRIB_MAX_NAME 128                  /* axis, value and class names */
#define MX_ATTRIB_MAX_FOUND 200000              /* minimal sets found per class before the search stops */
#define MX_ATTRIB_MAX_SETS 200                  /* sets reported per class (best ranked) */
#define MX_ATTRIB_MAX_EXAMINED 20000            /* ranked sets checked for redundancy per class */
/* Triples one analysis may test (about 2 s); past it t = 3 becomes 2 (result's t says so). */
#define MX_ATTRIB_MAX_TRIPLES (UINT64_C(1) << 30)

/* What kind of failure a class is (known_incompatible's "expect": crash for crashes, else fail). */
enum mx_attrib_kind {
        MX_ATTRIB_CRASH,   /* the server died: the crash class */
        MX_ATTRIB_FAIL,    /* a level failed or was invalid: "L1.5-invalid", "L2-fail" */
        MX_ATTRIB_TIMEOUT, /* not ready in time, or a level or the run overran */
        _MX_ATTRIB_KIND_MAX,
        _MX_ATTRIB_KIND_INVALID = -EINVAL,
};
const char *mx_attrib_kind_to_string(enum mx_attrib_kind k); /* "crash", "fail", "timeout" */

struct mx_attrib;

struct mx_attrib *mx_attrib_new(void);
struct mx_attrib *mx_attrib_free(struct mx_attrib *a);
DEFINE_POINTER_CLEANUP(struct mx_attrib, mx_attrib_free)

/*
 * Add one run: config is an object axis -> value name; results is an array
 * of what its attempts came to, each "pass" or {"kind": "crash"|"fail"|
 * "timeout", "class": NAME}; an empty array (no attempt came to a result)
 * adds nothing. -EINVAL or -E2BIG with *reterr on bad or oversized input.
 */
int mx_attrib_add_run(struct mx_attrib *a, int64_t id, json_t *config, json_t *results, char **reterr);

/*
 * One attempt's result as mx_attrib_add_run() takes it, from its outcome,
 * crash class and levels ([{"level", "verdict"}], any order: the first that
 * failed in the seed's order names a failure): "pass", a class object, or
 * NULL when the attempt says nothing about its configuration (infra-error,
 * cancelled, interrupted, unfinished).
 */
json_t *mx_attrib_attempt_result(const char *outcome, const char *crash_class, json_t *levels);

/* An axis's full value list (e.g. from the matrix), for globs; names beyond those seen are fine. */
void mx_attrib_axis_values(struct mx_attrib *a, const char *axis, char *const *values);

struct mx_attrib_pair {
        unsigned axis, value; /* indices into the result's names */
};

struct mx_attrib_set {
        struct mx_attrib_pair pairs[MX_ATTRIB_MAX_T]; /* by axis index */
        unsigned n;
        size_t support; /* runs failing with the class that hold the set */
        size_t other;   /* runs failing another way that hold it */
        size_t flaky;   /* flaky runs that hold it */
        bool complete;  /* support covers every failing run of the class */
};

/*
 * Sets of one class, the same axes, that differ on one axis only: what one
 * known_incompatible entry says ("graphs=on ∧ spec=eagle3-*").
 */
struct mx_attrib_group {
        size_t *sets; /* indices into the class's sets */
        size_t n_sets;
        int varying;     /* the axis whose values differ, -1 for a group of one */
        uint64_t values; /* the varying axis's values (bit set) */
        size_t support, other, flaky;
};

struct mx_attrib_class {
        char *name;
        enum mx_attrib_kind kind;
        size_t failing;     /* runs (not flaky) that failed this way */
        size_t unexplained; /* of those, runs holding no reported set */
        bool truncated;     /* more minimal sets existed than were searched or reported */
        struct mx_attrib_set *sets;
        size_t n_sets;
        struct mx_attrib_group *groups;
        size_t n_groups;
};

struct mx_attrib_result {
        unsigned t; /* the size searched: t_asked, or 2 when triples would exceed MX_ATTRIB_MAX_TRIPLES */
        unsigned t_asked;
        size_t runs;    /* runs with a result */
        size_t passing; /* runs that passed (not flaky) */
        size_t n_flaky;
        int64_t *flaky; /* ids of the flaky runs */
        char **axes;    /* names, in the order first seen */
        char ***values; /* per axis, value names */
        size_t n_axes;
        struct mx_attrib_class *classes; /* most failing runs first */
        size_t n_classes;
};

/* Analyse what was added: t = 1..MX_ATTRIB_MAX_T. -EINVAL with *reterr on a bad t. */
int mx_attrib_analyse(struct mx_attrib *a, unsigned t, struct mx_attrib_result **ret, char **reterr);
struct mx_attrib_result *mx_attrib_result_free(struct mx_attrib_result *r);
DEFINE_POINTER_CLEANUP(struct mx_attrib_result, mx_attrib_result_free)

/* Does the configuration (an object axis -> value name) hold the set? */
bool mx_attrib_config_holds(const struct mx_attrib_result *r, const struct mx_attrib_set *s, json_t *config);

/* "graphs=on ∧ spec=eagle3-short" (caller frees). */
char *mx_attrib_set_describe(const struct mx_attrib_result *r, const struct mx_attrib_set *s);
/* "graphs=on ∧ spec=eagle3-*", or "spec=a|b" when no glob names exactly the group's values. */
char *mx_attrib_group_describe(const struct mx_attrib *a, const struct mx_attrib_result *r,
                               const struct mx_attrib_class *c, const struct mx_attrib_group *g);
/* The group's condition in the matrix file's syntax: {"graphs": "on", "spec": ["a", "b"]}. */
json_t *mx_attrib_group_when(const struct mx_attrib_result *r, const struct mx_attrib_class *c,
                             const struct mx_attrib_group *g);

/*
 * The whole result as JSON: {"t", "runs", "passing", "flaky": [ids],
 * "classes": [{"class", "kind", "failing", "unexplained", "truncated",
 * "sets": [{"set": {axis: value}, "text", "size", "support", "other",
 * "flaky", "complete"}], "groups": [{"when", "text", "support", "other",
 * "flaky", "sets"}]}]} (docs/mxmatrix.1, attribute).
 */
json_t *mx_attrib_result_to_json(const struct mx_attrib *a, const struct mx_attrib_result *r);
