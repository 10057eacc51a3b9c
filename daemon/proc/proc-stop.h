/* SPDX-License-Identifier: MIT */
/*
 * Stopping a run so that nothing of it is left (proc.h says why that matters),
 * on the event loop (proc_stop()) or, at start-up before the loop exists, by
 * blocking with deadlines (proc_kill_recorded()).
 *
 * A run's members are the processes that carry its tag, plus, when the leader
 * (the server we started) is known, the processes of its process group and of
 * its session: vLLM may move its engine into a group of its own (os.setpgrp,
 * target-surfaces.md §A3), and a process that clears its environment is still
 * found by its session. Each member is signalled through a pidfd opened after
 * its membership was read, and its exit is learnt from that pidfd (a read
 * event), whether or not it is our child. A step ends early when every member
 * has exited and a fresh /proc scan finds no new one; then the stop reaps, scans
 * once more and reports.
 *
 * Pid reuse: a member is only ever signalled through its pidfd, or, when none
 * could be opened, by pid right after its start time was re-read. The group is
 * signalled with killpg() only while a scan shows a member in it; its number
 * cannot be handed to a new process while any process still uses it as a
 * process group or session id (Linux keeps such a pid allocated). Once a scan
 * finds the group and session empty, the stop stops using them and relies on
 * the tag alone.
 */
#pragma once

#include "proc.h"
#include "proc-reaper.h"

/*
 * Steps in a stop plan, and the longest grace period or stop-command timeout:
 * what a target profile may ask for (mxmatrix.json(5): 8 steps, to which the
 * target runner adds a SIGKILL; durations under 7 days), so that a plan the
 * matrix file was accepted with is never refused here.
 */
#define PROC_STOP_STEPS_MAX 9
#define PROC_GRACE_MAX_MS (7LL * 24 * 3600 * 1000)
#define PROC_STOP_COMMAND_TIMEOUT_MS 60000
/* Members waited on through pidfds (each is a descriptor); others are still signalled, and re-checked. */
#define PROC_MEMBERS_MAX 1024
/* How often members without a pidfd are looked for again (only while there are any). */
#define PROC_RECHECK_MS 100

struct proc_stop_step {
        int signal;       /* sent to the group and to every member */
        int64_t grace_ms; /* how long to wait for all of them to exit before the next step */
};

/*
 * How to stop a run. A zeroed plan means the default: SIGTERM, 30 s, SIGKILL,
 * 10 s (Slurm's KillWait default; vLLM itself gives its engine >= 5 s after
 * SIGTERM, target-surfaces.md §A3). With stop_argv set (docker-wrapped targets:
 * "docker compose down"), that command runs first, tagged like the server and in
 * its own session; the steps follow once it has exited, or after
 * stop_timeout_ms, when its process group is killed and anything left of it is
 * handled by the steps like any other tagged process.
 */
struct proc_stop_plan {
        const struct proc_stop_step *steps; /* NULL or n_steps == 0: the default */
        size_t n_steps;                     /* <= PROC_STOP_STEPS_MAX */
        char *const *stop_argv;             /* NULL: no stop command */
        char *const *stop_env;
        const char *stop_cwd;
        int stop_output_fd;      /* its stdout and stderr; -1 = /dev/null */
        int64_t stop_timeout_ms; /* 0: PROC_STOP_COMMAND_TIMEOUT_MS */
};

struct proc_stop_result {
        /* No live member remains, and every member that was our child has been reaped. */
        bool clean;
        pid_t *leftovers; /* members alive after the last step */
        size_t n_leftovers;
        /*
         * Members that exited but whose parent, not us, has not reaped them (say, a
         * PID 1 that never reaps). A zombie holds no memory and no GPU context, so it
         * does not make a stop unclean; it is reported for the operator. A zombie
         * that is our child and could not be reaped does make it unclean.
         */
        pid_t *zombies;
        size_t n_zombies;
        unsigned steps_taken; /* signal steps sent; 0 if nothing was alive to signal */
        int64_t elapsed_us;
        bool identity_matched;   /* the leader was still the recorded process (so its group counted) */
        int stop_command_status; /* its waitpid() status; -1 if not run or not reaped */
        int stop_command_error;  /* negative errno if it could not be started, else 0 */
        bool stop_command_timed_out;
        int error; /* negative errno if a /proc scan failed (then clean is false) */
};

/* Free the arrays of a result filled by proc_kill_recorded(). */
void proc_stop_result_done(struct proc_stop_result *res);

struct proc_stop;
/* The result is valid during the call only; the stop is freed after the callback returns. */
typedef void (*proc_stop_cb)(const struct proc_stop_result *res, void *userdata);

/*
 * Stop a run asynchronously on the reaper's loop. leader is the server as
 * proc_spawn() returned it, or NULL to go by the tag alone. At each step every
 * member is signalled, and SIGCONT follows any signal but SIGKILL, so that a
 * stopped process can act on it. cb is always called from the loop, never from
 * inside this call; before it, the stop reaps what has ended (so watched
 * statuses, the leader's included, are delivered first) and sweeps /proc once
 * more. plan may be NULL (the default). *ret_stop (optional) is valid until cb
 * returns or proc_stop_cancel(). A bad plan or tag is refused with a reason.
 */
int proc_stop(struct proc_reaper *r, const struct proc_stop_plan *plan, const struct proc_info *leader,
              const char *tag, proc_stop_cb cb, void *userdata, struct proc_stop **ret_stop, char **reterr);
/* Abandon a stop without calling its callback (daemon shutdown). Returns NULL. */
struct proc_stop *proc_stop_cancel(struct proc_stop *s);

/*
 * Start-up recovery for a run left "running". rec is what proc_spawn() returned
 * then; its group and session count as the run's only if rec->pid is still that
 * process (same boot, same start time), as a guard against pid reuse. Every
 * process carrying the tag counts in any case. Follows plan (NULL = default),
 * blocking until each step's deadline at most, which is acceptable only because
 * this runs before the event loop starts. Children of ours among the members are
 * reaped here (no reaper exists yet). ret is filled; free it with
 * proc_stop_result_done().
 */
int proc_kill_recorded(const struct proc_info *rec, const char *tag, const struct proc_stop_plan *plan,
                       struct proc_stop_result *ret, char **reterr);
