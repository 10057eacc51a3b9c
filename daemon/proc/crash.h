/* SPDX-License-Identifier: MIT */
/*
 * Crash forensics: a run's crash class from its server log, its exit status
 * and what the runner saw. Signatures (class + POSIX ERE) come from the run's
 * profile, the matrix's own first, then the built-in list ordered from root
 * causes to symptoms (profile.c); the class is the first signature in that
 * order that any line matched. Non-logging.
 */
#pragma once

#include "util.h"

#include <jansson.h>

struct crash_scan;

int crash_scan_new(json_t *signatures, struct crash_scan **ret, char **reterr);
struct crash_scan *crash_scan_free(struct crash_scan *cs);
DEFINE_POINTER_CLEANUP(struct crash_scan, crash_scan_free)

void crash_scan_line(struct crash_scan *cs, const char *line, size_t len);
/* The class of the most specific signature seen, or NULL. */
const char *crash_scan_class(const struct crash_scan *cs);
/* The first line that matched that signature (escaped), or NULL. */
const char *crash_scan_evidence(const struct crash_scan *cs);
/* Every class seen with its first line, for the run's record: [{"class", "line"}...]. */
json_t *crash_scan_json(const struct crash_scan *cs);

/* "signal-SEGV", "exit-1", "exit-0" for a wait status that ended a server on its own. */
char *crash_class_from_status(int wait_status);
