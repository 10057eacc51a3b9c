/* SPDX-License-Identifier: MIT */
/*
 * mxsim, the simulated inference server (tests/sim/README.md is the user's
 * page). One internal header in the manner of tmux.h: each block of
 * declarations names the file that defines it, so this header is also the
 * module index.
 *
 * Process model (vLLM personality): the API server (flavor-vllm.c) binds the
 * port, forks the engine (engine.c), waits for it to load, then listens and
 * forwards every generation over a socketpair (engine-client.c on its side).
 * llama-server and SGLang personalities generate in process. Everything that
 * generates tokens goes through struct sim_generator, so the HTTP layer
 * (completion.c) does not know which process produces them.
 */
#pragma once

#include "util.h"

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <sys/time.h>
#include <sys/types.h>

struct sim_completion_summary;

/* ---- fault.c: faults injected by MXSIM_FAULTS / --mxsim-fault ---- */

enum sim_fault {
        SIM_FAULT_SLOW_START,
        SIM_FAULT_HANG_START,
        SIM_FAULT_CRASH_AT_START,
        SIM_FAULT_CRASH_AFTER,
        SIM_FAULT_LAUNCH_FAILURE_AFTER,
        SIM_FAULT_SEGFAULT_AFTER,
        SIM_FAULT_HANG_AFTER,
        SIM_FAULT_OOM_AT_START,
        SIM_FAULT_IMPORT_ERROR,
        SIM_FAULT_PTXAS_ERROR,
        SIM_FAULT_ENGINE_ESCAPE,
        SIM_FAULT_ENGINE_IGNORE_TERM,
        SIM_FAULT_HANG_STOP,
        SIM_FAULT_WRONG_KERNEL,
        SIM_FAULT_NAN_LOGPROBS,
        SIM_FAULT_NULL_CONTENT,
        SIM_FAULT_MEMORY_GROWTH,
        SIM_FAULT_HEALTH_503_AFTER,
        SIM_FAULT_SHORT_OUTPUT,
        SIM_FAULT_POSITIVE_LOGPROBS,
        SIM_FAULT_SEED_DRIFT,
        SIM_FAULT_DEGENERATE_TEXT,
        SIM_FAULT_INVALID_UTF8,
        SIM_FAULT_DIE_UNDER_CONCURRENCY,
        SIM_FAULT_ZOMBIE_CHILD,
        SIM_FAULT_SHORT_CONTEXT,
        SIM_FAULT_METRICS_RESET_AFTER,
        SIM_FAULT_METRICS_MALFORMED,
        SIM_FAULT_TIMINGS_NO_PROMPT_N,
        _SIM_FAULT_MAX,
};

struct sim_faults {
        bool on[_SIM_FAULT_MAX];
        double value[_SIM_FAULT_MAX]; /* the "=N" part; 0 when the fault takes none */
};

/* Largest value a fault argument may take (counts, seconds, megabytes). */
#define SIM_FAULT_VALUE_MAX 1000000.0
#define SIM_FAULT_MEMORY_MB_MAX 4096

const char *sim_fault_name(enum sim_fault f);
/* Parse one "name" or "name=value"; -EINVAL with a reason naming the fault and where it came from. */
int sim_faults_add(struct sim_faults *f, const char *spec, const char *origin, char **reterr);
/* Parse a comma-separated list (MXSIM_FAULTS). */
int sim_faults_add_list(struct sim_faults *f, const char *list, const char *origin, char **reterr);
/* -EINVAL when a fault that only the vLLM personality implements is set for another one. */
int sim_faults_check_flavor(const struct sim_faults *f, bool vllm, char **reterr);
static inline bool sim_fault_on(const struct sim_faults *f, enum sim_fault k)
{
        return f->on[k];
}

