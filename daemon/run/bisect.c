/* SPDX-License-Identifier: MIT */
/*
 * Driving a bisection: the commits between good and bad, a work tree and a build per step, a queued
 * run, the verdict, the next midpoint; resumed after a restart.
 */
#include "bisect.h"
#include "bisect-store.h"
#include "log.h"
#include "proc-reaper.h"
#include "proc.h"
#include "regress.h"
#include "scheduler.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <inttypes.h>
#include <signal.h>

extern char **environ;

#define BISECT_BUILD_TIMEOUT_MS (3600 * 1000) /* bisect.build_timeout_ms's default */
#define BISECT_CONFIRM_STARTS 3               /* starts of a commit before a metric's step is undecided */
#define BISECT_BUILD_TRIES 3                  /* builds killed by a signal not ours (a run's stop) are retried */

/* One command of a chain: argv run in cwd; a failure of an optional one does not stop the chain. */
struct chain_cmd {
        char **argv;
        char *cwd;
        bool optional;
};

/* Commands run one after the other as children on the loop, their output appended to one file. */
struct chain {
        struct mx_bisect *b;
        struct chain *next;
        int64_t bisection, step; /* step 0: resolving the commits */
        char *tag;               /* MXMATRIX_RUN_TAG of its commands: mxbisect-<bisection>-<step> */
        struct chain_cmd *cmds;
        size_t n, i;
        int fd;       /* the output file */
        pid_t pid;    /* the command in flight */
        struct event *timer;
        int64_t timeout_ms;
        bool timed_out;
        bool signalled; /* the failed command was killed by a signal, not by our time limit */
        int tries;      /* builds of this step so far, this one included */
        char *failure;  /* why the chain stopped; NULL: every command succeeded */
        void (*done)(struct chain *c);
};

struct mx_bisect {
        struct mx_daemon *d;
        struct event *tick_ev;
        struct chain *chains; /* in flight */
};

static void chain_free(struct chain *c)
{
        if (!c)
                return;
        for (size_t i = 0; i < c->n; i++) {
                strv_free(c->cmds[i].argv);
                free(c->cmds[i].cwd);
        }
        free(c->cmds);
        if (c->fd >= 0)
                close(c->fd);
        if (c->timer)
                event_free(c->timer);
        free(c->failure);
        free(c->tag);
        free(c);
}

static void chain_unlink(struct chain *c)
{
        for (struct chain **p = &c->b->chains; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        return;
                }
}

static struct chain *chain_find(struct mx_bisect *b, int64_t bisection)
{
        for (struct chain *c = b->chains; c; c = c->next)
                if (c->bisection == bisection)
                        return c;
        return NULL;
}

static void built_cb(struct chain *c);

/* A build of any bisection in flight: builds take one at a time, as runs do (they load the same machine). */
static bool build_in_flight(struct mx_bisect *b)
{
        for (struct chain *c = b->chains; c; c = c->next)
                if (c->done == built_cb)
                        return true;
        return false;
}

static void chain_add(struct chain *c, char **argv, const char *cwd, bool optional)
{
        c->cmds = xreallocarray(c->cmds, c->n + 1, sizeof(*c->cmds));
        c->cmds[c->n++] = (struct chain_cmd){ .argv = argv, .cwd = cwd ? xstrdup(cwd) : NULL, .optional = optional };
}

static void chain_next(struct chain *c);

static void chain_finish(struct chain *c)
{
        chain_unlink(c);
        if (c->done)
                c->done(c);
        chain_free(c);
}

static void chain_timeout_cb(evutil_socket_t fd, short what, void *ud)
{
        struct chain *c = ud;

        (void)fd;
        (void)what;
        c->timed_out = true;
        if (c->pid > 0)
                (void)kill(-c->pid, SIGKILL); /* it leads its own process group (proc_spawn) */
}

static void chain_exit_cb(pid_t pid, int status, void *ud)
{
        struct chain *c = ud;
        const struct chain_cmd *cmd = &c->cmds[c->i];

        (void)pid;
        c->pid = 0;
        event_del(c->timer);
        if (c->timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                _cleanup_free_ char *how =
                        c->timed_out ? xasprintf("was killed after %" PRId64 " ms", c->timeout_ms)
                        : WIFEXITED(status) ? xasprintf("exited with status %d", WEXITSTATUS(status))
                                            : xasprintf("was killed by signal %d", WTERMSIG(status));

                dprintf(c->fd, "mxmatrixd: '%s' %s\n", cmd->argv[0], how);
                if (!cmd->optional || c->timed_out) {
                        c->signalled = !c->timed_out && WIFSIGNALED(status);
                        c->failure = xasprintf("'%s' %s", cmd->argv[0], how);
                        return chain_finish(c);
                }
        }
        c->i++;
        chain_next(c);
}

