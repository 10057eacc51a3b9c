/* SPDX-License-Identifier: MIT */
/*
 * The GPU and memory sampler: its parsers on real nvidia-smi output (H200) and
 * the documented GB10 shapes; the sampler on a real event loop with NVML
 * served by a stand-in library loaded through dlopen (fake-nvml.c, answering
 * with the recorded H200 dump) and nvidia-smi by a stand-in script run as a
 * real child; the tree's PSS of real processes; the stored summary in show.
 */
#include "db.h"
#include "proc-reaper.h"
#include "protocol.h"
#include "queue.h"
#include "sample-store.h"
#include "sampler.h"
#include "test.h"

#include <event2/event.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOOP_TIMEOUT_MS 30000
#define MiB (1024 * 1024LL)

static char *fixture(const char *rel, size_t *ret_n)
{
        _cleanup_free_ char *path = test_source_path(rel);
        return test_read_file(path, ret_n);
}

/* ---- parsers ---- */

TEST(smi_gpu_real_h200_with_units)
{
        size_t n;
        _cleanup_free_ char *text = fixture("tests/fixtures/gpu-h200/query-gpu.csv", &n);
        _cleanup_free_ char *err = NULL;
        struct mx_sample s;

        mx_sample_init(&s);
        ASSERT_OK(mx_sample_parse_smi_gpu(text, n, &s, &err));
        ASSERT_EQ(s.gpu_mem_total, 143771 * MiB);
        ASSERT_EQ(s.gpu_mem_used, 0);
        ASSERT_FALSE(s.unified);
        ASSERT_EQ(s.sm_clock_mhz, 345); /* clocks.current.sm: the header's name for clocks.sm */
        ASSERT_EQ(s.mem_clock_mhz, 3201);
        ASSERT_EQ(s.power_mw, 79940);
        ASSERT_EQ(s.temp_c, 30);
        ASSERT_EQ(s.util_pct, 0);
        ASSERT_EQ(s.throttle, -1); /* not asked in that capture */
}

TEST(smi_gpu_nounits_shape_and_throttle)
{
        size_t n;
        _cleanup_free_ char *text = fixture("tests/fixtures/sampler/h200-query-gpu-nounits.csv", &n);
        _cleanup_json_ json_t *names = NULL;
        struct mx_sample s;

        mx_sample_init(&s);
        ASSERT_OK(mx_sample_parse_smi_gpu(text, n, &s, NULL));
        ASSERT_EQ(s.gpu_mem_total, 143771 * MiB); /* MiB from the header */
        ASSERT_EQ(s.gpu_mem_used, 1542 * MiB);
        ASSERT_EQ(s.power_mw, 79940); /* W from the header */
        ASSERT_EQ(s.sm_clock_mhz, 1980);
        ASSERT_EQ(s.throttle, MX_THROTTLE_GPU_IDLE);
        names = mx_throttle_to_json(s.throttle);
        ASSERT_STREQ(json_string_value(json_array_get(names, 0)), "gpu_idle");
}

TEST(smi_gpu_without_header_is_refused)
{
        size_t n;
        _cleanup_free_ char *text = fixture("tests/fixtures/gpu-h200/query-gpu-nounits.csv", &n);
        _cleanup_free_ char *err = NULL;
        struct mx_sample s;

        mx_sample_init(&s);
        ASSERT_ERR(mx_sample_parse_smi_gpu(text, n, &s, &err), EBADMSG);
        ASSERT_CONTAINS(err, "nvidia-smi --query-gpu");
        free(err);
        err = NULL;
        ASSERT_ERR(mx_sample_parse_smi_gpu("", 0, &s, &err), EBADMSG);
        ASSERT_CONTAINS(err, "no CSV header");
}

TEST(smi_gpu_gb10_memory_not_reported)
{
        size_t n;
        _cleanup_free_ char *text = fixture("tests/fixtures/sampler/gb10-query-gpu.csv", &n);
        struct mx_sample s;

        mx_sample_init(&s);
        ASSERT_OK(mx_sample_parse_smi_gpu(text, n, &s, NULL));
        ASSERT_TRUE(s.unified);
        ASSERT_EQ(s.gpu_mem_used, -1);
        ASSERT_EQ(s.gpu_mem_total, -1);
        ASSERT_EQ(s.power_mw, 38520);
        ASSERT_EQ(s.temp_c, 71);
        ASSERT_EQ(s.sm_clock_mhz, 2405);
        ASSERT_EQ(s.mem_clock_mhz, -1);
        ASSERT_EQ(s.throttle, MX_THROTTLE_SW_POWER_CAP);
}

TEST(smi_apps)
{
        size_t n;
        _cleanup_free_ char *real = fixture("tests/fixtures/gpu-h200/query-apps.csv", &n);
        _cleanup_free_ char *gb10 = NULL, *none = NULL;
        struct mx_sample s;

        mx_sample_init(&s);
        ASSERT_OK(mx_sample_parse_smi_apps(real, n, &s, NULL));
        ASSERT_EQ(s.n_procs, 1u);
        ASSERT_EQ(s.procs[0].pid, 1093);
        ASSERT_EQ(s.procs[0].gpu_bytes, 1542 * MiB);

        gb10 = fixture("tests/fixtures/sampler/gb10-query-apps.csv", &n);
        ASSERT_OK(mx_sample_parse_smi_apps(gb10, n, &s, NULL));
        ASSERT_EQ(s.n_procs, 2u);
        ASSERT_EQ(s.procs[0].gpu_bytes, 61440 * MiB);
        ASSERT_EQ(s.procs[1].pid, 48377);
        ASSERT_EQ(s.procs[1].gpu_bytes, -1);

        none = fixture("tests/fixtures/sampler/h200-query-apps-none.csv", &n);
        ASSERT_OK(mx_sample_parse_smi_apps(none, n, &s, NULL));
        ASSERT_EQ(s.n_procs, 0u);
        ASSERT_OK(mx_sample_parse_smi_apps("No running processes found\n", 27, &s, NULL));
        ASSERT_EQ(s.n_procs, 0u);
}

