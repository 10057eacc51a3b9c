/* SPDX-License-Identifier: MIT */
/* The GPU and memory sampler (see sampler.h). */
#include "sampler.h"

#include "csv.h"
#include "lines.h"
#include "proc-reaper.h"

#include <dirent.h>
#include <dlfcn.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern char **environ;

static const char *const source_names[_MX_SAMPLE_SOURCE_MAX] = {
        [MX_SAMPLE_SOURCE_AUTO] = "auto",
        [MX_SAMPLE_SOURCE_NVML] = "nvml",
        [MX_SAMPLE_SOURCE_SMI] = "nvidia-smi",
        [MX_SAMPLE_SOURCE_PROC] = "proc",
};

const char *mx_sample_source_to_string(enum mx_sample_source s)
{
        return s >= 0 && s < _MX_SAMPLE_SOURCE_MAX ? source_names[s] : NULL;
}

int mx_sample_source_from_string(const char *s)
{
        for (int i = 0; i < _MX_SAMPLE_SOURCE_MAX; i++)
                if (streq_ptr(s, source_names[i]))
                        return i;
        return -EINVAL;
}

json_t *mx_throttle_to_json(int64_t mask)
{
        static const struct {
                int64_t bit;
                const char *name;
        } names[] = {
                {MX_THROTTLE_GPU_IDLE, "gpu_idle"},
                {MX_THROTTLE_APP_CLOCKS, "applications_clocks_setting"},
                {MX_THROTTLE_SW_POWER_CAP, "sw_power_cap"},
                {MX_THROTTLE_HW_SLOWDOWN, "hw_slowdown"},
                {MX_THROTTLE_SYNC_BOOST, "sync_boost"},
                {MX_THROTTLE_SW_THERMAL, "sw_thermal_slowdown"},
                {MX_THROTTLE_HW_THERMAL, "hw_thermal_slowdown"},
                {MX_THROTTLE_HW_POWER_BRAKE, "hw_power_brake_slowdown"},
                {MX_THROTTLE_DISPLAY_CLOCKS, "display_clock_setting"},
        };
        json_t *a = json_array();
        int64_t rest = mask;

        if (mask <= 0)
                return a;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (mask & names[i].bit) {
                        json_array_append_new(a, json_string(names[i].name));
                        rest &= ~names[i].bit;
                }
        if (rest) {
                char hex[32];
                snprintf(hex, sizeof(hex), "0x%" PRIx64, (uint64_t)rest);
                json_array_append_new(a, json_string(hex));
        }
        return a;
}

void mx_sample_init(struct mx_sample *s)
{
        *s = (struct mx_sample){
                .source = MX_SAMPLE_SOURCE_PROC,
                .mem_used = -1,
                .mem_total = -1,
                .gpu_mem_used = -1,
                .gpu_mem_total = -1,
                .sys_mem_used = -1,
                .sys_mem_total = -1,
                .tree_pss = -1,
                .tree_gpu_bytes = -1,
                .procs_gpu_bytes = -1,
                .sm_clock_mhz = -1,
                .mem_clock_mhz = -1,
                .power_mw = -1,
                .temp_c = -1,
                .util_pct = -1,
                .throttle = -1,
        };
}

static void set_figure(json_t *o, const char *key, int64_t v)
{
        if (v >= 0)
                json_object_set_new(o, key, json_integer(v));
}

json_t *mx_sample_to_json(const struct mx_sample *s)
{
        json_t *o = json_object(), *procs = json_array();

        json_object_set_new(o, "at", json_integer(s->at_us));
        json_object_set_new(o, "source", json_string(mx_sample_source_to_string(s->source)));
        json_object_set_new(o, "gpu_ok", json_boolean(s->gpu_ok));
        json_object_set_new(o, "unified", json_boolean(s->unified));
        set_figure(o, "mem_used", s->mem_used);
        set_figure(o, "mem_total", s->mem_total);
        set_figure(o, "gpu_mem_used", s->gpu_mem_used);
        set_figure(o, "gpu_mem_total", s->gpu_mem_total);
        set_figure(o, "sys_mem_used", s->sys_mem_used);
        set_figure(o, "sys_mem_total", s->sys_mem_total);
        if (s->tree_pss >= 0) {
                json_object_set_new(o, "tree_pss", json_integer(s->tree_pss));
                json_object_set_new(o, "tree_procs", json_integer(s->tree_procs));
                set_figure(o, "tree_gpu_bytes", s->tree_gpu_bytes);
        }
        set_figure(o, "procs_gpu_bytes", s->procs_gpu_bytes);
        for (size_t i = 0; i < s->n_procs; i++) {
                json_t *p = json_object();
                json_object_set_new(p, "pid", json_integer(s->procs[i].pid));
                set_figure(p, "gpu_bytes", s->procs[i].gpu_bytes);
                json_array_append_new(procs, p);
        }
        json_object_set_new(o, "procs", procs);
        set_figure(o, "sm_clock_mhz", s->sm_clock_mhz);
        set_figure(o, "mem_clock_mhz", s->mem_clock_mhz);
        set_figure(o, "power_mw", s->power_mw);
        set_figure(o, "temp_c", s->temp_c);
        set_figure(o, "util_pct", s->util_pct);
        if (s->throttle >= 0) {
                json_object_set_new(o, "throttle_mask", json_integer(s->throttle));
                json_object_set_new(o, "throttle", mx_throttle_to_json(s->throttle));
        }
        if (s->error[0])
                json_object_set_new(o, "error", json_string(s->error));
        return o;
}

/* ---- summaries ---- */

void mx_sample_summary_init(struct mx_sample_summary *sum)
{
        *sum = (struct mx_sample_summary){
                .source = MX_SAMPLE_SOURCE_AUTO,
                .mem_total = -1,
                .mem_start = -1,
                .mem_end = -1,
                .mem_peak = -1,
                .mem_min = -1,
                .tree_pss_start = -1,
                .tree_pss_end = -1,
                .tree_pss_peak = -1,
                .tree_gpu_peak = -1,
                .power_peak_mw = -1,
                .temp_peak_c = -1,
                .sm_clock_min = -1,
                .sm_clock_max = -1,
                .sm_clock_busy_min = -1,
                .sm_clock_busy_max = -1,
                .mem_clock_min = -1,
                .mem_clock_max = -1,
                .throttle_seen = -1,
                .stride = 1,
        };
}

static void track(int64_t v, int64_t *min, int64_t *max)
{
        if (v < 0)
                return;
        if (min && (*min < 0 || v < *min))
                *min = v;
        if (max && v > *max)
                *max = v;
}