static void chain_next(struct chain *c)
{
        _cleanup_free_ char *err = NULL;
        struct proc_info info = {};
        const struct chain_cmd *cmd;
        int r;

        if (c->i >= c->n)
                return chain_finish(c);
        cmd = &c->cmds[c->i];
        dprintf(c->fd, "mxmatrixd: $");
        for (char **w = cmd->argv; *w; w++)
                dprintf(c->fd, " %s", *w);
        dprintf(c->fd, "%s%s%s\n", cmd->cwd ? "   (in " : "", cmd->cwd ? cmd->cwd : "", cmd->cwd ? ")" : "");
        r = proc_spawn(&(struct proc_spec){ .argv = cmd->argv, .env = environ, .cwd = cmd->cwd, .tag = c->tag,
                                            .stdout_fd = c->fd, .stderr_fd = c->fd },
                       &info, &err);
        if (r >= 0)
                r = proc_reaper_watch(c->b->d->reaper, info.pid, chain_exit_cb, c);
        if (r < 0) {
                dprintf(c->fd, "mxmatrixd: cannot start '%s': %s\n", cmd->argv[0], err ? err : strerror(-r));
                if (cmd->optional) {
                        c->i++;
                        return chain_next(c);
                }
                c->failure = xasprintf("cannot start '%s': %s", cmd->argv[0], err ? err : strerror(-r));
                return chain_finish(c);
        }
        c->pid = info.pid;
        event_add(c->timer, &(struct timeval){ .tv_sec = c->timeout_ms / 1000,
                                               .tv_usec = (c->timeout_ms % 1000) * 1000 });
}

/* A new chain writing to path (truncated), started at once; done runs when it ends. */
static struct chain *chain_new(struct mx_bisect *b, int64_t bisection, int64_t step, const char *path,
                               int64_t timeout_ms, void (*done)(struct chain *c))
{
        struct chain *c = xcalloc(1, sizeof(*c));

        c->b = b;
        c->bisection = bisection;
        c->step = step;
        c->timeout_ms = timeout_ms;
        c->done = done;
        c->tag = xasprintf("mxbisect-%" PRId64 "-%" PRId64, bisection, step);
        c->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
        c->timer = evtimer_new(b->d->base, chain_timeout_cb, c);
        return c;
}

static int chain_start(struct chain *c, char **reterr)
{
        if (c->fd < 0) {
                int r = -errno;

                *reterr = xasprintf("cannot open the log: %s", strerror(-r));
                chain_free(c);
                return r;
        }
        c->next = c->b->chains;
        c->b->chains = c;
        chain_next(c);
        return 0;
}

/* A NULL-terminated argument list as a strv. */
static char **args(const char *first, ...)
{
        char **l = NULL;
        va_list ap;

        va_start(ap, first);
        for (const char *a = first; a; a = va_arg(ap, const char *))
                strv_push(&l, a);
        va_end(ap);
        return l;
}

/* The lines of a small file (a list of commits), without their newlines. */
static int read_lines(const char *path, char ***ret)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *line = NULL;
        char **l = NULL;
        size_t sz = 0;
        ssize_t n;

        if (!f)
                return -errno;
        while ((n = getline(&line, &sz, f)) > 0 && strv_length(l) < 1000000) {
                line[strcspn(line, "\r\n")] = '\0';
                if (*line && !startswith(line, "mxmatrixd: "))
                        strv_push(&l, line);
        }
        *ret = l;
        return 0;
}

/* ---- paths ---- */

static char *bisect_dir(struct mx_bisect *b, int64_t id)
{
        return xasprintf("%s/bisect/%" PRId64, b->d->cfg.state_dir, id);
}

static void stop_with(struct mx_bisect *b, int64_t id, const char *state, json_t *result, const char *message);

/* ---- resolving good and bad ---- */

