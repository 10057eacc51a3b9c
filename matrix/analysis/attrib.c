/* SPDX-License-Identifier: MIT */
/*
 * Failure attribution (attrib.h): minimal explaining sets by intersecting
 * per-value bit sets of the passing configurations.
 */
#include "attrib.h"
#include "levelcat.h"

#include <inttypes.h>

#define STATUS_PASS (-1)
#define STATUS_FLAKY (-2)
#define STATUS_NONE (-3) /* no result yet */

static const char *const kind_table[_MX_ATTRIB_KIND_MAX] = {
        [MX_ATTRIB_CRASH] = "crash",
        [MX_ATTRIB_FAIL] = "fail",
        [MX_ATTRIB_TIMEOUT] = "timeout",
};

const char *mx_attrib_kind_to_string(enum mx_attrib_kind k)
{
        return k >= 0 && k < _MX_ATTRIB_KIND_MAX ? kind_table[k] : NULL;
}

static enum mx_attrib_kind kind_from_string(const char *s)
{
        for (int k = 0; k < _MX_ATTRIB_KIND_MAX; k++)
                if (streq_ptr(s, kind_table[k]))
                        return (enum mx_attrib_kind)k;
        return _MX_ATTRIB_KIND_INVALID;
}

/* ---- interned names: open addressing on FNV-1a ---- */

struct names {
        char **v; /* NULL-terminated */
        size_t n, allocated;
        uint32_t *slots; /* index + 1, 0 = empty */
        size_t n_slots;
};

static void names_done(struct names *t)
{
        strv_free(t->v);
        free(t->slots);
        *t = (struct names){};
}

static uint64_t name_hash(const char *s)
{
        return mx_fnv1a64(s, strlen(s), MX_FNV1A64_INIT);
}

static void names_rehash(struct names *t)
{
        size_t n = t->n_slots ? t->n_slots * 2 : 16;

        free(t->slots);
        t->slots = xcalloc(n, sizeof(uint32_t));
        t->n_slots = n;
        for (size_t i = 0; i < t->n; i++) {
                size_t s = name_hash(t->v[i]) & (n - 1);

                while (t->slots[s])
                        s = (s + 1) & (n - 1);
                t->slots[s] = (uint32_t)i + 1;
        }
}

/* The index of name, or -1. */
static int names_find(const struct names *t, const char *name)
{
        if (!t->n_slots)
                return -1;
        for (size_t s = name_hash(name) & (t->n_slots - 1); t->slots[s]; s = (s + 1) & (t->n_slots - 1))
                if (streq(t->v[t->slots[s] - 1], name))
                        return (int)t->slots[s] - 1;
        return -1;
}

/* The index of name, added when new; -E2BIG past max. */
static int names_intern(struct names *t, const char *name, size_t max)
{
        int i = names_find(t, name);

        if (i >= 0)
                return i;
        if (t->n >= max)
                return -E2BIG;
        MX_GROW(t->v, t->allocated, t->n + 2);
        t->v[t->n++] = xstrdup(name);
        t->v[t->n] = NULL;
        if ((t->n + 1) * 2 > t->n_slots)
                names_rehash(t);
        else {
                size_t s = name_hash(name) & (t->n_slots - 1);

                while (t->slots[s])
                        s = (s + 1) & (t->n_slots - 1);
                t->slots[s] = (uint32_t)t->n;
        }
        return (int)t->n - 1;
}

/* ---- the collection ---- */

struct run {
        int64_t id;
        size_t first; /* into pairs */
        unsigned n_pairs;
        int status; /* STATUS_PASS, STATUS_FLAKY or a class index */
};

struct mx_attrib {
        struct names axes;
        struct names *values; /* per axis */
        size_t values_allocated;
        char ***universe; /* per axis, from mx_attrib_axis_values(), or NULL */
        struct names classes;
        enum mx_attrib_kind *kinds;
        size_t kinds_allocated;
        struct run *runs;
        size_t n_runs, runs_allocated;
        uint32_t *pairs; /* axis << 6 | value, sorted by axis per run */
        size_t n_pairs, pairs_allocated;
};

struct mx_attrib *mx_attrib_new(void)
{
        return xcalloc(1, sizeof(struct mx_attrib));
}

struct mx_attrib *mx_attrib_free(struct mx_attrib *a)
{
        if (!a)
                return NULL;
        for (size_t i = 0; i < a->axes.n; i++) {
                names_done(&a->values[i]);
                strv_free(a->universe[i]);
        }
        free(a->values);
        free(a->universe);
        names_done(&a->axes);
        names_done(&a->classes);
        free(a->kinds);
        free(a->runs);
        free(a->pairs);
        free(a);
        return NULL;
}

static int axis_intern(struct mx_attrib *a, const char *name)
{
        size_t before = a->axes.n;
        int i = names_intern(&a->axes, name, MX_ATTRIB_MAX_AXES);

        if (i >= 0 && a->axes.n > before) {
                size_t old = a->values_allocated;

                MX_GROW(a->values, a->values_allocated, a->axes.n);
                a->universe = xreallocarray(a->universe, a->values_allocated, sizeof(char **));
                for (size_t k = old; k < a->values_allocated; k++)
                        a->universe[k] = NULL;
        }
        return i;
}

