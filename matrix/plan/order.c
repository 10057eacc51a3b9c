/* SPDX-License-Identifier: MIT */
/*
 * The order of a job's runs: FIFO, or fail-fast's two passes with runs sharing a compile-cache key
 * back to back.
 */
#include "order.h"

#include <string.h>

static const char *const order_names[_MX_ORDER_MAX] = {
        [MX_ORDER_FIFO] = "fifo",
        [MX_ORDER_FAIL_FAST] = "fail-fast",
};

const char *mx_order_to_string(enum mx_order o)
{
        return o >= 0 && o < _MX_ORDER_MAX ? order_names[o] : NULL;
}

enum mx_order mx_order_from_string(const char *s)
{
        for (int i = 0; s && i < _MX_ORDER_MAX; i++)
                if (streq(s, order_names[i]))
                        return (enum mx_order)i;
        return _MX_ORDER_INVALID;
}

bool mx_order_level_is_cheap(const char *level)
{
        return streq_ptr(level, "L1") || streq_ptr(level, "L1.5");
}

int mx_order_resolve(const struct mx_matrix *m, const char *requested, size_t n_runs, json_t *levels,
                     enum mx_order *ret, bool *ret_two_passes, char **ret_why)
{
        size_t cheap = 0, i;
        json_t *v;
        enum mx_order o;

        if (requested) {
                o = mx_order_from_string(requested);
                if (o < 0)
                        return -EINVAL;
                *ret_why = xstrdup("asked with --order");
        } else if (m && m->order) {
                o = mx_order_from_string(m->order);
                if (o < 0)
                        return -EINVAL;
                *ret_why = xstrdup("the matrix's settings.order");
        } else {
                o = n_runs >= MX_ORDER_FAIL_FAST_MIN_RUNS ? MX_ORDER_FAIL_FAST : MX_ORDER_FIFO;
                *ret_why = xasprintf("the default for %s %d runs: this job has %zu",
                                     o == MX_ORDER_FAIL_FAST ? "more than" : "jobs of up to",
                                     MX_ORDER_FAIL_FAST_MIN_RUNS - 1, n_runs);
        }
        json_array_foreach (levels, i, v)
                cheap += mx_order_level_is_cheap(json_string_value(v));
        *ret = o;
        *ret_two_passes = o == MX_ORDER_FAIL_FAST && cheap > 0 && cheap < json_array_size(levels);
        return 0;
}

json_t *mx_order_to_json(enum mx_order o, bool two_passes, const char *why, json_t *levels)
{
        json_t *cheap = json_array(), *v;
        size_t i;

        if (!two_passes) {
                json_decref(cheap);
                return json_pack("{s:s,s:s,s:[{s:O,s:s}]}", "order", mx_order_to_string(o), "why", why, "passes",
                                 "levels", levels, "runs",
                                 o == MX_ORDER_FAIL_FAST ? "every run (the levels make one pass: nothing to split)"
                                                         : "every run, in plan order");
        }
        json_array_foreach (levels, i, v)
                if (mx_order_level_is_cheap(json_string_value(v)))
                        json_array_append(cheap, v);
        return json_pack("{s:s,s:s,s:[{s:o,s:s},{s:O,s:s}]}", "order", mx_order_to_string(o), "why", why, "passes",
                         "levels", cheap, "runs", "every run, in plan order, each on a server start of its own",
                         "levels", levels, "runs", "then the runs whose first pass passed, in plan order");
}

/* Do runs a and b of p share a compile-cache key? */
static bool same_key(const struct mx_plan *p, const struct mx_plan_run *a, const struct mx_plan_run *b)
{
        for (size_t k = 0; k < p->m->n_cache_key_axes; k++) {
                int ax = p->m->cache_key_axes[k];

                if (a->config[ax] != b->config[ax])
                        return false;
        }
        return true;
}

void mx_order_group_runs(struct mx_plan *p)
{
        _cleanup_free_ struct mx_plan_run *out = NULL;
        _cleanup_free_ bool *taken = NULL;
        size_t n = 0;

        if (!p->m->n_cache_key_axes || p->n_runs < 3)
                return;
        out = xcalloc(p->n_runs, sizeof(*out));
        taken = xcalloc(p->n_runs, sizeof(bool));
        for (size_t i = 0; i < p->n_runs; i++) {
                if (taken[i])
                        continue;
                for (size_t j = i; j < p->n_runs; j++)
                        if (!taken[j] && same_key(p, &p->runs[i], &p->runs[j])) {
                                out[n++] = p->runs[j];
                                taken[j] = true;
                        }
        }
        memcpy(p->runs, out, p->n_runs * sizeof(*out));
}