/* What happens to the GPU when a request runs (see sim_faults_on_request). */
enum sim_crash {
        SIM_CRASH_NONE,
        SIM_CRASH_ILLEGAL_INSTRUCTION, /* cudaErrorIllegalInstruction, process aborts */
        SIM_CRASH_LAUNCH_FAILURE,      /* cudaErrorLaunchFailure, process aborts */
        SIM_CRASH_SEGFAULT,            /* SIGSEGV */
        SIM_CRASH_HANG,                /* the GPU never finishes: no more tokens, ever */
        /* start-up failures */
        SIM_CRASH_OOM,        /* torch.OutOfMemoryError while loading weights */
        SIM_CRASH_CUDA_INIT,  /* illegal instruction during the profile run */
        SIM_CRASH_PTXAS,      /* Triton JIT: ptxas rejects .tile::scatter4 on sm_121a */
        SIM_CRASH_TMA_LAYOUT, /* FlashInfer CUTLASS JIT: 64x128 tile static assertion */
        SIM_CRASH_NO_SM100,   /* TRT-LLM MoE kernels exist only for SM100 */
};

/*
 * The crash a request triggers: requests are numbered from 1 in arrival order;
 * crash-after=N (and the other *-after faults) lets requests 1..N through and
 * makes request N+1 fail.
 */
enum sim_crash sim_faults_on_request(const struct sim_faults *f, uint64_t request_no);
/* health-503-after=N: /health fails once N completions were answered, though serving goes on. */
bool sim_faults_health_503(const struct sim_faults *f, uint64_t completions_done);
/* metrics-reset-after=N: true once, when the Nth completion was answered (N >= 1). */
bool sim_faults_metrics_reset(const struct sim_faults *f, uint64_t completions_done);
/* timings-no-prompt-n=N: completion request_no (from 1, in arrival order) is every Nth (N >= 1). */
bool sim_faults_no_prompt_n(const struct sim_faults *f, uint64_t request_no);

/* ---- args.c: the command line and the environment ---- */

enum sim_flavor {
        SIM_FLAVOR_VLLM,
        SIM_FLAVOR_LLAMA,
        SIM_FLAVOR_SGLANG,
        _SIM_FLAVOR_MAX,
        _SIM_FLAVOR_INVALID = -EINVAL,
};
const char *sim_flavor_to_string(enum sim_flavor f);
enum sim_flavor sim_flavor_from_string(const char *s);

/* One --flag as given on the command line, for vLLM's "non-default args" line. */
struct sim_arg {
        char *name;  /* without the leading dashes, as typed ("max-model-len") */
        char *value; /* NULL for a bare flag */
};

/* --speculative-config, parsed. method == NULL: speculative decoding is off. */
struct sim_spec {
        char *method;
        char *model;
        int num_tokens;
        /*
         * --mxsim-spec-acceptance R: the draft acceptance rate (accepted / draft tokens) the counters converge
         * to; drafts are accepted as a prefix, each position with the same probability accept_p, solved from
         * R. < 0: the built-in schedule (0.72 for the first position, x0.86 for each next).
         */
        double acceptance;
        double accept_p;
};

#define SIM_ARGS_MAX 256
#define SIM_SPEC_TOKENS_MAX 16

