/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix report KIND ... and mxmatrix export JOB: the report document of a
 * job, gathered page by page from mxmatrixd's report method or read from a
 * file that export wrote (--from), rendered by report-*.c to stdout or into
 * -o DIR under the file names the seeds use.
 */
#include "client.h"
#include "conn.h"
#include "mxreport.h"

#include <unistd.h>

#include <getopt.h>
#include <sys/stat.h>

static void report_help(FILE *f)
{
        fputs("Usage: mxmatrix report KIND [FEATURE] JOB [-o DIR]\n"
              "       mxmatrix report KIND [FEATURE] --from FILE [-o DIR]\n\n"
              "Write a report of a job from mxmatrixd's database, or from a document that\n"
              "mxmatrix export wrote (no daemon needed). KIND is one of:\n",
              f);
        for (size_t i = 0; i < report_n_kinds; i++)
                fprintf(f, "  %-18s %s (%s)\n", report_kinds[i].name, report_kinds[i].summary,
                        report_kinds[i].file                          ? report_kinds[i].file
                        : report_kinds[i].file_name == report_test_log_name ? "TEST_LOGS/FEATURE_<NAME>_<DATE>.md"
                                                                            : "porting/FEATURE_<NAME>.md");
        fputs("  all                every report above (needs -o DIR)\n\n"
              "  --from FILE        read the report document from FILE (- for stdin)\n"
              "  --feature NAME     test-log, porting: the matrix feature (default: the job's own)\n"
              "  -o, --output DIR   write into DIR under the seeds' file names (created if\n"
              "                     missing) instead of to stdout\n\n"
              "JOB is a job number (12 or j12). See mxmatrix(1) and mxmatrix-report.json(5).\n",
              f);
}

static void export_help(FILE *f)
{
        fputs("Usage: mxmatrix export JOB [-o FILE] [--page N]\n\n"
              "Write a job's report document (mxmatrix-report.json(5)) from mxmatrixd's database:\n"
              "the job, what its matrix declares and every run with its attempts, levels,\n"
              "metrics, messages, samples and metadata. mxmatrix report --from FILE renders it\n"
              "without a daemon.\n\n"
              "  -o, --output FILE  write to FILE instead of stdout\n"
              "  --page N           ask the daemon for N runs at a time (default its 1000)\n\n"
              "See mxmatrix(1).\n",
              f);
}

static int parse_job(const char *word, int64_t *ret)
{
        const char *num = (word[0] == 'j' || word[0] == 'J') ? word + 1 : word;

        if (mx_parse_int64(num, 1, INT64_MAX, ret) < 0) {
                fprintf(stderr, "mxmatrix: '%s' is not a job number (N or jN)\n", word);
                return -EINVAL;
        }
        return 0;
}

static int gather_runs(json_t *item, void *ud)
{
        json_array_extend(ud, json_object_get(item, "runs"));
        return 0;
}

/* The whole document of a job: the report method's pages, runs in plan order. */
static int fetch(int64_t job, int64_t page, json_t **ret)
{
        _cleanup_(client_disconnectp) struct client_conn *c = NULL;
        _cleanup_json_ json_t *runs = json_array(), *params = json_pack("{s:I}", "job", (json_int_t)job);
        json_t *res = NULL;
        int r = client_connect(&c);

        if (r != MX_EXIT_OK)
                return r;
        if (page > 0)
                json_object_set_new(params, "limit", json_integer(page));
        for (;;) {
                json_decref(res);
                res = NULL;
                r = client_call(c, "report", params, gather_runs, runs, &res, NULL);
                if (r != MX_EXIT_OK)
                        return r;
                if (!json_is_true(json_object_get(res, "more")) ||
                    !json_is_integer(json_object_get(res, "after")))
                        break;
                json_object_set(params, "after", json_object_get(res, "after"));
        }
        {
                _cleanup_json_ json_t *doc = json_pack(
                        "{s:O,s:O,s:O,s:O}", "report", json_object_get(res, "report"), "job",
                        json_object_get(res, "job"), "matrix", json_object_get(res, "matrix"), "runs", runs);

                if (json_is_object(json_object_get(res, "criteria")))
                        json_object_set(doc, "criteria", json_object_get(res, "criteria"));
                if (json_is_object(json_object_get(res, "attribution")))
                        json_object_set(doc, "attribution", json_object_get(res, "attribution"));
                if (json_is_object(json_object_get(res, "analysis")))
                        json_object_set(doc, "analysis", json_object_get(res, "analysis"));

                *ret = report_doc_normalise(doc);
        }
        json_decref(res);
        return MX_EXIT_OK;
}

