#!/usr/bin/env bash
# tools/demo.sh: build and install tablestore, start a throwaway PostgreSQL 15
# server (as the postgres OS user, Unix socket in a temporary directory), create
# the extension and run the employee demo (tools/demo.sql).  The server keeps
# running afterwards; the script prints how to connect and how to stop it.
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh

echo "== checking the build dependencies (PostgreSQL 15 and its server headers, make, gcc, libpq)"
ts_install_build_deps
echo "== building and installing tablestore (make, make install)"
ts_build_install
DIR=$(mktemp -d /tmp/tsdemo.XXXXXX)
echo "== starting a throwaway PostgreSQL 15 server in $DIR"
ts_start_server "$DIR"
psql -X -q -d postgres -c "CREATE DATABASE demo"
psql -X -q -d demo -c "CREATE EXTENSION tablestore"
echo "== running the employee demo (tools/demo.sql)"
psql -X -d demo -e -f tools/demo.sql

cat <<MSG

== the demo server is running
   connect:  psql -h $DIR -U postgres demo
   stop:     runuser -u postgres -- $PGBIN/pg_ctl -D $DIR/data stop && rm -rf $DIR
MSG
