/* SPDX-License-Identifier: MIT */
/*
 * L1 smoke (seed 001 Level 1): the server became ready in time (the runner's
 * ready probe; a server that never does fails L1), one completion with the
 * profile's prompt succeeds with text and at least one generated token, and
 * the log so far shows no crash signature (import errors, CUDA errors,
 * tracebacks: crash.h). Metrics: ready_s, completion_tokens, completion_s,
 * and every crash signature the log has matched (forensics for `show rRUN`).
 *
 * Then, unless its probe setting is false, the probe (loadgen/probe.c, the
 * engine of `mxmatrix probe`) checks the harness's assumptions against the
 * server; its document is L1's metrics "probe", where later levels read it
 * (mx_level_fail_on_assumptions). A failed assumption does not fail L1: the
 * levels that depend on it fail with its line.
 */
#include "checks.h"
#include "crash.h"
#include "http.h"
#include "levels.h"
#include "probe.h"
#include "server-kind.h"

struct l1 {
        struct mx_level base;
        struct mx_http_call *call;
        struct mx_probe *probe;
        json_t *metrics;
};

static json_t *l1_metrics(struct mx_level *l)
{
        struct l1 *s = (struct l1 *)l;
        json_t *m = json_deep_copy(s->metrics), *seen = crash_scan_json(l->ctx->crash);

        if (l->ctx->ready_s > 0)
                json_object_set_new(m, "ready_s", json_real(l->ctx->ready_s));
        if (json_array_size(seen) > 0)
                json_object_set_new(m, "crash_signatures", seen);
        else
                json_decref(seen);
        return m;
}

static int l1_new(const struct mx_level_ctx *ctx, struct mx_level **ret, char **reterr)
{
        struct l1 *s = xcalloc(1, sizeof(*s));

        (void)ctx, (void)reterr;
        s->metrics = json_object();
        *ret = &s->base;
        return 0;
}

/* Is this a completion with text and at least one generated token? NULL if so, else why not. */
static char *completion_problem(struct mx_http_response *res, json_t *metrics, bool key_sent)
{
        _cleanup_json_ json_t *j = NULL;
        json_t *choice, *usage;
        const char *text;

        if (res->error < 0)
                return xasprintf("the completion request failed: %s", strna(res->error_text));
        if (res->status == 401 || res->status == 403)
                return xasprintf("the completion request got HTTP %ld: %.200s: %s", res->status, strempty(res->body),
                                 mx_check_auth_hint(res->status, key_sent));
        if (res->status != 200)
                return xasprintf("the completion request got HTTP %ld: %.200s", res->status, strempty(res->body));
        j = json_loadb(res->body, res->body_len, 0, NULL);
        choice = json_array_get(json_object_get(j, "choices"), 0);
        text = json_string_value(json_object_get(choice, "text"));
        usage = json_object_get(j, "usage");
        if (!j)
                return xstrdup("the completion reply is not JSON");
        if (!text || !*text)
                return xstrdup("the completion reply has no text");
        if (json_integer_value(json_object_get(usage, "completion_tokens")) < 1)
                return xstrdup("the completion reply reports no generated tokens");
        json_object_set_new(metrics, "completion_tokens",
                            json_integer(json_integer_value(json_object_get(usage, "completion_tokens"))));
        json_object_set_new(metrics, "completion_s", json_real(res->total_s));
        return NULL;
}

static void probe_done(struct mx_probe *p, void *ud)
{
        struct l1 *s = ud;
        struct mx_level *l = &s->base;
        json_t *doc = mx_probe_result_json(p), *c;
        _cleanup_buf_ struct mx_buf failed = MX_BUF_INIT;
        size_t i;

        json_array_foreach(json_object_get(doc, "checks"), i, c)
                if (streq_ptr(json_string_value(json_object_get(c, "status")), "fail"))
                        mx_buf_printf(&failed, "%s%s", failed.len ? ", " : "",
                                      json_string_value(json_object_get(c, "check")));
        json_object_set_new(s->metrics, "probe", doc);
        if (failed.len) {
                _cleanup_free_ char *names = mx_buf_steal(&failed);
                mx_level_finish(l, MX_VERDICT_PASS, l1_metrics(l), NULL, "probe: assumptions failed: %s", names);
        } else
                mx_level_finish(l, MX_VERDICT_PASS, l1_metrics(l), NULL, NULL);
}

