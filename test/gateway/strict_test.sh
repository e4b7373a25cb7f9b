#!/usr/bin/env bash
# test/gateway/strict_test.sh: one meaning per byte sequence (issue 20,
# findings 10-13) against tablestore-gateway (GW_PORT, GW_DEV_KEY, PGHOST
# from test/t/010_gateway.pl):
#   - a $batch is one change set and nothing else: a second change set, a
#     request outside the change set, a missing or garbled close delimiter
#     or text after it is a 400 before anything runs (finding 10);
#   - a delimiter line is "--boundary" exactly, not a line that starts
#     with it, and the boundary parameter has RFC 2046's syntax (13);
#   - a batch that could not run (database unreachable) is a top-level 503
#     ServerBusy, not a 202 holding a 503 part (11);
#   - a JSON body that names a property twice ("a", or "a" and "\u0061"),
#     that has bytes after the value (a NUL) or a lone surrogate escape is
#     refused, in single operations and in batches (12, 13);
# and that nothing of a refused request was applied.  Exit status: failures.
set -u
. "$(dirname "$0")/lib.sh"

J='Content-Type: application/json'
T=stricttest
call POST "/$acct/Tables" -H "$J" --data "{\"TableName\":\"$T\"}"
expect "create table" 201

# batch FILE [Content-Type boundary parameter]: POST $batch
batch() {
	call POST "/$acct/\$batch" -H "Content-Type: multipart/mixed; boundary=${2:-batch_b}" --data-binary @"$1"
}
# op METHOD PATH [BODY] [BOUNDARY]: one change set part (CRLF framing)
op() {
	printf -- '--%s\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n' "${4:-changeset_c}"
	printf '%s %s/%s/%s HTTP/1.1\r\n' "$1" "$base" "$acct" "$2"
	case "$1" in DELETE) printf 'If-Match: *\r\n' ;; esac
	printf 'Content-Type: application/json\r\n\r\n%s\r\n' "${3:-}"
}
cs_open() { printf -- '--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n' "${2:-batch_b}" "${1:-changeset_c}"; }
cs_close() { printf -- '--%s--\r\n' "${1:-changeset_c}"; }
ins() { op POST "$T" "{\"PartitionKey\":\"s\",\"RowKey\":\"$1\"}" "${2:-changeset_c}"; }
absent=""	# RowKeys of partition s that refused requests named

# a well-formed batch, the reference the variants below break
{ cs_open; ins ok1; ins ok2; cs_close; printf -- '--batch_b--\r\n'; } >"$tmp/good"
batch "$tmp/good"
expect "well-formed batch" 202
check "well-formed batch: two parts" test "$(grep -c '^HTTP/1.1 20' "$tmp/body")" = 2

# ---- finding 10: every part runs, or the batch is refused ----
{
	cs_open changeset_c1; ins a1 changeset_c1; cs_close changeset_c1
	cs_open changeset_c2; ins a2 changeset_c2; cs_close changeset_c2
	op DELETE "$T(PartitionKey='s',RowKey='ok1')" "" batch_b
	printf -- '--batch_b--\r\n'
} >"$tmp/f10a"
batch "$tmp/f10a"
expect "two change sets and a DELETE outside them" 400 InvalidInput
{ cs_open; ins a3; cs_close; op GET "$T(PartitionKey='s',RowKey='ok1')" "" batch_b; printf -- '--batch_b--\r\n'; } >"$tmp/f10b"
batch "$tmp/f10b"
expect "a request after the change set" 400 InvalidInput
# issue 22 item 6: a lone GET of an entity outside a change set is the
# service's query in a batch, answered by one part outside any change set
{ op GET "$T(PartitionKey='s',RowKey='ok1')" "" batch_b; printf -- '--batch_b--\r\n'; } >"$tmp/f10c"
batch "$tmp/f10c"
expect "a lone GET outside a change set: the batch's query" 202
check "... its part: 200 with the entity, ETag, no change set" \
	bash -c "grep -q '^HTTP/1.1 200 OK' '$tmp/body' && grep -q '\"RowKey\":\"ok1\"' '$tmp/body' &&
		grep -qi '^ETag: W/' '$tmp/body' && ! grep -q changeset '$tmp/body' && grep -q '^--batchresponse_.*--' '$tmp/body'"
