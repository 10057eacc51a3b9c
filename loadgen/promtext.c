/* SPDX-License-Identifier: MIT */
/* Prometheus text exposition (a server's /metrics): samples by name and labels, summed over series. */
#include "promtext.h"
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool name_char(char c, bool first)
{
        return isalpha((unsigned char)c) || c == '_' || c == ':' || (!first && isdigit((unsigned char)c));
}

/* Past a {label="value",...} block starting at *p ('{'); false when it does not close on the line. */
static bool skip_labels(const char **p, const char *end)
{
        const char *q = *p + 1;

        while (q < end && *q != '}') {
                if (*q == '"') {
                        for (q++; q < end && *q != '"'; q++)
                                if (*q == '\\' && q + 1 < end)
                                        q++;
                        if (q >= end)
                                return false;
                }
                q++;
        }
        if (q >= end)
                return false;
        *p = q + 1;
        return true;
}

/*
 * One sample line [line, end): its name's length and value. 0, or -EBADMSG. The value may be followed by a
 * timestamp, which is ignored.
 */
static int parse_sample(const char *line, const char *end, size_t *ret_name_len, double *ret_value)
{
        const char *p = line;
        char num[64], *e;
        size_t k;

        if (p >= end || !name_char(*p, true))
                return -EBADMSG;
        while (p < end && name_char(*p, false))
                p++;
        *ret_name_len = (size_t)(p - line);
        if (p < end && *p == '{' && !skip_labels(&p, end))
                return -EBADMSG;
        if (p >= end || (*p != ' ' && *p != '\t'))
                return -EBADMSG;
        while (p < end && (*p == ' ' || *p == '\t'))
                p++;
        for (k = 0; p + k < end && p[k] != ' ' && p[k] != '\t' && k < sizeof(num) - 1; k++)
                num[k] = p[k];
        num[k] = '\0';
        if (k == 0 || (p + k < end && p[k] != ' ' && p[k] != '\t')) /* empty, or longer than any real number */
                return -EBADMSG;
        errno = 0;
        *ret_value = strtod(num, &e);
        if (*e || errno == ERANGE)
                return -EBADMSG;
        return 0;
}

int mx_prom_sum(const char *text, size_t n, const char *name, double *ret_sum, unsigned *ret_series,
                char **reterr)
{
        const char *p = text, *end = text + n;
        size_t want = strlen(name);
        unsigned lineno = 0, series = 0;
        double sum = 0;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
                size_t name_len = 0;
                double v;

                lineno++;
                while (le > p && (le[-1] == '\r' || le[-1] == ' '))
                        le--;
                if (le - p > MX_PROM_LINE_MAX)
                        return mx_reterr(reterr, -EBADMSG, "/metrics line %u is longer than %d bytes", lineno,
                                         MX_PROM_LINE_MAX);
                if (le > p && *p != '#') {
                        if (parse_sample(p, le, &name_len, &v) < 0)
                                return mx_reterr(reterr, -EBADMSG, "/metrics line %u is not a sample: %.*s",
                                                 lineno, (int)MX_MIN((size_t)(le - p), (size_t)80), p);
                        if (name_len == want && memcmp(p, name, want) == 0) {
                                sum += v;
                                series++;
                        }
                }
                p = nl ? nl + 1 : end;
        }
        if (series == 0)
                return -ENOENT;
        *ret_sum = sum;
        if (ret_series)
                *ret_series = series;
        return 0;
}

int mx_prom_count(const char *text, size_t n, const char *name, double *ret_count, char **reterr)
{
        double v;
        int r = mx_prom_sum(text, n, name, &v, NULL, reterr);

        if (r < 0)
                return r;
        if (!isfinite(v) || v < 0 || v > 0x1p53)
                return mx_reterr(reterr, -EBADMSG, "/metrics: %s is %g, not a count", name, v);
        *ret_count = v;
        return 0;
}

double mx_prom_increase(double before, double after, bool *ret_reset)
{
        bool reset = after < before;

        if (ret_reset)
                *ret_reset = reset;
        return reset ? after : after - before;
}
