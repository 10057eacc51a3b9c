/* SPDX-License-Identifier: MIT */
/*
 * A metadata record for people: the summary `mxmatrix show rN` prints, and
 * seed 002's Environment YAML block (the reports render it per run).
 */
#include "metadata.h"

#include <ctype.h>

char *mx_meta_yaml_scalar(const char *s)
{
        static const char *const reserved[] = {"true", "false", "yes", "no", "on", "off", "null", "~", NULL};
        size_t n = strlen(s);
        bool plain = n > 0 && !isspace((unsigned char)s[0]) && !isspace((unsigned char)s[n - 1]) &&
                     !strchr("-?:,[]{}#&*!|>'\"%@`", s[0]);
        struct mx_buf b = MX_BUF_INIT;

        for (size_t i = 0; plain && i < n; i++) {
                unsigned char c = (unsigned char)s[i];

                if (c < 0x20 || c == 0x7f || (c == ':' && (i + 1 == n || s[i + 1] == ' ')) ||
                    (c == '#' && i > 0 && s[i - 1] == ' '))
                        plain = false;
        }
        for (size_t i = 0; plain && reserved[i]; i++)
                plain = strcasecmp(s, reserved[i]) != 0;
        /* A SHA of digits only, or "13.0", would read back as a number ("13.0.88" would not). */
        if (plain) {
                char *end;

                (void)strtod(s, &end);
                plain = *end != '\0' && !(s[0] == '.' && strpbrk(s, "iInN"));
        }
        if (plain)
                return xstrdup(s);
        mx_buf_putc(&b, '"');
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)s[i];

                if (c == '"' || c == '\\')
                        mx_buf_printf(&b, "\\%c", c);
                else if (c == '\n')
                        mx_buf_puts(&b, "\\n");
                else if (c < 0x20 || c == 0x7f)
                        mx_buf_printf(&b, "\\x%02x", c);
                else
                        mx_buf_putc(&b, (char)c);
        }
        mx_buf_putc(&b, '"');
        return mx_buf_steal(&b);
}

static json_t *items_get(json_t *record, const char *name)
{
        return json_object_get(json_object_get(record, "items"), name);
}

/* Why an item has no value: "<error: ...>", "<not configured>", "<off>". */
static char *item_absence(json_t *item)
{
        const char *e = json_string_value(json_object_get(item, "error"));
        const char *skip = json_string_value(json_object_get(item, "skipped"));

        if (e)
                return xasprintf("<error: %s>", e);
        if (skip)
                return xasprintf("<%s>", skip);
        return xstrdup("<unknown>");
}

/* The summary's value of key, or the reason the item behind it has none. */
static char *summary_value(json_t *record, const char *key, const char *item)
{
        json_t *v = json_object_get(json_object_get(record, "summary"), key);

        if (json_is_string(v))
                return xstrdup(json_string_value(v));
        if (json_is_boolean(v))
                return xstrdup(json_is_true(v) ? "true" : "false");
        return item ? item_absence(items_get(record, item)) : xstrdup("<unknown>");
}

static void yaml_line(struct mx_buf *b, const char *key, const char *value)
{
        _cleanup_free_ char *v = mx_meta_yaml_scalar(value);

        mx_buf_printf(b, "%s: %s\n", key, v);
}

static void source_lines(struct mx_buf *b, json_t *record, const char *name)
{
        json_t *src = json_object_get(json_object_get(record, "sources"), name);
        _cleanup_free_ char *sha_key = xasprintf("git_sha_%s", name),
                            *dirty_key = xasprintf("git_dirty_%s", name);

        if (!src) {
                yaml_line(b, sha_key, "<not configured>");
                return;
        }
        if (json_is_string(json_object_get(src, "sha")))
                yaml_line(b, sha_key, json_string_value(json_object_get(src, "sha")));
        else {
                _cleanup_free_ char *why = item_absence(src);

                yaml_line(b, sha_key, why);
        }
        if (json_is_boolean(json_object_get(src, "dirty")))
                mx_buf_printf(b, "%s: %s\n", dirty_key,
                              json_is_true(json_object_get(src, "dirty")) ? "true" : "false");
        if (json_is_string(json_object_get(src, "branch"))) {
                _cleanup_free_ char *branch_key = xasprintf("git_branch_%s", name);

                yaml_line(b, branch_key, json_string_value(json_object_get(src, "branch")));
        }
}

