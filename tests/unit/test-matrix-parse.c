/* SPDX-License-Identifier: MIT */
/*
 * Matrix files: every loader error, each checked for its exact position.
 * A case names the text the error must point at ("needle", with '|' marking
 * the pointed-at character when it is not the first); the test computes that
 * position from the text, so a wrong line or column fails it.
 */
#include "matrix-helpers.h"
#include "placeholder.h"

#include <sys/stat.h>

#define HEAD                                                                                                \
        "{\n  \"matrix\": 1,\n  \"name\": \"t\",\n  \"target\": {\"command\": [\"srv\", \"--port\", "       \
        "\"{port}\"]},\n"
#define AXES                                                                                                \
        "  \"axes\": [\n"                                                                                   \
        "    {\"name\": \"a\", \"values\": [{\"name\": \"x\"}, {\"name\": \"y\", \"aliases\": "             \
        "[\"yy\"]}]},\n"                                                                                    \
        "    {\"name\": \"b\", \"values\": [{\"name\": \"p\"}, {\"name\": \"q\"}]}\n"                       \
        "  ],\n"
#define BASE "  \"baseline\": {\"a\": \"x\", \"b\": \"p\"}"
#define TAIL "\n}\n"
#define VALID HEAD AXES BASE TAIL

/* Line and column (1-based, in characters) of byte offset off in text. */
static void position_of(const char *text, size_t off, unsigned *line, unsigned *col)
{
        *line = 1;
        *col = 1;
        for (size_t i = 0; i < off; i++) {
                if (text[i] == '\n') {
                        (*line)++;
                        *col = 1;
                } else if (((unsigned char)text[i + 1] & 0xc0) != 0x80)
                        (*col)++;
        }
}

/* Expect loading text to fail with an error at needle (see above) whose text contains msg. */
static void check_error(const char *file, int line, const char *text, const char *needle, const char *msg)
{
        _cleanup_free_ char *plain = xstrdup(needle), *why = NULL, *prefix = NULL;
        const char *bar = strchr(needle, '|'), *found;
        struct mx_matrix *m = NULL;
        size_t mark = bar ? (size_t)(bar - needle) : 0;
        unsigned l, c;

        if (bar)
                memmove(plain + mark, plain + mark + 1, strlen(plain + mark));
        found = strstr(text, plain);
        if (!found)
                test_fail(file, line, "needle '%s' not in the text", plain);
        if (strstr(found + 1, plain))
                test_fail(file, line, "needle '%s' is not unique in the text", plain);
        position_of(text, (size_t)(found - text) + mark, &l, &c);
        prefix = xasprintf("t.json:%u:%u: ", l, c);
        if (mx_matrix_load_string("t.json", text, strlen(text), &m, &why) >= 0) {
                mx_matrix_free(m);
                test_fail(file, line, "loaded, expected an error containing '%s'", msg);
        }
        if (!why || !startswith(why, prefix))
                test_fail(file, line, "error '%s' does not start with '%s'", strna(why), prefix);
        if (!strstr(why, msg))
                test_fail(file, line, "error '%s' does not contain '%s'", why, msg);
}
#define ERROR_AT(text, needle, msg) check_error(__FILE__, __LINE__, text, needle, msg)

TEST(valid_minimal)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(VALID);

        ASSERT_EQ(m->n_axes, 2);
        ASSERT_STREQ(m->profile, "vllm"); /* default */
        ASSERT_STREQ(m->command[2], "{port}");
        ASSERT_EQ(m->baseline[0], 0);
        ASSERT_EQ(m->baseline[1], 0);
        ASSERT_EQ(mx_matrix_value_index(&m->axes[0], "yy"), 1);
        ASSERT_TRUE(m->axes[0].product);
        ASSERT_EQ(m->axes[0].product_set, 3);
}

TEST(json_syntax)
{
        _cleanup_free_ char *why = NULL;
        struct mx_matrix *m = NULL;
        const char *text = "{\n  \"matrix\": 1,\n  \"name\": \"t\"\n  \"axes\": []\n}\n";

        ASSERT_ERR(mx_matrix_load_string("t.json", text, strlen(text), &m, &why), EINVAL);
        ASSERT_TRUE(startswith(why, "t.json:4:"));
        ASSERT_CONTAINS(why, "invalid JSON");
        ASSERT_NULL(m);
}

TEST(duplicate_key)
{
        _cleanup_free_ char *why = NULL;
        struct mx_matrix *m = NULL;
        const char *text = HEAD AXES "  \"baseline\": {\"a\": \"x\", \"a\": \"y\", \"b\": \"p\"}" TAIL;

        ASSERT_ERR(mx_matrix_load_string("t.json", text, strlen(text), &m, &why), EINVAL);
        ASSERT_TRUE(startswith(why, "t.json:9:"));
        ASSERT_CONTAINS(why, "duplicate object key");
}

TEST(top_level)
{
        ERROR_AT("[1]\n", "[", "a matrix file is a JSON object, got an array");
        ERROR_AT(HEAD "  \"bogus\": 1,\n" AXES BASE TAIL, "\"bogus\"",
                 "key 'bogus': unknown key 'bogus' in a matrix file (known keys: matrix, name,");
        ERROR_AT("{\n  \"name\": \"t\"\n}\n", "{", "missing required key 'matrix'");
        ERROR_AT("{\n  \"matrix\": \"1\"\n}\n", "\"matrix\"",
                 "key 'matrix': expected an integer, got a string");
        ERROR_AT("{\n  \"matrix\": 2\n}\n", "\"matrix\"",
                 "key 'matrix': unsupported format version 2 (this mxmatrix reads version 1)");
        ERROR_AT("{\n  \"matrix\": 1,\n  \"name\": \"bad name\"\n}\n", "\"name\"",
                 "key 'name': invalid name 'bad name'");
        ERROR_AT("{\n  \"matrix\": 1,\n  \"name\": \"t\",\n  \"description\": 5\n}\n", "\"description\"",
                 "key 'description': expected a string, got an integer");
        ERROR_AT("{\n  \"matrix\": 1,\n  \"name\": \"t\",\n  \"target\": {\"command\": [\"s\"]},\n  "
                 "\"profiles\": []\n}\n",
                 "\"profiles\"", "key 'profiles': expected an object, got an array");
}

TEST(target)
{
        ERROR_AT("{\n  \"matrix\": 1,\n  \"name\": \"t\"\n}\n", "{", "missing required key 'target'");
        ERROR_AT("{\"matrix\": 1, \"name\": \"t\",\n \"target\": {\"profile\": \"vllm\"}}", "{\"profile",
                 "key 'target': missing required key 'command'");
        ERROR_AT("{\"matrix\": 1, \"name\": \"t\",\n \"target\": {\"command\": []}}", "\"command\"",
                 "key 'target.command': the command must have at least one word");
        ERROR_AT("{\"matrix\": 1, \"name\": \"t\",\n \"target\": {\"command\": [\"srv\", 7]}}", "7",
                 "key 'target.command[1]': expected a string, got an integer");
        ERROR_AT("{\"matrix\": 1, \"name\": \"t\",\n \"target\": {\"command\": [\"srv\", \"--x={nope}\"]}}",
                 "\"--x",
                 "key 'target.command[1]': unknown placeholder '{nope}' (known: {model}, "
                 "{served_model_name}");
        ERROR_AT("{\"matrix\": 1, \"name\": \"t\",\n \"target\": {\"command\": [\"s\"], \"env\": {\"1X\": "
                 "\"v\"}}}",
                 "\"1X\"", "key 'target.env.1X': invalid environment variable name '1X'");
        ERROR_AT("{\"matrix\": 1, \"name\": \"t\",\n \"target\": {\"command\": [\"s\"], \"env\": {\"X\": "
                 "1}}}",
                 "\"X\"", "key 'target.env.X': expected a string, got an integer (write numbers as strings");
        ERROR_AT("{\"matrix\": 1, \"name\": \"t\",\n \"target\": {\"command\": [\"s\"], \"profile\": \"a "
                 "b\"}}",
                 "\"profile\"", "key 'target.profile': invalid name 'a b'");
        ERROR_AT(
                "{\"matrix\": 1, \"name\": \"t\",\n \"target\": {\"command\": [\"s\"], \"model\": [\"m\"]}}",
                "\"model\"", "key 'target.model': expected a string, got an array");
}

