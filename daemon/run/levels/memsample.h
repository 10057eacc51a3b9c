/* SPDX-License-Identifier: MIT */
/* The default memory sample of a server (memsample.c explains). */
#pragma once

#include "levels.h"

/* The default memory sample: PSS (RSS where smaps_rollup is missing) of every process with ud's tag. */
int mx_mem_sample_pss(void *ud, struct mx_mem_sample *ret);
