/* SPDX-License-Identifier: MIT */
/* cgroup v2 containment of runs (see cgroup.h). */
#include "cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>

/* The cgroup a delegated service moves itself into (cgroup.h says why). */
#define CGROUP_DAEMON_LEAF "daemon"
/* How deep a run's own sub-cgroups are followed by the fallback kill and the removal. */
#define CGROUP_DEPTH_MAX 16
/* Largest cgroup.procs read (about 700 000 pids); more is refused rather than misread. */
#define CGROUP_PROCS_MAX (4u << 20)

/* Read a whole small pseudo-file into a NUL-terminated buffer (cgroup files report size 0). */
static int read_text(const char *path, size_t max, char **ret)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, alloc = 0;

        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t k;

                if (len + 1 >= alloc) {
                        if (alloc >= max + 1)
                                return -EFBIG;
                        alloc = MX_MIN(MX_MAX(alloc * 2, (size_t)4096), max + 1);
                        buf = xreallocarray(buf, alloc, 1);
                }
                k = read(fd, buf + len, alloc - len - 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                len += (size_t)k;
        }
        if (!buf)
                buf = xmalloc(1);
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        return 0;
}

static int write_text(const char *path, const char *text)
{
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        size_t len = strlen(text);
        ssize_t k;

        if (fd < 0)
                return -errno;
        do
                k = write(fd, text, len);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;
        return (size_t)k == len ? 0 : -EIO;
}

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape_octal(char *s)
{
        char *w = s;

        for (char *p = s; *p; p++) {
                if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
                    p[3] <= '7') {
                        *w++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
                        p += 3;
                } else
                        *w++ = *p;
        }
        *w = '\0';
}

/* The mount point and mount root of the first cgroup2 mount in mountinfo's text. */
static int mountinfo_cgroup2(char *text, char **ret_mount, char **ret_root)
{
        char *save = NULL;

        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                /* id parent major:minor root mountpoint options [optional...] - fstype source superopts */
                char *sep = strstr(line, " - "), *f[5] = {}, *save2 = NULL, *fs;
                size_t n = 0;

                if (!sep)
                        continue;
                fs = sep + 3;
                if (!startswith(fs, "cgroup2 "))
                        continue;
                *sep = '\0';
                for (char *t = strtok_r(line, " ", &save2); t && n < ELEMENTSOF(f); t = strtok_r(NULL, " ", &save2))
                        f[n++] = t;
                if (n < 5)
                        continue;
                unescape_octal(f[3]);
                unescape_octal(f[4]);
                *ret_root = xstrdup(f[3]);
                *ret_mount = xstrdup(f[4]);
                return 0;
        }
        return -ENOENT;
}

int cgroup_find_mount(char **ret)
{
        _cleanup_free_ char *text = NULL, *root = NULL;
        int r = read_text("/proc/self/mountinfo", 16u << 20, &text);

        if (r < 0)
                return r;
        return mountinfo_cgroup2(text, ret, &root);
}

int cgroup_self_path(char **ret)
{
        _cleanup_free_ char *text = NULL;
        char *save = NULL;
        int r = read_text("/proc/self/cgroup", 1u << 20, &text);

        if (r < 0)
                return r;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                if (startswith(line, "0::/")) {
                        *ret = xstrdup(line + 3);
                        return 0;
                }
        return -ENOENT; /* no unified hierarchy (a pure v1 host) */
}

/* The file-system path of our cgroup: the mount plus our path, less the mount's own root. */
static int own_fs_path(char **ret_mount, char **ret_own)
{
        _cleanup_free_ char *text = NULL, *mount = NULL, *root = NULL, *self = NULL;
        const char *rel;
        int r = read_text("/proc/self/mountinfo", 16u << 20, &text);

        if (r < 0)
                return r;
        r = mountinfo_cgroup2(text, &mount, &root);
        if (r < 0)
                return r;
        r = cgroup_self_path(&self);
        if (r < 0)
                return r;
        rel = self;
        if (!streq(root, "/")) {
                size_t n = strlen(root);

                if (strncmp(self, root, n) != 0 || (self[n] != '/' && self[n] != '\0'))
                        return -ENOENT; /* our cgroup is not visible below this mount */
                rel = self + n;
        }
        if (strlen(mount) + strlen(rel) + 2 > CGROUP_PATH_MAX)
                return -ENAMETOOLONG;
        *ret_own = streq(rel, "/") || !*rel ? xstrdup(mount) : xasprintf("%s%s", mount, rel);
        *ret_mount = TAKE_PTR(mount);
        return 0;
}

