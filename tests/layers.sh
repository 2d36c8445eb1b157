#!/usr/bin/env bash
# layers.sh - the rooms' dependencies point one way (docs/architecture.md).
#
# Reads every `#include "..."` of src/ and generated/ and resolves it to the
# room that holds the header (src/rt, src/lib, generated, src/media,
# src/igwd/<room>, the igwd top: main.c and app.c). Fails, naming the file
# and the include, when
#   - a room includes a room that its row below does not allow, or
#   - the room graph has a cycle (shown), or
#   - the files have a circle (shown): X depends on M when X includes M.h,
#     foo.c and foo.h being one node "foo" (a module and its header), so
#     two modules that include each other's headers, directly or through
#     others, are one circle even inside a room.
# Rooms may always include their own headers.
set -uo pipefail
cd "$(dirname "$0")/.."

# room: the rooms it may include (besides itself).
declare -A allow=(
    [rt]=""
    [lib]="rt generated"  # generated: header-only tables (protocol.h: the device handles)
    [generated]="rt"
    [media]="rt generated"
    [igwd/core]="rt lib generated"
    [igwd/http]="igwd/core rt lib generated"
    [igwd/auth]="igwd/core rt lib generated"
    [igwd/event]="igwd/core rt lib generated"
    [igwd/call]="igwd/event igwd/core rt lib generated"
    [igwd/catalog]="igwd/event igwd/core rt lib generated"
    [igwd/session]="igwd/call igwd/catalog igwd/event igwd/core media rt lib generated"
    [igwd/consent]="igwd/session igwd/event igwd/core rt lib generated"
    [igwd/command]="igwd/session igwd/call igwd/event igwd/core rt lib generated"
    [igwd/edge]="igwd/command igwd/session igwd/catalog igwd/event igwd/core rt lib generated"
    [igwd/ops]="igwd/http igwd/core rt lib generated"
    [igwd/routes]="igwd igwd/edge igwd/command igwd/consent igwd/session igwd/call igwd/catalog igwd/event igwd/auth igwd/http igwd/core rt lib generated"
    [igwd]="igwd/routes igwd/ops igwd/edge igwd/command igwd/consent igwd/session igwd/call igwd/catalog igwd/event igwd/auth igwd/http igwd/core rt lib generated"
    [igwctl]="rt lib generated"
    [mqttauth]="rt lib generated"
    [vcam]="rt lib"
    [proc]="rt lib"
)

room_of_file() { # PATH -> room
    case $1 in
        src/igwd/*/*) local r=${1#src/igwd/}; echo "igwd/${r%%/*}" ;;
        src/igwd/*) echo igwd ;;
        src/*/*) local r=${1#src/}; echo "${r%%/*}" ;;
        generated/*) echo generated ;;
        *) echo "" ;;
    esac
}

# Resolves an include as the compiler would for our -I list: the including
# file's directory, then src/rt src/lib generated src/igwd (and src/media for media).
resolve() { # FILE INCLUDE -> path or ""
    local dir=${1%/*} c
    for c in "$dir/$2" "src/rt/$2" "src/lib/$2" "generated/$2" "src/igwd/$2" "src/media/$2"; do
        [ -f "$c" ] && { echo "$c"; return; }
    done
}

bad=0
declare -A edges=()
declare -A fadj=() # file node -> the nodes it depends on (" a b ...")
while IFS= read -r f; do
    from=$(room_of_file "$f")
    [ -n "$from" ] || continue
    while IFS= read -r inc; do
        path=$(resolve "$f" "$inc")
        [ -n "$path" ] || continue
        fn=${f%.[ch]} tn=${path%.[ch]}
        if [ "$fn" != "$tn" ] && [[ " ${fadj[$fn]-} " != *" $tn "* ]]; then
            fadj[$fn]+=" $tn"
        fi
        to=$(room_of_file "$path")
        [ -n "$to" ] && [ "$to" != "$from" ] || continue
        edges["$from $to"]=1
        if ! [[ " ${allow[$from]-} " == *" $to "* ]]; then
            echo "layers: $f includes \"$inc\" ($to): $from may include only: ${allow[$from]:-nothing}"
            bad=1
        fi
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(find src generated -name '*.[ch]' | sort)

# A cycle in the room graph (depth-first search over the edges seen).
declare -A state=()
cycle=""
visit() {
    local n=$1 e
    state[$n]=1
    for e in "${!edges[@]}"; do
        [ "${e%% *}" = "$n" ] || continue
        local m=${e#* }
        if [ "${state[$m]-0}" = 1 ]; then cycle="$m <- $n"; return 1; fi
        if [ "${state[$m]-0}" = 0 ]; then visit "$m" || { cycle="$cycle <- $n"; return 1; }; fi
    done
    state[$n]=2
}
for e in "${!edges[@]}"; do
    n=${e%% *}
    if [ "${state[$n]-0}" = 0 ] && ! visit "$n"; then
        echo "layers: cycle between rooms: $cycle"
        bad=1
        break
    fi
done

# Circles between files: a depth-first search over the file nodes, each
# edge back to a node on the path closing one circle (shown from there).
declare -A fstate=() fpos=()
fpath=()
file_circle() { # NODE: the path from NODE's place on it, back to NODE
    local i=${fpos[$1]} shown=""
    for ((; i < ${#fpath[@]}; i++)); do
        shown+="${fpath[i]} -> "
    done
    echo "layers: circle between files: $shown$1"
    bad=1
}
fvisit() {
    local n=$1 m
    fstate[$n]=1
    fpos[$n]=${#fpath[@]}
    fpath+=("$n")
    for m in ${fadj[$n]-}; do
        case ${fstate[$m]-0} in
        0) fvisit "$m" ;;
        1) file_circle "$m" ;;
        esac
    done
    unset 'fpath[${#fpath[@]}-1]'
    fstate[$n]=2
}
while IFS= read -r n; do
    [ "${fstate[$n]-0}" = 0 ] && fvisit "$n"
done < <(printf '%s\n' "${!fadj[@]}" | sort)

[ $bad = 0 ] && echo "layers: ${#edges[@]} room dependencies, all one way; no circle between files"
exit $bad
