/* SPDX-License-Identifier: MIT */
/*
 * Reproducibility metadata: the probe runner on a private loop (a command
 * that is missing, fails, hangs past its limit, floods its output, leaves a
 * grandchild holding the pipe), a whole collection with the matrix's probes,
 * the parsers on real tool output (tests/fixtures/meta: nvidia-smi and nvcc
 * captured on an H100, driver 580.159.04, CUDA 13.0), the matrix section's
 * checks, the Environment YAML, and blob deduplication in a real database.
 */
#include "meta.h"
#include "metadata.h"
#include "proc-reaper.h"
#include "proc.h"
#include "queue.h"
#include "test.h"

#include <signal.h>
#include <sys/wait.h>

#define LOOP_LIMIT_S 60

struct loop {
        struct event_base *base;
        struct proc_reaper *reaper;
        char *tag;
};

static void loop_init(struct loop *l)
{
        static unsigned n;

        ASSERT_OK(proc_subreaper_enable());
        l->base = event_base_new();
        ASSERT_NOT_NULL(l->base);
        ASSERT_OK(proc_reaper_new(l->base, &l->reaper));
        l->tag = xasprintf("mxtest-meta-%d-%u", (int)getpid(), ++n);
}

static void loop_done(struct loop *l)
{
        _cleanup_free_ pid_t *left = NULL;
        size_t n_left = 0;

        /* Nothing a probe started may outlive it: its group was killed. */
        for (int i = 0; i < 100; i++) {
                free(left);
                left = NULL;
                ASSERT_OK(proc_find_tagged(l->tag, &left, &n_left));
                if (n_left == 0)
                        break;
                usleep(20000);
                proc_reaper_reap(l->reaper);
        }
        ASSERT_EQ(n_left, 0);
        proc_reaper_free(l->reaper);
        event_base_free(l->base);
        free(l->tag);
}

struct got {
        bool done;
        char *spawn_error, *failure, *out;
        size_t out_len;
        bool timed_out, truncated;
        int status;
        int64_t duration_us;
};

static void probe_cb(const struct meta_probe_result *res, void *ud)
{
        struct got *g = ud;

        ASSERT_FALSE(g->done); /* exactly once */
        g->done = true;
        g->spawn_error = res->spawn_error ? xstrdup(res->spawn_error) : NULL;
        g->failure = meta_probe_failure(res);
        g->out = xstrndup(res->out, res->out_len);
        g->out_len = res->out_len;
        g->timed_out = res->timed_out;
        g->truncated = res->truncated;
        g->status = res->status;
        g->duration_us = res->duration_us;
}

static void run_loop_until(struct loop *l, bool *flag)
{
        int64_t deadline = mx_now_mono_us() + LOOP_LIMIT_S * INT64_C(1000000);

        while (!*flag) {
                ASSERT_TRUE(mx_now_mono_us() < deadline);
                event_base_loop(l->base, EVLOOP_ONCE);
        }
}

/* Run argv as a probe to its end; returns the probe's outcome. */
static struct got run_probe(struct loop *l, char **argv, int64_t timeout_ms, size_t output_max)
{
        struct meta_probe_opts o = {
                .base = l->base,
                .reaper = l->reaper,
                .tag = l->tag,
                .timeout_ms = timeout_ms,
                .output_max = output_max,
        };
        struct got g = {};
        struct meta_probe *p = meta_probe_start(&o, argv, probe_cb, &g);

        ASSERT_NOT_NULL(p);
        ASSERT_FALSE(g.done); /* never from inside the start */
        run_loop_until(l, &g.done);
        meta_probe_free(p);
        return g;
}

static void got_done(struct got *g)
{
        free(g->spawn_error);
        free(g->failure);
        free(g->out);
}

