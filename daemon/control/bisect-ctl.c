/* SPDX-License-Identifier: MIT */
/* The bisect method: a bisection asked for, checked and handed to run/bisect.c; its status and cancel. */
#include "bisect-ctl.h"
#include "bisect-store.h"
#include "bisect.h"
#include "ident.h"
#include "levelcat.h"
#include "matrix.h"
#include "plan.h"
#include "scheduler.h"
#include "submit.h"

#include <inttypes.h>

#define BISECT_ACTIVE_PER_UID_MAX 4 /* bisections a user may have resolving or running */
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

/*
 * The configuration: the baseline, the feature a bare word names over it, then the axis=value words,
 * each of which may be a whole configuration key as show and history print it ("kernel=marlin,quant=x").
 */
static int bisect_config(struct mx_request *req, const struct mx_matrix *m, int **ret)
{
        _cleanup_free_ int *cfg = xcalloc(MX_MAX(m->n_axes, (size_t)1), sizeof(int));
        const char *feature = json_string_value(json_object_get(req->params, "config")), *k;
        _cleanup_json_ json_t *pins = NULL;
        _cleanup_free_ char *err = NULL;
        json_t *v;

        for (size_t a = 0; a < m->n_axes; a++)
                cfg[a] = m->baseline ? m->baseline[a] : 0;
        if (feature) {
                int f = mx_matrix_feature_index(m, feature);

                if (f < 0) {
                        request_error(req, "bad-request", "no feature '%s' in the matrix (name a feature or give "
                                      "axis=value words)", feature);
                        return -EINVAL;
                }
                mx_feature_apply(m, &m->features[f], cfg);
        }
        /* the same parsing as run and gate: split, then each pin by name or alias (escaped in errors) */
        if (mx_plan_split_pins(json_object_get(req->params, "pins"), &pins, &err) < 0) {
                request_error(req, "bad-request", "%s", err);
                return -EINVAL;
        }
        json_object_foreach (pins, k, v) {
                _cleanup_free_ char *word = xasprintf("%s=%s", k, json_string_value(v));
                int a, x;

                if (mx_plan_parse_pin(m, word, &a, &x, &err) < 0) {
                        request_error(req, "bad-request", "%s", err);
                        return -EINVAL;
                }
                cfg[a] = x;
        }
        *ret = TAKE_PTR(cfg);
        return 0;
}

/* What every step submits: the job's shared snapshot and the configuration's run. */
static json_t *bisect_template(struct mx_request *req, const struct mx_matrix *m, const struct mx_plan *p,
                               json_t *levels, json_t *settings)
{
        const struct mx_plan_run *r = &p->runs[0];
        char hash[MX_IDENT_HASH_LEN + 1], digest[MX_IDENT_HASH_LEN + 1];
        json_t *bi = m->bisect;

        return json_pack("{s:o,s:O,s:{s:s,s:s,s:o,s:o},s:s,s:s,s:O,s:s?,s:O?,s:O?,s:I}", "spec_base",
                         submit_job_spec(m, levels, settings), "levels", levels, "run", "config_key", r->key,
                         "config_hash", mx_ident_hash_format(r->hash, hash), "config",
                         mx_config_to_json(m, r->config), "spec", mx_plan_run_to_json(p, r), "matrix_path", m->path,
                         "matrix_digest",
                         mx_ident_hash_format(mx_fnv1a64(m->text, m->text_len, MX_FNV1A64_INIT), digest), "build",
                         json_object_get(bi, "build"), "source", json_string_value(json_object_get(bi, "source")),
                         "build_timeout_ms", json_object_get(bi, "build_timeout_ms"), "confirm_starts",
                         json_object_get(bi, "confirm_starts"), "gid", (json_int_t)req->gid);
}

