/* SPDX-License-Identifier: MIT */
/* A run's argv and environment from its snapshot, and the expanded command each attempt records. */
#include "runner-util.h"

static int expand_argv(json_t *argv, const char *const *values, char ***ret, char **reterr)
{
        _cleanup_strv_free_ char **out = NULL;
        size_t i;
        json_t *w;

        if (!json_is_array(argv) || json_array_size(argv) == 0) {
                *reterr = xstrdup("the run's snapshot has no command");
                return -EINVAL;
        }
        json_array_foreach (argv, i, w) {
                char *s = NULL;
                int r = mx_placeholder_expand(strempty(json_string_value(w)), values, &s, reterr);
                if (r < 0)
                        return r;
                strv_consume(&out, s);
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/* Replace or add NAME=value in an environment list. */
static void env_set(char ***env, char *entry)
{
        size_t klen = strcspn(entry, "=");

        for (char **e = *env; e && *e; e++)
                if (strncmp(*e, entry, klen) == 0 && (*e)[klen] == '=') {
                        free(*e);
                        *e = entry;
                        return;
                }
        strv_consume(env, entry);
}

/* The snapshot's env (an array of "VAR=value" in matrix order) on top of base (may be NULL). */
static int expand_env(json_t *env, char *const *base, const char *const *values, char ***ret, char **reterr)
{
        _cleanup_strv_free_ char **out = base ? strv_copy(base) : NULL;
        size_t i;
        json_t *v;

        json_array_foreach (env, i, v) {
                const char *kv = strempty(json_string_value(v));
                const char *eq = strchr(kv, '=');
                _cleanup_free_ char *s = NULL, *name = NULL;
                int r;

                if (!eq || eq == kv) {
                        *reterr = xasprintf("bad environment entry '%s' in the run's snapshot", kv);
                        return -EINVAL;
                }
                name = xstrndup(kv, (size_t)(eq - kv));
                r = mx_placeholder_expand(eq + 1, values, &s, reterr);
                if (r < 0)
                        return r;
                env_set(&out, xasprintf("%s=%s", name, s));
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/* The values a runner without a port knows: the model and the run's directory. */
static void default_values(const struct mx_run_ctx *ctx, const char *values[_MX_PLACEHOLDER_MAX])
{
        const char *model = json_string_value(json_object_get(ctx->spec, "model"));
        const char *served = json_string_value(json_object_get(ctx->spec, "served_model_name"));

        values[MX_PLACEHOLDER_MODEL] = model;
        values[MX_PLACEHOLDER_SERVED_MODEL_NAME] = served ? served : model; /* mxmatrix.json(5) */
        values[MX_PLACEHOLDER_RUN_DIR] = ctx->run_dir;
        values[MX_PLACEHOLDER_SOURCE_DIR] = json_string_value(json_object_get(ctx->spec, "source_dir"));
}

int runner_build_command(const struct mx_run_ctx *ctx, const char *const *values, char ***ret_argv,
                         char ***ret_env, char **reterr)
{
        const char *defaults[_MX_PLACEHOLDER_MAX] = {};
        _cleanup_strv_free_ char **argv = NULL, **env = NULL;
        int r;

        if (!values) {
                default_values(ctx, defaults);
                values = defaults;
        }
        r = expand_argv(json_object_get(ctx->spec, "argv"), values, &argv, reterr);
        if (r >= 0)
                r = expand_env(json_object_get(ctx->spec, "env"), environ, values, &env, reterr);
        if (r < 0)
                return r;
        *ret_argv = TAKE_PTR(argv);
        *ret_env = TAKE_PTR(env);
        return 0;
}

json_t *runner_command_record(const struct mx_run_ctx *ctx, const char *const *values, char *const *argv)
{
        const char *defaults[_MX_PLACEHOLDER_MAX] = {};
        _cleanup_strv_free_ char **env = NULL;
        _cleanup_free_ char *err = NULL;
        json_t *rec, *a = json_array(), *e = json_array();

        if (!values) {
                default_values(ctx, defaults);
                values = defaults;
        }

        for (char *const *w = argv; w && *w; w++)
                json_array_append_new(a, json_string(*w));
        if (expand_env(json_object_get(ctx->spec, "env"), NULL, values, &env, &err) >= 0)
                for (char **v = env; v && *v; v++)
                        json_array_append_new(e, json_string(*v));
        rec = json_pack("{s:o, s:o}", "argv", a, "env", e);
        if (ctx->run_dir)
                json_object_set_new(rec, "cwd", json_string(ctx->run_dir));
        return rec;
}

const struct mx_runner_ops *runner_for_spec(json_t *spec)
{
        const char *base = json_string_value(json_object_get(json_object_get(spec, "profile"), "base"));

        /* A snapshot without a resolved profile predates profiles: run its argv as a command. */
        return !base || streq(base, "command") ? &runner_command_ops : &runner_target_ops;
}