static bool name_ok(const char *s)
{
        return s && *s && strlen(s) <= MX_ATTRIB_MAX_NAME;
}

void mx_attrib_axis_values(struct mx_attrib *a, const char *axis, char *const *values)
{
        int i;

        if (!name_ok(axis))
                return;
        i = axis_intern(a, axis);
        if (i < 0)
                return;
        strv_free(a->universe[i]);
        a->universe[i] = strv_copy(values);
}

/* One result: STATUS_PASS or a class index; -EINVAL/-E2BIG with *reterr. */
static int result_status(struct mx_attrib *a, json_t *res, size_t index, char **reterr)
{
        const char *cls, *kind;
        enum mx_attrib_kind k;
        int i;

        if (json_is_string(res) && streq(json_string_value(res), "pass"))
                return STATUS_PASS;
        cls = json_string_value(json_object_get(res, "class"));
        kind = json_string_value(json_object_get(res, "kind"));
        k = kind_from_string(kind);
        if (!json_is_object(res) || !name_ok(cls) || k < 0) {
                *reterr = xasprintf("result %zu: expected \"pass\" or {\"kind\": crash|fail|timeout, "
                                    "\"class\": NAME of 1 to %d bytes}",
                                    index, MX_ATTRIB_MAX_NAME);
                return -EINVAL;
        }
        {
                _cleanup_free_ char *key = xasprintf("%s:%s", kind, cls);

                i = names_intern(&a->classes, key, MX_ATTRIB_MAX_CLASSES);
        }
        if (i < 0) {
                *reterr = xasprintf("more than %d failure classes", MX_ATTRIB_MAX_CLASSES);
                return i;
        }
        MX_GROW(a->kinds, a->kinds_allocated, a->classes.n);
        a->kinds[i] = k;
        return i;
}

static int cmp_u32(const void *x, const void *y)
{
        uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

        return a < b ? -1 : a > b;
}

int mx_attrib_add_run(struct mx_attrib *a, int64_t id, json_t *config, json_t *results, char **reterr)
{
        int status = STATUS_NONE;
        const char *k;
        size_t i, first = a->n_pairs;
        json_t *v;
        int r;

        if (!json_is_object(config) || !json_is_array(results)) {
                *reterr = xasprintf(
                        "run %" PRId64 ": expected a configuration object and an array of results", id);
                return -EINVAL;
        }
        if (json_array_size(results) > MX_ATTRIB_MAX_RESULTS) {
                *reterr = xasprintf("run %" PRId64 ": more than %d results", id, MX_ATTRIB_MAX_RESULTS);
                return -E2BIG;
        }
        if (json_array_size(results) == 0)
                return 0;
        if (a->n_runs >= MX_ATTRIB_MAX_RUNS) {
                *reterr = xasprintf("more than %d runs", MX_ATTRIB_MAX_RUNS);
                return -E2BIG;
        }
        json_array_foreach (results, i, v) {
                _cleanup_free_ char *err = NULL;
                int s = result_status(a, v, i, &err);

                if (s < STATUS_PASS) {
                        *reterr = xasprintf("run %" PRId64 ": %s", id, err);
                        return s;
                }
                status = status == STATUS_NONE || status == s ? s : STATUS_FLAKY;
        }
        json_object_foreach (config, k, v) {
                const char *val = json_string_value(v);
                int ax, vi;

                if (!name_ok(k) || !name_ok(val)) {
                        *reterr = xasprintf("run %" PRId64 ": axis '%s': names are strings of 1 to %d bytes",
                                            id, k, MX_ATTRIB_MAX_NAME);
                        r = -EINVAL;
                        goto undo;
                }
                ax = axis_intern(a, k);
                if (ax < 0) {
                        *reterr = xasprintf("more than %d axes", MX_ATTRIB_MAX_AXES);
                        r = ax;
                        goto undo;
                }
                vi = names_intern(&a->values[ax], val, MX_ATTRIB_MAX_VALUES);
                if (vi < 0) {
                        *reterr = xasprintf("axis '%s' has more than %d values", k, MX_ATTRIB_MAX_VALUES);
                        r = vi;
                        goto undo;
                }
                MX_GROW(a->pairs, a->pairs_allocated, a->n_pairs + 1);
                a->pairs[a->n_pairs++] = (uint32_t)ax << 6 | (uint32_t)vi;
        }
        qsort(a->pairs + first, a->n_pairs - first, sizeof(uint32_t), cmp_u32);
        MX_GROW(a->runs, a->runs_allocated, a->n_runs + 1);
        a->runs[a->n_runs++] = (struct run){
                .id = id, .first = first, .n_pairs = (unsigned)(a->n_pairs - first), .status = status};
        return 0;
undo:
        /* Names interned on the way stay: harmless, they only lengthen the tables. */
        a->n_pairs = first;
        return r;
}

