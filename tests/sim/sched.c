/* SPDX-License-Identifier: MIT */
/*
 * The token scheduler: continuous batching on one step timer. Up to
 * --max-num-seqs sequences run (the rest wait, as vLLM's "Waiting: N reqs"),
 * each first spends a prefill time proportional to its prompt, then gets one
 * token per decode step (1 + accepted drafts with speculative decoding). A
 * step lasts MXSIM_TOKEN_MS divided by the configuration's speed, so a faster
 * backend shows up as a faster server.
 *
 * Tokens come from vocab.c's sampler, so they depend only on the sequence key
 * and position, never on timing or batching.
 *
 * With an exact schedule (--mxsim-decode-tps, --mxsim-prefill-tps,
 * --mxsim-first-token-ms, --mxsim-jitter-ms) a sequence that arrives at t_a
 * and is admitted at once is ready at t_a + first_token_ms + prompt /
 * prefill_tps, its first token comes from the first step due at or after that,
 * and steps follow on a fixed timeline 1/decode_tps apart; each step is due
 * a pseudo-random [0, jitter_ms) late, which never shifts the timeline. Every
 * token carries the time its step was due (sim_token.sched_us).
 */
#include "sim.h"

#include <event2/event.h>
#include <math.h>

/* Decode runs ~160x slower per token than prefill on GB10 (pp2048 ~4800 t/s, tg ~29 t/s). */
#define PREFILL_SPEEDUP 160.0
/* Natural end of text: EOS somewhere in [EOS_MIN, EOS_MIN + EOS_SPAN) unless ignore_eos (or --mxsim-eos-at). */
#define EOS_MIN 512
#define EOS_SPAN 1536

struct seq {
        struct seq *next;
        uint64_t id;
        struct sim_gen_params p;
        const struct sim_gen_cb *cb;
        void *userdata;
        int64_t pos;      /* tokens generated so far */
        int64_t eos_at;   /* position of the natural EOS */
        int64_t ready_us; /* end of prefill */
        int64_t arrival_us; /* when the request arrived (the API server's clock reading) */
        bool waited;        /* found no room at its first admission: prefill starts when admitted */
        uint64_t steps;   /* decode steps this sequence took part in */
        bool running;
        bool gone; /* finished or aborted; freed after the current step */
};

struct sim_sched {
        struct sim_generator gen; /* first: sim_sched_generator() casts back */
        struct event_base *base;
        const struct sim_config *cfg;
        struct event *step_ev;
        double step_ms;
        struct seq *seqs; /* arrival order */
        uint64_t next_id;
        bool wedged, in_step, armed;
        int64_t due_us;     /* when the armed (or running) step was due, jitter included */
        int64_t nominal_us; /* the same on the fixed timeline, before jitter */
        struct sim_sched_stats st;
};

static struct sim_sched *from_gen(struct sim_generator *g)
{
        return (struct sim_sched *)g;
}

static void seq_unlink_gone(struct sim_sched *s)
{
        struct seq **pp = &s->seqs;

        while (*pp) {
                struct seq *q = *pp;
                if (q->gone) {
                        *pp = q->next;
                        free(q);
                } else
                        pp = &q->next;
        }
}

/* How late step number k is due under --mxsim-jitter-ms: [0, jitter) ms, the same in every run. */
static int64_t jitter_us(const struct sim_sched *s, uint64_t k)
{
        uint64_t x = sim_mix(UINT64_C(0x6a09e667f3bcc909), k);

        if (s->cfg->jitter_ms <= 0)
                return 0;
        return (int64_t)((double)(x >> 11) / 9007199254740992.0 * s->cfg->jitter_ms * 1000.0);
}

/* Run the next step at monotonic time nominal_us plus its jitter (now if that has passed). */
static void arm_at(struct sim_sched *s, int64_t nominal_us)
{
        int64_t now = mx_now_mono_us(), due_us = nominal_us + jitter_us(s, s->st.steps);
        struct timeval tv = sim_timeval(due_us > now ? (double)(due_us - now) / 1e6 : 0);

        if (s->wedged)
                return;
        s->nominal_us = nominal_us;
        s->due_us = due_us;
        evtimer_add(s->step_ev, &tv);
        s->armed = true;
}

/* Move waiting sequences into the running batch while there is room. */
static void admit(struct sim_sched *s, int64_t now)
{
        size_t running = 0;

        for (struct seq *q = s->seqs; q; q = q->next)
                if (!q->gone && q->running)
                        running++;
        for (struct seq *q = s->seqs; q; q = q->next) {
                int64_t start;
                double prefill_us;

                if (q->gone || q->running)
                        continue;
                if (running >= (size_t)s->cfg->max_num_seqs) {
                        q->waited = true;
                        continue;
                }
                q->running = true;
                start = q->waited ? now : MX_MIN(q->arrival_us, now);
                prefill_us = s->cfg->prefill_tps > 0
                                     ? (double)q->p.prompt_tokens * 1e6 / s->cfg->prefill_tps
                                     : (double)q->p.prompt_tokens * s->step_ms * 1000.0 / PREFILL_SPEEDUP;
                q->ready_us = start + (int64_t)(s->cfg->first_token_ms * 1000.0 + prefill_us);
                s->st.prefills++;
                s->st.prompt_tokens += (uint64_t)q->p.prompt_tokens;
                running++;
        }
}

