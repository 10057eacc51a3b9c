/* SPDX-License-Identifier: MIT */
/*
 * The llama-server personality (target-surfaces.md §B): it listens at once and
 * answers /health with 503 {"error":{"code":503,"message":"Loading model",
 * "type":"unavailable_error"}} until the model is loaded, then 200
 * {"status":"ok"}; native /completion plus the OpenAI routes; llama.cpp's log
 * lines on stderr. One process: the "GPU" lock is taken by the server itself.
 */
#include "sim.h"

#include <inttypes.h>
#include <signal.h>

struct llama {
        struct sim_server srv;
        struct sim_config *cfg;
        struct sim_inproc *ip;
        bool loaded;
        int listen_fd, lock_fd, port;
        int exit_code;
        uint64_t tasks;
        struct event *load_ev, *sig_term, *sig_int;
};

static struct llama *from_srv(struct sim_server *s)
{
        return (struct llama *)s;
}

#define LOG(...) sim_print_raw(STDERR_FILENO, __VA_ARGS__)

static void crash_text(enum sim_crash kind)
{
        if (kind == SIM_CRASH_SEGFAULT)
                return; /* dies without a word; the shell says "Segmentation fault" */
        LOG("/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:88: CUDA error");
        LOG("CUDA error: %s", kind == SIM_CRASH_LAUNCH_FAILURE ? "unspecified launch failure"
                                                               : "an illegal instruction was encountered");
        LOG("  current device: 0, in function ggml_backend_cuda_synchronize at "
            "/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:2628");
        LOG("  cudaStreamSynchronize(cuda_ctx->stream())");
}

static void h_health(struct sim_server *s, struct evhttp_request *req)
{
        if (!from_srv(s)->loaded) {
                s->unavailable(s, req);
                return;
        }
        if (sim_faults_health_503(&s->cfg->faults, s->completions_done)) {
                sim_reply_json(s, req, 503,
                               json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 503, "message",
                                         "no slot available", "type", "unavailable_error"));
                return;
        }
        sim_reply_json(s, req, 200, json_pack("{s:s}", "status", "ok"));
}

static void unavailable(struct sim_server *s, struct evhttp_request *req)
{
        sim_reply_json(s, req, 503,
                       json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 503, "message", "Loading model",
                                 "type", "unavailable_error"));
}

/* Every route but /health answers 503 while loading, as llama-server's middleware does. */
#define GUARD(s, req)                                                                                       \
        do {                                                                                                \
                if (!from_srv(s)->loaded) {                                                                 \
                        unavailable(s, req);                                                                \
                        return;                                                                             \
                }                                                                                           \
        } while (0)

static void h_native(struct sim_server *s, struct evhttp_request *req)
{
        sim_completion_handle(s, req, SIM_API_LLAMA_NATIVE);
}

static void h_completions(struct sim_server *s, struct evhttp_request *req)
{
        sim_completion_handle(s, req, SIM_API_COMPLETIONS);
}

static void h_chat(struct sim_server *s, struct evhttp_request *req)
{
        sim_completion_handle(s, req, SIM_API_CHAT);
}

static void h_models(struct sim_server *s, struct evhttp_request *req)
{
        GUARD(s, req);
        sim_handle_models(s, req);
}

static void h_tokenize(struct sim_server *s, struct evhttp_request *req)
{
        GUARD(s, req);
        sim_handle_tokenize(s, req);
}

static void h_detokenize(struct sim_server *s, struct evhttp_request *req)
{
        GUARD(s, req);
        sim_handle_detokenize(s, req);
}

static void h_props(struct sim_server *s, struct evhttp_request *req)
{
        GUARD(s, req);
        sim_reply_json(s, req, 200,
                       json_pack("{s:{s:I,s:f,s:i,s:f},s:I,s:s,s:s,s:s,s:b}", "default_generation_settings",
                                 "n_ctx", (json_int_t)s->cfg->max_model_len, "temperature", 0.8, "top_k", 40,
                                 "top_p", 0.95, "total_slots", (json_int_t)s->cfg->max_num_seqs,
                                 "model_path", s->cfg->model, "chat_template", "{# gpt-oss harmony #}",
                                 "build_info", "b6153-0a6a1d3c", "is_sleeping", false));
}

static void h_metrics(struct sim_server *s, struct evhttp_request *req)
{
        struct sim_sched_stats st = {};
        _cleanup_free_ char *text = NULL;

        if (!s->cfg->metrics) {
                sim_reply_json(
                        s, req, 501,
                        json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 501, "message",
                                  "This server does not support metrics endpoint. Start it with `--metrics`",
                                  "type", "not_supported_error"));
                return;
        }
        GUARD(s, req);
        sim_inproc_stats(from_srv(s)->ip, &st);
        text = sim_metrics_render(&s->metrics, s->cfg, &st);
        sim_reply_text(s, req, 200, "text/plain; version=0.0.4", text);
}

