#!/usr/bin/env bash
# mxmatrix bisect through a private daemon and the real client (issue 19):
# a git repository made here holds a tiny "server" (build.sh writes out/serve,
# which starts mxsim with the commit's token time); 10 commits after the good
# one, tg32 30 % slower from a planted commit on, one commit whose build
# fails. The bisection must
#  - name the planted commit, with both sides' numbers, in at most
#    ceil(log2 N) + 1 (the good commit's reference start) + 1 (the skipped
#    commit) builds, counted by their logs;
#  - skip the commit whose build fails, as git bisect skip does;
#  - survive kill -9 of the daemon in the middle and finish with that answer;
#  - never touch the user's checkout.
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

command -v git >/dev/null || skip "git is not installed"
command -v sqlite3 >/dev/null || skip "sqlite3 is not installed"
[ -x "$MX_BUILD_DIR/tests/sim/mxsim" ] || skip "mxsim is not built"

step="git tree"
g() { git_t "$@"; }
R=$T/srv
mkdir -p "$R"
cat >"$R/build.sh" <<'EOF'
#!/bin/sh
# the tiny server's build: out/serve starts mxsim at this commit's token time
set -e
[ ! -e broken ] || { echo "build.sh: this commit does not build" >&2; exit 1; }
sleep 0.3
mkdir -p out
tok=$(cat token_ms)
faults=$(cat faults 2>/dev/null || :)
printf '#!/bin/sh\nexport MXSIM_TOKEN_MS=%s MXSIM_FAULTS=%s\nexec "$MXSIM_BIN" serve "$@"\n' "$tok" "$faults" >out/serve
chmod +x out/serve
echo "built with MXSIM_TOKEN_MS=$tok"
EOF
echo out/ >"$R/.gitignore"
echo 4 >"$R/token_ms"
g -C "$R" init -q && g -C "$R" add -A && g -C "$R" commit -qm "good" || fail "git init"
shas=("$(git -C "$R" rev-parse HEAD)")
N=10 PLANTED=7 BROKEN=5
for i in $(seq 1 $N); do
        echo "$i" >"$R/note"
        [ "$i" -eq "$PLANTED" ] && echo 6 >"$R/token_ms" # 4 -> 6 ms a token: tg32 a third slower
        if [ "$i" -eq "$BROKEN" ]; then touch "$R/broken"; else rm -f "$R/broken"; fi
        g -C "$R" add -A && g -C "$R" commit -qm "commit $i" || fail "git commit $i"
        shas+=("$(git -C "$R" rev-parse HEAD)")
done
head_before=$(git -C "$R" rev-parse HEAD)
status_before=$(git -C "$R" status --porcelain --ignored)
ok "$N commits after ${shas[0]:0:12}; planted at $PLANTED (${shas[$PLANTED]:0:12}), build broken at $BROKEN"

step="matrix"
MXD_MATRIX=$T/matrix.json
jq -n --arg sim "$MX_BUILD_DIR/tests/sim/mxsim" --arg src "$R" --arg lock "$T/gpu.lock" '{
  matrix: 1, name: "bisect",
  target: {profile: "vllm", model: "openai/gpt-oss-120b", served_model_name: "gpt-oss-120b",
           command: ["{source_dir}/out/serve", "{model}", "--host", "{host}", "--port", "{port}",
                     "--served-model-name", "{served_model_name}", "--disable-uvicorn-access-log"],
           env: {MXSIM_BIN: $sim, MXSIM_LOAD_S: "0.1", MXSIM_WATCHDOG_S: "1", MXSIM_SHUTDOWN_WAIT_S: "1",
                 MXSIM_GPU_LOCK: $lock, MXSIM_PREFILL_TPS: "10000"},
           ready: {timeout: "30s", interval: "100ms"}},
  axes: [{name: "kernel", values: [{name: "marlin", env: {VLLM_MXFP4_MOE_KERNEL: "marlin"}},
                                   {name: "cutlass", env: {VLLM_MXFP4_MOE_KERNEL: "gemm"}}]}],
  baseline: {kernel: "marlin"},
  features: [{name: "cutlass", priority: 1, set: {kernel: "cutlass"}, hypothesis: "faster", criteria: [{metric: "tg32_tps", min_gain_pct: 5}], status: "in-progress"}],
  levels: {run: ["L1", "L4"], L4: {pp: [512], tg: [32], depth: [0], runs: 4, warmup: 1}},
  metadata: {sources: {vllm: $src}, timeout_ms: 5000},
  bisect: {build: ["sh", "build.sh"], source: "vllm"}
}' >"$MXD_MATRIX" || fail "jq"
expect_exit 0 mx matrix check "$MXD_MATRIX"
jq '.bisect.build = []' "$MXD_MATRIX" >"$T/bad.json"
expect_exit 3 mx matrix check "$T/bad.json"
has "$T/err" "the build command must have at least one word"
ok "checks; an empty build command is refused"

