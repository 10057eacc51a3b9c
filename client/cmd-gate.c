/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix gate: the L1.5 kernel gate (kgate.h) on files, without a daemon.
 * Expectations come from the command line, and/or from a matrix file: "mxmatrix
 * gate MATRIX [axis=value...]" takes those of the baseline configuration with
 * the given values, exactly as a run of that configuration would be gated.
 */
#include "client.h"

#include "kgate.h"
#include "lines.h"
#include "matrix.h"
#include "plan.h"
#include "profreport.h"

#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>

#define GATE_LOG_LINE_MAX (1024 * 1024) /* longer log lines are matched on their first MiB */
#define GATE_SHOW_MAX 160               /* bytes of a line or kernel name shown in the text output */

struct gate_args {
        struct mx_kgate_expect expect;
        struct mx_kgate_rules *last_see; /* where --or adds an alternative */
        const char *report;
        const char *log;
        enum mx_profreport_tool tool;
        bool json;
        bool list_kernels;
};

static void gate_help(FILE *f)
{
        fprintf(f, "Usage: mxmatrix gate [MATRIX [axis=value...]] [--report FILE] [--log FILE]\n"
                   "                     [EXPECTATIONS...] [--kernels] [--json]\n\n"
                   "Check a profiler report and/or a server log (at least one) against kernel-path\n"
                   "expectations (test level L1.5). Exit status 0: pass; 1: fail or invalid; 2: usage.\n\n"
                   "Inputs:\n"
                   "  --report FILE            nsys stats CSV (cuda_gpu_kern_sum, cuda_gpu_trace) or ncu "
                   "--csv output\n"
                   "  --format auto|nsys|ncu   which tool wrote the report (default: auto-detect)\n"
                   "  --log FILE               the target server's log\n"
                   "Expectations (PATTERN: glob with * ? and \\ escapes, unanchored; re:ERE for a regex):\n"
                   "  MATRIX [axis=value...]   those of the matrix's baseline with these values, as for a run\n"
                   "  --kernel-must-see P      some kernel name matches P\n"
                   "  --kernel-must-not-see P  no kernel name matches P\n"
                   "  --must-see P             some log line matches P\n"
                   "  --must-not-see P         no log line matches P\n"
                   "  --or P                   an alternative to the preceding must-see\n"
                   "Output:\n"
                   "  --kernels                also list the report's kernels\n"
                   "  --json                   one JSON document\n");
}

/* The expectations of a configuration: the matrix's baseline with the given axis=value pairs. */
static int gate_matrix_expect(int argc, char **argv, struct mx_kgate_expect *ret)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ int *config = NULL;
        struct mx_kgate_expect e = {};
        int r = mx_matrix_load_file(argv[0], &m, &err);

        if (r < 0) {
                fprintf(stderr, "mxmatrix gate: %s\n", err);
                return r;
        }
        config = mx_config_copy(m, m->baseline);
        for (int i = 1; i < argc; i++) {
                int axis, value;

                free(err);
                err = NULL;
                r = mx_plan_parse_pin(m, argv[i], &axis, &value, &err);
                if (r < 0) {
                        fprintf(stderr, "mxmatrix gate: %s\n", err);
                        return r;
                }
                config[axis] = value;
        }
        mx_config_expect(m, config, &e);
        mx_kgate_expect_merge(ret, &e);
        mx_kgate_expect_done(&e);
        return 0;
}

enum {
        ARG_REPORT = 0x100,
        ARG_FORMAT,
        ARG_LOG,
        ARG_SEE,
        ARG_NOT,
        ARG_KSEE,
        ARG_KNOT,
        ARG_OR,
        ARG_KERNELS
};

