/* SPDX-License-Identifier: MIT */
/* Profiler reports: the kernels a GPU ran, read from Nsight Systems and Compute CSV (profreport.h). */
#include "profreport.h"

#include "csv.h"
#include "lines.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>

#define LINE_MAX_BYTES (2 * MX_CSV_RECORD_MAX) /* a record's line: fields plus quotes and commas */
#define DIGITS_MAX 64                          /* digits in one number */

static const struct {
        const char *id;
        const char *describe;
        enum mx_profreport_tool tool;
} formats[_MX_PROFREPORT_FORMAT_MAX] = {
        [MX_PROFREPORT_NSYS_KERN_SUM] = { "nsys-kern-sum", "nsys cuda_gpu_kern_sum (gpukernsum)",
                                          MX_PROFREPORT_TOOL_NSYS },
        [MX_PROFREPORT_NSYS_GPU_TRACE] = { "nsys-gpu-trace", "nsys cuda_gpu_trace (gputrace)",
                                           MX_PROFREPORT_TOOL_NSYS },
        [MX_PROFREPORT_NCU_DETAILS] = { "ncu-details", "ncu --csv details page", MX_PROFREPORT_TOOL_NCU },
        [MX_PROFREPORT_NCU_SUMMARY] = { "ncu-summary", "ncu --csv --print-summary per-kernel",
                                        MX_PROFREPORT_TOOL_NCU },
        [MX_PROFREPORT_NCU_RAW] = { "ncu-raw", "ncu --csv --page raw", MX_PROFREPORT_TOOL_NCU },
};

const char *mx_profreport_format_to_string(enum mx_profreport_format f)
{
        return f >= 0 && f < _MX_PROFREPORT_FORMAT_MAX ? formats[f].id : NULL;
}

const char *mx_profreport_format_describe(enum mx_profreport_format f)
{
        return f >= 0 && f < _MX_PROFREPORT_FORMAT_MAX ? formats[f].describe : NULL;
}

enum mx_profreport_tool mx_profreport_tool_from_string(const char *s)
{
        static const char *const names[_MX_PROFREPORT_TOOL_MAX] = {
                [MX_PROFREPORT_TOOL_ANY] = "auto",
                [MX_PROFREPORT_TOOL_NSYS] = "nsys",
                [MX_PROFREPORT_TOOL_NCU] = "ncu",
        };

        for (int i = 0; s && i < _MX_PROFREPORT_TOOL_MAX; i++)
                if (streq(s, names[i]))
                        return i;
        return _MX_PROFREPORT_TOOL_INVALID;
}

/* Copy n bytes that need not be NUL-terminated (xstrndup() may read past them) and terminate them. */
static char *memdup_nul(const char *p, size_t n)
{
        char *s = xmalloc(n + 1);

        memcpy(s, p, n);
        s[n] = '\0';
        return s;
}

/* ---- numbers ---- */

/* Length of a space-like group separator at p (space, no-break spaces, apostrophes), or 0. */
static size_t space_sep_len(const char *p, const char *end)
{
        static const char *const seps[] = {
                " ",
                "'",
                "\xc2\xa0" /* U+00A0 */,
                "\xe2\x80\xaf" /* U+202F */,
                "\xe2\x80\x89" /* U+2009 */,
                "\xe2\x80\x99" /* U+2019 */,
        };

        for (size_t i = 0; i < ELEMENTSOF(seps); i++) {
                size_t n = strlen(seps[i]);

                if ((size_t)(end - p) >= n && memcmp(p, seps[i], n) == 0)
                        return n;
        }
        return 0;
}

struct numtok {
        char digits[DIGITS_MAX + 1];
        size_t n_digits;
        size_t groups[DIGITS_MAX]; /* digits per group */
        char seps[DIGITS_MAX];     /* separator after group i: '.', ',' or ' ' */
        size_t n_groups;
        long exponent;
        bool negative;
};

/* Split s into digit groups and separators; -EINVAL if it is not shaped like a number. */
static int number_tokenize(const char *s, struct numtok *t)
{
        const char *p = s, *end = s + strlen(s);
        size_t cur = 0;

        *t = (struct numtok){};
        while (p < end && (*p == ' ' || *p == '\t'))
                p++;
        while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        if (p < end && (*p == '-' || *p == '+'))
                t->negative = *p++ == '-';
        while (p < end) {
                size_t k = 0;

                if (*p >= '0' && *p <= '9') {
                        if (t->n_digits >= DIGITS_MAX)
                                return -EINVAL;
                        t->digits[t->n_digits++] = *p++;
                        cur++;
                        continue;
                }
                if (*p == 'e' || *p == 'E')
                        break;
                if (*p != '.' && *p != ',' && (k = space_sep_len(p, end)) == 0)
                        return -EINVAL;
                if (cur == 0 || t->n_groups >= DIGITS_MAX - 1)
                        return -EINVAL;
                t->seps[t->n_groups] = k ? ' ' : *p;
                t->groups[t->n_groups++] = cur;
                cur = 0;
                p += k ? k : 1;
        }
        if (cur == 0)
                return -EINVAL;
        t->groups[t->n_groups++] = cur;
        if (p < end) { /* exponent */
                char *e;

                p++;
                if (p >= end || !((*p >= '0' && *p <= '9') || *p == '-' || *p == '+'))
                        return -EINVAL;
                errno = 0;
                t->exponent = strtol(p, &e, 10);
                if (e != end || errno || labs(t->exponent) > 400)
                        return -EINVAL;
        }
        return 0;
}

/* With one separator c followed by three digits: is it a group separator? Decided by the file's format. */
static bool ambiguous_is_group(char c, const struct mx_numfmt *fmt)
{
        if (fmt->decimal == c)
                return false;
        if (fmt->group == c)
                return true;
        if (fmt->decimal) /* the other one marks decimals here */
                return true;
        if (fmt->group) /* spaces or the other one group digits here */
                return false;
        return true;
}

