/* SPDX-License-Identifier: MIT */
/*
 * The table of level implementations and the driver that runs a run's
 * levels in the seed's order (levels.h).
 */
#include "levels.h"
#include "crash.h"
#include "logcap.h"
#include "probe.h"

extern const struct mx_level_ops mx_level_l1_ops;
extern const struct mx_level_ops mx_level_l15_ops;
extern const struct mx_level_ops mx_level_l2_ops;
extern const struct mx_level_ops mx_level_l3_ops;
extern const struct mx_level_ops mx_level_l4_ops;
extern const struct mx_level_ops mx_level_l5_ops;

/* Like tmux's cmd_table: one line per level file. */
const struct mx_level_ops *const mx_level_table[] = {
        &mx_level_l1_ops,
        &mx_level_l15_ops,
        &mx_level_l2_ops,
        &mx_level_l3_ops,
        &mx_level_l4_ops,
        &mx_level_l5_ops,
        NULL,
};

const struct mx_level_ops *mx_level_ops_find(const char *name)
{
        for (size_t i = 0; mx_level_table[i]; i++)
                if (streq_ptr(mx_level_table[i]->name, name))
                        return mx_level_table[i];
        return NULL;
}

enum slot_state {
        SLOT_WAITING,  /* its turn has not come */
        SLOT_RUNNING,  /* run() called, no verdict yet */
        SLOT_PENDING,  /* done with the server, verdict after the stop */
        SLOT_ABORTED,  /* cancelled while running: verdict at the end */
        SLOT_RECORDED, /* verdict reported */
};

/* A verdict of a gated level, held until the kernel gate has spoken. */
struct held {
        bool held;
        enum mx_verdict verdict;
        char *message;
        json_t *metrics, *artifacts;
        int64_t finished;
};

struct slot {
        const struct mx_level_def *def;
        const struct mx_level_ops *ops; /* NULL: no implementation in this daemon */
        struct mx_level *l;
        struct mx_level_ctx ctx;
        enum slot_state state;
        enum mx_verdict verdict; /* once recorded */
        json_t *metrics;         /* once recorded: what was reported, for later levels (mx_level_sibling) */
        int64_t started;
        struct held held;
};

struct mx_levels {
        struct slot slots[MX_LEVELS_MAX];
        size_t n, cur; /* cur: the slot running now, or n */
        size_t next;   /* the next slot to consider */
        const struct mx_levels_hooks *hooks;
        void *ud;
        int64_t default_timeout_ms;
        struct event *advance, *timer;
        bool started, aborted, ended, done;
        size_t before_stop_next; /* the next slot whose before_stop() is due */
        bool before_stop_busy;   /* a before_stop() has not said it is done */
        char *stopped_by; /* why the rest is not run ("L2 failed") */
        char *failure;    /* the first failed level, "L2: ..." */
};

static struct slot *slot_of(struct mx_levels *lv, struct mx_level *l)
{
        for (size_t i = 0; i < lv->n; i++)
                if (lv->slots[i].l == l)
                        return &lv->slots[i];
        mx_die("a level that is not in its set");
}

static struct slot *gate_slot(struct mx_levels *lv)
{
        for (size_t i = 0; i < lv->n; i++)
                if (streq(lv->slots[i].def->name, "L1.5"))
                        return &lv->slots[i];
        return NULL;
}

static void emit(struct mx_levels *lv, struct slot *s, enum mx_verdict v, const char *message, json_t *metrics,
                 json_t *artifacts, int64_t finished)
{
        struct mx_level_result r = {
                .level = s->def->name, .verdict = mx_verdict_to_string(v),
                .started_at = s->started ? s->started : finished, .finished_at = finished,
                .metrics = metrics, .artifacts = artifacts, .message = message,
        };

        s->state = SLOT_RECORDED;
        s->verdict = v;
        json_decref(s->metrics);
        s->metrics = json_incref(metrics);
        if (v == MX_VERDICT_FAIL && !lv->failure)
                lv->failure = xasprintf("%s: %s", s->def->name, message ? message : "failed");
        lv->hooks->recorded(lv->ud, &r);
}

