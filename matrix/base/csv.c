/* SPDX-License-Identifier: MIT */
/* The RFC 4180 CSV reader, fed one physical line at a time (csv.h). */
#include "csv.h"

struct mx_csv {
        struct mx_csv_limits lim;

        struct mx_buf data; /* the record's field bytes, each field followed by a NUL */
        size_t *starts, *lens;
        size_t alloc_starts, alloc_lens;
        const char **ptrs;
        size_t alloc_ptrs;
        size_t n_fields;
        struct mx_csv_record rec;

        size_t field_start;   /* offset of the open field in data */
        bool pending;         /* a quoted field is open at the end of the last line */
        unsigned record_line; /* where the record in progress started */
        unsigned last_line;
};

struct mx_csv *mx_csv_new(const struct mx_csv_limits *limits)
{
        struct mx_csv *c = xcalloc(1, sizeof(*c));

        c->lim = (struct mx_csv_limits){ MX_CSV_FIELDS_MAX, MX_CSV_FIELD_MAX, MX_CSV_RECORD_MAX };
        if (limits && limits->max_fields)
                c->lim.max_fields = limits->max_fields;
        if (limits && limits->max_field)
                c->lim.max_field = limits->max_field;
        if (limits && limits->max_record)
                c->lim.max_record = limits->max_record;
        return c;
}

struct mx_csv *mx_csv_free(struct mx_csv *c)
{
        if (!c)
                return NULL;
        mx_buf_free(&c->data);
        free(c->starts);
        free(c->lens);
        free(c->ptrs);
        free(c);
        return NULL;
}

bool mx_csv_pending(const struct mx_csv *c)
{
        return c->pending;
}

void mx_csv_reset(struct mx_csv *c)
{
        mx_buf_reset(&c->data);
        c->n_fields = 0;
        c->pending = false;
}

const struct mx_csv_record *mx_csv_record(const struct mx_csv *c)
{
        return &c->rec;
}

static int field_begin(struct mx_csv *c, unsigned line_no, char **reterr)
{
        if (c->n_fields >= c->lim.max_fields) {
                if (reterr)
                        *reterr = xasprintf("line %u: more than %zu fields in one record", line_no,
                                            c->lim.max_fields);
                return -E2BIG;
        }
        c->field_start = c->data.len;
        return 0;
}

static int field_add(struct mx_csv *c, const char *p, size_t n, unsigned line_no, char **reterr)
{
        if (c->data.len - c->field_start + n > c->lim.max_field) {
                if (reterr)
                        *reterr = xasprintf("line %u, field %zu: longer than %zu bytes", line_no,
                                            c->n_fields + 1, c->lim.max_field);
                return -E2BIG;
        }
        if (c->data.len - c->n_fields + n > c->lim.max_record) {
                if (reterr)
                        *reterr = xasprintf("line %u: record longer than %zu bytes", line_no,
                                            c->lim.max_record);
                return -E2BIG;
        }
        mx_buf_add(&c->data, p, n);
        return 0;
}

static void field_end(struct mx_csv *c)
{
        MX_GROW(c->starts, c->alloc_starts, c->n_fields + 1);
        MX_GROW(c->lens, c->alloc_lens, c->n_fields + 1);
        c->starts[c->n_fields] = c->field_start;
        c->lens[c->n_fields] = c->data.len - c->field_start;
        c->n_fields++;
        mx_buf_putc(&c->data, '\0');
}

/* Copy a quoted field's text up to its closing quote; 1 when closed (*i past it), 0 at the end of the line.
 */
static int quoted_run(struct mx_csv *c, const char *line, size_t len, size_t *i, unsigned line_no,
                      char **reterr)
{
        for (;;) {
                const char *q = memchr(line + *i, '"', len - *i);
                size_t n = q ? (size_t)(q - (line + *i)) : len - *i;
                int r;

                r = field_add(c, line + *i, n, line_no, reterr);
                if (r < 0)
                        return r;
                *i += n;
                if (!q)
                        return 0;
                (*i)++;
                if (*i < len && line[*i] == '"') { /* "" stands for one quote */
                        r = field_add(c, "\"", 1, line_no, reterr);
                        if (r < 0)
                                return r;
                        (*i)++;
                        continue;
                }
                return 1;
        }
}

/* Finish the record: point fields into the data buffer, now that it no longer moves. */
static void record_complete(struct mx_csv *c)
{
        MX_GROW(c->ptrs, c->alloc_ptrs, c->n_fields + 1);
        for (size_t k = 0; k < c->n_fields; k++)
                c->ptrs[k] = c->data.data + c->starts[k];
        c->ptrs[c->n_fields] = NULL;
        c->rec = (struct mx_csv_record){
                .n_fields = c->n_fields,
                .fields = c->ptrs,
                .lens = c->lens,
                .line = c->record_line,
        };
}

static int after_quote_error(const struct mx_csv *c, unsigned line_no, char ch, char **reterr)
{
        if (reterr) {
                unsigned char u = (unsigned char)ch;

                if (u >= 0x20 && u < 0x7f)
                        *reterr =
                                xasprintf("line %u, field %zu: '%c' after the closing quote (expected ',')",
                                          line_no, c->n_fields + 1, ch);
                else
                        *reterr = xasprintf(
                                "line %u, field %zu: byte 0x%02x after the closing quote (expected ',')",
                                line_no, c->n_fields + 1, u);
        }
        return -EBADMSG;
}

/* Parse fields from line[*i]; the first may be a quoted field resumed from the previous line. */
static int feed_fields(struct mx_csv *c, const char *line, size_t len, bool resume, unsigned line_no,
                       char **reterr)
{
        size_t i = 0;
        int r;

        for (;;) {
                if (resume || (i < len && line[i] == '"')) {
                        if (!resume)
                                i++;
                        resume = false;
                        r = quoted_run(c, line, len, &i, line_no, reterr);
                        if (r <= 0)
                                return r;
                        if (i < len && line[i] != ',')
                                return after_quote_error(c, line_no, line[i], reterr);
                } else {
                        const char *comma = memchr(line + i, ',', len - i);
                        size_t n = comma ? (size_t)(comma - (line + i)) : len - i;

                        r = field_add(c, line + i, n, line_no, reterr);
                        if (r < 0)
                                return r;
                        i += n;
                }
                field_end(c);
                if (i >= len)
                        return 1;
                i++; /* the comma */
                r = field_begin(c, line_no, reterr);
                if (r < 0)
                        return r;
        }
}

int mx_csv_feed_line(struct mx_csv *c, unsigned line_no, const char *line, size_t len, char **reterr)
{
        bool resume = c->pending;
        int r;

        c->last_line = line_no;
        if (resume) {
                r = field_add(c, "\n", 1, line_no, reterr);
        } else {
                mx_csv_reset(c);
                c->record_line = line_no;
                r = field_begin(c, line_no, reterr);
        }
        c->pending = false;
        if (r >= 0)
                r = feed_fields(c, line, len, resume, line_no, reterr);
        if (r < 0) {
                mx_csv_reset(c);
                return r;
        }
        if (r == 0) {
                c->pending = true;
                return 0;
        }
        record_complete(c);
        return 1;
}

int mx_csv_finish(struct mx_csv *c, char **reterr)
{
        if (!c->pending)
                return 0;
        if (reterr)
                *reterr = xasprintf("line %u: field %zu of the record started on line %u: "
                                    "quoted field not closed at the end of the input",
                                    c->last_line, c->n_fields + 1, c->record_line);
        mx_csv_reset(c);
        return -EBADMSG;
}
