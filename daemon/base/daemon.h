/* SPDX-License-Identifier: MIT */
/*
 * The daemon's shared state: configuration, the open database, the event
 * loop and the parts that hang off it. One instance, created by main.c.
 */
#pragma once

#include "util.h"

#include <event2/event.h>
#include <sys/types.h>

struct mx_db;
struct mx_control;
struct mx_sched;
struct mx_notify;
struct proc_reaper;
struct mx_http;
struct mx_matrix;
struct mx_streams;
struct mx_cgroup;
struct mx_executor_slurm;
struct mx_bisect;

struct mx_limits {
        size_t frame_bytes;          /* one request line */
        unsigned connections;        /* all clients */
        unsigned connections_per_uid;
        int64_t queued_runs_per_uid; /* runs a user may have waiting */
        int64_t plan_runs;           /* runs one submission may create */
        size_t output_bytes;         /* unsent reply data per connection before it is dropped */
        int64_t frame_timeout_ms;    /* a partial request line, or a missing hello, is dropped after this */
        int64_t idle_timeout_ms;     /* a connection with no request and no stream open is closed after this */
        size_t log_bytes;            /* captured server log per attempt */
};

/* What start-up does with a run the previous daemon left running (recover.c, scheduler.c). */
enum mx_recovery {
        MX_RECOVERY_REQUEUE, /* an interrupted run goes back to the queue (default: overnight sweeps) */
        MX_RECOVERY_PAUSE,   /* it goes back to the queue and the queue is paused */
};

enum mx_executor {
        MX_EXECUTOR_LOCAL, /* the serial runner in this process (default) */
        MX_EXECUTOR_SLURM, /* each run a Slurm job running mxmatrix-run (executor-slurm.c) */
};

/* The "slurm" object of the settings file (docs/mxmatrixd.8, SLURM). */
struct mx_slurm_config {
        char *partition, *account, *gres; /* NULL: Slurm's default; gres e.g. "gpu:1" */
        char **sbatch_args;               /* extra arguments, NULL-terminated, or NULL */
        char *shared_dir;                 /* run directories, the same path on every node (required) */
        char *run_program;                /* mxmatrix-run as the nodes see it (default: found in PATH) */
        int max_in_flight;                /* 0: as many as Slurm starts (submit while none is pending) */
        int64_t poll_ms;                  /* squeue/sacct interval */
};

struct mx_config {
        char *config_path;
        char *socket_path;
        mode_t socket_mode;
        char *socket_group;  /* NULL: the daemon's group */
        char *admin_group;   /* NULL: root only */
        char *state_dir;
        char *matrix_path;
        enum mx_recovery recovery;
        int max_requeues;    /* an interrupted run goes back to the queue at most this often */
        struct mx_limits limits;
        int64_t run_timeout_ms;
        int64_t level_timeout_ms;
        bool foreground;
        char *log_sink;
        char *log_level;
        char *gpu_source;   /* the health gate's sampler (sampler.h): auto, nvml, nvidia-smi, proc; NULL: auto */
        char *nvml_library; /* NULL: libnvidia-ml.so.1 */
        enum mx_executor executor;
        struct mx_slurm_config slurm;
};

struct mx_daemon {
        struct mx_config cfg;
        struct event_base *base;
        struct mx_db *db;
        struct mx_matrix *matrix; /* NULL when no matrix is configured or it failed to load */
        char *matrix_error;       /* why the matrix is not loaded */
        struct mx_control *control;
        struct mx_sched *sched;
        struct mx_notify *notify;
        struct proc_reaper *reaper;
        struct mx_http *http;        /* probes of target servers (http.h) */
        struct mx_streams *streams; /* follow and logs -f subscribers (stream.c) */
        gid_t admin_gid;
        bool has_admin_gid;
        bool paused;
        char *pause_reason;       /* why the daemon paused the queue itself (health gate, leftovers, disk); NULL */
        struct mx_cgroup *cgroup; /* where runs' cgroups go (cgroup.h); NULL: runs have none */
        struct mx_health *health; /* the GPU part of the health gate (health.h) */
        struct mx_executor_slurm *slurm; /* executor "slurm": runs in flight as Slurm jobs; NULL: local */
        struct mx_bisect *bisect;        /* bisections in progress (run/bisect.h) */
        int lock_fd;              /* the state directory's lock, held for the daemon's life */
        bool stopping;
        char *boot_id;
        int64_t started_at; /* wall clock, µs */
};
