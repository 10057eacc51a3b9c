/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix __complete CWORD WORD...: the candidates for shell completion, one
 * per line, for the word at index CWORD of the command line WORD... (WORD 0 is
 * the program). A hidden verb for docs/bash-completion: it knows the verbs,
 * their options (daemon verbs from protocol.json, file verbs from their own
 * --help), the values of enumerated options, and the feature, axis, value and
 * level names of the matrix: the FILE of plan, gate and matrix, submit's
 * --matrix, else $MXMATRIX_MATRIX, else the installed /etc/mxmatrix/matrix.json.
 * The line "@file" asks the shell for file names instead. Never talks to the
 * daemon (completion must be instant) and prints nothing on errors.
 */
#include "client.h"
#include "levelcat.h"
#include "matrix.h"
#include "protocol.h"

#include <ctype.h>
#include <fcntl.h>
#include <sys/wait.h>

#define COMPLETE_MATRIX_DEFAULT "/etc/mxmatrix/matrix.json"
#define COMPLETE_HELP_MAX (256 * 1024) /* a verb's --help text */

static const char *const local_verb_names[] = { "matrix", "plan", "gate", "bench", "probe" };
static const char *const global_options[] = { "--json", "--socket", "--timeout", "--help", "--version" };

static int (*local_run(const char *verb))(int, char **)
{
        if (streq(verb, "matrix"))
                return cmd_matrix;
        if (streq(verb, "plan"))
                return cmd_plan;
        if (streq(verb, "gate"))
                return cmd_gate;
        if (streq(verb, "bench"))
                return cmd_bench;
        if (streq(verb, "probe"))
                return cmd_probe;
        return NULL;
}

/* A file verb's --help, printed by the verb itself in a child (its output goes to stdout). */
static char *local_help(const char *verb)
{
        int (*run)(int, char **) = local_run(verb);
        struct mx_buf b = MX_BUF_INIT;
        int p[2];
        pid_t pid;

        if (!run || pipe2(p, O_CLOEXEC) < 0)
                return NULL;
        fflush(stdout);
        pid = fork();
        if (pid < 0) {
                close(p[0]);
                close(p[1]);
                return NULL;
        }
        if (pid == 0) {
                char *argv[] = { (char *)verb, (char *)"--help", NULL };

                if (dup2(p[1], STDOUT_FILENO) < 0)
                        _exit(1);
                (void)freopen("/dev/null", "w", stderr);
                run(2, argv);
                fflush(stdout);
                _exit(0);
        }
        close(p[1]);
        for (;;) {
                char chunk[4096];
                ssize_t n = read(p[0], chunk, sizeof(chunk));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                if (b.len + (size_t)n <= COMPLETE_HELP_MAX)
                        mx_buf_add(&b, chunk, (size_t)n);
        }
        close(p[0]);
        (void)waitpid(pid, NULL, 0);
        return mx_buf_steal(&b);
}

/*
 * The options named in a help text: "--name" and, when an upper-case word
 * follows ("--report FILE"), that placeholder. Each entry is "name\targ".
 */
static char **help_options(const char *text)
{
        char **out = NULL;

        for (const char *p = text ? strstr(text, "--") : NULL; p; p = strstr(p, "--")) {
                const char *s = p + 2, *e = s;
                _cleanup_free_ char *name = NULL, *entry = NULL;
                const char *arg = "";
                size_t arglen = 0;

                while (*e && (isalnum((unsigned char)*e) || *e == '-'))
                        e++;
                p = e;
                if (e == s || !islower((unsigned char)*s))
                        continue;
                if (*e == ' ' && isupper((unsigned char)e[1])) {
                        arg = e + 1;
                        while (isupper((unsigned char)arg[arglen]))
                                arglen++;
                        if (isalnum((unsigned char)arg[arglen]) || arg[arglen] == '-')
                                arglen = 0; /* a sentence's capitalised word, not a placeholder */
                }
                name = xstrndup(s, (size_t)(e - s));
                entry = xasprintf("%s\t%.*s", name, (int)arglen, arg);
                if (!strv_contains(out, entry))
                        strv_consume(&out, TAKE_PTR(entry));
        }
        return out;
}

