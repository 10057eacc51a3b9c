/* SPDX-License-Identifier: MIT */
#include "submit.h"

/* Until the matrix engine is linked in, there is nothing to expand a submission with. */
void submit_handle(struct mx_request *req)
{
        request_error(req, "matrix-error", "this build has no matrix engine");
}