/* The levels a step runs: a metric's L1 and L4 (the comparison is ours), else the matrix's with the level. */
static int bisect_levels(struct mx_request *req, const struct mx_matrix *m, json_t **ret_levels,
                         json_t **ret_settings)
{
        const char *level = json_string_value(json_object_get(req->params, "level"));
        _cleanup_json_ json_t *sel = level ? NULL : json_pack("[s,s]", "L1", "L4");
        _cleanup_free_ char *err = NULL;
        json_t *v;
        size_t i;
        int r = mx_levels_resolve(m, -1, sel, NULL, ret_levels, ret_settings, &err);

        if (r < 0) {
                request_error(req, "matrix-error", "levels: %s", strna(err));
                return r;
        }
        json_array_foreach (*ret_levels, i, v)
                if (streq_ptr(json_string_value(v), level))
                        return 0;
        if (!level)
                return 0;
        request_error(req, "bad-request", "the matrix's levels do not include %s", level);
        json_decref(*ret_levels);
        json_decref(*ret_settings);
        *ret_levels = *ret_settings = NULL; /* the caller's cleanup frees them too */
        return -EINVAL;
}

static bool param_bad(struct mx_request *req)
{
        json_t *p = req->params;
        const char *repo = json_string_value(json_object_get(p, "repo"));
        _cleanup_free_ char *git = repo ? xasprintf("%s/.git", repo) : NULL;
        struct stat st;

        if (!repo || !json_object_get(p, "good") || !json_object_get(p, "bad")) {
                request_error(req, "bad-request", "bisect needs --repo PATH, --good SHA and --bad SHA");
                return true;
        }
        /* they go to git as arguments: a leading '-' would be an option */
        if (json_string_value(json_object_get(p, "good"))[0] == '-' ||
            json_string_value(json_object_get(p, "bad"))[0] == '-' || !*json_string_value(json_object_get(p, "good")) ||
            !*json_string_value(json_object_get(p, "bad"))) {
                request_error(req, "bad-request", "--good and --bad name commits: they may not be empty or start "
                              "with '-'");
                return true;
        }
        if (!!json_object_get(p, "metric") == !!json_object_get(p, "level")) {
                request_error(req, "bad-request", "bisect decides with --metric M or with --level L (one of them)");
                return true;
        }
        if (repo[0] != '/' || stat(git, &st) < 0) {
                request_error(req, "bad-request", "--repo %s: not an absolute path to a git work tree", repo);
                return true;
        }
        return false;
}

/*
 * The daemon runs the build and the server from the checked-out tree with its own privileges, so only
 * the tree the matrix declares (bisect.source's metadata source, chosen by whoever may edit the matrix)
 * is open to every user; another tree needs root or the admin group.
 */
static bool repo_allowed(struct mx_request *req, const struct mx_matrix *m, const char *repo)
{
        const char *src = json_string_value(json_object_get(m->bisect, "source"));
        json_t *declared = src ? json_object_get(json_object_get(m->metadata, "sources"), src) : NULL;
        _cleanup_free_ char *a = NULL, *b = NULL;

        if (req->admin)
                return true;
        if (json_is_string(declared)) {
                a = realpath(repo, NULL);
                b = realpath(json_string_value(declared), NULL);
                if (a && b && streq(a, b))
                        return true;
        }
        request_error(req, "permission-denied",
                      "--repo %s: only root or the admin group may bisect a tree other than the matrix's "
                      "bisect.source (%s)",
                      strna(repo), json_is_string(declared) ? json_string_value(declared) : "none declared");
        return false;
}

