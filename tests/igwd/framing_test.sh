#!/usr/bin/env bash
# framing_test.sh BINARY - request framing at the transport (issue 14): raw
# requests over sockets to an igwd with no services, each checked for its
# status line, the JSON error envelope, whether the connection closed, and
# that nothing sent after a refused request was served (one response per
# connection, no /smuggled line in the access log).
# Exits non-zero with a message on the first failure.
set -u
BIN=${1:?usage: framing_test.sh BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
TMP=$(mktemp -d)
PID=
cleanup() {
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill -KILL "$PID" 2>/dev/null; fi
    rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "framing: FAIL: $*" >&2; [ -s "$TMP/err" ] && { echo "--- igwd stderr:" >&2; tail -n 20 "$TMP/err" >&2; }; exit 1; }
command -v python3 >/dev/null || fail "python3 is not installed"

# As smoke.sh: h2o 2.2.5's per-thread caches are never freed.
export LSAN_OPTIONS="suppressions=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../lsan.supp"):print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
for v in $(compgen -e | grep '^IGW_' || true); do unset "$v"; done

IGW_LISTEN=127.0.0.1:0 IGW_THREADS=1 IGW_MAX_BODY=64K "$BIN" >"$TMP/out" 2>"$TMP/err" &
PID=$!
PORT=$(igw_port "$TMP/out" "$PID") || fail "no startup line (igwd exited, or 10 s passed)"

# Every check runs and reports; the script fails at the end if any did.
python3 - "$PORT" <<'PY'; prc=$?
import json, socket, sys

PORT = int(sys.argv[1])
checks, failures = 0, 0

class Failed(Exception):
    pass

def fail(name, msg):
    raise Failed(f"{name}: {msg}")

def check(fn, name, *args):
    """Runs one check; a failure is reported and the next check still runs."""
    global checks, failures
    try:
        fn(name, *args)
        checks += 1
    except Failed as e:
        failures += 1
        print(f"framing: FAIL: {e}", file=sys.stderr)

def exchange(raw):
    """Sends raw bytes; reads until EOF (closed=True) or 3 s of silence."""
    s = socket.create_connection(("127.0.0.1", PORT), timeout=3)
    s.sendall(raw)
    data, closed = b"", False
    try:
        while True:
            b = s.recv(65536)
            if not b:
                closed = True
                break
            data += b
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed = True
    s.close()
    return data, closed

