/* SPDX-License-Identifier: MIT */
/* The base helpers every part shares: allocation, strings, string vectors, the byte buffer (util.h). */
#include "util.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/stat.h>
#include <time.h>

void mx_die(const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        fputs("mxmatrix: fatal: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
        abort();
}

void *xmalloc(size_t size)
{
        void *p = malloc(size ? size : 1);

        if (!p)
                mx_die("out of memory allocating %zu bytes", size);
        return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
        void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

        if (!p)
                mx_die("out of memory allocating %zu x %zu bytes", nmemb, size);
        return p;
}

void *xreallocarray(void *p, size_t nmemb, size_t size)
{
        size_t total;

        if (__builtin_mul_overflow(nmemb, size, &total))
                mx_die("allocation size overflow (%zu x %zu)", nmemb, size);
        p = realloc(p, total ? total : 1);
        if (!p)
                mx_die("out of memory allocating %zu bytes", total);
        return p;
}

char *xstrdup(const char *s)
{
        char *r = strdup(s);

        if (!r)
                mx_die("out of memory");
        return r;
}

char *xstrndup(const char *s, size_t n)
{
        char *r = strndup(s, n);

        if (!r)
                mx_die("out of memory");
        return r;
}

char *xvasprintf(const char *fmt, va_list ap)
{
        char *r;

        if (vasprintf(&r, fmt, ap) < 0)
                mx_die("out of memory");
        return r;
}

char *xasprintf(const char *fmt, ...)
{
        va_list ap;
        char *r;

        va_start(ap, fmt);
        r = xvasprintf(fmt, ap);
        va_end(ap);
        return r;
}

int mx_reterr(char **reterr, int r, const char *fmt, ...)
{
        va_list ap;

        if (reterr) {
                va_start(ap, fmt);
                *reterr = xvasprintf(fmt, ap);
                va_end(ap);
        }
        return r;
}

void mx_grow(void **array, size_t *allocated, size_t need, size_t elem)
{
        size_t n;

        if (need <= *allocated)
                return;
        n = MX_MAX(need, *allocated * 2);
        n = MX_MAX(n, (size_t)8);
        *array = xreallocarray(*array, n, elem);
        memset((char *)*array + *allocated * elem, 0, (n - *allocated) * elem);
        *allocated = n;
}

bool endswith(const char *s, const char *suffix)
{
        size_t ls = strlen(s), lx = strlen(suffix);

        return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

int mx_parse_int64(const char *s, int64_t min, int64_t max, int64_t *ret)
{
        char *end;
        long long v;

        if (!s || !*s)
                return -EINVAL;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (*end != '\0' || end == s)
                return -EINVAL;
        if (errno == ERANGE || v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int mx_parse_duration_ms(const char *s, int64_t *ret_ms)
{
        static const struct {
                const char *suffix;
                int64_t ms;
        } units[] = {
                { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "min", 60000 }, { "h", 3600000 }, { "", 1000 },
        };
        char *end;
        double v;

        if (!s || !*s)
                return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || v < 0)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(units); i++) {
                if (!streq(end, units[i].suffix))
                        continue;
                if (v * units[i].ms > (double)INT64_MAX / 2)
                        return -ERANGE;
                *ret_ms = (int64_t)(v * units[i].ms + 0.5);
                return 0;
        }
        return -EINVAL;
}

char **strv_free(char **l)
{
        if (!l)
                return NULL;
        for (char **p = l; *p; p++)
                free(*p);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l)
{
        size_t n = 0;

        while (l && l[n])
                n++;
        return n;
}

void strv_consume(char ***l, char *s)
{
        size_t n = strv_length(*l);

        *l = xreallocarray(*l, n + 2, sizeof(char *));
        (*l)[n] = s;
        (*l)[n + 1] = NULL;
}

void strv_push(char ***l, const char *s)
{
        strv_consume(l, xstrdup(s));
}

char **strv_copy(char *const *l)
{
        size_t n = strv_length(l);
        char **r = xcalloc(n + 1, sizeof(char *));

        for (size_t i = 0; i < n; i++)
                r[i] = xstrdup(l[i]);
        return r;
}

bool strv_contains(char *const *l, const char *s)
{
        for (size_t i = 0; l && l[i]; i++)
                if (streq(l[i], s))
                        return true;
        return false;
}

void mx_buf_add(struct mx_buf *b, const void *p, size_t n)
{
        if (b->len + n + 1 > b->cap) {
                size_t cap = MX_MAX(b->cap * 2, b->len + n + 1);

                cap = MX_MAX(cap, (size_t)64);
                b->data = xreallocarray(b->data, cap, 1);
                b->cap = cap;
        }
        if (n)
                memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = '\0';
}

void mx_buf_puts(struct mx_buf *b, const char *s)
{
        mx_buf_add(b, s, strlen(s));
}

void mx_buf_putc(struct mx_buf *b, char c)
{
        mx_buf_add(b, &c, 1);
}

void mx_buf_printf(struct mx_buf *b, const char *fmt, ...)
{
        va_list ap;
        _cleanup_free_ char *s = NULL;

        va_start(ap, fmt);
        s = xvasprintf(fmt, ap);
        va_end(ap);
        mx_buf_puts(b, s);
}

void mx_buf_reset(struct mx_buf *b)
{
        b->len = 0;
        if (b->data)
                b->data[0] = '\0';
}

char *mx_buf_steal(struct mx_buf *b)
{
        char *r = b->data ? b->data : xstrdup("");

        *b = MX_BUF_INIT;
        return r;
}

void mx_buf_free(struct mx_buf *b)
{
        free(b->data);
        *b = MX_BUF_INIT;
}

uint64_t mx_fnv1a64(const void *p, size_t n, uint64_t h)
{
        const unsigned char *c = p;

        for (size_t i = 0; i < n; i++) {
                h ^= c[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

static int64_t clock_us(clockid_t id)
{
        struct timespec ts;

        if (clock_gettime(id, &ts) < 0)
                mx_die("clock_gettime: %m");
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t mx_now_mono_us(void)
{
        return clock_us(CLOCK_MONOTONIC);
}

int64_t mx_now_real_us(void)
{
        return clock_us(CLOCK_REALTIME);
}

char *mx_format_time(int64_t real_us)
{
        time_t t = (time_t)(real_us / 1000000);
        struct tm tm;
        char buf[64];

        if (!localtime_r(&t, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm) == 0)
                return xstrdup("?");
        return xstrdup(buf);
}

char *mx_format_duration(int64_t us)
{
        int64_t s;

        if (us < 0)
                us = 0;
        if (us < 1000000)
                return xasprintf("%" PRId64 "ms", us / 1000);
        if (us < 60 * 1000000LL)
                return xasprintf("%.1fs", (double)us / 1e6);
        s = us / 1000000;
        if (s < 3600)
                return xasprintf("%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
        return xasprintf("%" PRId64 "h%02" PRId64 "m", s / 3600, (s / 60) % 60);
}

/* Length of a valid UTF-8 sequence at s (of at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
        size_t len;
        uint32_t cp;

        if (s[0] < 0x80)
                return 1;
        if ((s[0] & 0xe0) == 0xc0)
                len = 2, cp = s[0] & 0x1f;
        else if ((s[0] & 0xf0) == 0xe0)
                len = 3, cp = s[0] & 0x0f;
        else if ((s[0] & 0xf8) == 0xf0)
                len = 4, cp = s[0] & 0x07;
        else
                return 0;
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return len;
}

char *mx_escape(const char *s, size_t max)
{
        struct mx_buf b = MX_BUF_INIT;
        const unsigned char *p = (const unsigned char *)s;
        size_t n = strlen(s), i = 0;
        bool cut = false;

        if (max && n > max) {
                n = max;
                cut = true;
        }
        while (i < n) {
                size_t l = utf8_len(p + i, n - i);

                if (l == 1 && (p[i] < 0x20 || p[i] == 0x7f) && p[i] != '\t') {
                        mx_buf_printf(&b, "\\x%02x", p[i]);
                        i++;
                } else if (l == 1 && p[i] == '\\') {
                        mx_buf_puts(&b, "\\\\");
                        i++;
                } else if (l == 0) {
                        mx_buf_printf(&b, "\\x%02x", p[i]);
                        i++;
                } else {
                        mx_buf_add(&b, p + i, l);
                        i += l;
                }
        }
        if (cut)
                mx_buf_puts(&b, "…");
        return mx_buf_steal(&b);
}

char *mx_utf8_sanitize(const char *p, size_t n, bool partial_end, size_t *ret_used)
{
        const unsigned char *u = (const unsigned char *)p;
        struct mx_buf b = MX_BUF_INIT;
        size_t i = 0;

        while (i < n) {
                size_t l = u[i] ? utf8_len(u + i, n - i) : 0;

                if (l > 0) {
                        mx_buf_add(&b, u + i, l);
                        i += l;
                        continue;
                }
                /* A lead byte whose sequence is cut off by the end of the chunk: wait for more. */
                if (partial_end && u[i] >= 0xc0 && n - i < 4) {
                        size_t want = (u[i] & 0xe0) == 0xc0 ? 2 : (u[i] & 0xf0) == 0xe0 ? 3 : 4;
                        bool ok = want > n - i;

                        for (size_t k = i + 1; ok && k < n; k++)
                                ok = (u[k] & 0xc0) == 0x80;
                        if (ok)
                                break;
                }
                mx_buf_puts(&b, "\xef\xbf\xbd");
                i++;
        }
        if (ret_used)
                *ret_used = i;
        return mx_buf_steal(&b);
}

int mx_mkdir_p(const char *path, mode_t mode)
{
        _cleanup_free_ char *p = xstrdup(path);

        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = '\0';
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(p, mode) < 0) {
                struct stat st;

                if (errno != EEXIST)
                        return -errno;
                /* Like mkdir -p: something else of that name is not the directory asked for. */
                if (stat(p, &st) < 0)
                        return -errno;
                if (!S_ISDIR(st.st_mode))
                        return -ENOTDIR;
        }
        return 0;
}

static const char *file_type_phrase(mode_t m)
{
        return S_ISFIFO(m)   ? "is a FIFO"
               : S_ISDIR(m)  ? "is a directory"
               : S_ISCHR(m)  ? "is a character device"
               : S_ISBLK(m)  ? "is a block device"
               : S_ISSOCK(m) ? "is a socket"
                             : "is not a regular file";
}

int mx_open_regular(const char *path, uint64_t max_bytes, int *ret_fd, char **reterr)
{
        struct stat st;
        int fd, e;

        fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                e = errno;
                if (e == ELOOP)
                        return mx_reterr(reterr, -e, "%s: is a symbolic link (not followed)", path);
                return mx_reterr(reterr, -e, "%s: %s", path, strerror(e));
        }
        if (fstat(fd, &st) < 0) {
                e = errno;
                close(fd);
                return mx_reterr(reterr, -e, "%s: %s", path, strerror(e));
        }
        if (!S_ISREG(st.st_mode)) {
                close(fd);
                return mx_reterr(reterr, -EINVAL, "%s: %s, not a regular file", path, file_type_phrase(st.st_mode));
        }
        if ((uint64_t)st.st_size > max_bytes) {
                close(fd);
                return mx_reterr(reterr, -EFBIG, "%s: %" PRIu64 " bytes, which exceeds the limit of %" PRIu64 " bytes",
                                 path, (uint64_t)st.st_size, max_bytes);
        }
        *ret_fd = fd;
        return 0;
}

int mx_read_bounded(int fd, size_t max, char **ret, size_t *ret_len)
{
        _cleanup_free_ char *buf = xmalloc(max + 2);
        size_t len = 0;

        while (len <= max) {
                ssize_t n = read(fd, buf + len, max + 1 - len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        if (len > max)
                return -EFBIG;
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}
