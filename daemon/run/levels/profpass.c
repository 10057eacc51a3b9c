/* SPDX-License-Identifier: MIT */
/*
 * L1.5's profiling pass: the declared workload sent inside the profiler's capture window, profile-
 * workload.json from the server's counters.
 */
#include "profpass.h"
#include "bench.h"
#include "counters.h"
#include "logcap.h"
#include "profile.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#define PROFPASS_HTTP_TIMEOUT_MS 60000

/*
 * The engine's own requests (/v1/models, /tokenize, the chat template's probe) come first, outside the
 * capture: the window hook of the measured requests reads /metrics and starts the capture (STEP_BEFORE,
 * STEP_START), and after the last one stops it and reads /metrics again (STEP_STOP, STEP_AFTER).
 */
enum step { STEP_BEFORE, STEP_START, STEP_WORK, STEP_STOP, STEP_AFTER, STEP_END, STEP_DONE, STEP_FINAL };

struct mx_profpass {
        const struct mx_level_ctx *ctx;
        int64_t timeout_ms;
        int64_t prompt, output, requests;
        const char *start_path, *stop_path; /* NULL: no control */
        enum step step;
        struct mx_http_call *call;
        struct mx_bench *bench;
        struct event *next;
        char *text[2]; /* /metrics before, after */
        char *text_why; /* why one of them was not read, or NULL */
        char *error;   /* the first failure, or NULL */
        bool started, stopped;
        bool bench_ended; /* the engine finished before the window's end */
        int64_t usage_tokens; /* the workload's generated tokens by its requests' usage */
        unsigned failed;
        json_t *written; /* what profile-workload.json holds, or NULL */
        mx_profpass_done_cb done;
        void *ud;
};

bool mx_profpass_wanted(json_t *profiler)
{
        return json_is_object(json_object_get(profiler, "workload")) ||
               json_is_object(json_object_get(profiler, "control"));
}

_printf_(2, 3) static void pass_error(struct mx_profpass *p, const char *fmt, ...)
{
        va_list ap;
        char *why;

        va_start(ap, fmt);
        why = xvasprintf(fmt, ap);
        va_end(ap);
        if (p->ctx->log)
                logcap_note(p->ctx->log, "L1.5: profiling pass: %s", why);
        if (!p->error)
                p->error = why;
        else
                free(why);
}

static void advance(struct mx_profpass *p)
{
        /* the hook's work is done: the engine goes on (measured requests, or its end) */
        if ((p->step == STEP_WORK || p->step == STEP_END) && p->bench && !p->bench_ended) {
                mx_bench_resume(p->bench);
                return;
        }
        event_active(p->next, EV_TIMEOUT, 0);
}

static int write_file(struct mx_profpass *p, json_t *o);

/* profile-workload.json of a whole-life capture: the server's generation counter now, from 0 at its start. */
static void write_whole_life(struct mx_profpass *p, struct mx_http_response *resp)
{
        _cleanup_free_ char *why = NULL, *text = mx_counters_text(resp, &why);
        const char *name = NULL;
        int64_t tokens = 0;
        json_t *o;
        int r = text ? mx_counters_generated_total(text, &tokens, &name, &why) : -EIO;

        if (r < 0) {
                /* no counter, or a malformed /metrics (its line), or the response's own failure */
                pass_error(p, "the whole-life capture is not normalised: %s%s", strna(why),
                           r == -ENOENT ? " (llama-server: start it with --metrics)" : "");
                return;
        }
        o = json_pack("{s:I,s:I,s:I,s:I,s:s}", "tokens", (json_int_t)tokens, "requests", (json_int_t)p->requests,
                      "prompt_tokens", (json_int_t)p->prompt, "output_tokens", (json_int_t)p->output, "source",
                      "server counters");
        json_object_set_new(o, "which",
                            json_sprintf("every token the server generated in its life (%s after the last "
                                         "level, from 0 at its start): the capture has no range, so every "
                                         "level's requests are in it, the declared workload's (%" PRId64
                                         " requests x %" PRId64 " output tokens) among them",
                                         name, p->requests, p->output));
        if (write_file(p, o) < 0)
                json_decref(o);
}

