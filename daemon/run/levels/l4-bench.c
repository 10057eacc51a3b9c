/* SPDX-License-Identifier: MIT */
/*
 * L4 benchmark (seed 001 Level 4, seed 002's workload): the benchmark engine
 * (bench.h: llama-benchy's pp/tg rows, vllm bench serve's distributions,
 * every request checked for its exact token counts) against the ready
 * server with the run's model, its settings from the level's.
 *
 * While it measures, the server's memory is sampled through the level
 * context's mem_sample hook: at the start, between requests (when the engine
 * starts a run, at most every memory_interval) and at the end; never while a
 * request streams, because reading /proc on the loop that stamps the events
 * would delay the stamps it is measuring. Then the level goes pending: its numbers are final only once the
 * kernel gate (L1.5) has spoken, which happens after the stop, and the
 * driver runs the levels' after_stop in the seed's order, so L1.5's verdict
 * is known here. The files written then say the same as the database.
 *
 * The metrics are a contract other parts build on (the success criteria,
 * the reports, L5): the engine's result document (mx_bench_result_json)
 * plus "ready_s" (the server's startup time), "memory" (the samples'
 * summary in one figure kind, memtrack.h: figure, start, end, peak, drift,
 * source, samples), "valid"
 * (false when the kernel gate failed or could not verify the kernel path:
 * the numbers are stored but never used as a pass) and "kernel_gate" (L1.5's
 * verdict, or "not run"). Verdict: pass when every measured request passed,
 * invalid under a failed gate, fail with the failed requests named. Evidence
 * in the run directory: l4-bench.json (the metrics) and l4-results.yaml
 * (seed 002's Results block, bench-yaml.h).
 */
#include "bench-yaml.h"
#include "bench.h"
#include "http.h"
#include "levels.h"
#include "logcap.h"
#include "l4-valid.h"
#include "memtrack.h"

#include <event2/event.h>
#include <stdio.h>

struct l4 {
        struct mx_level base;
        struct mx_bench *bench;
        struct mx_mem_track mem;
        unsigned mem_samples;
        int mem_error;       /* the last sample's error, or 0 */
        const char *mem_source;
        int64_t mem_last_us; /* monotonic time of the last sample */
        json_t *result;      /* the engine's document once it is done */
        char *reason;        /* why the benchmark could not go on, or NULL */
        bool measured;       /* the engine finished (with or without failed requests) */
        struct mx_sample_summary gpu; /* the sampler's window over the measurement */
        bool has_gpu;
};

static void mem_take(struct l4 *s)
{
        const struct mx_level_ctx *ctx = s->base.ctx;
        struct mx_mem_sample m = {};
        int q;

        if (!ctx->mem_sample)
                return;
        s->mem_last_us = mx_now_mono_us();
        q = ctx->mem_sample(ctx->mem_ud, &m);
        if (q < 0) {
                s->mem_error = q;
                return;
        }
        mx_mem_track_add(&s->mem, &m);
        s->mem_source = m.source;
        s->mem_samples++;
}

/*
 * The samples' summary in one figure kind that the first and the last sample
 * both carry (memtrack.h): "figure", "start", "end", "peak", "drift", with
 * every kind's own figures under "kinds". Samples of different kinds are
 * never compared.
 */
static json_t *memory_json(struct l4 *s)
{
        json_t *o;

        if (s->mem_samples == 0)
                return json_pack("{s:i,s:s}", "samples", 0, "note",
                                 s->mem_error ? "no memory sample could be taken" : "no memory sample taken");
        o = mx_mem_track_json(&s->mem);
        if (json_is_string(json_object_get(o, "figure"))) {
                json_object_set(o, "start", json_object_get(o, "first"));
                json_object_set(o, "end", json_object_get(o, "last"));
        }
        if (s->mem.k[MX_MEM_PSS].n > 0)
                json_object_set_new(o, "server_peak", json_integer(s->mem.k[MX_MEM_PSS].peak));
        if (s->mem.k[MX_MEM_SYSTEM].n > 0)
                json_object_set_new(o, "sys_used_peak", json_integer(s->mem.k[MX_MEM_SYSTEM].peak));
        json_object_set_new(o, "source", s->mem_source ? json_string(s->mem_source) : json_null());
        return o;
}

