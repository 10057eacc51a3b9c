#!/usr/bin/env bash
# The file list is the architecture (docs/DESIGN.md, "Layout"): every folder imports only its own
# headers and those of the folders below it. The order, top first:
#   client, then report and loadgen (neither imports the other), the daemon's top (main, daemon,
#   config, listen, notify), control, run (run/levels with it), store, measure, proc, base;
#   schema; matrix: plan, analysis, model, cover and evidence (neither imports the other), base.
# An include of a header of the same folder or a lower one passes; anything else fails, naming
# the file, the line and both folders. Headers found in no folder (system ones) are not ours.
# Every file of these folders has its line in docs/DESIGN.md (client's cmd-<verb>.c as one rule).
set -euo pipefail
src=${MX_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src"
declare -A rank=(
  [client]=40 [report]=30 [loadgen]=12
  [daemon]=27 [daemon/control]=26 [daemon/run]=25 [daemon/run/levels]=25 [daemon/store]=24
  [daemon/measure]=23 [daemon/proc]=22 [daemon/base]=21
  [schema]=10
  [matrix/plan]=6 [matrix/analysis]=5 [matrix/model]=4 [matrix/cover]=3 [matrix/evidence]=3
  [matrix/base]=1)
# A new folder of code gets its place in the order here (and in docs/DESIGN.md) before it lands.
while read -r d; do
  [ -n "${rank[$d]:-}" ] || { echo "FAIL: folder $d has code but no place in the layout's order"; exit 1; }
done < <(find client report loadgen daemon schema matrix -name '*.[ch]' -printf '%h\n' | sort -u)
declare -A home=()
for dir in "${!rank[@]}"; do
  for h in "$dir"/*.h; do
    [ -e "$h" ] || continue
    name=${h##*/}
    [ -z "${home[$name]:-}" ] || { echo "FAIL: header $name in both ${home[$name]} and $dir"; exit 1; }
    home[$name]=$dir
  done
done
[ "${#home[@]}" -ge 70 ] || { echo "FAIL: found only ${#home[@]} headers"; exit 1; }
bad=0 checked=0
for dir in "${!rank[@]}"; do
  for f in "$dir"/*.c "$dir"/*.h; do
    [ -e "$f" ] || continue
    while IFS=: read -r line inc; do
      inc=${inc#*\"}; inc=${inc%\"*}
      name=${inc##*/}
      if [[ $inc == */* ]]; then to=$(cd "$(dirname "$f")/$(dirname "$inc")" 2>/dev/null && pwd); to=${to#"$src"/}
      else to=${home[$name]:-}; fi
      [ -n "$to" ] || continue
      checked=$((checked + 1))
      # run/levels is the runner's own table of levels: one folder with run/ in the order.
      [ "${to%/levels}" = "${dir%/levels}" ] && continue
      if [ -z "${rank[$to]:-}" ] || [ "${rank[$dir]}" -le "${rank[$to]}" ]; then
        echo "FAIL: $f:$line includes $inc: $dir may not import $to (docs/DESIGN.md, Layout)"
        bad=$((bad + 1))
      fi
    done < <(grep -n '^#include "' "$f" | sed 's/^\([0-9]*\):/\1:/')
  done
done
# docs/DESIGN.md names every file of these folders in its folder's table (a file, one line)
for dir in "${!rank[@]}"; do
  for f in "$dir"/*.c "$dir"/*.h; do
    [ -e "$f" ] || continue
    stem=${f##*/}; stem=${stem%.*}
    [[ $dir == client && $stem == cmd-* ]] && continue # "one cmd-<verb>.c per verb"
    grep -q "\`\([a-z]*/\)*$stem\.\(\*\|c\|h\)\`" "$src/docs/DESIGN.md" ||
      { echo "FAIL: $f is not in docs/DESIGN.md's table of $dir"; bad=$((bad + 1)); }
  done
done
[ "$checked" -ge 400 ] || { echo "FAIL: checked only $checked includes"; exit 1; }
[ "$bad" -eq 0 ] || { echo "FAIL: $bad against the layout"; exit 1; }
echo "ok: $checked includes follow the layout, and DESIGN.md names every file"