step="start"
mxd_start
ok "daemon pid $MXD_PID"

step="bad requests"
expect_exit 2 mx bisect --repo "$R" --good "${shas[0]}" --bad HEAD --metric tg32 --level L1
has "$T/err" "one of them"
expect_exit 2 mx bisect --repo relative/path --good a --bad b --level L1
has "$T/err" "not an absolute path to a git work tree"
expect_exit 2 mx bisect --repo "$R" --good a --bad b --metric tg32 --threshold 200
has "$T/err" "not a percentage"
expect_exit 2 mx bisect kernel=nosuch --repo "$R" --good a --bad b --level L1
has "$T/err" "'kernel=nosuch': axis 'kernel' has no such value (values: marlin, cutlass)"
# matrix/plan's parsing (mx_plan_split_pins, mx_plan_parse_pin): nothing dropped, a terminal's bytes escaped
expect_exit 2 mx bisect kernel=marlin,junk --repo "$R" --good a --bad b --level L1
has "$T/err" "'junk' is not of the form axis=value"
expect_exit 2 mx bisect "kernel=marlin,kernel=cutlass" --repo "$R" --good a --bad b --level L1
has "$T/err" "axis pinned twice"
expect_exit 2 mx bisect "kernel=x$(printf '\033')[2J" --repo "$R" --good a --bad b --level L1
grep -q "$(printf '\033')" "$T/err" && fail "the terminal escape reached the error: $(cat -v "$T/err")"
expect_exit 2 mx bisect --repo "$R" --good=--output=x --bad HEAD --level L1
has "$T/err" "may not be empty or start with '-'"
expect_exit 2 mx bisect nosuch --repo "$R" --good a --bad b --level L1
has "$T/err" "no feature 'nosuch' in the matrix"
expect_exit 2 mx bisect --repo "$R" --good a --bad b --level L3
has "$T/err" "the matrix's levels do not include L3"
out=$(mxj bisect --repo "$R" --good nosuchcommit --bad HEAD --level L1)
bad_id=$(jqv "$out" .bisection)
wait_until "bisection $bad_id to fail" sh -c "'$MX_BIN' --json bisect --status $bad_id | jq -e '.bisection.state == \"failed\"' >/dev/null"
mx bisect --status "$bad_id" >"$T/out"
has "$T/out" "cannot resolve the commits"
ok "refused with reasons; an unknown commit fails the bisection: $(tail -1 "$T/out" | cut -c1-100)"

step="bisect, kill -9 in the middle"
out=$(mxj bisect kernel=marlin --repo "$R" --good "${shas[0]}" --bad HEAD --metric tg32 --threshold 10)
id=$(jqv "$out" .bisection)
jqv "$out" '.config_key == "kernel=marlin"' >/dev/null
status_of() { mxj bisect --status "$id"; }
# kill once the third step (after the reference and the first midpoint) is building or running
third_started() { [ "$(status_of | jq '.bisection.steps | length')" -ge 3 ]; }
MX_WAIT_S=180 wait_until "the third step of bisection $id" third_started
before=$(status_of)
mxd_stop KILL
ok "killed during step 3 ($(jq -r '.bisection.steps[2] | "\(.idx) \(.state)"' <<<"$before"))"
mxd_start
# and again while the fourth step's run is queued or running (its build done)
fourth_runs() { [ "$(status_of | jq -r '.bisection.steps[3].state // empty')" = running ]; }
MX_WAIT_S=180 wait_until "the fourth step of bisection $id to run" fourth_runs
mxd_stop KILL
ok "killed again during step 4's run"
mxd_start
MX_WAIT_S=300 wait_until "bisection $id to end" sh -c "'$MX_BIN' --json bisect --status $id | jq -e '.bisection.state != \"running\"' >/dev/null"
final=$(status_of)
jqv "$final" '.bisection.state == "done"' >/dev/null
ok "resumed and done: $(jq -r .bisection.message <<<"$final" | cut -c1-160)"