void mx_sample_summary_add(struct mx_sample_summary *sum, const struct mx_sample *s)
{
        struct mx_sample_point *p;

        if (sum->n++ == 0)
                sum->first_at_us = s->at_us;
        sum->last_at_us = s->at_us;
        sum->source = s->source;
        sum->unified = s->unified;
        if (s->error[0]) {
                sum->gpu_failures++;
                snprintf(sum->last_error, sizeof(sum->last_error), "%s", s->error);
        }
        if (s->mem_used >= 0) {
                if (sum->mem_start < 0)
                        sum->mem_start = s->mem_used;
                sum->mem_end = s->mem_used;
                track(s->mem_used, &sum->mem_min, &sum->mem_peak);
        }
        if (s->mem_total >= 0)
                sum->mem_total = s->mem_total;
        if (s->tree_pss >= 0) {
                if (sum->tree_pss_start < 0)
                        sum->tree_pss_start = s->tree_pss;
                sum->tree_pss_end = s->tree_pss;
                track(s->tree_pss, NULL, &sum->tree_pss_peak);
        }
        track(s->tree_gpu_bytes, NULL, &sum->tree_gpu_peak);
        track(s->power_mw, NULL, &sum->power_peak_mw);
        track(s->temp_c, NULL, &sum->temp_peak_c);
        track(s->sm_clock_mhz, &sum->sm_clock_min, &sum->sm_clock_max);
        track(s->mem_clock_mhz, &sum->mem_clock_min, &sum->mem_clock_max);
        if (s->throttle < 0 || !(s->throttle & MX_THROTTLE_GPU_IDLE))
                track(s->sm_clock_mhz, &sum->sm_clock_busy_min, &sum->sm_clock_busy_max);
        if (s->foreign_procs > sum->foreign_procs_max)
                sum->foreign_procs_max = s->foreign_procs;
        if (!sum->foreign_pid && s->foreign_pid)
                sum->foreign_pid = s->foreign_pid;
        if (s->throttle >= 0)
                sum->throttle_seen = (sum->throttle_seen < 0 ? 0 : sum->throttle_seen) | s->throttle;

        /* The series: a new bucket when the last is full; halve the resolution when all are. */
        if (sum->n_points == 0 || sum->in_last >= sum->stride) {
                if (sum->n_points == MX_SAMPLER_SERIES_MAX) {
                        for (size_t i = 0; i < MX_SAMPLER_SERIES_MAX / 2; i++) {
                                const struct mx_sample_point *a = &sum->points[2 * i],
                                                             *b = &sum->points[2 * i + 1];
                                sum->points[i] = (struct mx_sample_point){
                                        .at_us = b->at_us,
                                        .mem_used = MX_MAX(a->mem_used, b->mem_used),
                                        .tree_pss = MX_MAX(a->tree_pss, b->tree_pss),
                                };
                        }
                        sum->n_points = MX_SAMPLER_SERIES_MAX / 2;
                        sum->stride *= 2;
                }
                sum->points[sum->n_points++] = (struct mx_sample_point){.mem_used = -1, .tree_pss = -1};
                sum->in_last = 0;
        }
        p = &sum->points[sum->n_points - 1];
        p->at_us = s->at_us;
        p->mem_used = MX_MAX(p->mem_used, s->mem_used);
        p->tree_pss = MX_MAX(p->tree_pss, s->tree_pss);
        sum->in_last++;
}

int64_t mx_sample_summary_drift(const struct mx_sample_summary *sum, double *ret_pct)
{
        int64_t d = sum->mem_start >= 0 && sum->mem_end >= 0 ? sum->mem_end - sum->mem_start : 0;

        if (ret_pct)
                *ret_pct = sum->mem_start > 0 ? 100.0 * (double)d / (double)sum->mem_start : -1;
        return d;
}

static json_t *pair_json(int64_t a, int64_t b)
{
        return json_pack("[II]", (json_int_t)a, (json_int_t)b);
}

json_t *mx_sample_summary_to_json(const struct mx_sample_summary *sum)
{
        json_t *o = json_object(), *mem = json_object(), *series, *t, *m, *pss;
        double pct;
        int64_t drift = mx_sample_summary_drift(sum, &pct);

        json_object_set_new(o, "source", json_string(strna(mx_sample_source_to_string(sum->source))));
        json_object_set_new(o, "unified", json_boolean(sum->unified));
        json_object_set_new(o, "samples", json_integer((json_int_t)sum->n));
        if (sum->n == 0)
                goto done;
        json_object_set_new(o, "first_at", json_integer(sum->first_at_us));
        json_object_set_new(o, "last_at", json_integer(sum->last_at_us));
        if (sum->mem_start >= 0) {
                set_figure(mem, "total", sum->mem_total);
                json_object_set_new(mem, "start", json_integer(sum->mem_start));
                json_object_set_new(mem, "end", json_integer(sum->mem_end));
                json_object_set_new(mem, "peak", json_integer(sum->mem_peak));
                json_object_set_new(mem, "min", json_integer(sum->mem_min));
                json_object_set_new(mem, "drift", json_integer(drift));
                if (pct >= -100)
                        json_object_set_new(mem, "drift_pct", json_real(round(pct * 100) / 100));
        }
        json_object_set_new(o, "memory", mem);
        if (sum->tree_pss_start >= 0) {
                json_t *tree = json_object();
                json_object_set_new(tree, "pss_start", json_integer(sum->tree_pss_start));
                json_object_set_new(tree, "pss_end", json_integer(sum->tree_pss_end));
                json_object_set_new(tree, "pss_peak", json_integer(sum->tree_pss_peak));
                set_figure(tree, "gpu_peak", sum->tree_gpu_peak);
                json_object_set_new(o, "tree", tree);
        }
        set_figure(o, "power_peak_mw", sum->power_peak_mw);
        set_figure(o, "temp_peak_c", sum->temp_peak_c);
        if (sum->sm_clock_min >= 0)
                json_object_set_new(o, "sm_clock_mhz", pair_json(sum->sm_clock_min, sum->sm_clock_max));
        if (sum->sm_clock_busy_min >= 0)
                json_object_set_new(o, "sm_clock_busy_mhz",
                                    pair_json(sum->sm_clock_busy_min, sum->sm_clock_busy_max));
        if (sum->foreign_procs_max > 0) {
                json_object_set_new(o, "foreign_procs_max", json_integer(sum->foreign_procs_max));
                json_object_set_new(o, "foreign_pid", json_integer(sum->foreign_pid));
        }
        if (sum->mem_clock_min >= 0)
                json_object_set_new(o, "mem_clock_mhz", pair_json(sum->mem_clock_min, sum->mem_clock_max));
        if (sum->throttle_seen >= 0)
                json_object_set_new(o, "throttle", mx_throttle_to_json(sum->throttle_seen));
        if (sum->gpu_failures > 0) {
                json_object_set_new(o, "gpu_failures", json_integer((json_int_t)sum->gpu_failures));
                json_object_set_new(o, "error", json_string(sum->last_error));
        }
        series = json_object();
        t = json_array();
        m = json_array();
        pss = json_array();
        for (size_t i = 0; i < sum->n_points; i++) {
                const struct mx_sample_point *p = &sum->points[i];
                json_array_append_new(t, json_real(round((double)(p->at_us - sum->first_at_us) / 1e5) / 10));
                json_array_append_new(m, p->mem_used >= 0 ? json_integer(p->mem_used) : json_null());
                json_array_append_new(pss, p->tree_pss >= 0 ? json_integer(p->tree_pss) : json_null());
        }
        json_object_set_new(series, "stride", json_integer((json_int_t)sum->stride));
        json_object_set_new(series, "t", t);
        json_object_set_new(series, "mem", m);
        if (sum->tree_pss_start >= 0)
                json_object_set_new(series, "pss", pss);
        else
                json_decref(pss);
        json_object_set_new(o, "series", series);
done:
        if (json_object_size(mem) == 0 && !json_object_get(o, "memory"))
                json_decref(mem);
        return o;
}

/* ---- parsers ---- */

enum smi_field {
        F_INDEX,
        F_MEM_TOTAL,
        F_MEM_USED,
        F_UTIL,
        F_TEMP,
        F_POWER,
        F_SM_CLOCK,
        F_MEM_CLOCK,
        F_THROTTLE,
        F_PID,
        F_PROC_MEM,
        _F_MAX,
};

