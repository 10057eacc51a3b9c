/* SPDX-License-Identifier: MIT */
/* Seed 002's "Results" YAML block from an L4 result (bench-yaml.h). */
#include "bench-yaml.h"

#include <math.h>

static void number(struct mx_buf *b, const char *indent, const char *key, json_t *v, int decimals)
{
        if (json_is_number(v) && isfinite(json_number_value(v)))
                mx_buf_printf(b, "%s%s: %.*f\n", indent, key, decimals, json_number_value(v));
        else
                mx_buf_printf(b, "%s%s: null\n", indent, key);
}

/* The smallest number of samples behind the depth-0 serving distributions, or -1. */
static json_int_t depth0_requests(json_t *l4)
{
        json_t *sv, *e;
        size_t i;
        json_int_t n = 0;
        bool any = false;

        sv = json_object_get(l4, "serving");
        json_array_foreach (sv, i, e) {
                if (json_integer_value(json_object_get(e, "depth")) != 0)
                        continue;
                n += json_integer_value(json_object_get(e, "valid"));
                any = true;
        }
        return any ? n : -1;
}

char *mx_bench_results_yaml(json_t *l4)
{
        static const char *const lat[] = {"ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms",
                                          "itl_p50_ms",  "itl_p99_ms",  "e2e_p50_ms",  "e2e_p99_ms"};
        json_t *res = json_object_get(l4, "results"), *thr = json_object_get(res, "throughput"), *v;
        json_t *latency = json_object_get(res, "latency"), *mem = json_object_get(l4, "memory");
        json_t *cfg = json_object_get(l4, "config");
        struct mx_buf b = MX_BUF_INIT;
        json_int_t n = depth0_requests(l4);
        const char *k;

        if (json_is_false(json_object_get(l4, "valid")) && json_is_string(json_object_get(l4, "invalid_because")))
                mx_buf_printf(&b, "# INVALID: %s; these numbers must not be used\n",
                              json_string_value(json_object_get(l4, "invalid_because")));
        else if (json_is_false(json_object_get(l4, "valid")))
                mx_buf_printf(&b,
                              "# INVALID: the kernel gate (L1.5) says %s; these numbers must not be used\n",
                              strna(json_string_value(json_object_get(l4, "kernel_gate"))));
        mx_buf_printf(&b,
                      "# L4 (%s): throughput = mean over %" JSON_INTEGER_FORMAT " runs of the depth-0 rows, "
                      "concurrency %" JSON_INTEGER_FORMAT "\n",
                      json_string_value(json_object_get(cfg, "style")) ?: "llama-benchy",
                      json_integer_value(json_object_get(cfg, "runs")),
                      json_integer_value(json_object_get(cfg, "concurrency")));
        if (n >= 0)
                mx_buf_printf(&b,
                              "# latency over %" JSON_INTEGER_FORMAT
                              " depth-0 requests, percentiles by linear "
                              "interpolation%s; ttft = first text (reasoning included)\n",
                              n, n < 459 ? " (a p99 from fewer than 459 samples is a rough figure)" : "");
        number(&b, "", "startup_time_s", json_object_get(l4, "ready_s"), 1);
        mx_buf_printf(&b, "\nthroughput:\n");
        if (json_object_size(thr) == 0)
                mx_buf_printf(&b, "  # no depth-0 row measured\n");
        json_object_foreach (thr, k, v)
                number(&b, "  ", k, v, 2);
        mx_buf_printf(&b, "\nlatency:\n");
        for (size_t i = 0; i < ELEMENTSOF(lat); i++)
                number(&b, "  ", lat[i], json_object_get(latency, lat[i]), 2);
        mx_buf_printf(&b, "\nresource:\n");
        v = json_object_get(mem, "peak");
        if (json_is_integer(v)) {
                json_t *gb = json_real((double)json_integer_value(v) / (1 << 30));

                number(&b, "  ", "gpu_memory_peak_gb", gb, 2);
                json_decref(gb);
                mx_buf_printf(&b, "  # GiB (2^30 bytes), figure %s: %s\n",
                              strna(json_string_value(json_object_get(mem, "figure"))),
                              strna(json_string_value(json_object_get(mem, "figure_is"))));
        } else
                mx_buf_printf(&b, "  gpu_memory_peak_gb: null\n");
        mx_buf_printf(&b, "  cpu_usage_percent: null  # not measured\n");
        return mx_buf_steal(&b);
}