struct sim_config {
        enum sim_flavor flavor;
        char *model;
        char *served_name; /* --served-model-name, else the model */
        char *host;
        int port;
        bool enforce_eager;
        struct sim_spec spec;
        char *moe_backend;  /* --moe-backend, NULL = auto */
        char *quantization; /* --quantization or NULL */
        int64_t max_model_len;
        int64_t max_num_seqs;
        double gpu_memory_utilization;
        bool profiler; /* --profiler-config given: /start_profile, /stop_profile exist */
        bool metrics;  /* llama-server --metrics, SGLang --enable-metrics (vLLM: always) */
        struct sim_arg *args;
        size_t n_args;
        /* timing knobs (seconds / milliseconds) */
        double load_s;
        double resident_mb; /* MXSIM_RESIDENT_MB: memory the engine holds once loaded (the weights' stand-in) */
        double watchdog_s;
        double token_ms;
        double shutdown_wait_s;
        double stats_interval_s;
        char *lock_path;
        char *kernel_report;
        bool keep_alive_on_engine_death;
        char *version;
        struct sim_faults faults;
        /*
         * A token schedule known exactly (--mxsim-decode-tps and friends, for
         * benchmark fidelity tests): 0 leaves the configuration's speed model.
         */
        double decode_tps;     /* decode steps per second (overrides MXSIM_TOKEN_MS and speed) */
        double prefill_tps;    /* prompt tokens per second of prefill */
        double first_token_ms; /* fixed delay from a request's arrival to the start of its prefill */
        double jitter_ms;      /* each decode step is late by a pseudo-random [0, jitter) ms, not cumulative */
        double speed_factor;   /* MXSIM_SPEED_RULES: the speed model times this for this configuration (1) */
        char *token_log;       /* --mxsim-token-log: every emitted token's scheduled and sent time */
        /*
         * --mxsim-harmony (vLLM): gpt-oss chat output as vLLM streams it, silent Harmony tokens
         * counted but sent as no chunk, and vllm#50690 for ignore_eos without min_tokens (README).
         */
        bool harmony;
        int64_t eos_at; /* --mxsim-eos-at: every sequence's natural end at this token; -1: pseudo-random */
};

/*
 * Parse "mxsim serve MODEL [options]" plus the environment. -EINVAL with a
 * reason for a command line or knob that cannot be used (the caller prints it
 * like argparse does and exits 2).
 */
int sim_config_parse(struct sim_config *c, int argc, char **argv, char **reterr);
void sim_config_done(struct sim_config *c);
/* The value of --name as given (last one wins), NULL if absent or bare. */
const char *sim_config_arg(const struct sim_config *c, const char *name);
bool sim_config_has_arg(const struct sim_config *c, const char *name);
/* Whether an environment variable is set to 1/true/yes, as vLLM's boolean env vars are read. */
bool sim_env_true(const char *name);

/* ---- simlog.c: log lines in the simulated program's own format ---- */

enum sim_level {
        SIM_DEBUG,
        SIM_INFO,
        SIM_WARNING,
        SIM_ERROR,
};

/* Name the process for vLLM's "(APIServer pid=N) " prefix ("APIServer", "EngineCore_DP0"). */
void sim_log_set_process(enum sim_flavor flavor, const char *name);
/* vLLM: "(Proc pid=N) LEVEL MM-DD HH:MM:SS [where] message" on stdout. */
_printf_(3, 4) void sim_log(enum sim_level level, const char *where, const char *fmt, ...);
/* One line with only the process prefix (uvicorn, tqdm, tracebacks); fd 1 or 2. */
_printf_(2, 3) void sim_print(int fd, const char *fmt, ...);
/* Every line of a multi-line text with the process prefix. */
void sim_print_block(int fd, const char *text);
/* A line with no prefix at all (llama-server, SGLang, early Python errors). */
_printf_(2, 3) void sim_print_raw(int fd, const char *fmt, ...);
/* Local time formatted with strftime. */
char *sim_log_time(const char *strftime_fmt);

/* ---- traceback.c: the error texts a crashing Python/CUDA program prints ---- */

/* The engine's fatal error for a GPU fault during a request; where names the kernel or phase. */
void sim_tb_engine_fatal(enum sim_crash kind, const char *where, bool graphs);
/* The engine's start-up failure (OOM, ptxas, TMA layout, ...). */
void sim_tb_engine_startup(enum sim_crash kind, const char *detail);
/* The API server's view: "Engine core initialization failed" / EngineDeadError. */
void sim_tb_engine_init_failed(void);
void sim_tb_engine_dead(void);
/* ModuleNotFoundError at import time (no prefix: logging is not configured yet). */
void sim_tb_import_error(void);
/* Die the way the crash kind dies (abort or SIGSEGV); never returns. */
_noreturn_ void sim_crash_die(enum sim_crash kind);