/* Header names as nvidia-smi prints them (it prints canonical names for aliases asked for). */
static int smi_field_of(const char *name)
{
        static const struct {
                const char *name;
                enum smi_field f;
        } names[] = {
                {"index", F_INDEX},
                {"memory.total", F_MEM_TOTAL},
                {"memory.used", F_MEM_USED},
                {"utilization.gpu", F_UTIL},
                {"temperature.gpu", F_TEMP},
                {"power.draw", F_POWER},
                {"power.draw.instant", F_POWER},
                {"power.draw.average", F_POWER},
                {"clocks.sm", F_SM_CLOCK},
                {"clocks.current.sm", F_SM_CLOCK},
                {"clocks.mem", F_MEM_CLOCK},
                {"clocks.current.memory", F_MEM_CLOCK},
                {"clocks_event_reasons.active", F_THROTTLE},
                {"clocks_throttle_reasons.active", F_THROTTLE},
                {"pid", F_PID},
                {"used_memory", F_PROC_MEM},
                {"used_gpu_memory", F_PROC_MEM},
        };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(name, names[i].name))
                        return names[i].f;
        return -1;
}

/* Multiplier from a unit nvidia-smi prints to ours (bytes, mW, MHz, C, %); 0 if unknown. */
static double unit_factor(const char *u, enum smi_field f)
{
        if (!*u)
                return f == F_POWER                                             ? 1000
                       : f == F_MEM_TOTAL || f == F_MEM_USED || f == F_PROC_MEM ? 1048576
                                                                                : 1;
        if (streq(u, "MiB"))
                return 1048576;
        if (streq(u, "GiB"))
                return 1073741824.0;
        if (streq(u, "KiB"))
                return 1024;
        if (streq(u, "B"))
                return 1;
        if (streq(u, "W"))
                return 1000;
        if (streq(u, "mW") || streq(u, "MHz") || streq(u, "%") || streq(u, "C"))
                return 1;
        return 0;
}

/* Trim spaces in place; returns the start. */
static char *trim(char *s)
{
        char *e;

        while (*s == ' ' || *s == '\t')
                s++;
        e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
                *--e = '\0';
        return s;
}

/* A value with an optional unit ("1542 MiB", "79.94 W", "0x...4"), in our units; -1 if not reported. */
static int64_t smi_value(const char *raw, enum smi_field f, const char *header_unit)
{
        _cleanup_free_ char *copy = xstrdup(raw);
        char *v = trim(copy), *end;
        double x, factor;

        if (!*v || v[0] == '[' || startswith(v, "N/A") || startswith(v, "Not Supported"))
                return -1;
        if (f == F_THROTTLE) {
                unsigned long long u;
                errno = 0;
                u = strtoull(v, &end, 16);
                return errno || end == v || u > INT64_MAX ? -1 : (int64_t)u;
        }
        errno = 0;
        x = strtod(v, &end);
        if (errno || end == v || !isfinite(x) || x < 0)
                return -1;
        factor = unit_factor(*trim(end) ? trim(end) : header_unit, f);
        if (factor == 0 || x * factor > 9e18)
                return -1;
        return (int64_t)llround(x * factor);
}

/* The CSV rows of text (header first), each passed to row(); returns rows seen or -EBADMSG. */
typedef int (*smi_row_fn)(const int *cols, const char *const *units, const struct mx_csv_record *rec,
                          void *ud);

static int smi_parse(const char *what, const char *text, size_t n, smi_row_fn row, void *ud, char **reterr)
{
        _cleanup_(mx_lines_freep) struct mx_lines *l = mx_lines_new_buffer(text, n, 4096, MX_LINES_TRUNCATE);
        _cleanup_(mx_csv_freep) struct mx_csv *c = mx_csv_new(NULL);
        int cols[64];
        char units[64][16];
        const char *unit_ptrs[64];
        size_t ncols = 0;
        bool header = false;
        const char *line;
        size_t len;
        int rows = 0, r;

        while ((r = mx_lines_next(l, &line, &len)) > 0) {
                const struct mx_csv_record *rec;

                if (len == 0 || (!header && !memchr(line, ',', len) && !startswith(line, "pid") &&
                                 !startswith(line, "index")))
                        continue; /* a message such as "No running processes found" */
                r = mx_csv_feed_line(c, mx_lines_number(l), line, len, NULL);
                if (r <= 0)
                        continue;
                rec = mx_csv_record(c);
                if (!header) {
                        ncols = MX_MIN(rec->n_fields, ELEMENTSOF(cols));
                        for (size_t i = 0; i < ncols; i++) {
                                _cleanup_free_ char *h = xstrdup(rec->fields[i]);
                                char *name = trim(h), *br = strchr(name, '[');

                                units[i][0] = '\0';
                                if (br) {
                                        char *close = strchr(br, ']');
                                        if (close)
                                                snprintf(units[i], sizeof(units[i]), "%.*s",
                                                         (int)(close - br - 1), br + 1);
                                        *br = '\0';
                                        name = trim(name);
                                }
                                cols[i] = smi_field_of(name);
                                unit_ptrs[i] = units[i];
                        }
                        header = true;
                        continue;
                }
                if (rec->n_fields != ncols) {
                        if (reterr)
                                *reterr = xasprintf("%s line %u: %zu fields, the header has %zu", what,
                                                    mx_lines_number(l), rec->n_fields, ncols);
                        return -EBADMSG;
                }
                rows++;
                if (row(cols, unit_ptrs, rec, ud) > 0)
                        break;
        }
        if (!header) {
                if (reterr)
                        *reterr = xasprintf("%s: no CSV header in the output", what);
                return -EBADMSG;
        }
        return rows;
}

static int gpu_row(const int *cols, const char *const *units, const struct mx_csv_record *rec, void *ud)
{
        struct mx_sample *s = ud;
        bool mem_reported = false;

        for (size_t i = 0; i < rec->n_fields; i++) {
                int64_t v;

                if (cols[i] < 0)
                        continue;
                v = smi_value(rec->fields[i], cols[i], units[i]);
                switch (cols[i]) {
                case F_MEM_TOTAL:
                        s->gpu_mem_total = v;
                        break;
                case F_MEM_USED:
                        s->gpu_mem_used = v;
                        mem_reported = true;
                        break;
                case F_UTIL:
                        s->util_pct = v;
                        break;
                case F_TEMP:
                        s->temp_c = v;
                        break;
                case F_POWER:
                        if (s->power_mw < 0)
                                s->power_mw = v;
                        break;
                case F_SM_CLOCK:
                        s->sm_clock_mhz = v;
                        break;
                case F_MEM_CLOCK:
                        s->mem_clock_mhz = v;
                        break;
                case F_THROTTLE:
                        s->throttle = v;
                        break;
                default:
                        break;
                }
        }
        s->unified = mem_reported && s->gpu_mem_used < 0;
        return 1; /* the first GPU row only (the query names one GPU with -i) */
}

int mx_sample_parse_smi_gpu(const char *text, size_t n, struct mx_sample *s, char **reterr)
{
        int r = smi_parse("nvidia-smi --query-gpu", text, n, gpu_row, s, reterr);

        if (r == 0) {
                if (reterr)
                        *reterr = xstrdup("nvidia-smi --query-gpu: no GPU row in the output");
                return -EBADMSG;
        }
        return r < 0 ? r : 0;
}