static void http_done_cb(struct mx_http_call *call, struct mx_http_response *resp, void *ud)
{
        struct mx_profpass *p = ud;
        _cleanup_free_ char *why = NULL;

        (void)call;
        p->call = NULL;
        if (p->step == STEP_FINAL) {
                write_whole_life(p, resp);
                p->done(p->ud);
                return;
        }
        if (p->step == STEP_BEFORE || p->step == STEP_AFTER) {
                p->text[p->step == STEP_AFTER] = mx_counters_text(resp, &why);
                if (why && p->ctx->log)
                        logcap_note(p->ctx->log, "L1.5: profiling pass: %s", why);
                if (why && !p->text_why)
                        p->text_why = xasprintf("%s the capture: %s", p->step == STEP_AFTER ? "after" : "before",
                                                why);
        } else if (resp->error < 0 || resp->status / 100 != 2) {
                const char *path = p->step == STEP_START ? p->start_path : p->stop_path;

                if (resp->error < 0)
                        pass_error(p, "POST %s failed: %s", path, strna(resp->error_text));
                else
                        pass_error(p, "POST %s answered HTTP %ld%s", path, resp->status,
                                   resp->status == 404 ? ": the server's profiler is not enabled (vLLM: "
                                                         "--profiler-config '{\"profiler\": \"cuda\"}')"
                                                       : "");
        } else if (p->step == STEP_START)
                p->started = true;
        else
                p->stopped = true;
        p->step++;
        advance(p);
}

static void post(struct mx_profpass *p, const char *path)
{
        _cleanup_free_ char *url = xasprintf("%s%s", p->ctx->url, path), *err = NULL;
        struct mx_http_request req = {.method = "POST",
                                      .url = url,
                                      .body = "{}",
                                      .headers = p->ctx->headers,
                                      .timeout_ms = PROFPASS_HTTP_TIMEOUT_MS};

        if (mx_http_start(p->ctx->http, &req, http_done_cb, p, &p->call, &err) < 0) {
                pass_error(p, "POST %s could not start: %s", path, strna(err));
                p->step++;
                advance(p);
        }
}

static void get_metrics(struct mx_profpass *p)
{
        _cleanup_free_ char *err = NULL;

        if (mx_counters_get(p->ctx, PROFPASS_HTTP_TIMEOUT_MS, http_done_cb, p, &p->call, &err) < 0) {
                if (!p->text_why)
                        p->text_why = xasprintf("%s the capture: GET /metrics could not start: %s",
                                                p->step == STEP_AFTER ? "after" : "before", strna(err));
                p->step++;
                advance(p);
        }
}

/* The engine's window around the workload's measured requests: the capture and the counters' reads. */
static void window_cb(struct mx_bench *b, size_t test, const char *name, bool begin, void *ud)
{
        struct mx_profpass *p = ud;

        (void)b, (void)test, (void)name;
        p->step = begin ? STEP_BEFORE : STEP_STOP;
        event_active(p->next, EV_TIMEOUT, 0);
}

static void bench_done_cb(struct mx_bench *b, int error, const char *reason, void *ud)
{
        struct mx_profpass *p = ud;
        unsigned measured = 0;

        mx_bench_counts(b, &measured, &p->failed);
        p->usage_tokens = mx_bench_test_tokens(b, 0);
        if (error < 0)
                pass_error(p, "the workload could not finish: %s", reason ? reason : strerror(-error));
        else if (p->failed > 0)
                pass_error(p, "%u of %u workload requests failed", p->failed, measured);
        if (p->started && !p->stopped) {
                /* the engine ended inside the window: stop the capture all the same */
                p->step = STEP_STOP;
                p->bench_ended = true;
        } else
                p->step = STEP_DONE;
        event_active(p->next, EV_TIMEOUT, 0);
}

static void bench_progress_cb(void *ud, const char *line)
{
        struct mx_profpass *p = ud;

        if (p->ctx->log)
                logcap_note(p->ctx->log, "L1.5: profiling workload: %s", line);
}