TEST(probe_output_and_status)
{
        struct loop l = {};
        char *argv[] = {"sh", "-c", "echo hello; echo warn >&2; exit 0", NULL};
        struct got g;

        loop_init(&l);
        g = run_probe(&l, argv, 30000, 4096);
        ASSERT_NULL(g.failure);
        ASSERT_STREQ(g.out, "hello\n");
        ASSERT_TRUE(WIFEXITED(g.status) && WEXITSTATUS(g.status) == 0);
        got_done(&g);
        loop_done(&l);
}

TEST(probe_missing_command)
{
        struct loop l = {};
        char *argv[] = {"mx-no-such-command-for-a-probe", "--version", NULL};
        struct got g;

        loop_init(&l);
        g = run_probe(&l, argv, 30000, 4096);
        ASSERT_NOT_NULL(g.spawn_error);
        ASSERT_CONTAINS(g.failure, "mx-no-such-command-for-a-probe");
        ASSERT_CONTAINS(g.failure, "No such file or directory");
        got_done(&g);
        loop_done(&l);
}

TEST(probe_failing_command)
{
        struct loop l = {};
        char *argv[] = {"sh", "-c", "echo partial; echo first line >&2; echo the reason >&2; exit 7", NULL};
        char *killed[] = {"sh", "-c", "kill -SEGV $$", NULL};
        struct got g;

        loop_init(&l);
        g = run_probe(&l, argv, 30000, 4096);
        ASSERT_STREQ(g.failure, "exited with status 7: the reason");
        ASSERT_STREQ(g.out, "partial\n");
        got_done(&g);
        g = run_probe(&l, killed, 30000, 4096);
        ASSERT_CONTAINS(g.failure, "killed by signal 11");
        got_done(&g);
        loop_done(&l);
}

TEST(probe_timeout)
{
        struct loop l = {};
        char *argv[] = {"sh", "-c", "echo started; sleep 60", NULL};
        /* The probe exits at once but a grandchild keeps its stdout open: still bounded by the limit. */
        char *held[] = {"sh", "-c", "sleep 60 & echo detached", NULL};
        struct got g;

        loop_init(&l);
        g = run_probe(&l, argv, 300, 4096);
        ASSERT_TRUE(g.timed_out);
        ASSERT_STREQ(g.failure, "timed out (limit 300 ms)");
        ASSERT_STREQ(g.out, "started\n");
        ASSERT_LT(g.duration_us, 30 * INT64_C(1000000)); /* not the 60 s of the sleep */
        got_done(&g);
        g = run_probe(&l, held, 300, 4096);
        ASSERT_TRUE(g.timed_out);
        ASSERT_STREQ(g.out, "detached\n");
        got_done(&g);
        loop_done(&l);
}

TEST(probe_huge_output_is_capped)
{
        struct loop l = {};
        char *argv[] = {"sh", "-c", "yes 0123456789abcdef", NULL};
        struct got g;

        loop_init(&l);
        g = run_probe(&l, argv, 30000, 10000);
        ASSERT_TRUE(g.truncated);
        ASSERT_FALSE(g.timed_out); /* stopped for its size, long before the limit */
        ASSERT_EQ(g.out_len, 10000);
        ASSERT_TRUE(startswith(g.out, "0123456789abcdef\n0123456789abcdef\n"));
        ASSERT_NULL(g.failure); /* what it printed is kept: not an error */
        got_done(&g);
        loop_done(&l);
}

TEST(probe_freed_while_running)
{
        struct loop l = {};
        char *argv[] = {"sleep", "60", NULL};
        struct meta_probe_opts o = {
                .base = l.base,
                .reaper = NULL,
                .tag = NULL,
                .timeout_ms = 60000,
                .output_max = 4096,
        };
        struct got g = {};
        struct meta_probe *p;

        loop_init(&l);
        o.base = l.base;
        o.reaper = l.reaper;
        o.tag = l.tag;
        p = meta_probe_start(&o, argv, probe_cb, &g);
        event_base_loop(l.base, EVLOOP_NONBLOCK);
        meta_probe_free(p); /* kills it; no callback */
        ASSERT_FALSE(g.done);
        loop_done(&l);
}

/* ---- a whole collection ---- */

struct collected {
        bool done;
        json_t *record, *blobs;
};

