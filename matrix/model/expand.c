/* SPDX-License-Identifier: MIT */
/*
 * The streaming expansion (semantics in expand.h): an odometer over the
 * product, each cell filtered and extended in place, then the include entries
 * that matched no cell. Memory is O(axes + includes), whatever the product.
 */
#include "expand.h"

struct mx_expand {
        const struct mx_matrix *m;
        const int *pins;
        int **values; /* per axis: the values it iterates (product axes and pinned axes) */
        unsigned *n_values;
        unsigned *odometer;
        bool *original; /* per axis: part of the product (include may not overwrite it) */
        int *cell;      /* the current product cell */
        int *config;    /* the cell after include, as returned */
        bool *matched;  /* per include entry: extended some original cell */
        bool started, product_done, empty_product;
        size_t next_append;
        int appended_by;

        bool strict; /* fail on an include that breaks a rule (file validation) */
        char **reterr;
        int error;

        struct mx_expand_counts counts;
        size_t *ki; /* scratch for known-incompatible matches */
};

struct mx_expand *mx_expand_new(const struct mx_matrix *m, const int *pins)
{
        struct mx_expand *it = xcalloc(1, sizeof(*it));
        size_t n = MX_MAX(m->n_axes, 1);
        bool any = false;

        it->m = m;
        it->pins = pins;
        it->values = xcalloc(n, sizeof(int *));
        it->n_values = xcalloc(n, sizeof(unsigned));
        it->odometer = xcalloc(n, sizeof(unsigned));
        it->original = xcalloc(n, sizeof(bool));
        it->cell = mx_config_new(m);
        it->config = mx_config_new(m);
        it->matched = xcalloc(MX_MAX(m->n_includes, 1), sizeof(bool));
        it->ki = xcalloc(MX_MAX(m->n_known_incompatible, 1), sizeof(size_t));
        it->appended_by = -1;
        for (size_t a = 0; a < m->n_axes; a++) {
                const struct mx_matrix_axis *ax = &m->axes[a];
                int pin = pins ? pins[a] : -1;

                it->values[a] = xcalloc(ax->n_values, sizeof(int));
                if (pin >= 0)
                        it->values[a][it->n_values[a]++] = pin;
                else if (ax->product)
                        for (size_t v = 0; v < ax->n_values; v++)
                                if (ax->values[v].product)
                                        it->values[a][it->n_values[a]++] = (int)v;
                it->original[a] = it->n_values[a] > 0;
                any = any || it->original[a];
        }
        /* GitHub: a matrix without product keys (include only) has no original cells. */
        it->empty_product = !any;
        it->counts.product = mx_expand_product_size(m, pins, &it->counts.product_overflow);
        return it;
}

struct mx_expand *mx_expand_free(struct mx_expand *it)
{
        if (!it)
                return NULL;
        for (size_t a = 0; a < it->m->n_axes; a++)
                free(it->values[a]);
        free(it->values);
        free(it->n_values);
        free(it->odometer);
        free(it->original);
        free(it->cell);
        free(it->config);
        free(it->matched);
        free(it->ki);
        free(it);
        return NULL;
}

uint64_t mx_expand_product_size(const struct mx_matrix *m, const int *pins, bool *ret_overflow)
{
        uint64_t n = 1;
        bool any = false;

        *ret_overflow = false;
        for (size_t a = 0; a < m->n_axes; a++) {
                uint64_t k = 0;

                if (pins && pins[a] >= 0)
                        k = 1;
                else if (m->axes[a].product)
                        k = (uint64_t)__builtin_popcountll(m->axes[a].product_set);
                else
                        continue;
                any = true;
                if (__builtin_mul_overflow(n, k, &n)) {
                        *ret_overflow = true;
                        return UINT64_MAX;
                }
        }
        return any ? n : 0;
}

/* Step the odometer (last axis fastest); false when it wraps around. */
static bool odometer_step(struct mx_expand *it)
{
        for (size_t a = it->m->n_axes; a-- > 0;) {
                if (it->n_values[a] == 0)
                        continue;
                if (++it->odometer[a] < it->n_values[a]) {
                        it->cell[a] = it->values[a][it->odometer[a]];
                        return true;
                }
                it->odometer[a] = 0;
                it->cell[a] = it->values[a][0];
        }
        return false;
}

