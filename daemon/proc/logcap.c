/* SPDX-License-Identifier: MIT */
/* A server's output to a capped file, to journald and past the scanners that watch it. */
#include "logcap.h"

#include <fcntl.h>
#include <sys/stat.h>

#define LOGCAP_SOURCES_MAX 4
/* 64 KiB buffers read per wake-up (or drain) and source: 1 MiB, an unprivileged writer's largest pipe. */
#define LOGCAP_READS_PER_CALL 16

struct source {
        struct logcap *lc;
        int fd;
        struct event *ev;
        struct mx_buf partial; /* bytes after the last newline */
        bool eof;
};

struct logcap {
        struct event_base *base;
        char *path;
        int fd;
        uint64_t written, max;
        bool truncated;
        const struct logcap_ops *ops;
        void *ud;
        struct source src[LOGCAP_SOURCES_MAX];
        size_t n_src;
};

static void file_write(struct logcap *lc, const char *p, size_t n)
{
        static const char marker[] = "\n[mxmatrixd] log truncated: the size cap was reached; later output "
                                     "is still scanned for crash signatures\n";

        if (lc->truncated)
                return;
        if (lc->written + n > lc->max) {
                n = (size_t)(lc->max - lc->written);
                lc->truncated = true;
        }
        while (n > 0) {
                ssize_t w = write(lc->fd, p, n);

                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        /* Disk full or similar: stop writing, keep scanning. */
                        lc->truncated = true;
                        return;
                }
                p += w;
                n -= (size_t)w;
                lc->written += (uint64_t)w;
        }
        if (lc->truncated)
                (void)!write(lc->fd, marker, sizeof(marker) - 1);
}

static void emit_line(struct logcap *lc, const char *p, size_t n)
{
        if (n > 0 && p[n - 1] == '\r')
                n--;
        if (lc->ops->line)
                lc->ops->line(lc->ud, p, MX_MIN(n, (size_t)LOGCAP_LINE_MAX));
}

/* Split new bytes into lines, joining with what was left from the last read. */
static void feed_lines(struct source *s, const char *p, size_t n)
{
        const char *end = p + n;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));

                if (!nl) {
                        /* Keep at most one line's worth; the rest of an endless line is dropped. */
                        size_t room = LOGCAP_LINE_MAX > s->partial.len ? LOGCAP_LINE_MAX - s->partial.len : 0;
                        mx_buf_add(&s->partial, p, MX_MIN(room, (size_t)(end - p)));
                        return;
                }
                if (s->partial.len > 0) {
                        size_t room = LOGCAP_LINE_MAX > s->partial.len ? LOGCAP_LINE_MAX - s->partial.len : 0;
                        mx_buf_add(&s->partial, p, MX_MIN(room, (size_t)(nl - p)));
                        emit_line(s->lc, s->partial.data, s->partial.len);
                        mx_buf_reset(&s->partial);
                } else
                        emit_line(s->lc, p, (size_t)(nl - p));
                p = nl + 1;
        }
}

static bool all_eof(const struct logcap *lc)
{
        for (size_t i = 0; i < lc->n_src; i++)
                if (!lc->src[i].eof)
                        return false;
        return true;
}

static void source_eof(struct source *s)
{
        struct logcap *lc = s->lc;

        s->eof = true;
        event_del(s->ev);
        if (s->partial.len > 0) {
                emit_line(lc, s->partial.data, s->partial.len);
                mx_buf_reset(&s->partial);
        }
        if (all_eof(lc) && lc->ops->eof)
                lc->ops->eof(lc->ud);
}

/*
 * Read what is available now, at most LOGCAP_READS_PER_CALL buffers: a server
 * that writes faster than its lines are handled must not keep the event loop
 * (or a drain) here for ever; the rest is read on the loop's next pass.
 * Returns false at end of file.
 */
static bool source_read(struct source *s)
{
        char buf[65536];
        bool any = false, open = true;

        for (unsigned i = 0; i < LOGCAP_READS_PER_CALL;) {
                ssize_t n = read(s->fd, buf, sizeof(buf));

                if (n > 0) {
                        file_write(s->lc, buf, (size_t)n);
                        feed_lines(s, buf, (size_t)n);
                        any = true;
                        i++;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                open = !(n == 0 || (n < 0 && errno != EAGAIN));
                break;
        }
        if (any && s->lc->ops->appended)
                s->lc->ops->appended(s->lc->ud);
        return open;
}

static void source_cb(evutil_socket_t fd, short what, void *ud)
{
        struct source *s = ud;

        (void)fd, (void)what;
        if (!source_read(s))
                source_eof(s);
}

int logcap_new(struct event_base *base, const char *path, size_t max_bytes, const struct logcap_ops *ops, void *ud,
               struct logcap **ret)
{
        struct logcap *lc;
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0640);

        if (fd < 0)
                return -errno;
        lc = xcalloc(1, sizeof(*lc));
        lc->base = base;
        lc->path = xstrdup(path);
        lc->fd = fd;
        lc->max = max_bytes;
        lc->ops = ops;
        lc->ud = ud;
        *ret = lc;
        return 0;
}

int logcap_add_source(struct logcap *lc, int fd)
{
        struct source *s;

        if (lc->n_src >= LOGCAP_SOURCES_MAX) {
                close(fd);
                return -E2BIG;
        }
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        s = &lc->src[lc->n_src++];
        *s = (struct source){ .lc = lc, .fd = fd };
        s->ev = event_new(lc->base, fd, EV_READ | EV_PERSIST, source_cb, s);
        if (!s->ev)
                mx_die("out of memory");
        event_add(s->ev, NULL);
        return 0;
}

void logcap_note(struct logcap *lc, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL, *line = NULL;
        va_list ap;

        va_start(ap, fmt);
        msg = xvasprintf(fmt, ap);
        va_end(ap);
        line = xasprintf("[mxmatrixd] %s\n", msg);
        file_write(lc, line, strlen(line));
        emit_line(lc, line, strlen(line) - 1);
        if (lc->ops->appended)
                lc->ops->appended(lc->ud);
}

void logcap_drain(struct logcap *lc)
{
        for (size_t i = 0; i < lc->n_src; i++)
                if (!lc->src[i].eof && !source_read(&lc->src[i]))
                        source_eof(&lc->src[i]);
}

bool logcap_eof(const struct logcap *lc)
{
        return all_eof(lc);
}

uint64_t logcap_bytes(const struct logcap *lc)
{
        return lc->written;
}

const char *logcap_path(const struct logcap *lc)
{
        return lc->path;
}

struct logcap *logcap_free(struct logcap *lc)
{
        if (!lc)
                return NULL;
        for (size_t i = 0; i < lc->n_src; i++) {
                event_free(lc->src[i].ev);
                close(lc->src[i].fd);
                mx_buf_free(&lc->src[i].partial);
        }
        if (lc->fd >= 0)
                close(lc->fd);
        free(lc->path);
        free(lc);
        return NULL;
}
