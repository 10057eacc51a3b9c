/* SPDX-License-Identifier: MIT */
/*
 * The simulated model's tokenizer and sampler.
 *
 * Vocabulary: ids below 199998 are pseudo-words made of 1-3 consonant-vowel
 * syllables ("ba", "kitu", "romeza"); an even id is the word with a leading
 * space (" kitu"), an odd id the word alone. Ids 199998.. are gpt-oss's
 * special tokens (<|endoftext|> = 199999, <|return|> = 200002), up to the
 * vocabulary size 201088.
 *
 * Tokenizing splits text into pieces "whitespace run + non-whitespace run";
 * a piece that is " word" or "word" of the vocabulary maps to its id, any
 * other piece to a hashed id. So prompt token counts are "words" (close to a
 * real tokenizer for English), generated text round-trips exactly through
 * /tokenize and /detokenize, and foreign text does not (it comes back as
 * pseudo-words).
 *
 * Sampling is a pure function of (key, position): same prompt and seed, same
 * tokens and logprobs, in any process.
 */
#include "sim.h"

#include <inttypes.h>
#include <math.h>
#include <sys/random.h>

#define WORD_IDS 199998
#define WORDS (WORD_IDS / 2) /* 99999 words */
#define SYL 64

static const char consonants[] = "bdfghjklmnprstvz";
static const char vowels[] = "aeio";

static const struct {
        int64_t id;
        const char *text;
} specials[] = {
        {199998, "<|startoftext|>"}, {199999, "<|endoftext|>"}, {200002, "<|return|>"},
        {200003, "<|constrain|>"},   {200005, "<|channel|>"},   {200006, "<|start|>"},
        {200007, "<|end|>"},         {200008, "<|message|>"},   {200012, "<|call|>"},
};

uint64_t sim_mix(uint64_t a, uint64_t b)
{
        uint64_t z = a + 0x9e3779b97f4a7c15ULL * (b + 1);

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

/* Uniform double in [0, 1) from 53 bits of x. */
static double unit(uint64_t x)
{
        return (double)(x >> 11) / 9007199254740992.0;
}

uint64_t sim_random_u64(void)
{
        uint64_t v;

        if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
                v = sim_mix((uint64_t)mx_now_real_us(), (uint64_t)getpid());
        return v;
}

bool sim_token_is_special(int64_t id)
{
        return id >= WORD_IDS;
}

/* The word of index w (0 <= w < WORDS) into buf (at least 7 bytes). */
static void word_text(int64_t w, char *buf)
{
        int nsyl;
        int64_t v;

        if (w < SYL) {
                nsyl = 1;
                v = w;
        } else if (w < SYL + SYL * SYL) {
                nsyl = 2;
                v = w - SYL;
        } else {
                nsyl = 3;
                v = w - SYL - SYL * SYL;
        }
        for (int i = 0; i < nsyl; i++) {
                int s = (int)(v % SYL);
                v /= SYL;
                buf[2 * i] = consonants[s / 4];
                buf[2 * i + 1] = vowels[s % 4];
        }
        buf[2 * nsyl] = '\0';
}

void sim_token_append(struct mx_buf *b, int64_t id, bool skip_special)
{
        char buf[8];

        if (id < 0 || id >= SIM_VOCAB_SIZE)
                return;
        if (sim_token_is_special(id)) {
                if (skip_special)
                        return;
                for (size_t i = 0; i < ELEMENTSOF(specials); i++)
                        if (specials[i].id == id) {
                                mx_buf_puts(b, specials[i].text);
                                return;
                        }
                mx_buf_printf(b, "<|reserved_%" PRId64 "|>", id);
                return;
        }
        word_text(id / 2, buf);
        if (id % 2 == 0)
                mx_buf_putc(b, ' ');
        mx_buf_puts(b, buf);
}

static int syllable_index(char c, char v)
{
        const char *pc = c ? strchr(consonants, c) : NULL, *pv = v ? strchr(vowels, v) : NULL;

        if (!pc || !pv)
                return -1;
        return (int)(pc - consonants) * 4 + (int)(pv - vowels);
}

/* The word index of s[0..n) if it is a vocabulary word, else -1. */
static int64_t word_index(const char *s, size_t n)
{
        int64_t v = 0, mult = 1, base;

        if (n != 2 && n != 4 && n != 6)
                return -1;
        for (size_t i = 0; i < n; i += 2) {
                int k = syllable_index(s[i], s[i + 1]);
                if (k < 0)
                        return -1;
                v += k * mult;
                mult *= SYL;
        }
        base = n == 2 ? 0 : n == 4 ? SYL : SYL + SYL * SYL;
        v += base;
        return v < WORDS ? v : -1;
}

static int64_t piece_id(const char *p, size_t ws, size_t n)
{
        int64_t w = -1;

        if (ws == 0 || (ws == 1 && p[0] == ' '))
                w = word_index(p + ws, n - ws);
        if (w < 0)
                w = (int64_t)(mx_fnv1a64(p, n, MX_FNV1A64_INIT) % WORDS);
        return 2 * w + (ws > 0 ? 0 : 1);
}

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

size_t sim_tokenize(const char *text, size_t len, int64_t **ret_ids)
{
        _cleanup_free_ int64_t *ids = NULL;
        size_t n = 0, i = 0;

        if (ret_ids)
                ids = xreallocarray(NULL, len + 1, sizeof(int64_t));
        while (i < len) {
                size_t start = i, ws;
                while (i < len && is_space(text[i]))
                        i++;
                ws = i - start;
                while (i < len && !is_space(text[i]))
                        i++;
                if (ids)
                        ids[n] = piece_id(text + start, ws, i - start);
                n++;
        }
        if (ret_ids)
                *ret_ids = TAKE_PTR(ids);
        return n;
}

uint64_t sim_hash_ids(const int64_t *ids, size_t n, uint64_t h)
{
        return mx_fnv1a64(ids, n * sizeof(int64_t), h);
}

void sim_sample(uint64_t key, int64_t pos, bool spaced, int top_k, struct sim_token *ret)
{
        uint64_t x = sim_mix(key, (uint64_t)pos);
        double u = unit(x);
        double lp = -(0.002 + 2.5 * u * u * u);
        int64_t w = (int64_t)(sim_mix(x, 1) % WORDS);

        ret->id = 2 * w + (spaced ? 0 : 1);
        ret->logprob = lp;
        ret->n_top = top_k < 0 ? 0 : MX_MIN(top_k, SIM_TOP_MAX);
        for (int i = 0; i < ret->n_top; i++) {
                if (i == 0) {
                        ret->top_id[0] = ret->id;
                        ret->top_lp[0] = lp;
                        continue;
                }
                /* alternatives: distinct from the sampled word, strictly less likely */
                int64_t aw = (int64_t)(sim_mix(x, 2 + (uint64_t)i) % (WORDS - 1));
                if (aw >= w)
                        aw++;
                ret->top_id[i] = 2 * aw + (spaced ? 0 : 1);
                ret->top_lp[i] = ret->top_lp[i - 1] - (0.25 + 1.5 * unit(sim_mix(x, 100 + (uint64_t)i)));
        }
}

double sim_prompt_logprob(const int64_t *ids, size_t i, int64_t *ret_rank)
{
        uint64_t h = sim_mix(sim_hash_ids(ids, i, MX_FNV1A64_INIT), (uint64_t)ids[i]);
        double u = unit(h);

        *ret_rank = 1 + (int64_t)(u * u * 40.0);
        return -(0.05 + 9.0 * u * u);
}