json_t *mx_attrib_attempt_result(const char *outcome, const char *crash_class, json_t *levels)
{
        const char *failed = NULL, *verdict = NULL;
        int best = INT32_MAX;
        size_t i;
        json_t *l;

        if (streq_ptr(outcome, "crashed"))
                return json_pack("{s:s,s:s}", "kind", "crash", "class", crash_class ?: "crashed");
        if (streq_ptr(outcome, "timeout"))
                return json_pack("{s:s,s:s}", "kind", "timeout", "class", "timeout");
        if (!streq_ptr(outcome, "completed"))
                return NULL;
        json_array_foreach (levels, i, l) {
                const char *name = json_string_value(json_object_get(l, "level"));
                const char *v = json_string_value(json_object_get(l, "verdict"));
                int order;

                if (!name || !(streq_ptr(v, "fail") || streq_ptr(v, "invalid")))
                        continue;
                order = mx_level_index(name);
                if (order < 0)
                        order = INT32_MAX - 1; /* unknown levels after the catalogue's */
                if (order < best) {
                        best = order;
                        failed = name;
                        verdict = v;
                }
        }
        if (!failed)
                return json_string("pass");
        {
                _cleanup_free_ char *cls = xasprintf("%s-%s", failed, verdict);

                return json_pack("{s:s,s:s}", "kind", "fail", "class", cls);
        }
}

/* ---- analysis ---- */

struct config {
        size_t first; /* a run holding it: its pairs */
        unsigned n_pairs;
        int status;
        size_t weight; /* runs */
        uint64_t hash;
};

struct work {
        struct mx_attrib *a;
        size_t n_axes;
        struct config *cfg;
        size_t n_cfg;
        size_t *run_cfg; /* per run: its configuration */
        int8_t *row;     /* n_cfg x n_axes: value index or -1 */
        size_t *passing; /* config indices */
        size_t n_passing;
        size_t words;
        uint64_t **hold; /* per axis: n_values x words, the passing configurations holding each value */
};

static int8_t cell(const struct work *w, size_t c, size_t axis)
{
        return w->row[c * w->n_axes + axis];
}

static uint64_t pairs_hash(const uint32_t *p, unsigned n)
{
        return mx_fnv1a64(p, n * sizeof(uint32_t), MX_FNV1A64_INIT);
}

/* Merge runs of the same configuration; results that disagree make it flaky. */
static int build_configs(struct work *w, char **reterr)
{
        struct mx_attrib *a = w->a;
        size_t n_slots = 16, allocated = 0;
        _cleanup_free_ size_t *slots = NULL;

        while (n_slots < a->n_runs * 2 + 2)
                n_slots *= 2;
        slots = xcalloc(n_slots, sizeof(size_t)); /* config index + 1 */
        w->run_cfg = xcalloc(MX_MAX(a->n_runs, (size_t)1), sizeof(size_t));
        for (size_t i = 0; i < a->n_runs; i++) {
                const struct run *run = &a->runs[i];
                const uint32_t *p = a->pairs + run->first;
                uint64_t h = pairs_hash(p, run->n_pairs);
                size_t s = h & (n_slots - 1);

                for (; slots[s]; s = (s + 1) & (n_slots - 1)) {
                        struct config *c = &w->cfg[slots[s] - 1];

                        if (c->hash == h && c->n_pairs == run->n_pairs &&
                            memcmp(a->pairs + c->first, p, run->n_pairs * sizeof(uint32_t)) == 0)
                                break;
                }
                if (slots[s]) {
                        struct config *c = &w->cfg[slots[s] - 1];

                        if (c->status != run->status)
                                c->status = STATUS_FLAKY;
                        c->weight++;
                        w->run_cfg[i] = slots[s] - 1;
                        continue;
                }
                MX_GROW(w->cfg, allocated, w->n_cfg + 1);
                w->cfg[w->n_cfg] = (struct config){.first = run->first,
                                                   .n_pairs = run->n_pairs,
                                                   .status = run->status,
                                                   .weight = 1,
                                                   .hash = h};
                w->run_cfg[i] = w->n_cfg;
                slots[s] = ++w->n_cfg;
        }
        if (w->n_axes > 0 && w->n_cfg > MX_ATTRIB_MAX_CELLS / w->n_axes) {
                *reterr = xasprintf("%zu configurations x %zu axes is more than the limit of %" PRIu64
                                    " cells",
                                    w->n_cfg, w->n_axes, (uint64_t)MX_ATTRIB_MAX_CELLS);
                return -E2BIG;
        }
        w->row = xmalloc(MX_MAX(w->n_cfg * w->n_axes, (size_t)1));
        memset(w->row, -1, w->n_cfg * w->n_axes);
        for (size_t c = 0; c < w->n_cfg; c++)
                for (unsigned k = 0; k < w->cfg[c].n_pairs; k++) {
                        uint32_t pr = a->pairs[w->cfg[c].first + k];

                        w->row[c * w->n_axes + (pr >> 6)] = (int8_t)(pr & 63);
                }
        return 0;
}

static void build_hold(struct work *w)
{
        w->passing = xcalloc(MX_MAX(w->n_cfg, (size_t)1), sizeof(size_t));
        for (size_t c = 0; c < w->n_cfg; c++)
                if (w->cfg[c].status == STATUS_PASS)
                        w->passing[w->n_passing++] = c;
        w->words = (w->n_passing + 63) / 64;
        w->hold = xcalloc(MX_MAX(w->n_axes, (size_t)1), sizeof(uint64_t *));
        for (size_t ax = 0; ax < w->n_axes; ax++)
                w->hold[ax] = xcalloc(MX_MAX(w->a->values[ax].n * w->words, (size_t)1), sizeof(uint64_t));
        for (size_t i = 0; i < w->n_passing; i++)
                for (size_t ax = 0; ax < w->n_axes; ax++) {
                        int8_t v = cell(w, w->passing[i], ax);

                        if (v >= 0)
                                w->hold[ax][(size_t)v * w->words + i / 64] |= UINT64_C(1) << (i % 64);
                }
}