static void collected_cb(json_t *record, json_t *blobs, void *ud)
{
        struct collected *c = ud;

        c->done = true;
        c->record = json_incref(record);
        c->blobs = json_incref(blobs);
}

static void collect(struct loop *l, json_t *spec, struct collected *c)
{
        struct meta_collect_opts o = {.base = l->base, .reaper = l->reaper, .tag = l->tag, .spec = spec};
        struct meta_collect *mc = meta_collect_start(&o, collected_cb, c);

        run_loop_until(l, &c->done);
        meta_collect_free(mc);
}

TEST(collect_with_matrix_probes)
{
        struct loop l = {};
        struct collected c = {};
        _cleanup_free_ char *dir = xasprintf("%s/cuda", test_tmpdir());
        _cleanup_free_ char *vj = xasprintf("%s/version.json", dir);
        _cleanup_json_ json_t *spec = NULL;
        json_t *items, *s;

        ASSERT_OK(mx_mkdir_p(dir, 0755));
        test_write_file(vj, "{\n   \"cuda\" : {\n      \"name\" : \"CUDA SDK\",\n      \"version\" : "
                            "\"13.0.2\"\n   }\n}\n");
        spec = json_pack(
                "{s:[s,s],s:[s],s:{s:{s:{s:[s,s]},s:{s:[s,s,s]},s:[s,s],s:n,s:n,s:[s,s]}}}", "argv",
                "/nonexistent/bin/vllm", "serve", "env", "A=1", "metadata", "probes", "cuda", "file",
                "/nonexistent/version.json", vj, "cudnn", "command", "sh", "-c",
                "printf '#define CUDNN_MAJOR 9\\n#define CUDNN_MINOR 14\\n#define CUDNN_PATCHLEVEL 0\\n'",
                "gpu", "cat", MX_SOURCE_DIR "/tests/fixtures/meta/h100-query-gpu.csv", "docker_image",
                "pip_freeze", "extra", "echo", "forty-two");
        ASSERT_NOT_NULL(spec);
        loop_init(&l);
        collect(&l, spec, &c);
        items = json_object_get(c.record, "items");
        s = json_object_get(c.record, "summary");
        /* The first file was missing: the second alternative counted, the first is listed as tried. */
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(items, "cuda"), "value")), "13.0.2");
        ASSERT_EQ(json_array_size(json_object_get(json_object_get(items, "cuda"), "tried")), 1);
        ASSERT_STREQ(json_string_value(json_object_get(s, "cuda_version")), "13.0.2");
        ASSERT_STREQ(json_string_value(json_object_get(s, "cudnn_version")), "9.14.0");
        ASSERT_STREQ(json_string_value(json_object_get(s, "driver_version")), "580.159.04");
        ASSERT_STREQ(json_string_value(json_object_get(s, "gpu_clocks")), "default");
        ASSERT_STREQ(json_string_value(json_object_get(s, "gpu_power_mode")), "default");
        ASSERT_STREQ(json_string_value(json_object_get(s, "gpu_name")), "NVIDIA H100 80GB HBM3");
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(items, "extra"), "value")),
                     "forty-two");
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(items, "pip_freeze"), "skipped")),
                     "turned off in the matrix");
        ASSERT_NOT_NULL(json_string_value(json_object_get(json_object_get(items, "hostname"), "value")));
        ASSERT_STREQ(json_string_value(
                             json_array_get(json_object_get(json_object_get(c.record, "run"), "argv"), 1)),
                     "serve");
        json_decref(c.record);
        json_decref(c.blobs);
        loop_done(&l);
}

