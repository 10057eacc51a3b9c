/* SPDX-License-Identifier: MIT */
/*
 * Collecting an attempt's metadata record (meta.h says what and when): the
 * matrix's metadata section from the snapshot, with defaults for what it does
 * not name, becomes a list of items; each item runs its alternatives in turn
 * (a file, then a command) until one succeeds; all items run at once. The
 * record keeps every item's source and value or error, the source trees, a
 * summary in the terms of seed 002's Environment block, and the run's
 * command, env and workload from the snapshot.
 */
#include "meta.h"
#include "metadata.h"
#include "runner-util.h"
#include "csv.h"

#include <ctype.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/utsname.h>

extern char **environ;

/* Fields every driver since long before Blackwell knows; one unknown field fails the whole query. */
#define META_GPU_QUERY                                                                                      \
        "--query-gpu=index,name,uuid,driver_version,pstate,persistence_mode,compute_mode,power.management," \
        "power.limit,power.default_limit,enforced.power.limit,clocks.applications.graphics,"                \
        "clocks.applications.memory,clocks.default_applications.graphics,"                                  \
        "clocks.default_applications.memory,clocks.max.sm,clocks.max.memory"

/* What pip freeze would list, without needing pip in the environment (uv venvs have none). */
#define META_PY_FREEZE                                                                                      \
        "import importlib.metadata as m\n"                                                                  \
        "print('\\n'.join(sorted({'%s==%s' % (d.metadata['Name'], d.version) for d in m.distributions()},"  \
        " key=str.lower)))"

/* ---- parsing ---- */

static char *trim_dup(const char *s, size_t n)
{
        while (n > 0 && isspace((unsigned char)s[0]))
                s++, n--;
        while (n > 0 && isspace((unsigned char)s[n - 1]))
                n--;
        return xstrndup(s, n);
}

/* A version token at s: digits and dots (and the letters some builds append). */
static char *version_at(const char *s)
{
        size_t n = 0;

        while (isalnum((unsigned char)s[n]) || s[n] == '.' || s[n] == '-' || s[n] == '_')
                n++;
        return n > 0 && isdigit((unsigned char)s[0]) ? xstrndup(s, n) : NULL;
}

char *meta_parse_cuda(const char *out)
{
        const char *p;

        while (isspace((unsigned char)*out))
                out++;
        if (*out == '{') {
                _cleanup_json_ json_t *j = json_loads(out, 0, NULL);
                const char *v = json_string_value(json_object_get(json_object_get(j, "cuda"), "version"));

                return v ? xstrdup(v) : NULL;
        }
        /* nvcc: "Cuda compilation tools, release 13.0, V13.0.88": the V part is the full version. */
        if ((p = strstr(out, "release ")) && (p = strstr(p, ", V")))
                return version_at(p + 3);
        if ((p = strstr(out, "release ")))
                return version_at(p + 8);
        if ((p = strstr(out, "CUDA Version "))) /* version.txt of CUDA up to 11.0 */
                return version_at(p + 13);
        return NULL;
}

static bool define_value(const char *out, const char *name, long *ret)
{
        const char *p = out;
        size_t n = strlen(name);

        while ((p = strstr(p, "#define "))) {
                p += 8;
                if (strncmp(p, name, n) == 0 && (p[n] == ' ' || p[n] == '\t')) {
                        char *end;
                        long v = strtol(p + n, &end, 10);

                        if (end != p + n) {
                                *ret = v;
                                return true;
                        }
                }
        }
        return false;
}

char *meta_parse_cudnn(const char *out)
{
        long major, minor, patch;

        if (!define_value(out, "CUDNN_MAJOR", &major) || !define_value(out, "CUDNN_MINOR", &minor) ||
            !define_value(out, "CUDNN_PATCHLEVEL", &patch))
                return NULL;
        return xasprintf("%ld.%ld.%ld", major, minor, patch);
}

static bool na(const char *v)
{
        return !*v || streq(v, "[N/A]") || streq(v, "N/A") || streq(v, "[Not Supported]") ||
               streq(v, "Not Supported") || streq(v, "[Unknown Error]");
}

int meta_parse_gpu_csv(const char *out, json_t **ret, char **reterr)
{
        _cleanup_(mx_csv_freep) struct mx_csv *csv = mx_csv_new(NULL);
        _cleanup_strv_free_ char **header = NULL;
        _cleanup_json_ json_t *gpus = json_array();
        const char *line = out;
        unsigned no = 0;
        int r;

        while (*line) {
                const char *nl = strchrnul(line, '\n');
                size_t len = (size_t)(nl - line);
                const struct mx_csv_record *rec;
                json_t *gpu;

                no++;
                if (len > 0 && line[len - 1] == '\r')
                        len--;
                if (len == 0 && !mx_csv_pending(csv))
                        goto next;
                r = mx_csv_feed_line(csv, no, line, len, reterr);
                if (r < 0)
                        return r;
                if (r == 0)
                        goto next;
                rec = mx_csv_record(csv);
                if (!header) {
                        header = xcalloc(rec->n_fields + 1, sizeof(char *));
                        for (size_t i = 0; i < rec->n_fields; i++) {
                                char *h = trim_dup(rec->fields[i], strlen(rec->fields[i]));
                                char *unit = strstr(h, " [");

                                if (unit) /* "power.limit [W]" */
                                        *unit = '\0';
                                header[i] = h;
                        }
                        goto next;
                }
                if (rec->n_fields != strv_length(header))
                        return mx_reterr(reterr, -EBADMSG, "line %u: %zu fields under a header of %zu", no,
                                         rec->n_fields, strv_length(header));
                gpu = json_object();
                for (size_t i = 0; i < rec->n_fields; i++) {
                        _cleanup_free_ char *v = trim_dup(rec->fields[i], strlen(rec->fields[i]));
                        _cleanup_free_ char *u = mx_utf8_sanitize(v, strlen(v), false, NULL);

                        json_object_set_new(gpu, header[i], na(u) ? json_null() : json_string(u));
                }
                json_array_append_new(gpus, gpu);
        next:
                line = *nl ? nl + 1 : nl;
        }
        r = mx_csv_finish(csv, reterr);
        if (r < 0)
                return r;
        if (!header || json_array_size(gpus) == 0)
                return mx_reterr(reterr, -ENODATA, "no GPU in the output");
        *ret = TAKE_PTR(gpus);
        return 0;
}