static void bisect_start(struct mx_request *req)
{
        const struct mx_matrix *m = req->d->matrix;
        json_t *p = req->params;
        _cleanup_(mx_plan_freep) struct mx_plan *plan = NULL;
        _cleanup_json_ json_t *levels = NULL, *settings = NULL, *tpl = NULL;
        _cleanup_free_ char *err = NULL, *user = submit_user_name(req->uid);
        _cleanup_free_ int *cfg = NULL;
        char *const reasons[] = { (char *)"bisect", NULL };
        const char *thr = json_string_value(json_object_get(p, "threshold"));
        double threshold = 5.0;
        char *end = NULL;
        int64_t id = 0, active = 0;
        int r;

        if (!m) {
                request_error(req, "matrix-error", "no matrix loaded: %s", strna(req->d->matrix_error));
                return;
        }
        if (!m->bisect) {
                request_error(req, "matrix-error", "the matrix declares no bisect section (its build command)");
                return;
        }
        if (thr) {
                errno = 0;
                threshold = strtod(thr, &end);
                if (errno != 0 || end == thr || *end || !(threshold > 0 && threshold < 100)) {
                        request_error(req, "bad-request", "--threshold %s: not a percentage in (0, 100)", thr);
                        return;
                }
        }
        /* who may bisect this tree before anything looks at the path (no probing of paths by their errors) */
        if (!repo_allowed(req, m, json_string_value(json_object_get(p, "repo"))) || param_bad(req) ||
            bisect_config(req, m, &cfg) < 0 || bisect_levels(req, m, &levels, &settings) < 0)
                return;
        r = mx_plan_build_explicit(m, "bisect", cfg, reasons, 1, 1, &plan, &err);
        if (r < 0 || plan->n_runs != 1) {
                request_error(req, "matrix-error", "the configuration cannot run: %s",
                              err ? err : "the matrix's rules leave it out");
                return;
        }
        r = bstore_count_active(req->d->db, req->uid, &active);
        if (r < 0) {
                request_error_errno(req, r, "bisect");
                return;
        }
        if (active >= BISECT_ACTIVE_PER_UID_MAX) {
                request_error(req, "limit-exceeded", "%" PRId64 " bisections of yours are running (at most %d): "
                              "wait for one or cancel one (bisect --cancel ID)", active, BISECT_ACTIVE_PER_UID_MAX);
                return;
        }
        tpl = bisect_template(req, m, plan, levels, settings);
        r = bstore_create(req->d->db,
                          &(struct bstore_new){
                                  .uid = req->uid, .gid = req->gid, .user_name = user,
                                  .repo = json_string_value(json_object_get(p, "repo")),
                                  .good_arg = json_string_value(json_object_get(p, "good")),
                                  .bad_arg = json_string_value(json_object_get(p, "bad")),
                                  .config_key = plan->runs[0].key,
                                  .metric = json_string_value(json_object_get(p, "metric")),
                                  .threshold = threshold,
                                  .level = json_string_value(json_object_get(p, "level")),
                                  .template = tpl,
                          },
                          &id);
        if (r < 0) {
                request_error_errno(req, r, "bisect");
                return;
        }
        bisect_poke(req->d->bisect);
        request_reply(req, json_pack("{s:I,s:s}", "bisection", (json_int_t)id, "config_key", plan->runs[0].key));
}

void bisect_method(struct mx_request *req)
{
        int64_t status = json_integer_value(json_object_get(req->params, "status"));
        int64_t cancel = json_integer_value(json_object_get(req->params, "cancel"));
        _cleanup_json_ json_t *bs = NULL;
        int64_t running = 0;
        int r;

        if (status == 0 && cancel == 0)
                return bisect_start(req);
        if (status != 0 && cancel != 0) {
                /* one bisection per request: the owner checked is the one cancelled */
                request_error(req, "bad-request", "bisect takes --status ID or --cancel ID, not both");
                return;
        }
        r = bstore_get(req->d->db, status ?: cancel, &bs);
        if (r == -ENOENT) {
                request_error(req, "not-found", "no bisection %" PRId64, status ?: cancel);
                return;
        }
        if (r < 0) {
                request_error_errno(req, r, "bisect");
                return;
        }
        json_object_del(bs, "template");
        if (cancel) {
                if (!request_may_modify(req, (uid_t)json_integer_value(json_object_get(bs, "uid")))) {
                        request_error(req, "permission-denied", "bisection %" PRId64 " is not yours", cancel);
                        return;
                }
                r = bisect_cancel(req->d->bisect, cancel, req->uid, &running);
                if (r < 0) {
                        request_error_errno(req, r, "bisect --cancel");
                        return;
                }
                if (running)
                        (void)sched_cancel_run(req->d->sched, running);
                sched_kick(req->d->sched);
                json_decref(bs);
                bs = NULL;
                (void)bstore_get(req->d->db, cancel, &bs);
                json_object_del(bs, "template");
        }
        request_reply(req, json_pack("{s:O}", "bisection", bs));
}