# Azurite's raw form: no empty line after the part's headers, a '?' after the keys
printf -- '--batch_b\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nGET %s/%s/%s HTTP/1.1\r\nAccept: application/json;odata=minimalmetadata\r\n--batch_b--\r\n' \
	"$base" "$acct" "$T(PartitionKey='s',RowKey='nosuch')?" >"$tmp/f10c2"
batch "$tmp/f10c2"
expect "the batch's query of a missing entity" 202
check "... its part: 404 ResourceNotFound, 0:" \
	bash -c "grep -q '^HTTP/1.1 404 Not Found' '$tmp/body' && grep -q '0:The specified resource does not exist.' '$tmp/body'"
{ op GET "$T()" "" batch_b; printf -- '--batch_b--\r\n'; } >"$tmp/f10c3"
batch "$tmp/f10c3"
expect "a GET of a whole table outside a change set" 400 InvalidInput
{ op DELETE "$T(PartitionKey='s',RowKey='ok1')" "" batch_b; printf -- '--batch_b--\r\n'; } >"$tmp/f10c4"
batch "$tmp/f10c4"
expect "a DELETE outside a change set" 400 InvalidInput
{ cs_open; ins a11; op GET "$T(PartitionKey='s',RowKey='ok1')"; cs_close; printf -- '--batch_b--\r\n'; } >"$tmp/f10c5"
batch "$tmp/f10c5"
expect "a GET inside a change set (a query goes alone)" 400 InvalidInput
absent="$absent a11"
{ cs_open; op GET "$T(PartitionKey='s',RowKey='ok1')"; cs_close; printf -- '--batch_b--\r\n'; } >"$tmp/f10c6"
batch "$tmp/f10c6"
expect "a change set holding only a GET" 400 InvalidInput
{ cs_open; ins a4; cs_close; } >"$tmp/f10d"
batch "$tmp/f10d"
expect "no close delimiter of the batch" 400 InvalidInput
{ cs_open; ins a5; printf -- '--batch_b--\r\n'; } >"$tmp/f10e"
batch "$tmp/f10e"
expect "no close delimiter of the change set" 400 InvalidInput
{ cat "$tmp/good" | sed 's/ok1/a6/; s/ok2/a7/'; printf 'trailing text\r\n'; } >"$tmp/f10f"
batch "$tmp/f10f"
expect "text after the close delimiter" 400 InvalidInput
{ printf 'preamble\r\n'; sed 's/ok1/a8/; s/ok2/a9/' "$tmp/good"; } >"$tmp/f10g"
batch "$tmp/f10g"
expect "text before the first delimiter" 400 InvalidInput
{ cs_open; ins a10; printf -- '--changeset_c\r\nContent-Type: text/plain\r\n\r\nhello\r\n'; cs_close; printf -- '--batch_b--\r\n'; } >"$tmp/f10h"
batch "$tmp/f10h"
expect "a change set part that is not application/http" 400 InvalidInput
{ sed 's/ok1/w1/; s/ok2/w2/' "$tmp/good"; printf '\r\n \r\n'; } >"$tmp/f10i"
batch "$tmp/f10i"
expect "whitespace after the close delimiter" 202
absent="$absent a1 a2 a3 a4 a5 a6 a7 a8 a9 a10"

# ---- finding 13: delimiters match exactly, boundaries have RFC 2046 syntax ----
sed 's/ok1/p1/; s/ok2/p2/; s/^--batch_b--/--batch_b1--/' "$tmp/good" >"$tmp/f13a"
batch "$tmp/f13a"
expect "--batch_b1-- is not the close of batch_b" 400 InvalidInput
sed 's/ok1/p3/; s/ok2/p4/' "$tmp/good" |
	awk '$0 == "--changeset_c\r" { if (++n == 2) $0 = "--changeset_cJUNK\r" } { print }' >"$tmp/f13b"
