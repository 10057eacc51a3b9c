/* SPDX-License-Identifier: MIT */
/*
 * The generator of the single-process personalities (llama-server, SGLang):
 * the token scheduler in the server's own event loop, with the per-request
 * faults applied in front of it (crash-after and friends kill the whole
 * server, since there is no separate engine process).
 */
#include "sim.h"

struct sim_inproc {
        struct sim_generator gen; /* first: the generator casts back */
        struct sim_sched *sched;
        const struct sim_config *cfg;
        uint64_t requests;
        void (*crash_text)(enum sim_crash kind);
        void *memory_hog;
};

static int inproc_submit(struct sim_generator *g, const struct sim_gen_params *p,
                         const struct sim_gen_cb *cb, void *userdata, uint64_t *ret_id)
{
        struct sim_inproc *ip = (struct sim_inproc *)g;
        struct sim_generator *inner = sim_sched_generator(ip->sched);
        enum sim_crash crash = sim_faults_on_request(&ip->cfg->faults, ++ip->requests);

        if (crash == SIM_CRASH_HANG)
                sim_sched_wedge(ip->sched);
        else if (crash != SIM_CRASH_NONE) {
                ip->crash_text(crash);
                sim_crash_die(crash);
        }
        if (sim_fault_on(&ip->cfg->faults, SIM_FAULT_MEMORY_GROWTH)) {
                size_t bytes = (size_t)ip->cfg->faults.value[SIM_FAULT_MEMORY_GROWTH] * 1024 * 1024;
                void **chunk = xmalloc(bytes);
                memset(chunk, 0xa5, bytes);
                chunk[0] = ip->memory_hog; /* chained: reachable, never freed */
                ip->memory_hog = chunk;
        }
        return inner->submit(inner, p, cb, userdata, ret_id);
}

static void inproc_abort(struct sim_generator *g, uint64_t id)
{
        struct sim_inproc *ip = (struct sim_inproc *)g;
        struct sim_generator *inner = sim_sched_generator(ip->sched);

        inner->abort(inner, id);
}

struct sim_inproc *sim_inproc_new(struct event_base *base, const struct sim_config *c, double speed,
                                  void (*crash_text)(enum sim_crash kind))
{
        struct sim_inproc *ip = xcalloc(1, sizeof(*ip));

        ip->gen = (struct sim_generator){inproc_submit, inproc_abort};
        ip->sched = sim_sched_new(base, c, speed);
        ip->cfg = c;
        ip->crash_text = crash_text;
        return ip;
}

struct sim_inproc *sim_inproc_free(struct sim_inproc *ip)
{
        if (!ip)
                return NULL;
        sim_sched_free(ip->sched);
        while (ip->memory_hog) {
                void **chunk = ip->memory_hog;
                ip->memory_hog = chunk[0];
                free(chunk);
        }
        free(ip);
        return NULL;
}

struct sim_generator *sim_inproc_generator(struct sim_inproc *ip)
{
        return &ip->gen;
}

void sim_inproc_stats(const struct sim_inproc *ip, struct sim_sched_stats *ret)
{
        sim_sched_get_stats(ip->sched, ret);
}
