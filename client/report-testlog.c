/* SPDX-License-Identifier: MIT */
#include "report-internal.h"

int report_test_log(json_t *doc, const char *feature, FILE *f, char **reterr)
{
        (void)doc;
        (void)feature;
        (void)f;
        *reterr = xstrdup("not written yet");
        return -EOPNOTSUPP;
}

int report_test_log_name(json_t *doc, const char *feature, char **ret, char **reterr)
{
        (void)doc;
        (void)feature;
        (void)ret;
        *reterr = xstrdup("not written yet");
        return -EOPNOTSUPP;
}