/* Decide which separator groups digits and which marks decimals; -EINVAL if no reading fits. */
static int number_classify(const struct numtok *t, const struct mx_numfmt *fmt, char *ret_dec, char *ret_grp,
                           bool *ret_ambiguous)
{
        size_t n_seps = t->n_groups - 1, n_dot = 0, n_comma = 0, n_space = 0;
        char dec = 0, grp = 0, last;

        *ret_ambiguous = false;
        if (n_seps == 0)
                goto done;
        for (size_t i = 0; i < n_seps; i++) {
                n_dot += t->seps[i] == '.';
                n_comma += t->seps[i] == ',';
                n_space += t->seps[i] == ' ';
        }
        last = t->seps[n_seps - 1];
        if (n_space > 0 || (n_dot > 0 && n_comma > 0)) {
                /* the last separator marks decimals unless it is a space; every other one groups */
                dec = last == ' ' ? 0 : last;
                grp = n_space > 0 ? ' ' : (last == '.' ? ',' : '.');
                for (size_t i = 0; i + (dec ? 1 : 0) < n_seps; i++)
                        if (t->seps[i] != grp)
                                return -EINVAL;
        } else if (n_seps > 1) {
                grp = last;
        } else {
                size_t first = t->groups[0], after = t->groups[1];
                bool could_group = after == 3 && first <= 3 && t->digits[0] != '0';

                if (could_group) {
                        *ret_ambiguous = true;
                        if (ambiguous_is_group(last, fmt))
                                grp = last;
                        else
                                dec = last;
                } else
                        dec = last;
        }
        if (grp) { /* 1-3 digits, then groups of exactly 3 */
                size_t n_int = t->n_groups - (dec ? 1 : 0);

                if (t->groups[0] > 3 || t->exponent != 0)
                        return -EINVAL;
                for (size_t i = 1; i < n_int; i++)
                        if (t->groups[i] != 3)
                                return -EINVAL;
        }
done:
        *ret_dec = dec;
        *ret_grp = grp;
        return 0;
}

/* Check an unambiguous reading against what the file showed so far, then remember it. */
static int numfmt_learn(struct mx_numfmt *fmt, char dec, char grp)
{
        if (dec && ((fmt->decimal && fmt->decimal != dec) || fmt->group == dec))
                return -EDOM;
        if (grp && ((fmt->group && fmt->group != grp) || fmt->decimal == grp))
                return -EDOM;
        if (dec && !fmt->decimal)
                fmt->decimal = dec;
        if (grp && !fmt->group)
                fmt->group = grp;
        if (!fmt->decimal && (fmt->group == ',' || fmt->group == '.'))
                fmt->decimal = fmt->group == ',' ? '.' : ',';
        return 0;
}

int mx_profreport_parse_number(const char *s, struct mx_numfmt *fmt, double *ret)
{
        struct numtok t;
        char dec, grp, buf[DIGITS_MAX + 32];
        bool ambiguous;
        size_t n_frac;
        int r;

        r = number_tokenize(s, &t);
        if (r < 0)
                return r;
        r = number_classify(&t, fmt, &dec, &grp, &ambiguous);
        if (r < 0)
                return r;
        if (!ambiguous) {
                r = numfmt_learn(fmt, dec, grp);
                if (r < 0)
                        return r;
        }
        /* digits and a decimal exponent: no radix character, so strtod() reads it in any locale */
        n_frac = dec ? t.groups[t.n_groups - 1] : 0;
        snprintf(buf, sizeof(buf), "%s%.*se%ld", t.negative ? "-" : "", (int)t.n_digits, t.digits,
                 t.exponent - (long)n_frac);
        *ret = strtod(buf, NULL);
        return 0;
}

static char *numfmt_describe(const struct mx_numfmt *fmt)
{
        return xasprintf("%s groups digits, %s marks decimals",
                         fmt->group == ' '   ? "a space"
                         : fmt->group == ',' ? "','"
                         : fmt->group == '.' ? "'.'"
                                             : "nothing",
                         fmt->decimal == ',' ? "','" : "'.'");
}

/* Nanoseconds per unit of a time unit as the tools print it ("ns", "usecond", "msec"), or 0. */
static double time_unit_ns(const char *u)
{
        static const struct {
                const char *name;
                double ns;
        } units[] = {
                { "ns", 1 },     { "nsec", 1 },      { "nsecond", 1 },     { "us", 1e3 },
                { "usec", 1e3 }, { "usecond", 1e3 }, { "\xc2\xb5s", 1e3 }, { "\xce\xbcs", 1e3 },
                { "ms", 1e6 },   { "msec", 1e6 },    { "msecond", 1e6 },   { "s", 1e9 },
                { "sec", 1e9 },  { "second", 1e9 },
        };

        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (streq(u, units[i].name))
                        return units[i].ns;
        return 0;
}

/* ---- the report ---- */

static void kernel_done(struct mx_profreport_kernel *k)
{
        for (size_t i = 0; i < k->n_metrics; i++) {
                free(k->metrics[i].section);
                free(k->metrics[i].name);
                free(k->metrics[i].unit);
        }
        free(k->metrics);
        free(k->name);
}

struct mx_profreport *mx_profreport_free(struct mx_profreport *r)
{
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n_kernels; i++)
                kernel_done(&r->kernels[i]);
        free(r->kernels);
        free(r->index);
        free(r);
        return NULL;
}

static size_t *index_slot(const struct mx_profreport *r, const char *name)
{
        size_t mask = r->index_size - 1;
        size_t h = (size_t)mx_fnv1a64(name, strlen(name), MX_FNV1A64_INIT) & mask;

        for (;; h = (h + 1) & mask)
                if (r->index[h] == 0 || streq(r->kernels[r->index[h] - 1].name, name))
                        return &r->index[h];
}

