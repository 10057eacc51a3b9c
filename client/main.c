/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix: parse global options, then run a local verb (matrix files) or a
 * daemon verb (a protocol method, see conn.c).
 */
#include "client.h"
#include "conn.h"
#include "output.h"
#include "protocol.h"
#include "remote.h"

#include <getopt.h>

bool arg_json;
const char *arg_socket;
const char *arg_timeout;

static const struct client_verb local_verbs[] = {
        { "matrix", "matrix check|show|cover FILE ...", "check a matrix file, show it, or print a covering array",
          cmd_matrix },
        { "plan", "plan FILE [feature=]X [axis=value...] [--strategy S]", "print the runs a submission would make",
          cmd_plan },
        { "gate", "gate [MATRIX [axis=value...]] [--report FILE] [--log FILE] [EXPECTATIONS...]",
          "check a profiler report or log against kernel expectations", cmd_gate },
        { "bench", "bench URL [--pp N] [--tg N] [--depth N] [--runs N] [--concurrency N] ...",
          "benchmark a running server with llama-benchy's workloads", cmd_bench },
        { "probe", "probe URL [--api-key KEY] [--kind KIND] [--json]",
          "check the harness's assumptions against a running server, one line each", cmd_probe },
        { "report", "report KIND [FEATURE] JOB|--from FILE [-o DIR]",
          "write the seeds' reports, JSON, CSV or JUnit of a job (from mxmatrixd, or from an export)", cmd_report },
        { "export", "export JOB [-o FILE] [--page N]", "write a job's report document (from mxmatrixd) for report --from",
          cmd_export },
};

static void help(FILE *f)
{
        fprintf(f, "Usage: mxmatrix [--json] [--socket PATH] [--timeout SECONDS] VERB [ARGS...]\n\n"
                   "Run and watch test matrices on LLM inference servers through mxmatrixd.\n\n"
                   "Verbs that need no daemon:\n");
        for (size_t i = 0; i < ELEMENTSOF(local_verbs); i++)
                output_help_line(f, local_verbs[i].synopsis, local_verbs[i].summary);
        fprintf(f, "\nVerbs that talk to mxmatrixd:\n");
        remote_list_verbs(f);
        fprintf(f, "\nOptions:\n"
                   "  --json           print one JSON document instead of tables\n"
                   "  --socket PATH    the daemon's socket (default $MXMATRIX_SOCKET, else /run/mxmatrix/control.sock)\n"
                   "  --timeout SECONDS\n"
                   "                   wait at most this long for each answer of the daemon (default\n"
                   "                   $MXMATRIX_TIMEOUT, else 60; 0: no limit); follow and logs -f\n"
                   "                   wait for the first answer only\n"
                   "  -h, --help       this help; VERB --help for a verb's own\n"
                   "  --version        print the version\n"
                   "\nJOB is a job number, rRUN a run number (r12). Exit status: 0 success, 1 the request\n"
                   "failed or a run did not pass, 2 usage, 3 bad matrix file, 4 permission denied,\n"
                   "5 no such job or run, 69 mxmatrixd unavailable (not running, or no answer in time).\n"
                   "\nSee mxmatrix(1).\n");
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "json", no_argument, NULL, 'j' },
                { "socket", required_argument, NULL, 's' },
                { "timeout", required_argument, NULL, 't' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        int c;

        /* '+': stop at the verb, so verbs parse their own options. */
        while ((c = getopt_long(argc, argv, "+h", opts, NULL)) >= 0) {
                switch (c) {
                case 'j':
                        arg_json = true;
                        break;
                case 's':
                        arg_socket = optarg;
                        break;
                case 't': {
                        int64_t ms;

                        arg_timeout = optarg;
                        if (client_timeout_ms(&ms) < 0)
                                return MX_EXIT_USAGE;
                        break;
                }
                case 'h':
                        help(stdout);
                        return MX_EXIT_OK;
                case 'V':
                        printf("mxmatrix %s\n", MX_VERSION);
                        return MX_EXIT_OK;
                default:
                        return MX_EXIT_USAGE;
                }
        }
        if (optind >= argc) {
                help(stderr);
                return MX_EXIT_USAGE;
        }
        if (streq(argv[optind], "__complete"))
                return cmd_complete(argc - optind, argv + optind);
        for (size_t i = 0; i < ELEMENTSOF(local_verbs); i++)
                if (streq(argv[optind], local_verbs[i].name))
                        return local_verbs[i].run(argc - optind, argv + optind);
        {
                const struct mx_proto_method *m = mx_proto_find(mx_proto_get(), argv[optind]);
                if (m && m->cli)
                        return remote_run(m, argc - optind, argv + optind);
        }
        /* check and cover work on files under "matrix": say so rather than just "unknown". */
        if (streq(argv[optind], "check") || streq(argv[optind], "cover"))
                fprintf(stderr, "mxmatrix: unknown verb '%s'; did you mean 'mxmatrix matrix %s'?\n",
                        argv[optind], argv[optind]);
        else
                fprintf(stderr, "mxmatrix: unknown verb '%s' (see mxmatrix --help)\n", argv[optind]);
        return MX_EXIT_USAGE;
}
