/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for libnvidia-ml.so.1, for test-sampler: the NVML calls the
 * sampler makes, answering with a recorded dump (FAKE_NVML_DUMP, the format of
 * tests/fixtures/gpu-h200/nvml.txt, captured through pynvml on an H200).
 * FAKE_NVML_UNIFIED=1 answers memory queries NOT_SUPPORTED as the GB10 does;
 * FAKE_NVML_GROW=BYTES adds BYTES to the used memory at every query (a leak);
 * FAKE_NVML_USED_FILE=PATH adds the number of MiB the file holds (read at every
 * query: a test changes what the GPU holds while the daemon watches);
 * FAKE_NVML_INIT=ERR makes nvmlInit fail with that NVML error number;
 * FAKE_NVML_PROC_NA=1 reports the processes' memory as NVML_VALUE_NOT_AVAILABLE;
 * FAKE_NVML_THROTTLE=MASK sets the clocks event reasons;
 * energy: the dump's "energy mJ N" line (pynvml's nvmlDeviceGetTotalEnergyConsumption) is the counter at
 * nvmlInit, and it grows by the dump's power times the time since (the H200 dump records no energy: the
 * counter is then the recorded power integrated from 0); FAKE_NVML_ENERGY=0 answers NOT_SUPPORTED, as a GPU
 * without the counter does (and so does a dump with neither line nor FAKE_NVML_ENERGY=1).
 * Signatures as in nvml.h (the device check, tests/device/sampler.sh, runs the real one).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef struct nvml_device *nvmlDevice_t;
typedef struct {
        unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
        unsigned version;
        unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct {
        unsigned pid;
        unsigned long long usedGpuMemory;
        unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
        unsigned gpu, memory;
} nvmlUtilization_t;

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t r);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *dev);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *m);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned *count,
                                                     nvmlProcessInfo_t *p);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned *mhz);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned *mw);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned *c);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *u);
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *reasons);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *mj);

static struct {
        int refs;
        unsigned long long total, used, free, reserved, grown;
        unsigned pid;
        unsigned long long proc_used;
        unsigned sm, mem, power, temp;
        int has_energy;
        unsigned long long energy_mj;
        double init_s; /* CLOCK_MONOTONIC at nvmlInit */
} dump;
static int the_device;

static unsigned long long env_ull(const char *name)
{
        const char *v = getenv(name);
        return v ? strtoull(v, NULL, 0) : 0;
}

static double mono_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned long long used_file_mib(void)
{
        const char *path = getenv("FAKE_NVML_USED_FILE");
        unsigned long long mib = 0;
        FILE *f;

        if (!path || !(f = fopen(path, "re")))
                return 0;
        if (fscanf(f, "%llu", &mib) != 1)
                mib = 0;
        fclose(f);
        return mib;
}

nvmlReturn_t nvmlInit_v2(void)
{
        const char *path = getenv("FAKE_NVML_DUMP");
        char line[256];
        FILE *f;

        if (env_ull("FAKE_NVML_INIT"))
                return (nvmlReturn_t)env_ull("FAKE_NVML_INIT");
        if (!path || !(f = fopen(path, "re")))
                return 9; /* NVML_ERROR_DRIVER_NOT_LOADED */
        while (fgets(line, sizeof(line), f)) {
                sscanf(line, "mem total/used/free %llu %llu %llu", &dump.total, &dump.used, &dump.free);
                sscanf(line, "mem_v2 reserved %llu", &dump.reserved);
                sscanf(line, "proc %u %llu", &dump.pid, &dump.proc_used);
                sscanf(line, "clocks sm/mem %u %u", &dump.sm, &dump.mem);
                sscanf(line, "power mW %u temp %u", &dump.power, &dump.temp);
                if (sscanf(line, "energy mJ %llu", &dump.energy_mj) == 1)
                        dump.has_energy = 1;
        }
        if (getenv("FAKE_NVML_ENERGY"))
                dump.has_energy = env_ull("FAKE_NVML_ENERGY") != 0;
        dump.init_s = mono_s();
        fclose(f);
        dump.refs++;
        return 0;
}

nvmlReturn_t nvmlShutdown(void)
{
        if (dump.refs == 0)
                return 1; /* NVML_ERROR_UNINITIALIZED */
        dump.refs--;
        return 0;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
        return r == 3 ? "Not Supported" : r == 9 ? "Driver Not Loaded" : "Unknown Error";
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *dev)
{
        if (dump.refs == 0)
                return 1;
        if (index != 0)
                return 2; /* NVML_ERROR_INVALID_ARGUMENT */
        *dev = (nvmlDevice_t)&the_device;
        return 0;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m)
{
        if (env_ull("FAKE_NVML_UNIFIED"))
                return 3; /* NVML_ERROR_NOT_SUPPORTED, as on the GB10 */
        m->total = dump.total;
        m->used = dump.used + dump.grown + used_file_mib() * 1024 * 1024;
        m->free = dump.total - m->used;
        dump.grown += env_ull("FAKE_NVML_GROW");
        return 0;
}

/* v2 leaves the reserved memory out of used (FAKE_NVML_NO_V2=1: a driver without it) */
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *m)
{
        nvmlMemory_t v1;
        nvmlReturn_t r;

        if (env_ull("FAKE_NVML_NO_V2"))
                return 13; /* NVML_ERROR_FUNCTION_NOT_FOUND */
        if (m->version != (unsigned)(sizeof(nvmlMemory_v2_t) | (2u << 24)))
                return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
        r = nvmlDeviceGetMemoryInfo(dev, &v1);
        if (r != 0)
                return r;
        m->total = v1.total;
        m->reserved = dump.reserved;
        m->used = v1.used - dump.reserved;
        m->free = v1.free;
        return 0;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned *count, nvmlProcessInfo_t *p)
{
        unsigned n = dump.pid ? 1 : 0;

        if (*count < n) {
                *count = n;
                return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
        }
        *count = n;
        if (n) {
                p[0] = (nvmlProcessInfo_t){.pid = dump.pid,
                                           .usedGpuMemory = dump.proc_used,
                                           .gpuInstanceId = 0xFFFFFFFF,
                                           .computeInstanceId = 0xFFFFFFFF};
                if (env_ull("FAKE_NVML_PROC_NA"))
                        p[0].usedGpuMemory = ~0ULL;
                if (env_ull("FAKE_NVML_PROC_PID"))
                        p[0].pid = (unsigned)env_ull("FAKE_NVML_PROC_PID");
        }
        return 0;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned *mhz)
{
        if (type == 1)
                *mhz = dump.sm;
        else if (type == 2)
                *mhz = dump.mem;
        else
                return 3;
        return 0;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned *mw)
{
        *mw = dump.power;
        return 0;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned *c)
{
        if (sensor != 0)
                return 2;
        *c = dump.temp;
        return 0;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *u)
{
        *u = (nvmlUtilization_t){.gpu = 87, .memory = 40};
        return 0;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *reasons)
{
        *reasons = env_ull("FAKE_NVML_THROTTLE");
        return 0;
}

/* The counter at nvmlInit plus the recorded power over the time since (mW x s = mJ). */
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *mj)
{
        if (!dump.has_energy)
                return 3; /* NVML_ERROR_NOT_SUPPORTED */
        *mj = dump.energy_mj + (unsigned long long)((double)dump.power * (mono_s() - dump.init_s));
        return 0;
}