/* Write text to path through a temporary file and rename, so a reader never sees half a report. */
static int write_file(const char *path, const char *text, size_t len)
{
        _cleanup_free_ char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
        FILE *f = fopen(tmp, "we");

        if (!f || fwrite(text, 1, len, f) != len || fflush(f) != 0 || fsync(fileno(f)) < 0) {
                fprintf(stderr, "mxmatrix: %s: %s\n", tmp, strerror(errno));
                if (f)
                        fclose(f);
                unlink(tmp);
                return MX_EXIT_FAILURE;
        }
        if (fclose(f) != 0 || rename(tmp, path) < 0) {
                fprintf(stderr, "mxmatrix: %s: %s\n", path, strerror(errno));
                unlink(tmp);
                return MX_EXIT_FAILURE;
        }
        return MX_EXIT_OK;
}

static int make_dir(const char *path)
{
        if (mkdir(path, 0777) < 0 && errno != EEXIST) {
                fprintf(stderr, "mxmatrix: %s: %s\n", path, strerror(errno));
                return MX_EXIT_FAILURE;
        }
        return MX_EXIT_OK;
}

/* Render one kind into a string. */
static int render(json_t *doc, const struct report_kind *k, const char *feature, char **ret, size_t *ret_len)
{
        _cleanup_free_ char *err = NULL;
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        int r;

        if (!f)
                mx_die("open_memstream: %m");
        r = k->render ? k->render(doc, f, &err) : k->render_feature(doc, feature, f, &err);
        fclose(f);
        if (r < 0) {
                free(buf);
                fprintf(stderr, "mxmatrix: report %s: %s\n", k->name, err ? err : strerror(-r));
                return r == -ENOENT ? MX_EXIT_NOTFOUND : MX_EXIT_FAILURE;
        }
        *ret = buf;
        *ret_len = len;
        return MX_EXIT_OK;
}

static int emit(json_t *doc, const struct report_kind *k, const char *feature, const char *dir)
{
        _cleanup_free_ char *text = NULL, *name = NULL, *path = NULL, *err = NULL;
        size_t len = 0;
        int r = render(doc, k, feature, &text, &len);

        if (r != MX_EXIT_OK)
                return r;
        if (!dir) {
                fwrite(text, 1, len, stdout);
                return fflush(stdout) == 0 ? MX_EXIT_OK : MX_EXIT_FAILURE;
        }
        if (k->file && strchr(k->file, '/')) {
                /* analysis/...: the directory first */
                _cleanup_free_ char *sub =
                        xasprintf("%s/%.*s", dir, (int)(strrchr(k->file, '/') - k->file), k->file);

                r = make_dir(sub);
                if (r != MX_EXIT_OK)
                        return r;
                name = xstrdup(k->file);
        } else if (k->file)
                name = xstrdup(k->file);
        else {
                _cleanup_free_ char *sub = NULL;

                if (k->file_name(doc, feature, &name, &err) < 0) {
                        fprintf(stderr, "mxmatrix: report %s: %s\n", k->name, err);
                        return MX_EXIT_FAILURE;
                }
                /* TEST_LOGS/..., porting/...: the directory first */
                sub = xasprintf("%s/%.*s", dir, (int)(strrchr(name, '/') ? strrchr(name, '/') - name : 0), name);
                r = make_dir(sub);
                if (r != MX_EXIT_OK)
                        return r;
        }
        path = xasprintf("%s/%s", dir, name);
        r = write_file(path, text, len);
        if (r == MX_EXIT_OK)
                printf("wrote %s\n", path);
        return r;
}

