#!/usr/bin/env bash
# drift.sh - fails when migrations/ and generated/sql/schema.sql describe
# different databases.
#
#   tests/sql/drift.sh [SCHEMA_SQL [MIGRATIONS_DIR]]
#
# Starts a throwaway PostgreSQL 15, applies every migrations/*.sql in name
# order to one database and the generated schema to another (each file in
# one transaction, stopping at the first error), then diffs a normalized
# catalog of both (tests/sql/catalog.sql). Then it loads the SQL golden
# (tests/codegen/golden/sql/formats.expected/generated/sql/schema.sql, kept
# equal to igw-gen's output by tests/codegen/run.sh) and tests/sql/checks.sql
# proves the generated CHECK constraints accept and refuse what the strict
# decoders do.
#
# Exit status: 0 same catalog, 1 drift or a file that does not apply,
# 2 the server could not be set up. Works as root (the server runs as the
# postgres user through runuser) and as an ordinary user. The server and
# its directory are always removed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
schema_sql=$(realpath -m "${1:-$root/generated/sql/schema.sql}")
migrations=$(realpath -m "${2:-$root/migrations}")
pgbin=${PGBIN:-/usr/lib/postgresql/15/bin}
golden_sql=$root/tests/codegen/golden/sql/formats.expected/generated/sql/schema.sql
checks_sql=$root/tests/sql/checks.sql

die() { echo "drift.sh: $*" >&2; exit 2; }

[ -x "$pgbin/initdb" ] || die "no PostgreSQL binaries in $pgbin (install postgresql-15 or set PGBIN)"
[ -f "$schema_sql" ] || die "$schema_sql not found (run: make generate)"
shopt -s nullglob
migration_files=("$migrations"/*.sql)
shopt -u nullglob
[ ${#migration_files[@]} -gt 0 ] || die "no migrations in $migrations"
# Name order in bytes, whatever the caller's locale: 0001_... before 0002_...
mapfile -t migration_files < <(printf '%s\n' "${migration_files[@]}" | LC_ALL=C sort)

# PostgreSQL refuses to run as root.
if [ "$(id -u)" -eq 0 ]; then
    as_server() { runuser -u postgres -- "$@"; }
    server_user=postgres
else
    as_server() { "$@"; }
    server_user=$(id -un)
fi

# The server listens on a Unix socket in its own directory only
# (listen_addresses=''), so no TCP port can clash with another server or a
# parallel run; the port number only names the socket file.
port=$((55000 + RANDOM % 5000))

# Under build/ when the server user can reach it and the socket path fits
# (sun_path is 108 bytes); else under /tmp.
tmp=
cleanup() {
    local rc=$?
    if [ -n "$tmp" ] && [ -d "$tmp" ]; then
        if [ -f "$tmp/data/postmaster.pid" ]; then
            as_server "$pgbin/pg_ctl" -D "$tmp/data" -m immediate -w stop >/dev/null 2>&1 || true
        fi
        rm -rf "$tmp"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mkdir -p "$root/build"
tmp="$root/build/test-pg-$$"
rm -rf "$tmp"
mkdir -m 0700 "$tmp"
chown "$server_user" "$tmp"
if [ $((${#tmp} + ${#port} + 12)) -ge 107 ] || ! as_server test -w "$tmp"; then
    rm -rf "$tmp"
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/igw-pg.XXXXXX")
    chown "$server_user" "$tmp"
fi

if ! as_server "$pgbin/initdb" -D "$tmp/data" -U postgres -A trust -E UTF8 --no-locale -N \
        >"$tmp/initdb.log" 2>&1; then
    cat "$tmp/initdb.log" >&2
    die "initdb failed"
fi
# Durability is pointless for a throwaway cluster; these save seconds.
if ! as_server "$pgbin/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w -t 30 \
        -o "-k '$tmp' -p $port -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
        start >/dev/null; then
    cat "$tmp/server.log" >&2 || true
    die "PostgreSQL did not start"
fi

psql_to() { # DB ARGS...
    local db=$1
    shift
    PGOPTIONS='--client-min-messages=warning' \
        "$pgbin/psql" -X -q -v ON_ERROR_STOP=1 -h "$tmp" -p "$port" -U postgres -d "$db" "$@"
}

apply() { # DB FILE
    if ! psql_to "$1" --single-transaction -f "$2"; then
        echo "drift.sh: FAIL: $2 does not apply to a fresh database" >&2
        exit 1
    fi
}

psql_to postgres -c 'CREATE DATABASE from_migrations' -c 'CREATE DATABASE from_schema' \
    || die "cannot create the databases"

for f in "${migration_files[@]}"; do
    apply from_migrations "$f"
done
apply from_schema "$schema_sql"

psql_to from_migrations -At -f "$root/tests/sql/catalog.sql" >"$tmp/migrations.catalog"
psql_to from_schema -At -f "$root/tests/sql/catalog.sql" >"$tmp/schema.catalog"

# A broken query or schema must not pass as "both empty".
tables=$(grep -c '^relation [^ ]* table$' "$tmp/schema.catalog" || true)
if [ "$tables" -lt 10 ]; then
    echo "drift.sh: FAIL: $schema_sql creates $tables tables; expected at least 10" >&2
    exit 1
fi

if ! diff -u --label "migrations (${migrations#"$root"/}/*.sql)" \
        --label "schema (${schema_sql#"$root"/})" \
        "$tmp/migrations.catalog" "$tmp/schema.catalog" >"$tmp/catalog.diff"; then
    cat "$tmp/catalog.diff"
    echo "drift.sh: FAIL: migrations and the generated schema differ (- migrations, + schema)." >&2
    echo "drift.sh: migrations are append-only: add migrations/NNNN_<what>.sql that turns the" >&2
    echo "drift.sh: '-' lines into the '+' lines; never edit an applied migration." >&2
    exit 1
fi

[ -f "$golden_sql" ] || die "${golden_sql#"$root"/} missing (tests/codegen/run.sh build/igw-gen --update)"
psql_to postgres -c 'CREATE DATABASE golden' || die "cannot create the databases"
apply golden "$golden_sql"
# checks.sql raises on the first wrong verdict and rolls everything back.
if ! psql_to golden -f "$checks_sql" >/dev/null; then
    echo "drift.sh: FAIL: a generated CHECK constraint misjudged a value (tests/sql/checks.sql)" >&2
    exit 1
fi

echo "drift.sh: ok: ${#migration_files[@]} migration(s) build the same catalog as ${schema_sql#"$root"/} ($tables tables); CHECKs judge the golden cases right"
