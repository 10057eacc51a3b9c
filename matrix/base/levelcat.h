/* SPDX-License-Identifier: MIT */
/*
 * The level catalogue: every test level of seed 001 Phase 6 that mxmatrix
 * runs, in the seed's order, with the settings each one takes, their types,
 * bounds, the seed's numbers as defaults, and their documentation.
 *
 * This table is the one list of levels. The daemon's implementations
 * (daemon/run/levels/levels.c) are looked up by these names, the protocol's level
 * type (schema/protocol.json), the matrix file's "levels" section
 * (levels-load.c) and the man pages are checked against it by
 * tests/unit/test-levels-catalogue.c. A new level (L4, L5, L6) adds one row
 * here and one file in daemon/run/levels/.
 *
 * Selections ("L1-L3", "L1,L2") and settings are resolved here, in the
 * library, so that `mxmatrix plan` and `mxmatrix check` see exactly what the
 * daemon will store in a run's snapshot.
 */
#pragma once

#include "util.h"

#include <jansson.h>

/* Levels named in one selection, settings per level, bytes of a settings object's JSON text. */
#define MX_LEVELS_MAX 16
#define MX_LEVEL_SETTINGS_MAX 64
#define MX_LEVEL_PROMPTS_MAX 64
#define MX_LEVEL_PROMPT_MAX (256 * 1024)
#define MX_LEVEL_STRING_MAX 4096
#define MX_LEVEL_INTS_MAX 32

enum mx_lset_type {
        MX_LSET_BOOL,
        MX_LSET_INT,      /* integer within [min, max] */
        MX_LSET_NUMBER,   /* finite number within [min, max] */
        MX_LSET_DURATION, /* "30s", "5m" or milliseconds; stored as milliseconds */
        MX_LSET_STRING,   /* up to MX_LEVEL_STRING_MAX bytes */
        MX_LSET_STRINGS,  /* an array of strings, each one of the setting's choices when it has some */
        MX_LSET_INTS,     /* an array of 1 to MX_LEVEL_INTS_MAX integers, each within [min, max] */
        MX_LSET_PROMPTS,  /* an array of prompt objects (mx_level_prompts_check) */
};

struct mx_level_setting {
        const char *name;
        enum mx_lset_type type;
        const char *def; /* the default as JSON text */
        double min, max; /* MX_LSET_INT, MX_LSET_NUMBER, MX_LSET_DURATION (ms) */
        const char *const *choices; /* MX_LSET_STRING / MX_LSET_STRINGS: NULL-terminated, or NULL: any */
        const char *doc;            /* one sentence for the man page and `mxmatrix plan` */
};

struct mx_level_def {
        const char *name;  /* "L1", "L1.5", "L2", ... */
        const char *title; /* "smoke", "kernel gate", ... */
        const char *summary;
        /*
         * Verdicts of this level are benchmark numbers: a kernel gate (L1.5)
         * that fails or cannot verify the kernel path makes them invalid
         * (seed 001: "If validation fails, benchmark results are INVALID").
         */
        bool gated;
        /* Not run because the server never became ready (or crashed first) counts as fail, not skipped. */
        bool fail_unrun;
        const struct mx_level_setting *settings; /* terminated by a NULL name */
};

/* The catalogue in the seed's order; mx_level_defs[mx_level_defs_count] is not valid. */
extern const struct mx_level_def mx_level_defs[];
extern const size_t mx_level_defs_count;
/* Settings every level takes (timeout, continue_on_fail), before its own. */
extern const struct mx_level_setting mx_level_common_settings[];

const struct mx_level_def *mx_level_def_find(const char *name);
/* The setting of that name for level d (common ones included), or NULL. */
const struct mx_level_setting *mx_level_setting_find(const struct mx_level_def *d, const char *name);
/* The position of a level in the seed's order, or -1. */
int mx_level_index(const char *name);

/*
 * Expand a selection into level names in the seed's order, without
 * duplicates: each word is a name ("L1.5") or a range ("L1-L3", both ends
 * included, L1.5 inside it), words may also be comma-separated within one
 * string. -EINVAL with the offending word in *reterr.
 */
int mx_levels_select(json_t *words, json_t **ret, char **reterr);
/* The same for one string ("L1-L3,L5"). */
int mx_levels_select_string(const char *s, json_t **ret, char **reterr);

/*
 * Check and normalise one setting's value: durations become milliseconds,
 * strings given for numbers or booleans (from the command line) are
 * parsed. Returns a new reference, or NULL with *reterr saying why (without
 * the setting's name).
 */
json_t *mx_level_setting_value(const struct mx_level_setting *s, json_t *v, char **reterr);

/* Every setting of level d at its default (common ones included): a new object. */
json_t *mx_level_defaults(const struct mx_level_def *d);

/*
 * Apply overrides (an object of setting → value, already checked or not)
 * onto settings (an object, changed in place). where names the overrides in
 * errors ("levels.L2", "--set"). -EINVAL on an unknown setting or a bad value.
 */
int mx_level_settings_apply(const struct mx_level_def *d, json_t *settings, json_t *overrides, const char *where,
                            char **reterr);

/* A prompt set (MX_LSET_PROMPTS) is well formed; *reterr names the offending entry. */
int mx_level_prompts_check(json_t *prompts, char **reterr);

/* ---- the matrix file's "levels" sections (levels-load.c) ---- */

/* What a submission runs when neither it nor the matrix chooses: seed 001's protocol, L1 to L5. */
#define MX_LEVELS_DEFAULT "L1-L5"

struct mx_matrix;

/*
 * Check the "levels" section of the matrix (top level) and of each feature:
 * "run" (a selection), the common settings (applying to every level), and
 * level names with their settings. Errors carry the file position.
 */
int mx_matrix_levels_check(const struct mx_matrix *m, char **reterr);

/*
 * What a submission runs: the selection (the submission's, else the
 * feature's "run", else the matrix's, else MX_LEVELS_DEFAULT) and every selected
 * level's settings: defaults, then the matrix's section (common settings,
 * then the level's), then the feature's (feature is an index or -1), then
 * overrides, an object of "LEVEL.setting" → value from the submission.
 * *ret_settings is {"L2": {...}, ...} for the selected levels.
 */
int mx_levels_resolve(const struct mx_matrix *m, int feature, json_t *selection, json_t *overrides,
                      json_t **ret_run, json_t **ret_settings, char **reterr);

/* The settings of one level that differ from its defaults, as "name=value" words (for `plan`). */
char *mx_level_settings_summary(const struct mx_level_def *d, json_t *settings);