/* A daemon verb's options from protocol.json: "name\targ" as help_options gives them. */
static char **proto_options(const struct mx_proto_method *m)
{
        json_t *opts = json_object_get(m->cli, "options"), *o;
        char **out = NULL;
        size_t i;

        json_array_foreach (opts, i, o)
                strv_consume(&out, xasprintf("%s\t%s", json_string_value(json_object_get(o, "flag")),
                                             strempty(json_string_value(json_object_get(o, "arg")))));
        strv_push(&out, "json\t");
        strv_push(&out, "help\t");
        return out;
}

/* The option entry for "--name" (or "--name=..."), or NULL. */
static const char *find_option(char **opts, const char *word)
{
        size_t n;

        if (!startswith(word, "--"))
                return NULL;
        n = strcspn(word + 2, "=");
        for (char **o = opts; o && *o; o++)
                if (strncmp(*o, word + 2, n) == 0 && (*o)[n] == '\t')
                        return *o;
        return NULL;
}

static void print_levels(void)
{
        for (size_t i = 0; i < mx_level_defs_count; i++)
                printf("%s\n", mx_level_defs[i].name);
}

/* Values for an option's argument: files, a protocol enum, level names; nothing for numbers. */
static void option_values(const struct mx_proto_method *m, const char *entry)
{
        const char *arg = strchr(entry, '\t') + 1;
        _cleanup_free_ char *name = xstrndup(entry, (size_t)(arg - 1 - entry));
        json_t *opts = m ? json_object_get(m->cli, "options") : NULL, *o, *v;
        size_t i;

        if (streq(arg, "FILE") || streq(arg, "PATH") || streq(arg, "DIR")) {
                printf("@file\n");
                return;
        }
        if (streq(name, "levels")) {
                print_levels();
                return;
        }
        json_array_foreach (opts, i, o) {
                const char *param = json_string_value(json_object_get(o, "param"));
                json_t *schema = param ? json_object_get(m->params, param) : NULL;

                if (!streq_ptr(json_string_value(json_object_get(o, "flag")), name))
                        continue;
                json_array_foreach (json_object_get(schema, "enum"), i, v)
                        printf("%s\n", json_string_value(v));
                return;
        }
        if (streq(name, "strategy")) /* plan's, as submit's */
                printf("default\npairwise\n3way\nfull\n");
}

/* Pins and settings: feature names, feature=, axis=value, levels=, from the matrix. */
static void pin_words(const char *matrix_path, const char *cur)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        _cleanup_free_ char *err = NULL;
        const char *eq = strchr(cur, '=');

        if (mx_matrix_load_file(matrix_path, &m, &err) < 0)
                return;
        if (eq) {
                _cleanup_free_ char *key = xstrndup(cur, (size_t)(eq - cur));
                int a = mx_matrix_axis_index(m, key);

                if (streq(key, "feature"))
                        for (size_t i = 0; i < m->n_features; i++)
                                printf("feature=%s\n", m->features[i].name);
                else if (streq(key, "levels"))
                        for (size_t i = 0; i < mx_level_defs_count; i++)
                                printf("levels=%s\n", mx_level_defs[i].name);
                else if (a >= 0)
                        for (size_t v = 0; v < m->axes[a].n_values; v++)
                                printf("%s=%s\n", key, m->axes[a].values[v].name);
                return;
        }
        for (size_t i = 0; i < m->n_features; i++)
                printf("%s\n", m->features[i].name);
        printf("feature=\nlevels=\n");
        for (size_t i = 0; i < m->n_axes; i++)
                printf("%s=\n", m->axes[i].name);
}

static void print_options(char **opts)
{
        for (char **o = opts; o && *o; o++)
                printf("--%.*s\n", (int)strcspn(*o, "\t"), *o);
}

/* The index of the verb among the words: past the global options (and the arguments they take). */
static int verb_index(char **w, int64_t cword)
{
        int i = 1;

        while (i < cword && startswith(w[i], "-")) {
                if (streq(w[i], "--socket") || streq(w[i], "--timeout"))
                        i++;
                i++;
        }
        return i;
}