/* The probe against the ready server; with the profile's kind and API key where it names them. */
static void start_probe(struct l1 *s)
{
        struct mx_level *l = &s->base;
        struct mx_probe_config cfg = {
                .url = l->ctx->url,
                .model = l->ctx->model,
                .api_key = l->ctx->api_key, /* the profile's api_key or api_key_env, resolved by the runner */
                .expect_kind = mx_server_kind_from_profile(json_string_value(json_object_get(l->ctx->profile, "base"))),
                .timeout_ms = MX_MIN(mx_level_timeout_ms(l), 60000),
        };
        _cleanup_free_ char *err = NULL;

        if (mx_probe_new(l->ctx->base, &cfg, &s->probe, &err) < 0) {
                json_object_set_new(s->metrics, "probe_error", json_string(strna(err)));
                mx_level_finish(l, MX_VERDICT_PASS, l1_metrics(l), NULL, "probe not run: %s", strna(err));
                return;
        }
        mx_probe_start(s->probe, probe_done, s);
}

static void completion_done(struct mx_http_call *call, struct mx_http_response *res, void *ud)
{
        struct l1 *s = ud;
        struct mx_level *l = &s->base;
        _cleanup_free_ char *problem = NULL;

        (void)call;
        s->call = NULL;
        problem = completion_problem(res, s->metrics, l->ctx->headers != NULL);
        if (!problem && crash_scan_class(l->ctx->crash))
                problem = xasprintf("the log shows %s: %s", crash_scan_class(l->ctx->crash),
                                    crash_scan_evidence(l->ctx->crash));
        if (problem)
                mx_level_finish(l, MX_VERDICT_FAIL, l1_metrics(l), NULL, "%s", problem);
        else if (json_is_true(json_object_get(l->ctx->settings, "probe")))
                start_probe(s);
        else
                mx_level_finish(l, MX_VERDICT_PASS, l1_metrics(l), NULL, NULL);
}

static void l1_run(struct mx_level *l)
{
        struct l1 *s = (struct l1 *)l;
        json_t *c = json_object_get(l->ctx->profile, "completion");
        _cleanup_free_ char *url = NULL, *body = NULL, *err = NULL;
        _cleanup_json_ json_t *b = NULL;
        struct mx_http_request req = { .method = "POST", .content_type = "application/json", .max_body = 1 << 20,
                                       .headers = l->ctx->headers };

        if (!json_is_object(c)) {
                mx_level_finish(l, MX_VERDICT_PASS, l1_metrics(l), NULL, "ready (the profile has no completion to try)");
                return;
        }
        b = json_pack("{s:s?,s:s,s:I,s:f}", "model", l->ctx->model, "prompt",
                      json_string_value(json_object_get(c, "prompt")), "max_tokens",
                      json_integer_value(json_object_get(c, "max_tokens")), "temperature", 0.0);
        body = json_dumps(b, JSON_COMPACT);
        url = xasprintf("%s%s", l->ctx->url, json_string_value(json_object_get(c, "path")));
        req.url = url;
        req.body = body;
        /* The driver's timer enforces the level timeout; the request's own is only kept within curl's range. */
        req.timeout_ms = MX_MIN(mx_level_timeout_ms(l), MX_HTTP_TIMEOUT_MAX_MS);
        if (mx_http_start(l->ctx->http, &req, completion_done, s, &s->call, &err) < 0)
                mx_level_finish(l, MX_VERDICT_FAIL, l1_metrics(l), NULL, "cannot send the completion request: %s",
                                strna(err));
}

static void l1_cancel(struct mx_level *l)
{
        struct l1 *s = (struct l1 *)l;

        mx_http_cancel(s->call);
        s->call = NULL;
        s->probe = mx_probe_free(s->probe);
}

static void l1_free(struct mx_level *l)
{
        struct l1 *s = (struct l1 *)l;

        mx_http_cancel(s->call);
        mx_probe_free(s->probe);
        json_decref(s->metrics);
        free(s);
}

const struct mx_level_ops mx_level_l1_ops = {
        .name = "L1",
        .new = l1_new,
        .run = l1_run,
        .cancel = l1_cancel,
        .metrics = l1_metrics,
        .free = l1_free,
};
