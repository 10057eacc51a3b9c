#!/usr/bin/env bash
# The documentation stays honest: every man page renders without a warning, and
# what the binaries and sources offer (daemon flags, settings-file keys, client
# verbs and their options, protocol methods, profile keys, crash classes,
# MESSAGE_IDs, exit codes) is documented where a user looks for it.
set -uo pipefail
: "${MX_BUILD_DIR:?}" "${MX_SOURCE_DIR:?}"
src=$MX_SOURCE_DIR
mx="$MX_BUILD_DIR/client/mxmatrix"
mxd="$MX_BUILD_DIR/daemon/mxmatrixd"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
        echo "FAIL: $*" >&2
        failures=$((failures + 1))
}

if ! command -v groff >/dev/null; then
        echo "groff is not installed (tests/deps.sh installs groff-base)" >&2
        exit 77
fi

# The roff source as plain words: escapes for hyphens, fonts and quotes removed.
plain() {
        sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\(dq/"/g' -e 's/\\(aq/'"'"'/g' -e 's/\\&//g' \
                -e 's/\\e/\\/g' "$1"
}

# section FILE TITLE: the plain text of one .SH section.
section() {
        plain "$1" | awk -v t=".SH $2" '$0 == t || $0 == t "\"" { on = 1; next } /^\.SH / { on = 0 } on'
}

# tags FILE: the plain text of every tag line (the line after .TP), one per line.
tags() {
        plain "$1" | awk 'tp { print; tp = 0 } /^\.TP/ { tp = 1 }'
}

# strong FILE TITLE: what one .SH section sets in bold (.B, .BR, .BI, \fB...\fR) or as a tag,
# without placeholders, so a name that only occurs in an example or as {host} does not count.
strong() {
        awk -v t=".SH $2" '$0 == t || $0 == t "\"" { on = 1; next } /^\.SH / { on = 0 } on' "$1" |
                awk 'tp { print; tp = 0; next } /^\.TP/ { tp = 1; next } /^\.(B|BR|BI) / { print; next }
                     { while (match($0, /\\fB[^\\]*/)) { print substr($0, RSTART, RLENGTH); $0 = substr($0, RSTART + RLENGTH) } }' |
                sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\(dq/"/g' -e 's/\\&//g' -e 's/{[a-z_]*}//g'
}

# has_word TEXT_FILE WORD WHAT: WORD occurs in TEXT_FILE as a whole word (letters, digits, -, _, . around it).
has_word() {
        grep -qE -- "(^|[^A-Za-z0-9_.-])$(printf '%s' "$2" | sed 's/[.[\*^$]/\\&/g')([^A-Za-z0-9_-]|$)" "$1" ||
                fail "$3: '$2' is not documented"
}

pages=("$src"/docs/*.[1-8])
[ ${#pages[@]} -ge 3 ] || fail "expected the three man pages in docs/, found ${#pages[@]}"

# 1. Every page renders without warnings, and has the sections man(7) asks for.
for page in "${pages[@]}"; do
        if ! groff -man -Tutf8 -ww -z "$page" 2>"$tmp/warn" || [ -s "$tmp/warn" ]; then
                fail "$(basename "$page") does not render cleanly: $(head -c 600 "$tmp/warn")"
        fi
        for sh in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
                grep -q "^\.SH \"\?$sh\"\?$" "$page" || fail "$(basename "$page") has no $sh section"
        done
done

d8="$src/docs/mxmatrixd.8"
c1="$src/docs/mxmatrix.1"
j5="$src/docs/mxmatrix.json.5"

# 2. Every flag of mxmatrixd --help is an option of mxmatrixd(8).
"$mxd" --help >"$tmp/dhelp" || fail "mxmatrixd --help failed"
tags "$d8" >"$tmp/d8tags"
grep -oE '^  (-[a-z], )?--[a-z-]+' "$tmp/dhelp" | grep -oE -- '--?[a-z-]+' | sort -u >"$tmp/dflags"
[ "$(wc -l <"$tmp/dflags")" -ge 14 ] || fail "found only $(wc -l <"$tmp/dflags") flags in mxmatrixd --help"
while read -r flag; do
        has_word "$tmp/d8tags" "$flag" "mxmatrixd(8) OPTIONS"
done <"$tmp/dflags"

# 3. Every settings-file key and limit the daemon reads is in mxmatrixd(8).
strong "$d8" "SETTINGS FILE" >"$tmp/settings"
grep -oE 'streq\(k, "[a-z_]+"\)|\{ "[a-z_]+", offsetof' "$src/daemon/config.c" | grep -oE '"[a-z_]+"' | tr -d '"' |
        sort -u >"$tmp/keys"
[ "$(wc -l <"$tmp/keys")" -ge 20 ] || fail "found only $(wc -l <"$tmp/keys") settings keys in daemon/config.c"
while read -r key; do
        has_word "$tmp/settings" "$key" "mxmatrixd(8) SETTINGS FILE"
done <"$tmp/keys"

# 4. Every verb of mxmatrix --help has its own subsection in mxmatrix(1), and every
#    option of its VERB --help is described there.
"$mx" --help >"$tmp/chelp" || fail "mxmatrix --help failed"
plain "$c1" | grep '^\.SS ' | sed 's/^\.SS //' >"$tmp/subsections"
awk '/^Verbs/ { on = 1; next } /^$/ { on = 0 } on && /^  [a-z]/ { print $1 }' "$tmp/chelp" | sort -u >"$tmp/verbs"
[ "$(wc -l <"$tmp/verbs")" -ge 14 ] || fail "found only $(wc -l <"$tmp/verbs") verbs in mxmatrix --help"
while read -r verb; do
        if [ "$verb" = matrix ]; then
                for sub in check show cover; do
                        grep -q "^matrix $sub" "$tmp/subsections" || fail "mxmatrix(1) has no subsection 'matrix $sub'"
                done
                continue
        fi
        grep -q "^$verb\( \|$\)" "$tmp/subsections" || fail "mxmatrix(1) has no subsection for verb '$verb'"
        "$mx" "$verb" --help >"$tmp/vhelp" 2>&1 || fail "mxmatrix $verb --help failed"
        plain "$c1" >"$tmp/c1plain"
        for opt in $(grep -oE '^ +(-[a-z], )?--[a-z-]+' "$tmp/vhelp" | grep -oE -- '--[a-z-]+' | sort -u); do
                has_word "$tmp/c1plain" "$opt" "mxmatrix(1), option of '$verb'"
        done
done <"$tmp/verbs"

# 5. Every protocol method with a command line is a verb of mxmatrix(1) and of mxmatrix --help.
awk '/"methods":/ { on = 1 } on && match($0, /"name": *"[a-z-]+"/) { m = substr($0, RSTART, RLENGTH); sub(/.*: *"/, "", m); sub(/"$/, "", m); cur = m }
     on && /"cli":/ { print cur }' "$src/schema/protocol.json" | sort -u >"$tmp/methods"
[ "$(wc -l <"$tmp/methods")" -ge 11 ] || fail "found only $(wc -l <"$tmp/methods") CLI methods in protocol.json"
while read -r m; do
        grep -q "^$m\( \|$\)" "$tmp/subsections" || fail "protocol method '$m' has a CLI but no subsection in mxmatrix(1)"
        grep -qx "$m" "$tmp/verbs" || fail "protocol method '$m' has a CLI but is not in mxmatrix --help"
done <"$tmp/methods"

# 6. Every exit code of the client is in mxmatrix(1) EXIT STATUS.
section "$c1" "EXIT STATUS" >"$tmp/exits"
grep -oE 'MX_EXIT_[A-Z]+ = [0-9]+' "$src/client/client.h" | grep -oE '[0-9]+$' >"$tmp/codes"
[ "$(wc -l <"$tmp/codes")" -ge 7 ] || fail "found only $(wc -l <"$tmp/codes") exit codes in client/client.h"
while read -r code; do
        grep -qx "\.B $code" "$tmp/exits" || fail "mxmatrix(1) EXIT STATUS lacks $code"
done <"$tmp/codes"
grep -qx '\.B 78' <(section "$d8" "EXIT STATUS") || fail "mxmatrixd(8) EXIT STATUS lacks 78"

# 7. Every built-in profile and every key a profile takes is in mxmatrix.json(5) TARGET PROFILES.
strong "$j5" "TARGET PROFILES" >"$tmp/profiles"
{
        sed -n 's/.*mx_profile_builtins\[\] = {\(.*\)NULL.*/\1/p' "$src/matrix/model/profile.c" | grep -oE '"[a-z-]+"'
        grep -oE 'streq\(k, "[a-z_]+"\)' "$src/matrix/model/profile.c" | grep -oE '"[a-z_]+"'
        sed -n '/section_keys\[\] = {/,/^};/p' "$src/matrix/model/profile.c" | grep -oE '"[a-z_, ]+"'
} | tr -d '"' | tr ', ' '\n\n' | grep . | sort -u >"$tmp/pkeys"
[ "$(wc -l <"$tmp/pkeys")" -ge 25 ] || fail "found only $(wc -l <"$tmp/pkeys") profile names and keys in profile.c"
while read -r key; do
        has_word "$tmp/profiles" "$key" "mxmatrix.json(5) TARGET PROFILES"
done <"$tmp/pkeys"

# 8. Every built-in crash class is in mxmatrixd(8).
plain "$d8" >"$tmp/d8plain"
sed -n '/mx_crash_signatures_builtin\[\] = {/,/^};/p' "$src/matrix/model/profile.c" | grep -oE '^ *\{ "[a-z-]+"' |
        grep -oE '[a-z-]+' >"$tmp/classes"
[ "$(wc -l <"$tmp/classes")" -ge 10 ] || fail "found only $(wc -l <"$tmp/classes") crash classes in profile.c"
while read -r cls; do
        has_word "$tmp/d8plain" "$cls" "mxmatrixd(8) crash classes"
done <"$tmp/classes"

# 9. Every MESSAGE_ID of daemon/base/log.h is in the journal catalog and in mxmatrixd(8).
grep -oE 'MX_MSGID_[A-Z_]+ "[0-9a-f]{32}"' "$src/daemon/base/log.h" >"$tmp/msgids"
[ "$(wc -l <"$tmp/msgids")" -ge 9 ] || fail "found only $(wc -l <"$tmp/msgids") MESSAGE_IDs in daemon/base/log.h"
while read -r name id; do
        id=${id//\"/}
        grep -qx -- "-- $id" "$src/systemd/mxmatrix.catalog" || fail "$name ($id) is not in systemd/mxmatrix.catalog"
        grep -q "$id" "$d8" || fail "$name ($id) is not in mxmatrixd(8)"
        has_word "$tmp/d8plain" "${name#MX_MSGID_}" "mxmatrixd(8) JOURNAL"
done <"$tmp/msgids"

if [ "$failures" -gt 0 ]; then
        echo "$failures documentation check(s) failed" >&2
        exit 1
fi
echo "docs: ${#pages[@]} pages render cleanly; $(wc -l <"$tmp/dflags") daemon flags, $(wc -l <"$tmp/keys") settings" \
        "keys, $(wc -l <"$tmp/verbs") verbs, $(wc -l <"$tmp/methods") protocol methods, $(wc -l <"$tmp/codes") exit" \
        "codes, $(wc -l <"$tmp/pkeys") profile names and keys, $(wc -l <"$tmp/classes") crash classes and" \
        "$(wc -l <"$tmp/msgids") MESSAGE_IDs documented"
