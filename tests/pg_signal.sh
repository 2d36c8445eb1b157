#!/bin/sh
# pg_signal.sh SIGNAL PGDATA: sends SIGNAL (STOP, CONT, ...) to the
# PostgreSQL server of PGDATA and all its backends, found through its
# postmaster.pid and /proc (no procps on a fresh machine). STOP freezes the
# server as the deadline tests need it: nothing answers, nothing closes.
pm=$(head -n 1 "$2/postmaster.pid") || exit 1
kids=$(for s in /proc/[0-9]*/stat; do awk -v pm="$pm" '$4 == pm { print $1 }' "$s" 2>/dev/null; done)
# shellcheck disable=SC2086 # one pid per word
kill -"$1" "$pm" $kids
