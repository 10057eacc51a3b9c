/* SPDX-License-Identifier: MIT */
/* The submit method: plan, snapshots, one transaction, then the reply. */
#include "submit.h"
#include "attribute.h"
#include "estimate.h"
#include "ident.h"
#include "levelcat.h"
#include "history.h"
#include "log.h"
#include "matrix.h"
#include "order.h"
#include "plan.h"
#include "scheduler.h"

#include <inttypes.h>
#include <malloc.h>
#include <pwd.h>

#define SUBMIT_REPLY_RUNS 1000 /* runs in a submit's reply; show JOB pages through the rest */

/* The matrix a submission uses: the daemon's, or (admins only) a file it names. */
static int submit_matrix(struct mx_request *req, struct mx_matrix **ret_owned, const struct mx_matrix **ret)
{
        const char *path = json_string_value(json_object_get(req->params, "matrix"));
        _cleanup_free_ char *err = NULL;
        int r;

        if (!path) {
                if (!req->d->matrix) {
                        request_error(req, "matrix-error", "%s",
                                      req->d->matrix_error ? req->d->matrix_error
                                                           : "mxmatrixd has no matrix file (--matrix)");
                        return -ENOENT;
                }
                *ret = req->d->matrix;
                return 0;
        }
        /* Reading a file the client names is a read as the daemon's user: keep it to administrators. */
        if (!req->admin) {
                request_error(req, "permission-denied", "only root or the admin group may name a matrix file");
                return -EPERM;
        }
        /*
         * The daemon may read what the client may not (it runs as another user): a parse error
         * would echo lines of the file, a plan its names. Read only what the client could.
         */
        if (!request_may_read(req, path)) {
                request_error(req, "permission-denied",
                              "%s: uid %u cannot read this file, so the daemon does not read it on its behalf",
                              path, (unsigned)req->uid);
                return -EACCES;
        }
        r = mx_matrix_load_file(path, ret_owned, &err);
        if (r < 0) {
                request_error(req, "matrix-error", "%s", err ? err : strerror(-r));
                return r;
        }
        *ret = *ret_owned;
        return 0;
}

static char **submit_pins(json_t *pins)
{
        char **l = NULL;
        const char *k;
        json_t *v;

        json_object_foreach (pins, k, v)
                strv_consume(&l, xasprintf("%s=%s", k, json_string_value(v)));
        return l;
}

static json_t *strv_json(char *const *l)
{
        json_t *a = json_array();

        for (size_t i = 0; l && l[i]; i++)
                json_array_append_new(a, json_string(l[i]));
        return a;
}

/*
 * The snapshot a runner gets is everything it needs, independent of later
 * matrix edits: this part every run of the job shares (stored once per
 * distinct text, queue.h), under each run's own (mx_plan_run_to_json()).
 */
/*
 * L5's confirmation starts are scheduled by the local scheduler only: under executor "slurm" a run's
 * L5 decides on the starts there are (L5.confirm_starts 0), and the submission says so.
 */
static void no_confirm_on_slurm(const struct mx_request *req, json_t *level_settings, json_t *notes)
{
        json_t *l5 = json_object_get(level_settings, "L5");

        if (req->d->cfg.executor != MX_EXECUTOR_SLURM || !json_is_object(l5) ||
            json_integer_value(json_object_get(l5, "confirm_starts")) == 0)
                return;
        json_object_set_new(l5, "confirm_starts", json_integer(0));
        json_array_append_new(notes, json_string("L5.confirm_starts is 0 under executor slurm: L5 decides on "
                                                 "the server starts there are (confirmation starts are "
                                                 "scheduled by the local executor only)"));
}

