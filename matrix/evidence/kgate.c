/* SPDX-License-Identifier: MIT */
/* The L1.5 kernel-path gate: must-see and must-not-see patterns on log and profiler (kgate.h). */
#include "kgate.h"

#include "profreport.h"

#include <inttypes.h>
#include <regex.h>

static const char *const verdict_table[_MX_VERDICT_MAX] = {
        [MX_VERDICT_PASS] = "pass",
        [MX_VERDICT_FAIL] = "fail",
        [MX_VERDICT_INVALID] = "invalid",
        [MX_VERDICT_SKIPPED] = "skipped",
};

const char *mx_verdict_to_string(enum mx_verdict v)
{
        return v >= 0 && v < _MX_VERDICT_MAX ? verdict_table[v] : NULL;
}

enum mx_verdict mx_verdict_from_string(const char *s)
{
        for (int i = 0; s && i < _MX_VERDICT_MAX; i++)
                if (streq(s, verdict_table[i]))
                        return i;
        return _MX_VERDICT_INVALID;
}

/* Copy n bytes that need not be NUL-terminated (xstrndup() may read past them) and terminate them. */
static char *memdup_nul(const char *p, size_t n)
{
        char *s = xmalloc(n + 1);

        memcpy(s, p, n);
        s[n] = '\0';
        return s;
}

/* ---- expectations ---- */

static void rules_done(struct mx_kgate_rules *r)
{
        for (size_t i = 0; i < r->n_must_see; i++)
                strv_free(r->must_see[i].patterns);
        free(r->must_see);
        strv_free(r->must_not_see);
        *r = (struct mx_kgate_rules){};
}

void mx_kgate_expect_done(struct mx_kgate_expect *e)
{
        rules_done(&e->log);
        rules_done(&e->kernels);
}

void mx_kgate_rules_add_must_see(struct mx_kgate_rules *r, const char *pattern)
{
        r->must_see = xreallocarray(r->must_see, r->n_must_see + 1, sizeof(*r->must_see));
        r->must_see[r->n_must_see] = (struct mx_kgate_alt){};
        strv_push(&r->must_see[r->n_must_see++].patterns, pattern);
}

int mx_kgate_rules_add_alternative(struct mx_kgate_rules *r, const char *pattern)
{
        if (r->n_must_see == 0)
                return -ENOENT;
        strv_push(&r->must_see[r->n_must_see - 1].patterns, pattern);
        return 0;
}

void mx_kgate_rules_add_must_not_see(struct mx_kgate_rules *r, const char *pattern)
{
        strv_push(&r->must_not_see, pattern);
}

static void rules_merge(struct mx_kgate_rules *dst, const struct mx_kgate_rules *src)
{
        for (size_t i = 0; i < src->n_must_see; i++) {
                dst->must_see = xreallocarray(dst->must_see, dst->n_must_see + 1, sizeof(*dst->must_see));
                dst->must_see[dst->n_must_see++].patterns = strv_copy(src->must_see[i].patterns);
        }
        for (size_t i = 0; src->must_not_see && src->must_not_see[i]; i++)
                strv_push(&dst->must_not_see, src->must_not_see[i]);
}

void mx_kgate_expect_merge(struct mx_kgate_expect *dst, const struct mx_kgate_expect *src)
{
        rules_merge(&dst->log, &src->log);
        rules_merge(&dst->kernels, &src->kernels);
}

static bool rules_empty(const struct mx_kgate_rules *r)
{
        return r->n_must_see == 0 && strv_length(r->must_not_see) == 0;
}

bool mx_kgate_expect_empty(const struct mx_kgate_expect *e)
{
        return rules_empty(&e->log) && rules_empty(&e->kernels);
}

/* ---- patterns ---- */

enum {
        TOK_ANY = -1,  /* '?': one character */
        TOK_STAR = -2, /* '*': any run of characters */
};

struct pattern {
        char *text; /* as written, "re:" included */
        bool is_regex;
        regex_t re;
        int *toks; /* glob: bytes 0..255 and TOK_*; leading and trailing stars dropped (unanchored) */
        size_t n_toks;
        char *literal; /* the longest run of literal bytes: a line without it cannot match */
        size_t literal_len;
};

static void pattern_done(struct pattern *p)
{
        if (p->is_regex)
                regfree(&p->re);
        free(p->text);
        free(p->toks);
        free(p->literal);
}