/* The metrics as they stand: the engine's document plus startup time, memory and validity. */
static json_t *l4_metrics_with(struct l4 *s, bool valid, const char *gate)
{
        json_t *m = s->result  ? json_deep_copy(s->result)
                    : s->bench ? mx_bench_result_json(s->bench)
                               : json_object();

        if (s->base.ctx->ready_s > 0)
                json_object_set_new(m, "ready_s", json_real(s->base.ctx->ready_s));
        else
                json_object_set_new(m, "ready_s", json_null());
        json_object_set_new(m, "memory", memory_json(s));
        json_object_set_new(m, "valid", json_boolean(valid));
        json_object_set_new(m, "kernel_gate", json_string(gate));
        return m;
}

static json_t *l4_metrics(struct mx_level *l)
{
        return l4_metrics_with((struct l4 *)l, true, "not decided");
}

static int l4_new(const struct mx_level_ctx *ctx, struct mx_level **ret, char **reterr)
{
        struct l4 *s = xcalloc(1, sizeof(*s));

        (void)reterr;
        (void)ctx;
        mx_mem_track_init(&s->mem);
        *ret = &s->base;
        return 0;
}

static size_t ints_setting(json_t *settings, const char *name, int64_t *v, size_t max)
{
        json_t *a = json_object_get(settings, name), *e;
        size_t i, n = 0;

        json_array_foreach (a, i, e)
                if (n < max)
                        v[n++] = json_integer_value(e);
        return n;
}

/* The engine's configuration from the level's settings (levelcat.c: L4). */
static void bench_config(const struct mx_level_ctx *ctx, int64_t level_ms, struct mx_bench_config *c)
{
        json_t *st = ctx->settings;
        int64_t req_ms = json_integer_value(json_object_get(st, "request_timeout"));

        mx_bench_config_defaults(c);
        c->url = ctx->url;
        c->api_key = ctx->api_key; /* the profile's bearer token (mxmatrix.json(5)) */
        c->model = ctx->model;
        c->n_pp = ints_setting(st, "pp", c->pp, MX_BENCH_LIST_MAX);
        c->n_tg = ints_setting(st, "tg", c->tg, MX_BENCH_LIST_MAX);
        c->n_depth = ints_setting(st, "depth", c->depth, MX_BENCH_LIST_MAX);
        c->runs = (unsigned)json_integer_value(json_object_get(st, "runs"));
        c->warmup = (unsigned)json_integer_value(json_object_get(st, "warmup"));
        c->concurrency = (unsigned)json_integer_value(json_object_get(st, "concurrency"));
        c->llama_bench_style = json_is_true(json_object_get(st, "llama_bench_style"));
        c->latency_mode =
                mx_bench_latency_mode_from_string(json_string_value(json_object_get(st, "latency_mode")));
        /* One request never outlives the level; the driver's timer ends the level itself. */
        c->timeout_ms = MX_MIN(req_ms > 0 ? req_ms : MX_BENCH_TIMEOUT_DEFAULT_MS, level_ms);
        c->timeout_ms = MX_MIN(c->timeout_ms, MX_HTTP_TIMEOUT_MAX_MS);
        c->seed = (uint64_t)json_integer_value(json_object_get(st, "seed"));
        c->temperature = json_number_value(json_object_get(st, "temperature"));
        c->top_p = json_number_value(json_object_get(st, "top_p"));
        c->sampling_seed = json_integer_value(json_object_get(st, "sampling_seed"));
}

static void progress_cb(void *ud, const char *line)
{
        struct l4 *s = ud;
        int64_t every = json_integer_value(json_object_get(s->base.ctx->settings, "memory_interval"));

        /* a run or warm-up is about to start: nothing is in flight, the stamps cannot be delayed */
        if ((strstr(line, ": run ") || strstr(line, ": warm-up ")) &&
            mx_now_mono_us() - s->mem_last_us >= every * 1000)
                mem_take(s);
        if (s->base.ctx->log)
                logcap_note(s->base.ctx->log, "L4: %s", line);
}