static void resolved_cb(struct chain *c)
{
        struct mx_bisect *b = c->b;
        _cleanup_free_ char *dir = bisect_dir(b, c->bisection), *path = xasprintf("%s/commits", dir);
        _cleanup_strv_free_ char **lines = NULL;
        _cleanup_json_ json_t *commits = json_array();
        int r;

        if (c->failure) {
                _cleanup_free_ char *m = xasprintf("cannot resolve the commits: %s (see %s)", c->failure, path);

                return stop_with(b, c->bisection, "failed", NULL, m);
        }
        r = read_lines(path, &lines);
        if (r < 0)
                return stop_with(b, c->bisection, "failed", NULL, "cannot read git's list of commits");
        /* rev-parse's two lines (good, bad), then rev-list's commits after good up to bad, oldest first */
        if (strv_length(lines) < 3) {
                _cleanup_free_ char *m = xasprintf("no commits between good and bad: is %s an ancestor of %s?",
                                                   strna(lines ? lines[0] : NULL),
                                                   strna(lines && lines[0] ? lines[1] : NULL));

                return stop_with(b, c->bisection, "failed", NULL, m);
        }
        json_array_append_new(commits, json_string(lines[0]));
        for (size_t i = 2; lines[i]; i++)
                json_array_append_new(commits, json_string(lines[i]));
        if (!streq(json_string_value(json_array_get(commits, json_array_size(commits) - 1)), lines[1]))
                return stop_with(b, c->bisection, "failed", NULL,
                                 "the bad commit is not on the first-parent line from the good one");
        r = bstore_resolved(b->d->db, c->bisection, lines[0], lines[1], commits);
        if (r < 0)
                log_error_errno(r, "bisection %" PRId64 ": cannot store its commits", c->bisection);
        else
                log_info("bisection %" PRId64 ": %zu commits after %.12s up to %.12s", c->bisection,
                         json_array_size(commits) - 1, lines[0], lines[1]);
        bisect_poke(b);
}

static void resolve(struct mx_bisect *b, json_t *bs)
{
        int64_t id = json_integer_value(json_object_get(bs, "id"));
        const char *repo = json_string_value(json_object_get(bs, "repo"));
        _cleanup_free_ char *dir = bisect_dir(b, id), *path = xasprintf("%s/commits", dir), *err = NULL,
                            *good = xasprintf("%s^{commit}", json_string_value(json_object_get(bs, "good_arg"))),
                            *bad = xasprintf("%s^{commit}", json_string_value(json_object_get(bs, "bad_arg"))),
                            *range = NULL;
        struct chain *c;
        int r;

        r = mx_mkdir_p(dir, 0755);
        if (r < 0)
                return stop_with(b, id, "failed", NULL, "cannot create the bisection's directory");
        c = chain_new(b, id, 0, path, 60 * 1000, resolved_cb);
        chain_add(c, args("git", "-C", repo, "rev-parse", "--verify", "--end-of-options", good, NULL), NULL,
                  false);
        chain_add(c, args("git", "-C", repo, "rev-parse", "--verify", "--end-of-options", bad, NULL), NULL,
                  false);
        range = xasprintf("%s..%s", json_string_value(json_object_get(bs, "good_arg")),
                          json_string_value(json_object_get(bs, "bad_arg")));
        chain_add(c, args("git", "-C", repo, "rev-list", "--first-parent", "--reverse", range, "--", NULL),
                  NULL, false);
        r = chain_start(c, &err);
        if (r < 0)
                stop_with(b, id, "failed", NULL, err);
}

/* ---- ending ---- */

/* Remove the bisection's work trees from the user's repository's list (their directories go with them). */
static void remove_worktrees(struct mx_bisect *b, int64_t id)
{
        _cleanup_json_ json_t *bs = NULL;
        _cleanup_free_ char *dir = bisect_dir(b, id), *log = xasprintf("%s/cleanup.log", dir), *err = NULL;
        json_t *st;
        struct chain *c;
        size_t i;

        if (bstore_get(b->d->db, id, &bs) < 0 || json_array_size(json_object_get(bs, "steps")) == 0)
                return;
        c = chain_new(b, id, 0, log, 10 * 60 * 1000, NULL);
        json_array_foreach (json_object_get(bs, "steps"), i, st)
                chain_add(c,
                          args("git", "-C", json_string_value(json_object_get(bs, "repo")), "worktree", "remove",
                               "--force", json_string_value(json_object_get(st, "worktree")), NULL),
                          NULL, true);
        chain_add(c, args("git", "-C", json_string_value(json_object_get(bs, "repo")), "worktree", "prune", NULL),
                  NULL, true);
        (void)chain_start(c, &err);
}

static void stop_with(struct mx_bisect *b, int64_t id, const char *state, json_t *result, const char *message)
{
        int r = bstore_end(b->d->db, id, state, result, message);

        if (r < 0) {
                log_error_errno(r, "bisection %" PRId64 ": cannot store its end", id);
                return;
        }
        if (streq(state, "done"))
                log_info("bisection %" PRId64 " done: %s", id, message);
        else
                log_warning("bisection %" PRId64 " %s: %s", id, state, message);
        remove_worktrees(b, id);
}