/* The value of "Name : value" in the section of nvidia-smi -q that starts with section. */
static char *smi_q_value(const char *text, const char *section, const char *name)
{
        const char *p = strstr(text, section), *line;

        if (!p)
                return NULL;
        for (line = strchr(p, '\n'); line; line = strchr(line + 1, '\n')) {
                const char *eol = strchr(line + 1, '\n') ?: line + strlen(line), *colon;
                _cleanup_free_ char *l = xstrndup(line + 1, (size_t)(eol - line - 1));
                char *k = l;

                if (strncmp(l, "        ", 8) != 0)
                        return NULL; /* the section ended */
                colon = strchr(l, ':');
                if (!colon)
                        continue;
                while (*k == ' ')
                        k++;
                if (strncmp(k, name, strlen(name)) == 0 &&
                    (k[strlen(name)] == ' ' || k[strlen(name)] == ':'))
                        return xstrdup(colon + 2);
        }
        return NULL;
}

/* nvidia-smi -q of the same H200: the figures agree, and every event reason it lists has a name here. */
TEST(smi_q_cross_check)
{
        static const struct {
                const char *q;
                int bit;
        } reasons[] = {
                {"Idle", MX_THROTTLE_GPU_IDLE},
                {"Applications Clocks Setting", MX_THROTTLE_APP_CLOCKS},
                {"SW Power Cap", MX_THROTTLE_SW_POWER_CAP},
                {"HW Slowdown", MX_THROTTLE_HW_SLOWDOWN},
                {"HW Thermal Slowdown", MX_THROTTLE_HW_THERMAL},
                {"HW Power Brake Slowdown", MX_THROTTLE_HW_POWER_BRAKE},
                {"Sync Boost", MX_THROTTLE_SYNC_BOOST},
                {"SW Thermal Slowdown", MX_THROTTLE_SW_THERMAL},
                {"Display Clock Setting", MX_THROTTLE_DISPLAY_CLOCKS},
        };
        size_t n;
        _cleanup_free_ char *q = fixture("tests/fixtures/gpu-h200/nvidia-smi-q.txt", &n);
        _cleanup_free_ char *csv = fixture("tests/fixtures/gpu-h200/query-gpu.csv", &n);
        _cleanup_free_ char *total = smi_q_value(q, "FB Memory Usage", "Total");
        _cleanup_free_ char *idle = smi_q_value(q, "Clocks Event Reasons", "Idle");
        struct mx_sample s;
        unsigned listed = 0;

        mx_sample_init(&s);
        ASSERT_OK(mx_sample_parse_smi_gpu(csv, n, &s, NULL));
        ASSERT_NOT_NULL(total);
        ASSERT_EQ(atoll(total) * MiB, s.gpu_mem_total);
        ASSERT_STREQ(idle, "Active");
        for (size_t i = 0; i < ELEMENTSOF(reasons); i++) {
                _cleanup_free_ char *v = smi_q_value(q, "Clocks Event Reasons", reasons[i].q);
                _cleanup_json_ json_t *names = mx_throttle_to_json(reasons[i].bit);
                const char *name = json_string_value(json_array_get(names, 0));

                ASSERT_NOT_NULL(v); /* -q lists it */
                listed++;
                ASSERT_NOT_NULL(name);
                ASSERT_TRUE(name[0] != '0'); /* a name, not "0x..." */
        }
        ASSERT_EQ(listed, 9u);
}

TEST(proc_parsers)
{
        static const char meminfo[] = "MemTotal:       131072000 kB\nMemFree:         1000 kB\n"
                                      "MemAvailable:   120000000 kB\nBuffers: 5 kB\n";
        static const char rollup[] = "55d0c0a1b000-7ffd1234f000 ---p 00000000 00:00 0     [rollup]\n"
                                     "Rss:              204800 kB\nPss:              102400 kB\n";
        _cleanup_free_ char *self = NULL;
        int64_t total, avail, pss;
        size_t n;

        ASSERT_OK(mx_sample_parse_meminfo(meminfo, sizeof(meminfo) - 1, &total, &avail));
        ASSERT_EQ(total, 131072000LL * 1024);
        ASSERT_EQ(avail, 120000000LL * 1024);
        ASSERT_ERR(mx_sample_parse_meminfo("MemTotal: 5 kB\n", 15, &total, &avail), EBADMSG);
        ASSERT_OK(mx_sample_parse_smaps_rollup(rollup, sizeof(rollup) - 1, &pss));
        ASSERT_EQ(pss, 102400LL * 1024);
        ASSERT_ERR(mx_sample_parse_smaps_rollup("Rss: 4 kB\n", 10, &pss), EBADMSG);
        /* and this machine's real files */
        self = test_read_file("/proc/meminfo", &n);
        ASSERT_OK(mx_sample_parse_meminfo(self, n, &total, &avail));
        ASSERT_TRUE(total > 0 && avail <= total);
        free(self);
        self = test_read_file("/proc/self/smaps_rollup", &n);
        ASSERT_OK(mx_sample_parse_smaps_rollup(self, n, &pss));
        ASSERT_TRUE(pss > 0);
}

/* ---- summaries ---- */

