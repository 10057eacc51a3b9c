/* SPDX-License-Identifier: MIT */
/*
 * The GPU and memory sampler: what the GPU and the server hold, sampled on the
 * event loop at a settable rate, kept per attempt as a compact summary (start,
 * end, peak, drift, a bounded series), for L3's leak verdict, later L4/L5, and
 * the health gate between runs.
 *
 * Sources, tried in this order with MX_SAMPLE_SOURCE_AUTO:
 *  - NVML, loaded at run time with dlopen("libnvidia-ml.so.1") (no build
 *    dependency; absent or failing nvmlInit → next source). Calls take
 *    microseconds and run on the sampler's timer.
 *  - nvidia-smi --query-gpu=... and --query-compute-apps=pid,used_memory
 *    --format=csv,nounits, run as a child process whose output is read on the
 *    loop, never blocking it; a child that hangs is killed after a timeout.
 *  - /proc only: no GPU figures.
 * /proc/meminfo is read with every sample. On unified-memory GPUs (NVML memory
 * NOT_SUPPORTED, nvidia-smi "[N/A]": the GB10, target-surfaces.md §D3) the
 * device has no memory figure of its own, so the judged figure (mem_used) is
 * the system's used memory, MemTotal - MemAvailable. When a process tree is
 * set, the PSS of its processes (/proc/PID/smaps_rollup) and the GPU memory of
 * those of them that are compute processes are summed too.
 *
 * Every figure is an int64_t, -1 when the source does not report it.
 * Nothing here logs; errors go to the sample's error text or *reterr.
 */
#pragma once

#include "proc.h"
#include "util.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct event_base;
struct proc_reaper;
struct mx_sampler;

#define MX_SAMPLER_INTERVAL_DEFAULT_MS 1000
#define MX_SAMPLER_INTERVAL_MIN_MS 20
#define MX_SAMPLER_INTERVAL_MAX_MS (3600 * 1000)
/* A summary keeps at most this many series points; when full, neighbours merge (max of each pair). */
#define MX_SAMPLER_SERIES_MAX 120
/* Compute processes kept per sample (a GPU shows a handful). */
#define MX_SAMPLER_PROCS_MAX 64
/* Processes of a server tree whose PSS is read per sample. */
#define MX_SAMPLER_TREE_MAX 1024
/* An nvidia-smi child that has not finished after this is killed (nvidia-smi hangs on a wedged GPU). */
#define MX_SAMPLER_SMI_TIMEOUT_DEFAULT_MS 10000
/* nvidia-smi output read per query; more is an error. */
#define MX_SAMPLER_SMI_OUTPUT_MAX (64 * 1024)
/* Length of a sample's error text, with NUL. */
#define MX_SAMPLE_ERROR_SIZE 160
/* The NVML library opened by default. */
#define MX_SAMPLER_NVML_DEFAULT "libnvidia-ml.so.1"

enum mx_sample_source {
        MX_SAMPLE_SOURCE_AUTO, /* NVML, else nvidia-smi, else /proc (the choice is made at the first sample)
                                */
        MX_SAMPLE_SOURCE_NVML,
        MX_SAMPLE_SOURCE_SMI,
        MX_SAMPLE_SOURCE_PROC, /* /proc only: no GPU figures */
        _MX_SAMPLE_SOURCE_MAX,
};
/* "auto", "nvml", "nvidia-smi", "proc". */
const char *mx_sample_source_to_string(enum mx_sample_source s);
/* The source named s, or -EINVAL. */
int mx_sample_source_from_string(const char *s);

/* The clocks event (throttle) reasons NVML and nvidia-smi report, as bits. */
enum {
        MX_THROTTLE_GPU_IDLE = 0x1,
        MX_THROTTLE_APP_CLOCKS = 0x2,
        MX_THROTTLE_SW_POWER_CAP = 0x4,
        MX_THROTTLE_HW_SLOWDOWN = 0x8,
        MX_THROTTLE_SYNC_BOOST = 0x10,
        MX_THROTTLE_SW_THERMAL = 0x20,
        MX_THROTTLE_HW_THERMAL = 0x40,
        MX_THROTTLE_HW_POWER_BRAKE = 0x80,
        MX_THROTTLE_DISPLAY_CLOCKS = 0x100,
};
/* The names of the bits set in mask ("sw_power_cap", ...; unknown bits as "0x..."), a JSON array. */
json_t *mx_throttle_to_json(int64_t mask);

struct mx_sample_proc {
        pid_t pid;
        int64_t gpu_bytes; /* -1: not reported (NVML_VALUE_NOT_AVAILABLE, "[N/A]") */
};

