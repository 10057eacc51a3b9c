/* SPDX-License-Identifier: MIT */
/*
 * L4's validity on its GPU (daemon/run/levels/l4-valid.h), from the sampler's
 * summary of the samples taken while L4 measured: issue 15 "a throttled or
 * shared GPU measures something else; the sampler sees it and L4 ignored it".
 */
#include "levels/l4-valid.h"
#include "sampler.h"
#include "test.h"

/* The window of samples parsed from nvidia-smi lines (the H200 fixture's shape), with apps of the tree or not. */
static void window_of(const char *const *rows, size_t n, const pid_t *foreign, struct mx_sample_summary *w)
{
        mx_sample_summary_init(w);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *text = xasprintf(
                        "index, memory.total [MiB], memory.used [MiB], utilization.gpu [%%], temperature.gpu, "
                        "power.draw [W], clocks.current.sm [MHz], clocks.current.memory [MHz], "
                        "clocks_event_reasons.active\n%s\n",
                        rows[i]);
                _cleanup_free_ char *err = NULL;
                struct mx_sample s;

                mx_sample_init(&s);
                ASSERT_OK(mx_sample_parse_smi_gpu(text, strlen(text), &s, &err));
                s.gpu_ok = true;
                if (foreign && foreign[i]) {
                        s.foreign_procs = 1;
                        s.foreign_pid = foreign[i];
                }
                mx_sample_summary_add(w, &s);
        }
}

TEST(steady_gpu_is_valid)
{
        static const char *const rows[] = { "0, 143771, 120000, 98, 60, 650.1, 1980, 2619, 0x0000000000000000",
                                            "0, 143771, 120000, 99, 62, 655.0, 1965, 2619, 0x0000000000000000",
                                            /* between runs: idle, a low clock that does not count */
                                            "0, 143771, 120000, 0, 55, 120.0, 345, 2619, 0x0000000000000001" };
        struct mx_sample_summary w;
        _cleanup_free_ char *why = NULL;
        _cleanup_json_ json_t *checks = NULL;

        window_of(rows, ELEMENTSOF(rows), NULL, &w);
        ASSERT_TRUE(mx_l4_gpu_valid(&w, 10, &why, &checks));
        ASSERT_NULL(why);
        ASSERT_EQ(json_integer_value(json_object_get(checks, "foreign_processes")), 0);
}

TEST(throttled_gpu_is_invalid_with_its_reason)
{
        static const char *const rows[] = { "0, 143771, 120000, 98, 60, 650.1, 1980, 2619, 0x0000000000000000",
                                            /* hw_thermal (0x40) while a run streamed */
                                            "0, 143771, 120000, 99, 91, 640.0, 1950, 2619, 0x0000000000000040" };
        struct mx_sample_summary w;
        _cleanup_free_ char *why = NULL;

        window_of(rows, ELEMENTSOF(rows), NULL, &w);
        ASSERT_FALSE(mx_l4_gpu_valid(&w, 10, &why, NULL));
        ASSERT_CONTAINS(why, "thermal or hardware throttling during the measurement");
        ASSERT_CONTAINS(why, "hw_thermal");
}

TEST(power_cap_alone_leaves_l4_valid_and_recorded)
{
        /* sw_power_cap (0x4) throughout, the SM clock steady: a power-limited GPU's normal state */
        static const char *const rows[] = { "0, 143771, 120000, 98, 60, 650.1, 1980, 2619, 0x0000000000000004",
                                            "0, 143771, 120000, 99, 62, 649.0, 1965, 2619, 0x0000000000000004" };
        struct mx_sample_summary w;
        _cleanup_free_ char *why = NULL;
        _cleanup_json_ json_t *checks = NULL;

        window_of(rows, ELEMENTSOF(rows), NULL, &w);
        ASSERT_TRUE(mx_l4_gpu_valid(&w, 10, &why, &checks));
        ASSERT_NULL(why);
        _cleanup_free_ char *seen = json_dumps(json_object_get(checks, "throttle"), JSON_COMPACT);
        ASSERT_CONTAINS(seen, "sw_power_cap");
}

TEST(power_cap_with_a_moving_clock_is_invalid)
{
        static const char *const rows[] = { "0, 143771, 120000, 98, 60, 650.1, 1980, 2619, 0x0000000000000004",
                                            "0, 143771, 120000, 99, 62, 600.0, 1500, 2619, 0x0000000000000004" };
        struct mx_sample_summary w;
        _cleanup_free_ char *why = NULL;

        window_of(rows, ELEMENTSOF(rows), NULL, &w);
        ASSERT_FALSE(mx_l4_gpu_valid(&w, 10, &why, NULL));
        ASSERT_CONTAINS(why, "the SM clock under load moved");
}

TEST(moving_clock_is_invalid)
{
        static const char *const rows[] = { "0, 143771, 120000, 98, 60, 650.1, 1980, 2619, 0x0000000000000000",
                                            "0, 143771, 120000, 99, 62, 600.0, 1500, 2619, 0x0000000000000000" };
        struct mx_sample_summary w;
        _cleanup_free_ char *why = NULL, *why2 = NULL;

        window_of(rows, ELEMENTSOF(rows), NULL, &w);
        ASSERT_FALSE(mx_l4_gpu_valid(&w, 10, &why, NULL));
        ASSERT_CONTAINS(why, "the SM clock under load moved 24.2%");
        /* a looser tolerance accepts it */
        ASSERT_TRUE(mx_l4_gpu_valid(&w, 30, &why2, NULL));
}

TEST(shared_gpu_is_invalid)
{
        static const char *const rows[] = { "0, 143771, 120000, 98, 60, 650.1, 1980, 2619, 0x0000000000000000",
                                            "0, 143771, 130000, 99, 62, 655.0, 1980, 2619, 0x0000000000000000" };
        static const pid_t foreign[] = { 0, 4242 };
        struct mx_sample_summary w;
        _cleanup_free_ char *why = NULL;

        window_of(rows, ELEMENTSOF(rows), foreign, &w);
        ASSERT_FALSE(mx_l4_gpu_valid(&w, 10, &why, NULL));
        ASSERT_CONTAINS(why, "1 other process held the GPU during the measurement (pid 4242)");
}

TEST(no_gpu_samples_leave_it_valid_not_measured)
{
        _cleanup_json_ json_t *checks = NULL;

        ASSERT_TRUE(mx_l4_gpu_valid(NULL, 10, NULL, &checks));
        ASSERT_CONTAINS(json_string_value(json_object_get(checks, "note")), "not measured");
}