batch "$tmp/f13b"
expect "--changeset_cJUNK is not a delimiter of changeset_c" 400 InvalidInput
sed 's/ok1/p5/; s/ok2/p6/; s/^--batch_b\r$/--batch_bx\r/' "$tmp/good" >"$tmp/f13c"
batch "$tmp/f13c"
expect "--batch_bx does not open batch_b" 400 InvalidInput
sed 's/ok1/p7/; s/ok2/p8/; s/^--changeset_c--\r$/--changeset_c--x\r/' "$tmp/good" >"$tmp/f13d"
batch "$tmp/f13d"
expect "junk after a close delimiter" 400 InvalidInput
sed 's/ok1/p9/; s/ok2/p10/' "$tmp/good" >"$tmp/f13e"
call POST "/$acct/\$batch" -H "Content-Type: multipart/mixed; xboundary=batch_b" --data-binary @"$tmp/f13e"
expect "xboundary= is not boundary=" 400 InvalidInput
call POST "/$acct/\$batch" -H "Content-Type: multipart/mixed; boundary=batch_b; boundary=batch_b" --data-binary @"$tmp/f13e"
expect "boundary given twice" 400 InvalidInput
sed 's/batch_b/batch@b/g' "$tmp/f13e" >"$tmp/f13f"
batch "$tmp/f13f" 'batch@b'
expect "a boundary character RFC 2046 does not allow" 400 InvalidInput
b71=$(printf 'b%.0s' $(seq 71))
sed "s/batch_b/$b71/g" "$tmp/f13e" >"$tmp/f13g"
batch "$tmp/f13g" "$b71"
expect "a boundary of 71 characters" 400 InvalidInput
sed 's/ok1/q1/; s/ok2/q2/; s/batch_b/batch b:1/g' "$tmp/good" >"$tmp/f13h"
batch "$tmp/f13h" '"batch b:1"'
expect "a quoted boundary with a space and a colon" 202
sed 's/ok1/q3/; s/ok2/q4/' "$tmp/good" | tr -d '\r' >"$tmp/f13i"
batch "$tmp/f13i"
expect "bare LF framing" 202
absent="$absent p1 p2 p3 p4 p5 p6 p7 p8 p9 p10"

# ---- finding 12: a property named twice ----
call POST "/$acct/$T" -H "$J" --data '{"PartitionKey":"s","RowKey":"d1","a":1,"a":"two"}'
expect "insert naming a property twice" 400 DuplicatePropertiesSpecified
call POST "/$acct/$T" -H "$J" --data '{"PartitionKey":"s","RowKey":"d2","a":1,"\u0061":2}'
expect "insert naming a property twice, once escaped" 400 DuplicatePropertiesSpecified
call POST "/$acct/$T" -H "$J" --data '{"PartitionKey":"s","RowKey":"d3","RowKey":"d4"}'
expect "insert naming RowKey twice" 400 DuplicatePropertiesSpecified
call PUT "/$acct/$T(PartitionKey='s',RowKey='d5')" -H "$J" --data '{"a":1,"a":2}'
expect "insert-or-replace naming a property twice" 400 DuplicatePropertiesSpecified
call PATCH "/$acct/$T(PartitionKey='s',RowKey='d6')" -H "$J" --data '{"a":{"b":1,"b":2}}'
expect "insert-or-merge with a nested duplicate" 400 DuplicatePropertiesSpecified
{ cs_open; ins d8; op POST "$T" '{"PartitionKey":"s","RowKey":"d9","a":1,"\u0061":2}'; cs_close; printf -- '--batch_b--\r\n'; } >"$tmp/f12a"
batch "$tmp/f12a"
expect "batch naming a property twice: the change set fails" 202
check "batch naming a property twice: 400 DuplicatePropertiesSpecified at index 1" \
	bash -c "grep -q 'HTTP/1.1 400 Bad Request' '$tmp/body' && grep -q '\"code\":\"DuplicatePropertiesSpecified\"' '$tmp/body' && grep -q '\"value\":\"1:' '$tmp/body'"
absent="$absent d1 d2 d3 d4 d5 d6 d8 d9"

