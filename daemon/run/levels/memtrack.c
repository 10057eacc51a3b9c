/* SPDX-License-Identifier: MIT */
/* Memory like with like (memtrack.h). */
#include "memtrack.h"
#include "sampler.h"

#include <inttypes.h>
#include <math.h>

static const char *const kind_names[_MX_MEM_KIND_MAX] = {
        [MX_MEM_GPU] = "gpu",
        [MX_MEM_SYSTEM] = "system",
        [MX_MEM_PSS] = "pss",
};

static const char *const kind_what[_MX_MEM_KIND_MAX] = {
        [MX_MEM_GPU] = "device memory of the server's GPU processes",
        [MX_MEM_SYSTEM] = "unified-memory system figure, MemTotal - MemAvailable",
        [MX_MEM_PSS] = "host PSS of the server's processes",
};

const char *mx_mem_kind_to_string(enum mx_mem_kind k)
{
        return k < _MX_MEM_KIND_MAX ? kind_names[k] : NULL;
}

const char *mx_mem_kind_describe(enum mx_mem_kind k)
{
        return k < _MX_MEM_KIND_MAX ? kind_what[k] : NULL;
}

int64_t mx_mem_sample_figure(const struct mx_mem_sample *m, enum mx_mem_kind k)
{
        uint64_t v = k == MX_MEM_GPU ? m->gpu_bytes : k == MX_MEM_SYSTEM ? m->sys_used_bytes : m->server_bytes;

        return v > 0 && v <= INT64_MAX ? (int64_t)v : -1;
}

void mx_mem_sample_add_gpu(struct mx_mem_sample *m, const struct mx_sample *last)
{
        if (!last)
                return;
        if (last->gpu_ok && last->tree_gpu_bytes > 0)
                m->gpu_bytes = (uint64_t)last->tree_gpu_bytes;
        if (m->sys_used_bytes == 0 && last->sys_mem_used > 0)
                m->sys_used_bytes = (uint64_t)last->sys_mem_used;
        m->unified = last->gpu_ok && last->unified;
}

void mx_mem_track_init(struct mx_mem_track *t)
{
        *t = (struct mx_mem_track){};
        for (size_t i = 0; i < _MX_MEM_KIND_MAX; i++)
                t->k[i] = (struct mx_mem_series){ .first = -1, .last = -1, .peak = -1 };
}

void mx_mem_track_add(struct mx_mem_track *t, const struct mx_mem_sample *m)
{
        t->n++;
        t->unified |= m->unified;
        for (size_t i = 0; i < _MX_MEM_KIND_MAX; i++) {
                struct mx_mem_series *s = &t->k[i];
                int64_t v = mx_mem_sample_figure(m, (enum mx_mem_kind)i);

                if (v < 0)
                        continue;
                if (i == MX_MEM_GPU)
                        t->gpu_seen = true;
                if (s->n == 0) {
                        s->first = v;
                        s->at_first = t->n == 1;
                }
                s->last = v;
                s->peak = MX_MAX(s->peak, v);
                s->n++;
                s->last_at = t->n;
        }
}

bool mx_mem_track_complete(const struct mx_mem_track *t, enum mx_mem_kind k)
{
        const struct mx_mem_series *s = &t->k[k];

        return t->n >= 2 && s->at_first && s->last_at == t->n;
}

/* The machine's order of kinds; its length. */
static size_t kind_order(const struct mx_mem_track *t, enum mx_mem_kind order[2])
{
        if (t->unified) {
                order[0] = MX_MEM_SYSTEM;
                order[1] = MX_MEM_PSS;
                return 2;
        }
        if (t->gpu_seen) {
                order[0] = MX_MEM_GPU;
                order[1] = MX_MEM_PSS;
                return 2;
        }
        order[0] = MX_MEM_PSS;
        return 1;
}

static char *missing_note(const struct mx_mem_track *t, enum mx_mem_kind k)
{
        const struct mx_mem_series *s = &t->k[k];

        if (t->n < 2)
                return xasprintf("%s: fewer than two samples", kind_names[k]);
        return xasprintf("the %s figure came with %" PRIu64 " of %" PRIu64 " samples (%s%s%s): samples without "
                         "it are not compared with samples with it",
                         kind_names[k], s->n, t->n, s->at_first ? "" : "not the first",
                         !s->at_first && s->last_at != t->n ? ", " : "",
                         s->last_at == t->n ? "" : "not the last");
}

int mx_mem_track_pick(const struct mx_mem_track *t, enum mx_mem_kind *ret, char **ret_note)
{
        enum mx_mem_kind order[2];
        size_t n = kind_order(t, order);
        _cleanup_free_ char *note = NULL;

        for (size_t i = 0; i < n; i++) {
                if (mx_mem_track_complete(t, order[i])) {
                        *ret = order[i];
                        if (ret_note)
                                *ret_note = TAKE_PTR(note);
                        return 0;
                }
                if (!note)
                        note = missing_note(t, order[i]);
        }
        if (ret_note)
                *ret_note = TAKE_PTR(note);
        return -ENODATA;
}

int64_t mx_mem_track_growth(const struct mx_mem_track *t, enum mx_mem_kind k, double *ret_frac)
{
        const struct mx_mem_series *s = &t->k[k];
        int64_t d = s->n > 0 ? s->last - s->first : 0;

        if (ret_frac)
                *ret_frac = s->first > 0 ? (double)d / (double)s->first : NAN;
        return d;
}

json_t *mx_mem_track_json(const struct mx_mem_track *t)
{
        json_t *kinds = json_object(), *o;
        _cleanup_free_ char *note = NULL;
        enum mx_mem_kind k;
        double frac;

        for (size_t i = 0; i < _MX_MEM_KIND_MAX; i++) {
                const struct mx_mem_series *s = &t->k[i];

                if (s->n == 0)
                        continue;
                json_object_set_new(kinds, kind_names[i],
                                    json_pack("{s:I,s:I,s:I,s:I,s:b}", "first", (json_int_t)s->first, "last",
                                              (json_int_t)s->last, "peak", (json_int_t)s->peak, "samples",
                                              (json_int_t)s->n, "complete",
                                              mx_mem_track_complete(t, (enum mx_mem_kind)i)));
        }
        if (mx_mem_track_pick(t, &k, &note) < 0) {
                o = json_pack("{s:I,s:s,s:o}", "samples", (json_int_t)t->n, "note",
                              note ? note : "no memory sample taken", "kinds", kinds);
                return o;
        }
        mx_mem_track_growth(t, k, &frac);
        o = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:o,s:I,s:o}", "figure", kind_names[k], "figure_is", kind_what[k],
                      "first", (json_int_t)t->k[k].first, "last", (json_int_t)t->k[k].last, "peak",
                      (json_int_t)t->k[k].peak, "drift", (json_int_t)(t->k[k].last - t->k[k].first), "growth",
                      isfinite(frac) ? json_real(frac) : json_null(), "samples", (json_int_t)t->n, "kinds", kinds);
        if (note)
                json_object_set_new(o, "note", json_string(note));
        return o;
}