static void index_grow(struct mx_profreport *r)
{
        size_t size = r->index_size ? r->index_size * 2 : 64;

        free(r->index);
        r->index = xcalloc(size, sizeof(size_t));
        r->index_size = size;
        for (size_t i = 0; i < r->n_kernels; i++)
                *index_slot(r, r->kernels[i].name) = i + 1;
}

const struct mx_profreport_kernel *mx_profreport_find(const struct mx_profreport *r, const char *name)
{
        size_t *slot;

        if (!r->index_size)
                return NULL;
        slot = index_slot(r, name);
        return *slot ? &r->kernels[*slot - 1] : NULL;
}

double mx_profreport_kernel_avg_ns(const struct mx_profreport_kernel *k)
{
        return k->n_timed ? k->total_ns / (double)k->n_timed : -1;
}

const struct mx_profreport_metric *mx_profreport_kernel_metric(const struct mx_profreport_kernel *k,
                                                               const char *name)
{
        for (size_t i = 0; i < k->n_metrics; i++)
                if (streq(k->metrics[i].name, name))
                        return &k->metrics[i];
        return NULL;
}

/* The kernel called name, added if new; -E2BIG past MX_PROFREPORT_KERNELS_MAX. */
static int report_kernel(struct mx_profreport *r, const char *name, size_t *ret_index)
{
        size_t *slot;

        if (r->index_size) {
                slot = index_slot(r, name);
                if (*slot) {
                        *ret_index = *slot - 1;
                        return 0;
                }
        }
        if (r->n_kernels >= MX_PROFREPORT_KERNELS_MAX)
                return -E2BIG;
        if ((r->n_kernels + 1) * 2 > r->index_size)
                index_grow(r);
        MX_GROW(r->kernels, r->alloc_kernels, r->n_kernels + 1);
        r->kernels[r->n_kernels] = (struct mx_profreport_kernel){ .name = xstrdup(name) };
        *index_slot(r, name) = ++r->n_kernels;
        *ret_index = r->n_kernels - 1;
        return 0;
}

/* ---- the parser ---- */

enum col {
        COL_NAME,
        COL_INSTANCES,
        COL_TOTAL,
        COL_AVG,
        COL_MIN,
        COL_MAX,
        COL_START,
        COL_DURATION,
        COL_ID,
        COL_KERNEL,
        COL_SECTION,
        COL_METRIC,
        COL_UNIT,
        COL_VALUE,
        COL_INVOCATIONS,
        COL_PID,
        COL_BLOCK,
        COL_GRID,
        COL_DEVICE,
        _COL_MAX,
};

/* Columns every row must reach; the others may be cut short (ncu leaves the Rule columns out). */
static const bool col_required[_COL_MAX] = {
        [COL_NAME] = true,  [COL_INSTANCES] = true,   [COL_TOTAL] = true,  [COL_DURATION] = true,
        [COL_ID] = true,    [COL_KERNEL] = true,      [COL_METRIC] = true, [COL_UNIT] = true,
        [COL_VALUE] = true, [COL_INVOCATIONS] = true,
};

struct parser {
        enum mx_profreport_tool tool;
        struct mx_profreport *r;
        struct mx_csv *csv;
        int format; /* -1 until a header is found */
        int col[_COL_MAX];
        double scale[_COL_MAX]; /* ns per unit of a time column */
        char **header;          /* column names */
        size_t n_header;
        char *header_line;
        size_t header_len;
        unsigned header_line_no;
        struct mx_numfmt fmt;
        double total_ns; /* every kernel's time so far (at most MX_PROFREPORT_TIME_MAX_NS) */

        /* the launch (ncu details, raw) or kernel group (ncu summary) being read */
        char *cur_key;
        size_t cur_kernel;
        bool cur_timed;
        size_t metric_hint; /* where the kernel's last metric was found */

        /* ncu raw page */
        bool raw_units_seen;
        char **raw_units;
        size_t n_raw_units;
        bool *raw_metric; /* per column: a metric, not launch information */
};

static void parser_done(struct parser *p)
{
        mx_profreport_free(p->r);
        mx_csv_free(p->csv);
        strv_free(p->header);
        free(p->header_line);
        free(p->cur_key);
        strv_free(p->raw_units);
        free(p->raw_metric);
}

static int find_col(const struct mx_csv_record *rec, const char *const *names)
{
        for (size_t i = 0; i < rec->n_fields; i++)
                for (size_t j = 0; names[j]; j++)
                        if (streq(rec->fields[i], names[j]))
                                return (int)i;
        return -1;
}

/*
 * A time column "Prefix (unit)" or bare "Prefix" (nanoseconds, or default_ns per
 * unit). Returns the index with *ret_scale, -1 if absent, -EBADMSG for an unknown unit.
 */
static int find_time_col(const struct mx_csv_record *rec, const char *const *prefixes, double default_ns,
                         double *ret_scale, unsigned line_no, char **reterr)
{
        for (size_t i = 0; i < rec->n_fields; i++)
                for (size_t j = 0; prefixes[j]; j++) {
                        const char *f = rec->fields[i], *u;
                        size_t n = strlen(prefixes[j]);
                        _cleanup_free_ char *unit = NULL;

                        if (strncmp(f, prefixes[j], n) != 0)
                                continue;
                        if (f[n] == '\0') {
                                *ret_scale = default_ns;
                                return (int)i;
                        }
                        if (strncmp(f + n, " (", 2) != 0 || !endswith(f, ")"))
                                continue;
                        u = f + n + 2;
                        unit = xstrndup(u, strlen(u) - 1);
                        *ret_scale = time_unit_ns(unit);
                        if (*ret_scale > 0)
                                return (int)i;
                        if (reterr) {
                                _cleanup_free_ char *e = mx_escape(f, 80);

                                *reterr = xasprintf("line %u: column '%s': unknown time unit", line_no, e);
                        }
                        return -EBADMSG;
                }
        return -1;
}

