/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix follow JOB: one readable line per event until every run of the job
 * is done ("r12 backend=cutlass,graphs=on  L2 fail: ..."), and on a terminal a
 * progress line under them, redrawn in place (runs done of the total, their
 * results in the one result vocabulary, elapsed, ETA); at the end the job's
 * answer on one screen (screen.h) and its success criteria, as show JOB
 * prints them. --json prints the daemon's stream items as JSON lines
 * instead, the "progress" items included.
 * Exit status 0 when every run went as expected (pass or xfail, protocol.json's
 * "expected" results), 1 otherwise.
 */
#include "output.h"
#include "progress.h"
#include "remote.h"
#include "screen.h"

#include <inttypes.h>

#define FOLLOW_MESSAGE_MAX 300 /* characters of a level's message on its line */

static struct {
        bool tty;     /* draw the progress line (stdout is a terminal, no --json) */
        bool drawn;   /* the progress line is on the screen now */
        json_t *job;  /* the latest job summary with its progress timing */
        int64_t last; /* the latest event's time (µs): the end of a finished job */
} follow;

static int64_t get_int(json_t *o, const char *key)
{
        return json_integer_value(json_object_get(o, key));
}

static const char *get_str(json_t *o, const char *key)
{
        return json_string_value(json_object_get(o, key));
}

/* A message on one line, bounded: a level's message may hold a server's traceback. */
static void put_message(struct mx_buf *b, const char *msg)
{
        size_t n = 0;

        for (const char *p = msg; *p && n < FOLLOW_MESSAGE_MAX; p++, n++)
                mx_buf_putc(b, *p == '\n' || *p == '\r' || *p == '\t' ? ' ' : *p);
        if (strlen(msg) > FOLLOW_MESSAGE_MAX)
                mx_buf_puts(b, "...");
}

/* What happened, in words; unknown kinds (a newer daemon) print their kind and detail. */
static void describe(struct mx_buf *b, const char *kind, json_t *d)
{
        if (streq(kind, "job-accepted")) {
                mx_buf_printf(b, "job accepted: %" PRId64 " run%s", get_int(d, "runs"),
                              get_int(d, "runs") == 1 ? "" : "s");
                if (get_str(d, "feature"))
                        mx_buf_printf(b, " of feature %s", get_str(d, "feature"));
        } else if (streq(kind, "run-started")) {
                mx_buf_puts(b, "started");
                if (get_int(d, "attempt") > 1)
                        mx_buf_printf(b, " (attempt %" PRId64 ")", get_int(d, "attempt"));
                if (get_int(d, "confirmation_of") > 0)
                        mx_buf_puts(b, ": an L5 confirmation start (L1, L1.5 where the job has it, L4)");
        } else if (streq(kind, "level-finished")) {
                mx_buf_printf(b, "%s %s", strna(get_str(d, "level")), strna(get_str(d, "verdict")));
                if (get_str(d, "message") && *get_str(d, "message")) {
                        mx_buf_puts(b, ": ");
                        put_message(b, get_str(d, "message"));
                }
        } else if (streq(kind, "run-finished")) {
                const char *outcome = get_str(d, "outcome");

                if (json_is_true(json_object_get(d, "confirming"))) {
                        /* L5 undecided: the run waits for its confirmation starts, no result yet */
                        mx_buf_puts(b, "L5 undecided: waits for confirmation starts (A/B)");
                        return;
                }
                if (json_is_true(json_object_get(d, "next_pass"))) {
                        /* fail-fast: the cheap levels passed, every level follows on a start of its own */
                        mx_buf_printf(b, "first pass (L1, L1.5) finished: %s; queued for every level",
                                      strna(get_str(d, "result")));
                        return;
                }
                mx_buf_printf(b, "%s: %s",
                              get_int(d, "confirmation_of") > 0 ? "confirmation start finished"
                              : get_int(d, "pass") == 1         ? "first pass (L1, L1.5) finished"
                                                                : "finished",
                              strna(get_str(d, "result")));
                if (outcome && !streq(outcome, "completed") && !streq_ptr(outcome, get_str(d, "result")))
                        mx_buf_printf(b, " (%s)", outcome);
                if (get_str(d, "crash_class"))
                        mx_buf_printf(b, ", crash class %s", get_str(d, "crash_class"));
                if (json_is_true(json_object_get(d, "requeued")))
                        mx_buf_puts(b, "; queued again");
        } else if (streq(kind, "job-cancelled") || streq(kind, "run-cancelled")) {
                mx_buf_printf(b, "%s cancelled: %" PRId64 " queued run%s cancelled, %" PRId64 " stopping",
                              streq(kind, "job-cancelled") ? "job" : "run", get_int(d, "cancelled"),
                              get_int(d, "cancelled") == 1 ? "" : "s", get_int(d, "stopping"));
        } else if (streq(kind, "retried")) {
                mx_buf_printf(b, "retried: %" PRId64 " run%s queued again", get_int(d, "requeued"),
                              get_int(d, "requeued") == 1 ? "" : "s");
        } else {
                _cleanup_free_ char *text = d ? json_dumps(d, JSON_COMPACT) : NULL;

                mx_buf_printf(b, "%s%s%s", kind, text ? " " : "", strempty(text));
        }
}