static const char *gpu_str(json_t *gpu, const char *key)
{
        return json_string_value(json_object_get(gpu, key));
}

/* Join the per-GPU texts, once each: "default", or "0: default; 1: applications ...". */
static char *join_unique(char **per_gpu, size_t n)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        bool same = true;

        for (size_t i = 0; i < n; i++) {
                if (!per_gpu[i])
                        return NULL;
                same = same && streq(per_gpu[i], per_gpu[0]);
        }
        if (n == 0)
                return NULL;
        if (same)
                return xstrdup(per_gpu[0]);
        for (size_t i = 0; i < n; i++)
                mx_buf_printf(&b, "%s%zu: %s", i > 0 ? "; " : "", i, per_gpu[i]);
        return mx_buf_steal(&b);
}

void meta_gpu_settings(json_t *gpus, char **ret_driver, char **ret_clocks, char **ret_power)
{
        size_t n = json_array_size(gpus);
        _cleanup_strv_free_ char **clocks = xcalloc(n + 1, sizeof(char *));
        _cleanup_strv_free_ char **power = xcalloc(n + 1, sizeof(char *));
        const char *driver = gpu_str(json_array_get(gpus, 0), "driver_version");

        for (size_t i = 0; i < n; i++) {
                json_t *g = json_array_get(gpus, i);
                const char *ag = gpu_str(g, "clocks.applications.graphics"),
                           *am = gpu_str(g, "clocks.applications.memory"),
                           *dg = gpu_str(g, "clocks.default_applications.graphics"),
                           *dm = gpu_str(g, "clocks.default_applications.memory");
                const char *pl = gpu_str(g, "power.limit"), *pd = gpu_str(g, "power.default_limit");

                /* Locked clocks (nvidia-smi -lgc) are not visible to --query-gpu; application clocks are. */
                if (ag && dg)
                        clocks[i] = streq(ag, dg) && streq_ptr(am, dm)
                                            ? xstrdup("default")
                                            : xasprintf("applications %s / %s (default %s / %s)", ag,
                                                        strna(am), dg, strna(dm));
                if (pl && pd)
                        power[i] = streq(pl, pd) ? xstrdup("default")
                                                 : xasprintf("power limit %s (default %s)", pl, pd);
        }
        *ret_driver = driver ? xstrdup(driver) : NULL;
        *ret_clocks = join_unique(clocks, n);
        *ret_power = join_unique(power, n);
}

json_t *meta_parse_docker(const char *out)
{
        _cleanup_json_ json_t *j = json_loads(out, 0, NULL);
        json_t *img = json_is_array(j) ? json_array_get(j, 0) : j, *digests;

        if (!json_is_object(img) || !json_is_string(json_object_get(img, "Id")))
                return NULL;
        digests = json_object_get(img, "RepoDigests");
        return json_pack("{s:O,s:O,s:O?}", "id", json_object_get(img, "Id"), "repo_digests",
                         json_is_array(digests) ? digests : json_array(), "created",
                         json_object_get(img, "Created"));
}

char *meta_pip_find(const char *freeze, const char *prefix)
{
        const char *line = freeze;
        size_t n = strlen(prefix);

        while (*line) {
                const char *nl = strchrnul(line, '\n');

                if (strncasecmp(line, prefix, n) == 0 && memchr(line, '=', (size_t)(nl - line)))
                        return trim_dup(line, (size_t)(nl - line));
                line = *nl ? nl + 1 : nl;
        }
        return NULL;
}

char *meta_blob_hash(const char *text, size_t len)
{
        return xasprintf("%016" PRIx64, mx_fnv1a64(text, len, MX_FNV1A64_INIT));
}

/* ---- items ---- */

enum item_kind {
        ITEM_PROBE,      /* a named probe: cuda, gpu, pip_freeze, an extra one */
        ITEM_GIT_SHA,    /* git rev-parse HEAD of a source tree */
        ITEM_GIT_STATUS, /* git status --porcelain of a source tree */
        ITEM_GIT_BRANCH, /* git rev-parse --abbrev-ref HEAD of a source tree */
        ITEM_GIT_TIME,   /* git log -1 --format=%ct HEAD: the commit's time, for history's order */
};

