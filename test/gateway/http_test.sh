#!/usr/bin/env bash
# test/gateway/http_test.sh: raw HTTP against tablestore-gateway (GW_PORT,
# GW_DEV_KEY from test/t/010_gateway.pl): what the SDKs never send.  Requests
# are signed here with openssl (Shared Key, Shared Key Lite, SAS); each
# check compares the status and x-ms-error-code.  run.sh runs it four
# times: over HTTP and HTTPS (GW_SCHEME, GW_TLS_CA), the account addressed
# path-style and host-style (GW_STYLE; see lib.sh).  Exit status: failures.
set -u
. "$(dirname "$0")/lib.sh"

J='Content-Type: application/json'

# ---- authentication ----
raw GET "/$acct/Tables"
expect "no credentials" 403 AuthenticationFailed
raw GET "/$acct/Tables" -H "x-ms-date: $(now)" -H "Authorization: SharedKeyLite $acct:AAAA"
expect "wrong Shared Key Lite signature" 403 AuthenticationFailed
d=$(now)
raw GET "/$acct/Tables" -H "x-ms-date: $d" -H "Authorization: SharedKeyLite other:$(hmac "$d"$'\n'"$(canon "/$acct/Tables")")"
expect "signature for another account name" 403 AuthenticationFailed
d=$(LC_ALL=C date -u -d '-20 min' '+%a, %d %b %Y %H:%M:%S GMT')
raw GET "/$acct/Tables" -H "x-ms-date: $d" -H "Authorization: SharedKeyLite $acct:$(hmac "$d"$'\n'"$(canon "/$acct/Tables")")"
expect "date 20 minutes old" 403 AuthenticationFailed
raw GET "/$acct/Tables" -H "x-ms-date: garbage" -H "Authorization: SharedKeyLite $acct:x"
expect "malformed date" 403 AuthenticationFailed
raw GET "/$acct/Tables" -H "Authorization: Bearer abc"
expect "unknown scheme" 403 AuthenticationFailed
raw GET "/nosuchaccount/Tables" -H "Authorization: SharedKeyLite nosuchaccount:x"
expect "unknown account" 403 AuthenticationFailed

# Shared Key (not Lite): verb, Content-MD5, Content-Type, date, resource
d=$(now)
ct='application/json;odata=nometadata'
sig=$(hmac "POST"$'\n\n'"$ct"$'\n'"$d"$'\n'"$(canon "/$acct/Tables")")
raw POST "/$acct/Tables" -H "x-ms-date: $d" -H "Date: $d" -H "Content-Type: $ct" \
	-H "Authorization: SharedKey $acct:$sig" --data '{"TableName":"httptest"}'
expect "Shared Key create table" 201
check "create table body and Location" grep -q '"TableName":"httptest"' "$tmp/body"
check "Location header" grep -qiF "Location: $(aurl)/Tables('httptest')" "$tmp/hdr"
sig=$(hmac "POST"$'\n\n'"$ct"$'\n'"$d"$'\n'"$(canon "/$acct/Tables")")
raw POST "/$acct/Tables" -H "x-ms-date: $d" -H "Content-Type: application/json" \
	-H "Authorization: SharedKey $acct:$sig" --data '{"TableName":"httptest2"}'
expect "Shared Key with a different Content-Type than signed" 403 AuthenticationFailed
call POST "/$acct/Tables" -H "$J" --data '{"TableName":"httptest"}'
expect "create existing table" 409 TableAlreadyExists

# host-style addressing: the account from the Host header, whatever the
# URL's host, and the answer's URLs from that Host
d=$(now)
rawurl GET "$base/Tables" -H "Host: $acct.table.localtest" -H "x-ms-date: $d" \
	-H "Authorization: SharedKeyLite $acct:$(hmac "$d"$'\n'"/$acct/Tables")"
expect "Host header names the account" 200
check "its odata.metadata" grep -qF "\"odata.metadata\":\"$scheme://$acct.table.localtest/\$metadata#Tables\"" "$tmp/body"
call GET "/$acct/Tables"
check "odata.metadata of this run's base" grep -qF "\"odata.metadata\":\"$(aurl)/\$metadata#Tables\"" "$tmp/body"

# ---- standard headers, formats, preferences ----
call GET "/$acct/Tables('httptest')" -H "x-ms-client-request-id: abc-123" -H "x-ms-version: 2019-07-07"
expect "get one table" 200
check "client request id echoed" grep -qi '^x-ms-client-request-id: abc-123' "$tmp/hdr"
check "version echoed" grep -qi '^x-ms-version: 2019-07-07' "$tmp/hdr"
check "request id" grep -qi '^x-ms-request-id: [0-9a-f-]\{36\}' "$tmp/hdr"
check "Date header" grep -qi '^Date: ' "$tmp/hdr"
call GET "/$acct/Tables('nosuchtable')"
expect "get missing table" 404 ResourceNotFound

