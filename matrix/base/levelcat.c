/* SPDX-License-Identifier: MIT */
/* The level catalogue: every level mxmatrix runs, its settings, their bounds and defaults (levelcat.h). */
#include "levelcat.h"

#include <inttypes.h>
#include <math.h>
#include <strings.h>

const struct mx_level_setting mx_level_common_settings[] = {
        { "timeout", MX_LSET_DURATION, "0", 0, 7 * 24 * 3600 * 1000.0, NULL,
          "the longest the level may take; 0: the daemon's --level-timeout. Past it the level fails and the run "
          "ends with outcome timeout" },
        { "continue_on_fail", MX_LSET_BOOL, "false", 0, 0, NULL,
          "run the levels after this one even when it fails (by default a failed level skips the rest)" },
        {},
};

static const struct mx_level_setting no_settings[] = { {} };

static const struct mx_level_setting l1_settings[] = {
        { "probe", MX_LSET_BOOL, "true", 0, 0, NULL,
          "after the smoke completion, check the harness's assumptions against the server (mxmatrix probe) and "
          "record them; a later level that depends on a failed one fails early with its line" },
        {},
};

static const char *const endpoint_choices[] = { "completions", "chat", NULL };

/* L2's shipped prompt set: short, varied tasks a coherent model answers in plain text. */
#define L2_PROMPTS                                                                                                 \
        "[{\"name\": \"capital\", \"prompt\": \"The capital of France is\"},"                                        \
        " {\"name\": \"count\", \"prompt\": \"Count from one to twenty in words:\"},"                                 \
        " {\"name\": \"story\", \"prompt\": \"Write one sentence about a lighthouse keeper who finds a message in a "  \
        "bottle.\"},"                                                                                                \
        " {\"name\": \"code\", \"prompt\": \"Write a Python function that returns the nth Fibonacci number.\"},"       \
        " {\"name\": \"explain\", \"prompt\": \"Explain in two sentences why the sky is blue.\"},"                     \
        " {\"name\": \"translate\", \"prompt\": \"Translate to German: The weather is nice today.\"}]"

static const struct mx_level_setting l2_settings[] = {
        { "prompts", MX_LSET_PROMPTS, L2_PROMPTS, 0, 0, NULL,
          "the prompt set: a list of {\"name\", \"prompt\", \"expect\": [substrings]}; default: six shipped prompts" },
        { "endpoints", MX_LSET_STRINGS, "[\"completions\", \"chat\"]", 0, 0, endpoint_choices,
          "the OpenAI endpoints to check: completions (/v1/completions), chat (/v1/chat/completions)" },
        { "max_tokens", MX_LSET_INT, "64", 1, 131072, NULL,
          "tokens asked of every prompt with ignore_eos: completion_tokens must equal it, finish_reason be length" },
        { "temperature", MX_LSET_NUMBER, "1.0", 0, 2, NULL, "sampling temperature (seed 001's workload: 1.0)" },
        { "seed", MX_LSET_INT, "42", 0, 2147483647.0, NULL, "the sampling seed (seed 001's workload: 42)" },
        { "logprobs", MX_LSET_INT, "5", 0, 20, NULL,
          "top alternatives asked per token; each logprob must be finite and <= 0, the alternatives sorted (but "
          "for the sampled token, which vLLM lists first), the sampled token among them (vLLM's legacy arrays; "
          "llama-server's content form lists the best N only); 0: only the sampled token's logprob is checked (the "
          "determinism requests ask for at least 5)" },
        { "min_printable", MX_LSET_NUMBER, "0.9", 0, 1, NULL, "the least share of printable characters in a text" },
        { "max_repeat", MX_LSET_NUMBER, "0.5", 0, 1, NULL,
          "the largest share of one word among a text's words (8 or more): above it the text is degenerate" },
        { "after_traffic", MX_LSET_INT, "4", 0, 1000, NULL,
          "unseeded requests of other prompts between the second and the third request with the same seed" },
        { "reference", MX_LSET_STRING, "\"\"", 0, 0, NULL,
          "a JSON file {\"prompt name\": perplexity} the prompts' perplexity (from prompt_logprobs) is compared "
          "with, or \"baseline\": the perplexities the baseline configuration's newest L2 stored (the baseline "
          "run measures its own); empty: no comparison" },
        { "perplexity_tolerance", MX_LSET_NUMBER, "0.05", 0, 10, NULL,
          "the largest relative difference from the reference perplexity" },
        { "near_tie_gap", MX_LSET_NUMBER, "0.05", 0, 100, NULL,
          "where the same seed gave different tokens: the largest logprob gap (nats) between the two sampled "
          "tokens, or between the other token listed among the alternatives and the sampled one, that is called a "
          "near tie (a rounding difference can flip it) rather than a real difference" },
        {},
};