static void work_done(struct work *w)
{
        for (size_t ax = 0; w->hold && ax < w->n_axes; ax++)
                free(w->hold[ax]);
        free(w->hold);
        free(w->passing);
        free(w->row);
        free(w->run_cfg);
        free(w->cfg);
}

static bool empty1(const uint64_t *x, size_t words)
{
        for (size_t i = 0; i < words; i++)
                if (x[i])
                        return false;
        return true;
}

static bool empty2(const uint64_t *x, const uint64_t *y, size_t words)
{
        for (size_t i = 0; i < words; i++)
                if (x[i] & y[i])
                        return false;
        return true;
}

/* A found set: its pairs packed (axis << 6 | value, 16 bits each, ascending), and its support in runs. */
struct found {
        uint64_t key; /* 0 = empty slot (a packed set is never 0: it has n in the top bits) */
        size_t support;
};

struct found_table {
        struct found *v;
        size_t n_slots, n;
        bool full;
};

static uint64_t pack(const uint32_t *p, unsigned n)
{
        uint64_t k = (uint64_t)n << 48;

        for (unsigned i = 0; i < n; i++)
                k |= (uint64_t)p[i] << (16 * i);
        return k;
}

static uint64_t mix(uint64_t k)
{
        k ^= k >> 33;
        k *= UINT64_C(0xff51afd7ed558ccd);
        k ^= k >> 33;
        return k;
}

static void found_add(struct found_table *t, uint64_t key, size_t weight)
{
        size_t s;

        if ((t->n + 1) * 2 > t->n_slots) {
                size_t n = t->n_slots ? t->n_slots * 2 : 256;
                struct found *v = xcalloc(n, sizeof(*v));

                for (size_t i = 0; i < t->n_slots; i++) {
                        if (!t->v[i].key)
                                continue;
                        for (s = mix(t->v[i].key) & (n - 1); v[s].key; s = (s + 1) & (n - 1))
                                ;
                        v[s] = t->v[i];
                }
                free(t->v);
                t->v = v;
                t->n_slots = n;
        }
        for (s = mix(key) & (t->n_slots - 1); t->v[s].key; s = (s + 1) & (t->n_slots - 1))
                if (t->v[s].key == key) {
                        t->v[s].support += weight;
                        return;
                }
        if (t->n >= MX_ATTRIB_MAX_FOUND) {
                t->full = true;
                return;
        }
        t->v[s] = (struct found){.key = key, .support = weight};
        t->n++;
}

/* Every minimal explaining set of size <= t within failing configuration f. */
static void search_config(const struct work *w, size_t f, unsigned t, struct found_table *out,
                          uint64_t *scratch, bool *e2)
{
        const struct config *c = &w->cfg[f];
        const uint32_t *p = w->a->pairs + c->first;
        size_t L = c->n_pairs, W = w->words;
        _cleanup_free_ const uint64_t **sp = xcalloc(MX_MAX(L, (size_t)1), sizeof(uint64_t *));
        _cleanup_free_ bool *e1 = xcalloc(MX_MAX(L, (size_t)1), sizeof(bool));

        for (size_t i = 0; i < L; i++) {
                sp[i] = w->hold[p[i] >> 6] + (size_t)(p[i] & 63) * W;
                e1[i] = empty1(sp[i], W);
                if (e1[i])
                        found_add(out, pack(&p[i], 1), c->weight);
        }
        if (t < 2)
                return;
        for (size_t i = 0; i < L; i++)
                for (size_t j = i + 1; j < L; j++) {
                        e2[i * L + j] = !e1[i] && !e1[j] && empty2(sp[i], sp[j], W);
                        if (e2[i * L + j]) {
                                uint32_t q[2] = {p[i], p[j]};

                                found_add(out, pack(q, 2), c->weight);
                        }
                }
        if (t < 3)
                return;
        for (size_t i = 0; i < L; i++) {
                if (e1[i])
                        continue;
                for (size_t j = i + 1; j < L; j++) {
                        if (e1[j] || e2[i * L + j])
                                continue;
                        for (size_t k = 0; k < W; k++)
                                scratch[k] = sp[i][k] & sp[j][k];
                        for (size_t k = j + 1; k < L; k++) {
                                if (e1[k] || e2[i * L + k] || e2[j * L + k] || !empty2(scratch, sp[k], W))
                                        continue;
                                uint32_t q[3] = {p[i], p[j], p[k]};

                                found_add(out, pack(q, 3), c->weight);
                        }
                }
        }
}

static void unpack(uint64_t key, struct mx_attrib_set *s)
{
        s->n = (unsigned)(key >> 48);
        for (unsigned i = 0; i < s->n; i++) {
                uint32_t pr = (uint32_t)(key >> (16 * i)) & 0xffff;

                s->pairs[i] = (struct mx_attrib_pair){.axis = pr >> 6, .value = pr & 63};
        }
}

static const struct mx_attrib_result *sort_result; /* qsort has no user data in C11 */

