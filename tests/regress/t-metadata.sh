#!/usr/bin/env bash
# Reproducibility metadata of a run (seed 001 Phase 9): a private daemon runs
# the command matrix with a metadata section naming a temporary git work tree
# as "vllm", a clean one as "flashinfer", a missing one, a pip_freeze command
# and probes that fail in each way. show --json must hold the trees' real SHAs
# and dirty flags, this host's hostname and kernel, each failed probe as an
# error while the run still passes, one pip freeze blob for two attempts, and
# the human show a summary; a cancel during collection ends the run at once.
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

command -v git >/dev/null || skip "git is not installed"

step="git trees"
g() { git_t "$@"; }
for t in vllm flashinfer; do
        mkdir -p "$T/$t"
        g -C "$T/$t" init -q || fail "git init"
        echo "$t" >"$T/$t/README"
        g -C "$T/$t" add README && g -C "$T/$t" commit -qm "first" || fail "git commit"
done
echo "local change" >>"$T/vllm/README" # vllm is dirty, flashinfer clean
vllm_sha=$(git -C "$T/vllm" rev-parse HEAD)
fi_sha=$(git -C "$T/flashinfer" rev-parse HEAD)
ok "vllm $vllm_sha (dirty), flashinfer $fi_sha"

step="matrix"
MXD_MATRIX=$T/matrix.json
# A pip freeze stand-in whose output is large and the same every time.
cat >"$T/freeze.sh" <<'EOF'
#!/bin/sh
i=0
while [ $i -lt 400 ]; do echo "package-$i==1.$i"; i=$((i + 1)); done
echo "nvidia-cudnn-cu12==9.10.2.21"
EOF
chmod +x "$T/freeze.sh"
jq --arg v "$T/vllm" --arg f "$T/flashinfer" --arg m "$T/missing" --arg p "$T/freeze.sh" '. + {metadata: {
        sources: {vllm: $v, flashinfer: $f, gone: $m},
        pip_freeze: [$p],
        timeout_ms: 2000,
        probes: {
                cuda: {file: "/nonexistent/version.json"},
                cudnn: ["sh", "-c", "echo no header here >&2; exit 3"],
                gpu: ["mx-no-such-command-nvidia-smi"],
                slow: {command: ["sleep", "30"], timeout_ms: 300},
                big: {command: ["sh", "-c", "yes metadata"], output_max_bytes: 4096},
                kernel_release: ["uname", "-r"],
                docker_image: null
        }}}' "$MX_FIXTURE_MATRIX" >"$MXD_MATRIX" || fail "jq"
expect_exit 0 mx matrix check "$MXD_MATRIX"
ok "the matrix with a metadata section checks"

step="bad metadata sections are refused with their place"
bad() {
        jq "$1" "$MX_FIXTURE_MATRIX" >"$T/bad.json" || fail "jq"
        expect_exit 3 mx matrix check "$T/bad.json"
        has "$T/err" "$2"
}
bad '. + {metadata: {sources: {vllm: "relative/path"}}}' "not an absolute path"
bad '. + {metadata: {probes: {cuda: {command: ["x"], file: "/y"}}}}' "either \"command\" or \"file\""
bad '. + {metadata: {frobnicate: 1}}' "unknown key 'frobnicate' in the metadata section"
bad '. + {metadata: {timeout_ms: 0}}' "timeout_ms"
bad '. + {metadata: {pip_freeze: ["a"], probes: {pip_freeze: ["b"]}}}' "set it in one place"
ok "5 bad sections, each named"

step="start"
mxd_start
ok "daemon pid $MXD_PID"

step="a run's metadata"
job=$(submit feature=fast mode=ok)
run=$(job_runs "$job" | head -1)
follow_job "$job" || fail "job $job did not pass: $(cat "$T/follow")"
out=$(mxj show "r$run")
[ "$(jq -r .run.result <<<"$out")" = pass ] || fail "the run did not pass: $(jq -c .run <<<"$out")"
meta=$(jq -c '.run.attempt_history[0].metadata' <<<"$out")
[ "$(jqv "$meta" .sources.vllm.sha)" = "$vllm_sha" ] || fail "vllm sha: $(jq -c .sources <<<"$meta")"
[ "$(jq -r .sources.vllm.dirty <<<"$meta")" = true ] || fail "vllm is dirty"
jqv "$meta" '.sources.vllm.status | test("README")' >/dev/null
[ "$(jqv "$meta" .sources.flashinfer.sha)" = "$fi_sha" ] || fail "flashinfer sha"
[ "$(jq -r .sources.flashinfer.dirty <<<"$meta")" = false ] || fail "flashinfer is clean"
jqv "$meta" '.sources.gone.error | test("git rev-parse")' >/dev/null
[ "$(jq -r .summary.git_sha_vllm <<<"$meta")" = "$vllm_sha" ] || fail "summary sha"
ok "vllm ${vllm_sha:0:12} dirty, flashinfer clean, a missing tree an error"

