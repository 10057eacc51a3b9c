/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the matrix loader (matrix-load.c, jsonpos.c, profile.c)
 * on arbitrary bytes, and, for files it accepts, the plans of their first
 * feature and the streaming expansion, since those walk the loaded model.
 * Every rejection must come with a message naming the file.
 */
#include "expand.h"
#include "plan.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void plan_all(const struct mx_matrix *m)
{
        static const enum mx_plan_strategy strategies[] = { MX_PLAN_DEFAULT, MX_PLAN_PAIRWISE, MX_PLAN_FULL };

        if (m->n_features == 0)
                return;
        for (size_t i = 0; i < sizeof(strategies) / sizeof(strategies[0]); i++) {
                struct mx_plan_request req = { .feature = m->features[0].name, .strategy = strategies[i],
                                               .seed = 1, .max_runs = 256 };
                struct mx_plan *p = NULL;
                char *err = NULL;

                if (mx_plan_build(m, &req, &p, &err) >= 0) {
                        json_t *j = mx_plan_to_json(p);
                        json_decref(j);
                        mx_plan_free(p);
                } else if (!err)
                        abort();
                free(err);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct mx_matrix *m = NULL;
        char *err = NULL;

        if (mx_matrix_load_string("fuzz.json", (const char *)data, size, &m, &err) < 0) {
                if (!err || strncmp(err, "fuzz.json", 9) != 0)
                        abort(); /* every error names the file */
                free(err);
                return 0;
        }
        plan_all(m);
        mx_matrix_free(m);
        return 0;
}