static int cmp_pairs(const struct mx_attrib_result *r, const struct mx_attrib_set *x,
                     const struct mx_attrib_set *y)
{
        for (unsigned i = 0; i < x->n && i < y->n; i++) {
                int d = strcmp(r->axes[x->pairs[i].axis], r->axes[y->pairs[i].axis]);

                if (d == 0)
                        d = strcmp(r->values[x->pairs[i].axis][x->pairs[i].value],
                                   r->values[y->pairs[i].axis][y->pairs[i].value]);
                if (d != 0)
                        return d;
        }
        return (int)x->n - (int)y->n;
}

/* Size first, then the failures covered, then names: the order sets are reported in. */
static int cmp_sets(const void *xa, const void *ya)
{
        const struct mx_attrib_set *x = xa, *y = ya;

        if (x->n != y->n)
                return x->n < y->n ? -1 : 1;
        if (x->support != y->support)
                return x->support > y->support ? -1 : 1;
        return cmp_pairs(sort_result, x, y);
}

/* Pairs ordered by axis name, so that "graphs=on ∧ spec=..." reads the same whatever the run order. */
static void sort_pairs(const struct mx_attrib_result *r, struct mx_attrib_set *s)
{
        for (unsigned i = 1; i < s->n; i++)
                for (unsigned j = i;
                     j > 0 && strcmp(r->axes[s->pairs[j - 1].axis], r->axes[s->pairs[j].axis]) > 0; j--) {
                        struct mx_attrib_pair t = s->pairs[j];

                        s->pairs[j] = s->pairs[j - 1];
                        s->pairs[j - 1] = t;
                }
}

static bool holds(const struct work *w, size_t c, const struct mx_attrib_set *s)
{
        for (unsigned i = 0; i < s->n; i++)
                if (cell(w, c, s->pairs[i].axis) != (int8_t)s->pairs[i].value)
                        return false;
        return true;
}

/* Merge sets that differ on one axis only into groups, best ranked first. */
static void build_groups(struct mx_attrib_class *cl)
{
        _cleanup_free_ bool *used = xcalloc(MX_MAX(cl->n_sets, (size_t)1), sizeof(bool));

        cl->groups = xcalloc(MX_MAX(cl->n_sets, (size_t)1), sizeof(struct mx_attrib_group));
        for (size_t i = 0; i < cl->n_sets; i++) {
                const struct mx_attrib_set *s = &cl->sets[i];
                struct mx_attrib_group *g;

                if (used[i])
                        continue;
                used[i] = true;
                g = &cl->groups[cl->n_groups++];
                g->sets = xcalloc(cl->n_sets, sizeof(size_t));
                g->sets[g->n_sets++] = i;
                g->varying = -1;
                for (size_t j = i + 1; j < cl->n_sets; j++) {
                        const struct mx_attrib_set *o = &cl->sets[j];
                        int diff = -1, n_diff = 0;

                        if (used[j] || o->n != s->n)
                                continue;
                        for (unsigned k = 0; k < s->n; k++) {
                                if (o->pairs[k].axis != s->pairs[k].axis) {
                                        n_diff = 2;
                                        break;
                                }
                                if (o->pairs[k].value != s->pairs[k].value) {
                                        diff = (int)s->pairs[k].axis;
                                        n_diff++;
                                }
                        }
                        if (n_diff != 1 || (g->varying >= 0 && g->varying != diff))
                                continue;
                        g->varying = diff;
                        used[j] = true;
                        g->sets[g->n_sets++] = j;
                }
                for (size_t k = 0; k < g->n_sets; k++) {
                        const struct mx_attrib_set *m = &cl->sets[g->sets[k]];

                        g->support += m->support;
                        g->other += m->other;
                        g->flaky += m->flaky;
                        for (unsigned q = 0; q < m->n; q++)
                                if ((int)m->pairs[q].axis == g->varying)
                                        g->values |= UINT64_C(1) << m->pairs[q].value;
                }
        }
}

/* Search each failing configuration of class cls for the sets explaining it (into ft); count cl->failing. */
static void search_class(const struct work *w, int cls, unsigned t, struct found_table *ft,
                         struct mx_attrib_class *cl)
{
        _cleanup_free_ uint64_t *scratch = xcalloc(MX_MAX(w->words, (size_t)1), sizeof(uint64_t));
        _cleanup_free_ bool *e2 = NULL;
        size_t L_max = 0;

        for (size_t c = 0; c < w->n_cfg; c++)
                if (w->cfg[c].status == cls)
                        L_max = MX_MAX(L_max, (size_t)w->cfg[c].n_pairs);
        e2 = xcalloc(MX_MAX(L_max * L_max, (size_t)1), sizeof(bool));
        for (size_t c = 0; c < w->n_cfg; c++)
                if (w->cfg[c].status == cls) {
                        cl->failing += w->cfg[c].weight;
                        search_config(w, c, t, ft, scratch, e2);
                }
}

/* The sets found (ft, whose table is freed) into cl->sets, pairs sorted, best ranked first: how many. */
static size_t ranked_sets(const struct mx_attrib_result *res, struct found_table *ft,
                          struct mx_attrib_class *cl)
{
        size_t n = 0;

