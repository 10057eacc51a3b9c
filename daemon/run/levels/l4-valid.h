/* SPDX-License-Identifier: MIT */
/*
 * Is an L4 measurement valid on its GPU: from the sampler's summary of the
 * samples taken while L4 measured (sampler.h's window), L4's numbers are
 * invalid when thermal or hardware throttling was active (NVML's clocks
 * event reasons hw_slowdown, sw_thermal, hw_thermal, hw_power_brake;
 * sw_power_cap is recorded, see below), when the SM clock under load moved by more than the
 * tolerance ((max - min) / max), or when another process held the GPU (a
 * compute process outside the server's tree). A GPU that reports none of
 * these leaves the numbers valid, and the checks say "not measured".
 */
#pragma once

#include "sampler.h"

#include <jansson.h>

/*
 * The reasons that make a benchmark invalid: the GPU slowed for heat or by a hardware signal. Not
 * sw_power_cap: a power-limited GPU (a GB10 under decode, an H100 at its cap) runs capped as its
 * normal state under load, so every run of a comparison sees it; what it does to the numbers shows as
 * a moving SM clock, which the clock check judges. It is recorded in the checks all the same.
 */
#define MX_L4_THROTTLE_INVALID \
        (MX_THROTTLE_HW_SLOWDOWN | MX_THROTTLE_SW_THERMAL | MX_THROTTLE_HW_THERMAL | MX_THROTTLE_HW_POWER_BRAKE)

/*
 * true when the window (NULL: no sampler) leaves the numbers valid; else
 * false with *ret_why (caller frees) naming every reason. *ret_checks (a new
 * JSON object, may be NULL) says what each check saw.
 */
bool mx_l4_gpu_valid(const struct mx_sample_summary *w, double clock_tolerance_pct, char **ret_why,
                     json_t **ret_checks);
