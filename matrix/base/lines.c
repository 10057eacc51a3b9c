/* SPDX-License-Identifier: MIT */
/* The bounded line reader over a memory buffer or a file descriptor (lines.h). */
#include "lines.h"

struct mx_lines {
        /* buffer mode: the caller's bytes; fd mode: our own window onto the file */
        const char *data;
        size_t len, pos;
        int fd;
        char *buf;
        size_t cap, start, end;
        bool eof;
        uint64_t max_bytes, n_read; /* fd mode: the bound (0: none) and the bytes read so far */

        size_t max_line;
        unsigned flags;
        unsigned number;
        bool truncated;
        bool skipping; /* dropping the rest of a line that was too long */
};

static struct mx_lines *lines_new(size_t max_line, unsigned flags)
{
        struct mx_lines *l = xcalloc(1, sizeof(*l));

        l->fd = -1;
        l->max_line = max_line ? max_line : 1;
        l->flags = flags;
        return l;
}

struct mx_lines *mx_lines_new_buffer(const char *data, size_t len, size_t max_line, unsigned flags)
{
        struct mx_lines *l = lines_new(max_line, flags);

        l->data = data;
        l->len = len;
        return l;
}

struct mx_lines *mx_lines_new_fd(int fd, size_t max_line, unsigned flags)
{
        struct mx_lines *l = lines_new(max_line, flags);

        l->fd = fd;
        return l;
}

struct mx_lines *mx_lines_free(struct mx_lines *l)
{
        if (!l)
                return NULL;
        free(l->buf);
        free(l);
        return NULL;
}

void mx_lines_set_max_bytes(struct mx_lines *l, uint64_t max_bytes)
{
        l->max_bytes = max_bytes;
}

unsigned mx_lines_number(const struct mx_lines *l)
{
        return l->number;
}

bool mx_lines_truncated(const struct mx_lines *l)
{
        return l->truncated;
}

/* Hand out one line of n bytes at p (n may exceed max_line: cut or refuse it). */
static int lines_emit(struct mx_lines *l, const char *p, size_t n, const char **ret_line, size_t *ret_len)
{
        l->number++;
        l->truncated = false;
        if (n > l->max_line) {
                if (!(l->flags & MX_LINES_TRUNCATE))
                        return -E2BIG;
                n = l->max_line;
                l->truncated = true;
        } else if (n > 0 && p[n - 1] == '\r')
                n--;
        *ret_line = p;
        *ret_len = n;
        return 1;
}

static int lines_next_buffer(struct mx_lines *l, const char **ret_line, size_t *ret_len)
{
        const char *p = l->data + l->pos, *nl;
        size_t n;

        if (l->pos >= l->len)
                return 0;
        nl = memchr(p, '\n', l->len - l->pos);
        n = nl ? (size_t)(nl - p) : l->len - l->pos;
        l->pos += n + (nl ? 1 : 0);
        return lines_emit(l, p, n, ret_line, ret_len);
}

/* Read more of the file into the window; 0 at end of file. */
static int lines_fill(struct mx_lines *l)
{
        size_t room;
        ssize_t k;

        if (l->max_bytes && l->n_read > l->max_bytes)
                return -EFBIG;
        if (l->start > 0) {
                memmove(l->buf, l->buf + l->start, l->end - l->start);
                l->end -= l->start;
                l->start = 0;
        }
        if (l->end == l->cap) {
                /* a line longer than max_line is handled before the window grows past it */
                size_t cap = MX_MAX(l->cap * 2, (size_t)MX_LINES_CHUNK);

                l->buf = xreallocarray(l->buf, MX_MIN(cap, l->max_line + 1), 1);
                l->cap = MX_MIN(cap, l->max_line + 1);
        }
        room = l->cap - l->end;
        if (l->max_bytes) /* one byte past the bound tells that the file holds more */
                room = (size_t)MX_MIN((uint64_t)room, l->max_bytes + 1 - l->n_read);
        do
                k = read(l->fd, l->buf + l->end, room);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;
        l->end += (size_t)k;
        l->n_read += (uint64_t)k;
        if (l->max_bytes && l->n_read > l->max_bytes)
                return -EFBIG;
        return k > 0;
}

static int lines_next_fd(struct mx_lines *l, const char **ret_line, size_t *ret_len)
{
        for (;;) {
                char *p = l->buf + l->start, *nl;
                size_t avail = l->end - l->start;
                int r;

                nl = avail ? memchr(p, '\n', avail) : NULL;
                if (nl) {
                        size_t n = (size_t)(nl - p);

                        l->start += n + 1;
                        if (l->skipping) {
                                l->skipping = false;
                                continue;
                        }
                        return lines_emit(l, p, n, ret_line, ret_len);
                }
                if (avail > l->max_line) {
                        /* no terminator within max_line bytes: cut or refuse, then drop until the next one
                         */
                        l->start = l->end;
                        if (l->skipping)
                                continue;
                        l->skipping = true;
                        return lines_emit(l, p, avail, ret_line, ret_len);
                }
                if (l->eof) {
                        l->start = l->end;
                        if (avail == 0 || l->skipping) {
                                l->skipping = false;
                                return 0;
                        }
                        return lines_emit(l, p, avail, ret_line, ret_len);
                }
                r = lines_fill(l);
                if (r < 0)
                        return r;
                if (r == 0)
                        l->eof = true;
        }
}

int mx_lines_next(struct mx_lines *l, const char **ret_line, size_t *ret_len)
{
        if (l->fd >= 0)
                return lines_next_fd(l, ret_line, ret_len);
        return lines_next_buffer(l, ret_line, ret_len);
}
