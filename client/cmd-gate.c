/* SPDX-License-Identifier: MIT */
#include "client.h"

/* Placeholder until the verb lands; its owner replaces this file. */
int cmd_gate(int argc, char **argv)
{
        fprintf(stderr, "mxmatrix: 'gate' is not available in this build\n");
        return MX_EXIT_USAGE;
}