        cl->truncated = ft->full;
        cl->sets = xcalloc(MX_MAX(ft->n, (size_t)1), sizeof(struct mx_attrib_set));
        for (size_t i = 0; i < ft->n_slots; i++)
                if (ft->v[i].key) {
                        unpack(ft->v[i].key, &cl->sets[n]);
                        sort_pairs(res, &cl->sets[n]);
                        cl->sets[n++].support = ft->v[i].support;
                }
        free(ft->v);
        sort_result = res;
        qsort(cl->sets, n, sizeof(struct mx_attrib_set), cmp_sets);
        return n;
}

/*
 * Count who else holds set s: flaky configurations and those failing another way. Whether s holds a
 * failure of class cls that covered does not hold (*ret_adds), and one that covered_smaller does not
 * (returned).
 */
static bool set_adds(const struct work *w, int cls, struct mx_attrib_set *s, const bool *covered,
                     const bool *covered_smaller, bool *ret_adds)
{
        bool adds = false, adds_to_smaller = false;

        for (size_t c = 0; c < w->n_cfg; c++) {
                if (!holds(w, c, s))
                        continue;
                if (w->cfg[c].status == cls) {
                        adds = adds || !covered[c];
                        adds_to_smaller = adds_to_smaller || !covered_smaller[c];
                } else if (w->cfg[c].status == STATUS_FLAKY)
                        s->flaky += w->cfg[c].weight;
                else if (w->cfg[c].status >= 0)
                        s->other += w->cfg[c].weight;
        }
        *ret_adds = adds;
        return adds_to_smaller;
}

/*
 * Count who else holds each of the n ranked sets, best ranked first, and drop the redundant ones:
 *  - a set all of whose failures of this class smaller sets already explain (Occam:
 *    activation=mxfp4 ∧ graphs=off when every such run also had sinks=on);
 *  - a set that runs failing another way hold, whose failures of this class
 *    better-ranked sets already explain: it is there only because the other failures
 *    did not veto it (kernel=cutlass ∧ tile=64x128 under a crash that hit every run
 *    with graphs=on ∧ spec=eagle3).
 * Sets of one size that add failures stay, ties included. covered: the configurations the kept sets
 * explain. Returns how many are kept (at the front of cl->sets).
 */
static size_t prune_sets(const struct work *w, int cls, struct mx_attrib_class *cl, size_t n, bool *covered)
{
        _cleanup_free_ bool *covered_smaller = xcalloc(MX_MAX(w->n_cfg, (size_t)1), sizeof(bool));
        size_t kept = 0, examined = 0;
        unsigned size = 0;

        for (size_t i = 0; i < n; i++) {
                struct mx_attrib_set *s = &cl->sets[i];
                bool adds;

                if (kept >= MX_ATTRIB_MAX_SETS || ++examined > MX_ATTRIB_MAX_EXAMINED) {
                        cl->truncated = true;
                        break;
                }
                if (s->n != size) {
                        memcpy(covered_smaller, covered, w->n_cfg * sizeof(bool));
                        size = s->n;
                }
                if (!set_adds(w, cls, s, covered, covered_smaller, &adds) || (s->other > 0 && !adds))
                        continue;
                for (size_t c = 0; c < w->n_cfg; c++)
                        if (w->cfg[c].status == cls && holds(w, c, s))
                                covered[c] = true;
                s->complete = s->support == cl->failing;
                cl->sets[kept++] = *s;
        }
        return kept;
}

/* One class: search every failing configuration, rank, keep the best, count coverage. */
static void analyse_class(const struct work *w, int cls, unsigned t, struct mx_attrib_result *res,
                          struct mx_attrib_class *cl)
{
        struct found_table ft = {};
        _cleanup_free_ bool *covered = xcalloc(MX_MAX(w->n_cfg, (size_t)1), sizeof(bool));
        size_t n;

        search_class(w, cls, t, &ft, cl);
        n = ranked_sets(res, &ft, cl);
        cl->n_sets = prune_sets(w, cls, cl, n, covered);
        for (size_t c = 0; c < w->n_cfg; c++)
                if (w->cfg[c].status == cls && !covered[c])
                        cl->unexplained += w->cfg[c].weight;
        build_groups(cl);
}

static int cmp_classes(const void *xa, const void *ya)
{
        const struct mx_attrib_class *x = xa, *y = ya;

        if (x->failing != y->failing)
                return x->failing > y->failing ? -1 : 1;
        return strcmp(x->name, y->name);
}

