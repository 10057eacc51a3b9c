/* SPDX-License-Identifier: MIT */
/*
 * The runners driven directly on a private loop, as the scheduler drives them,
 * with hand-written snapshots: what no matrix file can produce (a snapshot
 * from an older version, a stop plan the stop refuses) and the moments a real
 * daemon cannot be made to hit on purpose (a cancel while the leftovers of a
 * command that already ended are being stopped). Every test checks that
 * finished() came exactly once, each level was recorded at most once, and
 * nothing carrying the run's tag is left.
 */
#include "http.h"
#include "proc-reaper.h"
#include "proc.h"
#include "runner.h"
#include "rig.h"
#include "test.h"

#include <arpa/inet.h>
#include <signal.h>
#include <sys/socket.h>

/* ---- the command runner ---- */

static json_t *command_spec(const char *script)
{
        return json_pack("{s:[s,s,s],s:[],s:{s:s}}", "argv", "sh", "-c", script, "env", "profile", "base",
                         "command");
}

static bool command_gone(struct rig *g)
{
        _cleanup_free_ char *p = xasprintf("/proc/%d", (int)g->pid);

        return g->pid > 0 && access(p, F_OK) < 0; /* exited and reaped */
}

TEST(command_cancel_after_it_ended_keeps_its_verdict)
{
        struct rig g;

        /*
         * Exits 0, leaving a tagged subshell that takes a second to go on SIGTERM; it
         * waits in a builtin, so no fork of its own races the stop's signal.
         */
        rig_init(&g, "cancel-after-exit",
                 command_spec("sleep 30 | (trap 'sleep 1; exit 0' TERM; echo >ready; read x) & "
                              "while [ ! -e ready ]; do sleep 0.05; done; exit 0"),
                 "[\"L1\",\"L1.5\"]");
        rig_start(&g, 60000);
        rig_run_until(&g, command_gone, "the command's exit");
        ASSERT_EQ(g.n_finished, 0); /* its leftovers are being stopped */
        g.ops->cancel(g.runner, MX_OUTCOME_INTERRUPTED);
        rig_finish(&g);
        ASSERT_STREQ(mx_outcome_to_string(g.outcome), "completed");
        ASSERT_STREQ(rig_verdict(&g, "L1"), "pass");
        ASSERT_STREQ(rig_verdict(&g, "L1.5"), "skipped");
        rig_done(&g);
}

TEST(command_cancelled_records_its_levels_skipped)
{
        struct rig g;

        rig_init(&g, "cancel-running", command_spec("sleep 30"), "[\"L1\",\"L1.5\"]");
        rig_start(&g, 60000);
        g.ops->cancel(g.runner, MX_OUTCOME_CANCELLED);
        rig_finish(&g);
        ASSERT_STREQ(mx_outcome_to_string(g.outcome), "cancelled");
        ASSERT_STREQ(rig_verdict(&g, "L1"), "skipped");
        ASSERT_STREQ(rig_verdict(&g, "L1.5"), "skipped");
        rig_done(&g);
}

TEST(command_over_the_level_timeout_fails_its_level)
{
        struct rig g;

        rig_init(&g, "level-timeout", command_spec("sleep 30"), "[\"L1\"]");
        rig_start(&g, 300);
        rig_finish(&g);
        ASSERT_STREQ(mx_outcome_to_string(g.outcome), "timeout");
        ASSERT_STREQ(rig_verdict(&g, "L1"), "fail");
        rig_done(&g);
}

TEST(command_levels_named_twice_are_recorded_once)
{
        struct rig g;

        rig_init(&g, "twice", command_spec("exit 3"), "[\"L1\",\"L1\",\"L1.5\",\"L1.5\"]");
        rig_start(&g, 60000);
        rig_finish(&g); /* fails if a level was recorded twice */
        ASSERT_STREQ(rig_verdict(&g, "L1"), "fail");
        ASSERT_STREQ(rig_verdict(&g, "L1.5"), "skipped");
        rig_done(&g);
}

/* ---- the target runner ---- */


/*
 * A server profile as mx_profile_resolve() stores it: ready on GET /health within
 * 300 ms (nothing in these tests listens, so that means "not ready in time"),
 * then the given stop steps (JSON) and stop command (JSON or null).
 */
static json_t *target_profile(const char *steps, const char *stop_command)
{
        return rig_json_text("{\"name\": \"test\", \"base\": \"vllm\", \"identifier\": \"test\", "
                         "\"host\": \"127.0.0.1\", \"port\": 0, "
                         "\"ready\": {\"path\": \"/health\", \"status\": 200, \"timeout_ms\": 300, "
                         "\"interval_ms\": 100}, \"health\": null, \"completion\": null, "
                         "\"stop\": {\"steps\": %s, \"command\": %s, \"timeout_ms\": 10000}, "
                         "\"logs\": null, \"crash_signatures\": [], \"profiler\": null}",
                         steps, stop_command);
}