struct alt {
        char **argv;
        char *source; /* "file PATH", "command ARGV0 ..." */
};

struct item {
        struct meta_collect *c;
        char *name;
        enum item_kind kind;
        struct alt *alts;
        size_t n_alts, cur;
        int64_t timeout_ms;
        size_t output_max;
        struct meta_probe *probe;
        json_t *tried; /* errors of alternatives that failed before the last one */
        /* the outcome */
        char *out, *error, *source;
        size_t out_len;
        bool truncated;
        int64_t duration_us;
};

struct meta_collect {
        struct meta_collect_opts o;
        meta_collect_cb cb;
        void *ud;
        json_t *cfg;     /* the snapshot's metadata section, or an empty object */
        json_t *skipped; /* {"name": "why"} for items not collected */
        struct item *items;
        size_t n_items, pending;
        char **env;
        struct event *done_ev;
        int64_t started_mono, started_real;
};

static void alt_add(struct item *it, char **argv, char *source)
{
        it->alts = xreallocarray(it->alts, it->n_alts + 1, sizeof(struct alt));
        it->alts[it->n_alts++] = (struct alt){.argv = argv, .source = source};
}

static char *argv_describe(char *const *argv)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        mx_buf_puts(&b, "command");
        for (size_t i = 0; argv[i]; i++) {
                _cleanup_free_ char *e = mx_escape(argv[i], 200);

                mx_buf_printf(&b, " %s", e);
        }
        return mx_buf_steal(&b);
}

/* An argv from the snapshot, or NULL if it is not one (the loader checked it; the snapshot may be older). */
static char **argv_from_json(json_t *a)
{
        _cleanup_strv_free_ char **argv = xcalloc(json_array_size(a) + 1, sizeof(char *));
        size_t i;
        json_t *v;

        json_array_foreach (a, i, v) {
                if (!json_is_string(v))
                        return NULL;
                argv[i] = xstrdup(json_string_value(v));
        }
        return json_array_size(a) > 0 && argv[0][0] ? TAKE_PTR(argv) : NULL;
}

static void alt_add_command(struct item *it, char **argv)
{
        if (argv)
                alt_add(it, argv, argv_describe(argv));
}

static void alt_add_file(struct item *it, const char *path)
{
        char **argv = xcalloc(4, sizeof(char *));

        /* Read by cat in a child: a file on a hung mount then costs the time limit, not the event loop. */
        argv[0] = xstrdup("cat");
        argv[1] = xstrdup("--");
        argv[2] = xstrdup(path);
        alt_add(it, argv, xasprintf("file %s", path));
}

static struct item *item_new(struct meta_collect *c, const char *name, enum item_kind kind, json_t *probe)
{
        json_t *t = json_object_get(probe, "timeout_ms"), *o = json_object_get(probe, "output_max_bytes");
        json_t *ct = json_object_get(c->cfg, "timeout_ms"),
               *co = json_object_get(c->cfg, "output_max_bytes");
        struct item *it;

        c->items = xreallocarray(c->items, c->n_items + 1, sizeof(struct item));
        it = &c->items[c->n_items++];
        *it = (struct item){.c = c, .name = xstrdup(name), .kind = kind};
        it->timeout_ms = json_is_integer(t)    ? json_integer_value(t)
                         : json_is_integer(ct) ? json_integer_value(ct)
                                               : META_TIMEOUT_MS_DEFAULT;
        it->output_max = json_is_integer(o)    ? (size_t)json_integer_value(o)
                         : json_is_integer(co) ? (size_t)json_integer_value(co)
                                               : META_OUTPUT_MAX_DEFAULT;
        return it;
}

/* A probe as the matrix wrote it (normalised by mx_meta_load()): its alternatives. */
static void item_add_spec(struct item *it, json_t *probe)
{
        json_t *files = json_object_get(probe, "file"), *f;
        size_t i;

        if (json_is_array(probe)) /* a bare argv, as the matrix may write it */
                probe = json_pack("{s:O}", "command", probe);
        else
                json_incref(probe);
        files = json_object_get(probe, "file");
        if (json_is_array(json_object_get(probe, "command")))
                alt_add_command(it, argv_from_json(json_object_get(probe, "command")));
        json_array_foreach (files, i, f)
                if (json_is_string(f))
                        alt_add_file(it, json_string_value(f));
        json_decref(probe);
}

static char **strv_make(const char *first, ...)
{
        char **l = NULL;
        va_list ap;

        strv_push(&l, first);
        va_start(ap, first);
        for (const char *s; (s = va_arg(ap, const char *));)
                strv_push(&l, s);
        va_end(ap);
        return l;
}

/* The Python environment the server runs from: argv[0] in DIR/bin of a venv or conda env; its python, or
 * NULL. */