static void bench_done_cb(struct mx_bench *b, int error, const char *reason, void *ud)
{
        struct l4 *s = ud;

        mem_take(s);
        if (s->base.ctx->gpu_window) {
                const struct mx_sample_summary *w = s->base.ctx->gpu_window(s->base.ctx->mem_ud, false);

                if (w) {
                        s->gpu = *w;
                        s->has_gpu = true;
                }
        }
        s->result = mx_bench_result_json(b);
        s->measured = error >= 0;
        if (error < 0)
                s->reason = xstrdup(reason ? reason : strerror(-error));
        mx_level_pending(&s->base);
}

static void l4_run(struct mx_level *l)
{
        struct l4 *s = (struct l4 *)l;
        const struct mx_level_ctx *ctx = l->ctx;
        struct mx_bench_config cfg;
        _cleanup_free_ char *err = NULL;

        /* prompts are built to exact token counts with the server's tokenizer, the fallback for missing usage too */
        if (mx_level_fail_on_assumptions(l, (const char *const[]){ "api_key", "tokenize", NULL }))
                return;
        bench_config(ctx, mx_level_timeout_ms(l), &cfg);
        if (mx_bench_new(ctx->base, &cfg, &s->bench, &err) < 0 ||
            mx_bench_start(s->bench, bench_done_cb, progress_cb, s) < 0) {
                mx_level_finish(l, MX_VERDICT_FAIL, l4_metrics(l), NULL, "the benchmark cannot start: %s",
                                err ? err : "the engine refused its configuration");
                return;
        }
        if (ctx->gpu_window)
                (void)ctx->gpu_window(ctx->mem_ud, true); /* the GPU's state from the first request on */
        mem_take(s); /* before the first request */
}

static void l4_cancel(struct mx_level *l)
{
        struct l4 *s = (struct l4 *)l;

        /* Keep what was measured for the metrics of the verdict the driver records. */
        if (s->bench && !s->result)
                s->result = mx_bench_result_json(s->bench);
        s->bench = mx_bench_free(s->bench);
}

/* "3 of 20 requests failed: pp2048 tg32 run 2: ..., ...": the first few named. */
static char *failures_text(json_t *result)
{
        json_t *f = json_object_get(result, "failures"), *e;
        struct mx_buf b = MX_BUF_INIT;
        size_t i;

        mx_buf_printf(&b, "%" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT " requests failed",
                      json_integer_value(json_object_get(result, "failed")),
                      json_integer_value(json_object_get(result, "measured")));
        json_array_foreach (f, i, e) {
                if (i == 3) {
                        mx_buf_printf(&b, "; %zu more in l4-bench.json", json_array_size(f) - 3);
                        break;
                }
                mx_buf_printf(&b, "%s %s run %" JSON_INTEGER_FORMAT ": %s", i ? ";" : ":",
                              strna(json_string_value(json_object_get(e, "test"))),
                              json_integer_value(json_object_get(e, "run")),
                              strna(json_string_value(json_object_get(e, "error"))));
        }
        return mx_buf_steal(&b);
}

/* "tg32 61.20 t/s, pp2048 4800.1 t/s, TTFT p50 420.1 ms": the headline of a pass. */
static char *headline(json_t *m)
{
        json_t *thr = json_object_get(json_object_get(m, "results"), "throughput"), *v;
        json_t *ttft =
                json_object_get(json_object_get(json_object_get(m, "results"), "latency"), "ttft_p50_ms");
        struct mx_buf b = MX_BUF_INIT;
        const char *k;
        bool first = true;

        json_object_foreach (thr, k, v) {
                if (!json_is_number(v))
                        continue;
                mx_buf_printf(&b, "%s%.*s %.1f t/s", first ? "" : ", ", (int)(strlen(k) - strlen("_tps")), k,
                              json_number_value(v));
                first = false;
        }
        if (json_is_number(ttft))
                mx_buf_printf(&b, "%sTTFT p50 %.1f ms", first ? "" : ", ", json_number_value(ttft));
        mx_buf_printf(&b, " (%" JSON_INTEGER_FORMAT " requests)",
                      json_integer_value(json_object_get(m, "measured")));
        return mx_buf_steal(&b);
}

