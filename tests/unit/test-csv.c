/* SPDX-License-Identifier: MIT */
#include "test.h"

#include "csv.h"
#include "lines.h"

/* Feed every line of text; return the records as "f1|f2;f1|f2", or "ERR <code>: <reason>". */
static char *parse(const char *text, const struct mx_csv_limits *lim)
{
        _cleanup_(mx_csv_freep) struct mx_csv *c = mx_csv_new(lim);
        _cleanup_(mx_lines_freep) struct mx_lines *l = mx_lines_new_buffer(text, strlen(text), 1 << 20, 0);
        struct mx_buf b = MX_BUF_INIT;
        _cleanup_free_ char *err = NULL;
        const char *line;
        size_t len;
        int r;

        mx_buf_puts(&b, "");
        while (mx_lines_next(l, &line, &len) > 0) {
                const struct mx_csv_record *rec;

                r = mx_csv_feed_line(c, mx_lines_number(l), line, len, &err);
                if (r < 0)
                        goto fail;
                if (r == 0) {
                        ASSERT_TRUE(mx_csv_pending(c));
                        continue;
                }
                ASSERT_FALSE(mx_csv_pending(c));
                rec = mx_csv_record(c);
                if (b.len)
                        mx_buf_putc(&b, ';');
                for (size_t i = 0; i < rec->n_fields; i++) {
                        ASSERT_EQ(strlen(rec->fields[i]), rec->lens[i]);
                        mx_buf_printf(&b, "%s%s", i ? "|" : "", rec->fields[i]);
                }
                ASSERT_NULL(rec->fields[rec->n_fields]);
        }
        r = mx_csv_finish(c, &err);
        if (r < 0)
                goto fail;
        return mx_buf_steal(&b);
fail:
        mx_buf_free(&b);
        return xasprintf("ERR %d: %s", r, err);
}

#define ASSERT_PARSE(text, want)                                                                            \
        do {                                                                                                \
                _cleanup_free_ char *_got = parse(text, NULL);                                              \
                ASSERT_STREQ(_got, want);                                                                   \
        } while (0)

TEST(plain_records)
{
        ASSERT_PARSE("a,b,c\n1,2,3\n", "a|b|c;1|2|3");
        ASSERT_PARSE("single\n", "single");
        ASSERT_PARSE("trailing,comma,\n", "trailing|comma|");
        ASSERT_PARSE(",\n", "|");
        ASSERT_PARSE("\n", "");
        ASSERT_PARSE("crlf,line\r\nnext,one\r\n", "crlf|line;next|one");
}

TEST(quoted_fields)
{
        /* commas, doubled quotes and templates inside quotes, as ncu prints kernel names */
        ASSERT_PARSE("\"ID\",\"Kernel Name\"\n\"0\",\"void k<float, 4>(T1 *, int)\"\n",
                     "ID|Kernel Name;0|void k<float, 4>(T1 *, int)");
        ASSERT_PARSE("\"say \"\"hi\"\", ok\",x\n", "say \"hi\", ok|x");
        ASSERT_PARSE("\"\",\"\"\"\"\n", "|\"");
        /* an unquoted field keeps a quote as a character (nsys leaves names without commas bare) */
        ASSERT_PARSE("12,operator\"\"_x,3\n", "12|operator\"\"_x|3");
        /* mixed: nsys quotes only the name */
        ASSERT_PARSE("45.2,100,3,\"void cutlass::Kernel<a, b>\"\n", "45.2|100|3|void cutlass::Kernel<a, b>");
}

TEST(embedded_newlines)
{
        ASSERT_PARSE("a,\"two\nlines\",b\nc\n", "a|two\nlines|b;c");
        ASSERT_PARSE("\"three\n\nlines\"\n", "three\n\nlines");
        /* CRLF inside a quoted field reads as \n */
        ASSERT_PARSE("\"x\r\ny\"\r\nz\r\n", "x\ny;z");
        /* a doubled quote right before the break, and a field that closes at the start of a line */
        ASSERT_PARSE("\"a\"\"\nb\",\"c\n\",d\n", "a\"\nb|c\n|d");
}

TEST(malformed)
{
        _cleanup_free_ char *a = parse("ok\n\"x\"y,z\n", NULL);
        _cleanup_free_ char *b = parse("a,b\n\"never closed,c\nmore\n", NULL);
        _cleanup_free_ char *c = parse("\"bell\"\a\n", NULL);

        ASSERT_CONTAINS(a, "ERR -74"); /* EBADMSG */
        ASSERT_CONTAINS(a, "line 2, field 1: 'y' after the closing quote");
        ASSERT_CONTAINS(b, "ERR -74");
        ASSERT_CONTAINS(b, "line 3: field 1 of the record started on line 2");
        ASSERT_CONTAINS(b, "not closed at the end of the input");
        ASSERT_CONTAINS(c, "byte 0x07 after the closing quote");
}

