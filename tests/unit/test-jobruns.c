/* SPDX-License-Identifier: MIT */
/*
 * A job's baseline run (matrix/analysis/jobruns.c): the one choice show's
 * summary, the decode-profile diff and the decision rules share.
 */
#include "test.h"

#include "jobruns.h"

static json_t *runs_of(const char *text)
{
        json_error_t e;
        json_t *j = json_loads(text, 0, &e);

        if (!j)
                test_fail(__FILE__, __LINE__, "%s", e.text);
        return j;
}

static int64_t id_of(json_t *run)
{
        return run ? json_integer_value(json_object_get(run, "id")) : 0;
}

TEST(baseline_present)
{
        /* The feature-off run comes first, and the baseline run also has another reason: "baseline" wins. */
        _cleanup_json_ json_t *runs = runs_of("[{\"id\": 1, \"reasons\": [\"feature-on\"]},"
                                              " {\"id\": 2, \"reasons\": [\"feature-off\"]},"
                                              " {\"id\": 3, \"reasons\": [\"prior:x\", \"baseline\"]},"
                                              " {\"id\": 4, \"reasons\": [\"baseline\"]}]");

        ASSERT_EQ(id_of(mx_jobruns_baseline(runs)), 3);
        ASSERT_TRUE(mx_jobruns_has_reason(json_array_get(runs, 2), "baseline"));
        ASSERT_FALSE(mx_jobruns_has_reason(json_array_get(runs, 2), "prior"));
}

TEST(only_feature_off)
{
        /* A prefix is not the reason: "feature-off:stack" is the merged stack's, not the baseline's. */
        _cleanup_json_ json_t *runs = runs_of("[{\"id\": 1, \"reasons\": [\"feature-on\"]},"
                                              " {\"id\": 2, \"reasons\": [\"feature-off:stack\"]},"
                                              " {\"id\": 5, \"reasons\": [\"feature-off\"]}]");

        ASSERT_EQ(id_of(mx_jobruns_baseline(runs)), 5);
}

TEST(neither)
{
        _cleanup_json_ json_t *runs = runs_of("[{\"id\": 1, \"reasons\": [\"feature-on\"]},"
                                              " {\"id\": 2}, {\"id\": 3, \"reasons\": [7, null]},"
                                              " {\"id\": 4, \"reasons\": \"baseline\"}]");
        _cleanup_json_ json_t *empty = json_array();

        ASSERT_NULL(mx_jobruns_baseline(runs));
        ASSERT_NULL(mx_jobruns_baseline(empty));
        ASSERT_NULL(mx_jobruns_baseline(NULL));
}
