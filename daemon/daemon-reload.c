/* SPDX-License-Identifier: MIT */
/*
 * The matrix the daemon submits against, re-read on start-up, on SIGHUP and on
 * the reload method (main.c hands it to the control socket's handlers). A
 * broken file leaves the previous matrix in place and says why in
 * d->matrix_error, so the queue never stops for a typo.
 */
#include "daemon-reload.h"
#include "matrix.h"

int daemon_reload_matrix(struct mx_daemon *d, char **reterr)
{
        struct mx_matrix *m = NULL;
        int r;

        if (!d->cfg.matrix_path) {
                *reterr = xstrdup("no matrix file is configured (--matrix)");
                return -ENOENT;
        }
        r = mx_matrix_load_file(d->cfg.matrix_path, &m, reterr);
        if (r < 0) {
                free(d->matrix_error);
                d->matrix_error = xstrdup(*reterr);
                return r;
        }
        mx_matrix_free(d->matrix);
        d->matrix = m;
        free(d->matrix_error);
        d->matrix_error = NULL;
        return 0;
}