#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* Fill the nsys columns; 1 if rec is an nsys header of format f, 0 if not, <0 on a bad unit. */
static int header_nsys(struct parser *p, const struct mx_csv_record *rec, enum mx_profreport_format f,
                       unsigned line_no, char **reterr)
{
        int *c = p->col;
        double *s = p->scale;

        c[COL_NAME] = find_col(rec, NAMES("Name"));
        if (c[COL_NAME] < 0)
                return 0;
        if (f == MX_PROFREPORT_NSYS_KERN_SUM) {
                c[COL_INSTANCES] = find_col(rec, NAMES("Instances"));
                c[COL_TOTAL] = find_time_col(rec, NAMES("Total Time"), 1, &s[COL_TOTAL], line_no, reterr);
                if (c[COL_INSTANCES] < 0 || c[COL_TOTAL] < 0)
                        return c[COL_TOTAL] < -1 ? c[COL_TOTAL] : 0;
                /* each call may fail with a reason: stop at the first */
                if ((c[COL_AVG] = find_time_col(rec, NAMES("Avg", "Average"), s[COL_TOTAL], &s[COL_AVG],
                                                line_no, reterr)) < -1 ||
                    (c[COL_MIN] = find_time_col(rec, NAMES("Min", "Minimum"), s[COL_TOTAL], &s[COL_MIN],
                                                line_no, reterr)) < -1 ||
                    (c[COL_MAX] = find_time_col(rec, NAMES("Max", "Maximum"), s[COL_TOTAL], &s[COL_MAX],
                                                line_no, reterr)) < -1)
                        return -EBADMSG;
                return 1;
        }
        if (find_col(rec, NAMES("Instances")) >= 0)
                return 0;
        if ((c[COL_START] = find_time_col(rec, NAMES("Start"), 1, &s[COL_START], line_no, reterr)) < -1 ||
            (c[COL_DURATION] = find_time_col(rec, NAMES("Duration"), 1, &s[COL_DURATION], line_no, reterr)) <
                    -1)
                return -EBADMSG;
        return c[COL_START] >= 0 && c[COL_DURATION] >= 0;
}

/* Columns of an ncu raw-page header that describe the launch rather than measure it. */
static bool ncu_launch_column(const char *name)
{
        static const char *const cols[] = {
                "ID",      "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time",
                "Context", "Stream",     "Block Size",   "Grid Size", "Device",      "CC",
        };

        for (size_t i = 0; i < ELEMENTSOF(cols); i++)
                if (streq(name, cols[i]))
                        return true;
        return false;
}

/* Fill the ncu columns; 1 if rec is an ncu header of format f, else 0. */
static int header_ncu(struct parser *p, const struct mx_csv_record *rec, enum mx_profreport_format f)
{
        int *c = p->col;

        c[COL_ID] = find_col(rec, NAMES("ID"));
        c[COL_KERNEL] = find_col(rec, NAMES("Kernel Name"));
        c[COL_SECTION] = find_col(rec, NAMES("Section Name"));
        c[COL_METRIC] = find_col(rec, NAMES("Metric Name"));
        c[COL_UNIT] = find_col(rec, NAMES("Metric Unit"));
        c[COL_PID] = find_col(rec, NAMES("Process ID"));
        c[COL_BLOCK] = find_col(rec, NAMES("Block Size"));
        c[COL_GRID] = find_col(rec, NAMES("Grid Size"));
        c[COL_DEVICE] = find_col(rec, NAMES("Device"));
        if (c[COL_KERNEL] < 0)
                return 0;
        switch (f) {
        case MX_PROFREPORT_NCU_DETAILS:
                c[COL_VALUE] = find_col(rec, NAMES("Metric Value"));
                return c[COL_ID] >= 0 && c[COL_METRIC] >= 0 && c[COL_UNIT] >= 0 && c[COL_VALUE] >= 0;
        case MX_PROFREPORT_NCU_SUMMARY:
                c[COL_INVOCATIONS] = find_col(rec, NAMES("Invocations"));
                c[COL_VALUE] = find_col(rec, NAMES("Average"));
                c[COL_MIN] = find_col(rec, NAMES("Minimum"));
                c[COL_MAX] = find_col(rec, NAMES("Maximum"));
                return c[COL_INVOCATIONS] >= 0 && c[COL_METRIC] >= 0 && c[COL_UNIT] >= 0 &&
                       c[COL_VALUE] >= 0;
        case MX_PROFREPORT_NCU_RAW:
                if (c[COL_ID] < 0 || c[COL_METRIC] >= 0 || c[COL_UNIT] >= 0)
                        return 0;
                p->raw_metric = xcalloc(rec->n_fields, sizeof(bool));
                for (size_t i = 0; i < rec->n_fields; i++)
                        p->raw_metric[i] = !ncu_launch_column(rec->fields[i]);
                c[COL_DURATION] = find_col(rec, NAMES("gpu__time_duration.sum"));
                return 1;
        default:
                return 0;
        }
}

/* Is rec the header of a format p may detect? 1 (p->format set), 0, or <0 (bad header). */
static int parser_header(struct parser *p, const struct mx_csv_record *rec, unsigned line_no, char **reterr)
{
        static const enum mx_profreport_format order[] = {
                MX_PROFREPORT_NCU_DETAILS,   MX_PROFREPORT_NCU_SUMMARY,    MX_PROFREPORT_NCU_RAW,
                MX_PROFREPORT_NSYS_KERN_SUM, MX_PROFREPORT_NSYS_GPU_TRACE,
        };

        for (size_t i = 0; i < ELEMENTSOF(order); i++) {
                enum mx_profreport_format f = order[i];
                int r;

                if (p->tool != MX_PROFREPORT_TOOL_ANY && formats[f].tool != p->tool)
                        continue;
                for (int k = 0; k < _COL_MAX; k++)
                        p->col[k] = -1, p->scale[k] = 1;
                if (formats[f].tool == MX_PROFREPORT_TOOL_NSYS)
                        r = header_nsys(p, rec, f, line_no, reterr);
                else
                        r = header_ncu(p, rec, f);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                p->format = f;
                p->n_header = rec->n_fields;
                p->header = xcalloc(rec->n_fields + 1, sizeof(char *));
                for (size_t k = 0; k < rec->n_fields; k++)
                        p->header[k] = xstrdup(rec->fields[k]);
                p->header_line_no = line_no;
                return 1;
        }
        return 0;
}