static void progress_clear(void)
{
        if (follow.drawn)
                fputs("\r\033[K", stdout);
        follow.drawn = false;
}

static void progress_draw(void)
{
        struct progress p;
        _cleanup_free_ char *s = NULL;

        if (!follow.tty || !follow.job)
                return;
        progress_from_job(follow.job, mx_now_real_us(), &p);
        s = progress_format(&p);
        /* In place: back to the start of the line, the text, erase what a longer one left. */
        printf("\r[job %" PRId64 ": %s]\033[K", get_int(follow.job, "id"), s);
        follow.drawn = true;
        fflush(stdout);
}

static void idle(void *ud)
{
        (void)ud;
        progress_draw();
}

static int stream(json_t *e, void *ud)
{
        const char *kind = strna(get_str(e, "kind"));
        struct mx_buf b = MX_BUF_INIT;

        (void)ud;
        if (arg_json) {
                _cleanup_free_ char *s = json_dumps(e, JSON_COMPACT);
                puts(s);
                fflush(stdout);
                return 0;
        }
        if (streq(kind, "progress")) {
                follow.tty = isatty(STDOUT_FILENO);
                json_decref(follow.job);
                follow.job = json_incref(json_object_get(e, "job"));
                progress_draw();
                return 0;
        }
        follow.last = MX_MAX(follow.last, get_int(e, "at"));
        {
                _cleanup_free_ char *when = output_time(json_object_get(e, "at"));
                const char *clock = strchr(when, ' '); /* the day is in the job; the time of day is enough */

                mx_buf_printf(&b, "%s  ", clock ? clock + 1 : when);
        }
        if (json_is_integer(json_object_get(e, "run")))
                mx_buf_printf(&b, "r%" PRId64 " %s  ", get_int(e, "run"), strna(get_str(e, "config_key")));
        describe(&b, kind, json_object_get(e, "detail"));
        progress_clear();
        puts(strempty(b.data));
        mx_buf_free(&b);
        progress_draw();
        fflush(stdout);
        return 0;
}

static int render(json_t *params, json_t *job)
{
        json_t *c = json_object_get(job, "counts"), *e;
        json_int_t good = 0, total = json_integer_value(json_object_get(c, "total"));
        size_t i;

        (void)params;
        json_array_foreach (mx_proto_results(), i, e)
                if (mx_result_expected(json_string_value(e)))
                        good += json_integer_value(json_object_get(c, json_string_value(e)));
        progress_clear();
        json_decref(TAKE_PTR(follow.job));
        if (arg_json)
                output_json(job);
        else {
                struct progress p;
                _cleanup_free_ char *s = NULL;

                /* Elapsed up to the job's last event, not to now (a finished job's history). */
                progress_from_job(job, follow.last > 0 ? follow.last : mx_now_real_us(), &p);
                s = progress_format(&p);
                /* The counts in the words of status and show; "as expected" is the exit status, not a pass. */
                printf("job %" JSON_INTEGER_FORMAT " %s: %s; %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT
                       " runs as expected (pass or xfail)\n",
                       json_integer_value(json_object_get(job, "id")), strna(get_str(job, "state")), s, good,
                       total);
                /* The answer on one screen, as show JOB prints it. */
                if (json_is_object(json_object_get(job, "summary"))) {
                        putchar('\n');
                        screen_print(json_object_get(job, "summary"));
                        output_criteria(json_object_get(job, "criteria"));
                }
        }
        return good == total ? MX_EXIT_OK : MX_EXIT_FAILURE;
}

const struct remote_verb remote_follow = { "follow", render, stream, .idle = idle };