/* ---- steps ---- */

static json_t *step_at(json_t *bs, int64_t idx)
{
        json_t *st;
        size_t i;

        json_array_foreach (json_object_get(bs, "steps"), i, st)
                if (json_integer_value(json_object_get(st, "idx")) == idx)
                        return st;
        return NULL;
}

static const char *tpl_str(json_t *bs, const char *key)
{
        return json_string_value(json_object_get(json_object_get(bs, "template"), key));
}

/* The run's snapshot with its source at dir: {source_dir} and the metadata source the SHA is read from. */
static json_t *run_spec_at(json_t *bs, const char *dir)
{
        json_t *tpl = json_object_get(bs, "template");
        json_t *spec = json_deep_copy(json_object_get(json_object_get(tpl, "run"), "spec"));
        json_t *meta = json_deep_copy(json_object_get(json_object_get(tpl, "spec_base"), "metadata"));
        const char *src = tpl_str(bs, "source");

        json_object_set_new(spec, "source_dir", json_string(dir));
        if (json_is_object(meta) && src) {
                json_t *sources = json_object_get(meta, "sources");

                if (!json_is_object(sources)) {
                        sources = json_object();
                        json_object_set_new(meta, "sources", sources);
                }
                json_object_set_new(sources, src, json_string(dir));
                json_object_set_new(spec, "metadata", meta);
        } else
                json_decref(meta);
        return spec;
}

/* Queue the step's job: the commit's run (side current or reference), and with_ref the good commit's too. */
static int submit_step(struct mx_bisect *b, json_t *bs, int64_t step, const char *dir, const char *side,
                       const char *ref_dir)
{
        json_t *tpl = json_object_get(bs, "template"), *run = json_object_get(tpl, "run");
        int64_t id = json_integer_value(json_object_get(bs, "id")), job = 0;
        _cleanup_free_ char *feature = xasprintf("bisect %" PRId64, id);
        _cleanup_json_ json_t *request = json_pack("{s:I}", "bisection", (json_int_t)id),
                              *reasons = json_pack("[s]", "bisect"), *spec0 = run_spec_at(bs, dir),
                              *spec1 = ref_dir ? run_spec_at(bs, ref_dir) : NULL;
        json_t *specs[2] = { spec0, spec1 };
        const char *sides[2] = { side, "reference" };
        struct queue_run_new runs[2];
        size_t n = ref_dir ? 2 : 1;
        int r;

        for (size_t i = 0; i < n; i++)
                runs[i] = (struct queue_run_new){
                        .config_key = json_string_value(json_object_get(run, "config_key")),
                        .config_hash = json_string_value(json_object_get(run, "config_hash")),
                        .config = json_object_get(run, "config"),
                        .reasons = reasons,
                        .spec = specs[i],
                };
        r = queue_submit(b->d->db,
                         &(struct queue_job_new){
                                 .uid = (uid_t)json_integer_value(json_object_get(bs, "uid")),
                                 .gid = (gid_t)json_integer_value(json_object_get(tpl, "gid")),
                                 .user_name = json_string_value(json_object_get(bs, "user_name")),
                                 .matrix_path = tpl_str(bs, "matrix_path"),
                                 .matrix_digest = tpl_str(bs, "matrix_digest"),
                                 .feature = feature,
                                 .strategy = "bisect",
                                 .levels = json_object_get(tpl, "levels"),
                                 .request = request,
                                 .spec_base = json_object_get(tpl, "spec_base"),
                         },
                         runs, n, &job);
        if (r < 0)
                return r;
        r = bstore_step_link(b->d->db, step, job, sides, n);
        if (r < 0)
                return r;
        r = bstore_step_set(b->d->db, step, "running", NULL, NULL);
        if (r < 0)
                return r;
        log_info("bisection %" PRId64 ": job %" PRId64 " runs %s", id, job, dir);
        sched_kick(b->d->sched);
        return 0;
}

static void build_step(struct mx_bisect *b, json_t *bs, json_t *st, int tries);

