/* SPDX-License-Identifier: MIT */
/*
 * The L1.5 kernel-path gate (seed 001, "Kernel checks by configuration"):
 * must-see / must-not-see patterns checked against the target server's log and,
 * when one is configured, a profiler report (nsys cuda_gpu_kern_sum CSV or ncu
 * --csv output, see profreport.h).
 *
 * Patterns: a plain pattern is a glob ('*' any run of characters, '?' one
 * character, '\' escapes) matched anywhere in the subject (unanchored,
 * case-sensitive): "cutlass_*_grouped_gemm" matches a kernel named
 * "void cutlass_sm120_grouped_gemm<...>". A pattern that starts with "re:" is a
 * POSIX extended regular expression (unanchored). A must-see entry may list
 * alternatives, any one of which satisfies it ("gemv_fp4_* or GEMM fallback
 * logged").
 *
 * Verdicts (docs/mxmatrix.json.5 explains them to users):
 *   PASS     every must-see matched and no must-not-see matched, in every source
 *            that has expectations;
 *   FAIL     a must-not-see matched or a must-see is missing: the wrong kernel
 *            path ran, so the run's benchmark results are invalid;
 *   INVALID  the evidence could not be collected (expectations on kernels but no
 *            profiler report, an unreadable or unparseable report): the gate
 *            could not validate the run, so its benchmark results are invalid
 *            too;
 *   SKIPPED  the configuration has no expectations at all.
 */
#pragma once

#include "util.h"

#include <jansson.h>

#define MX_KGATE_PATTERN_MAX 4096  /* bytes in one pattern */
#define MX_KGATE_PATTERNS_MAX 1024 /* patterns in one gate, alternatives included */
#define MX_KGATE_EVIDENCE_MAX 512  /* bytes of a matching line or kernel name kept as evidence */

enum mx_verdict {
        MX_VERDICT_PASS,
        MX_VERDICT_FAIL,
        MX_VERDICT_INVALID,
        MX_VERDICT_SKIPPED,
        _MX_VERDICT_MAX,
        _MX_VERDICT_INVALID = -EINVAL,
};
const char *mx_verdict_to_string(enum mx_verdict v); /* "pass", "fail", "invalid", "skipped" */
enum mx_verdict mx_verdict_from_string(const char *s);

/* One must-see entry: satisfied when any alternative matches. */
struct mx_kgate_alt {
        char **patterns; /* NULL-terminated, at least one */
};

/* Expectations for one source (log lines or kernel names). */
struct mx_kgate_rules {
        struct mx_kgate_alt *must_see;
        size_t n_must_see;
        char **must_not_see; /* NULL-terminated or NULL */
};

/* What one axis value (or a whole configuration, merged) expects. */
struct mx_kgate_expect {
        struct mx_kgate_rules log;
        struct mx_kgate_rules kernels;
};

void mx_kgate_expect_done(struct mx_kgate_expect *e);
/* Append src's rules to dst (used to merge the expectations of a configuration's axis values). */
void mx_kgate_expect_merge(struct mx_kgate_expect *dst, const struct mx_kgate_expect *src);
bool mx_kgate_expect_empty(const struct mx_kgate_expect *e);
/* Builders: a new must-see entry with one pattern; another alternative for the last entry; a must-not-see.
 */
void mx_kgate_rules_add_must_see(struct mx_kgate_rules *r, const char *pattern);
int mx_kgate_rules_add_alternative(struct mx_kgate_rules *r,
                                   const char *pattern); /* -ENOENT: no entry yet */
void mx_kgate_rules_add_must_not_see(struct mx_kgate_rules *r, const char *pattern);
/* Check pattern syntax (regex compiles, glob escapes complete); -EINVAL with *reterr. */
int mx_kgate_pattern_check(const char *pattern, char **reterr);

/*
 * One compiled pattern on its own, the gate's matcher for other users of the
 * same syntax (kernel categories, kcat.h). -EINVAL with *reterr on a bad one.
 */
struct mx_kpattern;
int mx_kpattern_new(const char *text, struct mx_kpattern **ret, char **reterr);
struct mx_kpattern *mx_kpattern_free(struct mx_kpattern *p);
DEFINE_POINTER_CLEANUP(struct mx_kpattern, mx_kpattern_free)
/* Does the pattern match anywhere in the NUL-terminated s? */
bool mx_kpattern_match(const struct mx_kpattern *p, const char *s);

struct mx_kgate;
struct mx_profreport;

/* Compile the patterns of e (copied). -EINVAL with *reterr on a bad pattern. */
int mx_kgate_new(const struct mx_kgate_expect *e, struct mx_kgate **ret, char **reterr);
struct mx_kgate *mx_kgate_free(struct mx_kgate *g);
DEFINE_POINTER_CLEANUP(struct mx_kgate, mx_kgate_free)

/* Feed one log line (without newline); cheap enough to call for every line of a server's output. */
void mx_kgate_feed_log_line(struct mx_kgate *g, const char *line, size_t len);
/* Feed the kernel names of a profiler report. */
void mx_kgate_feed_report(struct mx_kgate *g, const struct mx_profreport *r);
/* Record that a report was expected but could not be had (missing, unreadable, unparseable). */
void mx_kgate_report_failed(struct mx_kgate *g, const char *why);
/* Record that the server log could not be had (capture failed, file unreadable). */
void mx_kgate_log_failed(struct mx_kgate *g, const char *why);

/*
 * The verdict so far. FAIL needs evidence: a must-not-see that matched, or a
 * must-see missing from a source that was collected (log lines fed; a report
 * with at least one kernel fed). Otherwise a source with expectations whose
 * evidence is missing (nothing fed, a failure recorded, an empty report) makes
 * the verdict INVALID. *ret_detail (optional) gets a JSON object: for each
 * source, which must-see entries matched (with the first matching line or
 * kernel), which are missing, which must-not-see matched (with the subject),
 * and why evidence is missing.
 */
enum mx_verdict mx_kgate_verdict(const struct mx_kgate *g, json_t **ret_detail);