TEST(limits)
{
        struct mx_csv_limits few_fields = { .max_fields = 3 }, short_fields = { .max_field = 5 },
                             short_record = { .max_record = 8 };
        _cleanup_free_ char *a = parse("1,2,3\n1,2,3,4\n", &few_fields);
        _cleanup_free_ char *b = parse("12345,\"123456\"\n", &short_fields);
        _cleanup_free_ char *c = parse("\"12\n34\n56\"\n", &short_fields);
        _cleanup_free_ char *d = parse("abcd,efgh,i\n", &short_record);
        _cleanup_free_ char *e = parse("1,2,3\n", &few_fields);

        ASSERT_CONTAINS(a, "ERR -7"); /* E2BIG */
        ASSERT_CONTAINS(a, "line 2: more than 3 fields");
        ASSERT_CONTAINS(b, "line 1, field 2: longer than 5 bytes");
        ASSERT_CONTAINS(c, "line 3, field 1: longer than 5 bytes");
        ASSERT_CONTAINS(d, "line 1: record longer than 8 bytes");
        ASSERT_STREQ(e, "1|2|3");
}

TEST(recovers_after_error)
{
        _cleanup_(mx_csv_freep) struct mx_csv *c = mx_csv_new(NULL);
        _cleanup_free_ char *err = NULL;
        const struct mx_csv_record *rec;

        ASSERT_ERR(mx_csv_feed_line(c, 1, "\"a\"b", 4, &err), EBADMSG);
        ASSERT_FALSE(mx_csv_pending(c));
        ASSERT_EQ(mx_csv_feed_line(c, 2, "x,\"open", 7, NULL), 0);
        ASSERT_TRUE(mx_csv_pending(c));
        mx_csv_reset(c);
        ASSERT_FALSE(mx_csv_pending(c));
        ASSERT_EQ(mx_csv_feed_line(c, 3, "p,q", 3, NULL), 1);
        rec = mx_csv_record(c);
        ASSERT_EQ(rec->n_fields, 2);
        ASSERT_EQ(rec->line, 3);
        ASSERT_STREQ(rec->fields[1], "q");
        ASSERT_OK(mx_csv_finish(c, NULL));
}

TEST(nul_bytes_keep_length)
{
        _cleanup_(mx_csv_freep) struct mx_csv *c = mx_csv_new(NULL);
        const char line[] = { 'a', '\0', 'b', ',', 'c' };
        const struct mx_csv_record *rec;

        ASSERT_EQ(mx_csv_feed_line(c, 1, line, sizeof(line), NULL), 1);
        rec = mx_csv_record(c);
        ASSERT_EQ(rec->n_fields, 2);
        ASSERT_EQ(rec->lens[0], 3);
        ASSERT_TRUE(memcmp(rec->fields[0], "a\0b", 3) == 0);
        ASSERT_STREQ(rec->fields[1], "c");
}

TEST(real_ncu_lines)
{
        /* every data line of the real details report splits into 15 fields plus the Rule columns */
        _cleanup_free_ char *path = test_source_path("tests/fixtures/gpu-h200/ncu-details.csv");
        _cleanup_free_ char *text = test_read_file(path, NULL);
        _cleanup_(mx_csv_freep) struct mx_csv *c = mx_csv_new(NULL);
        _cleanup_(mx_lines_freep) struct mx_lines *l = mx_lines_new_buffer(text, strlen(text), 1 << 20, 0);
        unsigned records = 0, with_rules = 0, noise = 0;
        const char *line;
        size_t len;

        while (mx_lines_next(l, &line, &len) > 0) {
                const struct mx_csv_record *rec;

                if (len == 0 || line[0] != '"') { /* ==PROF== lines and the program's output */
                        noise++;
                        continue;
                }
                ASSERT_EQ(mx_csv_feed_line(c, mx_lines_number(l), line, len, NULL), 1);
                rec = mx_csv_record(c);
                ASSERT_TRUE(rec->n_fields == 16 || rec->n_fields == 20);
                with_rules += rec->n_fields == 20 && *rec->fields[15];
                records++;
        }
        ASSERT_EQ(noise, 3);
        ASSERT_EQ(records, 944);   /* header + 943 rows */
        ASSERT_EQ(with_rules, 44); /* the header and 43 rows with a rule */
}
