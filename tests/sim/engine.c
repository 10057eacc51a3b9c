/* SPDX-License-Identifier: MIT */
/*
 * vLLM's EngineCore process (target-surfaces.md §A3): forked by the API
 * server, titled VLLM::EngineCore, it "owns the GPU" by holding an exclusive
 * flock on MXSIM_GPU_LOCK for its whole life, loads the model (the start-up
 * log lines, the known start-up failures), then generates tokens for the
 * requests the API server forwards over the socketpair.
 *
 * Faithfully hostile: it never watches its parent (vllm#55510), so a
 * SIGKILLed API server leaves it running with the lock held; until loading is
 * done SIGTERM kills it with the default action (vllm#44751).
 */
#include "sim.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/prctl.h>

struct ereq {
        struct ereq *next;
        uint64_t api_id;
        uint64_t sched_id;
        struct engine *e;
};

struct engine {
        const struct sim_config *cfg;
        struct sim_moe moe;
        struct event_base *base;
        struct bufferevent *bev;
        struct event *term_ev, *keepalive_ev;
        struct sim_sched *sched;
        struct ereq *reqs;
        uint64_t requests; /* numbered from 1 in arrival order */
        int lock_fd;
};

/* ---- process title ---- */

static char *title_area;
static size_t title_len;

void sim_proctitle_init(int argc, char **argv)
{
        char *end;

        if (argc < 1 || !argv[0])
                return;
        end = argv[0] + strlen(argv[0]);
        for (int i = 1; i < argc; i++) {
                if (argv[i] != end + 1)
                        break; /* not contiguous: only use what is */
                end = argv[i] + strlen(argv[i]);
        }
        title_area = argv[0];
        title_len = (size_t)(end - argv[0]) + 1;
}

/* Rename the process as setproctitle does: comm (15 bytes) and the argv area. */
static void set_title(const char *title)
{
        prctl(PR_SET_NAME, title, 0, 0, 0);
        if (!title_area || title_len < 2)
                return;
        memset(title_area, 0, title_len);
        memcpy(title_area, title, MX_MIN(strlen(title), title_len - 1));
}

/* ---- the wire to the API server ---- */

static void send_json(struct engine *e, json_t *v)
{
        _cleanup_free_ char *s = NULL;

        if (!e->bev) {
                json_decref(v);
                return;
        }
        s = json_dumps(v, JSON_COMPACT);
        json_decref(v);
        if (!s)
                mx_die("json_dumps failed");
        bufferevent_write(e->bev, s, strlen(s));
        bufferevent_write(e->bev, "\n", 1);
}

static void ereq_forget(struct engine *e, struct ereq *r)
{
        for (struct ereq **pp = &e->reqs; *pp; pp = &(*pp)->next)
                if (*pp == r) {
                        *pp = r->next;
                        free(r);
                        return;
                }
}

/* Forward one decode step of a request to the API server. */
static void on_tokens(void *userdata, const struct sim_token *t, size_t n)
{
        struct ereq *r = userdata;
        json_t *arr = json_array();

        for (size_t i = 0; i < n; i++) {
                json_t *top = json_array();
                for (int k = 0; k < t[i].n_top; k++)
                        json_array_append_new(
                                top, json_pack("[I,f]", (json_int_t)t[i].top_id[k], t[i].top_lp[k]));
                json_array_append_new(arr, json_pack("[I,f,o,i]", (json_int_t)t[i].id, t[i].logprob, top,
                                                     (int)t[i].part));
        }
        send_json(r->e, json_pack("{s:s,s:I,s:o,s:I}", "op", "tok", "id", (json_int_t)r->api_id, "t", arr, "at",
                                  (json_int_t)(n > 0 ? t[0].sched_us : 0)));
}

/* The counters vLLM's engine reports to the API server's stat loggers. */
static json_t *stats_json(struct engine *e)
{
        struct sim_sched_stats st;
        json_t *pos = json_array();

        sim_sched_get_stats(e->sched, &st);
        for (int i = 0; i < e->cfg->spec.num_tokens && i < SIM_SPEC_TOKENS_MAX; i++)
                json_array_append_new(pos, json_integer((json_int_t)st.spec_accepted_pos[i]));
        return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "steps", (json_int_t)st.steps, "prefills",
                         (json_int_t)st.prefills, "prompt", (json_int_t)st.prompt_tokens, "output",
                         (json_int_t)st.output_tokens, "drafts", (json_int_t)st.spec_drafts, "draft_tokens",
                         (json_int_t)st.spec_draft_tokens, "accepted", (json_int_t)st.spec_accepted, "pos",
                         pos);
}