TEST(target_keeps_runner_keys)
{
        /* The runner's keys of target are checked by the profile (profile.h) and normalised. */
        const char *text = "{\"matrix\": 1, \"name\": \"t\",\n"
                           " \"target\": {\"command\": [\"s\"], \"ready\": {\"timeout\": \"5m\"}},\n"
                           " \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\"}]}],\n"
                           " \"baseline\": {\"a\": \"x\"}}\n";
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(text);
        _cleanup_free_ char *why = NULL;
        json_t *ready = json_object_get(m->profile_resolved, "ready");

        ASSERT_EQ(json_integer_value(json_object_get(ready, "timeout_ms")), 300000);
        ASSERT_STREQ(json_string_value(json_object_get(ready, "path")), "/health");
        ASSERT_ERR(mx_matrix_error_at(m, m->target, "ready", &why, "bad"), EINVAL);
        ASSERT_STREQ(why, "t.json:2:31: key 'target.ready': bad");
        ERROR_AT("{\"matrix\": 1, \"name\": \"t\",\n"
                 " \"target\": {\"command\": [\"s\"], \"ready_timeout\": \"5m\"},\n"
                 " \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\"}]}],\n"
                 " \"baseline\": {\"a\": \"x\"}}\n",
                 "\"ready_timeout\"", "key 'target.ready_timeout': unknown key in target");
}

/* A one-axis file whose target (after its command) and profiles are given. */
#define PROFILE_FILE(target_rest, profiles)                                                                 \
        "{\"matrix\": 1, \"name\": \"t\",\n"                                                                \
        " \"target\": {\"command\": [\"s\"]" target_rest "},\n" profiles                                    \
        " \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\"}]}],\n"                                \
        " \"baseline\": {\"a\": \"x\"}}\n"

TEST(profile_keys_belong_to_their_section)
{
        ERROR_AT(PROFILE_FILE(", \"ready\": {\"prompt\": \"hi\"}", ""), "\"prompt\"",
                 "key 'target.ready.prompt': unknown key in 'ready' (known: path, status, timeout, "
                 "interval)");
        ERROR_AT(PROFILE_FILE(", \"stop\": {\"path\": \"/x\"}", ""), "\"path\"",
                 "key 'target.stop.path': unknown key in 'stop' (known: signals, command, timeout)");
        ERROR_AT(PROFILE_FILE(", \"profiler\": {\"report\": \"k.csv\", \"max_tokens\": 3}", ""),
                 "\"max_tokens\"", "key 'target.profiler.max_tokens': unknown key in 'profiler'");
        ERROR_AT(PROFILE_FILE(", \"health\": {\"timeout\": \"5s\"}", ""), "\"timeout\"",
                 "key 'target.health.timeout': unknown key in 'health' (known: path, dead_status)");
}

TEST(profile_report_placeholders_and_ready)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *cmd =
                load_text(PROFILE_FILE(", \"profile\": \"command\", \"ready\": null", ""));

        ASSERT_TRUE(json_is_null(json_object_get(cmd->profile_resolved, "ready")));
        ERROR_AT(PROFILE_FILE(", \"profiler\": {\"report\": \"{rundir}/k.csv\"}", ""), "\"report\"",
                 "key 'target.profiler.report': unknown placeholder '{rundir}'");
        ERROR_AT(PROFILE_FILE(", \"ready\": null", ""), "\"ready\"",
                 "key 'target.ready': a server profile needs 'ready' (only the command profile has none)");
}

TEST(every_profile_is_checked)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(
                PROFILE_FILE(", \"profile\": \"mine\"",
                             " \"profiles\": {\"mine\": {\"base\": \"llama-server\", \"port\": 9000, "
                             "\"ready\": {\"timeout\": 1200}}},\n"));
        json_t *p = m->profile_resolved,
               *dead = json_object_get(json_object_get(p, "health"), "dead_status");

        ASSERT_STREQ(json_string_value(json_object_get(p, "base")), "llama-server");
        ASSERT_EQ(json_integer_value(json_object_get(p, "port")), 9000);
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(p, "ready"), "timeout_ms")), 1200000);
        ASSERT_EQ(json_integer_value(json_array_get(dead, 0)), 500);
        /* An unused profile is checked too, and one without base is pointed at. */
        ERROR_AT(PROFILE_FILE("", " \"profiles\": {\"spare\": {\"base\": \"vllm\", \"bogus\": 1}},\n"),
                 "\"bogus\"",
                 "key 'profiles.spare.bogus': unknown key in a profile (known: base, identifier,");
        ERROR_AT(PROFILE_FILE("", " \"profiles\": {\"spare\": {\"port\": 1}},\n"), "\"spare\"",
                 "key 'profiles.spare': a profile needs 'base'");
}

TEST(axes)
{
        ERROR_AT(HEAD "  \"axes\": [],\n" BASE TAIL, "\"axes\"",
                 "key 'axes': a matrix needs 1 to 1024 axes, got 0");
        ERROR_AT(HEAD "  \"axes\": [7],\n" BASE TAIL, "7",
                 "key 'axes[0]': expected an object, got an integer");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"a\", \"valus\": []}],\n" BASE TAIL, "\"valus\"",
                 "key 'axes[0].valus': unknown key 'valus' in an axis (known keys: name, description, "
                 "product, values)");
        ERROR_AT(HEAD "  \"axes\": [{\"values\": [{\"name\": \"x\"}]}],\n" BASE TAIL, "{\"values\"",
                 "key 'axes[0]': missing required key 'name'");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"-a\", \"values\": [{\"name\": \"x\"}]}],\n" BASE TAIL,
                 "\"name\": \"-a\"", "key 'axes[0].name': invalid name '-a'");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"a\", \"values\": []}],\n" BASE TAIL, "\"values\"",
                 "key 'axes[0].values': an axis needs 1 to 64 values, got 0");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\"}]},\n"
                      "    {\"name\": \"a\", \"values\": [{\"name\": \"y\"}]}],\n" BASE TAIL,
                 "{|\"name\": \"a\", \"values\": [{\"name\": \"y\"}]}",
                 "key 'axes[1].name': duplicate axis name 'a' (first at t.json:5:12)");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"feature\", \"values\": [{\"name\": \"x\"}]}],\n" BASE TAIL,
                 "\"name\": \"feature\"", "key 'axes[0].name': 'feature' is reserved");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"a\", \"product\": \"no\", \"values\": [{\"name\": "
                      "\"x\"}]}],\n" BASE TAIL,
                 "\"product\"", "key 'axes[0].product': expected a boolean, got a string");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"product\": "
                      "false}]}],\n" BASE TAIL,
                 "\"values\"", "key 'axes[0].values': every value of axis 'a' has \"product\": false");
}

