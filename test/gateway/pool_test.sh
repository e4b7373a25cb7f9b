#!/usr/bin/env bash
# test/gateway/pool_test.sh: a gateway with ONE pooled connection
# (--pool 1 --pool-wait-ms 300 --statement-timeout-ms 1500, started by
# test/t/010_gateway.pl), one per account, each account in its own database:
# an account's requests run as its role (reader's refused write leaves its
# connection usable, devstoreaccount1's table is its role's and invisible
# to reader), a request that finds no free connection in time gets 503
# ServerBusy (back-pressure), and one that exceeds the statement timeout
# 500 OperationTimedOut, with the connection usable afterwards; a session
# the server ended is replaced before a request goes out on it.
set -u
. "$(dirname "$0")/../../tools/lib.sh"
. "$(dirname "$0")/lib.sh"
J='Content-Type: application/json'
# until_sql SQL: wait (at most 10 s) until the query answers t: a condition,
# not a guess of how long it takes
until_sql() { ts_until_sql -t 10 "$1" -d postgres; }

call POST "/$acct/Tables" -H "$J" --data '{"TableName":"pooltest"}'
expect "create table" 201
as_account reader "$GW_READER_KEY"
call POST "/$acct/readertab" -H "$J" --data '{"PartitionKey":"p","RowKey":"r"}'
expect "reader may not insert" 403 AuthorizationPermissionMismatch
call GET "/$acct/readertab()"
expect "reader may query, on the same connection" 200
call GET "/$acct/pooltest()"
expect "reader does not see devstoreaccount1's table" 404
as_account devstoreaccount1 "$GW_DEV_KEY"
call POST "/$acct/pooltest" -H "$J" --data '{"PartitionKey":"p","RowKey":"r"}'
expect "dev account, as its own role" 201
psql -X -At -d gwtest -c "SELECT pg_catalog.pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'tablestore_data.pooltest'::regclass" >"$tmp/owner"
check "table owned by the dev account's role" grep -qx gwt_dev "$tmp/owner"

# hold the table's lock from outside, until the request that waits on it
# has ended (at its statement timeout): the one connection waits on it
psql -X -q -d gwtest -v ON_ERROR_STOP=1 >/dev/null <<SQL &
BEGIN;
LOCK TABLE tablestore_data.pooltest;
\! bash $TS_LIB ts_until_file -t 60 $tmp/slow
COMMIT;
SQL
locker=$!
until_sql "SELECT count(*) > 0 FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE d.datname = 'gwtest' AND l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock' AND l.granted"
(unset sign_in && tmp=$tmp/sub && mkdir "$tmp" && call GET "/$acct/pooltest(PartitionKey='p',RowKey='r')" && echo "$code $err" >"$tmp/../slow") &
slow=$!
# the one pooled connection of the account waits on the lock
until_sql "SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'tablestore-gateway' AND wait_event_type = 'Lock'"
call GET "/$acct/Tables"
expect "no free connection within 300 ms" 503 ServerBusy
wait $slow
read -r code err <"$tmp/slow"
expect "statement timeout" 500 OperationTimedOut
wait $locker
call GET "/$acct/pooltest(PartitionKey='p',RowKey='r')"
expect "the connection serves again" 200
# the server ends the pooled session (as a restart would): the next
# request goes out on a new connection and succeeds
psql -X -q -At -d postgres -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = 'gwt_auth' AND application_name = 'tablestore-gateway'" >"$tmp/killed"
until_sql "SELECT count(*) = 0 FROM pg_stat_activity WHERE usename = 'gwt_auth' AND application_name = 'tablestore-gateway'"
call GET "/$acct/pooltest(PartitionKey='p',RowKey='r')"
expect "after its backends were terminated ($(cat "$tmp/killed"))" 200
call DELETE "/$acct/Tables('pooltest')"
expect "drop table" 204

echo "$pass passed, $fail failed"
exit $fail
