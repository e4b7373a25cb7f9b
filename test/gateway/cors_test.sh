#!/usr/bin/env bash
# test/gateway/cors_test.sh: Get/Set Table Service Properties and CORS
# (issue 22 item 7), raw HTTP against a gateway of its own (ASan build) on
# database gwtest with run.sh's accounts file ($GW_WORK/accounts): the set
# and get round trip, partial update, the XML reader's and the
# extension's refusals, preflight requests allowed and refused (an unknown
# account answered as an account without matching rules), the CORS headers
# of real requests and of errors, SAS rights, the account's right to set,
# and the rules kept across a restart of the gateway.  Run by run.sh.
set -u
cd "$(dirname "$0")/../.."
GW_BIN_ASAN=${GW_BIN_ASAN:-gateway/tablestore-gateway-asan}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
export GW_DEV_KEY=${GW_DEV_KEY:-Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==}
: "${GW_WORK:?run by test/t/010_gateway.pl (its accounts file)}"
dir=$(mktemp -d /tmp/gwcors.XXXXXX)
pid=
. tools/lib.sh
. test/gateway/lib.sh
trap 'for p in $pid; do kill "$p" 2>/dev/null; done; rm -rf "$tmp" "$dir"' EXIT

start() {
	rm -f "$dir/port"
	"$GW_BIN_ASAN" --db "host=$PGHOST port=${PGPORT:-5432} dbname=gwtest user=gwt_auth" \
		--accounts-file "$GW_WORK/accounts" --port 0 --port-file "$dir/port" >>"$GW_WORK/cors.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		[ -s "$dir/port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	[ -s "$dir/port" ] || { echo "FAIL gateway did not start"; tail -n 5 "$GW_WORK/cors.log"; exit 1; }
	gw_port "$(cat "$dir/port")"
}
stop() {
	kill "$pid" 2>/dev/null
	wait "$pid"
	local rc=$?
	pid=
	check "gateway stopped cleanly (exit status $rc)" test $rc = 0
}
# hdr NAME VALUE: the last answer has header NAME with exactly VALUE
hdr() { grep -qix "$1: $2"$'\r' "$tmp/hdr"; }
# nohdr NAME: the last answer has no header NAME
nohdr() { ! grep -qi "^$1:" "$tmp/hdr"; }
# body PATTERN: the last answer's body matches (grep -E)
body() { grep -qE -- "$1" "$tmp/body"; }
props() { call PUT "/$acct/?restype=service&comp=properties" -H "Content-Type: application/xml" --data "$1"; }
X='<?xml version="1.0" encoding="utf-8"?>'
rule() {	# rule ORIGINS METHODS MAXAGE EXPOSED ALLOWED
	printf '<CorsRule><AllowedOrigins>%s</AllowedOrigins><AllowedMethods>%s</AllowedMethods><MaxAgeInSeconds>%s</MaxAgeInSeconds><ExposedHeaders>%s</ExposedHeaders><AllowedHeaders>%s</AllowedHeaders></CorsRule>' "$@"
}
rp_off='<RetentionPolicy><Enabled>false</Enabled></RetentionPolicy>'

start

