/* SPDX-License-Identifier: MIT */
/*
 * The matrix file's "metadata" section: checked like the rest of the file
 * (the first error rejects it, naming FILE:LINE:COL and the key), then
 * normalised for the run snapshot. Kept apart from matrix-load.c, which calls
 * mx_meta_load() once.
 */
#include "metadata.h"

#include <inttypes.h>

#define META_WHAT "the metadata section"

static const char *const section_keys[] = {"sources",    "docker_image",     "pip_freeze", "probes",
                                           "timeout_ms", "output_max_bytes", NULL};
static const char *const probe_keys[] = {"command", "file", "timeout_ms", "output_max_bytes", NULL};

/* A string of 1..max bytes at obj[key]. */
static int check_string(const struct mx_matrix *m, json_t *obj, const char *key, size_t max, char **reterr)
{
        json_t *v = json_object_get(obj, key);

        if (!json_is_string(v))
                return mx_matrix_error_at(m, obj, key, reterr, "expected a string");
        if (json_string_length(v) == 0 || json_string_length(v) > max)
                return mx_matrix_error_at(m, obj, key, reterr, "want 1 to %zu bytes, got %zu", max,
                                          json_string_length(v));
        if (strlen(json_string_value(v)) != json_string_length(v))
                return mx_matrix_error_at(m, obj, key, reterr, "a NUL byte is not allowed here");
        return 0;
}

/* An integer in [min, max] at obj[key], if present. */
static int check_int(const struct mx_matrix *m, json_t *obj, const char *key, int64_t min, int64_t max,
                     char **reterr)
{
        json_t *v = json_object_get(obj, key);

        if (!v)
                return 0;
        if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
                return mx_matrix_error_at(m, obj, key, reterr,
                                          "expected an integer from %" PRId64 " to %" PRId64, min, max);
        return 0;
}

/* An argv: 1..MX_MATRIX_MAX_COMMAND non-empty strings. */
static int check_argv(const struct mx_matrix *m, json_t *obj, const char *key, char **reterr)
{
        json_t *a = json_object_get(obj, key), *v;
        size_t i;

        if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > MX_MATRIX_MAX_COMMAND)
                return mx_matrix_error_at(
                        m, obj, key, reterr,
                        "expected a command: an array of 1 to %d strings, the program first",
                        MX_MATRIX_MAX_COMMAND);
        json_array_foreach (a, i, v) {
                if (!json_is_string(v) || json_string_length(v) > MX_MATRIX_MAX_STRING ||
                    strlen(json_string_value(v)) != json_string_length(v) ||
                    (i == 0 && json_string_length(v) == 0))
                        return mx_matrix_error_at(
                                m, a, NULL, reterr,
                                "element %zu: expected a non-empty string of at most %d bytes", i,
                                MX_MATRIX_MAX_STRING);
        }
        return 0;
}

/* An absolute path string. */
static int check_path(const struct mx_matrix *m, json_t *obj, const char *key, size_t index, char **reterr)
{
        json_t *v = key ? json_object_get(obj, key) : json_array_get(obj, index);
        const char *s = json_string_value(v);

        if (!s || json_string_length(v) == 0 || json_string_length(v) > MX_MATRIX_MAX_STRING ||
            strlen(s) != json_string_length(v))
                return key ? mx_matrix_error_at(m, obj, key, reterr, "expected a path (a non-empty string)")
                           : mx_matrix_error_at(m, obj, NULL, reterr,
                                                "element %zu: expected a path (a non-empty string)", index);
        if (s[0] != '/') {
                _cleanup_free_ char *e = mx_escape(s, 256);

                /* The daemon's working directory means nothing to the matrix's author. */
                return key ? mx_matrix_error_at(m, obj, key, reterr, "'%s' is not an absolute path", e)
                           : mx_matrix_error_at(m, obj, NULL, reterr,
                                                "element %zu: '%s' is not an absolute path", index, e);
        }
        return 0;
}

/* One probe: null (off), an argv, {"command": argv} or {"file": path | [paths]}; normalised into *ret. */
static int load_probe(const struct mx_matrix *m, json_t *parent, const char *key, json_t **ret,
                      char **reterr)
{
        json_t *p = json_object_get(parent, key), *files;
        _cleanup_json_ json_t *out = NULL;
        int r;

        if (json_is_null(p)) {
                *ret = json_null();
                return 0;
        }
        if (json_is_array(p)) {
                r = check_argv(m, parent, key, reterr);
                if (r < 0)
                        return r;
                *ret = json_pack("{s:O}", "command", p);
                return 0;
        }
        if (!json_is_object(p))
                return mx_matrix_error_at(m, parent, key, reterr,
                                          "expected a probe: a command (array), {\"command\": [...]}, "
                                          "{\"file\": PATH} or null to turn it off");
        r = mx_matrix_check_keys(m, p, probe_keys, "a probe", reterr);
        if (r < 0)
                return r;
        if (!!json_object_get(p, "command") == !!json_object_get(p, "file"))
                return mx_matrix_error_at(m, parent, key, reterr,
                                          "a probe has either \"command\" or \"file\"");
        r = check_int(m, p, "timeout_ms", 1, MX_META_MAX_TIMEOUT_MS, reterr);
        if (r >= 0)
                r = check_int(m, p, "output_max_bytes", MX_META_MIN_OUTPUT, MX_META_MAX_OUTPUT, reterr);
        if (r < 0)
                return r;
        out = json_deep_copy(p);
        if (json_object_get(p, "command"))
                r = check_argv(m, p, "command", reterr);
        else if (json_is_string(files = json_object_get(p, "file"))) {
                r = check_path(m, p, "file", 0, reterr);
                json_object_set_new(out, "file", json_pack("[O]", files));
        } else if (json_is_array(files) && json_array_size(files) > 0 &&
                   json_array_size(files) <= MX_META_MAX_FILES) {
                for (size_t i = 0; r >= 0 && i < json_array_size(files); i++)
                        r = check_path(m, files, NULL, i, reterr);
        } else
                r = mx_matrix_error_at(m, p, "file", reterr, "expected a path or an array of 1 to %d paths",
                                       MX_META_MAX_FILES);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(out);
        return 0;
}

