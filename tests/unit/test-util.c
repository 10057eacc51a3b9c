/* SPDX-License-Identifier: MIT */
#include "test.h"

#include <sys/stat.h>

TEST(parse_int64)
{
        int64_t v = 0;

        ASSERT_OK(mx_parse_int64("42", 0, 100, &v));
        ASSERT_EQ(v, 42);
        ASSERT_ERR(mx_parse_int64("101", 0, 100, &v), ERANGE);
        ASSERT_ERR(mx_parse_int64("4x", 0, 100, &v), EINVAL);
        ASSERT_ERR(mx_parse_int64("", 0, 100, &v), EINVAL);
        ASSERT_ERR(mx_parse_int64("99999999999999999999", INT64_MIN, INT64_MAX, &v), ERANGE);
        ASSERT_EQ(v, 42); /* untouched on failure */
}

TEST(parse_duration)
{
        int64_t ms = 0;

        ASSERT_OK(mx_parse_duration_ms("300", &ms));
        ASSERT_EQ(ms, 300000);
        ASSERT_OK(mx_parse_duration_ms("5m", &ms));
        ASSERT_EQ(ms, 300000);
        ASSERT_OK(mx_parse_duration_ms("250ms", &ms));
        ASSERT_EQ(ms, 250);
        ASSERT_OK(mx_parse_duration_ms("1.5s", &ms));
        ASSERT_EQ(ms, 1500);
        ASSERT_OK(mx_parse_duration_ms("2h", &ms));
        ASSERT_EQ(ms, 7200000);
        ASSERT_ERR(mx_parse_duration_ms("5 parsecs", &ms), EINVAL);
        ASSERT_ERR(mx_parse_duration_ms("-1s", &ms), EINVAL);
}

TEST(strv)
{
        _cleanup_strv_free_ char **l = NULL, **c = NULL;

        ASSERT_EQ(strv_length(l), 0);
        strv_push(&l, "a");
        strv_push(&l, "b");
        strv_consume(&l, xstrdup("c"));
        ASSERT_EQ(strv_length(l), 3);
        ASSERT_TRUE(strv_contains(l, "b"));
        ASSERT_FALSE(strv_contains(l, "d"));
        c = strv_copy(l);
        ASSERT_STREQ(c[2], "c");
        ASSERT_NULL(c[3]);
}

TEST(buf)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        _cleanup_free_ char *s = NULL;

        for (int i = 0; i < 1000; i++)
                mx_buf_printf(&b, "%d,", i);
        ASSERT_EQ(b.len, strlen(b.data));
        ASSERT_TRUE(startswith(b.data, "0,1,2,"));
        ASSERT_TRUE(endswith(b.data, "998,999,"));
        s = mx_buf_steal(&b);
        ASSERT_EQ(b.len, 0);
        ASSERT_NULL(b.data);
}

TEST(escape)
{
        _cleanup_free_ char *a = mx_escape("plain text", 0);
        _cleanup_free_ char *b = mx_escape("bell\a\x1b[31mred\n", 0);
        _cleanup_free_ char *c = mx_escape("caf\xc3\xa9 \xff", 0);
        _cleanup_free_ char *d = mx_escape("abcdef", 3);

        ASSERT_STREQ(a, "plain text");
        ASSERT_STREQ(b, "bell\\x07\\x1b[31mred\\x0a");
        ASSERT_STREQ(c, "caf\xc3\xa9 \\xff");
        ASSERT_STREQ(d, "abc…");
}

TEST(fnv1a64)
{
        /* Published FNV-1a 64 test vectors: identities depend on these never changing. */
        ASSERT_EQ(mx_fnv1a64("", 0, MX_FNV1A64_INIT), (intmax_t)UINT64_C(0xcbf29ce484222325));
        ASSERT_EQ(mx_fnv1a64("a", 1, MX_FNV1A64_INIT), (intmax_t)UINT64_C(0xaf63dc4c8601ec8c));
        ASSERT_EQ(mx_fnv1a64("foobar", 6, MX_FNV1A64_INIT), (intmax_t)UINT64_C(0x85944171f73967e8));
}

TEST(format_duration)
{
        _cleanup_free_ char *a = mx_format_duration(45000);
        _cleanup_free_ char *b = mx_format_duration(12300000);
        _cleanup_free_ char *c = mx_format_duration(185 * 1000000LL);
        _cleanup_free_ char *d = mx_format_duration(3720 * 1000000LL);

        ASSERT_STREQ(a, "45ms");
        ASSERT_STREQ(b, "12.3s");
        ASSERT_STREQ(c, "3m05s");
        ASSERT_STREQ(d, "1h02m");
}

TEST(mkdir_p)
{
        _cleanup_free_ char *deep = xasprintf("%s/a/b/c", test_tmpdir());
        _cleanup_free_ char *file = xasprintf("%s/a/file", test_tmpdir());
        _cleanup_free_ char *below = xasprintf("%s/a/file/d", test_tmpdir());
        struct stat st;

        ASSERT_OK(mx_mkdir_p(deep, 0750));
        ASSERT_OK(stat(deep, &st));
        ASSERT_TRUE(S_ISDIR(st.st_mode));
        ASSERT_OK(mx_mkdir_p(deep, 0750)); /* already there */
        test_write_file(file, "x");
        ASSERT_ERR(mx_mkdir_p(file, 0750), ENOTDIR);
        ASSERT_ERR(mx_mkdir_p(below, 0750), ENOTDIR);
}
