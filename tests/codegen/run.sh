#!/usr/bin/env bash
# run.sh IGW_GEN [--update] - the generator's own tests.
#
# golden/NAME.igw   -> golden/NAME.expected/{generated,docs}: output must match
#                      byte for byte, and the generated C must compile with the
#                      runtime (so the emitter is right for schemas beyond ours);
# errors/NAME.igw   -> errors/NAME.err: exit status 1 and exactly that stderr;
# errors/emit_NAME.igw: the same, but the model is sound and an emitter
#                      refuses it (derived SQL names): exit status 2.
# --update rewrites the expectations (review the diff before committing).
set -uo pipefail
gen=$(realpath "$1")
update=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 pass=0

cd "$here"
for schema in $(find golden -name '*.igw' | sort); do
    name=${schema%.igw}
    out=$tmp/$name
    mkdir -p "$out"
    if ! "$gen" -o "$out/generated" -d "$out/docs" "$schema" 2>"$out/stderr"; then
        echo "FAIL $schema: generator failed"; cat "$out/stderr"; fail=$((fail + 1)); continue
    fi
    mkdir -p "$out/generated" "$out/docs"   # a schema may produce no docs at all
    if [ "$update" = --update ]; then
        rm -rf "$name.expected" && cp -r "$out" "$name.expected" && rm -f "$name.expected/stderr"
    fi
    if ! diff -r "$name.expected/generated" "$out/generated" >"$out/diff" ||
       ! diff -r "$name.expected/docs" "$out/docs" >>"$out/diff"; then
        echo "FAIL $schema: output differs from $name.expected"; head -40 "$out/diff"; fail=$((fail + 1)); continue
    fi
    # Determinism: a second run from another working directory is identical.
    (cd "$tmp" && "$gen" -o "$out/again/generated" -d "$out/again/docs" "$here/$schema" 2>/dev/null)
    if ! diff -r "$out/generated" "$out/again/generated" >/dev/null; then
        echo "FAIL $schema: output depends on the working directory or run"; fail=$((fail + 1)); continue
    fi
    if [ -f "$out/generated/api.c" ]; then
        for c in "$out"/generated/*.c "$out"/generated/igwd/*.c; do
            [ -f "$c" ] || continue
            if ! ${CC:-cc} -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wextra -Werror \
                 -I"$root/src/rt" -I"$root/src/lib" -I"$out/generated" -c "$c" -o "$out/$(basename "$c").o"; then
                echo "FAIL $schema: generated $(basename "$c") does not compile"; fail=$((fail + 1)); continue 2
            fi
        done
        # Headers stand alone: what handwritten code includes first compiles.
        for hd in "$out"/generated/*.h "$out"/generated/igwd/*.h; do
            [ -f "$hd" ] || continue
            if ! printf '#include "%s"\n' "$hd" | ${CC:-cc} -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
                 -Wall -Wextra -Werror -I"$root/src/rt" -I"$root/src/lib" -I"$out/generated" -fsyntax-only -x c -; then
                echo "FAIL $schema: generated $(basename "$hd") does not compile alone"; fail=$((fail + 1)); continue 2
            fi
        done
    fi
    pass=$((pass + 1))
done

for schema in $(find errors -name '*.igw' | sort); do
    want=${schema%.igw}.err
    case $schema in
    errors/emit_*) expect=2; "$gen" -o "$tmp/emit/generated" -d "$tmp/emit/docs" "$schema" >/dev/null 2>"$tmp/err" ;;
    *) expect=1; "$gen" --check-only "$schema" >/dev/null 2>"$tmp/err" ;;
    esac
    status=$?
    [ "$update" = --update ] && cp "$tmp/err" "$want"
    if [ "$status" -ne "$expect" ]; then
        echo "FAIL $schema: exit status $status, expected $expect"; fail=$((fail + 1))
    elif ! diff -u "$want" "$tmp/err"; then
        echo "FAIL $schema: diagnostics differ"; fail=$((fail + 1))
    else
        pass=$((pass + 1))
    fi
done
echo "codegen: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