static const char *field(const struct parser *p, const struct mx_csv_record *rec, enum col c)
{
        int i = p->col[c];

        return i >= 0 && (size_t)i < rec->n_fields ? rec->fields[i] : "";
}

/* Set *reterr to "line N, column 'C': what 'value'" and return -EBADMSG. */
static int bad_value(const struct parser *p, const struct mx_csv_record *rec, enum col c, const char *what,
                     char **reterr)
{
        if (reterr) {
                _cleanup_free_ char *v = mx_escape(field(p, rec, c), 80);
                _cleanup_free_ char *name = mx_escape(p->header[p->col[c]], 80);

                *reterr = xasprintf("line %u, column '%s': '%s' %s", rec->line, name, v, what);
        }
        return -EBADMSG;
}

/* A number from column c; absent column: -ENOENT; not a number or a wrong format: -EBADMSG. */
static int col_number(struct parser *p, const struct mx_csv_record *rec, enum col c, double *ret,
                      char **reterr)
{
        int r;

        if (p->col[c] < 0)
                return -ENOENT;
        r = mx_profreport_parse_number(field(p, rec, c), &p->fmt, ret);
        if (r == -EDOM) {
                _cleanup_free_ char *d = numfmt_describe(&p->fmt);
                _cleanup_free_ char *what = xasprintf("does not follow this file's number format (%s)", d);

                return bad_value(p, rec, c, what, reterr);
        }
        if (r < 0)
                return bad_value(p, rec, c, "is not a number", reterr);
        return 0;
}

static int col_count(struct parser *p, const struct mx_csv_record *rec, enum col c, uint64_t *ret,
                     char **reterr)
{
        double v;
        int r;

        r = col_number(p, rec, c, &v, reterr);
        if (r < 0)
                return r;
        if (v < 0 || v > 1e15 || v != floor(v))
                return bad_value(p, rec, c, "is not a count", reterr);
        *ret = (uint64_t)v;
        return 0;
}

/* A time of column c (in ns) that no sum can hold: not finite (strtod() reads "1e400"), negative, or past
 * MX_PROFREPORT_TIME_MAX_NS ("1e300"); -EBADMSG naming the line, the column and the value. */
static int check_time(const struct parser *p, const struct mx_csv_record *rec, enum col c, double ns,
                      char **reterr)
{
        if (!isfinite(ns) || ns < 0)
                return bad_value(p, rec, c, "is not a kernel time (not finite, or negative)", reterr);
        if (ns > MX_PROFREPORT_TIME_MAX_NS - p->total_ns) {
                _cleanup_free_ char *what = xasprintf("is an absurd kernel time: the report's kernels would "
                                                      "take more than %.0e ns (%.1f days)",
                                                      MX_PROFREPORT_TIME_MAX_NS,
                                                      MX_PROFREPORT_TIME_MAX_NS / 86400e9);

                return bad_value(p, rec, c, what, reterr);
        }
        return 0;
}

/*
 * Add n launches of kernel k taking total ns (min and max ns each, checked by the caller where they are
 * columns of their own), as column c of rec gave them. The report's times together stay within
 * MX_PROFREPORT_TIME_MAX_NS, so that no sum of them overflows (dprof.c adds them in picoseconds).
 */
static int parser_add_time(struct parser *p, const struct mx_csv_record *rec, enum col c,
                           struct mx_profreport_kernel *k, uint64_t n, double total, double min, double max,
                           char **reterr)
{
        int r;

        if (n == 0)
                return 0;
        r = check_time(p, rec, c, total, reterr);
        if (r >= 0)
                r = check_time(p, rec, c, min, reterr);
        if (r >= 0)
                r = check_time(p, rec, c, max, reterr);
        if (r < 0)
                return r;
        p->total_ns += total;
        if (k->n_timed == 0 || min < k->min_ns)
                k->min_ns = min;
        if (k->n_timed == 0 || max > k->max_ns)
                k->max_ns = max;
        k->n_timed += n;
        k->total_ns += total;
        return 0;
}

static int parser_kernel(struct parser *p, const struct mx_csv_record *rec, const char *name, size_t *ret,
                         char **reterr)
{
        enum col c = p->col[COL_KERNEL] >= 0 ? COL_KERNEL : COL_NAME;

        if (!*name)
                return bad_value(p, rec, c, "is an empty kernel name", reterr);
        if (report_kernel(p->r, name, ret) < 0) {
                if (reterr)
                        *reterr = xasprintf("line %u: more than %d distinct kernels", rec->line,
                                            MX_PROFREPORT_KERNELS_MAX);
                return -E2BIG;
        }
        return 0;
}

/* Add one value of a metric to a kernel (n launches, sum of their values, their min and max). */
static int kernel_add_metric(struct mx_profreport_kernel *k, size_t *hint, const char *section,
                             const char *name, const char *unit, double sum, double min, double max,
                             uint64_t n)
{
        struct mx_profreport_metric *m = NULL;

        /* launches list their metrics in the same order: try where the last one was found first */
        for (size_t j = 0; j < k->n_metrics && !m; j++) {
                struct mx_profreport_metric *x = &k->metrics[(*hint + j) % k->n_metrics];

                if (streq(x->name, name) && streq(x->unit, unit) && streq(x->section, section))
                        m = x;
        }
        if (!m) {
                if (k->n_metrics >= MX_PROFREPORT_METRICS_MAX)
                        return -E2BIG;
                k->metrics = xreallocarray(k->metrics, k->n_metrics + 1, sizeof(*k->metrics));
                m = &k->metrics[k->n_metrics++];
                *m = (struct mx_profreport_metric){ .section = xstrdup(section),
                                                    .name = xstrdup(name),
                                                    .unit = xstrdup(unit),
                                                    .min = min,
                                                    .max = max };
        }
        *hint = (size_t)(m - k->metrics) + 1;
        m->sum += sum;
        m->min = MX_MIN(m->min, min);
        m->max = MX_MAX(m->max, max);
        m->n += n;
        return 0;
}

