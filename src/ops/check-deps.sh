#!/usr/bin/env bash
# check-deps.sh - fails when something the build, the tests or the benchmarks
# use would be missing on a fresh Debian 12 machine (build-essential, make,
# git, pkg-config, ca-certificates and nothing else) after `make deps`.
# A machine set up by hand hides a forgotten package; this check does not.
#
#   src/ops/check-deps.sh        (`make check-deps`, the first step of `make test`)
#
# Known packages: the Makefile's DEB_PACKAGES and DEB_NODE (what `make deps`
# installs), the base machine (the five packages above, Essential and
# Priority: required), and everything their Depends/Pre-Depends pull in
# (the first of alternatives; every provider of a virtual package). What only
# the benchmarks use may also come from BENCH_DEB_PACKAGES (`make deps-bench`).
#
# Checked:
#  - headers: every <header> that a .c/.h/.re/.cc under src/, codegen/,
#    tests/ and generated/ includes, found on the compiler's include path and
#    the -I directories of the Makefile's commands, maps (dpkg -S) to a known
#    package;
#  - libraries: every -l of the Makefile's compile commands (`make -n -B`,
#    pkg-config expanded) and of the test scripts, and the sanitizer runtimes;
#  - programs: the commands the Makefile recipes, the shell scripts under
#    tests/ and src/ops/ and the spawn/exec calls of tests/**/*.mjs run (found
#    in command position), plus REQUIRED_PROGRAMS below, each map (dpkg -S on
#    its path) to a known package; each listed one must really be called;
#  - npm modules: every module a tests/ .mjs/.js imports is installed from a
#    lock file (npm ci) or an exact pinned version (npm install NAME@X.Y.Z);
#    no module needs a Node newer than Debian 12's (18), by the engines of
#    what is locked or installed, and no script uses Node 20+ only APIs.
# Needs the packages installed (`make check-deps` runs `make deps` first):
# a package that is not installed cannot be asked which files it holds.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 2
prog=check-deps
NODE_MAJOR=18                     # Debian 12's nodejs: the oldest Node the tests must run on
BASE_PACKAGES="build-essential make git pkg-config ca-certificates apt"

# Programs that must be available, with the package each comes from. Programs
# found in command position are checked without being listed here; these are
# the ones a heuristic could miss (called through variables, loops over lists,
# `command -v` checks) or that are not installed before `make deps-bench`.
REQUIRED_PROGRAMS="
gst-launch-1.0 gstreamer1.0-tools
wrk            wrk
janus          janus
ip             iproute2
unshare        util-linux
nft            nftables
psql           postgresql-client-15
initdb         postgresql-15
pg_ctl         postgresql-15
redis-server   redis-server
redis-cli      redis-tools
mosquitto      mosquitto
mosquitto_sub  mosquitto-clients
mosquitto_pub  mosquitto-clients
mosquitto_passwd mosquitto
jq             jq
curl           curl
python3        python3
openssl        openssl
node           nodejs
npm            npm
chromium       chromium
re2c           re2c
clang          clang
"
# Words in command position that are not programs the project runs.
NOT_PROGRAMS="perf" # bench_media.mjs runs perf only when PERF= is set (a profiling aid, documented there)

fail=0
bad() { echo "$prog: $*" >&2; fail=1; }
note() { [ -n "${CHECK_DEPS_VERBOSE:-}" ] && echo "$prog: $*" >&2; return 0; }

mk() { # VAR: the Makefile variable's value
    make -s --no-print-directory --eval 'igw-check-deps-print-%: ; @echo $($*)' "igw-check-deps-print-$1" 2>/dev/null
}
deb=$(mk DEB_PACKAGES) node_pkgs=$(mk DEB_NODE) bench=$(mk BENCH_DEB_PACKAGES)
[ -n "$deb" ] || { echo "$prog: no DEB_PACKAGES in the Makefile" >&2; exit 2; }
for t in dpkg-query apt-cache make cc; do
    command -v "$t" >/dev/null || { echo "$prog: needs $t" >&2; exit 2; }
done