# ---- set, get, partial update ----
props "$X<StorageServiceProperties><Cors/></StorageServiceProperties>"
expect "clear the rules" 202
call GET "/$acct/?restype=service&comp=properties"
expect "get properties" 200
check "no rules: <Cors/>" body '<Cors/>'
check "logging off by default" body '<Logging><Version>1.0</Version><Delete>false</Delete><Read>false</Read><Write>false</Write>'
props "$X<StorageServiceProperties><Logging><Version>1.0</Version><Delete>true</Delete><Read>false</Read><Write>true</Write><RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy></Logging><HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>false</IncludeAPIs><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></HourMetrics><MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled>$rp_off</MinuteMetrics><Cors>$(rule 'http://www.contoso.com,http://www.fabrikam.com' 'GET,HEAD,POST,OPTIONS,MERGE,PUT' 100 'x-ms-meta-*' 'x-ms-meta-abc,x-ms-meta-data*,x-ms-meta-target*')$(rule '*' GET 2 '*' '*')</Cors></StorageServiceProperties>"
expect "set logging, metrics and two CORS rules" 202
check "202 without a body" test ! -s "$tmp/body"
call GET "/$acct/?restype=service&comp=properties"
check "get: logging as set" body '<Logging><Version>1.0</Version><Delete>true</Delete><Read>false</Read><Write>true</Write><RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy></Logging>'
check "get: hour metrics as set" body '<HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>false</IncludeAPIs>'
check "get: the rules as set" body '<Cors><CorsRule><AllowedOrigins>http://www.contoso.com,http://www.fabrikam.com</AllowedOrigins><AllowedMethods>GET,HEAD,POST,OPTIONS,MERGE,PUT</AllowedMethods><MaxAgeInSeconds>100</MaxAgeInSeconds><ExposedHeaders>x-ms-meta-\*</ExposedHeaders><AllowedHeaders>x-ms-meta-abc,x-ms-meta-data\*,x-ms-meta-target\*</AllowedHeaders></CorsRule><CorsRule><AllowedOrigins>\*</AllowedOrigins>'
# only MinuteMetrics: the rest is kept (entities, comments and blanks read)
props "$X<!-- minute metrics only --><StorageServiceProperties>
  <MinuteMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>&#116;rue</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled><Days> 3 </Days></RetentionPolicy></MinuteMetrics>
</StorageServiceProperties>"
expect "partial set: minute metrics alone" 202
call GET "/$acct/?restype=service&comp=properties"
check "partial set kept logging and rules" body '<Write>true</Write>.*<MinuteMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled><Days>3</Days>.*<MaxAgeInSeconds>100</MaxAgeInSeconds>'

# ---- refusals: the XML reader, then the extension's validation ----
for doc in '<StorageServiceProperties><Cors>' '<StorageServiceProperties></Cors>' 'not xml' '' \
	'<!DOCTYPE x [<!ENTITY e "x">]><StorageServiceProperties/>' \
	'<StorageServiceProperties><Cors>&e;</Cors></StorageServiceProperties>' \
	'<StorageServiceProperties><Cors/></StorageServiceProperties><more/>' \
	'<Properties><Cors/></Properties>' \
	'<StorageServiceProperties><Cors/><Cors/></StorageServiceProperties>' \
	'<StorageServiceProperties><Cors><Rule/></Cors></StorageServiceProperties>' \
	'<StorageServiceProperties>text<Cors/></StorageServiceProperties>' \
	'<StorageServiceProperties><a><b><c><d><e><f><g><h><i/></h></g></f></e></d></c></b></a></StorageServiceProperties>' \
	'<StorageServiceProperties><DefaultServiceVersion>2019-02-02</DefaultServiceVersion></StorageServiceProperties>' \
	"<StorageServiceProperties><Logging><Version>1.0</Version><Read>true</Read>$rp_off</Logging></StorageServiceProperties>" \
	"<StorageServiceProperties><MinuteMetrics><Version>1.0</Version><Enabled>true</Enabled>$rp_off</MinuteMetrics></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors>$(rule '*' GET 1 '' '')$(rule '*' GET 1 '' '')$(rule '*' GET 1 '' '')$(rule '*' GET 1 '' '')$(rule '*' GET 1 '' '')$(rule '*' GET 1 '' '')</Cors></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods></CorsRule></Cors></StorageServiceProperties>"; do
	props "$doc"
	expect "refused: ${doc:0:90}" 400 InvalidXmlDocument
done
printf '<StorageServiceProperties>\x01</StorageServiceProperties>' >"$tmp/ctl.xml"
props "@$tmp/ctl.xml"
expect "refused: a control character" 400 InvalidXmlDocument
# characters XML 1.0 does not allow, raw (attack F4: U+FFFE was stored and
# made Get's answer not well-formed)
for c in '\xef\xbf\xbe' '\xef\xbf\xbf'; do
	printf "<StorageServiceProperties><Cors>$(rule "http://a.com$c" GET 5 '' '')</Cors></StorageServiceProperties>" >"$tmp/nonchar.xml"
	props "@$tmp/nonchar.xml"
	expect "refused: a raw noncharacter in an origin" 400 InvalidXmlDocument