/* One sample. Plain data: copy it freely. */
struct mx_sample {
        int64_t at_us;                /* wall clock, µs */
        enum mx_sample_source source; /* what gave the GPU figures; PROC when nothing did */
        bool gpu_ok;                  /* the GPU source answered (the health gate's "GPU readable") */
        bool unified;                 /* the GPU reports no memory of its own: mem_* are the system's */
        /* The figure drift and leaks are judged on: device memory, or the system's on unified memory. */
        int64_t mem_used, mem_total;
        int64_t gpu_mem_used, gpu_mem_total; /* as the GPU reports them */
        int64_t sys_mem_used, sys_mem_total; /* /proc/meminfo: MemTotal - MemAvailable, MemTotal */
        int64_t tree_pss;                    /* PSS of the process tree; -1 when no tree is set */
        int64_t tree_gpu_bytes;              /* GPU memory of the tree's compute processes */
        unsigned tree_procs;                 /* processes found in the tree */
        int64_t procs_gpu_bytes;             /* GPU memory of every compute process */
        size_t n_procs; /* compute processes on the GPU (at most MX_SAMPLER_PROCS_MAX) */
        unsigned foreign_procs; /* of them, not of the process tree (set only when the tree has processes) */
        pid_t foreign_pid;      /* the first of them, 0 when none */
        struct mx_sample_proc procs[MX_SAMPLER_PROCS_MAX];
        int64_t sm_clock_mhz, mem_clock_mhz;
        int64_t power_mw;
        int64_t temp_c;
        int64_t util_pct;
        int64_t throttle;                 /* MX_THROTTLE_* bits */
        char error[MX_SAMPLE_ERROR_SIZE]; /* why the GPU source failed, "" when gpu_ok */
};

/* Every figure -1, no processes, no error. */
void mx_sample_init(struct mx_sample *s);
/* The sample as a JSON object (figures that are -1 left out), for the one-shot tool and evidence. */
json_t *mx_sample_to_json(const struct mx_sample *s);

/* One point of a summary's series: the bucket's last time and its largest figures. */
struct mx_sample_point {
        int64_t at_us;
        int64_t mem_used;
        int64_t tree_pss;
};

/* What an attempt (or a level) keeps: fixed size, whatever the number of samples. */
struct mx_sample_summary {
        enum mx_sample_source source; /* of the latest sample */
        bool unified;
        uint64_t n;            /* samples added */
        uint64_t gpu_failures; /* samples whose GPU source failed */
        int64_t first_at_us, last_at_us;
        int64_t mem_total;
        int64_t mem_start, mem_end, mem_peak, mem_min; /* mem_used; -1 until one is seen */
        int64_t tree_pss_start, tree_pss_end, tree_pss_peak;
        int64_t tree_gpu_peak;
        int64_t power_peak_mw, temp_peak_c;
        int64_t sm_clock_min, sm_clock_max, mem_clock_min, mem_clock_max;
        /* the SM clock of samples whose reasons did not include GPU idle (the clock under load) */
        int64_t sm_clock_busy_min, sm_clock_busy_max;
        int64_t throttle_seen; /* union of the reasons seen; -1 if never reported */
        unsigned foreign_procs_max; /* most compute processes outside the tree in one sample */
        pid_t foreign_pid;          /* the first one seen, 0 when none */
        char last_error[MX_SAMPLE_ERROR_SIZE];
        /* The series: n_points buckets of `stride` samples each (the last one may be partial). */
        size_t n_points;
        uint64_t stride;
        uint64_t in_last; /* samples in the last bucket */
        struct mx_sample_point points[MX_SAMPLER_SERIES_MAX];
};

void mx_sample_summary_init(struct mx_sample_summary *sum);
void mx_sample_summary_add(struct mx_sample_summary *sum, const struct mx_sample *s);
/* mem_end - mem_start in bytes (0 without two samples); the growth in percent of mem_start, or -1. */
int64_t mx_sample_summary_drift(const struct mx_sample_summary *sum, double *ret_pct);
/*
 * The summary as JSON: {"source", "unified", "samples", "first_at", "last_at", "memory": {"total", "start",
 * "end", "peak", "min", "drift", "drift_pct"}, "tree": {...}, "power_peak_mw", "temp_peak_c",
 * "sm_clock_mhz": [min, max], "mem_clock_mhz": [min, max], "throttle": [names], "gpu_failures", "error",
 * "series":
 * {"stride", "t": [s since first], "mem": [bytes], "pss": [bytes]}}. Figures never seen are left out.
 */
json_t *mx_sample_summary_to_json(const struct mx_sample_summary *sum);

/* Parsers of the sources' text (no I/O), for the sampler and its tests. */

/*
 * nvidia-smi --query-gpu=... --format=csv[,nounits] with its header line
 * (columns found by header name, aliases such as clocks.sm/clocks.current.sm
 * accepted, units taken from the header "[MiB]" or the value "1542 MiB"); the
 * first data row fills s's GPU figures. "[N/A]", "[Not Supported]" leave a figure
 * at -1; memory.used unreported sets s->unified. -EBADMSG with a reason when
 * there is no header or no row.
 */