/* What the command line asks for. */
struct report_args {
        const char *from, *feature, *dir, *kind;
        int64_t job;
};

/* The options before the words: 1 to go on, 0 when it printed the help, -EINVAL after the usage. */
static int report_options(int argc, char **argv, struct report_args *a)
{
        static const struct option opts[] = {
                {"from", required_argument, NULL, 'f'},   {"feature", required_argument, NULL, 'F'},
                {"output", required_argument, NULL, 'o'}, {"json", no_argument, NULL, 'j'},
                {"help", no_argument, NULL, 'h'},         {},
        };
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) >= 0)
                switch (c) {
                case 'f':
                        a->from = optarg;
                        break;
                case 'F':
                        a->feature = optarg;
                        break;
                case 'o':
                        a->dir = optarg;
                        break;
                case 'j':
                        break; /* the json kind is the document; --json changes nothing here */
                case 'h':
                        report_help(stdout);
                        return 0;
                default:
                        report_help(stderr);
                        return -EINVAL;
                }
        return 1;
}

/*
 * The words after KIND, where options may also stand (a second pass): at most two of the others, in
 * pos (*ret_w of them). 0, or -EINVAL after saying why not.
 */
static int report_words(char **words, int n, struct report_args *a, const char *pos[2], int *ret_w)
{
        int w = 0;

        for (int i = 0; i < n; i++) {
                if ((streq(words[i], "-o") || streq(words[i], "--output")) && i + 1 < n)
                        a->dir = words[++i];
                else if (streq(words[i], "--from") && i + 1 < n)
                        a->from = words[++i];
                else if (streq(words[i], "--feature") && i + 1 < n)
                        a->feature = words[++i];
                else if (streq(words[i], "--json"))
                        continue;
                else if (words[i][0] == '-' && words[i][1]) {
                        fprintf(stderr, "mxmatrix: report: unknown option '%s'\n", words[i]);
                        return -EINVAL;
                } else if (w < 2)
                        pos[w++] = words[i];
                else {
                        fprintf(stderr, "mxmatrix: report: too many words ('%s')\n", words[i]);
                        return -EINVAL;
                }
        }
        *ret_w = w;
        return 0;
}

/* [FEATURE] JOB, or [FEATURE] with --from: the w words in pos into a. 0, or -EINVAL after saying why not. */
static int report_job_words(const char *const pos[2], int w, struct report_args *a)
{
        if (!a->from && w == 0) {
                fprintf(stderr, "mxmatrix: report %s: name a JOB, or --from FILE\n", a->kind);
                return -EINVAL;
        }
        if (w == 2 || (w == 1 && a->from)) {
                if (a->feature) {
                        fprintf(stderr, "mxmatrix: report: FEATURE given twice\n");
                        return -EINVAL;
                }
                a->feature = pos[0];
        }
        if (a->from && w == 2) {
                fprintf(stderr, "mxmatrix: report: --from FILE takes no JOB\n");
                return -EINVAL;
        }
        if (!a->from && parse_job(pos[w - 1], &a->job) < 0)
                return -EINVAL;
        return 0;
}

/* The command line into a: 1 to go on, 0 when it printed the help, -EINVAL after saying why not. */
static int report_parse_args(int argc, char **argv, struct report_args *a)
{
        const char *pos[2] = {};
        int r, w;

        r = report_options(argc, argv, a);
        if (r <= 0)
                return r;
        if (argc - optind < 1) {
                report_help(stderr);
                return -EINVAL;
        }
        a->kind = argv[optind];
        r = report_words(argv + optind + 1, argc - optind - 1, a, pos, &w);
        if (r < 0)
                return r;
        r = report_job_words(pos, w, a);
        return r < 0 ? r : 1;
}