static void built_cb(struct chain *c)
{
        struct mx_bisect *b = c->b;
        _cleanup_json_ json_t *bs = NULL;
        json_t *st = NULL, *x;
        int64_t idx;
        size_t i;
        int r;

        r = bstore_get(b->d->db, c->bisection, &bs);
        if (r < 0 || !streq_ptr(json_string_value(json_object_get(bs, "state")), "running"))
                return;
        json_array_foreach (json_object_get(bs, "steps"), i, x)
                if (json_integer_value(json_object_get(x, "id")) == c->step)
                        st = x;
        if (!st)
                return;
        idx = json_integer_value(json_object_get(st, "idx"));
        if (c->failure && c->signalled && c->tries < BISECT_BUILD_TRIES) {
                /* not the commit's fault: a run's stop sweeps the daemon's children, an OOM kill, ... */
                log_warning("bisection %" PRId64 ": the build of %.12s %s; building it again", c->bisection,
                            json_string_value(json_object_get(st, "sha")), c->failure);
                build_step(b, bs, st, c->tries + 1);
                return;
        }
        if (c->failure) {
                _cleanup_free_ char *m = xasprintf("build failed: %s (log %s)", c->failure,
                                                   json_string_value(json_object_get(st, "build_log")));

                log_warning("bisection %" PRId64 ": commit %.12s skipped: %s", c->bisection,
                            json_string_value(json_object_get(st, "sha")), m);
                r = bstore_step_set(b->d->db, c->step, "skip", NULL, m);
        } else {
                bool metric = json_is_string(json_object_get(bs, "metric"));

                /* the good commit's run is a metric's reference: its starts are what the others compare with */
                r = submit_step(b, bs, c->step, json_string_value(json_object_get(st, "worktree")),
                                metric && idx == 0 ? "reference" : "current", NULL);
        }
        if (r < 0)
                log_error_errno(r, "bisection %" PRId64 ": cannot store step %" PRId64, c->bisection, c->step);
        bisect_poke(b);
}