TEST(values)
{
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [\"x\"]}],\n" BASE TAIL, "[|\"x\"]",
                 "key 'axes[0].values[0]': expected an object, got a string");
        ERROR_AT(HEAD
                 "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"envv\": {}}]}],\n" BASE
                         TAIL,
                 "\"envv\"", "key 'axes[0].values[0].envv': unknown key 'envv' in an axis value");
        ERROR_AT(
                HEAD
                "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\"}, {\"name\": \"x\"}]}],\n" BASE
                        TAIL,
                "{\"name\": \"x\"}, {|\"name\": \"x\"}",
                "key 'axes[0].values[1].name': duplicate value name 'x' in axis 'a' (first at t.json:5:37)");
        ERROR_AT(HEAD
                 "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"aliases\": [\"z\"]},\n"
                 "    {\"name\": \"y\", \"aliases\": [\"z\"]}]}],\n" BASE TAIL,
                 "[|\"z\"]}]",
                 "key 'axes[0].values[1].aliases[0]': alias 'z' is already a name or alias of value 'x'");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\"},\n"
                      "    {\"name\": \"y\", \"aliases\": [\"x\"]}]}],\n" BASE TAIL,
                 "[|\"x\"]",
                 "key 'axes[0].values[1].aliases[0]': alias 'x' is already a name or alias of value 'x'");
        ERROR_AT(HEAD
                 "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"aliases\": [\"y\"]},\n"
                 "    {\"name\": \"y\"}]}],\n" BASE TAIL,
                 "{|\"name\": \"y\"}",
                 "key 'axes[0].values[1].name': value name 'y' is already an alias of value 'x'");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"aliases\": [\"w\", "
                      "\"w\"]}]}],\n" BASE TAIL,
                 "\"w\", |\"w\"", "key 'axes[0].values[0].aliases[1]': duplicate alias 'w'");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"aliases\": "
                      "[\"x\"]}]}],\n" BASE TAIL,
                 "[|\"x\"]", "key 'axes[0].values[0].aliases[0]': alias 'x' repeats the value's own name");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"aliases\": [\"a "
                      "b\"]}]}],\n" BASE TAIL,
                 "\"a b\"", "key 'axes[0].values[0].aliases[0]': invalid name 'a b'");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"aliases\": "
                      "\"z\"}]}],\n" BASE TAIL,
                 "\"aliases\"", "key 'axes[0].values[0].aliases': expected an array, got a string");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"argv\": [\"--f\", "
                      "true]}]}],\n" BASE TAIL,
                 "true", "key 'axes[0].values[0].argv[1]': expected a string, got a boolean");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"argv\": "
                      "[\"{Port}\"]}]}],\n" BASE TAIL,
                 "\"{Port}\"", "key 'axes[0].values[0].argv[0]': unknown placeholder '{Port}'");
        ERROR_AT(HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"env\": {\"V\": "
                      "\"{dir}\"}}]}],\n" BASE TAIL,
                 "\"V\"", "key 'axes[0].values[0].env.V': unknown placeholder '{dir}'");
}

TEST(env_owners)
{
        ERROR_AT(
                HEAD
                "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"env\": {\"V\": \"1\"}}]},\n"
                "    {\"name\": \"b\", \"values\": [{\"name\": \"p\", \"env\": {\"W\": \"1\", \"V\": "
                "\"2\"}}]}],\n" BASE TAIL,
                "\"V\": \"2\"", "key 'axes[1].values[0].env.V': variable 'V' is also set by axis 'a'");
        ERROR_AT(
                "{\"matrix\": 1, \"name\": \"t\",\n \"target\": {\"command\": [\"s\"], \"env\": {\"V\": "
                "\"0\"}},\n"
                " \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"env\": {\"V\": \"1\"}}]}],\n"
                " \"baseline\": {\"a\": \"x\"}}\n",
                "\"V\": \"1\"", "key 'axes[0].values[0].env.V': variable 'V' is also set by target.env");
}

TEST(expectations)
{
#define EXP(x)                                                                                              \
        HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"expect\": " x                 \
             "}]}],\n" BASE TAIL
        ERROR_AT(EXP("{\"logs\": {}}"), "\"logs\"",
                 "key 'axes[0].values[0].expect.logs': unknown key 'logs' in expect");
        ERROR_AT(EXP("{\"log\": {\"must\": []}}"), "\"must\"",
                 "key 'axes[0].values[0].expect.log.must': unknown key 'must' in expectations");
        ERROR_AT(EXP("{\"log\": {\"must_see\": [3]}}"), "3",
                 "key 'axes[0].values[0].expect.log.must_see[0]': expected a pattern string or an array of "
                 "alternative patterns, got an integer");
        ERROR_AT(EXP("{\"log\": {\"must_not_see\": [[\"a\"]]}}"), "[\"a\"]",
                 "key 'axes[0].values[0].expect.log.must_not_see[0]': expected a pattern string, got an "
                 "array");
        ERROR_AT(EXP("{\"kernels\": {\"must_see\": [[]]}}"), "[]]",
                 "key 'axes[0].values[0].expect.kernels.must_see[0]': a list of alternatives needs 1 to 64 "
                 "patterns");
        ERROR_AT(EXP("{\"kernels\": {\"must_see\": [[\"ok\", 1]]}}"), "1]",
                 "key 'axes[0].values[0].expect.kernels.must_see[0][1]': expected a pattern string, got an "
                 "integer");
        ERROR_AT(EXP("{\"kernels\": {\"must_see\": [\"\"]}}"), "\"\"",
                 "key 'axes[0].values[0].expect.kernels.must_see[0]': a pattern must be 1 to 4096 bytes");
        ERROR_AT(EXP("{\"kernels\": {\"must_see\": [[\"ok\", \"re:(\"]]}}"), "\"re:(\"",
                 "key 'axes[0].values[0].expect.kernels.must_see[0][1]': bad pattern");
#undef EXP
}

TEST(expectations_parsed)
{
        const char *text = HEAD
                "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"expect\": {\"log\": "
                "{\"must_see\": "
                "[\"one\", [\"two\", \"three\"]], \"must_not_see\": [\"bad\"]}, \"kernels\": {\"must_see\": "
                "[\"k_*\"]}}}]}],\n"
                "  \"baseline\": {\"a\": \"x\"}" TAIL;
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(text);
        const struct mx_kgate_expect *e = &m->axes[0].values[0].expect;

        ASSERT_EQ(e->log.n_must_see, 2);
        ASSERT_STREQ(e->log.must_see[0].patterns[0], "one");
        ASSERT_NULL(e->log.must_see[0].patterns[1]);
        ASSERT_STREQ(e->log.must_see[1].patterns[1], "three");
        ASSERT_STREQ(e->log.must_not_see[0], "bad");
        ASSERT_EQ(e->kernels.n_must_see, 1);
        ASSERT_NULL(e->kernels.must_not_see);
}

TEST(baseline)
{
        ERROR_AT(HEAD AXES "  \"baseline\": []" TAIL, "\"baseline\"",
                 "key 'baseline': expected an object, got an array");
        ERROR_AT(HEAD AXES "  \"baseline\": {\"a\": \"x\", \"c\": \"p\"}" TAIL, "\"c\"",
                 "key 'baseline.c': unknown axis 'c' (axes: a, b)");
        ERROR_AT(HEAD AXES "  \"baseline\": {\"a\": \"x\", \"b\": \"r\"}" TAIL, "\"b\": \"r\"",
                 "key 'baseline.b': axis 'b' has no value 'r' (values: p, q)");
        ERROR_AT(HEAD AXES "  \"baseline\": {\"a\": \"z\", \"b\": \"p\"}" TAIL, "\"a\": \"z\"",
                 "axis 'a' has no value 'z' (values: x, y (alias yy))");
        ERROR_AT(HEAD AXES "  \"baseline\": {\"a\": [\"x\"], \"b\": \"p\"}" TAIL, "\"a\": [",
                 "key 'baseline.a': expected one value name, got an array");
        ERROR_AT(HEAD AXES "  \"baseline\": {\"a\": 1, \"b\": \"p\"}" TAIL, "\"a\": 1",
                 "key 'baseline.a': expected a value name of axis 'a', got an integer");
        ERROR_AT(HEAD AXES "  \"baseline\": {\"a\": \"x\"}" TAIL, "\"baseline\"",
                 "key 'baseline': the baseline sets no value for axis 'b'");
}

#define FEAT(x) HEAD AXES BASE ",\n  \"features\": [" x "]" TAIL
#define F1                                                                                                  \
        "\"name\": \"f\", \"priority\": 1, \"set\": {\"a\": \"y\"}, \"hypothesis\": \"h\", \"status\": "    \
        "\"in-progress\""
#define C1 "\"criteria\": [{\"metric\": \"tg32_tps\", \"min_gain_pct\": 10}]"

