/* SPDX-License-Identifier: MIT */
/*
 * The API server's end of the socketpair to the engine: a sim_generator that
 * forwards each request as one JSON line and turns the engine's "tok" and
 * "done" lines back into callbacks. When the engine dies (EOF), every request
 * in flight fails, which is how an engine crash becomes HTTP 500s.
 */
#include "sim.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <inttypes.h>

struct pending {
        struct pending *next;
        uint64_t id;
        const struct sim_gen_cb *cb;
        void *userdata;
};

struct sim_engine_client {
        struct sim_generator gen; /* first: the generator casts back */
        struct bufferevent *bev;
        const struct sim_engine_client_cb *cb;
        void *userdata;
        struct pending *pending;
        uint64_t next_id;
        bool ready, lost;
        struct sim_sched_stats stats;
};

static struct pending *pending_find(struct sim_engine_client *ec, uint64_t id)
{
        for (struct pending *p = ec->pending; p; p = p->next)
                if (p->id == id)
                        return p;
        return NULL;
}

static void pending_drop(struct sim_engine_client *ec, uint64_t id)
{
        for (struct pending **pp = &ec->pending; *pp; pp = &(*pp)->next)
                if ((*pp)->id == id) {
                        struct pending *p = *pp;
                        *pp = p->next;
                        free(p);
                        return;
                }
}

static void send_line(struct sim_engine_client *ec, json_t *v)
{
        _cleanup_free_ char *s = json_dumps(v, JSON_COMPACT);

        json_decref(v);
        if (!s)
                mx_die("json_dumps failed");
        if (ec->lost)
                return;
        bufferevent_write(ec->bev, s, strlen(s));
        bufferevent_write(ec->bev, "\n", 1);
}

static int ec_submit(struct sim_generator *g, const struct sim_gen_params *p, const struct sim_gen_cb *cb,
                     void *userdata, uint64_t *ret_id)
{
        struct sim_engine_client *ec = (struct sim_engine_client *)g;
        struct pending *q;
        char key[17];
        json_t *stop = json_array();

        if (ec->lost)
                return -ENOTCONN;
        for (size_t i = 0; i < p->n_stop_ids; i++)
                json_array_append_new(stop, json_integer(p->stop_ids[i]));
        snprintf(key, sizeof(key), "%016" PRIx64, p->key);
        q = xcalloc(1, sizeof(*q));
        q->id = ++ec->next_id;
        q->cb = cb;
        q->userdata = userdata;
        q->next = ec->pending;
        ec->pending = q;
        send_line(ec, json_pack("{s:s,s:I,s:s,s:I,s:I,s:I,s:I,s:b,s:b,s:i,s:o,s:I}", "op", "gen", "id",
                                (json_int_t)q->id, "key", key, "np", (json_int_t)p->prompt_tokens, "max",
                                (json_int_t)p->max_tokens, "min", (json_int_t)p->min_tokens, "rt",
                                (json_int_t)p->reasoning_tokens, "ign", p->ignore_eos, "chat", p->chat, "lp",
                                p->top_logprobs, "stop", stop, "arr", (json_int_t)p->arrival_us));
        *ret_id = q->id;
        return 0;
}

static void ec_abort(struct sim_generator *g, uint64_t id)
{
        struct sim_engine_client *ec = (struct sim_engine_client *)g;

        if (!pending_find(ec, id))
                return;
        pending_drop(ec, id);
        send_line(ec, json_pack("{s:s,s:I}", "op", "abort", "id", (json_int_t)id));
}

/* Decode a "tok" line into tokens for the request's callbacks. */
static void handle_tokens(struct sim_engine_client *ec, struct pending *p, json_t *arr, int64_t sched_us)
{
        struct sim_token toks[1 + SIM_SPEC_TOKENS_MAX];
        size_t n = 0, i;
        json_t *t;

        json_array_foreach(arr, i, t) {
                json_t *top = json_array_get(t, 2), *alt;
                size_t k;
                if (n >= ELEMENTSOF(toks))
                        break;
                toks[n] = (struct sim_token){
                        .id = json_integer_value(json_array_get(t, 0)),
                        .part = (enum sim_part)json_integer_value(json_array_get(t, 3)),
                        .logprob = json_number_value(json_array_get(t, 1)),
                        .sched_us = sched_us,
                };
                json_array_foreach(top, k, alt) {
                        if (k >= SIM_TOP_MAX)
                                break;
                        toks[n].top_id[k] = json_integer_value(json_array_get(alt, 0));
                        toks[n].top_lp[k] = json_number_value(json_array_get(alt, 1));
                        toks[n].n_top = (int)k + 1;
                }
                n++;
        }
        p->cb->tokens(p->userdata, toks, n);
}