done
# a 413 of the XML endpoint is XML (attack F8)
head -c $((4 * 1024 * 1024 + 10)) /dev/zero | tr '\0' ' ' >"$tmp/big.xml"
props "@$tmp/big.xml"
expect "a body over 4 MiB" 413 RequestBodyTooLarge
check "413 of the XML endpoint: XML" body '<Code>RequestBodyTooLarge</Code>'
for doc in "<StorageServiceProperties><Cors>$(rule '*' 'GET,TRACE' 1 '' '')</Cors></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors>$(rule '*' '' 1 '' '')</Cors></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors>$(rule '' GET 1 '' '')</Cors></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors>$(rule '*' GET -1 '' '')</Cors></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors>$(rule '*' GET x '' '')</Cors></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors>$(rule '*' GET 1 '' 'a*,b*,c*')</Cors></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors>$(rule '*' GET 1 "$(seq -s, -f 'h%g' 65)" '')</Cors></StorageServiceProperties>" \
	"<StorageServiceProperties><Logging><Version>1.0</Version><Delete>true</Delete><Read>true</Read><Write>yes</Write>$rp_off</Logging></StorageServiceProperties>" \
	"<StorageServiceProperties><Logging><Version>2.0</Version><Delete>true</Delete><Read>true</Read><Write>true</Write>$rp_off</Logging></StorageServiceProperties>" \
	"<StorageServiceProperties><HourMetrics><Version>1.0</Version><Enabled>false</Enabled><IncludeAPIs>true</IncludeAPIs>$rp_off</HourMetrics></StorageServiceProperties>" \
	"<StorageServiceProperties><HourMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>true</Enabled><Days>366</Days></RetentionPolicy></HourMetrics></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors>$(rule 'http://a.com' GET 5 'x-a&#10;Set-Cookie: evil=1' '')</Cors></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors>$(rule 'http://a.com,&#13;http://b.com' GET 5 '' '')</Cors></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors>$(rule 'http://a.com' GET 5 '' 'x-a,&#9;x-b')</Cors></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors>$(rule 'http://a.com' 'GET,&#9;PUT' 5 '' '')</Cors></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors>$(rule 'http://a.com' 'get' 5 '' '')</Cors></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors>$(rule 'http://a .com' GET 5 '' '')</Cors></StorageServiceProperties>" \
	"<StorageServiceProperties><Cors>$(rule 'http://a.com' GET 5 '' 'x a')</Cors></StorageServiceProperties>"; do
	props "$doc"
	expect "refused: ${doc:26:100}" 400 InvalidXmlNodeValue
done
call GET "/$acct/?restype=service&comp=properties"
check "the refused sets changed nothing" body '<Write>true</Write>.*<MaxAgeInSeconds>100</MaxAgeInSeconds>.*<MaxAgeInSeconds>2</MaxAgeInSeconds>'
call DELETE "/$acct/?restype=service&comp=properties"
expect "DELETE of the properties" 405 MethodNotAllowed

# ---- preflight: unauthenticated, from the stored rules ----
raw OPTIONS "/$acct/Tables" -H "Origin: http://www.contoso.com" -H "Access-Control-Request-Method: PUT" \
	-H "Access-Control-Request-Headers: x-ms-meta-data-foo, x-ms-meta-abc"