TEST(features)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(FEAT("{" F1 ", " C1 "}"));

        ASSERT_EQ(m->n_features, 1);
        ASSERT_EQ(m->features[0].set[0], 1);
        ASSERT_EQ(m->features[0].set[1], -1);
        ASSERT_EQ(m->features[0].status, MX_FEATURE_IN_PROGRESS);
        ASSERT_EQ(m->features[0].criteria[0].op, MX_CRITERION_MIN_GAIN_PCT);

        ERROR_AT(FEAT("3"), "[|3", "key 'features[0]': expected an object, got an integer");
        ERROR_AT(FEAT("{" F1 ", " C1 ", \"owner\": \"me\"}"), "\"owner\"",
                 "key 'features[0].owner': unknown key 'owner' in a feature");
        ERROR_AT(FEAT("{" F1 ", " C1 "}, {" F1 ", " C1 "}"), "}]}, {|\"name\": \"f\"",
                 "key 'features[1].name': duplicate feature name 'f' (first at t.json:10:16)");
        ERROR_AT(FEAT("{\"name\": \"f\", \"set\": {}, \"hypothesis\": \"h\", \"status\": \"blocked\", " C1
                      "}"),
                 "{\"name\": \"f\"", "key 'features[0]': missing required key 'priority'");
        ERROR_AT(FEAT("{\"name\": \"f\", \"priority\": 0, \"set\": {}, \"hypothesis\": \"h\", \"status\": "
                      "\"blocked\", " C1 "}"),
                 "\"priority\"", "key 'features[0].priority': priority must be 1 (highest) to 1000, got 0");
        ERROR_AT(FEAT("{\"name\": \"f\", \"priority\": 1.5, \"set\": {}, \"hypothesis\": \"h\", \"status\": "
                      "\"blocked\", " C1 "}"),
                 "\"priority\"", "key 'features[0].priority': expected an integer, got a number");
        ERROR_AT(FEAT("{\"name\": \"f\", \"priority\": 1, \"set\": {\"c\": \"x\"}, \"hypothesis\": \"h\", "
                      "\"status\": \"blocked\", " C1 "}"),
                 "\"c\"", "key 'features[0].set.c': unknown axis 'c'");
        ERROR_AT(FEAT("{\"name\": \"f\", \"priority\": 1, \"set\": {}, \"status\": \"blocked\", " C1 "}"),
                 "{\"name\": \"f\"", "key 'features[0]': missing required key 'hypothesis'");
        ERROR_AT(FEAT("{\"name\": \"f\", \"priority\": 1, \"set\": {}, \"hypothesis\": \"h\", \"status\": "
                      "\"done\", " C1 "}"),
                 "\"status\"",
                 "key 'features[0].status': unknown status 'done' (not-started, in-progress, completed or "
                 "merged, "
                 "blocked)");
        ERROR_AT(FEAT("{" F1 ", \"criteria\": []}"), "\"criteria\"",
                 "key 'features[0].criteria': a feature needs 1 to 32 success criteria");
        ERROR_AT(FEAT("{" F1 ", " C1 ", \"gate\": 4}"), "\"gate\"",
                 "key 'features[0].gate': expected a string (for people) or an array of 1 to 32 conditions, "
                 "got an integer");
}

TEST(criteria)
{
        ERROR_AT(FEAT("{" F1 ", \"criteria\": [{\"metric\": \"tg64\", \"min\": 1}]}"), "\"metric\"",
                 "key 'features[0].criteria[0].metric': unknown metric 'tg64' (metrics: pp2048_tps, "
                 "tg32_tps");
        ERROR_AT(FEAT("{" F1 ", \"criteria\": [{\"metric\": \"tg32_tps\", \"min\": 1, \"max\": 2}]}"),
                 "\"min\"", "key 'features[0].criteria[0].min': a criterion has exactly one comparison");
        ERROR_AT(FEAT("{" F1 ", \"criteria\": [{\"metric\": \"tg32_tps\"}]}"), "{\"metric\"",
                 "key 'features[0].criteria[0]': a criterion needs one of min_gain_pct, max_regression_pct");
        ERROR_AT(FEAT("{" F1 ", \"criteria\": [{\"metric\": \"tg32_tps\", \"min_gain_pct\": -5}]}"),
                 "\"min_gain_pct\"",
                 "key 'features[0].criteria[0].min_gain_pct': expected a non-negative number");
        ERROR_AT(FEAT("{" F1 ", \"criteria\": [{\"metric\": \"tg32_tps\", \"max\": \"3\"}]}"), "\"max\"",
                 "key 'features[0].criteria[0].max': expected a number, got a string");
        ERROR_AT(FEAT("{" F1 ", \"criteria\": [{\"metric\": \"tg32_tps\", \"max\": 3, \"unit\": \"x\"}]}"),
                 "\"unit\"", "key 'features[0].criteria[0].unit': unknown key 'unit' in a criterion");
}

TEST(dependencies)
{
#define FD(n, deps)                                                                                         \
        "{\"name\": \"" n                                                                                   \
        "\", \"priority\": 1, \"set\": {}, \"hypothesis\": \"h\", \"status\": \"blocked\", " C1             \
        ", \"depends_on\": " deps "}"
        _cleanup_(mx_matrix_freep) struct mx_matrix *m =
                load_text(FEAT(FD("f1", "[]") ", " FD("f2", "[\"f1\"]")));

        ASSERT_EQ(m->features[1].n_depends_on, 1);
        ASSERT_EQ(m->features[1].depends_on[0], 0);
        ERROR_AT(FEAT(FD("f1", "[\"nope\"]")), "\"nope\"",
                 "key 'features[0].depends_on[0]': no feature is named 'nope'");
        ERROR_AT(FEAT(FD("f1", "[\"f1\"]")), "[|\"f1\"]",
                 "key 'features[0].depends_on[0]': a feature cannot depend on itself");
        ERROR_AT(FEAT(FD("f1", "[]") ", " FD("f2", "[\"f1\", \"f1\"]")), "\"f1\", |\"f1\"",
                 "key 'features[1].depends_on[1]': duplicate dependency 'f1'");
        ERROR_AT(FEAT(FD("f1", "[\"f3\"]") ", " FD("f2", "[\"f1\"]") ", " FD("f3", "[\"f2\"]")),
                 "\"depends_on\": [\"f1\"]",
                 "key 'features[1].depends_on': dependency cycle: f1 -> f3 -> f2 -> f1");
        ERROR_AT(FEAT(FD("f1", "\"f2\"")), "\"depends_on\"",
                 "key 'features[0].depends_on': expected an array, got a string");
#undef FD
}