static int apps_row(const int *cols, const char *const *units, const struct mx_csv_record *rec, void *ud)
{
        struct mx_sample *s = ud;
        struct mx_sample_proc p = {.pid = 0, .gpu_bytes = -1};

        for (size_t i = 0; i < rec->n_fields; i++) {
                if (cols[i] == F_PID) {
                        _cleanup_free_ char *c = xstrdup(rec->fields[i]);
                        int64_t v;

                        if (mx_parse_int64(trim(c), 1, INT32_MAX, &v) >= 0)
                                p.pid = (pid_t)v;
                } else if (cols[i] == F_PROC_MEM)
                        p.gpu_bytes = smi_value(rec->fields[i], F_PROC_MEM, units[i]);
        }
        if (p.pid > 0 && s->n_procs < MX_SAMPLER_PROCS_MAX)
                s->procs[s->n_procs++] = p;
        return 0;
}

int mx_sample_parse_smi_apps(const char *text, size_t n, struct mx_sample *s, char **reterr)
{
        int r;

        s->n_procs = 0;
        r = smi_parse("nvidia-smi --query-compute-apps", text, n, apps_row, s, reterr);
        if (r < 0) {
                /* "No running processes found" with no header at all is an empty list */
                if (memmem(text, n, "No running processes found", 26)) {
                        free(reterr ? *reterr : NULL);
                        if (reterr)
                                *reterr = NULL;
                        return 0;
                }
                return r;
        }
        return 0;
}

/* The value of a "Name:   123 kB" line of /proc text, in bytes; -1 if absent. */
static int64_t kb_field(const char *text, size_t n, const char *name)
{
        size_t nl = strlen(name);

        for (const char *p = text, *end = text + n; p < end;) {
                const char *eol = memchr(p, '\n', (size_t)(end - p)) ?: end;

                if ((size_t)(eol - p) > nl && memcmp(p, name, nl) == 0 && p[nl] == ':') {
                        char buf[64];
                        int64_t v;
                        char *q;

                        snprintf(buf, sizeof(buf), "%.*s", (int)(eol - p - nl - 1), p + nl + 1);
                        q = trim(buf);
                        if (endswith(q, " kB"))
                                q[strlen(q) - 3] = '\0';
                        if (mx_parse_int64(trim(q), 0, INT64_MAX / 1024, &v) < 0)
                                return -1;
                        return v * 1024;
                }
                p = eol + 1;
        }
        return -1;
}

int mx_sample_parse_meminfo(const char *text, size_t n, int64_t *ret_total, int64_t *ret_available)
{
        int64_t total = kb_field(text, n, "MemTotal"), avail = kb_field(text, n, "MemAvailable");

        if (total < 0 || avail < 0)
                return -EBADMSG;
        *ret_total = total;
        *ret_available = avail;
        return 0;
}

int mx_sample_parse_smaps_rollup(const char *text, size_t n, int64_t *ret_pss)
{
        int64_t pss = kb_field(text, n, "Pss");

        if (pss < 0)
                return -EBADMSG;
        *ret_pss = pss;
        return 0;
}

/* ---- NVML, loaded at run time ---- */

typedef int nvml_ret;
typedef struct nvml_device *nvml_device;
struct nvml_memory {
        unsigned long long total, free, used;
};
/* nvmlMemory_v2_t: used excludes the driver's reserved memory, as nvidia-smi's memory.used does */
struct nvml_memory_v2 {
        unsigned version;
        unsigned long long total, reserved, free, used;
};
#define NVML_MEMORY_V2_VERSION ((unsigned)(sizeof(struct nvml_memory_v2) | (2u << 24)))
struct nvml_process {
        unsigned pid;
        unsigned long long used;
        unsigned gpu_instance, compute_instance;
};
struct nvml_utilization {
        unsigned gpu, memory;
};
#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_TEMPERATURE_GPU 0
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

struct nvml {
        void *dl;
        nvml_device dev;
        nvml_ret (*init)(void);
        nvml_ret (*shutdown)(void);
        const char *(*error_string)(nvml_ret);
        nvml_ret (*handle_by_index)(unsigned, nvml_device *);
        nvml_ret (*memory_info)(nvml_device, struct nvml_memory *);
        nvml_ret (*memory_info_v2)(nvml_device, struct nvml_memory_v2 *);
        nvml_ret (*processes)(nvml_device, unsigned *, struct nvml_process *);
        nvml_ret (*clock_info)(nvml_device, int, unsigned *);
        nvml_ret (*power_usage)(nvml_device, unsigned *);
        nvml_ret (*temperature)(nvml_device, int, unsigned *);
        nvml_ret (*utilization)(nvml_device, struct nvml_utilization *);
        nvml_ret (*throttle)(nvml_device, unsigned long long *);
        nvml_ret (*energy)(nvml_device, unsigned long long *); /* mJ since the driver loaded */
};

static const char *nvml_strerror(const struct nvml *n, nvml_ret r)
{
        const char *s = n->error_string ? n->error_string(r) : NULL;
        return s ?: "unknown NVML error";
}

/* The first of the names that the library exports. */
static void *nvml_sym(void *dl, const char *a, const char *b)
{
        void *p = dlsym(dl, a);
        return p || !b ? p : dlsym(dl, b);
}

static void nvml_close(struct nvml *n)
{
        if (!n->dl)
                return;
        if (n->shutdown && n->dev)
                n->shutdown();
        dlclose(n->dl);
        *n = (struct nvml){};
}

static int nvml_open(struct nvml *n, const char *path, unsigned gpu, char **reterr)
{
        nvml_ret r;

        *n = (struct nvml){};
        n->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!n->dl) {
                if (reterr)
                        *reterr = xasprintf("NVML: cannot load %s: %s", path, strna(dlerror()));
                return -ENOENT;
        }
        n->init = nvml_sym(n->dl, "nvmlInit_v2", "nvmlInit");
        n->shutdown = nvml_sym(n->dl, "nvmlShutdown", NULL);
        n->error_string = nvml_sym(n->dl, "nvmlErrorString", NULL);
        n->handle_by_index = nvml_sym(n->dl, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
        n->memory_info = nvml_sym(n->dl, "nvmlDeviceGetMemoryInfo", NULL);
        n->memory_info_v2 = nvml_sym(n->dl, "nvmlDeviceGetMemoryInfo_v2", NULL);
        /* _v3 and _v2 take the same nvmlProcessInfo_t {pid, usedGpuMemory, gpuInstanceId, computeInstanceId}
         */
        n->processes = nvml_sym(n->dl, "nvmlDeviceGetComputeRunningProcesses_v3",
                                "nvmlDeviceGetComputeRunningProcesses_v2");
        n->clock_info = nvml_sym(n->dl, "nvmlDeviceGetClockInfo", NULL);
        n->power_usage = nvml_sym(n->dl, "nvmlDeviceGetPowerUsage", NULL);
        n->temperature = nvml_sym(n->dl, "nvmlDeviceGetTemperature", NULL);
        n->utilization = nvml_sym(n->dl, "nvmlDeviceGetUtilizationRates", NULL);
        n->throttle = nvml_sym(n->dl, "nvmlDeviceGetCurrentClocksEventReasons",
                               "nvmlDeviceGetCurrentClocksThrottleReasons");
        n->energy = nvml_sym(n->dl, "nvmlDeviceGetTotalEnergyConsumption", NULL);
        if (!n->init || !n->shutdown || !n->handle_by_index || !n->memory_info) {
                if (reterr)
                        *reterr = xasprintf("NVML: %s lacks nvmlInit_v2, nvmlShutdown, "
                                            "nvmlDeviceGetHandleByIndex_v2 or nvmlDeviceGetMemoryInfo",
                                            path);
                dlclose(n->dl);
                *n = (struct nvml){};
                return -ENOENT;
        }
        r = n->init();
        if (r != NVML_SUCCESS) {
                if (reterr)
                        *reterr = xasprintf("NVML: nvmlInit failed: %s", nvml_strerror(n, r));
                dlclose(n->dl);
                *n = (struct nvml){};
                return -EIO;
        }
        r = n->handle_by_index(gpu, &n->dev);
        if (r != NVML_SUCCESS || !n->dev) {
                if (reterr)
                        *reterr = xasprintf("NVML: no GPU %u: %s", gpu, nvml_strerror(n, r));
                n->shutdown();
                dlclose(n->dl);
                *n = (struct nvml){};
                return -ENODEV;
        }
        return 0;
}

