/* SPDX-License-Identifier: MIT */
/*
 * The history method's reads (issue 19 item 2): which stored configuration a
 * user means, and its L4 results per attempt with the source commit each ran
 * at, for matrix/analysis/changepoint.h. Non-logging. Every read goes by an
 * index (runs_config_key, migration 012; runs_config; the runs' id): none
 * reads or groups the whole runs table.
 */
#pragma once

#include "db.h"

/*
 * At most this many attempts (the newest) make a history (protocol.json's
 * history.points says the same): the change-point search runs on the
 * daemon's loop, O(n^2) per permutation, its whole cost bounded by
 * MX_CP_WORK_MAX (changepoint.h).
 */
#define SERIES_POINTS_MAX 500

/*
 * The configuration key a user named: "rRUN" (that run's configuration), a
 * configuration hash (16 hex digits), or axis=value pins (an object; values
 * may be written "a=1,b=2" as show prints a key; mx_plan_split_pins): the
 * configuration whose key they are, else the one stored configuration that
 * holds them. -ENOENT: none; -EEXIST: several (*reterr lists them); -EINVAL:
 * a pin that is not axis=value (*reterr names it); -EBADMSG: a stored key
 * that is not axis=value pairs, so it could not be matched (*reterr names it).
 */
int series_store_config(struct mx_db *db, const char *word, json_t *pins, char **ret_key, char **reterr);

/*
 * The configuration's attempts with an L4 that measured (pass or fail) and a
 * commit of source recorded, in commit order (the commits' times, or their
 * first measurements where a time is not recorded), oldest first:
 * [{"commit", "committed_at", "run", "attempt", "started_at", "l4"}], the
 * newest max_points of them (at most SERIES_POINTS_MAX). source NULL: the
 * configuration's only source tree (-EEXIST when it has several: *reterr
 * names them); *ret_source the one used.
 */
int series_store_points(struct mx_db *db, const char *config_key, const char *source, size_t max_points,
                        json_t **ret_points, char **ret_source, char **reterr);