static int parser_metric(struct parser *p, const struct mx_csv_record *rec, const char *section,
                         const char *name, const char *unit, double sum, double min, double max, uint64_t n,
                         char **reterr)
{
        struct mx_profreport_kernel *k = &p->r->kernels[p->cur_kernel];

        if (kernel_add_metric(k, &p->metric_hint, section, name, unit, sum, min, max, n) < 0) {
                if (reterr) {
                        _cleanup_free_ char *e = mx_escape(k->name, 80);

                        *reterr = xasprintf("line %u: kernel '%s' has more than %d distinct metrics",
                                            rec->line, e, MX_PROFREPORT_METRICS_MAX);
                }
                return -E2BIG;
        }
        return 0;
}

static bool is_duration_metric(const char *name)
{
        return streq(name, "Duration") || streq(name, "gpu__time_duration.sum");
}

static int row_nsys_kern_sum(struct parser *p, const struct mx_csv_record *rec, char **reterr)
{
        struct mx_profreport_kernel *k;
        uint64_t inst;
        double total, min, max;
        size_t ki;
        int r;

        r = col_count(p, rec, COL_INSTANCES, &inst, reterr);
        if (r >= 0)
                r = col_number(p, rec, COL_TOTAL, &total, reterr);
        if (r >= 0)
                r = parser_kernel(p, rec, field(p, rec, COL_NAME), &ki, reterr);
        if (r < 0)
                return r;
        total *= p->scale[COL_TOTAL];
        min = max = inst ? total / (double)inst : 0;
        r = col_number(p, rec, COL_MIN, &min, reterr);
        if (r >= 0) {
                min *= p->scale[COL_MIN];
                r = check_time(p, rec, COL_MIN, min, reterr);
        }
        if (r < 0 && r != -ENOENT)
                return r;
        r = col_number(p, rec, COL_MAX, &max, reterr);
        if (r >= 0) {
                max *= p->scale[COL_MAX];
                r = check_time(p, rec, COL_MAX, max, reterr);
        }
        if (r < 0 && r != -ENOENT)
                return r;
        k = &p->r->kernels[ki];
        k->instances += inst;
        return parser_add_time(p, rec, COL_TOTAL, k, inst, total, min, max, reterr);
}

static int row_nsys_gpu_trace(struct parser *p, const struct mx_csv_record *rec, char **reterr)
{
        const char *name = field(p, rec, COL_NAME);
        struct mx_profreport_kernel *k;
        double d;
        size_t ki;
        int r;

        /* memory operations: "[CUDA memcpy Host-to-Device]", "[CUDA memset]" */
        if (name[0] == '[' && endswith(name, "]")) {
                p->r->n_skipped++;
                return 0;
        }
        r = col_number(p, rec, COL_DURATION, &d, reterr);
        if (r >= 0)
                r = parser_kernel(p, rec, name, &ki, reterr);
        if (r < 0)
                return r;
        d *= p->scale[COL_DURATION];
        k = &p->r->kernels[ki];
        k->instances++;
        return parser_add_time(p, rec, COL_DURATION, k, 1, d, d, d, reterr);
}

/* Start a new launch or kernel group when key changes; rows of one launch name one kernel. */
static int parser_group(struct parser *p, const struct mx_csv_record *rec, const char *key, bool *ret_new,
                        char **reterr)
{
        const char *name = field(p, rec, COL_KERNEL);
        size_t ki;
        int r;

        *ret_new = false;
        if (p->cur_key && streq(p->cur_key, key)) {
                if (streq(p->r->kernels[p->cur_kernel].name, name))
                        return 0;
                if (reterr) {
                        _cleanup_free_ char *e = mx_escape(key, 40);

                        *reterr = xasprintf("line %u: launch ID '%s' names a different kernel than the rows "
                                            "before it",
                                            rec->line, e);
                }
                return -EBADMSG;
        }
        r = parser_kernel(p, rec, name, &ki, reterr);
        if (r < 0)
                return r;
        free(p->cur_key);
        p->cur_key = xstrdup(key);
        p->cur_kernel = ki;
        p->metric_hint = 0;
        p->cur_timed = false;
        *ret_new = true;
        return 0;
}

/* The kernel of a row of one launch (ncu details, raw): a new launch ID starts a launch of it. */
static int launch_kernel(struct parser *p, const struct mx_csv_record *rec, const char *id,
                         struct mx_profreport_kernel **ret, char **reterr)
{
        bool launch;
        int r;

        if (!*id)
                return bad_value(p, rec, COL_ID, "is an empty launch ID", reterr);
        r = parser_group(p, rec, id, &launch, reterr);
        if (r < 0)
                return r;
        *ret = &p->r->kernels[p->cur_kernel];
        if (launch)
                (*ret)->instances++;
        return 0;
}

/* A metric value; -ENOENT for values that are not numbers ("n/a"), which ncu prints for some metrics. */
static int metric_value(struct parser *p, const struct mx_csv_record *rec, enum col c, const char *metric,
                        double *ret, char **reterr)
{
        int r;

        r = mx_profreport_parse_number(field(p, rec, c), &p->fmt, ret);
        if (r == -EINVAL || (r == -EDOM && !is_duration_metric(metric)))
                return -ENOENT;
        if (r < 0)
                return col_number(p, rec, c, ret, reterr);
        return 0;
}