json_t *submit_job_spec(const struct mx_matrix *m, json_t *levels, json_t *level_settings)
{
        json_t *spec = json_object();
        const char *src = json_string_value(json_object_get(m->bisect, "source"));
        json_t *dir = src ? json_object_get(json_object_get(m->metadata, "sources"), src) : NULL;

        json_object_set_new(spec, "profile", json_incref(m->profile_resolved));
        json_object_set_new(spec, "model", m->model ? json_string(m->model) : json_null());
        json_object_set_new(spec, "served_model_name",
                            m->served_model_name ? json_string(m->served_model_name) : json_null());
        json_object_set_new(spec, "target", m->target ? json_deep_copy(m->target) : json_null());
        json_object_set_new(spec, "profiles", m->profiles ? json_deep_copy(m->profiles) : json_null());
        json_object_set_new(spec, "levels", json_incref(levels));
        if (m->metadata) /* what to collect; daemon/run/meta.c adds its defaults at run time */
                json_object_set_new(spec, "metadata", json_incref(m->metadata));
        json_object_set_new(spec, "level_settings", json_incref(level_settings));
        json_object_set_new(spec, "matrix", json_pack("{s:s?,s:s}", "name", m->name, "file", m->path));
        if (json_is_string(dir)) /* {source_dir}: bisect.source's own tree; a bisect step's runs name theirs */
                json_object_set(spec, "source_dir", dir);
        return spec;
}

static char *expect_fail_reason(const struct mx_matrix *m, const struct mx_plan_run *r)
{
        if (r->n_known_incompatible == 0)
                return NULL;
        return xasprintf("%s (expected: %s)", m->known_incompatible[r->known_incompatible[0]].reason,
                         mx_ki_expect_to_string(m->known_incompatible[r->known_incompatible[0]].expect));
}

struct built {
        struct queue_run_new *runs;
        char **owned; /* strings the runs point to */
        size_t n;
};

static void built_done(struct built *b)
{
        for (size_t i = 0; i < b->n; i++) {
                json_decref(b->runs[i].config);
                json_decref(b->runs[i].reasons);
                json_decref(b->runs[i].spec);
        }
        free(b->runs);
        strv_free(b->owned);
}

static void build_runs(const struct mx_matrix *m, const struct mx_plan *p, struct built *b)
{
        b->runs = xcalloc(p->n_runs ? p->n_runs : 1, sizeof(*b->runs));
        b->n = p->n_runs;
        for (size_t i = 0; i < p->n_runs; i++) {
                const struct mx_plan_run *r = &p->runs[i];
                char hash[MX_IDENT_HASH_LEN + 1];
                char *ef = expect_fail_reason(m, r);

                strv_push(&b->owned, mx_ident_hash_format(r->hash, hash));
                b->runs[i] = (struct queue_run_new){
                        .config_key = r->key,
                        .config_hash = b->owned[strv_length(b->owned) - 1],
                        .config = mx_config_to_json(m, r->config),
                        .reasons = strv_json(r->reasons),
                        .spec = mx_plan_run_to_json(p, r),
                };
                if (ef) {
                        strv_consume(&b->owned, ef);
                        b->runs[i].expect_fail = ef;
                }
        }
        /* L5 compares every run with the baseline configuration, also when --skip-measured leaves it out. */
        for (size_t i = 0; i < p->n_runs; i++)
                if (strv_contains(p->runs[i].reasons, "baseline"))
                        for (size_t k = 0; k < b->n; k++)
                                json_object_set_new(b->runs[k].spec, "baseline_key",
                                                    json_string(p->runs[i].key));
}

/*
 * --skip-measured: leave out the runs whose configuration already passed L4
 * with valid numbers at the current source SHAs (the matrix's metadata
 * sources, read from their git files: no child process on the loop) on the
 * GPU the daemon last recorded. Returns the runs left out, for the reply's
 * "skipped"; notes say why nothing could be skipped.
 */
