/* SPDX-License-Identifier: MIT */
/* Reaping every child on SIGCHLD and delivering watched statuses (see proc-reaper.h). */
#include "proc-reaper.h"

#include <event2/event.h>
#include <signal.h>
#include <sys/wait.h>

struct proc_watch {
        pid_t pid;
        proc_exit_cb cb;
        void *userdata;
};

struct proc_reaper {
        struct event_base *base;
        struct event *sigchld;
        struct event *kick; /* a reap pass requested from inside the loop */
        struct proc_watch *watches;
        size_t n_watches;
        size_t alloc;
        uint64_t adopted;
};

static void reaper_signal_cb(evutil_socket_t fd, short what, void *userdata)
{
        proc_reaper_reap(userdata);
}

int proc_reaper_new(struct event_base *base, struct proc_reaper **ret)
{
        struct proc_reaper *r;

        if (!base || !ret)
                return -EINVAL;
        r = xcalloc(1, sizeof(*r));
        r->base = base;
        r->sigchld = evsignal_new(base, SIGCHLD, reaper_signal_cb, r);
        r->kick = event_new(base, -1, 0, reaper_signal_cb, r);
        if (!r->sigchld || !r->kick) {
                proc_reaper_free(r);
                return -ENOMEM;
        }
        if (event_add(r->sigchld, NULL) < 0) {
                proc_reaper_free(r);
                return -EBUSY; /* another base owns signals */
        }
        *ret = r;
        return 0;
}

struct proc_reaper *proc_reaper_free(struct proc_reaper *r)
{
        if (!r)
                return NULL;
        if (r->sigchld)
                event_free(r->sigchld);
        if (r->kick)
                event_free(r->kick);
        free(r->watches);
        free(r);
        return NULL;
}

struct event_base *proc_reaper_get_base(const struct proc_reaper *r)
{
        return r->base;
}

static ssize_t watch_find(const struct proc_reaper *r, pid_t pid)
{
        for (size_t i = 0; i < r->n_watches; i++)
                if (r->watches[i].pid == pid)
                        return (ssize_t)i;
        return -1;
}

int proc_reaper_watch(struct proc_reaper *r, pid_t pid, proc_exit_cb cb, void *userdata)
{
        if (!r || pid <= 0 || !cb)
                return -EINVAL;
        if (watch_find(r, pid) >= 0)
                return -EEXIST;
        MX_GROW(r->watches, r->alloc, r->n_watches + 1);
        r->watches[r->n_watches++] = (struct proc_watch){ pid, cb, userdata };
        /* The child may have ended before SIGCHLD was ours to see: look once more, from the loop. */
        event_active(r->kick, 0, 0);
        return 0;
}

int proc_reaper_unwatch(struct proc_reaper *r, pid_t pid)
{
        ssize_t i = r ? watch_find(r, pid) : -1;

        if (i < 0)
                return -ENOENT;
        r->watches[i] = r->watches[--r->n_watches];
        return 0;
}

void proc_reaper_reap(struct proc_reaper *r)
{
        for (;;) {
                struct proc_watch w;
                int status;
                ssize_t i;
                pid_t pid = waitpid(-1, &status, WNOHANG);

                if (pid < 0 && errno == EINTR)
                        continue;
                if (pid <= 0)
                        return; /* 0: children left, none ended; ECHILD: no children */
                i = watch_find(r, pid);
                if (i < 0) {
                        r->adopted++;
                        continue;
                }
                /* Remove before calling, so the callback may watch, unwatch or start a stop. */
                w = r->watches[i];
                r->watches[i] = r->watches[--r->n_watches];
                w.cb(pid, status, w.userdata);
        }
}

uint64_t proc_reaper_adopted(const struct proc_reaper *r)
{
        return r->adopted;
}