/* Before the verb: the global options and every verb, or what a global option's argument is. */
static void complete_verbs(const struct mx_proto *p, const char *prev, int64_t cword)
{
        if (streq(prev, "--socket"))
                printf("@file\n");
        else if (!streq(prev, "--timeout") || cword == 0) {
                for (size_t k = 0; k < ELEMENTSOF(global_options); k++)
                        printf("%s\n", global_options[k]);
                for (size_t k = 0; k < ELEMENTSOF(local_verb_names); k++)
                        printf("%s\n", local_verb_names[k]);
                for (size_t k = 0; k < p->n_methods; k++)
                        if (p->methods[k].cli)
                                printf("%s\n", p->methods[k].name);
        }
}

/*
 * The words from after the verb (i) to the one completed: options with their arguments skipped,
 * positionals counted (*ret_pos). The matrix file they name (--matrix, or the file word of plan, gate
 * and matrix), or NULL.
 */
static const char *scan_words(char **w, int i, int64_t cword, const char *verb, char **opts, int *ret_pos)
{
        const char *matrix = NULL, *entry;
        int pos = 0;

        for (int k = i + 1; k < cword; k++) {
                entry = find_option(opts, w[k]);
                if (entry && strchr(entry, '\t')[1] && !strchr(w[k], '=')) {
                        if (streq(w[k], "--matrix") && k + 1 < cword)
                                matrix = w[k + 1];
                        k++;
                } else if (!startswith(w[k], "-")) {
                        pos++;
                        if (pos == 1 && (streq(verb, "plan") || streq(verb, "gate")))
                                matrix = w[k];
                        if (pos == 2 && streq(verb, "matrix"))
                                matrix = w[k];
                }
        }
        *ret_pos = pos;
        return matrix;
}

/* A positional word of verb (pos before it): a matrix subcommand, a file, or a pin of the matrix. */
static void complete_positional(const char *verb, int pos, const char *matrix, const char *cur)
{
        if (streq(verb, "matrix")) {
                if (pos == 0)
                        printf("check\nshow\ncover\n");
                else
                        printf("@file\n");
        } else if ((streq(verb, "plan") || streq(verb, "gate")) && pos == 0)
                printf("@file\n");
        else if (streq(verb, "plan") || streq(verb, "gate") || streq(verb, "submit")) {
                const char *env = getenv("MXMATRIX_MATRIX");

                pin_words(matrix ?: env && *env ? env : COMPLETE_MATRIX_DEFAULT, cur);
        }
}

int cmd_complete(int argc, char **argv)
{
        const struct mx_proto *p = mx_proto_get();
        const struct mx_proto_method *m = NULL;
        _cleanup_strv_free_ char **opts = NULL;
        _cleanup_free_ char *help = NULL;
        const char *matrix, *verb, *cur, *prev, *entry;
        char **w = argv + 2;
        int64_t cword;
        int n = argc - 2, i, pos;

        /* argv: __complete CWORD WORD... */
        if (n < 1 || mx_parse_int64(argv[1], 0, n - 1, &cword) < 0)
                return MX_EXIT_USAGE;
        cur = w[cword];
        prev = cword > 0 ? w[cword - 1] : "";
        i = verb_index(w, cword);
        if (i >= cword) {
                complete_verbs(p, prev, cword);
                return MX_EXIT_OK;
        }
        verb = w[i];
        if (local_run(verb)) {
                help = local_help(verb);
                opts = help_options(help);
        } else {
                m = mx_proto_find(p, verb);
                if (!m || !m->cli)
                        return MX_EXIT_OK;
                opts = proto_options(m);
        }
        matrix = scan_words(w, i, cword, verb, opts, &pos);
        entry = find_option(opts, prev);
        if (entry && strchr(entry, '\t')[1]) {
                option_values(m, entry);
                return MX_EXIT_OK;
        }
        if (startswith(cur, "-")) {
                print_options(opts);
                return MX_EXIT_OK;
        }
        complete_positional(verb, pos, matrix, cur);
        return MX_EXIT_OK;
}
