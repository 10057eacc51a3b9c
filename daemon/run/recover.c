/* SPDX-License-Identifier: MIT */
/*
 * Start-up recovery. Attempts left without an end in the database belong to a
 * daemon that died (kill -9, a crash, a power cut). For each: kill what it
 * started if anything of it is still alive — by its recorded identity (boot
 * id, pid, start time, so a reused pid is never hit) and by its run tag (which
 * finds descendants that escaped the process group) — then end the attempt as
 * interrupted and apply the recovery policy: requeue (default) or requeue and
 * pause the queue. Runs before the event loop and the socket exist.
 */
#include "recover.h"
#include "cgroup.h"
#include "queue-slurm.h"
#include "log.h"
#include "proc-stop.h"
#include "queue.h"

#include <inttypes.h>

/*
 * The attempt's cgroup, recorded when it started: whatever is still in it is
 * killed (a descendant that cleared its environment and left the session is
 * found nowhere else), and the cgroup removed. Only a path that can be a run
 * cgroup of this attempt is touched. Returns true when nothing is left.
 */
static bool recover_cgroup(const struct queue_open_attempt *a, const struct mx_log_ctx *ctx)
{
        int populated, r;

        if (!a->cgroup)
                return true;
        if (!cgroup_path_is_run(a->cgroup, a->tag)) {
                log_ctx(LOG_WARNING, NULL, ctx, "run %" PRId64 ": the recorded cgroup '%s' is not a run cgroup; "
                        "left alone", a->run, a->cgroup);
                return true;
        }
        populated = cgroup_is_populated(a->cgroup);
        r = cgroup_kill_wait_remove(a->cgroup, CGROUP_KILL_WAIT_MS);
        if (r < 0) {
                log_ctx(LOG_ERR, MX_MSGID_ORPHAN_KILLED, ctx, "run %" PRId64 " attempt %d: cannot empty its cgroup %s: %s",
                        a->run, a->n, a->cgroup, strerror(-r));
                return false;
        }
        if (populated > 0)
                log_ctx(LOG_WARNING, MX_MSGID_ORPHAN_KILLED, ctx,
                        "run %" PRId64 " attempt %d: killed the processes the previous daemon left in its cgroup %s",
                        a->run, a->n, a->cgroup);
        return true;
}

/* Kill whatever of the attempt still lives; returns true when nothing is left. */
static bool recover_kill(struct mx_daemon *d, const struct queue_open_attempt *a)
{
        struct proc_info rec = { .pid = a->pid, .pgid = a->pgid, .starttime = a->proc_start };
        struct proc_stop_result res = {};
        struct mx_log_ctx ctx = { .job = a->job, .run = a->run, .attempt = a->n, .config = a->config_key };
        _cleanup_free_ char *err = NULL;
        bool clean;
        int r;

        (void)d;
        if (a->boot_id)
                snprintf(rec.boot_id, sizeof(rec.boot_id), "%s", a->boot_id);
        r = proc_kill_recorded(a->has_process ? &rec : NULL, a->tag, NULL, &res, &err);
        if (r < 0) {
                log_ctx(LOG_ERR, NULL, &ctx, "cannot stop what run %" PRId64 " left behind: %s", a->run,
                        err ? err : strerror(-r));
                return false;
        }
        clean = res.clean;
        if (res.steps_taken > 0 || !clean)
                log_ctx(clean ? LOG_WARNING : LOG_ERR, MX_MSGID_ORPHAN_KILLED, &ctx,
                        "run %" PRId64 " attempt %d: %s processes the previous daemon left behind%s", a->run, a->n,
                        clean ? "killed the" : "could not kill all", clean ? "" : " (the next run may fail)");
        proc_stop_result_done(&res);
        return recover_cgroup(a, &ctx) && clean;
}

bool recover_requeue_allowed(struct mx_daemon *d, int64_t run, int64_t attempt, char **ret_why)
{
        int n = 0, r = queue_attempt_interruptions(d->db, attempt, &n);

        if (r < 0) {
                log_warning_errno(r, "cannot count the interruptions of run %" PRId64 "; requeueing it", run);
                return true;
        }
        if (n < d->cfg.max_requeues)
                return true;
        *ret_why = xasprintf("interrupted %d times (the daemon stopped or died during each attempt); not requeued "
                             "again (max_requeues %d): 'mxmatrix retry' runs it once more",
                             n + 1, d->cfg.max_requeues);
        return false;
}

int recover_interrupted(struct mx_daemon *d)
{
        struct queue_open_attempt *open = NULL;
        size_t n = 0, in_slurm = 0;
        int r = queue_open_attempts(d->db, &open, &n);

        if (r < 0)
                return log_error_errno(r, "cannot read unfinished runs");
        for (size_t i = 0; i < n; i++) {
                struct queue_finish f = {
                        .outcome = MX_OUTCOME_INTERRUPTED,
                        .message = "the daemon stopped while the run was in progress",
                        .exit_status = -1,
                        .requeue = true,
                };
                struct mx_log_ctx ctx = { .job = open[i].job, .run = open[i].run, .attempt = open[i].n,
                                          .config = open[i].config_key };
                _cleanup_free_ char *result = NULL, *bound = NULL;

                /* A Slurm job outlives the daemon: executor_slurm_new() reattaches it from Slurm's records. */
                if (d->cfg.executor == MX_EXECUTOR_SLURM && slurm_attempt_has_job(d->db, open[i].attempt) > 0) {
                        in_slurm++;
                        continue;
                }
                if (!recover_kill(d, &open[i]))
                        f.message = "the daemon stopped during the run; some of its processes could not be killed";
                if (!recover_requeue_allowed(d, open[i].run, open[i].attempt, &bound)) {
                        f.outcome = MX_OUTCOME_INFRA_ERROR;
                        f.message = bound;
                        f.requeue = false;
                }
                r = queue_attempt_finish(d->db, open[i].attempt, &f, &result);
                if (r < 0) {
                        log_error_errno(r, "cannot record the interrupted run %" PRId64, open[i].run);
                        continue;
                }
                if (bound)
                        log_ctx(LOG_ERR, MX_MSGID_RUN_FINISHED, &ctx, "run %" PRId64 " attempt %d: %s", open[i].run,
                                open[i].n, bound);
                else if (streq(result, "cancelled"))
                        log_ctx(LOG_WARNING, MX_MSGID_RUN_INTERRUPTED, &ctx,
                                "run %" PRId64 " attempt %d was interrupted by a daemon restart "
                                "while it was being cancelled; it stays cancelled",
                                open[i].run, open[i].n);
                else
                        log_ctx(LOG_WARNING, MX_MSGID_RUN_INTERRUPTED, &ctx,
                                "run %" PRId64 " attempt %d was interrupted by a daemon restart; requeued%s",
                                open[i].run, open[i].n,
                                d->cfg.recovery == MX_RECOVERY_PAUSE ? " and the queue paused" : "");
        }
        if (n > in_slurm && d->cfg.recovery == MX_RECOVERY_PAUSE && !d->paused) {
                r = queue_set_paused(d->db, true, 0);
                if (r < 0)
                        log_error_errno(r, "cannot pause the queue");
                else
                        d->paused = true;
        }
        queue_open_attempts_free(open, n);
        return (int)(n - in_slurm);
}
