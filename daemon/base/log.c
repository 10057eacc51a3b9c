/* SPDX-License-Identifier: MIT */
/* We send CODE_FILE/LINE/FUNC of our callers; sd-journal.h would add log.c's own as second values. */
#define SD_JOURNAL_SUPPRESS_LOCATION

#include "log.h"

#include <inttypes.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

static const char *log_ident = "mxmatrixd";
static enum mx_log_sink log_sink = MX_LOG_STDERR;
static int log_max_prio = LOG_INFO;

static const char *const prio_names[] = {
        [LOG_EMERG] = "emerg", [LOG_ALERT] = "alert",   [LOG_CRIT] = "crit",  [LOG_ERR] = "error",
        [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

/* systemd sets $JOURNAL_STREAM to "dev:ino" of the stream it connected to stderr. */
static bool stderr_is_journal(void)
{
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void mx_log_setup(const char *ident, enum mx_log_sink sink, int max_prio)
{
        log_ident = ident;
        if (sink == MX_LOG_AUTO)
                sink = stderr_is_journal() ? MX_LOG_JOURNAL : MX_LOG_STDERR;
        log_sink = sink;
        log_max_prio = max_prio;
}

enum mx_log_sink mx_log_sink_get(void)
{
        return log_sink;
}

int mx_log_parse_sink(const char *s, enum mx_log_sink *ret)
{
        if (streq(s, "auto"))
                *ret = MX_LOG_AUTO;
        else if (streq(s, "journal"))
                *ret = MX_LOG_JOURNAL;
        else if (streq(s, "stderr"))
                *ret = MX_LOG_STDERR;
        else
                return -EINVAL;
        return 0;
}

int mx_log_parse_level(const char *s, int *ret)
{
        for (size_t i = 0; i < ELEMENTSOF(prio_names); i++)
                if (prio_names[i] && streq(s, prio_names[i])) {
                        *ret = (int)i;
                        return 0;
                }
        if (streq(s, "err"))
                return *ret = LOG_ERR, 0;
        return -EINVAL;
}

/* Collect the journal fields of one entry; strings are owned by f->owned. */
struct fields {
        struct iovec iov[24];
        char *owned[24];
        size_t n;
};

static void field_add(struct fields *f, char *s)
{
        if (f->n >= ELEMENTSOF(f->iov)) {
                free(s);
                return;
        }
        f->owned[f->n] = s;
        f->iov[f->n].iov_base = s;
        f->iov[f->n].iov_len = strlen(s);
        f->n++;
}

static void fields_free(struct fields *f)
{
        for (size_t i = 0; i < f->n; i++)
                free(f->owned[i]);
        f->n = 0;
}

static void fields_add_ctx(struct fields *f, const struct mx_log_ctx *ctx)
{
        if (!ctx)
                return;
        if (ctx->job > 0)
                field_add(f, xasprintf("MXMATRIX_JOB=%" PRId64, ctx->job));
        if (ctx->run > 0)
                field_add(f, xasprintf("MXMATRIX_RUN=%" PRId64, ctx->run));
        if (ctx->attempt > 0)
                field_add(f, xasprintf("MXMATRIX_ATTEMPT=%d", ctx->attempt));
        if (ctx->config)
                field_add(f, xasprintf("MXMATRIX_CONFIG=%s", ctx->config));
        if (ctx->level)
                field_add(f, xasprintf("MXMATRIX_LEVEL=%s", ctx->level));
}

static void stderr_write(int prio, const struct mx_log_ctx *ctx, const char *msg)
{
        struct mx_buf b = MX_BUF_INIT;

        mx_buf_printf(&b, "%s: %s: %s", log_ident, prio_names[prio & 7], msg);
        if (ctx && (ctx->job > 0 || ctx->run > 0)) {
                mx_buf_puts(&b, " (");
                if (ctx->job > 0)
                        mx_buf_printf(&b, "job %" PRId64, ctx->job);
                if (ctx->run > 0)
                        mx_buf_printf(&b, "%srun %" PRId64, ctx->job > 0 ? ", " : "", ctx->run);
                if (ctx->level)
                        mx_buf_printf(&b, ", %s", ctx->level);
                mx_buf_putc(&b, ')');
        }
        mx_buf_putc(&b, '\n');
        /* One write per line so concurrent writers do not interleave. */
        (void)!write(STDERR_FILENO, b.data, b.len);
        mx_buf_free(&b);
}

int mx_log_internal(int prio, int error, const char *message_id, const struct mx_log_ctx *ctx,
                    const char *const *extra, const char *file, int line, const char *func, const char *fmt, ...)
{
        int saved = errno;
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        if (error < 0)
                error = -error;
        if (prio > log_max_prio)
                goto out;

        /* %m in fmt refers to error when given, else to errno at the call. */
        errno = error ? error : saved;
        va_start(ap, fmt);
        msg = xvasprintf(fmt, ap);
        va_end(ap);
        if (error) {
                char *m = xasprintf("%s: %s", msg, strerror(error));
                free(msg);
                msg = m;
        }

        if (log_sink == MX_LOG_JOURNAL) {
                struct fields f = { .n = 0 };

                field_add(&f, xasprintf("MESSAGE=%s", msg));
                field_add(&f, xasprintf("PRIORITY=%d", prio));
                field_add(&f, xasprintf("SYSLOG_IDENTIFIER=%s", log_ident));
                field_add(&f, xasprintf("CODE_FILE=%s", file));
                field_add(&f, xasprintf("CODE_LINE=%d", line));
                field_add(&f, xasprintf("CODE_FUNC=%s", func));
                if (message_id)
                        field_add(&f, xasprintf("MESSAGE_ID=%s", message_id));
                if (error)
                        field_add(&f, xasprintf("ERRNO=%d", error));
                fields_add_ctx(&f, ctx);
                for (size_t i = 0; extra && extra[i]; i++)
                        field_add(&f, xstrdup(extra[i]));
                if (sd_journal_sendv(f.iov, (int)f.n) < 0)
                        stderr_write(prio, ctx, msg);
                fields_free(&f);
        } else
                stderr_write(prio, ctx, msg);
out:
        errno = saved;
        return error ? -error : -EIO;
}

void mx_log_target_line(const struct mx_log_ctx *ctx, const char *ident, int prio, const char *line, size_t len)
{
        int saved = errno;
        _cleanup_free_ char *raw = xstrndup(line, len);
        _cleanup_free_ char *esc = mx_escape(raw, 8192);

        if (log_sink == MX_LOG_JOURNAL) {
                struct fields f = { .n = 0 };

                field_add(&f, xasprintf("MESSAGE=%s", esc));
                field_add(&f, xasprintf("PRIORITY=%d", prio));
                field_add(&f, xasprintf("SYSLOG_IDENTIFIER=%s", ident));
                fields_add_ctx(&f, ctx);
                (void)sd_journal_sendv(f.iov, (int)f.n);
                fields_free(&f);
        } else if (log_max_prio >= LOG_DEBUG) {
                _cleanup_free_ char *m = xasprintf("[%s] %s", ident, esc);
                stderr_write(LOG_DEBUG, ctx, m);
        }
        errno = saved;
}
