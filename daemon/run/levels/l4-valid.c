/* SPDX-License-Identifier: MIT */
/* L4's validity on its GPU (l4-valid.h). */
#include "l4-valid.h"

#include <inttypes.h>

bool mx_l4_gpu_valid(const struct mx_sample_summary *w, double clock_tolerance_pct, char **ret_why,
                     json_t **ret_checks)
{
        struct mx_buf why = MX_BUF_INIT;
        json_t *checks = json_object();
        bool valid = true;

        if (!w || w->n == 0) {
                json_object_set_new(checks, "note", json_string("not measured: no GPU sample during L4"));
                goto done;
        }
        json_object_set_new(checks, "samples", json_integer((json_int_t)w->n));
        if (w->throttle_seen < 0)
                json_object_set_new(checks, "throttle", json_string("not measured: the GPU reports no reasons"));
        else {
                int64_t bad = w->throttle_seen & MX_L4_THROTTLE_INVALID;
                json_object_set_new(checks, "throttle", mx_throttle_to_json(w->throttle_seen));
                if (bad) {
                        _cleanup_json_ json_t *names = mx_throttle_to_json(bad);
                        _cleanup_free_ char *list = json_dumps(names, JSON_COMPACT);

                        mx_buf_printf(&why, "%sthermal or hardware throttling during the measurement: %s",
                                      why.len ? "; " : "", strna(list));
                        valid = false;
                }
        }
        if (w->sm_clock_busy_min < 0)
                json_object_set_new(checks, "sm_clock_mhz", json_string("not measured"));
        else {
                double moved = w->sm_clock_busy_max > 0 ? 100.0 * (double)(w->sm_clock_busy_max - w->sm_clock_busy_min) /
                                                                  (double)w->sm_clock_busy_max
                                                        : 0;

                json_object_set_new(checks, "sm_clock_mhz",
                                    json_pack("[I,I]", (json_int_t)w->sm_clock_busy_min,
                                              (json_int_t)w->sm_clock_busy_max));
                json_object_set_new(checks, "sm_clock_moved_pct", json_real(moved));
                if (moved > clock_tolerance_pct) {
                        mx_buf_printf(&why,
                                      "%sthe SM clock under load moved %.1f%% (%" PRId64 " to %" PRId64
                                      " MHz; at most %g%%, L4.clock_tolerance_pct)",
                                      why.len ? "; " : "", moved, w->sm_clock_busy_min, w->sm_clock_busy_max,
                                      clock_tolerance_pct);
                        valid = false;
                }
        }
        json_object_set_new(checks, "foreign_processes", json_integer(w->foreign_procs_max));
        if (w->foreign_procs_max > 0) {
                mx_buf_printf(&why, "%s%u other process%s held the GPU during the measurement (pid %d)",
                              why.len ? "; " : "", w->foreign_procs_max, w->foreign_procs_max > 1 ? "es" : "",
                              (int)w->foreign_pid);
                valid = false;
        }
done:
        if (ret_checks)
                *ret_checks = checks;
        else
                json_decref(checks);
        if (!valid && ret_why)
                *ret_why = mx_buf_steal(&why);
        else
                mx_buf_free(&why);
        return valid;
}