static char *server_python(json_t *spec)
{
        const char *cmd = json_string_value(json_array_get(json_object_get(spec, "argv"), 0));
        _cleanup_free_ char *path = NULL, *dir = NULL, *venv = NULL, *conda = NULL;
        struct stat st;
        char *slash;

        if (!cmd || strchr(cmd, '{'))
                return NULL;
        if (cmd[0] == '/')
                path = xstrdup(cmd);
        else if (!strchr(cmd, '/')) {
                const char *p = getenv("PATH");
                _cleanup_free_ char *copy = xstrdup(p ? p : "/usr/local/bin:/usr/bin:/bin");
                char *save = NULL;

                for (char *d = strtok_r(copy, ":", &save); d && !path; d = strtok_r(NULL, ":", &save)) {
                        _cleanup_free_ char *f = xasprintf("%s/%s", d, cmd);

                        if (d[0] == '/' && access(f, X_OK) == 0)
                                path = TAKE_PTR(f);
                }
        }
        if (!path)
                return NULL;
        dir = xstrdup(path);
        slash = strrchr(dir, '/');
        *slash = '\0';
        venv = xasprintf("%s/../pyvenv.cfg", dir);
        conda = xasprintf("%s/../conda-meta", dir);
        if (stat(venv, &st) < 0 && (stat(conda, &st) < 0 || !S_ISDIR(st.st_mode)))
                return NULL;
        for (const char *py = "python3"; py; py = streq(py, "python3") ? "python" : NULL) {
                _cleanup_free_ char *f = xasprintf("%s/%s", dir, py);

                if (access(f, X_OK) == 0)
                        return TAKE_PTR(f);
        }
        return NULL;
}

/* The default pip freeze: the server's venv, else the docker image; NULL when neither is known. */
static bool add_default_pip(struct meta_collect *c, struct item *it)
{
        _cleanup_free_ char *py = server_python(c->o.spec);
        const char *image = json_string_value(json_object_get(c->cfg, "docker_image"));

        if (py) {
                alt_add_command(it, strv_make(py, "-c", META_PY_FREEZE, NULL));
                return true;
        }
        if (image) {
                alt_add_command(it, strv_make("docker", "run", "--rm", "--network=none", "--entrypoint",
                                              "python3", image, "-c", META_PY_FREEZE, NULL));
                return true;
        }
        return false;
}

/* Built-in defaults of the named items; false when the item has none (then it is not configured). */
static bool add_default(struct meta_collect *c, struct item *it)
{
        const char *image = json_string_value(json_object_get(c->cfg, "docker_image"));

        if (streq(it->name, "cuda")) {
                alt_add_file(it, "/usr/local/cuda/version.json");
                alt_add_command(it, strv_make("nvcc", "--version", NULL));
                alt_add_command(it, strv_make("/usr/local/cuda/bin/nvcc", "--version", NULL));
        } else if (streq(it->name, "cudnn")) {
                static const char *const files[] = {
                        "/usr/include/cudnn_version.h",
                        "/usr/include/x86_64-linux-gnu/cudnn_version.h",
                        "/usr/include/aarch64-linux-gnu/cudnn_version.h",
                        "/usr/local/cuda/include/cudnn_version.h",
                };
                for (size_t i = 0; i < ELEMENTSOF(files); i++)
                        alt_add_file(it, files[i]);
        } else if (streq(it->name, "gpu"))
                alt_add_command(it, strv_make("nvidia-smi", META_GPU_QUERY, "--format=csv", NULL));
        else if (streq(it->name, "docker_image") && image)
                alt_add_command(it, strv_make("docker", "image", "inspect", image, NULL));
        else if (streq(it->name, "pip_freeze"))
                return add_default_pip(c, it);
        else
                return false;
        return true;
}

static void item_free(struct item *it)
{
        meta_probe_free(it->probe);
        for (size_t i = 0; i < it->n_alts; i++) {
                strv_free(it->alts[i].argv);
                free(it->alts[i].source);
        }
        free(it->alts);
        json_decref(it->tried);
        free(it->name);
        free(it->out);
        free(it->error);
        free(it->source);
}

/* ---- building the record ---- */

static json_t *json_string_or_null(const char *s)
{
        _cleanup_free_ char *u = s ? mx_utf8_sanitize(s, strlen(s), false, NULL) : NULL;

        return u ? json_string(u) : json_null();
}

static json_t *text_json(const char *p, size_t n)
{
        _cleanup_free_ char *u = mx_utf8_sanitize(p, n, false, NULL);

        return json_string(u);
}

/* Put text into obj[key]: inline when small, else into blobs with a reference. */
static void put_output(json_t *obj, const char *key, const char *text, size_t len, json_t *blobs,
                       bool as_blob)
{
        _cleanup_free_ char *u = mx_utf8_sanitize(text, len, false, NULL);
        size_t lines = 0;

        if (!as_blob && strlen(u) <= META_INLINE_MAX) {
                json_object_set_new(obj, key, json_string(u));
                return;
        }
        for (const char *p = u; *p; p++)
                lines += *p == '\n';
        if (*u && u[strlen(u) - 1] != '\n')
                lines++;
        {
                _cleanup_free_ char *h = meta_blob_hash(u, strlen(u));

                json_object_set_new(obj, key,
                                    json_pack("{s:s,s:I,s:I}", "blob", h, "bytes", (json_int_t)strlen(u),
                                              "lines", (json_int_t)lines));
                json_object_set_new(blobs, h, json_string(u));
        }
}

static json_t *item_base_json(struct item *it)
{
        json_t *j = json_object();

        if (it->source)
                json_object_set_new(j, "source", json_string(it->source));
        json_object_set_new(j, "duration_ms", json_integer(it->duration_us / 1000));
        if (it->truncated)
                json_object_set_new(j, "truncated", json_true());
        if (it->error)
                json_object_set_new(j, "error", json_string(it->error));
        if (json_array_size(it->tried) > 0)
                json_object_set(j, "tried", it->tried);
        return j;
}