static int64_t nvml_unsigned(nvml_ret r, unsigned v)
{
        return r == NVML_SUCCESS ? (int64_t)v : -1;
}

/* Everything NVML tells of the device; fast (no I/O of ours), so on the loop. */
static void nvml_read(struct nvml *n, struct mx_sample *s)
{
        struct nvml_memory mem = {};
        struct nvml_process procs[MX_SAMPLER_PROCS_MAX];
        unsigned count = MX_SAMPLER_PROCS_MAX, v = 0;
        unsigned long long reasons = 0;
        nvml_ret r;

        s->source = MX_SAMPLE_SOURCE_NVML;
        if (n->memory_info_v2) {
                struct nvml_memory_v2 m2 = {.version = NVML_MEMORY_V2_VERSION};

                r = n->memory_info_v2(n->dev, &m2);
                if (r == NVML_SUCCESS) {
                        mem = (struct nvml_memory){.total = m2.total, .free = m2.free, .used = m2.used};
                        goto have_memory;
                }
                /* older drivers: v1 below, whose used includes the reserved memory */
        }
        r = n->memory_info(n->dev, &mem);
have_memory:
        if (r == NVML_SUCCESS) {
                s->gpu_mem_total = (int64_t)mem.total;
                s->gpu_mem_used = (int64_t)mem.used;
        } else if (r == NVML_ERROR_NOT_SUPPORTED)
                s->unified = true; /* the GB10: no device memory of its own */
        else {
                snprintf(s->error, sizeof(s->error), "NVML: nvmlDeviceGetMemoryInfo: %s",
                         nvml_strerror(n, r));
                return;
        }
        s->gpu_ok = true;
        if (n->processes) {
                r = n->processes(n->dev, &count, procs);
                if (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE) {
                        /* with INSUFFICIENT_SIZE the first MX_SAMPLER_PROCS_MAX are not filled in: none */
                        if (r != NVML_SUCCESS)
                                count = 0;
                        for (unsigned i = 0; i < count && i < MX_SAMPLER_PROCS_MAX; i++)
                                s->procs[s->n_procs++] = (struct mx_sample_proc){
                                        .pid = (pid_t)procs[i].pid,
                                        .gpu_bytes = procs[i].used == NVML_VALUE_NOT_AVAILABLE ||
                                                                     procs[i].used > INT64_MAX
                                                             ? -1
                                                             : (int64_t)procs[i].used,
                                };
                }
        }
        if (n->clock_info) {
                r = n->clock_info(n->dev, NVML_CLOCK_SM, &v);
                s->sm_clock_mhz = nvml_unsigned(r, v);
                r = n->clock_info(n->dev, NVML_CLOCK_MEM, &v);
                s->mem_clock_mhz = nvml_unsigned(r, v);
        }
        if (n->power_usage) {
                r = n->power_usage(n->dev, &v);
                s->power_mw = nvml_unsigned(r, v);
        }
        if (n->temperature) {
                r = n->temperature(n->dev, NVML_TEMPERATURE_GPU, &v);
                s->temp_c = nvml_unsigned(r, v);
        }
        if (n->utilization) {
                struct nvml_utilization u = {};
                r = n->utilization(n->dev, &u);
                s->util_pct = nvml_unsigned(r, u.gpu);
        }
        if (n->throttle) {
                r = n->throttle(n->dev, &reasons);
                if (r == NVML_SUCCESS && reasons <= INT64_MAX)
                        s->throttle = (int64_t)reasons;
        }
}

/* ---- /proc: system memory and the server tree ---- */

static void read_meminfo(struct mx_sample *s)
{
        char buf[8192];
        size_t n;
        int64_t total, avail;

        if (proc_read_small("/proc/meminfo", buf, sizeof(buf), &n) >= 0 &&
            mx_sample_parse_meminfo(buf, n, &total, &avail) >= 0) {
                s->sys_mem_total = total;
                s->sys_mem_used = total - avail;
        }
}

struct tree {
        bool set;
        bool has_match;
        struct proc_match match;
        char *tag;
        pid_t root;
};

static int pid_cmp(const void *a, const void *b)
{
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
        return (x > y) - (x < y);
}

/* root's descendants (root included), by walking /proc's parent links. */
static void tree_add_descendants(pid_t root, pid_t **pids, size_t *n, size_t *alloc)
{
        _cleanup_free_ pid_t *all = NULL, *parent = NULL;
        size_t n_all = 0, a_all = 0, a_par = 0;
        DIR *d = opendir("/proc");
        struct dirent *de;
        bool grew = true;
        size_t first = *n;

        if (!d)
                return;
        while ((de = readdir(d))) {
                char path[64], buf[1024], *close;
                size_t len;
                int ppid;
                int64_t pid;

                if (mx_parse_int64(de->d_name, 1, INT32_MAX, &pid) < 0)
                        continue;
                snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
                if (proc_read_small(path, buf, sizeof(buf), &len) < 0 || !(close = strrchr(buf, ')')))
                        continue;
                if (sscanf(close + 1, " %*c %d", &ppid) != 1)
                        continue;
                MX_GROW(all, a_all, n_all + 1);
                MX_GROW(parent, a_par, n_all + 1);
                all[n_all] = (pid_t)pid;
                parent[n_all++] = (pid_t)ppid;
                if (n_all >= 65536)
                        break;
        }
        closedir(d);
        for (size_t i = 0; i < n_all; i++)
                if (all[i] == root) {
                        MX_GROW(*pids, *alloc, *n + 1);
                        (*pids)[(*n)++] = root;
                }
        /* breadth by rounds: a tree is shallow; each round adds the children of what was found */
        while (grew && *n < MX_SAMPLER_TREE_MAX) {
                grew = false;
                for (size_t i = 0; i < n_all && *n < MX_SAMPLER_TREE_MAX; i++) {
                        bool in = false, parent_in = false;
                        for (size_t k = first; k < *n; k++) {
                                in |= (*pids)[k] == all[i];
                                parent_in |= (*pids)[k] == parent[i];
                        }
                        if (!in && parent_in) {
                                MX_GROW(*pids, *alloc, *n + 1);
                                (*pids)[(*n)++] = all[i];
                                grew = true;
                        }
                }
        }
}