/* ---- backend.c: which MXFP4 MoE backend runs, and what it looks like ---- */

struct sim_moe {
        const char *family;     /* "marlin", "cutlass", "gemv", "triton", "b12x", "trtllm" */
        char *enum_name;        /* "FLASHINFER_CUTLASS_MXFP4_MXFP8" */
        const char *activation; /* effective activation format: "bf16", "mxfp8", ... */
        const char *requested_activation;
        const char *requested; /* what the user asked for, for messages */
        const char *tile;      /* FLASHINFER_MOE_TILE or "auto" */
        bool fell_back;        /* wrong-kernel: the log shows a silent fallback */
        double speed;          /* decode speed relative to the Marlin baseline */
};

/*
 * Resolve VLLM_MXFP4_MOE_KERNEL / VLLM_MXFP4_ACTIVATION / --moe-backend as the
 * user's patched vLLM does on GB10. -EINVAL with vLLM's own error text for a
 * value it rejects at start-up.
 */
int sim_moe_select(const struct sim_config *c, struct sim_moe *ret, char **reterr);
void sim_moe_done(struct sim_moe *m);
/* argparse's check of --moe-backend's value (exit status 2 territory). */
int sim_moe_backend_check(const char *value, char **reterr);
/* Log the backend choice, the callsite lines and the activation-quant evidence (engine, profile run). */
void sim_moe_log(const struct sim_moe *m);
/* The attention backend name logged at start-up and used for kernel names. */
const char *sim_attention_backend(void);
/* Decode steps per second relative to the baseline for this configuration. */
double sim_config_speed(const struct sim_config *c, const struct sim_moe *m);

/* ---- issues.c: the GB10 behaviour of the seed's known issues, as one table ---- */

enum sim_issue_when {
        SIM_ISSUE_AT_STARTUP,
        SIM_ISSUE_FIRST_COMPLETION,
};

struct sim_issue {
        const char *name;
        enum sim_issue_when when;
        enum sim_crash crash;
        const char *where; /* the kernel or phase named in the error */
};

/* The first known issue that this configuration hits at that moment, or NULL. */
const struct sim_issue *sim_issue_find(const struct sim_config *c, const struct sim_moe *m,
                                       enum sim_issue_when when);

/* ---- vocab.c: the pseudo-word tokenizer and the deterministic "model" ---- */

#define SIM_VOCAB_SIZE 201088
#define SIM_TOKEN_ENDOFTEXT 199999
#define SIM_TOKEN_RETURN 200002
#define SIM_TOP_MAX 20

/* Split text into tokens; returns the count. *ret_ids (optional) gets them (caller frees). */
size_t sim_tokenize(const char *text, size_t len, int64_t **ret_ids);
/* Append the text of one token (skip_special drops <|...|> tokens). */
void sim_token_append(struct mx_buf *b, int64_t id, bool skip_special);
bool sim_token_is_special(int64_t id);
uint64_t sim_hash_ids(const int64_t *ids, size_t n, uint64_t h);
uint64_t sim_mix(uint64_t a, uint64_t b);

/*
 * gpt-oss Harmony (--mxsim-harmony, target-surfaces.md §A5): a chat answer is
 * <|channel|>analysis<|message|> (3 tokens), the reasoning, <|end|><|start|>
 * assistant<|channel|>final<|message|> (6), the content, and about 6 more at
 * the turn's end; vLLM's parser gives the control tokens no text, so they send
 * no chunk, yet completion_tokens counts them.
 */
#define SIM_HARMONY_HEADER 3
#define SIM_HARMONY_SWITCH 6
#define SIM_HARMONY_END 6