static void work(struct mx_profpass *p)
{
        struct mx_bench_config c;
        _cleanup_free_ char *err = NULL;

        mx_bench_config_defaults(&c);
        c.url = p->ctx->url;
        c.api_key = p->ctx->api_key;
        c.model = p->ctx->model;
        c.pp[0] = p->prompt, c.n_pp = 1;
        c.tg[0] = p->output, c.n_tg = 1;
        c.depth[0] = 0, c.n_depth = 1;
        c.runs = (unsigned)p->requests;
        c.warmup = 0;
        c.concurrency = 1;
        c.latency_mode = MX_BENCH_LATENCY_NONE;
        c.timeout_ms = MX_MIN(p->timeout_ms, MX_HTTP_TIMEOUT_MAX_MS);
        if (mx_bench_new(p->ctx->base, &c, &p->bench, &err) >= 0)
                mx_bench_set_window_hook(p->bench, window_cb);
        if (!p->bench || mx_bench_start(p->bench, bench_done_cb, bench_progress_cb, p) < 0) {
                pass_error(p, "the workload cannot start: %s", err ? err : "the engine refused it");
                p->step = STEP_DONE;
                event_active(p->next, EV_TIMEOUT, 0);
        }
}

/* profile-workload.json: the tokens inside the capture and which they are. */
static void write_workload(struct mx_profpass *p)
{
        _cleanup_free_ char *err = NULL;
        int64_t tokens = 0;
        const char *counter = NULL;
        bool reset = false;
        json_t *o;

        if (p->start_path && !p->stopped)
                return; /* the capture holds more than the workload, or nothing */
        if (!p->start_path)
                return; /* the whole life is captured: mx_profpass_final() writes it */
        if (p->failed > 0 || p->usage_tokens <= 0)
                return;
        o = json_pack("{s:I,s:I,s:I}", "requests", (json_int_t)p->requests, "prompt_tokens", (json_int_t)p->prompt,
                      "output_tokens", (json_int_t)p->output);
        if (!p->text[0] || !p->text[1])
                err = xasprintf("/metrics was not read %s",
                                p->text_why ? p->text_why : "around the capture");
        else if (mx_counters_generated(p->text[0], p->text[1], &tokens, &counter, &reset, &err) >= 0 && !reset) {
                json_object_set_new(o, "tokens", json_integer(tokens));
                json_object_set_new(o, "source", json_string("server counters"));
                json_object_set_new(o, "which",
                                    json_sprintf("tokens the server generated between %s and %s (the increase of "
                                                 "%s: %" PRId64 " requests x %" PRId64 " output tokens, the "
                                                 "first of each included)",
                                                 p->start_path, p->stop_path, counter, p->requests, p->output));
        }
        if (!json_object_get(o, "tokens")) {
                /* the real reason: no counter, a malformed /metrics (its line), a counter that went backwards */
                if (p->ctx->log)
                        logcap_note(p->ctx->log, "L1.5: profiling pass: tokens by the requests' usage: %s",
                                    strna(err));
                json_object_set_new(o, "tokens", json_integer(p->usage_tokens));
                json_object_set_new(o, "source", json_string("declared"));
                json_object_set_new(o, "which",
                                    json_sprintf("the declared workload's generated tokens (%" PRId64
                                                 " requests x %" PRId64
                                                 " output tokens, by the requests' usage): the server's "
                                                 "generation counter is not used: %s",
                                                 p->requests, p->output, strna(err)));
        }
        if (write_file(p, o) < 0)
                json_decref(o);
}

/* profile-workload.json in the run directory; takes o on success. */
static int write_file(struct mx_profpass *p, json_t *o)
{
        _cleanup_free_ char *path = xasprintf("%s/profile-workload.json", p->ctx->run_dir), *text = NULL;
        _cleanup_fclose_ FILE *f = NULL;

        text = json_dumps(o, JSON_INDENT(1) | JSON_SORT_KEYS);
        f = fopen(path, "we");
        if (!text || !f || fputs(text, f) < 0 || fflush(f) != 0) {
                pass_error(p, "cannot write %s: %m", path);
                return -EIO;
        }
        p->written = o;
        return 0;
}

static void next_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_profpass *p = ud;

        (void)fd, (void)what;
        switch (p->step) {
        case STEP_BEFORE:
                get_metrics(p);
                return;
        case STEP_START:
                if (p->start_path)
                        post(p, p->start_path);
                else {
                        p->step++;
                        advance(p);
                }
                return;
        case STEP_WORK:
        case STEP_END:
                if (p->bench_ended) {
                        p->step = STEP_DONE;
                        event_active(p->next, EV_TIMEOUT, 0);
                } else if (p->bench)
                        mx_bench_resume(p->bench);
                else
                        work(p);
                return;
        case STEP_STOP:
                if (p->start_path && p->started)
                        post(p, p->stop_path);
                else {
                        p->step++;
                        advance(p);
                }
                return;
        case STEP_AFTER:
                get_metrics(p);
                return;
        case STEP_DONE:
                write_workload(p);
                p->done(p->ud);
                return;
        case STEP_FINAL:
                return;
        }
}