/* Targets written as seed 000's Target column, declared baselines, hard constraints (criteria-load.c). */
TEST(criteria_targets)
{
#define CT(metric, target)                                                                                  \
        FEAT("{" F1 ", \"criteria\": [{\"metric\": \"" metric "\", \"target\": \"" target "\"}]}")
        static const struct {
                const char *metric, *target;
                enum mx_criterion_op op;
                double value;
                const char *shown;
        } ok[] = {
                {"tg32_tps", ">= 52", MX_CRITERION_MIN, 52, ">= 52"},
                {"ttft_p50_ms", "<=500", MX_CRITERION_MAX, 500, "<= 500"},
                {"tg32_tps", ">= +10 %", MX_CRITERION_MIN_GAIN_PCT, 10, ">= +10 %"},
                {"tg32_tps", ">= -3%", MX_CRITERION_MAX_REGRESSION_PCT, 3, ">= -3 %"},
                {"ttft_p50_ms", "<= +3 %", MX_CRITERION_MAX_REGRESSION_PCT, 3, "<= +3 %"},
                {"ttft_p50_ms", "<= -20 %", MX_CRITERION_MIN_GAIN_PCT, 20, "<= -20 %"},
                {"memory_gb", "<= +2", MX_CRITERION_MAX_INCREASE, 2, "<= +2"},
                {"pp2048_tps", ">= -100", MX_CRITERION_MAX_DECREASE, 100, ">= -100"},
        };

        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                _cleanup_free_ char *text = xasprintf(
                        HEAD AXES BASE ",\n  \"features\": [{" F1 ", \"criteria\": [{\"metric\": \"%s\", "
                                       "\"target\": \"%s\", \"baseline\": 29}]}]" TAIL,
                        ok[i].metric, ok[i].target);
                _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(text);
                _cleanup_free_ char *shown = mx_criterion_target(&m->features[0].criteria[0]);

                ASSERT_EQ(m->features[0].criteria[0].op, ok[i].op);
                ASSERT_TRUE(m->features[0].criteria[0].value == ok[i].value);
                ASSERT_TRUE(m->features[0].criteria[0].has_baseline);
                ASSERT_TRUE(m->features[0].criteria[0].baseline == 29);
                ASSERT_STREQ(shown, ok[i].shown);
        }
        ERROR_AT(CT("tg32_tps", ">= 10 %"), "\"target\": \"",
                 "key 'features[0].criteria[0].target': '>= 10 %': a percentage is a change against the "
                 "baseline: write it with its sign");
        ERROR_AT(CT("tg32_tps", "<= +10 %"), "\"target\": \"",
                 "'<= +10 %': tg32_tps is better higher, so a relative target reads >= + X %");
        ERROR_AT(CT("tg32_tps", "~ 52"), "\"target\": \"", "'~ 52' is not a target");
        ERROR_AT(CT("tg32_tps", ">= 52 tok/s"), "\"target\": \"", "'>= 52 tok/s' is not a target");
        ERROR_AT(CT("memory_gb", "<= -2"), "\"target\": \"", "a change in units reads <= +X");
        ERROR_AT(FEAT("{" F1
                      ", \"criteria\": [{\"metric\": \"tg32_tps\", \"min\": 1, \"target\": \">= 2\"}]}"),
                 "\"target\": \"",
                 "key 'features[0].criteria[0].target': a criterion has exactly one comparison");
        ERROR_AT(FEAT("{" F1
                      ", \"criteria\": [{\"metric\": \"tg32_tps\", \"min\": 1, \"baseline\": \"29\"}]}"),
                 "\"baseline\": \"29\"",
                 "key 'features[0].criteria[0].baseline': expected a number, got a string");

        /* Seed 000's hard constraints by default; the matrix's replace them, a feature's replace the
         * matrix's. */
        {
                _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(FEAT("{" F1 ", " C1 "}"));
                const struct mx_matrix_criterion *h;
                size_t n;

                h = mx_feature_hard(m, &m->features[0], &n);
                ASSERT_EQ(n, 3);
                ASSERT_STREQ(h[0].metric, "ttft_p50_ms");
                ASSERT_EQ(h[0].op, MX_CRITERION_MAX_REGRESSION_PCT);
                ASSERT_STREQ(h[1].metric, "memory_gb");
                ASSERT_EQ(h[1].op, MX_CRITERION_MAX_INCREASE);
                ASSERT_STREQ(h[2].metric, "crashes");
                ASSERT_EQ(h[2].op, MX_CRITERION_MAX);
        }
        {
                _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(
                        HEAD AXES BASE
                        ",\n  \"hard_constraints\": [{\"metric\": \"pp2048_tps\", \"min\": 4500}],\n"
                        "  \"features\": [{" F1 ", " C1 "}, {\"name\": \"g\", \"priority\": 2, "
                        "\"set\": {}, \"hypothesis\": \"h\", \"status\": \"blocked\", " C1
                        ", \"hard_constraints\": []}]" TAIL);
                size_t n;

                ASSERT_STREQ(mx_feature_hard(m, &m->features[0], &n)[0].metric, "pp2048_tps");
                ASSERT_EQ(n, 1);
                mx_feature_hard(m, &m->features[1], &n);
                ASSERT_EQ(n, 0);
        }
        ERROR_AT(FEAT("{" F1 ", " C1 ", \"hard_constraints\": [{\"metric\": \"crash\", \"max\": 0}]}"),
                 "\"metric\": \"crash\"",
                 "key 'features[0].hard_constraints[0].metric': unknown metric 'crash'");
        ERROR_AT(HEAD AXES BASE ",\n  \"hard_constraints\": {}" TAIL, "\"hard_constraints\"",
                 "key 'hard_constraints': expected an array, got an object");
#undef CT
}

/* Gates between phases: each kind, of and its default, and the mistakes (criteria-load.c). */
TEST(gates_syntax)
{
#define FG(n, prio, deps, gate)                                                                             \
        "{\"name\": \"" n "\", \"priority\": " prio ", \"set\": {}, \"hypothesis\": \"h\", \"status\": "    \
        "\"not-started\", " C1 ", \"depends_on\": " deps ", \"gate\": " gate "}"
#define TWO(gate) FEAT(FG("p1", "1", "[]", "\"free text\"") ", " FG("p2", "2", "[\"p1\"]", gate))
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(FEAT(
                FG("p1", "1", "[]",
                   "\"P1 -> P2: for people\"") ", " FG("p2", "2", "[\"p1\"]",
                                                       "[{\"kernels_verified\": true, \"note\": \"n\"}, "
                                                       "{\"metric\": \"ttft_p50_ms\", \"op\": \"<\", "
                                                       "\"value\": 1000}, {\"level\": \"L2\", \"of\": "
                                                       "\"P1\"}]") ", " FG("p3", "3", "[\"p2\"]",
                                                                           "[{\"speedup_vs\": \"p1\", "
                                                                           "\"metric\": \"tg32_tps\", "
                                                                           "\"min_percent\": 30}, {\"of\": "
                                                                           "[\"p1\", "
                                                                           "\"P2\"], \"metric\": "
                                                                           "\"tg32_tps\", \"op\": \">=\", "
                                                                           "\"value\": 40}]")));
        const struct mx_matrix_feature *f2 = &m->features[1], *f3 = &m->features[2];

        ASSERT_STREQ(m->features[0].gate, "P1 -> P2: for people");
        ASSERT_EQ(m->features[0].n_gates, 0);
        ASSERT_EQ(f2->n_gates, 3);
        ASSERT_EQ(f2->gates[0].kind, MX_GATE_KERNELS_VERIFIED);
        ASSERT_EQ(f2->gates[0].n_of, 1); /* depends_on by default */
        ASSERT_EQ(f2->gates[0].of[0], 0);
        ASSERT_STREQ(f2->gates[0].note, "n");
        ASSERT_EQ(f2->gates[1].kind, MX_GATE_METRIC);
        ASSERT_EQ(f2->gates[1].op, MX_GATE_OP_LT);
        ASSERT_TRUE(f2->gates[1].value == 1000);
        ASSERT_EQ(f2->gates[2].kind, MX_GATE_LEVEL);
        ASSERT_STREQ(f2->gates[2].level, "L2");
        ASSERT_EQ(f2->gates[2].of[0], 0); /* by id */
        ASSERT_EQ(f3->gates[0].kind, MX_GATE_SPEEDUP);
        ASSERT_EQ(f3->gates[0].vs, 0);
        ASSERT_EQ(f3->gates[0].of[0], 1);
        ASSERT_TRUE(f3->gates[0].value == 30);
        ASSERT_EQ(f3->gates[1].n_of, 2);
        ASSERT_EQ(f3->gates[1].of[1], 1);
        {
                _cleanup_free_ char *d = mx_gate_describe(m, &f3->gates[0]);

                ASSERT_STREQ(d, "tg32_tps >= +30 % vs P1 (p1)");
        }

        ERROR_AT(
                FEAT(FG("p1", "1", "[]", "[{\"level\": \"L2\"}]")), "{\"level\"",
                "key 'features[0].gate[0]': a gate judges the runs of the features named by 'of', or of the "
                "feature's depends_on; 'p1' has neither");
        ERROR_AT(TWO("[{\"level\": \"L9\"}]"), "\"level\": \"L9\"",
                 "key 'features[1].gate[0].level': unknown level 'L9'");
        ERROR_AT(TWO("[{\"metric\": \"tg32_tps\", \"op\": \"=>\", \"value\": 40}]"), "\"op\": \"=>\"",
                 "key 'features[1].gate[0].op': unknown op '=>' (<, <=, >, >=)");
        ERROR_AT(TWO("[{\"metric\": \"tg32_tps\", \"op\": \">=\"}]"), "{\"metric\": \"tg32_tps\", \"op\"",
                 "key 'features[1].gate[0]': missing required key 'value'");
        ERROR_AT(TWO("[{\"metric\": \"tg32_tps\", \"op\": \">=\", \"value\": 40, \"level\": \"L2\"}]"),
                 "\"metric\": \"tg32_tps\", \"op\": \">=\", \"value\": 40, \"level\"",
                 "key 'features[1].gate[0].metric': 'metric' does not belong in a level gate");
        ERROR_AT(TWO("[{\"level\": \"L2\", \"of\": \"p9\"}]"), "\"of\": \"p9\"",
                 "key 'features[1].gate[0].of': no feature is named 'p9'");
        ERROR_AT(TWO("[{\"level\": \"L2\", \"of\": [\"p1\", \"p2\"]}]"), "\"p1\", |\"p2\"",
                 "key 'features[1].gate[0].of[1]': a gate holds its feature back until other features' runs "
                 "pass it");
        ERROR_AT(TWO("[{\"speedup_vs\": \"p1\", \"metric\": \"tg32_tps\", \"min_percent\": 30}]"),
                 "\"speedup_vs\": \"p1\", \"metric",
                 "key 'features[1].gate[0].speedup_vs': a feature's speedup is measured against another "
                 "feature");
        ERROR_AT(TWO("[{\"kernels_verified\": false}]"), "{\"kernels_verified\"",
                 "key 'features[1].gate[0]': kernels_verified takes true");
        ERROR_AT(TWO("[{\"of\": \"p1\"}]"), "{\"of\"", "key 'features[1].gate[0]': a gate needs one of");
        ERROR_AT(TWO("[{\"level\": \"L2\", \"when\": 1}]"), "\"when\"",
                 "key 'features[1].gate[0].when': unknown key 'when' in a gate");
        ERROR_AT(TWO("[]"), "\"gate\": []",
                 "key 'features[1].gate': expected a string (for people) or an array");
#undef TWO
#undef FG
}

