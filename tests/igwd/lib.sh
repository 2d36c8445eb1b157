# lib.sh - shell pieces the igwd tests and benchmarks share; source it.

# igw_port FILE [PID]: waits up to 10 s for igwd's startup line in FILE and
# prints the port it listens on; returns 1 if none came (at once if PID died).
igw_port() {
    local p
    for _ in $(seq 100); do
        p=$(sed -n 's/^igwd: listening on http:\/\/127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$1")
        [ -n "$p" ] && { echo "$p"; return 0; }
        [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null && return 1
        sleep 0.1
    done
    return 1
}

# expect STATUS CODE [PATH]: the reply in $TMP/r had HTTP STATUS (in
# $STATUS) and envelope code CODE; an error carries the envelope with
# data.reason and data.path (PATH, default "") and no internal text. Names
# the case by $CASE; needs the caller's fail and ok.
expect() {
    local want=$1 code=$2 path=${3-}
    [ "$STATUS" = "$want" ] || fail "$CASE: HTTP $STATUS, want $want: $(cat "$TMP/r")"
    [ "$(jq -r .code "$TMP/r")" = "$code" ] || fail "$CASE: code $(jq -r .code "$TMP/r"), want $code: $(cat "$TMP/r")"
    if [ "$code" != 200 ]; then
        jq -e '(.msg|type)=="string" and (.data.reason|type)=="string" and (.data.reason|length)>0 and (.data.path|type)=="string"' \
            "$TMP/r" >/dev/null || fail "$CASE: not the error envelope: $(cat "$TMP/r")"
        [ "$(jq -r .data.path "$TMP/r")" = "$path" ] || fail "$CASE: path $(jq -r .data.path "$TMP/r"), want $path"
        grep -qiE 'select|insert|postgres|sqlstate|127\.0\.0\.1|secret' "$TMP/r" && fail "$CASE: internal text leaked: $(cat "$TMP/r")"
    fi
    ok
}