expect "preflight allowed by the first rule" 200
check "preflight: Allow-Origin is the origin" hdr Access-Control-Allow-Origin http://www.contoso.com
check "preflight: Allow-Methods" hdr Access-Control-Allow-Methods PUT
check "preflight: Allow-Headers" hdr Access-Control-Allow-Headers "x-ms-meta-data-foo, x-ms-meta-abc"
check "preflight: Max-Age of the rule" hdr Access-Control-Max-Age 100
check "preflight: Allow-Credentials" hdr Access-Control-Allow-Credentials true
raw OPTIONS "/$acct/sometable(PartitionKey='a',RowKey='b')" -H "Origin: http://elsewhere.example" -H "Access-Control-Request-Method: GET"
expect "preflight allowed by the * rule, any path" 200
check "preflight: Max-Age of the second rule" hdr Access-Control-Max-Age 2
raw OPTIONS "/$acct/Tables" -H "Origin: http://elsewhere.example" -H "Access-Control-Request-Method: PUT"
expect "preflight: origin not allowed for PUT" 403 CorsPreflightFailure
check "refused preflight: no Allow-Origin" nohdr Access-Control-Allow-Origin
cp "$tmp/body" "$tmp/known.body"
raw OPTIONS "/$acct/Tables" -H "Origin: http://www.contoso.com" -H "Access-Control-Request-Method: PUT" \
	-H "Access-Control-Request-Headers: x-ms-other"
expect "preflight: a header no rule allows" 403 CorsPreflightFailure
raw OPTIONS "/$acct/Tables" -H "Origin: http://www.contoso.com" -H "Access-Control-Request-Method: DELETE"
expect "preflight: a method no rule allows" 403 CorsPreflightFailure
# origins and methods match case-sensitively, header names not (attack F7)
raw OPTIONS "/$acct/Tables" -H "Origin: HTTP://WWW.CONTOSO.COM" -H "Access-Control-Request-Method: PUT"
expect "preflight: the origin in another case" 403 CorsPreflightFailure
raw OPTIONS "/$acct/Tables" -H "Origin: http://www.contoso.com" -H "Access-Control-Request-Method: put"
expect "preflight: the method in another case" 403 CorsPreflightFailure
raw OPTIONS "/$acct/Tables" -H "Origin: http://www.contoso.com" -H "Access-Control-Request-Method: PUT" \
	-H "Access-Control-Request-Headers: X-MS-META-ABC"
expect "preflight: a header name in another case" 200
raw OPTIONS "/$acct/Tables" -H "Access-Control-Request-Method: GET"
expect "OPTIONS without Origin" 400 InvalidHeaderValue
raw OPTIONS "/$acct/Tables" -H "Origin: http://www.contoso.com"
expect "OPTIONS without Access-Control-Request-Method" 400 InvalidHeaderValue
raw OPTIONS "/nosuchaccount/Tables" -H "Origin: http://elsewhere.example" -H "Access-Control-Request-Method: PUT"
expect "preflight to an unknown account: as no matching rule" 403 CorsPreflightFailure
check "unknown account: the same body but for request id and time" \
	test "$(sed 's/RequestId:.*//; s/Time:.*//' "$tmp/body")" = "$(sed 's/RequestId:.*//; s/Time:.*//' "$tmp/known.body")"
raw OPTIONS "/nosuchaccount/Tables" -H "Origin: http://elsewhere.example" -H "Access-Control-Request-Method: GET"
expect "preflight to an unknown account: refused whatever it asks" 403 CorsPreflightFailure