static const struct sim_route routes[] = {
        {"/health", SIM_GET, h_health},
        {"/v1/health", SIM_GET, h_health},
        {"/completion", SIM_POST, h_native},
        {"/completions", SIM_POST, h_native},
        {"/v1/completions", SIM_POST, h_completions},
        {"/chat/completions", SIM_POST, h_chat},
        {"/v1/chat/completions", SIM_POST, h_chat},
        {"/models", SIM_GET, h_models},
        {"/v1/models", SIM_GET, h_models},
        {"/tokenize", SIM_POST, h_tokenize},
        {"/detokenize", SIM_POST, h_detokenize},
        {"/props", SIM_GET, h_props},
        {"/metrics", SIM_GET, h_metrics},
};

static void access_log(struct sim_server *s, struct evhttp_request *req, int status)
{
        _cleanup_free_ char *peer = sim_http_peer(req);
        char *colon = strrchr(peer, ':');

        if (colon)
                *colon = '\0';
        LOG("srv  log_server_r: request: %s %s %s %d", sim_http_method(req), evhttp_request_get_uri(req),
            peer, status);
}

static void finished(struct sim_server *s, const struct sim_completion *c)
{
        struct llama *l = from_srv(s);
        struct sim_sched_stats st = {};

        sim_metrics_record(&s->metrics, &c->sum);
        if (sim_faults_metrics_reset(&s->cfg->faults, s->completions_done)) {
                sim_inproc_stats(l->ip, &st);
                sim_metrics_maybe_restart(&s->metrics, s->cfg, s->completions_done, &st);
        }
        LOG("slot      release: id  0 | task %" PRIu64 " | stop processing: n_past = %" PRId64
            ", truncated = 0",
            l->tasks, c->sum.prompt_tokens + c->sum.completion_tokens);
        LOG("slot print_timing: id  0 | task %" PRIu64 " | prompt eval time = %10.2f ms / %5" PRId64
            " tokens",
            l->tasks, c->sum.ttft_s * 1000.0, c->sum.prompt_tokens);
        if (s->n_completions <= 1)
                LOG("srv  update_slots: all slots are idle");
}

static void load_done_cb(evutil_socket_t fd, short what, void *arg)
{
        struct llama *l = arg;

        LOG("srv    load_model: initializing slots, n_slots = %" PRId64, l->cfg->max_num_seqs);
        LOG("slot   load_model: id  0 | task -1 | new slot n_ctx_slot = %" PRId64, l->cfg->max_model_len);
        LOG("main: model loaded");
        LOG("main: chat template, chat_template: gpt-oss, example_format: '<|start|>system<|message|>You "
            "are a "
            "helpful assistant<|end|><|start|>user<|message|>Hello<|end|>'");
        LOG("main: server is listening on http://%s:%d - starting the main loop", l->cfg->host, l->port);
        LOG("srv  update_slots: all slots are idle");
        l->loaded = true;
        l->srv.gen = sim_inproc_generator(l->ip);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
        struct llama *l = arg;

        LOG("srv    operator(): operator(): cleaning up before exit...");
        l->exit_code = 0;
        event_base_loopexit(l->srv.base, NULL);
}

/* Fail the load as llama.cpp does when the GPU memory is taken; exit 1. */
static int load_failure(struct llama *l, const char *why)
{
        LOG("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 61440.00 MiB on device 0: cudaMalloc "
            "failed: "
            "out of memory");
        LOG("alloc_tensor_range: failed to allocate CUDA0 buffer of size 64424509440");
        LOG("llama_model_load: error loading model: unable to allocate CUDA0 buffer (%s)", why);
        LOG("llama_model_load_from_file_impl: failed to load model");
        LOG("srv    load_model: failed to load model, '%s'", l->cfg->model);
        LOG("srv    operator(): operator(): cleaning up before exit...");
        LOG("main: exiting due to model loading error");
        return 1;
}