/* PSS of the tree, and the GPU memory of those of its processes that the GPU lists. */
static void read_tree(const struct tree *t, struct mx_sample *s)
{
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0, alloc = 0, k = 0;
        int64_t pss_sum = 0, gpu = -1;

        if (!t->set)
                return;
        if (t->has_match) {
                _cleanup_free_ struct proc_entry *list = NULL;
                size_t nl = 0;

                if (proc_scan(&t->match, &list, &nl) >= 0)
                        for (size_t i = 0; i < nl && n < MX_SAMPLER_TREE_MAX; i++)
                                if (list[i].state != 'Z') {
                                        MX_GROW(pids, alloc, n + 1);
                                        pids[n++] = list[i].pid;
                                }
        }
        if (t->root > 0)
                tree_add_descendants(t->root, &pids, &n, &alloc);
        if (n > 0) {
                qsort(pids, n, sizeof(*pids), pid_cmp);
                for (size_t i = 0; i < n; i++)
                        if (k == 0 || pids[k - 1] != pids[i])
                                pids[k++] = pids[i];
        }
        for (size_t i = 0; i < k; i++) {
                char path[64], buf[4096];
                size_t len;
                int64_t pss;

                snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pids[i]);
                if (proc_read_small(path, buf, sizeof(buf), &len) >= 0 &&
                    mx_sample_parse_smaps_rollup(buf, len, &pss) >= 0)
                        pss_sum += pss;
        }
        s->tree_pss = pss_sum;
        s->tree_procs = (unsigned)k;
        for (size_t i = 0; i < s->n_procs; i++)
                if (k > 0 && bsearch(&s->procs[i].pid, pids, k, sizeof(*pids), pid_cmp)) {
                        if (gpu < 0)
                                gpu = 0;
                        if (s->procs[i].gpu_bytes > 0)
                                gpu += s->procs[i].gpu_bytes;
                }
        s->tree_gpu_bytes = gpu;
        /* another process holding the GPU: what it does shares the GPU with the server */
        for (size_t i = 0; k > 0 && i < s->n_procs; i++)
                if (!bsearch(&s->procs[i].pid, pids, k, sizeof(*pids), pid_cmp)) {
                        if (!s->foreign_procs++)
                                s->foreign_pid = s->procs[i].pid;
                }
}

/* The figures derived from what the sources gave. */
static void sample_derive(struct mx_sample *s)
{
        int64_t sum = -1;

        for (size_t i = 0; i < s->n_procs; i++)
                if (s->procs[i].gpu_bytes >= 0)
                        sum = (sum < 0 ? 0 : sum) + s->procs[i].gpu_bytes;
        if (s->gpu_ok)
                s->procs_gpu_bytes = sum >= 0 ? sum : s->n_procs == 0 ? 0 : -1;
        if (s->gpu_ok && !s->unified && s->gpu_mem_used >= 0) {
                s->mem_used = s->gpu_mem_used;
                s->mem_total = s->gpu_mem_total;
        } else {
                s->mem_used = s->sys_mem_used;
                s->mem_total = s->sys_mem_total;
        }
}

/* ---- the sampler ---- */

enum smi_query {
        SMI_GPU,
        SMI_APPS,
};

/* The --query-gpu field lists, newest first: older drivers know the throttle field by its old name or not at
 * all. */
static const char *const smi_gpu_fields[] = {
        "index,memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw,clocks.sm,clocks.mem,"
        "clocks_event_reasons.active",
        "index,memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw,clocks.sm,clocks.mem,"
        "clocks_throttle_reasons.active",
        "index,memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw,clocks.sm,clocks.mem",
};

struct mx_sampler {
        struct event_base *base;
        struct proc_reaper *reaper;
        enum mx_sample_source want;   /* as asked */
        enum mx_sample_source source; /* decided: AUTO until the first sample */
        int64_t interval_ms, smi_timeout_ms;
        unsigned gpu;
        char *nvml_path, *smi_path;
        struct nvml nvml;
        bool nvml_tried;
        bool smi_worked;     /* nvidia-smi answered once: later failures are GPU failures, not "absent" */
        unsigned smi_fields; /* index into smi_gpu_fields */
        mx_sampler_cb cb;
        void *userdata;
        struct tree tree;

        struct event *tick, *kick;
        bool running;
        bool busy;    /* a sample is being taken (an nvidia-smi child in flight) */
        bool pending; /* another sample was asked for meanwhile */
        uint64_t skipped;

        /* the nvidia-smi child in flight */
        struct {
                enum smi_query query;
                pid_t pid;
                int fd;
                struct event *read, *timeout;
                struct mx_buf out;
                bool eof, exited, timed_out, too_long;
                int status;
        } smi;
        struct mx_sample cur;

        struct mx_sample last;
        bool has_last;
        struct mx_sample_summary summary;
        struct mx_sample_summary window;
        bool window_on;
};

static void sample_begin(struct mx_sampler *s);

/* A sample is complete: summary, then the callback (which may free s), last. */
static void sample_finish(struct mx_sampler *s)
{
        struct mx_sample done;

        read_tree(&s->tree, &s->cur);
        sample_derive(&s->cur);
        done = s->cur;
        s->busy = false;
        mx_sample_summary_add(&s->summary, &done);
        if (s->window_on)
                mx_sample_summary_add(&s->window, &done);
        s->last = done;
        s->has_last = true;
        if (s->pending) {
                s->pending = false;
                event_active(s->kick, 0, 0);
        }
        if (s->cb)
                s->cb(s, &done, s->userdata);
}

/*
 * Kill the nvidia-smi child and whatever it started: proc_spawn() made it the leader of its own
 * process group, and an unreaped leader keeps the group's id from being reused.
 */
static void smi_kill(pid_t pid)
{
        if (pid > 0 && kill(-pid, SIGKILL) < 0)
                (void)kill(pid, SIGKILL);
}

static void smi_cleanup(struct mx_sampler *s)
{
        if (s->smi.read) {
                event_free(s->smi.read);
                s->smi.read = NULL;
        }
        if (s->smi.timeout) {
                event_free(s->smi.timeout);
                s->smi.timeout = NULL;
        }
        if (s->smi.fd >= 0) {
                close(s->smi.fd);
                s->smi.fd = -1;
        }
        if (s->smi.pid > 0) {
                /* not reaped yet, so the pid is still ours: the signal cannot reach another process */
                smi_kill(s->smi.pid);
                proc_reaper_unwatch(s->reaper, s->smi.pid);
                s->smi.pid = 0;
        }
        mx_buf_reset(&s->smi.out);
}

static int smi_spawn(struct mx_sampler *s, enum smi_query q, char **reterr);

/* nvidia-smi cannot be used: in AUTO before it ever worked, fall back to /proc for good. */
static void smi_failed(struct mx_sampler *s, const char *why)
{
        if (s->want == MX_SAMPLE_SOURCE_AUTO && !s->smi_worked) {
                s->source = MX_SAMPLE_SOURCE_PROC;
                s->cur.source = MX_SAMPLE_SOURCE_PROC;
                s->cur.gpu_ok = false;
                s->cur.error[0] = '\0';
        } else {
                s->cur.source = MX_SAMPLE_SOURCE_SMI;
                s->cur.gpu_ok = false;
                snprintf(s->cur.error, sizeof(s->cur.error), "%s", why);
        }
        sample_finish(s);
}