/* Drafts accepted this step (0..k), deterministic per sequence and step. */
static int spec_accepted(struct sim_sched *s, struct seq *q)
{
        int k = s->cfg->spec.num_tokens, a = 0;
        bool fixed = s->cfg->spec.acceptance >= 0;
        double p = fixed ? s->cfg->spec.accept_p : 0.72;

        for (; a < k; a++) {
                uint64_t x = sim_mix(q->p.key ^ 0x5bd1e995, q->steps * 64 + (uint64_t)a);
                if ((double)(x >> 11) / 9007199254740992.0 >= p)
                        break;
                if (!fixed)
                        p *= 0.86;
        }
        s->st.spec_drafts++;
        s->st.spec_draft_tokens += (uint64_t)k;
        s->st.spec_accepted += (uint64_t)a;
        for (int i = 0; i < a && i < SIM_SPEC_TOKENS_MAX; i++)
                s->st.spec_accepted_pos[i]++;
        return a;
}

static bool is_stop_id(const struct sim_gen_params *p, int64_t id)
{
        for (size_t i = 0; i < p->n_stop_ids; i++)
                if (p->stop_ids[i] == id)
                        return true;
        return false;
}

/*
 * The last token of the model's turn: its natural end (<|return|>) where min_tokens does not mask the
 * stop tokens and it comes before the limit, else the limit's last token.
 */
static int64_t turn_end(const struct seq *q)
{
        if (q->eos_at >= q->p.min_tokens && q->eos_at < q->p.max_tokens)
                return q->eos_at;
        return q->p.max_tokens - 1;
}

/* What token pos of the sequence is to the output parser (sim.h: the Harmony layout). */
static enum sim_part part_at(const struct sim_sched *s, const struct seq *q, int64_t pos)
{
        int64_t r = q->p.reasoning_tokens, h = SIM_HARMONY_HEADER;

        if (!q->p.chat)
                return SIM_PART_CONTENT;
        if (!s->cfg->harmony)
                return pos < r ? SIM_PART_REASONING : SIM_PART_CONTENT;
        if (pos < h || pos > turn_end(q) - SIM_HARMONY_END)
                return SIM_PART_CONTROL;
        if (pos < h + r)
                return SIM_PART_REASONING;
        if (r > 0 && pos < h + r + SIM_HARMONY_SWITCH)
                return SIM_PART_CONTROL;
        return SIM_PART_CONTENT;
}

/*
 * A Harmony control token's id: the header <|channel|> analysis <|message|>, then (switch and turn end)
 * <|end|> <|start|> assistant <|channel|> final <|message|>; the role and channel names are words.
 */
static void control_token(const struct sim_sched *s, const struct seq *q, int64_t pos, struct sim_token *t)
{
        static const int64_t header[SIM_HARMONY_HEADER] = {200005, -1, 200008};
        static const int64_t sw[SIM_HARMONY_SWITCH] = {200007, 200006, -1, 200005, -1, 200008};
        int64_t k = pos < SIM_HARMONY_HEADER ? header[pos] : sw[pos % SIM_HARMONY_SWITCH];

        if (k < 0)
                return; /* a word: the sampled one */
        t->id = k;
        if (t->n_top > 0)
                t->top_id[0] = k;
}

/* One decode step of one sequence: produce its tokens, deliver them, finish it if due. */
static void step_seq(struct sim_sched *s, struct seq *q)
{
        struct sim_token toks[1 + SIM_SPEC_TOKENS_MAX];
        int want = 1 + (s->cfg->spec.method ? spec_accepted(s, q) : 0);
        size_t n = 0;
        bool finished = false;
        enum sim_finish fin = SIM_FINISH_LENGTH;
        int64_t stop_token = -1;

        q->steps++;
        while ((int)n < want && !finished) {
                struct sim_token *t = &toks[n++];
                enum sim_part part = part_at(s, q, q->pos);
                /* the first token of the reasoning and of the content has no leading space */
                bool spaced = !(q->p.chat && part != SIM_PART_CONTROL &&
                                (q->pos == 0 || part_at(s, q, q->pos - 1) != part));
                bool harmony_chat = s->cfg->harmony && q->p.chat;

                sim_sample(q->p.key, q->pos, spaced, q->p.top_logprobs, t);
                t->part = part;
                if (part == SIM_PART_CONTROL)
                        control_token(s, q, q->pos, t);
                /* a step that fired late may find a prefill done after it was due: not before ready */
                t->sched_us = MX_MAX(s->due_us, q->ready_us);
                /*
                 * The natural end. With ignore_eos the Harmony model still ends its turn there (<|return|>)
                 * and goes on: vLLM's parser fails on the next token (vllm#50690, completion.c).
                 */
                if ((!q->p.ignore_eos || harmony_chat) && q->pos >= q->p.min_tokens && q->pos == q->eos_at) {
                        t->id = q->p.chat ? SIM_TOKEN_RETURN : SIM_TOKEN_ENDOFTEXT;
                        if (t->n_top > 0)
                                t->top_id[0] = t->id;
                        if (!q->p.ignore_eos) {
                                finished = true;
                                fin = SIM_FINISH_STOP;
                        }
                } else if (q->pos + 1 > q->p.min_tokens && is_stop_id(&q->p, t->id)) {
                        finished = true;
                        fin = SIM_FINISH_STOP;
                        stop_token = t->id;
                }
                q->pos++;
                if (q->pos >= q->p.max_tokens)
                        finished = true;
        }
        s->st.output_tokens += n;
        q->cb->tokens(q->userdata, toks, n);
        if (q->gone) /* aborted from the callback (a stop string) */
                return;
        if (finished) {
                q->gone = true;
                q->cb->done(q->userdata, fin, stop_token);
        }
}

