/* SPDX-License-Identifier: MIT */
/*
 * The command line ("mxsim serve MODEL [--flag [value]]...") and the
 * environment knobs, plus the few helpers every personality shares (sleeping,
 * the GPU lock, KV cache sizing).
 *
 * Like vLLM, unknown --flags are accepted and echoed in "non-default args";
 * an unknown flag takes the next word as its value unless that word is itself
 * a flag. Flags known to be booleans never take a value, so
 * "mxsim serve --enforce-eager MODEL" works.
 */
#include "sim.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sys/file.h>
#include <time.h>

static const char *const flavor_names[_SIM_FLAVOR_MAX] = {
        [SIM_FLAVOR_VLLM] = "vllm",
        [SIM_FLAVOR_LLAMA] = "llama-server",
        [SIM_FLAVOR_SGLANG] = "sglang",
};

const char *sim_flavor_to_string(enum sim_flavor f)
{
        return f >= 0 && f < _SIM_FLAVOR_MAX ? flavor_names[f] : NULL;
}

enum sim_flavor sim_flavor_from_string(const char *s)
{
        for (int i = 0; i < _SIM_FLAVOR_MAX; i++)
                if (streq(s, flavor_names[i]))
                        return (enum sim_flavor)i;
        if (streq(s, "llama") || streq(s, "llama.cpp"))
                return SIM_FLAVOR_LLAMA;
        return _SIM_FLAVOR_INVALID;
}

/* Flags that never take a value (vLLM, llama-server and SGLang booleans we know of). */
static const char *const bool_flags[] = {
        "enforce-eager",
        "enable-prefix-caching",
        "trust-remote-code",
        "async-scheduling",
        "disable-log-requests",
        "enable-log-requests",
        "disable-log-stats",
        "disable-uvicorn-access-log",
        "enable-chunked-prefill",
        "enable-server-load-tracking",
        "enable-per-request-metrics",
        "enable-tokenizer-info-endpoint",
        "enable-auto-tool-choice",
        "enable-expert-parallel",
        "disable-custom-all-reduce",
        "enable-sleep-mode",
        "skip-tokenizer-init",
        "enable-lora",
        "metrics",
        "enable-metrics",
        "jinja",
        "no-warmup",
        "cont-batching",
        "flash-attn-auto",
        "props",
        "no-slots",
        "verbose",
        "log-timestamps",
        "disable-cuda-graph",
        "skip-server-warmup",
        "help",
        "mxsim-harmony",
};

static bool is_bool_flag(const char *name)
{
        if (startswith(name, "no-"))
                return true;
        for (size_t i = 0; i < ELEMENTSOF(bool_flags); i++)
                if (streq(name, bool_flags[i]))
                        return true;
        return false;
}

/* "--x", "-x": a flag; "-1", "-0.5": a value. */
static bool is_flag_word(const char *w)
{
        if (startswith(w, "--"))
                return true;
        return w[0] == '-' && w[1] && !(w[1] >= '0' && w[1] <= '9') && w[1] != '.';
}

static void add_arg(struct sim_config *c, const char *name, const char *value)
{
        c->args = xreallocarray(c->args, c->n_args + 1, sizeof(*c->args));
        c->args[c->n_args++] = (struct sim_arg){xstrdup(name), value ? xstrdup(value) : NULL};
}

const char *sim_config_arg(const struct sim_config *c, const char *name)
{
        for (size_t i = c->n_args; i > 0; i--)
                if (streq(c->args[i - 1].name, name))
                        return c->args[i - 1].value;
        return NULL;
}

bool sim_config_has_arg(const struct sim_config *c, const char *name)
{
        for (size_t i = 0; i < c->n_args; i++)
                if (streq(c->args[i].name, name))
                        return true;
        return false;
}

bool sim_env_true(const char *name)
{
        const char *v = getenv(name);

        return v && (streq(v, "1") || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0);
}

/* A non-negative finite number from an env knob, bounded; -EINVAL with a reason naming it. */
static int env_number(const char *name, double def, double min, double max, double *ret, char **reterr)
{
        const char *v = getenv(name);
        char *end;
        double d;

        if (!v || !*v) {
                *ret = def;
                return 0;
        }
        errno = 0;
        d = strtod(v, &end);
        if (errno || *end || !isfinite(d) || d < min || d > max) {
                *reterr = xasprintf("environment variable %s='%s' is not a number in [%g, %g]", name, v, min,
                                    max);
                return -EINVAL;
        }
        *ret = d;
        return 0;
}

