/* SPDX-License-Identifier: MIT */
/* Data files compiled into the binaries by cmake/embed.cmake. */
#pragma once

#include <stddef.h>

struct mx_embedded {
        const char *name; /* file name without directory, NULL ends the table */
        const char *data; /* NUL-terminated contents */
        size_t len;
};