step="hostname and kernel"
[ "$(jqv "$meta" .items.hostname.value)" = "$(uname -n)" ] || fail "hostname: $(jq -c .items.hostname <<<"$meta")"
jqv "$meta" ".items.kernel.value | contains(\"$(uname -r)\")" >/dev/null
[ "$(jqv "$meta" .items.kernel_release.value)" = "$(uname -r)" ] || fail "an extra probe's value"
ok "$(uname -n), $(uname -r)"

step="failed probes are recorded, the run still passed"
jqv "$meta" '.items.cuda.error | test("exited with status 1: cat: /nonexistent/version.json")' >/dev/null
jqv "$meta" '.items.cudnn.error | test("exited with status 3: no header here")' >/dev/null
jqv "$meta" '.items.gpu.error | test("mx-no-such-command-nvidia-smi")' >/dev/null
jqv "$meta" '.items.slow.error | test("timed out")' >/dev/null
[ "$(jq -r .items.big.truncated <<<"$meta")" = true ] || fail "big output is not marked truncated"
[ "$(jq -r '.items.big.error // "none"' <<<"$meta")" = none ] || fail "a capped probe is not an error"
[ "$(jq -r .items.docker_image.skipped <<<"$meta")" = "turned off in the matrix" ] || fail "docker_image off"
ok "missing file, exit 3, missing command, timeout, capped output, turned off"

step="the run's own parameters"
jqv "$meta" '.run.env | index("MODE=ok")' >/dev/null
jqv "$meta" '.run.argv[0] == "sh"' >/dev/null
jqv "$meta" '.run.config.mode == "ok"' >/dev/null
ok "command line, env, configuration"

step="pip freeze is a blob, stored once"
hash=$(jqv "$meta" .items.pip_freeze.output.blob)
[ "$(jq -r --arg h "$hash" '.run.metadata_blobs[$h] | split("\n") | length' <<<"$out")" -ge 400 ] ||
        fail "the blob is not in show --json"
[ "$(jq -r .summary.cudnn_version <<<"$meta")" = "nvidia-cudnn-cu12==9.10.2.21" ] ||
        fail "cuDNN from the freeze: $(jq -c .summary <<<"$meta")"
expect_exit 0 mx retry "r$run" --all
wait_until "r$run to run again" run_in_state "$run" done
out2=$(mxj show "r$run")
[ "$(jq -r '.run.attempt_history | length' <<<"$out2")" = 2 ] || fail "two attempts"
[ "$(jq -r '.run.attempt_history[1].metadata.items.pip_freeze.output.blob' <<<"$out2")" = "$hash" ] ||
        fail "the second attempt names another blob"
n=$(sqlite3 "$MXD_STATE/queue.db" "SELECT count(*) FROM meta_blobs WHERE hash = '$hash'" 2>/dev/null ||
        echo skip)
[ "$n" = skip ] || [ "$n" = 1 ] || fail "$n copies of the freeze in meta_blobs"
ok "blob $hash once for 2 attempts ($n row)"

step="human show"
expect_exit 0 mx show "r$run"
has "$T/out" "metadata: host $(uname -n)"
has "$T/out" "vllm ${vllm_sha:0:12}, dirty"
has "$T/out" "flashinfer ${fi_sha:0:12}, clean"
has "$T/out" "pip freeze: 401 packages (blob $hash)"
has "$T/out" "failed probes:"
has "$T/out" "slow: timed out"
ok "summary lines"

step="a cancel while the probes run"
# A probe that would run for a minute: the run shows level "metadata", and a cancel ends it at once
# with nothing of it left.
jq '.metadata.probes.hang = {command: ["sleep", "61"], timeout_ms: 120000}' "$MXD_MATRIX" >"$T/m2.json" &&
        mv "$T/m2.json" "$MXD_MATRIX" || fail "jq"
expect_exit 0 mx reload
job=$(submit feature=fast mode=ok)
run=$(job_runs "$job" | head -1)
in_metadata() { [ "$(mxj status | jq -r '.current.level // empty')" = metadata ]; }
wait_until "r$run to collect its metadata" in_metadata
tag=$(run_field "$run" '.run.attempt_history[0].tag')
[ -n "$(pids_with "MXMATRIX_RUN_TAG=$tag")" ] || fail "no probe carries the run tag $tag"
t0=$(now_ms)
expect_exit 0 mx cancel "r$run"
wait_until "r$run to end" run_in_state "$run" done
[ "$(run_field "$run" '.run.result')" = cancelled ] || fail "result $(run_field "$run" '.run.result')"
[ $(($(now_ms) - t0)) -lt 30000 ] || fail "the cancel waited for the probe"
no_tagged() { [ -z "$(pids_with "MXMATRIX_RUN_TAG=$tag")" ]; }
wait_until "the probes of r$run to be gone" no_tagged
expect_exit 0 mx cancel "$job"
ok "cancelled in $(($(now_ms) - t0)) ms, no process left with its tag"

step="stop"
mxd_stop
[ "$MXD_STATUS" -eq 0 ] || fail "daemon exited $MXD_STATUS"
ok "daemon stopped"
