#!/usr/bin/env bash
# run.sh [--seconds S | --runs N] [TARGET...] - builds the libFuzzer
# harnesses (ASan + UBSan) and fuzzes each target from its seeds.
#
#   make fuzz-smoke  --seconds 3 (inside make test): every target briefly,
#                    and every input kept in tests/fuzz/regress/<target>/
#   make fuzz        --runs 10000000 (FUZZ_RUNS): the long run; writes the
#                    measured table to build/fuzz-long/table.md
#
# Targets: one per route decoder (seeded from its conformance vectors), json
# (JSONTestSuite), multipart, sdp (tests/media/sdp_corpus), stun, thingmodel
# and devauth (tests/fuzz/seeds/<target>). A crash, leak, UB or broken
# invariant is a finding: its input is left in build/fuzz*/findings/<target>/
# and the run fails after the other targets had their turn. Fix it and keep
# the input in tests/fuzz/regress/<target>/ so that fuzz-smoke replays it.
set -euo pipefail
mode=seconds value=3
case "${1:-}" in
--seconds) value=$2; shift 2 ;;
--runs) mode=runs value=$2; shift 2 ;;
esac
cd "$(dirname "$0")/../.."
# the long run has its own directory, so that make test can run beside it
out=build/fuzz
[ "$mode" = runs ] && out=${FUZZ_OUT:-build/fuzz-long} # FUZZ_OUT: two long runs side by side
mkdir -p "$out"
clang=${CLANG:-clang}
flags=(-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 -Wall -Wextra -Werror
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Isrc/rt -Isrc/lib -Igenerated)
lib_srcs=(src/rt/*.c src/lib/*.c)
runner=build/tests/conformance-run
[ -x "$runner" ] || { echo "fuzz: build $runner first (make test-conformance)"; exit 2; }

routes=$(sed -n 's/^    IGW_ROUTE_\([A-Z0-9_]*\),$/\1/p' generated/api.h)
[ -n "$routes" ] || { echo "fuzz: no routes found in generated/api.h"; exit 2; }
decoders=()
for r in $routes; do
    lower=$(echo "$r" | tr 'A-Z' 'a-z')
    # multipart routes are parsed by the server, not a decoder
    [ -f generated/conformance/$lower.jsonl ] && decoders+=("$lower")
done
all=("${decoders[@]}" json multipart sdp stun thingmodel devauth)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

# build TARGET BIN: (re)builds the harness when a source is newer.
build() {
    local t=$1 bin=$2 srcs deps extra=()
    case "$t" in
    json|multipart|devauth) srcs=(tests/fuzz/fuzz_$t.c "${lib_srcs[@]}"); deps=(tests/fuzz src/rt src/lib) ;;
    sdp) srcs=(tests/fuzz/fuzz_sdp.c src/media/sdp.c); deps=(tests/fuzz src/media/sdp.c src/media/sdp.h); extra=(-Isrc/media) ;;
    stun) srcs=(tests/fuzz/fuzz_stun.c src/media/stun.c); deps=(tests/fuzz src/media/stun.c src/media/stun.h); extra=(-Isrc/media) ;;
    thingmodel)
        # an input starting with NUL checks documents against the demo model
        srcs=(tests/fuzz/fuzz_thingmodel.c "${lib_srcs[@]}"); deps=(tests/fuzz src/rt src/lib)
        extra=(-DIGW_FUZZ_MODEL="\"$PWD/tests/lib/demo-model.json\"") ;;
    *) srcs=(tests/fuzz/fuzz_decode.c generated/api.c "${lib_srcs[@]}"); deps=(tests/fuzz generated/api.c generated/api.h src/rt src/lib) ;;
    esac
    if [ ! -x "$bin" ] || [ -n "$(find "${deps[@]}" -newer "$bin" -type f | head -1)" ]; then
        "$clang" "${flags[@]}" "${extra[@]}" -o "$bin" "${srcs[@]}" -lcrypto -lm
    fi
}

# seed TARGET DIR: fills DIR with the target's seeds.
seed() {
    local t=$1 dir=$2
    case "$t" in
    json) [ -d tests/rt/JSONTestSuite/test_parsing ] && cp tests/rt/JSONTestSuite/test_parsing/*.json "$dir"/ ;;
    sdp) cp tests/media/sdp_corpus/*.sdp "$dir"/ ;;
    multipart|stun|thingmodel|devauth) [ -d tests/fuzz/seeds/$t ] && cp tests/fuzz/seeds/$t/* "$dir"/ ;;
    *) "$runner" --seeds "$dir" generated/conformance/$t.jsonl >/dev/null ;;
    esac
    return 0
}

max_len() {
    case "$1" in multipart) echo 8192 ;; devauth) echo 4096 ;; stun) echo 1500 ;; *) echo 70000 ;; esac
}

table=$out/table.md
if [ "$mode" = runs ]; then
    printf '| target | executions | seconds | exec/s | coverage (cov/ft) | corpus | findings |\n' >"$table"
    printf '|---|---:|---:|---:|---|---:|---|\n' >>"$table"
fi
failed=()
for t in "${targets[@]}"; do
    bin=$out/fuzz_$t
    route=
    case " ${decoders[*]} " in
    *" $t "*) bin=$out/fuzz_decode route=$t ;; # one build for every route, chosen by IGW_FUZZ_ROUTE
    esac
    build "$t" "$bin"
    corpus=$out/corpus/$t
    regress=tests/fuzz/regress/$t
    findings=$out/findings/$t
    rm -rf "$corpus" "$findings" && mkdir -p "$corpus" "$findings" "$regress"
    seed "$t" "$corpus"
    seeds=$(ls "$corpus" | wc -l)
    limit=(-max_total_time="$value")
    [ "$mode" = runs ] && limit=(-runs="$value")
    echo "fuzz: $t, $mode $value ($seeds seeds, $(ls "$regress" | wc -l) regression inputs)"
    start=$(date +%s)
    rc=0
    IGW_FUZZ_ROUTE=$route "$bin" "${limit[@]}" -max_len="$(max_len "$t")" -print_final_stats=1 \
        -artifact_prefix="$findings/" "$corpus" "$regress" 2>"$out/$t.log" || rc=$?
    secs=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log" | tail -1)
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$out/$t.log" | tail -1 | sed 's/cov: \([0-9]*\) ft: \([0-9]*\)/\1\/\2/')
    if [ "$rc" -ne 0 ]; then
        tail -40 "$out/$t.log"
        echo "fuzz: $t FAILED (input kept in $findings/)"
        failed+=("$t")
    fi
    if [ "$mode" = runs ]; then
        printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$t" "${execs:-?}" "$secs" \
            "$(( ${execs:-0} / (secs > 0 ? secs : 1) ))" "${cov:-?}" "$(ls "$corpus" | wc -l)" \
            "$([ "$rc" -eq 0 ] && echo 0 || echo "$(ls "$findings" | wc -l) (open)")" >>"$table"
        echo "fuzz: $t: ${execs:-?} executions in ${secs}s"
    fi
done
[ "$mode" = runs ] && cat "$table"
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: findings in ${failed[*]}"; exit 1; }
echo "fuzz: ${#targets[@]} targets fuzzed, no finding"
