/* SPDX-License-Identifier: MIT */
/*
 * L2 correctness (seed 001 Level 2, template 000 "perplexity within
 * tolerance"). One request at a time:
 *
 *   main        every prompt on every endpoint, seeded, ignore_eos and
 *               max_tokens: the checks of checks.h (text, exact token count
 *               and finish_reason length, no NaN/Inf, valid logprobs, coherence,
 *               expected substrings)
 *   repeat      the first prompt again with the same seed: the same tokens
 *   traffic     after_traffic unseeded requests of other prompts
 *   again       the first prompt once more with the same seed: the same tokens
 *               (a server whose sampling depends on the batch fails here)
 *   perplexity  with a reference: every prompt with prompt_logprobs=0 on the
 *               completions endpoint; exp(-mean logprob) within the tolerance
 *
 * Every failure names its prompt and endpoint and keeps the request and the
 * reply in L2-evidence/ (artifacts); the verdict is fail when any check failed.
 */
#include "checks.h"
#include "http.h"
#include "levels.h"
#include "logcap.h"

#include <math.h>

#define L2_FAILURES_KEPT 32

enum step_kind { STEP_MAIN, STEP_REPEAT, STEP_TRAFFIC, STEP_AGAIN, STEP_PPL };

struct step {
        enum step_kind kind;
        size_t prompt;
        enum mx_endpoint endpoint;
};

struct l2 {
        struct mx_level base;
        json_t *prompts;
        struct step *steps;
        size_t n_steps, next;
        struct mx_http_call *call;
        char *body; /* of the request in flight */
        json_t *first[2]; /* the first prompt's tokens (or text) per endpoint, from its main request */
        json_t *failures, *artifacts, *per_prompt, *reference;
        unsigned n_requests, n_failed;
        char *first_failure;
        int64_t reference_run; /* reference "baseline": the run whose perplexities it is; 0: none */
};

static const char *prompt_name(struct l2 *s, size_t i)
{
        return json_string_value(json_object_get(json_array_get(s->prompts, i), "name"));
}

static int64_t setting_int(struct mx_level *l, const char *k)
{
        return json_integer_value(json_object_get(l->ctx->settings, k));
}

static double setting_num(struct mx_level *l, const char *k)
{
        return json_number_value(json_object_get(l->ctx->settings, k));
}

static const char *const step_names[] = { "main", "repeat", "traffic", "again", "perplexity" };

/* A failed check: named, kept as evidence, the first one is the level's message. */
static void add_failure(struct l2 *s, const struct step *st, const char *check, const char *detail,
                        const struct mx_http_response *res)
{
        struct mx_level *l = &s->base;
        _cleanup_free_ char *ev_name = NULL;
        json_t *art = NULL;

        s->n_failed++;
        if (!s->first_failure)
                s->first_failure = xasprintf("prompt '%s' (%s, %s): %s", prompt_name(s, st->prompt),
                                             mx_endpoint_name(st->endpoint), step_names[st->kind], detail);
        logcap_note(l->ctx->log, "L2: prompt '%s' (%s, %s): %s", prompt_name(s, st->prompt),
                    mx_endpoint_name(st->endpoint), step_names[st->kind], detail);
        if (json_array_size(s->failures) >= L2_FAILURES_KEPT)
                return;
        ev_name = xasprintf("%02u-%s-%s-%s", s->n_requests, prompt_name(s, st->prompt), mx_endpoint_name(st->endpoint),
                            check);
        art = mx_evidence_write(l->ctx->run_dir, "L2-evidence", ev_name, detail, s->body, res);
        json_array_append_new(s->failures,
                              json_pack("{s:s,s:s,s:s,s:s,s:s,s:s?}", "prompt", prompt_name(s, st->prompt), "endpoint",
                                        mx_endpoint_name(st->endpoint), "step", step_names[st->kind], "check", check,
                                        "detail", detail, "evidence",
                                        art ? json_string_value(json_object_get(art, "path")) : NULL));
        if (art)
                json_array_append_new(s->artifacts, art);
}

static void next_step(struct l2 *s);

static json_t *identity(const struct mx_gen_reply *g)
{
        return g->tokens ? json_incref(g->tokens) : json_string(strempty(g->text));
}