/* Split the words after "serve" into the model, flags and their values. */
static int parse_words(struct sim_config *c, int argc, char **argv, char **reterr)
{
        for (int i = 0; i < argc; i++) {
                const char *w = argv[i];
                _cleanup_free_ char *name = NULL;
                const char *value = NULL, *eq;

                if (!is_flag_word(w)) {
                        if (c->model) {
                                *reterr = xasprintf("unrecognized arguments: %s", w);
                                return -EINVAL;
                        }
                        c->model = xstrdup(w);
                        continue;
                }
                w += w[1] == '-' ? 2 : 1;
                eq = strchr(w, '=');
                name = eq ? xstrndup(w, eq - w) : xstrdup(w);
                if (!*name) {
                        *reterr = xstrdup("empty flag name '--'");
                        return -EINVAL;
                }
                if (eq)
                        value = eq + 1;
                else if (!is_bool_flag(name) && i + 1 < argc && !is_flag_word(argv[i + 1]))
                        value = argv[++i];
                if (c->n_args >= SIM_ARGS_MAX) {
                        *reterr = xasprintf("too many arguments (at most %d flags)", SIM_ARGS_MAX);
                        return -EINVAL;
                }
                add_arg(c, name, value);
        }
        return 0;
}

static int parse_int_flag(const struct sim_config *c, const char *name, int64_t min, int64_t max,
                          int64_t *ret, char **reterr)
{
        const char *v = sim_config_arg(c, name);
        int64_t mult = 1, n;
        _cleanup_free_ char *digits = NULL;

        if (!v)
                return 0;
        digits = xstrdup(v);
        size_t l = strlen(digits);
        if (l > 1 && (digits[l - 1] == 'k' || digits[l - 1] == 'K')) {
                mult = digits[l - 1] == 'k' ? 1000 : 1024;
                digits[l - 1] = '\0';
        }
        if (mx_parse_int64(digits, min / mult, max / mult, &n) < 0) {
                *reterr = xasprintf("argument --%s: invalid int value: '%s' (expected %" PRId64 "..%" PRId64
                                    ")",
                                    name, v, min, max);
                return -EINVAL;
        }
        *ret = n * mult;
        return 0;
}

/* vLLM's guess when "method" is absent: from the draft model's name, n-gram without one. */
static const char *spec_method_from_model(const char *model)
{
        if (!model)
                return "ngram";
        if (strcasestr(model, "eagle3"))
                return "eagle3";
        if (strcasestr(model, "eagle"))
                return "eagle";
        return "draft_model";
}

/* --speculative-config JSON, or its dotted form --speculative-config.method eagle3. */
static int parse_spec(struct sim_config *c, char **reterr)
{
        _cleanup_(json_decrefp) json_t *o = NULL;
        const char *text = sim_config_arg(c, "speculative-config");
        json_error_t e;

        if (text) {
                o = json_loads(text, 0, &e);
                if (!o || !json_is_object(o)) {
                        *reterr = xasprintf("argument --speculative-config: Value %s cannot be converted to "
                                            "<function loads>: %s",
                                            text, o ? "not a JSON object" : e.text);
                        return -EINVAL;
                }
        } else
                o = json_object();
        for (size_t i = 0; i < c->n_args; i++)
                if (startswith(c->args[i].name, "speculative-config.") && c->args[i].value) {
                        const char *key = c->args[i].name + strlen("speculative-config.");
                        int64_t n;
                        if (mx_parse_int64(c->args[i].value, INT32_MIN, INT32_MAX, &n) == 0)
                                json_object_set_new(o, key, json_integer(n));
                        else
                                json_object_set_new(o, key, json_string(c->args[i].value));
                }
        if (json_object_size(o) == 0)
                return 0;
        json_t *m = json_object_get(o, "method"), *model = json_object_get(o, "model"),
               *k = json_object_get(o, "num_speculative_tokens");
        if (m && !json_is_string(m)) {
                *reterr = xstrdup("--speculative-config: \"method\" must be a string");
                return -EINVAL;
        }
        if (k && (!json_is_integer(k) || json_integer_value(k) < 1 ||
                  json_integer_value(k) > SIM_SPEC_TOKENS_MAX)) {
                *reterr = xasprintf(
                        "--speculative-config: \"num_speculative_tokens\" must be an integer in 1..%d",
                        SIM_SPEC_TOKENS_MAX);
                return -EINVAL;
        }
        c->spec.method =
                xstrdup(m ? json_string_value(m) : spec_method_from_model(json_string_value(model)));
        c->spec.model = json_is_string(model) ? xstrdup(json_string_value(model)) : NULL;
        c->spec.num_tokens = k ? (int)json_integer_value(k) : 3;
        return 0;
}