static int row_ncu_details(struct parser *p, const struct mx_csv_record *rec, char **reterr)
{
        const char *id = field(p, rec, COL_ID), *metric = field(p, rec, COL_METRIC);
        const char *unit = field(p, rec, COL_UNIT);
        struct mx_profreport_kernel *k;
        double v, ns;
        int r;

        r = launch_kernel(p, rec, id, &k, reterr);
        if (r < 0)
                return r;
        r = metric_value(p, rec, COL_VALUE, metric, &v, reterr);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        ns = time_unit_ns(unit);
        if (is_duration_metric(metric) && ns > 0 && !p->cur_timed) {
                r = parser_add_time(p, rec, COL_VALUE, k, 1, v * ns, v * ns, v * ns, reterr);
                if (r < 0)
                        return r;
                p->cur_timed = true;
        }
        return parser_metric(p, rec, field(p, rec, COL_SECTION), metric, unit, v, v, v, 1, reterr);
}

static int row_ncu_summary(struct parser *p, const struct mx_csv_record *rec, char **reterr)
{
        const char *metric = field(p, rec, COL_METRIC), *unit = field(p, rec, COL_UNIT);
        _cleanup_free_ char *key = NULL;
        struct mx_profreport_kernel *k;
        uint64_t inv;
        bool group;
        double avg, min, max, ns;
        int r;

        /* one kernel group = one kernel name and launch configuration in one process */
        key = xasprintf("%s\x1f%s\x1f%s\x1f%s\x1f%s", field(p, rec, COL_PID), field(p, rec, COL_KERNEL),
                        field(p, rec, COL_BLOCK), field(p, rec, COL_GRID), field(p, rec, COL_DEVICE));
        r = col_count(p, rec, COL_INVOCATIONS, &inv, reterr);
        if (r >= 0)
                r = parser_group(p, rec, key, &group, reterr);
        if (r < 0)
                return r;
        k = &p->r->kernels[p->cur_kernel];
        if (group)
                k->instances += inv;
        r = metric_value(p, rec, COL_VALUE, metric, &avg, reterr);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (metric_value(p, rec, COL_MIN, metric, &min, NULL) < 0)
                min = avg;
        if (metric_value(p, rec, COL_MAX, metric, &max, NULL) < 0)
                max = avg;
        ns = time_unit_ns(unit);
        if (is_duration_metric(metric) && ns > 0 && !p->cur_timed) {
                r = parser_add_time(p, rec, COL_VALUE, k, inv, avg * ns * (double)inv, min * ns, max * ns,
                                    reterr);
                if (r < 0)
                        return r;
                p->cur_timed = true;
        }
        return parser_metric(p, rec, field(p, rec, COL_SECTION), metric, unit, avg * (double)inv, min, max,
                             inv, reterr);
}

