/* SPDX-License-Identifier: MIT */
/*
 * Memory like with like: which figure a memory comparison (L3's growth, L4's
 * drift and peak) judges, so that every sample it compares carries that same
 * figure. Three kinds, one per machine kind:
 *
 *   gpu     device memory of the server's compute processes (a discrete GPU)
 *   system  the unified-memory system figure, MemTotal - MemAvailable (the
 *           GB10: CUDA allocations are in neither a process's PSS/RSS nor
 *           its cgroup, target-surfaces.md §D3, so a device leak shows only
 *           here; MemAvailable leaves reclaimable page cache out)
 *   pss     host PSS of the server's processes (no GPU figure)
 *
 * A kind is judged only when the first and the last sample of the window
 * both carry it; otherwise the next kind of the machine's order is, and the
 * reason is said. Pure: no I/O.
 */
#pragma once

#include "levels.h"

struct mx_sample;

enum mx_mem_kind {
        MX_MEM_GPU,
        MX_MEM_SYSTEM,
        MX_MEM_PSS,
        _MX_MEM_KIND_MAX,
};

/* "gpu", "system", "pss". */
const char *mx_mem_kind_to_string(enum mx_mem_kind k);
/* A phrase naming what the kind measures, for messages and metrics. */
const char *mx_mem_kind_describe(enum mx_mem_kind k);
/* The figure of kind k in m, or -1 when m does not carry it. */
int64_t mx_mem_sample_figure(const struct mx_mem_sample *m, enum mx_mem_kind k);

/*
 * The GPU sampler's last sample (sampler.h; NULL: none) into m, which holds
 * the server's PSS and /proc/meminfo's system figure: the device memory of
 * the server's compute processes, the system figure when m has none, and
 * whether the GPU has unified memory (the GB10), which makes the system figure
 * the one judged.
 */
void mx_mem_sample_add_gpu(struct mx_mem_sample *m, const struct mx_sample *last);

/* One kind's figures over a window. */
struct mx_mem_series {
        int64_t first, last, peak; /* -1 until seen */
        bool at_first;             /* the window's first sample carried it */
        uint64_t n;                /* samples that carried it */
        uint64_t last_at;          /* 1-based number of the last sample that carried it */
};

struct mx_mem_track {
        uint64_t n;    /* samples added */
        bool unified;  /* some sample said the GPU has no memory of its own (the GB10) */
        bool gpu_seen; /* some sample carried a device figure */
        struct mx_mem_series k[_MX_MEM_KIND_MAX];
};

void mx_mem_track_init(struct mx_mem_track *t);
void mx_mem_track_add(struct mx_mem_track *t, const struct mx_mem_sample *m);
/* Did kind k's figure come with the first and the last sample (and with two samples at least)? */
bool mx_mem_track_complete(const struct mx_mem_track *t, enum mx_mem_kind k);
/*
 * The kind to judge: the machine's order (unified memory: system, pss;
 * discrete GPU: gpu, pss; none: pss), the first complete one. -ENODATA when
 * none is. *ret_note (may be NULL; caller frees) says why a preferred kind was
 * passed over, or NULL when the first choice held.
 */
int mx_mem_track_pick(const struct mx_mem_track *t, enum mx_mem_kind *ret, char **ret_note);
/* last - first of kind k, and the growth as a fraction of first (NAN when first is 0). */
int64_t mx_mem_track_growth(const struct mx_mem_track *t, enum mx_mem_kind k, double *ret_frac);
/*
 * The window as JSON: {"figure", "figure_is", "first", "last", "peak",
 * "growth", "samples", "note"?, "kinds": {kind: {"first", "last", "peak",
 * "samples", "complete"}}}; {"samples": n, "note"} when no kind is complete.
 */
json_t *mx_mem_track_json(const struct mx_mem_track *t);