static const struct mx_level_setting l3_settings[] = {
        { "sequential", MX_LSET_INT, "100", 0, 100000, NULL,
          "requests one after the other (seed 001: 100); the memory check spans them" },
        { "concurrency", MX_LSET_INT, "10", 0, 256, NULL,
          "requests sent at once after the sequential ones (seed 001: 10; template 000: 2-4)" },
        { "max_tokens", MX_LSET_INT, "32", 1, 131072, NULL,
          "tokens asked of each sequential and concurrent request, with ignore_eos" },
        { "long_generation_tokens", MX_LSET_INT, "1024", 0, 1048576, NULL,
          "tokens of the one long generation (seed 001: 1024+); 0: none" },
        { "long_context_tokens", MX_LSET_INT, "32768", 0, 16777216, NULL,
          "prompt tokens of the one long-context request, exact by the server's /tokenize (template 000: 32K+); "
          "a server whose context (max_model_len, n_ctx) cannot hold them and 16 generated fails; 0: none" },
        { "memory_growth_max", MX_LSET_NUMBER, "0.10", 0, 100, NULL,
          "the largest growth of the server's memory from the first sample to the last of the sequential "
          "requests (seed 001: 10 %)" },
        { "memory_every", MX_LSET_INT, "10", 1, 100000, NULL, "sample the memory every this many sequential requests" },
        { "endpoint", MX_LSET_STRING, "\"completions\"", 0, 0, endpoint_choices, "the endpoint every request goes to" },
        { "check_zombies", MX_LSET_BOOL, "true", 0, 0, NULL,
          "fail when a process of the server's tree has a zombie child it never reaped" },
        {},
};

static const char *const latency_choices[] = { "api", "generation", "none", NULL };