/* Release the results of gated levels once the gate has a verdict (or will never have one). */
static void release_held(struct mx_levels *lv)
{
        struct slot *g = gate_slot(lv);
        bool bad = g && g->state == SLOT_RECORDED && (g->verdict == MX_VERDICT_FAIL || g->verdict == MX_VERDICT_INVALID);

        if (g && g->state != SLOT_RECORDED && !lv->ended)
                return;
        for (size_t i = 0; i < lv->n; i++) {
                struct slot *s = &lv->slots[i];
                struct held *h = &s->held;
                _cleanup_free_ char *m = NULL;

                if (!h->held)
                        continue;
                h->held = false;
                if (bad && h->verdict == MX_VERDICT_PASS) {
                        m = xasprintf("%s%sthe kernel gate (L1.5) says %s: these benchmark numbers are invalid",
                                      strempty(h->message), h->message ? "; " : "", mx_verdict_to_string(g->verdict));
                        h->verdict = MX_VERDICT_INVALID;
                }
                emit(lv, s, h->verdict, m ? m : h->message, h->metrics, h->artifacts, h->finished);
                free(h->message);
                json_decref(h->metrics);
                json_decref(h->artifacts);
        }
}

/* Record a verdict; a gated level's waits for the gate. Takes metrics and artifacts. */
static void record(struct mx_levels *lv, struct slot *s, enum mx_verdict v, const char *message, json_t *metrics,
                   json_t *artifacts)
{
        struct slot *g = gate_slot(lv);

        if (s->state == SLOT_RECORDED || s->held.held) {
                json_decref(metrics);
                json_decref(artifacts);
                return;
        }
        if (s->def->gated && g && g->state != SLOT_RECORDED) {
                s->held = (struct held){ .held = true, .verdict = v, .message = message ? xstrdup(message) : NULL,
                                         .metrics = metrics, .artifacts = artifacts,
                                         .finished = mx_now_real_us() };
                s->state = SLOT_RECORDED;
                return;
        }
        emit(lv, s, v, message, metrics, artifacts, mx_now_real_us());
        json_decref(metrics);
        json_decref(artifacts);
        if (s == g)
                release_held(lv);
}

static int64_t slot_timeout_ms(struct mx_levels *lv, struct slot *s);

static void schedule_advance(struct mx_levels *lv)
{
        event_active(lv->advance, EV_TIMEOUT, 0);
}

void mx_level_finish(struct mx_level *l, enum mx_verdict v, json_t *metrics, json_t *artifacts, const char *fmt,
                     ...)
{
        struct mx_levels *lv = l->owner;
        struct slot *s = slot_of(lv, l);
        _cleanup_free_ char *msg = NULL;
        bool was_running = s->state == SLOT_RUNNING;
        va_list ap;

        if (fmt) {
                va_start(ap, fmt);
                msg = xvasprintf(fmt, ap);
                va_end(ap);
        }
        if (s->state != SLOT_RUNNING && s->state != SLOT_PENDING) {
                json_decref(metrics);
                json_decref(artifacts);
                return;
        }
        if (msg && s->ctx.log)
                logcap_note(s->ctx.log, "%s %s: %s", s->def->name, mx_verdict_to_string(v), msg);
        record(lv, s, v, msg, metrics, artifacts);
        if (!was_running)
                return;
        event_del(lv->timer);
        if (v == MX_VERDICT_FAIL && !json_is_true(json_object_get(s->ctx.settings, "continue_on_fail")) &&
            !lv->stopped_by)
                lv->stopped_by = xasprintf("not run: %s failed", s->def->name);
        schedule_advance(lv);
}

const char *mx_level_assumption_failed(struct mx_level *l, const char *check)
{
        enum mx_verdict v;
        json_t *m = NULL;

        if (mx_level_sibling(l, "L1", &v, &m) < 0)
                return NULL;
        return mx_probe_result_failed(json_object_get(m, "probe"), check);
}

