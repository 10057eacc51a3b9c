/* SPDX-License-Identifier: MIT */
/*
 * The vLLM personality's API server (target-surfaces.md §A): start-up log,
 * bind-then-listen readiness, the engine process, the HTTP routes, the
 * periodic stats line, engine death (500s, /health 503, exit 0 after the
 * watchdog: vllm#48966) and graceful SIGTERM/SIGINT.
 */
#include "sim.h"

#include <event2/buffer.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

enum vllm_state {
        VLLM_STARTING,
        VLLM_SERVING,
        VLLM_DEAD,     /* the engine died after start-up; the watchdog will stop us */
        VLLM_STOPPING, /* SIGTERM/SIGINT: waiting for the engine to exit */
};

struct vllm {
        struct sim_server srv;
        struct sim_config *cfg;
        enum vllm_state state;
        pid_t engine_pid;
        bool engine_reaped;
        int listen_fd;
        int port;
        int exit_code;
        bool uvicorn_started;
        struct sim_engine_client *ec;
        struct event *sig_term, *sig_int, *sig_chld;
        struct event *stats_ev, *watchdog_ev, *listen_ev, *kill_ev;
        struct sim_sched_stats last_stats;
        int64_t last_stats_us;
};

static struct vllm *from_srv(struct sim_server *s)
{
        return (struct vllm *)s;
}

/* VLLM_* variables this (patched) vLLM knows; anything else gets the "Unknown" warning. */
static const char *const known_env[] = {
        "VLLM_HOST_IP",
        "VLLM_PORT",
        "VLLM_RPC_BASE_PATH",
        "VLLM_USE_MODELSCOPE",
        "VLLM_RINGBUFFER_WARNING_INTERVAL",
        "VLLM_NCCL_SO_PATH",
        "VLLM_CONFIG_ROOT",
        "VLLM_CACHE_ROOT",
        "VLLM_LOGGING_LEVEL",
        "VLLM_LOGGING_PREFIX",
        "VLLM_LOGGING_CONFIG_PATH",
        "VLLM_CONFIGURE_LOGGING",
        "VLLM_LOGGING_STREAM",
        "VLLM_TRACE_FUNCTION",
        "VLLM_ATTENTION_BACKEND",
        "VLLM_USE_FLASHINFER_SAMPLER",
        "VLLM_PP_LAYER_PARTITION",
        "VLLM_CPU_KVCACHE_SPACE",
        "VLLM_WORKER_MULTIPROC_METHOD",
        "VLLM_ASSETS_CACHE",
        "VLLM_IMAGE_FETCH_TIMEOUT",
        "VLLM_TARGET_DEVICE",
        "VLLM_MAIN_CUDA_VERSION",
        "VLLM_USE_V1",
        "VLLM_ENABLE_V1_MULTIPROCESSING",
        "VLLM_LOG_STATS_INTERVAL",
        "VLLM_TORCH_PROFILER_DIR",
        "VLLM_FLASHINFER_FORCE_TENSOR_CORES",
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN",
        "VLLM_SERVER_DEV_MODE",
        "VLLM_KEEP_ALIVE_ON_ENGINE_DEATH",
        "VLLM_ENGINE_ITERATION_TIMEOUT_S",
        "VLLM_API_KEY",
        "VLLM_DEBUG_LOG_API_SERVER_RESPONSE",
        "VLLM_MXFP4_USE_MARLIN",
        "VLLM_USE_FLASHINFER_MOE_MXFP4_BF16",
        "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8",
        "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8_CUTLASS",
        "VLLM_FLASHINFER_MOE_BACKEND",
        "VLLM_USE_FLASHINFER_MOE_FP4",
        "VLLM_USE_FLASHINFER_MOE_FP8",
        "VLLM_USE_DEEP_GEMM",
        "VLLM_DISABLE_COMPILE_CACHE",
        "VLLM_USE_TRITON_FLASH_ATTN",
        "VLLM_ALLOW_INSECURE_SERIALIZATION",
        "VLLM_B12X_MOE_FP4_FORCE_A16",
        "VLLM_SLEEP_WHEN_IDLE",
        "VLLM_WORKER_MULTIPROC_METHOD",
        "VLLM_ENABLE_CUDAGRAPH_GC",
        "VLLM_USE_AOT_COMPILE",
        /* the user's patched build (seed 001 Phase 7) */
        "VLLM_MXFP4_MOE_KERNEL",
        "VLLM_MXFP4_ACTIVATION",
        "VLLM_USE_ATTENTION_SINKS",
};