/* Where two outputs first differ, as "token N" (or "the text"). */
static char *first_difference(json_t *a, json_t *b)
{
        if (json_is_array(a) && json_is_array(b)) {
                size_t n = MX_MIN(json_array_size(a), json_array_size(b));

                for (size_t i = 0; i < n; i++)
                        if (!json_equal(json_array_get(a, i), json_array_get(b, i)))
                                return xasprintf("token %zu differs", i + 1);
                return xasprintf("%zu tokens against %zu", json_array_size(a), json_array_size(b));
        }
        return xstrdup("the text differs");
}

static void record_prompt(struct l2 *s, const struct step *st, const struct mx_gen_reply *g)
{
        _cleanup_free_ char *key = xasprintf("%s/%s", prompt_name(s, st->prompt), mx_endpoint_name(st->endpoint));
        json_t *e = json_object_get(s->per_prompt, key);

        if (!e) {
                e = json_object();
                json_object_set_new(s->per_prompt, key, e);
        }
        if (st->kind == STEP_MAIN) {
                json_object_set_new(e, "completion_tokens", json_integer(g->completion_tokens));
                json_object_set_new(e, "finish_reason", g->finish_reason ? json_string(g->finish_reason) : json_null());
        }
        if (st->kind == STEP_PPL && g->prompt_ppl > 0)
                json_object_set_new(e, "perplexity", json_real(g->prompt_ppl));
}

static void compare_reference(struct l2 *s, const struct step *st, const struct mx_gen_reply *g,
                              const struct mx_http_response *res)
{
        json_t *ref = json_object_get(s->reference, prompt_name(s, st->prompt));
        double tol = setting_num(&s->base, "perplexity_tolerance"), want;
        _cleanup_free_ char *d = NULL;

        if (!json_is_number(ref) || g->prompt_ppl <= 0)
                return;
        want = json_number_value(ref);
        if (fabs(g->prompt_ppl - want) <= tol * want)
                return;
        d = xasprintf("perplexity %.4g, the reference says %.4g (tolerance %.1f%%)", g->prompt_ppl, want, 100 * tol);
        add_failure(s, st, "perplexity", d, res);
}

static void step_done(struct mx_http_call *call, struct mx_http_response *res, void *ud)
{
        struct l2 *s = ud;
        struct mx_level *l = &s->base;
        const struct step *st = &s->steps[s->next - 1];
        json_t *p = json_array_get(s->prompts, st->prompt);
        struct mx_check_opts o = {
                .expect_tokens = st->kind == STEP_PPL ? 0 : setting_int(l, "max_tokens"),
                .min_printable = setting_num(l, "min_printable"), .max_repeat = setting_num(l, "max_repeat"),
                .expect = st->kind == STEP_MAIN ? json_object_get(p, "expect") : NULL,
                .logprobs = st->kind == STEP_TRAFFIC || st->kind == STEP_PPL ? -1 : (int)setting_int(l, "logprobs"),
                .key_sent = l->ctx->headers != NULL,
        };
        struct mx_gen_request rq = { .endpoint = st->endpoint, .logprobs = o.logprobs,
                                     .prompt_logprobs = st->kind == STEP_PPL ? 0 : -1 };
        struct mx_gen_reply g = { .prompt_ppl = -1 };
        _cleanup_free_ char *problem = NULL;
        const char *check = NULL;

        (void)call;
        s->call = NULL;
        problem = mx_check_reply(&rq, &o, res, &g, &check);
        if (problem)
                add_failure(s, st, check, problem, res);
        else {
                record_prompt(s, st, &g);
                if (st->kind == STEP_MAIN && st->prompt == 0)
                        s->first[st->endpoint] = identity(&g);
                if (st->kind == STEP_REPEAT || st->kind == STEP_AGAIN) {
                        _cleanup_json_ json_t *now = identity(&g);

                        if (s->first[st->endpoint] && !json_equal(now, s->first[st->endpoint])) {
                                _cleanup_free_ char *where = first_difference(s->first[st->endpoint], now);
                                _cleanup_free_ char *d = xasprintf(
                                        "the same seed gave different output %s: %s",
                                        st->kind == STEP_REPEAT ? "on the second request" : "after other traffic",
                                        where);
                                add_failure(s, st, "determinism", d, res);
                        }
                }
                if (st->kind == STEP_PPL)
                        compare_reference(s, st, &g, res);
        }
        mx_gen_reply_done(&g);
        next_step(s);
}