/* The child ended and its output was read: parse, then the next query or the end of the sample. */
static void smi_done(struct mx_sampler *s)
{
        _cleanup_free_ char *out = NULL, *err = NULL, *why = NULL;
        enum smi_query q = s->smi.query;
        bool timed_out = s->smi.timed_out, too_long = s->smi.too_long;
        int status = s->smi.status, r;
        size_t n = s->smi.out.len;

        mx_buf_putc(&s->smi.out, '\0');
        out = mx_buf_steal(&s->smi.out);
        s->smi.pid = 0; /* reaped */
        smi_cleanup(s);

        if (timed_out)
                why = xasprintf("nvidia-smi did not answer in %" PRId64 " ms (killed)", s->smi_timeout_ms);
        else if (too_long)
                why = xasprintf("nvidia-smi printed more than %d bytes", MX_SAMPLER_SMI_OUTPUT_MAX);
        else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                /* an unknown query field: try the older spelling, then none */
                if (q == SMI_GPU && strstr(out, "not a valid field") &&
                    s->smi_fields + 1 < ELEMENTSOF(smi_gpu_fields)) {
                        s->smi_fields++;
                        if (smi_spawn(s, SMI_GPU, &err) >= 0)
                                return;
                        smi_failed(s, err);
                        return;
                }
                char *nl = strchr(out, '\n');
                if (nl)
                        *nl = '\0';
                why = WIFEXITED(status) ? xasprintf("nvidia-smi exited with status %d: %.100s",
                                                    WEXITSTATUS(status), out)
                                        : xasprintf("nvidia-smi killed by signal %d", WTERMSIG(status));
        }
        if (why) {
                smi_failed(s, why);
                return;
        }
        if (q == SMI_GPU) {
                r = mx_sample_parse_smi_gpu(out, n, &s->cur, &err);
                if (r < 0) {
                        smi_failed(s, err);
                        return;
                }
                s->smi_worked = true;
                s->cur.gpu_ok = true;
                r = smi_spawn(s, SMI_APPS, &err);
                if (r < 0) {
                        snprintf(s->cur.error, sizeof(s->cur.error), "%s", err);
                        sample_finish(s);
                }
                return;
        }
        r = mx_sample_parse_smi_apps(out, n, &s->cur, &err);
        if (r < 0)
                snprintf(s->cur.error, sizeof(s->cur.error), "%s", err);
        sample_finish(s);
}

static void smi_maybe_done(struct mx_sampler *s)
{
        if (s->smi.eof && s->smi.exited)
                smi_done(s);
}

/* Read what the pipe holds; true at end of file (or an error: the same to us). */
static bool smi_drain(struct mx_sampler *s)
{
        char buf[4096];

        for (;;) {
                ssize_t k = read(s->smi.fd, buf, sizeof(buf));
                if (k > 0) {
                        if (s->smi.out.len + (size_t)k > MX_SAMPLER_SMI_OUTPUT_MAX) {
                                s->smi.too_long = true;
                                smi_kill(s->smi.pid);
                        } else
                                mx_buf_add(&s->smi.out, buf, (size_t)k);
                        continue;
                }
                if (k < 0 && errno == EINTR)
                        continue;
                return !(k < 0 && errno == EAGAIN);
        }
}

static void smi_read_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct mx_sampler *s = userdata;

        if (!smi_drain(s))
                return;
        event_del(s->smi.read);
        s->smi.eof = true;
        smi_maybe_done(s);
}

static void smi_exit_cb(pid_t pid, int status, void *userdata)
{
        struct mx_sampler *s = userdata;

        s->smi.exited = true;
        s->smi.status = status;
        s->smi.pid = 0;
        /*
         * What it wrote is in the pipe now. A descendant of its own may still hold the pipe open
         * (a shell's child): its output is not nvidia-smi's, so the end is now, not at end of file.
         */
        if (!s->smi.eof) {
                /* reaped this very moment, so its group (if any member is left) is still its own */
                (void)kill(-pid, SIGKILL);
                (void)smi_drain(s);
                event_del(s->smi.read);
                s->smi.eof = true;
        }
        smi_maybe_done(s);
}

static void smi_timeout_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct mx_sampler *s = userdata;

        s->smi.timed_out = true;
        if (s->smi.pid > 0)
                smi_kill(s->smi.pid); /* the exit status follows through the reaper */
}

static int smi_spawn(struct mx_sampler *s, enum smi_query q, char **reterr)
{
        _cleanup_strv_free_ char **env = NULL;
        _cleanup_free_ char *query = NULL, *index = xasprintf("%u", s->gpu), *tag = NULL;
        _cleanup_close_ int rd = -1, wr = -1;
        struct proc_info info;
        int fds[2], r;
        struct timeval tv = {.tv_sec = s->smi_timeout_ms / 1000,
                             .tv_usec = (s->smi_timeout_ms % 1000) * 1000};

        query = q == SMI_GPU ? xasprintf("--query-gpu=%s", smi_gpu_fields[s->smi_fields])
                             : xstrdup("--query-compute-apps=pid,used_memory");
        char *const argv[] = {s->smi_path, (char *)"-i", index, query, (char *)"--format=csv,nounits", NULL};

        /* our environment (PATH, and what a test's stand-in reads), in the C locale: numbers with a '.' */
        for (char **e = environ; e && *e; e++)
                if (!startswith(*e, "LC_ALL=") && !startswith(*e, PROC_TAG_ENV "="))
                        strv_push(&env, *e);
        strv_push(&env, "LC_ALL=C");
        tag = xasprintf("mxmatrix-sampler-%d", (int)getpid());
        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        rd = fds[0];
        wr = fds[1];
        struct proc_spec spec = {.argv = argv, .env = env, .tag = tag, .stdout_fd = wr, .stderr_fd = wr};
        r = proc_spawn(&spec, &info, reterr);
        if (r < 0)
                return r;
        r = proc_reaper_watch(s->reaper, info.pid, smi_exit_cb, s);
        if (r < 0) {
                kill(info.pid, SIGKILL);
                if (reterr)
                        *reterr = xasprintf("cannot watch nvidia-smi: %s", strerror(-r));
                return r;
        }
        (void)fcntl(rd, F_SETFL, fcntl(rd, F_GETFL) | O_NONBLOCK);
        s->smi.query = q;
        s->smi.pid = info.pid;
        s->smi.fd = TAKE_FD(rd);
        s->smi.eof = s->smi.exited = s->smi.timed_out = s->smi.too_long = false;
        s->smi.status = 0;
        mx_buf_reset(&s->smi.out);
        s->smi.read = event_new(s->base, s->smi.fd, EV_READ | EV_PERSIST, smi_read_cb, s);
        s->smi.timeout = evtimer_new(s->base, smi_timeout_cb, s);
        event_add(s->smi.read, NULL);
        event_add(s->smi.timeout, &tv);
        return 0;
}

static void sample_begin(struct mx_sampler *s)
{
        _cleanup_free_ char *err = NULL;

        s->busy = true;
        mx_sample_init(&s->cur);
        s->cur.at_us = mx_now_real_us();
        read_meminfo(&s->cur);

        if (s->source == MX_SAMPLE_SOURCE_AUTO && !s->nvml_tried) {
                s->nvml_tried = true;
                if (nvml_open(&s->nvml, s->nvml_path, s->gpu, NULL) >= 0)
                        s->source = MX_SAMPLE_SOURCE_NVML;
                else
                        s->source = MX_SAMPLE_SOURCE_SMI; /* decided for good once it answers or not */
        }
        switch (s->source) {
        case MX_SAMPLE_SOURCE_NVML:
                nvml_read(&s->nvml, &s->cur);
                sample_finish(s);
                return;
        case MX_SAMPLE_SOURCE_SMI:
                s->cur.source = MX_SAMPLE_SOURCE_SMI;
                if (smi_spawn(s, SMI_GPU, &err) < 0)
                        smi_failed(s, err ?: "cannot start nvidia-smi");
                return;
        default:
                s->cur.source = MX_SAMPLE_SOURCE_PROC;
                sample_finish(s);
                return;
        }
}

