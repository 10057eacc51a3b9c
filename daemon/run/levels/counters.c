/* SPDX-License-Identifier: MIT */
/*
 * A server's /metrics counters read around a window: generated tokens, speculative decoding's drafts
 * and acceptances.
 */
#include "counters.h"
#include "promtext.h"

#include <stdarg.h>

/* The counter families a server exports, vLLM's first. */
static const char *const spec_prefixes[] = {"vllm:", "llamacpp:"};
/* The generated-token counters (counters.h): this table is the one place that names them. */
static const char *const generated_names[] = {"vllm:generation_tokens_total", "llamacpp:tokens_predicted_total"};

int mx_counters_get(const struct mx_level_ctx *ctx, int64_t timeout_ms, mx_http_done_cb cb, void *ud,
                    struct mx_http_call **ret_call, char **reterr)
{
        _cleanup_free_ char *url = xasprintf("%s/metrics", ctx->url);
        struct mx_http_request req = {.method = "GET",
                                      .url = url,
                                      .headers = ctx->headers,
                                      .timeout_ms = timeout_ms,
                                      .max_body = MX_COUNTERS_BODY_MAX};

        return mx_http_start(ctx->http, &req, cb, ud, ret_call, reterr);
}

char *mx_counters_text(struct mx_http_response *resp, char **ret_why)
{
        if (resp->error < 0) {
                *ret_why = xasprintf("GET /metrics failed: %s", strna(resp->error_text));
                return NULL;
        }
        if (resp->status != 200) {
                *ret_why = xasprintf("GET /metrics answered HTTP %ld", resp->status);
                return NULL;
        }
        if (resp->truncated) {
                *ret_why = xasprintf("GET /metrics is longer than %d bytes", MX_COUNTERS_BODY_MAX);
                return NULL;
        }
        return TAKE_PTR(resp->body);
}

/* A counter's increase over the window; -ENOENT when either text lacks it. */
static int increase(const char *before, const char *after, const char *name, double *ret, bool *reset,
                    char **reterr)
{
        double b, a;
        bool rs = false;
        int q;

        q = mx_prom_count(before, strlen(before), name, &b, reterr);
        if (q < 0)
                return q;
        q = mx_prom_count(after, strlen(after), name, &a, reterr);
        if (q < 0)
                return q;
        *ret = mx_prom_increase(b, a, &rs);
        *reset = *reset || rs;
        return 0;
}

_printf_(1, 2) static json_t *not_reported(const char *fmt, ...)
{
        _cleanup_free_ char *why = NULL;
        va_list ap;

        va_start(ap, fmt);
        why = xvasprintf(fmt, ap);
        va_end(ap);
        return json_pack("{s:s}", "not_reported", why);
}

json_t *mx_counters_spec_json(const char *before, const char *after, const char *why_not)
{
        if (!before || !after)
                return not_reported("/metrics was not read: %s", strna(why_not));
        for (size_t i = 0; i < ELEMENTSOF(spec_prefixes); i++) {
                const char *p = spec_prefixes[i];
                _cleanup_free_ char *nd = xasprintf("%sspec_decode_num_drafts_total", p),
                                    *nt = xasprintf("%sspec_decode_num_draft_tokens_total", p),
                                    *na = xasprintf("%sspec_decode_num_accepted_tokens_total", p), *err = NULL;
                double drafts, drafted, accepted;
                bool reset = false;
                int q = increase(before, after, nd, &drafts, &reset, &err);
                json_t *o;

                if (q == -ENOENT)
                        continue;
                if (q >= 0)
                        q = increase(before, after, nt, &drafted, &reset, &err);
                if (q >= 0)
                        q = increase(before, after, na, &accepted, &reset, &err);
                if (q < 0)
                        return not_reported("/metrics: %s", err ? err : "a speculative-decoding counter is missing");
                o = json_pack("{s:s,s:f,s:f,s:f,s:b}", "source", p[0] == 'v' ? "vllm /metrics" : "llama-server /metrics",
                              "drafts", drafts, "draft_tokens", drafted, "accepted_tokens", accepted, "reset", reset);
                if (drafted > 0 && drafts > 0) {
                        json_object_set_new(o, "acceptance_rate", json_real(accepted / drafted));
                        json_object_set_new(o, "mean_acceptance_length", json_real(1.0 + accepted / drafts));
                } else {
                        json_object_set_new(o, "acceptance_rate", json_null());
                        json_object_set_new(o, "mean_acceptance_length", json_null());
                        json_object_set_new(o, "not_reported", json_string("no draft was made in the window"));
                }
                return o;
        }
        return not_reported("%s", "the server exports no speculative-decoding counters (speculative decoding is off, "
                                  "or the server does not report it on /metrics)");
}