# closure: "main PKG" for what apt installs with DEB_PACKAGES, DEB_NODE and the
# base machine, "bench PKG" for BENCH_DEB_PACKAGES (Depends and Pre-Depends;
# the first alternative of a group, every provider of a virtual package).
closure() { # MAIN_ROOTS BENCH_ROOTS
    # shellcheck disable=SC2086
    apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
            --no-replaces --no-enhances $1 $2 2>/dev/null | awk -v main="$1" -v bench="$2" '
        /^[^ ]/ { cur = $1; sub(/:.*/, "", cur); inalt = 0; next }
        /^  [ |]?(Pre)?Depends: / {
            alt = ($1 ~ /^\|/); name = $2
            virt = (name ~ /^</); gsub(/[<>]/, "", name); sub(/:.*/, "", name)
            first = !inalt; inalt = alt      # a group starts where no "|" precedes
            takeprov = first && virt
            if (first && !virt) edge[cur] = edge[cur] " " name
            next
        }
        /^    [^ ]/ { if (takeprov) { p = $1; sub(/:.*/, "", p); edge[cur] = edge[cur] " " p } next }
        function walk(tag, roots,   n, q, got, i, p, m, d, j) {
            n = split(roots, q, " "); for (i = 1; i <= n; i++) { sub(/:.*/, "", q[i]); got[q[i]] = 1 }
            while (n > 0) {
                p = q[n--]; print tag, p
                m = split(edge[p], d, " ")
                for (j = 1; j <= m; j++) if (!(d[j] in got)) { got[d[j]] = 1; q[++n] = d[j] }
            }
        }
        END { walk("main", main); walk("bench", main " " bench) }'
}
essential=$(dpkg-query -W -f='${Package} ${Essential} ${Priority}\n' 2>/dev/null | awk '$2=="yes"||$3=="required"{print $1}')
declare -A KNOWN_main KNOWN_bench
nk=0
while read -r tag p; do
    if [ "$tag" = main ]; then KNOWN_main[$p]=1; nk=$((nk + 1)); else KNOWN_bench[$p]=1; fi
done < <(closure "$(echo $deb $node_pkgs $BASE_PACKAGES $essential)" "$bench")
[ "$nk" -gt 100 ] || { echo "$prog: apt-cache gave no dependency closure (apt-get update?)" >&2; exit 2; }

known() { # SET PACKAGE...: true when one of the packages is in SET (main|bench)
    local -n set=KNOWN_$1
    local p
    shift
    for p in "$@"; do [ -n "${set[$p]:-}" ] && return 0; done
    return 1
}
# dpkg -S, batched: OWNER[path] = "pkg pkg" for every path given to map_owners.
declare -A OWNER
map_owners() { # PATH...
    local line p
    while IFS= read -r line; do
        case $line in diversion*) continue ;; esac
        p=${line##*: }
        OWNER[$p]=$(sed 's/: .*//; s/:[a-z0-9]*//g; s/,//g' <<<"$line")
    done < <(dpkg -S "$@" 2>/dev/null)
}
twins() { # PATH: the path, its usr-merged twin, its symlink target (alternatives)
    local f=$1
    printf '%s\n' "$f"
    [ -L "$f" ] && readlink -f "$f"
    case $f in
        /usr/bin/* | /usr/sbin/* | /usr/lib/*) printf '%s\n' "${f#/usr}" ;;
        /bin/* | /sbin/* | /lib/*) printf '/usr%s\n' "$f" ;;
    esac
}
owner_of() { # PATH (after map_owners on its twins): its packages
    local c
    while IFS= read -r c; do
        [ -n "${OWNER[$c]:-}" ] && { echo "${OWNER[$c]}"; return 0; }
    done < <(twins "$1")
    return 1
}
set_of() { # FILE: SET=bench when only the benchmarks use it, else main
    case $1 in tests/bench/* | tests/media/bench_*) SET=bench ;; *) SET=main ;; esac
}
why() { [ "$1" = bench ] && echo DEB_PACKAGES/DEB_NODE/BENCH_DEB_PACKAGES || echo DEB_PACKAGES/DEB_NODE; }

# ---- the Makefile's commands (make -n -B: every recipe, pkg-config expanded) ----
targets="all test bench-decode bench-edge bench-app bench-media bench-srtp"
# shellcheck disable=SC2086
mkn=$(make -n -B --no-print-directory $targets 2>"${TMPDIR:-/tmp}/check-deps.$$") || {
    cat "${TMPDIR:-/tmp}/check-deps.$$" >&2; rm -f "${TMPDIR:-/tmp}/check-deps.$$"
    echo "$prog: make -n $targets failed" >&2; exit 2; }
if grep -q 'was not found in the pkg-config search path\|No package .* found' "${TMPDIR:-/tmp}/check-deps.$$"; then
    bad "pkg-config cannot find what the Makefile asks for (its -dev package is not installed: make deps):"
    grep 'pkg-config\|Package' "${TMPDIR:-/tmp}/check-deps.$$" | sort -u | sed 's/^/    /' >&2
fi
rm -f "${TMPDIR:-/tmp}/check-deps.$$"

# ---- headers -------------------------------------------------------------------
incdirs() { # LANG: the compiler's system include path
    cc -x"$1" -E -v - </dev/null 2>&1 | sed -n '/^#include <...> search starts here:/,/^End of search list/{/^ /s/^ *//p}'
}
mapfile -t cdirs < <({ grep -oE '(^| )-I/[^ ]+' <<<"$mkn" | sed 's/^ *-I//'; incdirs c; } | awk '!s[$0]++')
mapfile -t cxxdirs < <({ incdirs c++; printf '%s\n' "${cdirs[@]}"; } | awk '!s[$0]++')
declare -A hdr_set hdr_from
while IFS=: read -r file h; do
    set_of "$file"; s=$SET
    # a header used by the tests or the server needs the main set
    if [ "${hdr_set[$h]:-}" != main ]; then hdr_set[$h]=$s; hdr_from[$h]=$file; fi
