/* SPDX-License-Identifier: MIT */
/*
 * The server's /metrics read for L4's figures (loadgen/promtext.h, daemon/run/levels/counters.h): Prometheus
 * text with labels, several series of one counter summed, counters before and after a window, a counter reset,
 * speculative-decoding figures (vLLM's definitions) and joules per token.
 */
#include "counters.h"
#include "promtext.h"
#include "test.h"

#include <math.h>

/* vLLM's shape: HELP/TYPE, labels model_name and engine, _total and _created, two engines (data parallel). */
static const char *const before_text =
        "# HELP vllm:spec_decode_num_drafts Number of spec decoding drafts.\n"
        "# TYPE vllm:spec_decode_num_drafts counter\n"
        "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"gpt-oss-120b\"} 100.0\n"
        "vllm:spec_decode_num_drafts_total{engine=\"1\",model_name=\"gpt-oss-120b\"} 50.0\n"
        "vllm:spec_decode_num_drafts_created{engine=\"0\",model_name=\"gpt-oss-120b\"} 1.7e+09\n"
        "vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"gpt-oss-120b\"} 300.0\n"
        "vllm:spec_decode_num_draft_tokens_total{engine=\"1\",model_name=\"gpt-oss-120b\"} 150.0\n"
        "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"gpt-oss-120b\"} 30.0\n"
        "vllm:spec_decode_num_accepted_tokens_total{engine=\"1\",model_name=\"gpt-oss-120b\"} 15.0\n"
        "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"gpt-oss-120b\",position=\"0\"} "
        "20.0\n"
        "vllm:generation_tokens_total{engine=\"0\",model_name=\"gpt-oss-120b\"} 1000.0\n"
        "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"a \\\"quoted\\\" }{ name\"} "
        "7.0\n"
        "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"gpt-oss-120b\"} NaN\n"
        "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"gpt-oss-120b\"} 12.0\n";

static const char *const after_text =
        "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"gpt-oss-120b\"} 300.0\n"
        "vllm:spec_decode_num_drafts_total{engine=\"1\",model_name=\"gpt-oss-120b\"} 50.0\n"
        "vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"gpt-oss-120b\"} 900.0\n"
        "vllm:spec_decode_num_draft_tokens_total{engine=\"1\",model_name=\"gpt-oss-120b\"} 150.0\n"
        "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"gpt-oss-120b\"} 180.0\n"
        "vllm:spec_decode_num_accepted_tokens_total{engine=\"1\",model_name=\"gpt-oss-120b\"} 15.0 1712345678000\n"
        "vllm:generation_tokens_total{engine=\"0\",model_name=\"gpt-oss-120b\"} 1350.0\n";

TEST(prom_sum_labels_series)
{
        double v = 0;
        unsigned n = 0;
        _cleanup_free_ char *err = NULL;

        ASSERT_EQ(mx_prom_sum(before_text, strlen(before_text), "vllm:spec_decode_num_drafts_total", &v, &n, &err),
                  0);
        ASSERT_TRUE(v == 150.0);
        ASSERT_EQ(n, 2u);
        /* the name is matched whole: _created and _total are other series, a prefix is not a match */
        ASSERT_EQ(mx_prom_sum(before_text, strlen(before_text), "vllm:spec_decode_num_drafts_created", &v, &n, &err),
                  0);
        ASSERT_EQ(n, 1u);
        ASSERT_EQ(mx_prom_sum(before_text, strlen(before_text), "vllm:spec_decode_num_drafts", &v, &n, &err),
                  -ENOENT);
        /* a label value holding quotes, braces and a space */
        ASSERT_EQ(mx_prom_sum(before_text, strlen(before_text), "vllm:request_success_total", &v, &n, &err), 0);
        ASSERT_TRUE(v == 7.0);
        ASSERT_EQ(mx_prom_sum(before_text, strlen(before_text), "vllm:kv_cache_usage_perc", &v, &n, &err), 0);
        ASSERT_TRUE(isnan(v));
        /* a timestamp after the value is not part of it */
        ASSERT_EQ(mx_prom_sum(after_text, strlen(after_text), "vllm:spec_decode_num_accepted_tokens_total", &v, &n,
                              &err),
                  0);
        ASSERT_TRUE(v == 195.0);
}

TEST(prom_malformed)
{
        static const char bad[] = "vllm:ok_total 1.0\nvllm:bad_total{engine=\"0\" 2.0\n";
        static const char bad_value[] = "vllm:x_total{a=\"b\"} twelve\n";
        double v;
        _cleanup_free_ char *err = NULL, *err2 = NULL;

        ASSERT_EQ(mx_prom_sum(bad, strlen(bad), "vllm:ok_total", &v, NULL, &err), -EBADMSG);
        ASSERT_NOT_NULL(strstr(err, "line 2"));
        ASSERT_EQ(mx_prom_sum(bad_value, strlen(bad_value), "vllm:x_total", &v, NULL, &err2), -EBADMSG);
        ASSERT_EQ(mx_prom_sum("", 0, "vllm:x_total", &v, NULL, NULL), -ENOENT);
}