/* L4 (seed 001 Level 4, seed 002's workload): the benchmark engine's settings (loadgen/bench.h). */
static const struct mx_level_setting l4_settings[] = {
        { "pp", MX_LSET_INTS, "[2048]", 1, 1048576, NULL,
          "prompt lengths in tokens (llama-benchy's pp; seed 002: 2048), made exact with /tokenize" },
        { "tg", MX_LSET_INTS, "[32, 128]", 2, 1048576, NULL,
          "tokens generated per request (llama-benchy's tg; seed 002: 32 and 128), with ignore_eos" },
        { "depth", MX_LSET_INTS, "[0, 4096, 8192]", 0, 1048576, NULL,
          "context tokens before each prompt (llama-benchy's @ dN), unique per run so no prefix is cached" },
        { "runs", MX_LSET_INT, "10", 1, 10000, NULL, "measured runs per test (seed 002: test_requests 10)" },
        { "warmup", MX_LSET_INT, "3", 0, 1000, NULL,
          "untimed requests of the same shape before each test (seed 002: warmup_requests 3)" },
        { "concurrency", MX_LSET_INT, "1", 1, 128, NULL, "requests sent together per run (seed 002: 1)" },
        { "llama_bench_style", MX_LSET_BOOL, "false", 0, 0, NULL,
          "pp @ dN counts only the new tokens over a cached depth, as llama-bench (llama-benchy "
          "--enable-prefix-caching); by default the whole prompt is prefilled fresh" },
        { "latency_mode", MX_LSET_STRING, "\"api\"", 0, 0, latency_choices,
          "what llama-benchy subtracts from the time to first response for pp: api (a GET /v1/models round "
          "trip), generation (first event of a 1-token request) or none" },
        { "request_timeout", MX_LSET_DURATION, "600000", 1, 24 * 3600 * 1000.0, NULL,
          "the longest one request may take before it counts as failed" },
        { "seed", MX_LSET_INT, "0", 0, 9007199254740991.0, NULL,
          "seed of the prompt words and cache salts; 0: a fresh one per run" },
        { "temperature", MX_LSET_NUMBER, "1.0", 0, 2, NULL,
          "sampling temperature sent with every request (seed 002's workload: 1.0)" },
        { "top_p", MX_LSET_NUMBER, "1.0", 0, 1, NULL, "top_p sent with every request (seed 002's workload: 1.0)" },
        { "sampling_seed", MX_LSET_INT, "42", -1, 2147483647.0, NULL,
          "the sampling seed sent with every request (seed 002's workload: 42); -1: none sent" },
        { "memory_interval", MX_LSET_DURATION, "1000", 20, 3600 * 1000.0, NULL,
          "the least time between memory samples, taken between requests (never while one streams) and at the "
          "start and end" },
        { "clock_tolerance_pct", MX_LSET_NUMBER, "10", 0, 100, NULL,
          "the numbers are invalid when the SM clock under load (the GPU sampler's samples while L4 measures) "
          "moved by more than this, (max - min) / max in percent; thermal or hardware throttling and another "
          "process on the GPU make them invalid too (the power cap alone does not: it shows as a moving clock)" },
        {},
};

static const char *const rule_choices[] = { "welch", "intervals", NULL };
static const char *const against_choices[] = { "baseline", "history", NULL };

/* L5 (seed 001 Level 5; seed 000's thresholds): matrix/analysis/regress.h's comparison. */
static const struct mx_level_setting l5_settings[] = {
        { "perf_max_drop_pct", MX_LSET_NUMBER, "5", 0, 100, NULL,
          "a t/s row slower than the reference by more than this (percent) is beyond the threshold (seed 001 "
          "Level 5: within 5 %; seed 000's Level 5 checklist says 3 %)" },
        { "ttft_p99_max_rise_pct", MX_LSET_NUMBER, "3", 0, 1000, NULL,
          "TTFT p99 higher by more than this (percent) is beyond the threshold (seed 000 hard constraint: 3 %)" },
        { "memory_max_rise_gb", MX_LSET_NUMBER, "1", 0, 100000, NULL,
          "memory peak higher by more than this many GB (10^9 bytes) is beyond the threshold (seed 000 Level 5: "
          "within 1 GB of the baseline; its hard constraint is 2 GB)" },
        { "alpha", MX_LSET_NUMBER, "0.05", 0.0001, 0.5, NULL,
          "significance level of a regression: the primary check at it, the others at Holm's levels" },
        { "alpha_same", MX_LSET_NUMBER, "0.2", 0.0001, 0.5, NULL,
          "significance level of clearing a check (no regression): within the threshold at 1 - alpha_same "
          "confidence, else unknown" },
        { "primary", MX_LSET_STRING, "\"tg32\"", 0, 0, NULL,
          "the primary row (the success criteria's metric: tg32 at depth 0, concurrency 1; \"pp2048\", "
          "\"tg32@d4096\"); empty: every check in Holm's family" },
        { "confirm_starts", MX_LSET_INT, "6", 0, 50, NULL,
          "confirmation server starts per side (run and reference, A/B/A/B) for an undecided comparison" },
        { "rule", MX_LSET_STRING, "\"welch\"", 0, 0, rule_choices,
          "the within-start test that makes a comparison suspicious: welch (Welch's t-test on the per-request "
          "values) or intervals (95 % confidence intervals of the means do not overlap)" },
        { "against", MX_LSET_STRINGS, "[\"baseline\", \"history\"]", 0, 0, against_choices,
          "what to compare with: baseline (the job's baseline run and earlier baseline runs at the same source "
          "SHAs), history (this configuration at other source SHAs)" },
        { "baseline_runs", MX_LSET_INT, "5", 1, 100, NULL,
          "the newest reference server starts (stored attempts) per comparison" },
        { "history_shas", MX_LSET_INT, "1", 0, 20, NULL,
          "the newest earlier source states of this configuration compared with, each on its own" },
        {},
};