/*
 * MXSIM_FAULT_RULES="VAR=value:fault,fault;VAR=value:fault": the faults of a
 * rule whose variable has that value in the environment, so that one matrix
 * can inject faults into some configurations (the demo's L2/L3 failures)
 * without touching its axes.
 */
static int parse_fault_rules(struct sim_config *c, const char *rules, char **reterr)
{
        _cleanup_free_ char *copy = xstrdup(rules);
        char *save = NULL;
        int r;

        for (char *rule = strtok_r(copy, ";", &save); rule; rule = strtok_r(NULL, ";", &save)) {
                char *colon = strchr(rule, ':'), *eq = strchr(rule, '=');
                const char *have;

                if (!colon || !eq || eq > colon) {
                        *reterr = xasprintf("MXSIM_FAULT_RULES: '%s' is not VAR=value:fault[,fault]", rule);
                        return -EINVAL;
                }
                *colon = *eq = '\0';
                have = getenv(rule);
                if (!have || !streq(have, eq + 1))
                        continue;
                r = sim_faults_add_list(&c->faults, colon + 1, "MXSIM_FAULT_RULES", reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * MXSIM_SPEED_RULES="VAR=value:factor;...": the speed model times factor when
 * the environment has VAR=value (several matching rules multiply), so that a
 * matrix can make some configurations slower or faster (the demo's
 * regression) without touching its axes.
 */
static int parse_speed_rules(struct sim_config *c, char **reterr)
{
        const char *rules = getenv("MXSIM_SPEED_RULES");
        _cleanup_free_ char *copy = rules ? xstrdup(rules) : NULL;
        char *save = NULL;

        c->speed_factor = 1;
        for (char *rule = copy ? strtok_r(copy, ";", &save) : NULL; rule; rule = strtok_r(NULL, ";", &save)) {
                char *colon = strrchr(rule, ':'), *eq = strchr(rule, '='), *end = NULL;
                const char *have;
                double f;

                if (!colon || !eq || eq > colon) {
                        *reterr = xasprintf("MXSIM_SPEED_RULES: '%s' is not VAR=value:factor", rule);
                        return -EINVAL;
                }
                *colon = *eq = '\0';
                errno = 0;
                f = strtod(colon + 1, &end);
                if (errno || end == colon + 1 || *end || !(f > 0 && f <= 100)) {
                        *reterr = xasprintf("MXSIM_SPEED_RULES: factor '%s' is not a number in (0, 100]", colon + 1);
                        return -EINVAL;
                }
                have = getenv(rule);
                if (have && streq(have, eq + 1))
                        c->speed_factor *= f;
        }
        return 0;
}

/* Faults from MXSIM_FAULTS and MXSIM_FAULT_RULES, then every --mxsim-fault. */
static int parse_faults(struct sim_config *c, char **reterr)
{
        const char *env = getenv("MXSIM_FAULTS");
        int r;

        if (env) {
                r = sim_faults_add_list(&c->faults, env, "MXSIM_FAULTS", reterr);
                if (r < 0)
                        return r;
        }
        env = getenv("MXSIM_FAULT_RULES");
        if (env) {
                r = parse_fault_rules(c, env, reterr);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < c->n_args; i++) {
                if (!streq(c->args[i].name, "mxsim-fault"))
                        continue;
                if (!c->args[i].value) {
                        *reterr = xstrdup("argument --mxsim-fault: expected one argument");
                        return -EINVAL;
                }
                r = sim_faults_add(&c->faults, c->args[i].value, "--mxsim-fault", reterr);
                if (r < 0)
                        return r;
        }
        return sim_faults_check_flavor(&c->faults, c->flavor == SIM_FLAVOR_VLLM, reterr);
}

/* --flavor wins over MXSIM_FLAVOR; vLLM by default. */
static int parse_flavor(struct sim_config *c, char **reterr)
{
        const char *f = sim_config_arg(c, "flavor");
        const char *origin = "--flavor";

        if (!f) {
                f = getenv("MXSIM_FLAVOR");
                origin = "MXSIM_FLAVOR";
        }
        if (!f || !*f) {
                c->flavor = SIM_FLAVOR_VLLM;
                return 0;
        }
        c->flavor = sim_flavor_from_string(f);
        if (c->flavor < 0) {
                *reterr = xasprintf("%s: unknown flavor '%s' (vllm, llama-server, sglang)", origin, f);
                return -EINVAL;
        }
        return 0;
}

/* A --name VALUE flag holding a number in [min, max]; absent: def. */
static int parse_number_flag(const struct sim_config *c, const char *name, double def, double min, double max,
                             double *ret, char **reterr)
{
        const char *v = sim_config_arg(c, name);
        char *end;
        double d;

        *ret = def;
        if (!v) {
                if (sim_config_has_arg(c, name)) {
                        *reterr = xasprintf("argument --%s: expected one argument", name);
                        return -EINVAL;
                }
                return 0;
        }
        errno = 0;
        d = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(d) || d < min || d > max) {
                *reterr = xasprintf("argument --%s: '%s' is not a number in [%g, %g]", name, v, min, max);
                return -EINVAL;
        }
        *ret = d;
        return 0;
}

/* The exact token schedule of --mxsim-decode-tps and friends (README "Token schedule"). */
static int parse_schedule(struct sim_config *c, char **reterr)
{
        const char *v;
        int r;

        if ((r = parse_number_flag(c, "mxsim-decode-tps", 0, 0.01, 1e6, &c->decode_tps, reterr)) < 0 ||
            (r = parse_number_flag(c, "mxsim-prefill-tps", 0, 1, 1e9, &c->prefill_tps, reterr)) < 0 ||
            (r = parse_number_flag(c, "mxsim-first-token-ms", 0, 0, 3600e3, &c->first_token_ms, reterr)) < 0 ||
            (r = parse_number_flag(c, "mxsim-jitter-ms", 0, 0, 60e3, &c->jitter_ms, reterr)) < 0)
                return r;
        /* the prefill rate also from the environment, for matrices whose flags must stay the real server's */
        if (c->prefill_tps == 0 &&
            (r = env_number("MXSIM_PREFILL_TPS", 0, 0, 1e9, &c->prefill_tps, reterr)) < 0)
                return r;
        v = sim_config_arg(c, "mxsim-token-log");
        if (!v && sim_config_has_arg(c, "mxsim-token-log")) {
                *reterr = xstrdup("argument --mxsim-token-log: expected one argument");
                return -EINVAL;
        }
        c->token_log = v ? xstrdup(v) : NULL;
        return 0;
}

/* --mxsim-harmony (vLLM's gpt-oss streaming) and --mxsim-eos-at N (where every sequence would end). */
static int parse_model_knobs(struct sim_config *c, char **reterr)
{
        int r;

        c->eos_at = -1;
        if (sim_config_has_arg(c, "mxsim-eos-at") && !sim_config_arg(c, "mxsim-eos-at")) {
                *reterr = xstrdup("argument --mxsim-eos-at: expected one argument");
                return -EINVAL;
        }
        if ((r = parse_int_flag(c, "mxsim-eos-at", 0, INT32_MAX, &c->eos_at, reterr)) < 0)
                return r;
        c->harmony = sim_config_has_arg(c, "mxsim-harmony");
        if (c->harmony && c->flavor != SIM_FLAVOR_VLLM) {
                /* llama-server and SGLang parse Harmony their own way: not what this imitates */
                *reterr = xasprintf("--mxsim-harmony imitates vLLM; not available with --flavor %s",
                                    sim_flavor_to_string(c->flavor));
                return -EINVAL;
        }
        return 0;
}

/*
 * The per-position probability p whose prefix acceptance gives the rate r: E[accepted] / k = (p + ... + p^k) / k,
 * increasing in p, solved by bisection.
 */
static double spec_position_p(double r, int k)
{
        double lo = 0, hi = 1;

        for (int it = 0; it < 60; it++) {
                double p = (lo + hi) / 2, pi = 1, sum = 0;

                for (int i = 0; i < k; i++)
                        sum += (pi *= p);
                if (sum / k < r)
                        lo = p;
                else
                        hi = p;
        }
        return (lo + hi) / 2;
}

/* --mxsim-spec-acceptance R (README): only with speculative decoding configured. */
static int parse_spec_acceptance(struct sim_config *c, char **reterr)
{
        int r = parse_number_flag(c, "mxsim-spec-acceptance", -1, 0, 1, &c->spec.acceptance, reterr);

        if (r < 0)
                return r;
        if (c->spec.acceptance >= 0 && !c->spec.method) {
                *reterr = xstrdup("--mxsim-spec-acceptance needs --speculative-config");
                return -EINVAL;
        }
        if (c->spec.acceptance >= 0)
                c->spec.accept_p = spec_position_p(c->spec.acceptance, c->spec.num_tokens);
        return 0;
}

/* Timing knobs, paths and the numeric flags the simulation uses. */
static int parse_knobs(struct sim_config *c, char **reterr)
{
        static const int default_ports[_SIM_FLAVOR_MAX] = {8000, 8080, 30000};
        const char *tmp = getenv("TMPDIR"), *v;
        int64_t port = default_ports[c->flavor];
        int r;

        if ((r = env_number("MXSIM_LOAD_S", 1.0, 0, 86400, &c->load_s, reterr)) < 0 ||
            (r = env_number("MXSIM_WATCHDOG_S", 5.0, 0.01, 3600, &c->watchdog_s, reterr)) < 0 ||
            (r = env_number("MXSIM_TOKEN_MS", 2.0, 0, 60000, &c->token_ms, reterr)) < 0 ||
            (r = env_number("MXSIM_RESIDENT_MB", 16.0, 0, 65536, &c->resident_mb, reterr)) < 0 ||
            (r = env_number("MXSIM_SHUTDOWN_WAIT_S", 5.0, 0, 3600, &c->shutdown_wait_s, reterr)) < 0 ||
            (r = env_number("VLLM_LOG_STATS_INTERVAL", 10.0, 0.01, 86400, &c->stats_interval_s, reterr)) < 0)
                return r;
        if ((r = parse_speed_rules(c, reterr)) < 0)
                return r;
        if ((r = parse_int_flag(c, "port", 0, 65535, &port, reterr)) < 0)
                return r;
        c->port = (int)port;
        c->max_model_len = 131072;
        if ((r = parse_int_flag(c, "max-model-len", 1, 1 << 24, &c->max_model_len, reterr)) < 0)
                return r;
        c->max_num_seqs = c->flavor == SIM_FLAVOR_LLAMA ? 4 : 256;
        if ((r = parse_int_flag(c, "max-num-seqs", 1, 65536, &c->max_num_seqs, reterr)) < 0)
                return r;
        c->gpu_memory_utilization = 0.92;
        if ((v = sim_config_arg(c, "gpu-memory-utilization"))) {
                char *end;
                c->gpu_memory_utilization = strtod(v, &end);
                if (*end || !(c->gpu_memory_utilization > 0 && c->gpu_memory_utilization <= 1)) {
                        *reterr = xasprintf("argument --gpu-memory-utilization: '%s' is not in (0, 1]", v);
                        return -EINVAL;
                }
        }
        v = getenv("MXSIM_GPU_LOCK");
        c->lock_path = v && *v ? xstrdup(v) : xasprintf("%s/mxsim-gpu.lock", tmp && *tmp ? tmp : "/tmp");
        /*
         * The GPU is the node's: a Slurm job step on node n2 does not share n1's card, even where both
         * nodes are one host (tests/slurm/cluster.sh), so the lock is per node where Slurm names one.
         */
        v = getenv("SLURMD_NODENAME");
        if (v && *v) {
                char *per_node = xasprintf("%s.%s", c->lock_path, v);
                free(c->lock_path);
                c->lock_path = per_node;
        }
        v = getenv("MXSIM_KERNEL_REPORT");
        c->kernel_report = v && *v ? xstrdup(v) : NULL;
        v = getenv("MXSIM_VERSION");
        c->version = xstrdup(v && *v ? v : "0.19.1rc1.dev212+g6e3a8b1f2.mxfp4v2");
        c->keep_alive_on_engine_death = sim_env_true("VLLM_KEEP_ALIVE_ON_ENGINE_DEATH");
        return 0;
}

/* See sim.h; the order matters: the flavour decides defaults and which faults are allowed. */
int sim_config_parse(struct sim_config *c, int argc, char **argv, char **reterr)
{
        const char *v;
        int r;

        *c = (struct sim_config){};
        if (argc < 2 || !streq(argv[1], "serve")) {
                *reterr = xstrdup("the first argument must be 'serve' (mxsim serve MODEL [options])");
                return -EINVAL;
        }
        if ((r = parse_words(c, argc - 2, argv + 2, reterr)) < 0)
                return r;
        if ((v = sim_config_arg(c, "model")) || (v = sim_config_arg(c, "m"))) {
                free(c->model);
                c->model = xstrdup(v);
        }
        if (!c->model) {
                *reterr = xstrdup("the following arguments are required: model_tag");
                return -EINVAL;
        }
        if ((r = parse_flavor(c, reterr)) < 0 || (r = parse_knobs(c, reterr)) < 0 ||
            (r = parse_spec(c, reterr)) < 0 || (r = parse_spec_acceptance(c, reterr)) < 0 ||
            (r = parse_faults(c, reterr)) < 0 ||
            (r = parse_schedule(c, reterr)) < 0 || (r = parse_model_knobs(c, reterr)) < 0)
                return r;
        /* short-context=N: the server runs with a context of N tokens, as /v1/models and the log say. */
        if (sim_fault_on(&c->faults, SIM_FAULT_SHORT_CONTEXT))
                c->max_model_len = MX_MAX(16, (int64_t)c->faults.value[SIM_FAULT_SHORT_CONTEXT]);
        v = sim_config_arg(c, "served-model-name");
        if (!v)
                v = sim_config_arg(c, "alias"); /* llama-server */
        c->served_name = xstrdup(v ? v : c->model);
        v = sim_config_arg(c, "host");
        c->host = xstrdup(v ? v : c->flavor == SIM_FLAVOR_VLLM ? "0.0.0.0" : "127.0.0.1");
        c->enforce_eager =
                sim_config_has_arg(c, "enforce-eager") || sim_config_has_arg(c, "disable-cuda-graph");
        v = sim_config_arg(c, "moe-backend");
        if (v && (r = sim_moe_backend_check(v, reterr)) < 0)
                return r;
        c->moe_backend = v && !streq(v, "auto") ? xstrdup(v) : NULL;
        v = sim_config_arg(c, "quantization");
        c->quantization = v ? xstrdup(v) : NULL;
        c->profiler = sim_config_has_arg(c, "profiler-config") ||
                      sim_config_has_arg(c, "profiler-config.profiler");
        c->metrics = c->flavor == SIM_FLAVOR_VLLM || sim_config_has_arg(c, "metrics") ||
                     sim_config_has_arg(c, "enable-metrics");
        return 0;
}

void sim_config_done(struct sim_config *c)
{
        for (size_t i = 0; i < c->n_args; i++) {
                free(c->args[i].name);
                free(c->args[i].value);
        }
        free(c->args);
        free(c->model);
        free(c->served_name);
        free(c->host);
        free(c->spec.method);
        free(c->spec.model);
        free(c->moe_backend);
        free(c->quantization);
        free(c->lock_path);
        free(c->kernel_report);
        free(c->version);
        free(c->token_log);
        *c = (struct sim_config){};
}

struct event_base *sim_event_base_new(void)
{
        struct event_config *cfg = event_config_new();
        struct event_base *b;

        if (!cfg)
                mx_die("event_config_new failed");
        event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
        b = event_base_new_with_config(cfg);
        event_config_free(cfg);
        if (!b)
                mx_die("event_base_new failed");
        return b;
}

void sim_sleep(double s)
{
        struct timespec ts, rem;

        if (s <= 0)
                return;
        ts.tv_sec = (time_t)s;
        ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
        while (nanosleep(&ts, &rem) < 0 && errno == EINTR)
                ts = rem;
}

/* The lock is per open file description, so it lives exactly as long as the returned fd. */
int sim_gpu_lock(const struct sim_config *c, int *ret_fd)
{
        _cleanup_close_ int fd = open(c->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);

        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* What is left of the unified memory after the weights and activations, in KV tokens. */
size_t sim_kv_cache_tokens(const struct sim_config *c)
{
        /* gpt-oss-120b: 36 layers x 8 KV heads x 64 dims x 2 (K,V) x 2 bytes = 72 KiB per token */
        double gib = c->gpu_memory_utilization * SIM_GPU_TOTAL_GIB - SIM_MODEL_GIB - 4.2;

        if (gib < 0.5)
                gib = 0.5;
        return (size_t)(gib * 1024.0 * 1024.0 * 1024.0 / (72.0 * 1024.0));
}
