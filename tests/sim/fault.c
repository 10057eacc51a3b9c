/* SPDX-License-Identifier: MIT */
/*
 * Faults injected on purpose (env MXSIM_FAULTS and repeated --mxsim-fault):
 * names, arguments and the request numbering that the *-after faults share.
 * README.md documents what each one reproduces.
 */
#include "sim.h"

#include <math.h>

enum fault_arg {
        ARG_NONE,
        ARG_COUNT,   /* a request count, integer >= 0 */
        ARG_SECONDS, /* a duration, seconds >= 0 */
        ARG_MB,      /* megabytes, 1..SIM_FAULT_MEMORY_MB_MAX */
};

static const struct {
        const char *name;
        enum fault_arg arg;
        bool vllm_only;
} faults[_SIM_FAULT_MAX] = {
        [SIM_FAULT_SLOW_START] = {"slow-start", ARG_SECONDS, false},
        [SIM_FAULT_HANG_START] = {"hang-start", ARG_NONE, false},
        [SIM_FAULT_CRASH_AT_START] = {"crash-at-start", ARG_NONE, false},
        [SIM_FAULT_CRASH_AFTER] = {"crash-after", ARG_COUNT, false},
        [SIM_FAULT_LAUNCH_FAILURE_AFTER] = {"launch-failure-after", ARG_COUNT, false},
        [SIM_FAULT_SEGFAULT_AFTER] = {"segfault-after", ARG_COUNT, false},
        [SIM_FAULT_HANG_AFTER] = {"hang-after", ARG_COUNT, false},
        [SIM_FAULT_OOM_AT_START] = {"oom-at-start", ARG_NONE, false},
        [SIM_FAULT_IMPORT_ERROR] = {"import-error", ARG_NONE, true},
        [SIM_FAULT_PTXAS_ERROR] = {"ptxas-error", ARG_NONE, true},
        [SIM_FAULT_ENGINE_ESCAPE] = {"engine-escape", ARG_NONE, true},
        [SIM_FAULT_ENGINE_IGNORE_TERM] = {"engine-ignore-term", ARG_NONE, true},
        [SIM_FAULT_HANG_STOP] = {"hang-stop", ARG_NONE, false},
        [SIM_FAULT_WRONG_KERNEL] = {"wrong-kernel", ARG_NONE, true},
        [SIM_FAULT_NAN_LOGPROBS] = {"nan-logprobs", ARG_NONE, false},
        [SIM_FAULT_NULL_CONTENT] = {"null-content", ARG_NONE, false},
        [SIM_FAULT_MEMORY_GROWTH] = {"memory-growth", ARG_MB, false},
        [SIM_FAULT_HEALTH_503_AFTER] = {"health-503-after", ARG_COUNT, false},
        [SIM_FAULT_SHORT_OUTPUT] = {"short-output", ARG_COUNT, false},
        [SIM_FAULT_POSITIVE_LOGPROBS] = {"positive-logprobs", ARG_NONE, false},
        [SIM_FAULT_SEED_DRIFT] = {"seed-drift", ARG_NONE, false},
        [SIM_FAULT_DEGENERATE_TEXT] = {"degenerate-text", ARG_NONE, false},
        [SIM_FAULT_INVALID_UTF8] = {"invalid-utf8", ARG_NONE, false},
        [SIM_FAULT_DIE_UNDER_CONCURRENCY] = {"die-under-concurrency", ARG_COUNT, true},
        [SIM_FAULT_ZOMBIE_CHILD] = {"zombie-child", ARG_NONE, true},
        [SIM_FAULT_SHORT_CONTEXT] = {"short-context", ARG_COUNT, false},
        [SIM_FAULT_METRICS_RESET_AFTER] = {"metrics-reset-after", ARG_COUNT, false},
        [SIM_FAULT_METRICS_MALFORMED] = {"metrics-malformed", ARG_NONE, false},
        [SIM_FAULT_TIMINGS_NO_PROMPT_N] = {"timings-no-prompt-n", ARG_COUNT, false},
};

const char *sim_fault_name(enum sim_fault f)
{
        return f >= 0 && f < _SIM_FAULT_MAX ? faults[f].name : NULL;
}

/* All fault names, for the error message about an unknown one. */
static char *fault_list(void)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        for (size_t i = 0; i < _SIM_FAULT_MAX; i++)
                mx_buf_printf(&b, "%s%s%s", i ? ", " : "", faults[i].name,
                              faults[i].arg == ARG_NONE ? "" : "=N");
        return mx_buf_steal(&b);
}

