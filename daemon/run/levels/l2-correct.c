/* SPDX-License-Identifier: MIT */
/*
 * L2 correctness (seed 001 Level 2, template 000 "perplexity within
 * tolerance"). One request at a time:
 *
 *   main        every prompt on every endpoint, seeded, ignore_eos and
 *               max_tokens: the checks of checks.h (text, exact token count
 *               and finish_reason length, no NaN/Inf, valid logprobs in
 *               either form, coherence, expected substrings)
 *   repeat      the first prompt again with the same seed: the same tokens
 *   traffic     after_traffic unseeded requests of other prompts
 *   again       the first prompt once more with the same seed: the same tokens
 *               (a server whose sampling depends on the batch fails here)
 *   perplexity  with a reference: every prompt with prompt_logprobs=0 on the
 *               completions endpoint; exp(-mean logprob) within the tolerance
 *   prime       (servers without a per-request cache switch) the compared
 *               prompt just before each compared request, unchecked for
 *               sameness: see below
 *
 * The same seed gives the same tokens only from the same cache state: a
 * request that reuses a cached prefix evaluates the rest of its prompt in
 * other batch shapes, rounds differently, and with near-uniform logits a
 * sampled token flips (../shared/targets/README.md). So every request defeats
 * the prompt cache where the server kind has a field for it (server-kind.h:
 * llama-server cache_prompt false, vLLM a fresh cache_salt); SGLang and
 * unknown servers have none, and a prefix unique to the request would make
 * the two compared prompts differ, so there L2 sends the compared prompt once
 * just before each compared request ("prime"): both then find it cached alike.
 * Where the outputs still differ, the first divergence is reported with both
 * tokens' logprobs and their gap (a near tie or a real difference), beside
 * what the baseline configuration's own L2 stored for the same comparison: a
 * difference the baseline shows too is not this configuration's fault.
 *
 * Every failure names its prompt and endpoint and keeps the request and the
 * reply in L2-evidence/ (artifacts); the verdict is fail when any check failed.
 * A check that could not run (no prompt_logprobs from the server, no
 * reference value) is listed as not measured, never as passed.
 */
#include "checks.h"
#include "http.h"
#include "levels.h"
#include "logcap.h"
#include "server-kind.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#define L2_FAILURES_KEPT 32

enum step_kind { STEP_MAIN, STEP_REPEAT, STEP_TRAFFIC, STEP_AGAIN, STEP_PPL, STEP_PRIME };

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
        json_t *first[2]; /* the first prompt's normalised logprobs (or text) per endpoint, from its main request */
        json_t *failures, *artifacts, *per_prompt, *reference;
        unsigned n_requests, n_failed;
        char *first_failure;
        int64_t reference_run; /* reference "baseline": the run whose perplexities it is; 0: none */
        enum mx_server_kind kind;
        const char *kind_from;   /* static: where the kind came from */
        uint64_t salt_nonce;     /* makes the cache salts of this level unique */
        json_t *determinism;     /* {"endpoint/step": {"same", divergence...}} */
        json_t *base_det;        /* the baseline configuration's stored determinism, or NULL */
        char *base_det_what;     /* which baseline run, or why there is none */
        json_t *not_measured;    /* ["check: why"] */
        json_t *as_baseline;     /* ["differences the baseline configuration shows too"] */
        const char *ref_missing; /* static: why a prompt may have no reference value; NULL: none asked */
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

static const char *const step_names[] = { "main", "repeat", "traffic", "again", "perplexity", "prime" };

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

/* The determinism comparisons: the first prompt's main request, and the requests compared with it. */
static bool compared(const struct step *st)
{
        return st->kind == STEP_REPEAT || st->kind == STEP_AGAIN || st->kind == STEP_PRIME ||
               (st->kind == STEP_MAIN && st->prompt == 0);
}

/* Top alternatives asked: none for traffic and perplexity; at least 5 where a divergence may need telling apart. */
static int step_logprobs(struct l2 *s, const struct step *st)
{
        int lp = (int)setting_int(&s->base, "logprobs");

        if (st->kind == STEP_TRAFFIC || st->kind == STEP_PPL)
                return -1;
        return compared(st) ? MX_MAX(lp, 5) : lp;
}