int mx_sample_parse_smi_gpu(const char *text, size_t n, struct mx_sample *s, char **reterr);
/* nvidia-smi --query-compute-apps=pid,used_memory --format=csv[,nounits] with its header: s->procs. */
int mx_sample_parse_smi_apps(const char *text, size_t n, struct mx_sample *s, char **reterr);
/* /proc/meminfo: MemTotal and MemAvailable in bytes; -EBADMSG if either is missing. */
int mx_sample_parse_meminfo(const char *text, size_t n, int64_t *ret_total, int64_t *ret_available);
/* /proc/PID/smaps_rollup: its Pss line in bytes; -EBADMSG if none. */
int mx_sample_parse_smaps_rollup(const char *text, size_t n, int64_t *ret_pss);

/* The sampler. */

struct mx_sampler_opts {
        enum mx_sample_source source; /* AUTO by default */
        int64_t interval_ms;          /* 0: MX_SAMPLER_INTERVAL_DEFAULT_MS */
        unsigned gpu;                 /* device index */
        const char *nvml_path;        /* NULL: MX_SAMPLER_NVML_DEFAULT */
        const char *smi_path;         /* NULL: "nvidia-smi", searched in PATH */
        int64_t smi_timeout_ms;       /* 0: MX_SAMPLER_SMI_TIMEOUT_DEFAULT_MS */
};

/* A sample was taken; every sample goes to the summary first. The callback may stop or free the sampler. */
typedef void (*mx_sampler_cb)(struct mx_sampler *s, const struct mx_sample *sample, void *userdata);

/*
 * A sampler on base; reaper collects its nvidia-smi children (the daemon's one
 * reaper, proc-reaper.h). With source NVML the library must load and
 * initialise here (-ENOENT / -EIO with a reason); with SMI or AUTO the
 * nvidia-smi choice is made at the first sample. Nothing is sampled before
 * mx_sampler_start() or mx_sampler_request().
 */
int mx_sampler_new(struct event_base *base, struct proc_reaper *reaper, const struct mx_sampler_opts *o,
                   mx_sampler_cb cb, void *userdata, struct mx_sampler **ret, char **reterr);
/* Kills an nvidia-smi child in flight (the reaper reaps it), unloads NVML. */
struct mx_sampler *mx_sampler_free(struct mx_sampler *s);
DEFINE_POINTER_CLEANUP(struct mx_sampler, mx_sampler_free)

/*
 * The server process tree whose memory counts: the processes m matches
 * (proc_scan(): its tag, group, session) and, when root > 0, root itself; with
 * their descendants. NULL m and root 0: no tree. Takes effect at the next sample.
 */
void mx_sampler_set_tree(struct mx_sampler *s, const struct proc_match *m, pid_t root);

/* Sample every interval, the first one at once. A tick while an nvidia-smi sample is in flight is skipped.
 */
int mx_sampler_start(struct mx_sampler *s);
/* Stop the periodic samples (one in flight is still delivered). */
void mx_sampler_stop(struct mx_sampler *s);
/* One sample as soon as possible (the health gate, L3's before/after), delivered to the callback. */
int mx_sampler_request(struct mx_sampler *s);

/* The source that answered last (AUTO before the first sample). */
enum mx_sample_source mx_sampler_source(const struct mx_sampler *s);
/* The summary of every sample since new or the last reset. */
const struct mx_sample_summary *mx_sampler_summary(const struct mx_sampler *s);
void mx_sampler_reset_summary(struct mx_sampler *s);
/*
 * A second summary of the samples from now on (a level's window: L4's
 * validity reads its throttle reasons, clocks and foreign processes);
 * mx_sampler_window() gives it, or NULL before any begin.
 */
void mx_sampler_window_begin(struct mx_sampler *s);
const struct mx_sample_summary *mx_sampler_window(const struct mx_sampler *s);
/* The last sample delivered, or NULL. */
const struct mx_sample *mx_sampler_last(const struct mx_sampler *s);
/*
 * The GPU's total energy since the driver loaded, in millijoules (NVML's
 * nvmlDeviceGetTotalEnergyConsumption, Volta and newer), read now: L4 reads it
 * around each test for joules per token. -EOPNOTSUPP with a reason when the
 * GPU does not report energy (NVML_ERROR_NOT_SUPPORTED, or a library without
 * the function), -ENODEV when the sampler does not read NVML (nvidia-smi or
 * /proc only: no energy counter there).
 */
int mx_sampler_energy_mj(struct mx_sampler *s, int64_t *ret_mj, char **reterr);
/* Ticks skipped because a sample was still in flight. */
uint64_t mx_sampler_skipped(const struct mx_sampler *s);