/* Keep in the seed's order (seed 001, Phase 6). */
const struct mx_level_def mx_level_defs[] = {
        { "L1", "smoke", "the server becomes ready in time and answers one completion; its log shows no crash",
          .fail_unrun = true, .settings = l1_settings },
        { "L1.5", "kernel gate",
          "the kernels the configuration must (not) run, from the log and the profiler report (decided after "
          "the stop, when the report is written)",
          .settings = no_settings },
        { "L2", "correctness",
          "a fixed prompt set on each endpoint: coherent text, exact token counts, no NaN/Inf, valid logprobs, the "
          "same tokens for the same seed (twice, and again after other traffic), optional reference perplexity",
          .settings = l2_settings },
        { "L3", "stress",
          "100 sequential and 10 concurrent requests, one 1024-token generation, one 32K-token prompt, every reply "
          "checked; memory growth under 10 %; no zombie and nothing left after the stop",
          .settings = l3_settings },
        { "L4", "benchmark",
          "llama-benchy's pp/tg rows at each depth (mean +- std over the runs), TTFR, TTFT, TPOT, ITL, E2EL "
          "percentiles, every request's exact token counts checked; startup time and memory peak beside",
          .gated = true, .settings = l4_settings },
        { "L5", "regression",
          "L4's numbers against the baseline's and this configuration's at other source SHAs, same GPU model: "
          "one value per server start: t/s within 5 %, TTFT p99 within +3 %, memory within +1 GB, beyond the threshold at alpha",
          .gated = true, .settings = l5_settings },
};
const size_t mx_level_defs_count = ELEMENTSOF(mx_level_defs);

const struct mx_level_def *mx_level_def_find(const char *name)
{
        int i = mx_level_index(name);

        return i < 0 ? NULL : &mx_level_defs[i];
}

int mx_level_index(const char *name)
{
        for (size_t i = 0; name && i < mx_level_defs_count; i++)
                if (strcasecmp(mx_level_defs[i].name, name) == 0)
                        return (int)i;
        return -1;
}

const struct mx_level_setting *mx_level_setting_find(const struct mx_level_def *d, const char *name)
{
        for (const struct mx_level_setting *s = mx_level_common_settings; s->name; s++)
                if (streq(s->name, name))
                        return s;
        for (const struct mx_level_setting *s = d->settings; s && s->name; s++)
                if (streq(s->name, name))
                        return s;
        return NULL;
}

static char *level_names(void)
{
        struct mx_buf b = MX_BUF_INIT;

        for (size_t i = 0; i < mx_level_defs_count; i++)
                mx_buf_printf(&b, "%s%s", i ? ", " : "", mx_level_defs[i].name);
        return mx_buf_steal(&b);
}

/* One word of a selection ("L2" or "L1-L3") into the flags of the levels it names. */
static int select_word(const char *w, bool *on, char **reterr)
{
        const char *dash = strchr(w, '-');
        _cleanup_free_ char *names = NULL, *esc = NULL;
        int a, b;

        if (dash) {
                _cleanup_free_ char *lo = xstrndup(w, dash - w);

                a = mx_level_index(lo);
                b = mx_level_index(dash + 1);
                if (a >= 0 && b >= 0 && a <= b) {
                        for (int i = a; i <= b; i++)
                                on[i] = true;
                        return 0;
                }
        } else if ((a = mx_level_index(w)) >= 0) {
                on[a] = true;
                return 0;
        }
        names = level_names();
        esc = mx_escape(w, 64);
        if (reterr)
                *reterr = xasprintf("'%s' is not a level or a range of levels (levels: %s; a range: L1-L3)", esc,
                                    names);
        return -EINVAL;
}

