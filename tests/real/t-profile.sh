#!/usr/bin/env bash
# Issue 18 on the real llama-server (CPU): it has no profiling control, so a profiler would trace its whole
# life. The profiling pass sends the declared workload; once every level had its turn it reads the server's
# llamacpp:tokens_predicted_total (from 0 at the server's start) and profile-workload.json says the tokens
# are the whole life's. L4 reads /metrics around its test and keeps the texts; the last /metrics L4 read is
# after the last request of the run, so the whole-life tokens must equal the counter in that text. The
# baseline decodes without speculation: "not reported", no draft was made. The feature run adds llama-server's
# n-gram speculation (--spec-type ngram-simple, no draft model needed): its acceptance rate is the increase of
# llamacpp:spec_decode_* between the two kept /metrics texts, and the draft tokens /metrics counted equal the
# sum of the requests' own timings (draft_n, draft_n_accepted). No GPU: energy "not measured".
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"
mx_test_name=t-profile

step="server and model"
real_server
real_model llama
ok "$REAL_SERVER, $REAL_MODEL"

step="matrix"
MXD_MATRIX=$T/matrix.json
real_matrix "$T/base.json"
jq '.target.profiler = {report: "{run_dir}/kernels.csv", workload: {prompt_tokens: 64, output_tokens: 8, requests: 2}}
    | .levels.run = ["L1", "L1.5", "L4"]
    | (.axes[] | select(.name == "fa") | .values[] | select(.name == "on") | .argv) +=
        ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "1", "--spec-ngram-simple-size-m", "4"]
    | .levels.L4 = {pp: [64], tg: [16], depth: [0], runs: 2, warmup: 0}' "$T/base.json" >"$MXD_MATRIX" || fail "jq"
expect_exit 0 mx matrix check "$MXD_MATRIX"
mxd_start
ok "daemon pid $MXD_PID"

step="baseline and feature run"
job=$(submit feature=fa-on)
mapfile -t runs < <(job_runs "$job")
r=${runs[0]} f=${runs[1]}
MX_WAIT_S=300 follow_job "$job"
dir=$MXD_STATE/runs/$r/1
ok "r$r r$f"

step="the whole-life capture normalised by the server's own counter"
w=$dir/profile-workload.json
[ -s "$w" ] || fail "no profile-workload.json: $(level_of "$r" L1.5 | jq -c .metrics)"
[ "$(jq -r .source "$w")" = "server counters" ] || fail "$(cat "$w")"
jq -e '.which | test("every token the server generated in its life") and test("llamacpp:tokens_predicted_total")' \
        "$w" >/dev/null || fail "which: $(jq -r .which "$w")"
last=$dir/l4-metrics-0-after.txt
[ -s "$last" ] || fail "L4 kept no /metrics text"
want=$(awk '$1 == "llamacpp:tokens_predicted_total" { printf "%.0f", $2 }' "$last")
[ "$(jq -r .tokens "$w")" = "$want" ] || fail "tokens $(jq -r .tokens "$w"), the server's counter after L4 $want"
ok "$want tokens, the server's llamacpp:tokens_predicted_total after the last request"

step="L4: traced, spec not reported, energy not measured"
l4=$(level_of "$r" L4)
[ "$(jq -r .metrics.traced <<<"$l4")" = true ] || fail "L4 not traced"
jq -e '.metrics.traced_because | test("whole life")' <<<"$l4" >/dev/null || fail "traced_because"
sd=$(jq -c '.metrics.serving[0].spec_decode' <<<"$l4")
jq -e '.not_reported | type == "string"' <<<"$sd" >/dev/null || fail "spec_decode: $sd"
st=$(jq -c '.metrics.windows[0].server_tokens' <<<"$l4")
[ "$(jq -r .tokens <<<"$st")" = "$(jq -r '.metrics.windows[0].tokens' <<<"$l4")" ] ||
        fail "server_tokens $st, engine $(jq -r '.metrics.windows[0].tokens' <<<"$l4")"
jq -e '.metrics.serving[0].energy.not_measured | type == "string"' <<<"$l4" >/dev/null || fail "energy"
ok "spec: $(jq -r .not_reported <<<"$sd" | cut -c1-70); server tokens = engine tokens"
step="speculative decoding on the real server: /metrics and the timings agree"
l4f=$(level_of "$f" L4)
[ "$(jq -r .verdict <<<"$l4f")" = pass ] || fail "L4 of r$f: $(jq -c '{verdict, message}' <<<"$l4f")"
sd=$(jq -c '.metrics.serving[0].spec_decode' <<<"$l4f")
[ "$(jq -r .source <<<"$sd")" = "llama-server /metrics" ] || fail "spec_decode: $sd"
fdir=$MXD_STATE/runs/$f/1
ctr() { awk -v n="$2" '$1 == n { printf "%.0f", $2 }' "$1"; }
inc() { echo $(($(ctr "$fdir/l4-metrics-0-after.txt" "$1") - $(ctr "$fdir/l4-metrics-0-before.txt" "$1"))); }
drafted=$(inc llamacpp:spec_decode_num_draft_tokens_total)
accepted=$(inc llamacpp:spec_decode_num_accepted_tokens_total)
drafts=$(inc llamacpp:spec_decode_num_drafts_total)
[ "$drafted" -gt 0 ] || fail "no draft token in the window: $sd"
awk -v a="$accepted" -v d="$drafted" -v n="$drafts" -v r="$(jq -r .acceptance_rate <<<"$sd")" \
        -v l="$(jq -r .mean_acceptance_length <<<"$sd")" \
        'BEGIN { exit !((r - a / d) ^ 2 < 1e-18 && (l - 1 - a / n) ^ 2 < 1e-18) }' ||
        fail "rate/length are not the counters' (accepted $accepted, drafted $drafted, drafts $drafts): $sd"
dt=$(jq -c '.metrics.serving[0].draft_timings' <<<"$l4f")
[ "$(jq -r .draft_n <<<"$dt")/$(jq -r .draft_n_accepted <<<"$dt")" = "$drafted/$accepted" ] ||
        fail "timings $dt, /metrics $drafted drafted $accepted accepted"
ok "rate $(jq -r .acceptance_rate <<<"$sd"), length $(jq -r .mean_acceptance_length <<<"$sd"), $drafted drafted"
real_done