#define CONS(x) HEAD AXES BASE ",\n  \"constraints\": {" x "}" TAIL

TEST(constraints)
{
        ERROR_AT(CONS("\"excludes\": []"), "\"excludes\"",
                 "key 'constraints.excludes': unknown key 'excludes' in constraints (known keys: exclude, "
                 "include, rules, "
                 "known_incompatible)");
        ERROR_AT(CONS("\"exclude\": {}"), "\"exclude\"",
                 "key 'constraints.exclude': expected an array, got an object");
        ERROR_AT(CONS("\"exclude\": [\"a\"]"), "\"a\"]",
                 "key 'constraints.exclude[0]': expected an object, got a string");
        ERROR_AT(CONS("\"exclude\": [{}]"), "{}]",
                 "key 'constraints.exclude[0]': an empty condition would match every configuration");
        ERROR_AT(CONS("\"exclude\": [{\"c\": \"x\"}]"), "\"c\"",
                 "key 'constraints.exclude[0].c': unknown axis 'c'");
        ERROR_AT(CONS("\"exclude\": [{\"a\": \"w\"}]"), "[{|\"a\"",
                 "key 'constraints.exclude[0].a': axis 'a' has no value 'w'");
        ERROR_AT(CONS("\"exclude\": [{\"a\": [\"x\", \"w\"]}]"), "\"w\"",
                 "key 'constraints.exclude[0].a[1]': axis 'a' has no value 'w'");
        ERROR_AT(CONS("\"exclude\": [{\"a\": []}]"), "[{|\"a\"",
                 "key 'constraints.exclude[0].a': an empty list of values matches nothing");
        ERROR_AT(CONS("\"exclude\": [{\"a\": {\"not\": \"x\"}}]"), "[{|\"a\"",
                 "key 'constraints.exclude[0].a': expected a value name of axis 'a', got an object");
        ERROR_AT(CONS("\"include\": [{}]"), "{}]",
                 "key 'constraints.include[0]': an empty include entry adds nothing");
        ERROR_AT(CONS("\"include\": [{\"a\": [\"x\", \"y\"]}]"), "[{|\"a\"",
                 "key 'constraints.include[0].a': expected one value name, got an array");
        ERROR_AT(CONS("\"rules\": [{\"if\": {\"a\": \"x\"}, \"reason\": \"r\"}]"), "{\"if\"",
                 "key 'constraints.rules[0]': missing required key 'then'");
        ERROR_AT(CONS("\"rules\": [{\"if\": {\"a\": \"x\"}, \"then\": {}, \"reason\": \"r\"}]"), "{}, ",
                 "key 'constraints.rules[0].then': an empty condition would match every configuration");
        ERROR_AT(CONS("\"rules\": [{\"if\": {\"a\": \"x\"}, \"then\": {\"b\": \"p\"}}]"), "{\"if\"",
                 "key 'constraints.rules[0]': missing required key 'reason'");
        ERROR_AT(CONS("\"rules\": [{\"if\": {\"a\": {\"nor\": \"x\"}}, \"then\": {\"b\": \"p\"}, "
                      "\"reason\": \"r\"}]"),
                 "\"nor\"", "key 'constraints.rules[0].if.a.nor': unknown key 'nor' in a condition");
        ERROR_AT(CONS("\"rules\": [{\"if\": {\"a\": {\"not\": \"w\"}}, \"then\": {\"b\": \"p\"}, "
                      "\"reason\": \"r\"}]"),
                 "\"not\"", "key 'constraints.rules[0].if.a.not': axis 'a' has no value 'w'");
        ERROR_AT(CONS("\"rules\": [{\"if\": {\"a\": \"x\"}, \"then\": {\"b\": \"p\"}, \"reason\": \"r\", "
                      "\"why\": 1}]"),
                 "\"why\"", "key 'constraints.rules[0].why': unknown key 'why' in a rule");
        ERROR_AT(CONS("\"known_incompatible\": [{\"when\": {\"a\": \"y\"}, \"reason\": \"r\", \"expect\": "
                      "\"hang\"}]"),
                 "\"expect\"",
                 "key 'constraints.known_incompatible[0].expect': unknown expectation 'hang' (fail, crash)");
        ERROR_AT(CONS("\"known_incompatible\": [{\"when\": {}, \"reason\": \"r\"}]"), "{}, ",
                 "key 'constraints.known_incompatible[0].when': an empty condition would match every "
                 "configuration");
        ERROR_AT(CONS("\"known_incompatible\": [{\"when\": {\"a\": \"y\"}}]"), "{\"when\"",
                 "key 'constraints.known_incompatible[0]': missing required key 'reason'");
}

/* Axis c is not in the product; value r of b is not either. */
#define NP_AXES                                                                                             \
        "  \"axes\": [\n"                                                                                   \
        "    {\"name\": \"a\", \"values\": [{\"name\": \"x\"}, {\"name\": \"y\"}]},\n"                      \
        "    {\"name\": \"b\", \"values\": [{\"name\": \"p\"}, {\"name\": \"q\"}, {\"name\": \"r\", "       \
        "\"product\": false}]},\n"                                                                          \
        "    {\"name\": \"c\", \"product\": false, \"values\": [{\"name\": \"on\"}]}\n"                     \
        "  ],\n"
#define NP(x) HEAD NP_AXES BASE ",\n  \"constraints\": {" x "}" TAIL

TEST(exclude_product_only)
{
        ERROR_AT(NP("\"exclude\": [{\"c\": \"on\"}]"), "\"c\": \"on\"",
                 "key 'constraints.exclude[0].c': axis 'c' is not in the product (\"product\": false), so "
                 "an exclude "
                 "entry cannot match it");
        ERROR_AT(NP("\"exclude\": [{\"b\": \"r\"}]"), "\"b\": \"r\"",
                 "key 'constraints.exclude[0].b': value 'r' of axis 'b' is not in the product");
        ERROR_AT(NP("\"exclude\": [{\"b\": [\"p\", \"r\"]}]"), "\"r\"]",
                 "key 'constraints.exclude[0].b[1]': value 'r' of axis 'b' is not in the product");
}

