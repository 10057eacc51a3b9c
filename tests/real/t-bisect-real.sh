#!/usr/bin/env bash
# mxmatrix bisect against the real llama.cpp llama-server (CPU): a git tree
# of 6 commits whose build step (build.sh) puts the commit's model into the
# work tree; from commit 4 on it is a model with 6x the layers, so pp128 on the
# real server falls far beyond the threshold (50 %, as this matrix's L5: the 2-core machine is shared and noisy). The bisection must name
# commit 4 with the real server's numbers on both sides, within
# ceil(log2 6) + 1 builds (the good commit's reference start).
# Exit 0 pass, 1 fail, 77 skip (no server or generator here).
set -u
source "$(dirname "$0")/lib.sh"

command -v git >/dev/null || skip "git is not installed"
real_server
step="models"
real_model llama # checks the generator and python
real_locked real_generate bisect-small make-random-gguf.py --layers 2 --embd 512 --ff 1536 ||
        fail "model generation failed"
real_locked real_generate bisect-big make-random-gguf.py --layers 12 --embd 512 --ff 1536 ||
        fail "model generation failed"
ok "2 and 12 layers in $REAL_DIR/models"

step="git tree"
g() { git_t "$@"; }
R=$T/src
mkdir -p "$R"
printf '#!/bin/sh\nset -e\nmkdir -p out\ncp "%s/models/bisect-$(cat model).gguf" out/model.gguf\necho "built with the $(cat model) model"\n' \
        "$REAL_DIR" >"$R/build.sh"
echo out/ >"$R/.gitignore"
echo small >"$R/model"
g -C "$R" init -q && g -C "$R" add -A && g -C "$R" commit -qm good || fail "git"
shas=("$(git -C "$R" rev-parse HEAD)")
for i in 1 2 3 4 5 6; do
        echo "$i" >"$R/note"
        [ "$i" -eq 4 ] && echo big >"$R/model"
        g -C "$R" add -A && g -C "$R" commit -qm "commit $i" || fail "git commit"
        shas+=("$(git -C "$R" rev-parse HEAD)")
done
ok "6 commits; the model grows at ${shas[4]:0:12}"

step="matrix"
MXD_MATRIX=$T/matrix.json
real_matrix "$MXD_MATRIX" '.target.command |= map(if . == "{model}" then "{source_dir}/out/model.gguf" else . end) |
        .levels = {run: ["L1", "L4"], L4: {pp: [128], tg: [32], depth: [0], runs: 3, warmup: 1}} |
        .metadata = {sources: {src: "'"$R"'"}, timeout_ms: 5000} |
        .bisect = {build: ["sh", "build.sh"], source: "src", confirm_starts: 6}'
expect_exit 0 mx matrix check "$MXD_MATRIX"
mxd_start
ok "daemon pid $MXD_PID"

step="bisect"
out=$(mxj bisect --repo "$R" --good "${shas[0]}" --bad "${shas[6]}" --metric pp128 --threshold 50)
id=$(jqv "$out" .bisection)
timeout 900 "$MX_BIN" bisect --status "$id" --wait >"$T/out" 2>"$T/err" || fail "bisect --wait exited $?: $(tail -5 "$T/out")"
cat "$T/out"
final=$(mxj bisect --status "$id")
jqv "$final" ".bisection.result.first_bad == \"${shas[4]}\"" >/dev/null
jqv "$final" '.bisection.result.bad.decision | .decision == "regression" and .current > 0 and .reference > .current' >/dev/null
[ "$(jq '.bisection.steps | length' <<<"$final")" -le 4 ] || fail "more than ceil(log2 6) + 1 = 4 builds"
ok "$(tail -1 "$T/out")"
