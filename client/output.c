/* SPDX-License-Identifier: MIT */
#include "output.h"
#include "client.h"

struct output_table {
        size_t n_columns;
        bool has_headers;
        char **cells; /* row-major; headers first when present */
        size_t n_cells, allocated;
};

struct output_table *output_table_new(size_t n_columns, const char *const *headers)
{
        struct output_table *t = xcalloc(1, sizeof(*t));

        t->n_columns = MX_MAX(n_columns, (size_t)1);
        if (headers) {
                t->has_headers = true;
                for (size_t i = 0; i < n_columns; i++)
                        output_table_add(t, headers[i]);
        }
        return t;
}

struct output_table *output_table_free(struct output_table *t)
{
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t);
        return NULL;
}

void output_table_add(struct output_table *t, const char *cell)
{
        MX_GROW(t->cells, t->allocated, t->n_cells + 1);
        t->cells[t->n_cells++] = xstrdup(cell ? cell : "-");
}

void output_table_addf(struct output_table *t, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        MX_GROW(t->cells, t->allocated, t->n_cells + 1);
        t->cells[t->n_cells++] = xvasprintf(fmt, ap);
        va_end(ap);
}

/* Width in characters: UTF-8 continuation bytes do not count. */
static size_t text_width(const char *s)
{
        size_t n = 0;

        for (; *s; s++)
                n += ((unsigned char)*s & 0xc0) != 0x80;
        return n;
}

void output_table_print(const struct output_table *t, FILE *f, unsigned indent)
{
        _cleanup_free_ size_t *width = xcalloc(t->n_columns, sizeof(size_t));
        _cleanup_buf_ struct mx_buf line = MX_BUF_INIT;

        for (size_t i = 0; i < t->n_cells; i++)
                width[i % t->n_columns] = MX_MAX(width[i % t->n_columns], text_width(t->cells[i]));
        for (size_t i = 0; i < t->n_cells; i++) {
                size_t col = i % t->n_columns;

                if (col == 0)
                        mx_buf_printf(&line, "%*s", (int)indent, "");
                mx_buf_puts(&line, t->cells[i]);
                if (col < t->n_columns - 1 && i < t->n_cells - 1) {
                        mx_buf_printf(&line, "%*s", (int)(width[col] - text_width(t->cells[i]) + 2), "");
                        continue;
                }
                /* Empty trailing cells leave no trailing blanks. */
                while (line.len > 0 && line.data[line.len - 1] == ' ')
                        line.data[--line.len] = '\0';
                fprintf(f, "%s\n", line.data);
                mx_buf_reset(&line);
        }
}

int output_json(json_t *j)
{
        if (!j || json_dumpf(j, stdout, JSON_INDENT(2)) < 0) {
                fprintf(stderr, "mxmatrix: cannot write JSON output\n");
                return MX_EXIT_FAILURE;
        }
        fputc('\n', stdout);
        return MX_EXIT_OK;
}