bool mx_level_fail_on_assumptions(struct mx_level *l, const char *const *checks)
{
        for (size_t i = 0; checks[i]; i++) {
                const char *line = mx_level_assumption_failed(l, checks[i]);

                if (line) {
                        mx_level_finish(l, MX_VERDICT_FAIL, NULL, NULL, "assumption %s failed: %s", checks[i], line);
                        return true;
                }
        }
        return false;
}

int64_t mx_level_timeout_ms(struct mx_level *l)
{
        return slot_timeout_ms(l->owner, slot_of(l->owner, l));
}

void mx_level_pending(struct mx_level *l)
{
        struct mx_levels *lv = l->owner;
        struct slot *s = slot_of(lv, l);

        if (s->state != SLOT_RUNNING)
                return;
        s->state = SLOT_PENDING;
        event_del(lv->timer);
        schedule_advance(lv);
}

static int64_t slot_timeout_ms(struct mx_levels *lv, struct slot *s)
{
        int64_t ms = json_integer_value(json_object_get(s->ctx.settings, "timeout"));

        return ms > 0 ? ms : lv->default_timeout_ms;
}

static void advance_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_levels *lv = ud;

        (void)fd, (void)what;
        if (lv->aborted || lv->ended)
                return;
        if (lv->cur < lv->n && lv->slots[lv->cur].state == SLOT_RUNNING)
                return;
        while (lv->next < lv->n) {
                struct slot *s = &lv->slots[lv->next];
                int64_t ms;
                struct timeval tv;

                lv->cur = lv->next++;
                if (s->state != SLOT_WAITING || !s->ops || lv->stopped_by)
                        continue;
                s->state = SLOT_RUNNING;
                s->started = mx_now_real_us();
                lv->hooks->started(lv->ud, s->def->name);
                ms = slot_timeout_ms(lv, s);
                tv = (struct timeval){ .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
                evtimer_add(lv->timer, &tv);
                s->ops->run(s->l);
                return;
        }
        lv->cur = lv->n;
        if (lv->done || lv->before_stop_busy)
                return;
        /* the server still runs: the levels that read it once more before the stop, one at a time */
        while (lv->before_stop_next < lv->n) {
                struct slot *s = &lv->slots[lv->before_stop_next++];

                if (s->ops && s->ops->before_stop && s->l &&
                    (s->state == SLOT_PENDING || s->state == SLOT_RECORDED)) {
                        lv->before_stop_busy = true;
                        s->ops->before_stop(s->l);
                        return;
                }
        }
        lv->done = true;
        lv->hooks->done(lv->ud);
}

void mx_level_before_stop_done(struct mx_level *l)
{
        struct mx_levels *lv = l->owner;

        if (!lv->before_stop_busy)
                return;
        lv->before_stop_busy = false;
        schedule_advance(lv);
}

static void timeout_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_levels *lv = ud;
        struct slot *s = lv->cur < lv->n ? &lv->slots[lv->cur] : NULL;
        _cleanup_free_ char *t = NULL, *msg = NULL;

        (void)fd, (void)what;
        if (!s || s->state != SLOT_RUNNING)
                return;
        if (s->ops->cancel)
                s->ops->cancel(s->l);
        t = mx_format_duration(slot_timeout_ms(lv, s) * 1000);
        msg = xasprintf("the level exceeded its time limit of %s", t);
        if (s->ctx.log)
                logcap_note(s->ctx.log, "%s: %s", s->def->name, msg);
        record(lv, s, MX_VERDICT_FAIL, msg, s->ops->metrics ? s->ops->metrics(s->l) : NULL, NULL);
        if (!lv->stopped_by)
                lv->stopped_by = xasprintf("not run: %s exceeded its time limit", s->def->name);
        lv->aborted = true;
        lv->hooks->timed_out(lv->ud, s->def->name);
}