static json_t *target_spec(const char *script, json_t *profile)
{
        return json_pack("{s:[s,s,s],s:[s],s:o}", "argv", "sh", "-c", script, "env", "MARK=from-the-run",
                         "profile", profile);
}

/* A server that never answers, with this stop plan: not ready in time, stopped, nothing left. */
static void never_ready_is_stopped(const char *name, const char *script, const char *steps)
{
        struct rig g;

        rig_init(&g, name, target_spec(script, target_profile(steps, "null")), "[\"L1\",\"L1.5\"]");
        rig_start(&g, 60000);
        rig_finish(&g); /* fails if the server outlived the run */
        ASSERT_STREQ(mx_outcome_to_string(g.outcome), "timeout");
        ASSERT_STREQ(rig_verdict(&g, "L1"), "fail");
        ASSERT_STREQ(rig_verdict(&g, "L1.5"), "skipped");
        rig_done(&g);
}

TEST(target_stop_plan_the_profile_allows_is_carried_out)
{
        /* mxmatrix.json(5): a signal is a number from 1 to 64, a grace less than 7 days. */
        never_ready_is_stopped("rt-signal", "exec sleep 1000",
                               "[{\"signal\": 40, \"grace_ms\": 172800000}]");
}

TEST(target_stop_plan_refused_falls_back_to_the_default)
{
        /* A snapshot no profile check passed (an older version's, say): the server is stopped anyway. */
        never_ready_is_stopped("bad-plan", "exec sleep 1000", "[{\"signal\": 99, \"grace_ms\": 100}]");
}

TEST(target_stop_plan_without_sigkill_still_kills)
{
        /* The server ignores SIGTERM, the only step of its plan. */
        never_ready_is_stopped("term-only", "trap '' TERM; sleep 1000",
                               "[{\"signal\": 15, \"grace_ms\": 200}]");
}

TEST(target_stop_command_runs_with_the_run_environment)
{
        _cleanup_free_ char *path = NULL, *text = NULL;
        struct rig g;

        rig_init(&g, "stop-env",
                 target_spec("exec sleep 1000",
                             target_profile("[{\"signal\": 15, \"grace_ms\": 5000}]",
                                            "[\"sh\", \"-c\", \"echo \\\"$MARK\\\" >{run_dir}/stop-env\"]")),
                 "[\"L1\"]");
        rig_start(&g, 60000);
        rig_finish(&g);
        path = xasprintf("%s/stop-env", g.dir);
        text = test_read_file(path, NULL);
        ASSERT_STREQ(text, "from-the-run\n");
        rig_done(&g);
}

/* mxsim as vLLM, writing its kernel report to the relative path report (in its working directory). */
static json_t *sim_spec(const char *report)
{
        return rig_json_text(
                "{\"argv\": [\"%s/tests/sim/mxsim\", \"serve\", \"{model}\", \"--host\", \"{host}\", "
                "\"--port\", \"{port}\", \"--served-model-name\", \"{served_model_name}\", "
                "\"--enforce-eager\"], "
                "\"env\": [\"MXSIM_LOAD_S=0.1\", \"MXSIM_WATCHDOG_S=1\", \"MXSIM_SHUTDOWN_WAIT_S=1\", "
                "\"MXSIM_GPU_LOCK={run_dir}/gpu.lock\", \"VLLM_MXFP4_MOE_KERNEL=gemm\", "
                "\"MXSIM_KERNEL_REPORT=%s\"], "
                "\"model\": \"openai/gpt-oss-120b\", \"served_model_name\": \"gpt-oss-120b\", "
                "\"expect\": {\"log\": {\"must_see\": [], \"must_not_see\": []}, "
                "\"kernels\": {\"must_see\": [[\"cutlass_*_grouped_gemm\"]], "
                "\"must_not_see\": [\"marlin\"]}}, "
                "\"profile\": {\"name\": \"vllm\", \"base\": \"vllm\", \"identifier\": \"mxsim\", "
                "\"host\": \"127.0.0.1\", \"port\": 0, "
                "\"ready\": {\"path\": \"/health\", \"status\": 200, \"timeout_ms\": 20000, "
                "\"interval_ms\": 100}, "
                "\"health\": {\"path\": \"/health\", \"dead_status\": [503]}, "
                "\"completion\": {\"path\": \"/v1/completions\", \"prompt\": \"The capital of France is\", "
                "\"max_tokens\": 4}, "
                "\"stop\": {\"steps\": [{\"signal\": 15, \"grace_ms\": 5000}, "
                "{\"signal\": 9, \"grace_ms\": 5000}], "
                "\"command\": null, \"timeout_ms\": 10000}, "
                "\"logs\": null, \"crash_signatures\": [], "
                "\"profiler\": {\"format\": \"nsys\", \"report\": \"%s\", \"after_stop\": null, "
                "\"timeout_ms\": 120000}}}",
                MX_BUILD_DIR, report, report);
}