def responses(name, data):
    """Splits the bytes into (status, headers, body) by Content-Length."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            fail(name, f"truncated response: {data[:200]!r}")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
            fail(name, f"not a status line: {lines[0]!r}")
        hs = {}
        for l in lines[1:]:
            k, _, v = l.partition(":")
            hs.setdefault(k.strip().lower(), []).append(v.strip())
        n = int(hs.get("content-length", ["0"])[0])
        out.append((int(parts[1]), hs, rest[:n]))
        data = rest[n:]
    return out

def refused(name, raw, reason_has, want=400, code=100400):
    """One envelope of this status and code, Connection: close, then EOF."""
    data, closed = exchange(raw)
    rs = responses(name, data)
    if len(rs) != 1:
        fail(name, f"{len(rs)} responses, want 1 (a second request was served): {[r[0] for r in rs]}")
    status, hs, body = rs[0]
    if status != want:
        fail(name, f"HTTP {status}, want {want}: {body[:200]!r}")
    if hs.get("content-type") != ["application/json"]:
        fail(name, f"content-type {hs.get('content-type')}, want application/json: {body[:200]!r}")
    try:
        o = json.loads(body)
    except ValueError:
        fail(name, f"body is not JSON: {body[:200]!r}")
    if o.get("code") != code or not isinstance(o.get("msg"), str) or \
            not isinstance(o.get("data"), dict) or not isinstance(o["data"].get("path"), str):
        fail(name, f"not the envelope with code {code}: {o}")
    reason = o["data"].get("reason", "")
    if reason_has.lower() not in reason.lower():
        fail(name, f"reason {reason!r} does not name {reason_has!r}")
    if "x-request-id" not in hs:
        fail(name, "no x-request-id")
    if hs.get("connection") != ["close"]:
        fail(name, f"connection {hs.get('connection')}, want close")
    if not closed:
        fail(name, "the connection stayed open after the refusal")

def served(name, raw, statuses):
    """Every request answered, in order, with these statuses."""
    data, _ = exchange(raw)
    got = [r[0] for r in responses(name, data)]
    if got != statuses:
        fail(name, f"statuses {got}, want {statuses}")

PROP = b"/api/v1/things/device/edge/send/thing/property"
BODY = b'{"deviceName":"d1","productKey":"p1","properties":{"t":21.5}}\n'
assert len(BODY) == 62
SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

def post(headers, body):
    return b"POST " + PROP + b" HTTP/1.1\r\nHost: igw\r\nContent-Type: application/json\r\n" + \
        b"".join(h + b"\r\n" for h in headers) + b"\r\n" + body

# Control: keep-alive and pipelining still work for a well-framed request.
check(served, "pipelined", b"GET /healthz HTTP/1.1\r\nHost: igw\r\n\r\n" * 2, [200, 200])
check(served, "http/1.0 without Host", b"GET /healthz HTTP/1.0\r\n\r\n", [200])

# Two different Content-Length: h2o frames by the first; the rest of the
# body would be read as a second request.
check(refused, "two Content-Length", post([b"Content-Length: 62", b"Content-Length: 124"], BODY + SMUGGLED), "Content-Length")
check(refused, "two equal Content-Length", post([b"Content-Length: 62", b"Content-Length: 62"], BODY + SMUGGLED), "Content-Length")

# Content-Length with Transfer-Encoding: chunked (h2o frames by chunks).
chunked = b"%x\r\n" % len(BODY) + BODY + b"\r\n0\r\n\r\n"
for te in (b"chunked", b" Chunked", b"CHUNKED"):
    check(refused, f"Content-Length with Transfer-Encoding:{te.decode()}",
            post([b"Content-Length: 62", b"Transfer-Encoding:" + te], chunked + SMUGGLED), "Transfer-Encoding")
check(refused, "Transfer-Encoding before Content-Length",
        post([b"Transfer-Encoding: chunked", b"Content-Length: 4"], chunked + SMUGGLED), "Transfer-Encoding")
check(refused, "two Transfer-Encoding",
        post([b"Transfer-Encoding: chunked", b"Transfer-Encoding: chunked"], chunked + SMUGGLED), "Transfer-Encoding")

# Host (RFC 9112 section 3.2): exactly one in HTTP/1.1.
check(refused, "HTTP/1.1 without Host", b"GET /healthz HTTP/1.1\r\n\r\n" + SMUGGLED, "Host")
check(refused, "two Host", b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n" + SMUGGLED, "Host")

# h2o refuses a Content-Length it cannot read before igwd sees the request.
check(refused, "negative Content-Length", post([b"Content-Length: -1"], BODY + SMUGGLED), "content-length")
check(refused, "unknown Transfer-Encoding", post([b"Transfer-Encoding: gzip"], BODY + SMUGGLED), "transfer-encoding")
check(refused, "broken chunk", post([b"Transfer-Encoding: chunked"], b"zz\r\n" + BODY + SMUGGLED), "chunked")
check(refused, "body over max_body", post([b"Content-Length: 70000"], BODY + SMUGGLED), "too large", 413, 100413)

def unparsable(name, request):
    """A request h2o cannot parse: its fixed plain-text 400, then EOF (no
    hook reaches it; docs/configuration.md says so). Nothing after it is
    read as a request."""
    data, closed = exchange(request + SMUGGLED)
    rs = responses(name, data)
    if [r[0] for r in rs] != [400] or not closed:
        fail(name, f"statuses {[r[0] for r in rs]}, closed {closed}; want one 400, closed")
    if rs[0][1].get("content-type") != ["text/plain; charset=utf-8"]:
        fail(name, f"content-type {rs[0][1].get('content-type')}: h2o's answer changed, update the docs")
check(unparsable, "unparsable header block", b"GET /healthz HTTP/1.1\r\nHost igw\r\n\r\n")
# HTTP/0.9 has no status line to carry an envelope; h2o answers in 1.1.
check(unparsable, "HTTP/0.9 request line", b"GET /healthz\r\n\r\n")
many = b"".join(b"X-H%d: v\r\n" % i for i in range(1000))
check(unparsable, "1000 header fields", b"GET /healthz HTTP/1.1\r\nHost: igw\r\n" + many + b"\r\n")
check(unparsable, "101 header fields", b"GET /healthz HTTP/1.1\r\nHost: igw\r\n" + many[:many.index(b"X-H100:")] + b"\r\n")
# h2o's H2O_MAX_REQLEN: 8192 + 4096 * 100 bytes of request line and headers.
check(unparsable, "a 420 KB header block", b"GET /healthz HTTP/1.1\r\nHost: igw\r\nX-Big: " + b"a" * 420000 + b"\r\n\r\n")

# Singleton headers a route reads: never resolved to one of two.
check(refused, "two Authorization",
        b"GET /healthz HTTP/1.1\r\nHost: igw\r\nAuthorization: Bearer a\r\nauthorization: Bearer b\r\n\r\n" + SMUGGLED,
        "Authorization")
check(refused, "two Content-Type", post([b"Content-Type: text/plain", b"Content-Length: 62"], BODY + SMUGGLED), "Content-Type")

print(f"framing: {checks} raw-request checks passed, {failures} failed")
sys.exit(1 if failures else 0)
PY

kill -TERM "$PID"
wait "$PID"; rc=$?
PID=
[ $rc -eq 0 ] || fail "exit status $rc after SIGTERM"

# The access log: no smuggled request was served; each refusal is one line.
bad=0
if grep -q '/smuggled' "$TMP/err"; then
    echo "framing: FAIL: the smuggled request was served: $(grep '/smuggled' "$TMP/err" | head -1)" >&2; bad=1
fi
n=$(grep -c '"status":400,"code":100400' "$TMP/err")
if [ "$n" -ne 14 ]; then echo "framing: FAIL: $n access-log lines with 400/100400, want 14 (one per refusal)" >&2; bad=1; fi
n=$(grep -c '"status":413,"code":100413' "$TMP/err")
if [ "$n" -ne 1 ]; then echo "framing: FAIL: $n access-log lines with 413/100413, want 1" >&2; bad=1; fi
[ $prc -eq 0 ] && [ $bad -eq 0 ] || fail "see above"
echo "framing: all passed ($BIN)"
