/* SPDX-License-Identifier: MIT */
/*
 * The "matrix" section of a report document (docs/mxmatrix-report.json.5):
 * what the matrix file declares that the reports set beside what the runs
 * found. Axes and values without their expectations, the baseline, the
 * features with their criteria spelled out, the known-incompatible entries
 * with their conditions spelled out, and the reference section as written.
 */
#include "matrix.h"
#include "ident.h"
#include "matrix-report.h"

/* An axis with the values as a user sets them (name, aliases, env, argv); expectations left out. */
static json_t *axis_json(const struct mx_matrix_axis *a)
{
        json_t *values = json_array();

        for (size_t v = 0; v < a->n_values; v++) {
                const struct mx_matrix_value *val = &a->values[v];
                json_t *o = json_pack("{s:s,s:s?,s:b}", "name", val->name, "description", val->description,
                                      "product", val->product);
                static const char *const keep[] = {"aliases", "env", "argv", NULL};

                for (size_t k = 0; keep[k]; k++) {
                        json_t *x = json_object_get(val->node, keep[k]);

                        if (x)
                                json_object_set_new(o, keep[k], json_deep_copy(x));
                }
                json_array_append_new(values, o);
        }
        return json_pack("{s:s,s:s?,s:o}", "name", a->name, "description", a->description, "values", values);
}

/* The feature as written, with its status (the default filled in) and each criterion as a sentence. */
static json_t *feature_json(const struct mx_matrix_feature *f)
{
        json_t *o = json_deep_copy(f->node), *texts = json_array();

        for (size_t i = 0; i < f->n_criteria; i++) {
                char *t = mx_criterion_describe(&f->criteria[i]);

                json_array_append_new(texts, json_string(t));
                free(t);
        }
        json_object_set_new(o, "status", json_string(mx_feature_status_to_string(f->status)));
        json_object_set_new(o, "criteria_text", texts);
        return o;
}

json_t *mx_matrix_report_json(const struct mx_matrix *m)
{
        json_t *axes = json_array(), *features = json_array(), *ki = json_array(), *baseline = json_object();
        char digest[MX_IDENT_HASH_LEN + 1];

        for (size_t a = 0; a < m->n_axes; a++) {
                json_array_append_new(axes, axis_json(&m->axes[a]));
                if (m->baseline && m->baseline[a] >= 0)
                        json_object_set_new(baseline, m->axes[a].name,
                                            json_string(m->axes[a].values[m->baseline[a]].name));
        }
        for (size_t i = 0; i < m->n_features; i++)
                json_array_append_new(features, feature_json(&m->features[i]));
        for (size_t i = 0; i < m->n_known_incompatible; i++) {
                const struct mx_matrix_known_incompatible *k = &m->known_incompatible[i];
                char *text = mx_matrix_cond_describe(m, &k->when);

                json_array_append_new(ki, json_pack("{s:O,s:s,s:s,s:s,s:s?,s:s?}", "when",
                                                    json_object_get(k->node, "when"), "text", text, "expect",
                                                    mx_ki_expect_to_string(k->expect), "reason",
                                                    strempty(k->reason), "workaround", k->workaround,
                                                    "status", k->status));
                free(text);
        }
        return json_pack("{s:s,s:s,s:s?,s:s?,s:o,s:o,s:o,s:o,s:o}", "path", m->path, "digest",
                         mx_ident_hash_format(mx_fnv1a64(m->text, m->text_len, MX_FNV1A64_INIT), digest),
                         "name", m->name, "description", m->description, "axes", axes, "baseline", baseline,
                         "features", features, "known_incompatible", ki, "reference",
                         m->reference ? json_deep_copy(m->reference) : json_null());
}