static void kick_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct mx_sampler *s = userdata;

        if (s->busy)
                s->pending = true;
        else
                sample_begin(s);
}

static void tick_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct mx_sampler *s = userdata;

        if (s->busy) {
                s->skipped++;
                return;
        }
        sample_begin(s);
}

int mx_sampler_new(struct event_base *base, struct proc_reaper *reaper, const struct mx_sampler_opts *o,
                   mx_sampler_cb cb, void *userdata, struct mx_sampler **ret, char **reterr)
{
        static const struct mx_sampler_opts defaults = {};
        _cleanup_(mx_sampler_freep) struct mx_sampler *s = NULL;
        int r;

        if (!o)
                o = &defaults;
        if (o->source < 0 || o->source >= _MX_SAMPLE_SOURCE_MAX ||
            (o->interval_ms != 0 &&
             (o->interval_ms < MX_SAMPLER_INTERVAL_MIN_MS || o->interval_ms > MX_SAMPLER_INTERVAL_MAX_MS)) ||
            o->smi_timeout_ms < 0) {
                if (reterr)
                        *reterr = xasprintf("sampler: interval must be %d..%d ms",
                                            MX_SAMPLER_INTERVAL_MIN_MS, MX_SAMPLER_INTERVAL_MAX_MS);
                return -EINVAL;
        }
        s = xcalloc(1, sizeof(*s));
        s->base = base;
        s->reaper = reaper;
        s->want = s->source = o->source;
        s->interval_ms = o->interval_ms ?: MX_SAMPLER_INTERVAL_DEFAULT_MS;
        s->smi_timeout_ms = o->smi_timeout_ms ?: MX_SAMPLER_SMI_TIMEOUT_DEFAULT_MS;
        s->gpu = o->gpu;
        s->nvml_path = xstrdup(o->nvml_path ?: MX_SAMPLER_NVML_DEFAULT);
        s->smi_path = xstrdup(o->smi_path ?: "nvidia-smi");
        s->cb = cb;
        s->userdata = userdata;
        s->smi.fd = -1;
        mx_sample_summary_init(&s->summary);
        s->tick = event_new(base, -1, EV_PERSIST, tick_cb, s);
        s->kick = event_new(base, -1, 0, kick_cb, s);
        if (o->source == MX_SAMPLE_SOURCE_NVML) {
                r = nvml_open(&s->nvml, s->nvml_path, s->gpu, reterr);
                if (r < 0)
                        return r;
                s->nvml_tried = true;
        }
        if ((o->source == MX_SAMPLE_SOURCE_SMI || o->source == MX_SAMPLE_SOURCE_AUTO) && !reaper) {
                if (reterr)
                        *reterr = xstrdup("sampler: nvidia-smi needs the process reaper");
                return -EINVAL;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

struct mx_sampler *mx_sampler_free(struct mx_sampler *s)
{
        if (!s)
                return NULL;
        smi_cleanup(s);
        mx_buf_free(&s->smi.out);
        if (s->tick)
                event_free(s->tick);
        if (s->kick)
                event_free(s->kick);
        nvml_close(&s->nvml);
        free(s->tree.tag);
        free(s->nvml_path);
        free(s->smi_path);
        free(s);
        return NULL;
}

void mx_sampler_set_tree(struct mx_sampler *s, const struct proc_match *m, pid_t root)
{
        free(s->tree.tag);
        s->tree = (struct tree){.root = root};
        if (m && (m->tag || m->group > 0)) {
                s->tree.has_match = true;
                s->tree.match = *m;
                if (m->tag)
                        s->tree.match.tag = s->tree.tag = xstrdup(m->tag);
        }
        s->tree.set = s->tree.has_match || root > 0;
}

int mx_sampler_start(struct mx_sampler *s)
{
        struct timeval tv = {.tv_sec = s->interval_ms / 1000, .tv_usec = (s->interval_ms % 1000) * 1000};

        if (event_add(s->tick, &tv) < 0)
                return -ENOMEM;
        s->running = true;
        return mx_sampler_request(s);
}

void mx_sampler_stop(struct mx_sampler *s)
{
        event_del(s->tick);
        s->running = false;
}

int mx_sampler_request(struct mx_sampler *s)
{
        if (s->busy)
                s->pending = true;
        else
                event_active(s->kick, 0, 0);
        return 0;
}

enum mx_sample_source mx_sampler_source(const struct mx_sampler *s)
{
        return s->has_last ? s->last.source : MX_SAMPLE_SOURCE_AUTO;
}

const struct mx_sample_summary *mx_sampler_summary(const struct mx_sampler *s)
{
        return &s->summary;
}

void mx_sampler_reset_summary(struct mx_sampler *s)
{
        mx_sample_summary_init(&s->summary);
}

const struct mx_sample *mx_sampler_last(const struct mx_sampler *s)
{
        return s->has_last ? &s->last : NULL;
}

uint64_t mx_sampler_skipped(const struct mx_sampler *s)
{
        return s->skipped;
}

void mx_sampler_window_begin(struct mx_sampler *s)
{
        mx_sample_summary_init(&s->window);
        s->window_on = true;
}

const struct mx_sample_summary *mx_sampler_window(const struct mx_sampler *s)
{
        return s->window_on ? &s->window : NULL;
}

int mx_sampler_energy_mj(struct mx_sampler *s, int64_t *ret_mj, char **reterr)
{
        unsigned long long mj = 0;
        nvml_ret r;

        if (s->source == MX_SAMPLE_SOURCE_AUTO && !s->nvml_tried) {
                s->nvml_tried = true;
                if (nvml_open(&s->nvml, s->nvml_path, s->gpu, NULL) >= 0)
                        s->source = MX_SAMPLE_SOURCE_NVML;
                else
                        s->source = MX_SAMPLE_SOURCE_SMI;
        }
        if (s->source != MX_SAMPLE_SOURCE_NVML || !s->nvml.dl)
                return mx_reterr(reterr, -ENODEV, "the sampler does not read NVML (source %s): no energy counter",
                                 mx_sample_source_to_string(s->source));
        if (!s->nvml.energy)
                return mx_reterr(reterr, -EOPNOTSUPP,
                                 "the GPU does not report energy (NVML lacks nvmlDeviceGetTotalEnergyConsumption)");
        r = s->nvml.energy(s->nvml.dev, &mj);
        if (r == NVML_ERROR_NOT_SUPPORTED)
                return mx_reterr(reterr, -EOPNOTSUPP, "the GPU does not report energy (NVML: %s)",
                                 nvml_strerror(&s->nvml, r));
        if (r != NVML_SUCCESS)
                return mx_reterr(reterr, -EIO, "NVML: nvmlDeviceGetTotalEnergyConsumption: %s",
                                 nvml_strerror(&s->nvml, r));
        *ret_mj = (int64_t)mj;
        return 0;
}
