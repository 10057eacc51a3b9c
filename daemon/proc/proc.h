/* SPDX-License-Identifier: MIT */
/*
 * Process control for target servers: nothing a run starts may outlive it.
 *
 * On the GB10 a leftover process keeps the unified memory the next run needs, and
 * vLLM is known to leave its GPU-holding VLLM::EngineCore behind when the API
 * server dies (target-surfaces.md §A3). So every server is started in its own
 * session and process group, carries MXMATRIX_RUN_TAG=<tag> in its environment
 * (inherited by every descendant that does not clear its environment), and the
 * daemon is a child subreaper, so descendants that escape with setsid() are
 * reparented to it rather than to PID 1. While a run is in flight
 * (proc_run_begin() .. proc_run_end()) every process the daemon starts goes into
 * the run's cgroup when it has one (cgroup.h), and every process the daemon
 * adopts counts as the run's: a descendant that cleared its environment and
 * left the session is found by either. A stop signals the process group, the
 * session, the cgroup, the adopted children and everything carrying the tag,
 * escalates along a plan, and ends with a /proc sweep that proves nothing is left.
 *
 * Identity: a pid alone is not an identity, because pids are reused (pid_max is
 * 32768 on many hosts). A process is named by (boot id, pid, start time), the
 * start time being field 22 of /proc/PID/stat. Live processes are signalled
 * through pidfds opened after their membership was checked, so a signal cannot
 * reach a process that took over a pid in between.
 *
 * This file starts servers and reads /proc; proc-reaper.h collects exit statuses
 * on the event loop, proc-stop.h stops a run and recovers one after a restart.
 * Nothing here logs.
 */
#pragma once

#include "util.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The environment variable that names the run every process of a server belongs to. */
#define PROC_TAG_ENV "MXMATRIX_RUN_TAG"
/* Longest tag accepted; tags are [A-Za-z0-9._-], e.g. "<boot id>-<attempt id>". */
#define PROC_TAG_MAX 128
/* /proc/sys/kernel/random/boot_id: 36 characters plus NUL. */
#define PROC_BOOT_ID_SIZE 37
/* Limits on what a spec may hold (the kernel's own limit, E2BIG, comes later). */
#define PROC_ARGV_MAX 4096
#define PROC_ENV_MAX 4096
#define PROC_PATH_DIRS_MAX 256
/* Reads of an environment caught empty in the middle of an execve(), a millisecond apart. */
#define PROC_EXEC_RETRIES 5

/* What to start. Nothing in it is taken over; it need only live for the call. */
struct proc_spec {
        char *const *argv; /* argv[0] without '/' is searched in PATH (from env, else ours) */
        char *const *env;  /* the complete environment, "NAME=value" each; NULL = empty */
        const char *cwd;   /* NULL = the daemon's working directory */
        const char *tag;   /* required; added as MXMATRIX_RUN_TAG=<tag> */
        int stdout_fd;     /* -1 = /dev/null; the caller keeps its own copy */
        int stderr_fd;     /* -1 = /dev/null; may equal stdout_fd */
};

/* Who was started: enough to find it again after a daemon restart, and to prove it is the same process. */
struct proc_info {
        pid_t pid;
        pid_t pgid;         /* == pid: the server leads its own session and group */
        uint64_t starttime; /* /proc/PID/stat field 22, clock ticks since boot */
        char boot_id[PROC_BOOT_ID_SIZE];
};

/* Become a child subreaper, so orphaned descendants of our servers are reparented to us. */
int proc_subreaper_enable(void);

/*
 * The run in flight. From proc_run_begin() to proc_run_end(), every process
 * proc_spawn() starts begins its life in cgroup_path (a cgroup2 directory; NULL:
 * none), placed there before it executes anything, and every stop (proc-stop.h)
 * counts the cgroup's processes and the daemon's children (which, besides what
 * the run's runner started, are only orphans of the run it adopted as
 * subreaper) as members of the run. -EBUSY if a run is in flight already.
 */
int proc_run_begin(const char *cgroup_path, char **reterr);
void proc_run_end(void);
bool proc_run_active(void);
/* The run's cgroup, or NULL (no run, or a run without one). */
const char *proc_run_cgroup(void);
/* Tests only: false makes proc_spawn() use fork() and a write to cgroup.procs instead of clone3(). */
void proc_spawn_set_clone3(bool use);