call POST "/$acct/httptest" -H "$J" -H "Prefer: return-content" \
	--data '{"PartitionKey":"p","RowKey":"1","n":1,"big":"5","big@odata.type":"Edm.Int64","d":2.5}'
expect "insert, return-content" 201
check "Preference-Applied return-content" grep -qi '^Preference-Applied: return-content' "$tmp/hdr"
check "insert body has odata.etag" grep -q '"odata.etag": *"W/' "$tmp/body"
check "ETag header" grep -qi '^ETag: W/"datetime' "$tmp/hdr"
check "Location of the entity" grep -qi "^Location: .*/httptest(PartitionKey='p',RowKey='1')" "$tmp/hdr"
call POST "/$acct/httptest" -H "$J" -H "Prefer: return-no-content" --data '{"PartitionKey":"p","RowKey":"2"}'
expect "insert, return-no-content" 204
check "Preference-Applied return-no-content" grep -qi '^Preference-Applied: return-no-content' "$tmp/hdr"

call GET "/$acct/httptest(PartitionKey='p',RowKey='1')" -H "Accept: application/json;odata=nometadata"
expect "nometadata read" 200
check "nometadata: no annotations or etag" bash -c "! grep -q 'odata' '$tmp/body'"
check "nometadata content type" grep -qi '^Content-Type: application/json;odata=nometadata' "$tmp/hdr"
call GET "/$acct/httptest(PartitionKey='p',RowKey='1')" -H "Accept: application/json;odata=fullmetadata"
expect "fullmetadata read" 200
check "fullmetadata: type, id, editLink, Timestamp type" bash -c "grep -q '\"odata.type\":\"$acct.httptest\"' '$tmp/body' && grep -q '\"odata.editLink\":\"httptest(PartitionKey=' '$tmp/body' && grep -q '\"odata.id\":' '$tmp/body' && grep -q 'Timestamp@odata.type' '$tmp/body'"
call GET "/$acct/httptest(PartitionKey='p',RowKey='1')?\$format=application/json;odata=nometadata"
check "\$format overrides Accept" bash -c "! grep -q 'odata' '$tmp/body'"
call GET "/$acct/httptest(PartitionKey='p',RowKey='1')" -H "Accept: application/atom+xml"
expect "Atom refused" 415 AtomFormatNotSupported

# verbs and If-Match rules
call MERGE "/$acct/httptest(PartitionKey='p',RowKey='1')" -H "$J" -H "If-Match: *" --data '{"m":1}'
expect "MERGE verb" 204
call POST "/$acct/httptest(PartitionKey='p',RowKey='1')" -H "$J" -H "X-HTTP-Method: MERGE" -H "If-Match: *" --data '{"x":1}'
expect "POST with X-HTTP-Method: MERGE" 204
call POST "/$acct/httptest(PartitionKey='p',RowKey='1')" -H "$J" -H "X-HTTP-Method: FOO" --data '{"x":1}'
expect "bad X-HTTP-Method" 400 XMethodIncorrectValue
call PUT "/$acct/httptest(PartitionKey='p',RowKey='1')" -H "$J" -H "X-HTTP-Method: MERGE" --data '{"x":1}'
expect "X-HTTP-Method on PUT" 400 XMethodNotUsingPost
call DELETE "/$acct/httptest(PartitionKey='p',RowKey='2')"
expect "delete without If-Match" 400 MissingRequiredHeader
call PUT "/$acct/httptest(PartitionKey='p',RowKey='2')" -H "$J" -H "If-Match: W/\"datetime'2020-01-01T00:00:00Z'\"" --data '{}'
expect "stale ETag with unescaped colons" 412 UpdateConditionNotSatisfied
call PUT "/$acct/httptest(PartitionKey='p',RowKey='2')" -H "$J" -H "If-Match: garbage" --data '{}'
expect "malformed ETag" 400 InvalidInput
call PUT "/$acct/httptest(PartitionKey='p',RowKey='1')" -H "$J" -H 'If-Match: W/"wrong"' --data '{}'
expect "an entity tag that is not the entity's: the condition fails" 412 UpdateConditionNotSatisfied
call PATCH "/$acct/httptest(PartitionKey='p',RowKey='9')" -H "$J" -H "If-Match: *" --data '{}'
expect "merge of a missing entity" 404 ResourceNotFound
call PUT "/$acct/httptest(PartitionKey='p',RowKey='3')" -H "$J" --data '{"PartitionKey":"other","RowKey":"x","v":1}'
expect "insert-or-replace takes the URL's keys" 204
call GET "/$acct/httptest(PartitionKey='p',RowKey='3')"
check "URL keys win" grep -q '"PartitionKey": *"p"' "$tmp/body"
call GET "/$acct/httptest(PartitionKey='other',RowKey='x')"
expect "body keys not used" 404 ResourceNotFound
call GET "/$acct/Tables"
call PUT "/$acct/Tables"
expect "PUT on Tables" 405 MethodNotAllowed

