/* SPDX-License-Identifier: MIT */
/* The covering-array model checked: its shape against the limits, a row against its forbidden patterns. */
#include "cover-model.h"
#include "util.h"

#include <inttypes.h>

int cover_check_model(const struct mx_cover_model *m, char **reterr)
{
        if (m->n_params == 0 || !m->n_values) {
                if (reterr)
                        *reterr = xstrdup("model has no parameters");
                return -EINVAL;
        }
        if (m->n_params > MX_COVER_MAX_PARAMS) {
                if (reterr)
                        *reterr = xasprintf("model has %zu parameters, more than %d", m->n_params,
                                            MX_COVER_MAX_PARAMS);
                return -E2BIG;
        }
        for (size_t p = 0; p < m->n_params; p++)
                if (m->n_values[p] == 0 || m->n_values[p] > MX_COVER_MAX_VALUES) {
                        if (reterr)
                                *reterr = xasprintf("parameter %zu has %u values, not 1..%d", p,
                                                    m->n_values[p], MX_COVER_MAX_VALUES);
                        return m->n_values[p] == 0 ? -EINVAL : -E2BIG;
                }
        if (m->n_forbidden > MX_COVER_MAX_FORBIDDEN) {
                if (reterr)
                        *reterr = xasprintf("model has %zu forbidden patterns, more than %d", m->n_forbidden,
                                            MX_COVER_MAX_FORBIDDEN);
                return -E2BIG;
        }
        for (size_t f = 0; f < m->n_forbidden; f++) {
                const struct mx_cover_forbid *fb = &m->forbidden[f];
                if (fb->n_terms == 0 || fb->n_terms > MX_COVER_MAX_PARAMS || !fb->terms) {
                        if (reterr)
                                *reterr = xasprintf("forbidden pattern %zu has %zu terms, not 1..%d", f,
                                                    fb->n_terms, MX_COVER_MAX_PARAMS);
                        return -EINVAL;
                }
                for (size_t j = 0; j < fb->n_terms; j++) {
                        unsigned p = fb->terms[j].param;
                        if (p >= m->n_params) {
                                if (reterr)
                                        *reterr = xasprintf("forbidden pattern %zu, term %zu: parameter %u "
                                                            "does not exist (model has %zu)",
                                                            f, j, p, m->n_params);
                                return -EINVAL;
                        }
                        unsigned nv = m->n_values[p];
                        if (nv < 64 && (fb->terms[j].set >> nv) != 0) {
                                if (reterr)
                                        *reterr = xasprintf("forbidden pattern %zu, term %zu: value set "
                                                            "0x%" PRIx64 " names values beyond parameter "
                                                            "%u's %u",
                                                            f, j, fb->terms[j].set, p, nv);
                                return -EINVAL;
                        }
                }
        }
        return 0;
}

bool cover_row_allowed(const struct mx_cover_model *m, const int *row, size_t *ret_forbid)
{
        for (size_t f = 0; f < m->n_forbidden; f++) {
                const struct mx_cover_forbid *fb = &m->forbidden[f];
                size_t j;
                for (j = 0; j < fb->n_terms; j++)
                        if (!((fb->terms[j].set >> row[fb->terms[j].param]) & 1))
                                break;
                if (j == fb->n_terms) {
                        if (ret_forbid)
                                *ret_forbid = f;
                        return false;
                }
        }
        return true;
}