/* Tokenise a glob and find its longest literal run; -EINVAL for a trailing lone backslash. */
static int glob_compile(const char *g, struct pattern *p, char **reterr)
{
        size_t n = strlen(g), run = 0, best = 0, best_end = 0;
        _cleanup_free_ char *lit = xmalloc(n + 1);
        size_t n_lit = 0;

        p->toks = xcalloc(n + 1, sizeof(int));
        for (size_t i = 0; i < n; i++) {
                int t;

                if (g[i] == '\\') {
                        if (++i >= n) {
                                if (reterr)
                                        *reterr = xasprintf("pattern '%s': '\\' at the end escapes nothing",
                                                            g);
                                return -EINVAL;
                        }
                        t = (unsigned char)g[i];
                } else if (g[i] == '*')
                        t = TOK_STAR;
                else if (g[i] == '?')
                        t = TOK_ANY;
                else
                        t = (unsigned char)g[i];
                if (t == TOK_STAR && (p->n_toks == 0 || p->toks[p->n_toks - 1] == TOK_STAR))
                        continue; /* a leading star adds nothing to an unanchored match; ** is * */
                p->toks[p->n_toks++] = t;
                if (t >= 0) {
                        lit[n_lit++] = (char)t;
                        if (++run > best)
                                best = run, best_end = n_lit;
                } else
                        run = 0;
        }
        while (p->n_toks > 0 && p->toks[p->n_toks - 1] == TOK_STAR)
                p->n_toks--;
        /* lit holds every literal byte in order; the best run ends at best_end */
        p->literal = memdup_nul(lit + best_end - best, best);
        p->literal_len = best;
        return 0;
}

static int pattern_compile(const char *text, struct pattern *p, char **reterr)
{
        size_t n = strlen(text);
        int r;

        *p = (struct pattern){ .text = xstrdup(text) };
        if (n == 0 || streq(text, "re:")) {
                if (reterr)
                        *reterr = xasprintf("empty pattern '%s'", text);
                return -EINVAL;
        }
        if (n > MX_KGATE_PATTERN_MAX) {
                if (reterr)
                        *reterr = xasprintf("pattern longer than %d bytes", MX_KGATE_PATTERN_MAX);
                return -EINVAL;
        }
        if (!startswith(text, "re:"))
                return glob_compile(text, p, reterr);
        r = regcomp(&p->re, text + 3, REG_EXTENDED | REG_NOSUB);
        if (r != 0) {
                char msg[256];

                regerror(r, &p->re, msg, sizeof(msg));
                if (reterr)
                        *reterr = xasprintf("pattern '%s': %s", text, msg);
                return -EINVAL;
        }
        p->is_regex = true;
        return 0;
}

int mx_kgate_pattern_check(const char *pattern, char **reterr)
{
        struct pattern p;
        int r;

        r = pattern_compile(pattern, &p, reterr);
        pattern_done(&p);
        return r;
}

/* Bytes in the character at s: a valid UTF-8 sequence, else one byte. */
static size_t char_len(const unsigned char *s, size_t n)
{
        size_t len = s[0] < 0x80             ? 1
                     : (s[0] & 0xe0) == 0xc0 ? 2
                     : (s[0] & 0xf0) == 0xe0 ? 3
                     : (s[0] & 0xf8) == 0xf0 ? 4
                                             : 1;

        if (len > n)
                return 1;
        for (size_t i = 1; i < len; i++)
                if ((s[i] & 0xc0) != 0x80)
                        return 1;
        return len;
}

/*
 * Unanchored glob match: the tokens anywhere in s. Classic wildcard matching
 * that backtracks only to the last star (an implicit one precedes the
 * pattern), so it is O(len(s) x tokens) at worst; the literal prefilter makes
 * the common case, a line without the pattern's longest literal, one memmem().
 */
static bool glob_match(const struct pattern *p, const char *s, size_t n)
{
        const unsigned char *u = (const unsigned char *)s;
        size_t si = 0, ti = 0, star_t = 0, star_s = 0;

        if (p->literal_len && !memmem(s, n, p->literal, p->literal_len))
                return false;
        for (;;) {
                if (ti == p->n_toks)
                        return true; /* an implicit star follows */
                if (p->toks[ti] == TOK_STAR) {
                        star_t = ++ti;
                        star_s = si;
                        continue;
                }
                if (si < n && (p->toks[ti] == TOK_ANY || p->toks[ti] == u[si])) {
                        si += p->toks[ti] == TOK_ANY ? char_len(u + si, n - si) : 1;
                        ti++;
                        continue;
                }
                if (star_s >= n)
                        return false;
                star_s += char_len(u + star_s, n - star_s);
                si = star_s;
                ti = star_t;
        }
}