# ---- malformed requests ----
call GET "/$acct/httptest(PartitionKey='p'"
expect "unterminated key syntax" 400 InvalidUri
call GET "/$acct/httptest(PartitionKey='p',RowKey='1')x"
expect "junk after the keys" 400 InvalidUri
call GET "/$acct/httptest(PartitionKey='a%00b',RowKey='1')"
expect "NUL in a key" 400 InvalidUri
call GET "/$acct/httptest(PartitionKey='%FF',RowKey='1')"
expect "invalid UTF-8 in a key" 400 InvalidUri
call GET "/$acct/a/b/c"
expect "too many path segments" 400 InvalidUri
call GET "/$acct/httptest()?\$filter=a&\$filter=b"
expect "parameter given twice" 400 InvalidQueryParameterValue
call GET "/$acct/httptest()?\$top=abc"
expect "\$top not a number" 400 InvalidInput
call GET "/$acct/httptest()?\$top=1001"
expect "\$top above 1000" 400 InvalidInput
call GET "/$acct/httptest()?NextPartitionKey=garbage"
expect "forged continuation token" 400 InvalidInput
call GET "/$acct/httptest()?\$filter=PartitionKey%20eq"
expect "bad filter" 400 InvalidInput
call POST "/$acct/httptest" -H "$J" --data '{"PartitionKey":"p","RowKey":"4",}'
expect "trailing comma" 400 InvalidInput
call POST "/$acct/httptest" -H "$J" --data '[1,2]'
expect "JSON array body" 400 InvalidInput
call POST "/$acct/httptest" -H "$J" --data '{"PartitionKey":"p","RowKey":"4"} x'
expect "junk after JSON" 400 InvalidInput
call POST "/$acct/httptest" -H "$J"
expect "empty body" 400 InvalidInput
call POST "/$acct/httptest" -H "$J" --data "$(printf '{"a":%.0s' $(seq 200))1$(printf '}%.0s' $(seq 200))"
expect "deeply nested JSON" 400 InvalidInput
call POST "/$acct/httptest" -H "$J" --data '{"PartitionKey":"p","RowKey":"4","n":{"x":1}}'
expect "nested property value" 400 InvalidInput
call POST "/$acct/httptest" -H "$J" --data '{"PartitionKey":"p","RowKey":"4","s":"\u0000"}'
expect "NUL character in a string" 400 InvalidInput
call POST "/$acct/httptest" -H "$J" --data-binary $'{"PartitionKey":"p","RowKey":"4","s":"\xff"}'
expect "invalid UTF-8 in the body" 400 InvalidInput
call POST "/$acct/httptest" -H "$J" -H "X-HTTP-Method: MERGE" --data '{}'
expect "X-HTTP-Method MERGE on a collection" 405 MethodNotAllowed

head -c $((5 * 1024 * 1024)) /dev/zero | tr '\0' 'a' >"$tmp/big"
call POST "/$acct/httptest" -H "$J" --data-binary @"$tmp/big"
expect "5 MiB body" 413 RequestBodyTooLarge
call POST "/$acct/httptest" -H "$J" -H "Transfer-Encoding: chunked" --data-binary @"$tmp/big"
expect "5 MiB chunked body" 413 RequestBodyTooLarge
long=$(head -c 100000 /dev/zero | tr '\0' 'h')
code=$(curl -s "${curlopts[@]}" -o /dev/null -w '%{http_code}' -H "X-Long: $long" "$(url "/$acct/Tables")")
check "100 kB header refused ($code)" test "$code" -ge 400 -a "$code" -lt 500
code=$(curl -s "${curlopts[@]}" -o /dev/null -w '%{http_code}' "$(url "/$acct/$long")")
check "100 kB URL refused ($code)" test "$code" -ge 400 -a "$code" -lt 500
# a client that stalls mid-request does not hold the gateway
printf 'POST /%s/httptest HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"Par' "$acct" >"$tmp/stall"
rawsock "$tmp/stall" 2
call GET "/$acct/Tables"
expect "serves after a stalled client" 200
printf 'GARBAGE\r\n\r\n' >"$tmp/garbage"
rawsock "$tmp/garbage"
check "a garbage request line: 400 or closed ($code $sockend)" test "$code" = 400 -o "$sockend" = closed
call GET "/$acct/Tables"
expect "serves after a garbage request line" 200