static void on_done(void *userdata, enum sim_finish finish, int64_t stop_token)
{
        struct ereq *r = userdata;
        struct engine *e = r->e;

        send_json(e, json_pack("{s:s,s:I,s:s,s:I,s:o}", "op", "done", "id", (json_int_t)r->api_id, "fin",
                               finish == SIM_FINISH_STOP ? "stop" : "length", "stop", (json_int_t)stop_token,
                               "st", stats_json(e)));
        ereq_forget(e, r);
}

static const struct sim_gen_cb engine_cb = {on_tokens, on_done, NULL};

/* The nsys-style report, if asked for; failures to write it are not the engine's concern. */
static void write_kernel_report(struct engine *e)
{
        struct sim_sched_stats st = {};

        if (!e->cfg->kernel_report)
                return;
        if (e->sched)
                sim_sched_get_stats(e->sched, &st);
        (void)sim_kreport_write(e->cfg->kernel_report, e->cfg, &e->moe, &st);
}

/* A GPU fault during a request: the error text, then the process dies with it. */
_noreturn_ static void die_of(struct engine *e, enum sim_crash kind, const char *where)
{
        sim_tb_engine_fatal(kind, where, !e->cfg->enforce_eager);
        write_kernel_report(e);
        sim_crash_die(kind);
}

static void *memory_hog, *weights;

/* memory-growth=MB: allocate and touch MB per request, never freed (a leak the L3 drift check must see). */
static void grow_memory(const struct sim_config *c)
{
        size_t mb = (size_t)c->faults.value[SIM_FAULT_MEMORY_GROWTH];
        void **chunk = xmalloc(mb * 1024 * 1024);

        memset(chunk, 0xa5, mb * 1024 * 1024);
        chunk[0] = memory_hog; /* a chain keeps it reachable for leak checkers */
        memory_hog = chunk;
}

/* A "gen" line into generation parameters; -EINVAL for a malformed one. */
static int parse_gen(json_t *o, struct sim_gen_params *p)
{
        json_t *stop = json_object_get(o, "stop");
        const char *key = json_string_value(json_object_get(o, "key"));
        size_t i;
        json_t *v;

        *p = (struct sim_gen_params){
                .prompt_tokens = json_integer_value(json_object_get(o, "np")),
                .max_tokens = json_integer_value(json_object_get(o, "max")),
                .min_tokens = json_integer_value(json_object_get(o, "min")),
                .reasoning_tokens = json_integer_value(json_object_get(o, "rt")),
                .ignore_eos = json_is_true(json_object_get(o, "ign")),
                .chat = json_is_true(json_object_get(o, "chat")),
                .top_logprobs = (int)json_integer_value(json_object_get(o, "lp")),
                .arrival_us = json_integer_value(json_object_get(o, "arr")),
        };
        if (!key || sscanf(key, "%" SCNx64, &p->key) != 1 || p->max_tokens < 1)
                return -EINVAL;
        json_array_foreach(stop, i, v) {
                if (p->n_stop_ids >= SIM_STOP_IDS_MAX)
                        break;
                p->stop_ids[p->n_stop_ids++] = json_integer_value(v);
        }
        return 0;
}

/* A new request: known issues and faults may kill the engine here, as a forward pass would. */
static void handle_gen(struct engine *e, json_t *o)
{
        struct sim_gen_params p;
        const struct sim_issue *issue;
        enum sim_crash crash;
        struct ereq *r;
        uint64_t api_id = (uint64_t)json_integer_value(json_object_get(o, "id"));

        if (parse_gen(o, &p) < 0) {
                send_json(e, json_pack("{s:s,s:I,s:s,s:I}", "op", "done", "id", (json_int_t)api_id, "fin",
                                       "length", "stop", (json_int_t)-1));
                return;
        }
        e->requests++;
        issue = e->requests == 1 ? sim_issue_find(e->cfg, &e->moe, SIM_ISSUE_FIRST_COMPLETION) : NULL;
        if (issue)
                die_of(e, issue->crash, issue->where);
        crash = sim_faults_on_request(&e->cfg->faults, e->requests);
        if (crash == SIM_CRASH_HANG)
                sim_sched_wedge(e->sched);
        else if (crash != SIM_CRASH_NONE)
                die_of(e, crash, NULL);
        if (sim_fault_on(&e->cfg->faults, SIM_FAULT_DIE_UNDER_CONCURRENCY)) {
                /* die-under-concurrency=N: a batch of N sequences hits an illegal instruction. */
                uint64_t running = 1;

                for (struct ereq *q = e->reqs; q; q = q->next)
                        running++;
                if (running >= (uint64_t)MX_MAX(2, e->cfg->faults.value[SIM_FAULT_DIE_UNDER_CONCURRENCY]))
                        die_of(e, SIM_CRASH_ILLEGAL_INSTRUCTION, NULL);
        }
        if (sim_fault_on(&e->cfg->faults, SIM_FAULT_MEMORY_GROWTH))
                grow_memory(e->cfg);
        r = xcalloc(1, sizeof(*r));
        r->api_id = api_id;
        r->e = e;
        r->next = e->reqs;
        e->reqs = r;
        sim_sched_generator(e->sched)->submit(sim_sched_generator(e->sched), &p, &engine_cb, r,
                                              &r->sched_id);
}