/*
 * When the next step is due: one step after the last decode step (on a fixed
 * timeline, so timer latency does not slow decoding down), or when the first
 * prefill ends if nothing decodes yet.
 */
static void rearm(struct sim_sched *s, bool decoded)
{
        int64_t now = mx_now_mono_us(), next_ready = INT64_MAX;
        int64_t step_us = (int64_t)llround(s->step_ms * 1000.0);

        admit(s, now);
        for (struct seq *q = s->seqs; q; q = q->next) {
                if (q->gone || !q->running)
                        continue;
                if (q->ready_us <= now) {
                        arm_at(s, decoded ? MX_MAX(s->nominal_us + step_us, now - step_us) : now + step_us);
                        return;
                }
                next_ready = MX_MIN(next_ready, q->ready_us);
        }
        if (next_ready != INT64_MAX)
                arm_at(s, MX_MIN(now + step_us, next_ready));
}

static void step_cb(evutil_socket_t fd, short what, void *arg)
{
        struct sim_sched *s = arg;
        int64_t now = mx_now_mono_us();
        bool decoded = false;

        s->armed = false;
        if (s->wedged)
                return;
        s->in_step = true;
        admit(s, now);
        for (struct seq *q = s->seqs; q; q = q->next) {
                if (q->gone || !q->running || q->ready_us > now)
                        continue;
                step_seq(s, q);
                decoded = true;
        }
        if (decoded)
                s->st.steps++;
        s->in_step = false;
        seq_unlink_gone(s);
        rearm(s, decoded);
}

static int sched_submit(struct sim_generator *g, const struct sim_gen_params *p, const struct sim_gen_cb *cb,
                        void *userdata, uint64_t *ret_id)
{
        struct sim_sched *s = from_gen(g);
        struct seq *q = xcalloc(1, sizeof(*q)), **tail = &s->seqs;

        q->id = ++s->next_id;
        q->p = *p;
        q->cb = cb;
        q->userdata = userdata;
        q->eos_at = s->cfg->eos_at >= 0 ? s->cfg->eos_at : EOS_MIN + (int64_t)(sim_mix(p->key, 0xe05) % EOS_SPAN);
        q->arrival_us = p->arrival_us > 0 ? p->arrival_us : mx_now_mono_us();
        while (*tail)
                tail = &(*tail)->next;
        *tail = q;
        if (!s->armed && !s->in_step)
                arm_at(s, mx_now_mono_us());
        *ret_id = q->id;
        return 0;
}

static void sched_abort(struct sim_generator *g, uint64_t id)
{
        struct sim_sched *s = from_gen(g);

        for (struct seq *q = s->seqs; q; q = q->next)
                if (q->id == id)
                        q->gone = true;
        if (!s->in_step)
                seq_unlink_gone(s);
}

struct sim_sched *sim_sched_new(struct event_base *base, const struct sim_config *c, double speed)
{
        struct sim_sched *s = xcalloc(1, sizeof(*s));

        s->gen = (struct sim_generator){sched_submit, sched_abort};
        s->base = base;
        s->cfg = c;
        s->step_ms = c->decode_tps > 0 ? 1000.0 / c->decode_tps : c->token_ms / (speed > 0 ? speed : 1.0);
        s->step_ev = evtimer_new(base, step_cb, s);
        if (!s->step_ev)
                mx_die("evtimer_new failed");
        return s;
}

struct sim_sched *sim_sched_free(struct sim_sched *s)
{
        if (!s)
                return NULL;
        for (struct seq *q = s->seqs; q; q = q->next)
                q->gone = true;
        seq_unlink_gone(s);
        event_free(s->step_ev);
        free(s);
        return NULL;
}

struct sim_generator *sim_sched_generator(struct sim_sched *s)
{
        return &s->gen;
}

void sim_sched_wedge(struct sim_sched *s)
{
        s->wedged = true;
        evtimer_del(s->step_ev);
        s->armed = false;
}

void sim_sched_get_stats(const struct sim_sched *s, struct sim_sched_stats *ret)
{
        *ret = s->st;
        ret->running = ret->waiting = 0;
        for (const struct seq *q = s->seqs; q; q = q->next) {
                if (q->gone)
                        continue;
                if (q->running)
                        ret->running++;
                else
                        ret->waiting++;
        }
}