/* The kind asked for (*ret NULL for all, which wants -o DIR): 0, or -EINVAL after saying why not. */
static int report_kind_of(const struct report_args *a, const struct report_kind **ret)
{
        *ret = NULL;
        if (streq(a->kind, "all")) {
                if (!a->dir) {
                        fprintf(stderr, "mxmatrix: report all writes several files: give -o DIR\n");
                        return -EINVAL;
                }
                return 0;
        }
        *ret = report_kind_find(a->kind);
        if (!*ret) {
                fprintf(stderr, "mxmatrix: report: unknown kind '%s' (mxmatrix report --help lists them)\n",
                        a->kind);
                return -EINVAL;
        }
        if (a->feature && (*ret)->render) {
                fprintf(stderr, "mxmatrix: report %s takes no FEATURE (test-log and porting do)\n", a->kind);
                return -EINVAL;
        }
        return 0;
}

/* The report document: from the file, or the daemon's for the job. An exit status. */
static int report_doc(const struct report_args *a, json_t **ret)
{
        _cleanup_free_ char *err = NULL;

        if (!a->from)
                return fetch(a->job, 0, ret);
        if (report_doc_load(a->from, ret, &err) < 0) {
                fprintf(stderr, "mxmatrix: report --from %s\n", err);
                return MX_EXIT_INPUT;
        }
        return MX_EXIT_OK;
}

/* Every kind into dir. An exit status. */
static int emit_all(json_t *doc, const char *feature, const char *dir)
{
        for (size_t i = 0; i < report_n_kinds; i++) {
                int r = emit(doc, &report_kinds[i], feature, dir);

                /* A job of pins only has no feature document; the others are still written. */
                if (r == MX_EXIT_NOTFOUND && report_kinds[i].file_name == report_porting_name)
                        continue;
                if (r != MX_EXIT_OK)
                        return r;
        }
        return MX_EXIT_OK;
}

int cmd_report(int argc, char **argv)
{
        struct report_args a = {};
        _cleanup_json_ json_t *doc = NULL;
        const struct report_kind *k;
        int r;

        r = report_parse_args(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? MX_EXIT_USAGE : MX_EXIT_OK;
        if (report_kind_of(&a, &k) < 0)
                return MX_EXIT_USAGE;
        r = report_doc(&a, &doc);
        if (r != MX_EXIT_OK)
                return r;
        if (a.dir && make_dir(a.dir) != MX_EXIT_OK)
                return MX_EXIT_FAILURE;
        return k ? emit(doc, k, a.feature, a.dir) : emit_all(doc, a.feature, a.dir);
}

int cmd_export(int argc, char **argv)
{
        const char *out = NULL, *word = NULL;
        int64_t page = 0;
        _cleanup_json_ json_t *doc = NULL;
        _cleanup_free_ char *text = NULL;
        int64_t job;
        int r;

        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "-h") || streq(argv[i], "--help")) {
                        export_help(stdout);
                        return MX_EXIT_OK;
                }
                if ((streq(argv[i], "-o") || streq(argv[i], "--output")) && i + 1 < argc)
                        out = argv[++i];
                else if (streq(argv[i], "--page") && i + 1 < argc) {
                        if (mx_parse_int64(argv[++i], 1, 100000, &page) < 0) {
                                fprintf(stderr, "mxmatrix: export --page '%s': expected 1 to 100000 runs\n",
                                        argv[i]);
                                return MX_EXIT_USAGE;
                        }
                } else if (streq(argv[i], "--json"))
                        continue;
                else if (argv[i][0] == '-' || word) {
                        export_help(stderr);
                        return MX_EXIT_USAGE;
                } else
                        word = argv[i];
        }
        if (!word) {
                export_help(stderr);
                return MX_EXIT_USAGE;
        }
        if (parse_job(word, &job) < 0)
                return MX_EXIT_USAGE;
        r = fetch(job, page, &doc);
        if (r != MX_EXIT_OK)
                return r;
        text = report_doc_dump(doc);
        if (!out || streq(out, "-")) {
                fputs(text, stdout);
                return fflush(stdout) == 0 ? MX_EXIT_OK : MX_EXIT_FAILURE;
        }
        return write_file(out, text, strlen(text));
}
