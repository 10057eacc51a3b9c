/* SPDX-License-Identifier: MIT */
/* Crash classes from a server's exit status and its log's signatures. */
#include "crash.h"

#include <regex.h>
#include <signal.h>
#include <sys/wait.h>

struct signature {
        char *cls;
        regex_t re;
        char *first_line; /* NULL until matched */
};

struct crash_scan {
        struct signature *sigs;
        size_t n;
        size_t best; /* index of the most specific match; n when none */
};

int crash_scan_new(json_t *signatures, struct crash_scan **ret, char **reterr)
{
        struct crash_scan *cs = xcalloc(1, sizeof(*cs));
        size_t i;
        json_t *s;

        cs->sigs = xcalloc(json_array_size(signatures) + 1, sizeof(*cs->sigs));
        json_array_foreach (signatures, i, s) {
                const char *cls = json_string_value(json_object_get(s, "class"));
                const char *pat = json_string_value(json_object_get(s, "pattern"));

                if (!cls || !pat || regcomp(&cs->sigs[cs->n].re, pat, REG_EXTENDED | REG_NOSUB) != 0) {
                        *reterr = xasprintf("crash signature %zu is not a valid class and regex", i);
                        crash_scan_free(cs);
                        return -EINVAL;
                }
                cs->sigs[cs->n++].cls = xstrdup(cls);
        }
        cs->best = cs->n;
        *ret = cs;
        return 0;
}

struct crash_scan *crash_scan_free(struct crash_scan *cs)
{
        if (!cs)
                return NULL;
        for (size_t i = 0; i < cs->n; i++) {
                regfree(&cs->sigs[i].re);
                free(cs->sigs[i].cls);
                free(cs->sigs[i].first_line);
        }
        free(cs->sigs);
        free(cs);
        return NULL;
}

void crash_scan_line(struct crash_scan *cs, const char *line, size_t len)
{
        _cleanup_free_ char *z = xstrndup(line, len); /* regexec needs a NUL-terminated copy */

        for (size_t i = 0; i < cs->n; i++) {
                if (cs->sigs[i].first_line || regexec(&cs->sigs[i].re, z, 0, NULL, 0) != 0)
                        continue;
                cs->sigs[i].first_line = mx_escape(z, 512);
                if (i < cs->best)
                        cs->best = i;
        }
}

const char *crash_scan_class(const struct crash_scan *cs)
{
        return cs->best < cs->n ? cs->sigs[cs->best].cls : NULL;
}

const char *crash_scan_evidence(const struct crash_scan *cs)
{
        return cs->best < cs->n ? cs->sigs[cs->best].first_line : NULL;
}

json_t *crash_scan_json(const struct crash_scan *cs)
{
        json_t *a = json_array();

        for (size_t i = 0; i < cs->n; i++)
                if (cs->sigs[i].first_line)
                        json_array_append_new(a, json_pack("{s:s,s:s}", "class", cs->sigs[i].cls, "line",
                                                           cs->sigs[i].first_line));
        return a;
}

char *crash_class_from_status(int st)
{
        if (WIFSIGNALED(st))
                return xasprintf("signal-%s", sigabbrev_np(WTERMSIG(st)) ?: "unknown");
        return xasprintf("exit-%d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}