/* s must be NUL-terminated at s[n] (the sanitizers' regexec() reads it as a C string). */
static bool pattern_match(const struct pattern *p, const char *s, size_t n)
{
        regmatch_t m = { .rm_so = 0, .rm_eo = (regoff_t)n };

        if (!p->is_regex)
                return glob_match(p, s, n);
        return regexec(&p->re, s, 1, &m, REG_STARTEND) == 0;
}

struct mx_kpattern {
        struct pattern p;
};

int mx_kpattern_new(const char *text, struct mx_kpattern **ret, char **reterr)
{
        struct mx_kpattern *k = xcalloc(1, sizeof(*k));
        int r = pattern_compile(text, &k->p, reterr);

        if (r < 0) {
                pattern_done(&k->p);
                free(k);
                return r;
        }
        *ret = k;
        return 0;
}

struct mx_kpattern *mx_kpattern_free(struct mx_kpattern *k)
{
        if (k) {
                pattern_done(&k->p);
                free(k);
        }
        return NULL;
}

bool mx_kpattern_match(const struct mx_kpattern *k, const char *s)
{
        return pattern_match(&k->p, s, strlen(s));
}

/* ---- the gate ---- */

struct entry {
        struct pattern *alts; /* must-see: the alternatives; must-not-see: one pattern */
        size_t n_alts;
        bool matched;
        size_t which;  /* the alternative that matched */
        char *subject; /* the first matching line or kernel, cut after MX_KGATE_EVIDENCE_MAX + 1 bytes */
        uint64_t line; /* its line number (log only) */
};

struct source {
        const char *name; /* "log", "kernels" */
        struct entry *see, *not_see;
        size_t n_see, n_not_see;
        size_t n_see_left; /* must-see entries not matched yet */
        uint64_t n_subjects;
        char *failed;
};

struct mx_kgate {
        struct source log, kernels;
        unsigned n_reports;
        bool has_regex;
        struct mx_buf scratch; /* a log line with a terminating NUL, for regexec() */
        size_t n_patterns;
};

static void entry_done(struct entry *e)
{
        for (size_t i = 0; i < e->n_alts; i++)
                pattern_done(&e->alts[i]);
        free(e->alts);
        free(e->subject);
}

static void source_done(struct source *s)
{
        for (size_t i = 0; i < s->n_see; i++)
                entry_done(&s->see[i]);
        for (size_t i = 0; i < s->n_not_see; i++)
                entry_done(&s->not_see[i]);
        free(s->see);
        free(s->not_see);
        free(s->failed);
}

struct mx_kgate *mx_kgate_free(struct mx_kgate *g)
{
        if (!g)
                return NULL;
        source_done(&g->log);
        source_done(&g->kernels);
        mx_buf_free(&g->scratch);
        free(g);
        return NULL;
}

static int entry_compile(struct mx_kgate *g, struct entry *e, char *const *patterns, const char *where,
                         char **reterr)
{
        size_t n = strv_length(patterns);
        _cleanup_free_ char *why = NULL;

        if (n == 0) {
                if (reterr)
                        *reterr = xasprintf("%s: a must-see entry without patterns", where);
                return -EINVAL;
        }
        if (g->n_patterns + n > MX_KGATE_PATTERNS_MAX) {
                if (reterr)
                        *reterr = xasprintf("more than %d patterns", MX_KGATE_PATTERNS_MAX);
                return -EINVAL;
        }
        e->alts = xcalloc(n, sizeof(struct pattern));
        for (size_t i = 0; i < n; i++) {
                int r = pattern_compile(patterns[i], &e->alts[e->n_alts++], reterr ? &why : NULL);

                if (r < 0) {
                        if (reterr)
                                *reterr = xasprintf("%s: %s", where, why);
                        return r;
                }
                g->has_regex |= e->alts[i].is_regex;
        }
        g->n_patterns += n;
        return 0;
}

static int source_compile(struct mx_kgate *g, struct source *s, const char *name,
                          const struct mx_kgate_rules *r, char **reterr)
{
        _cleanup_free_ char *see = xasprintf("%s must-see", name),
                            *not_see = xasprintf("%s must-not-see", name);
        int k;

        s->name = name;
        s->see = xcalloc(r->n_must_see + 1, sizeof(struct entry));
        s->not_see = xcalloc(strv_length(r->must_not_see) + 1, sizeof(struct entry));
        for (size_t i = 0; i < r->n_must_see; i++) {
                k = entry_compile(g, &s->see[s->n_see++], r->must_see[i].patterns, see, reterr);
                if (k < 0)
                        return k;
        }
        s->n_see_left = s->n_see;
        for (size_t i = 0; r->must_not_see && r->must_not_see[i]; i++) {
                char *one[] = { r->must_not_see[i], NULL };

                k = entry_compile(g, &s->not_see[s->n_not_see++], one, not_see, reterr);
                if (k < 0)
                        return k;
        }
        return 0;
}