/* A named probe's entry: value parsed where the item is one we know, raw output otherwise. */
static json_t *probe_json(struct item *it, json_t *blobs)
{
        json_t *j = item_base_json(it);
        _cleanup_free_ char *value = NULL;

        if (it->error)
                return j;
        if (streq(it->name, "pip_freeze")) {
                put_output(j, "output", it->out, it->out_len, blobs, true);
                return j;
        }
        if (streq(it->name, "cuda"))
                value = meta_parse_cuda(it->out);
        else if (streq(it->name, "cudnn"))
                value = meta_parse_cudnn(it->out);
        else if (streq(it->name, "gpu")) {
                _cleanup_free_ char *why = NULL;
                json_t *gpus = NULL;

                if (meta_parse_gpu_csv(it->out, &gpus, &why) >= 0)
                        json_object_set_new(j, "value", gpus);
                else
                        json_object_set_new(j, "error",
                                            json_sprintf("cannot read the output: %s", strna(why)));
                put_output(j, "output", it->out, it->out_len, blobs, false);
                return j;
        } else if (streq(it->name, "docker_image")) {
                json_t *d = meta_parse_docker(it->out);
                _cleanup_free_ char *t = trim_dup(it->out, it->out_len);

                if (d)
                        json_object_set_new(j, "value", d);
                else if (*t && strlen(t) <= 200 && !strchr(t, '\n')) /* a command of the matrix's own */
                        json_object_set_new(j, "value", json_pack("{s:o}", "id", text_json(t, strlen(t))));
                else
                        json_object_set_new(j, "error", json_string("no image id in the output"));
                return j;
        } else {
                /* hostname, kernel overridden by the matrix, and extra probes: the output is the value. */
                _cleanup_free_ char *t = trim_dup(it->out, it->out_len);

                put_output(j, "value", t, strlen(t), blobs, false);
                return j;
        }
        if (value) {
                _cleanup_free_ char *u = mx_utf8_sanitize(value, strlen(value), false, NULL);

                json_object_set_new(j, "value", json_string(u));
        } else
                json_object_set_new(j, "error", json_sprintf("no %s version in the output", it->name));
        put_output(j, "output", it->out, it->out_len, blobs, false);
        return j;
}

static bool hex_sha(const char *s)
{
        size_t n = strlen(s);

        if (n != 40 && n != 64)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isxdigit((unsigned char)s[i]))
                        return false;
        return true;
}

/* A source's path: "~/x" under the daemon's home (mxmatrix.json(5) METADATA), else as written. */
static char *source_path(const char *path)
{
        const char *home = getenv("HOME");

        if (startswith(path, "~/"))
                return xasprintf("%s/%s", home && *home ? home : "/", path + 2);
        return xstrdup(path);
}

static void source_json(struct item *it, json_t *sources, json_t *blobs)
{
        json_t *s = json_object_get(sources, it->name);
        _cleanup_free_ char *t = it->error ? NULL : trim_dup(it->out, it->out_len);

        if (it->kind == ITEM_GIT_BRANCH) {
                /* a detached HEAD prints "HEAD": no branch to record */
                if (it->error)
                        json_object_set_new(s, "branch_error", json_sprintf("git rev-parse: %s", it->error));
                else
                        json_object_set_new(s, "branch",
                                            *t && !streq(t, "HEAD") ? json_string(t) : json_null());
                return;
        }
        if (it->kind == ITEM_GIT_TIME) {
                int64_t when = 0;

                if (it->error)
                        json_object_set_new(s, "committed_at_error", json_sprintf("git log: %s", it->error));
                else if (mx_parse_int64(t, 0, INT64_MAX, &when) < 0)
                        json_object_set_new(s, "committed_at_error", json_string("git log printed no time"));
                else
                        json_object_set_new(s, "committed_at", json_integer(when));
                return;
        }
        if (it->kind == ITEM_GIT_SHA) {
                if (it->error)
                        json_object_set_new(s, "error", json_sprintf("git rev-parse: %s", it->error));
                else if (hex_sha(t))
                        json_object_set_new(s, "sha", json_string(t));
                else
                        json_object_set_new(s, "error", json_string("git rev-parse printed no commit id"));
                return;
        }
        if (it->error) {
                json_object_set_new(s, "dirty_error", json_sprintf("git status: %s", it->error));
                return;
        }
        {
                size_t changes = 0;

                for (const char *p = t; *p; p++)
                        changes += *p == '\n';
                changes += *t ? 1 : 0;
                json_object_set_new(s, "dirty", json_boolean(*t != '\0'));
                json_object_set_new(s, "changes", json_integer((json_int_t)changes));
                if (*t)
                        put_output(s, "status", t, strlen(t), blobs, false);
                if (it->truncated)
                        json_object_set_new(s, "status_truncated", json_true());
        }
}

static json_t *builtin_json(const char *value)
{
        _cleanup_free_ char *u = mx_utf8_sanitize(value, strlen(value), false, NULL);

        return json_pack("{s:s,s:s,s:i}", "source", "uname(2)", "value", u, "duration_ms", 0);
}

static const char *item_value(json_t *items, const char *name)
{
        return json_string_value(json_object_get(json_object_get(items, name), "value"));
}

