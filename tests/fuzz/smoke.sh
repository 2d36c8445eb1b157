#!/usr/bin/env bash
# smoke.sh SECONDS - builds a libFuzzer harness per route decoder, seeds it
# from the route's conformance vectors, and fuzzes each for SECONDS.
# `make fuzz-smoke` runs it briefly inside `make test`; `make fuzz` longer.
set -euo pipefail
secs=${1:-5}
cd "$(dirname "$0")/../.."
out=build/fuzz
mkdir -p "$out"
clang=${CLANG:-clang}
flags=(-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 -Wall -Wextra -Werror
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Isrc/rt -Isrc/lib -Igenerated)
srcs=(tests/fuzz/fuzz_decode.c generated/api.c src/rt/*.c src/lib/*.c)
runner=build/tests/conformance-run
[ -x "$runner" ] || { echo "fuzz: build $runner first (make test-conformance)"; exit 2; }
routes=$(sed -n 's/^    IGW_ROUTE_\([A-Z0-9_]*\),$/\1/p' generated/api.h)
[ -n "$routes" ] || { echo "fuzz: no routes found in generated/api.h"; exit 2; }
ran=0
for r in $routes; do
    lower=$(echo "$r" | tr 'A-Z' 'a-z')
    vectors=generated/conformance/$lower.jsonl
    [ -f "$vectors" ] || continue   # multipart routes are parsed by the server, not a decoder
    bin=$out/fuzz_$lower
    if [ ! -x "$bin" ] || [ -n "$(find generated/api.c tests/fuzz/fuzz_decode.c src/rt src/lib -newer "$bin" -name '*.[ch]' | head -1)" ]; then
        "$clang" "${flags[@]}" -DIGW_FUZZ_ROUTE="IGW_ROUTE_$r" -o "$bin" "${srcs[@]}" -lcrypto -lm
    fi
    corpus=$out/corpus/$lower
    rm -rf "$corpus" && mkdir -p "$corpus"
    "$runner" --seeds "$corpus" "$vectors" >/dev/null
    echo "fuzz: $lower for ${secs}s ($(ls "$corpus" | wc -l) seeds)"
    "$bin" -max_total_time="$secs" -max_len=70000 -print_final_stats=0 "$corpus" 2>"$out/$lower.log" ||
        { tail -40 "$out/$lower.log"; echo "fuzz: $lower FAILED"; exit 1; }
    ran=$((ran + 1))
done
# The free-value layer: both profiles and the canonical writer, seeded
# from JSONTestSuite.
suite=${JSON_SUITE:-tests/rt/JSONTestSuite/test_parsing}
bin=$out/fuzz_json
if [ ! -x "$bin" ] || [ -n "$(find tests/fuzz/fuzz_json.c src/rt src/lib -newer "$bin" -name '*.[ch]' | head -1)" ]; then
    "$clang" "${flags[@]}" -o "$bin" tests/fuzz/fuzz_json.c src/rt/*.c src/lib/*.c -lcrypto -lm
fi
corpus=$out/corpus/json
rm -rf "$corpus" && mkdir -p "$corpus"
[ -d "$suite" ] && cp "$suite"/*.json "$corpus"/
echo "fuzz: json for ${secs}s ($(ls "$corpus" | wc -l) seeds)"
"$bin" -max_total_time="$secs" -print_final_stats=0 "$corpus" 2>"$out/json.log" ||
    { tail -40 "$out/json.log"; echo "fuzz: json FAILED"; exit 1; }
# The multipart parser of the upload route (and the filename/URL checks it feeds).
bin=$out/fuzz_multipart
if [ ! -x "$bin" ] || [ -n "$(find tests/fuzz/fuzz_multipart.c src/rt src/lib -newer "$bin" -name '*.[ch]' | head -1)" ]; then
    "$clang" "${flags[@]}" -o "$bin" tests/fuzz/fuzz_multipart.c src/rt/*.c src/lib/*.c -lcrypto -lm
fi
rm -rf "$out/corpus/multipart" && mkdir -p "$out/corpus/multipart"
echo "fuzz: multipart for ${secs}s"
"$bin" -max_total_time="$secs" -max_len=8192 -print_final_stats=0 "$out/corpus/multipart" 2>"$out/multipart.log" ||
    { tail -40 "$out/multipart.log"; echo "fuzz: multipart FAILED"; exit 1; }
# The WebRTC SDP parser and writer, seeded from the real offers in tests/media/sdp_corpus.
bin=$out/fuzz_sdp
if [ ! -x "$bin" ] || [ -n "$(find tests/fuzz/fuzz_sdp.c src/media/sdp.c src/media/sdp.h -newer "$bin" | head -1)" ]; then
    "$clang" "${flags[@]}" -Isrc/media -o "$bin" tests/fuzz/fuzz_sdp.c src/media/sdp.c
fi
rm -rf "$out/corpus/sdp" && mkdir -p "$out/corpus/sdp" && cp tests/media/sdp_corpus/*.sdp "$out/corpus/sdp"/
echo "fuzz: sdp for ${secs}s ($(ls "$out/corpus/sdp" | wc -l) seeds)"
"$bin" -max_total_time="$secs" -max_len=70000 -print_final_stats=0 "$out/corpus/sdp" 2>"$out/sdp.log" ||
    { tail -40 "$out/sdp.log"; echo "fuzz: sdp FAILED"; exit 1; }
ran=$((ran + 1))

[ "$ran" -gt 0 ] || { echo "fuzz: no decoder fuzzed"; exit 1; }
echo "fuzz: $ran decoders fuzzed, no crash"
