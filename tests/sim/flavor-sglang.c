/* SPDX-License-Identifier: MIT */
/*
 * The SGLang personality (target-surfaces.md §C): connection refused while the
 * model loads, then uvicorn listens while a warm-up request runs, during which
 * /health and /health_generate answer 503 (ServerStatus.Starting); "The server
 * is fired up and ready to roll!" marks readiness. One process here; SGLang's
 * scheduler lines carry the " TP0" tag.
 */
#include "sim.h"

#include <inttypes.h>
#include <signal.h>

struct sglang {
        struct sim_server srv;
        struct sim_config *cfg;
        struct sim_inproc *ip;
        bool ready;
        int listen_fd, lock_fd, port;
        int exit_code;
        struct event *load_ev, *warm_ev, *sig_term, *sig_int;
};

static struct sglang *from_srv(struct sim_server *s)
{
        return (struct sglang *)s;
}

/* "[2026-01-10 12:00:00 TP0] message" (tp) or "[2026-01-10 12:00:00] message". */
_printf_(2, 3) static void slog(bool tp, const char *fmt, ...)
{
        _cleanup_free_ char *when = sim_log_time("%Y-%m-%d %H:%M:%S"), *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        msg = xvasprintf(fmt, ap);
        va_end(ap);
        sim_print_raw(STDERR_FILENO, "[%s%s] %s", when, tp ? " TP0" : "", msg);
}

static void crash_text(enum sim_crash kind)
{
        if (kind == SIM_CRASH_SEGFAULT) {
                sim_print_raw(STDERR_FILENO, "Fatal Python error: Segmentation fault");
                return;
        }
        slog(true, "Scheduler hit an exception: Traceback (most recent call last):");
        sim_print_raw(STDERR_FILENO,
                      "  File \"/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py\", "
                      "line 2712, in run_scheduler_process");
        sim_print_raw(STDERR_FILENO, "torch.AcceleratorError: CUDA error: %s",
                      kind == SIM_CRASH_LAUNCH_FAILURE ? "unspecified launch failure"
                                                       : "an illegal instruction was encountered");
        slog(false, "Received sigquit from a child process. It usually means the child failed.");
}

static void unavailable(struct sim_server *s, struct evhttp_request *req)
{
        sim_reply_text(s, req, 503, "application/json", "");
}

static void h_health(struct sim_server *s, struct evhttp_request *req)
{
        bool ok = from_srv(s)->ready && !sim_faults_health_503(&s->cfg->faults, s->completions_done);

        sim_reply_text(s, req, ok ? 200 : 503, "application/json", "");
}

static void h_model_info(struct sim_server *s, struct evhttp_request *req)
{
        sim_reply_json(s, req, 200,
                       json_pack("{s:s,s:s,s:b,s:n}", "model_path", s->cfg->model, "tokenizer_path",
                                 s->cfg->model, "is_generation", true, "preferred_sampling_params"));
}

static void h_server_info(struct sim_server *s, struct evhttp_request *req)
{
        sim_reply_json(s, req, 200,
                       json_pack("{s:s,s:s,s:i,s:I,s:s}", "model_path", s->cfg->model, "host", s->cfg->host,
                                 "port", from_srv(s)->port, "context_length",
                                 (json_int_t)s->cfg->max_model_len, "version", "0.5.4"));
}

static void h_generate(struct sim_server *s, struct evhttp_request *req)
{
        sim_completion_handle(s, req, SIM_API_SGLANG_NATIVE);
}

static void h_completions(struct sim_server *s, struct evhttp_request *req)
{
        sim_completion_handle(s, req, SIM_API_COMPLETIONS);
}

static void h_chat(struct sim_server *s, struct evhttp_request *req)
{
        sim_completion_handle(s, req, SIM_API_CHAT);
}

static void h_metrics(struct sim_server *s, struct evhttp_request *req)
{
        struct sim_sched_stats st;
        _cleanup_free_ char *text = NULL;

        if (!s->cfg->metrics) {
                sim_reply_detail(s, req, 404, "Not Found");
                return;
        }
        sim_inproc_stats(from_srv(s)->ip, &st);
        text = sim_metrics_render(&s->metrics, s->cfg, &st);
        sim_reply_text(s, req, 200, "text/plain; version=0.0.4; charset=utf-8", text);
}