/* seed 002's Environment block in values: what meta-render.c prints. */
static json_t *summary_json(struct meta_collect *c, json_t *items, json_t *sources, json_t *blobs)
{
        json_t *s = json_object(), *gpus = json_object_get(json_object_get(items, "gpu"), "value");
        json_t *pip = json_object_get(json_object_get(items, "pip_freeze"), "output");
        json_t *docker = json_object_get(json_object_get(items, "docker_image"), "value"), *v;
        _cleanup_free_ char *date = mx_format_time(c->started_real), *driver = NULL, *clocks = NULL,
                            *power = NULL;
        const char *k;

        json_object_set_new(s, "date", json_string(date));
        json_object_foreach (sources, k, v) {
                _cleanup_free_ char *key = xasprintf("git_sha_%s", k);

                json_object_set(s, key, json_object_get(v, "sha") ? json_object_get(v, "sha") : json_null());
                free(key);
                key = xasprintf("git_dirty_%s", k);
                json_object_set(s, key,
                                json_object_get(v, "dirty") ? json_object_get(v, "dirty") : json_null());
        }
        json_object_set(s, "docker_image_hash", json_object_get(docker, "id") ?: json_null());
        json_object_set_new(s, "cuda_version", json_string_or_null(item_value(items, "cuda")));
        meta_gpu_settings(gpus, &driver, &clocks, &power);
        json_object_set_new(s, "driver_version", json_string_or_null(driver));
        {
                const char *cudnn = item_value(items, "cudnn");
                const char *pip_text = json_string_value(
                        json_object_get(blobs, json_string_value(json_object_get(pip, "blob"))));
                _cleanup_free_ char *from_pip = NULL;

                /* vLLM uses torch's own cuDNN (the nvidia-cudnn-cuNN wheel): it beats the system header. */
                if (pip_text && (from_pip = meta_pip_find(pip_text, "nvidia-cudnn-cu")))
                        json_object_set_new(s, "cudnn_version", json_string(from_pip));
                else
                        json_object_set_new(s, "cudnn_version", json_string_or_null(cudnn));
        }
        json_object_set_new(s, "gpu_clocks", json_string_or_null(clocks));
        json_object_set_new(s, "gpu_power_mode", json_string_or_null(power));
        json_object_set_new(s, "gpu_persistence_mode",
                            json_string_or_null(gpu_str(json_array_get(gpus, 0), "persistence_mode")));
        json_object_set_new(s, "gpu_name", json_string_or_null(gpu_str(json_array_get(gpus, 0), "name")));
        json_object_set(s, "pip_freeze", json_object_get(pip, "blob") ?: json_null());
        json_object_set_new(s, "hostname", json_string_or_null(item_value(items, "hostname")));
        json_object_set_new(s, "kernel", json_string_or_null(item_value(items, "kernel")));
        return s;
}

/* The run's own parameters from the snapshot: the command line, env and workload. */
static json_t *run_json(json_t *spec)
{
        static const char *const keys[] = {
                "key",    "config",   "argv", "env", "flags", "model", "served_model_name",
                "levels", "workload", NULL};
        json_t *r = json_object();

        for (size_t i = 0; keys[i]; i++)
                if (json_object_get(spec, keys[i]))
                        json_object_set(r, keys[i], json_object_get(spec, keys[i]));
        if (json_is_string(json_object_get(json_object_get(spec, "profile"), "base")))
                json_object_set(r, "profile", json_object_get(json_object_get(spec, "profile"), "base"));
        return r;
}

static void collect_done_cb(evutil_socket_t fd, short what, void *ud)
{
        struct meta_collect *c = ud;
        _cleanup_json_ json_t *record = json_object(), *blobs = json_object();
        json_t *items = json_object(), *sources = json_object(), *v;
        struct utsname u;
        const char *k;

        (void)fd, (void)what;
        if (uname(&u) == 0) {
                _cleanup_free_ char *kernel =
                        xasprintf("%s %s %s %s", u.sysname, u.release, u.version, u.machine);

                json_object_set_new(items, "hostname", builtin_json(u.nodename));
                json_object_set_new(items, "kernel", builtin_json(kernel));
        }
        json_object_foreach (json_object_get(c->cfg, "sources"), k, v) {
                _cleanup_free_ char *path = source_path(json_string_value(v));

                json_object_set_new(sources, k, json_pack("{s:s}", "path", path));
        }
        for (size_t i = 0; i < c->n_items; i++) {
                struct item *it = &c->items[i];

                if (it->kind == ITEM_PROBE)
                        json_object_set_new(items, it->name, probe_json(it, blobs));
                else
                        source_json(it, sources, blobs);
        }
        json_object_foreach (c->skipped, k, v)
                json_object_set_new(items, k, json_pack("{s:O}", "skipped", v));
        json_object_set_new(record, "version", json_integer(MX_META_RECORD_VERSION));
        json_object_set_new(record, "collected_at", json_integer(c->started_real));
        json_object_set_new(record, "duration_ms",
                            json_integer((mx_now_mono_us() - c->started_mono) / 1000));
        json_object_set_new(record, "when", json_string("before the server starts"));
        json_object_set_new(record, "summary", summary_json(c, items, sources, blobs));
        json_object_set_new(record, "sources", sources);
        json_object_set_new(record, "items", items);
        json_object_set_new(record, "run", run_json(c->o.spec));
        c->cb(record, blobs, c->ud);
}

