/* SPDX-License-Identifier: MIT */
/*
 * Profiler reports: the kernels a GPU ran, read from the CSV that Nsight
 * Systems and Nsight Compute print (target-surfaces.md §D), for the L1.5
 * kernel gate (kgate.h) and for the "observed kernels" of a test log.
 *
 * Formats, recognised by their header line (the first CSV line whose columns
 * fit one of them; lines before it are skipped):
 *
 *   nsys cuda_gpu_kern_sum (old name gpukernsum)  one row per kernel (per
 *        kernel and grid in 2022.4 with GridXYZ/BlockXYZ columns): Instances,
 *        "Total Time (<unit>)", Avg/Min/Max, Name last. The unit in the
 *        header (--timeunit) scales every time column.
 *   nsys cuda_gpu_trace (old gputrace)  one row per kernel launch or memory
 *        operation: "Start (<unit>)", "Duration (<unit>)", Name. Memory rows
 *        ("[CUDA memcpy Host-to-Device]", "[CUDA memset]") are counted in
 *        n_skipped, not as kernels.
 *   ncu --csv (details page)  one row per launch and metric: "ID", "Kernel
 *        Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value",
 *        with or without the Rule columns (and the older "Kernel Time"
 *        column); rows of one ID are one launch; the "Duration" metric (or
 *        gpu__time_duration.sum) gives its time.
 *   ncu --csv --print-summary per-kernel  one row per kernel (and launch
 *        configuration) and metric: "Invocations", "Minimum", "Maximum",
 *        "Average".
 *   ncu --csv --page raw  one row per launch, one column per metric, and a
 *        row of units right after the header; gpu__time_duration.sum gives
 *        the time.
 *
 * Kernels are aggregated by name: instances add up, times add up, min/max
 * combine. Numbers may carry thousands separators in the profiler's locale
 * ("1,215,000,000.00", "1.215.000.000,00", "1 215 000 000,00"); the first
 * unambiguous number fixes the file's format (mx_profreport_parse_number()).
 */
#pragma once

#include "util.h"

#define MX_PROFREPORT_KERNELS_MAX 65536 /* distinct kernel names in one report */
#define MX_PROFREPORT_METRICS_MAX 1024  /* distinct (section, metric, unit) per kernel */
/* Kernel time of one report, all kernels together: 1e15 ns (11.6 days of GPU time), far past any capture, and
 * 1e18 ps fits an int64_t (dprof.c sums picoseconds). A time beyond it, NaN, Inf or negative is -EBADMSG. */
#define MX_PROFREPORT_TIME_MAX_NS 1e15
/* A report file the daemon reads (mx_profreport_parse_regular()): 64 MiB, ~400 000 rows of an nsys trace; a
 * larger capture is summarised with nsys stats --report cuda_gpu_kern_sum (one row per kernel). */
#define MX_PROFREPORT_FILE_MAX (64ULL << 20)

enum mx_profreport_format {
        MX_PROFREPORT_NSYS_KERN_SUM,
        MX_PROFREPORT_NSYS_GPU_TRACE,
        MX_PROFREPORT_NCU_DETAILS,
        MX_PROFREPORT_NCU_SUMMARY,
        MX_PROFREPORT_NCU_RAW,
        _MX_PROFREPORT_FORMAT_MAX,
        _MX_PROFREPORT_FORMAT_INVALID = -EINVAL,
};
/* "nsys-kern-sum", "nsys-gpu-trace", "ncu-details", "ncu-summary", "ncu-raw" */
const char *mx_profreport_format_to_string(enum mx_profreport_format f);
/* A phrase for people: "nsys cuda_gpu_kern_sum", "ncu --csv details page", ... */
const char *mx_profreport_format_describe(enum mx_profreport_format f);

/* Which tool's formats auto-detection may pick (mxmatrix gate --format). */
enum mx_profreport_tool {
        MX_PROFREPORT_TOOL_ANY,
        MX_PROFREPORT_TOOL_NSYS,
        MX_PROFREPORT_TOOL_NCU,
        _MX_PROFREPORT_TOOL_MAX,
        _MX_PROFREPORT_TOOL_INVALID = -EINVAL,
};
/* "auto", "nsys", "ncu" */
enum mx_profreport_tool mx_profreport_tool_from_string(const char *s);

/*
 * An ncu metric of one kernel, over its launches. Metrics that ncu printed
 * in different units (it scales them per launch: "Mbyte/second",
 * "Gbyte/second") are separate entries. Non-numeric values ("n/a") are not
 * counted.
 */
