# SPDX-License-Identifier: MIT
# Helpers for the real-server tests (tests/real/t-*.sh), sourced after "set -u":
# tests/regress/lib.sh (a private daemon on a temporary socket and database,
# driven through the real client), plus where the real llama-server and the
# model generators are, and the models, made once per build directory.
#
#   MX_LLAMA_SERVER=PATH  a llama-server binary to test (default: unpack
#                         MX_SOURCE_DIR/../shared/targets/llama-server-cpu.xz)
#   MX_GGUF_TOOLS=DIR     the model generators (default:
#                         MX_SOURCE_DIR/../shared/targets/gguf-tools)
#   MX_REAL_PYTHON=PATH   python3 with numpy and PyYAML (default /usr/bin/python3)
#   MX_REQUIRE_REAL=1     a missing server, generator or python fails the test
#                         instead of skipping it (.ci/run sets it)
#
# Everything made here lives in MX_BUILD_DIR/tests/real/ (never in the source
# tree): llama-server, models/llama.gguf, models/gptoss.gguf; concurrent
# tests share them under a lock.

source "$(dirname "${BASH_SOURCE[0]}")/../regress/lib.sh"

REAL_DIR=$MX_BUILD_DIR/tests/real
REAL_SHARED=$MX_SOURCE_DIR/../shared/targets
REAL_MATRIX=$MX_SOURCE_DIR/tests/real/llama-server-cpu.json
REAL_PYTHON=${MX_REAL_PYTHON:-/usr/bin/python3}
REAL_TOOLS=${MX_GGUF_TOOLS:-$REAL_SHARED/gguf-tools}
REAL_HINT="set MX_LLAMA_SERVER=PATH to a llama-server (and MX_GGUF_TOOLS=DIR to llama.cpp's gguf tools with make-random-gguf.py) or put ../shared/targets beside the source tree"

# real_missing WHAT: no real server to test. Skips with one line, or fails under MX_REQUIRE_REAL=1.
real_missing() {
        if [ "${MX_REQUIRE_REAL:-0}" = 1 ]; then
                echo "FAIL: $1 (MX_REQUIRE_REAL=1: the real-server tests may not skip); $REAL_HINT" >&2
                exit 1
        fi
        skip "$1: $REAL_HINT"
}

# real_locked CMD...: CMD under the build directory's lock (tests running at once share one cache).
real_locked() {
        mkdir -p "$REAL_DIR" || fail "mkdir $REAL_DIR"
        (
                flock 9 || exit 1
                "$@"
        ) 9>"$REAL_DIR/.lock"
}

real_unpack() {
        local xz=$REAL_SHARED/llama-server-cpu.xz
        [ -x "$REAL_DIR/llama-server" ] && [ "$REAL_DIR/llama-server" -nt "$xz" ] && return 0
        xz -dc "$xz" >"$REAL_DIR/llama-server.tmp" && chmod +x "$REAL_DIR/llama-server.tmp" &&
                mv "$REAL_DIR/llama-server.tmp" "$REAL_DIR/llama-server"
}

# real_server: REAL_SERVER = the llama-server to test.
real_server() {
        if [ -n "${MX_LLAMA_SERVER:-}" ]; then
                # asked for by name: a wrong path is an error, never a skip
                [ -x "$MX_LLAMA_SERVER" ] || fail "MX_LLAMA_SERVER=$MX_LLAMA_SERVER is not an executable"
                REAL_SERVER=$MX_LLAMA_SERVER
                return
        fi
        [ -f "$REAL_SHARED/llama-server-cpu.xz" ] || real_missing "no llama-server ($REAL_SHARED/llama-server-cpu.xz)"
        command -v xz >/dev/null || real_missing "xz is not installed"
        real_locked real_unpack || fail "unpacking $REAL_SHARED/llama-server-cpu.xz into $REAL_DIR failed"
        REAL_SERVER=$REAL_DIR/llama-server
}