/* This boot's id (cached after the first read). */
int proc_boot_id(char ret[static PROC_BOOT_ID_SIZE]);

/*
 * Start spec->argv in a new session with a clean signal state, in the run's
 * cgroup if one is in flight (clone3(CLONE_INTO_CGROUP), else the child
 * moves itself there before exec), stdin on /dev/null, stdout and stderr on the
 * given descriptors, no other descriptor inherited, and an environment of
 * spec->env minus NOTIFY_SOCKET, LISTEN_* and WATCHDOG_* (they address the
 * daemon, not the server) plus the tag. Failures up to and including execve()
 * (cgroup, chdir, PATH search, exec) come back here as a
 * negative errno with a reason naming the step; the child is then already reaped.
 * On success the caller owns a child that the reaper must watch before control
 * returns to the event loop.
 *
 * PR_SET_PDEATHSIG is deliberately not set: the daemon's death (a crash, an
 * upgrade restart) must not silently kill a server mid-run and lose the evidence;
 * the run stays "running" in the database and start-up recovery kills it by its
 * recorded identity (proc_kill_recorded()), which is logged. Besides, the death
 * signal fires on the death of the forking *thread*, and would not reach the
 * descendants that actually hold the GPU.
 */
int proc_spawn(const struct proc_spec *spec, struct proc_info *ret, char **reterr);

/* Reads of /proc. */

/* Whether tag is usable: 1..PROC_TAG_MAX characters of [A-Za-z0-9._-]. */
bool proc_tag_is_valid(const char *tag);

/*
 * 1 if pid is alive (or a zombie) and is the process recorded as (boot_id,
 * starttime), 0 if not (another boot, another start time, or no such pid), <0 on
 * error.
 */
int proc_identity_matches(pid_t pid, const char *boot_id, uint64_t starttime);
/* /proc/PID/stat field 22 of a live process or zombie; -ESRCH if there is none. */
int proc_get_starttime(pid_t pid, uint64_t *ret);
/* 1 if pid's environment holds MXMATRIX_RUN_TAG=<tag> exactly, 0 if not, <0 if unreadable or gone. */
int proc_has_tag(pid_t pid, const char *tag);
/*
 * The live processes carrying the tag, in pid order (a zombie's environment is
 * gone, so zombies never match). Processes we may not read are skipped, and
 * processes that exit during the scan are normal. *ret is NULL when none.
 */
int proc_find_tagged(const char *tag, pid_t **ret, size_t *ret_n);

/* One process as a scan saw it. */
struct proc_entry {
        pid_t pid;
        pid_t ppid;
        pid_t pgid;
        pid_t sid;
        char state; /* /proc/PID/stat field 3 ('R', 'S', 'Z', ...); a zombie leader of live threads: 'R' */
        uint64_t starttime;
        bool tagged; /* its environment carries the tag */
        bool in_cgroup; /* listed in the match's cgroup */
        bool adopted;   /* a child of the match's parent */
};

/*
 * Which processes belong to a run: those carrying the tag, those in the group or
 * session below, and, transitively, the children of any of them (a child that
 * cleared its environment and called setsid() is still its parent's child).
 */
/*
 * Read a small file (of /proc) whole into buf (NUL-terminated, at most size - 1
 * bytes, the rest left out), its length in *ret_len; -ENOENT/-ESRCH mean the
 * process is gone.
 */
int proc_read_small(const char *path, char *buf, size_t size, size_t *ret_len);

struct proc_match {
        const char *tag; /* processes carrying it; NULL = none */
        /*
         * > 0: processes whose process group or session is this one count too, if
         * they started at or after group_since (a group's members are all younger
         * than its leader; anything older is from a reused number).
         */
        pid_t group;
        uint64_t group_since;
        /* The processes listed in this cgroup's cgroup.procs count; NULL = none. */
        const char *cgroup;
        /* > 0: the children of this process count (the daemon: what it adopted). */
        pid_t parent;
};

/*
 * Every process other than ourselves that m matches, zombies included, in pid
 * order. The array is owned by the caller (NULL when none). Fails only if /proc
 * itself cannot be read.
 */
int proc_scan(const struct proc_match *m, struct proc_entry **ret, size_t *ret_n);