/* The API server gave up on a request (client gone, stop string). */
static void handle_abort(struct engine *e, uint64_t api_id)
{
        for (struct ereq *r = e->reqs; r; r = r->next)
                if (r->api_id == api_id) {
                        sim_sched_generator(e->sched)->abort(sim_sched_generator(e->sched), r->sched_id);
                        ereq_forget(e, r);
                        return;
                }
}

/* Every complete line from the API server. */
static void read_cb(struct bufferevent *bev, void *arg)
{
        struct engine *e = arg;
        struct evbuffer *in = bufferevent_get_input(bev);
        char *line;
        size_t n;

        while ((line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF))) {
                json_auto_t *o = json_loadb(line, n, 0, NULL);
                const char *op = json_string_value(json_object_get(o, "op"));
                free(line);
                if (streq_ptr(op, "gen"))
                        handle_gen(e, o);
                else if (streq_ptr(op, "abort"))
                        handle_abort(e, (uint64_t)json_integer_value(json_object_get(o, "id")));
        }
}

/* The API server went away. vLLM's engine does not notice its parent's death: keep going. */
static void event_cb(struct bufferevent *bev, short what, void *arg)
{
        struct engine *e = arg;

        if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
                return;
        bufferevent_free(e->bev);
        e->bev = NULL;
}

/* SIGTERM after start-up: vLLM's handler raises SystemExit, a clean exit. */
static void term_cb(evutil_socket_t sig, short what, void *arg)
{
        struct engine *e = arg;

        write_kernel_report(e);
        event_base_loopexit(e->base, NULL);
}

static void keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
}

/* ---- start-up ---- */

static void log_init_config(const struct sim_config *c)
{
        _cleanup_free_ char *spec =
                c->spec.method ? xasprintf("SpeculativeConfig(method='%s', model='%s', "
                                           "num_spec_tokens=%d)",
                                           c->spec.method, strna(c->spec.model), c->spec.num_tokens)
                               : xstrdup("None");
        const char *lf = sim_config_arg(c, "load-format");

        sim_log(SIM_INFO, "core.py:93",
                "Initializing a V1 LLM engine (v%s) with config: model='%s', speculative_config=%s, "
                "tokenizer='%s', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
                "trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=%" PRId64 ", download_dir=None, "
                "load_format=%s, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, "
                "quantization=mxfp4, enforce_eager=%s, kv_cache_dtype=auto, device_config=cuda, "
                "served_model_name=%s, enable_prefix_caching=%s, enable_chunked_prefill=True",
                c->version, c->model, spec, c->model, c->max_model_len, lf ? lf : "auto",
                c->enforce_eager ? "True" : "False", c->served_name,
                sim_config_has_arg(c, "no-enable-prefix-caching") ? "False" : "True");
        sim_log(SIM_INFO, "parallel_state.py:1208",
                "rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0");
}

/* Fail start-up the way a GB10 does, then exit 1 (the API server reports it). */
_noreturn_ static void startup_failure(struct engine *e, enum sim_crash kind, const char *detail)
{
        sim_tb_engine_startup(kind, detail);
        write_kernel_report(e);
        exit(1);
}

/* hang-start: stuck loading weights until killed. */
static void hang_forever(void)
{
        for (;;)
                pause();
}

