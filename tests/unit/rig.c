/* SPDX-License-Identifier: MIT */
#include "rig.h"

#include <signal.h>
#include <sys/stat.h>

static void ev_process(void *ud, pid_t pid, pid_t pgid, uint64_t start)
{
        struct rig *g = ud;

        (void)pgid, (void)start;
        g->pid = pid;
}

static void ev_log_opened(void *ud, const char *path)
{
        (void)ud, (void)path;
}

static void ev_log_appended(void *ud)
{
        (void)ud;
}

static void ev_level_started(void *ud, const char *level)
{
        (void)ud, (void)level;
}

static void ev_level_finished(void *ud, const struct mx_level_result *lr)
{
        struct rig *g = ud;
        json_t *prev = json_object_get(g->recorded, lr->level);
        json_int_t times = prev ? json_integer_value(json_object_get(prev, "times")) : 0;

        json_object_set_new(g->recorded, lr->level,
                            json_pack("{s:s,s:s?,s:I,s:O?,s:O?}", "verdict", lr->verdict, "message",
                                      lr->message, "times", times + 1, "metrics", lr->metrics, "artifacts",
                                      lr->artifacts));
}

static void ev_finished(void *ud, const struct mx_run_result *res)
{
        struct rig *g = ud;

        g->n_finished++;
        g->outcome = res->outcome;
        free(g->crash_class);
        free(g->message);
        g->crash_class = res->crash_class ? xstrdup(res->crash_class) : NULL;
        g->message = res->message ? xstrdup(res->message) : NULL;
}

static const struct mx_run_events events = {
        .process = ev_process,
        .log_opened = ev_log_opened,
        .log_appended = ev_log_appended,
        .level_started = ev_level_started,
        .level_finished = ev_level_finished,
        .finished = ev_finished,
};

/* A rig for one run of spec (taken over) with these levels. */
void rig_init(struct rig *g, const char *name, json_t *spec, const char *levels)
{
        static unsigned n;

        *g = (struct rig){.spec = spec, .recorded = json_object()};
        ASSERT_OK(proc_subreaper_enable());
        g->base = event_base_new();
        ASSERT_NOT_NULL(g->base);
        ASSERT_OK(proc_reaper_new(g->base, &g->reaper));
        ASSERT_OK(mx_http_new(g->base, &g->http, NULL));
        g->dir = xasprintf("%s/%s", test_tmpdir(), name);
        ASSERT_OK(mkdir(g->dir, 0750));
        g->tag = xasprintf("mxtest-runner-%d-%u", (int)getpid(), ++n);
        g->levels = json_loads(levels, 0, NULL);
        ASSERT_NOT_NULL(g->levels);
}

/* Start the runner; its return value, and its reason in *reterr on failure. */
int rig_try_start(struct rig *g, int64_t level_timeout_ms, char **reterr)
{
        struct mx_run_ctx ctx = {
                .base = g->base,
                .reaper = g->reaper,
                .http = g->http,
                .job = 1,
                .run = 1,
                .attempt_id = 1,
                .attempt = 1,
                .tag = g->tag,
                .config_key = "test=1",
                .run_dir = g->dir,
                .spec = g->spec,
                .levels = g->levels,
                .level_timeout_ms = level_timeout_ms,
                .log_max_bytes = 1 << 20,
                .history = g->history,
        };

        g->ops = runner_for_spec(g->spec);
        return g->ops->start(&ctx, &events, g, &g->runner, reterr);
}

void rig_start(struct rig *g, int64_t level_timeout_ms)
{
        _cleanup_free_ char *err = NULL;

        if (rig_try_start(g, level_timeout_ms, &err) < 0)
                test_fail(__FILE__, __LINE__, "start: %s", strna(err));
}

static void expired_cb(evutil_socket_t fd, short what, void *ud)
{
        (void)fd, (void)what;
        *(bool *)ud = true;
}

/*
 * Run the loop until cond(g) holds, failing the test after RIG_LOOP_TIMEOUT_MS
 * (or g->loop_timeout_ms: a real server on a loaded machine needs longer).
 */
void rig_run_until(struct rig *g, bool (*cond)(struct rig *g), const char *what)
{
        int64_t ms = g->loop_timeout_ms > 0 ? g->loop_timeout_ms : RIG_LOOP_TIMEOUT_MS;
        struct event *t;
        bool expired = false;

        t = evtimer_new(g->base, expired_cb, &expired);
        evtimer_add(t, &(struct timeval){.tv_sec = ms / 1000});
        while (!cond(g) && !expired)
                event_base_loop(g->base, EVLOOP_ONCE);
        event_free(t);
        if (!cond(g))
                test_fail(__FILE__, __LINE__, "event loop timed out waiting for %s", what);
}

bool rig_finished(struct rig *g)
{
        return g->n_finished > 0;
}

/* The loop a little longer, so a second finished() or a late callback would show. */
void rig_run_a_while(struct rig *g, int ms)
{
        struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
        bool expired = false;
        struct event *t = evtimer_new(g->base, expired_cb, &expired);

        evtimer_add(t, &tv);
        while (!expired)
                event_base_loop(g->base, EVLOOP_ONCE);
        event_free(t);
}

/* Kill whatever still carries the tag (after a failed assertion's evidence was taken). */
size_t rig_kill_tagged(const char *tag)
{
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;

        ASSERT_OK(proc_find_tagged(tag, &pids, &n));
        for (size_t i = 0; i < n; i++)
                kill(pids[i], SIGKILL);
        return n;
}

/* Wait for the end, check the common promises, free the runner. */
void rig_finish(struct rig *g)
{
        const char *level;
        json_t *v;
        size_t left;

        rig_run_until(g, rig_finished, "finished()");
        rig_run_a_while(g, 200);
        ASSERT_EQ(g->n_finished, 1);
        json_object_foreach (g->recorded, level, v)
                if (json_integer_value(json_object_get(v, "times")) != 1)
                        test_fail(__FILE__, __LINE__, "level %s recorded %" JSON_INTEGER_FORMAT " times",
                                  level, json_integer_value(json_object_get(v, "times")));
        g->runner = g->ops->free(g->runner);
        left = rig_kill_tagged(g->tag);
        if (left > 0)
                test_fail(__FILE__, __LINE__, "%zu processes of the run outlived it", left);
}

void rig_done(struct rig *g)
{
        if (g->runner)
                g->ops->free(g->runner);
        (void)rig_kill_tagged(g->tag);
        g->http = mx_http_free(g->http);
        g->reaper = proc_reaper_free(g->reaper);
        event_base_free(g->base);
        json_decref(g->spec);
        json_decref(g->levels);
        json_decref(g->recorded);
        free(g->crash_class);
        free(g->message);
        free(g->dir);
        free(g->tag);
}

const char *rig_verdict(struct rig *g, const char *level)
{
        return json_string_value(json_object_get(json_object_get(g->recorded, level), "verdict"));
}

json_t *rig_json_text(const char *fmt, ...)
{
        _cleanup_free_ char *text = NULL;
        json_error_t e;
        json_t *j;
        va_list ap;

        va_start(ap, fmt);
        text = xvasprintf(fmt, ap);
        va_end(ap);
        j = json_loads(text, 0, &e);
        if (!j)
                test_fail(__FILE__, __LINE__, "bad JSON in a test (%s): %s", e.text, text);
        return j;
}