static json_t *skip_measured(struct mx_db *db, const struct mx_matrix *m, struct built *b, json_t *notes)
{
        json_t *srcs = json_object_get(m->metadata, "sources"), *v, *out = json_array();
        _cleanup_json_ json_t *cur = json_object(), *gpu = mx_history_last_gpu(db);
        _cleanup_free_ char *shas = NULL;
        struct mx_buf sb = MX_BUF_INIT;
        const char *k;
        size_t keep = 0;

        json_object_foreach (srcs, k, v) {
                char *sha = json_is_string(v) ? mx_git_head(json_string_value(v)) : NULL;

                if (!sha) {
                        json_array_append_new(notes,
                                              json_sprintf("--skip-measured: the commit of source '%s' "
                                                           "cannot be read: nothing is skipped",
                                                           k));
                        mx_buf_free(&sb);
                        return out;
                }
                mx_buf_printf(&sb, "%s%s %.12s", sb.len ? ", " : "", k, sha);
                json_object_set_new(cur, k, json_string(sha));
                free(sha);
        }
        shas = sb.len ? mx_buf_steal(&sb) : xstrdup("no sources configured");
        for (size_t i = 0; i < b->n; i++) {
                _cleanup_json_ json_t *hit = NULL;
                _cleanup_free_ char *why = NULL;

                if (mx_history_measured(db, b->runs[i].config_key, cur, gpu, &hit) < 0) {
                        b->runs[keep++] = b->runs[i];
                        continue;
                }
                why = xasprintf("already measured: L4 passed in r%" JSON_INTEGER_FORMAT
                                " (job %" JSON_INTEGER_FORMAT
                                ") at the same source SHAs (%s) on %s (--skip-measured)",
                                json_integer_value(json_object_get(hit, "run")),
                                json_integer_value(json_object_get(hit, "job")), shas,
                                gpu ? json_string_value(gpu) : "this GPU (it reports no name)");
                json_array_append_new(out, json_pack("{s:s,s:s,s:n}", "config_key", b->runs[i].config_key,
                                                     "reason", why, "at"));
                json_decref(b->runs[i].config);
                json_decref(b->runs[i].reasons);
                json_decref(b->runs[i].spec);
        }
        b->n = keep;
        return out;
}

/* What a dry run shows: the runs as they would be queued. */
static json_t *dry_runs(const struct built *b)
{
        json_t *a = json_array();

        for (size_t i = 0; i < b->n; i++)
                json_array_append_new(a, json_pack("{s:i,s:s,s:s,s:O,s:O,s:s?,s:s}", "seq", (int)i + 1,
                                                   "config_key", b->runs[i].config_key, "config_hash",
                                                   b->runs[i].config_hash, "config", b->runs[i].config, "reasons",
                                                   b->runs[i].reasons, "expect_fail", b->runs[i].expect_fail,
                                                   "state", "planned"));
        return a;
}

static json_t *skipped_json(const struct mx_plan *p)
{
        json_t *a = json_array();

        for (size_t i = 0; i < p->n_skipped; i++)
                json_array_append_new(a, json_pack("{s:s,s:s,s:s?}", "config_key", p->skipped[i].key, "reason",
                                                   p->skipped[i].why, "at", p->skipped[i].where));
        return a;
}

static int check_limits(struct mx_request *req, size_t n)
{
        int64_t queued = 0;
        int r = queue_count_queued(req->d->db, req->uid, &queued);

        if (r < 0) {
                request_error_errno(req, r, "submit");
                return r;
        }
        if (req->uid != 0 && queued + (int64_t)n > req->d->cfg.limits.queued_runs_per_uid) {
                request_error(req, "limit-exceeded",
                              "uid %u has %" PRId64 " runs queued; %zu more would exceed the limit of %" PRId64,
                              (unsigned)req->uid, queued, n, req->d->cfg.limits.queued_runs_per_uid);
                return -EDQUOT;
        }
        return 0;
}

char *submit_user_name(uid_t uid)
{
        struct passwd pw, *res = NULL;
        char buf[4096];

        if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) != 0 || !res)
                return NULL;
        return xstrdup(pw.pw_name);
}

/*
 * What submit tells besides the runs: the levels, the estimate (stored durations, else the settings'
 * bound), and warnings: criteria the levels cannot measure, a paused queue that will not start them.
 */
static json_t *submit_about(struct mx_request *req, const struct mx_matrix *m, const struct mx_plan *p,
                            const struct built *b, json_t *levels, json_t *level_settings)
{
        _cleanup_json_ json_t *stored = NULL;
        _cleanup_strv_free_ char **unmeasured = mx_criteria_unmeasured(m, p->feature, levels);
        json_t *warnings = json_array();
        struct mx_estimate_input in = {
                .m = m, .settings = &p->settings, .levels = levels, .level_settings = level_settings, .n_runs = b->n,
        };
        int r;

        for (size_t i = 0; i < b->n; i++) {
                in.n_expect_fail += !!b->runs[i].expect_fail;
                in.two_passes |= b->runs[i].fail_fast;
        }
        r = queue_duration_stats(req->d->db, &stored);
        if (r < 0)
                log_warning_errno(r, "cannot read the stored durations; the estimate is the settings' bound");
        in.stored = stored;
        for (char **w = unmeasured; w && *w; w++)
                json_array_append_new(warnings, json_string(*w));
        if (req->d->paused) {
                _cleanup_free_ char *why = req->d->pause_reason ? xasprintf(" (%s)", req->d->pause_reason) : NULL;

                json_array_append_new(warnings, json_sprintf("the queue is paused%s: nothing starts until "
                                                             "mxmatrix resume",
                                                             strempty(why)));
        }
        return json_pack("{s:O,s:o,s:o,s:b}", "levels", levels, "estimate", mx_estimate(&in), "warnings", warnings,
                         "paused", req->d->paused);
}

