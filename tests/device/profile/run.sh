#!/usr/bin/env bash
# Device check of issue 18 item 8: where decode time goes, on the CUDA llama-server under Nsight
# Compute with two generated gpt-oss models that differ only in --layers (2 and 4).
#   usage: run.sh STAGE OUT PHASE...    (STAGE: made by tests/device/real/stage.sh; OUT: kept files)
# Phases (each fits one device call of at most 10 minutes; WORK, default
# /tmp/mxmatrix-device-profile, is kept between calls while the machine stays warm):
#   setup    unpack llama-server (STAGE/cuda's parts; else MX_LLAMA_SERVER, else the CPU server
#            of ../shared/targets), generate the two models into WORK: on a GPU gpt-oss-20b's
#            per-layer shapes (about 50 and 100 s), else the generator's small defaults
#   profile  llama-profile-ncu.json, feature four-layers: the 2-layer baseline run and the 4-layer
#            run, each L1 (one completion of 16 tokens) and L1.5 under ncu; then the decode
#            workload of each run (the decode steps of L1's completion) written beside its report
#            as profile-workload.json where the capture (issue 18 item 1) wrote none, and
#            mxmatrix report analysis of the job (VLLM_BASELINE_ANALYSIS.md, the diff of 4 layers
#            against 2)
# Without ncu (this machine has no GPU) the profile phase runs the same job without the profiler,
# says so in one line and leaves OUT/profile/no-ncu; check.sh then skips its profile checks.
# OUT gets the job's export (report document), show --json of each run, the analysis, the runs'
# directories as runs.tar.xz and the daemon's log; tests/device/profile/check.sh OUT checks them.
set -u
stage=${1:?usage: run.sh STAGE OUT PHASE...}
out=${2:?usage: run.sh STAGE OUT PHASE...}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
work=${MX_DEVICE_WORK:-/tmp/mxmatrix-device-profile}
mkdir -p "$work" "$out"
out=$(cd "$out" && pwd)
command -v jq >/dev/null || PATH=$stage/jq:$PATH
# mxmatrix from STAGE (the GPU machine), else this tree's build
if [ -x "$stage/bin/mxmatrix" ]; then bin=$stage/bin; else bin=$top/build; fi
MX=$(ls "$bin/mxmatrix" "$bin/client/mxmatrix" 2>/dev/null | head -n 1)
MXD=$(ls "$bin/mxmatrixd" "$bin/daemon/mxmatrixd" 2>/dev/null | head -n 1)
gen=$stage/targets/gguf-tools
[ -d "$gen" ] || gen=$top/../shared/targets/gguf-tools
# the first python with numpy: Debian's /usr/bin/python3 here, the PATH's (a venv) on the GPU machine
py=
for p in /usr/bin/python3 python3; do
        "$p" -c 'import numpy' 2>/dev/null && { py=$p; break; }
done
[ -n "$py" ] || py=python3
log=$out/run.log
say() { echo "$(date +%T) $*" | tee -a "$log"; }
have_ncu() { command -v ncu >/dev/null && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }
ra='(.run as $r | ([$r.attempt_history[] | select(.n == $r.result_attempt)] | .[0]) // $r.attempt_history[-1])'

setup() {
        if [ ! -x "$work/llama-server" ]; then
                if ls "$stage"/cuda/ls.part.* >/dev/null 2>&1; then
                        cat "$stage"/cuda/ls.part.* | xz -d | tar -x -C "$work" || return 1
                elif [ -n "${MX_LLAMA_SERVER:-}" ]; then
                        cp "$MX_LLAMA_SERVER" "$work/llama-server"
                else
                        xz -dc "$top/../shared/targets/llama-server-cpu.xz" >"$work/llama-server" || return 1
                        chmod +x "$work/llama-server"
                fi
        fi
        "$work/llama-server" --version 2>&1 | tail -n 2 | tee -a "$log"
        local shape=()
        # on a GPU: gpt-oss-20b's per-layer shapes (tests/device/real); else the generator's small defaults
        have_ncu && shape=(--embd 2880 --heads 64 --kv-heads 8 --head-dim 64 --experts 32 --experts-used 4
                --ff-exp 2880 --ctx 131072)
        for l in 2 4; do
                [ -s "$work/gptoss-${l}l.gguf" ] && continue
                PYTHONPATH=$gen $py "$gen/make-random-gptoss-gguf.py" --out "$work/gptoss-${l}l.gguf.tmp" \
                        --layers "$l" "${shape[@]}" >"$out/model-gen-${l}l.log" 2>&1 ||
                        { tail "$out/model-gen-${l}l.log"; return 1; }
                mv "$work/gptoss-${l}l.gguf.tmp" "$work/gptoss-${l}l.gguf"
        done
        ls -l "$work" | tee -a "$log"
        have_ncu && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$log"
        return 0
}