static void warn_unknown_env(void)
{
        extern char **environ;

        for (char **e = environ; *e; e++) {
                const char *eq = strchr(*e, '=');
                bool known = false;
                if (!startswith(*e, "VLLM_") || !eq)
                        continue;
                for (size_t i = 0; i < ELEMENTSOF(known_env) && !known; i++)
                        known = strlen(known_env[i]) == (size_t)(eq - *e) && startswith(*e, known_env[i]);
                if (!known)
                        sim_log(SIM_WARNING, "envs.py:1234",
                                "Unknown vLLM environment variable detected: %.*s", (int)(eq - *e), *e);
        }
}

/* Python's repr of a JSON value, for "non-default args: {...}". */
static void py_repr(struct mx_buf *b, json_t *v)
{
        const char *k;
        json_t *e;
        size_t i;

        switch (json_typeof(v)) {
        case JSON_OBJECT:
                mx_buf_putc(b, '{');
                i = 0;
                json_object_foreach(v, k, e) {
                        mx_buf_printf(b, "%s'%s': ", i++ ? ", " : "", k);
                        py_repr(b, e);
                }
                mx_buf_putc(b, '}');
                break;
        case JSON_ARRAY:
                mx_buf_putc(b, '[');
                json_array_foreach(v, i, e) {
                        if (i)
                                mx_buf_puts(b, ", ");
                        py_repr(b, e);
                }
                mx_buf_putc(b, ']');
                break;
        case JSON_STRING:
                mx_buf_printf(b, "'%s'", json_string_value(v));
                break;
        case JSON_INTEGER:
                mx_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                break;
        case JSON_REAL:
                mx_buf_printf(b, "%g", json_real_value(v));
                break;
        case JSON_TRUE:
                mx_buf_puts(b, "True");
                break;
        case JSON_FALSE:
                mx_buf_puts(b, "False");
                break;
        default:
                mx_buf_puts(b, "None");
                break;
        }
}

/* A flag value as argparse would have typed it: int, float (Python's repr), JSON, or a string. */
static void arg_repr(struct mx_buf *b, const char *value)
{
        json_auto_t *j = NULL;
        int64_t n;
        char *end, s[64];
        double d;

        if (!value) {
                mx_buf_puts(b, "True");
                return;
        }
        if (value[0] == '{' || value[0] == '[')
                j = json_loads(value, 0, NULL);
        if (j) {
                py_repr(b, j);
                return;
        }
        if (mx_parse_int64(value, INT64_MIN, INT64_MAX, &n) == 0) {
                mx_buf_printf(b, "%" PRId64, n);
                return;
        }
        errno = 0;
        d = strtod(value, &end);
        if (*value && !*end && !errno && strspn(value, "0123456789.-+eE") == strlen(value)) {
                for (int prec = 1; prec <= 17; prec++) {
                        snprintf(s, sizeof(s), "%.*g", prec, d);
                        if (strtod(s, NULL) == d)
                                break;
                }
                mx_buf_printf(b, "%s%s", s, strpbrk(s, ".e") ? "" : ".0");
                return;
        }
        mx_buf_printf(b, "'%s'", value);
}