# ---- the CORS headers of real requests, errors included ----
call GET "/$acct/Tables" -H "Origin: http://www.contoso.com"
expect "query tables from a listed origin" 200
check "listed origin: Allow-Origin is the origin" hdr Access-Control-Allow-Origin http://www.contoso.com
check "listed origin: Vary" hdr Vary Origin
check "listed origin: Allow-Credentials" hdr Access-Control-Allow-Credentials true
check "listed origin: Expose-Headers of x-ms-meta-* (none in the answer): none" nohdr Access-Control-Expose-Headers
call GET "/$acct/Tables" -H "Origin: http://elsewhere.example"
check "any origin (* rule): Allow-Origin *" hdr Access-Control-Allow-Origin '\*'
check "any origin: no Vary, no credentials (as the service: Azurite's CORS tests)" eval 'nohdr Vary && nohdr Access-Control-Allow-Credentials'
check "any origin: Expose-Headers * lists the answer's headers" grep -qi '^Access-Control-Expose-Headers:.*x-ms-request-id' "$tmp/hdr"
call GET "/$acct/Tables('nosuchtable')" -H "Origin: http://www.contoso.com"
expect "an error from a listed origin" 404
check "error answer: Allow-Origin" hdr Access-Control-Allow-Origin http://www.contoso.com
raw GET "/$acct/Tables" -H "Origin: http://www.contoso.com" -H "Authorization: SharedKeyLite $acct:AAAA" -H "x-ms-date: $(now)"
expect "a bad signature from a listed origin" 403 AuthenticationFailed
check "auth error answer: Allow-Origin" hdr Access-Control-Allow-Origin http://www.contoso.com
call DELETE "/$acct/Tables('nosuchtable')" -H "Origin: http://elsewhere.example"
check "no rule for the method: Vary alone" eval 'hdr Vary Origin && nohdr Access-Control-Allow-Origin'
# a name that is no account answers as an account without rules: no CORS
# header at all (an account's rules are public anyway: its preflights)
raw GET "/nosuchaccount/Tables" -H "Origin: http://elsewhere.example"
check "unknown account with Origin: no CORS header" eval 'nohdr Vary && nohdr Access-Control-Allow-Origin'
call GET "/$acct/Tables"
check "no Origin: no CORS headers" eval 'nohdr Access-Control-Allow-Origin && nohdr Vary'

# ---- SAS rights: account SAS srt s, sp r to get, w to set; never a table SAS ----
se=$(date -u -d '+1 hour' '+%Y-%m-%dT%H:%M:%SZ')
enc() { printf '%s' "$1" | sed 's/+/%2B/g; s/\//%2F/g; s/=/%3D/g; s/:/%3A/g'; }
asas() {	# asas SP SRT: an account SAS query string
	printf 'sv=2019-02-02&ss=t&srt=%s&sp=%s&se=%s&sig=%s' "$2" "$1" "$(enc "$se")" \
		"$(enc "$(hmac "$acct"$'\n'"$1"$'\n'"t"$'\n'"$2"$'\n\n'"$se"$'\n\n\n'"2019-02-02"$'\n')")"
}
raw GET "/$acct/?restype=service&comp=properties&$(asas r s)"
expect "account SAS sp=r srt=s: get" 200
raw PUT "/$acct/?restype=service&comp=properties&$(asas r s)" --data "<StorageServiceProperties/>"
expect "account SAS sp=r: set refused" 403 AuthorizationPermissionMismatch
raw PUT "/$acct/?restype=service&comp=properties&$(asas w o)" --data "<StorageServiceProperties/>"
expect "account SAS srt=o: set refused" 403 AuthorizationResourceTypeMismatch
raw PUT "/$acct/?restype=service&comp=properties&$(asas w s)" --data "$X<StorageServiceProperties><Cors>$(rule 'http://www.contoso.com,http://www.fabrikam.com' 'GET,PUT' 100 'x-ms-meta-*' 'x-ms-meta-*')$(rule '*' GET 2 '*' '*')</Cors></StorageServiceProperties>"
expect "account SAS sp=w srt=s: set" 202
tsig=$(hmac "r"$'\n\n'"$se"$'\n'"/table/$acct/sometable"$'\n\n\n\n'"2019-02-02"$'\n\n\n\n')
raw GET "/$acct/?restype=service&comp=properties&sv=2019-02-02&tn=sometable&sp=r&se=$(enc "$se")&sig=$(enc "$tsig")"
expect "table SAS: get refused" 403 AuthorizationPermissionMismatch