/* What a generated token is to the API server's output parser. */
enum sim_part {
        SIM_PART_CONTENT,   /* text (completions, chat content) */
        SIM_PART_REASONING, /* chat: the analysis channel */
        SIM_PART_CONTROL,   /* Harmony control tokens: no text, no chunk */
};

struct sim_token {
        int64_t id;
        enum sim_part part;
        int64_t sched_us; /* CLOCK_MONOTONIC time its decode step was due (sched.c) */
        double logprob;
        int n_top; /* alternatives in top_id/top_lp, best first; the sampled token is top_id[0] */
        int64_t top_id[SIM_TOP_MAX];
        double top_lp[SIM_TOP_MAX];
};

/* Token number pos of the sequence with this key; spaced: the token starts with a space. */
void sim_sample(uint64_t key, int64_t pos, bool spaced, int top_k, struct sim_token *ret);
/* The logprob vLLM's prompt_logprobs would report for prompt token i (i >= 1), and its rank. */
double sim_prompt_logprob(const int64_t *ids, size_t i, int64_t *ret_rank);
/* A random 64-bit value (ids, unseeded sampling). */
uint64_t sim_random_u64(void);

/* ---- sched.c: the token scheduler (continuous batching on a step timer) ---- */

#define SIM_STOP_IDS_MAX 32

struct sim_gen_params {
        uint64_t key; /* prompt hash mixed with the seed: same key, same tokens */
        int64_t prompt_tokens;
        int64_t max_tokens;
        int64_t min_tokens;
        int64_t reasoning_tokens; /* chat: tokens of the analysis channel before the content */
        bool ignore_eos;
        bool chat;
        int top_logprobs; /* -1: none */
        int64_t stop_ids[SIM_STOP_IDS_MAX];
        size_t n_stop_ids;
        int64_t arrival_us; /* CLOCK_MONOTONIC when the API server got the request; 0: at submit */
};

enum sim_finish {
        SIM_FINISH_LENGTH,
        SIM_FINISH_STOP,
};

/* Where a generator delivers: tokens of one output step, the end, or the engine's death. */
struct sim_gen_cb {
        void (*tokens)(void *userdata, const struct sim_token *t, size_t n);
        void (*done)(void *userdata, enum sim_finish finish, int64_t stop_token);
        void (*failed)(void *userdata);
};

/* Anything that produces tokens: the in-process scheduler or the engine across the socketpair. */
struct sim_generator {
        int (*submit)(struct sim_generator *g, const struct sim_gen_params *p, const struct sim_gen_cb *cb,
                      void *userdata, uint64_t *ret_id);
        void (*abort)(struct sim_generator *g, uint64_t id);
};

struct sim_sched_stats {
        uint64_t steps;         /* decode steps run */
        uint64_t prefills;      /* prefill batches run */
        uint64_t prompt_tokens; /* prompt tokens prefilled */
        uint64_t output_tokens; /* tokens generated */
        uint64_t spec_drafts;
        uint64_t spec_draft_tokens;
        uint64_t spec_accepted;
        uint64_t spec_accepted_pos[SIM_SPEC_TOKENS_MAX];
        size_t running, waiting;
        double kv_usage; /* 0..1 */
};

struct sim_sched;
struct sim_sched *sim_sched_new(struct event_base *base, const struct sim_config *c, double speed);
struct sim_sched *sim_sched_free(struct sim_sched *s);
DEFINE_POINTER_CLEANUP(struct sim_sched, sim_sched_free)
struct sim_generator *sim_sched_generator(struct sim_sched *s);
/* The GPU hangs: no sequence ever gets another token. */
void sim_sched_wedge(struct sim_sched *s);
void sim_sched_get_stats(const struct sim_sched *s, struct sim_sched_stats *ret);

/* ---- kreport.c: an nsys cuda_gpu_kern_sum CSV for the configuration ---- */

