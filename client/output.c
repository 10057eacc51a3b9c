/* SPDX-License-Identifier: MIT */
/* How the client prints: aligned tables for people, JSON for programs. */
#include "output.h"
#include "protocol.h"

#include <inttypes.h>

struct table {
        size_t n_cols;
        char **headers;
        char ***rows;
        size_t n_rows, cap_rows;
};

struct table *table_new(const char *const *headers)
{
        struct table *t = xcalloc(1, sizeof(*t));

        while (headers[t->n_cols])
                t->n_cols++;
        t->headers = strv_copy((char *const *)headers);
        return t;
}

void table_add(struct table *t, const char *const *cells)
{
        char **row = xcalloc(t->n_cols, sizeof(char *));

        for (size_t i = 0; i < t->n_cols; i++)
                row[i] = mx_escape(cells[i] ? cells[i] : "-", 0);
        MX_GROW(t->rows, t->cap_rows, t->n_rows + 1);
        t->rows[t->n_rows++] = row;
}

/* Display width: UTF-8 code points (good enough for our cells). */
static size_t width(const char *s)
{
        size_t w = 0;

        for (; *s; s++)
                w += ((unsigned char)*s & 0xc0) != 0x80;
        return w;
}

static void print_row(FILE *f, char *const *cells, const size_t *w, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                fputs(cells[i], f);
                if (i + 1 < n)
                        fprintf(f, "%*s", (int)(w[i] - width(cells[i]) + 2), "");
        }
        fputc('\n', f);
}

void table_print(struct table *t, FILE *f)
{
        _cleanup_free_ size_t *w = xcalloc(t->n_cols, sizeof(size_t));

        for (size_t i = 0; i < t->n_cols; i++) {
                w[i] = width(t->headers[i]);
                for (size_t r = 0; r < t->n_rows; r++)
                        w[i] = MX_MAX(w[i], width(t->rows[r][i]));
        }
        print_row(f, t->headers, w, t->n_cols);
        for (size_t r = 0; r < t->n_rows; r++)
                print_row(f, t->rows[r], w, t->n_cols);
}

struct table *table_free(struct table *t)
{
        if (!t)
                return NULL;
        for (size_t r = 0; r < t->n_rows; r++) {
                for (size_t i = 0; i < t->n_cols; i++)
                        free(t->rows[r][i]);
                free(t->rows[r]);
        }
        free(t->rows);
        strv_free(t->headers);
        free(t);
        return NULL;
}

#define OUTPUT_HELP_COLUMN 52

void output_help_line(FILE *f, const char *synopsis, const char *summary)
{
        if (strlen(synopsis) <= OUTPUT_HELP_COLUMN)
                fprintf(f, "  %-*s %s\n", OUTPUT_HELP_COLUMN, synopsis, summary);
        else
                fprintf(f, "  %s\n  %-*s %s\n", synopsis, OUTPUT_HELP_COLUMN, "", summary);
}

void output_json(json_t *v)
{
        _cleanup_free_ char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);

        puts(s ? s : "null");
}

char *output_time(json_t *us)
{
        if (!json_is_integer(us))
                return xstrdup("-");
        return mx_format_time(json_integer_value(us));
}

char *output_elapsed(json_t *start_us, json_t *end_us)
{
        int64_t end;

        if (!json_is_integer(start_us))
                return xstrdup("-");
        end = json_is_integer(end_us) ? json_integer_value(end_us) : mx_now_real_us();
        return mx_format_duration(end - json_integer_value(start_us));
}

char *output_scalar(json_t *v)
{
        if (json_is_string(v))
                return xstrdup(json_string_value(v));
        if (json_is_integer(v))
                return xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
        if (json_is_real(v))
                return xasprintf("%g", json_real_value(v));
        if (json_is_boolean(v))
                return xstrdup(json_is_true(v) ? "yes" : "no");
        if (!v || json_is_null(v))
                return xstrdup("-");
        return json_dumps(v, JSON_COMPACT);
}

char *output_levels(json_t *levels)
{
        struct mx_buf b = MX_BUF_INIT;
        size_t i;
        json_t *l;

        json_array_foreach (levels, i, l)
                mx_buf_printf(&b, "%s%s=%s", i ? " " : "", strna(json_string_value(json_object_get(l, "level"))),
                              strna(json_string_value(json_object_get(l, "verdict"))));
        if (b.len == 0)
                mx_buf_puts(&b, "-");
        return mx_buf_steal(&b);
}