static int start(struct llama *l)
{
        struct sim_config *c = l->cfg;
        _cleanup_free_ char *err = NULL;
        double load = sim_fault_on(&c->faults, SIM_FAULT_SLOW_START) ? c->faults.value[SIM_FAULT_SLOW_START]
                                                                     : c->load_s;
        int r;

        LOG("build: 6153 (0a6a1d3c) with cc (Debian 12.2.0-14) 12.2.0 for aarch64-linux-gnu");
        LOG("system info: n_threads = 20, n_threads_batch = 20, total_threads = 20");
        LOG("main: binding port with default address family");
        r = sim_http_bind(c->host, c->port, &l->listen_fd, &err);
        if (r < 0) {
                LOG("main: couldn't bind HTTP server socket, hostname: %s, port: %d (%s)", c->host, c->port,
                    err);
                return 1;
        }
        l->port = sim_http_bound_port(l->listen_fd);
        if (sim_http_listen(&l->srv, l->listen_fd, &err) < 0) {
                LOG("main: %s", err);
                return 1;
        }
        LOG("main: HTTP server is listening, hostname: %s, port: %d, http threads: 19", c->host, l->port);
        LOG("main: loading model");
        LOG("srv    load_model: loading model '%s'", c->model);
        LOG("ggml_cuda_init: found 1 CUDA devices:");
        LOG("  Device 0: NVIDIA GB10, compute capability 12.1, VMM: yes");
        r = sim_gpu_lock(c, &l->lock_fd);
        if (r == -EWOULDBLOCK || sim_fault_on(&c->faults, SIM_FAULT_OOM_AT_START))
                return load_failure(l, r == -EWOULDBLOCK ? "the GPU's memory is held by another process"
                                                         : "oom-at-start");
        if (r < 0) {
                LOG("main: cannot open %s: %s", c->lock_path, strerror(-r));
                return 1;
        }
        if (sim_fault_on(&c->faults, SIM_FAULT_CRASH_AT_START)) {
                crash_text(SIM_CRASH_ILLEGAL_INSTRUCTION);
                sim_crash_die(SIM_CRASH_ILLEGAL_INSTRUCTION);
        }
        LOG("llama_model_loader: loaded meta data with 35 key-value pairs and 687 tensors from %s (version "
            "GGUF "
            "V3 (latest))",
            c->model);
        LOG("load_tensors: offloaded 37/37 layers to GPU");
        if (sim_fault_on(&c->faults, SIM_FAULT_HANG_START))
                return 0; /* never loaded: /health stays 503 */
        l->load_ev = evtimer_new(l->srv.base, load_done_cb, l);
        struct timeval tv = sim_timeval(load);
        evtimer_add(l->load_ev, &tv);
        return 0;
}

int sim_llama_main(struct sim_config *c)
{
        struct llama l = {.cfg = c, .listen_fd = -1, .lock_fd = -1, .exit_code = 1};
        int r;

        sim_log_set_process(SIM_FLAVOR_LLAMA, NULL);
        signal(SIGPIPE, SIG_IGN);
        l.srv = (struct sim_server){.cfg = c,
                                    .routes = routes,
                                    .n_routes = ELEMENTSOF(routes),
                                    .access_log = access_log,
                                    .finished = finished,
                                    .unavailable = unavailable};
        sim_metrics_init(&l.srv.metrics);
        l.srv.base = sim_event_base_new();
        if (!l.srv.base)
                mx_die("event_base_new failed");
        sim_http_init(&l.srv);
        l.ip = sim_inproc_new(l.srv.base, c, 1.9,
                              crash_text); /* llama.cpp decodes ~2x vLLM-Marlin (seed 001) */
        if (sim_fault_on(&c->faults, SIM_FAULT_HANG_STOP)) {
                signal(SIGTERM, SIG_IGN);
                signal(SIGINT, SIG_IGN);
        } else {
                l.sig_term = evsignal_new(l.srv.base, SIGTERM, signal_cb, &l);
                l.sig_int = evsignal_new(l.srv.base, SIGINT, signal_cb, &l);
                evsignal_add(l.sig_term, NULL);
                evsignal_add(l.sig_int, NULL);
        }
        r = start(&l);
        if (r == 0)
                event_base_dispatch(l.srv.base);
        else
                l.exit_code = r;

        sim_completion_abort_all(&l.srv);
        l.srv.gen = NULL;
        sim_http_done(&l.srv);
        l.ip = sim_inproc_free(l.ip);
        struct event *evs[] = {l.load_ev, l.sig_term, l.sig_int};
        for (size_t i = 0; i < ELEMENTSOF(evs); i++)
                if (evs[i])
                        event_free(evs[i]);
        event_base_free(l.srv.base);
        if (l.listen_fd >= 0 && !l.srv.listening)
                close(l.listen_fd); /* once listening, evhttp owned and closed it */
        if (l.lock_fd >= 0)
                close(l.lock_fd);
        return l.exit_code;
}