static const struct sim_route routes[] = {
        {"/health", SIM_GET, h_health},
        {"/health_generate", SIM_GET, h_health},
        {"/get_model_info", SIM_GET, h_model_info},
        {"/model_info", SIM_GET, h_model_info},
        {"/server_info", SIM_GET, h_server_info},
        {"/get_server_info", SIM_GET, h_server_info},
        {"/v1/models", SIM_GET, sim_handle_models},
        {"/generate", SIM_POST, h_generate},
        {"/v1/completions", SIM_POST, h_completions},
        {"/v1/chat/completions", SIM_POST, h_chat},
        {"/tokenize", SIM_POST, sim_handle_tokenize},
        {"/detokenize", SIM_POST, sim_handle_detokenize},
        {"/metrics", SIM_GET, h_metrics},
};

static void access_log(struct sim_server *s, struct evhttp_request *req, int status)
{
        _cleanup_free_ char *peer = sim_http_peer(req);

        slog(false, "INFO:     %s - \"%s %s HTTP/1.1\" %d %s", peer, sim_http_method(req),
             evhttp_request_get_uri(req), status, sim_http_reason(status));
}

static void finished(struct sim_server *s, const struct sim_completion *c)
{
        sim_metrics_record(&s->metrics, &c->sum);
        sim_metrics_maybe_restart(&s->metrics, s->cfg, s->completions_done, NULL);
        slog(true,
             "Decode batch. #running-req: %zu, #token: %" PRId64 ", token usage: 0.00, cuda graph: %s, "
             "gen throughput (token/s): %.2f, #queue-req: 0",
             s->n_completions, c->sum.prompt_tokens + c->sum.completion_tokens,
             s->cfg->enforce_eager ? "False" : "True",
             c->sum.e2e_s > c->sum.ttft_s ? (double)c->sum.completion_tokens / (c->sum.e2e_s - c->sum.ttft_s)
                                          : 0.0);
}

static void warm_done_cb(evutil_socket_t fd, short what, void *arg)
{
        struct sglang *g = arg;

        slog(true, "Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, "
                   "#running-req: 0, #queue-req: 0");
        slog(false, "INFO:     127.0.0.1:41712 - \"POST /generate HTTP/1.1\" 200 OK");
        slog(false, "The server is fired up and ready to roll!");
        g->ready = true;
}

static void load_done_cb(evutil_socket_t fd, short what, void *arg)
{
        struct sglang *g = arg;
        const struct sim_config *c = g->cfg;
        _cleanup_free_ char *err = NULL;
        double warm = MX_MAX(0.05, g->cfg->load_s * 0.2);

        slog(true,
             "Load weight end. type=GptOssForCausalLM, dtype=torch.bfloat16, avail mem=%.2f GB, mem "
             "usage=%.2f "
             "GB.",
             SIM_GPU_TOTAL_GIB - SIM_MODEL_GIB, SIM_MODEL_GIB);
        slog(true, "KV Cache is allocated. #tokens: %zu, K size: 7.08 GB, V size: 7.08 GB",
             sim_kv_cache_tokens(c));
        if (!c->enforce_eager) {
                slog(true,
                     "Capture cuda graph begin. This can take up to several minutes. avail mem=39.05 GB");
                slog(true,
                     "Capture cuda graph end. Time elapsed: 8.12 s. mem usage=0.45 GB. avail mem=38.60 GB.");
        }
        slog(true,
             "max_total_num_tokens=%zu, chunked_prefill_size=8192, max_prefill_tokens=16384, "
             "max_running_requests=%" PRId64 ", context_len=%" PRId64 ", available_gpu_mem=38.60 GB",
             sim_kv_cache_tokens(c), c->max_num_seqs, c->max_model_len);
        if (sim_http_listen(&g->srv, g->listen_fd, &err) < 0) {
                slog(false, "%s", err);
                g->exit_code = 1;
                event_base_loopexit(g->srv.base, NULL);
                return;
        }
        slog(false, "INFO:     Started server process [%d]", (int)getpid());
        slog(false, "INFO:     Waiting for application startup.");
        slog(false, "INFO:     Application startup complete.");
        slog(false, "INFO:     Uvicorn running on http://%s:%d (Press CTRL+C to quit)", c->host, g->port);
        slog(false, "INFO:     127.0.0.1:41700 - \"GET /get_model_info HTTP/1.1\" 200 OK");
        g->srv.gen = sim_inproc_generator(g->ip);
        if (sim_fault_on(&c->faults, SIM_FAULT_HANG_START))
                return; /* the warm-up never finishes: 503 forever */
        g->warm_ev = evtimer_new(g->srv.base, warm_done_cb, g);
        struct timeval tv = sim_timeval(warm);
        evtimer_add(g->warm_ev, &tv);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
        struct sglang *g = arg;

        slog(false, "INFO:     Shutting down");
        slog(false, "INFO:     Waiting for application shutdown.");
        slog(false, "INFO:     Application shutdown complete.");
        slog(false, "INFO:     Finished server process [%d]", (int)getpid());
        g->exit_code = 0;
        event_base_loopexit(g->srv.base, NULL);
}