static bool cgroups_disabled(void)
{
        const char *v = getenv(CGROUP_ENV);

        return v && (streq(v, "off") || streq(v, "0") || streq(v, "no") || streq(v, "false"));
}

/* A systemd service's own cgroup: the service manager set INVOCATION_ID, and the cgroup is named *.service. */
static bool is_service_cgroup(const char *own)
{
        const char *slash = strrchr(own, '/');

        return getenv("INVOCATION_ID") && slash && endswith(slash + 1, ".service");
}

static int setup_delegated(struct mx_cgroup *c, char **reterr)
{
        _cleanup_free_ char *leaf = xasprintf("%s/" CGROUP_DAEMON_LEAF, c->own);
        _cleanup_free_ char *procs = xasprintf("%s/cgroup.procs", leaf);
        int r;

        if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
                return mx_reterr(reterr, -errno, "cannot create %s: %m (does the unit set Delegate=yes?)", leaf);
        r = write_text(procs, "0");
        if (r < 0)
                return mx_reterr(reterr, r, "cannot move the daemon into %s: %s (does the unit set Delegate=yes?)",
                                 leaf, strerror(-r));
        c->base = xstrdup(c->own);
        c->delegated = true;
        return 0;
}

static int setup_own_tree(struct mx_cgroup *c, const char *state_dir, char **reterr)
{
        _cleanup_free_ char *abs = realpath(state_dir, NULL);
        const char *key = abs ? abs : state_dir;
        uint64_t h = mx_fnv1a64(key, strlen(key), MX_FNV1A64_INIT);

        c->base = xasprintf("%s/mxmatrixd-%016" PRIx64, c->own, h);
        if (mkdir(c->base, 0755) < 0 && errno != EEXIST)
                return mx_reterr(reterr, -errno, "cannot create %s: %m", c->base);
        c->made_base = true;
        return 0;
}