# ---- $batch framing ----
batch() {	# batch BODYFILE [boundary]
	call POST "/$acct/\$batch" -H "Content-Type: multipart/mixed; boundary=${2:-batch_b1}" --data-binary @"$1"
}
nl=$'\r'
cat >"$tmp/b1" <<EOF
--batch_b1$nl
Content-Type: multipart/mixed; boundary=changeset_c1$nl
$nl
--changeset_c1$nl
Content-Type: application/http$nl
Content-Transfer-Encoding: binary$nl
$nl
POST $(aurl)/httptest HTTP/1.1$nl
Content-Type: application/json$nl
$nl
{"PartitionKey":"b","RowKey":"1"}$nl
--changeset_c1$nl
Content-Type: application/http$nl
Content-Transfer-Encoding: binary$nl
$nl
POST $(aurl)/httptest HTTP/1.1$nl
Content-Type: application/json$nl
Prefer: return-content$nl
$nl
{"PartitionKey":"b","RowKey":"2","v":2}$nl
--changeset_c1--$nl
--batch_b1--$nl
EOF
batch "$tmp/b1"
expect "batch with CRLF framing" 202
check "batch: 201 with body for return-content" grep -q 'HTTP/1.1 201 Created' "$tmp/body"
check "batch: changesetresponse boundary" grep -q -- '--changesetresponse_' "$tmp/body"
check "batch response Content-Type" grep -qi '^Content-Type: multipart/mixed; boundary=batchresponse_' "$tmp/hdr"
tr -d '\r' <"$tmp/b1" | sed 's/RowKey":"\([12]\)"/RowKey":"l\1"/' >"$tmp/b2"
batch "$tmp/b2"
expect "batch with bare LF framing" 202
call GET "/$acct/httptest(PartitionKey='b',RowKey='l2')"
expect "LF batch applied" 200
sed 's/RowKey":"1"/RowKey":"3"/' "$tmp/b1" >"$tmp/b3"
batch "$tmp/b3"
expect "failing batch still 202" 202
check "failing batch: 409 part with index 1" bash -c "grep -q 'HTTP/1.1 409 Conflict' '$tmp/body' && grep -q '\"value\":\"1:' '$tmp/body'"
call GET "/$acct/httptest(PartitionKey='b',RowKey='3')"
expect "failing batch applied nothing" 404 ResourceNotFound
batch "$tmp/b1" batch_other
expect "boundary not in body" 400 InvalidInput
call POST "/$acct/\$batch" -H "Content-Type: application/json" --data-binary @"$tmp/b1"
expect "batch without multipart" 400 InvalidInput
head -c 300 "$tmp/b3" >"$tmp/b4"
batch "$tmp/b4"
expect "truncated batch" 400 InvalidInput
sed 's/^POST .* HTTP\/1.1/FROB/' "$tmp/b3" >"$tmp/b5"
batch "$tmp/b5"
expect "bad request line in a part" 400 InvalidInput
awk -v n=0 '/^POST .*httptest HTTP/ { n++; if (n == 2) sub(/httptest HTTP/, "othertable HTTP") } { print }' "$tmp/b3" >"$tmp/b6"
batch "$tmp/b6"
expect "batch over two tables" 400 InvalidInput
sed 's/{"PartitionKey":"b","RowKey":"3"}/{"PartitionKey":"b",/' "$tmp/b3" >"$tmp/b7"
batch "$tmp/b7"
expect "bad JSON in a part" 400 InvalidInput
call GET "/$acct/httptest(PartitionKey='b',RowKey='3')"
expect "rejected batches applied nothing" 404 ResourceNotFound
{
	printf -- '--batch_b1\r\nContent-Type: multipart/mixed; boundary=changeset_c1\r\n\r\n'
	for i in $(seq 101); do
		printf -- '--changeset_c1\r\nContent-Type: application/http\r\n\r\nPOST %s/httptest HTTP/1.1\r\n\r\n{"PartitionKey":"m","RowKey":"%d"}\r\n' "$(aurl)" "$i"
	done
	printf -- '--changeset_c1--\r\n--batch_b1--\r\n'
} >"$tmp/b8"
batch "$tmp/b8"
expect "101 operations" 400 InvalidInput

