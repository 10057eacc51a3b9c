/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix probe URL: the harness's assumptions checked against a running
 * server (loadgen/probe.c, the same engine L1 runs), one line each, without a
 * daemon. Exit status 1 when an assumption failed.
 */
#include "client.h"
#include "output.h"

#include "probe.h"

#include <event2/event.h>
#include <getopt.h>

static void help(FILE *f)
{
        fprintf(f,
                "Usage: mxmatrix probe URL [OPTIONS]\n\n"
                "Check what the harness assumes about a running server (vLLM, llama-server, SGLang),\n"
                "one line each: PASS, FAIL or not measured, with what was seen. No daemon needed.\n"
                "Checks: api_key, server_kind, tokenize, context, streamed_usage,\n"
                "logprobs_completions, logprobs_chat, metrics, cache_defeat, determinism.\n\n"
                "  --model NAME          the served model (default: the first of /v1/models)\n"
                "  --api-key KEY         sent as a bearer token (default $OPENAI_API_KEY)\n"
                "  --kind KIND           the server kind expected: vllm, llama-server or sglang\n"
                "  --timeout SECONDS     per request (default 60)\n"
                "  --json                one JSON document instead of lines\n\n"
                "Exit status: 0 no assumption failed, 1 one failed (or the server did not answer),\n"
                "2 usage. See mxmatrix(1).\n");
}

static void done_cb(struct mx_probe *p, void *userdata)
{
        (void)p;
        event_base_loopbreak(userdata);
}

static void print_lines(json_t *doc)
{
        json_t *c;
        size_t i;

        printf("probe %s: server %s, model %s\n", json_string_value(json_object_get(doc, "url")),
               json_string_value(json_object_get(doc, "server")),
               strna(json_string_value(json_object_get(doc, "model"))));
        json_array_foreach(json_object_get(doc, "checks"), i, c) {
                const char *st = json_string_value(json_object_get(c, "status"));

                printf("%-13s %-21s %s\n", streq(st, "pass") ? "PASS" : streq(st, "fail") ? "FAIL" : "not measured",
                       json_string_value(json_object_get(c, "check")), json_string_value(json_object_get(c, "line")));
        }
}

/* The command line into cfg and *json: 1 to go on, 0 when it printed the help, -EINVAL after saying why not. */
static int probe_parse_args(int argc, char **argv, struct mx_probe_config *cfg, bool *json)
{
        enum { OPT_MODEL = 256, OPT_KEY, OPT_KIND, OPT_TIMEOUT, OPT_JSON };
        static const struct option opts[] = {
                { "model", required_argument, NULL, OPT_MODEL },
                { "api-key", required_argument, NULL, OPT_KEY },
                { "kind", required_argument, NULL, OPT_KIND },
                { "timeout", required_argument, NULL, OPT_TIMEOUT },
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int64_t t;
        int c;

        optind = 0;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (c) {
                case OPT_MODEL:
                        cfg->model = optarg;
                        break;
                case OPT_KEY:
                        cfg->api_key = optarg;
                        break;
                case OPT_KIND:
                        cfg->expect_kind = mx_server_kind_from_profile(optarg);
                        if (cfg->expect_kind == MX_SERVER_OTHER) {
                                fprintf(stderr, "mxmatrix: --kind is vllm, llama-server or sglang, not '%s'\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case OPT_TIMEOUT:
                        if (mx_parse_int64(optarg, 1, 86400, &t) < 0) {
                                fprintf(stderr, "mxmatrix: --timeout wants seconds in 1..86400, not '%s'\n", optarg);
                                return -EINVAL;
                        }
                        cfg->timeout_ms = t * 1000;
                        break;
                case OPT_JSON:
                        *json = true;
                        break;
                case 'h':
                        help(stdout);
                        return 0;
                default:
                        return -EINVAL;
                }
        }
        if (optind + 1 != argc) {
                fprintf(stderr, "mxmatrix: probe wants exactly one URL (mxmatrix probe --help)\n");
                return -EINVAL;
        }
        cfg->url = argv[optind];
        return 1;
}

/* Probe the server on an event loop of its own and print what it found: the exit status. */
static int probe_run(const struct mx_probe_config *cfg, bool json)
{
        _cleanup_(mx_probe_freep) struct mx_probe *p = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_json_ json_t *doc = NULL;
        struct event_base *base = event_base_new();
        int r;

        if (!base) {
                fprintf(stderr, "mxmatrix: cannot create an event loop\n");
                return MX_EXIT_FAILURE;
        }
        r = mx_probe_new(base, cfg, &p, &err);
        if (r < 0) {
                fprintf(stderr, "mxmatrix: %s\n", err);
                event_base_free(base);
                return r == -EINVAL || r == -E2BIG ? MX_EXIT_USAGE : MX_EXIT_FAILURE;
        }
        mx_probe_start(p, done_cb, base);
        event_base_dispatch(base);
        doc = mx_probe_result_json(p);
        if (json)
                output_json(doc);
        else
                print_lines(doc);
        r = mx_probe_failed(p) > 0 ? MX_EXIT_FAILURE : MX_EXIT_OK;
        p = mx_probe_free(p);
        event_base_free(base);
        return r;
}

int cmd_probe(int argc, char **argv)
{
        struct mx_probe_config cfg = { .api_key = getenv("OPENAI_API_KEY") };
        bool json = arg_json;
        int r;

        if (cfg.api_key && !*cfg.api_key)
                cfg.api_key = NULL;
        r = probe_parse_args(argc, argv, &cfg, &json);
        if (r <= 0)
                return r < 0 ? MX_EXIT_USAGE : MX_EXIT_OK;
        return probe_run(&cfg, json);
}
