/* SPDX-License-Identifier: MIT */
/*
 * Base helpers shared by every part of mxmatrix: ownership through
 * __attribute__((cleanup)), allocation that aborts on OOM (c-style.md §7: the
 * daemon restarts and SQLite keeps everything, so an abort is recoverable),
 * small string and string-vector helpers, and a growable byte buffer.
 *
 * Conventions used everywhere:
 *   - fallible functions return 0 or a negative errno; results go to ret_*
 *     out-parameters that are left untouched on failure;
 *   - a human-readable reason, where one helps, goes to a char **reterr the
 *     caller frees;
 *   - destructors accept NULL and return NULL.
 */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))
#define _warn_unused_ __attribute__((warn_unused_result))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MX_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MX_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Move ownership out of a cleanup variable. */
#define TAKE_PTR(p)                                                                                         \
        ({                                                                                                  \
                __typeof__(p) _p_ = (p);                                                                    \
                (p) = NULL;                                                                                 \
                _p_;                                                                                        \
        })
#define TAKE_FD(fd)                                                                                         \
        ({                                                                                                  \
                int _fd_ = (fd);                                                                            \
                (fd) = -1;                                                                                  \
                _fd_;                                                                                       \
        })

/* Abort with a message: for impossible states and OOM only, never for input. */
_noreturn_ _printf_(1, 2) void mx_die(const char *fmt, ...);

void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xreallocarray(void *p, size_t nmemb, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
_printf_(1, 2) char *xasprintf(const char *fmt, ...);
char *xvasprintf(const char *fmt, va_list ap) _printf_(1, 0);

/* Grow *array (of *allocated elements of size elem) so that it holds at least need. */
void mx_grow(void **array, size_t *allocated, size_t need, size_t elem);
#define MX_GROW(array, allocated, need) mx_grow((void **)&(array), &(allocated), (need), sizeof(*(array)))

static inline void freep(void *p)
{
        free(*(void **)p);
}
static inline void closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
static inline void fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}
/* jansson provides json_decrefp (its json_auto_t cleanup). */
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_json_ _cleanup_(json_decrefp)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Free a set of cleanup pointers from a void* (for struct-typed freep helpers). */
#define DEFINE_POINTER_CLEANUP(type, func)                                                                  \
        static inline void func##p(type **p)                                                                \
        {                                                                                                   \
                if (*p)                                                                                     \
                        *p = func(*p);                                                              \
        }

/* ---- strings ---- */

static inline bool streq(const char *a, const char *b)
{
        return strcmp(a, b) == 0;
}
static inline bool streq_ptr(const char *a, const char *b)
{
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}
static inline bool startswith(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}
bool endswith(const char *s, const char *suffix);
static inline const char *strna(const char *s)
{
        return s ? s : "n/a";
}
static inline const char *strempty(const char *s)
{
        return s ? s : "";
}

/* Set *reterr to a formatted reason (when reterr is not NULL) and return r: "return mx_reterr(reterr, -EINVAL, ...)". */
_printf_(3, 4) int mx_reterr(char **reterr, int r, const char *fmt, ...);

/* Parse a whole decimal string into an integer in [min, max]; -EINVAL / -ERANGE. */
int mx_parse_int64(const char *s, int64_t min, int64_t max, int64_t *ret);
/* Parse a duration such as "300", "300s", "5m", "1h", "250ms" into milliseconds. */
int mx_parse_duration_ms(const char *s, int64_t *ret_ms);

/* ---- string vectors: NULL-terminated arrays of owned strings ---- */

char **strv_free(char **l);
DEFINE_POINTER_CLEANUP(char *, strv_free)
#define _cleanup_strv_free_ _cleanup_(strv_freep)
size_t strv_length(char *const *l);
/* Append a copy of s; *l may be NULL. */
void strv_push(char ***l, const char *s);
/* Append s and take ownership of it. */
void strv_consume(char ***l, char *s);
char **strv_copy(char *const *l);
bool strv_contains(char *const *l, const char *s);

/* ---- growable byte buffer, always NUL-terminated ---- */

struct mx_buf {
        char *data;
        size_t len;
        size_t cap;
};
#define MX_BUF_INIT ((struct mx_buf){ NULL, 0, 0 })
void mx_buf_add(struct mx_buf *b, const void *p, size_t n);
void mx_buf_puts(struct mx_buf *b, const char *s);
void mx_buf_putc(struct mx_buf *b, char c);
_printf_(2, 3) void mx_buf_printf(struct mx_buf *b, const char *fmt, ...);
void mx_buf_reset(struct mx_buf *b);
/* Return the contents (never NULL) and reset the buffer; caller frees. */
char *mx_buf_steal(struct mx_buf *b);
void mx_buf_free(struct mx_buf *b);
#define _cleanup_buf_ _cleanup_(mx_buf_free)

/* ---- hashing ---- */

/* 64-bit FNV-1a; stable across platforms and releases (used for identities). */
uint64_t mx_fnv1a64(const void *p, size_t n, uint64_t h);
#define MX_FNV1A64_INIT UINT64_C(0xcbf29ce484222325)

/* ---- time ---- */

/* CLOCK_MONOTONIC in microseconds. */
int64_t mx_now_mono_us(void);
/* CLOCK_REALTIME in microseconds since the epoch. */
int64_t mx_now_real_us(void);
/* Format a wall-clock time (µs since the epoch) as local "YYYY-MM-DD HH:MM:SS". */
char *mx_format_time(int64_t real_us);
/* Format a duration in µs as "1h02m", "3m05s", "12.3s", "45ms". */
char *mx_format_duration(int64_t us);

/* ---- escaping ---- */

/*
 * Copy s, replacing control bytes and invalid UTF-8 with \xNN escapes, so text
 * from a target server or a client cannot forge log lines or terminal escapes.
 * At most max input bytes are used (0 = all); "…" marks truncation.
 */
char *mx_escape(const char *s, size_t max);

/*
 * Make n bytes valid UTF-8 (as JSON strings must be): invalid bytes and NULs
 * become U+FFFD. An incomplete sequence at the very end is left out when
 * more input may follow (partial_end), so *ret_used may be less than n.
 */
char *mx_utf8_sanitize(const char *p, size_t n, bool partial_end, size_t *ret_used);

/* mkdir -p: create path and its missing parents with mode; -ENOTDIR if path is something else. */
int mx_mkdir_p(const char *path, mode_t mode);

/*
 * Open a file that another party wrote (a server's profiler report) for reading, in a process that must not
 * wait: O_NONBLOCK (a FIFO does not wait for a writer), O_NOFOLLOW (not through a symbolic link at its last
 * component), then fstat(): a regular file of at most max_bytes. The fd in *ret_fd, or -ENOENT etc. from
 * open(), -ELOOP (a symbolic link), -EINVAL (not a regular file: "is a FIFO", "is a directory"), -EFBIG
 * (larger than max_bytes), with "PATH: why" in *reterr. A file may still grow after the check: its reader
 * bounds what it reads too.
 */
int mx_open_regular(const char *path, uint64_t max_bytes, int *ret_fd, char **reterr);

/*
 * All of fd, at most max bytes (reads one byte past max, so a file that grew after its size was checked is
 * told apart): a NUL-terminated buffer in *ret and its length, or -EFBIG (longer than max) or -errno.
 */
int mx_read_bounded(int fd, size_t max, char **ret, size_t *ret_len);