static void log_non_default_args(const struct sim_config *c)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        mx_buf_printf(&b, "{'model_tag': '%s'", c->model);
        for (size_t i = 0; i < c->n_args; i++) {
                const struct sim_arg *a = &c->args[i];
                _cleanup_free_ char *name = NULL;
                bool negated = startswith(a->name, "no-") && !a->value;

                if (streq(a->name, "flavor") || startswith(a->name, "mxsim-") || streq(a->name, "model"))
                        continue;
                name = xstrdup(negated ? a->name + 3 : a->name);
                for (char *p = name; *p; p++)
                        if (*p == '-')
                                *p = '_';
                mx_buf_printf(&b, ", '%s': ", name);
                if (negated)
                        mx_buf_puts(&b, "False");
                else
                        arg_repr(&b, a->value);
        }
        mx_buf_printf(&b, ", 'model': '%s'}", c->model);
        sim_log(SIM_INFO, "utils.py:328", "non-default args: %s", b.data);
}

/* ---- HTTP routes ---- */

static bool healthy(struct sim_server *s)
{
        return !s->engine_dead && !sim_faults_health_503(&s->cfg->faults, s->completions_done);
}

static void h_health(struct sim_server *s, struct evhttp_request *req)
{
        sim_reply_text(s, req, healthy(s) ? 200 : 503, "application/json", "");
}

static void h_version(struct sim_server *s, struct evhttp_request *req)
{
        sim_reply_json(s, req, 200, json_pack("{s:s}", "version", s->cfg->version));
}

static void h_load(struct sim_server *s, struct evhttp_request *req)
{
        sim_reply_json(s, req, 200, json_pack("{s:I}", "server_load", (json_int_t)s->n_completions));
}

static void current_stats(struct vllm *v, struct sim_sched_stats *st)
{
        struct sim_server *s = &v->srv;
        size_t kv = sim_kv_cache_tokens(v->cfg), used = 0;

        if (v->ec)
                sim_engine_client_stats(v->ec, st);
        else
                *st = (struct sim_sched_stats){};
        st->running = MX_MIN(s->n_completions, (size_t)v->cfg->max_num_seqs);
        st->waiting = s->n_completions - st->running;
        for (struct sim_completion *c = s->completions; c; c = c->next)
                used += (size_t)c->sum.prompt_tokens;
        st->kv_usage = kv ? MX_MIN(1.0, (double)used / (double)kv) : 0;
}

static void h_metrics(struct sim_server *s, struct evhttp_request *req)
{
        struct sim_sched_stats st;
        _cleanup_free_ char *text = NULL;

        current_stats(from_srv(s), &st);
        text = sim_metrics_render(&s->metrics, s->cfg, &st);
        sim_reply_text(s, req, 200, "text/plain; version=0.0.4; charset=utf-8", text);
}

static void h_completions(struct sim_server *s, struct evhttp_request *req)
{
        sim_completion_handle(s, req, SIM_API_COMPLETIONS);
}

static void h_chat(struct sim_server *s, struct evhttp_request *req)
{
        sim_completion_handle(s, req, SIM_API_CHAT);
}

static void h_openapi(struct sim_server *s, struct evhttp_request *req)
{
        sim_reply_json(s, req, 200,
                       json_pack("{s:s,s:{s:s,s:s},s:{}}", "openapi", "3.1.0", "info", "title", "FastAPI",
                                 "version", "0.1.0", "paths"));
}

/* Only with --profiler-config: without it vLLM registers no such route, and FastAPI answers 404. */
static void h_profile(struct sim_server *s, struct evhttp_request *req)
{
        const char *uri = evhttp_request_get_uri(req);

        if (!s->cfg->profiler) {
                sim_reply_detail(s, req, 404, "Not Found");
                return;
        }
        sim_log(SIM_INFO, "api_server.py:1010", "%s profiler...",
                strstr(uri, "start") ? "Starting" : "Stopping");
        sim_reply_text(s, req, 200, "application/json", "");
}

static const struct sim_route routes[] = {
        {"/openapi.json", SIM_GET, h_openapi},
        {"/health", SIM_GET, h_health},
        {"/load", SIM_GET, h_load},
        {"/ping", SIM_GET | SIM_POST, h_health},
        {"/tokenize", SIM_POST, sim_handle_tokenize},
        {"/detokenize", SIM_POST, sim_handle_detokenize},
        {"/v1/models", SIM_GET, sim_handle_models},
        {"/version", SIM_GET, h_version},
        {"/v1/chat/completions", SIM_POST, h_chat},
        {"/v1/completions", SIM_POST, h_completions},
        {"/metrics", SIM_GET, h_metrics},
        {"/start_profile", SIM_POST, h_profile}, /* these two only with --profiler-config */
        {"/stop_profile", SIM_POST, h_profile},
};