# ---- the account's right: reader's role lacks CREATE on tablestore_data ----
as_account reader "$GW_READER_KEY"
call GET "/$acct/?restype=service&comp=properties"
expect "reader: get (its own database: defaults)" 200
check "reader: no rules of another account" body '<Cors/>'
props "<StorageServiceProperties><Cors/></StorageServiceProperties>"
expect "reader: set refused" 403 AuthorizationPermissionMismatch
raw OPTIONS "/$acct/Tables" -H "Origin: http://www.contoso.com" -H "Access-Control-Request-Method: GET"
expect "reader: preflight (no rules)" 403 CorsPreflightFailure
as_account devstoreaccount1 "$GW_DEV_KEY"

# ---- kept across a restart ----
stop
start
raw OPTIONS "/$acct/Tables" -H "Origin: http://www.fabrikam.com" -H "Access-Control-Request-Method: PUT"
expect "after a restart: preflight from the stored rules" 200
call GET "/$acct/?restype=service&comp=properties"
check "after a restart: the rules" body '<AllowedMethods>GET,PUT</AllowedMethods>'

# ---- a lock on the rules' table parks no HTTP thread (attack F1) ----
# Another session holds the table locked before the gateway's first read:
# more preflights than HTTP threads, and a request of another account, are
# each answered within GW_CORS_WAIT_MS (1 s) and the read's lock_timeout
# (250 ms), the preflights as with no rules.
stop
start
# (held until pg_terminate_backend below; the 60 s are only a bound)
psql -X -q -d gwtest -c "BEGIN; LOCK TABLE tablestore.service_properties IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60);" \
	>/dev/null 2>&1 &
locker=$!
ts_until_sql -t 10 "SELECT count(*) = 1 FROM pg_locks WHERE relation = 'tablestore.service_properties'::regclass
	AND mode = 'AccessExclusiveLock' AND granted" -d gwtest || { fail=$((fail + 1)); echo "FAIL the rules' table was not locked"; }
pids=
for i in $(seq 12); do
	curl -s -g "${curlopts[@]}" --max-time 10 -o /dev/null -w '%{http_code} %{time_total}\n' -X OPTIONS \
		-H "Origin: http://www.fabrikam.com" -H "Access-Control-Request-Method: PUT" "$(url "/$acct/Tables")" \
		>"$tmp/pf.$i" &
	pids="$pids $!"
done
as_account reader "$GW_READER_KEY"
t0=$(date +%s%N)
call GET "/$acct/Tables" -H "Origin: http://www.fabrikam.com"
t1=$(date +%s%N)
expect "locked rules: another account's request" 200
check "locked rules: another account's request within 2 s ($(((t1 - t0) / 1000000)) ms)" test $(((t1 - t0) / 1000000)) -lt 2000
as_account devstoreaccount1 "$GW_DEV_KEY"
wait $pids
check "locked rules: 12 preflights each within 2 s ($(cut -d' ' -f2 "$tmp"/pf.* | sort -n | tail -n 1) s at most)" \
	test "$(cat "$tmp"/pf.* | awk '$2 >= 2 || $1 == "000"' | wc -l)" = 0
psql -X -q -d gwtest -c "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE relation = 'tablestore.service_properties'::regclass
	AND mode = 'AccessExclusiveLock'" >/dev/null
wait $locker 2>/dev/null

# back to the defaults, for the tests that follow
props "$X<StorageServiceProperties><Logging><Version>1.0</Version><Delete>false</Delete><Read>false</Read><Write>false</Write>$rp_off</Logging><HourMetrics><Version>1.0</Version><Enabled>false</Enabled>$rp_off</HourMetrics><MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled>$rp_off</MinuteMetrics><Cors/></StorageServiceProperties>"
expect "back to the defaults" 202
raw OPTIONS "/$acct/Tables" -H "Origin: http://www.fabrikam.com" -H "Access-Control-Request-Method: PUT"
expect "a set takes effect at once: no rules" 403 CorsPreflightFailure
stop
if grep -q -E "Sanitizer|runtime error" "$GW_WORK/cors.log"; then
	fail=$((fail + 1))
	echo "FAIL sanitizer report"
	grep -E -A 12 "ERROR: |runtime error" "$GW_WORK/cors.log" | head -n 30
fi

echo "$pass passed, $fail failed"
exit $fail
