/* SPDX-License-Identifier: MIT */
/*
 * The matrix file's "levels" sections (mxmatrix.json(5), LEVELS): checked
 * with the rest of the file, resolved per submission into the settings a
 * run's snapshot stores.
 */
#include "levelcat.h"
#include "matrix.h"

static bool is_common(const char *k)
{
        for (const struct mx_level_setting *s = mx_level_common_settings; s->name; s++)
                if (streq(s->name, k))
                        return true;
        return false;
}

/* Apply the common settings of a section onto settings (other keys are left alone). */
static int apply_common(const struct mx_level_def *d, json_t *settings, json_t *section, const char *where,
                        char **reterr)
{
        _cleanup_json_ json_t *common = json_object();
        const char *k;
        json_t *v;

        json_object_foreach (section, k, v)
                if (is_common(k))
                        json_object_set(common, k, v);
        return mx_level_settings_apply(d, settings, common, where, reterr);
}

static int check_section(const struct mx_matrix *m, json_t *section, const char *where, char **reterr)
{
        const char *k;
        json_t *v;

        if (!section)
                return 0;
        if (!json_is_object(section))
                return mx_matrix_error_at(m, section, NULL, reterr, "%s: expected an object", where);
        json_object_foreach (section, k, v) {
                const struct mx_level_def *d = mx_level_def_find(k);
                _cleanup_free_ char *err = NULL;
                _cleanup_json_ json_t *scratch = NULL, *sel = NULL;

                if (streq(k, "run")) {
                        if (mx_levels_select(v, &sel, &err) < 0)
                                return mx_matrix_error_at(m, section, k, reterr, "%s", strna(err));
                        continue;
                }
                d = d ? d : is_common(k) ? &mx_level_defs[0] : NULL;
                if (!d) {
                        _cleanup_free_ char *esc = mx_escape(k, 64);
                        return mx_matrix_error_at(m, section, k, reterr,
                                                  "unknown key '%s' in %s (run, timeout, continue_on_fail, or a "
                                                  "level name)",
                                                  esc, where);
                }
                scratch = mx_level_defaults(d);
                if (is_common(k) && !mx_level_def_find(k)) {
                        if (apply_common(d, scratch, section, where, &err) < 0)
                                return mx_matrix_error_at(m, section, k, reterr, "%s", strna(err));
                        continue;
                }
                if (!json_is_object(v))
                        return mx_matrix_error_at(m, section, k, reterr, "the settings of %s are an object", k);
                {
                        _cleanup_free_ char *w = xasprintf("%s.%s", where, d->name);

                        if (mx_level_settings_apply(d, scratch, v, w, &err) < 0)
                                return mx_matrix_error_at(m, section, k, reterr, "%s", strna(err));
                }
        }
        return 0;
}

int mx_matrix_levels_check(const struct mx_matrix *m, char **reterr)
{
        int r = check_section(m, json_object_get(m->root, "levels"), "levels", reterr);

        for (size_t i = 0; r >= 0 && i < m->n_features; i++) {
                _cleanup_free_ char *w = xasprintf("levels of feature %s", m->features[i].name);

                r = check_section(m, json_object_get(m->features[i].node, "levels"), w, reterr);
        }
        return r;
}

int mx_levels_resolve(const struct mx_matrix *m, int feature, json_t *selection, json_t *overrides,
                      json_t **ret_run, json_t **ret_settings, char **reterr)
{
        json_t *msec = m ? json_object_get(m->root, "levels") : NULL;
        json_t *fsec = m && feature >= 0 && (size_t)feature < m->n_features
                               ? json_object_get(m->features[feature].node, "levels")
                               : NULL;
        json_t *words = json_array_size(selection) > 0         ? selection
                        : json_object_get(fsec, "run")         ? json_object_get(fsec, "run")
                        : json_object_get(msec, "run")         ? json_object_get(msec, "run")
                                                               : NULL;
        _cleanup_json_ json_t *run = NULL, *settings = json_object(), *deflt = NULL;
        const char *k;
        size_t i;
        json_t *w, *v;
        int r;

        /* Seed 001's protocol: every run L1 to L5 (L1.5 inside); the plan's own runs are its L6. */
        if (!words)
                words = deflt = json_pack("[s]", MX_LEVELS_DEFAULT);
        r = mx_levels_select(words, &run, reterr);
        if (r < 0)
                return r;
        json_array_foreach (run, i, w) {
                const struct mx_level_def *d = mx_level_def_find(json_string_value(w));
                json_t *s = mx_level_defaults(d);

                json_object_set_new(settings, d->name, s);
                r = apply_common(d, s, msec, "levels", reterr);
                if (r >= 0 && json_object_get(msec, d->name))
                        r = mx_level_settings_apply(d, s, json_object_get(msec, d->name), "levels", reterr);
                if (r >= 0)
                        r = apply_common(d, s, fsec, "feature levels", reterr);
                if (r >= 0 && json_object_get(fsec, d->name))
                        r = mx_level_settings_apply(d, s, json_object_get(fsec, d->name), "feature levels", reterr);
                if (r < 0)
                        return r;
        }
        json_object_foreach (overrides, k, v) {
                const char *dot = strrchr(k, '.');
                _cleanup_free_ char *lname = dot ? xstrndup(k, dot - k) : NULL;
                const struct mx_level_def *d = lname ? mx_level_def_find(lname) : NULL;
                _cleanup_json_ json_t *one = NULL;

                if (!d) {
                        _cleanup_free_ char *esc = mx_escape(k, 64);
                        if (reterr)
                                *reterr = xasprintf("'%s' is not LEVEL.setting (L3.concurrency=4)", esc);
                        return -EINVAL;
                }
                if (!json_object_get(settings, d->name)) {
                        if (reterr)
                                *reterr = xasprintf("%s: %s is not among the levels this submission runs", k,
                                                    d->name);
                        return -EINVAL;
                }
                one = json_object();
                json_object_set(one, dot + 1, v);
                r = mx_level_settings_apply(d, json_object_get(settings, d->name), one, "submission", reterr);
                if (r < 0)
                        return r;
        }
        *ret_run = TAKE_PTR(run);
        *ret_settings = TAKE_PTR(settings);
        return 0;
}

char *mx_level_settings_summary(const struct mx_level_def *d, json_t *settings)
{
        _cleanup_json_ json_t *def = mx_level_defaults(d);
        struct mx_buf b = MX_BUF_INIT;
        const char *k;
        json_t *v;

        json_object_foreach (settings, k, v) {
                _cleanup_free_ char *t = NULL;

                if (json_equal(v, json_object_get(def, k)))
                        continue;
                t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
                if (t && strlen(t) > 60)
                        strcpy(t + 56, "...");
                mx_buf_printf(&b, "%s%s=%s", b.len ? " " : "", k, strna(t));
        }
        return b.data ? mx_buf_steal(&b) : xstrdup("defaults");
}
