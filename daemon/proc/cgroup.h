/* SPDX-License-Identifier: MIT */
/*
 * cgroup v2 containment of runs: every run's processes live in a cgroup of
 * their own, so that a descendant that cleared its environment and left the
 * session (env -i setsid ..., as an escaped VLLM::EngineCore can look) is still
 * found, and killed with the rest of the run by one write to cgroup.kill.
 *
 * Where the runs' cgroups go (the "base"):
 *   - as a systemd service with Delegate=yes, the service's own cgroup: the
 *     daemon first moves itself into the leaf <own>/daemon, because a cgroup
 *     whose subtree may get controllers cannot hold processes itself (the
 *     no-internal-processes rule), and the runs go to <own>/<run tag>;
 *   - otherwise, where the daemon may (root, or a writable cgroup2 tree), a
 *     sub-tree of its own, <own>/mxmatrixd-<hash of the state directory>: one
 *     daemon per state directory (main.c's lock) makes the name unique and
 *     stable across restarts. The daemon itself stays where it is.
 * Where neither is possible, runs have no cgroup and stops fall back to the
 * adopted children and the run-tag sweep (proc.h).
 *
 * The cgroup2 mount is found in /proc/self/mountinfo (/sys/fs/cgroup on a
 * pure v2 host, /sys/fs/cgroup/unified on a hybrid one), the daemon's cgroup in
 * /proc/self/cgroup ("0::/path"). Paths handed around are file-system paths.
 * Nothing here logs.
 */
#pragma once

#include "util.h"

#include <stdbool.h>
#include <sys/types.h>

/* Setting MXMATRIXD_CGROUP=off in the daemon's environment disables cgroups (tests of the fallback). */
#define CGROUP_ENV "MXMATRIXD_CGROUP"
/* How long a kill waits for a cgroup to empty when it must block (start-up recovery, shutdown). */
#define CGROUP_KILL_WAIT_MS 10000
/* The longest cgroup path we handle (the kernel's PATH_MAX). */
#define CGROUP_PATH_MAX 4096

struct mx_cgroup {
        char *mount;    /* the cgroup2 mount point */
        char *own;      /* the daemon's cgroup when it started (file-system path) */
        char *base;     /* where the runs' cgroups are made */
        bool delegated; /* a systemd service's delegated cgroup: the daemon moved into <base>/daemon */
        bool made_base; /* created by us (outside systemd): removed at exit when empty */
};

/*
 * Decide where the runs' cgroups go (above), creating what is needed. state_dir
 * names the sub-tree outside systemd. Returns 0 with *ret set, or a negative
 * errno with a reason why runs will have no cgroup (none mounted, not writable,
 * disabled by MXMATRIXD_CGROUP=off: -ECANCELED).
 */
int cgroup_setup(const char *state_dir, struct mx_cgroup **ret, char **reterr);
/* Remove the base if we made it and it is empty. Returns NULL. */
struct mx_cgroup *cgroup_free(struct mx_cgroup *c);
DEFINE_POINTER_CLEANUP(struct mx_cgroup, cgroup_free)

/* The cgroup2 mount point, from /proc/self/mountinfo; -ENOENT if there is none. */
int cgroup_find_mount(char **ret);
/* The calling process's cgroup2 path relative to the mount ("/" or "/a/b"), from /proc/self/cgroup. */
int cgroup_self_path(char **ret);

/* Create <base>/<name> (name: one path component) and return its path; EEXIST is fine. */
int cgroup_create(const struct mx_cgroup *c, const char *name, char **ret_path, char **reterr);

/* 1 if the cgroup (or a cgroup below it) has a live process, 0 if not, -ENOENT if it does not exist. */
int cgroup_is_populated(const char *path);
/* The pids in the cgroup and every cgroup below it, sorted, or NULL/0. -ENOENT if it does not exist. */
int cgroup_read_pids(const char *path, pid_t **ret, size_t *ret_n);
/*
 * SIGKILL every process in the cgroup and below: one write to cgroup.kill
 * (Linux 5.14), else SIGKILL to each pid of cgroup.procs, here and below
 * (racy against forks, repeated by callers until the cgroup is empty).
 * -ENOENT if the cgroup does not exist.
 */
int cgroup_kill(const char *path);
/* Tests only: what cgroup_kill() does where the kernel has no cgroup.kill. */
int cgroup_kill_by_pids(const char *path);
/* rmdir the cgroup: -EBUSY while populated, 0 if it is gone (ENOENT included). */
int cgroup_remove(const char *path);
/*
 * Blocking: kill, wait up to timeout_ms for the cgroup to empty, remove it.
 * 0 when it is gone, -EBUSY when it is still populated. For start-up recovery
 * and tests (not on the event loop).
 */
int cgroup_kill_wait_remove(const char *path, int64_t timeout_ms);
/*
 * Whether path can be a run cgroup this daemon made: below a cgroup2 mount,
 * its last component the run's tag. Recovery kills only such paths, so a
 * corrupted database never makes it kill someone else's cgroup.
 */
bool cgroup_path_is_run(const char *path, const char *tag);