static int load_sources(const struct mx_matrix *m, json_t *sec, json_t *out, char **reterr)
{
        json_t *src = json_object_get(sec, "sources"), *v;
        const char *k;
        int r;

        if (!src)
                return 0;
        if (!json_is_object(src))
                return mx_matrix_error_at(m, sec, "sources", reterr,
                                          "expected an object: name -> path of a git work tree");
        if (json_object_size(src) > MX_META_MAX_SOURCES)
                return mx_matrix_error_at(m, sec, "sources", reterr,
                                          "%zu sources, more than the limit of %d", json_object_size(src),
                                          MX_META_MAX_SOURCES);
        json_object_foreach (src, k, v) {
                if (!mx_matrix_name_valid(k)) {
                        _cleanup_free_ char *e = mx_escape(k, MX_MATRIX_MAX_NAME);

                        return mx_matrix_error_at(m, src, k, reterr, "invalid source name '%s'", e);
                }
                /* "~/projects/vllm" as seed 001 names the trees: the daemon's home, at collection */
                if (startswith(json_string_value(v) ?: "", "~/") && json_string_length(v) > 2 &&
                    json_string_length(v) <= MX_MATRIX_MAX_STRING &&
                    strlen(json_string_value(v)) == json_string_length(v))
                        continue;
                r = check_path(m, src, k, 0, reterr);
                if (r < 0)
                        return r;
        }
        json_object_set(out, "sources", src);
        return 0;
}

int mx_meta_load(const struct mx_matrix *m, json_t **ret, char **reterr)
{
        json_t *sec = json_object_get(m->root, "metadata"), *probes, *v;
        _cleanup_json_ json_t *out = NULL, *norm = json_object();
        const char *k;
        int r;

        if (!sec) {
                *ret = NULL;
                return 0;
        }
        if (!json_is_object(sec))
                return mx_matrix_error_at(m, m->root, "metadata", reterr, "expected an object");
        r = mx_matrix_check_keys(m, sec, section_keys, META_WHAT, reterr);
        if (r < 0)
                return r;
        out = json_object();
        r = load_sources(m, sec, out, reterr);
        if (r < 0)
                return r;
        if (json_object_get(sec, "docker_image")) {
                r = check_string(m, sec, "docker_image", MX_META_MAX_IMAGE, reterr);
                if (r < 0)
                        return r;
                if (json_string_value(json_object_get(sec, "docker_image"))[0] == '-')
                        return mx_matrix_error_at(m, sec, "docker_image", reterr,
                                                  "an image reference cannot start with '-'");
                json_object_set(out, "docker_image", json_object_get(sec, "docker_image"));
        }
        r = check_int(m, sec, "timeout_ms", 1, MX_META_MAX_TIMEOUT_MS, reterr);
        if (r >= 0)
                r = check_int(m, sec, "output_max_bytes", MX_META_MIN_OUTPUT, MX_META_MAX_OUTPUT, reterr);
        if (r < 0)
                return r;
        json_object_foreach (sec, k, v)
                if (streq(k, "timeout_ms") || streq(k, "output_max_bytes"))
                        json_object_set(out, k, v);
        probes = json_object_get(sec, "probes");
        if (probes && !json_is_object(probes))
                return mx_matrix_error_at(m, sec, "probes", reterr, "expected an object: name -> probe");
        if (json_object_size(probes) > MX_META_MAX_PROBES)
                return mx_matrix_error_at(m, sec, "probes", reterr, "%zu probes, more than the limit of %d",
                                          json_object_size(probes), MX_META_MAX_PROBES);
        json_object_foreach (probes, k, v) {
                json_t *p = NULL;

                if (!mx_matrix_name_valid(k)) {
                        _cleanup_free_ char *e = mx_escape(k, MX_MATRIX_MAX_NAME);

                        return mx_matrix_error_at(m, probes, k, reterr, "invalid probe name '%s'", e);
                }
                r = load_probe(m, probes, k, &p, reterr);
                if (r < 0)
                        return r;
                json_object_set_new(norm, k, p);
        }
        if (json_object_get(sec, "pip_freeze")) {
                json_t *p = NULL;

                if (json_object_get(probes, "pip_freeze"))
                        return mx_matrix_error_at(m, sec, "pip_freeze", reterr,
                                                  "pip_freeze is also set in probes; set it in one place");
                r = load_probe(m, sec, "pip_freeze", &p, reterr);
                if (r < 0)
                        return r;
                json_object_set_new(norm, "pip_freeze", p);
        }
        if (json_object_size(norm) > 0)
                json_object_set(out, "probes", norm);
        *ret = TAKE_PTR(out);
        return 0;
}
