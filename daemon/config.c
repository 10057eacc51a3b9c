/* SPDX-License-Identifier: MIT */
/*
 * mxmatrixd's settings. Precedence: command line, then the environment systemd
 * sets ($STATE_DIRECTORY), then the configuration file, then built-in defaults,
 * so tests can point everything at a temporary directory with flags alone.
 */
#include "config.h"
#include "sampler.h"
#include "log.h"

#include <getopt.h>
#include <sys/stat.h>

#define MX_DEFAULT_CONFIG "/etc/mxmatrix/mxmatrixd.json"
#define MX_DEFAULT_SOCKET "/run/mxmatrix/control.sock"
#define MX_DEFAULT_STATE_DIR "/var/lib/mxmatrix"

#define MX_MAX_REQUEUES_MAX 1000

enum { EXIT_CONFIG = 78 }; /* EX_CONFIG: systemd's RestartPreventExitStatus= stops a restart loop */

void config_defaults(struct mx_config *c)
{
        *c = (struct mx_config){
                .socket_mode = 0660,
                .recovery = MX_RECOVERY_REQUEUE,
                .max_requeues = 3,
                .limits = {
                        .frame_bytes = 1024 * 1024,
                        .connections = 256,
                        .connections_per_uid = 32,
                        .queued_runs_per_uid = 20000,
                        .plan_runs = 10000,
                        .output_bytes = 16 * 1024 * 1024,
                        .frame_timeout_ms = 30000,
                        .idle_timeout_ms = 5 * 60 * 1000,
                        .log_bytes = 64 * 1024 * 1024,
                },
                .run_timeout_ms = 4 * 3600 * 1000LL,
                .level_timeout_ms = 30 * 60 * 1000LL,
                .slurm = { .poll_ms = 2000 },
        };
}

void config_done(struct mx_config *c)
{
        free(c->config_path);
        free(c->socket_path);
        free(c->socket_group);
        free(c->admin_group);
        free(c->state_dir);
        free(c->matrix_path);
        free(c->log_sink);
        free(c->log_level);
        free(c->gpu_source);
        free(c->nvml_library);
        free(c->slurm.partition);
        free(c->slurm.account);
        free(c->slurm.gres);
        free(c->slurm.shared_dir);
        free(c->slurm.run_program);
        if (c->slurm.sbatch_args)
                for (char **a = c->slurm.sbatch_args; *a; a++)
                        free(*a);
        free(c->slurm.sbatch_args);
}

static void set_str(char **dst, const char *v)
{
        free(*dst);
        *dst = v ? xstrdup(v) : NULL;
}

static void help(void)
{
        printf("Usage: mxmatrixd [OPTIONS]\n\n"
               "Run test matrices against LLM inference servers, one run at a time.\n\n"
               "  --config FILE          settings file (default " MX_DEFAULT_CONFIG " if it exists)\n"
               "  --socket PATH          control socket (default " MX_DEFAULT_SOCKET "; ignored under\n"
               "                         socket activation)\n"
               "  --socket-mode MODE     octal mode of a socket we bind (default 0660)\n"
               "  --socket-group GROUP   group of a socket we bind (default: our group)\n"
               "  --admin-group GROUP    members may pause, resume, reload and act on any job\n"
               "  --state-dir DIR        database, logs and artifacts (default $STATE_DIRECTORY,\n"
               "                         else " MX_DEFAULT_STATE_DIR ")\n"
               "  --matrix FILE          the matrix file submissions refer to by default\n"
               "  --recovery requeue|pause\n"
               "                         what happens to runs a crash interrupted (default requeue)\n"
               "  --max-requeues N       requeue an interrupted run at most N times, then end it\n"
               "                         as infra-error (default 3; 0: never requeue)\n"
               "  --run-timeout DUR      longest a run may take (default 4h)\n"
               "  --level-timeout DUR    longest one level may take (default 30m)\n"
               "  --log-target auto|journal|stderr\n"
               "                         where to log (default auto: the journal when stderr is\n"
               "                         connected to it, else stderr)\n"
               "  --log-level LEVEL      debug, info, notice, warning, error (default info)\n"
               "  --foreground           log plain lines to stderr even under systemd\n"
               "  -h, --help             this help\n"
               "  --version              print the version\n\n"
               "DUR: seconds, or a number with ms, s, m, min or h (90s, 4h). The settings file\n"
               "(JSON) takes the long options' names with '_' for '-' (run_timeout) except\n"
               "config and foreground, plus \"limits\". mxmatrixd never forks into the\n"
               "background. Exit status: 0 stopped, 1 start-up failed, 2 bad command line,\n"
               "78 bad configuration. See mxmatrixd(8).\n");
}