TEST(summary_bounded_series_peak_drift)
{
        struct mx_sample_summary sum;
        _cleanup_json_ json_t *j = NULL;
        json_t *mem;
        double pct;

        mx_sample_summary_init(&sum);
        for (int i = 0; i < 1000; i++) {
                struct mx_sample s;

                mx_sample_init(&s);
                s.at_us = 1000000LL * i;
                s.gpu_ok = true;
                s.source = MX_SAMPLE_SOURCE_NVML;
                s.mem_used = 1000 * MiB + (i == 500 ? 5000 * MiB : i * MiB); /* a spike in the middle */
                s.mem_total = 143771 * MiB;
                s.power_mw = 100000 + i;
                s.sm_clock_mhz = i % 2 ? 1980 : 345;
                s.throttle = i == 10 ? MX_THROTTLE_SW_POWER_CAP : MX_THROTTLE_GPU_IDLE;
                mx_sample_summary_add(&sum, &s);
        }
        ASSERT_EQ(sum.n, 1000u);
        ASSERT_TRUE(sum.n_points <= MX_SAMPLER_SERIES_MAX);
        ASSERT_TRUE(sum.n_points >= MX_SAMPLER_SERIES_MAX / 2);
        ASSERT_EQ(sum.stride * (sum.n_points - 1) + sum.in_last, 1000u); /* every sample in one bucket */
        ASSERT_EQ(sum.mem_start, 1000 * MiB);
        ASSERT_EQ(sum.mem_end, 1999 * MiB);
        ASSERT_EQ(sum.mem_peak, 6000 * MiB);
        ASSERT_EQ(mx_sample_summary_drift(&sum, &pct), 999 * MiB);
        ASSERT_TRUE(pct > 99.8 && pct < 99.95);
        /* the spike survives the downsampling: buckets keep their largest figure */
        bool seen = false;
        for (size_t i = 0; i < sum.n_points; i++)
                seen |= sum.points[i].mem_used == 6000 * MiB;
        ASSERT_TRUE(seen);
        j = mx_sample_summary_to_json(&sum);
        mem = json_object_get(j, "memory");
        ASSERT_EQ(json_integer_value(json_object_get(mem, "drift")), 999 * MiB);
        ASSERT_EQ(json_integer_value(json_object_get(j, "power_peak_mw")), 100999);
        ASSERT_EQ(json_integer_value(json_array_get(json_object_get(j, "sm_clock_mhz"), 0)), 345);
        ASSERT_EQ(json_array_size(json_object_get(j, "throttle")), 2u);
        ASSERT_EQ(json_array_size(json_object_get(json_object_get(j, "series"), "mem")), sum.n_points);
        ASSERT_STREQ(json_string_value(json_object_get(j, "source")), "nvml");
}

/* ---- the sampler on a loop ---- */

struct rig {
        struct event_base *base;
        struct proc_reaper *reaper;
        struct mx_sampler *s;
        struct mx_sample samples[64];
        size_t n;
        size_t want;
        bool done;
        int ticks; /* of an unrelated timer: the loop kept running */
};

static void rig_cb(struct mx_sampler *s, const struct mx_sample *sample, void *userdata)
{
        struct rig *g = userdata;

        if (g->n < ELEMENTSOF(g->samples))
                g->samples[g->n++] = *sample;
        if (g->n >= g->want)
                g->done = true;
}

static void tick_cb(evutil_socket_t fd, short what, void *userdata)
{
        ((struct rig *)userdata)->ticks++;
}

static void expired_cb(evutil_socket_t fd, short what, void *userdata)
{
        *(bool *)userdata = true;
}

static void run_until_done(struct rig *g)
{
        struct timeval tv = {.tv_sec = LOOP_TIMEOUT_MS / 1000};
        bool expired = false;
        struct event *t = evtimer_new(g->base, expired_cb, &expired);

        evtimer_add(t, &tv);
        while (!g->done && !expired)
                event_base_loop(g->base, EVLOOP_ONCE);
        event_free(t);
        if (!g->done)
                test_fail(__FILE__, __LINE__, "no sample within %d ms", LOOP_TIMEOUT_MS);
}

static void rig_init(struct rig *g)
{
        memset(g, 0, sizeof(*g));
        g->base = event_base_new();
        ASSERT_NOT_NULL(g->base);
        ASSERT_OK(proc_reaper_new(g->base, &g->reaper));
}

static void rig_done(struct rig *g)
{
        g->s = mx_sampler_free(g->s);
        g->reaper = proc_reaper_free(g->reaper);
        event_base_free(g->base);
}

static void rig_sampler(struct rig *g, const struct mx_sampler_opts *o)
{
        _cleanup_free_ char *err = NULL;

        if (mx_sampler_new(g->base, g->reaper, o, rig_cb, g, &g->s, &err) < 0)
                test_fail(__FILE__, __LINE__, "mx_sampler_new: %s", strna(err));
}

/* One sample on request. */
static const struct mx_sample *one(struct rig *g)
{
        g->want = g->n + 1;
        g->done = false;
        ASSERT_OK(mx_sampler_request(g->s));
        run_until_done(g);
        return &g->samples[g->n - 1];
}

