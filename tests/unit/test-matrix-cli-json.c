/* SPDX-License-Identifier: MIT */
/*
 * The client's --json documents parse as JSON and carry the documented
 * fields (docs/mxmatrix.json.5, JSON OUTPUT). Runs the built mxmatrix; the
 * shell test tests/regress/t-matrix-cli.sh checks the human output.
 */
#include "test.h"

#include <jansson.h>
#include <sys/wait.h>

/* Run the client with args (a shell word list) and parse its stdout; *ret_status gets the exit status. */
static json_t *run_json(const char *args, int *ret_status)
{
        _cleanup_free_ char *client = xasprintf("%s/client/mxmatrix", MX_BUILD_DIR);
        _cleanup_free_ char *cmd = NULL;
        json_error_t e;
        json_t *j;
        FILE *f;
        int st;

        if (access(client, X_OK) < 0)
                test_skip("client not built");
        cmd = xasprintf("cd '%s' && '%s' %s", MX_SOURCE_DIR, client, args);
        f = popen(cmd, "r");
        ASSERT_NOT_NULL(f);
        j = json_loadf(f, 0, &e);
        st = pclose(f);
        if (!j)
                test_fail(__FILE__, __LINE__, "'%s': output is not JSON: %s (line %d)", args, e.text,
                          e.line);
        *ret_status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        return j;
}

TEST(check_json)
{
        int st;
        json_auto_t *j = run_json("--json matrix check matrix/mxfp4-gb10.json", &st);
        json_auto_t *bad = run_json("matrix check --json tests/fixtures/matrix/does-not-exist.json", &st);

        ASSERT_TRUE(json_is_true(json_object_get(j, "ok")));
        ASSERT_EQ(json_integer_value(json_object_get(j, "axes")), 6);
        ASSERT_EQ(json_integer_value(json_object_get(j, "values")), 20);
        ASSERT_EQ(json_integer_value(json_object_get(j, "features")), 6);
        ASSERT_EQ(json_integer_value(json_object_get(j, "full")), 768);
        ASSERT_EQ(json_integer_value(json_object_get(j, "valid")), 384);
        ASSERT_EQ(st, 3);
        ASSERT_TRUE(json_is_false(json_object_get(bad, "ok")));
        ASSERT_CONTAINS(json_string_value(json_object_get(bad, "error")), "No such file or directory");
}

TEST(show_json)
{
        int st;
        json_auto_t *j = run_json("matrix show --json matrix/mxfp4-gb10.json", &st);
        json_t *axes = json_object_get(j, "axes"), *kernel = json_array_get(axes, 0), *counts;
        json_t *cutlass = json_array_get(json_object_get(kernel, "values"), 1);
        json_t *f1 = json_array_get(json_object_get(j, "features"), 0);

        ASSERT_EQ(st, 0);
        ASSERT_EQ(json_array_size(axes), 6);
        ASSERT_STREQ(json_string_value(json_object_get(cutlass, "name")), "cutlass");
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(cutlass, "aliases"), 0)), "gemm");
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(cutlass, "env"), 0)),
                     "VLLM_MXFP4_MOE_KERNEL=gemm");
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(j, "baseline"), "kernel")), "marlin");
        ASSERT_STREQ(json_string_value(json_object_get(f1, "status")), "in-progress");
        ASSERT_STREQ(
                json_string_value(json_object_get(json_array_get(json_object_get(f1, "criteria"), 0), "op")),
                "min_gain_pct");
        ASSERT_EQ(json_array_size(json_object_get(json_object_get(j, "constraints"), "known_incompatible")),
                  3);
        counts = json_object_get(j, "counts");
        ASSERT_EQ(json_integer_value(json_object_get(counts, "full")), 768);
        ASSERT_EQ(json_integer_value(json_object_get(counts, "valid")), 384);
        ASSERT_EQ(json_integer_value(json_object_get(counts, "known_incompatible")), 284);
        ASSERT_TRUE(json_integer_value(json_object_get(counts, "pairwise")) >=
                    16); /* 4 kernels x 4 activations */
        ASSERT_TRUE(json_integer_value(json_object_get(counts, "3way")) >=
                    json_integer_value(json_object_get(counts, "pairwise")));
}

TEST(cover_json)
{
        int st;
        json_auto_t *j = run_json("matrix cover matrix/mxfp4-gb10.json -t 2 --json --seed 3", &st);
        json_t *rows = json_object_get(j, "rows");

        ASSERT_EQ(st, 0);
        ASSERT_EQ(json_integer_value(json_object_get(j, "t")), 2);
        ASSERT_EQ(json_integer_value(json_object_get(j, "seed")), 3);
        ASSERT_TRUE(json_is_true(json_object_get(j, "verified")));
        ASSERT_TRUE(json_array_size(rows) >= 16);
        ASSERT_EQ(json_object_size(json_array_get(rows, 0)), 6);
        ASSERT_TRUE(json_integer_value(json_object_get(j, "tuples")) > 0);
}

TEST(plan_json)
{
        int st;
        json_auto_t *j = run_json("plan matrix/mxfp4-gb10.json feature=gemm graphs=off --json", &st);
        json_t *runs = json_object_get(j, "runs"), *r1 = json_array_get(runs, 1);

        ASSERT_EQ(st, 0);
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(j, "feature"), "name")),
                     "cutlass-gemm");
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(j, "pins"), "graphs")), "off");
        ASSERT_EQ(json_array_size(runs), 11); /* baseline, feature-on, 3 activations, 2 tiles, sinks, 3 eagle3 */
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(r1, "reasons"), 0)), "feature-on");
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(r1, "flags"), 0)), "--enforce-eager");
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(r1, "config"), "kernel")), "cutlass");
        ASSERT_EQ(json_array_size(json_object_get(j, "skipped")), 0);
        ASSERT_TRUE(json_is_null(json_object_get(j, "cover")));
}