# ---- SAS by hand ----
se=$(date -u -d '+1 hour' '+%Y-%m-%dT%H:%M:%SZ')
past=$(date -u -d '-1 hour' '+%Y-%m-%dT%H:%M:%SZ')
tsig() {	# tsig SP SE TN: table SAS signature
	hmac "$1"$'\n\n'"$2"$'\n'"/table/$acct/$3"$'\n\n\n\n'"2019-02-02"$'\n\n\n\n'
}
enc() { printf '%s' "$1" | sed 's/+/%2B/g; s/\//%2F/g; s/=/%3D/g; s/:/%3A/g'; }
raw GET "/$acct/httptest(PartitionKey='p',RowKey='1')?sv=2019-02-02&tn=httptest&sp=r&se=$(enc "$se")&sig=$(enc "$(tsig r "$se" httptest)")"
expect "table SAS read" 200
raw GET "/$acct/httptest(PartitionKey='p',RowKey='1')?sv=2019-02-02&tn=httptest&sp=r&se=$(enc "$past")&sig=$(enc "$(tsig r "$past" httptest)")"
expect "expired table SAS" 403 AuthenticationFailed
raw GET "/$acct/httptest(PartitionKey='p',RowKey='1')?sv=2019-02-02&tn=httptest&sp=rad&se=$(enc "$se")&sig=$(enc "$(tsig r "$se" httptest)")"
expect "SAS with widened permissions" 403 AuthenticationFailed
raw GET "/$acct/httptest(PartitionKey='p',RowKey='1')?sv=2019-02-02&tn=httptest&sp=r&se=$(enc "$se")&si=pol&sig=$(enc "$(tsig r "$se" httptest)")"
expect "SAS with a stored policy id" 403 AuthenticationFailed
raw GET "/$acct/httptest(PartitionKey='p',RowKey='1')?sv=2019-02-02&tn=httptest&sp=r&se=garbage&sig=x"
expect "SAS with a malformed expiry" 403 AuthenticationFailed

# ---- issue 22, items 1-3: annotated Boolean strings, exact $select, $top=0 ----
# jcheck NAME PYTHON-EXPRESSION: a condition on the body parsed as JSON (b)
# and the response headers, lower-cased (h)
jcheck() {
	check "$1" python3 -c 'import json, sys
b = json.load(open(sys.argv[1])); h = open(sys.argv[2]).read().lower()
sys.exit(0 if eval(sys.argv[3]) else 1)' "$tmp/body" "$tmp/hdr" "$2"
}
call POST "/$acct/httptest" -H "$J" -H "Prefer: return-no-content" \
	--data '{"PartitionKey":"s","RowKey":"1","b":"false","b@odata.type":"Edm.Boolean","c":"TRUE","c@odata.type":"Edm.Boolean","n":1}'
expect "a Boolean as an annotated string" 204
call GET "/$acct/httptest(PartitionKey='s',RowKey='1')"
jcheck "stored as Booleans" 'b["b"] is False and b["c"] is True and "b@odata.type" not in b'
call MERGE "/$acct/httptest(PartitionKey='s',RowKey='1')" -H "$J" -H "If-Match: *" --data '{"d":"False","d@odata.type":"Edm.Boolean"}'
expect "merge with an annotated Boolean string" 204
call POST "/$acct/httptest" -H "$J" --data '{"PartitionKey":"s","RowKey":"x","b":"yes","b@odata.type":"Edm.Boolean"}'
expect "an annotated Boolean string not true or false" 400 InvalidInput
for i in 2 3 4 5; do
	call PUT "/$acct/httptest(PartitionKey='s',RowKey='$i')" -H "$J" --data "{\"n\":$i}"
done
call GET "/$acct/httptest(PartitionKey='s',RowKey='1')?\$select=n,zz"
expect "get with \$select" 200
jcheck "\$select: exactly the named properties, a missing one null, and the ETag" \
	'{k for k in b if not k.startswith("odata.")} == {"n", "zz"} and b["zz"] is None and b["odata.etag"].startswith("W/")'
check "\$select: the ETag header" grep -qi '^ETag: W/' "$tmp/hdr"
call GET "/$acct/httptest(PartitionKey='s',RowKey='1')?\$select=RowKey,Timestamp" -H "Accept: application/json;odata=fullmetadata"
jcheck "\$select at fullmetadata: named keys, Timestamp typed, id and ETag" \
	'"PartitionKey" not in b and b["RowKey"] == "1" and b["Timestamp@odata.type"] == "Edm.DateTime" and "odata.id" in b and "odata.etag" in b and "odata.editLink" in b'