/* Write the report to path (MXSIM_KERNEL_REPORT); errors are returned, the caller logs nothing. */
int sim_kreport_write(const char *path, const struct sim_config *c, const struct sim_moe *m,
                      const struct sim_sched_stats *st);

/* ---- engine.c: vLLM's EngineCore process ---- */

/*
 * The token log (--mxsim-token-log, completion.c): JSON lines, one per request
 * received ({"ev":"req"}), per streamed step ({"ev":"tok"}: scheduled and
 * sent µs, CLOCK_MONOTONIC) and per request finished ({"ev":"end"}).
 */

/* Run the engine in a freshly forked child; fd is its end of the socketpair. */
_noreturn_ void sim_engine_main(const struct sim_config *c, int fd);
/* Remember the argv area so the engine can retitle itself as setproctitle does. */
void sim_proctitle_init(int argc, char **argv);

/* ---- engine-client.c: the API server's end of the socketpair ---- */

struct sim_engine_client;
struct sim_engine_client_cb {
        void (*ready)(void *userdata);
        void (*lost)(void *userdata); /* EOF or error: the engine is gone */
};
struct sim_engine_client *sim_engine_client_new(struct event_base *base, int fd,
                                                const struct sim_engine_client_cb *cb, void *userdata);
struct sim_engine_client *sim_engine_client_free(struct sim_engine_client *ec);
DEFINE_POINTER_CLEANUP(struct sim_engine_client, sim_engine_client_free)
struct sim_generator *sim_engine_client_generator(struct sim_engine_client *ec);
/* The engine's latest cumulative counters (sent with every finished request). */
void sim_engine_client_stats(const struct sim_engine_client *ec, struct sim_sched_stats *ret);
/* Fail every request in flight (the engine died); returns how many. */
size_t sim_engine_client_fail_all(struct sim_engine_client *ec);

/*
 * The engine protocol (engine.c <-> engine-client.c), one compact JSON object per line:
 *   API server -> engine: {"op":"gen","id","key","np","max","min","rt","ign","chat","lp","stop":[ids],
 *                          "arr": arrival µs}
 *                         {"op":"abort","id"}
 *   engine -> API server: {"op":"ready","kv"}
 *                         {"op":"tok","id","t":[[token id, logprob, [[alt id, logprob]...], part]...],
 *                          "at": the step's scheduled µs}
 *                         {"op":"done","id","fin":"length"|"stop","stop":token id|-1,"st":{counters}}
 */

/* ---- metrics.c: counters and histograms, rendered per flavour ---- */

#define SIM_HIST_BUCKETS_MAX 24

struct sim_hist {
        const double *bounds;
        size_t n_bounds;
        uint64_t counts[SIM_HIST_BUCKETS_MAX + 1];
        uint64_t count;
        double sum;
};

struct sim_metrics {
        uint64_t prompt_tokens;
        uint64_t generation_tokens;
        uint64_t success_length, success_stop;
        double prompt_seconds, generation_seconds;
        struct sim_hist ttft, itl, e2e, prompt_len, gen_len;
        int64_t created_us;
        /* for the periodic "Avg prompt throughput" line */
        uint64_t window_prompt, window_gen;
        int64_t window_start_us;
        /* the engine's cumulative counters (steps, spec decode) at the last restart (metrics-reset-after) */
        struct sim_sched_stats base;
};

void sim_metrics_init(struct sim_metrics *m);
void sim_hist_observe(struct sim_hist *h, double v);
/* Account one finished completion. */
void sim_metrics_record(struct sim_metrics *m, const struct sim_completion_summary *sum);
/*
 * metrics-reset-after: after the completion that finished_no counts (the server's completions answered),
 * every counter and histogram starts again from 0 with new _created stamps, as a restarted server's do;
 * now: the engine's cumulative stats at that moment (their counters count from there on), or NULL.
 */
void sim_metrics_maybe_restart(struct sim_metrics *m, const struct sim_config *c, uint64_t finished_no,
                               const struct sim_sched_stats *now);