/* Checkpoint loading: takes the GPU (or OOMs on a taken one) and logs the backend choice. */
static void load_weights(struct engine *e, double t)
{
        const struct sim_config *c = e->cfg;
        int r;

        sim_log(SIM_INFO, "gpu_model_runner.py:2602", "Starting to load model %s...", c->model);
        r = sim_gpu_lock(c, &e->lock_fd);
        if (r == -EWOULDBLOCK || sim_fault_on(&c->faults, SIM_FAULT_OOM_AT_START))
                startup_failure(e, SIM_CRASH_OOM,
                                r == -EWOULDBLOCK ? "the GPU's memory is held by another process" : NULL);
        if (r < 0) {
                sim_log(SIM_ERROR, "core.py:708", "EngineCore failed to start: cannot open %s: %s",
                        c->lock_path, strerror(-r));
                exit(1);
        }
        sim_log(SIM_INFO, "cuda.py:366",
                "Using %s attention backend out of potential backends: "
                "['TRITON_ATTN', 'FLASHINFER', 'FLASH_ATTN'].",
                sim_attention_backend());
        sim_moe_log(&e->moe);
        if (c->resident_mb > 0) {
                /* The weights: resident for the engine's life, so memory drift is measured against a base. */
                weights = xmalloc((size_t)(c->resident_mb * 1048576));
                memset(weights, 0x5a, (size_t)(c->resident_mb * 1048576));
        }
        sim_print(STDERR_FILENO,
                  "Loading safetensors checkpoint shards:   0%% Completed | 0/15 [00:00<?, ?it/s]");
        if (sim_fault_on(&c->faults, SIM_FAULT_HANG_START))
                hang_forever();
        sim_sleep(t / 2);
        sim_print(STDERR_FILENO,
                  "Loading safetensors checkpoint shards:  53%% Completed | 8/15 [00:%02d<00:%02d, "
                  "1.91s/it]",
                  (int)(t / 2) % 60, (int)(t / 2) % 60);
        sim_sleep(t / 2);
        sim_print(STDERR_FILENO,
                  "Loading safetensors checkpoint shards: 100%% Completed | 15/15 [00:%02d<00:00, "
                  "1.93s/it]",
                  (int)t % 60);
        sim_log(SIM_INFO, "default_loader.py:267", "Loading weights took %.2f seconds", t);
        sim_log(SIM_INFO, "gpu_model_runner.py:2653", "Model loading took %.4f GiB and %.6f seconds",
                SIM_MODEL_GIB, t * 1.04);
}

/* The profile run, where JIT builds and the first kernels fail if they are going to. */
static void profile_run(struct engine *e, double t)
{
        const struct sim_config *c = e->cfg;
        const struct sim_issue *issue = sim_issue_find(c, &e->moe, SIM_ISSUE_AT_STARTUP);

        if (!c->enforce_eager) {
                sim_log(SIM_INFO, "backends.py:548",
                        "Using cache directory: /root/.cache/vllm/torch_compile_cache/"
                        "3f1c0e9b2a/rank_0_0/backbone for vLLM's torch.compile");
                sim_log(SIM_INFO, "backends.py:559", "Dynamo bytecode transform time: %.2f s", t * 0.3);
        }
        sim_sleep(t);
        if (issue)
                startup_failure(e, issue->crash, issue->where);
        if (sim_fault_on(&c->faults, SIM_FAULT_PTXAS_ERROR))
                startup_failure(e, SIM_CRASH_PTXAS, NULL);
        if (sim_fault_on(&c->faults, SIM_FAULT_CRASH_AT_START))
                startup_failure(e, SIM_CRASH_CUDA_INIT, NULL);
        if (!c->enforce_eager)
                sim_log(SIM_INFO, "monitor.py:34", "torch.compile takes %.2f s in total", t * 0.9);
}

/* The KV cache sizing lines. */
static void kv_cache(struct engine *e)
{
        const struct sim_config *c = e->cfg;
        size_t tokens = sim_kv_cache_tokens(c);
        double gib = (double)tokens * 72.0 * 1024.0 / (1024.0 * 1024.0 * 1024.0);

        sim_log(SIM_INFO, "gpu_worker.py:298", "Available KV cache memory: %.2f GiB", gib);
        sim_log(SIM_INFO, "kv_cache_utils.py:1087", "GPU KV cache size: %zu tokens", tokens);
        sim_log(SIM_INFO, "kv_cache_utils.py:1091",
                "Maximum concurrency for %" PRId64 " tokens per request: %.2fx", c->max_model_len,
                (double)tokens / (double)c->max_model_len);
}