call GET "/$acct/httptest()?\$filter=PartitionKey%20eq%20's'&\$select=n" -H "Accept: application/json;odata=fullmetadata"
jcheck "query \$select at fullmetadata: no keys, each entity's id and ETag" \
	'len(b["value"]) == 5 and all(set(e) == {"odata.type", "odata.id", "odata.etag", "odata.editLink", "n"} for e in b["value"]) and b["value"][1]["odata.id"].replace("%27", chr(39)).endswith("RowKey=" + chr(39) + "2" + chr(39) + ")")'
call GET "/$acct/httptest()?\$filter=PartitionKey%20eq%20's'&\$select=zz" -H "Accept: application/json;odata=nometadata"
jcheck "query \$select at nometadata: the missing property null, nothing else" 'b["value"] and all(e == {"zz": None} for e in b["value"])'
call GET "/$acct/httptest()?\$filter=PartitionKey%20eq%20's'&\$select=n&\$top=2"
jcheck "\$select without keys: the continuation still comes" 'len(b["value"]) == 2 and "x-ms-continuation-nextpartitionkey" in h and "partitionkey" not in json.dumps(b["value"]).lower()'
# a table SAS's key range stays exact when the keys are not selected
trsig() {	# trsig SE SPK SRK EPK ERK: table SAS signature, query permission, key range
	hmac "r"$'\n\n'"$1"$'\n'"/table/$acct/httptest"$'\n\n\n\n'"2019-02-02"$'\n'"$2"$'\n'"$3"$'\n'"$4"$'\n'"$5"
}
raw GET "/$acct/httptest()?\$select=n&sv=2019-02-02&tn=httptest&sp=r&se=$(enc "$se")&spk=s&srk=2&epk=s&erk=3&sig=$(enc "$(trsig "$se" s 2 s 3)")"
expect "table SAS with a key range, \$select without keys" 200
jcheck "only the range's entities" '[e["n"] for e in b["value"]] == [2, 3] and "x-ms-continuation" not in h'
# $top=0: no entities and no continuation
call GET "/$acct/httptest()?\$top=0"
expect "\$top=0" 200
jcheck "\$top=0: no entities, no continuation" 'b["value"] == [] and "x-ms-continuation" not in h'
call GET "/$acct/httptest()?\$top=0&\$filter=PartitionKey%20eq%20's'&\$select=n"
jcheck "\$top=0 with a filter and \$select" 'b["value"] == [] and "x-ms-continuation" not in h'
call GET "/$acct/Tables?\$top=0"
expect "tables, \$top=0" 200
jcheck "tables, \$top=0: none, no continuation" 'b["value"] == [] and "x-ms-continuation" not in h'
call GET "/$acct/httptest()?\$top=-1"
expect "negative \$top" 400 InvalidInput
# ---- issue 22: what clients written against Azurite send ----
# signed_as SIGNED-PATH METHOD SENT-PATH [rawurl args...]: Shared Key Lite
# over SIGNED-PATH's canonicalized resource, sent to SENT-PATH
signed_as() {
	local sp=$1 m=$2 p=$3 d res sig
	shift 3
	_now
	_canon "$sp"
	_hmac "$d"$'\n'"$res"
	raw "$m" "$p" -H "x-ms-date: $d" -H "Authorization: SharedKeyLite $acct:$sig" "$@"
}
# item 11: one trailing "/" addresses the same resource, signed with or
# without it (Azurite's raw-REST tests sign /<account>/Tables and send
# /<account>/Tables/, with a SAS besides)
signed_as "/$acct/Tables" GET "/$acct/Tables/"
expect "GET /Tables/ signed as /Tables" 200
call GET "/$acct/Tables/"
expect "GET /Tables/ signed as sent" 200
signed_as "/$acct/Tables" POST "/$acct/Tables/?sv=2019-02-02&ss=t&srt=sco&sp=rwdlacu&se=$(enc "$se")&sig=x" \
	-H "$J" --data '{"TableName":"slashtab"}'
expect "create a table at /Tables/ signed as /Tables, a SAS besides" 201
signed_as "/$acct/slashtab" POST "/$acct/slashtab/" -H "$J" -H "Prefer: return-no-content" \
	--data '{"PartitionKey":"p","RowKey":"1"}'
