/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix-sample: the daemon's GPU and memory sampler (sampler.h) on its own,
 * printing each sample as one line of JSON and, with --count above 1 or
 * --until-exit, the summary last. For checking a GPU machine by hand and for
 * the device check (tests/device/sampler.sh).
 */
#include "proc-reaper.h"
#include "proc.h"
#include "sampler.h"

#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

struct state {
        struct event_base *base;
        int64_t count; /* samples to take; 0: until the watched process exits */
        int64_t taken;
        pid_t until_exit; /* stop after the sample that finds it gone */
        bool gpu_failed;
};

static void sample_cb(struct mx_sampler *s, const struct mx_sample *sample, void *userdata)
{
        struct state *st = userdata;
        _cleanup_json_ json_t *j = json_pack("{s:o}", "sample", mx_sample_to_json(sample));
        _cleanup_free_ char *text = json_dumps(j, JSON_COMPACT);

        printf("%s\n", text);
        fflush(stdout);
        st->gpu_failed |= sample->error[0] != '\0';
        st->taken++;
        if ((st->count > 0 && st->taken >= st->count) || (st->until_exit > 0 && kill(st->until_exit, 0) < 0))
                event_base_loopexit(st->base, NULL);
}

static void usage(FILE *f)
{
        fprintf(f, "usage: mxmatrix-sample [--source auto|nvml|nvidia-smi|proc] [--gpu N] [--interval MS]\n"
                   "                       [--count N | --until-exit PID] [--pid PID] [--tag TAG]\n"
                   "                       [--nvml LIBRARY] [--nvidia-smi PATH] [--smi-timeout MS]\n"
                   "Print GPU and memory samples as JSON lines (one by default), then the summary.\n"
                   "  --pid PID      count PID and its descendants as the server tree (PSS, GPU memory)\n"
                   "  --tag TAG      count the processes carrying MXMATRIX_RUN_TAG=TAG as the tree\n"
                   "  --until-exit PID  sample until PID has exited (one more sample after it)\n"
                   "Exit status: 0; 1 usage or a source that cannot be used; 2 the GPU source failed.\n");
}

/* What the command line asks for besides the sampler's state. */
struct sample_args {
        struct mx_sampler_opts o;
        const char *tag;
        int64_t pid;
};

/* The value v of a numeric option (--gpu, --interval, --count, --until-exit, --pid, --smi-timeout). */
static void set_number(int opt, int64_t v, struct sample_args *a, struct state *st)
{
        if (opt == 'g')
                a->o.gpu = (unsigned)v;
        else if (opt == 'i')
                a->o.interval_ms = v;
        else if (opt == 'n')
                st->count = v;
        else if (opt == 'u') {
                st->until_exit = (pid_t)v;
                st->count = 0;
        } else if (opt == 'p')
                a->pid = v;
        else
                a->o.smi_timeout_ms = v;
}

/* One option: 1 to go on, 0 when it printed the help, -EINVAL after saying why not. */
static int sample_option(int opt, struct sample_args *a, struct state *st)
{
        int64_t v;
        int r;

        switch (opt) {
        case 's':
                r = mx_sample_source_from_string(optarg);
                if (r < 0) {
                        fprintf(stderr, "mxmatrix-sample: --source %s: not auto, nvml, nvidia-smi or proc\n",
                                optarg);
                        return -EINVAL;
                }
                a->o.source = r;
                return 1;
        case 'g':
        case 'i':
        case 'n':
        case 'u':
        case 'p':
        case 'T':
                if (mx_parse_int64(optarg, 0, INT32_MAX, &v) < 0) {
                        fprintf(stderr, "mxmatrix-sample: %s: not a number\n", optarg);
                        return -EINVAL;
                }
                set_number(opt, v, a, st);
                return 1;
        case 't':
                a->tag = optarg;
                return 1;
        case 'N':
                a->o.nvml_path = optarg;
                return 1;
        case 'S':
                a->o.smi_path = optarg;
                return 1;
        case 'h':
                usage(stdout);
                return 0;
        default:
                usage(stderr);
                return -EINVAL;
        }
}

/* The command line into a and st: 1 to go on, 0 when it printed the help, -EINVAL after saying why not. */
static int parse_args(int argc, char **argv, struct sample_args *a, struct state *st)
{
        static const struct option options[] = {
                {"source", required_argument, NULL, 's'},
                {"gpu", required_argument, NULL, 'g'},
                {"interval", required_argument, NULL, 'i'},
                {"count", required_argument, NULL, 'n'},
                {"until-exit", required_argument, NULL, 'u'},
                {"pid", required_argument, NULL, 'p'},
                {"tag", required_argument, NULL, 't'},
                {"nvml", required_argument, NULL, 'N'},
                {"nvidia-smi", required_argument, NULL, 'S'},
                {"smi-timeout", required_argument, NULL, 'T'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        int opt, r;

        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                if ((r = sample_option(opt, a, st)) <= 0)
                        return r;
        if (optind < argc || (st->count == 0 && st->until_exit <= 0)) {
                usage(stderr);
                return -EINVAL;
        }
        if (a->tag && !proc_tag_is_valid(a->tag)) {
                fprintf(stderr, "mxmatrix-sample: --tag %s: not a valid run tag\n", a->tag);
                return -EINVAL;
        }
        return 1;
}

/* The summary line after several samples. */
static void print_summary(struct mx_sampler *s)
{
        _cleanup_json_ json_t *j =
                json_pack("{s:o, s:I}", "summary", mx_sample_summary_to_json(mx_sampler_summary(s)),
                          "skipped", (json_int_t)mx_sampler_skipped(s));
        _cleanup_free_ char *text = json_dumps(j, JSON_COMPACT);

        printf("%s\n", text);
}

/* Take the samples st asks for, on an event loop of its own: the exit status. */
static int sample(struct state *st, const struct sample_args *a)
{
        _cleanup_(mx_sampler_freep) struct mx_sampler *s = NULL;
        _cleanup_(proc_reaper_freep) struct proc_reaper *reaper = NULL;
        _cleanup_free_ char *err = NULL;
        int r;

        st->base = event_base_new();
        if (!st->base || proc_reaper_new(st->base, &reaper) < 0) {
                fprintf(stderr, "mxmatrix-sample: cannot set up the event loop\n");
                return 1;
        }
        r = mx_sampler_new(st->base, reaper, &a->o, sample_cb, st, &s, &err);
        if (r < 0) {
                fprintf(stderr, "mxmatrix-sample: %s\n", strna(err));
                event_base_free(st->base);
                return 1;
        }
        if (a->tag || a->pid > 0)
                mx_sampler_set_tree(s, a->tag ? &(struct proc_match){.tag = a->tag} : NULL, (pid_t)a->pid);
        if (st->count == 1)
                mx_sampler_request(s);
        else
                mx_sampler_start(s);
        event_base_dispatch(st->base);
        if (st->count != 1)
                print_summary(s);
        s = mx_sampler_free(s);
        reaper = proc_reaper_free(reaper);
        event_base_free(st->base);
        return st->gpu_failed ? 2 : 0;
}

int main(int argc, char **argv)
{
        struct sample_args a = {};
        struct state st = {.count = 1};
        int r;

        r = parse_args(argc, argv, &a, &st);
        if (r <= 0)
                return r < 0 ? 1 : 0;
        signal(SIGPIPE, SIG_IGN);
        return sample(&st, &a);
}