done < <(git ls-files -- 'src/*' 'codegen/*' 'tests/*' 'generated/*' | grep -E '\.(c|h|re|cc)$' |
         xargs grep -HoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<[^>]+>' |
         sed -E 's/^([^:]*):.*<([^>]+)>$/\1:\2/' | sort -u)
declare -A hdr_path
paths=()
for h in "${!hdr_set[@]}"; do
    case ${hdr_from[$h]} in *.cc) dirs=("${cxxdirs[@]}") ;; *) dirs=("${cdirs[@]}") ;; esac
    for d in "${dirs[@]}"; do
        if [ -f "$d/$h" ]; then hdr_path[$h]=$(realpath -s "$d/$h"); paths+=("${hdr_path[$h]}"); break; fi
    done
    [ -n "${hdr_path[$h]:-}" ] || bad "<$h> (${hdr_from[$h]}) is on no include path: its package is not installed (make deps) or not known"
done
mapfile -t twin_paths < <(for p in "${paths[@]}"; do twins "$p"; done | sort -u)
map_owners "${twin_paths[@]}"
nh=0
for h in "${!hdr_path[@]}"; do
    p=${hdr_path[$h]} s=${hdr_set[$h]}
    pk=$(owner_of "$p")
    if [ -z "${pk// /}" ]; then
        bad "<$h> (${hdr_from[$h]}) is $p, which no package holds"
    # shellcheck disable=SC2086
    elif ! known "$s" $pk; then
        bad "<$h> (${hdr_from[$h]}) comes from package $pk, which is neither in $(why "$s") nor pulled in by them"
    fi
    nh=$((nh + 1))
done
note "$nh headers checked"

# ---- libraries -------------------------------------------------------------------
# -l flags of the Makefile's commands; bench ones are those of build/bench/ outputs.
cclines() { grep -E '(^|[[:space:]"$({])(cc|gcc|clang|c\+\+|CC|CLANG)[}"]?[[:space:]]'; }
libflags() { grep -oE '(^|[[:space:]])-l[A-Za-z0-9_+.-]+' | sed 's/^[[:space:]]*-l//'; }
lib_main=$( { grep -v -- '-o [^ ]*/bench/' <<<"$mkn" | libflags
              git ls-files 'tests/*.sh' 'src/ops/*.sh' | grep -v '^tests/bench/' | xargs cat | cclines | libflags; } | sort -u)
