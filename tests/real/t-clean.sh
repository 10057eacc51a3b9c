#!/usr/bin/env bash
# t-clean.sh MODEL (llama or gptoss): the clean configuration of the real
# llama-server passes L1 to L5 (tests/real/README.md).
# A private daemon with tests/real/llama-server-cpu.json (this machine's server
# and a model generated at test time) runs feature fa-on: the baseline
# (fa=auto) and the feature run (fa=on), every level of the matrix's scaled
# settings. Asserted through "mxmatrix show --json":
#  - both runs complete with result pass; L1, L1.5, L2, L3, L4 pass on both;
#  - the baseline's L5 is skipped (it is the baseline), the feature's L5
#    passes against the baseline run;
#  - L1.5 read the real log's context line (flash_attn = auto / enabled);
#  - L4's pp rows asked 512 new tokens and the server's log evaluated them:
#    every "prompt eval time = ... / N tokens" line of the measured pp
#    requests says at least 512 (no prompt cache reuse, no short prompt).
# Exit 0 pass, 1 fail, 77 skip (no server here: see lib.sh).
set -u
MODEL=${1:?usage: t-clean.sh llama|gptoss}
source "$(dirname "$0")/lib.sh"
mx_test_name=t-clean-$MODEL

step="server and model"
real_server
real_model "$MODEL"
ok "$REAL_SERVER, $REAL_MODEL"

step="matrix"
MXD_MATRIX=$T/matrix.json
real_matrix "$MXD_MATRIX"
expect_exit 0 mx matrix check "$MXD_MATRIX"
mxd_start
ok "daemon pid $MXD_PID"

step="feature fa-on: baseline and feature run, L1-L5"
job=$(submit feature=fa-on)
mapfile -t runs < <(job_runs "$job")
[ "${#runs[@]}" -eq 2 ] || fail "runs: ${runs[*]}"
b=${runs[0]} f=${runs[1]}
[ "$(run_field "$b" '.run.reasons | index("baseline") != null')" = true ] || fail "the baseline is not first"
MX_WAIT_S=420 follow_job "$job"
for r in "$b" "$f"; do
        echo "     r$r $(run_field "$r" '.run.config_key'): $(verdicts "$r")"
done

step="outcome"
for r in "$b" "$f"; do
        o=$(run_field "$r" "$RESULT_ATTEMPT"' as $a | "\($a.outcome) \(.run.result)"')
        if [ "$o" = "completed pass" ]; then
                ok "r$r completed, pass"
        else
                echo "FAIL [$step]: r$r $o, want completed pass" >&2
                REAL_ERRORS=$((REAL_ERRORS + 1))
        fi
done

step="L1"
for r in "$b" "$f"; do expect_level "$r" L1 pass; done
step="L1.5 (the real log's context line)"
expect_level "$b" L1.5 pass '[.metrics.log.must_see[] | select(.matched) | .subject] |
        any(test("llama_context: flash_attn +=  *auto"))' "matched the real 'flash_attn = auto' line"
expect_level "$f" L1.5 pass '[.metrics.log.must_see[] | select(.matched) | .subject] |
        any(test("llama_context: flash_attn += enabled"))' "matched the real 'flash_attn = enabled' line"
step="L2"
for r in "$b" "$f"; do expect_level "$r" L2 pass; done
step="L3"
for r in "$b" "$f"; do expect_level "$r" L3 pass; done
step="L4"
for r in "$b" "$f"; do
        expect_level "$r" L4 pass '.metrics.valid == true and ([.metrics.tests[] | select(.kind == "pp")] | length) == 2' \
                "valid, with a pp row per depth"
done
step="L5"
expect_level "$b" L5 skipped '.message | startswith("this run is the baseline")' "skipped as the baseline"
expect_level "$f" L5 pass ".message | test(\"against the baseline r$b\")" "compared with the baseline r$b"

step="L4's pp prompts, checked against the server's log"
# The server's own count of the prompt tokens it evaluated, for the feature run's L4.
log=$(mx logs "r$f" 2>/dev/null)
n=$(grep -cE 'prompt eval time = .* / +[0-9]+ tokens' <<<"$log")
if [ "$n" -eq 0 ]; then
        echo "FAIL [$step]: r$f: no 'prompt eval time' line in the server's log" >&2
        REAL_ERRORS=$((REAL_ERRORS + 1))
else
        big=$(grep -oE 'prompt eval time = .* / +[0-9]+ tokens' <<<"$log" | grep -oE '[0-9]+ tokens' |
                awk '$1 >= 512' | wc -l)
        # 2 depths x (warmup + 3 runs) pp requests, each evaluating >= 512 new tokens
        if [ "$big" -ge 8 ]; then
                ok "$big of $n prompt evaluations are of 512 tokens or more"
        else
                echo "FAIL [$step]: r$f: only $big of $n prompt evaluations reach 512 tokens (want 8 pp requests)" >&2
                REAL_ERRORS=$((REAL_ERRORS + 1))
        fi
fi

real_done
