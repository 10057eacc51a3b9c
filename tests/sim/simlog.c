/* SPDX-License-Identifier: MIT */
/*
 * Log lines in the format of the program being simulated. vLLM prefixes every
 * line of a process with "(APIServer pid=N) " or "(EngineCore_DP0 pid=M) ",
 * its logger adds "LEVEL MM-DD HH:MM:SS [file.py:line]" (target-surfaces.md
 * §A2). Each line goes out in one write(2) so the API server's and the
 * engine's lines never interleave mid-line on the shared pipe.
 */
#include "sim.h"

#include <time.h>

static char log_prefix[64];

void sim_log_set_process(enum sim_flavor flavor, const char *name)
{
        if (flavor == SIM_FLAVOR_VLLM && name)
                snprintf(log_prefix, sizeof(log_prefix), "(%s pid=%d) ", name, (int)getpid());
        else
                log_prefix[0] = '\0';
}

char *sim_log_time(const char *strftime_fmt)
{
        char buf[64];
        time_t t = time(NULL);
        struct tm tm;

        localtime_r(&t, &tm);
        /* the formats are the callers' literals; strftime cannot be checked through a parameter */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        if (strftime(buf, sizeof(buf), strftime_fmt, &tm) == 0)
                buf[0] = '\0';
#pragma GCC diagnostic pop
        return xstrdup(buf);
}

/* Write all of s to fd; a reader that went away is not our problem. */
static void write_all(int fd, const char *s, size_t n)
{
        while (n > 0) {
                ssize_t k = write(fd, s, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return;
                s += k;
                n -= (size_t)k;
        }
}

static void emit(int fd, bool prefixed, const char *head, const char *fmt, va_list ap)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        _cleanup_free_ char *msg = xvasprintf(fmt, ap);

        if (prefixed)
                mx_buf_puts(&b, log_prefix);
        if (head)
                mx_buf_puts(&b, head);
        mx_buf_puts(&b, msg);
        mx_buf_putc(&b, '\n');
        write_all(fd, b.data, b.len);
}

void sim_log(enum sim_level level, const char *where, const char *fmt, ...)
{
        static const char *const names[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
        _cleanup_free_ char *when = sim_log_time("%m-%d %H:%M:%S");
        _cleanup_free_ char *head = NULL;
        va_list ap;

        if (level == SIM_DEBUG)
                return; /* vLLM's default level is INFO */
        head = xasprintf("%s %s [%s] ", names[level], when, where);
        va_start(ap, fmt);
        emit(STDOUT_FILENO, true, head, fmt, ap);
        va_end(ap);
}

void sim_print(int fd, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        emit(fd, true, NULL, fmt, ap);
        va_end(ap);
}

void sim_print_raw(int fd, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        emit(fd, false, NULL, fmt, ap);
        va_end(ap);
}

void sim_print_block(int fd, const char *text)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        for (const char *p = text; *p;) {
                const char *nl = strchrnul(p, '\n');
                mx_buf_puts(&b, log_prefix);
                mx_buf_add(&b, p, nl - p);
                mx_buf_putc(&b, '\n');
                p = *nl ? nl + 1 : nl;
        }
        write_all(fd, b.data, b.len);
}
