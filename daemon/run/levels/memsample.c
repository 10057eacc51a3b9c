/* SPDX-License-Identifier: MIT */
/*
 * The default memory sample of a server (levels.h): the proportional set
 * size of every process carrying the run's tag, from /proc/PID/smaps_rollup
 * (Linux 4.14+), or the resident set size from /proc/PID/status where that
 * file is missing. PSS counts shared pages once across the tree, so a
 * server that forks workers sharing its libraries is not counted twice.
 * On a GPU with unified memory (the GB10) CUDA allocations are NOT in the
 * process's PSS or RSS, nor in its cgroup's accounting (target-surfaces.md
 * §D3): a leak of device memory there shows only in the system figure,
 * MemTotal - MemAvailable (sys_used_bytes), which memtrack.h judges instead.
 */
#include "memsample.h"
#include "proc.h"

#include <stdio.h>

/* The value in kB of the first line of path starting with key, in bytes; 0 when absent. */
static uint64_t read_kb(const char *path, const char *key)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[256];
        size_t n = strlen(key);

        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, key, n) == 0)
                        return strtoull(line + n, NULL, 10) * 1024;
        return 0;
}

int mx_mem_sample_pss(void *ud, struct mx_mem_sample *ret)
{
        const char *tag = ud;
        _cleanup_free_ pid_t *pids = NULL;
        struct mx_mem_sample m = { .t_mono_us = mx_now_mono_us(), .source = "smaps_rollup" };
        size_t n = 0;
        int q = proc_find_tagged(tag, &pids, &n);

        if (q < 0)
                return q;
        for (size_t i = 0; i < n; i++) {
                char path[64];
                uint64_t b;

                snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pids[i]);
                b = read_kb(path, "Pss:");
                if (b == 0) {
                        snprintf(path, sizeof(path), "/proc/%d/status", (int)pids[i]);
                        b = read_kb(path, "VmRSS:");
                        if (b > 0)
                                m.source = "status VmRSS";
                }
                m.server_bytes += b;
                m.n_procs++;
        }
        {
                uint64_t total = read_kb("/proc/meminfo", "MemTotal:"), avail = read_kb("/proc/meminfo", "MemAvailable:");

                m.sys_used_bytes = total > avail ? total - avail : 0;
        }
        *ret = m;
        return 0;
}