/* Prometheus text for /metrics in the flavour's names; st carries the gauges and spec-decode counters. */
char *sim_metrics_render(const struct sim_metrics *m, const struct sim_config *c,
                         const struct sim_sched_stats *st);

/* ---- http.c: evhttp plumbing shared by the personalities ---- */

struct sim_server;

enum {
        SIM_GET = 1 << 0,
        SIM_POST = 1 << 1,
};

struct sim_route {
        const char *path;
        unsigned methods;
        void (*handler)(struct sim_server *s, struct evhttp_request *req);
};

struct sim_completion;

struct sim_server {
        const struct sim_config *cfg;
        struct event_base *base;
        struct evhttp *http;
        const struct sim_route *routes;
        size_t n_routes;
        struct sim_generator *gen; /* NULL while loading and after the engine died */
        struct sim_metrics metrics;
        struct sim_completion *completions; /* in flight, doubly linked */
        size_t n_completions;
        uint64_t completions_done; /* answered with 200 */
        uint64_t completions_received; /* completion requests read, rejected ones included */
        bool engine_dead;
        bool listening;         /* evhttp owns the listening socket */
        struct event *probe_ev; /* completion.c: looks for clients that left */
        /* access log line for one answered request; NULL: none */
        void (*access_log)(struct sim_server *s, struct evhttp_request *req, int status);
        /* called when a completion finished (metrics, llama's slot lines, ...) */
        void (*finished)(struct sim_server *s, const struct sim_completion *c);
        /* status and body for "no generator": loading (503) or dead engine (500) */
        void (*unavailable)(struct sim_server *s, struct evhttp_request *req);
        void *flavor;
};

#define SIM_BODY_MAX (16 * 1024 * 1024)
#define SIM_INFLIGHT_MAX 4096
#define SIM_HTTP_TIMEOUT_S 3600

/* Bind host:port (SO_REUSEADDR, SO_REUSEPORT) without listening; -errno with reason. */
int sim_http_bind(const char *host, int port, int *ret_fd, char **reterr);
/* The port a bound socket got (for --port 0), or -1. */
int sim_http_bound_port(int fd);
/* listen() on the bound socket and hand it to evhttp. */
int sim_http_listen(struct sim_server *s, int fd, char **reterr);
/* Create the evhttp object and route every request through s->routes. */
void sim_http_init(struct sim_server *s);
void sim_http_done(struct sim_server *s);

/* Send a JSON reply (steals v); NaN sentinels become Python's NaN. */
void sim_reply_json(struct sim_server *s, struct evhttp_request *req, int status, json_t *v);
void sim_reply_text(struct sim_server *s, struct evhttp_request *req, int status, const char *ctype,
                    const char *body);
/* vLLM/OpenAI error object {"error":{"message","type","param","code"}}. */
void sim_reply_error(struct sim_server *s, struct evhttp_request *req, int status, const char *type,
                     const char *fmt, ...) _printf_(5, 6);
/* FastAPI's {"detail": "..."} form. */
void sim_reply_detail(struct sim_server *s, struct evhttp_request *req, int status, const char *detail);
/* Parse the request body as a JSON object; on failure reply 400 and return NULL. */
json_t *sim_read_json(struct sim_server *s, struct evhttp_request *req, const char *schema);
/* Dump JSON compactly, with NaN for the sentinel. */
char *sim_json_dump(const json_t *v);
/* The value stored for a NaN logprob (jansson cannot hold NaN). */
double sim_nan_sentinel(void);
/* Text that sim_json_dump() turns into the invalid UTF-8 bytes 0xff 0xfe (fault invalid-utf8). */
#define SIM_INVALID_UTF8_MARK "\xc3\xbf\xc3\xbe"
const char *sim_http_reason(int status);
const char *sim_http_method(struct evhttp_request *req);
/* "127.0.0.1:54321" of the client, or "-". */
char *sim_http_peer(struct evhttp_request *req);

