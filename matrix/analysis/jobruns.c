/* SPDX-License-Identifier: MIT */
/*
 * A job's baseline run (jobruns.h).
 */
#include "jobruns.h"

#include "util.h"

bool mx_jobruns_has_reason(json_t *run, const char *reason)
{
        json_t *v;
        size_t i;

        json_array_foreach (json_object_get(run, "reasons"), i, v)
                if (streq_ptr(json_string_value(v), reason))
                        return true;
        return false;
}

json_t *mx_jobruns_baseline(json_t *runs)
{
        /* The planned baseline first: a feature-off run exists only when a feature is declared. */
        static const char *const reasons[] = {"baseline", "feature-off"};
        json_t *run;
        size_t i;

        for (size_t k = 0; k < ELEMENTSOF(reasons); k++)
                json_array_foreach (runs, i, run)
                        if (mx_jobruns_has_reason(run, reasons[k]))
                                return run;
        return NULL;
}
