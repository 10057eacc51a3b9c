/* SPDX-License-Identifier: MIT */
/*
 * Daemon verbs: each is a method of schema/protocol.json whose "cli" entry
 * gives its command line. remote.c parses the command line from that entry,
 * calls the daemon and hands the result to the verb's renderer (cmd-*.c), or
 * prints it as JSON with --json.
 */
#pragma once

#include "client.h"
#include "conn.h"
#include "protocol.h"

struct remote_verb {
        const char *name;
        /* Print the result (for humans, or the JSON document under --json); returns the exit code. */
        int (*render)(json_t *params, json_t *result);
        /* For streaming methods: print one item (human or, with --json, one JSON line). */
        client_stream_fn stream;
        /* Optional: make the call(s) instead of one client_call() (show JOB fetches every page). */
        int (*call)(struct client_conn *c, json_t *params, json_t **ret_result);
        /* Optional, for streams: called about once a second while the stream is quiet. */
        void (*idle)(void *ud);
};

/* Renderers, one file each (cmd-<verb>.c). */
extern const struct remote_verb remote_submit, remote_status, remote_list, remote_show, remote_logs,
        remote_follow, remote_cancel, remote_pause, remote_resume, remote_retry, remote_reload, remote_gates,
        remote_attribute, remote_repro, remote_history, remote_bisect;
/* attribute's renderer, for other verbs that show an attribution (params: as_matrix). */
int attribute_render(json_t *params, json_t *result);
/* show JOB's success-criteria table (cmd-gates.c); nothing for NULL. */
void output_criteria(json_t *criteria);

/* Run a daemon verb; argv[0] is the verb. */
int remote_run(const struct mx_proto_method *m, int argc, char **argv);
/* Print "  SYNOPSIS   SUMMARY" for every daemon verb (main's --help). */
void remote_list_verbs(FILE *f);