static void submit_store(struct mx_request *req, const struct mx_matrix *m, const struct mx_plan *p,
                         struct built *b, json_t *levels, json_t *level_settings, json_t *skipped, json_t *notes,
                         json_t *about)
{
        json_t *params = req->params;
        _cleanup_free_ char *user = submit_user_name(req->uid);
        char digest[MX_IDENT_HASH_LEN + 1];
        _cleanup_json_ json_t *runs = NULL, *base = submit_job_spec(m, levels, level_settings);
        bool more = false;
        struct queue_job_new job = {
                .uid = req->uid,
                .gid = req->gid,
                .user_name = user,
                .matrix_path = m->path,
                .spec_base = base,
                .matrix_digest =
                        mx_ident_hash_format(mx_fnv1a64(m->text, m->text_len, MX_FNV1A64_INIT), digest),
                .feature = json_string_value(json_object_get(params, "feature")),
                .strategy = json_object_get(params, "confirm") ? "confirm"
                                                               : mx_plan_strategy_to_string(p->strategy),
                .levels = levels,
                .priority = (int)json_integer_value(json_object_get(params, "priority")),
                .request = params,
        };
        _cleanup_free_ char *jf = NULL;
        struct mx_log_ctx ctx = {};
        const char *extra[2] = {};
        int64_t id = 0;
        int r;

        r = queue_submit(req->d->db, &job, b->runs, b->n, &id);
        if (r < 0) {
                request_error_errno(req, r, "submit");
                return;
        }
        /* Stored: from here on the reply must carry the job id, or a resubmit would duplicate it. */
        /* A page, as show JOB gives: a 10 000-run reply would be megabytes built at once. */
        r = queue_job_runs_json(req->d->db, id, 0, SUBMIT_REPLY_RUNS, &runs, NULL, &more);
        if (r < 0) {
                log_warning_errno(r, "job %" PRId64 " stored, but its runs could not be read back", id);
                runs = json_array();
        }
        ctx.job = id;
        jf = xasprintf("MXMATRIX_FEATURE=%s", job.feature ?: p->input);
        extra[0] = jf;
        mx_log_full(LOG_INFO, 0, MX_MSGID_JOB_ACCEPTED, &ctx, extra,
                    "job %" PRId64 " accepted from uid %u: feature '%s', %zu runs, strategy %s, priority %d", id,
                    (unsigned)req->uid, job.feature ?: p->input, b->n, job.strategy, job.priority);
        /* Persisted: now acknowledge. The reply frees req, so kick the scheduler first. */
        sched_kick(req->d->sched);
        {
                json_t *reply = json_pack("{s:I,s:O,s:b,s:I,s:O,s:s,s:O}", "job", (json_int_t)id, "runs", runs,
                                          "more", more, "total", (json_int_t)b->n, "skipped", skipped, "resolved",
                                          p->resolved, "notes", notes);

                json_object_update(reply, about);
                request_reply(req, reply);
        }
}

/*
 * The job's order (matrix/plan/order.h): fail-fast runs make two passes,
 * their cheap levels first. *ret: the order for the reply. Errors are sent.
 */
static int submit_order(struct mx_request *req, const struct mx_matrix *m, struct built *b, json_t *levels,
                        json_t **ret)
{
        const char *asked = json_string_value(json_object_get(req->params, "order"));
        _cleanup_free_ char *why = NULL;
        enum mx_order o;
        bool two = false;

        if (mx_order_resolve(m, asked, b->n, levels, &o, &two, &why) < 0) {
                request_error(req, "bad-request", "unknown order '%s' (fifo, fail-fast)", strna(asked));
                return -EINVAL;
        }
        for (size_t i = 0; i < b->n; i++)
                b->runs[i].fail_fast = two;
        *ret = mx_order_to_json(o, two, why, levels);
        return 0;
}

