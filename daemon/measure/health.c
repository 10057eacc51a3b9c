/* SPDX-License-Identifier: MIT */
/* The GPU part of the health gate between runs: a fresh sample, the GPU readable, memory back to idle. */
#include "health.h"
#include "log.h"
#include "matrix.h"
#include "sampler.h"

#include <inttypes.h>

struct mx_health {
        struct mx_daemon *d;
        struct mx_sampler *sampler; /* NULL: it could not be made (broken says why) */
        char *broken;
        bool in_flight;   /* a sample was asked for and has not come */
        bool fresh;       /* the last sample came after the gate asked; not yet judged */
        bool gpu_seen;    /* a GPU source has answered once: from then on it must keep answering */
        int64_t idle_mem; /* the lowest memory figure of a GPU sample; -1: none yet */
        char *failing;    /* why the last judged sample failed; said while the next one comes */
        struct mx_sample last;
};

static void sample_cb(struct mx_sampler *s, const struct mx_sample *sample, void *ud)
{
        struct mx_health *h = ud;

        (void)s;
        log_debug("health gate: sample from %s, gpu_ok %d, memory %" PRId64,
                  mx_sample_source_to_string(sample->source), sample->gpu_ok, sample->mem_used);
        h->last = *sample;
        h->in_flight = false;
        h->fresh = true;
        if (sample->gpu_ok && sample->source != MX_SAMPLE_SOURCE_PROC) {
                h->gpu_seen = true;
                if (sample->mem_used >= 0 && (h->idle_mem < 0 || sample->mem_used < h->idle_mem))
                        h->idle_mem = sample->mem_used;
        }
}

int mx_health_new(struct mx_daemon *d, struct mx_health **ret)
{
        struct mx_health *h = xcalloc(1, sizeof(*h));
        struct mx_sampler_opts o = {.nvml_path = d->cfg.nvml_library};
        _cleanup_free_ char *err = NULL;
        int r;

        h->d = d;
        h->idle_mem = -1;
        o.source =
                d->cfg.gpu_source ? mx_sample_source_from_string(d->cfg.gpu_source) : MX_SAMPLE_SOURCE_AUTO;
        r = mx_sampler_new(d->base, d->reaper, &o, sample_cb, h, &h->sampler, &err);
        if (r < 0) {
                /* A source the settings insist on is missing: every gate fails until it is fixed. */
                h->broken = xasprintf("the GPU cannot be read (gpu_source %s): %s", strna(d->cfg.gpu_source),
                                      strna(err));
                log_warning("health gate: %s", h->broken);
        } else if (mx_sampler_request(h->sampler) >= 0) {
                h->in_flight = true; /* the first idle level, before any run */
        }
        *ret = h;
        return 0;
}

struct mx_health *mx_health_free(struct mx_health *h)
{
        if (!h)
                return NULL;
        mx_sampler_free(h->sampler);
        free(h->broken);
        free(h->failing);
        free(h);
        return NULL;
}

static void *mfree(void *p)
{
        free(p);
        return NULL;
}

static char *gib(int64_t bytes)
{
        return xasprintf("%.2f GiB", (double)bytes / (1024.0 * 1024 * 1024));
}

/* The memory judgement of a fresh GPU sample; 0 or -EAGAIN with the reason. */
static int judge_memory(struct mx_health *h, char **reason)
{
        const struct mx_sample *s = &h->last;
        int64_t tol_mb = h->d->matrix ? h->d->matrix->health_memory_tolerance_mb
                                      : MX_MATRIX_HEALTH_MEMORY_TOLERANCE_MB;
        _cleanup_free_ char *used = NULL, *idle = NULL;

        if (s->mem_used < 0 || h->idle_mem < 0 || s->mem_used - h->idle_mem <= tol_mb * 1024 * 1024)
                return 0;
        used = gib(s->mem_used);
        idle = gib(h->idle_mem);
        return mx_reterr(reason, -EAGAIN,
                         "%s %s in use (%s), %" PRId64 " MiB above the idle level %s (tolerance %" PRId64
                         " MiB): something of an earlier run may still hold it",
                         s->unified ? "system memory (unified-memory GPU)" : "GPU memory", used,
                         mx_sample_source_to_string(s->source), (s->mem_used - h->idle_mem) / (1024 * 1024),
                         idle, tol_mb);
}

/* A fresh sample: 0, or -EAGAIN with the reason. */
static int judge(struct mx_health *h, char **reason)
{
        if (!h->gpu_seen)
                return 0; /* no GPU source on this machine: the process checks are the gate */
        if (!h->last.gpu_ok || h->last.source == MX_SAMPLE_SOURCE_PROC)
                return mx_reterr(reason, -EAGAIN, "the GPU cannot be read: %s",
                                 h->last.error[0] ? h->last.error : "no answer");
        return judge_memory(h, reason);
}

int mx_health_check(void *ud, char **reason)
{
        struct mx_health *h = ud;
        int r;

        if (h->broken)
                return mx_reterr(reason, -EAGAIN, "%s", h->broken);
        if (!h->fresh && !h->in_flight && mx_sampler_request(h->sampler) >= 0)
                h->in_flight = !h->fresh; /* NVML may answer at once */
        if (!h->fresh)
                return h->failing ? mx_reterr(reason, -EAGAIN, "%s", h->failing)
                                  : mx_reterr(reason, -EINPROGRESS, "no sample of the GPU came");
        h->fresh = false; /* each gate judges a sample taken for it */
        h->failing = mfree(h->failing);
        r = judge(h, &h->failing);
        if (r < 0)
                return mx_reterr(reason, r, "%s", h->failing);
        return 0;
}