static void fake_env(void)
{
        _cleanup_free_ char *dump = test_source_path("tests/fixtures/gpu-h200/nvml.txt");
        _cleanup_free_ char *smi_gpu = test_source_path("tests/fixtures/sampler/h200-query-gpu-nounits.csv");
        _cleanup_free_ char *smi_apps = test_source_path("tests/fixtures/gpu-h200/query-apps.csv");

        setenv("FAKE_NVML_DUMP", dump, 1);
        setenv("FAKE_SMI_GPU", smi_gpu, 1);
        setenv("FAKE_SMI_APPS", smi_apps, 1);
        unsetenv("FAKE_NVML_UNIFIED");
        unsetenv("FAKE_NVML_GROW");
        unsetenv("FAKE_NVML_INIT");
        unsetenv("FAKE_NVML_PROC_PID");
        unsetenv("FAKE_NVML_THROTTLE");
        unsetenv("FAKE_NVML_ENERGY");
        unsetenv("FAKE_SMI_OLD");
        unsetenv("FAKE_SMI_FAIL");
        unsetenv("FAKE_SMI_HANG");
        unsetenv("FAKE_SMI_LOG");
}

static char *fake_smi(void)
{
        return test_source_path("tests/unit/fake-nvidia-smi");
}

TEST(nvml_h200_dump)
{
        struct rig g;
        struct mx_sampler_opts o = {.source = MX_SAMPLE_SOURCE_NVML, .nvml_path = FAKE_NVML_PATH};
        const struct mx_sample *s;
        _cleanup_json_ json_t *j = NULL;

        fake_env();
        setenv("FAKE_NVML_THROTTLE", "0x44", 1);
        rig_init(&g);
        rig_sampler(&g, &o);
        s = one(&g);
        /* nvml.txt: mem total/used/free 150754820096 1832779776 ..., proc 409 1178599424, clocks 1980 3201
         */
        ASSERT_EQ(s->source, MX_SAMPLE_SOURCE_NVML);
        ASSERT_TRUE(s->gpu_ok);
        ASSERT_FALSE(s->unified);
        ASSERT_EQ(s->gpu_mem_total, 150754820096LL);
        /* nvmlDeviceGetMemoryInfo_v2: used without the 644939776 bytes reserved, as nvidia-smi counts */
        ASSERT_EQ(s->gpu_mem_used, 1832779776LL - 644939776LL);
        ASSERT_EQ(s->mem_used, s->gpu_mem_used); /* the judged figure is the device's */
        ASSERT_EQ(s->n_procs, 1u);
        ASSERT_EQ(s->procs[0].pid, 409);
        ASSERT_EQ(s->procs[0].gpu_bytes, 1178599424LL);
        ASSERT_EQ(s->procs_gpu_bytes, 1178599424LL);
        ASSERT_EQ(s->sm_clock_mhz, 1980);
        ASSERT_EQ(s->mem_clock_mhz, 3201);
        ASSERT_EQ(s->power_mw, 119177);
        ASSERT_EQ(s->temp_c, 31);
        ASSERT_EQ(s->util_pct, 87);
        ASSERT_EQ(s->throttle, MX_THROTTLE_SW_POWER_CAP | MX_THROTTLE_HW_THERMAL);
        ASSERT_TRUE(s->sys_mem_total > 0);
        ASSERT_STREQ(s->error, "");
        j = mx_sample_to_json(s);
        ASSERT_EQ(json_integer_value(json_object_get(j, "power_mw")), 119177);
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(j, "throttle"), 1)),
                     "hw_thermal_slowdown");
        rig_done(&g);

        /* a driver without the v2 call: v1, reserved memory included */
        setenv("FAKE_NVML_NO_V2", "1", 1);
        rig_init(&g);
        rig_sampler(&g, &o);
        s = one(&g);
        ASSERT_EQ(s->gpu_mem_used, 1832779776LL);
        unsetenv("FAKE_NVML_NO_V2");
        rig_done(&g);
}

/* NVML's total energy counter (L4's joules per token): read when the GPU reports it, said so when it does not. */
TEST(nvml_energy_counter)
{
        struct rig g;
        struct mx_sampler_opts o = {.source = MX_SAMPLE_SOURCE_NVML, .nvml_path = FAKE_NVML_PATH};
        int64_t a = -1, b = -1;
        _cleanup_free_ char *err = NULL, *err2 = NULL;
        struct timespec ts = {.tv_nsec = 200 * 1000 * 1000};

        fake_env();
        /* the H200 dump has no energy line: the fake integrates its recorded 119177 mW */
        setenv("FAKE_NVML_ENERGY", "1", 1);
        rig_init(&g);
        rig_sampler(&g, &o);
        ASSERT_EQ(mx_sampler_energy_mj(g.s, &a, &err), 0);
        nanosleep(&ts, NULL);
        ASSERT_EQ(mx_sampler_energy_mj(g.s, &b, &err), 0);
        /* 0.2 s at 119.177 W: about 23.8 J (the sleep may run long, never short) */
        ASSERT_LE(23835, b - a);
        ASSERT_LE(b - a, 23835 * 3);
        rig_done(&g);

        /* a GPU without the counter: NOT_SUPPORTED is "does not report energy", never a zero */
        setenv("FAKE_NVML_ENERGY", "0", 1);
        rig_init(&g);
        rig_sampler(&g, &o);
        a = -7;
        ASSERT_EQ(mx_sampler_energy_mj(g.s, &a, &err2), -EOPNOTSUPP);
        ASSERT_EQ(a, -7);
        ASSERT_CONTAINS(err2, "does not report energy");
        unsetenv("FAKE_NVML_ENERGY");
        rig_done(&g);
}