/* Kill what is left of a step's earlier build (a daemon killed in the middle leaves it running). */
static void kill_leftovers(const char *tag)
{
        _cleanup_free_ struct proc_entry *left = NULL;
        size_t n = 0;

        if (proc_scan(&(struct proc_match){ .tag = tag }, &left, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++)
                (void)kill(left[i].pid, SIGKILL);
}

/* Check the commit out into its own work tree and build it there; built_cb() queues its run. */
static void build_step(struct mx_bisect *b, json_t *bs, json_t *st, int tries)
{
        int64_t id = json_integer_value(json_object_get(bs, "id"));
        const char *repo = json_string_value(json_object_get(bs, "repo"));
        const char *wt = json_string_value(json_object_get(st, "worktree"));
        json_t *tpl = json_object_get(bs, "template"), *w;
        _cleanup_free_ char *err = NULL;
        _cleanup_strv_free_ char **build = NULL;
        struct chain *c;
        size_t i;

        json_array_foreach (json_object_get(tpl, "build"), i, w)
                strv_push(&build, json_string_value(w));
        c = chain_new(b, id, json_integer_value(json_object_get(st, "id")),
                      json_string_value(json_object_get(st, "build_log")),
                      json_integer_value(json_object_get(tpl, "build_timeout_ms")) ?: BISECT_BUILD_TIMEOUT_MS,
                      built_cb);
        c->tries = tries;
        kill_leftovers(c->tag);
        /* a build cut off by a restart starts again from a fresh checkout */
        chain_add(c, args("git", "-C", repo, "worktree", "remove", "--force", wt, NULL), NULL, true);
        chain_add(c, args("git", "-C", repo, "worktree", "prune", NULL), NULL, true);
        chain_add(c, args("git", "-C", repo, "worktree", "add", "--detach", wt,
                          json_string_value(json_object_get(st, "sha")), NULL),
                  NULL, false);
        chain_add(c, TAKE_PTR(build), wt, false);
        if (chain_start(c, &err) < 0)
                log_error("bisection %" PRId64 ": cannot build: %s", id, err);
}

static int start_step(struct mx_bisect *b, json_t *bs, int64_t idx)
{
        int64_t id = json_integer_value(json_object_get(bs, "id")), step = 0;
        const char *sha = json_string_value(json_array_get(json_object_get(bs, "commits"), (size_t)idx));
        _cleanup_free_ char *dir = bisect_dir(b, id),
                            *wt = xasprintf("%s/wt-%" PRId64 "-%.12s", dir, idx, sha),
                            *log = xasprintf("%s/build-%" PRId64 "-%.12s.log", dir, idx, sha);
        _cleanup_json_ json_t *again = NULL;
        int r;

        r = bstore_step_add(b->d->db, id, idx, sha, wt, log, &step);
        if (r < 0)
                return r;
        log_info("bisection %" PRId64 ": building commit %" PRId64 " %.12s", id, idx, sha);
        r = bstore_get(b->d->db, id, &again);
        if (r < 0)
                return r;
        build_step(b, again, step_at(again, idx), 1);
        return 0;
}

/* ---- deciding ---- */

static json_t *primary_check(json_t *cmp)
{
        json_t *c;
        size_t i;

        json_array_foreach (json_object_get(cmp, "checks"), i, c)
                if (streq_ptr(json_string_value(json_object_get(c, "family")), "primary"))
                        return c;
        return NULL;
}

/* The L4 documents of a step's runs of one side that are done. */
static json_t *side_l4(json_t *st, const char *side)
{
        json_t *a = json_array(), *run;
        size_t i;

        json_array_foreach (json_object_get(st, "runs"), i, run)
                if (streq_ptr(json_string_value(json_object_get(run, "side")), side) &&
                    json_is_object(json_object_get(run, "l4")))
                        json_array_append(a, json_object_get(run, "l4"));
        return a;
}

static json_t *last_run(json_t *st)
{
        json_t *runs = json_object_get(st, "runs");

        return json_array_get(runs, json_array_size(runs) ? json_array_size(runs) - 1 : 0);
}

/* A level decides: its verdict on the commit's run. */
static int decide_level(struct mx_bisect *b, json_t *bs, json_t *st)
{
        const char *level = json_string_value(json_object_get(bs, "level"));
        json_t *run = last_run(st);
        const char *v = json_string_value(json_object_get(json_object_get(run, "verdicts"), level));
        const char *result = json_string_value(json_object_get(run, "result"));
        _cleanup_json_ json_t *dec = json_pack("{s:s,s:s?,s:s?,s:O}", "level", level, "verdict", v, "result",
                                               result, "run", json_object_get(run, "run"));
        _cleanup_free_ char *m = NULL;
        const char *state = streq_ptr(v, "pass") ? "good" : streq_ptr(v, "fail") ? "bad" : "skip";

        m = streq(state, "skip") ? xasprintf("%s has no pass or fail verdict (%s; run result %s)", level,
                                             v ? v : "not run", strna(result))
                                 : xasprintf("%s %s", level, v);
        return bstore_step_set(b->d->db, json_integer_value(json_object_get(st, "id")), state, dec, m);
}

/* A metric decides: L5's comparison of the commit's starts with the good commit's, confirmed while undecided. */
static int decide_metric(struct mx_bisect *b, json_t *bs, json_t *st)
{
        int64_t step = json_integer_value(json_object_get(st, "id")), idx = json_integer_value(json_object_get(st, "idx"));
        const char *metric = json_string_value(json_object_get(bs, "metric"));
        json_t *run = last_run(st), *pc, *ref_st = step_at(bs, 0);
        _cleanup_json_ json_t *curs = side_l4(st, idx == 0 ? "reference" : "current"), *refs = NULL, *cmp = NULL;
        _cleanup_free_ char *m = NULL;
        struct mx_regress_opts o;
        const char *call;
        int64_t budget = json_integer_value(json_object_get(json_object_get(bs, "template"), "confirm_starts"));
        int r;

        if (json_array_size(curs) == 0) {
                m = xasprintf("no L4 figures (run result %s)", strna(json_string_value(json_object_get(run, "result"))));
                if (idx == 0) {
                        _cleanup_free_ char *f = xasprintf("the good commit's run has %s", m);

                        stop_with(b, json_integer_value(json_object_get(bs, "id")), "failed", NULL, f);
                        return 0;
                }
                return bstore_step_set(b->d->db, step, "skip", NULL, m);
        }
        if (idx == 0)
                return bstore_step_set(b->d->db, step, "good", NULL, "the good commit: the reference");
        r = bstore_reference_l4(b->d->db, json_integer_value(json_object_get(bs, "id")), &refs);
        if (r < 0)
                return r;
        mx_regress_opts_defaults(&o);
        o.perf_max_drop_pct = json_real_value(json_object_get(bs, "threshold"));
        o.primary = metric;
        o.can_confirm = (int64_t)json_array_size(curs) < (budget > 0 ? budget : BISECT_CONFIRM_STARTS);
        cmp = mx_regress_compare(curs, refs, &o);
        pc = primary_check(cmp);
        if (!pc) {
                _cleanup_free_ char *f = xasprintf("'%s' is not a row of both sides' L4 results", metric);

                stop_with(b, json_integer_value(json_object_get(bs, "id")), "failed", cmp, f);
                return 0;
        }
        call = json_string_value(json_object_get(pc, "decision"));
        m = xasprintf("%s %.2f against %.2f at the good commit (%+.1f %%, %zu:%zu starts): %s", metric,
                      json_number_value(json_object_get(pc, "current")),
                      json_number_value(json_object_get(pc, "reference")),
                      json_number_value(json_object_get(pc, "delta_pct")), json_array_size(curs),
                      json_array_size(refs), strna(call));
        if (streq_ptr(call, "unknown") && o.can_confirm) {
                /* confirmation starts: the commit and the good commit again, each a fresh server start */
                log_info("bisection %" PRId64 ": %.12s undecided, starting both again: %s",
                         (int64_t)json_integer_value(json_object_get(bs, "id")), json_string_value(json_object_get(st, "sha")), m);
                return submit_step(b, bs, step, json_string_value(json_object_get(st, "worktree")), "current",
                                   json_string_value(json_object_get(ref_st, "worktree")));
        }
        return bstore_step_set(b->d->db, step,
                               streq_ptr(call, "regression")      ? "bad"
                               : streq_ptr(call, "no regression") ? "good"
                                                                  : "skip",
                               pc, m);
}

/* 1 when the step's runs are all done and it was decided, 0 while they run. */
static int decide_step(struct mx_bisect *b, json_t *bs, json_t *st)
{
        json_t *run;
        size_t i;
        int r;

        if (json_array_size(json_object_get(st, "runs")) == 0)
                return 0;
        json_array_foreach (json_object_get(st, "runs"), i, run)
                if (!streq_ptr(json_string_value(json_object_get(run, "state")), "done"))
                        return 0;
        r = json_is_string(json_object_get(bs, "level")) ? decide_level(b, bs, st) : decide_metric(b, bs, st);
        return r < 0 ? r : 1;
}

static json_t *side_json(json_t *bs, int64_t idx)
{
        json_t *st = step_at(bs, idx);

        return json_pack("{s:I,s:O,s:O?,s:O?}", "idx", (json_int_t)idx, "sha",
                         json_array_get(json_object_get(bs, "commits"), (size_t)idx), "decision",
                         json_object_get(st, "decision"), "message", json_object_get(st, "message"));
}

/* lo is good, hi bad and nothing between them is left to try: the answer. */
static void conclude(struct mx_bisect *b, json_t *bs, int64_t lo, int64_t hi)
{
        json_t *commits = json_object_get(bs, "commits");
        _cleanup_json_ json_t *result = NULL, *between = json_array();
        _cleanup_free_ char *m = NULL;
        const char *bad_msg = json_string_value(json_object_get(step_at(bs, hi), "message"));
        size_t builds = json_array_size(json_object_get(bs, "steps"));

        for (int64_t i = lo + 1; i < hi; i++)
                json_array_append(between, json_array_get(commits, (size_t)i));
        result = json_pack("{s:O,s:I,s:O,s:o,s:o,s:O,s:I,s:I}", "first_bad", json_array_get(commits, (size_t)hi),
                           "first_bad_idx", (json_int_t)hi, "last_good", json_array_get(commits, (size_t)lo),
                           "bad", side_json(bs, hi), "good", side_json(bs, lo), "skipped_between", between,
                           "commits", (json_int_t)(json_array_size(commits) - 1), "builds", (json_int_t)builds);
        if (json_array_size(between) > 0)
                m = xasprintf("the first bad commit is one of %zu (commits skipped between %.12s and %.12s: "
                              "their build failed or their runs did not decide): %.12s or an earlier skipped one",
                              json_array_size(between) + 1, json_string_value(json_array_get(commits, (size_t)lo)),
                              json_string_value(json_array_get(commits, (size_t)hi)),
                              json_string_value(json_array_get(commits, (size_t)hi)));
        else
                m = xasprintf("first bad commit %s%s%s (last good %.12s; %zu builds for %zu commits)",
                              json_string_value(json_array_get(commits, (size_t)hi)), bad_msg ? ": " : "",
                              strempty(bad_msg), json_string_value(json_array_get(commits, (size_t)lo)), builds,
                              json_array_size(commits) - 1);
        stop_with(b, json_integer_value(json_object_get(bs, "id")), "done", result, m);
}

/* The next commit to try: the untried one nearest the middle of the window; -1 when none is left. */
static int64_t pick(json_t *bs, int64_t lo, int64_t hi)
{
        int64_t best = -1;

        for (int64_t i = lo + 1; i < hi; i++) {
                if (step_at(bs, i))
                        continue;
                if (best < 0 || llabs(2 * i - (lo + hi)) < llabs(2 * best - (lo + hi)))
                        best = i;
        }
        return best;
}

/* One bisection's next move; nothing while a child of it is in flight. */
static int advance(struct mx_bisect *b, json_t *bs)
{
        int64_t id = json_integer_value(json_object_get(bs, "id")), lo = 0, hi, next;
        json_t *st;
        size_t i;

        if (chain_find(b, id))
                return 0;
        if (streq_ptr(json_string_value(json_object_get(bs, "state")), "resolving")) {
                resolve(b, bs);
                return 0;
        }
        json_array_foreach (json_object_get(bs, "steps"), i, st) {
                const char *s = json_string_value(json_object_get(st, "state"));

                if (streq_ptr(s, "building")) {
                        if (!build_in_flight(b))
                                build_step(b, bs, st, 1);
                        return 0;
                }
                if (streq_ptr(s, "running"))
                        return decide_step(b, bs, st);
        }
        if (build_in_flight(b))
                return 0; /* its end pokes us */
        if (json_is_string(json_object_get(bs, "metric")) && !step_at(bs, 0))
                return start_step(b, bs, 0);
        hi = (int64_t)json_array_size(json_object_get(bs, "commits")) - 1;
        json_array_foreach (json_object_get(bs, "steps"), i, st) {
                int64_t idx = json_integer_value(json_object_get(st, "idx"));
                const char *s = json_string_value(json_object_get(st, "state"));

                if (streq_ptr(s, "good") && idx > lo)
                        lo = idx;
                if (streq_ptr(s, "bad") && idx < hi)
                        hi = idx;
        }
        if (lo >= hi) {
                stop_with(b, id, "failed", NULL,
                          "a commit after a bad one was good: the predicate does not split the commits in two");
                return 0;
        }
        next = pick(bs, lo, hi);
        if (next < 0) {
                conclude(b, bs, lo, hi);
                return 0;
        }
        return start_step(b, bs, next);
}

static void tick_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_bisect *b = ud;
        _cleanup_free_ int64_t *ids = NULL;
        size_t n = 0;
        int r;

        (void)fd;
        (void)what;
        r = bstore_active(b->d->db, &ids, &n);
        if (r < 0) {
                log_error_errno(r, "cannot read the bisections");
                return;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_json_ json_t *bs = NULL;

                r = bstore_get(b->d->db, ids[i], &bs);
                if (r >= 0)
                        r = advance(b, bs);
                if (r < 0)
                        log_error_errno(r, "bisection %" PRId64 ": cannot go on", ids[i]);
                else if (r > 0)
                        bisect_poke(b); /* a step was decided: the next move */
        }
}

