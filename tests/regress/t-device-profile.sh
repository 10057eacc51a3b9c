#!/usr/bin/env bash
# What the issue-18 device check keeps (tests/fixtures/device/profile/, made by
# tests/device/profile/run.sh on an NVIDIA GPU: the CUDA llama-server under ncu with two gpt-oss
# models that differ only in --layers), checked by tests/device/profile/check.sh: each run's decode
# profile adds up to its captured total, and attention and MoE routing launch twice as often per
# token with 4 layers as with 2. Then the check is shown to fail on a document whose 4-layer
# attention calls are not twice the 2-layer ones. Skips (77) until the fixture is kept.
set -u
source "$(dirname "$0")/lib.sh"
FIX=$MX_SOURCE_DIR/tests/fixtures/device/profile
CHECK=$MX_SOURCE_DIR/tests/device/profile/check.sh
[ -f "$FIX/profile/export.json" ] || skip "no tests/fixtures/device/profile yet: run tests/device/profile/run.sh on a GPU machine and keep its OUT there"
[ ! -e "$FIX/profile/no-ncu" ] || fail "the kept fixture was made without ncu"

step="the device check's outputs"
bash "$CHECK" "$FIX" >"$T/check.txt" 2>&1 || fail "$(grep FAIL "$T/check.txt" | head -5)"
has "$T/check.txt" 'ok: Attention calls/token'
has "$T/check.txt" 'ok: MoE routing calls/token'
ok "$(tr '\n' ' ' <"$T/check.txt")"

step="the check fails a structure the model does not have"
mkdir -p "$T/bad/profile/analysis"
cp "$FIX/profile/analysis/VLLM_BASELINE_ANALYSIS.md" "$T/bad/profile/analysis/"
jq '(.analysis.runs[] | select(.config_key == "layers=4") | .table.categories[] | select(.name == "Attention")
     | .calls_per_token) |= . * 1.5' "$FIX/profile/export.json" >"$T/bad/profile/export.json"
if bash "$CHECK" "$T/bad" >"$T/bad.txt" 2>&1; then
        fail "attention calls 3x the 2-layer run's passed the check"
fi
has "$T/bad.txt" "Attention calls/token do not double"
ok "$(grep FAIL "$T/bad.txt")"
