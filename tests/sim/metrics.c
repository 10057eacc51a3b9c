/* SPDX-License-Identifier: MIT */
/*
 * Counters and histograms of finished requests, rendered as Prometheus text
 * in each personality's names: vLLM's vllm:* (labels model_name and engine,
 * counters with _total on the wire, target-surfaces.md §A1), llama-server's
 * llamacpp:* (§B, only with --metrics) and SGLang's sglang:*.
 */
#include "sim.h"

#include <inttypes.h>

static const double ttft_bounds[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                                     1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
static const double itl_bounds[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                    0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
static const double e2e_bounds[] = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                                    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
static const double len_bounds[] = {1,   2,    5,    10,   20,    50,    100,   200,
                                    500, 1000, 2000, 5000, 10000, 20000, 50000, 100000};

static void hist_init(struct sim_hist *h, const double *bounds, size_t n)
{
        *h = (struct sim_hist){.bounds = bounds, .n_bounds = MX_MIN(n, (size_t)SIM_HIST_BUCKETS_MAX)};
}

void sim_metrics_init(struct sim_metrics *m)
{
        *m = (struct sim_metrics){.created_us = mx_now_real_us(), .window_start_us = mx_now_mono_us()};
        hist_init(&m->ttft, ttft_bounds, ELEMENTSOF(ttft_bounds));
        hist_init(&m->itl, itl_bounds, ELEMENTSOF(itl_bounds));
        hist_init(&m->e2e, e2e_bounds, ELEMENTSOF(e2e_bounds));
        hist_init(&m->prompt_len, len_bounds, ELEMENTSOF(len_bounds));
        hist_init(&m->gen_len, len_bounds, ELEMENTSOF(len_bounds));
}

void sim_hist_observe(struct sim_hist *h, double v)
{
        size_t i = 0;

        while (i < h->n_bounds && v > h->bounds[i])
                i++;
        h->counts[i]++;
        h->count++;
        h->sum += v;
}

void sim_metrics_record(struct sim_metrics *m, const struct sim_completion_summary *sum)
{
        double decode_s = sum->e2e_s - sum->ttft_s;

        m->prompt_tokens += (uint64_t)sum->prompt_tokens;
        m->generation_tokens += (uint64_t)sum->completion_tokens;
        m->window_prompt += (uint64_t)sum->prompt_tokens;
        m->window_gen += (uint64_t)sum->completion_tokens;
        m->prompt_seconds += sum->ttft_s;
        m->generation_seconds += decode_s;
        if (sum->stopped)
                m->success_stop++;
        else
                m->success_length++;
        sim_hist_observe(&m->ttft, sum->ttft_s);
        sim_hist_observe(&m->e2e, sum->e2e_s);
        sim_hist_observe(&m->prompt_len, (double)sum->prompt_tokens);
        sim_hist_observe(&m->gen_len, (double)sum->completion_tokens);
        for (int64_t i = 1; i < sum->completion_tokens; i++)
                sim_hist_observe(&m->itl, decode_s / (double)(sum->completion_tokens - 1));
}

void sim_metrics_maybe_restart(struct sim_metrics *m, const struct sim_config *c, uint64_t finished_no,
                               const struct sim_sched_stats *now)
{
        if (!sim_faults_metrics_reset(&c->faults, finished_no))
                return;
        sim_metrics_init(m);
        if (now)
                m->base = *now;
}

/* Python's float formatting as prometheus_client uses it ("1.0", "0.25", "1e-05"). */
static void put_float(struct mx_buf *b, double v)
{
        char s[64];

        for (int prec = 1; prec <= 17; prec++) {
                snprintf(s, sizeof(s), "%.*g", prec, v);
                if (strtod(s, NULL) == v)
                        break;
        }
        mx_buf_puts(b, s);
        if (!strpbrk(s, ".eninf"))
                mx_buf_puts(b, ".0");
}

static void metric_head(struct mx_buf *b, const char *name, const char *type, const char *help)
{
        mx_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(struct mx_buf *b, const char *name, const char *labels, double v)
{
        mx_buf_printf(b, "%s{%s} ", name, labels);
        put_float(b, v);
        mx_buf_putc(b, '\n');
}

static void counter(struct mx_buf *b, const char *name, const char *help, const char *labels, double v,
                    double created)
{
        _cleanup_free_ char *total = xasprintf("%s_total", name), *cr = xasprintf("%s_created", name);

        metric_head(b, name, "counter", help);
        sample(b, total, labels, v);
        sample(b, cr, labels, created);
}

static void gauge(struct mx_buf *b, const char *name, const char *help, const char *labels, double v)
{
        metric_head(b, name, "gauge", help);
        sample(b, name, labels, v);
}

static void histogram(struct mx_buf *b, const char *name, const char *help, const char *labels,
                      const struct sim_hist *h, double created)
{
        uint64_t cum = 0;

        metric_head(b, name, "histogram", help);
        for (size_t i = 0; i <= h->n_bounds; i++) {
                cum += h->counts[i];
                mx_buf_printf(b, "%s_bucket{%s,le=\"", name, labels);
                if (i < h->n_bounds)
                        put_float(b, h->bounds[i]);
                else
                        mx_buf_puts(b, "+Inf");
                mx_buf_printf(b, "\"} ");
                put_float(b, (double)cum);
                mx_buf_putc(b, '\n');
        }
        mx_buf_printf(b, "%s_count{%s} ", name, labels);
        put_float(b, (double)h->count);
        mx_buf_printf(b, "\n%s_sum{%s} ", name, labels);
        put_float(b, h->sum);
        mx_buf_printf(b, "\n%s_created{%s} ", name, labels);
        put_float(b, created);
        mx_buf_putc(b, '\n');
}

static void render_vllm(struct mx_buf *b, const struct sim_metrics *m, const struct sim_config *c,
                        const struct sim_sched_stats *st)
{
        _cleanup_free_ char *l = xasprintf("engine=\"0\",model_name=\"%s\"", c->served_name);
        _cleanup_free_ char *lstop = xasprintf("%s,finished_reason=\"stop\"", l);
        _cleanup_free_ char *llen = xasprintf("%s,finished_reason=\"length\"", l);
        double cr = (double)m->created_us / 1e6;

        gauge(b, "vllm:num_requests_running", "Number of requests in model execution batches.", l,
              (double)st->running);
        gauge(b, "vllm:num_requests_waiting", "Number of requests waiting to be processed.", l,
              (double)st->waiting);
        gauge(b, "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", l, st->kv_usage);
        counter(b, "vllm:num_preemptions", "Cumulative number of preemption from the engine.", l, 0, cr);
        counter(b, "vllm:prompt_tokens", "Number of prefill tokens processed.", l, (double)m->prompt_tokens,
                cr);
        counter(b, "vllm:generation_tokens", "Number of generation tokens processed.", l,
                (double)m->generation_tokens, cr);
        metric_head(b, "vllm:request_success", "counter", "Count of successfully processed requests.");
        sample(b, "vllm:request_success_total", lstop, (double)m->success_stop);
        sample(b, "vllm:request_success_total", llen, (double)m->success_length);
        counter(b, "vllm:prefix_cache_queries",
                "Prefix cache queries, in terms of number of queried tokens.", l, (double)m->prompt_tokens,
                cr);
        counter(b, "vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", l, 0,
                cr);
        histogram(b, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", l,
                  &m->ttft, cr);
        histogram(b, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", l,
                  &m->itl, cr);
        histogram(b, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", l,
                  &m->e2e, cr);
        histogram(b, "vllm:request_prompt_tokens", "Number of prefill tokens processed.", l, &m->prompt_len,
                  cr);
        histogram(b, "vllm:request_generation_tokens", "Number of generation tokens processed.", l,
                  &m->gen_len, cr);
        if (!c->spec.method)
                return;
        counter(b, "vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", l,
                (double)(st->spec_drafts - m->base.spec_drafts), cr);
        counter(b, "vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", l,
                (double)(st->spec_draft_tokens - m->base.spec_draft_tokens), cr);
        counter(b, "vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", l,
                (double)(st->spec_accepted - m->base.spec_accepted), cr);
        metric_head(b, "vllm:spec_decode_num_accepted_tokens_per_pos", "counter",
                    "Accepted tokens per draft position.");
        for (int i = 0; i < c->spec.num_tokens && i < SIM_SPEC_TOKENS_MAX; i++) {
                _cleanup_free_ char *lp = xasprintf("%s,position=\"%d\"", l, i);
                sample(b, "vllm:spec_decode_num_accepted_tokens_per_pos_total", lp,
                       (double)(st->spec_accepted_pos[i] - m->base.spec_accepted_pos[i]));
        }
}

static void render_llama(struct mx_buf *b, const struct sim_metrics *m, const struct sim_config *c,
                         const struct sim_sched_stats *st)
{
        static const struct {
                const char *name, *type, *help;
        } names[] = {
                {"llamacpp:prompt_tokens_total", "counter", "Number of prompt tokens processed."},
                {"llamacpp:prompt_seconds_total", "counter", "Prompt process time"},
                {"llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed."},
                {"llamacpp:tokens_predicted_seconds_total", "counter", "Predict process time"},
                {"llamacpp:n_decode_total", "counter", "Total number of llama_decode() calls"},
                {"llamacpp:prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s."},
                {"llamacpp:predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s."},
                {"llamacpp:requests_processing", "gauge", "Number of requests processing."},
                {"llamacpp:requests_deferred", "gauge", "Number of requests deferred."},
                {"llamacpp:n_tokens_max", "counter", "Largest observed n_tokens."},
        };
        double v[ELEMENTSOF(names)] = {
                (double)m->prompt_tokens,
                m->prompt_seconds,
                (double)m->generation_tokens,
                m->generation_seconds,
                (double)(st->steps - m->base.steps),
                m->prompt_seconds > 0 ? (double)m->prompt_tokens / m->prompt_seconds : 0,
                m->generation_seconds > 0 ? (double)m->generation_tokens / m->generation_seconds : 0,
                (double)st->running,
                (double)st->waiting,
                (double)c->max_model_len,
        };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                mx_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s ", names[i].name, names[i].help,
                              names[i].name, names[i].type, names[i].name);
                put_float(b, v[i]);
                mx_buf_putc(b, '\n');
        }
}

static void render_sglang(struct mx_buf *b, const struct sim_metrics *m, const struct sim_config *c,
                          const struct sim_sched_stats *st)
{
        _cleanup_free_ char *l = xasprintf("model_name=\"%s\"", c->served_name);
        double cr = (double)m->created_us / 1e6;

        gauge(b, "sglang:num_running_reqs", "The number of running requests.", l, (double)st->running);
        gauge(b, "sglang:num_queue_reqs", "The number of requests in the waiting queue.", l,
              (double)st->waiting);
        gauge(b, "sglang:token_usage", "The token usage.", l, st->kv_usage);
        counter(b, "sglang:prompt_tokens", "Number of prefill tokens processed.", l,
                (double)m->prompt_tokens, cr);
        counter(b, "sglang:generation_tokens", "Number of generation tokens processed.", l,
                (double)m->generation_tokens, cr);
        histogram(b, "sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", l,
                  &m->ttft, cr);
        histogram(b, "sglang:e2e_request_latency_seconds",
                  "Histogram of End-to-end request latency in seconds", l, &m->e2e, cr);
}

/*
 * metrics-malformed: the generated-token counter's sample line cut before its closing brace (or, without
 * labels, before its value), as a truncated write leaves it; every other line as usual.
 */
static void cut_sample(char *text, const char *name)
{
        size_t len = strlen(name);

        for (char *p = text; *p;) {
                char *nl = p + strcspn(p, "\n"), *cut;

                if (strncmp(p, name, len) == 0 && (p[len] == '{' || p[len] == ' ')) {
                        cut = p[len] == '{' ? memchr(p, '}', (size_t)(nl - p)) : p + len;
                        if (cut)
                                memmove(cut, nl, strlen(nl) + 1);
                        return;
                }
                if (!*nl)
                        return;
                p = nl + 1;
        }
}

char *sim_metrics_render(const struct sim_metrics *m, const struct sim_config *c,
                         const struct sim_sched_stats *st)
{
        static const char *const generated[_SIM_FLAVOR_MAX] = {
                [SIM_FLAVOR_VLLM] = "vllm:generation_tokens_total",
                [SIM_FLAVOR_LLAMA] = "llamacpp:tokens_predicted_total",
                [SIM_FLAVOR_SGLANG] = "sglang:generation_tokens_total",
        };
        struct mx_buf b = MX_BUF_INIT;
        char *text;

        switch (c->flavor) {
        case SIM_FLAVOR_LLAMA:
                render_llama(&b, m, c, st);
                break;
        case SIM_FLAVOR_SGLANG:
                render_sglang(&b, m, c, st);
                break;
        default:
                render_vllm(&b, m, c, st);
                break;
        }
        text = mx_buf_steal(&b);
        if (sim_fault_on(&c->faults, SIM_FAULT_METRICS_MALFORMED) && c->flavor < _SIM_FLAVOR_MAX)
                cut_sample(text, generated[c->flavor]);
        return text;
}
