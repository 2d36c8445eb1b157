#!/usr/bin/env bash
# db_test.sh BINARY - runs the igw_db test binary (tests/igwd/db_test.c)
# against a throwaway PostgreSQL 15 on 127.0.0.1 (first free port from
# 54391), whose default synchronous_commit is off so the test can see igw_db
# turn it on. The binary stops and restarts the server itself through
# IGW_DBTEST_STOP / IGW_DBTEST_START. The server and its directory are
# always removed on exit. Exits non-zero on any failure.
set -u
BIN=${1:?usage: db_test.sh BINARY}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
fail() { echo "db_test.sh: FAIL: $*" >&2; [ -f "${TMP:-}/pg.log" ] && tail -n 20 "$TMP/pg.log" >&2; exit 1; }
[ -x "$PGBIN/initdb" ] || fail "no PostgreSQL 15 in $PGBIN (apt-get install postgresql-15)"
[ -x "$BIN" ] || fail "$BIN is not an executable"

# PostgreSQL refuses to run as root: as root, run it as the postgres user,
# in a directory that user owns and can reach (mktemp -d is 0700).
TMP=$(mktemp -d /tmp/igw-dbtest.XXXXXX) || fail "mktemp"
chmod 755 "$TMP"
AS=()
if [ "$(id -u)" = 0 ]; then
    AS=(runuser -u postgres --)
    chown postgres: "$TMP" || fail "chown postgres $TMP"
fi
PGDATA="$TMP/data"
STARTED=
cleanup() {
    [ -n "$STARTED" ] && "$(dirname "$0")/../pg_signal.sh" CONT "$PGDATA" 2>/dev/null
    [ -n "$STARTED" ] && "${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -w -m immediate stop >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

"${AS[@]}" "$PGBIN/initdb" -D "$PGDATA" -A trust -U postgres -E UTF8 --no-locale >"$TMP/initdb.log" 2>&1 ||
    { cat "$TMP/initdb.log" >&2; fail "initdb"; }

start_cmd() {
    printf '%q ' "${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -w -l "$TMP/pg.log" \
        -o "-k $TMP -p $1 -c listen_addresses=127.0.0.1 -c synchronous_commit=off" start
}
PORT=
for p in 54391 54392 54393 54394 54395 54396 54397 54398 54399; do
    if eval "$(start_cmd $p)" >/dev/null 2>&1; then PORT=$p; break; fi
done
[ -n "$PORT" ] || fail "PostgreSQL did not start on any port 54391-54399"
STARTED=1

# For sanitizer builds: h2o 2.2.5 never frees its per-thread memory-pool
# recycle caches nor the multithread queue struct (fixed in later h2o).
export LSAN_OPTIONS="suppressions=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../lsan.supp"):print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export IGW_DBTEST_STOP="$(printf '%q ' "${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -w -m fast stop) >/dev/null"
export IGW_DBTEST_START="$(start_cmd $PORT) >/dev/null"
# SIGSTOP / SIGCONT the server and its backends (a frozen server: nothing
# answers, nothing closes), found through /proc (no procps on a fresh machine).
SIGNAL="$(realpath "$(dirname "$0")/../pg_signal.sh")"
export PGDATA
export IGW_DBTEST_FREEZE="$SIGNAL STOP $PGDATA" IGW_DBTEST_THAW="$SIGNAL CONT $PGDATA"

"$BIN" "host=127.0.0.1 port=$PORT dbname=postgres user=postgres" || fail "db_test exited $?"
echo "db_test.sh: passed"