/* Every request of the level, in the form the server kind needs to evaluate its whole prompt again. */
static char *step_body(struct l2 *s, const struct step *st)
{
        struct mx_level *l = &s->base;
        _cleanup_free_ char *salt = xasprintf("mxmatrix-l2-%016" PRIx64 "-%u", s->salt_nonce, s->n_requests);
        struct mx_gen_request rq = {
                .endpoint = st->endpoint, .model = l->ctx->model,
                .prompt = json_string_value(json_object_get(json_array_get(s->prompts, st->prompt), "prompt")),
                .max_tokens = st->kind == STEP_PPL ? 1 : setting_int(l, "max_tokens"),
                .ignore_eos = st->kind != STEP_PPL, .temperature = setting_num(l, "temperature"),
                .has_seed = st->kind != STEP_TRAFFIC, .seed = setting_int(l, "seed"),
                .logprobs = step_logprobs(s, st), .prompt_logprobs = st->kind == STEP_PPL ? 0 : -1,
                .server = s->kind, .cache_salt = salt, .defeat_cache = true,
        };

        return mx_gen_body(&rq);
}

/* What two seeded outputs are compared by: the normalised logprobs, else the text. */
static json_t *identity(const struct mx_gen_reply *g)
{
        return g->logprobs ? json_incref(g->logprobs) : json_string(strempty(g->text));
}

/* Where two outputs first differ (NULL: the same), in *ret_text in words. */
static json_t *difference(json_t *a, json_t *b, double epsilon, char **ret_text)
{
        const char *x = json_string_value(a), *y = json_string_value(b);
        size_t i = 0;

        if (json_is_array(a) && json_is_array(b))
                return mx_divergence(a, b, epsilon, ret_text);
        *ret_text = NULL;
        if (json_equal(a, b))
                return NULL;
        while (x && y && x[i] && x[i] == y[i])
                i++;
        *ret_text = xasprintf("the text differs from byte %zu (no logprobs to tell the tokens)", i + 1);
        return json_pack("{s:I}", "byte", (json_int_t)(i + 1));
}

_printf_(2, 3) static void not_measured(struct l2 *s, const char *fmt, ...)
{
        _cleanup_free_ char *t = NULL;
        va_list ap;
        json_t *v;
        size_t i;

        va_start(ap, fmt);
        t = xvasprintf(fmt, ap);
        va_end(ap);
        json_array_foreach (s->not_measured, i, v)
                if (streq(json_string_value(v), t))
                        return;
        logcap_note(s->base.ctx->log, "L2: not measured: %s", t);
        json_array_append_new(s->not_measured, json_string(t));
}

static const char *cache_defeat_words(enum mx_server_kind k)
{
        switch (k) {
        case MX_SERVER_LLAMA:
                return "every request had cache_prompt false";
        case MX_SERVER_VLLM:
                return "every request had a cache_salt of its own";
        default:
                return "each compared request came right after the same prompt, so both found it cached alike "
                       "(no per-request cache switch on this server)";
        }
}

/* Is "NAME=value" in the run's environment? */
static bool run_env_has(struct l2 *s, const char *kv)
{
        json_t *e;
        size_t i;

        json_array_foreach (json_object_get(s->base.ctx->spec, "env"), i, e)
                if (streq_ptr(json_string_value(e), kv))
                        return true;
        return false;
}

/* What the baseline configuration's stored L2 said of the same comparison, in words. */
static char *baseline_words(struct l2 *s, const char *key)
{
        json_t *b = json_object_get(s->base_det, key);

        if (!s->base_det)
                return xstrdup(s->base_det_what);
        if (json_is_true(json_object_get(b, "same")))
                return xasprintf("%s gave the same output", s->base_det_what);
        return xasprintf("%s did not compare %s", s->base_det_what, key);
}

/*
 * The same seed, the same prompt, the same cache state: the same tokens.
 * A difference the baseline configuration shows too is noted, not failed.
 */