char *mx_meta_env_yaml(json_t *record)
{
        static const struct {
                const char *key, *summary, *item;
        } rows[] = {
                {"docker_image_hash", "docker_image_hash", "docker_image"},
                {"cuda_version", "cuda_version", "cuda"},
                {"driver_version", "driver_version", "gpu"},
                {"cudnn_version", "cudnn_version", "cudnn"},
                {"gpu_clocks", "gpu_clocks", "gpu"},
                {"gpu_power_mode", "gpu_power_mode", "gpu"},
                {"hostname", "hostname", "hostname"},
                {"kernel", "kernel", "kernel"},
                {"pip_freeze", "pip_freeze", "pip_freeze"},
        };
        struct mx_buf b = MX_BUF_INIT;
        json_t *sources = json_object_get(record, "sources"), *v;
        const char *k;

        {
                _cleanup_free_ char *date = summary_value(record, "date", NULL);

                yaml_line(&b, "date", date);
        }
        /* seed 002 names vllm and flashinfer; other trees the matrix names follow. */
        source_lines(&b, record, "vllm");
        source_lines(&b, record, "flashinfer");
        json_object_foreach (sources, k, v)
                if (!streq(k, "vllm") && !streq(k, "flashinfer"))
                        source_lines(&b, record, k);
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_free_ char *val = summary_value(record, rows[i].summary, rows[i].item);

                if (streq(rows[i].key, "pip_freeze") &&
                    json_is_string(json_object_get(json_object_get(record, "summary"), "pip_freeze"))) {
                        free(val);
                        val = xasprintf("blob:%s",
                                        json_string_value(json_object_get(json_object_get(record, "summary"),
                                                                          "pip_freeze")));
                }
                yaml_line(&b, rows[i].key, val);
        }
        return mx_buf_steal(&b);
}

char *mx_meta_summary(json_t *record, const char *indent)
{
        struct mx_buf b = MX_BUF_INIT;
        json_t *items = json_object_get(record, "items"), *sources = json_object_get(record, "sources"), *v;
        _cleanup_free_ char *host = NULL, *kernel = NULL, *driver = NULL, *cuda = NULL, *cudnn = NULL,
                            *clocks = NULL, *power = NULL;
        const char *k;
        size_t failed = 0;

        if (!json_is_object(record))
                return xstrdup("");
        host = summary_value(record, "hostname", "hostname");
        kernel = summary_value(record, "kernel", "kernel");
        driver = summary_value(record, "driver_version", "gpu");
        cuda = summary_value(record, "cuda_version", "cuda");
        cudnn = summary_value(record, "cudnn_version", "cudnn");
        clocks = summary_value(record, "gpu_clocks", "gpu");
        power = summary_value(record, "gpu_power_mode", "gpu");
        mx_buf_printf(&b, "%smetadata: host %s, %s\n", indent, host, kernel);
        mx_buf_printf(&b, "%s  driver %s, CUDA %s, cuDNN %s, clocks %s, power %s\n", indent, driver, cuda,
                      cudnn, clocks, power);
        json_object_foreach (sources, k, v) {
                const char *sha = json_string_value(json_object_get(v, "sha"));
                json_t *dirty = json_object_get(v, "dirty");

                const char *branch = json_string_value(json_object_get(v, "branch"));

                if (sha)
                        mx_buf_printf(&b, "%s  %s %.12s%s%s%s (%s)\n", indent, k, sha,
                                      json_is_true(dirty)      ? ", dirty"
                                      : json_is_boolean(dirty) ? ", clean"
                                                               : ", dirty state unknown",
                                      branch ? ", branch " : "", branch ?: "",
                                      strna(json_string_value(json_object_get(v, "path"))));
                else
                        mx_buf_printf(&b, "%s  %s: %s\n", indent, k,
                                      strna(json_string_value(json_object_get(v, "error"))));
        }
        {
                json_t *docker = json_object_get(json_object_get(record, "summary"), "docker_image_hash");
                json_t *pip = json_object_get(json_object_get(items, "pip_freeze"), "output");

                if (json_is_string(docker))
                        mx_buf_printf(&b, "%s  image %s\n", indent, json_string_value(docker));
                if (json_is_object(pip))
                        mx_buf_printf(&b, "%s  pip freeze: %" JSON_INTEGER_FORMAT " packages (blob %s)\n",
                                      indent, json_integer_value(json_object_get(pip, "lines")),
                                      strna(json_string_value(json_object_get(pip, "blob"))));
        }
        json_object_foreach (items, k, v)
                if (json_is_string(json_object_get(v, "error"))) {
                        _cleanup_free_ char *e =
                                mx_escape(json_string_value(json_object_get(v, "error")), 160);

                        if (failed++ == 0)
                                mx_buf_printf(&b, "%s  failed probes:\n", indent);
                        mx_buf_printf(&b, "%s    %s: %s\n", indent, k, e);
                }
        return mx_buf_steal(&b);
}