TEST(collect_defaults_never_fail)
{
        struct loop l = {};
        struct collected c = {};
        _cleanup_json_ json_t *spec = json_pack("{s:[s]}", "argv", "true");
        json_t *items;
        const char *k;
        json_t *v;

        /* Whatever this machine has (no GPU, no CUDA): every default item has a value, an error or a reason.
         */
        loop_init(&l);
        collect(&l, spec, &c);
        items = json_object_get(c.record, "items");
        json_object_foreach (items, k, v)
                ASSERT_TRUE(json_object_get(v, "value") || json_object_get(v, "error") ||
                            json_object_get(v, "skipped") || json_object_get(v, "output"));
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(items, "docker_image"), "skipped")),
                     "not configured (metadata.docker_image)");
        ASSERT_NOT_NULL(json_object_get(items, "gpu"));
        ASSERT_NOT_NULL(json_object_get(items, "cuda"));
        json_decref(c.record);
        json_decref(c.blobs);
        loop_done(&l);
}

/* ---- parsers on real output ---- */

TEST(parse_real_tool_output)
{
        _cleanup_free_ char *csv_path = test_source_path("tests/fixtures/meta/h100-query-gpu.csv");
        _cleanup_free_ char *nvcc_path = test_source_path("tests/fixtures/meta/h100-nvcc-version.txt");
        _cleanup_free_ char *csv = test_read_file(csv_path, NULL), *nvcc = test_read_file(nvcc_path, NULL);
        _cleanup_free_ char *v = NULL, *driver = NULL, *clocks = NULL, *power = NULL, *err = NULL;
        _cleanup_json_ json_t *gpus = NULL;

        v = meta_parse_cuda(nvcc);
        ASSERT_STREQ(v, "13.0.88");
        free(v);
        v = meta_parse_cuda("{\"cuda\": {\"name\": \"CUDA SDK\", \"version\": \"12.8.1\"}}");
        ASSERT_STREQ(v, "12.8.1");
        free(v);
        v = meta_parse_cuda("CUDA Version 11.0.228\n");
        ASSERT_STREQ(v, "11.0.228");
        free(v);
        ASSERT_NULL(meta_parse_cuda("nothing here"));
        v = meta_parse_cudnn("#define CUDNN_VERSION_H_\n#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 14\n"
                             "#define CUDNN_PATCHLEVEL 0\n#define CUDNN_VERSION (CUDNN_MAJOR * 10000)\n");
        ASSERT_STREQ(v, "9.14.0");
        ASSERT_NULL(meta_parse_cudnn("#define CUDNN_MAJOR 9\n"));

        ASSERT_OK(meta_parse_gpu_csv(csv, &gpus, &err));
        ASSERT_EQ(json_array_size(gpus), 1);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(gpus, 0), "power.limit")), "700.00 W");
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(gpus, 0), "persistence_mode")),
                     "Enabled");
        meta_gpu_settings(gpus, &driver, &clocks, &power);
        ASSERT_STREQ(driver, "580.159.04");
        ASSERT_STREQ(clocks, "default");
        ASSERT_STREQ(power, "default");
        ASSERT_ERR(meta_parse_gpu_csv("", &gpus, &err), ENODATA);
}

TEST(parse_gpu_settings_changed_and_gb10)
{
        /* Application clocks set and a lowered limit on GPU 1; GB10 prints [N/A] for the power limit. */
        const char *csv =
                "index, driver_version, power.limit [W], power.default_limit [W], "
                "clocks.applications.graphics [MHz], clocks.applications.memory [MHz], "
                "clocks.default_applications.graphics [MHz], clocks.default_applications.memory [MHz]\n"
                "0, 580.95.05, 700.00 W, 700.00 W, 1980 MHz, 2619 MHz, 1980 MHz, 2619 MHz\n"
                "1, 580.95.05, 500.00 W, 700.00 W, 1410 MHz, 2619 MHz, 1980 MHz, 2619 MHz\n";
        const char *gb10 = "index, driver_version, power.limit [W], power.default_limit [W]\n"
                           "0, 580.95.05, [N/A], [N/A]\n";
        _cleanup_json_ json_t *gpus = NULL, *g2 = NULL;
        _cleanup_free_ char *driver = NULL, *clocks = NULL, *power = NULL, *err = NULL;

        ASSERT_OK(meta_parse_gpu_csv(csv, &gpus, &err));
        meta_gpu_settings(gpus, &driver, &clocks, &power);
        ASSERT_STREQ(clocks,
                     "0: default; 1: applications 1410 MHz / 2619 MHz (default 1980 MHz / 2619 MHz)");
        ASSERT_STREQ(power, "0: default; 1: power limit 500.00 W (default 700.00 W)");
        free(driver), free(clocks), free(power);
        ASSERT_OK(meta_parse_gpu_csv(gb10, &g2, &err));
        ASSERT_TRUE(json_is_null(json_object_get(json_array_get(g2, 0), "power.limit")));
        meta_gpu_settings(g2, &driver, &clocks, &power);
        ASSERT_STREQ(driver, "580.95.05");
        ASSERT_NULL(clocks);
        ASSERT_NULL(power);
}