TEST(semantic)
{
        /* The baseline and each feature (on the baseline) must survive exclude and rules. */
        ERROR_AT(CONS("\"exclude\": [{\"a\": \"x\", \"b\": \"p\"}]"), "\"baseline\"",
                 "key 'baseline': the baseline (a=x,b=p) matches the exclude entry at t.json:10:31");
        ERROR_AT(CONS("\"rules\": [{\"if\": {\"a\": \"x\"}, \"then\": {\"b\": \"q\"}, \"reason\": \"x needs "
                      "q\"}]"),
                 "\"baseline\"",
                 "key 'baseline': the baseline (a=x,b=p) breaks the rule at t.json:10:29: x needs q");
        ERROR_AT(HEAD AXES BASE ",\n  \"features\": [{" F1 ", " C1 "}],\n"
                                "  \"constraints\": {\"rules\": [{\"if\": {\"a\": \"y\"}, \"then\": {\"b\": "
                                "\"q\"}, \"reason\": \"y needs q\"}]}" TAIL,
                 "\"set\"",
                 "key 'features[0].set': feature 'f' on the baseline (a=y,b=p) breaks the rule at "
                 "t.json:11:29: y needs q");
        /* An include entry that matches no cell is appended as is; it must not break a rule. */
        ERROR_AT(NP("\"include\": [{\"b\": \"r\"}], \"rules\": [{\"if\": {\"b\": \"r\"}, \"then\": {\"c\": "
                    "\"on\"}, "
                    "\"reason\": \"r needs c\"}]"),
                 "{\"b\": \"r\"}]",
                 "key 'constraints.include[0]': this include entry matches no original cell, so it is "
                 "appended as the configuration b=r, which breaks the rule at t.json:11:");
        /* Extending cells: include sets non-product axis c, a rule on c: the product is streamed. */
        ERROR_AT(NP("\"include\": [{\"a\": \"y\", \"c\": \"on\"}], \"rules\": [{\"if\": {\"c\": \"on\"}, "
                    "\"then\": {\"b\": \"q\"}, "
                    "\"reason\": \"c needs q\"}]"),
                 "{\"a\": \"y\", \"c\"",
                 "key 'constraints.include[0]': this include entry extends the cell a=y,b=p, and "
                 "the result breaks the rule at t.json:11:");
        /* An empty "if" always applies. */
        ERROR_AT(CONS("\"rules\": [{\"if\": {}, \"then\": {\"a\": \"y\"}, \"reason\": \"r\"}]"),
                 "\"baseline\"",
                 "key 'baseline': the baseline (a=x,b=p) breaks the rule at t.json:10:29: r");
}

TEST(nothing_valid)
{
        /* Every cell excluded or invalid, the baseline rescued by nothing: the constraints are the error. */
        const char *text =
                HEAD NP_AXES "  \"baseline\": {\"a\": \"x\", \"b\": \"r\"},\n"
                             "  \"constraints\": {\"exclude\": [{\"b\": \"p\"}, {\"b\": \"q\"}]}" TAIL;
        ERROR_AT(text, "\"constraints\": |{", "the constraints leave no valid configuration");
}

TEST(include_rescues)
{
        /* Same, but an include entry appends a valid configuration: the file is fine. */
        const char *text = HEAD NP_AXES "  \"baseline\": {\"a\": \"x\", \"b\": \"r\"},\n"
                                        "  \"constraints\": {\"exclude\": [{\"b\": \"p\"}, {\"b\": \"q\"}], "
                                        "\"include\": [{\"a\": \"x\", "
                                        "\"b\": \"r\"}]}" TAIL;
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(text);
        _cleanup_free_ char *all = expand_all(m, NULL);

        ASSERT_STREQ(all, "a=x,b=r\n");
}

TEST(limits)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        _cleanup_free_ char *why = NULL, *big = NULL, *path = NULL;
        struct mx_matrix *m = NULL;

        /* 65 values on one axis. */
        mx_buf_puts(&b, HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [");
        for (int i = 0; i < 65; i++)
                mx_buf_printf(&b, "%s{\"name\": \"v%d\"}", i ? ", " : "", i);
        mx_buf_puts(&b, "]}],\n  \"baseline\": {\"a\": \"v0\"}" TAIL);
        ERROR_AT(b.data, "\"values\"", "key 'axes[0].values': an axis needs 1 to 64 values, got 65");

        /* A description over the string limit. */
        big = xmalloc(MX_MATRIX_MAX_STRING + 2);
        memset(big, 'x', MX_MATRIX_MAX_STRING + 1);
        big[MX_MATRIX_MAX_STRING + 1] = '\0';
        mx_buf_reset(&b);
        mx_buf_printf(&b, "{\"matrix\": 1, \"name\": \"t\", \"description\": \"%s\"}", big);
        ERROR_AT(b.data, "\"description\"",
                 "key 'description': string of 4097 bytes is longer than the limit of 4096");

        /* A name over 64 characters. */
        ERROR_AT("{\"matrix\": 1, \"name\": "
                 "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
                 "\"name\"", "invalid name");

        /* Files over the size limit are refused before parsing. */
        path = xasprintf("%s/big.json", test_tmpdir());
        {
                FILE *f = fopen(path, "w");

                ASSERT_NOT_NULL(f);
                ASSERT_EQ(ftruncate(fileno(f), MX_MATRIX_MAX_FILE_SIZE + 1), 0);
                fclose(f);
        }
        ASSERT_ERR(mx_matrix_load_file(path, &m, &why), EFBIG);
        ASSERT_CONTAINS(why, "larger than the limit of 4194304 bytes");
        ASSERT_NULL(m);
}

TEST(file_errors)
{
        _cleanup_free_ char *why = NULL;
        struct mx_matrix *m = NULL;

        ASSERT_ERR(mx_matrix_load_file("/nonexistent/x.json", &m, &why), ENOENT);
        ASSERT_STREQ(why, "/nonexistent/x.json: No such file or directory");
        free(why);
        why = NULL;
        ASSERT_ERR(mx_matrix_load_file(test_tmpdir(), &m, &why), EISDIR);
        ASSERT_CONTAINS(why, "is a directory");
        ASSERT_NULL(m);
}

TEST(unicode_columns)
{
        /* Columns count characters: the error after "é…" on the same line points past them correctly. */
        const char *text = "{\"matrix\": 1, \"name\": \"t\", \"description\": \"é…\", \"bogus\": 0}";

        ERROR_AT(text, "\"bogus\"", "key 'bogus': unknown key");
}

TEST(placeholders)
{
        const char *values[_MX_PLACEHOLDER_MAX] = {
                [MX_PLACEHOLDER_MODEL] = "m", [MX_PLACEHOLDER_PORT] = "8000"
        };
        _cleanup_free_ char *out = NULL, *why = NULL;

        ASSERT_OK(mx_placeholder_check("{\"method\": \"eagle3\"} {model} {{x}", NULL));
        ASSERT_ERR(mx_placeholder_check("{modle}", &why), EINVAL);
        ASSERT_CONTAINS(why, "unknown placeholder '{modle}'");
        ASSERT_OK(mx_placeholder_expand("--model={model} --port {port} {{port} {\"a\": 1}", values, &out,
                                        NULL));
        ASSERT_STREQ(out, "--model=m --port 8000 {port} {\"a\": 1}");
        free(why);
        why = NULL;
        ASSERT_ERR(mx_placeholder_expand("{host}", values, &out, &why), ENXIO);
        ASSERT_CONTAINS(why, "'{host}' has no value");
        ASSERT_EQ(mx_placeholder_from_string("run_dir"), MX_PLACEHOLDER_RUN_DIR);
        ASSERT_EQ(mx_placeholder_from_string("nope"), -EINVAL);
}

TEST(shipped_matrices_load)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *a = load_fixture("matrix/mxfp4-gb10.json");
        _cleanup_(mx_matrix_freep) struct mx_matrix *b = load_fixture("matrix/vllm-upstream-gb10.json");

        ASSERT_EQ(a->n_axes, 6);
        ASSERT_EQ(a->n_features, 6);
        ASSERT_EQ(b->n_axes, 6);
        ASSERT_STREQ(a->axes[0].values[mx_matrix_value_index(&a->axes[0], "gemm")].name, "cutlass");
}

