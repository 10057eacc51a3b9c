// SPDX-License-Identifier: MIT
// Device check of the GPU and memory sampler (tests/device/sampler.sh): take
// device memory step by step and hold it, as a leaking server would, printing
// what it holds after each step with the wall-clock time, so the figures the
// sampler saw can be matched to what was really held.
//   usage: alloc-steps [STEP_MIB=512] [STEPS=8] [INTERVAL_MS=1000] [HOLD_MS=3000]
// Lines: "alloc-steps t_us=<µs since the epoch> event=<start|context|step|hold|exit> held_mib=<n>".
// The memory is never freed: the process exits holding it (the driver releases it).
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long long now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static void say(const char *event, long long held_mib)
{
        printf("alloc-steps t_us=%lld event=%s held_mib=%lld pid=%d\n", now_us(), event, held_mib, (int)getpid());
        fflush(stdout);
}

static void check(cudaError_t e, const char *what)
{
        if (e != cudaSuccess) {
                fprintf(stderr, "alloc-steps: %s: %s\n", what, cudaGetErrorString(e));
                exit(1);
        }
}

int main(int argc, char **argv)
{
        long long step_mib = argc > 1 ? atoll(argv[1]) : 512;
        int steps = argc > 2 ? atoi(argv[2]) : 8;
        int interval_ms = argc > 3 ? atoi(argv[3]) : 1000;
        int hold_ms = argc > 4 ? atoi(argv[4]) : 3000;
        long long held = 0;

        say("start", 0);
        // the CUDA context takes device memory of its own: create it first, so steps are steps
        check(cudaFree(0), "cudaFree(0)");
        say("context", 0);
        usleep(2 * interval_ms * 1000);
        for (int i = 0; i < steps; i++) {
                void *p = NULL;
                size_t bytes = (size_t)step_mib << 20;

                check(cudaMalloc(&p, bytes), "cudaMalloc");
                check(cudaMemset(p, 0xA5, bytes), "cudaMemset"); // really backed, not just reserved
                check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
                held += step_mib;
                say("step", held);
                usleep(interval_ms * 1000);
        }
        say("hold", held);
        usleep(hold_ms * 1000);
        say("exit", held);
        return 0;
}