int cgroup_setup(const char *state_dir, struct mx_cgroup **ret, char **reterr)
{
        _cleanup_(cgroup_freep) struct mx_cgroup *c = xcalloc(1, sizeof(*c));
        int r;

        if (cgroups_disabled())
                return mx_reterr(reterr, -ECANCELED, "cgroups are disabled (%s=%s)", CGROUP_ENV, getenv(CGROUP_ENV));
        r = own_fs_path(&c->mount, &c->own);
        if (r == -ENOENT)
                return mx_reterr(reterr, r, "%s", "no cgroup2 file system is mounted where this process can see it");
        if (r < 0)
                return mx_reterr(reterr, r, "cannot find the daemon's cgroup: %s", strerror(-r));
        if (is_service_cgroup(c->own))
                r = setup_delegated(c, reterr);
        else
                r = setup_own_tree(c, state_dir, reterr);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

struct mx_cgroup *cgroup_free(struct mx_cgroup *c)
{
        if (!c)
                return NULL;
        if (c->made_base && c->base)
                (void)rmdir(c->base); /* EBUSY: a run's cgroup is still there; recovery handles it */
        free(c->mount);
        free(c->own);
        free(c->base);
        free(c);
        return NULL;
}

static bool name_is_component(const char *name)
{
        return name && *name && !strchr(name, '/') && !streq(name, ".") && !streq(name, "..") &&
               strlen(name) < 256;
}

int cgroup_create(const struct mx_cgroup *c, const char *name, char **ret_path, char **reterr)
{
        _cleanup_free_ char *path = NULL;

        if (!c || !name_is_component(name))
                return mx_reterr(reterr, -EINVAL, "'%s' is not a cgroup name", strna(name));
        path = xasprintf("%s/%s", c->base, name);
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                return mx_reterr(reterr, -errno, "cannot create the cgroup %s: %m", path);
        *ret_path = TAKE_PTR(path);
        return 0;
}

int cgroup_is_populated(const char *path)
{
        _cleanup_free_ char *f = xasprintf("%s/cgroup.events", path), *text = NULL;
        const char *p;
        int r = read_text(f, 4096, &text);

        if (r < 0)
                return r;
        p = strstr(text, "populated ");
        if (!p || (p != text && p[-1] != '\n'))
                return -EIO;
        return p[strlen("populated ")] == '1';
}

static int cmp_pid(const void *a, const void *b)
{
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

        return (x > y) - (x < y);
}

/* Append the pids of path's cgroup.procs, and of every cgroup below it, to *pids. */
static int read_pids_tree(const char *path, unsigned depth, pid_t **pids, size_t *n, size_t *alloc)
{
        _cleanup_free_ char *f = xasprintf("%s/cgroup.procs", path), *text = NULL;
        char *save = NULL;
        struct dirent *de;
        DIR *d;
        int r;

        if (depth > CGROUP_DEPTH_MAX)
                return -ELOOP;
        r = read_text(f, CGROUP_PROCS_MAX, &text);
        if (r < 0)
                return r;
        for (char *t = strtok_r(text, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
                int64_t pid;

                if (mx_parse_int64(t, 1, INT32_MAX, &pid) < 0)
                        continue;
                MX_GROW(*pids, *alloc, *n + 1);
                (*pids)[(*n)++] = (pid_t)pid;
        }
        d = opendir(path);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((de = readdir(d))) {
                _cleanup_free_ char *sub = NULL;

                if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                sub = xasprintf("%s/%s", path, de->d_name);
                r = read_pids_tree(sub, depth + 1, pids, n, alloc);
                if (r < 0 && r != -ENOENT) {
                        closedir(d);
                        return r;
                }
        }
        closedir(d);
        return 0;
}

int cgroup_read_pids(const char *path, pid_t **ret, size_t *ret_n)
{
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0, alloc = 0;
        int r = read_pids_tree(path, 0, &pids, &n, &alloc);

        if (r < 0)
                return r;
        if (n > 1)
                qsort(pids, n, sizeof(*pids), cmp_pid);
        *ret = TAKE_PTR(pids);
        *ret_n = n;
        return 0;
}

/* Call fn on path and on each cgroup below it, children first. */
static int walk(const char *path, unsigned depth, int (*fn)(const char *path))
{
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (depth > CGROUP_DEPTH_MAX)
                return -ELOOP;
        d = opendir(path);
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                _cleanup_free_ char *sub = NULL;

                if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                sub = xasprintf("%s/%s", path, de->d_name);
                r = MX_MIN(r, walk(sub, depth + 1, fn));
        }
        closedir(d);
        return MX_MIN(r, fn(path));
}

static int kill_listed(const char *path)
{
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;
        int r = cgroup_read_pids(path, &pids, &n);

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                (void)kill(pids[i], SIGKILL);
        return 0;
}

/* Tests only: the kill without cgroup.kill, as on Linux < 5.14. */
int cgroup_kill_by_pids(const char *path)
{
        return kill_listed(path);
}

int cgroup_kill(const char *path)
{
        _cleanup_free_ char *f = xasprintf("%s/cgroup.kill", path);
        struct stat st;
        int r;

        if (stat(path, &st) < 0)
                return -errno;
        r = write_text(f, "1");
        if (r != -ENOENT)
                return r;
        /* Before Linux 5.14: no cgroup.kill. Processes forking meanwhile are caught by the callers' retries. */
        return kill_listed(path);
}

static int rmdir_one(const char *path)
{
        if (rmdir(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int cgroup_remove(const char *path)
{
        int r = walk(path, 0, rmdir_one);

        return r == -ENOENT ? 0 : r;
}

int cgroup_kill_wait_remove(const char *path, int64_t timeout_ms)
{
        int64_t deadline = mx_now_mono_us() + timeout_ms * 1000;
        int r;

        for (;;) {
                r = cgroup_is_populated(path);
                if (r == -ENOENT)
                        return 0;
                if (r < 0)
                        return r;
                if (r == 0)
                        return cgroup_remove(path);
                if (mx_now_mono_us() >= deadline)
                        return -EBUSY;
                r = cgroup_kill(path);
                if (r < 0 && r != -ENOENT)
                        return r;
                (void)poll(NULL, 0, 10);
        }
}

bool cgroup_path_is_run(const char *path, const char *tag)
{
        _cleanup_free_ char *mount = NULL;
        const char *slash;
        size_t n;

        if (!path || !tag || !*tag || strlen(path) >= CGROUP_PATH_MAX || strstr(path, "/../") ||
            cgroup_find_mount(&mount) < 0)
                return false;
        n = strlen(mount);
        if (strncmp(path, mount, n) != 0 || path[n] != '/')
                return false;
        slash = strrchr(path, '/');
        return streq(slash + 1, tag);
}