static int row_ncu_raw(struct parser *p, const struct mx_csv_record *rec, char **reterr)
{
        const char *id = field(p, rec, COL_ID);
        struct mx_profreport_kernel *k;
        int r;

        if (!p->raw_units_seen && !*id) { /* the units row right after the header */
                p->raw_units_seen = true;
                p->raw_units = xcalloc(rec->n_fields + 1, sizeof(char *));
                for (size_t i = 0; i < rec->n_fields; i++)
                        p->raw_units[i] = xstrdup(rec->fields[i]);
                p->n_raw_units = rec->n_fields;
                p->r->n_rows--;
                return 0;
        }
        p->raw_units_seen = true;
        r = launch_kernel(p, rec, id, &k, reterr);
        if (r < 0)
                return r;
        for (size_t i = 0; i < rec->n_fields; i++) {
                const char *unit = i < p->n_raw_units ? p->raw_units[i] : "";
                double v, ns;

                if (!p->raw_metric[i] || mx_profreport_parse_number(rec->fields[i], &p->fmt, &v) < 0)
                        continue;
                ns = *unit ? time_unit_ns(unit) : 1;
                if ((int)i == p->col[COL_DURATION] && ns > 0 && !p->cur_timed) {
                        r = parser_add_time(p, rec, COL_DURATION, k, 1, v * ns, v * ns, v * ns, reterr);
                        if (r < 0)
                                return r;
                        p->cur_timed = true;
                }
                r = parser_metric(p, rec, "", p->header[i], unit, v, v, v, 1, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parser_record(struct parser *p, const struct mx_csv_record *rec, char **reterr)
{
        static int (*const rows[_MX_PROFREPORT_FORMAT_MAX])(struct parser *, const struct mx_csv_record *,
                                                            char **) = {
                [MX_PROFREPORT_NSYS_KERN_SUM] = row_nsys_kern_sum,
                [MX_PROFREPORT_NSYS_GPU_TRACE] = row_nsys_gpu_trace,
                [MX_PROFREPORT_NCU_DETAILS] = row_ncu_details,
                [MX_PROFREPORT_NCU_SUMMARY] = row_ncu_summary,
                [MX_PROFREPORT_NCU_RAW] = row_ncu_raw,
        };
        int missing = -1;

        if (rec->n_fields > p->n_header) {
                if (reterr)
                        *reterr = xasprintf("line %u: %zu fields, but the header on line %u has %zu",
                                            rec->line, rec->n_fields, p->header_line_no, p->n_header);
                return -EBADMSG;
        }
        for (int c = 0; c < _COL_MAX; c++) /* the first required column the row does not reach */
                if (col_required[c] && p->col[c] >= 0 && (size_t)p->col[c] >= rec->n_fields &&
                    (missing < 0 || p->col[c] < missing))
                        missing = p->col[c];
        if (missing >= 0) {
                if (reterr) {
                        _cleanup_free_ char *e = mx_escape(p->header[missing], 80);

                        *reterr = xasprintf("line %u: %zu fields, too few to reach column '%s' (field %d)",
                                            rec->line, rec->n_fields, e, missing + 1);
                }
                return -EBADMSG;
        }
        p->r->n_rows++;
        return rows[p->format](p, rec, reterr);
}

/* Which lines after the header are table rows: ncu quotes every field, nsys rows start with a number. */
static bool parser_is_row(const struct parser *p, const char *line, size_t len)
{
        if (len == 0)
                return false;
        if (len == p->header_len && memcmp(line, p->header_line, len) == 0)
                return false; /* the header again: a second report appended */
        if (formats[p->format].tool == MX_PROFREPORT_TOOL_NCU)
                return line[0] == '"';
        return (line[0] >= '0' && line[0] <= '9') || line[0] == '-' || line[0] == '"' || line[0] == '.';
}

static int parser_line(struct parser *p, unsigned line_no, const char *line, size_t len, char **reterr)
{
        int r;

        if (p->format < 0) {
                /* before the header anything goes; a line that is not one complete record is noise */
                r = mx_csv_feed_line(p->csv, line_no, line, len, NULL);
                r = r == 1 ? parser_header(p, mx_csv_record(p->csv), line_no, reterr) : 0;
                mx_csv_reset(p->csv);
                if (r < 0)
                        return r;
                if (r == 0)
                        p->r->n_noise++;
                else {
                        p->header_line = memdup_nul(line, len);
                        p->header_len = len;
                }
                return 0;
        }
        if (!mx_csv_pending(p->csv) && !parser_is_row(p, line, len)) {
                p->r->n_noise++;
                return 0;
        }
        r = mx_csv_feed_line(p->csv, line_no, line, len, reterr);
        if (r <= 0)
                return r;
        return parser_record(p, mx_csv_record(p->csv), reterr);
}

static char *formats_tried(enum mx_profreport_tool tool)
{
        struct mx_buf b = MX_BUF_INIT;

        for (int f = 0; f < _MX_PROFREPORT_FORMAT_MAX; f++) {
                if (tool != MX_PROFREPORT_TOOL_ANY && formats[f].tool != tool)
                        continue;
                mx_buf_printf(&b, "%s%s", b.len ? "; " : "", formats[f].describe);
        }
        return mx_buf_steal(&b);
}

static int parse_lines(struct mx_lines *l, uint64_t max_bytes, enum mx_profreport_tool tool,
                       struct mx_profreport **ret, char **reterr)
{
        _cleanup_(parser_done) struct parser p = {
                .tool = tool,
                .r = xcalloc(1, sizeof(struct mx_profreport)),
                .csv = mx_csv_new(NULL),
                .format = -1,
        };
        const char *line;
        size_t len;
        int r;

        if (tool < 0 || tool >= _MX_PROFREPORT_TOOL_MAX)
                return -EINVAL;
        while ((r = mx_lines_next(l, &line, &len)) > 0) {
                r = parser_line(&p, mx_lines_number(l), line, len, reterr);
                if (r < 0)
                        return r;
        }
        if (r == -EFBIG) {
                if (reterr)
                        *reterr = xasprintf("larger than the limit of %" PRIu64 " bytes (after line %u)",
                                            max_bytes, mx_lines_number(l));
                return r;
        }
        if (r == -E2BIG) {
                if (reterr)
                        *reterr = xasprintf("line %u: longer than %d bytes", mx_lines_number(l),
                                            LINE_MAX_BYTES);
                return r;
        }
        if (r < 0) {
                if (reterr)
                        *reterr =
                                xasprintf("read error after line %u: %s", mx_lines_number(l), strerror(-r));
                return r;
        }
        r = mx_csv_finish(p.csv, reterr);
        if (r < 0)
                return r;
        if (p.format < 0) {
                if (reterr) {
                        _cleanup_free_ char *tried = formats_tried(tool);

                        *reterr = xasprintf("no profiler report header in %u lines (tried: %s)",
                                            mx_lines_number(l), tried);
                }
                return -EBADMSG;
        }
        p.r->format = p.format;
        p.r->decimal_sep = p.fmt.decimal;
        p.r->group_sep = p.fmt.group;
        for (size_t i = 0; i < p.r->n_kernels; i++)
                p.r->n_launches += p.r->kernels[i].instances;
        *ret = TAKE_PTR(p.r);
        return 0;
}

int mx_profreport_parse_buffer(const char *data, size_t len, enum mx_profreport_tool tool,
                               struct mx_profreport **ret, char **reterr)
{
        _cleanup_(mx_lines_freep) struct mx_lines *l = mx_lines_new_buffer(data, len, LINE_MAX_BYTES, 0);

        return parse_lines(l, 0, tool, ret, reterr);
}

int mx_profreport_parse_fd(int fd, uint64_t max_bytes, enum mx_profreport_tool tool, struct mx_profreport **ret,
                           char **reterr)
{
        _cleanup_(mx_lines_freep) struct mx_lines *l = mx_lines_new_fd(fd, LINE_MAX_BYTES, 0);

        mx_lines_set_max_bytes(l, max_bytes);
        return parse_lines(l, max_bytes, tool, ret, reterr);
}

int mx_profreport_parse_file(const char *path, enum mx_profreport_tool tool, struct mx_profreport **ret,
                             char **reterr)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *why = NULL;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                if (reterr)
                        *reterr = xasprintf("%s: %s", path, strerror(-r));
                return r;
        }
        r = mx_profreport_parse_fd(fd, 0, tool, ret, reterr ? &why : NULL);
        if (r < 0 && reterr)
                *reterr = xasprintf("%s: %s", path, strna(why));
        return r;
}

int mx_profreport_parse_regular(const char *path, uint64_t max_bytes, enum mx_profreport_tool tool,
                                struct mx_profreport **ret, char **reterr)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *why = NULL;
        int r;

        r = mx_open_regular(path, max_bytes, &fd, reterr);
        if (r < 0)
                return r;
        r = mx_profreport_parse_fd(fd, max_bytes, tool, ret, reterr ? &why : NULL);
        if (r < 0 && reterr)
                *reterr = xasprintf("%s: %s", path, strna(why));
        return r;
}