step="the answer"
jqv "$final" ".bisection.result.first_bad == \"${shas[$PLANTED]}\"" >/dev/null
jqv "$final" ".bisection.result.last_good == \"${shas[$((PLANTED - 1))]}\"" >/dev/null
# both sides' numbers: the first bad commit's tg32 against the good commit's, a third slower
jqv "$final" '.bisection.result.bad.decision | .metric == "tg32" and .decision == "regression" and .delta_pct < -20' >/dev/null
jqv "$final" '.bisection.result.good.message | test("tg32 [0-9.]+ against [0-9.]+ at the good commit")' >/dev/null
mx bisect --status "$id" >"$T/out"
has "$T/out" "first bad commit ${shas[$PLANTED]}"
ok "first bad ${shas[$PLANTED]:0:12}: $(jq -r .bisection.result.bad.message <<<"$final")"

step="show and follow a step's job"
sjob=$(jq -r ".bisection.steps[] | select(.idx == $PLANTED) | .runs[0].job" <<<"$final")
srun=$(jq -r ".bisection.steps[] | select(.idx == $PLANTED) | .runs[0].run" <<<"$final")
expect_exit 0 mx show "$sjob"
has "$T/out" "bisect $id"
follow_job "$sjob" || fail "follow $sjob exited $?"
[ "$(run_field "$srun" '.run.config_key')" = kernel=marlin ] || fail "r$srun is not kernel=marlin"
l4=$(level_of "$srun" L4)
jqv "$l4" '.verdict == "pass" and (.metrics.tests[] | select(.test == "tg32") | .tps.mean > 0)' >/dev/null
ok "job $sjob (feature 'bisect $id') shows and follows like any job; r$srun's L4 is one of the starts that decided"

step="the skipped build"
jqv "$final" ".bisection.steps[] | select(.idx == $BROKEN) | .state == \"skip\" and (.message | test(\"build failed\"))" >/dev/null
has "$MXD_STATE/bisect/$id/build-$BROKEN-${shas[$BROKEN]:0:12}.log" "this commit does not build"
ok "commit $BROKEN skipped: $(jq -r ".bisection.steps[] | select(.idx == $BROKEN) | .message" <<<"$final" | cut -c1-100)"