/* ---- completion.c: completion requests for every endpoint that generates ---- */

enum sim_api {
        SIM_API_COMPLETIONS,   /* POST /v1/completions */
        SIM_API_CHAT,          /* POST /v1/chat/completions */
        SIM_API_LLAMA_NATIVE,  /* llama-server POST /completion */
        SIM_API_SGLANG_NATIVE, /* SGLang POST /generate */
};

struct sim_completion_summary {
        enum sim_api api;
        int64_t prompt_tokens;
        int64_t completion_tokens;
        double ttft_s, e2e_s;
        bool stopped; /* finish_reason "stop" */
};

struct sim_completion {
        struct sim_completion *prev, *next;
        struct sim_completion_summary sum;
        /* the rest is private to completion.c */
        struct sim_completion_priv *priv;
};

void sim_completion_handle(struct sim_server *s, struct evhttp_request *req, enum sim_api api);
/* Shutdown: drop every request in flight (the client sees its connection close). */
void sim_completion_abort_all(struct sim_server *s);
/* How many prompt tokens a chat request costs (also what /tokenize reports). */
int sim_chat_prompt(json_t *messages, bool add_generation_prompt, int64_t **ret_ids, size_t *ret_n,
                    char **reterr);

/* ---- tokenize.c: /tokenize, /detokenize, /v1/models and friends ---- */

void sim_handle_tokenize(struct sim_server *s, struct evhttp_request *req);
void sim_handle_detokenize(struct sim_server *s, struct evhttp_request *req);
void sim_handle_models(struct sim_server *s, struct evhttp_request *req);
/* Parse a completions "prompt" (string, ids, or a one-element list of either). */
int sim_prompt_ids(json_t *prompt, int64_t **ret_ids, size_t *ret_n, char **reterr);

/* ---- inproc.c: the generator of the single-process personalities ---- */

struct sim_inproc;
/* crash_text prints the personality's own death message before the process dies of kind. */
struct sim_inproc *sim_inproc_new(struct event_base *base, const struct sim_config *c, double speed,
                                  void (*crash_text)(enum sim_crash kind));
struct sim_inproc *sim_inproc_free(struct sim_inproc *ip);
struct sim_generator *sim_inproc_generator(struct sim_inproc *ip);
void sim_inproc_stats(const struct sim_inproc *ip, struct sim_sched_stats *ret);

/* ---- flavor-vllm.c, flavor-llama.c, flavor-sglang.c ---- */

int sim_vllm_main(struct sim_config *c);
int sim_llama_main(struct sim_config *c);
int sim_sglang_main(struct sim_config *c);

/* ---- shared helpers (args.c) ---- */

/* A duration in seconds as a struct timeval (for libevent timers). */
static inline struct timeval sim_timeval(double s)
{
        if (s < 0)
                s = 0;
        return (struct timeval){(time_t)s, (suseconds_t)((s - (double)(time_t)s) * 1e6)};
}
/*
 * An event base whose timers use the precise CLOCK_MONOTONIC (libevent's
 * default is CLOCK_MONOTONIC_COARSE, a few ms coarse: token schedules would
 * wobble by that much).
 */
struct event_base *sim_event_base_new(void);
/* Sleep for s seconds, resuming after signals that were handled. */
void sim_sleep(double s);
/* Open and lock the "GPU" (MXSIM_GPU_LOCK) exclusively; -EWOULDBLOCK when another process holds it. */
int sim_gpu_lock(const struct sim_config *c, int *ret_fd);
/* The GPU facts the logs quote (GB10: 119.70 GiB unified memory). */
#define SIM_GPU_TOTAL_GIB 119.70
#define SIM_MODEL_GIB 65.97
/* KV cache tokens for the configuration (from --gpu-memory-utilization). */
size_t sim_kv_cache_tokens(const struct sim_config *c);
