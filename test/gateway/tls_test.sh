#!/usr/bin/env bash
# test/gateway/tls_test.sh: a gateway serving HTTPS (--tls-cert, --tls-key;
# started by test/t/010_gateway.pl with a throwaway certificate for
# 127.0.0.1 and *.table.tstest, GW_TLS_CA), addressed path- or host-style
# (GW_STYLE): Shared Key Lite over TLS with the certificate verified, https
# URLs in the answers, a SAS restricted to https accepted there, and plain
# HTTP on the TLS port refused.  (http_test.sh runs over TLS too.)
set -u
export GW_SCHEME=https
. "$(dirname "$0")/lib.sh"
J='Content-Type: application/json'

call POST "/$acct/Tables" -H "$J" --data '{"TableName":"tlstest"}'
expect "create table over TLS" 201
check "https in odata.metadata" grep -qF "\"odata.metadata\":\"$(aurl)/" "$tmp/body"
check "https in Location" grep -qiF "Location: $(aurl)/Tables('tlstest')" "$tmp/hdr"
call POST "/$acct/tlstest" -H "$J" --data '{"PartitionKey":"p","RowKey":"r","v":1}'
expect "insert over TLS" 201
se=$(date -u -d '+1 hour' '+%Y-%m-%dT%H:%M:%SZ')
sig=$(hmac "r"$'\n\n'"$se"$'\n'"/table/$acct/tlstest"$'\n\n\n'"https"$'\n'"2019-02-02"$'\n\n\n\n' | sed 's/+/%2B/g; s/\//%2F/g; s/=/%3D/g')
raw GET "/$acct/tlstest(PartitionKey='p',RowKey='r')?sv=2019-02-02&tn=tlstest&sp=r&spr=https&se=$(sed 's/:/%3A/g' <<<"$se")&sig=$sig"
expect "https-only SAS over https" 200
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$GW_PORT/$acct/Tables")
check "plain HTTP on the TLS port refused ($code)" test "$code" != 200
call DELETE "/$acct/Tables('tlstest')"
expect "delete table" 204

echo "$pass passed, $fail failed"
exit $fail