void output_jobs(json_t *jobs)
{
        /* RESULTS in the words of status and show (protocol.json's result vocabulary), never regrouped. */
        static const char *const h[] = { "JOB",  "USER", "FEATURE",   "STRATEGY", "PRIO",
                                         "STATE", "DONE", "SUBMITTED", "RESULTS",  NULL };
        _cleanup_(table_freep) struct table *t = table_new(h);
        size_t i;
        json_t *j;

        json_array_foreach (jobs, i, j) {
                json_t *c = json_object_get(j, "counts");
                _cleanup_free_ char *id = output_scalar(json_object_get(j, "id"));
                _cleanup_free_ char *user = json_is_string(json_object_get(j, "user"))
                                                    ? output_scalar(json_object_get(j, "user"))
                                                    : xasprintf("uid %" JSON_INTEGER_FORMAT,
                                                                json_integer_value(json_object_get(j, "uid")));
                _cleanup_free_ char *feat = output_scalar(json_object_get(j, "feature"));
                _cleanup_free_ char *strat = output_scalar(json_object_get(j, "strategy"));
                _cleanup_free_ char *prio = output_scalar(json_object_get(j, "priority"));
                _cleanup_free_ char *done = xasprintf("%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
                                                      json_integer_value(json_object_get(c, "done")),
                                                      json_integer_value(json_object_get(c, "total")));
                _cleanup_free_ char *results = mx_result_counts_text(c, false);
                _cleanup_free_ char *when = output_time(json_object_get(j, "submitted_at"));
                const char *state = json_string_value(json_object_get(j, "state"));
                const char *row[] = { id,   user, feat, strat, prio, state,
                                      done, when, json_integer_value(json_object_get(c, "done")) ? results : "-" };

                table_add(t, row);
        }
        table_print(t, stdout);
}

void output_runs(json_t *runs)
{
        static const char *const h[] = { "RUN", "SEQ", "STATE", "RESULT", "LEVELS", "TIME", "CONFIG", "WHY", NULL };
        _cleanup_(table_freep) struct table *t = table_new(h);
        size_t i;
        json_t *r;

        json_array_foreach (runs, i, r) {
                /* Runs of a dry run have no number yet. */
                _cleanup_free_ char *id = json_is_integer(json_object_get(r, "id"))
                                                  ? xasprintf("r%" JSON_INTEGER_FORMAT,
                                                              json_integer_value(json_object_get(r, "id")))
                                                  : xstrdup("-");
                _cleanup_free_ char *seq = output_scalar(json_object_get(r, "seq"));
                _cleanup_free_ char *res = NULL, *levels = output_levels(json_object_get(r, "levels"));
                _cleanup_free_ char *el = output_elapsed(json_object_get(r, "started_at"), json_object_get(r, "finished_at"));
                _cleanup_free_ char *why = NULL;
                json_t *reasons = json_object_get(r, "reasons"), *x;
                struct mx_buf b = MX_BUF_INIT;
                const char *crash = json_string_value(json_object_get(r, "crash_class"));
                size_t k;

                json_array_foreach (reasons, k, x)
                        mx_buf_printf(&b, "%s%s", k ? "," : "", json_string_value(x));
                if (json_is_string(json_object_get(r, "expect_fail")))
                        mx_buf_puts(&b, b.len ? ",expect-fail" : "expect-fail");
                why = mx_buf_steal(&b);
                res = crash ? xasprintf("%s:%s", strna(json_string_value(json_object_get(r, "result"))), crash)
                            : output_scalar(json_object_get(r, "result"));
                {
                        const char *row[] = { id,    seq, json_string_value(json_object_get(r, "state")), res, levels,
                                              el,    json_string_value(json_object_get(r, "config_key")), why };
                        table_add(t, row);
                }
        }
        table_print(t, stdout);
}

char *output_shell_quote(const char *s)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-") ==
                          strlen(s))
                return xstrdup(s);
        mx_buf_putc(&b, '\'');
        for (; *s; s++)
                if (*s == '\'')
                        mx_buf_puts(&b, "'\\''");
                else
                        mx_buf_putc(&b, *s);
        mx_buf_putc(&b, '\'');
        return mx_buf_steal(&b);
}
