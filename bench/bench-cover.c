/* SPDX-License-Identifier: MIT */
/*
 * Covering-array benchmark: generates the classic models (3^13, 2^100, 10^20,
 * 4^15 3^17 2^29, 4^1 3^39 2^35) at t = 2 and 3, or the model specs given on
 * the command line (cover-spec.h form, e.g. "3^4 2^2 | forbid 0:{1} 2:{0} |
 * t=2"), and prints rows, PICT's rows from the fixture, the best known size
 * and the seconds of one generation. Every result is verified (untimed).
 *
 *   bench-cover [-f pict-sizes.tsv] [-s seed] [-e effort] [spec...]
 */
#include "cover-spec.h"
#include "cover-verify.h"
#include "cover.h"
#include "util.h"

#include <getopt.h>

struct known {
        const char *sizes;
        unsigned t;
        long best;
};

/* Best known sizes quoted by the task (Colbourn's tables). */
static const struct known best_known[] = {
        { "3^4", 2, 9 },   { "3^13", 2, 15 },  { "2^100", 2, 10 },   { "10^20", 2, 155 },
        { "3^13", 3, 45 }, { "2^100", 3, 33 }, { "10^20", 3, 2250 },
};

static const char *const default_models[] = { "3^13", "2^100", "10^20", "4^15 3^17 2^29", "4^1 3^39 2^35" };

static long lookup_best(const char *sizes, unsigned t)
{
        for (size_t i = 0; i < ELEMENTSOF(best_known); i++)
                if (streq(best_known[i].sizes, sizes) && best_known[i].t == t)
                        return best_known[i].best;
        return -1;
}

/* PICT's count for an unconstrained "sizes | none | t=N | pict=M" fixture line. */
static long lookup_pict(const char *fixture, const char *spec_text, unsigned t)
{
        _cleanup_fclose_ FILE *f = fixture ? fopen(fixture, "re") : NULL;
        if (!f)
                return -1;
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        _cleanup_(mx_cover_spec_freep) struct mx_cover_spec *want = NULL;
        if (mx_cover_spec_parse(spec_text, &want, NULL) < 0)
                return -1;
        while (getline(&line, &cap, f) > 0) {
                _cleanup_(mx_cover_spec_freep) struct mx_cover_spec *s = NULL;
                if (line[0] == '#' || mx_cover_spec_parse(line, &s, NULL) < 0)
                        continue;
                if (s->t != t || s->model.n_params != want->model.n_params ||
                    s->model.n_forbidden != want->model.n_forbidden || want->model.n_forbidden != 0)
                        continue;
                if (memcmp(s->n_values, want->n_values, s->model.n_params * sizeof(unsigned)) == 0)
                        return s->pict;
        }
        return -1;
}

static void print_count(long v)
{
        if (v < 0)
                printf(" %7s", "-");
        else
                printf(" %7ld", v);
}

static int run_one(const char *spec_text, unsigned t, const char *fixture, uint64_t seed, unsigned effort)
{
        _cleanup_(mx_cover_spec_freep) struct mx_cover_spec *s = NULL;
        _cleanup_free_ char *err = NULL;
        int r = mx_cover_spec_parse(spec_text, &s, &err);
        if (r < 0) {
                fprintf(stderr, "bench-cover: %s: %s\n", spec_text, err);
                return r;
        }
        struct mx_cover_options opt = { .t = t ? t : (s->t ? s->t : 2), .seed = seed, .effort = effort };
        _cleanup_free_ int *rows = NULL;
        size_t n_rows = 0;
        int64_t start = mx_now_mono_us();
        r = mx_cover_generate(&s->model, &opt, &rows, &n_rows, &err);
        double secs = (double)(mx_now_mono_us() - start) / 1e6;
        if (r < 0) {
                fprintf(stderr, "bench-cover: %s: %s\n", spec_text, err);
                return r;
        }
        _cleanup_free_ char *verr = NULL;
        int v = mx_cover_verify(&s->model, opt.t, rows, n_rows, &verr);

        _cleanup_free_ char *sizes = xstrndup(spec_text, strcspn(spec_text, "|"));
        while (*sizes && sizes[strlen(sizes) - 1] == ' ')
                sizes[strlen(sizes) - 1] = '\0';
        long pict = s->pict >= 0 ? s->pict : lookup_pict(fixture, spec_text, opt.t);
        long best = s->best >= 0 ? s->best : lookup_best(sizes, opt.t);
        printf("%-40.40s %2u %7zu", spec_text, opt.t, n_rows);
        print_count(pict);
        print_count(best);
        printf(" %9.3f  %s\n", secs, v == 0 ? "verified" : verr);
        fflush(stdout);
        return v;
}

int main(int argc, char **argv)
{
        const char *fixture = NULL;
        uint64_t seed = 1;
        unsigned effort = 0;
        int c;
        while ((c = getopt(argc, argv, "f:s:e:")) >= 0) {
                int64_t v;
                switch (c) {
                case 'f':
                        fixture = optarg;
                        break;
                case 's':
                case 'e':
                        if (mx_parse_int64(optarg, 0, c == 's' ? INT64_MAX : UINT32_MAX, &v) < 0) {
                                fprintf(stderr, "bench-cover: -%c wants a number, got '%s'\n", c, optarg);
                                return 2;
                        }
                        if (c == 's')
                                seed = (uint64_t)v;
                        else
                                effort = (unsigned)v;
                        break;
                default:
                        fprintf(stderr,
                                "usage: bench-cover [-f pict-sizes.tsv] [-s seed] [-e effort] [spec...]\n");
                        return 2;
                }
        }
        if (!fixture)
                fixture = access("tests/fixtures/cover/pict-sizes.tsv", R_OK) == 0
                                  ? "tests/fixtures/cover/pict-sizes.tsv"
                                  : "../tests/fixtures/cover/pict-sizes.tsv";

        printf("%-40s %2s %7s %7s %7s %9s\n", "model", "t", "rows", "pict", "best", "seconds");
        int ret = 0;
        if (optind < argc) {
                for (int i = optind; i < argc; i++)
                        if (run_one(argv[i], 0, fixture, seed, effort) < 0)
                                ret = 1;
                return ret;
        }
        for (unsigned t = 2; t <= 3; t++)
                for (size_t i = 0; i < ELEMENTSOF(default_models); i++)
                        if (run_one(default_models[i], t, fixture, seed, effort) < 0)
                                ret = 1;
        return ret;
}