/* CUDA graph capture progress (stderr) and summary. */
static void capture_graphs(double t)
{
        sim_print(STDERR_FILENO,
                  "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%%|██████████| "
                  "67/67 [00:%02d<00:00, 31.02it/s]",
                  (int)(t / 2) % 60);
        sim_sleep(t / 2);
        sim_print(STDERR_FILENO,
                  "Capturing CUDA graphs (decode, FULL): 100%%|██████████| 35/35 [00:%02d<00:00, "
                  "30.11it/s]",
                  (int)(t / 2) % 60);
        sim_sleep(t / 2);
        sim_log(SIM_INFO, "gpu_model_runner.py:3480", "Graph capturing finished in %.0f secs, took 0.84 GiB",
                t);
}

/* Load the model with the documented log lines; returns only on success. */
static void engine_load(struct engine *e)
{
        const struct sim_config *c = e->cfg;
        double total = sim_fault_on(&c->faults, SIM_FAULT_SLOW_START) ? c->faults.value[SIM_FAULT_SLOW_START]
                                                                      : c->load_s;
        int64_t t0 = mx_now_mono_us();
        _cleanup_free_ char *why = NULL;

        log_init_config(c);
        if (sim_moe_select(c, &e->moe, &why) < 0) {
                sim_log(SIM_ERROR, "core.py:708", "EngineCore failed to start.");
                sim_log(SIM_ERROR, "core.py:708", "Traceback (most recent call last):");
                sim_log(SIM_ERROR, "core.py:708",
                        "  File \"/workspace/vllm/vllm/envs.py\", line 1712, in __getattr__");
                sim_log(SIM_ERROR, "core.py:708", "%s", why);
                exit(1);
        }
        load_weights(e, total * 0.55);
        profile_run(e, total * 0.15);
        kv_cache(e);
        if (!c->enforce_eager)
                capture_graphs(total * 0.25);
        sim_sleep(total * 0.05);
        sim_log(SIM_INFO, "core.py:210",
                "init engine (profile, create kv cache, warmup model) took %.2f seconds",
                (double)(mx_now_mono_us() - t0) / 1e6);
}

/* See sim.h: retitle, load, then serve the API server until SIGTERM. */
void sim_engine_main(const struct sim_config *c, int fd)
{
        struct engine e = {.cfg = c, .lock_fd = -1};
        double speed;

        sim_log_set_process(SIM_FLAVOR_VLLM, "EngineCore_DP0");
        set_title("VLLM::EngineCore");
        if (sim_fault_on(&c->faults, SIM_FAULT_ENGINE_ESCAPE))
                (void)setsid();
        signal(SIGPIPE, SIG_IGN);
        signal(SIGTERM, sim_fault_on(&c->faults, SIM_FAULT_ENGINE_IGNORE_TERM) ? SIG_IGN : SIG_DFL);
        engine_load(&e);

        e.base = sim_event_base_new();
        if (!e.base)
                mx_die("event_base_new failed");
        speed = sim_config_speed(c, &e.moe);
        e.sched = sim_sched_new(e.base, c, speed);
        evutil_make_socket_nonblocking(fd);
        e.bev = bufferevent_socket_new(e.base, fd, BEV_OPT_CLOSE_ON_FREE);
        bufferevent_setcb(e.bev, read_cb, NULL, event_cb, &e);
        bufferevent_enable(e.bev, EV_READ);
        if (!sim_fault_on(&c->faults, SIM_FAULT_ENGINE_IGNORE_TERM)) {
                e.term_ev = evsignal_new(e.base, SIGTERM, term_cb, &e);
                evsignal_add(e.term_ev, NULL);
        }
        if (sim_fault_on(&c->faults, SIM_FAULT_ZOMBIE_CHILD) && fork() == 0)
                _exit(0); /* a helper process the engine never waits for: a zombie for its whole life */
        e.keepalive_ev = event_new(e.base, -1, EV_PERSIST, keepalive_cb, NULL);
        event_add(e.keepalive_ev, &(struct timeval){3600, 0});
        send_json(&e, json_pack("{s:s,s:I}", "op", "ready", "kv", (json_int_t)sim_kv_cache_tokens(c)));

        event_base_dispatch(e.base);

        while (e.reqs)
                ereq_forget(&e, e.reqs);
        if (e.bev)
                bufferevent_free(e.bev);
        sim_sched_free(e.sched);
        if (e.term_ev)
                event_free(e.term_ev);
        event_free(e.keepalive_ev);
        event_base_free(e.base);
        sim_moe_done(&e.moe);
        exit(0);
}
