#!/usr/bin/env bash
# services.sh - igw's local PostgreSQL 15, Redis and Mosquitto 2, run as
# plain processes under $IGW_VAR (never as system services), loopback and
# unix sockets only.
#
#   src/ops/services.sh up|down|status|migrate|psql [PSQL_ARGS...]
#   src/ops/services.sh balancer-up LISTEN PORT... | balancer-down
#
# up       start what is not running (initdb on first use), create the
#          database, apply migrations, write $IGW_VAR/env; idempotent
# down     stop mosquitto, redis, postgres (fast, clean); keeps the data
# status   one line per service; exit 0 when all run, 3 otherwise
# migrate  apply migrations/NNNN_*.sql not yet in schema_migrations
# psql     psql on the database (extra arguments are passed on)
# balancer-up    HAProxy on LISTEN (host:port) in front of igwd nodes on
#          127.0.0.1:PORT...: round robin per request, each node checked on
#          /readyz every second, WebSocket upgrades passed through (several
#          nodes: docs/scaling.md); replaces a balancer already running
# balancer-down  stop it (down stops it too)
#
# Settings (environment): IGW_VAR (var/ under the repo root), IGW_PG_PORT
# (54320), IGW_REDIS_PORT (63790), IGW_MQTT_PORT (18830), IGW_DB (igw),
# IGW_MIGRATIONS (migrations/ under the repo root), IGW_WAIT (seconds to
# wait for a service, 15), PGBIN (/usr/lib/postgresql/15/bin),
# IGW_MQTT_PLUGIN (build/igw-mqtt-auth.so under the repo root; loaded when
# the file exists, else Mosquitto admits igwd only, by its password file).
#
# Works as root (PostgreSQL runs as the postgres user through runuser,
# Mosquitto drops to the mosquitto user when it exists) and as an ordinary
# user (everything runs as that user).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
var_given=${IGW_VAR:+yes}
IGW_VAR=$(realpath -m "${IGW_VAR:-$root/var}")
IGW_PG_PORT=${IGW_PG_PORT:-54320}
IGW_REDIS_PORT=${IGW_REDIS_PORT:-63790}
IGW_MQTT_PORT=${IGW_MQTT_PORT:-18830}
IGW_DB=${IGW_DB:-igw}
IGW_WAIT=${IGW_WAIT:-15}
migrations=$(realpath -m "${IGW_MIGRATIONS:-$root/migrations}")
pgbin=${PGBIN:-/usr/lib/postgresql/15/bin}
mqtt_plugin=$(realpath -m "${IGW_MQTT_PLUGIN:-$root/build/igw-mqtt-auth.so}")

set_paths() {
    pgdata=$IGW_VAR/pg
    logdir=$IGW_VAR/log
    envfile=$IGW_VAR/env
    redis_dir=$IGW_VAR/redis
    redis_pid=$redis_dir/redis.pid
    mqtt_dir=$IGW_VAR/mosquitto
    mqtt_conf=$mqtt_dir/mosquitto.conf
    mqtt_pid=$mqtt_dir/mosquitto.pid
    mqtt_passwd=$mqtt_dir/passwd
    mqtt_secret=$mqtt_dir/igwd.secret
    mqtt_plugin_copy=$mqtt_dir/igw-mqtt-auth.so
    lb_dir=$IGW_VAR/haproxy
    lb_conf=$lb_dir/haproxy.cfg
    lb_pid=$lb_dir/haproxy.pid
    fallback_sockdir=/tmp/igw-$(printf %s "$IGW_VAR" | sha256sum | cut -c1-12)
}
set_paths
mqtt_user=igwd

prog=services.sh
die() { echo "$prog: $*" >&2; exit 1; }
say() { echo "$prog: $*"; }

for v in IGW_PG_PORT IGW_REDIS_PORT IGW_MQTT_PORT IGW_WAIT; do
    if ! [[ ${!v} =~ ^[0-9]+$ ]] || [ "${!v}" -lt 1 ] || [ "${!v}" -gt 65535 ]; then
        die "$v must be a number 1..65535 (got '${!v}')"
    fi