void bisect_poke(struct mx_bisect *b)
{
        if (b)
                event_active(b->tick_ev, EV_TIMEOUT, 1);
}

struct mx_bisect *bisect_new(struct mx_daemon *d)
{
        struct mx_bisect *b = xcalloc(1, sizeof(*b));

        b->d = d;
        b->tick_ev = event_new(d->base, -1, 0, tick_cb, b);
        bisect_poke(b); /* resume what a restart interrupted */
        return b;
}

struct mx_bisect *bisect_free(struct mx_bisect *b)
{
        if (!b)
                return NULL;
        while (b->chains) {
                struct chain *c = b->chains;

                b->chains = c->next;
                if (c->pid > 0) {
                        (void)kill(-c->pid, SIGKILL);
                        (void)proc_reaper_unwatch(b->d->reaper, c->pid);
                }
                chain_free(c);
        }
        event_free(b->tick_ev);
        free(b);
        return NULL;
}

int bisect_cancel(struct mx_bisect *b, int64_t id, uid_t by, int64_t *ret_running)
{
        _cleanup_json_ json_t *bs = NULL;
        struct chain *c = chain_find(b, id);
        json_t *st, *run;
        size_t i, k;
        int r = bstore_get(b->d->db, id, &bs);

        if (r < 0)
                return r;
        *ret_running = 0;
        if (c && c->pid > 0)
                (void)kill(-c->pid, SIGKILL); /* its chain ends as failed; the bisection is over by then */
        json_array_foreach (json_object_get(bs, "steps"), i, st)
                json_array_foreach (json_object_get(st, "runs"), k, run)
                        if (!streq_ptr(json_string_value(json_object_get(run, "state")), "done")) {
                                int64_t cancelled = 0, running = 0;

                                if (queue_cancel(b->d->db, json_integer_value(json_object_get(run, "job")), 0, by,
                                                 &cancelled, &running) >= 0 && running)
                                        *ret_running = running;
                        }
        stop_with(b, id, "cancelled", NULL, "cancelled by a user");
        return 0;
}