static int parse_mode(const char *s, mode_t *ret)
{
        int64_t v = 0;

        for (const char *p = s; *p; p++) {
                if (*p < '0' || *p > '7' || v > 07777)
                        return -EINVAL;
                v = v * 8 + (*p - '0');
        }
        if (!*s || v > 0777)
                return -EINVAL;
        *ret = (mode_t)v;
        return 0;
}

static int parse_recovery(const char *s, enum mx_recovery *ret)
{
        if (streq(s, "requeue"))
                *ret = MX_RECOVERY_REQUEUE;
        else if (streq(s, "pause"))
                *ret = MX_RECOVERY_PAUSE;
        else
                return -EINVAL;
        return 0;
}

/* A duration from JSON: a number of seconds or a string such as "30m". */
static int json_duration(json_t *v, int64_t *ret_ms)
{
        if (json_is_integer(v) && json_integer_value(v) > 0) {
                *ret_ms = json_integer_value(v) * 1000;
                return 0;
        }
        return json_is_string(v) ? mx_parse_duration_ms(json_string_value(v), ret_ms) : -EINVAL;
}

static int file_error(const char *path, const char *key, const char *what)
{
        fprintf(stderr, "mxmatrixd: %s: key '%s': %s\n", path, key, what);
        return EXIT_CONFIG;
}

static int load_limits(struct mx_config *c, json_t *lim)
{
        static const struct {
                const char *key;
                size_t off;
                int kind; /* 0 size_t, 1 unsigned, 2 int64 */
        } keys[] = {
                { "frame_bytes", offsetof(struct mx_limits, frame_bytes), 0 },
                { "connections", offsetof(struct mx_limits, connections), 1 },
                { "connections_per_uid", offsetof(struct mx_limits, connections_per_uid), 1 },
                { "queued_runs_per_uid", offsetof(struct mx_limits, queued_runs_per_uid), 2 },
                { "plan_runs", offsetof(struct mx_limits, plan_runs), 2 },
                { "output_bytes", offsetof(struct mx_limits, output_bytes), 0 },
                { "log_bytes", offsetof(struct mx_limits, log_bytes), 0 },
                { "frame_timeout_ms", offsetof(struct mx_limits, frame_timeout_ms), 2 },
                { "idle_timeout_ms", offsetof(struct mx_limits, idle_timeout_ms), 2 },
        };
        const char *k;
        json_t *v;

        json_object_foreach (lim, k, v) {
                size_t i;

                for (i = 0; i < ELEMENTSOF(keys); i++)
                        if (streq(k, keys[i].key))
                                break;
                if (i == ELEMENTSOF(keys))
                        return file_error(c->config_path, k, "unknown limit");
                if (!json_is_integer(v) || json_integer_value(v) <= 0 || json_integer_value(v) > INT32_MAX)
                        return file_error(c->config_path, k, "expected a positive integer");
                if (keys[i].kind == 0)
                        *(size_t *)((char *)&c->limits + keys[i].off) = (size_t)json_integer_value(v);
                else if (keys[i].kind == 1)
                        *(unsigned *)((char *)&c->limits + keys[i].off) = (unsigned)json_integer_value(v);
                else
                        *(int64_t *)((char *)&c->limits + keys[i].off) = json_integer_value(v);
        }
        if (c->limits.frame_bytes < 4096)
                return file_error(c->config_path, "frame_bytes", "must be at least 4096");
        return 0;
}

static int load_string_key(struct mx_config *c, const char *k, json_t *v, char **dst)
{
        if (!json_is_string(v))
                return file_error(c->config_path, k, "expected a string");
        set_str(dst, json_string_value(v));
        return 0;
}

/* Bounds on the "slurm" object: a settings file is trusted, but not unbounded. */
#define MX_SLURM_ARGS_MAX 64
#define MX_SLURM_IN_FLIGHT_MAX 1024