/* One option of the getopt loop: 1 to go on, 0 when it printed the help, -EINVAL after saying why not. */
static int gate_option(int c, struct gate_args *a)
{
        switch (c) {
        case 'h':
                gate_help(stdout);
                return 0;
        case ARG_REPORT:
                a->report = optarg;
                break;
        case ARG_FORMAT:
                a->tool = mx_profreport_tool_from_string(optarg);
                if (a->tool < 0) {
                        fprintf(stderr, "mxmatrix gate: --format must be auto, nsys or ncu, not '%s'\n",
                                optarg);
                        return -EINVAL;
                }
                break;
        case ARG_LOG:
                a->log = optarg;
                break;
        case ARG_SEE:
        case ARG_KSEE:
                a->last_see = c == ARG_SEE ? &a->expect.log : &a->expect.kernels;
                mx_kgate_rules_add_must_see(a->last_see, optarg);
                break;
        case ARG_NOT:
                mx_kgate_rules_add_must_not_see(&a->expect.log, optarg);
                break;
        case ARG_KNOT:
                mx_kgate_rules_add_must_not_see(&a->expect.kernels, optarg);
                break;
        case ARG_OR:
                if (!a->last_see) {
                        fprintf(stderr, "mxmatrix gate: --or needs a --must-see or "
                                        "--kernel-must-see before it\n");
                        return -EINVAL;
                }
                (void)mx_kgate_rules_add_alternative(a->last_see, optarg);
                break;
        case ARG_KERNELS:
                a->list_kernels = true;
                break;
        case 'j':
                a->json = true;
                break;
        default:
                return -EINVAL;
        }
        return 1;
}

static int gate_parse_args(int argc, char **argv, struct gate_args *a)
{
        static const struct option opts[] = {
                { "report", required_argument, NULL, ARG_REPORT },
                { "format", required_argument, NULL, ARG_FORMAT },
                { "log", required_argument, NULL, ARG_LOG },
                { "must-see", required_argument, NULL, ARG_SEE },
                { "must-not-see", required_argument, NULL, ARG_NOT },
                { "kernel-must-see", required_argument, NULL, ARG_KSEE },
                { "kernel-must-not-see", required_argument, NULL, ARG_KNOT },
                { "or", required_argument, NULL, ARG_OR },
                { "kernels", no_argument, NULL, ARG_KERNELS },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c, r;

        optind = 0; /* main() ran getopt already: start afresh */
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0)
                if ((r = gate_option(c, a)) <= 0)
                        return r;
        if (optind < argc && gate_matrix_expect(argc - optind, argv + optind, &a->expect) < 0)
                return -EINVAL;
        if (mx_kgate_expect_empty(&a->expect)) {
                fprintf(stderr, "mxmatrix gate: no expectations (see mxmatrix gate --help)\n");
                return -EINVAL;
        }
        if (!a->report && !a->log) {
                fprintf(stderr, "mxmatrix gate: nothing to check: give --report FILE, --log FILE or both\n");
                return -EINVAL;
        }
        return 1;
}

/* A JSON string of text from outside (paths, reasons): escaped, so always valid UTF-8 and safe to print. */
static json_t *jstr(const char *s)
{
        _cleanup_free_ char *e = mx_escape(strempty(s), 0);

        return json_string(e);
}

static json_t *report_json(const char *path, const struct mx_profreport *r, const char *error)
{
        json_t *o = json_object(), *list;

        json_object_set_new(o, "path", jstr(path));
        if (!r) {
                json_object_set_new(o, "error", jstr(error));
                return o;
        }
        json_object_set_new(o, "format", json_string(mx_profreport_format_to_string(r->format)));
        json_object_set_new(o, "description", json_string(mx_profreport_format_describe(r->format)));
        json_object_set_new(o, "launches", json_integer((json_int_t)r->n_launches));
        list = json_array();
        for (size_t i = 0; i < r->n_kernels; i++) {
                const struct mx_profreport_kernel *k = &r->kernels[i];
                json_t *kj = json_object();

                json_object_set_new(kj, "name", jstr(k->name));
                json_object_set_new(kj, "instances", json_integer((json_int_t)k->instances));
                if (k->n_timed) {
                        json_object_set_new(kj, "total_ns", json_real(k->total_ns));
                        json_object_set_new(kj, "avg_ns", json_real(mx_profreport_kernel_avg_ns(k)));
                }
                json_array_append_new(list, kj);
        }
        json_object_set_new(o, "kernels", list);
        return o;
}