json_t *mx_counters_spec_from_timings(json_t *draft_timings)
{
        json_int_t d = json_integer_value(json_object_get(draft_timings, "draft_n")),
                   a = json_integer_value(json_object_get(draft_timings, "draft_n_accepted"));

        if (!json_is_object(draft_timings))
                return NULL;
        return json_pack("{s:s,s:I,s:I,s:o,s:n,s:s}", "source", "llama-server timings", "draft_tokens", d,
                         "accepted_tokens", a, "acceptance_rate",
                         d > 0 ? json_real((double)a / (double)d) : json_null(), "mean_acceptance_length",
                         "not_reported",
                         d > 0 ? "mean acceptance length: the timings do not count the drafts (/metrics does: "
                                 "start llama-server with --metrics)"
                               : "no draft was made in the window");
}

/* Both reads of one counter: 0, -ENOENT when either text lacks it, -EBADMSG (which read, and why). */
static int generated_pair(const char *before, const char *after, const char *name, double *ret_b, double *ret_a,
                          char **reterr)
{
        _cleanup_free_ char *why = NULL;
        int q;

        q = mx_prom_count(before, strlen(before), name, ret_b, &why);
        if (q == -EBADMSG)
                return mx_reterr(reterr, q, "before the window: %s", why);
        if (q < 0)
                return q;
        q = mx_prom_count(after, strlen(after), name, ret_a, &why);
        if (q == -EBADMSG)
                return mx_reterr(reterr, q, "after the window: %s", why);
        return q;
}

int mx_counters_generated(const char *before, const char *after, int64_t *ret_tokens, const char **ret_name,
                          bool *ret_reset, char **reterr)
{
        for (size_t i = 0; i < ELEMENTSOF(generated_names); i++) {
                double b, a, d;
                bool reset = false;
                int q = generated_pair(before, after, generated_names[i], &b, &a, reterr);

                if (q == -ENOENT)
                        continue;
                if (q < 0)
                        return q;
                d = mx_prom_increase(b, a, &reset);
                if (reset && reterr)
                        *reterr = xasprintf("%s went backwards from %.0f to %.0f (the server restarted or reset "
                                            "its counters in the window)",
                                            generated_names[i], b, a);
                *ret_tokens = (int64_t)(d + 0.5);
                *ret_name = generated_names[i];
                *ret_reset = reset;
                return 0;
        }
        return mx_reterr(reterr, -ENOENT, "/metrics has no generation counter (%s, %s)", generated_names[0],
                         generated_names[1]);
}

int mx_counters_generated_total(const char *text, int64_t *ret_tokens, const char **ret_name, char **reterr)
{
        for (size_t i = 0; i < ELEMENTSOF(generated_names); i++) {
                double v;
                int q = mx_prom_count(text, strlen(text), generated_names[i], &v, reterr);

                if (q == -ENOENT)
                        continue;
                if (q < 0)
                        return q;
                *ret_tokens = (int64_t)(v + 0.5);
                *ret_name = generated_names[i];
                return 0;
        }
        return mx_reterr(reterr, -ENOENT, "/metrics has no generation counter (%s, %s)", generated_names[0],
                         generated_names[1]);
}

json_t *mx_counters_energy_json(int64_t mj_before, int64_t mj_after, int64_t tokens, const char *why_not)
{
        double j;

        if (why_not)
                return json_pack("{s:s}", "not_measured", why_not);
        if (mj_after < mj_before)
                return json_pack("{s:s}", "not_measured", "the GPU's energy counter went down (driver reloaded)");
        if (tokens <= 0)
                return json_pack("{s:s}", "not_measured", "no token was generated in the window");
        j = (double)(mj_after - mj_before) / 1000.0;
        return json_pack("{s:f,s:I,s:f,s:s}", "joules", j, "tokens", (json_int_t)tokens, "joules_per_token",
                         j / (double)tokens, "source", "NVML nvmlDeviceGetTotalEnergyConsumption");
}