real_generate() { # NAME GENERATOR ARGS...
        local out=$REAL_DIR/models/$1.gguf gen=$REAL_TOOLS/$2
        shift 2
        [ -s "$out" ] && [ "$out" -nt "$gen" ] && return 0
        mkdir -p "$REAL_DIR/models" &&
                PYTHONPATH=$REAL_TOOLS "$REAL_PYTHON" "$gen" --out "$out.tmp" "$@" >"$out.log" 2>&1 &&
                mv "$out.tmp" "$out"
}

# real_model llama|gptoss: REAL_MODEL = the path of that generated model (made on first use).
#   llama   make-random-gguf.py: llama architecture, 760-token byte-level BPE, ChatML
#   gptoss  make-random-gptoss-gguf.py: gpt-oss, MXFP4 experts, attention sinks,
#           sliding-window layers, YaRN RoPE, GQA
real_model() {
        local gen
        case $1 in
        llama) gen=make-random-gguf.py ;;
        gptoss) gen=make-random-gptoss-gguf.py ;;
        *) fail "real_model: no model '$1'" ;;
        esac
        [ -f "$REAL_TOOLS/$gen" ] || real_missing "no model generator ($REAL_TOOLS/$gen)"
        [ -x "$REAL_PYTHON" ] || real_missing "no $REAL_PYTHON (MX_REAL_PYTHON)"
        "$REAL_PYTHON" -c 'import numpy, yaml' 2>/dev/null ||
                real_missing "$REAL_PYTHON lacks numpy or yaml (tests/deps.sh: python3-numpy python3-yaml)"
        real_locked real_generate "$1" "$gen" ||
                fail "$gen failed: $(tail -3 "$REAL_DIR/models/$1.gguf.log" 2>/dev/null)"
        REAL_MODEL=$REAL_DIR/models/$1.gguf
}

# real_matrix OUT [JQ-FILTER]: the shipped matrix with this machine's server and model, then FILTER.
real_matrix() {
        jq --arg srv "$REAL_SERVER" --arg model "$REAL_MODEL" \
                ".target.command[0] = \$srv | .target.model = \$model | ${2:-.}" "$REAL_MATRIX" >"$1" ||
                fail "jq on $REAL_MATRIX"
}

# RESULT_ATTEMPT and level_of (the result attempt's levels) are tests/regress/lib.sh's.

# verdicts RUN: "L1=pass L1.5=pass ..." of rRUN's result attempt.
verdicts() {
        run_field "$1" "[$RESULT_ATTEMPT.levels[] | \"\\(.level)=\\(.verdict)\"] | join(\" \")"
}

# Failures are collected, not fatal: a clean-configuration test reports every level
# that is wrong in one run. expect_level RUN LEVEL VERDICT [JQ-TEST DESC]
REAL_ERRORS=0
expect_level() {
        local rec got
        rec=$(level_of "$1" "$2")
        got=$(jq -r '.verdict // "absent"' <<<"${rec:-null}")
        if [ "$got" != "$3" ]; then
                echo "FAIL [$step]: r$1 $2 is $got, want $3: $(jq -r '.message // ""' <<<"${rec:-null}" | head -c 600)" >&2
                REAL_ERRORS=$((REAL_ERRORS + 1))
                return 1
        fi
        if [ $# -ge 4 ] && ! jq -e "$4" >/dev/null <<<"$rec"; then
                echo "FAIL [$step]: r$1 $2 $3 but not $5: $(jq -r '.message // ""' <<<"$rec" | head -c 600)" >&2
                REAL_ERRORS=$((REAL_ERRORS + 1))
                return 1
        fi
        echo "ok   [$step] r$1 $2 $3: $(jq -r '.message // ""' <<<"$rec" | head -c 200)"
}

# real_done: exit 1 when any expect_level failed.
real_done() {
        [ "$REAL_ERRORS" -eq 0 ] || fail "$REAL_ERRORS level expectations failed (above)"
}