int mx_profpass_start(const struct mx_level_ctx *ctx, json_t *profiler, int64_t timeout_ms, mx_profpass_done_cb done,
                      void *ud, struct mx_profpass **ret, char **reterr)
{
        json_t *w = json_object_get(profiler, "workload"), *c = json_object_get(profiler, "control");
        struct mx_profpass *p;

        if (!mx_profpass_wanted(profiler))
                return mx_reterr(reterr, -EINVAL, "the profiler declares neither a workload nor a control");
        p = xcalloc(1, sizeof(*p));
        p->ctx = ctx;
        p->timeout_ms = timeout_ms;
        p->prompt = json_integer_value(json_object_get(w, "prompt_tokens")) ?: MX_PROFILE_WORKLOAD_PROMPT_DEFAULT;
        p->output = json_integer_value(json_object_get(w, "output_tokens")) ?: MX_PROFILE_WORKLOAD_OUTPUT_DEFAULT;
        p->requests = json_integer_value(json_object_get(w, "requests")) ?: MX_PROFILE_WORKLOAD_REQUESTS_DEFAULT;
        p->start_path = json_string_value(json_object_get(c, "start"));
        p->stop_path = json_string_value(json_object_get(c, "stop"));
        if (!p->stop_path)
                p->start_path = NULL;
        p->done = done;
        p->ud = ud;
        p->next = event_new(ctx->base, -1, 0, next_cb, p);
        if (!p->next)
                mx_die("event_new failed");
        p->step = STEP_WORK; /* the engine first: the window hook brings the rest */
        event_active(p->next, EV_TIMEOUT, 0);
        *ret = p;
        return 0;
}

bool mx_profpass_final(struct mx_profpass *p, mx_profpass_done_cb done, void *ud)
{
        _cleanup_free_ char *err = NULL;

        if (!p || p->start_path || p->step != STEP_DONE)
                return false;
        p->step = STEP_FINAL;
        p->done = done;
        p->ud = ud;
        if (mx_counters_get(p->ctx, PROFPASS_HTTP_TIMEOUT_MS, http_done_cb, p, &p->call, &err) < 0) {
                pass_error(p, "the whole-life capture is not normalised: GET /metrics could not start: %s",
                           strna(err));
                return false;
        }
        return true;
}

struct mx_profpass *mx_profpass_free(struct mx_profpass *p)
{
        if (!p)
                return NULL;
        mx_http_cancel(p->call);
        mx_bench_free(p->bench);
        if (p->next)
                event_free(p->next);
        free(p->text[0]);
        free(p->text[1]);
        free(p->text_why);
        free(p->error);
        json_decref(p->written);
        free(p);
        return NULL;
}

json_t *mx_profpass_json(const struct mx_profpass *p)
{
        json_t *o = json_pack("{s:{s:I,s:I,s:I},s:o}", "workload", "requests", (json_int_t)p->requests,
                              "prompt_tokens", (json_int_t)p->prompt, "output_tokens", (json_int_t)p->output,
                              "control", p->start_path ? json_pack("{s:s,s:s,s:b,s:b}", "start", p->start_path,
                                                                   "stop", p->stop_path, "started", p->started,
                                                                   "stopped", p->stopped)
                                                       : json_null());

        if (p->written) {
                json_object_set_new(o, "file", json_string("profile-workload.json"));
                json_object_set(o, "tokens", json_object_get(p->written, "tokens"));
                json_object_set(o, "source", json_object_get(p->written, "source"));
                /* a "declared" file's which says why the counter was not used (a reset, a bad line) */
                json_object_set(o, "which", json_object_get(p->written, "which"));
        } else
                json_object_set_new(o, "file", json_null());
        if (!p->start_path)
                json_object_set_new(o, "note", json_string("no profiler control: the capture covers the server's "
                                                           "whole life, not only this workload"));
        json_object_set_new(o, "error", p->error ? json_string(p->error) : json_null());
        return o;
}
