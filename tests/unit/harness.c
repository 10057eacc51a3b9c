/* SPDX-License-Identifier: MIT */
/* The runner linked into every unit-test binary (see test.h). */
#include "test.h"

#include <ftw.h>
#include <sys/stat.h>

unsigned test_failures;
const char *test_current;
static char *tmpdir;

void test_fail(const char *file, int line, const char *fmt, ...)
{
        va_list ap;

        fprintf(stderr, "FAIL %s (%s:%d): ", strna(test_current), file, line);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        fflush(stderr);
        exit(EXIT_FAILURE);
}

void test_skip(const char *why)
{
        fprintf(stderr, "SKIP %s: %s\n", strna(test_current), why);
        exit(77);
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st, (void)flag, (void)ftw;
        remove(path);
        return 0;
}

static void cleanup_tmpdir(void)
{
        if (tmpdir && !getenv("MX_TEST_KEEP"))
                nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

const char *test_tmpdir(void)
{
        if (!tmpdir) {
                const char *base = getenv("TMPDIR");
                char *t = xasprintf("%s/mxtest.XXXXXX", base ? base : "/tmp");

                if (!mkdtemp(t))
                        test_fail(__FILE__, __LINE__, "mkdtemp: %m");
                tmpdir = t;
                atexit(cleanup_tmpdir);
        }
        return tmpdir;
}

char *test_source_path(const char *rel)
{
        return xasprintf("%s/%s", MX_SOURCE_DIR, rel);
}

char *test_read_file(const char *path, size_t *ret_len)
{
        struct mx_buf b = MX_BUF_INIT;
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char chunk[65536];
        size_t n;

        if (!f)
                test_fail(__FILE__, __LINE__, "open %s: %m", path);
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
                mx_buf_add(&b, chunk, n);
        if (ret_len)
                *ret_len = b.len;
        return mx_buf_steal(&b);
}

void test_write_file(const char *path, const char *content)
{
        _cleanup_fclose_ FILE *f = fopen(path, "we");

        if (!f || fputs(content, f) < 0)
                test_fail(__FILE__, __LINE__, "write %s: %m", path);
}

static bool selected(const char *name, int argc, char **argv)
{
        const char *env = getenv("TESTFUNCS");

        if (argc > 1) {
                for (int i = 1; i < argc; i++)
                        if (streq(argv[i], name))
                                return true;
                return false;
        }
        if (env && *env) {
                _cleanup_free_ char *copy = xstrdup(env);
                char *save = NULL;

                for (char *t = strtok_r(copy, " ,", &save); t; t = strtok_r(NULL, " ,", &save))
                        if (streq(t, name))
                                return true;
                return false;
        }
        return true;
}

int main(int argc, char **argv)
{
        unsigned ran = 0;

        for (const struct test_entry *t = __start_mx_tests; t < __stop_mx_tests; t++) {
                int64_t start;

                if (!selected(t->name, argc, argv))
                        continue;
                test_current = t->name;
                start = mx_now_mono_us();
                t->func();
                fprintf(stderr, "ok   %s (%.3fs)\n", t->name, (double)(mx_now_mono_us() - start) / 1e6);
                ran++;
        }
        test_current = NULL;
        if (ran == 0) {
                fprintf(stderr, "no tests selected\n");
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}
