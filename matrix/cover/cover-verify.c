/* SPDX-License-Identifier: MIT */
/*
 * The covering-array verifier: proves that a list of rows is a covering array
 * of strength t for a model. It shares only the constraint solver with the
 * generator: rows are checked against the forbidden patterns directly, and
 * coverage is recounted from scratch, one t-subset of parameters at a time,
 * asking the solver about each tuple no row contains.
 */
#include "cover-verify.h"
#include "cover-tuples.h"
#include "util.h"

/* Biggest single subset (product of its value counts) the verifier will mark. */
#define VERIFY_MAX_SUBSET (UINT64_C(1) << 28)
#define VERIFY_MAX_TUPLES (UINT64_C(1) << 31)

static int check_rows(const struct mx_cover_model *m, const int *rows, size_t n_rows, char **reterr)
{
        for (size_t r = 0; r < n_rows; r++) {
                const int *row = rows + r * m->n_params;
                for (size_t p = 0; p < m->n_params; p++)
                        if (row[p] < 0 || (unsigned)row[p] >= m->n_values[p]) {
                                if (reterr)
                                        *reterr = xasprintf("row %zu: parameter %zu has value %d, outside "
                                                            "0..%u",
                                                            r, p, row[p], m->n_values[p] - 1);
                                return -EDOM;
                        }
                size_t f;
                if (!cover_row_allowed(m, row, &f)) {
                        if (reterr)
                                *reterr = xasprintf("row %zu matches forbidden pattern %zu", r, f);
                        return -EDOM;
                }
        }
        return 0;
}

/* The size of every subset, and that the whole walk stays within bounds. */
static int check_size(const struct mx_cover_model *m, unsigned t, uint64_t *ret_max, char **reterr)
{
        unsigned c[MX_COVER_MAX_T];
        uint64_t total = 0, n_subsets = 0, max = 1;
        for (unsigned j = 0; j < t; j++)
                c[j] = j;
        do {
                uint64_t prod = 1;
                for (unsigned j = 0; j < t; j++)
                        prod *= m->n_values[c[j]];
                total += prod;
                max = MX_MAX(max, prod);
                if (prod > VERIFY_MAX_SUBSET || total > VERIFY_MAX_TUPLES ||
                    ++n_subsets > VERIFY_MAX_TUPLES) {
                        if (reterr)
                                *reterr = xasprintf("model has too many %u-tuples to verify", t);
                        return -E2BIG;
                }
        } while (cover_subset_next(c, t, m->n_params));
        *ret_max = max;
        return 0;
}

static char *describe_tuple(const unsigned *c, const int *vals, unsigned t)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        mx_buf_puts(&b, "valid tuple");
        for (unsigned j = 0; j < t; j++)
                mx_buf_printf(&b, " p%u=%d", c[j], vals[j]);
        mx_buf_puts(&b, " appears in no row");
        return mx_buf_steal(&b);
}

/* Mark subset c's tuples found in rows, then ask the solver about every unmarked one. */
static int check_subset(const struct mx_cover_model *m, unsigned t, const unsigned *c, const int *rows,
                        size_t n_rows, struct cover_solver *solver, uint64_t *seen, int *partial,
                        char **reterr)
{
        uint64_t size = 1;
        for (unsigned j = 0; j < t; j++)
                size *= m->n_values[c[j]];
        memset(seen, 0, ((size + 63) / 64) * sizeof(uint64_t));
        for (size_t r = 0; r < n_rows; r++) {
                uint64_t local = 0;
                for (unsigned j = 0; j < t; j++)
                        local = local * m->n_values[c[j]] + (uint64_t)rows[r * m->n_params + c[j]];
                bit_set(seen, local);
        }
        for (uint64_t local = 0; local < size; local++) {
                if (bit_get(seen, local))
                        continue;
                int vals[MX_COVER_MAX_T];
                uint64_t x = local;
                for (unsigned j = t; j-- > 0;) {
                        vals[j] = (int)(x % m->n_values[c[j]]);
                        x /= m->n_values[c[j]];
                }
                for (unsigned j = 0; j < t; j++)
                        partial[c[j]] = vals[j];
                bool valid = cover_solver_extendable(solver, partial);
                for (unsigned j = 0; j < t; j++)
                        partial[c[j]] = -1;
                if (valid) {
                        if (reterr)
                                *reterr = describe_tuple(c, vals, t);
                        return -EDOM;
                }
        }
        return 0;
}

int mx_cover_verify(const struct mx_cover_model *m, unsigned t, const int *rows, size_t n_rows,
                    char **reterr)
{
        int r = cover_check_model(m, reterr);
        if (r < 0)
                return r;
        if (t < 1 || t > MX_COVER_MAX_T) {
                if (reterr)
                        *reterr = xasprintf("strength %u is outside 1..%d", t, MX_COVER_MAX_T);
                return -EINVAL;
        }
        t = (unsigned)MX_MIN((size_t)t, m->n_params);
        r = check_rows(m, rows, n_rows, reterr);
        if (r < 0)
                return r;
        uint64_t words;
        r = check_size(m, t, &words, reterr);
        if (r < 0)
                return r;

        struct cover_solver *solver = cover_solver_new(m);
        _cleanup_free_ uint64_t *seen = xmalloc(((words + 63) / 64) * sizeof(uint64_t));
        _cleanup_free_ int *partial = xmalloc(m->n_params * sizeof(int));
        for (size_t p = 0; p < m->n_params; p++)
                partial[p] = -1;

        unsigned c[MX_COVER_MAX_T];
        for (unsigned j = 0; j < t; j++)
                c[j] = j;
        do {
                r = check_subset(m, t, c, rows, n_rows, solver, seen, partial, reterr);
        } while (r == 0 && cover_subset_next(c, t, m->n_params));
        cover_solver_free(solver);
        return r;
}