/* In strict mode: name the include entry whose pairs made cell break a rule. */
static int blame_include(struct mx_expand *it)
{
        const struct mx_matrix *m = it->m;
        _cleanup_free_ int *config = mx_config_copy(m, it->cell);
        _cleanup_free_ char *desc = mx_config_describe(m, it->cell);

        for (size_t i = 0; i < m->n_includes; i++) {
                const int *iv = m->includes[i].values;
                bool match = true;
                int rule;

                for (size_t a = 0; a < m->n_axes && match; a++)
                        if (iv[a] >= 0 && it->original[a] && config[a] != iv[a])
                                match = false;
                if (!match)
                        continue;
                for (size_t a = 0; a < m->n_axes; a++)
                        if (iv[a] >= 0)
                                config[a] = iv[a];
                rule = mx_matrix_broken_rule(m, config);
                if (rule >= 0) {
                        _cleanup_free_ char *loc = mx_matrix_location(m, m->rules[rule].node);

                        return mx_matrix_error_at(
                                m, m->includes[i].node, NULL, it->reterr,
                                "this include entry extends the cell %s, and the result breaks "
                                "the rule at %s: %s",
                                desc, loc, m->rules[rule].reason);
                }
        }
        return mx_matrix_error_at(m, m->root, "constraints", it->reterr,
                                  "include entries make the cell %s break a rule", desc);
}

/* Count the yielded configuration and its known-incompatible mark. */
static int yield(struct mx_expand *it, const int **ret_config)
{
        it->counts.valid++;
        if (mx_matrix_known_incompatible(it->m, it->config, it->ki) > 0)
                it->counts.known_incompatible++;
        *ret_config = it->config;
        return 1;
}

/* The next product cell that survives exclude, include and rules; 0 when the product is done. */
static int next_product(struct mx_expand *it, const int **ret_config)
{
        const struct mx_matrix *m = it->m;

        for (;;) {
                if (!it->started) {
                        it->started = true;
                        if (it->empty_product)
                                return 0;
                        for (size_t a = 0; a < m->n_axes; a++)
                                it->cell[a] = it->n_values[a] > 0 ? it->values[a][0] : -1;
                } else if (!odometer_step(it))
                        return 0;
                if (mx_matrix_excluded(m, it->cell) >= 0) {
                        it->counts.excluded++;
                        continue;
                }
                memcpy(it->config, it->cell, m->n_axes * sizeof(int));
                if (m->n_includes > 0 &&
                    mx_matrix_apply_includes(m, it->config, it->original, it->matched) && it->strict &&
                    mx_matrix_broken_rule(m, it->config) >= 0 && mx_matrix_broken_rule(m, it->cell) < 0) {
                        it->error = blame_include(it);
                        return it->error;
                }
                if (m->n_rules > 0 && mx_matrix_broken_rule(m, it->config) >= 0) {
                        it->counts.invalid++;
                        continue;
                }
                it->appended_by = -1;
                return yield(it, ret_config);
        }
}

/* The next include entry that extended no cell, with the pins added; 0 at the end. */
static int next_appended(struct mx_expand *it, const int **ret_config)
{
        const struct mx_matrix *m = it->m;

        while (it->next_append < m->n_includes) {
                size_t i = it->next_append++;
                const int *iv = m->includes[i].values;
                bool conflict = false;

                if (it->matched[i])
                        continue;
                for (size_t a = 0; a < m->n_axes; a++) {
                        int pin = it->pins ? it->pins[a] : -1;

                        if (pin >= 0 && iv[a] >= 0 && iv[a] != pin)
                                conflict = true;
                        it->config[a] = iv[a] >= 0 ? iv[a] : pin;
                }
                if (conflict)
                        continue;
                if (mx_matrix_broken_rule(m, it->config) >= 0) {
                        /* The loader rejects such entries; with pins a pin can be the cause. */
                        it->counts.invalid++;
                        continue;
                }
                it->counts.appended++;
                it->appended_by = (int)i;
                return yield(it, ret_config);
        }
        return 0;
}

int mx_expand_next(struct mx_expand *it, const int **ret_config)
{
        int r;

        if (it->error < 0)
                return it->error;
        if (!it->product_done) {
                r = next_product(it, ret_config);
                if (r != 0)
                        return r;
                it->product_done = true;
        }
        return next_appended(it, ret_config);
}

int mx_expand_appended_by(const struct mx_expand *it)
{
        return it->appended_by;
}

/* Stream the whole expansion for its counts; strict reports include entries that break rules. */
static int count(const struct mx_matrix *m, const int *pins, uint64_t max_cells, bool strict,
                 struct mx_expand_counts *ret, char **reterr)
{
        _cleanup_(mx_expand_freep) struct mx_expand *it = mx_expand_new(m, pins);
        const int *config;
        int r;

        if (it->counts.product_overflow || it->counts.product > max_cells)
                return -E2BIG;
        it->strict = strict;
        it->reterr = reterr;
        while ((r = mx_expand_next(it, &config)) > 0)
                ;
        if (r < 0)
                return r;
        *ret = it->counts;
        return 0;
}

int mx_expand_count(const struct mx_matrix *m, const int *pins, uint64_t max_cells,
                    struct mx_expand_counts *ret)
{
        return count(m, pins, max_cells, false, ret, NULL);
}

int mx_expand_validate(const struct mx_matrix *m, uint64_t max_cells, struct mx_expand_counts *ret,
                       char **reterr)
{
        return count(m, NULL, max_cells, true, ret, reterr);
}