TEST(parse_docker_and_pip)
{
        const char *inspect =
                "[{\"Id\": \"sha256:0123abcd\", \"RepoTags\": [\"vllm:x\"], "
                "\"RepoDigests\": [\"vllm@sha256:feed\"], \"Created\": \"2026-01-01T00:00:00Z\"}]";
        _cleanup_json_ json_t *d = meta_parse_docker(inspect);
        _cleanup_free_ char *c =
                meta_pip_find("torch==2.9.0\nNVIDIA-cuDNN-cu12==9.10.2.21\nzzz==1\n", "nvidia-cudnn-cu");

        ASSERT_STREQ(json_string_value(json_object_get(d, "id")), "sha256:0123abcd");
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(d, "repo_digests"), 0)),
                     "vllm@sha256:feed");
        ASSERT_NULL(meta_parse_docker("Error: No such image: x"));
        ASSERT_STREQ(c, "NVIDIA-cuDNN-cu12==9.10.2.21");
        ASSERT_NULL(meta_pip_find("torch==2.9.0\n", "nvidia-cudnn-cu"));
}

/* ---- the matrix section ---- */

static int load(const char *metadata, struct mx_matrix **ret, char **err)
{
        _cleanup_free_ char *text = xasprintf("{\"matrix\": 1, \"name\": \"m\", \"target\": {\"profile\": "
                                              "\"command\", \"command\": [\"true\"]},"
                                              " \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": "
                                              "\"x\"}]}], \"baseline\": {\"a\": \"x\"}%s%s}",
                                              metadata ? ", \"metadata\": " : "", metadata ? metadata : "");

        return mx_matrix_load_string("m.json", text, strlen(text), ret, err);
}

TEST(matrix_section)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        _cleanup_free_ char *err = NULL;
        json_t *p;

        ASSERT_OK(load(NULL, &m, &err));
        ASSERT_NULL(m->metadata);
        m = mx_matrix_free(m);
        ASSERT_OK(
                load("{\"sources\": {\"vllm\": \"/src/vllm\"}, \"docker_image\": \"vllm:1\", "
                     "\"pip_freeze\": [\"/venv/bin/pip\", \"freeze\"], \"timeout_ms\": 5000, "
                     "\"probes\": {\"cuda\": {\"file\": \"/usr/local/cuda/version.json\"}, \"gpu\": null}}",
                     &m, &err));
        p = json_object_get(m->metadata, "probes");
        /* Normalised: pip_freeze moved into probes as a command, a single file became a list. */
        ASSERT_STREQ(json_string_value(json_array_get(
                             json_object_get(json_object_get(p, "pip_freeze"), "command"), 1)),
                     "freeze");
        ASSERT_TRUE(json_is_array(json_object_get(json_object_get(p, "cuda"), "file")));
        ASSERT_TRUE(json_is_null(json_object_get(p, "gpu")));
        ASSERT_EQ(json_integer_value(json_object_get(m->metadata, "timeout_ms")), 5000);
        m = mx_matrix_free(m);

        ASSERT_ERR(load("{\"sources\": {\"vllm\": \"src/vllm\"}}", &m, &err), EINVAL);
        ASSERT_CONTAINS(err, "m.json:1:");
        ASSERT_CONTAINS(err, "not an absolute path");
        free(err), err = NULL;
        ASSERT_ERR(load("{\"probes\": {\"cuda\": []}}", &m, &err), EINVAL);
        ASSERT_CONTAINS(err, "expected a command");
        free(err), err = NULL;
        ASSERT_ERR(load("{\"probes\": {\"cuda\": {\"file\": []}}}", &m, &err), EINVAL);
        free(err), err = NULL;
        ASSERT_ERR(load("{\"output_max_bytes\": 16}", &m, &err), EINVAL);
        ASSERT_CONTAINS(err, "output_max_bytes");
        free(err), err = NULL;
        ASSERT_ERR(load("{\"docker_image\": \"--privileged\"}", &m, &err), EINVAL);
        ASSERT_CONTAINS(err, "cannot start with '-'");
}