/* The "slurm" object: where and how runs are submitted (executor-slurm.c). */
static int load_slurm(struct mx_config *c, json_t *o)
{
        struct mx_slurm_config *sc = &c->slurm;
        const char *k;
        json_t *v;

        json_object_foreach (o, k, v) {
                if (streq(k, "partition") || streq(k, "account") || streq(k, "gres") || streq(k, "shared_dir") ||
                    streq(k, "run_program")) {
                        char **dst = streq(k, "partition") ? &sc->partition
                                     : streq(k, "account") ? &sc->account
                                     : streq(k, "gres")    ? &sc->gres
                                     : streq(k, "shared_dir") ? &sc->shared_dir
                                                              : &sc->run_program;

                        if (!json_is_string(v) || !*json_string_value(v) || strchr(json_string_value(v), '\''))
                                return file_error(c->config_path, k, "expected a non-empty string without '");
                        set_str(dst, json_string_value(v));
                } else if (streq(k, "sbatch_args")) {
                        size_t i;
                        json_t *e;

                        if (!json_is_array(v) || json_array_size(v) > MX_SLURM_ARGS_MAX)
                                return file_error(c->config_path, k, "expected an array of at most 64 strings");
                        sc->sbatch_args = xcalloc(json_array_size(v) + 1, sizeof(char *));
                        json_array_foreach (v, i, e) {
                                if (!json_is_string(e))
                                        return file_error(c->config_path, k, "expected an array of strings");
                                sc->sbatch_args[i] = xstrdup(json_string_value(e));
                        }
                } else if (streq(k, "max_in_flight")) {
                        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                            json_integer_value(v) > MX_SLURM_IN_FLIGHT_MAX)
                                return file_error(c->config_path, k, "expected an integer from 0 (as many as Slurm "
                                                  "starts) to 1024");
                        sc->max_in_flight = (int)json_integer_value(v);
                } else if (streq(k, "poll_interval")) {
                        if (json_duration(v, &sc->poll_ms) < 0 || sc->poll_ms < 100 || sc->poll_ms > 600000)
                                return file_error(c->config_path, k, "expected a duration from 0.1 s to 10 min");
                } else
                        return file_error(c->config_path, k, "unknown key of \"slurm\"");
        }
        return 0;
}

static int load_key(struct mx_config *c, const char *k, json_t *v)
{
        if (streq(k, "executor")) {
                if (json_is_string(v) && streq(json_string_value(v), "local"))
                        c->executor = MX_EXECUTOR_LOCAL;
                else if (json_is_string(v) && streq(json_string_value(v), "slurm"))
                        c->executor = MX_EXECUTOR_SLURM;
                else
                        return file_error(c->config_path, k, "expected \"local\" or \"slurm\"");
                return 0;
        }
        if (streq(k, "slurm"))
                return json_is_object(v) ? load_slurm(c, v) : file_error(c->config_path, k, "expected an object");
        if (streq(k, "socket"))
                return load_string_key(c, k, v, &c->socket_path);
        if (streq(k, "socket_group"))
                return load_string_key(c, k, v, &c->socket_group);
        if (streq(k, "admin_group"))
                return load_string_key(c, k, v, &c->admin_group);
        if (streq(k, "state_dir"))
                return load_string_key(c, k, v, &c->state_dir);
        if (streq(k, "matrix"))
                return load_string_key(c, k, v, &c->matrix_path);
        if (streq(k, "log_target"))
                return load_string_key(c, k, v, &c->log_sink);
        if (streq(k, "log_level"))
                return load_string_key(c, k, v, &c->log_level);
        if (streq(k, "gpu_source"))
                return json_is_string(v) && mx_sample_source_from_string(json_string_value(v)) >= 0
                               ? load_string_key(c, k, v, &c->gpu_source)
                               : file_error(c->config_path, k, "expected \"auto\", \"nvml\", \"nvidia-smi\" or \"proc\"");
        if (streq(k, "nvml_library"))
                return load_string_key(c, k, v, &c->nvml_library);
        if (streq(k, "socket_mode"))
                return json_is_string(v) && parse_mode(json_string_value(v), &c->socket_mode) >= 0
                               ? 0
                               : file_error(c->config_path, k, "expected an octal mode string such as \"0660\"");
        if (streq(k, "recovery"))
                return json_is_string(v) && parse_recovery(json_string_value(v), &c->recovery) >= 0
                               ? 0
                               : file_error(c->config_path, k, "expected \"requeue\" or \"pause\"");
        if (streq(k, "max_requeues"))
                return json_is_integer(v) && json_integer_value(v) >= 0 &&
                                       json_integer_value(v) <= MX_MAX_REQUEUES_MAX
                               ? (c->max_requeues = (int)json_integer_value(v), 0)
                               : file_error(c->config_path, k, "expected an integer from 0 to 1000");
        if (streq(k, "run_timeout"))
                return json_duration(v, &c->run_timeout_ms) >= 0
                               ? 0
                               : file_error(c->config_path, k, "expected seconds or a duration such as \"4h\"");
        if (streq(k, "level_timeout"))
                return json_duration(v, &c->level_timeout_ms) >= 0
                               ? 0
                               : file_error(c->config_path, k, "expected seconds or a duration such as \"30m\"");
        if (streq(k, "limits"))
                return json_is_object(v) ? load_limits(c, v) : file_error(c->config_path, k, "expected an object");
        return file_error(c->config_path, k, "unknown key");
}