int mx_attrib_analyse(struct mx_attrib *a, unsigned t, struct mx_attrib_result **ret, char **reterr)
{
        _cleanup_(mx_attrib_result_freep) struct mx_attrib_result *res = NULL;
        struct work w = {.a = a, .n_axes = a->axes.n};
        int r;

        if (t < 1 || t > MX_ATTRIB_MAX_T) {
                *reterr =
                        xasprintf("sets of 1 to %d axis values can be searched, not %u", MX_ATTRIB_MAX_T, t);
                return -EINVAL;
        }
        r = build_configs(&w, reterr);
        if (r < 0) {
                work_done(&w);
                return r;
        }
        build_hold(&w);
        res = xcalloc(1, sizeof(*res));
        res->t_asked = t;
        if (t == 3) {
                uint64_t triples = 0;

                for (size_t c = 0; c < w.n_cfg; c++)
                        if (w.cfg[c].status >= 0) {
                                uint64_t L = w.cfg[c].n_pairs;

                                triples += L * (L - 1) * (L - 2) / 6;
                        }
                if (triples > MX_ATTRIB_MAX_TRIPLES)
                        t = 2;
        }
        res->t = t;
        res->n_axes = a->axes.n;
        res->axes = strv_copy(a->axes.v);
        res->values = xcalloc(MX_MAX(res->n_axes, (size_t)1), sizeof(char **));
        for (size_t ax = 0; ax < res->n_axes; ax++)
                res->values[ax] = strv_copy(a->values[ax].v);
        res->flaky = xcalloc(MX_MAX(a->n_runs, (size_t)1), sizeof(int64_t));
        for (size_t i = 0; i < a->n_runs; i++) {
                res->runs++;
                if (a->runs[i].status == STATUS_PASS)
                        res->passing++;
        }
        /* Flaky runs: every run of a configuration whose results disagree. */
        for (size_t i = 0; i < a->n_runs; i++)
                if (w.cfg[w.run_cfg[i]].status == STATUS_FLAKY)
                        res->flaky[res->n_flaky++] = a->runs[i].id;
        /* A flaky run counted as passing above is not one. */
        res->passing = 0;
        for (size_t i = 0; i < w.n_passing; i++)
                res->passing += w.cfg[w.passing[i]].weight;
        res->classes = xcalloc(MX_MAX(a->classes.n, (size_t)1), sizeof(struct mx_attrib_class));
        for (size_t k = 0; k < a->classes.n; k++) {
                struct mx_attrib_class *cl = &res->classes[res->n_classes];
                const char *colon = strchr(a->classes.v[k], ':');

                cl->name = xstrdup(colon + 1);
                cl->kind = a->kinds[k];
                analyse_class(&w, (int)k, t, res, cl);
                res->n_classes++;
        }
        /* Classes seen only in flaky runs explain nothing: drop them. */
        for (size_t k = 0; k < res->n_classes;)
                if (res->classes[k].failing == 0) {
                        struct mx_attrib_class *cl = &res->classes[k];

                        free(cl->name);
                        free(cl->sets);
                        free(cl->groups);
                        memmove(cl, cl + 1, (res->n_classes - k - 1) * sizeof(*cl));
                        res->n_classes--;
                } else
                        k++;
        qsort(res->classes, res->n_classes, sizeof(struct mx_attrib_class), cmp_classes);
        work_done(&w);
        *ret = TAKE_PTR(res);
        return 0;
}

struct mx_attrib_result *mx_attrib_result_free(struct mx_attrib_result *r)
{
        if (!r)
                return NULL;
        for (size_t k = 0; k < r->n_classes; k++) {
                for (size_t g = 0; g < r->classes[k].n_groups; g++)
                        free(r->classes[k].groups[g].sets);
                free(r->classes[k].groups);
                free(r->classes[k].sets);
                free(r->classes[k].name);
        }
        free(r->classes);
        for (size_t ax = 0; ax < r->n_axes; ax++)
                strv_free(r->values[ax]);
        free(r->values);
        strv_free(r->axes);
        free(r->flaky);
        free(r);
        return NULL;
}

bool mx_attrib_config_holds(const struct mx_attrib_result *r, const struct mx_attrib_set *s, json_t *config)
{
        for (unsigned i = 0; i < s->n; i++)
                if (!streq_ptr(json_string_value(json_object_get(config, r->axes[s->pairs[i].axis])),
                               r->values[s->pairs[i].axis][s->pairs[i].value]))
                        return false;
        return true;
}

/* ---- describing ---- */

char *mx_attrib_set_describe(const struct mx_attrib_result *r, const struct mx_attrib_set *s)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        for (unsigned i = 0; i < s->n; i++) {
                if (i > 0)
                        mx_buf_puts(&b, " ∧ ");
                mx_buf_puts(&b, r->axes[s->pairs[i].axis]);
                mx_buf_putc(&b, '=');
                mx_buf_puts(&b, r->values[s->pairs[i].axis][s->pairs[i].value]);
        }
        return mx_buf_steal(&b);
}

/* "eagle3-*" when the values share a prefix that no other value of the axis has, else "a|b". */
static char *values_describe(const struct mx_attrib *a, const struct mx_attrib_result *r, unsigned axis,
                             uint64_t set)
{
        char *const *universe =
                a && axis < a->axes.n && a->universe[axis] ? a->universe[axis] : r->values[axis];
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        const char *first = NULL;
        size_t prefix = SIZE_MAX;
        bool glob = true;

        for (size_t v = 0; r->values[axis][v]; v++) {
                const char *name = r->values[axis][v];
                size_t k = 0;

                if (!(set & (UINT64_C(1) << v)))
                        continue;
                if (!first) {
                        first = name;
                        prefix = strlen(name);
                        continue;
                }
                while (k < prefix && first[k] && first[k] == name[k])
                        k++;
                prefix = k;
        }
        glob = first && prefix > 0 && prefix != SIZE_MAX;
        for (size_t u = 0; glob && universe[u]; u++) {
                int v;

                if (strncmp(universe[u], first, prefix) != 0)
                        continue;
                /* A value of the axis the glob would name: it must be one of the group's. */
                v = -1;
                for (size_t k = 0; r->values[axis][k]; k++)
                        if (streq(r->values[axis][k], universe[u]))
                                v = (int)k;
                if (v < 0 || !(set & (UINT64_C(1) << v)))
                        glob = false;
        }
        if (glob) {
                mx_buf_add(&b, first, prefix);
                mx_buf_putc(&b, '*');
                return mx_buf_steal(&b);
        }
        for (size_t v = 0; r->values[axis][v]; v++)
                if (set & (UINT64_C(1) << v)) {
                        if (b.len > 0)
                                mx_buf_putc(&b, '|');
                        mx_buf_puts(&b, r->values[axis][v]);
                }
        return mx_buf_steal(&b);
}

