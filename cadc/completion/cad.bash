# bash completion for cadc and cadrun (installed as
# share/bash-completion/completions/cadc and .../cadrun).  The subcommands
# and options come from the command's own --help at each completion, so
# they are never out of date; zsh uses this file through bashcompinit.

# The words of "Subcommands:" or the options of "--help" output.
_cad_help_words() {
    local what=$1
    shift
    "$@" --help 2>/dev/null | awk -v what="$what" '
        /^Subcommands:/ { sub_ = 1; next }
        /^[A-Z][a-z]*:/ { sub_ = 0 }
        what == "subcommands" && sub_ && /^  [a-z]/ { print $1 }
        what == "options" && /^ *-/ {
            # "-h,--help" (CLI11) or "-n, --np N": names up to the first
            # field that does not end with a comma
            for (f = 1; f <= NF; f++) {
                n = split($f, names, ",")
                for (i = 1; i <= n; i++) if (names[i] ~ /^-/) print names[i]
                if ($f !~ /,$/) break
            }
        }'
}

_cadc() {
    local cur=${COMP_WORDS[COMP_CWORD]} cmd=("${COMP_WORDS[0]}") i
    # The subcommand path so far (cadc op compile ...): words that are
    # subcommands of what precedes them.
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        -*) break ;;
        esac
        if _cad_help_words subcommands "${cmd[@]}" | grep -qx -- "${COMP_WORDS[i]}"; then
            cmd+=("${COMP_WORDS[i]}")
        else
            break
        fi
    done
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_cad_help_words options "${cmd[@]}")" -- "$cur")
        return
    fi
    local subs
    subs=$(_cad_help_words subcommands "${cmd[@]}")
    if [[ -n $subs && $i -eq $COMP_CWORD ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
    else
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
}

_cadrun() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} i
    # After the program, its own arguments: complete files.
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        -n | --np | --bind | --timeout) ((i++)) ;;
        -*) ;;
        *)
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            return
            ;;
        esac
    done
    case $prev in
    --bind) mapfile -t COMPREPLY < <(compgen -W "core none" -- "$cur") ;;
    -n | --np | --timeout) COMPREPLY=() ;;
    *)
        if [[ $cur == -* ]]; then
            mapfile -t COMPREPLY < <(compgen -W "$(_cad_help_words options "${COMP_WORDS[0]}")" -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -c -- "$cur")
        fi
        ;;
    esac
}

complete -o filenames -F _cadc cadc
complete -o filenames -F _cadrun cadrun