static int load_file(struct mx_config *c, bool required)
{
        _cleanup_json_ json_t *doc = NULL;
        json_error_t err;
        const char *k;
        json_t *v;
        int r;

        if (!required && access(c->config_path, F_OK) < 0)
                return 0;
        doc = json_load_file(c->config_path, JSON_REJECT_DUPLICATES, &err);
        if (!doc) {
                fprintf(stderr, "mxmatrixd: %s:%d:%d: %s\n", c->config_path, err.line, err.column, err.text);
                return EXIT_CONFIG;
        }
        if (!json_is_object(doc)) {
                fprintf(stderr, "mxmatrixd: %s: expected a JSON object\n", c->config_path);
                return EXIT_CONFIG;
        }
        json_object_foreach (doc, k, v) {
                r = load_key(c, k, v);
                if (r != 0)
                        return r;
        }
        return 0;
}

enum {
        OPT_CONFIG = 256,
        OPT_SOCKET,
        OPT_SOCKET_MODE,
        OPT_SOCKET_GROUP,
        OPT_ADMIN_GROUP,
        OPT_STATE_DIR,
        OPT_MATRIX,
        OPT_RECOVERY,
        OPT_MAX_REQUEUES,
        OPT_RUN_TIMEOUT,
        OPT_LEVEL_TIMEOUT,
        OPT_LOG_TARGET,
        OPT_LOG_LEVEL,
        OPT_FOREGROUND,
        OPT_VERSION,
};

static const struct option options[] = {
        { "config", required_argument, NULL, OPT_CONFIG },
        { "socket", required_argument, NULL, OPT_SOCKET },
        { "socket-mode", required_argument, NULL, OPT_SOCKET_MODE },
        { "socket-group", required_argument, NULL, OPT_SOCKET_GROUP },
        { "admin-group", required_argument, NULL, OPT_ADMIN_GROUP },
        { "state-dir", required_argument, NULL, OPT_STATE_DIR },
        { "matrix", required_argument, NULL, OPT_MATRIX },
        { "recovery", required_argument, NULL, OPT_RECOVERY },
        { "max-requeues", required_argument, NULL, OPT_MAX_REQUEUES },
        { "run-timeout", required_argument, NULL, OPT_RUN_TIMEOUT },
        { "level-timeout", required_argument, NULL, OPT_LEVEL_TIMEOUT },
        { "log-target", required_argument, NULL, OPT_LOG_TARGET },
        { "log-level", required_argument, NULL, OPT_LOG_LEVEL },
        { "foreground", no_argument, NULL, OPT_FOREGROUND },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, OPT_VERSION },
        {},
};

static int usage_error(const char *opt, const char *val, const char *what)
{
        fprintf(stderr, "mxmatrixd: --%s '%s': %s\n", opt, val, what);
        return EXIT_CONFIG;
}