int mx_kgate_new(const struct mx_kgate_expect *e, struct mx_kgate **ret, char **reterr)
{
        _cleanup_(mx_kgate_freep) struct mx_kgate *g = xcalloc(1, sizeof(*g));
        int r;

        r = source_compile(g, &g->log, "log", &e->log, reterr);
        if (r >= 0)
                r = source_compile(g, &g->kernels, "kernels", &e->kernels, reterr);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(g);
        return 0;
}

static void entry_matched(struct entry *e, size_t which, const char *s, size_t n, uint64_t line)
{
        e->matched = true;
        e->which = which;
        e->subject = memdup_nul(s, MX_MIN(n, (size_t)MX_KGATE_EVIDENCE_MAX + 1));
        e->line = line;
}

/* Test one subject (NUL-terminated at s[n]) against the entries still open. */
static void source_feed(struct source *src, const char *s, size_t n, uint64_t line)
{
        for (size_t i = 0; src->n_see_left > 0 && i < src->n_see; i++) {
                struct entry *e = &src->see[i];

                for (size_t a = 0; !e->matched && a < e->n_alts; a++)
                        if (pattern_match(&e->alts[a], s, n)) {
                                entry_matched(e, a, s, n, line);
                                src->n_see_left--;
                        }
        }
        for (size_t i = 0; i < src->n_not_see; i++) {
                struct entry *e = &src->not_see[i];

                if (!e->matched && pattern_match(&e->alts[0], s, n))
                        entry_matched(e, 0, s, n, line);
        }
}

void mx_kgate_feed_log_line(struct mx_kgate *g, const char *line, size_t len)
{
        g->log.n_subjects++;
        if (g->log.n_see + g->log.n_not_see == 0)
                return;
        if (g->has_regex) {
                mx_buf_reset(&g->scratch);
                mx_buf_add(&g->scratch, line, len);
                line = g->scratch.data;
        }
        source_feed(&g->log, line, len, g->log.n_subjects);
}

void mx_kgate_feed_report(struct mx_kgate *g, const struct mx_profreport *r)
{
        g->n_reports++;
        for (size_t i = 0; i < r->n_kernels; i++) {
                const char *name = r->kernels[i].name;

                g->kernels.n_subjects++;
                source_feed(&g->kernels, name, strlen(name), 0);
        }
}

static void source_failed(struct source *s, const char *why)
{
        if (!s->failed)
                s->failed = xstrdup(why ? why : "unknown reason");
}

void mx_kgate_report_failed(struct mx_kgate *g, const char *why)
{
        source_failed(&g->kernels, why);
}

void mx_kgate_log_failed(struct mx_kgate *g, const char *why)
{
        source_failed(&g->log, why);
}

/* ---- verdict and evidence ---- */

static bool source_expects(const struct source *s)
{
        return s->n_see + s->n_not_see > 0;
}

/* Why a source has no evidence, or NULL when it has. */
static const char *source_missing(const struct mx_kgate *g, const struct source *s)
{
        if (s->failed)
                return s->failed;
        if (s->n_subjects > 0)
                return NULL;
        if (s == &g->log)
                return "no server log lines were fed";
        return g->n_reports > 0 ? "the profiler report lists no kernels" : "no profiler report was fed";
}

static bool source_not_seen_matched(const struct source *s)
{
        for (size_t i = 0; i < s->n_not_see; i++)
                if (s->not_see[i].matched)
                        return true;
        return false;
}

/* JSON text of s, cut at max bytes on a character boundary ("…" marks the cut); escaped if not UTF-8. */
static json_t *json_text(const char *s, size_t max)
{
        size_t n = strlen(s), cut = n;
        _cleanup_free_ char *t = NULL;
        json_t *j;

        if (n > max) {
                cut = max;
                while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
                        cut--;
        }
        t = xasprintf("%.*s%s", (int)cut, s, cut < n ? "…" : "");
        j = json_string(t);
        if (!j) {
                _cleanup_free_ char *e = mx_escape(s, max);

                j = json_string(e);
        }
        return j;
}