/* ---- rendering ---- */

TEST(env_yaml)
{
        _cleanup_json_ json_t *rec = json_loads(
                "{\"summary\": {\"date\": \"2026-11-25 04:46:22\", \"cuda_version\": \"13.0.88\", "
                "\"driver_version\": \"580.159.04\", \"cudnn_version\": null, \"gpu_clocks\": \"default\", "
                "\"gpu_power_mode\": \"default\", \"hostname\": \"gb10\", \"kernel\": \"Linux 6.8\", "
                "\"docker_image_hash\": null, \"pip_freeze\": \"00ff00ff00ff00ff\"}, "
                "\"sources\": {\"vllm\": {\"path\": \"/v\", \"sha\": "
                "\"0123456789012345678901234567890123456789\", "
                "\"dirty\": true}}, "
                "\"items\": {\"cudnn\": {\"error\": \"exited with status 1: cat: x: No such file\"}, "
                "\"docker_image\": {\"skipped\": \"not configured (metadata.docker_image)\"}}}",
                0, NULL);
        _cleanup_free_ char *y = mx_meta_env_yaml(rec), *s = NULL, *q = NULL;

        ASSERT_NOT_NULL(rec);
        ASSERT_CONTAINS(y, "date: 2026-11-25 04:46:22\n");
        /* all digits would read back as a number: quoted */
        ASSERT_CONTAINS(y, "git_sha_vllm: \"0123456789012345678901234567890123456789\"\n");
        ASSERT_CONTAINS(y, "git_dirty_vllm: true\n");
        ASSERT_CONTAINS(y, "git_sha_flashinfer: <not configured>\n");
        ASSERT_CONTAINS(y, "docker_image_hash: <not configured (metadata.docker_image)>\n");
        ASSERT_CONTAINS(y, "cuda_version: 13.0.88\n");
        ASSERT_CONTAINS(y, "driver_version: 580.159.04\n");
        ASSERT_CONTAINS(y, "cudnn_version: \"<error: exited with status 1: cat: x: No such file>\"\n");
        ASSERT_CONTAINS(y, "gpu_clocks: default\n");
        ASSERT_CONTAINS(y, "pip_freeze: blob:00ff00ff00ff00ff\n");
        s = mx_meta_summary(rec, "  ");
        ASSERT_CONTAINS(s, "  metadata: host gb10, Linux 6.8\n");
        ASSERT_CONTAINS(s, "vllm 012345678901, dirty (/v)");
        ASSERT_CONTAINS(s, "failed probes:\n      cudnn: exited with status 1");
        q = mx_meta_yaml_scalar("a: b");
        ASSERT_STREQ(q, "\"a: b\"");
        free(q);
        q = mx_meta_yaml_scalar("13.0");
        ASSERT_STREQ(q, "\"13.0\"");
        free(q);
        q = mx_meta_yaml_scalar("yes");
        ASSERT_STREQ(q, "\"yes\"");
}

/* ---- storing ---- */

