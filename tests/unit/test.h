/* SPDX-License-Identifier: MIT */
/*
 * A small unit-test harness in the manner of systemd's src/shared/tests.h:
 * TEST(name) { ... } registers a function in an ELF section; the generated main
 * runs them all (or those named on the command line, or in $TESTFUNCS), and the
 * ASSERT_* macros report file:line with both values and fail the binary.
 *
 * Each test binary is one tests/unit/test-*.c file; CMake registers it with
 * ctest. A test that cannot run here calls test_skip(), which exits 77.
 *
 * MX_SOURCE_DIR and MX_BUILD_DIR are defined by CMake so tests can find
 * fixtures (../shared is copied into tests/fixtures at build time).
 */
#pragma once

#include "util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

struct test_entry {
        const char *name;
        void (*func)(void);
};

#define TEST(n)                                                                                             \
        static void test_##n(void);                                                                         \
        static const struct test_entry test_entry_##n                                                       \
                __attribute__((used, section("mx_tests"), aligned(sizeof(void *)))) = { #n, test_##n };     \
        static void test_##n(void)

extern const struct test_entry __start_mx_tests[];
extern const struct test_entry __stop_mx_tests[];

extern unsigned test_failures;
extern const char *test_current;

_noreturn_ void test_fail(const char *file, int line, const char *fmt, ...) _printf_(3, 4);
_noreturn_ void test_skip(const char *why);

/* A fresh temporary directory, removed (recursively) when the binary exits. */
const char *test_tmpdir(void);
/* Absolute path of a file under the source tree; static buffer per call site is not used: caller frees. */
char *test_source_path(const char *rel);
/* Read a whole file into a NUL-terminated buffer; aborts the test on failure. */
char *test_read_file(const char *path, size_t *ret_len);
/* Write a string to a file; aborts the test on failure. */
void test_write_file(const char *path, const char *content);

#define ASSERT_TRUE(expr)                                                                                   \
        do {                                                                                                \
                if (!(expr))                                                                                \
                        test_fail(__FILE__, __LINE__, "expected true: %s", #expr);                          \
        } while (0)
#define ASSERT_FALSE(expr)                                                                                  \
        do {                                                                                                \
                if (expr)                                                                                   \
                        test_fail(__FILE__, __LINE__, "expected false: %s", #expr);                         \
        } while (0)
#define ASSERT_EQ(a, b)                                                                                     \
        do {                                                                                                \
                intmax_t _a = (intmax_t)(a), _b = (intmax_t)(b);                                            \
                if (_a != _b)                                                                               \
                        test_fail(__FILE__, __LINE__, "%s == %s: %jd != %jd", #a, #b, _a, _b);              \
        } while (0)
#define ASSERT_NE(a, b)                                                                                     \
        do {                                                                                                \
                intmax_t _a = (intmax_t)(a), _b = (intmax_t)(b);                                            \
                if (_a == _b)                                                                               \
                        test_fail(__FILE__, __LINE__, "%s != %s: both %jd", #a, #b, _a);                    \
        } while (0)
#define ASSERT_LE(a, b)                                                                                     \
        do {                                                                                                \
                intmax_t _a = (intmax_t)(a), _b = (intmax_t)(b);                                            \
                if (!(_a <= _b))                                                                            \
                        test_fail(__FILE__, __LINE__, "%s <= %s: %jd > %jd", #a, #b, _a, _b);               \
        } while (0)
#define ASSERT_LT(a, b)                                                                                     \
        do {                                                                                                \
                intmax_t _a = (intmax_t)(a), _b = (intmax_t)(b);                                            \
                if (!(_a < _b))                                                                             \
                        test_fail(__FILE__, __LINE__, "%s < %s: %jd >= %jd", #a, #b, _a, _b);               \
        } while (0)
#define ASSERT_OK(expr)                                                                                     \
        do {                                                                                                \
                intmax_t _r = (intmax_t)(expr);                                                             \
                if (_r < 0)                                                                                 \
                        test_fail(__FILE__, __LINE__, "%s failed: %jd (%s)", #expr, _r, strerror((int)-_r)); \
        } while (0)
#define ASSERT_ERR(expr, err)                                                                               \
        do {                                                                                                \
                intmax_t _r = (intmax_t)(expr);                                                             \
                if (_r != -(intmax_t)(err))                                                                 \
                        test_fail(__FILE__, __LINE__, "%s: expected -%s, got %jd", #expr, #err, _r);        \
        } while (0)
#define ASSERT_STREQ(a, b)                                                                                  \
        do {                                                                                                \
                const char *_a = (a), *_b = (b);                                                            \
                if (!streq_ptr(_a, _b))                                                                     \
                        test_fail(__FILE__, __LINE__, "%s == %s: '%s' != '%s'", #a, #b, strna(_a),          \
                                  strna(_b));                                                               \
        } while (0)
#define ASSERT_NULL(p)                                                                                      \
        do {                                                                                                \
                if ((p) != NULL)                                                                            \
                        test_fail(__FILE__, __LINE__, "expected NULL: %s", #p);                             \
        } while (0)
#define ASSERT_NOT_NULL(p)                                                                                  \
        do {                                                                                                \
                if ((p) == NULL)                                                                            \
                        test_fail(__FILE__, __LINE__, "expected non-NULL: %s", #p);                         \
        } while (0)
/* Substring check, for error messages. */
#define ASSERT_CONTAINS(hay, needle)                                                                        \
        do {                                                                                                \
                const char *_h = (hay), *_n = (needle);                                                     \
                if (!_h || !strstr(_h, _n))                                                                 \
                        test_fail(__FILE__, __LINE__, "'%s' does not contain '%s'", strna(_h), _n);         \
        } while (0)