char *mx_attrib_group_describe(const struct mx_attrib *a, const struct mx_attrib_result *r,
                               const struct mx_attrib_class *c, const struct mx_attrib_group *g)
{
        const struct mx_attrib_set *s = &c->sets[g->sets[0]];
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        if (g->n_sets == 1)
                return mx_attrib_set_describe(r, s);
        for (unsigned i = 0; i < s->n; i++) {
                unsigned ax = s->pairs[i].axis;

                if (i > 0)
                        mx_buf_puts(&b, " ∧ ");
                mx_buf_puts(&b, r->axes[ax]);
                mx_buf_putc(&b, '=');
                if ((int)ax == g->varying) {
                        _cleanup_free_ char *v = values_describe(a, r, ax, g->values);

                        mx_buf_puts(&b, v);
                } else
                        mx_buf_puts(&b, r->values[ax][s->pairs[i].value]);
        }
        return mx_buf_steal(&b);
}

json_t *mx_attrib_group_when(const struct mx_attrib_result *r, const struct mx_attrib_class *c,
                             const struct mx_attrib_group *g)
{
        const struct mx_attrib_set *s = &c->sets[g->sets[0]];
        json_t *when = json_object();

        for (unsigned i = 0; i < s->n; i++) {
                unsigned ax = s->pairs[i].axis;

                if ((int)ax == g->varying && g->n_sets > 1) {
                        json_t *list = json_array();

                        for (size_t v = 0; r->values[ax][v]; v++)
                                if (g->values & (UINT64_C(1) << v))
                                        json_array_append_new(list, json_string(r->values[ax][v]));
                        json_object_set_new(when, r->axes[ax], list);
                } else
                        json_object_set_new(when, r->axes[ax],
                                            json_string(r->values[ax][s->pairs[i].value]));
        }
        return when;
}

static json_t *set_json(const struct mx_attrib_result *r, const struct mx_attrib_set *s)
{
        json_t *set = json_object();
        _cleanup_free_ char *text = mx_attrib_set_describe(r, s);

        for (unsigned i = 0; i < s->n; i++)
                json_object_set_new(set, r->axes[s->pairs[i].axis],
                                    json_string(r->values[s->pairs[i].axis][s->pairs[i].value]));
        return json_pack("{s:o,s:s,s:i,s:I,s:I,s:I,s:b}", "set", set, "text", text, "size", (int)s->n,
                         "support", (json_int_t)s->support, "other", (json_int_t)s->other, "flaky",
                         (json_int_t)s->flaky, "complete", s->complete);
}

json_t *mx_attrib_result_to_json(const struct mx_attrib *a, const struct mx_attrib_result *r)
{
        json_t *classes = json_array(), *flaky = json_array();

        for (size_t i = 0; i < r->n_flaky; i++)
                json_array_append_new(flaky, json_integer(r->flaky[i]));
        for (size_t k = 0; k < r->n_classes; k++) {
                const struct mx_attrib_class *c = &r->classes[k];
                json_t *sets = json_array(), *groups = json_array();

                for (size_t i = 0; i < c->n_sets; i++)
                        json_array_append_new(sets, set_json(r, &c->sets[i]));
                for (size_t g = 0; g < c->n_groups; g++) {
                        const struct mx_attrib_group *gr = &c->groups[g];
                        _cleanup_free_ char *text = mx_attrib_group_describe(a, r, c, gr);
                        json_t *members = json_array();

                        for (size_t i = 0; i < gr->n_sets; i++)
                                json_array_append_new(members, json_integer((json_int_t)gr->sets[i]));
                        json_array_append_new(groups, json_pack("{s:o,s:s,s:I,s:I,s:I,s:o}", "when",
                                                                mx_attrib_group_when(r, c, gr), "text", text,
                                                                "support", (json_int_t)gr->support, "other",
                                                                (json_int_t)gr->other, "flaky",
                                                                (json_int_t)gr->flaky, "sets", members));
                }
                json_array_append_new(classes, json_pack("{s:s,s:s,s:I,s:I,s:b,s:o,s:o}", "class", c->name,
                                                         "kind", mx_attrib_kind_to_string(c->kind),
                                                         "failing", (json_int_t)c->failing, "unexplained",
                                                         (json_int_t)c->unexplained, "truncated",
                                                         c->truncated, "sets", sets, "groups", groups));
        }
        return json_pack("{s:i,s:i,s:I,s:I,s:o,s:o}", "t", (int)r->t, "t_asked", (int)r->t_asked, "runs",
                         (json_int_t)r->runs, "passing", (json_int_t)r->passing, "flaky", flaky, "classes",
                         classes);
}