lib_bench=$( { grep -- '-o [^ ]*/bench/' <<<"$mkn" | libflags; git ls-files 'tests/bench/*.sh' | xargs cat | cclines | libflags; } | sort -u)
mapfile -t ldirs < <(grep -oE '(^| )-L/[^ ]+' <<<"$mkn" | sed 's/^ *-L//' | sort -u)
lib_path() { # NAME: the file -lNAME links, or nothing
    local l=$1 f="" d
    for d in "${ldirs[@]}"; do
        [ -e "$d/lib$l.so" ] && { f=$d/lib$l.so; break; }
    done
    [ -n "$f" ] || f=$(cc -print-file-name="lib$l.so")
    [ "$f" != "lib$l.so" ] || f=$(cc -print-file-name="lib$l.a")
    [ "$f" = "lib$l.a" ] || realpath -s "$f"
}
# Sanitizer runtimes (tests always build with them; pending_test_tsan with TSan).
for san in address:asan undefined:ubsan thread:tsan; do
    grep -q -- "-fsanitize=[a-z,]*${san%%:*}" <<<"$mkn" && lib_main+=$'\n'${san#*:}
done
declare -A LIB
for l in $lib_main $lib_bench; do [ -n "${LIB[$l]+x}" ] || LIB[$l]=$(lib_path "$l"); done
mapfile -t twin_paths < <(for l in "${!LIB[@]}"; do [ -n "${LIB[$l]}" ] && twins "${LIB[$l]}"; done | sort -u)
map_owners "${twin_paths[@]}"
check_lib() { # SET NAME
    local s=$1 l=$2 f=${LIB[$2]} pk
    if [ -z "$f" ]; then
        bad "-l$l: no lib$l.so or lib$l.a on the linker's path (its -dev package is not installed: make deps)"
        return
    fi
    pk=$(owner_of "$f")
    if [ -z "${pk// /}" ]; then
        bad "-l$l is $f, which no package holds"
    # shellcheck disable=SC2086
    elif ! known "$s" $pk; then
        bad "library -l$l ($f) comes from package $pk, which is neither in $(why "$s") nor pulled in by them"
    fi
}
nl=0
for l in $lib_main; do check_lib main "$l"; nl=$((nl + 1)); done
for l in $lib_bench; do grep -qxF "$l" <<<"$lib_main" || { check_lib bench "$l"; nl=$((nl + 1)); }; done
note "$nl libraries checked"

# ---- programs ----------------------------------------------------------------------
# Shell text (scripts, Makefile recipes) -> the words in command position.
cmdwords() {
    # drop comments and here-document bodies (data: configs, SQL, scripts for
    # other interpreters), and quoted assignment values (X="a b c")
    awk '
        /^@@FILE@@ / { skip = ""; print; next }
        skip != "" { t = $0; gsub(/^[ \t]+|[ \t]+$/, "", t); if (t == skip) skip = ""; next }
        match($0, /<<-?[ \t]*["\047]?[A-Za-z_][A-Za-z0-9_]*/) {
            w = substr($0, RSTART, RLENGTH); sub(/^<<-?[ \t]*["\047]?/, "", w); skip = w }
        { print }' |
    sed -E 's/^[[:space:]]*#.*//; s/[[:space:]]#.*//; s/="[^"]*"/=/g; s/='"'[^']*'"'/=/g' |
    sed -E 's/&&|\|\||[|;`(){}]|\$\(/\n/g' |
    awk '/^@@FILE@@ / { f = $2; next }
        {
        i = 1
        while (i <= NF) {
            w = $i; gsub(/^["\x27]+|["\x27]+$/, "", w)
            if (w ~ /^[A-Za-z_][A-Za-z0-9_]*=/ || w ~ /^(!|if|then|do|else|elif|while|until|exec|time|nohup|env|sudo|-|--|@|@-|@\+)$/ || w == "") { i++; continue }
            if (w == "command" && $(i+1) == "-v") { i += 2; continue }
            if (w == "command") { i++; continue }
            if (w == "timeout") { i++; while (i <= NF && ($i ~ /^-/ || $(i-1) == "-k" || $(i-1) == "-s")) i++; i++; continue }
            if (w == "runuser") { while (i <= NF && $i != "--") i++; i++; continue }
            if (w == "xargs") { i++; while (i <= NF && $i ~ /^-/) i++; continue }
            sub(/^.*\//, "", w)
            if (w ~ /^[A-Za-z0-9][A-Za-z0-9_.+-]*$/) print f, w
            break
        }
    }'
}
mjs_files=$(git ls-files 'tests/*.mjs' 'tests/*.js')
# (not this script: its lists name programs without calling them)
sh_files=$(git ls-files 'tests/*.sh' 'src/ops/*.sh' '.ci/*' | grep -vx 'src/ops/check-deps.sh')
# Functions the scripts define are not programs.
declare -A FUNC EXEC
while read -r f; do FUNC[$f]=1; done < <(cat $sh_files | sed -nE 's/^[[:space:]]*(function[[:space:]]+)?([A-Za-z_][A-Za-z0-9_-]*)[[:space:]]*\(\)[[:space:]]*\{?.*/\2/p' | sort -u)
# Executables this machine has (PATH and PostgreSQL's bin), by name.
SYSPATH=/usr/sbin:/usr/bin:/sbin:/bin:/usr/lib/postgresql/15/bin
while read -r f; do EXEC[$f]=1; done < <(for d in /usr/bin /bin /usr/sbin /sbin /usr/lib/postgresql/15/bin; do
            [ -d "$d" ] && find "$d" -maxdepth 1 \( -type f -o -type l \) -perm -u+x -printf '%f\n'
        done | sort -u)
declare -A prog_set prog_from
add_prog() { # SET NAME FILE
    [ "${prog_set[$2]:-}" = main ] && return
    prog_set[$2]=$1; prog_from[$2]=$3
}
while read -r f w; do
    set_of "$f"; add_prog "$SET" "$w" "$f"
done < <(for f in $sh_files; do echo "@@FILE@@ $f"; cat "$f"; echo; done | cmdwords | sort -u)
# Makefile recipes: bench-* and build/bench targets are the benchmarks'.
while read -r s w; do
    add_prog "$s" "$w" Makefile
done < <(awk '/^[^\t#][^=]*:/ { s = ($0 ~ /^(bench-|\$\(BENCH\))/) ? "bench" : "main"; print "@@FILE@@ " s }
              /^\t/ { sub(/^\t/, ""); print }' Makefile | cmdwords | sort -u)
# .mjs: spawn('prog', ...), execFileSync('prog', ...), execSync(`prog ...`), '/usr/bin/prog'.
while IFS= read -r f; do
    set_of "$f"; s=$SET
    for w in $(grep -oE "(spawn|spawnSync|execFile|execFileSync)\(['\"][^'\"]+['\"]|exec(Sync)?\(\`[^ \`\$]+|['\"]/usr/bin/[^'\"]+['\"]" "$f" |
               sed -E "s/^[a-zA-Z]+\(['\"\`]//; s/['\"]//g; s|^.*/||" | sort -u); do
        add_prog "$s" "$w" "$f"
    done
done <<<"$mjs_files"
declare -A WORD
while read -r w; do WORD[$w]=1; done < <(cat Makefile $sh_files $mjs_files | grep -oE '[A-Za-z0-9_][A-Za-z0-9_.+-]*' | sort -u)
# Listed programs: really called, and in their listed package.
declare -A listed_pkg
while read -r p pk; do
    [ -n "$p" ] || continue
    listed_pkg[$p]=$pk
    [ -n "${WORD[$p]:-}" ] || bad "REQUIRED_PROGRAMS lists $p, which nothing calls: drop it"
    # The set of the first file that names it decides (bench when only benchmarks do).
    if [ -z "${prog_set[$p]:-}" ]; then
        f=$(grep -lwF -- "$p" Makefile $sh_files $mjs_files | head -n 1)
        [ -n "$f" ] && { set_of "$f"; add_prog "$SET" "$p" "$f"; }
    fi
done <<<"$REQUIRED_PROGRAMS"
# Where each program is on a fresh machine's PATH (not a hand-made one: pyenv, ~/bin).
declare -A PROG
for p in "${!prog_set[@]}"; do
    [ -n "${FUNC[$p]:-}" ] && [ -z "${listed_pkg[$p]:-}" ] && continue
    [[ " $NOT_PROGRAMS " == *" $p "* ]] && continue
    [ -n "${EXEC[$p]:-}" ] || [ -n "${listed_pkg[$p]:-}" ] || continue
    PROG[$p]=
    for d in ${SYSPATH//:/ }; do
        [ -x "$d/$p" ] && [ ! -d "$d/$p" ] && { PROG[$p]=$d/$p; break; }
    done
done
mapfile -t twin_paths < <(for p in "${!PROG[@]}"; do [ -n "${PROG[$p]}" ] && twins "${PROG[$p]}"; done | sort -u)
map_owners "${twin_paths[@]}"
np=0
[ -n "${CHECK_DEPS_LIST:-}" ] && for p in "${!PROG[@]}"; do echo "prog $p ${prog_set[$p]} ${prog_from[$p]} ${PROG[$p]}" >&2; done
for p in "${!PROG[@]}"; do
    s=${prog_set[$p]} from=${prog_from[$p]} path=${PROG[$p]}
    if [ -z "$path" ]; then
        [ -n "${listed_pkg[$p]:-}" ] || continue
        if known "$s" "${listed_pkg[$p]}"; then
            note "$p (from ${listed_pkg[$p]}) is not installed here yet; not verified"
        else
            bad "program $p ($from) comes from package ${listed_pkg[$p]}, which is neither in $(why "$s") nor pulled in by them"
        fi
        continue
    fi
    pk=$(owner_of "$path")
    np=$((np + 1))
    if [ -z "${pk// /}" ]; then
        bad "program $p ($from) is $path, which no package holds (installed by hand?)"
    # shellcheck disable=SC2086
    elif ! known "$s" $pk; then
        bad "program $p ($from) comes from package $pk, which is neither in $(why "$s") nor pulled in by them"
    elif [ -n "${listed_pkg[$p]:-}" ] && ! grep -qxF "${listed_pkg[$p]}" <<<"$(tr ' ' '\n' <<<"$pk")"; then
        # psql is postgresql-client-common's wrapper; a Node installed by
        # hand ships npm inside nodejs: fine while the listed one is known too.
        known "$s" "${listed_pkg[$p]}" || bad "REQUIRED_PROGRAMS says $p comes from ${listed_pkg[$p]}, but $path is in $pk"
        note "$p is $path from $pk (listed as ${listed_pkg[$p]})"
    fi
done
note "$np programs checked"

# ---- npm modules ---------------------------------------------------------------------
if command -v node >/dev/null; then
    builtins=$(node -p "require('module').builtinModules.join('\n')")
else
    bad "node is not installed (make deps): npm modules not checked"
    builtins=
fi
# The npm installs of the scripts, continuation lines joined, $VARS resolved.
npm_pins=$(for f in $(git ls-files 'tests/*.sh' 'tests/*/*.sh' Makefile); do
    sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$f" | grep -E 'npm (install|i) ' | grep -oE '[@A-Za-z0-9/._-]+@[^ "]+' |
    while read -r spec; do
        v=${spec##*@}
        if [[ $v =~ ^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$ ]]; then
            var=${BASH_REMATCH[1]}
            v=$(sed -nE "s/^[[:space:]]*(export[[:space:]]+)?$var=([^[:space:]]+).*/\2/p" "$f" "$(dirname "$f")"/lib.sh tests/media/lib.sh 2>/dev/null | head -n 1)
        fi
        echo "${spec%@*} $v $f"
    done
done)
nm=0
declare -A NPM_DONE
while IFS=' ' read -r mod file; do
    [ -n "$mod" ] || continue
    nm=$((nm + 1))
    # package name: @scope/name or name
    if [[ $mod == @* ]]; then name=$(cut -d/ -f1-2 <<<"$mod"); else name=${mod%%/*}; fi
    grep -qxF "$name" <<<"$builtins" && continue
    [ -n "${NPM_DONE[$name]:-}" ] && continue
    NPM_DONE[$name]=1
    ok=
    # a lock file in the importing file's directory (or a parent under tests/)
    d=$(dirname "$file")
    while [ "$d" != . ] && [ "$d" != / ]; do
        if [ -f "$d/package-lock.json" ] && [ -f "$d/package.json" ]; then
            spec=$(node -e 'const p=require(process.argv[1]); const d={...p.dependencies,...p.devDependencies}; process.stdout.write(d[process.argv[2]]||"")' "$root/$d/package.json" "$name")
            lockv=$(node -e 'const l=require(process.argv[1]); const e=(l.packages||{})["node_modules/"+process.argv[2]]; process.stdout.write(e&&e.version||"")' "$root/$d/package-lock.json" "$name")
            if [ -z "$lockv" ]; then bad "npm module $name ($file): not in $d/package-lock.json"
            elif [ -n "$spec" ] && ! [[ $spec =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then bad "npm module $name ($file): $d/package.json asks for '$spec', not an exact version"
            elif ! grep -rqs 'npm ci' "$d"/*.sh Makefile; then bad "npm module $name ($file): nothing runs 'npm ci' in $d"
            else ok=1; fi
            break
        fi
        d=$(dirname "$d")
    done
    if [ -z "$ok" ] && [ -z "$(find "$(dirname "$file")" -maxdepth 2 -name package-lock.json -print -quit)" ]; then
        pin=$(awk -v n="$name" '$1 == n' <<<"$npm_pins")
        if [ -z "$pin" ]; then
            bad "npm module $name ($file) is installed by nothing: pin it (npm install $name@X.Y.Z) or lock it"
        else
            while read -r _ v f; do
                [[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || bad "npm module $name: $f installs version '$v', not an exact X.Y.Z"
            done <<<"$pin"
        fi
    fi
done < <(for f in $mjs_files; do
             # Not a method of the same name (Buffer.from('...')): a word of its own.
             grep -oE "(^|[^.[:alnum:]_\$])(from|import|require)[[:space:]]*\(?[[:space:]]*['\"][^'\"./][^'\"]*['\"]" "$f" |
                 sed -E "s/.*['\"]([^'\"]+)['\"]/\1/" | grep -v '^node:' | sed "s|\$| $f|"
         done | sort -u)
note "$nm npm imports checked"
# Node 20+ only APIs in the test scripts (Debian 12 runs Node 18).
if hits=$(grep -nE 'import\.meta\.(dirname|filename)|Promise\.withResolvers|Object\.groupBy|Map\.groupBy|Array\.fromAsync|\.toSorted\(|\.toReversed\(|\.toSpliced\(|\.isWellFormed\(|process\.getBuiltinModule|fs\.globSync|navigator\.hardwareConcurrency' $mjs_files); then
    bad "Node 20+ only APIs in the tests (Debian 12 has Node $NODE_MAJOR):"
    sed 's/^/    /' <<<"$hits" >&2
fi
# engines of what is locked, or installed at the version a script pins (an
# install of an older pin, left in build/ by an earlier checkout, is not what
# the tests will run: they reinstall the pin)
if command -v node >/dev/null; then
    eng=$(PINS="$npm_pins" node - "$NODE_MAJOR" $(git ls-files 'tests/*package-lock.json') $(find tests build -path '*/node_modules/*/package.json' -not -path '*/node_modules/*/node_modules/*' 2>/dev/null) <<'EOF'
const fs = require('fs');
const [major, ...files] = process.argv.slice(2);
const pins = new Set((process.env.PINS || '').split('\n').map((l) => l.split(/\s+/).slice(0, 2).join('@')));
// the lowest major a range admits (>=N, ^N, N.x, ~N, N); alternatives with ||
const low = (r) => Math.min(...String(r).split('||').map((a) => {
    const m = /(\d+)/.exec(a); return m ? Number(m[1]) : 0; }));
for (const f of files) {
    let j; try { j = JSON.parse(fs.readFileSync(f, 'utf8')); } catch { continue; }
    const list = f.endsWith('package-lock.json')
        ? Object.entries(j.packages || {}).map(([k, v]) => [k || f, v])
        : (f.includes('/node_modules/') && !pins.has(`${j.name}@${j.version}`) ? [] : [[f, j]]);
    for (const [k, v] of list) {
        const r = v.engines && v.engines.node;
        if (r && low(r) > Number(major)) console.log(`${k}${v.version ? '@' + v.version : ''} needs node ${r}`);
    }
}
EOF
)
    [ -z "$eng" ] || { bad "npm modules that need a Node newer than Debian 12's $NODE_MAJOR:"; sed 's/^/    /' <<<"$eng" >&2; }
fi

if [ "$fail" -ne 0 ]; then
    echo "$prog: FAILED: add each package named above to DEB_PACKAGES in the Makefile (BENCH_DEB_PACKAGES when only a benchmark needs it); pin or lock each npm module named" >&2
    exit 1
fi
echo "$prog: ok: ${nh} headers, ${nl} libraries, ${np} programs, ${nm} npm imports come from DEB_PACKAGES, DEB_NODE, BENCH_DEB_PACKAGES, the base system or pinned installs"