static int select_string(const char *s, bool *on, size_t *n_words, char **reterr)
{
        _cleanup_free_ char *copy = xstrdup(s);
        char *save = NULL;
        int r;

        for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
                if (++*n_words > MX_LEVELS_MAX) {
                        if (reterr)
                                *reterr = xasprintf("more than %d level names", MX_LEVELS_MAX);
                        return -E2BIG;
                }
                r = select_word(t, on, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

static json_t *selected(const bool *on)
{
        json_t *a = json_array();

        for (size_t i = 0; i < mx_level_defs_count; i++)
                if (on[i])
                        json_array_append_new(a, json_string(mx_level_defs[i].name));
        return a;
}

int mx_levels_select(json_t *words, json_t **ret, char **reterr)
{
        bool on[ELEMENTSOF(mx_level_defs)] = {};
        size_t n = 0, i;
        json_t *w;
        int r;

        if (json_is_string(words))
                return mx_levels_select_string(json_string_value(words), ret, reterr);
        if (!json_is_array(words)) {
                if (reterr)
                        *reterr = xstrdup("levels are a list of names or ranges");
                return -EINVAL;
        }
        json_array_foreach (words, i, w) {
                if (!json_is_string(w)) {
                        if (reterr)
                                *reterr = xasprintf("level %zu is not a string", i + 1);
                        return -EINVAL;
                }
                r = select_string(json_string_value(w), on, &n, reterr);
                if (r < 0)
                        return r;
        }
        *ret = selected(on);
        return 0;
}

int mx_levels_select_string(const char *s, json_t **ret, char **reterr)
{
        bool on[ELEMENTSOF(mx_level_defs)] = {};
        size_t n = 0;
        int r = select_string(s, on, &n, reterr);

        if (r < 0)
                return r;
        *ret = selected(on);
        return 0;
}

static json_t *fail_null(char **reterr, const char *fmt, ...) _printf_(2, 3);
static json_t *fail_null(char **reterr, const char *fmt, ...)
{
        va_list ap;

        if (reterr) {
                va_start(ap, fmt);
                *reterr = xvasprintf(fmt, ap);
                va_end(ap);
        }
        return NULL;
}

static bool is_choice(const struct mx_level_setting *s, const char *v)
{
        if (!s->choices)
                return true;
        for (size_t i = 0; s->choices[i]; i++)
                if (streq(s->choices[i], v))
                        return true;
        return false;
}

static json_t *number_value(const struct mx_level_setting *s, json_t *v, char **reterr)
{
        double d;

        if (json_is_string(v)) {
                char *end = NULL;
                const char *t = json_string_value(v);

                errno = 0;
                d = strtod(t, &end);
                if (errno || end == t || *end)
                        return fail_null(reterr, "'%s' is not a number", t);
        } else if (json_is_number(v))
                d = json_number_value(v);
        else
                return fail_null(reterr, "expected a number");
        if (!isfinite(d) || d < s->min || d > s->max)
                return fail_null(reterr, "%g is outside %g to %g", d, s->min, s->max);
        if (s->type == MX_LSET_INT) {
                if (d != floor(d))
                        return fail_null(reterr, "%g is not a whole number", d);
                return json_integer((json_int_t)d);
        }
        return json_real(d);
}

/* A list of integers: a JSON array, or "256,512" from the command line. */
static json_t *ints_value(const struct mx_level_setting *s, json_t *v, char **reterr)
{
        _cleanup_json_ json_t *a = json_array();
        const char *t = json_string_value(v);
        size_t i;
        json_t *e;

        if (t) {
                _cleanup_free_ char *copy = xstrdup(t);
                char *save = NULL;

                for (char *w = strtok_r(copy, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
                        char *end = NULL;
                        long long n;

                        errno = 0;
                        n = strtoll(w, &end, 10);
                        if (errno || end == w || *end)
                                return fail_null(reterr, "'%s' is not a whole number", w);
                        json_array_append_new(a, json_integer(n));
                        if (json_array_size(a) > MX_LEVEL_INTS_MAX)
                                break;
                }
        } else if (json_is_array(v))
                json_array_extend(a, v);
        else
                return fail_null(reterr, "expected a list of whole numbers");
        if (json_array_size(a) == 0 || json_array_size(a) > MX_LEVEL_INTS_MAX)
                return fail_null(reterr, "expected 1 to %d whole numbers", MX_LEVEL_INTS_MAX);
        json_array_foreach (a, i, e) {
                if (!json_is_integer(e))
                        return fail_null(reterr, "entry %zu is not a whole number", i + 1);
                if (json_integer_value(e) < s->min || json_integer_value(e) > s->max)
                        return fail_null(reterr,
                                         "entry %zu: %" JSON_INTEGER_FORMAT " is outside %.0f to %.0f",
                                         i + 1, json_integer_value(e), s->min, s->max);
        }
        return TAKE_PTR(a);
}

json_t *mx_level_setting_value(const struct mx_level_setting *s, json_t *v, char **reterr)
{
        const char *t = json_string_value(v);
        size_t i;
        json_t *e;

        switch (s->type) {
        case MX_LSET_BOOL:
                if (json_is_boolean(v))
                        return json_incref(v);
                if (t && (streq(t, "true") || streq(t, "yes") || streq(t, "1")))
                        return json_true();
                if (t && (streq(t, "false") || streq(t, "no") || streq(t, "0")))
                        return json_false();
                return fail_null(reterr, "expected true or false");
        case MX_LSET_INT:
        case MX_LSET_NUMBER:
                return number_value(s, v, reterr);
        case MX_LSET_DURATION: {
                int64_t ms;

                if (json_is_integer(v))
                        ms = json_integer_value(v);
                else if (!t || mx_parse_duration_ms(t, &ms) < 0)
                        return fail_null(reterr, "expected a duration (\"30s\", \"5m\") or milliseconds");
                if (ms < s->min || ms > s->max)
                        return fail_null(reterr, "%" PRId64 " ms is outside %.0f to %.0f ms", ms, s->min, s->max);
                return json_integer(ms);
        }
        case MX_LSET_STRING:
                if (!t)
                        return fail_null(reterr, "expected a string");
                if (json_string_length(v) > MX_LEVEL_STRING_MAX || strlen(t) != json_string_length(v))
                        return fail_null(reterr, "a string of at most %d bytes without NUL", MX_LEVEL_STRING_MAX);
                if (!is_choice(s, t))
                        return fail_null(reterr, "'%s' is not one of the choices", t);
                return json_incref(v);
        case MX_LSET_STRINGS: {
                json_t *a;

                if (t) {
                        /* From the command line: comma-separated. */
                        _cleanup_free_ char *copy = xstrdup(t);
                        char *save = NULL;

                        a = json_array();
                        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save))
                                json_array_append_new(a, json_string(w));
                } else if (json_is_array(v))
                        a = json_incref(v);
                else
                        return fail_null(reterr, "expected a list of strings");
                if (json_array_size(a) > MX_LEVEL_SETTINGS_MAX) {
                        json_decref(a);
                        return fail_null(reterr, "more than %d strings", MX_LEVEL_SETTINGS_MAX);
                }
                json_array_foreach (a, i, e)
                        if (!json_is_string(e) || json_string_length(e) > MX_LEVEL_STRING_MAX ||
                            !is_choice(s, json_string_value(e))) {
                                json_decref(a);
                                return fail_null(reterr, "entry %zu is not one of the choices", i + 1);
                        }
                return a;
        }
        case MX_LSET_INTS:
                return ints_value(s, v, reterr);
        case MX_LSET_PROMPTS:
                if (mx_level_prompts_check(v, reterr) < 0)
                        return NULL;
                return json_incref(v);
        }
        return fail_null(reterr, "unknown setting type");
}

json_t *mx_level_defaults(const struct mx_level_def *d)
{
        json_t *o = json_object();
        const struct mx_level_setting *lists[] = { mx_level_common_settings, d->settings };

        for (size_t k = 0; k < ELEMENTSOF(lists); k++)
                for (const struct mx_level_setting *s = lists[k]; s && s->name; s++) {
                        json_t *v = json_loads(s->def, JSON_DECODE_ANY, NULL);

                        if (!v)
                                mx_die("level %s: the default of %s is not JSON", d->name, s->name);
                        json_object_set_new(o, s->name, v);
                }
        return o;
}

int mx_level_settings_apply(const struct mx_level_def *d, json_t *settings, json_t *overrides, const char *where,
                            char **reterr)
{
        const char *k;
        json_t *v;

        if (!json_is_object(overrides)) {
                if (reterr)
                        *reterr = xasprintf("%s: expected an object of settings", where);
                return -EINVAL;
        }
        json_object_foreach (overrides, k, v) {
                const struct mx_level_setting *s = mx_level_setting_find(d, k);
                _cleanup_free_ char *why = NULL, *esc = NULL;
                json_t *nv;

                if (!s) {
                        esc = mx_escape(k, 64);
                        if (reterr)
                                *reterr = xasprintf("%s: %s has no setting '%s' (mxmatrix.json(5), LEVELS)", where,
                                                    d->name, esc);
                        return -EINVAL;
                }
                nv = mx_level_setting_value(s, v, &why);
                if (!nv) {
                        if (reterr)
                                *reterr = xasprintf("%s.%s: %s", where, k, strna(why));
                        return -EINVAL;
                }
                json_object_set_new(settings, k, nv);
        }
        return 0;
}

int mx_level_prompts_check(json_t *prompts, char **reterr)
{
        static const char *const keys[] = { "name", "prompt", "expect", NULL };
        size_t i, j;
        json_t *p, *e;

        if (!json_is_array(prompts) || json_array_size(prompts) == 0 ||
            json_array_size(prompts) > MX_LEVEL_PROMPTS_MAX) {
                if (reterr)
                        *reterr = xasprintf("expected a list of 1 to %d prompts", MX_LEVEL_PROMPTS_MAX);
                return -EINVAL;
        }
        json_array_foreach (prompts, i, p) {
                const char *k;
                json_t *v;

                if (!json_is_object(p) || !json_is_string(json_object_get(p, "name")) ||
                    !json_is_string(json_object_get(p, "prompt"))) {
                        if (reterr)
                                *reterr = xasprintf("prompt %zu: expected {\"name\": ..., \"prompt\": ...}", i + 1);
                        return -EINVAL;
                }
                json_object_foreach (p, k, v) {
                        bool known = false;

                        for (size_t n = 0; keys[n]; n++)
                                known = known || streq(keys[n], k);
                        if (!known) {
                                _cleanup_free_ char *esc = mx_escape(k, 64);
                                if (reterr)
                                        *reterr = xasprintf("prompt %zu: unknown key '%s' (name, prompt, expect)",
                                                            i + 1, esc);
                                return -EINVAL;
                        }
                }
                if (json_string_length(json_object_get(p, "prompt")) == 0 ||
                    json_string_length(json_object_get(p, "prompt")) > MX_LEVEL_PROMPT_MAX ||
                    json_string_length(json_object_get(p, "name")) > 128) {
                        if (reterr)
                                *reterr = xasprintf("prompt %zu: an empty or too long prompt or name", i + 1);
                        return -EINVAL;
                }
                e = json_object_get(p, "expect");
                if (e && (!json_is_array(e) || json_array_size(e) > 16)) {
                        if (reterr)
                                *reterr = xasprintf("prompt %zu: expect is a list of up to 16 substrings", i + 1);
                        return -EINVAL;
                }
                json_array_foreach (e, j, v)
                        if (!json_is_string(v) || json_string_length(v) == 0 ||
                            json_string_length(v) > MX_LEVEL_STRING_MAX) {
                                if (reterr)
                                        *reterr = xasprintf("prompt %zu: expect %zu is not a non-empty string",
                                                            i + 1, j + 1);
                                return -EINVAL;
                        }
        }
        return 0;
}