/* ---- running ---- */

static void item_start(struct item *it);

static void item_cb(const struct meta_probe_result *res, void *ud)
{
        struct item *it = ud;
        struct meta_collect *c = it->c;
        _cleanup_free_ char *why = meta_probe_failure(res);

        it->duration_us += res->duration_us;
        if (why && it->cur + 1 < it->n_alts) {
                if (!it->tried)
                        it->tried = json_array();
                json_array_append_new(
                        it->tried, json_pack("{s:s,s:s}", "source", it->alts[it->cur].source, "error", why));
                it->cur++;
                it->probe = meta_probe_free(it->probe); /* res is gone from here on */
                item_start(it);
                return;
        }
        it->source = xstrdup(it->alts[it->cur].source);
        it->error = TAKE_PTR(why);
        it->out = xmalloc(res->out_len + 1);
        memcpy(it->out, res->out, res->out_len);
        it->out[res->out_len] = '\0';
        it->out_len = res->out_len;
        it->truncated = res->truncated;
        it->probe = meta_probe_free(it->probe);
        if (--c->pending == 0)
                event_active(c->done_ev, EV_TIMEOUT, 1);
}

static void item_start(struct item *it)
{
        struct meta_collect *c = it->c;
        struct meta_probe_opts po = {
                .base = c->o.base,
                .reaper = c->o.reaper,
                .tag = c->o.tag,
                .env = c->env,
                .cwd = c->o.cwd,
                .timeout_ms = it->timeout_ms,
                .output_max = it->output_max,
        };

        it->probe = meta_probe_start(&po, it->alts[it->cur].argv, item_cb, it);
}

/* The daemon's environment with a C locale, so tool output reads the same everywhere. */
static char **probe_env(void)
{
        char **env = NULL;

        for (char **e = environ; e && *e; e++)
                if (!startswith(*e, "LC_ALL=") && !startswith(*e, "LANGUAGE="))
                        strv_push(&env, *e);
        strv_push(&env, "LC_ALL=C");
        return env;
}

static void add_sources(struct meta_collect *c)
{
        json_t *v;
        const char *k;

        json_object_foreach (json_object_get(c->cfg, "sources"), k, v) {
                _cleanup_free_ char *path = source_path(json_string_value(v));
                struct item *it;

                /*
                 * The tree may belong to another user than the daemon's: safe.directory on the command line
                 * (a protected scope) lets git read it. --no-optional-locks: status must not write the
                 * index of someone's work tree.
                 */
                it = item_new(c, k, ITEM_GIT_SHA, NULL);
                alt_add_command(it, strv_make("git", "-c", "safe.directory=*", "-C", path, "rev-parse",
                                              "HEAD", NULL));
                it = item_new(c, k, ITEM_GIT_STATUS, NULL);
                alt_add_command(it, strv_make("git", "--no-optional-locks", "-c", "safe.directory=*", "-C",
                                              path, "status", "--porcelain", NULL));
                it = item_new(c, k, ITEM_GIT_BRANCH, NULL);
                alt_add_command(it, strv_make("git", "-c", "safe.directory=*", "-C", path, "rev-parse",
                                              "--abbrev-ref", "HEAD", NULL));
                it = item_new(c, k, ITEM_GIT_TIME, NULL);
                alt_add_command(it, strv_make("git", "-c", "safe.directory=*", "-C", path, "log", "-1",
                                              "--format=%ct", "HEAD", NULL));
        }
}

struct meta_collect *meta_collect_start(const struct meta_collect_opts *o, meta_collect_cb cb, void *ud)
{
        static const char *const named[] = {"hostname", "kernel",       "cuda",       "cudnn",
                                            "gpu",      "docker_image", "pip_freeze", NULL};
        struct meta_collect *c = xcalloc(1, sizeof(*c));
        json_t *probes, *p;
        const char *k;

