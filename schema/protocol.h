/* SPDX-License-Identifier: MIT */
/*
 * The control protocol, described once as data in schema/protocol.json and
 * compiled into both binaries. The daemon builds its dispatch table from it and
 * checks every request's parameters against it; the client derives its daemon
 * verbs, their command lines and their help from it; the tests check every
 * reply against the declared reply shapes.
 *
 * The schema language is a small subset of JSON Schema:
 *   type      string | integer | boolean | object | array | any
 *   nullable  true: null is also accepted
 *   enum      allowed strings;  max_length (strings, bytes)
 *   min, max  integer bounds
 *   items, max_items            arrays (max_items also bounds object keys)
 *   properties, required        objects; additional: true (anything), a schema
 *                               (for every other key), or absent (no other key)
 *   ref       name of an entry in "types"
 * A method's "params" maps each parameter name to a schema, with "required":
 * true inside the parameter's schema; "one_of" lists parameters of which exactly
 * one must be given.
 */
#pragma once

#include "util.h"

#include <jansson.h>

#define MX_PROTO_FRAME_MAX (1024 * 1024) /* bytes in one request line, newline included */
#define MX_PROTO_STRING_MAX (64 * 1024)  /* default bound for strings without max_length */
#define MX_PROTO_ITEMS_MAX 4096          /* default bound for arrays and objects */

enum mx_privilege {
        MX_PRIV_ANY,   /* whoever can open the socket */
        MX_PRIV_OWNER, /* the job's submitter, root, or the admin group */
        MX_PRIV_ADMIN, /* root or the admin group */
};

struct mx_proto_method {
        const char *name;
        const char *summary;
        enum mx_privilege privilege;
        bool mutating;
        bool stream;
        json_t *params;      /* object: name -> schema */
        json_t *one_of;      /* array of names, or NULL */
        json_t *reply;       /* schema */
        json_t *stream_item; /* schema, or NULL */
        json_t *cli;         /* client description, or NULL (hello) */
};

struct mx_proto {
        int version;
        json_t *doc;   /* the parsed protocol.json */
        json_t *types; /* named schemas */
        json_t *errors;
        struct mx_proto_method *methods;
        size_t n_methods;
};

/* The embedded description, parsed once. A broken description is a build bug: abort. */
const struct mx_proto *mx_proto_get(void);
const struct mx_proto_method *mx_proto_find(const struct mx_proto *p, const char *name);
const char *mx_privilege_to_string(enum mx_privilege p);

/* Check a request's params (NULL = {}). -EINVAL with *reterr naming the parameter. */
int mx_proto_check_params(const struct mx_proto *p, const struct mx_proto_method *m, json_t *params,
                          char **reterr);
/* Check value against schema; path names the value in the message. -EINVAL with *reterr. */
int mx_proto_check_value(const struct mx_proto *p, json_t *schema, json_t *value, const char *path,
                         char **reterr);
/* Is code one of the declared error codes? */
bool mx_proto_error_known(const struct mx_proto *p, const char *code);

/*
 * Turn a daemon verb's command line (argv[0] = verb) into params, following the
 * method's "cli" description: --flag [ARG] options, key=value assignments, and
 * a JOB / rRUN target. -EINVAL with *reterr on a bad command line.
 */
int mx_proto_cli_parse(const struct mx_proto *p, const struct mx_proto_method *m, int argc, char **argv,
                       json_t **ret_params, char **reterr);
/* Print "mxmatrix SYNOPSIS" and the options with their documentation. */
void mx_proto_cli_help(const struct mx_proto *p, const struct mx_proto_method *m, FILE *f);

/*
 * The run results of protocol.json's "result" type, in its order: the one
 * vocabulary that status, list, show, follow and the daemon's messages use.
 */
json_t *mx_proto_results(void);
/* Is this result one that went as expected (pass, xfail: the type's "expected")? */
bool mx_result_expected(const char *result);
/*
 * A counts object (job or queue counts: state and result names -> n) as
 * "2 queued, 1 running, 6 pass, 4 xfail": the states with states, then each
 * result with a non-zero count, in the vocabulary's order; "no runs" if none.
 */
char *mx_result_counts_text(json_t *counts, bool states);