static json_t *entry_json(const struct entry *e, bool must_see)
{
        json_t *o = json_object(), *any;

        if (must_see) {
                any = json_array();
                for (size_t i = 0; i < e->n_alts; i++)
                        json_array_append_new(any, json_text(e->alts[i].text, MX_KGATE_PATTERN_MAX));
                json_object_set_new(o, "any_of", any);
        }
        if (!must_see || e->matched)
                json_object_set_new(o, "pattern", json_text(e->alts[e->which].text, MX_KGATE_PATTERN_MAX));
        json_object_set_new(o, "matched", json_boolean(e->matched));
        if (e->matched) {
                json_object_set_new(o, "subject", json_text(e->subject, MX_KGATE_EVIDENCE_MAX));
                if (e->line)
                        json_object_set_new(o, "line", json_integer((json_int_t)e->line));
        }
        return o;
}

static json_t *source_json(const struct mx_kgate *g, const struct source *s)
{
        json_t *o = json_object(), *see = json_array(), *not_see = json_array();
        const char *missing = source_missing(g, s);

        json_object_set_new(o, s == &g->log ? "lines" : "kernels", json_integer((json_int_t)s->n_subjects));
        if (s == &g->kernels)
                json_object_set_new(o, "reports", json_integer(g->n_reports));
        json_object_set_new(o, "evidence", json_boolean(!missing));
        if (missing)
                json_object_set_new(o, "missing", json_text(missing, 1024));
        for (size_t i = 0; i < s->n_see; i++)
                json_array_append_new(see, entry_json(&s->see[i], true));
        for (size_t i = 0; i < s->n_not_see; i++)
                json_array_append_new(not_see, entry_json(&s->not_see[i], false));
        json_object_set_new(o, "must_see", see);
        json_object_set_new(o, "must_not_see", not_see);
        return o;
}

/* One sentence saying why the verdict is what it is: the first decisive finding. */
static char *verdict_summary(const struct mx_kgate *g, enum mx_verdict v)
{
        const struct source *srcs[] = { &g->kernels, &g->log };
        size_t n_expect = 0;

        for (size_t k = 0; k < ELEMENTSOF(srcs); k++) {
                const struct source *s = srcs[k];
                const char *missing = source_missing(g, s);

                if (!source_expects(s))
                        continue;
                n_expect += s->n_see + s->n_not_see;
                for (size_t i = 0; v == MX_VERDICT_FAIL && i < s->n_not_see; i++)
                        if (s->not_see[i].matched)
                                return xasprintf("%s: must-not-see '%s' matched", s->name,
                                                 s->not_see[i].alts[0].text);
                for (size_t i = 0; v == MX_VERDICT_FAIL && !missing && i < s->n_see; i++)
                        if (!s->see[i].matched)
                                return xasprintf("%s: must-see '%s'%s not seen in %" PRIu64 " %s", s->name,
                                                 s->see[i].alts[0].text,
                                                 s->see[i].n_alts > 1 ? " (or its alternatives)" : "",
                                                 s->n_subjects, s == &g->log ? "lines" : "kernels");
                if (v == MX_VERDICT_INVALID && missing)
                        return xasprintf("%s: no evidence: %s", s->name, missing);
        }
        if (v == MX_VERDICT_SKIPPED)
                return xstrdup("no expectations");
        return xasprintf("all %zu expectations met", n_expect);
}

enum mx_verdict mx_kgate_verdict(const struct mx_kgate *g, json_t **ret_detail)
{
        const struct source *srcs[] = { &g->log, &g->kernels };
        bool any = false, fail = false, invalid = false;
        enum mx_verdict v;

        for (size_t k = 0; k < ELEMENTSOF(srcs); k++) {
                const struct source *s = srcs[k];
                bool evidence = !source_missing(g, s);

                if (!source_expects(s))
                        continue;
                any = true;
                fail |= source_not_seen_matched(s) || (evidence && s->n_see_left > 0);
                invalid |= !evidence;
        }
        v = !any      ? MX_VERDICT_SKIPPED
            : fail    ? MX_VERDICT_FAIL
            : invalid ? MX_VERDICT_INVALID
                      : MX_VERDICT_PASS;
        if (ret_detail) {
                json_t *d = json_object();
                _cleanup_free_ char *summary = verdict_summary(g, v);

                json_object_set_new(d, "verdict", json_string(mx_verdict_to_string(v)));
                json_object_set_new(d, "summary", json_text(summary, 2048));
                if (source_expects(&g->log))
                        json_object_set_new(d, "log", source_json(g, &g->log));
                if (source_expects(&g->kernels))
                        json_object_set_new(d, "kernels", source_json(g, &g->kernels));
                *ret_detail = d;
        }
        return v;
}