static void access_log(struct sim_server *s, struct evhttp_request *req, int status)
{
        _cleanup_free_ char *peer = NULL;

        if (sim_config_has_arg(s->cfg, "disable-uvicorn-access-log"))
                return;
        peer = sim_http_peer(req);
        sim_print(STDOUT_FILENO, "INFO:     %s - \"%s %s HTTP/1.1\" %d %s", peer, sim_http_method(req),
                  evhttp_request_get_uri(req), status, sim_http_reason(status));
}

static void unavailable(struct sim_server *s, struct evhttp_request *req)
{
        sim_reply_error(s, req, 500, "InternalServerError",
                        "EngineCore encountered an issue. See stack trace (above) for the root cause.");
}

static void finished(struct sim_server *s, const struct sim_completion *c)
{
        struct sim_sched_stats st;

        sim_metrics_record(&s->metrics, &c->sum);
        if (sim_faults_metrics_reset(&s->cfg->faults, s->completions_done)) {
                current_stats(from_srv(s), &st);
                sim_metrics_maybe_restart(&s->metrics, s->cfg, s->completions_done, &st);
        }
}

/* ---- periodic lines and timers ---- */

static void stats_cb(evutil_socket_t fd, short what, void *arg)
{
        struct vllm *v = arg;
        struct sim_metrics *m = &v->srv.metrics;
        struct sim_sched_stats st;
        int64_t now = mx_now_mono_us();
        double dt = (double)(now - m->window_start_us) / 1e6;

        current_stats(v, &st);
        if (dt <= 0)
                dt = 1e-3;
        if (m->window_prompt || m->window_gen || st.running || st.waiting)
                sim_log(SIM_INFO, "loggers.py:123",
                        "Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f "
                        "tokens/s, "
                        "Running: %zu reqs, Waiting: %zu reqs, GPU KV cache usage: %.1f%%, Prefix cache hit "
                        "rate: 0.0%%",
                        (double)m->window_prompt / dt, (double)m->window_gen / dt, st.running, st.waiting,
                        st.kv_usage * 100.0);
        if (v->cfg->spec.method && st.spec_drafts > v->last_stats.spec_drafts) {
                uint64_t drafts = st.spec_drafts - v->last_stats.spec_drafts;
                uint64_t drafted = st.spec_draft_tokens - v->last_stats.spec_draft_tokens;
                uint64_t accepted = st.spec_accepted - v->last_stats.spec_accepted;
                _cleanup_buf_ struct mx_buf pos = MX_BUF_INIT;
                for (int i = 0; i < v->cfg->spec.num_tokens && i < SIM_SPEC_TOKENS_MAX; i++)
                        mx_buf_printf(
                                &pos, "%s%.3f", i ? ", " : "",
                                (double)(st.spec_accepted_pos[i] - v->last_stats.spec_accepted_pos[i]) /
                                        (double)drafts);
                sim_log(SIM_INFO, "metrics.py:96",
                        "SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f "
                        "tokens/s, "
                        "Drafted throughput: %.2f tokens/s, Accepted: %" PRIu64 " tokens, Drafted: %" PRIu64
                        " tokens, Per-position acceptance rate: %s, Avg Draft acceptance rate: %.1f%%",
                        1.0 + (double)accepted / (double)drafts, (double)accepted / dt, (double)drafted / dt,
                        accepted, drafted, pos.data,
                        drafted ? 100.0 * (double)accepted / (double)drafted : 0.0);
        }
        v->last_stats = st;
        m->window_prompt = m->window_gen = 0;
        m->window_start_us = now;
}

