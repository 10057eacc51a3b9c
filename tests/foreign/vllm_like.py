#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A small OpenAI-compatible server with vLLM's documented habits and an exact token schedule.

Written from target-surfaces.md (section A) and vLLM's OpenAI server docs, independently of
tests/sim (mxsim), so that the product meets a server that does not share our simulator's blind
spots. Standard library only.

Timing is exact by construction: for every generation request, token i (0-based, gpt-oss header
tokens included) leaves the server at  t_recv + F + i*D  (F = --first-token-ms, D = --token-ms),
each chunk written and flushed on its own. The role-only first chunk of a chat stream goes out with
the first token (vLLM sends it in the same engine iteration) or, with --role-at request, as soon as
the request is parsed. A test computes the true TTFR/TTFT/TPOT/ITL/tg from that schedule; on a
loaded machine the sleeps overshoot it, so --timing-log records when each request's chunks really
left (and when they were due), and a test compares the client with those real times.

vLLM behaviour reproduced (see --help for the switches):
  - connection refused while "loading" (--load-s): the socket is bound and listened only after it;
  - GET /health (200, empty), /ping, /version, /v1/models (with max_model_len, owned_by "vllm"),
    /metrics (a few vllm: series), POST /tokenize {prompt|messages} -> {count, max_model_len,
    tokens, token_strs}, /detokenize;
  - chat stream: first chunk delta {"role": "assistant", "content": ""} (current vLLM;
    --role-content-omitted leaves "content" out, as older releases did), gpt-oss Harmony tokens
    that produce no chunk (--header-tokens at the start, --switch-tokens at the analysis -> final
    channel switch, --end-tokens at the turn's end: the last tokens of the request, of which only
    the very last sends a chunk, an empty delta with finish_reason), all counted in
    completion_tokens; reasoning streamed first in "reasoning" (newer) or "reasoning_content"
    (--reasoning-field), then content; stream_options.include_usage -> a final chunk with empty
    choices and usage; continuous_usage_stats ignored unless --continuous-usage (then every chunk
    carries the running usage, the role chunk completion_tokens 0); SSE comments possible
    (--sse-comments); data: [DONE];
  - gpt-oss chat with ignore_eos (--harmony-eos-error): when the model ends its Harmony turn
    (its natural end) before the token limit and min_tokens does not mask the stop tokens,
    vllm#50690: HTTP 500 "Unexpected token 200002 while expecting start token 200006", or,
    streamed, an error chunk and [DONE] without usage;
  - --api-key KEY (or VLLM_API_KEY): paths under /v1 answer 401 {"error": "Unauthorized"}
    without "Authorization: Bearer KEY"; /tokenize, /health, /metrics stay open;
  - prompt_logprobs with stream: rejected when > 0 or -1, 0 accepted; a prompt too long for the
    context: 400 with param "input_tokens" and vLLM's wording;
  - logprobs as vLLM V1 builds them: per position a dict whose first entry is the SAMPLED token,
    then the top-k by rank (the sampled one not repeated). Completions: {text_offset,
    token_logprobs, tokens, top_logprobs: [{token: logprob}]} with up to k+1 entries; chat:
    content[] = {token, logprob, bytes, top_logprobs: the dict's first k entries} -- so with
    temperature > 0 the list is not always sorted best first;
  - ignore_eos, max_tokens (completions default 16), max_completion_tokens (chat), min_tokens,
    seed determinism, cache_salt accepted, usage.prompt_tokens_details null unless
    --enable-prompt-tokens-details; 400s with vLLM's messages for the documented bad requests.
"""

import argparse
import hashlib
import http.server
import json
import math
import os
import random
import re
import signal
import socket
import socketserver
import sys
import threading
import time
import uuid

VOCAB = (
    "the of and to in is was that for it with as his on be at by had are but from or have an they which one "
    "you were her all she there would their we him been has when who will more no if out so said what up its "
    "about into than them can only other new some could time these two may then do first any my now such like "
    "our over man me even most made after also did many before must through back years where much your way "
    "well down should because each just those people how too little state good very make world still own see "
    "men work long get here between both life being under never day same another know while last might us "
    "great old year off come since against go came right used take three house light water night place hand "
    "city river road stone paper green small large early young open short high order point table window door "
    "field story music money power heart voice friend garden summer winter morning evening bridge harbor ship "
    "island forest mountain valley letter bottle keeper tower lamp storm wave shore sand cloud wind rain snow "
    "bright quiet gentle careful simple clear warm cold quick slow careful number answer question reason "
    "because therefore however although perhaps always often sometimes together alone inside outside above "
    "below across around behind beyond during until within without toward upon"
).split()
VOCAB = list(dict.fromkeys(VOCAB))  # distinct words: top_logprobs dict keys must not collide
N_ALT = 21  # candidates per position (vLLM allows top_logprobs up to 20)
TEMPLATE_SYSTEM = 14  # tokens of the chat template's fixed system block
TEMPLATE_PER_MESSAGE = 4
TEMPLATE_GEN_PROMPT = 3
EOS_ID = 200002
HEADER = ("<|channel|>", "analysis", "<|message|>")
SWITCH = ("<|end|>", "<|start|>", "assistant", "<|channel|>", "final", "<|message|>")
SILENT = ("header", "switch", "end")
OPTS = None
STATS = {"prompt": 0, "gen": 0, "running": 0, "success": 0, "lock": threading.Lock()}
CACHE = set()


def log(msg, level="INFO"):
    now = time.strftime("%m-%d %H:%M:%S")
    print(f"(APIServer pid={os.getpid()}) {level} {now} [vllm_like.py] {msg}", flush=True)


# ---- tokenizer: a word or a punctuation mark is one token ----

TOKEN_RE = re.compile(r"\w+|[^\w\s]")


def tok_id(piece):
    return 1000 + int.from_bytes(hashlib.blake2b(piece.encode(), digest_size=4).digest(), "little") % 190000


def tokenize_text(text):
    pieces = TOKEN_RE.findall(text)
    return [tok_id(p) for p in pieces], pieces


def chat_prompt_ids(messages, add_generation_prompt=True):
    ids = [1 + i for i in range(TEMPLATE_SYSTEM)]
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):  # [{"type": "text", "text": ...}]
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        ids += [20, 21, 22]
        ids += tokenize_text(content if isinstance(content, str) else "")[0]
        ids += [23]
    if add_generation_prompt:
        ids += [30, 31, 32]
    return ids


# ---- errors ----

class ApiError(Exception):
    def __init__(self, status, message, typ="BadRequestError", param=None):
        super().__init__(message)
        self.status, self.message, self.typ, self.param = status, message, typ, param

    def body(self):
        return {"error": {"message": self.message, "type": self.typ, "param": self.param, "code": self.status}}


def bad(msg, param=None):
    raise ApiError(400, msg, param=param)


# vllm#50690: what vLLM's Harmony parser raises when gpt-oss goes on after ending its turn (ignore_eos)
HARMONY_EOS_ERROR = "Unexpected token 200002 while expecting start token 200006"


class HarmonyEosError(Exception):
    pass


# ---- the "model": a context-dependent distribution, sampled with the request's generator ----

class Generation:
    def __init__(self, prompt_ids, req, chat):
        self.chat = chat
        self.temperature = req.get("temperature")
        if self.temperature is None:
            self.temperature = 1.0  # OpenAI default (no generation_config here)
        seed = req.get("seed")
        if seed is not None:
            self.sampler = random.Random(f"seed:{seed}")
        elif self.temperature == 0:
            self.sampler = random.Random(0)
        else:
            self.sampler = random.Random(os.urandom(16))
        self.ctx = 1469598103934665603
        for t in prompt_ids:
            self.ctx = ((self.ctx ^ t) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
        # where the model would end the answer by itself (EOS), when not ignored
        self.natural = 24 + self.ctx % 40

    def step(self):
        """One position: (word, logprob, [(word, logprob)] sorted best first, rank of the sampled one)."""
        r = random.Random(self.ctx)
        words = r.sample(VOCAB, N_ALT)
        logits = [r.gauss(0.0, 2.5) for _ in words]
        m = max(logits)
        z = math.log(sum(math.exp(x - m) for x in logits)) + m
        alts = sorted(((w, x - z) for w, x in zip(words, logits)), key=lambda a: -a[1])
        if self.temperature == 0:
            k = 0
        else:
            scaled = [lp / self.temperature for _, lp in alts]
            mm = max(scaled)
            weights = [math.exp(s - mm) for s in scaled]
            u = self.sampler.random() * sum(weights)
            k = 0
            while k < len(weights) - 1 and u > weights[k]:
                u -= weights[k]
                k += 1
        word, lp = alts[k]
        self.ctx = ((self.ctx ^ tok_id(word)) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
        return word, lp, alts, k + 1


def logprob_dict(word, lp, alts, k):
    """vLLM V1's per-position dict: the sampled token first, then the top-k by rank (no repeat)."""
    d = {word: max(lp, -9999.0)}
    for w, a in alts[:k]:
        if w not in d:
            d[w] = max(a, -9999.0)
    return d


# ---- request parsing shared by both endpoints ----

def common_params(req, chat, n_prompt):
    stream = bool(req.get("stream", False))
    so = req.get("stream_options")
    if so is not None and not stream:
        bad("Stream options can only be defined when `stream=True`.")
    plp = req.get("prompt_logprobs")
    if plp is not None and stream and plp != 0:
        # vLLM's check_logprobs: 0 (the prompt's own tokens only) is accepted with stream
        bad("`prompt_logprobs` are not available when `stream=True`.", "prompt_logprobs")
    model = req.get("model")
    if model is not None and model not in (OPTS.served_model_name, OPTS.model):
        raise ApiError(404, f"The model `{model}` does not exist.", "NotFoundError")
    if chat:
        mt = req.get("max_completion_tokens")
        if mt is None:
            mt = req.get("max_tokens")
        if mt is None:
            mt = OPTS.max_model_len - n_prompt
    else:
        mt = req.get("max_tokens")
        if mt is None:
            mt = 16
    if not isinstance(mt, int) or isinstance(mt, bool) or mt < (0 if not chat else 1):
        bad(f"max_tokens must be at least 1, got {mt}.")
    if n_prompt + mt > OPTS.max_model_len:
        # vllm/renderers/params.py (target-surfaces.md A5 Errors)
        bad(f"You passed {n_prompt} input tokens and requested {mt} output tokens. However, the model's "
            f"context length is only {OPTS.max_model_len} tokens, resulting in a maximum input length of "
            f"{max(0, OPTS.max_model_len - mt)} tokens. Please reduce the length of the input prompt. "
            f"(parameter=input_tokens, value={n_prompt})", "input_tokens")
    t = req.get("temperature")
    if t is not None and (not isinstance(t, (int, float)) or t < 0):
        bad("temperature must be non-negative")
    for name in ("min_tokens",):
        v = req.get(name, 0)
        if not isinstance(v, int) or v < 0:
            bad(f"{name} must be greater than or equal to 0")
    salt = req.get("cache_salt")
    if salt is not None and (not isinstance(salt, str) or not salt):
        bad("Parameter 'cache_salt' must be a non-empty string if provided.")
    so = so or {}
    return {
        "stream": stream,
        "include_usage": bool(so.get("include_usage", False)),
        "continuous": bool(so.get("continuous_usage_stats", False)) and OPTS.continuous_usage,
        "max_tokens": mt,
        "ignore_eos": bool(req.get("ignore_eos", False)),
        "min_tokens": req.get("min_tokens", 0) or 0,
        "salt": salt,
    }


def cached_tokens(prompt_ids, salt):
    """vLLM's prefix cache in blocks of 16 tokens, the salt mixed into the first block's hash."""
    if OPTS.no_enable_prefix_caching:
        return 0
    h, hit, n = hashlib.blake2b(str(salt).encode(), digest_size=8), True, 0
    full = len(prompt_ids) // 16
    for b in range(full):
        h.update(repr(prompt_ids[b * 16:(b + 1) * 16]).encode())
        key = h.copy().hexdigest()
        if hit and key in CACHE:
            n += 16
        else:
            hit = False
        if len(CACHE) < 1000000:
            CACHE.add(key)
    # the last block is always recomputed (vLLM never serves a whole prompt from the cache)
    return min(n, max(0, (len(prompt_ids) - 1) // 16 * 16))


def usage_obj(n_prompt, n_gen, cached):
    u = {"prompt_tokens": n_prompt, "total_tokens": n_prompt + n_gen, "completion_tokens": n_gen,
         "prompt_tokens_details": None}
    if OPTS.enable_prompt_tokens_details:
        u["prompt_tokens_details"] = {"cached_tokens": cached}
    return u


# ---- HTTP ----

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sys_version = ""

    def setup(self):
        super().setup()
        # uvicorn sets TCP_NODELAY (bench-methods.md 4.9): without it Nagle + delayed ACK add 40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def parse_request(self):
        # the request's arrival: its line is read (vLLM stamps arrival_time when the request comes in)
        self.t_arrive = time.monotonic()
        return super().parse_request()

    def log_message(self, fmt, *args):
        if not OPTS.disable_log_requests:
            log(f'{self.client_address[0]}:{self.client_address[1]} - "{self.command} {self.path}" '
                + (args[1] if len(args) > 1 else ""))

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def read_json(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n > 0 else b""
        try:
            obj = json.loads(raw or b"null")
        except ValueError as e:
            raise ApiError(400, f"JSON decode error: {e}")
        if not isinstance(obj, dict):
            bad("the request body must be a JSON object")
        return obj

    def authorized(self, path):
        """vLLM's --api-key middleware: /v1, /v2, /inference, /cohere need the bearer token; 401 otherwise."""
        if not OPTS.api_key or not path.startswith(("/v1", "/v2", "/inference", "/cohere")):
            return True
        if self.headers.get("Authorization", "") == f"Bearer {OPTS.api_key}":
            return True
        if self.command == "POST":
            self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_json(401, {"error": "Unauthorized"})
        return False

    def do_GET(self):
        path = self.path.split("?")[0]
        if not self.authorized(path):
            return
        if path in ("/health", "/ping"):
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()
        elif path == "/version":
            self.send_json(200, {"version": OPTS.version})
        elif path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{
                "id": OPTS.served_model_name, "object": "model", "created": int(time.time()),
                "owned_by": "vllm", "root": OPTS.model, "parent": None, "max_model_len": OPTS.max_model_len,
                "permission": [{"id": f"modelperm-{uuid.uuid4().hex}", "object": "model_permission",
                                "created": int(time.time()), "allow_create_engine": False,
                                "allow_sampling": True, "allow_logprobs": True, "allow_search_indices": False,
                                "allow_view": True, "allow_fine_tuning": False, "organization": "*",
                                "group": None, "is_blocking": False}]}]})
        elif path == "/metrics":
            lab = f'{{engine="0",model_name="{OPTS.served_model_name}"}}'
            with STATS["lock"]:
                text = (f"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{lab} "
                        f"{STATS['running']}.0\n# TYPE vllm:num_requests_waiting gauge\n"
                        f"vllm:num_requests_waiting{lab} 0.0\n# TYPE vllm:kv_cache_usage_perc gauge\n"
                        f"vllm:kv_cache_usage_perc{lab} 0.0\n# TYPE vllm:prompt_tokens_total counter\n"
                        f"vllm:prompt_tokens_total{lab} {STATS['prompt']}.0\n"
                        f"# TYPE vllm:generation_tokens_total counter\n"
                        f"vllm:generation_tokens_total{lab} {STATS['gen']}.0\n")
            data = text.encode()
            self.send_response(200)
            self.send_header("content-type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        else:
            self.send_json(404, {"detail": "Not Found"})

    def do_POST(self):
        path = self.path.split("?")[0]
        routes = {"/v1/completions": self.completions, "/v1/chat/completions": self.chat,
                  "/tokenize": self.tokenize, "/detokenize": self.detokenize}
        if path in ("/health", "/ping"):
            return self.do_GET()
        if not self.authorized(path):
            return
        fn = routes.get(path)
        try:
            if fn is None:
                # drain the body, keep the connection usable
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_json(404, {"detail": "Not Found"})
                return
            fn(self.read_json())
        except ApiError as e:
            self.send_json(e.status, e.body())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # -- tokenizer endpoints --

    def tokenize(self, req):
        if "messages" in req:
            ids = chat_prompt_ids(req["messages"], req.get("add_generation_prompt", True))
            strs = None
        elif isinstance(req.get("prompt"), str):
            ids, strs = tokenize_text(req["prompt"])
            if req.get("add_special_tokens", True):
                ids, strs = [0] + ids, ["<|startoftext|>"] + strs
        else:
            bad("Field required: prompt or messages")
        self.send_json(200, {"count": len(ids), "max_model_len": OPTS.max_model_len, "tokens": ids,
                             "token_strs": strs if req.get("return_token_strs") else None})

    def detokenize(self, req):
        toks = req.get("tokens")
        if not isinstance(toks, list):
            bad("Field required: tokens")
        self.send_json(200, {"prompt": " ".join(f"t{t}" for t in toks)})

    # -- streaming plumbing --

    def start_stream(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def chunk(self, text):
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def event(self, obj):
        # stamped before the write: a client cannot read a chunk earlier than this
        t = (time.monotonic() - self.t_recv) * 1000.0 if getattr(self, "sent", None) is not None else None
        self.chunk("data: " + json.dumps(obj, ensure_ascii=False) + "\n\n")
        if t is None:
            return
        sent, due = self.sent, self.due
        choices = obj.get("choices") or []
        if sent["first"] is None:  # the first data event (an SSE comment is none)
            sent["first"] = t
        if choices:  # a token's chunk (the usage-only chunk has none)
            sent["last"], sent["last_due"] = t, due
        if sent["text"] is None and any(c.get("text") or (c.get("delta") or {}).get("content") or
                                        (c.get("delta") or {}).get(OPTS.reasoning_field) for c in choices):
            sent["text"], sent["text_due"] = t, due

    def end_stream(self):
        self.chunk("data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # -- generation --

    def schedule(self, t_recv, i):
        """Sleep until token i's time on the schedule."""
        due = t_recv + OPTS.first_token_ms / 1000.0 + i * OPTS.token_ms / 1000.0
        while True:
            left = due - time.monotonic()
            if left <= 0:
                self.due = (due - t_recv) * 1000.0
                return
            time.sleep(left if left > 0.002 else left / 2 if left > 0.0002 else 0)

    def run_tokens(self, gen, p, n_header, n_reasoning, chat=False):
        """Yield (index, kind, word, logprob, alts, rank, finish) per generated token on the schedule;
        kind: header, switch, end (Harmony tokens without text), reasoning, content, eos (no text).
        Raises HarmonyEosError where vLLM's parser fails (vllm#50690)."""
        limit = p["max_tokens"]
        n_switch = OPTS.switch_tokens if chat and n_reasoning > 0 else 0
        n_end = OPTS.end_tokens if chat else 0
        for i in range(limit):
            self.schedule(self.t_recv, i)
            if (not p["ignore_eos"] and i >= max(gen.natural, p["min_tokens"]) and i >= n_header):
                yield i, "eos", "", 0.0, [], 1, "stop"
                return
            # the model ended its turn at gen.natural (min_tokens did not mask <|return|> there) and goes on
            if (chat and OPTS.harmony_eos_error and p["ignore_eos"] and i == gen.natural + 1
                    and p["min_tokens"] <= gen.natural):
                raise HarmonyEosError(HARMONY_EOS_ERROR)
            word, lp, alts, rank = gen.step()
            kind = ("header" if i < n_header else "reasoning" if i < n_header + n_reasoning
                    else "switch" if i < n_header + n_reasoning + n_switch else "content")
            if i >= limit - n_end and i >= n_header:
                kind = "end"
            yield i, kind, word, lp, alts, rank, ("length" if i == limit - 1 else None)

    def begin(self, n_prompt, t_recv):
        self.t_recv = t_recv
        # ms after the arrival: when the first event, the first text and the last token's chunk left, and
        # when the schedule said the latter two should
        self.sent = dict.fromkeys(("first", "text", "last", "text_due", "last_due"))
        self.due = 0.0
        with STATS["lock"]:
            STATS["running"] += 1
            STATS["prompt"] += n_prompt

    def end(self, n_gen):
        if OPTS.timing_log:
            # when the server really sent (not when its schedule said): on a loaded machine Python's sleep
            # overshoots, and a client's reading is only as true as the times it can be compared with
            with STATS["lock"], open(OPTS.timing_log, "a") as f:
                f.write(" ".join("-" if self.sent[k] is None else "%.3f" % self.sent[k]
                                 for k in ("first", "text", "last", "text_due", "last_due")) + "\n")
        with STATS["lock"]:
            STATS["running"] -= 1
            STATS["gen"] += n_gen
            STATS["success"] += 1

    def completions(self, req):
        t_recv = self.t_arrive
        prompt = req.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1:
            prompt = prompt[0]
        if isinstance(prompt, list) and prompt and all(isinstance(x, int) for x in prompt):
            ids = prompt
        elif isinstance(prompt, str) and prompt:
            ids = tokenize_text(prompt)[0]
            if not ids:
                ids = [tok_id(prompt)]
            # vLLM's CompletionRequest.add_special_tokens defaults to true: BOS, as /tokenize counts it
            if req.get("add_special_tokens", True):
                ids = [0] + ids
        else:
            bad("Either prompt or prompt_embeds must be provided and non-empty.")
        p = common_params(req, False, len(ids))
        lp_n = req.get("logprobs")
        if lp_n is not None and (not isinstance(lp_n, int) or isinstance(lp_n, bool) or lp_n < -1 or lp_n > 20):
            bad(f"Requested sample logprobs of {lp_n}, which is greater than max allowed: 20")
        plp = req.get("prompt_logprobs")
        cached = cached_tokens(ids, p["salt"])
        gen = Generation(ids, req, chat=False)
        rid = f"cmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        base = {"id": rid, "object": "text_completion", "created": created, "model": OPTS.served_model_name}
        self.begin(len(ids), t_recv)
        n_gen, text, finish = 0, "", None
        lp = {"text_offset": [], "token_logprobs": [], "tokens": [], "top_logprobs": []}
        if p["stream"]:
            self.start_stream()
        for i, kind, word, tlp, alts, rank, fin in self.run_tokens(gen, p, 0, 0):
            n_gen += 1
            piece = "" if kind == "eos" else " " + word
            chunk_lp = None
            if lp_n is not None and kind != "eos":
                k = 20 if lp_n == -1 else lp_n
                d = logprob_dict(" " + word, tlp, [(" " + w, a) for w, a in alts], k)
                chunk_lp = {"text_offset": [len(text)], "token_logprobs": [max(tlp, -9999.0)],
                            "tokens": [" " + word], "top_logprobs": [d]}
                for key in lp:
                    lp[key] += chunk_lp[key]
            text += piece
            finish = fin
            if p["stream"] and (piece or fin):
                c = dict(base, choices=[{"index": 0, "text": piece, "logprobs": chunk_lp, "finish_reason": fin,
                                         "stop_reason": None}])
                if p["continuous"]:
                    c["usage"] = usage_obj(len(ids), n_gen, cached)
                self.event(c)
                if OPTS.sse_comments:
                    self.chunk(": keep-alive\n\n")
        self.end(n_gen)
        usage = usage_obj(len(ids), n_gen, cached)
        if p["stream"]:
            if p["include_usage"]:
                self.event(dict(base, choices=[], usage=usage))
            self.end_stream()
            return
        choice = {"index": 0, "text": text, "logprobs": lp if lp_n is not None else None, "finish_reason": finish,
                  "stop_reason": None, "prompt_logprobs": None}
        if plp is not None:
            choice["prompt_logprobs"] = self.prompt_logprobs(ids)
        self.send_json(200, dict(base, choices=[choice], usage=usage, system_fingerprint=None,
                                 kv_transfer_params=None, service_tier=None))

    def prompt_logprobs(self, ids):
        r = random.Random(sum(ids))
        out = [None]
        for t in ids[1:]:
            out.append({str(t): {"logprob": -r.uniform(0.1, 6.0), "rank": r.randint(1, 50),
                                 "decoded_token": f"t{t}"}})
        return out

    def chat(self, req):
        t_recv = self.t_arrive
        msgs = req.get("messages")
        if not isinstance(msgs, list) or not msgs:
            bad("Field required: messages")
        ids = chat_prompt_ids(msgs, req.get("add_generation_prompt", True))
        p = common_params(req, True, len(ids))
        want_lp = bool(req.get("logprobs", False))
        top = req.get("top_logprobs")
        if top is not None and top > 0 and not want_lp:
            bad("when using `top_logprobs`, `logprobs` must be set to true.")
        if top is not None and (top < -1 or top > 20):
            bad("`top_logprobs` must be a positive value.")
        top = top or 0
        cached = cached_tokens(ids, p["salt"])
        gen = Generation(ids, req, chat=True)
        rid = f"chatcmpl-{uuid.uuid4().hex}"
        base = {"id": rid, "object": "chat.completion.chunk", "created": int(time.time()),
                "model": OPTS.served_model_name}
        rfield = OPTS.reasoning_field
        include_reasoning = req.get("include_reasoning", True)
        self.begin(len(ids), t_recv)
        n_gen, content, reasoning, finish, lp_content = 0, "", "", None, []
        role_sent = False

        def role_chunk():
            delta = {"role": "assistant"}
            if not OPTS.role_content_omitted:
                delta["content"] = ""
            c = dict(base, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}])
            if p["continuous"]:
                c["usage"] = usage_obj(len(ids), 0, cached)
            self.event(c)

        if p["stream"]:
            self.start_stream()
            if OPTS.sse_comments:
                self.chunk(": ping\n\n")
            if OPTS.role_at == "request":
                role_chunk()
                role_sent = True
        try:
            done = self.chat_tokens(gen, p, want_lp, top, include_reasoning, role_chunk, role_sent, base, ids,
                                    cached, lp_content)
        except HarmonyEosError as e:
            with STATS["lock"]:
                STATS["running"] -= 1
            err = ApiError(500, str(e), "InternalServerError")
            if not p["stream"]:
                raise err
            # an exception after the 200 went out: an error chunk, then [DONE], no usage chunk
            self.event(err.body())
            self.end_stream()
            return
        n_gen, content, reasoning, finish = done
        self.end(n_gen)
        usage = usage_obj(len(ids), n_gen, cached)
        if p["stream"]:
            if p["include_usage"]:
                self.event(dict(base, choices=[], usage=usage))
            self.end_stream()
            return
        msg = {"role": "assistant", "content": content or None, "refusal": None, "annotations": None,
               "audio": None, "function_call": None, "tool_calls": [],
               rfield: (reasoning or None) if include_reasoning else None}
        choice = {"index": 0, "message": msg, "logprobs": {"content": lp_content} if want_lp else None,
                  "finish_reason": finish, "stop_reason": None}
        out = dict(base, object="chat.completion", choices=[choice], usage=usage, service_tier=None,
                   system_fingerprint=None, prompt_logprobs=None, kv_transfer_params=None)
        if req.get("prompt_logprobs") is not None:
            out["prompt_logprobs"] = self.prompt_logprobs(ids)
        self.send_json(200, out)

    def chat_tokens(self, gen, p, want_lp, top, include_reasoning, role_chunk, role_sent, base, ids, cached,
                    lp_content):
        """The chat answer's tokens on the schedule, streamed as vLLM does; (n_gen, content, reasoning, finish)."""
        rfield = OPTS.reasoning_field
        n_gen, content, reasoning, finish = 0, "", "", None
        for i, kind, word, tlp, alts, rank, fin in self.run_tokens(gen, p, OPTS.header_tokens,
                                                                    OPTS.reasoning_tokens, chat=True):
            n_gen += 1
            if p["stream"] and not role_sent:
                role_chunk()  # vLLM: the first engine output yields the role chunk, then its delta
                role_sent = True
            piece = "" if kind == "eos" or kind in SILENT else (" " if (content if kind == "content"
                                                                           else reasoning) else "") + word
            entry = None
            if kind in SILENT:
                # a Harmony control token: no text, but non-streamed logprobs cover every output token id
                word = HEADER[i % len(HEADER)] if kind == "header" else SWITCH[i % len(SWITCH)]
                alts = [(word, tlp)] + [a for a in alts if a[0] != word][:N_ALT - 1]
                alts.sort(key=lambda a: -a[1])
            if want_lp and kind != "eos":
                d = logprob_dict(word, tlp, alts, top)
                entry = {"token": word, "logprob": max(tlp, -9999.0), "bytes": list(word.encode()),
                         "top_logprobs": [{"token": w, "logprob": a, "bytes": list(w.encode())}
                                          for w, a in list(d.items())[:top]]}
                lp_content.append(entry)
            if kind == "content":
                content += piece
            elif kind == "reasoning":
                reasoning += piece
            finish = fin
            if not p["stream"]:
                continue
            delta = {}
            if kind == "content":
                delta = {"content": piece}
            elif kind == "reasoning" and include_reasoning:
                delta = {rfield: piece}
            if not delta and not fin and not entry:
                continue  # a Harmony token: vLLM's parser yields no delta and, without logprobs, no chunk
            c = dict(base, choices=[{"index": 0, "delta": delta,
                                     "logprobs": {"content": [entry]} if entry else None,
                                     "finish_reason": fin, "stop_reason": None if fin else None}])
            if not fin:
                del c["choices"][0]["stop_reason"]
            if p["continuous"]:
                c["usage"] = usage_obj(len(ids), n_gen, cached)
            self.event(c)
            if OPTS.sse_comments and i % 8 == 7:
                self.chunk(": keep-alive\n\n")
        return n_gen, content, reasoning, finish


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global OPTS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cmd", nargs="?", default="serve", help="'serve' (ignored, as `vllm serve`)")
    ap.add_argument("model_pos", nargs="?", help="the model (as `vllm serve MODEL`)")
    ap.add_argument("--model", default=None)
    ap.add_argument("--served-model-name", default=None)
    ap.add_argument("--host", default="0.0.0.0")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--max-model-len", type=int, default=131072)
    ap.add_argument("--load-s", type=float, default=0.0, help="seconds of 'loading' before the port listens")
    ap.add_argument("--first-token-ms", type=float, default=50.0, help="F: first token F ms after the request")
    ap.add_argument("--token-ms", type=float, default=10.0, help="D: then one token every D ms")
    ap.add_argument("--role-at", choices=("first-token", "request"), default="first-token",
                    help="when the chat stream's role-only chunk is sent")
    ap.add_argument("--role-content-empty", action="store_true",
                    help='role chunk has "content": "" (the default of current vLLM; kept for old command lines)')
    ap.add_argument("--role-content-omitted", action="store_true",
                    help='role chunk without "content" (older vLLM releases)')
    ap.add_argument("--header-tokens", type=int, default=0,
                    help="gpt-oss: first tokens of a chat answer that produce no text (no chunk)")
    ap.add_argument("--switch-tokens", type=int, default=0,
                    help="gpt-oss: tokens without text at the analysis -> final switch (after the reasoning)")
    ap.add_argument("--end-tokens", type=int, default=0,
                    help="gpt-oss: the chat answer's last tokens produce no text (the turn's end); only the "
                         "very last sends a chunk, with finish_reason")
    ap.add_argument("--harmony-eos-error", action="store_true",
                    help="vllm#50690: chat with ignore_eos fails once the model's turn ends before the limit "
                         "(unless min_tokens masks the stop tokens there)")
    ap.add_argument("--api-key", default=os.environ.get("VLLM_API_KEY"),
                    help="require this bearer token on /v1 paths (default $VLLM_API_KEY)")
    ap.add_argument("--reasoning-tokens", type=int, default=0, help="chat: tokens in the reasoning channel")
    ap.add_argument("--reasoning-field", choices=("reasoning", "reasoning_content"), default="reasoning")
    ap.add_argument("--continuous-usage", action="store_true", help="honour continuous_usage_stats")
    ap.add_argument("--sse-comments", action="store_true", help="send SSE comment lines (keep-alives)")
    ap.add_argument("--enable-prompt-tokens-details", action="store_true")
    ap.add_argument("--no-enable-prefix-caching", action="store_true")
    ap.add_argument("--disable-log-requests", "--disable-uvicorn-access-log", action="store_true")
    ap.add_argument("--timing-log", metavar="FILE",
                    help="append a line per answered request, in ms after the request arrived ('-': none): when "
                         "its first data event, its first text and its last token's chunk left, and when the "
                         "schedule said those two should")
    ap.add_argument("--version-string", dest="version", default="0.32.0+foreign")
    opts, unknown = ap.parse_known_args()
    opts.model = opts.model or opts.model_pos or "openai/gpt-oss-120b"
    opts.served_model_name = opts.served_model_name or opts.model
    OPTS = opts
    log(f"vLLM API server version {opts.version}")
    log(f"non-default args: {{'model': '{opts.model}', 'port': {opts.port}, "
        f"'max_model_len': {opts.max_model_len}}}" + (f" (ignored: {' '.join(unknown)})" if unknown else ""))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if opts.load_s > 0:
        log("Loading model weights ...")
        stop.wait(opts.load_s)
        if stop.is_set():
            return 0
    log(f"Model loading took 0.00 GiB memory and {opts.load_s:.2f} seconds")
    log(f"Starting vLLM server on http://{opts.host}:{opts.port}")
    srv = Server((opts.host, opts.port), Handler)
    log("Available routes are:")
    for r in ("/health", "/ping", "/version", "/v1/models", "/metrics", "/tokenize", "/detokenize",
              "/v1/completions", "/v1/chat/completions"):
        log(f"Route: {r}, Methods: {'GET' if r in ('/health', '/version', '/v1/models', '/metrics') else 'POST'}")
    log("Started server process [%d]" % os.getpid())
    log("Application startup complete.")
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    t.start()
    stop.wait()
    log("Shutting down")
    srv.shutdown()
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