static void compare_determinism(struct l2 *s, const struct step *st, const struct mx_gen_reply *g,
                                const struct mx_http_response *res)
{
        _cleanup_free_ char *key = xasprintf("%s/%s", mx_endpoint_name(st->endpoint), step_names[st->kind]);
        _cleanup_free_ char *where = NULL, *base = NULL, *d = NULL;
        _cleanup_json_ json_t *now = identity(g);
        json_t *diff;

        if (!s->first[st->endpoint]) {
                not_measured(s, "determinism %s: the first prompt's main request failed", key);
                return;
        }
        diff = difference(s->first[st->endpoint], now, setting_num(&s->base, "near_tie_gap"), &where);
        if (!diff) {
                json_object_set_new(s->determinism, key, json_pack("{s:b}", "same", true));
                return;
        }
        json_object_set_new(diff, "same", json_false());
        json_object_set_new(s->determinism, key, diff);
        if (json_is_false(json_object_get(json_object_get(s->base_det, key), "same"))) {
                json_object_set_new(diff, "as_baseline", json_true());
                d = xasprintf("%s: %s, as %s does too", key, where, s->base_det_what);
                logcap_note(s->base.ctx->log, "L2: determinism %s", d);
                json_array_append_new(s->as_baseline, json_string(d));
                return;
        }
        base = baseline_words(s, key);
        d = xasprintf("the same seed gave different output %s: %s; %s; %s%s",
                      st->kind == STEP_REPEAT ? "on the second request" : "after other traffic", where,
                      cache_defeat_words(s->kind), base,
                      s->kind != MX_SERVER_VLLM ? ""
                      : run_env_has(s, "VLLM_BATCH_INVARIANT=1")
                              ? "; VLLM_BATCH_INVARIANT=1 is set, so vLLM promises the same output"
                              : "; vLLM promises the same output for a seed online only with VLLM_BATCH_INVARIANT=1, "
                                "which this run does not set");
        add_failure(s, st, "determinism", d, res);
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

        if (g->no_prompt_logprobs) {
                not_measured(s, "perplexity: the server sent no prompt_logprobs (llama-server has none)");
                return;
        }
        if (!json_is_number(ref)) {
                if (s->ref_missing)
                        not_measured(s, "perplexity of '%s': %s", prompt_name(s, st->prompt), s->ref_missing);
                return;
        }
        if (g->prompt_ppl <= 0)
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
                .logprobs = step_logprobs(s, st),
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
                if (st->kind == STEP_REPEAT || st->kind == STEP_AGAIN)
                        compare_determinism(s, st, &g, res);
                if (st->kind == STEP_PPL)
                        compare_reference(s, st, &g, res);
        }
        mx_gen_reply_done(&g);
        next_step(s);
}

static json_t *level_metrics(struct l2 *s)
{
        return json_pack("{s:I,s:I,s:O,s:O,s:s,s:s,s:s,s:O,s:s?,s:O,s:O}", "requests", (json_int_t)s->n_requests,
                         "failed_checks", (json_int_t)s->n_failed, "prompts", s->per_prompt, "failures", s->failures,
                         "server_kind", mx_server_kind_name(s->kind), "server_kind_from", strna(s->kind_from),
                         "cache_defeat", cache_defeat_words(s->kind), "determinism", s->determinism,
                         "determinism_baseline", s->base_det_what, "not_measured", s->not_measured,
                         "as_baseline", s->as_baseline);
}

/* "every check passed" only when every asked check ran and found nothing. */
static char *pass_message(struct l2 *s)
{
        struct mx_buf b = MX_BUF_INIT;
        json_t *v;
        size_t i;

        mx_buf_printf(&b, "%u requests, every check %s", s->n_requests,
                      json_array_size(s->not_measured) + json_array_size(s->as_baseline) ? "that ran passed"
                                                                                        : "passed");
        json_array_foreach (s->as_baseline, i, v)
                mx_buf_printf(&b, "%s%s", i ? "; " : " but determinism, which differed as in the baseline, so not "
                                                     "blamed on this configuration: ",
                              json_string_value(v));
        json_array_foreach (s->not_measured, i, v)
                mx_buf_printf(&b, "%s%s", i ? "; " : "; not measured: ", json_string_value(v));
        return mx_buf_steal(&b);
}

static void finish(struct l2 *s)
{
        struct mx_level *l = &s->base;
        json_t *m = level_metrics(s);
        _cleanup_free_ char *msg = NULL;

        if (s->reference_run > 0)
                json_object_set_new(m, "reference_run", json_integer(s->reference_run));
        if (s->n_failed > 0) {
                mx_level_finish(l, MX_VERDICT_FAIL, m, json_incref(s->artifacts), "%s%s", s->first_failure,
                                s->n_failed > 1 ? " (and more: metrics.failures)" : "");
                return;
        }
        msg = pass_message(s);
        mx_level_finish(l, MX_VERDICT_PASS, m, json_incref(s->artifacts), "%s", msg);
}

