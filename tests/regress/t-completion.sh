#!/usr/bin/env bash
# bash completion (client/mxmatrix.bash-completion, answered by "mxmatrix
# __complete"): sourced into this shell, its function called as bash calls it
# (COMP_LINE, COMP_POINT, COMP_WORDS split at bash's word breaks, COMP_CWORD),
# and COMPREPLY checked: verbs, global and verb options (daemon verbs from
# protocol.json, file verbs from their --help), enumerated values, files, and
# feature, axis and value names from the matrix: plan's FILE, submit --matrix,
# $MXMATRIX_MATRIX. Needs no daemon. Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

step="load"
PATH=$(dirname "$MX_BIN"):$PATH
# shellcheck source=../../client/mxmatrix.bash-completion
source "$MX_SOURCE_DIR/client/mxmatrix.bash-completion"
[ "$(complete -p mxmatrix)" = "complete -F _mxmatrix mxmatrix" ] || fail "complete -p: $(complete -p mxmatrix)"
ok "sourced; mxmatrix completes with _mxmatrix"

# Absolute: the files step below changes directory.
GB10=$(cd "$MX_SOURCE_DIR" && pwd)/matrix/mxfp4-gb10.json
MX_FIXTURE_MATRIX=$(cd "$(dirname "$MX_FIXTURE_MATRIX")" && pwd)/$(basename "$MX_FIXTURE_MATRIX")
# complete LINE: run _mxmatrix as bash would with the cursor at the end of LINE; COMPREPLY in $got (sorted).
complete_line() {
        COMP_LINE=$1
        COMP_POINT=${#1}
        # bash's own split: at blanks and at the characters of COMP_WORDBREAKS ('=' and ':' among them).
        local rest=$1 w=""
        COMP_WORDS=()
        while [ -n "$rest" ]; do
                local c=${rest:0:1}
                rest=${rest:1}
                if [[ $c == " " ]]; then
                        [ -n "$w" ] && COMP_WORDS+=("$w")
                        w=""
                elif [[ $c == "=" || $c == ":" ]]; then
                        [ -n "$w" ] && COMP_WORDS+=("$w")
                        COMP_WORDS+=("$c")
                        w=""
                else
                        w+=$c
                fi
        done
        if [[ $1 == *[\ =:] ]]; then
                COMP_WORDS+=("")
        else
                COMP_WORDS+=("$w")
        fi
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMPREPLY=()
        _mxmatrix mxmatrix "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]:-}"
        got=""
        [ ${#COMPREPLY[@]} -eq 0 ] || got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ')
}
want() {
        [ "$got" = "$2" ] || fail "'$1' completed to '$got', want '$2'"
}
wants() { # wants LINE WORD...: each WORD is among the candidates
        local w l=$1
        shift
        for w in "$@"; do
                [[ " $got " == *" $w "* ]] || fail "'$l' completed to '$got', which lacks '$w'"
        done
}

step="verbs and options"
complete_line "mxmatrix "
wants "mxmatrix " submit status list show repro logs follow cancel retry pause resume reload matrix plan gate bench --json --socket
lacks_word() { [[ " $got " != *" $1 "* ]] || fail "'$COMP_LINE' offers the hidden '$1'"; }
lacks_word __complete
complete_line "mxmatrix fo"
want "fo" "follow "
complete_line "mxmatrix --json st"
want "--json st" "status "
complete_line "mxmatrix list --"
want "list --" "--before --help --json --limit --mine --state "
complete_line "mxmatrix list --state "
want "list --state" "active all cancelled done queued running "
complete_line "mxmatrix submit x --strategy p"
want "--strategy p" "pairwise "
complete_line "mxmatrix plan f.json --"
wants "plan --" --strategy --max-runs --seed --json
complete_line "mxmatrix matrix "
want "matrix" "check cover show "
ok "verbs (no hidden ones), daemon verbs' options from protocol.json, file verbs' from --help, enum values"

step="files"
cd "$T" || fail "cd"
mkdir -p sub && : >m1.json && : >m2.json
complete_line "mxmatrix plan m"
want "plan m" "m1.json m2.json "
complete_line "mxmatrix gate --report s"
want "gate --report s" "sub "
complete_line "mxmatrix matrix check m1"
want "matrix check m1" "m1.json "
ok "FILE arguments complete file names"

step="matrix names"
complete_line "mxmatrix plan $GB10 "
wants "plan FILE" cutlass-gemm spec-decode feature= kernel= graphs= levels=
complete_line "mxmatrix plan $GB10 kernel=c"
want "kernel=c" "cutlass "
complete_line "mxmatrix plan $GB10 kernel="
want "kernel=" "cutlass gemv marlin triton "
complete_line "mxmatrix plan $GB10 feature=spec"
want "feature=spec" "spec-decode "
complete_line "mxmatrix plan $GB10 ker"
want "ker" "kernel= "
complete_line "mxmatrix submit --matrix $GB10 graphs="
want "submit --matrix graphs=" "off on "
unset MXMATRIX_MATRIX
MXMATRIX_MATRIX=$MX_FIXTURE_MATRIX
export MXMATRIX_MATRIX
complete_line "mxmatrix submit "
want "submit (MXMATRIX_MATRIX)" "fast feature= levels= mode= speed= "
complete_line "mxmatrix submit mode=s"
want "submit mode=s" "sleep slowstop "
complete_line "mxmatrix submit --levels L1"
wants "--levels L1" L1 L1.5
MXMATRIX_MATRIX=$T/nonexistent.json
complete_line "mxmatrix submit "
want "submit (no matrix)" ""
ok "features, axes and values from plan's FILE, submit --matrix and \$MXMATRIX_MATRIX; none without a matrix"