TEST(prom_increase_reset)
{
        bool reset = true;

        ASSERT_TRUE(mx_prom_increase(100, 250, &reset) == 150);
        ASSERT_FALSE(reset);
        /* the server restarted in the window: its counter began again at 0 */
        ASSERT_TRUE(mx_prom_increase(100, 40, &reset) == 40);
        ASSERT_TRUE(reset);
}

TEST(spec_figures)
{
        _cleanup_json_ json_t *o = mx_counters_spec_json(before_text, after_text, NULL);
        _cleanup_json_ json_t *none = NULL, *unread = NULL, *reset = NULL;
        int64_t tokens = 0;
        const char *name = NULL;
        bool rs = true;

        /* 200 drafts, 600 draft tokens, 150 accepted: rate 0.25, mean length 1 + 150/200 */
        ASSERT_TRUE(json_real_value(json_object_get(o, "drafts")) == 200.0);
        ASSERT_TRUE(json_real_value(json_object_get(o, "draft_tokens")) == 600.0);
        ASSERT_TRUE(json_real_value(json_object_get(o, "accepted_tokens")) == 150.0);
        ASSERT_TRUE(fabs(json_real_value(json_object_get(o, "acceptance_rate")) - 0.25) < 1e-12);
        ASSERT_TRUE(fabs(json_real_value(json_object_get(o, "mean_acceptance_length")) - 1.75) < 1e-12);
        ASSERT_FALSE(json_is_true(json_object_get(o, "reset")));
        ASSERT_STREQ(json_string_value(json_object_get(o, "source")), "vllm /metrics");

        ASSERT_EQ(mx_counters_generated(before_text, after_text, &tokens, &name, &rs, NULL), 0);
        ASSERT_EQ(tokens, 350);
        ASSERT_STREQ(name, "vllm:generation_tokens_total");
        ASSERT_FALSE(rs);

        /* no speculative decoding: no counters, said so */
        none = mx_counters_spec_json("vllm:generation_tokens_total 1.0\n", "vllm:generation_tokens_total 5.0\n",
                                     NULL);
        ASSERT_NOT_NULL(strstr(json_string_value(json_object_get(none, "not_reported")), "no speculative"));
        unread = mx_counters_spec_json(NULL, after_text, "GET /metrics answered HTTP 404");
        ASSERT_NOT_NULL(strstr(json_string_value(json_object_get(unread, "not_reported")), "HTTP 404"));

        /* a reset between the reads: the counters after it are the window's, and the figure says so */
        reset = mx_counters_spec_json(after_text, before_text, NULL);
        ASSERT_TRUE(json_is_true(json_object_get(reset, "reset")));
        ASSERT_TRUE(fabs(json_real_value(json_object_get(reset, "acceptance_rate")) - 45.0 / 450.0) < 1e-12);
}

TEST(llama_server_counters)
{
        static const char b[] = "llamacpp:spec_decode_num_drafts_total 10\n"
                                "llamacpp:spec_decode_num_draft_tokens_total 80\n"
                                "llamacpp:spec_decode_num_accepted_tokens_total 20\n"
                                "llamacpp:tokens_predicted_total 100\n";
        static const char a[] = "llamacpp:spec_decode_num_drafts_total 20\n"
                                "llamacpp:spec_decode_num_draft_tokens_total 160\n"
                                "llamacpp:spec_decode_num_accepted_tokens_total 60\n"
                                "llamacpp:tokens_predicted_total 164\n";
        _cleanup_json_ json_t *o = mx_counters_spec_json(b, a, NULL);
        int64_t tokens = 0;
        const char *name = NULL;
        bool rs;

        ASSERT_STREQ(json_string_value(json_object_get(o, "source")), "llama-server /metrics");
        ASSERT_TRUE(fabs(json_real_value(json_object_get(o, "acceptance_rate")) - 0.5) < 1e-12);
        ASSERT_TRUE(fabs(json_real_value(json_object_get(o, "mean_acceptance_length")) - 5.0) < 1e-12);
        ASSERT_EQ(mx_counters_generated(b, a, &tokens, &name, &rs, NULL), 0);
        ASSERT_EQ(tokens, 64);
        ASSERT_STREQ(name, "llamacpp:tokens_predicted_total");
}

/* Why the generation counter gives no window count (the profiling pass says it): no counter, a malformed line
 * (which read, which line), a counter that went backwards (from what to what). */