        c->o = *o;
        c->cb = cb;
        c->ud = ud;
        c->cfg = json_object_get(o->spec, "metadata");
        c->cfg = json_is_object(c->cfg) ? json_incref(c->cfg) : json_object();
        c->skipped = json_object();
        c->env = probe_env();
        c->started_mono = mx_now_mono_us();
        c->started_real = mx_now_real_us();
        c->done_ev = event_new(o->base, -1, 0, collect_done_cb, c);
        if (!c->done_ev)
                mx_die("out of memory creating a metadata collection");
        probes = json_object_get(c->cfg, "probes");
        add_sources(c);
        for (size_t i = 0; named[i]; i++) {
                struct item *it;

                p = json_object_get(probes, named[i]);
                if (json_is_null(p)) {
                        json_object_set_new(c->skipped, named[i], json_string("turned off in the matrix"));
                        continue;
                }
                if (!p && (streq(named[i], "hostname") || streq(named[i], "kernel")))
                        continue; /* uname(2), in the record's builder */
                it = item_new(c, named[i], ITEM_PROBE, p);
                if (p)
                        item_add_spec(it, p);
                if (p && it->n_alts == 0) {
                        item_free(it);
                        c->n_items--;
                        json_object_set_new(c->skipped, named[i],
                                            json_string("no command or file in the snapshot"));
                } else if (!p && !add_default(c, it)) {
                        item_free(it);
                        c->n_items--;
                        json_object_set_new(c->skipped, named[i],
                                            json_string(streq(named[i], "docker_image")
                                                                ? "not configured (metadata.docker_image)"
                                                                : "not configured (metadata.pip_freeze)"));
                }
        }
        json_object_foreach (probes, k, p) {
                bool known = false;

                for (size_t i = 0; named[i]; i++)
                        known = known || streq(named[i], k);
                if (known)
                        continue;
                if (json_is_null(p))
                        json_object_set_new(c->skipped, k, json_string("turned off in the matrix"));
                else {
                        struct item *it = item_new(c, k, ITEM_PROBE, p);

                        item_add_spec(it, p);
                        if (it->n_alts == 0) {
                                item_free(it);
                                c->n_items--;
                                json_object_set_new(c->skipped, k,
                                                    json_string("no command or file in the snapshot"));
                        }
                }
        }
        c->pending = c->n_items;
        /* Items point back at c; start them only once the array has stopped moving. */
        for (size_t i = 0; i < c->n_items; i++)
                c->items[i].c = c;
        for (size_t i = 0; i < c->n_items; i++)
                item_start(&c->items[i]);
        if (c->n_items == 0)
                event_active(c->done_ev, EV_TIMEOUT, 1);
        return c;
}

struct meta_collect *meta_collect_free(struct meta_collect *c)
{
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n_items; i++)
                item_free(&c->items[i]);
        free(c->items);
        if (c->done_ev)
                event_free(c->done_ev);
        json_decref(c->cfg);
        json_decref(c->skipped);
        strv_free(c->env);
        free(c);
        return NULL;
}

/* ---- the runner that collects first ---- */

struct mx_runner {
        struct mx_run_ctx ctx;
        const struct mx_run_events *ev;
        void *ud;
        struct meta_collect *collect;
        struct event *end_ev; /* reports a run cancelled during collection, from the loop */
        const struct mx_runner_ops *inner_ops;
        struct mx_runner *inner;
        enum mx_outcome why;
        bool collecting, cancelled, done;
};

static void meta_runner_collected(json_t *record, json_t *blobs, void *ud)
{
        struct mx_runner *r = ud;
        _cleanup_free_ char *err = NULL;
        int q;

        r->collecting = false;
        if (r->ev->metadata)
                r->ev->metadata(r->ud, record, blobs);
        q = r->inner_ops->start(&r->ctx, r->ev, r->ud, &r->inner, &err);
        if (q < 0) {
                struct mx_run_result res = {
                        .outcome = MX_OUTCOME_INFRA_ERROR,
                        .message = err ? err : strerror(-q),
                        .exit_status = -1,
                };

                r->done = true;
                r->ev->finished(r->ud, &res);
        }
}

static void meta_runner_end_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_runner *r = ud;
        struct mx_run_result res = {
                .outcome = r->why,
                .message = "stopped while collecting metadata",
                .exit_status = -1,
        };

        (void)fd, (void)what;
        if (r->done)
                return;
        r->done = true;
        r->ev->finished(r->ud, &res);
}

static int meta_runner_start(const struct mx_run_ctx *ctx, const struct mx_run_events *ev, void *ud,
                             struct mx_runner **ret, char **reterr)
{
        struct mx_runner *r = xcalloc(1, sizeof(*r));
        struct meta_collect_opts o = {
                .base = ctx->base,
                .reaper = ctx->reaper,
                .tag = ctx->tag,
                .cwd = ctx->run_dir,
                .spec = ctx->spec,
        };

        (void)reterr;
        r->ctx = *ctx;
        r->ev = ev;
        r->ud = ud;
        r->inner_ops = runner_for_spec(ctx->spec);
        r->end_ev = event_new(ctx->base, -1, 0, meta_runner_end_cb, r);
        if (!r->end_ev)
                mx_die("out of memory creating a runner");
        r->collecting = true;
        r->collect = meta_collect_start(&o, meta_runner_collected, r);
        *ret = r;
        return 0;
}

static void meta_runner_cancel(struct mx_runner *r, enum mx_outcome why)
{
        if (r->inner) {
                r->inner_ops->cancel(r->inner, why);
                return;
        }
        if (!r->collecting || r->cancelled)
                return;
        /* Nothing but probes runs yet: kill them and end the run with the caller's outcome. */
        r->cancelled = true;
        r->why = why;
        r->collect = meta_collect_free(r->collect);
        event_active(r->end_ev, EV_TIMEOUT, 1);
}

static const char *meta_runner_level(struct mx_runner *r)
{
        if (r->collecting)
                return "metadata";
        return r->inner && r->inner_ops->current_level ? r->inner_ops->current_level(r->inner) : NULL;
}

static struct mx_runner *meta_runner_free(struct mx_runner *r)
{
        if (!r)
                return NULL;
        meta_collect_free(r->collect);
        if (r->inner)
                r->inner_ops->free(r->inner);
        event_free(r->end_ev);
        free(r);
        return NULL;
}

const struct mx_runner_ops runner_meta_ops = {
        .name = "metadata",
        .start = meta_runner_start,
        .cancel = meta_runner_cancel,
        .current_level = meta_runner_level,
        .free = meta_runner_free,
};
