/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: profiler report parsing (csv.c, lines.c, profreport.c)
 * and the kernel gate (kgate.c) on whatever the parser accepts.
 *
 * Input: byte 0 picks the tool filter (auto, nsys, ncu); the first line after
 * it, when it is a valid pattern, is used as a glob or regex in the gate; the
 * rest is the report, and every one of its lines is also fed as a log line.
 */
#include "kgate.h"
#include "lines.h"
#include "profreport.h"

/* Unlike CHECK(), active in every build type: a broken invariant is a finding. */
#define CHECK(x)                                                                                            \
        do {                                                                                                \
                if (!(x)) {                                                                                 \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #x);               \
                        abort();                                                                            \
                }                                                                                           \
        } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Invariants of a parsed report. */
static void check_report(const struct mx_profreport *r)
{
        uint64_t launches = 0;

        CHECK(r->format >= 0 && r->format < _MX_PROFREPORT_FORMAT_MAX);
        for (size_t i = 0; i < r->n_kernels; i++) {
                const struct mx_profreport_kernel *k = &r->kernels[i];

                CHECK(k->name[0] != '\0');
                CHECK(mx_profreport_find(r, k->name) == k);
                CHECK(k->n_timed <= k->instances || r->format == MX_PROFREPORT_NCU_SUMMARY);
                launches += k->instances;
        }
        CHECK(launches == r->n_launches);
}

static void run_gate(const char *pattern, const struct mx_profreport *r, const char *text, size_t len)
{
        _cleanup_(mx_kgate_expect_done) struct mx_kgate_expect e = {};
        _cleanup_(mx_kgate_freep) struct mx_kgate *g = NULL;
        _cleanup_(mx_lines_freep) struct mx_lines *l = NULL;
        const char *line;
        size_t n;
        json_t *detail = NULL;
        enum mx_verdict v;

        mx_kgate_rules_add_must_see(&e.kernels, "re:(mar|cut)lass?_[a-z]+");
        mx_kgate_rules_add_must_not_see(&e.log, "*x?y*\\*");
        if (pattern) {
                mx_kgate_rules_add_must_see(&e.log, pattern);
                mx_kgate_rules_add_alternative(&e.log, "gemv_fp4_*");
                mx_kgate_rules_add_must_not_see(&e.kernels, pattern);
        }
        CHECK(mx_kgate_new(&e, &g, NULL) >= 0); /* the patterns were checked */
        if (r)
                mx_kgate_feed_report(g, r);
        l = mx_lines_new_buffer(text, len, 4096, MX_LINES_TRUNCATE);
        while (mx_lines_next(l, &line, &n) > 0)
                mx_kgate_feed_log_line(g, line, n);
        v = mx_kgate_verdict(g, &detail);
        CHECK(v >= 0 && v < _MX_VERDICT_MAX);
        CHECK(detail);
        free(json_dumps(detail, 0));
        json_decref(detail);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = NULL;
        _cleanup_free_ char *err = NULL, *pattern = NULL;
        const char *text, *nl;
        size_t len;
        int k;

        if (size < 1 || size > 1 << 20)
                return 0;
        text = (const char *)data + 1;
        len = size - 1;
        nl = memchr(text, '\n', len);
        if (nl && nl - text <= 64 && !memchr(text, '\0', (size_t)(nl - text))) {
                pattern = xmalloc((size_t)(nl - text) + 1);
                memcpy(pattern, text, (size_t)(nl - text));
                pattern[nl - text] = '\0';
                if (mx_kgate_pattern_check(pattern, NULL) < 0) {
                        free(pattern);
                        pattern = NULL;
                }
        }
        k = mx_profreport_parse_buffer(text, len, (enum mx_profreport_tool)(data[0] % 3), &r, &err);
        if (k < 0) {
                CHECK(k == -EBADMSG || k == -E2BIG);
                CHECK(err && *err);
        } else
                check_report(r);
        run_gate(pattern, r, text, len);
        return 0;
}
