/* SPDX-License-Identifier: MIT */
#include "client.h"

/* Placeholder until the verb lands; its owner replaces this file. */
int cmd_matrix(int argc, char **argv)
{
        fprintf(stderr, "mxmatrix: 'matrix' is not available in this build\n");
        return MX_EXIT_USAGE;
}