/* Apply one command-line option; returns 0, -1 to exit successfully, or an exit code. */
static int apply_option(struct mx_config *c, int opt, const char *arg)
{
        switch (opt) {
        case OPT_CONFIG:
                return 0; /* handled in the first pass */
        case OPT_SOCKET:
                set_str(&c->socket_path, arg);
                return 0;
        case OPT_SOCKET_MODE:
                return parse_mode(arg, &c->socket_mode) < 0 ? usage_error("socket-mode", arg, "not an octal mode") : 0;
        case OPT_SOCKET_GROUP:
                set_str(&c->socket_group, arg);
                return 0;
        case OPT_ADMIN_GROUP:
                set_str(&c->admin_group, arg);
                return 0;
        case OPT_STATE_DIR:
                set_str(&c->state_dir, arg);
                return 0;
        case OPT_MATRIX:
                set_str(&c->matrix_path, arg);
                return 0;
        case OPT_RECOVERY:
                return parse_recovery(arg, &c->recovery) < 0 ? usage_error("recovery", arg, "expected requeue or pause")
                                                              : 0;
        case OPT_MAX_REQUEUES: {
                int64_t n;

                if (mx_parse_int64(arg, 0, MX_MAX_REQUEUES_MAX, &n) < 0)
                        return usage_error("max-requeues", arg, "expected an integer from 0 to 1000");
                c->max_requeues = (int)n;
                return 0;
        }
        case OPT_RUN_TIMEOUT:
                return mx_parse_duration_ms(arg, &c->run_timeout_ms) < 0 || c->run_timeout_ms <= 0
                               ? usage_error("run-timeout", arg, "not a duration")
                               : 0;
        case OPT_LEVEL_TIMEOUT:
                return mx_parse_duration_ms(arg, &c->level_timeout_ms) < 0 || c->level_timeout_ms <= 0
                               ? usage_error("level-timeout", arg, "not a duration")
                               : 0;
        case OPT_LOG_TARGET:
                set_str(&c->log_sink, arg);
                return 0;
        case OPT_LOG_LEVEL:
                set_str(&c->log_level, arg);
                return 0;
        case OPT_FOREGROUND:
                c->foreground = true;
                return 0;
        case 'h':
                help();
                return -1;
        case OPT_VERSION:
                printf("mxmatrixd %s\n", MX_VERSION);
                return -1;
        default:
                return 2;
        }
}

static int check_log_settings(struct mx_config *c)
{
        enum mx_log_sink sink;
        int level;

        if (c->log_sink && mx_log_parse_sink(c->log_sink, &sink) < 0)
                return usage_error("log-target", c->log_sink, "expected auto, journal or stderr");
        if (c->log_level && mx_log_parse_level(c->log_level, &level) < 0)
                return usage_error("log-level", c->log_level, "expected debug, info, notice, warning or error");
        return 0;
}

int config_parse(struct mx_config *c, int argc, char **argv)
{
        bool explicit_config = false;
        const char *env;
        int opt, r;

        /* First pass: only --config, so the file is read before flags override it. */
        opterr = 0;
        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                if (opt == OPT_CONFIG) {
                        set_str(&c->config_path, optarg);
                        explicit_config = true;
                }
        if (!c->config_path)
                c->config_path = xstrdup(MX_DEFAULT_CONFIG);
        r = load_file(c, explicit_config);
        if (r != 0)
                return r;
        env = getenv("STATE_DIRECTORY");
        if (env && *env) {
                /* systemd may pass several colon-separated paths; the first is ours. */
                set_str(&c->state_dir, env);
                if (strchr(c->state_dir, ':'))
                        *strchr(c->state_dir, ':') = '\0';
        }
        opterr = 1;
        optind = 1;
        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                r = apply_option(c, opt, optarg);
                if (r != 0)
                        return r < 0 ? -1 : r;
        }
        if (optind < argc) {
                fprintf(stderr, "mxmatrixd: unexpected argument '%s'\n", argv[optind]);
                return 2;
        }
        if (!c->socket_path)
                c->socket_path = xstrdup(MX_DEFAULT_SOCKET);
        if (!c->state_dir)
                c->state_dir = xstrdup(MX_DEFAULT_STATE_DIR);
        if (c->executor == MX_EXECUTOR_SLURM && (!c->slurm.shared_dir || c->slurm.shared_dir[0] != '/')) {
                fprintf(stderr, "mxmatrixd: %s: executor \"slurm\" needs slurm.shared_dir, an absolute path that "
                        "every node mounts at the same place\n", c->config_path);
                return EXIT_CONFIG;
        }
        return check_log_settings(c);
}
