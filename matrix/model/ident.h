/* SPDX-License-Identifier: MIT */
/*
 * The identity of a configuration, for deduplication and history: the key is
 * the "axis=value" pairs of the assigned axes, with canonical value names
 * (aliases resolved), sorted by axis name (bytewise) and joined with ",";
 * the hash is FNV-1a 64 of the key, printed as 16 lower-case hex digits.
 * Neither depends on the order of axes, values or keys in the file.
 */
#pragma once

#include "matrix.h"

#define MX_IDENT_HASH_LEN 16

/* The key of config ("" when nothing is assigned); caller frees. */
char *mx_ident_key(const struct mx_matrix *m, const int *config);
uint64_t mx_ident_hash(const char *key);
/* Format a hash as 16 lower-case hex digits into buf (MX_IDENT_HASH_LEN + 1 bytes); returns buf. */
char *mx_ident_hash_format(uint64_t hash, char buf[static MX_IDENT_HASH_LEN + 1]);
