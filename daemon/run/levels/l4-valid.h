/* SPDX-License-Identifier: MIT */
/*
 * Is an L4 measurement valid on its GPU: from the sampler's summary of the
 * samples taken while L4 measured (sampler.h's window), L4's numbers are
 * invalid when thermal or power throttling was active (NVML's clocks event
 * reasons: sw_power_cap, hw_slowdown, sw_thermal, hw_thermal,
 * hw_power_brake), when the SM clock under load moved by more than the
 * tolerance ((max - min) / max), or when another process held the GPU (a
 * compute process outside the server's tree). A GPU that reports none of
 * these leaves the numbers valid, and the checks say "not measured".
 */
#pragma once

#include "sampler.h"

#include <jansson.h>

/* The reasons that make a benchmark invalid. */
#define MX_L4_THROTTLE_INVALID                                                                              \
        (MX_THROTTLE_SW_POWER_CAP | MX_THROTTLE_HW_SLOWDOWN | MX_THROTTLE_SW_THERMAL | MX_THROTTLE_HW_THERMAL | \
         MX_THROTTLE_HW_POWER_BRAKE)

/*
 * true when the window (NULL: no sampler) leaves the numbers valid; else
 * false with *ret_why (caller frees) naming every reason. *ret_checks (a new
 * JSON object, may be NULL) says what each check saw.
 */
bool mx_l4_gpu_valid(const struct mx_sample_summary *w, double clock_tolerance_pct, char **ret_why,
                     json_t **ret_checks);