/* Keep the engine's cumulative counters that come with every "done" line. */
static void update_stats(struct sim_engine_client *ec, json_t *st)
{
        json_t *pos = json_object_get(st, "pos"), *v;
        size_t i;

        if (!json_is_object(st))
                return;
        ec->stats.steps = (uint64_t)json_integer_value(json_object_get(st, "steps"));
        ec->stats.prefills = (uint64_t)json_integer_value(json_object_get(st, "prefills"));
        ec->stats.prompt_tokens = (uint64_t)json_integer_value(json_object_get(st, "prompt"));
        ec->stats.output_tokens = (uint64_t)json_integer_value(json_object_get(st, "output"));
        ec->stats.spec_drafts = (uint64_t)json_integer_value(json_object_get(st, "drafts"));
        ec->stats.spec_draft_tokens = (uint64_t)json_integer_value(json_object_get(st, "draft_tokens"));
        ec->stats.spec_accepted = (uint64_t)json_integer_value(json_object_get(st, "accepted"));
        json_array_foreach(pos, i, v) {
                if (i >= SIM_SPEC_TOKENS_MAX)
                        break;
                ec->stats.spec_accepted_pos[i] = (uint64_t)json_integer_value(v);
        }
}

void sim_engine_client_stats(const struct sim_engine_client *ec, struct sim_sched_stats *ret)
{
        *ret = ec->stats;
}

/* Dispatch one line from the engine. */
static void handle_line(struct sim_engine_client *ec, json_t *o)
{
        const char *op = json_string_value(json_object_get(o, "op"));
        uint64_t id = (uint64_t)json_integer_value(json_object_get(o, "id"));
        struct pending *p;

        if (streq_ptr(op, "ready")) {
                ec->ready = true;
                ec->cb->ready(ec->userdata);
                return;
        }
        p = pending_find(ec, id);
        if (!p)
                return; /* aborted meanwhile */
        if (streq_ptr(op, "tok"))
                handle_tokens(ec, p, json_object_get(o, "t"), json_integer_value(json_object_get(o, "at")));
        else if (streq_ptr(op, "done")) {
                update_stats(ec, json_object_get(o, "st"));
                const struct sim_gen_cb *cb = p->cb;
                void *ud = p->userdata;
                enum sim_finish fin = streq_ptr(json_string_value(json_object_get(o, "fin")), "stop")
                                              ? SIM_FINISH_STOP
                                              : SIM_FINISH_LENGTH;
                pending_drop(ec, id);
                cb->done(ud, fin, json_integer_value(json_object_get(o, "stop")));
        }
}

/* Every complete line the engine sent. */
static void read_cb(struct bufferevent *bev, void *arg)
{
        struct sim_engine_client *ec = arg;
        struct evbuffer *in = bufferevent_get_input(bev);
        char *line;
        size_t n;

        while (!ec->lost && (line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF))) {
                json_auto_t *o = json_loadb(line, n, 0, NULL);
                free(line);
                if (o)
                        handle_line(ec, o);
        }
}

/* EOF or error on the socketpair: the engine is gone. */
static void event_cb(struct bufferevent *bev, short what, void *arg)
{
        struct sim_engine_client *ec = arg;

        if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) || ec->lost)
                return;
        ec->lost = true;
        bufferevent_disable(ec->bev, EV_READ | EV_WRITE);
        ec->cb->lost(ec->userdata);
}

struct sim_engine_client *sim_engine_client_new(struct event_base *base, int fd,
                                                const struct sim_engine_client_cb *cb, void *userdata)
{
        struct sim_engine_client *ec = xcalloc(1, sizeof(*ec));

        ec->gen = (struct sim_generator){ec_submit, ec_abort};
        ec->cb = cb;
        ec->userdata = userdata;
        evutil_make_socket_nonblocking(fd);
        ec->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
        if (!ec->bev)
                mx_die("bufferevent_socket_new failed");
        bufferevent_setcb(ec->bev, read_cb, NULL, event_cb, ec);
        bufferevent_enable(ec->bev, EV_READ);
        return ec;
}

struct sim_engine_client *sim_engine_client_free(struct sim_engine_client *ec)
{
        if (!ec)
                return NULL;
        while (ec->pending)
                pending_drop(ec, ec->pending->id);
        bufferevent_free(ec->bev);
        free(ec);
        return NULL;
}

struct sim_generator *sim_engine_client_generator(struct sim_engine_client *ec)
{
        return &ec->gen;
}

/* Each request's failed callback runs after it left the list, so callbacks may abort others. */
size_t sim_engine_client_fail_all(struct sim_engine_client *ec)
{
        size_t n = 0;

        ec->lost = true;
        while (ec->pending) {
                struct pending *p = ec->pending;
                const struct sim_gen_cb *cb = p->cb;
                void *ud = p->userdata;
                ec->pending = p->next;
                free(p);
                if (cb->failed)
                        cb->failed(ud);
                n++;
        }
        return n;
}