static int start(struct sglang *g)
{
        struct sim_config *c = g->cfg;
        _cleanup_free_ char *err = NULL;
        double load = sim_fault_on(&c->faults, SIM_FAULT_SLOW_START) ? c->faults.value[SIM_FAULT_SLOW_START]
                                                                     : c->load_s;
        int r;

        slog(false,
             "server_args=ServerArgs(model_path='%s', tokenizer_path='%s', host='%s', port=%d, "
             "served_model_name='%s', context_length=%" PRId64 ", disable_cuda_graph=%s, "
             "moe_runner_backend='auto')",
             c->model, c->model, c->host, c->port, c->served_name, c->max_model_len,
             c->enforce_eager ? "True" : "False");
        r = sim_http_bind(c->host, c->port, &g->listen_fd, &err);
        if (r < 0) {
                slog(false, "ERROR: %s", err);
                return 1;
        }
        g->port = sim_http_bound_port(g->listen_fd);
        slog(true, "Init torch distributed begin.");
        slog(true, "Load weight begin. avail mem=%.2f GB", SIM_GPU_TOTAL_GIB);
        r = sim_gpu_lock(c, &g->lock_fd);
        if (r == -EWOULDBLOCK || sim_fault_on(&c->faults, SIM_FAULT_OOM_AT_START)) {
                slog(true,
                     "Scheduler hit an exception: torch.OutOfMemoryError: CUDA out of memory. Tried to "
                     "allocate 1.98 GiB. GPU 0 has a total capacity of 119.70 GiB of which 1.21 GiB is "
                     "free.");
                slog(false, "Received sigquit from a child process. It usually means the child failed.");
                return 1;
        }
        if (r < 0) {
                slog(false, "cannot open %s: %s", c->lock_path, strerror(-r));
                return 1;
        }
        slog(true, "Using MARLIN MoE runner backend for MXFP4 on sm121 (sgl-project/sglang#28231).");
        if (sim_fault_on(&c->faults, SIM_FAULT_CRASH_AT_START)) {
                crash_text(SIM_CRASH_ILLEGAL_INSTRUCTION);
                return 1;
        }
        g->load_ev = evtimer_new(g->srv.base, load_done_cb, g);
        struct timeval tv = sim_timeval(load);
        evtimer_add(g->load_ev, &tv);
        return 0;
}

int sim_sglang_main(struct sim_config *c)
{
        struct sglang g = {.cfg = c, .listen_fd = -1, .lock_fd = -1, .exit_code = 1};
        int r;

        sim_log_set_process(SIM_FLAVOR_SGLANG, NULL);
        signal(SIGPIPE, SIG_IGN);
        g.srv = (struct sim_server){.cfg = c,
                                    .routes = routes,
                                    .n_routes = ELEMENTSOF(routes),
                                    .access_log = access_log,
                                    .finished = finished,
                                    .unavailable = unavailable};
        sim_metrics_init(&g.srv.metrics);
        g.srv.base = sim_event_base_new();
        if (!g.srv.base)
                mx_die("event_base_new failed");
        sim_http_init(&g.srv);
        g.ip = sim_inproc_new(g.srv.base, c, 1.75, crash_text); /* SGLang ~52 tok/s vs vLLM 29 (seed 001) */
        if (sim_fault_on(&c->faults, SIM_FAULT_HANG_STOP)) {
                signal(SIGTERM, SIG_IGN);
                signal(SIGINT, SIG_IGN);
        } else {
                g.sig_term = evsignal_new(g.srv.base, SIGTERM, signal_cb, &g);
                g.sig_int = evsignal_new(g.srv.base, SIGINT, signal_cb, &g);
                evsignal_add(g.sig_term, NULL);
                evsignal_add(g.sig_int, NULL);
        }
        r = start(&g);
        if (r == 0)
                event_base_dispatch(g.srv.base);
        else
                g.exit_code = r;

        sim_completion_abort_all(&g.srv);
        g.srv.gen = NULL;
        sim_http_done(&g.srv);
        g.ip = sim_inproc_free(g.ip);
        struct event *evs[] = {g.load_ev, g.warm_ev, g.sig_term, g.sig_int};
        for (size_t i = 0; i < ELEMENTSOF(evs); i++)
                if (evs[i])
                        event_free(evs[i]);
        event_base_free(g.srv.base);
        if (g.listen_fd >= 0 && !g.srv.listening)
                close(g.listen_fd); /* once listening, evhttp owned and closed it */
        if (g.lock_fd >= 0)
                close(g.lock_fd);
        return g.exit_code;
}
