/* SPDX-License-Identifier: MIT */
/*
 * bench-attrib: failure attribution (matrix/analysis/attrib.h) on synthetic sweeps of
 * A axes x V values x R runs (random configurations), with a planted
 * two-value cause and noise crashes (NOISE in 100 runs, default 1), at t = 1, 2, 3.
 * Prints the time to add the runs and to analyse them, and checks that the
 * planted cause is the best-ranked set of its class.
 *
 *   bench-attrib [AXES [RUNS [VALUES [NOISE]]]]     (default: 100 1000 4 1)
 */
#include "attrib.h"

#include <inttypes.h>

static uint64_t rng = 88172645463325252ULL;

static unsigned next(unsigned n)
{
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return (unsigned)(rng % n);
}

static void one(unsigned axes, unsigned runs, unsigned values, unsigned noise, unsigned t)
{
        _cleanup_(mx_attrib_freep) struct mx_attrib *a = mx_attrib_new();
        _cleanup_(mx_attrib_result_freep) struct mx_attrib_result *r = NULL;
        _cleanup_free_ char *err = NULL, *best = NULL;
        int64_t t0, t1, t2;
        size_t failing = 0, sets = 0;
        int *row = xcalloc(axes, sizeof(int));
        char name[32], val[32];

        rng = 88172645463325252ULL;
        t0 = mx_now_mono_us();
        for (unsigned i = 0; i < runs; i++) {
                _cleanup_json_ json_t *config = json_object(), *res = json_array();

                for (unsigned k = 0; k < axes; k++) {
                        row[k] = (int)next(values);
                        snprintf(name, sizeof(name), "axis%03u", k);
                        snprintf(val, sizeof(val), "v%d", row[k]);
                        json_object_set_new(config, name, json_string(val));
                }
                /* The cause: axis007=v1 ∧ axis042=v2 (axes >= 43); else noise, NOISE runs in 100. */
                if ((axes > 42 && row[7] == 1 && row[42] == 2) || next(100) < noise) {
                        json_array_append_new(res, json_pack("{s:s,s:s}", "kind", "crash", "class",
                                                             "illegal-instruction"));
                        failing++;
                } else
                        json_array_append_new(res, json_string("pass"));
                if (mx_attrib_add_run(a, i + 1, config, res, &err) < 0)
                        mx_die("add: %s", err);
        }
        t1 = mx_now_mono_us();
        if (mx_attrib_analyse(a, t, &r, &err) < 0)
                mx_die("analyse: %s", err);
        t2 = mx_now_mono_us();
        for (size_t k = 0; k < r->n_classes; k++)
                sets += r->classes[k].n_sets;
        if (r->n_classes > 0 && r->classes[0].n_sets > 0)
                best = mx_attrib_set_describe(r, &r->classes[0].sets[0]);
        printf("%5u %6u %6u %2u %8zu %10.1f %10.1f %6zu  %s\n", axes, runs, values, t, failing,
               (t1 - t0) / 1000.0, (t2 - t1) / 1000.0, sets, strna(best));
        free(row);
}

int main(int argc, char **argv)
{
        unsigned axes = argc > 1 ? (unsigned)atoi(argv[1]) : 100;
        unsigned runs = argc > 2 ? (unsigned)atoi(argv[2]) : 1000;
        unsigned values = argc > 3 ? (unsigned)atoi(argv[3]) : 4;
        unsigned noise = argc > 4 ? (unsigned)atoi(argv[4]) : 1;

        printf("bench-attrib (%s build)\n", MX_BUILD_TYPE);
        printf("%5s %6s %6s %2s %8s %10s %10s %6s  %s\n", "axes", "runs", "values", "t", "failing", "add ms",
               "analyse ms", "sets", "best set");
        for (unsigned t = 1; t <= MX_ATTRIB_MAX_T; t++)
                one(axes, runs, values, noise, t);
        return 0;
}