# ---- finding 13: bytes after the JSON value, lone surrogates ----
printf '{"PartitionKey":"s","RowKey":"n1"}\0' >"$tmp/nul"
call POST "/$acct/$T" -H "$J" --data-binary @"$tmp/nul"
expect "a NUL byte after the JSON body" 400 InvalidInput
printf '{"PartitionKey":"s","RowKey":"n2"}\r\n\f' >"$tmp/ff"
call POST "/$acct/$T" -H "$J" --data-binary @"$tmp/ff"
expect "a form feed after the JSON body" 400 InvalidInput
call PUT "/$acct/$T(PartitionKey='s',RowKey='n3')" -H "$J" --data '{"a":"x\ud800y"}'
expect "a lone high surrogate escape" 400 InvalidInput
call PUT "/$acct/$T(PartitionKey='s',RowKey='n4')" -H "$J" --data '{"a":"\udc00"}'
expect "a lone low surrogate escape" 400 InvalidInput
call PUT "/$acct/$T(PartitionKey='s',RowKey='n5')" -H "$J" --data '{"a":"\ud83d\ude00"}'
expect "a surrogate pair" 204
call GET "/$acct/$T(PartitionKey='s',RowKey='n5')"
check "the surrogate pair stored as U+1F600" grep -qE $'"a": ?"\xf0\x9f\x98\x80"' "$tmp/body"
{ cs_open; printf -- '--changeset_c\r\nContent-Type: application/http\r\n\r\nPOST %s/%s/%s HTTP/1.1\r\n\r\n' "$base" "$acct" "$T"
	printf '{"PartitionKey":"s","RowKey":"n6"}\0\r\n'; cs_close; printf -- '--batch_b--\r\n'; } >"$tmp/f13j"
batch "$tmp/f13j"
expect "a NUL byte after a batch operation's JSON" 400 InvalidInput
absent="$absent n1 n2 n3 n4 n6"

# nothing of a refused request was applied
for rk in $absent; do
	call GET "/$acct/$T(PartitionKey='s',RowKey='$rk')"
	[ "$code" = 404 ] || { fail=$((fail + 1)); echo "FAIL refused request applied: RowKey $rk ($code)"; }
done
check "refused requests applied nothing" true

# ---- finding 11: a batch that cannot run is a top-level 503 ----
# A second gateway logs in as its own role; the role then may not log in
# and its sessions are ended, so each try of the batch finds no database.
psql -X -q -v ON_ERROR_STOP=1 -d gwtest <<'SQL' || { echo "FAIL cannot make role gwt_down"; exit 1; }
DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'gwt_down') THEN
		CREATE ROLE gwt_down LOGIN NOINHERIT;
		GRANT gwt_dev TO gwt_down;
	END IF;
END $$;
ALTER ROLE gwt_down LOGIN;
SQL
printf 'devstoreaccount1 %s gwt_dev\n' "$GW_DEV_KEY" >"$tmp/accounts"
"${GW_BIN:-gateway/tablestore-gateway-asan}" --db "host=$PGHOST port=${PGPORT:-5432} dbname=gwtest user=gwt_down" \
	--accounts-file "$tmp/accounts" --port 0 --port-file "$tmp/down.port" --pool 1 >"$tmp/down.log" 2>&1 &
down_pid=$!
trap 'kill $down_pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 50); do [ -s "$tmp/down.port" ] && break; sleep 0.1; done
main_base=$base
base=http://127.0.0.1:$(cat "$tmp/down.port")
sed 's/ok1/x1/; s/ok2/x2/' "$tmp/good" >"$tmp/f11"
batch "$tmp/f11"
expect "second gateway: batch with the database up" 202
psql -X -q -v ON_ERROR_STOP=1 -d gwtest -c "ALTER ROLE gwt_down NOLOGIN" \
	-c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = 'gwt_down'" >/dev/null
sed 's/ok1/x3/; s/ok2/x4/' "$tmp/good" >"$tmp/f11"
batch "$tmp/f11"
expect "database down: the batch is a top-level 503" 503 ServerBusy
check "database down: no multipart answer" bash -c "! grep -q 'changesetresponse' '$tmp/body'"
call POST "/$acct/$T" -H "$J" --data '{"PartitionKey":"s","RowKey":"x5"}'
expect "database down: a single insert is the same 503" 503 ServerBusy
down_base=$base
base=$main_base
call GET "/$acct/$T(PartitionKey='s',RowKey='x3')"
expect "database down: the batch applied nothing" 404 ResourceNotFound
base=$down_base
psql -X -q -d gwtest -c "ALTER ROLE gwt_down LOGIN" >/dev/null
batch "$tmp/f11"
expect "database back: the same batch runs" 202
kill $down_pid
wait $down_pid
check "second gateway stopped cleanly" test $? = 0
check "second gateway: no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$tmp/down.log'"
base=$main_base
call GET "/$acct/$T(PartitionKey='s',RowKey='x3')"
expect "database back: the batch applied" 200

call DELETE "/$acct/Tables('$T')"
expect "delete table" 204
echo "$pass passed, $fail failed"
exit $fail
