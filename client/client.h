/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix, the client. Verbs that work on files (matrix, plan, gate) run
 * locally; every other verb is a method of the daemon's protocol (described in
 * schema/protocol.json) and goes over the socket.
 *
 * Exit codes (documented in mxmatrix(1)):
 */
#pragma once

#include "util.h"

enum {
        MX_EXIT_OK = 0,
        MX_EXIT_FAILURE = 1,     /* the request was carried out and reports failure (e.g. a failed verdict) */
        MX_EXIT_USAGE = 2,       /* bad command line */
        MX_EXIT_INPUT = 3,       /* bad input file (matrix errors) */
        MX_EXIT_DENIED = 4,      /* the daemon refused: permission */
        MX_EXIT_NOTFOUND = 5,    /* no such job or run */
        MX_EXIT_UNAVAILABLE = 69 /* EX_UNAVAILABLE: daemon not running or incompatible */
};

/* A local verb. run() gets argv with argv[0] = the verb name. */
struct client_verb {
        const char *name;
        const char *synopsis; /* e.g. "matrix check FILE" */
        const char *summary;  /* one line */
        int (*run)(int argc, char **argv);
};

/* Global options, parsed by main.c before the verb. */
extern bool arg_json;
extern const char *arg_socket;
extern const char *arg_timeout; /* --timeout SECONDS, or NULL */

int cmd_matrix(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_gate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_probe(int argc, char **argv);
/* Hidden: "__complete CWORD WORD...", candidates for shell completion (docs/bash-completion). */
int cmd_complete(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