TEST(shipped_matrices_can_pass_the_kernel_gate)
{
        static const char *const files[] = {"matrix/mxfp4-gb10.json", "matrix/vllm-upstream-gb10.json",
                                            "matrix/demo-sim.json"};

        /* Every shipped matrix expects kernel names, so each needs a profiler and warns about nothing. */
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture(files[i]);
                _cleanup_strv_free_ char **w = mx_matrix_warnings(m);

                ASSERT_TRUE(mx_matrix_has_gate(m));
                ASSERT_TRUE(mx_matrix_has_profiler(m));
                if (w)
                        test_fail(__FILE__, __LINE__, "%s warns: %s", files[i], w[0]);
        }
        /* The GB10 matrices profile with nsys around the server and summarise kernels after the stop. */
        {
                _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");
                json_t *prof = json_object_get(m->profile_resolved, "profiler");

                ASSERT_STREQ(m->command[0], "nsys");
                ASSERT_TRUE(strv_contains(m->command, "--cuda-graph-trace"));
                ASSERT_STREQ(json_string_value(json_array_get(json_object_get(prof, "after_stop"), 0)),
                             "nsys");
                ASSERT_STREQ(json_string_value(json_object_get(prof, "report")),
                             "{run_dir}/kern_cuda_gpu_kern_sum.csv");
                ASSERT_EQ(m->settings.run_timeout_ms, 2 * 3600 * 1000);
        }
}

TEST(warnings_name_the_place)
{
        /* Kernel expectations and no profiler: one warning per value, at its expect.kernels. */
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(
                HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\"}, {\"name\": \"y\", "
                     "\"expect\": {\"kernels\": {\"must_see\": [\"k_*\"]}, \"log\": {\"must_see\": [\"z\"], "
                     "\"must_not_see\": [\"z\"]}}}]}],\n"
                     "  \"baseline\": {\"a\": \"x\"}" TAIL);
        _cleanup_strv_free_ char **w = mx_matrix_warnings(m);

        /* and no source trees: seed 001 Phase 9 wants every benchmark run's git SHAs */
        ASSERT_EQ(strv_length(w), 3);
        ASSERT_CONTAINS(w[2], "key 'metadata': the matrix names no source trees (metadata.sources)");
        ASSERT_STREQ(
                w[0],
                "t.json:5:77: key 'axes[0].values[1].expect.kernels': kernel expectations of a=y need a "
                "profiler report, but profile 'vllm' has no profiler: every run with this value ends "
                "L1.5 INVALID (set target.profiler, mxmatrix.json(5) TARGET PROFILES)");
        ASSERT_CONTAINS(w[1],
                        "key 'axes[0].values[1].expect.log': a=y must see and must not see 'z' in the log");
}

TEST(more_error_paths)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        ERROR_AT(CONS("\"rules\": [{\"if\": {\"a\": {}}, \"then\": {\"b\": \"p\"}, \"reason\": \"r\"}]"), "[{\"if\": {|\"a\"",
                 "key 'constraints.rules[0].if.a': missing required key 'not'");
        ERROR_AT(FEAT("{" F1 ", " C1 ", \"depends_on\": [7]}"), "[|7]",
                 "key 'features[0].depends_on[0]': expected a feature name, got an integer");

        /* 65 environment variables on one value. */
        mx_buf_puts(&b, HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"env\": {");
        for (int i = 0; i < 65; i++)
                mx_buf_printf(&b, "%s\"V%d\": \"1\"", i ? ", " : "", i);
        mx_buf_puts(&b, "}}]}],\n  \"baseline\": {\"a\": \"x\"}" TAIL);
        ERROR_AT(b.data, "\"env\"", "key 'axes[0].values[0].env': 65 variables, more than the limit of 64");

        /* 17 aliases. */
        mx_buf_reset(&b);
        mx_buf_puts(&b, HEAD "  \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\", \"aliases\": [");
        for (int i = 0; i < 17; i++)
                mx_buf_printf(&b, "%s\"al%d\"", i ? ", " : "", i);
        mx_buf_puts(&b, "]}]}],\n  \"baseline\": {\"a\": \"x\"}" TAIL);
        ERROR_AT(b.data, "\"aliases\"", "key 'axes[0].values[0].aliases': 17 entries, more than the limit of 16");

        /* 1025 exclude entries. */
        mx_buf_reset(&b);
        mx_buf_puts(&b, HEAD AXES BASE ",\n  \"constraints\": {\"exclude\": [");
        for (int i = 0; i < 1025; i++)
                mx_buf_printf(&b, "%s{\"a\": \"y\", \"b\": \"q\"}", i ? ", " : "");
        mx_buf_puts(&b, "]}" TAIL);
        ERROR_AT(b.data, "\"exclude\"", "key 'constraints.exclude': 1025 entries, more than the limit of 1024");

        /* 257 features. */
        mx_buf_reset(&b);
        mx_buf_puts(&b, HEAD AXES BASE ",\n  \"features\": [");
        for (int i = 0; i < 257; i++)
                mx_buf_printf(&b, "%s{\"name\": \"f%d\"}", i ? ", " : "", i);
        mx_buf_puts(&b, "]" TAIL);
        ERROR_AT(b.data, "\"features\"", "key 'features': 257 features, more than the limit of 256");
}

TEST(validation_too_large)
{
        /* An include sets non-product axis c, which a rule mentions: validating means streaming 2^25 cells. */
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        mx_buf_puts(&b, HEAD "  \"axes\": [{\"name\": \"c\", \"product\": false, \"values\": [{\"name\": \"on\"}]}");
        for (int i = 0; i < 25; i++)
                mx_buf_printf(&b, ", {\"name\": \"a%d\", \"values\": [{\"name\": \"0\"}, {\"name\": \"1\"}]}", i);
        mx_buf_puts(&b, "],\n  \"baseline\": {");
        for (int i = 0; i < 25; i++)
                mx_buf_printf(&b, "%s\"a%d\": \"0\"", i ? ", " : "", i);
        mx_buf_puts(&b, "},\n  \"constraints\": {\"include\": [{\"a0\": \"1\", \"c\": \"on\"}], \"rules\": [{\"if\": "
                        "{\"c\": \"on\"}, \"then\": {\"a1\": \"0\"}, \"reason\": \"r\"}]}" TAIL);
        ERROR_AT(b.data, "\"constraints\": |{",
                 "key 'constraints': include entries set axes that rules mention, so validating this file means "
                 "expanding its product, which has more than 16777216 cells");
}

TEST(load_string_size_limit)
{
        _cleanup_free_ char *why = NULL, *big = xcalloc(MX_MATRIX_MAX_FILE_SIZE + 1, 1);
        struct mx_matrix *m = NULL;

        memset(big, ' ', MX_MATRIX_MAX_FILE_SIZE + 1);
        ASSERT_ERR(mx_matrix_load_string("s.json", big, MX_MATRIX_MAX_FILE_SIZE + 1, &m, &why), EFBIG);
        ASSERT_STREQ(why, "s.json: 4194305 bytes, more than the limit of 4194304");
        ASSERT_NULL(m);
}

TEST(settings)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(
                HEAD AXES BASE ",\n  \"settings\": {\"run_timeout\": \"2h\", \"level_timeout\": 90, "
                               "\"ready_timeout\": \"20m\"}" TAIL);

        ASSERT_EQ(m->settings.run_timeout_ms, 2 * 3600 * 1000);
        ASSERT_EQ(m->settings.level_timeout_ms, 90 * 1000);
        ASSERT_EQ(m->settings.ready_timeout_ms, 20 * 60 * 1000);
        ERROR_AT(HEAD AXES BASE ",\n  \"settings\": {\"run_timeout\": \"soon\"}" TAIL, "\"run_timeout\"",
                 "key 'settings.run_timeout': expected a duration of less than 7 days");
        ERROR_AT(HEAD AXES BASE ",\n  \"settings\": {\"run_timeout\": \"8d\"}" TAIL, "\"run_timeout\"",
                 "key 'settings.run_timeout': expected a duration");
        ERROR_AT(HEAD AXES BASE ",\n  \"settings\": {\"levels\": 1}" TAIL, "\"levels\"",
                 "key 'settings.levels': unknown key 'levels' in settings (known keys: run_timeout, "
                 "level_timeout, ready_timeout, order, cache_key_axes)");
        ERROR_AT(HEAD AXES BASE ",\n  \"settings\": {\"order\": \"lifo\"}" TAIL, "\"order\"",
                 "unknown order 'lifo' (fifo, fail-fast)");
        ERROR_AT(FEAT("{" F1 ", " C1 ", \"settings\": {\"level_timeout\": 0}}"), "\"level_timeout\"",
                 "key 'features[0].settings.level_timeout': expected a duration");
}
