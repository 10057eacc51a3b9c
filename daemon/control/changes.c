/* SPDX-License-Identifier: MIT */
/* The history method: a configuration's stored L4 series by source commit and its change points. */
#include "changes.h"
#include "changepoint.h"
#include "series-store.h"
#include "matrix.h"
#include "util.h"

#include <string.h>

/* A word for a shell: single-quoted unless it is plain. */
static char *shell_word(const char *w)
{
        struct mx_buf b = MX_BUF_INIT;

        if (*w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,=/:@+%") ==
                          strlen(w))
                return xstrdup(w);
        mx_buf_putc(&b, '\'');
        for (const char *p = w; *p; p++)
                if (*p == '\'')
                        mx_buf_puts(&b, "'\\''");
                else
                        mx_buf_putc(&b, *p);
        mx_buf_putc(&b, '\'');
        return mx_buf_steal(&b);
}

/* The tree's path as the daemon's matrix names it; "PATH" where it names none. */
static const char *source_path(struct mx_daemon *d, const char *source)
{
        json_t *sources = d->matrix ? json_object_get(d->matrix->metadata, "sources") : NULL;

        return json_string_value(json_object_get(sources, source)) ?: "PATH";
}

/*
 * Each change point's bisect between its two commits (the agreed command line
 * of item 1). The configuration goes as one axis=value word per axis, not as
 * the key in one word: bisect takes each pin up to its max_length (a value is
 * a matrix name, 64 characters at most) and as many pins as a matrix has axes,
 * so the line is one bisect accepts however wide the key.
 */
static void add_bisect(json_t *cps, const char *key, const char *repo, const char *metric)
{
        _cleanup_free_ char *p = shell_word(repo), *m = shell_word(metric), *w = xstrdup(key);
        struct mx_buf words = MX_BUF_INIT;
        char *save = NULL;
        json_t *cp;
        size_t i;

        for (char *t = strtok_r(w, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                _cleanup_free_ char *q = shell_word(t);

                mx_buf_printf(&words, " %s", q);
        }
        json_array_foreach (cps, i, cp) {
                _cleanup_free_ char *good = shell_word(strempty(json_string_value(json_object_get(cp, "before"))));
                _cleanup_free_ char *bad = shell_word(strempty(json_string_value(json_object_get(cp, "after"))));

                json_object_set_new(cp, "bisect",
                                    json_sprintf("mxmatrix bisect%s --repo %s --good %s --bad %s --metric %s",
                                                 strempty(words.data), p, good, bad, m));
        }
        mx_buf_free(&words);
}

void changes_method(struct mx_request *req)
{
        const char *word = json_string_value(json_object_get(req->params, "config"));
        const char *metric = json_string_value(json_object_get(req->params, "metric")) ?: "tg32";
        const char *source = json_string_value(json_object_get(req->params, "source"));
        json_t *pins = json_object_get(req->params, "pins"), *limit = json_object_get(req->params, "points");
        _cleanup_free_ char *key = NULL, *err = NULL, *src = NULL;
        _cleanup_json_ json_t *points = NULL;
        json_t *out = NULL;
        struct mx_cp_opts o;
        int r;

        if (!word && json_object_size(pins) == 0) {
                request_error(req, "bad-request", "history needs a configuration: rRUN, its hash or axis=value");
                return;
        }
        r = series_store_config(req->d->db, word, pins, &key, &err);
        if (r == -ENOENT) {
                request_error(req, "not-found", "no stored run has the configuration %s",
                              word ? word : "with those axis values");
                return;
        }
        if ((r == -EEXIST || r == -EINVAL) && err) {
                request_error(req, "bad-request", "%s", err);
                return;
        }
        if (r == -EBADMSG && err) {
                request_error(req, "internal", "%s", err);
                return;
        }
        if (r < 0) {
                request_error_errno(req, r, "reading the configurations");
                return;
        }
        r = series_store_points(req->d->db, key, source,
                                limit ? (size_t)json_integer_value(limit) : SERIES_POINTS_MAX, &points, &src,
                                &err);
        if (r == -EEXIST) {
                request_error(req, "bad-request", "%s", err);
                return;
        }
        if (r < 0) {
                request_error_errno(req, r, "reading the history");
                return;
        }
        mx_cp_opts_defaults(&o);
        r = mx_cp_history_json(points, metric, &o, &out);
        if (r < 0) {
                request_error_errno(req, r, "finding change points");
                return;
        }
        add_bisect(json_object_get(out, "change_points"), key, src ? source_path(req->d, src) : "PATH", metric);
        json_object_set_new(out, "config_key", json_string(key));
        json_object_set_new(out, "source", src ? json_string(src) : json_null());
        json_object_set_new(out, "alpha", json_real(o.alpha));
        json_object_set_new(out, "min_size", json_integer((json_int_t)o.min_size));
        json_object_set_new(out, "work_max", json_integer((json_int_t)o.work_max));
        request_reply(req, out);
}