int mx_levels_new(const struct mx_level_ctx *ctx, json_t *wanted, int64_t default_timeout_ms,
                  const struct mx_levels_hooks *hooks, void *ud, struct mx_levels **ret, char **reterr)
{
        _cleanup_json_ json_t *names = NULL;
        json_t *stored = json_object_get(ctx->spec, "level_settings"), *w;
        struct mx_levels *lv;
        size_t i;
        int q;

        if (json_array_size(wanted) == 0)
                names = json_array();
        else {
                q = mx_levels_select(wanted, &names, reterr);
                if (q < 0)
                        return q;
        }
        lv = xcalloc(1, sizeof(*lv));
        lv->hooks = hooks;
        lv->ud = ud;
        lv->default_timeout_ms = default_timeout_ms > 0 ? default_timeout_ms : 30 * 60 * 1000;
        lv->advance = event_new(ctx->base, -1, 0, advance_cb, lv);
        lv->timer = evtimer_new(ctx->base, timeout_cb, lv);
        json_array_foreach (names, i, w) {
                struct slot *s = &lv->slots[lv->n];
                _cleanup_free_ char *where = NULL;

                if (lv->n >= MX_LEVELS_MAX)
                        break;
                s->def = mx_level_def_find(json_string_value(w));
                s->ops = mx_level_ops_find(s->def->name);
                s->ctx = *ctx;
                s->ctx.settings = mx_level_defaults(s->def);
                where = xasprintf("level_settings.%s", s->def->name);
                lv->n++;
                if (json_is_object(json_object_get(stored, s->def->name))) {
                        q = mx_level_settings_apply(s->def, s->ctx.settings, json_object_get(stored, s->def->name),
                                                    where, reterr);
                        if (q < 0) {
                                mx_levels_free(lv);
                                return q;
                        }
                }
                if (!s->ops)
                        continue;
                q = s->ops->new(&s->ctx, &s->l, reterr);
                if (q < 0) {
                        mx_levels_free(lv);
                        return q;
                }
                s->l->ops = s->ops;
                s->l->def = s->def;
                s->l->ctx = &s->ctx;
                s->l->owner = lv;
        }
        lv->cur = lv->n;
        *ret = lv;
        return 0;
}

struct mx_levels *mx_levels_free(struct mx_levels *lv)
{
        if (!lv)
                return NULL;
        for (size_t i = 0; i < lv->n; i++) {
                struct slot *s = &lv->slots[i];

                if (s->l && s->state == SLOT_RUNNING && s->ops->cancel)
                        s->ops->cancel(s->l);
                if (s->l)
                        s->ops->free(s->l);
                free(s->held.message);
                json_decref(s->held.metrics);
                json_decref(s->held.artifacts);
                json_decref(s->metrics);
                json_decref(s->ctx.settings);
        }
        if (lv->advance)
                event_free(lv->advance);
        if (lv->timer)
                event_free(lv->timer);
        free(lv->stopped_by);
        free(lv->failure);
        free(lv);
        return NULL;
}

void mx_levels_log_line(struct mx_levels *lv, const char *line, size_t len)
{
        for (size_t i = 0; i < lv->n; i++)
                if (lv->slots[i].l && lv->slots[i].ops->log_line)
                        lv->slots[i].ops->log_line(lv->slots[i].l, line, len);
}

void mx_levels_run(struct mx_levels *lv, double ready_s)
{
        if (lv->started || lv->ended)
                return;
        lv->started = true;
        for (size_t i = 0; i < lv->n; i++)
                lv->slots[i].ctx.ready_s = ready_s;
        schedule_advance(lv);
}

void mx_levels_abort(struct mx_levels *lv)
{
        struct slot *s = lv->cur < lv->n ? &lv->slots[lv->cur] : NULL;

        if (lv->aborted || lv->ended)
                return;
        lv->aborted = true;
        event_del(lv->timer);
        if (lv->before_stop_busy) {
                struct slot *b = &lv->slots[lv->before_stop_next - 1];

                if (b->ops->cancel)
                        b->ops->cancel(b->l);
                lv->before_stop_busy = false;
        }
        if (s && s->state == SLOT_RUNNING) {
                if (s->ops->cancel)
                        s->ops->cancel(s->l);
                s->state = SLOT_ABORTED;
        }
}