profile() {
        local dir=$work/profile j runs r n d tok filter
        rm -rf "$dir" "$out/profile"
        mkdir -p "$dir" "$out/profile"
        filter='(.target.command |= map(if . == "llama-server" then $srv else . end))
                | (.axes[0].values[].argv |= map(if . == "MODEL_2L" then $m2 elif . == "MODEL_4L" then $m4 else . end))'
        if ! have_ncu; then
                say "profile: no ncu or no NVIDIA GPU here: the profile part is skipped (the same job runs without the profiler)"
                touch "$out/profile/no-ncu"
                filter="$filter"' | (.target.command |= .[10:]) | del(.target.profiler) | del(.target.stop.command) | del(.axes[0].values[].expect)'
        fi
        jq --arg srv "$work/llama-server" --arg m2 "$work/gptoss-2l.gguf" --arg m4 "$work/gptoss-4l.gguf" \
                "$filter" "$here/llama-profile-ncu.json" >"$dir/matrix.json" || return 1
        export MXMATRIX_SOCKET=$dir/control.sock
        "$MXD" --foreground --log-level=debug --socket "$MXMATRIX_SOCKET" --state-dir "$dir/state" \
                --matrix "$dir/matrix.json" 2>"$out/profile/daemon.log" &
        local pid=$!
        for _ in $(seq 100); do "$MX" status >/dev/null 2>&1 && break; sleep 0.1; done
        "$MX" --json submit feature=four-layers >"$out/profile/submit.json" || { kill $pid; return 1; }
        j=$(jq -r .job "$out/profile/submit.json")
        say "profile: job $j: $(jq -c '[.runs[] | .config_key]' "$out/profile/submit.json")"
        timeout 540 "$MX" follow "$j" >"$out/profile/follow.txt" 2>&1
        say "profile: follow exit $?: $(tail -n 1 "$out/profile/follow.txt")"
        "$MX" --json show "$j" >"$out/profile/show-job.json"
        runs=$(jq -r '.runs[].id' "$out/profile/show-job.json")
        for r in $runs; do
                "$MX" --json show "r$r" >"$out/profile/show-r$r.json"
                n=$(jq -r '.run.result_attempt' "$out/profile/show-r$r.json")
                d=$dir/state/runs/$r/$n
                # the decode workload of L1's one completion: its tokens but the first (the prompt's pass
                # samples it); the capture of issue 18 item 1 will write this file itself
                tok=$(jq -r "$ra"' | .levels[] | select(.level == "L1") | .metrics.completion_tokens // empty' \
                        "$out/profile/show-r$r.json")
                if [ -e "$d/profile-workload.json" ]; then
                        say "profile: r$r: the capture wrote its own profile-workload.json: $(jq -c . "$d/profile-workload.json")"
                elif [ -n "$tok" ] && [ "$tok" -gt 1 ]; then
                        jq -n --argjson t "$tok" '{tokens: ($t - 1), requests: 1, output_tokens: $t,
                                which: "decode steps of L1'"'"'s one completion of \($t) tokens (the first token comes from the prompt'"'"'s pass); the profile covers the server'"'"'s whole life, its prompt pass included"}' \
                                >"$d/profile-workload.json"
                fi
                say "profile: r$r $(jq -r "$ra"' as $a | .run.config_key + " " + .run.result + ": " + ([$a.levels[] | "\(.level)=\(.verdict)"] | join(" "))' "$out/profile/show-r$r.json"), L1 tokens ${tok:-none}"
        done
        "$MX" export "$j" -o "$out/profile/export.json" || say "profile: export failed"
        "$MX" report analysis "$j" -o "$out/profile" >/dev/null || say "profile: report analysis failed"
        "$MX" report html "$j" -o "$out/profile" >/dev/null || say "profile: report html failed"
        "$MX" gates >"$out/profile/gates.txt" 2>&1 || say "profile: gates failed"
        kill $pid
        wait $pid
        xz -f "$out/profile/daemon.log"
        (cd "$dir/state" && find runs -type f -size -50M -print0 | tar --null -T - -cf -) | xz -T0 >"$out/profile/runs.tar.xz"
        say "profile: $(grep -m1 '^\*\*' "$out/profile/analysis/VLLM_BASELINE_ANALYSIS.md" 2>/dev/null || echo 'no diff')"
}

for phase in "$@"; do
        say "=== $phase"
        case $phase in
        setup) setup || { say "setup failed"; exit 1; } ;;
        profile) profile || { say "profile failed"; exit 1; } ;;
        *) say "unknown phase $phase"; exit 2 ;;
        esac
done
du -sh "$out" | tee -a "$log"