static void finish(struct l2 *s)
{
        struct mx_level *l = &s->base;
        json_t *m = json_pack("{s:I,s:I,s:O,s:O}", "requests", (json_int_t)s->n_requests, "failed_checks",
                              (json_int_t)s->n_failed, "prompts", s->per_prompt, "failures", s->failures);

        if (s->reference_run > 0)
                json_object_set_new(m, "reference_run", json_integer(s->reference_run));
        if (s->n_failed > 0)
                mx_level_finish(l, MX_VERDICT_FAIL, m, json_incref(s->artifacts), "%s%s", s->first_failure,
                                s->n_failed > 1 ? " (and more: metrics.failures)" : "");
        else
                mx_level_finish(l, MX_VERDICT_PASS, m, json_incref(s->artifacts), "%u requests, every check passed",
                                s->n_requests);
}

static void next_step(struct l2 *s)
{
        struct mx_level *l = &s->base;
        const struct step *st;
        struct mx_gen_request rq;
        struct mx_http_request req = { .method = "POST", .content_type = "application/json", .max_body = 8 << 20,
                                       .headers = l->ctx->headers };
        _cleanup_free_ char *url = NULL, *err = NULL;

        if (s->next >= s->n_steps) {
                finish(s);
                return;
        }
        st = &s->steps[s->next++];
        rq = (struct mx_gen_request){
                .endpoint = st->endpoint, .model = l->ctx->model,
                .prompt = json_string_value(json_object_get(json_array_get(s->prompts, st->prompt), "prompt")),
                .max_tokens = st->kind == STEP_PPL ? 1 : setting_int(l, "max_tokens"),
                .ignore_eos = st->kind != STEP_PPL, .temperature = setting_num(l, "temperature"),
                .has_seed = st->kind != STEP_TRAFFIC, .seed = setting_int(l, "seed"),
                .logprobs = st->kind == STEP_TRAFFIC || st->kind == STEP_PPL ? -1 : (int)setting_int(l, "logprobs"),
                .prompt_logprobs = st->kind == STEP_PPL ? 0 : -1,
        };
        free(s->body);
        s->body = mx_gen_body(&rq);
        url = xasprintf("%s%s", l->ctx->url, mx_endpoint_path(st->endpoint));
        req.url = url;
        req.body = s->body;
        req.timeout_ms = MX_MIN(mx_level_timeout_ms(l), MX_HTTP_TIMEOUT_MAX_MS);
        s->n_requests++;
        if (mx_http_start(l->ctx->http, &req, step_done, s, &s->call, &err) < 0) {
                add_failure(s, st, "http", err ? err : "cannot send the request", NULL);
                finish(s);
        }
}

static void add_step(struct l2 *s, enum step_kind k, size_t prompt, enum mx_endpoint e)
{
        s->steps = xreallocarray(s->steps, s->n_steps + 1, sizeof(*s->steps));
        s->steps[s->n_steps++] = (struct step){ .kind = k, .prompt = prompt, .endpoint = e };
}

/*
 * reference "baseline": the perplexities the baseline configuration's newest
 * L2 stored ({"name/completions": {"perplexity"}} in its metrics.prompts),
 * through the level's read-only history. The baseline run itself, or a run
 * whose baseline stored none, measures its own and compares with nothing
 * (an empty reference, so the perplexity step still runs); a note says which.
 */
static int baseline_reference(struct l2 *s)
{
        const struct mx_history *h = s->base.ctx->history;
        _cleanup_json_ json_t *self = NULL, *res = NULL;
        const char *base_key, *key, *name;
        json_t *r, *v;
        size_t i;

        s->reference = json_object();
        if (!h || h->self(h->ud, &self, NULL) < 0)
                return logcap_note(s->base.ctx->log, "L2: no stored results to take a reference from"), 0;
        base_key = json_string_value(json_object_get(self, "baseline_key"));
        if (!base_key || streq_ptr(base_key, json_string_value(json_object_get(self, "config_key"))))
                return logcap_note(s->base.ctx->log,
                                   "L2: this run is the baseline: its perplexities are the "
                                   "reference of the others"),
                       0;
        if (h->results(h->ud, "L2", base_key, 20, &res, NULL) < 0)
                return 0;
        json_array_foreach (res, i, r) {
                json_object_foreach (json_object_get(json_object_get(r, "metrics"), "prompts"), key, v) {
                        _cleanup_free_ char *n = xstrdup(key);
                        char *slash = strrchr(n, '/');

                        name = n;
                        if (slash && streq(slash, "/completions") &&
                            json_is_number(json_object_get(v, "perplexity"))) {
                                *slash = 0;
                                json_object_set(s->reference, name, json_object_get(v, "perplexity"));
                        }
                }
                if (json_object_size(s->reference) > 0) {
                        logcap_note(s->base.ctx->log,
                                    "L2: reference perplexities of the baseline run r%" JSON_INTEGER_FORMAT,
                                    json_integer_value(json_object_get(r, "run")));
                        s->reference_run = json_integer_value(json_object_get(r, "run"));
                        return 0;
                }
        }
        logcap_note(s->base.ctx->log,
                    "L2: the baseline configuration stored no perplexities: measured only");
        return 0;
}