/* Write one evidence file into the run directory; its artifact entry, or NULL (logged) when it fails. */
static json_t *write_artifact(struct l4 *s, const char *name, const char *text, const char *what)
{
        const struct mx_level_ctx *ctx = s->base.ctx;
        _cleanup_free_ char *path = xasprintf("%s/%s", ctx->run_dir, name);
        _cleanup_fclose_ FILE *f = fopen(path, "we");

        if (!f || fputs(text, f) < 0 || fflush(f) != 0) {
                if (ctx->log)
                        logcap_note(ctx->log, "L4: cannot write %s: %m", path);
                return NULL;
        }
        return json_pack("{s:s,s:s,s:s}", "name", name, "path", name, "what", what);
}

static void l4_after_stop(struct mx_level *l, const struct mx_level_stop *st)
{
        struct l4 *s = (struct l4 *)l;
        enum mx_verdict gate = MX_VERDICT_SKIPPED;
        bool have_gate = mx_level_sibling(l, "L1.5", &gate, NULL) >= 0;
        bool gate_ok = !have_gate || (gate != MX_VERDICT_FAIL && gate != MX_VERDICT_INVALID);
        _cleanup_free_ char *gpu_why = NULL;
        json_t *gpu_checks = NULL;
        bool gpu_ok = mx_l4_gpu_valid(s->has_gpu ? &s->gpu : NULL,
                                      json_number_value(json_object_get(l->ctx->settings, "clock_tolerance_pct")),
                                      &gpu_why, &gpu_checks);
        bool valid = gate_ok && gpu_ok;
        _cleanup_json_ json_t *m =
                l4_metrics_with(s, valid, have_gate ? mx_verdict_to_string(gate) : "not run");
        _cleanup_free_ char *json_text = NULL, *yaml = NULL, *why = NULL;
        json_t *arts = json_array(), *a;
        unsigned failed = (unsigned)json_integer_value(json_object_get(m, "failed"));

        (void)st;
        json_object_set_new(m, "gpu_checks", gpu_checks);
        if (!valid)
                json_object_set_new(m, "invalid_because",
                                    json_string_nocheck(!gate_ok ? "the kernel gate (L1.5) failed"
                                                                 : strna(gpu_why)));
        /* the artifact is the level's metrics whole, why it is invalid included */
        json_text = json_dumps(m, JSON_INDENT(1) | JSON_SORT_KEYS);
        yaml = mx_bench_results_yaml(m);
        if ((a = write_artifact(
                     s, "l4-bench.json", json_text ? json_text : "{}",
                     "the benchmark's full result: every row, distribution, definition and memory")))
                json_array_append_new(arts, a);
        if ((a = write_artifact(s, "l4-results.yaml", yaml, "seed 002's Results block")))
                json_array_append_new(arts, a);
        if (!s->measured && s->reason)
                why = xasprintf("the benchmark could not finish: %s", s->reason);
        else if (failed > 0)
                why = failures_text(m);
        if (!gate_ok) {
                mx_level_finish(l, MX_VERDICT_INVALID, json_incref(m), arts,
                                "%s%sthe kernel gate (L1.5) says %s: these benchmark numbers are invalid",
                                strempty(why), why ? "; " : "", mx_verdict_to_string(gate));
                return;
        }
        if (!gpu_ok) {
                mx_level_finish(l, MX_VERDICT_INVALID, json_incref(m), arts,
                                "%s%sthe GPU measured something else: %s; these benchmark numbers are invalid",
                                strempty(why), why ? "; " : "", gpu_why);
                return;
        }
        if (why) {
                mx_level_finish(l, MX_VERDICT_FAIL, json_incref(m), arts, "%s", why);
                return;
        }
        why = headline(m);
        mx_level_finish(l, MX_VERDICT_PASS, json_incref(m), arts, "%s", why);
}

static void l4_free(struct mx_level *l)
{
        struct l4 *s = (struct l4 *)l;

        mx_bench_free(s->bench);
        json_decref(s->result);
        free(s->reason);
        free(s);
}

const struct mx_level_ops mx_level_l4_ops = {
        .name = "L4",
        .new = l4_new,
        .run = l4_run,
        .cancel = l4_cancel,
        .after_stop = l4_after_stop,
        .metrics = l4_metrics,
        .free = l4_free,
};