/* Check and store the argument of fault k; value is the text after '=' or NULL. */
static int fault_set_value(struct sim_faults *f, size_t k, const char *value, const char *origin,
                           char **reterr)
{
        char *end;
        double v;

        if (faults[k].arg == ARG_NONE) {
                if (value) {
                        *reterr = xasprintf("%s: fault '%s' takes no value (got '%s')", origin,
                                            faults[k].name, value);
                        return -EINVAL;
                }
                f->on[k] = true;
                return 0;
        }
        if (!value || !*value) {
                *reterr = xasprintf("%s: fault '%s' needs a value: %s=N", origin, faults[k].name,
                                    faults[k].name);
                return -EINVAL;
        }
        errno = 0;
        v = strtod(value, &end);
        if (errno || *end || !isfinite(v) || v < 0 || v > SIM_FAULT_VALUE_MAX ||
            (faults[k].arg != ARG_SECONDS && v != floor(v)) ||
            (faults[k].arg == ARG_MB && (v < 1 || v > SIM_FAULT_MEMORY_MB_MAX))) {
                *reterr = xasprintf("%s: fault '%s': bad value '%s' (%s)", origin, faults[k].name, value,
                                    faults[k].arg == ARG_SECONDS ? "seconds >= 0"
                                    : faults[k].arg == ARG_MB    ? "megabytes, 1..4096"
                                                                 : "an integer >= 0");
                return -EINVAL;
        }
        f->on[k] = true;
        f->value[k] = v;
        return 0;
}

/* See sim.h. */
int sim_faults_add(struct sim_faults *f, const char *spec, const char *origin, char **reterr)
{
        _cleanup_free_ char *name = NULL, *known = NULL;
        const char *eq = strchr(spec, '=');

        name = eq ? xstrndup(spec, eq - spec) : xstrdup(spec);
        for (size_t k = 0; k < _SIM_FAULT_MAX; k++)
                if (streq(name, faults[k].name))
                        return fault_set_value(f, k, eq ? eq + 1 : NULL, origin, reterr);
        known = fault_list();
        *reterr = xasprintf("%s: unknown fault '%s' (known: %s)", origin, name, known);
        return -EINVAL;
}

int sim_faults_add_list(struct sim_faults *f, const char *list, const char *origin, char **reterr)
{
        _cleanup_free_ char *copy = xstrdup(list);
        char *save = NULL;

        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                while (*tok == ' ')
                        tok++;
                if (!*tok)
                        continue;
                int r = sim_faults_add(f, tok, origin, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sim_faults_check_flavor(const struct sim_faults *f, bool vllm, char **reterr)
{
        if (vllm)
                return 0;
        for (size_t k = 0; k < _SIM_FAULT_MAX; k++)
                if (f->on[k] && faults[k].vllm_only) {
                        *reterr =
                                xasprintf("fault '%s' is only implemented by --flavor vllm", faults[k].name);
                        return -EINVAL;
                }
        return 0;
}

enum sim_crash sim_faults_on_request(const struct sim_faults *f, uint64_t request_no)
{
        static const struct {
                enum sim_fault fault;
                enum sim_crash crash;
        } after[] = {
                {SIM_FAULT_CRASH_AFTER, SIM_CRASH_ILLEGAL_INSTRUCTION},
                {SIM_FAULT_LAUNCH_FAILURE_AFTER, SIM_CRASH_LAUNCH_FAILURE},
                {SIM_FAULT_SEGFAULT_AFTER, SIM_CRASH_SEGFAULT},
                {SIM_FAULT_HANG_AFTER, SIM_CRASH_HANG},
        };

        for (size_t i = 0; i < ELEMENTSOF(after); i++)
                if (f->on[after[i].fault] && request_no > (uint64_t)f->value[after[i].fault])
                        return after[i].crash;
        return SIM_CRASH_NONE;
}

bool sim_faults_health_503(const struct sim_faults *f, uint64_t completions_done)
{
        return f->on[SIM_FAULT_HEALTH_503_AFTER] &&
               completions_done >= (uint64_t)f->value[SIM_FAULT_HEALTH_503_AFTER];
}

bool sim_faults_metrics_reset(const struct sim_faults *f, uint64_t completions_done)
{
        return f->on[SIM_FAULT_METRICS_RESET_AFTER] && f->value[SIM_FAULT_METRICS_RESET_AFTER] >= 1 &&
               completions_done == (uint64_t)f->value[SIM_FAULT_METRICS_RESET_AFTER];
}

bool sim_faults_no_prompt_n(const struct sim_faults *f, uint64_t request_no)
{
        uint64_t every = (uint64_t)f->value[SIM_FAULT_TIMINGS_NO_PROMPT_N];

        return f->on[SIM_FAULT_TIMINGS_NO_PROMPT_N] && every >= 1 && request_no % every == 0;
}
