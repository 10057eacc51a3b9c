/* SPDX-License-Identifier: MIT */
/*
 * A bounded line reader over a memory buffer or a file descriptor.
 *
 * Profiler reports and server logs are read line by line (csv.h, kgate.h);
 * a file may be larger than memory (an nsys cuda_gpu_trace of a long run) and
 * a hostile or broken one may hold a single endless line, so the reader never
 * holds more than max_line bytes of one line. Lines end at "\n"; a "\r"
 * before it is dropped, so CRLF files read the same as LF files. A last line
 * without a terminator is still a line.
 */
#pragma once

#include "util.h"

#define MX_LINES_CHUNK (64 * 1024)

enum {
        /* Return the first max_line bytes of a longer line (and skip the rest) instead of -E2BIG. */
        MX_LINES_TRUNCATE = 1 << 0,
};

struct mx_lines;

/* Read lines from data (not copied: it must outlive the reader). */
struct mx_lines *mx_lines_new_buffer(const char *data, size_t len, size_t max_line, unsigned flags);
/* Read lines from fd (not owned: the caller closes it). */
struct mx_lines *mx_lines_new_fd(int fd, size_t max_line, unsigned flags);
struct mx_lines *mx_lines_free(struct mx_lines *l);
/* fd mode: read at most max_bytes of the file; mx_lines_next() returns -EFBIG once it holds more (0: no bound). */
void mx_lines_set_max_bytes(struct mx_lines *l, uint64_t max_bytes);
DEFINE_POINTER_CLEANUP(struct mx_lines, mx_lines_free)

/*
 * The next line, without its terminator, in *ret_line (not NUL-terminated,
 * valid until the next call) and *ret_len. Returns 1 for a line, 0 at the end,
 * -E2BIG for a line longer than max_line (without MX_LINES_TRUNCATE; the
 * reader then skips to the next line), -EFBIG past mx_lines_set_max_bytes(), or a negative errno from read().
 */
int mx_lines_next(struct mx_lines *l, const char **ret_line, size_t *ret_len);
/* 1-based number of the line last returned (or refused as too long). */
unsigned mx_lines_number(const struct mx_lines *l);
/* Whether the line last returned was cut to max_line bytes. */
bool mx_lines_truncated(const struct mx_lines *l);
