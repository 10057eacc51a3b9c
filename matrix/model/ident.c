/* SPDX-License-Identifier: MIT */
/* The identity of a configuration: its canonical key and FNV-1a hash (ident.h). */
#include "ident.h"

#include <inttypes.h>

char *mx_ident_key(const struct mx_matrix *m, const int *config)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        for (size_t i = 0; i < m->n_axes; i++) {
                unsigned a = m->axes_by_name[i];

                if (config[a] < 0)
                        continue;
                if (b.len > 0)
                        mx_buf_putc(&b, ',');
                mx_buf_puts(&b, m->axes[a].name);
                mx_buf_putc(&b, '=');
                mx_buf_puts(&b, m->axes[a].values[config[a]].name);
        }
        return mx_buf_steal(&b);
}

uint64_t mx_ident_hash(const char *key)
{
        return mx_fnv1a64(key, strlen(key), MX_FNV1A64_INIT);
}

char *mx_ident_hash_format(uint64_t hash, char buf[static MX_IDENT_HASH_LEN + 1])
{
        snprintf(buf, MX_IDENT_HASH_LEN + 1, "%016" PRIx64, hash);
        return buf;
}