/* Parse the report and feed it; returns the report's JSON description. */
static json_t *gate_report(struct mx_kgate *g, const struct gate_args *a, struct mx_profreport **ret)
{
        _cleanup_free_ char *err = NULL;
        int r;

        r = mx_profreport_parse_file(a->report, a->tool, ret, &err);
        if (r < 0) {
                mx_kgate_report_failed(g, err);
                return report_json(a->report, NULL, err);
        }
        mx_kgate_feed_report(g, *ret);
        return report_json(a->report, *ret, NULL);
}

static json_t *gate_log(struct mx_kgate *g, const char *path)
{
        _cleanup_(mx_lines_freep) struct mx_lines *l = NULL;
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *err = NULL;
        json_t *o = json_object();
        const char *line;
        size_t len;
        int r;

        json_object_set_new(o, "path", jstr(path));
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                err = xasprintf("%s: %m", path);
                goto fail;
        }
        l = mx_lines_new_fd(fd, GATE_LOG_LINE_MAX, MX_LINES_TRUNCATE);
        while ((r = mx_lines_next(l, &line, &len)) > 0)
                mx_kgate_feed_log_line(g, line, len);
        if (r < 0) {
                err = xasprintf("%s: read error after line %u: %s", path, mx_lines_number(l), strerror(-r));
                goto fail;
        }
        json_object_set_new(o, "lines", json_integer(mx_lines_number(l)));
        return o;
fail:
        mx_kgate_log_failed(g, err);
        json_object_set_new(o, "error", jstr(err));
        return o;
}

static void print_entries(const char *what, json_t *list, bool is_log)
{
        size_t i;
        json_t *e;

        json_array_foreach (list, i, e) {
                json_t *subject = json_object_get(e, "subject"), *any = json_object_get(e, "any_of");
                _cleanup_free_ char *pat = NULL, *shown = NULL;
                struct mx_buf b = MX_BUF_INIT;
                bool matched = json_is_true(json_object_get(e, "matched"));
                bool must_see = any != NULL;

                if (any) {
                        size_t k;
                        json_t *p;

                        json_array_foreach (any, k, p)
                                mx_buf_printf(&b, "%s'%s'", k ? " or " : "", json_string_value(p));
                } else
                        mx_buf_printf(&b, "'%s'", json_string_value(json_object_get(e, "pattern")));
                pat = mx_escape(b.data, 0);
                mx_buf_free(&b);
                printf("  %-24s %-28s ", what, pat);
                if (!matched) {
                        printf("%s\n", must_see ? "MISSING" : "not seen");
                        continue;
                }
                shown = mx_escape(json_string_value(subject), GATE_SHOW_MAX);
                if (is_log)
                        printf("%s at line %" JSON_INTEGER_FORMAT ": %s\n", must_see ? "seen" : "SEEN",
                               json_integer_value(json_object_get(e, "line")), shown);
                else
                        printf("%s: %s\n", must_see ? "seen" : "SEEN", shown);
        }
}

/* What was read from one input: its size, or why it could not be read. */
static void print_input(const char *key, json_t *input)
{
        json_t *error = json_object_get(input, "error");
        const char *path = strna(json_string_value(json_object_get(input, "path")));

        if (error)
                printf("%s: %s\n", key, strna(json_string_value(error)));
        else if (streq(key, "log"))
                printf("log: %s: %" JSON_INTEGER_FORMAT " lines\n", path,
                       json_integer_value(json_object_get(input, "lines")));
        else
                printf("kernels: %s: %s, %zu kernels, %" JSON_INTEGER_FORMAT " launches\n", path,
                       strna(json_string_value(json_object_get(input, "description"))),
                       json_array_size(json_object_get(input, "kernels")),
                       json_integer_value(json_object_get(input, "launches")));
}