TEST(nvml_gb10_unified_uses_system_memory)
{
        struct rig g;
        struct mx_sampler_opts o = {.source = MX_SAMPLE_SOURCE_NVML, .nvml_path = FAKE_NVML_PATH};
        const struct mx_sample *s;

        fake_env();
        setenv("FAKE_NVML_UNIFIED", "1", 1);
        rig_init(&g);
        rig_sampler(&g, &o);
        s = one(&g);
        ASSERT_TRUE(s->gpu_ok); /* readable: it just has no memory of its own */
        ASSERT_TRUE(s->unified);
        ASSERT_EQ(s->gpu_mem_used, -1);
        ASSERT_TRUE(s->sys_mem_used > 0);
        ASSERT_EQ(s->mem_used, s->sys_mem_used);
        ASSERT_EQ(s->mem_total, s->sys_mem_total);
        ASSERT_EQ(s->procs[0].gpu_bytes, 1178599424LL); /* per process it does report (gpustat#179) */
        ASSERT_TRUE(mx_sampler_summary(g.s)->unified);
        rig_done(&g);
}

TEST(nvml_periodic_sees_a_leak)
{
        struct rig g;
        struct mx_sampler_opts o = {
                .source = MX_SAMPLE_SOURCE_NVML, .nvml_path = FAKE_NVML_PATH, .interval_ms = 30};
        const struct mx_sample_summary *sum;
        double pct;

        fake_env();
        setenv("FAKE_NVML_GROW", "536870912", 1); /* 512 MiB more at every sample */
        rig_init(&g);
        rig_sampler(&g, &o);
        g.want = 8;
        ASSERT_OK(mx_sampler_start(g.s));
        run_until_done(&g);
        mx_sampler_stop(g.s);
        sum = mx_sampler_summary(g.s);
        ASSERT_TRUE(sum->n >= 8);
        for (size_t i = 1; i < g.n; i++) {
                ASSERT_TRUE(g.samples[i].at_us > g.samples[i - 1].at_us);
                ASSERT_EQ(g.samples[i].mem_used - g.samples[i - 1].mem_used, 512 * MiB);
        }
        ASSERT_EQ(mx_sample_summary_drift(sum, &pct), (int64_t)(sum->n - 1) * 512 * MiB);
        ASSERT_TRUE(pct > 10); /* L3's verdict: more than 10 % growth */
        ASSERT_EQ(sum->mem_peak, sum->mem_end);
        rig_done(&g);
}

TEST(nvml_failures)
{
        struct rig g;
        struct mx_sampler_opts o = {.source = MX_SAMPLE_SOURCE_NVML,
                                    .nvml_path = "/nonexistent/libnvidia-ml.so.1"};
        struct mx_sampler *s = NULL;
        _cleanup_free_ char *err = NULL;

        fake_env();
        rig_init(&g);
        ASSERT_ERR(mx_sampler_new(g.base, g.reaper, &o, rig_cb, &g, &s, &err), ENOENT);
        ASSERT_CONTAINS(err, "cannot load /nonexistent/libnvidia-ml.so.1");
        free(err);
        err = NULL;
        setenv("FAKE_NVML_INIT", "9", 1);
        o.nvml_path = FAKE_NVML_PATH;
        ASSERT_ERR(mx_sampler_new(g.base, g.reaper, &o, rig_cb, &g, &s, &err), EIO);
        ASSERT_CONTAINS(err, "nvmlInit failed: Driver Not Loaded");
        ASSERT_NULL(s);
        rig_done(&g);
}

TEST(smi_fallback_with_real_child)
{
        struct rig g;
        _cleanup_free_ char *smi = fake_smi(), *log = xasprintf("%s/smi.log", test_tmpdir()), *args = NULL;
        struct mx_sampler_opts o = {.nvml_path = "/nonexistent/libnvidia-ml.so.1", .smi_path = smi};
        const struct mx_sample *s;
        size_t n;

        fake_env();
        setenv("FAKE_SMI_LOG", log, 1);
        rig_init(&g);
        rig_sampler(&g, &o); /* AUTO: no NVML, so nvidia-smi */
        s = one(&g);
        ASSERT_EQ(s->source, MX_SAMPLE_SOURCE_SMI);
        ASSERT_TRUE(s->gpu_ok);
        ASSERT_STREQ(s->error, "");
        ASSERT_EQ(s->gpu_mem_used, 1542 * MiB);
        ASSERT_EQ(s->mem_used, 1542 * MiB);
        ASSERT_EQ(s->power_mw, 79940);
        ASSERT_EQ(s->n_procs, 1u);
        ASSERT_EQ(s->procs[0].pid, 1093);
        ASSERT_EQ(mx_sampler_source(g.s), MX_SAMPLE_SOURCE_SMI);
        args = test_read_file(log, &n);
        ASSERT_CONTAINS(args, "-i 0 --query-gpu=index,memory.total,memory.used,");
        ASSERT_CONTAINS(args, "clocks_event_reasons.active --format=csv,nounits");
        ASSERT_CONTAINS(args, "-i 0 --query-compute-apps=pid,used_memory --format=csv,nounits");
        rig_done(&g);
}

TEST(smi_older_driver_field_names)
{
        struct rig g;
        _cleanup_free_ char *smi = fake_smi(), *log = xasprintf("%s/smi-old.log", test_tmpdir()),
                            *args = NULL;
        struct mx_sampler_opts o = {.source = MX_SAMPLE_SOURCE_SMI, .smi_path = smi};
        const struct mx_sample *s;
        size_t n;

        fake_env();
        setenv("FAKE_SMI_OLD", "1", 1);
        setenv("FAKE_SMI_LOG", log, 1);
        rig_init(&g);
        rig_sampler(&g, &o);
        s = one(&g);
        ASSERT_TRUE(s->gpu_ok);
        ASSERT_EQ(s->gpu_mem_used, 1542 * MiB);
        args = test_read_file(log, &n);
        ASSERT_CONTAINS(args, "clocks_throttle_reasons.active");
        /* the older spelling is kept: the second sample asks it first */
        s = one(&g);
        ASSERT_TRUE(s->gpu_ok);
        rig_done(&g);
}

