#!/usr/bin/env bash
# outbox_test.sh BINARY - runs a test binary taking a DSN (tests/igwd/outbox_test.c,
# state_sql_test.c) against a throwaway PostgreSQL 15 that listens on a Unix socket only, in
# its own directory (port 54398 names the socket, so no TCP port can clash
# with another run), with every migrations/*.sql applied in name order, each
# in one transaction. The server and its directory are always removed on
# exit. Exits non-zero on any failure.
set -u
BIN=${1:?usage: outbox_test.sh BINARY}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PORT=${IGW_OUTBOXTEST_PORT:-54398}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fail() { echo "outbox_test.sh: FAIL: $*" >&2; [ -f "${TMP:-}/pg.log" ] && tail -n 20 "$TMP/pg.log" >&2; exit 1; }
[ -x "$PGBIN/initdb" ] || fail "no PostgreSQL 15 in $PGBIN (apt-get install postgresql-15)"
command -v psql >/dev/null || fail "no psql (apt-get install postgresql-client-15)"
[ -x "$BIN" ] || fail "$BIN is not an executable"

# PostgreSQL refuses to run as root: as root, run it as the postgres user,
# in a directory that user owns and can reach (mktemp -d is 0700).
TMP=$(mktemp -d /tmp/igw-outbox.XXXXXX) || fail "mktemp"
chmod 755 "$TMP"
AS=()
if [ "$(id -u)" = 0 ]; then
    AS=(runuser -u postgres --)
    chown postgres: "$TMP" || fail "chown postgres $TMP"
fi
PGDATA="$TMP/data"
STARTED=
cleanup() {
    [ -n "$STARTED" ] && "${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -w -m immediate stop >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

"${AS[@]}" "$PGBIN/initdb" -D "$PGDATA" -A trust -U postgres -E UTF8 --no-locale >"$TMP/initdb.log" 2>&1 ||
    { cat "$TMP/initdb.log" >&2; fail "initdb"; }
"${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -w -l "$TMP/pg.log" \
    -o "-k $TMP -p $PORT -c listen_addresses=''" start >/dev/null 2>&1 || fail "PostgreSQL did not start"
STARTED=1

export PGHOST=$TMP PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
shopt -s nullglob
migrations=("$ROOT"/migrations/*.sql)
shopt -u nullglob
[ ${#migrations[@]} -gt 0 ] || fail "no migrations in $ROOT/migrations"
mapfile -t migrations < <(printf '%s\n' "${migrations[@]}" | LC_ALL=C sort)
for f in "${migrations[@]}"; do
    psql -X -q -v ON_ERROR_STOP=1 -1 -f "$f" >/dev/null 2>"$TMP/psql.err" ||
        { cat "$TMP/psql.err" >&2; fail "migration $(basename "$f")"; }
done
# The outbox's schema change (events.body_text), until its migration lands:
# a no-op once the migrations have the column.
psql -X -q -v ON_ERROR_STOP=1 -c \
    "ALTER TABLE events ADD COLUMN IF NOT EXISTS body_text text NOT NULL" >/dev/null 2>"$TMP/psql.err" ||
    { cat "$TMP/psql.err" >&2; fail "events.body_text"; }

# For sanitizer builds: h2o 2.2.5 never frees its per-thread memory-pool
# recycle caches nor the multithread queue struct (fixed in later h2o).
export LSAN_OPTIONS="suppressions=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../lsan.supp"):print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

"$BIN" "host=$TMP port=$PORT dbname=postgres user=postgres"
rc=$?
[ $rc -eq 0 ] || fail "$(basename "$BIN") exited $rc"
echo "outbox_test.sh: $(basename "$BIN") passed"