TEST(store_dedups_blobs)
{
        _cleanup_free_ char *path = xasprintf("%s/meta.db", test_tmpdir()), *err = NULL;
        _cleanup_(db_closep) struct mx_db *db = NULL;
        _cleanup_json_ json_t *levels = json_pack("[s]", "L1"), *req = json_object(), *spec = json_object();
        _cleanup_json_ json_t *cfg = json_object(), *reasons = json_array();
        struct queue_job_new job = {
                .uid = 1,
                .gid = 1,
                .user_name = "t",
                .matrix_path = "/m.json",
                .matrix_digest = "0",
                .strategy = "default",
                .levels = levels,
                .request = req,
        };
        struct queue_run_new run = {
                .config_key = "a=x",
                .config_hash = "0",
                .config = cfg,
                .reasons = reasons,
                .spec = spec,
        };
        const char *freeze = "numpy==2.0\ntorch==2.9.0\n";
        int64_t jid, att[3];
        sqlite3_stmt *s;

        ASSERT_OK(db_open(path, &db, &err));
        ASSERT_OK(queue_submit(db, &job, &run, 1, &jid));
        for (int i = 0; i < 3; i++) {
                struct queue_next n = {};
                struct queue_finish f = {
                        .outcome = MX_OUTCOME_COMPLETED, .exit_status = 0, .requeue = i < 2};
                _cleanup_free_ char *tag = xasprintf("t%d", i), *h = meta_blob_hash(freeze, strlen(freeze));
                /* attempts 0 and 1 ran on the same venv; attempt 2 on an upgraded one */
                const char *text = i < 2 ? freeze : "numpy==2.1\n";
                _cleanup_free_ char *h2 = meta_blob_hash(text, strlen(text));
                _cleanup_json_ json_t *rec =
                        json_pack("{s:I,s:{s:{s:s,s:s,s:b}},s:{s:{s:{s:s}}}}", "collected_at", (json_int_t)i,
                                  "sources", "vllm", "path", "/v", "sha", i < 2 ? "aaaa" : "bbbb", "dirty",
                                  i == 1, "items", "pip_freeze", "output", "blob", h2);
                _cleanup_json_ json_t *blobs = json_pack("{s:s}", h2, text);
                int num;

                (void)h;
                ASSERT_OK(queue_pick_next(db, &n));
                ASSERT_OK(queue_attempt_start(db, n.run, tag, "boot", &att[i], &num));
                queue_next_done(&n);
                ASSERT_OK(meta_store(db, att[i], rec, blobs));
                ASSERT_OK(queue_attempt_finish(db, att[i], &f, NULL));
        }
        ASSERT_OK(sqlite3_prepare_v2(db->sql, "SELECT count(*), sum(bytes) FROM meta_blobs", -1, &s, NULL));
        ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
        ASSERT_EQ(sqlite3_column_int64(s, 0), 2); /* three attempts, two distinct freezes */
        ASSERT_EQ(sqlite3_column_int64(s, 1), (int64_t)(strlen(freeze) + strlen("numpy==2.1\n")));
        sqlite3_finalize(s);
        ASSERT_OK(sqlite3_prepare_v2(
                db->sql, "SELECT count(*) FROM attempt_sources WHERE name = 'vllm' AND sha = 'aaaa'", -1, &s,
                NULL));
        ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
        ASSERT_EQ(sqlite3_column_int64(s, 0), 2);
        sqlite3_finalize(s);
        {
                _cleanup_json_ json_t *r = NULL;
                json_t *hist;

                ASSERT_OK(queue_run_json(db, 1, true, &r));
                ASSERT_OK(meta_attach_run(db, r));
                hist = json_object_get(r, "attempt_history");
                ASSERT_EQ(json_array_size(hist), 3);
                ASSERT_TRUE(json_is_true(json_object_get(
                        json_object_get(json_object_get(json_object_get(json_array_get(hist, 1), "metadata"),
                                                        "sources"),
                                        "vllm"),
                        "dirty")));
                ASSERT_EQ(json_object_size(json_object_get(r, "metadata_blobs")), 2);
        }
        {
                json_t *none = NULL;

                ASSERT_ERR(meta_attempt_json(db, 999, &none), ENOENT);
        }
}
