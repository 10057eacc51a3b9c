/* SPDX-License-Identifier: MIT */
#include "client.h"

/* Placeholder until the verb lands; its owner replaces this file. */
int cmd_plan(int argc, char **argv)
{
        fprintf(stderr, "mxmatrix: 'plan' is not available in this build\n");
        return MX_EXIT_USAGE;
}
