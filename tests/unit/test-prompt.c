/* SPDX-License-Identifier: MIT */
/*
 * loadgen/prompt.c: the exact-length search against fake tokenizers that cut
 * words into several tokens (as the 760-token BPE of the real test model
 * does), whose filler units cost more than one token, or that cannot reach a
 * count at all.
 */
#include "prompt.h"
#include "test.h"

#include <string.h>

enum fake { FAKE_BPE, FAKE_NO_A, FAKE_CHARS, FAKE_HOPELESS };

/* Tokens of one space-separated piece (the space joins the next piece, as GPT-2's Ġ does). */
static int64_t piece_tokens(enum fake f, const char *p, size_t len)
{
        switch (f) {
        case FAKE_BPE:
                return (int64_t)(len + 1) / 2;
        case FAKE_NO_A:
                return len == 1 && p[0] == 'a' ? 2 : (int64_t)(len + 1) / 2;
        case FAKE_HOPELESS:
                return 5;
        default:
                return 0;
        }
}

static int64_t fake_count(enum fake f, const char *text)
{
        int64_t n = 0;
        const char *p = text;

        if (f == FAKE_CHARS)
                return (int64_t)strlen(text);
        while (*p) {
                size_t len;

                while (*p == ' ')
                        p++;
                len = strcspn(p, " ");
                if (len == 0)
                        break;
                /* "." and "1" are one token everywhere but in the hopeless tokenizer */
                n += f == FAKE_HOPELESS && len == 1 ? 2 : piece_tokens(f, p, len);
                p += len;
        }
        return n;
}

/* Run a search to its end; returns the result (1 reached, <0 failed) and the final text and tries. */
static int run_search(enum fake f, const char *prefix, int64_t target, double tpw, char **ret_text, unsigned *ret_tries,
                      char **reterr)
{
        struct mx_prompt_search s;
        int r;

        mx_prompt_search_init(&s, target, tpw);
        for (;;) {
                _cleanup_free_ char *t = mx_prompt_text(prefix, 42, s.n, s.unit,
                                                        s.phase == MX_PROMPT_FILL ? s.fill : 0);
                r = mx_prompt_search_feed(&s, fake_count(f, t), reterr);
                if (r != 0) {
                        if (r > 0 && ret_text)
                                *ret_text = TAKE_PTR(t);
                        break;
                }
        }
        if (ret_tries)
                *ret_tries = s.tries;
        return r;
}

TEST(exact_on_a_tokenizer_that_splits_words)
{
        unsigned worst = 0;

        for (int64_t target = 12; target <= 9000; target += 37) {
                _cleanup_free_ char *text = NULL, *err = NULL;
                unsigned tries = 0;

                ASSERT_EQ(run_search(FAKE_BPE, "Qx7k2m9p4z", target, 1.0, &text, &tries, &err), 1);
                ASSERT_EQ(fake_count(FAKE_BPE, text), target);
                ASSERT_TRUE(strncmp(text, "Qx7k2m9p4z ", 11) == 0);
                worst = MX_MAX(worst, tries);
        }
        /* a first guess of one token per word is 2-3x off here: secant and bisection still converge fast */
        ASSERT_LE(worst, 20u);
}

TEST(filler_unit_falls_back)
{
        /* " a" costs two tokens here: the search must move on to " I" */
        for (int64_t target = 50; target <= 600; target += 13) {
                _cleanup_free_ char *text = NULL, *err = NULL;

                ASSERT_EQ(run_search(FAKE_NO_A, NULL, target, 2.0, &text, NULL, &err), 1);
                ASSERT_EQ(fake_count(FAKE_NO_A, text), target);
        }
        /* every character a token: spaces too, only "." adds one */
        for (int64_t target = 30; target <= 400; target += 7) {
                _cleanup_free_ char *text = NULL, *err = NULL;

                ASSERT_EQ(run_search(FAKE_CHARS, "Bz19", target, 5.0, &text, NULL, &err), 1);
                ASSERT_EQ(fake_count(FAKE_CHARS, text), target);
        }
}

TEST(unreachable_counts_fail_with_the_reason)
{
        _cleanup_free_ char *err = NULL, *err2 = NULL;
        int64_t target = 5 * 20 + 3; /* words cost 5, units 2: 103 cannot be made */

        ASSERT_ERR(run_search(FAKE_HOPELESS, NULL, target, 1.0, NULL, NULL, &err), ERANGE);
        ASSERT_CONTAINS(err, "no text reaches 103 tokens");
        ASSERT_CONTAINS(err, "no filler unit adds exactly one token");
        /* the unique prefix alone is longer than the target */
        ASSERT_ERR(run_search(FAKE_BPE, "Qx7k2m9p4z", 3, 1.0, NULL, NULL, &err2), ERANGE);
        ASSERT_CONTAINS(err2, "shorter than the request's unique prefix (5 tokens)");
}

TEST(texts_are_a_fixed_sequence)
{
        _cleanup_free_ char *a = mx_prompt_text(NULL, 7, 30, 0, 0), *b = mx_prompt_text(NULL, 7, 31, 0, 0),
                            *c = mx_prompt_text(NULL, 8, 30, 0, 0), *d = mx_prompt_text("Pre", 7, 2, 1, 3);

        /* one more word extends the text (the count can only grow), another seed changes it */
        ASSERT_TRUE(strncmp(a, b, strlen(a)) == 0);
        ASSERT_TRUE(a[0] >= 'A' && a[0] <= 'Z');
        ASSERT_TRUE(!streq(a, c));
        ASSERT_TRUE(startswith(d, "Pre "));
        ASSERT_TRUE(endswith(d, " I I I"));
}

TEST(unique_prefixes)
{
        char seen[2000][16];

        for (unsigned i = 0; i < ELEMENTSOF(seen); i++) {
                mx_prompt_unique_prefix(99, i, seen[i]);
                ASSERT_EQ(strlen(seen[i]), (size_t)7);
                ASSERT_TRUE(seen[i][0] >= 'A' && seen[i][0] <= 'Z');
                for (unsigned k = 0; k < i; k++)
                        ASSERT_TRUE(!streq(seen[i], seen[k]));
        }
}