TEST(smi_failure_is_reported_or_falls_back)
{
        struct rig g;
        _cleanup_free_ char *smi = fake_smi();
        struct mx_sampler_opts o = {.source = MX_SAMPLE_SOURCE_SMI, .smi_path = smi};
        const struct mx_sample *s;

        fake_env();
        setenv("FAKE_SMI_FAIL", "1", 1);
        rig_init(&g);
        rig_sampler(&g, &o);
        s = one(&g);
        ASSERT_FALSE(s->gpu_ok); /* the health gate's "GPU unreadable" */
        ASSERT_CONTAINS(s->error, "nvidia-smi exited with status 9: NVIDIA-SMI has failed");
        ASSERT_EQ(s->mem_used, s->sys_mem_used);
        ASSERT_EQ(mx_sampler_summary(g.s)->gpu_failures, 1u);
        g.s = mx_sampler_free(g.s);

        /* AUTO with neither NVML nor a working nvidia-smi: /proc only, not an error */
        o = (struct mx_sampler_opts){.nvml_path = "/nonexistent/lib.so",
                                     .smi_path = "/nonexistent/nvidia-smi"};
        rig_sampler(&g, &o);
        s = one(&g);
        ASSERT_EQ(s->source, MX_SAMPLE_SOURCE_PROC);
        ASSERT_STREQ(s->error, "");
        ASSERT_TRUE(s->mem_used > 0);
        rig_done(&g);
}

TEST(smi_hang_is_killed_and_never_blocks_the_loop)
{
        struct rig g;
        _cleanup_free_ char *smi = fake_smi();
        struct mx_sampler_opts o = {
                .source = MX_SAMPLE_SOURCE_SMI, .smi_path = smi, .smi_timeout_ms = 600, .interval_ms = 50};
        struct timeval tv = {.tv_usec = 20000};
        struct event *t;
        const struct mx_sample *s;
        int64_t t0 = mx_now_mono_us();

        _cleanup_free_ char *pidfile = xasprintf("%s/smi-hang.pid", test_tmpdir()), *pidtext = NULL;
        int64_t group = 0;
        size_t n;

        fake_env();
        setenv("FAKE_SMI_HANG", pidfile, 1);
        rig_init(&g);
        t = event_new(g.base, -1, EV_PERSIST, tick_cb, &g);
        event_add(t, &tv);
        rig_sampler(&g, &o);
        g.want = 1;
        ASSERT_OK(mx_sampler_start(g.s));
        run_until_done(&g);
        s = &g.samples[0];
        ASSERT_FALSE(s->gpu_ok);
        ASSERT_CONTAINS(s->error, "did not answer in 600 ms");
        if (mx_now_mono_us() - t0 < 500000) /* libevent's cached clock may run a little ahead */
                test_fail(__FILE__, __LINE__, "sample after %" PRId64 " us: %s", mx_now_mono_us() - t0,
                          s->error);
        ASSERT_TRUE(g.ticks >= 5);                 /* the loop ran other events meanwhile */
        ASSERT_TRUE(mx_sampler_skipped(g.s) >= 3); /* ticks while the child was in flight */
        /* the stand-in's own child (which held the pipe open) was killed with it */
        pidtext = test_read_file(pidfile, &n);
        ASSERT_OK(mx_parse_int64(strtok(pidtext, "\n"), 1, INT32_MAX, &group));
        for (int i = 0; i < 500 && kill(-(pid_t)group, 0) == 0; i++)
                usleep(10000);
        ASSERT_TRUE(kill(-(pid_t)group, 0) < 0 && errno == ESRCH);
        event_free(t);
        rig_done(&g); /* frees the sampler with the next child in flight: killed, reaped */
}

/* A child that holds touched memory until killed. */
static pid_t memory_child(size_t bytes)
{
        pid_t pid = fork();

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED)
                        _exit(1);
                memset(p, 1, bytes);
                for (;;)
                        pause();
        }
        return pid;
}

TEST(tree_pss_and_gpu_memory_of_the_server)
{
        struct rig g;
        struct mx_sampler_opts o = {.source = MX_SAMPLE_SOURCE_NVML, .nvml_path = FAKE_NVML_PATH};
        const struct mx_sample *s;
        pid_t child = memory_child(64 * MiB);
        char pid_text[16];
        int status;

        fake_env();
        snprintf(pid_text, sizeof(pid_text), "%d", (int)child);
        setenv("FAKE_NVML_PROC_PID", pid_text, 1); /* the GPU lists the child as a compute process */
        rig_init(&g);
        rig_sampler(&g, &o);
        s = one(&g);
        ASSERT_EQ(s->tree_pss, -1); /* no tree set */
        /* wait until the child has touched its memory */
        for (int i = 0; i < 3000; i++) {
                mx_sampler_set_tree(g.s, NULL, child);
                s = one(&g);
                if (s->tree_pss >= 64 * MiB)
                        break;
                usleep(10000);
        }
        ASSERT_TRUE(s->tree_pss >= 64 * MiB);
        ASSERT_TRUE(s->tree_pss < 512 * MiB);
        ASSERT_EQ(s->tree_procs, 1u);
        ASSERT_EQ(s->tree_gpu_bytes, 1178599424LL);
        kill(child, SIGKILL);
        ASSERT_EQ(waitpid(child, &status, 0), child);
        s = one(&g);
        ASSERT_EQ(s->tree_procs, 0u); /* gone */
        ASSERT_EQ(s->tree_pss, 0);
        rig_done(&g);
}