static void print_source(json_t *detail, const char *key, json_t *input)
{
        json_t *s = json_object_get(detail, key);
        bool is_log = streq(key, "log");

        if (input)
                print_input(key, input);
        if (!s)
                return;
        if (json_object_get(s, "missing") && !(input && json_object_get(input, "error"))) {
                _cleanup_free_ char *m = mx_escape(json_string_value(json_object_get(s, "missing")), 0);

                printf("  no evidence: %s\n", m);
        }
        print_entries(is_log ? "log must-see" : "kernel must-see", json_object_get(s, "must_see"), is_log);
        print_entries(is_log ? "log must-not-see" : "kernel must-not-see",
                      json_object_get(s, "must_not_see"), is_log);
}

static void print_kernels(const struct mx_profreport *r)
{
        printf("kernels in the report (instances, mean duration, name):\n");
        for (size_t i = 0; i < r->n_kernels; i++) {
                const struct mx_profreport_kernel *k = &r->kernels[i];
                _cleanup_free_ char *name = mx_escape(k->name, GATE_SHOW_MAX);

                if (k->n_timed)
                        printf("  %8" PRIu64 "  %12.0f ns  %s\n", k->instances,
                               mx_profreport_kernel_avg_ns(k), name);
                else
                        printf("  %8" PRIu64 "  %15s  %s\n", k->instances, "-", name);
        }
}

int cmd_gate(int argc, char **argv)
{
        _cleanup_(mx_kgate_freep) struct mx_kgate *g = NULL;
        _cleanup_(mx_profreport_freep) struct mx_profreport *report = NULL;
        struct gate_args a = { .tool = MX_PROFREPORT_TOOL_ANY, .json = arg_json };
        _cleanup_free_ char *err = NULL;
        json_t *detail = NULL, *inputs = json_object(), *rj = NULL, *lj = NULL;
        enum mx_verdict v;
        int r;

        r = gate_parse_args(argc, argv, &a);
        if (r <= 0) {
                mx_kgate_expect_done(&a.expect);
                json_decref(inputs);
                return r < 0 ? MX_EXIT_USAGE : MX_EXIT_OK;
        }
        r = mx_kgate_new(&a.expect, &g, &err);
        mx_kgate_expect_done(&a.expect);
        if (r < 0) {
                fprintf(stderr, "mxmatrix gate: %s\n", err);
                json_decref(inputs);
                return MX_EXIT_USAGE;
        }
        if (a.report)
                json_object_set_new(inputs, "report", rj = gate_report(g, &a, &report));
        if (a.log)
                json_object_set_new(inputs, "log", lj = gate_log(g, a.log));
        v = mx_kgate_verdict(g, &detail);
        if (a.json) {
                json_object_set_new(detail, "inputs", inputs);
                json_dumpf(detail, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
                putchar('\n');
        } else {
                _cleanup_free_ char *summary =
                        mx_escape(json_string_value(json_object_get(detail, "summary")), 0);
                char upper[16];

                snprintf(upper, sizeof(upper), "%s", mx_verdict_to_string(v));
                for (char *p = upper; *p; p++)
                        *p = (char)(*p - 'a' + 'A');
                printf("L1.5 kernel gate: %s (%s)\n", upper, summary);
                print_source(detail, "kernels", rj);
                print_source(detail, "log", lj);
                if (a.list_kernels && report)
                        print_kernels(report);
                json_decref(inputs);
        }
        json_decref(detail);
        return v == MX_VERDICT_PASS || v == MX_VERDICT_SKIPPED ? MX_EXIT_OK : MX_EXIT_FAILURE;
}