static void uvicorn_shutdown_lines(struct vllm *v, bool connections)
{
        sim_print(STDOUT_FILENO, "INFO:     Shutting down");
        if (connections)
                sim_print(STDOUT_FILENO,
                          "INFO:     Waiting for connections to close. (CTRL+C to force quit)");
        sim_print(STDOUT_FILENO, "INFO:     Waiting for application shutdown.");
        sim_print(STDOUT_FILENO, "INFO:     Application shutdown complete.");
        sim_print(STDOUT_FILENO, "INFO:     Finished server process [%d]", (int)getpid());
}

static void stop_loop(struct vllm *v, int code)
{
        v->exit_code = code;
        event_base_loopexit(v->srv.base, NULL);
}

/* vllm/entrypoints/launcher.py :: watchdog_loop, every VLLM_WATCHDOG_TIME_S. */
static void watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
        struct vllm *v = arg;

        if (v->state != VLLM_DEAD || v->cfg->keep_alive_on_engine_death)
                return;
        sim_log(SIM_ERROR, "launcher.py:109", "AsyncLLMEngine has failed, terminating server process");
        sim_completion_abort_all(&v->srv);
        uvicorn_shutdown_lines(v, v->srv.n_completions > 0);
        stop_loop(v, 0); /* vllm#48966: exit status 0 after an engine death */
}

/* The engine exited (or was killed): reap it without blocking. */
static void reap(struct vllm *v)
{
        int status;

        if (v->engine_reaped || v->engine_pid <= 0)
                return;
        if (waitpid(v->engine_pid, &status, WNOHANG) != v->engine_pid)
                return;
        v->engine_reaped = true;
        if (v->state == VLLM_STOPPING) {
                if (v->uvicorn_started)
                        uvicorn_shutdown_lines(v, false);
                stop_loop(v, 0);
        } else if (v->state == VLLM_STARTING && v->ec == NULL) {
                sim_tb_engine_init_failed();
                stop_loop(v, 1);
        }
}

static void sigchld_cb(evutil_socket_t fd, short what, void *arg)
{
        reap(arg);
}

/* Graceful shutdown's last resort: vllm/v1/utils.py :: shutdown kills survivors after the wait. */
static void kill_cb(evutil_socket_t fd, short what, void *arg)
{
        struct vllm *v = arg;

        if (!v->engine_reaped)
                kill(v->engine_pid, SIGKILL);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
        struct vllm *v = arg;

        if (v->state == VLLM_STOPPING)
                return;
        if (v->state != VLLM_STARTING)
                sim_log(SIM_INFO, "launcher.py:80", "Shutting down FastAPI HTTP server.");
        v->state = VLLM_STOPPING;
        sim_completion_abort_all(&v->srv);
        v->srv.gen = NULL;
        if (v->engine_reaped) {
                if (v->uvicorn_started)
                        uvicorn_shutdown_lines(v, false);
                stop_loop(v, 0);
                return;
        }
        kill(v->engine_pid, SIGTERM);
        v->kill_ev = evtimer_new(v->srv.base, kill_cb, v);
        struct timeval tv = sim_timeval(v->cfg->shutdown_wait_s);
        evtimer_add(v->kill_ev, &tv);
        reap(v);
}

static void listen_cb(evutil_socket_t fd, short what, void *arg)
{
        struct vllm *v = arg;
        _cleanup_free_ char *err = NULL;

        if (v->state != VLLM_SERVING)
                return;
        if (sim_http_listen(&v->srv, v->listen_fd, &err) < 0) {
                sim_log(SIM_ERROR, "launcher.py:60", "%s", err);
                stop_loop(v, 1);
        }
}