TEST(tree_by_run_tag)
{
        struct rig g;
        struct mx_sampler_opts o = {.source = MX_SAMPLE_SOURCE_PROC};
        _cleanup_strv_free_ char **env = strv_copy(environ);
        _cleanup_free_ char *err = NULL;
        char *const argv[] = {(char *)"sh", (char *)"-c", (char *)"sleep 60 & sleep 60", NULL};
        struct proc_spec spec = {
                .argv = argv, .env = env, .tag = "sampler-test-tag", .stdout_fd = -1, .stderr_fd = -1};
        struct proc_match m = {.tag = "sampler-test-tag"};
        struct proc_info info;
        const struct mx_sample *s = NULL;
        int status;

        rig_init(&g);
        rig_sampler(&g, &o);
        ASSERT_OK(proc_spawn(&spec, &info, &err));
        mx_sampler_set_tree(g.s, &m, 0);
        for (int i = 0; i < 3000; i++) {
                s = one(&g);
                if (s->tree_procs == 3)
                        break;
                usleep(10000);
        }
        ASSERT_EQ(s->tree_procs, 3u); /* sh and its two sleeps */
        ASSERT_TRUE(s->tree_pss > 0);
        ASSERT_EQ(s->source, MX_SAMPLE_SOURCE_PROC);
        kill(-info.pid, SIGKILL);
        ASSERT_EQ(waitpid(info.pid, &status, 0), info.pid);
        rig_done(&g);
}

/* ---- storage and show ---- */

TEST(store_and_show)
{
        _cleanup_free_ char *path = xasprintf("%s/samples.db", test_tmpdir()), *err = NULL;
        _cleanup_(db_closep) struct mx_db *db = NULL;
        _cleanup_json_ json_t *levels = json_pack("[s]", "L3"), *req = json_pack("{s:s}", "feature", "x");
        _cleanup_json_ json_t *run = NULL, *ref = json_pack("{s:s}", "ref", "run_summary");
        struct queue_job_new job = {.uid = 1,
                                    .gid = 1,
                                    .user_name = "t",
                                    .matrix_path = "/m.json",
                                    .matrix_digest = "0123456789abcdef",
                                    .feature = "x",
                                    .strategy = "default",
                                    .levels = levels,
                                    .request = req};
        struct queue_run_new r = {.config_key = "kernel=a", .config_hash = "0000000000000000"};
        struct queue_next next = {};
        struct mx_sample_summary sum;
        int64_t job_id, att;
        json_t *samples, *l3;
        int num;

        ASSERT_OK(db_open(path, &db, &err));
        r.config = json_pack("{s:s}", "kernel", "a");
        r.reasons = json_pack("[s]", "x");
        r.spec = json_pack("{s:[s]}", "argv", "true");
        ASSERT_OK(queue_submit(db, &job, &r, 1, &job_id));
        json_decref(r.config);
        json_decref(r.reasons);
        json_decref(r.spec);
        ASSERT_OK(queue_pick_next(db, &next));
        ASSERT_OK(queue_attempt_start(db, next.run, "tag-s", "boot", &att, &num));

        mx_sample_summary_init(&sum);
        for (int i = 0; i < 5; i++) {
                struct mx_sample s;
                mx_sample_init(&s);
                s.at_us = 1000000LL * (i + 1);
                s.source = MX_SAMPLE_SOURCE_SMI;
                s.gpu_ok = true;
                s.mem_used = (100 + 20 * i) * MiB;
                mx_sample_summary_add(&sum, &s);
        }
        ASSERT_OK(sample_store_summary(db, att, "L3", &sum));
        ASSERT_OK(sample_store_summary(db, att, "L3", &sum)); /* replaces */
        ASSERT_ERR(sample_store_summary(db, att, "", &sum), EINVAL);

        ASSERT_OK(queue_run_json(db, next.run, true, &run));
        samples = json_object_get(json_array_get(json_object_get(run, "attempt_history"), 0), "samples");
        ASSERT_EQ(json_object_size(samples), 1u);
        l3 = json_object_get(samples, "L3");
        ASSERT_STREQ(json_string_value(json_object_get(l3, "source")), "nvidia-smi");
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(l3, "memory"), "drift")), 80 * MiB);
        ASSERT_EQ(json_real_value(json_object_get(json_object_get(l3, "memory"), "drift_pct")), 80.0);
        if (mx_proto_check_value(mx_proto_get(), ref, run, "run", &err) < 0)
                test_fail(__FILE__, __LINE__, "reply shape: %s", err);
        queue_next_done(&next);
}

/* ---- the device check's output (tests/device/sampler.sh), kept as fixtures ---- */

struct step {
        int64_t t_us;
        int64_t held_mib;
};

/* alloc-steps.log: the step events, the pid, and the time it exited. */
static size_t read_steps(const char *text, struct step *steps, size_t max, int64_t *ret_pid,
                         int64_t *ret_exit)
{
        size_t n = 0;

        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                long long t, held;
                int pid;
                char event[16];

                if (sscanf(p, "alloc-steps t_us=%lld event=%15s held_mib=%lld pid=%d", &t, event, &held,
                           &pid) != 4)
                        continue;
                *ret_pid = pid;
                if (streq(event, "step") && n < max)
                        steps[n++] = (struct step){t, held};
                if (streq(event, "exit"))
                        *ret_exit = t;
        }
        return n;
}

/* The samples of a mxmatrix-sample JSON-lines file: (at, gpu_mem_used MiB, the pid's gpu_bytes MiB). */
struct seen {
        int64_t at, used_mib, proc_mib;
};