static void next_step(struct l2 *s)
{
        struct mx_level *l = &s->base;
        const struct step *st;
        struct mx_http_request req = { .method = "POST", .content_type = "application/json", .max_body = 8 << 20,
                                       .headers = l->ctx->headers };
        _cleanup_free_ char *url = NULL, *err = NULL;

        if (s->next >= s->n_steps) {
                finish(s);
                return;
        }
        st = &s->steps[s->next++];
        free(s->body);
        s->body = step_body(s, st);
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

/* A compared request; where the server has no cache switch, the same prompt right before it. */
static void add_compared(struct l2 *s, enum step_kind k, enum mx_endpoint e)
{
        if (!mx_server_has_cache_field(s->kind))
                add_step(s, STEP_PRIME, 0, e);
        add_step(s, k, 0, e);
}

/*
 * The baseline configuration's key, or NULL with *ret_why saying why there
 * is none to compare with (no stored results, this run is the baseline).
 */
static const char *baseline_key(struct l2 *s, json_t **ret_self, const char **ret_why)
{
        const struct mx_history *h = s->base.ctx->history;
        const char *key;

        *ret_self = NULL;
        if (!h || h->self(h->ud, ret_self, NULL) < 0) {
                *ret_why = "no stored results to compare with";
                return NULL;
        }
        key = json_string_value(json_object_get(*ret_self, "baseline_key"));
        if (!key || streq_ptr(key, json_string_value(json_object_get(*ret_self, "config_key")))) {
                *ret_why = "this run is the baseline configuration";
                return NULL;
        }
        return key;
}

/* What the baseline configuration's newest L2 stored of its determinism comparisons. */
static void baseline_determinism(struct l2 *s)
{
        const struct mx_history *h = s->base.ctx->history;
        _cleanup_json_ json_t *self = NULL, *res = NULL;
        const char *why = NULL, *key = baseline_key(s, &self, &why);
        json_t *r;
        size_t i;

        if (!key) {
                s->base_det_what = xstrdup(why);
                return;
        }
        if (h->results(h->ud, "L2", key, 20, &res, NULL) < 0) {
                s->base_det_what = xstrdup("the baseline configuration's stored results could not be read");
                return;
        }
        json_array_foreach (res, i, r) {
                json_t *d = json_object_get(json_object_get(r, "metrics"), "determinism");

                if (json_is_object(d)) {
                        s->base_det = json_incref(d);
                        s->base_det_what = xasprintf("the baseline configuration's L2 (r%" JSON_INTEGER_FORMAT ")",
                                                     json_integer_value(json_object_get(r, "run")));
                        return;
                }
        }
        s->base_det_what = xstrdup("the baseline configuration has no stored L2 determinism result");
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
        const char *why = NULL, *base_key = baseline_key(s, &self, &why), *key, *name;
        json_t *r, *v;
        size_t i;

        s->reference = json_object();
        if (!base_key) {
                logcap_note(s->base.ctx->log, "L2: %s: its perplexities are measured, compared with nothing", why);
                /* The baseline run measures for the others: no comparison was asked of it. */
                s->ref_missing = streq(why, "this run is the baseline configuration") ? NULL : why;
                return 0;
        }
        s->ref_missing = "the baseline configuration stored no perplexity for it";
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
        s->ref_missing = "the reference file has no value for it";
        s->reference = json_load_file(path, 0, &jerr);
        if (!json_is_object(s->reference)) {
                *reterr = xasprintf("L2 reference %s: %s", path, s->reference ? "not a JSON object" : jerr.text);
                return -EINVAL;
        }
        return 0;
}

/* The steps, once the server kind is known, and the first request. */
static void plan(struct l2 *s)
{
        struct mx_level *l = &s->base;
        json_t *eps = json_object_get(l->ctx->settings, "endpoints"), *e;
        size_t n = json_array_size(s->prompts), i;

        logcap_note(l->ctx->log, "L2: server kind %s (from %s): %s", mx_server_kind_name(s->kind), s->kind_from,
                    cache_defeat_words(s->kind));
        json_array_foreach (eps, i, e) {
                enum mx_endpoint ep = (enum mx_endpoint)mx_endpoint_from_string(json_string_value(e));

                add_compared(s, STEP_MAIN, ep);
                for (size_t p = 1; p < n; p++)
                        add_step(s, STEP_MAIN, p, ep);
        }
        json_array_foreach (eps, i, e) {
                enum mx_endpoint ep = (enum mx_endpoint)mx_endpoint_from_string(json_string_value(e));

                add_compared(s, STEP_REPEAT, ep);
                for (int64_t t = 0; t < setting_int(l, "after_traffic"); t++)
                        add_step(s, STEP_TRAFFIC, n > 1 ? 1 + (size_t)t % (n - 1) : 0, ep);
                add_compared(s, STEP_AGAIN, ep);
        }
        if (s->reference)
                for (size_t p = 0; p < n; p++)
                        add_step(s, STEP_PPL, p, MX_ENDPOINT_COMPLETIONS);
        logcap_note(l->ctx->log, "L2: %zu requests (%zu prompts)", s->n_steps, n);
        next_step(s);
}

/* The kind from /v1/models' owned_by, when the profile did not say it. */
static void models_done(struct mx_http_call *call, struct mx_http_response *res, void *ud)
{
        struct l2 *s = ud;
        _cleanup_json_ json_t *j = NULL;
        json_t *d;
        size_t i;

        (void)call;
        s->call = NULL;
        j = res->error == 0 && res->status == 200 ? json_loadb(res->body, res->body_len, 0, NULL) : NULL;
        json_array_foreach (json_object_get(j, "data"), i, d)
                if (s->kind == MX_SERVER_OTHER)
                        s->kind = mx_server_kind_from_owner(json_string_value(json_object_get(d, "owned_by")));
        s->kind_from = s->kind != MX_SERVER_OTHER ? "/v1/models owned_by"
                                                  : "neither the profile nor /v1/models owned_by";
        plan(s);
}

static void l2_run(struct mx_level *l)
{
        struct l2 *s = (struct l2 *)l;
        struct mx_http_request req = { .method = "GET", .max_body = 1 << 20, .headers = l->ctx->headers };
        _cleanup_free_ char *err = NULL, *url = NULL;

        /* the determinism requests mean nothing when a repeated prompt is served from the cache */
        if (mx_level_fail_on_assumptions(l, (const char *const[]){ "api_key", "cache_defeat", NULL }))
                return;
        if (load_reference(s, &err) < 0) {
                mx_level_finish(l, MX_VERDICT_FAIL, NULL, NULL, "%s", err);
                return;
        }
        baseline_determinism(s);
        s->kind = mx_server_kind_from_profile(json_string_value(json_object_get(l->ctx->profile, "base")));
        s->kind_from = "the profile's base";
        if (s->kind != MX_SERVER_OTHER) {
                plan(s);
                return;
        }
        url = xasprintf("%s/v1/models", l->ctx->url);
        req.url = url;
        req.timeout_ms = MX_MIN(mx_level_timeout_ms(l), MX_HTTP_TIMEOUT_MAX_MS);
        if (mx_http_start(l->ctx->http, &req, models_done, s, &s->call, &err) < 0) {
                s->kind_from = "neither the profile nor /v1/models (not reachable)";
                plan(s);
        }
}

static int l2_new(const struct mx_level_ctx *ctx, struct mx_level **ret, char **reterr)
{
        struct l2 *s = xcalloc(1, sizeof(*s));

        (void)reterr;
        s->prompts = json_incref(json_object_get(ctx->settings, "prompts"));
        s->failures = json_array();
        s->artifacts = json_array();
        s->per_prompt = json_object();
        s->determinism = json_object();
        s->not_measured = json_array();
        s->as_baseline = json_array();
        s->salt_nonce = (uint64_t)mx_now_mono_us() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
        *ret = &s->base;
        return 0;
}

static json_t *l2_metrics(struct mx_level *l)
{
        return level_metrics((struct l2 *)l);
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
        json_decref(s->determinism);
        json_decref(s->base_det);
        json_decref(s->not_measured);
        json_decref(s->as_baseline);
        free(s->base_det_what);
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