static void engine_ready(void *userdata)
{
        struct vllm *v = userdata;
        const char *host = v->cfg->host;

        v->state = VLLM_SERVING;
        v->srv.gen = sim_engine_client_generator(v->ec);
        sim_log(SIM_INFO, "api_server.py:1634", "Supported_tasks: ['generate']");
        sim_log(SIM_WARNING, "model.py:1389",
                "Default sampling parameters have been overridden by the model's Hugging Face generation "
                "config "
                "recommended from the model creator. If this is not intended, please relaunch vLLM instance "
                "with "
                "`--generation-config vllm`.");
        sim_log(SIM_INFO, "serving_chat.py:139",
                "Using default chat sampling params from model: {'temperature': 1.0}");
        sim_log(SIM_INFO, "api_server.py:1912", "Starting vLLM server on http://%s:%d",
                strchr(host, ':') ? "[::]" : host, v->port);
        sim_log(SIM_INFO, "launcher.py:34", "Available routes are:");
        for (size_t i = 0; i < v->srv.n_routes; i++) {
                if (!v->cfg->profiler && strstr(routes[i].path, "_profile"))
                        continue;
                sim_log(SIM_INFO, "launcher.py:42", "Route: %s, Methods: %s", routes[i].path,
                        routes[i].methods == (SIM_GET | SIM_POST) ? "GET, POST"
                        : routes[i].methods == SIM_GET            ? "GET, HEAD"
                                                                  : "POST");
        }
        v->uvicorn_started = true;
        sim_print(STDOUT_FILENO, "INFO:     Started server process [%d]", (int)getpid());
        sim_print(STDOUT_FILENO, "INFO:     Waiting for application startup.");
        sim_print(STDOUT_FILENO, "INFO:     Application startup complete.");
        /* uvicorn runs the lifespan before it listens: the line can precede the socket by a moment */
        v->listen_ev = evtimer_new(v->srv.base, listen_cb, v);
        struct timeval soon = sim_timeval(0.05);
        evtimer_add(v->listen_ev, &soon);
        v->stats_ev = event_new(v->srv.base, -1, EV_PERSIST, stats_cb, v);
        struct timeval tv = sim_timeval(v->cfg->stats_interval_s);
        event_add(v->stats_ev, &tv);
}

static void engine_lost(void *userdata)
{
        struct vllm *v = userdata;

        if (v->state == VLLM_STARTING) {
                /* the engine failed to start; its traceback is out, ours follows once it is reaped */
                v->ec = sim_engine_client_free(v->ec);
                reap(v);
                return;
        }
        if (v->state != VLLM_SERVING)
                return;
        sim_log(SIM_ERROR, "core_client.py:564",
                "Engine core proc EngineCore_DP0 died unexpectedly, shutting down "
                "client.");
        sim_tb_engine_dead();
        v->state = VLLM_DEAD;
        v->srv.engine_dead = true;
        sim_engine_client_fail_all(v->ec);
        v->srv.gen = NULL;
        reap(v);
        v->watchdog_ev = event_new(v->srv.base, -1, EV_PERSIST, watchdog_cb, v);
        struct timeval tv = sim_timeval(v->cfg->watchdog_s);
        event_add(v->watchdog_ev, &tv);
}

static const struct sim_engine_client_cb engine_cb = {engine_ready, engine_lost};

/* ---- start-up ---- */

static int startup_checks(struct sim_config *c)
{
        if (c->quantization && !streq(c->quantization, "mxfp4") &&
            !streq(c->quantization, "gpt_oss_mxfp4")) {
                sim_print(STDERR_FILENO,
                          "ValueError: Quantization method specified in the model config (mxfp4) "
                          "does not match the quantization method specified in the `quantization` "
                          "argument (%s).",
                          c->quantization);
                return -EINVAL;
        }
        return 0;
}

static void log_banner(const struct sim_config *c)
{
        sim_log(SIM_INFO, "api_server.py:1885", "vLLM API server version %s", c->version);
        log_non_default_args(c);
        warn_unknown_env();
        sim_log(SIM_INFO, "model.py:547", "Resolved architecture: GptOssForCausalLM");
        sim_log(SIM_INFO, "model.py:1510", "Using max model len %" PRId64, c->max_model_len);
        sim_log(SIM_INFO, "scheduler.py:205", "Chunked prefill is enabled with max_num_batched_tokens=%s.",
                sim_config_arg(c, "max-num-batched-tokens") ?: "8192");
        if (c->spec.method && !c->enforce_eager)
                sim_log(SIM_INFO, "config.py:512",
                        "Speculative decoding with method '%s' and %d tokens: CUDA graphs "
                        "are captured for the drafter too.",
                        c->spec.method, c->spec.num_tokens);
}

