/* SPDX-License-Identifier: MIT */
#include "test.h"

#include "lines.h"

#include <fcntl.h>

/* Collect all lines of a reader as "a|b|c", "!" for a refused line. */
static char *collect(struct mx_lines *l)
{
        struct mx_buf b = MX_BUF_INIT;
        const char *line;
        size_t len;
        int r;

        mx_buf_puts(&b, "");
        while ((r = mx_lines_next(l, &line, &len)) != 0) {
                if (b.len)
                        mx_buf_putc(&b, '|');
                if (r == -E2BIG)
                        mx_buf_putc(&b, '!');
                else {
                        ASSERT_EQ(r, 1);
                        mx_buf_add(&b, line, len);
                }
        }
        return mx_buf_steal(&b);
}

static char *collect_buffer(const char *s, size_t max, unsigned flags)
{
        _cleanup_(mx_lines_freep) struct mx_lines *l = mx_lines_new_buffer(s, strlen(s), max, flags);

        return collect(l);
}

static char *collect_fd(const char *s, size_t max, unsigned flags)
{
        _cleanup_free_ char *path = xasprintf("%s/lines.txt", test_tmpdir());
        _cleanup_(mx_lines_freep) struct mx_lines *l = NULL;
        _cleanup_close_ int fd = -1;

        test_write_file(path, s);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        l = mx_lines_new_fd(fd, max, flags);
        return collect(l);
}

TEST(terminators)
{
        /* the same answers from memory and from a file */
        char *(*readers[])(const char *, size_t, unsigned) = { collect_buffer, collect_fd };

        for (size_t i = 0; i < ELEMENTSOF(readers); i++) {
                _cleanup_free_ char *a = readers[i]("one\ntwo\r\nthree", 100, 0);
                _cleanup_free_ char *b = readers[i]("x\n\n\ny\n", 100, 0);
                _cleanup_free_ char *c = readers[i]("", 100, 0);
                _cleanup_free_ char *d = readers[i]("cr\rinside\n", 100, 0);

                ASSERT_STREQ(a, "one|two|three");
                ASSERT_STREQ(b, "x|||y");
                ASSERT_STREQ(c, "");
                ASSERT_STREQ(d, "cr\rinside");
        }
}

TEST(too_long)
{
        char *(*readers[])(const char *, size_t, unsigned) = { collect_buffer, collect_fd };

        for (size_t i = 0; i < ELEMENTSOF(readers); i++) {
                _cleanup_free_ char *a = readers[i]("short\nthis line is too long\nok\n", 8, 0);
                _cleanup_free_ char *b =
                        readers[i]("short\nthis line is too long\nok\n", 8, MX_LINES_TRUNCATE);
                _cleanup_free_ char *c = readers[i]("exactly8\n12345678", 8, 0);
                _cleanup_free_ char *d = readers[i]("endless line without end", 4, MX_LINES_TRUNCATE);

                ASSERT_STREQ(a, "short|!|ok");
                ASSERT_STREQ(b, "short|this lin|ok");
                ASSERT_STREQ(c, "exactly8|12345678");
                ASSERT_STREQ(d, "endl");
        }
}

TEST(large_file_in_chunks)
{
        /* many lines across several read() chunks, one longer than a chunk */
        _cleanup_free_ char *path = xasprintf("%s/big.txt", test_tmpdir());
        _cleanup_(mx_lines_freep) struct mx_lines *l = NULL;
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        _cleanup_close_ int fd = -1;
        const char *line;
        size_t len, long_len = 3 * MX_LINES_CHUNK + 17;
        unsigned n = 0;
        int r;

        for (int i = 0; i < 20000; i++)
                mx_buf_printf(&b, "line %d\n", i);
        for (size_t i = 0; i < long_len; i++)
                mx_buf_putc(&b, 'x');
        mx_buf_puts(&b, "\nlast\n");
        test_write_file(path, b.data);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        l = mx_lines_new_fd(fd, 4 * MX_LINES_CHUNK, 0);
        while ((r = mx_lines_next(l, &line, &len)) > 0) {
                if (n < 20000) {
                        char want[32];

                        snprintf(want, sizeof(want), "line %u", n);
                        ASSERT_EQ(len, strlen(want));
                        ASSERT_TRUE(memcmp(line, want, len) == 0);
                } else if (n == 20000)
                        ASSERT_EQ(len, long_len);
                else
                        ASSERT_TRUE(len == 4 && memcmp(line, "last", 4) == 0);
                n++;
        }
        ASSERT_EQ(r, 0);
        ASSERT_EQ(n, 20002);
        ASSERT_EQ(mx_lines_number(l), 20002);
}