struct mx_profreport_metric {
        char *section; /* "" on the raw page */
        char *name;
        char *unit;
        double sum; /* of the values over n launches (summary: Average x Invocations) */
        double min, max;
        uint64_t n;
};

struct mx_profreport_kernel {
        char *name;
        uint64_t instances; /* launches: Instances (nsys), distinct IDs (ncu), Invocations (ncu summary) */
        uint64_t n_timed;   /* of those, how many the report gives a duration for */
        double total_ns;    /* sum of the durations of the n_timed launches */
        double min_ns, max_ns;
        struct mx_profreport_metric *metrics; /* ncu only */
        size_t n_metrics;
};

struct mx_profreport {
        enum mx_profreport_format format;
        struct mx_profreport_kernel *kernels; /* in order of first appearance */
        size_t n_kernels;
        uint64_t n_launches; /* sum of instances */
        uint64_t n_rows;     /* data rows read */
        uint64_t n_skipped;  /* rows that were not kernels (memory operations in a trace) */
        unsigned n_noise;    /* lines that were not part of the table */
        char decimal_sep;    /* number format seen in the file; '\0' where nothing showed it */
        char group_sep;      /* ' ' stands for any space (U+0020, U+00A0, U+202F) */

        /* private: name -> index + 1, open addressing */
        size_t *index;
        size_t index_size;
        size_t alloc_kernels;
};

struct mx_profreport *mx_profreport_free(struct mx_profreport *r);
DEFINE_POINTER_CLEANUP(struct mx_profreport, mx_profreport_free)

/*
 * Parse a report from a buffer or a file. tool limits which formats may be
 * detected. Errors: -EBADMSG (no recognised header: the reason lists the
 * formats tried; malformed CSV or a bad value: the reason names the line and
 * the column), -E2BIG (a limit of csv.h or MX_PROFREPORT_*), or a negative
 * errno from open()/read() for a file; *reterr (optional) gets the reason.
 */
int mx_profreport_parse_buffer(const char *data, size_t len, enum mx_profreport_tool tool,
                               struct mx_profreport **ret, char **reterr);
int mx_profreport_parse_file(const char *path, enum mx_profreport_tool tool, struct mx_profreport **ret,
                             char **reterr);
/* From fd (not owned), reading at most max_bytes of it (0: no bound; -EFBIG beyond it, with the line). */
int mx_profreport_parse_fd(int fd, uint64_t max_bytes, enum mx_profreport_tool tool, struct mx_profreport **ret,
                           char **reterr);
/*
 * The daemon's read of a report a server wrote (L1.5, report analysis: on the event loop): path must be a
 * regular file of at most max_bytes (MX_PROFREPORT_FILE_MAX), opened without following a symbolic link and
 * without waiting (mx_open_regular(): a FIFO is refused, not waited on), and no more than max_bytes is read
 * even if it grows. The path-based mx_profreport_parse_file() stays for mxmatrix gate, which reads what its
 * user names (a symbolic link, a pipe of a shell's <(...)), in a process of its own.
 */
int mx_profreport_parse_regular(const char *path, uint64_t max_bytes, enum mx_profreport_tool tool,
                                struct mx_profreport **ret, char **reterr);

const struct mx_profreport_kernel *mx_profreport_find(const struct mx_profreport *r, const char *name);
/* Mean duration of a kernel's timed launches in ns, or -1 when the report gives none. */
double mx_profreport_kernel_avg_ns(const struct mx_profreport_kernel *k);
const struct mx_profreport_metric *mx_profreport_kernel_metric(const struct mx_profreport_kernel *k,
                                                               const char *name);

/* The number format of one file, learnt from its numbers ('\0' = not known yet). */
struct mx_numfmt {
        char decimal; /* '.' or ',' */
        char group;   /* ',', '.', or ' ' for spaces and apostrophes */
};

/*
 * Parse a number printed by a profiler: optional sign, digits with optional
 * group separators (',', '.', spaces, no-break spaces, apostrophes), optional
 * decimal part, optional exponent (plain '.' numbers only). A number with a
 * single separator followed by exactly three digits ("56,288") is ambiguous:
 * it follows *fmt when that is known, else it is read as grouped (the tools
 * print fractions with two digits). Unambiguous numbers teach *fmt.
 * -EINVAL: not a number; -EDOM: contradicts *fmt (e.g. "1.5" after
 * "1 215,00").
 */
int mx_profreport_parse_number(const char *s, struct mx_numfmt *fmt, double *ret);