expect "insert at /<table>/" 204
call GET "/$acct/slashtab(PartitionKey='p',RowKey='1')/"
expect "read at /<table>(<keys>)/" 200
raw GET "/$acct/slashtab/?sv=2019-02-02&tn=slashtab&sp=r&se=$(enc "$se")&sig=$(enc "$(tsig r "$se" slashtab)")"
expect "table SAS query at /<table>/" 200
rsas="sv=2019-02-02&tn=slashtab&sp=r&se=$(enc "$se")&sig=$(enc "$(tsig r "$se" slashtab)")"
raw GET "/$acct/slashtab()?$rsas" -H "x-ms-date: $(now)" -H "Authorization: SharedKeyLite $acct:AAAA"
expect "a header that does not verify, a read SAS that does: a query" 200
raw POST "/$acct/slashtab?$rsas" -H "x-ms-date: $(now)" -H "Authorization: SharedKeyLite $acct:AAAA" -H "$J" \
	--data '{"PartitionKey":"p","RowKey":"2"}'
expect "... and only what the SAS permits" 403 AuthorizationPermissionMismatch
raw GET "/$acct/slashtab()?$rsas" -H "Authorization: SharedKeyLite $acct:$(hmac $'\n'"$(canon "/$acct/slashtab()")")"
expect "an undated signature (the service requires a date) beside a SAS: the SAS" 200
raw GET "/$acct/slashtab()" -H "Authorization: SharedKeyLite $acct:$(hmac $'\n'"$(canon "/$acct/slashtab()")")"
expect "an undated signature alone" 403 AuthenticationFailed
signed_as "/$acct/Tables" GET "/$acct/Tables//"
expect "two trailing slashes are not the path signed" 403 AuthenticationFailed
signed_as "/$acct/slashtab" GET "/$acct/slashtabx/"
expect "a signature over another path" 403 AuthenticationFailed
# two slashes after the account are an empty name, not the service root
# (signed as sent, so only the path decides)
call GET "/$acct//?restype=service&comp=properties"
expect "the service properties at /<account>//" 400 InvalidUri
# a SAS that gives a field twice fails authentication (Azurite's sas test
# 12); another parameter given twice stays a malformed request
raw GET "/$acct/slashtab()?$rsas&sig=duplicated"
expect "a SAS with sig twice" 403 AuthenticationFailed
call GET "/$acct/slashtab()?\$top=1&\$top=2"
expect "\$top twice" 400 InvalidQueryParameterValue

# item 10: x-ms-version must be a version of the service (a later date is
# taken as a newer SDK's); a SAS's version is its sv
for v in invalid 2019-01-01 2019-2-02 2099-02-30 2100-02-29 2019-02-02x; do
	call GET "/$acct/Tables" -H "x-ms-version: $v"
	expect "x-ms-version '$v'" 400 InvalidHeaderValue
done
for v in 2009-04-14 2015-04-05 2026-06-06 2096-02-29; do
	call GET "/$acct/Tables" -H "x-ms-version: $v"
	expect "x-ms-version $v" 200
done
raw GET "/$acct/slashtab()?$rsas" -H "x-ms-version: invalid"
expect "x-ms-version beside a SAS: its sv counts" 200
# the version checked is the credential's: x-ms-version unless a SAS
# authenticates (a junk sig beside a verifying header does not skip it),
# then the SAS's sv by the same rule
call GET "/$acct/Tables?sig=x" -H "x-ms-version: invalid"
expect "x-ms-version with a verifying header and a junk sig" 400 InvalidHeaderValue
raw GET "/$acct/slashtab()?sv=garbage&tn=slashtab&sp=r&se=$(enc "$se")&sig=$(enc "$(hmac "r"$'\n\n'"$se"$'\n'"/table/$acct/slashtab"$'\n\n\n\n'"garbage"$'\n\n\n\n')")"
expect "a signed SAS whose sv is no version" 400 InvalidQueryParameterValue
# a trailing %2F is part of the name, not the one trailing "/"
call GET "/$acct/slashtab%2F"
expect "a table path ending in %2F" 400 InvalidUri
call GET "/$acct/slashtab(PartitionKey='p',RowKey='1')%2F"
expect "an entity path ending in %2F" 400 InvalidUri