step="builds counted"
builds=$(find "$MXD_STATE/bisect/$id" -name 'build-*.log' | wc -l)
lg=0
while [ $((1 << lg)) -lt "$N" ]; do lg=$((lg + 1)); done
# ceil(log2 N) midpoints + the good commit's reference + the commit that did not build
[ "$builds" -le $((lg + 2)) ] || fail "$builds builds for $N commits, more than ceil(log2 $N) + 2 = $((lg + 2))"
[ "$builds" -eq "$(jq '.bisection.steps | length' <<<"$final")" ] || fail "$builds build logs, $(jq '.bisection.steps | length' <<<"$final") steps"
# every step's run recorded the commit it ran (metadata read from its own work tree)
for st in $(jq -r '.bisection.steps[] | select(.state != "skip") | "\(.idx):\(.runs[0].run)"' <<<"$final"); do
        idx=${st%%:*} run=${st#*:}
        got=$(db_query "SELECT s.sha FROM attempt_sources s JOIN attempts a ON a.id = s.attempt_id WHERE a.run_id = $run AND s.name = 'vllm' ORDER BY a.id DESC LIMIT 1")
        [ "$got" = "${shas[$idx]}" ] || fail "r$run of step $idx recorded commit '$got', want ${shas[$idx]}"
done
ok "$builds builds for $N commits (ceil(log2 N) = $lg); every run recorded its own commit"

step="the user's checkout"
[ "$(git -C "$R" rev-parse HEAD)" = "$head_before" ] || fail "HEAD moved"
[ "$(git -C "$R" status --porcelain --ignored)" = "$status_before" ] || fail "the checkout changed: $(git -C "$R" status --porcelain --ignored)"
wait_until "the work trees to be removed" sh -c "[ \$(git -C '$R' worktree list | wc -l) -eq 1 ]"
ok "HEAD and files untouched; the bisection's work trees removed"

step="a level decides"
# another tree: L4 fails (mxsim streams null content, L4 finds no text) from commit 3 of 6 on
R2=$T/srv2
mkdir -p "$R2"
cp "$R/build.sh" "$R/.gitignore" "$R2/" && echo 4 >"$R2/token_ms"
g -C "$R2" init -q && g -C "$R2" add -A && g -C "$R2" commit -qm good || fail "git init"
shas2=("$(git -C "$R2" rev-parse HEAD)")
for i in 1 2 3 4 5 6; do
        echo "$i" >"$R2/note"
        [ "$i" -eq 3 ] && echo null-content >"$R2/faults"
        g -C "$R2" add -A && g -C "$R2" commit -qm "commit $i" || fail "git commit $i"
        shas2+=("$(git -C "$R2" rev-parse HEAD)")
done
out=$(mxj bisect cutlass --repo "$R2" --good "${shas2[0]}" --bad "${shas2[6]}" --level L4)
id3=$(jqv "$out" .bisection)
jqv "$out" '.config_key == "kernel=cutlass"' >/dev/null
timeout 300 "$MX_BIN" bisect --status "$id3" --wait >"$T/out" 2>"$T/err" || fail "bisect --wait exited $?"
has "$T/out" "first bad commit ${shas2[3]}: L4 fail"
final=$(mxj bisect --status "$id3")
jqv "$final" ".bisection.result.first_bad == \"${shas2[3]}\" and .bisection.result.bad.decision.verdict == \"fail\"" >/dev/null
[ "$(jq '.bisection.steps | length' <<<"$final")" -le 3 ] || fail "more than ceil(log2 6) = 3 builds"
jqv "$final" '[.bisection.steps[] | select(.state == "good") | .decision.verdict] | all(. == "pass")' >/dev/null
ok "$(tail -1 "$T/out" | cut -c1-150)"

step="another tree needs an administrator"
if command -v setpriv >/dev/null; then
        mkdir -m 0755 "$T/bin" && cp "$MX_BIN" "$T/bin/mxmatrix" || fail "cp"
        chmod 0777 "$MXMATRIX_SOCKET" 2>/dev/null
        setpriv --reuid=65534 --regid=65534 --clear-groups "$T/bin/mxmatrix" bisect --repo "$R2" \
                --good "${shas2[0]}" --bad "${shas2[6]}" --level L4 >"$T/out" 2>"$T/err"
        rc=$?
        if [ "$rc" -eq 69 ]; then
                ok "skipped: uid 65534 cannot reach the socket here"
        else
                [ "$rc" -eq 4 ] || fail "uid 65534 bisecting another tree exited $rc, want 4"
                has "$T/err" "only root or the admin group may bisect a tree other than the matrix's bisect.source"
                setpriv --reuid=65534 --regid=65534 --clear-groups "$T/bin/mxmatrix" --json bisect --repo "$R" \
                        --good "${shas[0]}" --bad HEAD --level L4 >"$T/out" 2>"$T/err" ||
                        fail "uid 65534 bisecting the matrix's own tree exited $?"
                expect_exit 0 mx bisect --cancel "$(jq -r .bisection "$T/out")"
                ok "uid 65534 refused for $R2, allowed for the matrix's bisect.source $R; root may both"
        fi
else
        ok "skipped: no setpriv"
fi

step="cancel"
out=$(mxj bisect --repo "$R" --good "${shas[0]}" --bad HEAD --level L1)
id2=$(jqv "$out" .bisection)
expect_exit 0 mx bisect --cancel "$id2"
has "$T/out" "cancelled"
expect_exit 1 mx bisect --status "$id2"
has "$T/out" "cancelled by a user"
ids=()
for i in 1 2 3 4; do
        ids+=("$(jqv "$(mxj bisect --repo "$R" --good "${shas[0]}" --bad HEAD --level L4)" .bisection)")
done
"$MX_BIN" bisect --repo "$R" --good "${shas[0]}" --bad HEAD --level L4 >"$T/out" 2>"$T/err" && fail "a fifth bisection was taken"
has "$T/err" "4 bisections of yours are running (at most 4)"
for i in "${ids[@]}"; do expect_exit 0 mx bisect --cancel "$i"; done
expect_exit 5 mx bisect --status 999
ok "bisection $id2 cancelled; a fifth running bisection refused; an unknown one is not found"

step="stop"
mxd_stop
[ "$MXD_STATUS" -eq 0 ] || fail "mxmatrixd exited $MXD_STATUS on SIGTERM"
ok "the daemon stops cleanly (a sanitizer build reports leaks here)"