done
[[ $IGW_DB =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "IGW_DB must be a plain identifier (got '$IGW_DB')"
case $IGW_VAR in
    *[[:space:]\'\"\\]*) die "IGW_VAR must not contain spaces, quotes or backslashes: $IGW_VAR" ;;
esac

# PostgreSQL refuses to run as root: the server runs as postgres then.
if [ "$(id -u)" -eq 0 ]; then
    pg_user=postgres
    # From /: postgres may not reach the caller's directory (a clone under /root).
    as_pg() { (cd / && runuser -u postgres -- "$@"); }
else
    pg_user=$(id -un)
    as_pg() { "$@"; }
fi

# ---- helpers ---------------------------------------------------------------

port_open() { # PORT: something accepts TCP connections on 127.0.0.1:PORT
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# proc_live PID: the process exists and is not a zombie (an exited daemon
# stays a zombie until PID 1 reaps it, which can take seconds in a container).
proc_live() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
}

# pid_alive PIDFILE COMM: prints the pid when the file names a live process
# whose command name is COMM (a reused pid is not ours).
pid_alive() {
    local pid
    [ -r "$1" ] || return 1
    pid=$(head -n 1 "$1" 2>/dev/null | tr -dc 0-9)
    [ -n "$pid" ] && proc_live "$pid" || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] || return 1
    echo "$pid"
}

log_tail() { # LOGFILE
    if [ -s "$1" ]; then
        echo "---- last lines of $1 ----" >&2
        tail -n 20 "$1" >&2
        echo "----" >&2
    fi
}

# wait_for WHAT LOGFILE CMD...: run CMD until it succeeds, at most IGW_WAIT s.
wait_for() {
    local what=$1 log=$2 deadline
    shift 2
    deadline=$((SECONDS + IGW_WAIT))
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "$prog: $what not ready after ${IGW_WAIT}s" >&2
            log_tail "$log"
            exit 1
        fi
        sleep 0.1
    done
}

# stop_pid NAME PIDFILE COMM [CMD...]: CMD (a clean shutdown request) or
# SIGTERM, wait, SIGKILL as a last resort.
stop_pid() {
    local name=$1 file=$2 comm=$3 pid i
    shift 3
    if ! pid=$(pid_alive "$file" "$comm"); then
        rm -f "$file"
        say "$name not running"
        return 0
    fi
    if [ $# -eq 0 ] || ! "$@" >/dev/null 2>&1; then
        kill -TERM "$pid" 2>/dev/null || true
    fi
    for ((i = 0; i < 100; i++)); do
        proc_live "$pid" || break
        sleep 0.1
    done
    if proc_live "$pid"; then
        echo "$prog: $name (pid $pid) ignored SIGTERM for 10s; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$file"
    say "$name stopped"
}

sq() { printf "'%s'" "${1//\'/\'\\\'\'}"; } # shell single-quote

# ---- the socket directory --------------------------------------------------
# $IGW_VAR/run when the server user can reach it and the socket paths fit
# in sun_path (108 bytes), else /tmp/igw-<hash of IGW_VAR>. The choice is
# recorded in $IGW_VAR/env as IGW_RUN_DIR.
pg_can_reach() { as_pg test -x "$1" 2>/dev/null; }

choose_sockdir() {
    local dir=$IGW_VAR/run
    if [ $((${#dir} + 24)) -lt 107 ] && pg_can_reach "$IGW_VAR"; then
        echo "$dir"
    else
        echo "$fallback_sockdir"
    fi
}

# The socket directory and port of the running server, from postmaster.pid
# (lines 4 and 5), whatever the environment says now.
pg_running_conn() {
    local f=$pgdata/postmaster.pid
    [ -r "$f" ] || return 1
    pg_port=$(sed -n 4p "$f")
    pg_sock=$(sed -n 5p "$f")
    [ -n "$pg_port" ] && [ -n "$pg_sock" ]
}

pg_running() {
    [ -d "$pgdata" ] && as_pg "$pgbin/pg_ctl" -D "$pgdata" status >/dev/null 2>&1
}

psql_db() { # DB ARGS...: psql to the running server as postgres
    local db=$1
    shift
    PGOPTIONS='--client-min-messages=warning' \
        "$pgbin/psql" -X -q -v ON_ERROR_STOP=1 -h "$pg_sock" -p "$pg_port" -U postgres -d "$db" "$@"
}

need_pg() {
    if ! pg_running || ! pg_running_conn; then
        die "PostgreSQL is not running (run: $0 up)"
    fi
}

# ---- up ----------------------------------------------------------------------

# As root with the default IGW_VAR (the repo's var/): when the service users
# cannot reach the repo (a clone under /root, mode 700), the data lives in
# /var/lib/igw/<hash of the repo's var path> and var/ becomes a symlink to it,
# so var/env, var/demo.json and the next run (which follows the link) work
# as before. An explicit IGW_VAR is never moved.
relocate_default_var() {
    local link=$root/var data
    [ -z "$var_given" ] && [ "$pg_user" != "$(id -un)" ] || return 0
    [ -L "$link" ] && return 0
    pg_can_reach "$root" && return 0
    data=/var/lib/igw/$(printf %s "$link" | sha256sum | cut -c1-12)
    if [ -d "$link" ]; then
        # What an earlier, failed `up` left: directories without files.
        [ -z "$(find "$link" ! -type d -print -quit)" ] \
            || die "the $pg_user user cannot reach $root, and $link holds data: move it away (the data then goes to $data, var/ linking there) or set IGW_VAR"
        rm -rf "$link"
    elif [ -e "$link" ]; then
        die "$link exists and is not a directory"
    fi
    mkdir -p "$data"
    chmod 0755 /var/lib/igw "$data"
    ln -s "$data" "$link"
    say "the $pg_user user cannot reach $root: data in $data ($link links there)"
    IGW_VAR=$data
    set_paths
}

prepare_dirs() {
    local d
    relocate_default_var
    mkdir -p "$IGW_VAR" "$logdir" "$redis_dir" "$mqtt_dir"
    # The server users must traverse $IGW_VAR (not list it).
    chmod o+x,g+x "$IGW_VAR" 2>/dev/null || true
    if [ "$pg_user" != "$(id -un)" ] && ! pg_can_reach "$IGW_VAR"; then
        d=$IGW_VAR
        while [ "$d" != / ]; do
            pg_can_reach "$d" || blocked=$d
            d=$(dirname "$d")
        done
        die "the $pg_user user cannot reach $IGW_VAR (${blocked:-a parent} is not traversable): chmod o+x it, or set IGW_VAR elsewhere (e.g. IGW_VAR=/tmp/igw)"
    fi
    sockdir=$(choose_sockdir)
    if [ "$sockdir" = "$fallback_sockdir" ]; then
        if [ -L "$sockdir" ] || { [ -e "$sockdir" ] && [ ! -d "$sockdir" ]; }; then
            die "$sockdir exists and is not a directory"
        fi
        say "socket directory $IGW_VAR/run is unusable (path too long or unreachable); using $sockdir"
    fi
    mkdir -p "$sockdir"
    chown "$pg_user" "$sockdir"
    chmod 0755 "$sockdir"
    # $IGW_VAR/run points at the fallback, for people looking for sockets.
    if [ "$sockdir" = "$fallback_sockdir" ] && { [ -L "$IGW_VAR/run" ] || [ ! -e "$IGW_VAR/run" ]; }; then
        ln -sfn "$sockdir" "$IGW_VAR/run"
    fi
}

pg_up() {
    local log=$logdir/postgres.log
    if [ ! -d "$pgdata" ]; then
        say "initdb $pgdata"
        mkdir -m 0700 "$pgdata"
        chown "$pg_user" "$pgdata"
        # IGW_PG_NOSYNC: a throwaway test database skips initdb's final fsync
        # (about 3 s); the server itself always runs with fsync.
        if ! as_pg "$pgbin/initdb" -D "$pgdata" -U postgres -A trust -E UTF8 --no-locale ${IGW_PG_NOSYNC:+--no-sync} \
                >"$logdir/initdb.log" 2>&1; then
            rm -rf "$pgdata"
            log_tail "$logdir/initdb.log"
            die "initdb failed"
        fi
    fi
    touch "$log"
    chown "$pg_user" "$log"
    if pg_running; then
        pg_running_conn || die "PostgreSQL runs but $pgdata/postmaster.pid is incomplete"
        if [ "$pg_port" != "$IGW_PG_PORT" ] || [ "$pg_sock" != "$sockdir" ]; then
            die "PostgreSQL already runs on port $pg_port, socket dir $pg_sock (wanted $IGW_PG_PORT, $sockdir): run '$0 down' first"
        fi
    else
        port_open "$IGW_PG_PORT" && die "port $IGW_PG_PORT on 127.0.0.1 is in use by another process (set IGW_PG_PORT)"
        say "starting postgres on 127.0.0.1:$IGW_PG_PORT, socket dir $sockdir"
        if ! as_pg "$pgbin/pg_ctl" -D "$pgdata" -l "$log" -w -t "$IGW_WAIT" \
                -o "-k '$sockdir' -p $IGW_PG_PORT -c listen_addresses=127.0.0.1" start >/dev/null 2>&1; then
            log_tail "$log"
            die "PostgreSQL did not start"
        fi
        pg_running_conn || die "PostgreSQL started but wrote no postmaster.pid"
    fi
    wait_for "PostgreSQL" "$log" "$pgbin/pg_isready" -q -h "$pg_sock" -p "$pg_port"
    if [ -z "$(psql_db postgres -tA -v db="$IGW_DB" <<<"SELECT 1 FROM pg_database WHERE datname = :'db'")" ]; then
        say "creating database $IGW_DB"
        psql_db postgres -v db="$IGW_DB" <<<'CREATE DATABASE :"db";' || die "cannot create database $IGW_DB"
    fi
}

redis_up() {
    local log=$logdir/redis.log pid
    redis_sock=$sockdir/redis.sock
    if pid=$(pid_alive "$redis_pid" redis-server); then
        redis-cli -h 127.0.0.1 -p "$IGW_REDIS_PORT" ping 2>/dev/null | grep -qx PONG \
            || die "redis already runs (pid $pid) but not on 127.0.0.1:$IGW_REDIS_PORT: run '$0 down' first"
        return 0
    fi
    rm -f "$redis_pid"
    port_open "$IGW_REDIS_PORT" && die "port $IGW_REDIS_PORT on 127.0.0.1 is in use by another process (set IGW_REDIS_PORT)"
    say "starting redis on 127.0.0.1:$IGW_REDIS_PORT, socket $redis_sock"
    if ! redis-server --bind 127.0.0.1 --port "$IGW_REDIS_PORT" \
            --unixsocket "$redis_sock" --unixsocketperm 770 \
            --save '' --appendonly no --dir "$redis_dir" \
            --daemonize yes --pidfile "$redis_pid" --logfile "$log" >"$logdir/redis.stderr" 2>&1; then
        log_tail "$logdir/redis.stderr"
        log_tail "$log"
        die "redis did not start"
    fi
    wait_for "redis" "$log" redis_ready
}

redis_ready() { [ "$(redis-cli -s "$redis_sock" ping 2>/dev/null)" = PONG ]; }

mqtt_up() {
    local log=$logdir/mosquitto.log pid run_as=root
    if [ ! -s "$mqtt_secret" ]; then
        (umask 077 && head -c 24 /dev/urandom | base64 | tr -d '\n=' | tr '+/' '-_' >"$mqtt_secret")
    fi
    mqtt_password=$(cat "$mqtt_secret")
    if pid=$(pid_alive "$mqtt_pid" mosquitto); then
        mqtt_ready || die "mosquitto already runs (pid $pid) but igwd cannot connect on 127.0.0.1:$IGW_MQTT_PORT: run '$0 down' first"
        return 0
    fi
    rm -f "$mqtt_pid"
    port_open "$IGW_MQTT_PORT" && die "port $IGW_MQTT_PORT on 127.0.0.1 is in use by another process (set IGW_MQTT_PORT)"
    # As root mosquitto drops to its own user, which then reads the
    # password file and writes the log: it must reach them.
    if [ "$(id -u)" -eq 0 ]; then
        if id -u mosquitto >/dev/null 2>&1 && runuser -u mosquitto -- test -x "$IGW_VAR" 2>/dev/null; then
            run_as=mosquitto
        fi
    else
        run_as=$(id -un)
    fi
    rm -f "$mqtt_passwd"
    (umask 077 && touch "$mqtt_passwd")
    mosquitto_passwd -b "$mqtt_passwd" "$mqtt_user" "$mqtt_password" >/dev/null \
        || die "mosquitto_passwd failed"
    if [ -f "$mqtt_plugin" ]; then
        # Mosquitto loads the plugin after dropping to its user, who may not
        # reach the build tree (a clone under /root): it loads a copy in
        # $mqtt_dir, which is its own (replaced whole, never rewritten).
        cp -f "$mqtt_plugin" "$mqtt_plugin_copy.tmp.$$" && chmod 0644 "$mqtt_plugin_copy.tmp.$$" \
            && mv -f "$mqtt_plugin_copy.tmp.$$" "$mqtt_plugin_copy" || die "cannot copy $mqtt_plugin to $mqtt_dir"
        mqtt_auth="# Devices authenticate with their own secrets against the database
# (src/mqttauth/); $mqtt_user, the gateway's privileged client, with the
# password in $mqtt_secret (also in $envfile).
# A copy of $mqtt_plugin, made by 'up'.
plugin $mqtt_plugin_copy
plugin_opt_dsn host=$sockdir port=$IGW_PG_PORT dbname=$IGW_DB user=postgres
plugin_opt_admin_user $mqtt_user
plugin_opt_admin_password_file $mqtt_secret"
        say "mosquitto auth: plugin $mqtt_plugin"
    else
        mqtt_auth="# The password file holds one user, $mqtt_user: the gateway's privileged
# client (password in $mqtt_secret and $envfile). $mqtt_plugin is not
# built, so devices cannot connect (make all builds it).
password_file $mqtt_passwd"
        say "mosquitto auth: password file only ($mqtt_plugin not built)"
    fi
    cat >"$mqtt_conf" <<EOF
# Generated by src/ops/services.sh on every 'up'; edits are overwritten.
# Loopback only, no anonymous clients, no persistence.
per_listener_settings false
listener $IGW_MQTT_PORT 127.0.0.1
allow_anonymous false
$mqtt_auth
persistence false
# Small messages both ways (downlinks, replies): no Nagle delay.
set_tcp_nodelay true
log_dest file $log
log_type error
log_type warning
log_type notice
log_type information
log_timestamp true
log_timestamp_format %Y-%m-%dT%H:%M:%S
pid_file $mqtt_pid
user $run_as
EOF
    touch "$log"
    if [ "$(id -u)" -eq 0 ]; then
        chown "$run_as" "$mqtt_dir" "$mqtt_passwd" "$mqtt_secret" "$log"
        chmod 0700 "$mqtt_dir"
    fi
    say "starting mosquitto on 127.0.0.1:$IGW_MQTT_PORT"
    if ! mosquitto -d -c "$mqtt_conf" >>"$log" 2>&1; then
        log_tail "$log"
        die "mosquitto did not start"
    fi
    wait_for "mosquitto" "$log" mqtt_ready
}

mqtt_ready() { # igwd can connect and subscribe
    mosquitto_sub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -u "$mqtt_user" -P "$mqtt_password" \
        -i "igw-services-check-$$" -t 'igw/ready-check' -E -W 3 >/dev/null 2>&1
}

write_env() {
    local tmp=$envfile.tmp.$$
    (
        umask 077
        {
            echo "# Written by src/ops/services.sh up; source it: . $envfile"
            echo "IGW_RUN_DIR=$(sq "$sockdir")"
            echo "IGW_PG_DSN=$(sq "host=$pg_sock port=$pg_port dbname=$IGW_DB user=postgres")"
            echo "IGW_REDIS_HOST=127.0.0.1"
            echo "IGW_REDIS_PORT=$IGW_REDIS_PORT"
            echo "IGW_REDIS_SOCKET=$(sq "$redis_sock")"
            echo "IGW_MQTT_HOST=127.0.0.1"
            echo "IGW_MQTT_PORT=$IGW_MQTT_PORT"
            echo "IGW_MQTT_USER=$mqtt_user"
            echo "IGW_MQTT_PASSWORD=$(sq "$mqtt_password")"
            echo "IGW_MQTT_PASSWORD_FILE=$(sq "$mqtt_secret")"
        } >"$tmp"
    )
    mv -f "$tmp" "$envfile"
}

cmd_up() {
    for tool in "$pgbin/initdb" "$pgbin/pg_ctl" "$pgbin/psql" redis-server redis-cli \
            mosquitto mosquitto_passwd mosquitto_sub; do
        command -v "$tool" >/dev/null || die "$tool not found (install postgresql-15 redis-server mosquitto mosquitto-clients)"
    done
    prepare_dirs
    pg_up
    redis_up
    mqtt_up
    cmd_migrate
    write_env
    say "up: postgres :$pg_port, redis :$IGW_REDIS_PORT, mosquitto :$IGW_MQTT_PORT; settings in $envfile"
}

# ---- migrate -------------------------------------------------------------------

cmd_migrate() {
    local files=() f name applied n=0
    need_pg
    shopt -s nullglob
    files=("$migrations"/[0-9][0-9][0-9][0-9]_*.sql)
    shopt -u nullglob
    [ ${#files[@]} -gt 0 ] || die "no migrations in $migrations"
    mapfile -t files < <(printf '%s\n' "${files[@]}" | LC_ALL=C sort)
    psql_db "$IGW_DB" -c 'CREATE TABLE IF NOT EXISTS schema_migrations (
            name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())' \
        || die "cannot create schema_migrations"
    applied=$(psql_db "$IGW_DB" -tA -c 'SELECT name FROM schema_migrations')
    for f in "${files[@]}"; do
        name=${f##*/}
        [[ $name =~ ^[0-9]{4}_[A-Za-z0-9_.-]+\.sql$ ]] || die "bad migration file name: $name"
        grep -qxF "$name" <<<"$applied" && continue
        # The file and its schema_migrations row commit together or not at all.
        if ! psql_db "$IGW_DB" --single-transaction -f "$f" \
                -c "INSERT INTO schema_migrations (name) VALUES ('$name')"; then
            die "migration $name failed; nothing of it was applied"
        fi
        say "migrate: applied $name"
        n=$((n + 1))
    done
    [ "$n" -gt 0 ] || say "migrate: nothing to apply (${#files[@]} file(s) already applied)"
}

# ---- the balancer ----------------------------------------------------------------

cmd_balancer_up() {
    local listen=${1:-} port n=0 pid
    shift || true
    [[ $listen =~ ^[0-9.]+:[0-9]+$ ]] && [ $# -ge 1 ] || die "usage: $0 balancer-up HOST:PORT PORT..."
    command -v haproxy >/dev/null || die "haproxy not found (install haproxy)"
    cmd_balancer_down >/dev/null
    port_open "${listen##*:}" && die "port ${listen##*:} is in use by another process (set IGW_LISTEN)"
    mkdir -p "$lb_dir" "$logdir"
    # Each request is balanced on its own (HTTP mode); an upgraded
    # WebSocket is a tunnel for as long as it lives (timeout tunnel; the
    # server's pings keep it busy). A node fails its check when /readyz
    # says a dependency is down, or when it is gone.
    {
        echo "global"
        echo "    daemon"
        echo "    maxconn 4096"
        echo "defaults"
        echo "    mode http"
        echo "    option forwardfor"
        echo "    timeout connect 2s"
        echo "    timeout client 60s"
        echo "    timeout server 60s"
        echo "    timeout tunnel 1h"
        echo "    retries 2"
        echo "    option redispatch"
        echo "frontend igw"
        echo "    bind $listen"
        echo "    default_backend igwd"
        echo "backend igwd"
        echo "    balance roundrobin"
        echo "    option httpchk"
        echo "    http-check send meth GET uri /readyz"
        echo "    http-check expect status 200"
        for port in "$@"; do
            [[ $port =~ ^[0-9]+$ ]] || die "not a port: $port"
            n=$((n + 1))
            echo "    server node-$n 127.0.0.1:$port check inter 1s fall 2 rise 1"
        done
    } >"$lb_conf"
    haproxy -c -q -f "$lb_conf" || die "haproxy refused $lb_conf"
    haproxy -f "$lb_conf" -p "$lb_pid" >>"$logdir/haproxy.log" 2>&1 || { log_tail "$logdir/haproxy.log"; die "haproxy did not start"; }
    for _ in $(seq $((IGW_WAIT * 10))); do port_open "${listen##*:}" && break; sleep 0.1; done
    port_open "${listen##*:}" || die "haproxy does not listen on $listen"
    pid=$(head -n 1 "$lb_pid")
    say "balancer: haproxy (pid $pid) on $listen in front of $n node(s)"
}

cmd_balancer_down() {
    stop_pid haproxy "$lb_pid" haproxy
}

# ---- down, status, psql ------------------------------------------------------

cmd_down() {
    cmd_balancer_down
    stop_pid mosquitto "$mqtt_pid" mosquitto
    local pid port
    # Redis acts on SIGTERM only at its next cron tick (up to ~2 s when
    # idle); SHUTDOWN is immediate. Its title is "redis-server 127.0.0.1:PORT".
    if pid=$(pid_alive "$redis_pid" redis-server); then
        port=$(tr '\0' ' ' <"/proc/$pid/cmdline" | grep -o '127\.0\.0\.1:[0-9]*' | cut -d: -f2 || true)
    fi
    stop_pid redis "$redis_pid" redis-server redis-cli -h 127.0.0.1 -p "${port:-$IGW_REDIS_PORT}" shutdown nosave
    if pg_running; then
        as_pg "$pgbin/pg_ctl" -D "$pgdata" -m fast -w -t 30 stop >/dev/null \
            || { log_tail "$logdir/postgres.log"; die "pg_ctl stop failed"; }
        say "postgres stopped"
    else
        say "postgres not running"
    fi
}

cmd_status() {
    local pid all=0
    if pg_running && pg_running_conn; then
        echo "postgres   running  pid $(head -n 1 "$pgdata/postmaster.pid")  127.0.0.1:$pg_port  socket dir $pg_sock  db $IGW_DB"
    else
        echo "postgres   stopped"; all=3
    fi
    if pid=$(pid_alive "$redis_pid" redis-server); then
        echo "redis      running  pid $pid  $(tr '\0' ' ' <"/proc/$pid/cmdline" | grep -o '127.0.0.1:[0-9]*' || echo "port ?")"
    else
        echo "redis      stopped"; all=3
    fi
    if pid=$(pid_alive "$mqtt_pid" mosquitto); then
        echo "mosquitto  running  pid $pid  127.0.0.1:$(sed -n 's/^listener \([0-9]*\) .*/\1/p' "$mqtt_conf")"
    else
        echo "mosquitto  stopped"; all=3
    fi
    if pid=$(pid_alive "$lb_pid" haproxy); then # only while several nodes run (make run NODES=N)
        echo "haproxy    running  pid $pid  $(sed -n 's/^    bind //p' "$lb_conf")"
    fi
    return "$all"
}

cmd_psql() {
    need_pg
    exec "$pgbin/psql" -d "host=$pg_sock port=$pg_port dbname=$IGW_DB user=postgres" "$@"
}

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
    exit 2
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case $cmd in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    migrate) cmd_migrate ;;
    psql) cmd_psql "$@" ;;
    balancer-up) cmd_balancer_up "$@" ;;
    balancer-down) cmd_balancer_down ;;
    -h | --help | help) usage ;;
    *) echo "$prog: unknown command '$cmd'" >&2; usage ;;
esac
