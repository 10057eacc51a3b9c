/* SPDX-License-Identifier: MIT */
/* Post-optimisation of a covering array (cover-optimise.c). */
#pragma once

#include "cover-build.h"

/* Try to shorten the array within g->work_limit; keeps it complete and valid. */
void cover_optimise(struct cover_gen *g);
