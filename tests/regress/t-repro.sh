#!/usr/bin/env bash
# Reproduction of a run's server start (issue 16 item 6): show rN prints the command and environment as
# the attempt started them ({port}, {host}, {model}, {run_dir} expanded; no placeholder left), and
# mxmatrix repro rN writes a shell script (set -eu, cd, export, exec, every word quoted) that starts
# the same server again on the same port: the test runs it and asks the server's /health.
# Exit 0 pass, 1 fail, 77 skip.
set -u
. "$(dirname "$0")/lib.sh"

[ -x "$MX_BUILD_DIR/tests/sim/mxsim" ] || skip "mxsim is not built"
command -v curl >/dev/null || skip "curl is not installed"
export PATH=$MX_BUILD_DIR/tests/sim:$PATH
MXD_MATRIX=$T/faults.json
# A value that needs quoting (a quote, spaces, a placeholder) and one that needs none.
jq '.target.env += {"MX_QUOTED": "it'"'"'s {model} in {run_dir}", "MX_PLAIN": "plain"}' \
        "$MX_SOURCE_DIR/tests/fixtures/daemon/faults.json" >"$MXD_MATRIX" || fail "jq"
mxd_start

step="a queued run shows the template"
mx pause >/dev/null || fail "pause"
job=$(submit feature=sim fault=none levels=L1)
run=$(job_runs "$job" | head -1)
expect_exit 0 mx show "r$run"
has "$T/out" "the matrix's template"
has "$T/out" "--port {port}"
expect_exit 1 mx repro "r$run"
has "$T/err" "has not started yet"
mx resume >/dev/null || fail "resume"
ok "$step"

step="the attempt's command, expanded"
follow_job "$job"
[ "$(run_field "$run" '.run.result')" = pass ] || fail "r$run: $(run_field "$run" '.run.result')"
cmd=$(run_field "$run" '.run.attempt_history[-1].command')
jq -e '.argv[0] == "mxsim" and (.argv | index("--port")) != null' <<<"$cmd" >/dev/null || fail "argv: $cmd"
port=$(jq -r '.argv[(.argv | index("--port")) + 1]' <<<"$cmd")
[[ $port =~ ^[0-9]+$ ]] || fail "the port is not a number: $port"
rundir=$(jq -r '.cwd' <<<"$cmd")
[ -d "$rundir" ] || fail "cwd $rundir is not a directory"
jq -e --arg d "$rundir" '.env | index("MX_QUOTED=it'"'"'s openai/gpt-oss-120b in " + $d) != null' <<<"$cmd" \
        >/dev/null || fail "MX_QUOTED not expanded: $cmd"
jq -e '[.argv[], .env[]] | map(select(test("\\{(port|host|model|run_dir|served_model_name)\\}"))) | length == 0' \
        <<<"$cmd" >/dev/null || fail "a placeholder is left: $cmd"
# Only the matrix's variables, not the daemon's environment.
jq -e '.env | map(select(startswith("MX_REGRESS_TAG=") or startswith("PATH="))) | length == 0' <<<"$cmd" \
        >/dev/null || fail "the daemon's environment leaked into the record: $cmd"
expect_exit 0 mx show "r$run"
has "$T/out" "--port $port"
has "$T/out" "env: MX_QUOTED='it'\\''s openai/gpt-oss-120b in $rundir'"
lacks "$T/out" "{port}"
lacks "$T/out" "{run_dir}"
ok "$step: port $port, cwd $rundir"

step="repro writes a script that starts the same server"
expect_exit 0 mx repro "r$run"
cp "$T/out" "$T/repro.sh"
has "$T/repro.sh" "set -eu"
has "$T/repro.sh" "export MX_PLAIN=plain"
has "$T/repro.sh" "exec mxsim serve openai/gpt-oss-120b"
sh -n "$T/repro.sh" || fail "the script does not parse"
# The script's own environment: what it exports must arrive verbatim.
env -u MX_QUOTED MX_REGRESS_TAG="$MX_REGRESS_TAG" sh "$T/repro.sh" >"$T/repro.log" 2>&1 &
rpid=$!
healthy() { curl -sf "http://127.0.0.1:$port/health" >/dev/null; }
wait_until "the reproduced server to answer on port $port" healthy
got=$(tr '\0' '\n' <"/proc/$rpid/environ" | grep '^MX_QUOTED=') || fail "MX_QUOTED not in the server's environment"
[ "$got" = "MX_QUOTED=it's openai/gpt-oss-120b in $rundir" ] || fail "MX_QUOTED arrived as: $got"
[ "$(readlink "/proc/$rpid/cwd")" = "$rundir" ] || fail "cwd $(readlink "/proc/$rpid/cwd"), want $rundir"
kill "$rpid"
wait "$rpid" 2>/dev/null
ok "$step"

step="repro --attempt and bad targets"
expect_exit 5 mx repro "r$run" --attempt 7
expect_exit 2 mx repro "$job"
has "$T/err" "rRUN"
mxj repro "r$run" | jq -e '.attempt == 1 and (.command.argv | length) > 3' >/dev/null || fail "--json"
ok "$step"