# ---- the secondary, <account>-secondary: read-only ----
call GET "/$acct-secondary/Tables"
expect "secondary: list tables" 200
call GET "/$acct-secondary/slashtab(PartitionKey='p',RowKey='1')"
expect "secondary: read an entity" 200
call POST "/$acct-secondary/Tables" -H "$J" --data '{"TableName":"secmade"}'
expect "secondary: create a table" 403 AuthorizationFailure
call DELETE "/$acct-secondary/slashtab(PartitionKey='p',RowKey='1')" -H "If-Match: *"
expect "secondary: delete an entity" 403 AuthorizationFailure
call POST "/$acct-secondary/slashtab(PartitionKey='p',RowKey='1')" -H "X-HTTP-Method: DELETE" -H "If-Match: *"
expect "secondary: delete by X-HTTP-Method" 403 AuthorizationFailure
call PUT "/$acct-secondary/?restype=service&comp=properties" --data '<x/>'
expect "secondary: set service properties" 403 AuthorizationFailure
call DELETE "/$acct-secondary/Tables('slashtab')"
expect "secondary: delete a table" 403 AuthorizationFailure
raw POST "/$acct-secondary/slashtab?sv=2019-02-02&ss=t&srt=sco&sp=rwdlacu&se=$(enc "$se")&sig=$(enc "$(hmac "$acct"$'\n'"rwdlacu"$'\n'"t"$'\n'"sco"$'\n\n'"$se"$'\n\n\n'"2019-02-02"$'\n')")" \
	-H "$J" --data '{"PartitionKey":"p","RowKey":"sec"}'
expect "secondary: insert with an account SAS" 403 AuthorizationFailure
call POST "/$acct-secondary/\$batch" -H "Content-Type: multipart/mixed; boundary=batch_b1" --data-binary @"$tmp/b1"
expect "secondary: a batch's change set" 403 AuthorizationFailure
printf -- '--batch_q\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nGET %s/slashtab(PartitionKey='"'p'"',RowKey='"'1'"') HTTP/1.1\r\nAccept: application/json;odata=minimalmetadata\r\n\r\n\r\n--batch_q--\r\n' "$(aurl)" >"$tmp/bq"
call POST "/$acct-secondary/\$batch" -H "Content-Type: multipart/mixed; boundary=batch_q" --data-binary @"$tmp/bq"
expect "secondary: a batch's query" 202
check "secondary: the batch's query found the entity" grep -q 'HTTP/1.1 200' "$tmp/body"
call GET "/$acct/slashtab()?\$filter=RowKey%20eq%20'sec'"
expect "secondary: nothing was written" 200
check "secondary: no entity sec" bash -c "! grep -q '\"sec\"' '$tmp/body'"
# one signature, one resource: path-style, the secondary form that drops
# "<account>-secondary" from /<account>-secondary/<account>/... signs what
# the primary's service root signs, so it is the service root only for the
# Python SDK's statistics call, and never a table named like the account
# (signed_as "/$acct/..." signs /<account>/<account>/...)
if [ "$style" = path ]; then
	call POST "/$acct/Tables" -H "$J" --data "{\"TableName\":\"$acct\"}"
	expect "a table named like the account" 201
	signed_as "/$acct/?comp=acl" GET "/$acct-secondary/$acct/?comp=acl"
	expect "the service root's signature as the ACL of the table named like the account" 403 AuthenticationFailed
	signed_as "/$acct/" GET "/$acct-secondary/$acct/"
	expect "the service root's signature as a query of that table" 403 AuthenticationFailed
	signed_as "/$acct/?restype=service&comp=properties" GET "/$acct-secondary/$acct/?restype=service&comp=properties"
	expect "the statistics form for another service call" 403 AuthenticationFailed
	signed_as "/$acct/?restype=service&comp=stats" GET "/$acct-secondary/$acct/?restype=service&comp=stats"
	expect "the Python SDK's statistics form" 200
	call GET "/$acct-secondary/$acct/?comp=acl"
	expect "the table's ACL at the secondary, signed as sent" 200
	call DELETE "/$acct/Tables('$acct')"
	expect "drop the table named like the account" 204
fi
call DELETE "/$acct/Tables('slashtab')/"
expect "delete a table at /Tables('<name>')/" 204

# ---- clean up; the gateway still answers ----
call DELETE "/$acct/Tables('httptest')"
expect "delete table" 204
call DELETE "/$acct/Tables('httptest')"
expect "delete missing table" 404 ResourceNotFound
call GET "/$acct/?restype=service&comp=properties"
expect "service properties" 200
check "properties XML" grep -q '<StorageServiceProperties>' "$tmp/body"
call PUT "/$acct/?restype=service&comp=properties" --data '<x/>'
expect "set service properties: not the service's document" 400 InvalidXmlDocument
call GET "/$acct/?restype=service&comp=nothing"
expect "unknown service call" 400 InvalidQueryParameterValue
# the secondary endpoint, as the SDKs address it for statistics
# (host-style: Host <account>-secondary.<...>)
call GET "/$acct-secondary/?restype=service&comp=stats"
expect "statistics at <account>-secondary" 200
call GET "/$acct/?restype=service&comp=stats"
expect "statistics at the primary: served only at the secondary, as the service does" 400 InvalidQueryParameterValue

echo "$pass passed, $fail failed"
exit $fail