/* The reference perplexities: a JSON object {"prompt name": number} in the file the setting names. */
static int load_reference(struct l2 *s, char **reterr)
{
        const char *path = json_string_value(json_object_get(s->base.ctx->settings, "reference"));
        json_error_t jerr;

        if (!path || !*path)
                return 0;
        if (streq(path, "baseline"))
                return baseline_reference(s);
        s->reference = json_load_file(path, 0, &jerr);
        if (!json_is_object(s->reference)) {
                *reterr = xasprintf("L2 reference %s: %s", path, s->reference ? "not a JSON object" : jerr.text);
                return -EINVAL;
        }
        return 0;
}

static void l2_run(struct mx_level *l)
{
        struct l2 *s = (struct l2 *)l;
        json_t *eps = json_object_get(l->ctx->settings, "endpoints"), *e;
        size_t n = json_array_size(s->prompts), i;
        _cleanup_free_ char *err = NULL;

        if (load_reference(s, &err) < 0) {
                mx_level_finish(l, MX_VERDICT_FAIL, NULL, NULL, "%s", err);
                return;
        }
        json_array_foreach (eps, i, e)
                for (size_t p = 0; p < n; p++)
                        add_step(s, STEP_MAIN, p, (enum mx_endpoint)mx_endpoint_from_string(json_string_value(e)));
        json_array_foreach (eps, i, e) {
                enum mx_endpoint ep = (enum mx_endpoint)mx_endpoint_from_string(json_string_value(e));

                add_step(s, STEP_REPEAT, 0, ep);
                for (int64_t t = 0; t < setting_int(l, "after_traffic"); t++)
                        add_step(s, STEP_TRAFFIC, n > 1 ? 1 + (size_t)t % (n - 1) : 0, ep);
                add_step(s, STEP_AGAIN, 0, ep);
        }
        if (s->reference)
                for (size_t p = 0; p < n; p++)
                        add_step(s, STEP_PPL, p, MX_ENDPOINT_COMPLETIONS);
        logcap_note(l->ctx->log, "L2: %zu requests (%zu prompts)", s->n_steps, n);
        next_step(s);
}

static int l2_new(const struct mx_level_ctx *ctx, struct mx_level **ret, char **reterr)
{
        struct l2 *s = xcalloc(1, sizeof(*s));

        (void)reterr;
        s->prompts = json_incref(json_object_get(ctx->settings, "prompts"));
        s->failures = json_array();
        s->artifacts = json_array();
        s->per_prompt = json_object();
        *ret = &s->base;
        return 0;
}

static json_t *l2_metrics(struct mx_level *l)
{
        struct l2 *s = (struct l2 *)l;

        return json_pack("{s:I,s:I,s:O}", "requests", (json_int_t)s->n_requests, "failed_checks",
                         (json_int_t)s->n_failed, "failures", s->failures);
}

static void l2_cancel(struct mx_level *l)
{
        struct l2 *s = (struct l2 *)l;

        mx_http_cancel(s->call);
        s->call = NULL;
}

static void l2_free(struct mx_level *l)
{
        struct l2 *s = (struct l2 *)l;

        mx_http_cancel(s->call);
        json_decref(s->prompts);
        json_decref(s->failures);
        json_decref(s->artifacts);
        json_decref(s->per_prompt);
        json_decref(s->reference);
        json_decref(s->first[0]);
        json_decref(s->first[1]);
        free(s->steps);
        free(s->body);
        free(s->first_failure);
        free(s);
}

const struct mx_level_ops mx_level_l2_ops = {
        .name = "L2",
        .new = l2_new,
        .run = l2_run,
        .cancel = l2_cancel,
        .metrics = l2_metrics,
        .free = l2_free,
};
