/* SPDX-License-Identifier: MIT */
/* mxmatrixd's settings: defaults, the command line and the configuration file (config.c explains). */
#pragma once

#include "daemon.h"

void config_defaults(struct mx_config *c);
/* Parse the command line (and the config file it names or the default one). Exit code on error. */
int config_parse(struct mx_config *c, int argc, char **argv);
void config_done(struct mx_config *c);