TEST(generated_reasons)
{
        static const char ok[] = "llamacpp:tokens_predicted_total 100\n";
        static const char bad[] = "# HELP x\nllamacpp:tokens_predicted_total 100\nthis is not a sample\n";
        static const char less[] = "llamacpp:tokens_predicted_total 40\n";
        static const char none[] = "llamacpp:prompt_tokens_total 7\n";
        _cleanup_free_ char *e1 = NULL, *e2 = NULL, *e3 = NULL, *e4 = NULL, *e5 = NULL;
        int64_t tokens = -1;
        const char *name = NULL;
        bool rs = false;

        ASSERT_ERR(mx_counters_generated(ok, bad, &tokens, &name, &rs, &e1), EBADMSG);
        ASSERT_CONTAINS(e1, "after the window: /metrics line 3 is not a sample");
        ASSERT_EQ(mx_counters_generated(ok, less, &tokens, &name, &rs, &e2), 0);
        ASSERT_TRUE(rs);
        ASSERT_EQ(tokens, 40);
        ASSERT_CONTAINS(e2, "llamacpp:tokens_predicted_total went backwards from 100 to 40");
        ASSERT_ERR(mx_counters_generated(none, none, &tokens, &name, &rs, &e3), ENOENT);
        ASSERT_CONTAINS(e3, "no generation counter");
        /* one text: the whole life's counter */
        ASSERT_EQ(mx_counters_generated_total(ok, &tokens, &name, NULL), 0);
        ASSERT_EQ(tokens, 100);
        ASSERT_STREQ(name, "llamacpp:tokens_predicted_total");
        ASSERT_ERR(mx_counters_generated_total(bad, &tokens, &name, &e4), EBADMSG);
        ASSERT_CONTAINS(e4, "/metrics line 3 is not a sample");
        ASSERT_ERR(mx_counters_generated_total(none, &tokens, &name, &e5), ENOENT);
        ASSERT_CONTAINS(e5, "no generation counter");
}

/* llama-server without --metrics: its per-request timings (draft_n, draft_n_accepted) give the rate only. */
TEST(spec_from_timings)
{
        _cleanup_json_ json_t *dt = json_pack("{s:i,s:i,s:i}", "draft_n", 40, "draft_n_accepted", 10, "requests", 4);
        _cleanup_json_ json_t *o = mx_counters_spec_from_timings(dt);
        _cleanup_json_ json_t *zero = json_pack("{s:i,s:i,s:i}", "draft_n", 0, "draft_n_accepted", 0, "requests", 2);
        _cleanup_json_ json_t *z = mx_counters_spec_from_timings(zero);

        ASSERT_STREQ(json_string_value(json_object_get(o, "source")), "llama-server timings");
        ASSERT_TRUE(fabs(json_real_value(json_object_get(o, "acceptance_rate")) - 0.25) < 1e-12);
        ASSERT_TRUE(json_is_null(json_object_get(o, "mean_acceptance_length")));
        ASSERT_CONTAINS(json_string_value(json_object_get(o, "not_reported")), "do not count the drafts");
        ASSERT_TRUE(json_is_null(json_object_get(z, "acceptance_rate")));
        ASSERT_NULL(mx_counters_spec_from_timings(NULL));
}

TEST(energy_figures)
{
        _cleanup_json_ json_t *o = mx_counters_energy_json(1000000, 1250000, 500, NULL);
        _cleanup_json_ json_t *na = mx_counters_energy_json(0, 0, 500, "the GPU does not report energy");
        _cleanup_json_ json_t *none = mx_counters_energy_json(5, 9, 0, NULL);

        ASSERT_TRUE(fabs(json_real_value(json_object_get(o, "joules")) - 250.0) < 1e-9);
        ASSERT_TRUE(fabs(json_real_value(json_object_get(o, "joules_per_token")) - 0.5) < 1e-12);
        ASSERT_STREQ(json_string_value(json_object_get(na, "not_measured")), "the GPU does not report energy");
        ASSERT_NOT_NULL(json_string_value(json_object_get(none, "not_measured")));
}

/* A counter read as a count: NaN, Inf, negative or beyond 2^53 is an error, never a token count */
TEST(prom_count_refuses_what_is_no_count)
{
        static const char text[] = "good_total 42\nnan_total NaN\ninf_total +Inf\nneg_total -3\nbig_total 1e300\n";
        _cleanup_free_ char *err = NULL;
        double v = -1;

        ASSERT_OK(mx_prom_count(text, strlen(text), "good_total", &v, NULL));
        ASSERT_TRUE(v == 42);
        ASSERT_EQ(mx_prom_count(text, strlen(text), "nan_total", &v, &err), -EBADMSG);
        ASSERT_CONTAINS(err, "nan_total");
        ASSERT_CONTAINS(err, "not a count");
        ASSERT_EQ(mx_prom_count(text, strlen(text), "inf_total", &v, NULL), -EBADMSG);
        ASSERT_EQ(mx_prom_count(text, strlen(text), "neg_total", &v, NULL), -EBADMSG);
        ASSERT_EQ(mx_prom_count(text, strlen(text), "big_total", &v, NULL), -EBADMSG);
        ASSERT_EQ(mx_prom_count(text, strlen(text), "absent_total", &v, NULL), -ENOENT);
        /* a number longer than any real one is a malformed line, not a shorter number */
        {
                _cleanup_free_ char *long_text = xasprintf("x_total 1%0*d1\n", 70, 0);

                ASSERT_EQ(mx_prom_count(long_text, strlen(long_text), "x_total", &v, NULL), -EBADMSG);
        }
}