/* The metrics of a level that could not finish, with the crash evidence when the server crashed. */
static json_t *unfinished_metrics(struct slot *s, const struct mx_level_stop *st)
{
        json_t *m = s->l && s->ops->metrics ? s->ops->metrics(s->l) : NULL;
        json_t *seen;

        if (!st->crashed || !s->ctx.crash)
                return m;
        seen = crash_scan_json(s->ctx.crash);
        if (json_array_size(seen) > 0) {
                if (!m)
                        m = json_object();
                json_object_set(m, "crash_signatures", seen);
        }
        json_decref(seen);
        return m;
}

void mx_levels_end(struct mx_levels *lv, const struct mx_level_stop *st)
{
        if (lv->ended)
                return;
        mx_levels_abort(lv);
        lv->ended = true;
        for (size_t i = 0; i < lv->n; i++) {
                struct slot *s = &lv->slots[i];
                const char *why = st->why;

                if (s->state == SLOT_RECORDED)
                        continue;
                if (st->cancelled) {
                        record(lv, s, MX_VERDICT_SKIPPED, why ? why : "cancelled", NULL, NULL);
                        continue;
                }
                switch (s->state) {
                case SLOT_PENDING:
                        s->ops->after_stop(s->l, st);
                        if (s->state != SLOT_RECORDED)
                                record(lv, s, MX_VERDICT_SKIPPED, "no verdict after the stop", NULL, NULL);
                        break;
                case SLOT_ABORTED:
                        record(lv, s, MX_VERDICT_FAIL,
                               why ? why : st->crashed ? "the server crashed" : "stopped before the level ended",
                               unfinished_metrics(s, st), NULL);
                        break;
                case SLOT_WAITING:
                        if (s->def->fail_unrun && s->ops && !lv->stopped_by)
                                record(lv, s, MX_VERDICT_FAIL,
                                       why ? why
                                       : st->crashed ? "the server crashed"
                                                     : "stopped before the level ran",
                                       unfinished_metrics(s, st), NULL);
                        else
                                record(lv, s, MX_VERDICT_SKIPPED,
                                       !s->ops          ? "this mxmatrixd has no implementation of the level"
                                       : lv->stopped_by ? lv->stopped_by
                                       : !st->ready     ? "the server never became ready"
                                       : st->crashed    ? "not run: the server crashed"
                                                        : "not run: the run was stopped",
                                       NULL, NULL);
                        break;
                default:
                        break;
                }
        }
        release_held(lv);
}

const char *mx_levels_current(struct mx_levels *lv)
{
        if (lv->cur < lv->n && lv->slots[lv->cur].state == SLOT_RUNNING)
                return lv->slots[lv->cur].def->name;
        return NULL;
}

const char *mx_levels_failure(struct mx_levels *lv)
{
        return lv->failure;
}

bool mx_levels_wanted(struct mx_levels *lv, const char *name)
{
        for (size_t i = 0; i < lv->n; i++)
                if (streq(lv->slots[i].def->name, name))
                        return lv->slots[i].ops != NULL;
        return false;
}

bool mx_levels_pending(struct mx_levels *lv, const char *name)
{
        for (size_t i = 0; i < lv->n; i++)
                if (streq(lv->slots[i].def->name, name))
                        return lv->slots[i].state == SLOT_PENDING;
        return false;
}

void mx_levels_set_log(struct mx_levels *lv, struct logcap *log)
{
        for (size_t i = 0; i < lv->n; i++)
                lv->slots[i].ctx.log = log;
}

int mx_level_sibling(struct mx_level *l, const char *name, enum mx_verdict *ret_verdict,
                     json_t **ret_metrics)
{
        struct mx_levels *lv = l->owner;

        for (size_t i = 0; i < lv->n; i++) {
                struct slot *s = &lv->slots[i];

                if (!streq(s->def->name, name))
                        continue;
                if (s->state != SLOT_RECORDED)
                        return -EAGAIN;
                if (ret_verdict)
                        *ret_verdict = s->held.held ? s->held.verdict : s->verdict;
                if (ret_metrics)
                        *ret_metrics = s->held.held ? s->held.metrics : s->metrics;
                return 0;
        }
        return -ENOENT;
}