static size_t read_samples(const char *text, int64_t pid, struct seen *out, size_t max, bool *ret_summary)
{
        size_t n = 0;
        int64_t last_at = 0;

        *ret_summary = false;
        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                const char *eol = strchr(p, '\n') ?: p + strlen(p);
                _cleanup_json_ json_t *j = json_loadb(p, (size_t)(eol - p), 0, NULL);
                json_t *s = json_object_get(j, "sample"), *proc;
                size_t i;

                if (eol == p)
                        continue;
                ASSERT_NOT_NULL(j); /* every line is JSON */
                if (json_object_get(j, "summary")) {
                        *ret_summary = true;
                        continue;
                }
                ASSERT_NOT_NULL(s);
                ASSERT_TRUE(json_is_true(json_object_get(s, "gpu_ok")));
                ASSERT_TRUE(json_integer_value(json_object_get(s, "at")) > last_at);
                last_at = json_integer_value(json_object_get(s, "at"));
                if (n == max)
                        continue;
                out[n] = (struct seen){.at = last_at,
                                       .proc_mib = -1,
                                       .used_mib =
                                               json_integer_value(json_object_get(s, "gpu_mem_used")) / MiB};
                json_array_foreach (json_object_get(s, "procs"), i, proc)
                        if (json_integer_value(json_object_get(proc, "pid")) == pid)
                                out[n].proc_mib =
                                        json_integer_value(json_object_get(proc, "gpu_bytes")) / MiB;
                n++;
        }
        return n;
}

static int64_t abs64(int64_t x)
{
        return x < 0 ? -x : x;
}

/* What the device check asserts, again on its kept output: the steps seen, the leak, nvidia-smi's agreement.
 */
TEST(device_fixture)
{
        static const char *const files[] = {"sampler-nvml.jsonl", "sampler-smi.jsonl"};
        _cleanup_free_ char *readme = fixture("tests/fixtures/device/sampler/README.md", NULL);
        _cleanup_free_ char *log = fixture("tests/fixtures/device/sampler/alloc-steps.log", NULL);
        _cleanup_free_ char *own = fixture("tests/fixtures/device/sampler/smi-own.csv", NULL);
        struct step steps[16];
        int64_t pid = 0, exit_at = 0;
        size_t n_steps = read_steps(log, steps, ELEMENTSOF(steps), &pid, &exit_at);

        if (startswith(readme, "# PLACEHOLDER"))
                fprintf(stderr,
                        "note: tests/fixtures/device/sampler holds placeholder figures, not a GPU's\n");
        ASSERT_EQ(n_steps, 8u);
        ASSERT_TRUE(exit_at > steps[7].t_us);
        for (size_t i = 0; i < n_steps; i++)
                ASSERT_EQ(steps[i].held_mib, 512 * (int64_t)(i + 1));

        for (size_t f = 0; f < ELEMENTSOF(files); f++) {
                _cleanup_free_ char *path = xasprintf("tests/fixtures/device/sampler/%s", files[f]);
                _cleanup_free_ char *text = fixture(path, NULL);
                static struct seen seen[4096];
                bool summary;
                size_t n = read_samples(text, pid, seen, ELEMENTSOF(seen), &summary);
                int64_t base = -1, peak = -1, proc_peak = -1;
                unsigned checked = 0;

                ASSERT_TRUE(summary);
                ASSERT_TRUE(n >= 16);
                for (size_t i = 0; i < n; i++) {
                        if (seen[i].at < steps[0].t_us)
                                base = seen[i].used_mib;
                        peak = MX_MAX(peak, seen[i].used_mib);
                        proc_peak = MX_MAX(proc_peak, seen[i].proc_mib);
                }
                ASSERT_TRUE(base >= 0);
                ASSERT_LE(abs64(peak - base - 4096), 64); /* the leak is seen */
                /* each step: samples well inside it show what alloc-steps held then */
                for (size_t k = 0; k < n_steps; k++) {
                        int64_t from = steps[k].t_us + 150000,
                                to = k + 1 < n_steps ? steps[k + 1].t_us : exit_at;

                        for (size_t i = 0; i < n; i++)
                                if (seen[i].at >= from && seen[i].at < to - 50000) {
                                        if (abs64(seen[i].used_mib - base - steps[k].held_mib) > 64)
                                                test_fail(__FILE__, __LINE__,
                                                          "%s: at step %zu (%" PRId64
                                                          " MiB held) the sample at %" PRId64 " saw %" PRId64
                                                          " MiB over the baseline",
                                                          files[f], k + 1, steps[k].held_mib, seen[i].at,
                                                          seen[i].used_mib - base);
                                        checked++;
                                }
                }
                ASSERT_TRUE(checked >= 8);
                /* nvidia-smi's own readings agree with the nearest sample, away from a step */
                for (const char *p = own; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                        long long t, used, proc = -1;
                        bool near_step = false;
                        size_t best = n;

                        if (sscanf(p, "%lld,%lld,%lld", &t, &used, &proc) < 2)
                                continue;
                        for (size_t k = 0; k < n_steps; k++)
                                near_step |= t > steps[k].t_us - 400000 && t < steps[k].t_us + 400000;
                        if (near_step || t > exit_at - 400000)
                                continue;
                        for (size_t i = 0; i < n; i++)
                                if (best == n || abs64(seen[i].at - t) < abs64(seen[best].at - t))
                                        best = i;
                        if (best == n || abs64(seen[best].at - t) > 600000)
                                continue;
                        ASSERT_LE(abs64(seen[best].used_mib - used), 64);
                        if (proc >= 0 && seen[best].proc_mib >= 0)
                                ASSERT_LE(abs64(seen[best].proc_mib - proc), 64);
                }
                ASSERT_TRUE(proc_peak > 4096); /* the process's own figure: its 4096 MiB and its context */
        }
}