/* Fork the engine; the child never returns. */
static int spawn_engine(struct vllm *v, int *ret_fd)
{
        int sv[2];
        pid_t pid;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(sv[0]);
                close(sv[1]);
                return r;
        }
        if (pid == 0) {
                sigset_t none;
                sigemptyset(&none);
                close(sv[0]);
                close(v->listen_fd);
                signal(SIGINT, SIG_DFL);
                sigprocmask(SIG_SETMASK, &none, NULL);
                sim_engine_main(v->cfg, sv[1]);
        }
        close(sv[1]);
        v->engine_pid = pid;
        *ret_fd = sv[0];
        return 0;
}

static void vllm_done(struct vllm *v)
{
        sim_completion_abort_all(&v->srv);
        v->ec = sim_engine_client_free(v->ec);
        sim_http_done(&v->srv);
        struct event *evs[] = {v->sig_term,    v->sig_int,   v->sig_chld, v->stats_ev,
                               v->watchdog_ev, v->listen_ev, v->kill_ev};
        for (size_t i = 0; i < ELEMENTSOF(evs); i++)
                if (evs[i])
                        event_free(evs[i]);
        if (v->srv.base)
                event_base_free(v->srv.base);
        if (v->listen_fd >= 0 && !v->srv.listening)
                close(v->listen_fd); /* once listening, evhttp owned and closed it */
}

int sim_vllm_main(struct sim_config *c)
{
        struct vllm v = {.cfg = c, .listen_fd = -1, .exit_code = 1};
        _cleanup_free_ char *err = NULL;
        sigset_t block, old;
        int fd = -1, r;

        sim_log_set_process(SIM_FLAVOR_VLLM, "APIServer");
        if (sim_fault_on(&c->faults, SIM_FAULT_IMPORT_ERROR)) {
                sim_tb_import_error();
                return 1;
        }
        log_banner(c);
        if (startup_checks(c) < 0)
                return 1;
        r = sim_http_bind(c->host, c->port, &v.listen_fd, &err);
        if (r < 0) {
                sim_print(STDERR_FILENO, "OSError: %s", err);
                return 1;
        }
        v.port = sim_http_bound_port(v.listen_fd);
        sigemptyset(&block);
        sigaddset(&block, SIGTERM);
        sigaddset(&block, SIGINT);
        sigaddset(&block, SIGCHLD);
        sigprocmask(SIG_BLOCK, &block, &old);
        r = spawn_engine(&v, &fd);
        if (r < 0) {
                sim_print(STDERR_FILENO, "OSError: cannot start the engine: %s", strerror(-r));
                close(v.listen_fd);
                return 1;
        }
        signal(SIGPIPE, SIG_IGN);
        v.srv = (struct sim_server){.cfg = c,
                                    .routes = routes,
                                    .n_routes = ELEMENTSOF(routes),
                                    .access_log = access_log,
                                    .finished = finished,
                                    .unavailable = unavailable};
        sim_metrics_init(&v.srv.metrics);
        v.srv.base = sim_event_base_new();
        if (!v.srv.base)
                mx_die("event_base_new failed");
        sim_http_init(&v.srv);
        v.ec = sim_engine_client_new(v.srv.base, fd, &engine_cb, &v);
        v.sig_chld = evsignal_new(v.srv.base, SIGCHLD, sigchld_cb, &v);
        evsignal_add(v.sig_chld, NULL);
        if (sim_fault_on(&c->faults, SIM_FAULT_HANG_STOP)) {
                signal(SIGTERM, SIG_IGN);
                signal(SIGINT, SIG_IGN);
        } else {
                v.sig_term = evsignal_new(v.srv.base, SIGTERM, signal_cb, &v);
                v.sig_int = evsignal_new(v.srv.base, SIGINT, signal_cb, &v);
                evsignal_add(v.sig_term, NULL);
                evsignal_add(v.sig_int, NULL);
        }
        sigprocmask(SIG_SETMASK, &old, NULL);

        event_base_dispatch(v.srv.base);

        r = v.exit_code;
        vllm_done(&v);
        return r;
}