void submit_handle(struct mx_request *req)
{
        json_t *params = req->params;
        _cleanup_(mx_matrix_freep) struct mx_matrix *owned = NULL;
        _cleanup_(mx_plan_freep) struct mx_plan *plan = NULL;
        _cleanup_strv_free_ char **pins = submit_pins(json_object_get(params, "pins"));
        _cleanup_json_ json_t *levels = NULL, *level_settings = NULL, *skipped = NULL, *notes = NULL;
        _cleanup_json_ json_t *about = NULL, *order = NULL;
        _cleanup_free_ char *err = NULL;
        const struct mx_matrix *m = NULL;
        const char *strategy = json_string_value(json_object_get(params, "strategy"));
        struct mx_plan_request pr = {
                .feature = json_string_value(json_object_get(params, "feature")),
                .pins = pins,
                .strategy = strategy ? mx_plan_strategy_from_string(strategy) : MX_PLAN_DEFAULT,
                .seed = (uint64_t)json_integer_value(json_object_get(params, "seed")),
                .max_runs = (size_t)req->d->cfg.limits.plan_runs,
        };
        struct built b = {};
        int64_t confirm = json_integer_value(json_object_get(params, "confirm"));
        int r;

        if (!pr.feature && confirm == 0) {
                request_error(req, "bad-request", "nothing to submit: name a feature (feature=X)");
                return;
        }
        if (pr.feature && confirm > 0) {
                request_error(req, "bad-request", "--confirm JOB plans its own runs: name no feature with it");
                return;
        }
        if (submit_matrix(req, &owned, &m) < 0)
                return;
        if (confirm > 0) {
                /* The follow-up runs of a job's attribution (attribute.h); errors are sent. */
                if (attribute_confirm_plan(req, m, confirm, pr.max_runs, &plan) < 0)
                        return;
                r = 0;
        } else
                r = mx_plan_build(m, &pr, &plan, &err);
        if (r < 0) {
                request_error(req, r == -E2BIG ? "limit-exceeded" : "matrix-error", "%s", err ? err : strerror(-r));
                return;
        }
        if (plan->n_runs == 0) {
                request_error(req, "matrix-error", "the plan for '%s' has no runs", plan->input);
                return;
        }
        /* Names and ranges ("L1-L3") in the seed's order, with their settings (levelcat.h). */
        r = mx_levels_resolve(m, plan->feature, json_object_get(params, "levels"),
                              json_object_get(params, "level_settings"), &levels, &level_settings, &err);
        if (r < 0) {
                request_error(req, "bad-request", "levels: %s", strna(err));
                return;
        }
        build_runs(m, plan, &b);
        skipped = skipped_json(plan);
        notes = strv_json(plan->notes);
        no_confirm_on_slurm(req, level_settings, notes);
        if (json_is_true(json_object_get(params, "skip_measured"))) {
                _cleanup_json_ json_t *measured = skip_measured(req->d->db, m, &b, notes);

                json_array_extend(skipped, measured);
                if (b.n == 0) {
                        request_error(
                                req, "invalid-state",
                                "nothing to run: all %zu runs of the plan were already measured at these "
                                "source SHAs (--skip-measured)",
                                json_array_size(measured));
                        built_done(&b);
                        return;
                }
        }
        if (submit_order(req, m, &b, levels, &order) < 0) {
                built_done(&b);
                return;
        }
        about = submit_about(req, m, plan, &b, levels, level_settings);
        json_object_set_new(about, "order", TAKE_PTR(order));
        if (json_is_true(json_object_get(params, "dry_run"))) {
                json_t *reply = json_pack("{s:n,s:o,s:O,s:s,s:O,s:O}", "job", "runs", dry_runs(&b), "skipped",
                                          skipped, "resolved", plan->resolved, "notes", notes, "level_settings",
                                          level_settings);

                json_object_update(reply, about);
                request_reply(req, reply);
        } else if (check_limits(req, b.n) >= 0)
                submit_store(req, m, plan, &b, levels, level_settings, skipped, notes, about);
        built_done(&b);
        /*
         * A large plan's snapshots leave the heap fragmented: bench-queue saw
         * ~100 MiB resident after a 10 000-run submit with 2.5 MiB in use.
         * Give it back to the system; the daemon runs for months.
         */
        if (pr.max_runs && b.n >= 1000)
                malloc_trim(0);
}