TEST(target_relative_profiler_report_is_read_from_the_run_directory)
{
        struct rig g;

        /* {run_dir} is the server's working directory (mxmatrix.json(5)): a relative report is there. */
        rig_init(&g, "relative-report", sim_spec("kernels.csv"), "[\"L1\",\"L1.5\"]");
        rig_start(&g, 20000);
        rig_finish(&g);
        ASSERT_STREQ(mx_outcome_to_string(g.outcome), "completed");
        ASSERT_STREQ(rig_verdict(&g, "L1"), "pass");
        ASSERT_STREQ(rig_verdict(&g, "L1.5"), "pass");
        rig_done(&g);
}

TEST(target_level_timeout_longer_than_a_day_still_runs_l1)
{
        struct rig g;

        /* mxmatrixd --level-timeout takes any duration; the completion request must still be sent. */
        rig_init(&g, "long-level-timeout", sim_spec("kernels.csv"), "[\"L1\"]");
        rig_start(&g, 48LL * 3600 * 1000);
        rig_finish(&g);
        ASSERT_STREQ(mx_outcome_to_string(g.outcome), "completed");
        ASSERT_STREQ(rig_verdict(&g, "L1"), "pass");
        rig_done(&g);
}

/* A listening TCP socket on 127.0.0.1, as a server left from elsewhere; its port in *ret_port. */
static int listen_somewhere(int *ret_port)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)));
        ASSERT_OK(listen(fd, 8));
        ASSERT_OK(getsockname(fd, (struct sockaddr *)&sa, &len));
        *ret_port = ntohs(sa.sin_port);
        return fd;
}

TEST(target_fixed_port_someone_listens_on_is_refused)
{
        _cleanup_free_ char *err = NULL;
        json_t *profile = target_profile("[{\"signal\": 15, \"grace_ms\": 1000}]", "null");
        struct rig g;
        int fd, port;

        /* The probe would take that listener's answers for the new server's. */
        fd = listen_somewhere(&port);
        json_object_set_new(profile, "port", json_integer(port));
        rig_init(&g, "port-taken", target_spec("exec sleep 1000", profile), "[\"L1\"]");
        ASSERT_ERR(rig_try_start(&g, 60000, &err), EADDRINUSE);
        ASSERT_CONTAINS(err, "in use");
        ASSERT_NULL(g.runner);
        ASSERT_EQ(rig_kill_tagged(g.tag), 0); /* nothing was started */
        close(fd);
        rig_done(&g);
}

TEST(command_served_model_name_defaults_to_the_model)
{
        _cleanup_free_ char *path = NULL, *text = NULL;
        json_t *spec = command_spec("echo {model} {served_model_name} >names");
        struct rig g;

        /* mxmatrix.json(5): served_model_name defaults to model; a snapshot stores it as null then. */
        json_object_set_new(spec, "model", json_string("openai/gpt-oss-120b"));
        json_object_set_new(spec, "served_model_name", json_null());
        rig_init(&g, "served-name", spec, "[\"L1\"]");
        rig_start(&g, 60000);
        rig_finish(&g);
        ASSERT_STREQ(rig_verdict(&g, "L1"), "pass");
        path = xasprintf("%s/names", g.dir);
        text = test_read_file(path, NULL);
        ASSERT_STREQ(text, "openai/gpt-oss-120b openai/gpt-oss-120b\n");
        rig_done(&g);
}

TEST(target_placeholder_without_value_in_the_stop_command_fails_the_start)
{
        _cleanup_free_ char *err = NULL;
        struct rig g;

        /* mxmatrix.json(5): a placeholder without a value when the run starts makes it fail to start. */
        rig_init(&g, "stop-placeholder",
                 target_spec("exec sleep 1000", target_profile("[{\"signal\": 15, \"grace_ms\": 1000}]",
                                                               "[\"docker\", \"stop\", \"{model}\"]")),
                 "[\"L1\"]");
        ASSERT_ERR(rig_try_start(&g, 60000, &err), ENXIO);
        ASSERT_CONTAINS(err, "{model}");
        ASSERT_NULL(g.runner);
        ASSERT_EQ(rig_kill_tagged(g.tag), 0);
        rig_done(&g);
}

TEST(target_ready_timeout_shorter_than_the_probe_interval_still_ends_the_run)
{
        json_t *profile = target_profile("[{\"signal\": 15, \"grace_ms\": 1000}]", "null");
        struct rig g;

        /* Not ready within 300 ms, probed every minute: the run ends at the timeout, not the next probe. */
        json_object_set_new(json_object_get(profile, "ready"), "interval_ms", json_integer(60000));
        rig_init(&g, "slow-probe", target_spec("exec sleep 1000", profile), "[\"L1\"]");
        rig_start(&g, 60000);
        rig_finish(&g); /* the loop gives up after 30 s */
        ASSERT_STREQ(mx_outcome_to_string(g.outcome), "timeout");
        ASSERT_STREQ(rig_verdict(&g, "L1"), "fail");
        rig_done(&g);
}
